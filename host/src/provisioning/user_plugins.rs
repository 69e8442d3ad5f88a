//! The user's own plugins: `cdkd providers install ARCHIVE` and `cdkd providers remove NAME`.
//!
//! A provider archive is a `.tar.gz` holding a `provider.toml` and the library it names, at
//! its root or in one folder:
//!
//! ```toml
//! name = "acme"                          # the plugin's name in plugins.toml
//! library = "libacme_provider.so"        # the shared library, beside this file
//! version = "1.0.0"                      # optional; must be the library's own version
//! ```
//!
//! Installing puts the library in `$XDG_DATA_HOME/cdkd/plugins/NAME/VERSION/` and writes an
//! entry for it, pinned by its SHA-256, into the user's plugins file, which is trusted: the
//! user asked for this archive by name. Another version of the same name replaces the entry.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::manifest_cache::{CachedManifest, ManifestCache};
use super::plugin_layers::user_file;
use super::trust::canonical;

/// The most an archive may unpack to, and the most entries it may hold: a provider is one
/// library and a descriptor, and a hostile archive must not fill the disk.
const MAX_UNPACKED_BYTES: u64 = 2 << 30;
const MAX_ENTRIES: usize = 256;

/// Why an archive could not be installed or a plugin removed; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum UserPluginError {
    /// The archive cannot be read or unpacked.
    #[error("cannot install {}: {reason}", archive.display())]
    Archive {
        /// The archive.
        archive: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The library is not a plugin this host can load.
    #[error("cannot install {}: its library is not a usable cdkd plugin: {reason}", archive.display())]
    NotAPlugin {
        /// The archive.
        archive: PathBuf,
        /// The loader's reason.
        reason: String,
    },
    /// The user's plugins file or plugin folder cannot be read or written.
    #[error("cannot update {}: {reason}", path.display())]
    UserFile {
        /// The file or folder.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// No folder for the user's configuration or data.
    #[error("no folder for the user's plugins: set HOME (or XDG_CONFIG_HOME and XDG_DATA_HOME)")]
    NoHome,
}

/// What an install did.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The plugin's name in the plugins file.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its library's SHA-256.
    pub sha256: String,
    /// Where the library now is.
    pub library: PathBuf,
    /// The user's plugins file it was pinned in.
    pub plugins_file: PathBuf,
    /// The version it replaced, if any.
    pub replaced: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Descriptor {
    name: String,
    library: String,
    #[serde(default)]
    version: Option<String>,
}

/// `$XDG_DATA_HOME/cdkd/plugins`, else `~/.local/share/cdkd/plugins`.
pub fn plugins_dir() -> Option<PathBuf> {
    let base = super::plugin_layers::absolute_env("XDG_DATA_HOME").or_else(|| {
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/share"))
    })?;
    Some(base.join("cdkd").join("plugins"))
}

/// Installs the provider archive at `archive` for the user (see the module's documentation).
pub fn install(
    archive: &Path,
    cache: Option<&ManifestCache>,
) -> Result<Installed, UserPluginError> {
    let plugins = plugins_dir().ok_or(UserPluginError::NoHome)?;
    let user_file = user_file().ok_or(UserPluginError::NoHome)?;
    let folder_error = |path: &Path, err: std::io::Error| UserPluginError::UserFile {
        path: path.to_path_buf(),
        reason: err.to_string(),
    };
    std::fs::create_dir_all(&plugins).map_err(|err| folder_error(&plugins, err))?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&plugins)
        .map_err(|err| folder_error(&plugins, err))?;
    let bad = |reason: String| UserPluginError::Archive {
        archive: archive.to_path_buf(),
        reason,
    };
    unpack(archive, staging.path()).map_err(&bad)?;
    let descriptor_path = find_descriptor(staging.path()).map_err(&bad)?;
    let text = std::fs::read_to_string(&descriptor_path)
        .map_err(|err| bad(format!("cannot read provider.toml: {err}")))?;
    let descriptor: Descriptor = toml::from_str(&text)
        .map_err(|err| bad(format!("provider.toml: {}", one_line(&err.to_string()))))?;
    if !valid_name(&descriptor.name) {
        return Err(bad(format!(
            "provider.toml: name '{}' must be lowercase letters, digits, '-' and '_'",
            descriptor.name
        )));
    }
    if descriptor.library.contains(['/', '\\']) || descriptor.library.starts_with('.') {
        return Err(bad(format!(
            "provider.toml: library '{}' must be a file name beside provider.toml",
            descriptor.library
        )));
    }
    let folder = descriptor_path.parent().unwrap_or(staging.path());
    let staged = folder.join(&descriptor.library);
    if !staged.is_file() {
        return Err(bad(format!(
            "provider.toml names the library '{}', which the archive does not hold",
            descriptor.library
        )));
    }
    let sha256 = cdkd_provider_api::host::sha256_file(&staged)
        .map_err(|err| bad(format!("cannot read {}: {err}", descriptor.library)))?;
    // The user named this archive to install it: its library is loaded once here to prove it
    // is a plugin this host can use, and its manifest is kept for routing.
    let library = cdkd_provider_api::host::load(&staged, &sha256).map_err(|err| {
        UserPluginError::NotAPlugin {
            archive: archive.to_path_buf(),
            reason: err.to_string(),
        }
    })?;
    let version = library.manifest().version.clone();
    if let Some(declared) = descriptor.version.as_ref().filter(|v| **v != version) {
        return Err(bad(format!(
            "provider.toml says version {declared}, but the library says {version}"
        )));
    }
    if semver::Version::parse(&version).is_err() {
        return Err(bad(format!(
            "the library's version '{version}' is not semver"
        )));
    }
    if let Some(cache) = cache {
        cache.put(&CachedManifest {
            sha256: sha256.clone(),
            api_version: library.api_version(),
            manifest: library.manifest().clone(),
        });
    }
    let home = plugins.join(&descriptor.name).join(&version);
    std::fs::create_dir_all(&home).map_err(|err| folder_error(&home, err))?;
    let installed = home.join(&descriptor.library);
    // A rename within one file system: the library appears whole or not at all.
    std::fs::rename(&staged, &installed).map_err(|err| folder_error(&installed, err))?;
    let installed = canonical(&installed);
    let replaced = pin_in_user_file(&user_file, &descriptor.name, &installed, &version, &sha256)?;
    Ok(Installed {
        name: descriptor.name,
        version,
        sha256,
        library: installed,
        plugins_file: user_file,
        replaced,
    })
}

/// Removes `name`'s entry from the user's plugins file and its installed libraries; the
/// entry's library path, or `None` when the file has no such entry.
pub fn remove(name: &str) -> Result<Option<PathBuf>, UserPluginError> {
    let user_file = user_file().ok_or(UserPluginError::NoHome)?;
    let mut document = read_user_file(&user_file)?;
    let Some(plugins) = document
        .get_mut("plugin")
        .and_then(toml_edit::Item::as_array_of_tables_mut)
    else {
        return Ok(None);
    };
    let Some(at) = plugins
        .iter()
        .position(|table| table.get("name").and_then(|n| n.as_str()) == Some(name))
    else {
        return Ok(None);
    };
    let path = plugins
        .get(at)
        .and_then(|table| table.get("path"))
        .and_then(|p| p.as_str())
        .map(PathBuf::from)
        .unwrap_or_default();
    plugins.remove(at);
    write_user_file(&user_file, &document)?;
    if let Some(dir) = plugins_dir().map(|dir| canonical(&dir.join(name))) {
        // Only the folder install made; a hand-written entry's library is the user's own.
        if valid_name(name) && canonical(&path).starts_with(&dir) {
            std::fs::remove_dir_all(&dir).map_err(|err| UserPluginError::UserFile {
                path: dir.clone(),
                reason: err.to_string(),
            })?;
        }
    }
    Ok(Some(path))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Unpacks `archive` (gzip-compressed tar) into `into`: regular files and folders only, no
/// path leaving `into`, bounded in size and count.
fn unpack(archive: &Path, into: &Path) -> Result<(), String> {
    let file = std::fs::File::open(archive).map_err(|err| format!("cannot read it: {err}"))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let entries = tar
        .entries()
        .map_err(|err| format!("not a .tar.gz archive: {err}"))?;
    let mut total = 0u64;
    for (count, entry) in entries.enumerate() {
        let mut entry = entry.map_err(|err| format!("not a .tar.gz archive: {err}"))?;
        if count >= MAX_ENTRIES {
            return Err(format!("it holds more than {MAX_ENTRIES} entries"));
        }
        let path = entry
            .path()
            .map_err(|err| format!("an entry has an unreadable name: {err}"))?
            .into_owned();
        let safe = path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if !safe || path.as_os_str().is_empty() {
            return Err(format!(
                "the entry '{}' would be written outside the archive's folder",
                path.display()
            ));
        }
        let target = into.join(&path);
        match entry.header().entry_type() {
            // pax headers (`git archive` writes a global one) describe entries; tar applies them.
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => {}
            tar::EntryType::Directory => {
                std::fs::create_dir_all(&target).map_err(|err| err.to_string())?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                total = total.saturating_add(entry.size());
                if total > MAX_UNPACKED_BYTES {
                    return Err(format!(
                        "it unpacks to more than {MAX_UNPACKED_BYTES} bytes"
                    ));
                }
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|err| err.to_string())?;
                }
                let mut out = std::fs::File::create(&target).map_err(|err| err.to_string())?;
                let size = entry.size();
                let copied = std::io::copy(&mut (&mut entry).take(size), &mut out)
                    .map_err(|err| format!("cannot unpack '{}': {err}", path.display()))?;
                if copied != size {
                    return Err(format!("'{}' is cut short", path.display()));
                }
            }
            other => {
                return Err(format!(
                    "the entry '{}' is a {other:?}; only files and folders are installed",
                    path.display()
                ))
            }
        }
    }
    Ok(())
}

/// `provider.toml` at the root of `dir` or in its one folder.
fn find_descriptor(dir: &Path) -> Result<PathBuf, String> {
    let at_root = dir.join("provider.toml");
    if at_root.is_file() {
        return Ok(at_root);
    }
    let folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|err| err.to_string())?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    match folders.as_slice() {
        [only] if only.join("provider.toml").is_file() => Ok(only.join("provider.toml")),
        _ => Err("it holds no provider.toml (at its root or in its one folder)".into()),
    }
}

fn read_user_file(path: &Path) -> Result<toml_edit::DocumentMut, UserPluginError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(err) => {
            return Err(UserPluginError::UserFile {
                path: path.to_path_buf(),
                reason: err.to_string(),
            })
        }
    };
    text.parse::<toml_edit::DocumentMut>()
        .map_err(|err| UserPluginError::UserFile {
            path: path.to_path_buf(),
            reason: one_line(&err.to_string()),
        })
}

fn write_user_file(path: &Path, document: &toml_edit::DocumentMut) -> Result<(), UserPluginError> {
    let failed = |err: std::io::Error| UserPluginError::UserFile {
        path: path.to_path_buf(),
        reason: err.to_string(),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    let draft = path.with_extension(format!("toml.{}", std::process::id()));
    std::fs::write(&draft, document.to_string()).map_err(failed)?;
    std::fs::rename(&draft, path).map_err(failed)
}

/// Writes (or replaces) `name`'s entry in the user's plugins file, keeping everything else of
/// it; the version the replaced entry's library had, when its path says so.
fn pin_in_user_file(
    path: &Path,
    name: &str,
    library: &Path,
    version: &str,
    sha256: &str,
) -> Result<Option<String>, UserPluginError> {
    let mut document = read_user_file(path)?;
    if !document.contains_key("plugin") {
        document.insert(
            "plugin",
            toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()),
        );
    }
    let plugins =
        document["plugin"]
            .as_array_of_tables_mut()
            .ok_or_else(|| UserPluginError::UserFile {
                path: path.to_path_buf(),
                reason: "'plugin' is not an array of tables ([[plugin]])".into(),
            })?;
    let mut entry = toml_edit::Table::new();
    entry["name"] = toml_edit::value(name);
    entry["path"] = toml_edit::value(library.display().to_string());
    entry["version"] = toml_edit::value(format!("={version}"));
    entry["sha256"] = toml_edit::value(sha256);
    let existing = plugins
        .iter()
        .position(|table| table.get("name").and_then(|n| n.as_str()) == Some(name));
    let replaced = existing.and_then(|at| {
        let old = plugins.get(at)?.get("path")?.as_str()?.to_string();
        // PLUGINS/NAME/VERSION/LIBRARY, as install lays it out.
        Path::new(&old)
            .parent()?
            .file_name()
            .map(|v| v.to_string_lossy().into_owned())
    });
    match existing.and_then(|at| plugins.get_mut(at)) {
        Some(table) => *table = entry,
        None => plugins.push(entry),
    }
    write_user_file(path, &document)?;
    Ok(replaced)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive_of(entries: &[(&str, &[u8])]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let gz = flate2::write::GzEncoder::new(file.reopen().unwrap(), flate2::Compression::fast());
        let mut tar = tar::Builder::new(gz);
        for (name, bytes) in entries {
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            header.set_entry_type(tar::EntryType::Regular);
            // Written raw: the builder's own path setter refuses '..', which is the point.
            header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            header.set_cksum();
            tar.append(&header, *bytes).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
        file
    }

    #[test]
    fn an_archive_unpacks_inside_its_folder_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let good = archive_of(&[
            ("acme/provider.toml", b"name = \"acme\"\n"),
            ("acme/lib.so", b"x"),
        ]);
        unpack(good.path(), dir.path()).unwrap();
        assert_eq!(
            find_descriptor(dir.path()).unwrap(),
            dir.path().join("acme/provider.toml")
        );

        let escaping = archive_of(&[("../evil", b"x")]);
        let other = tempfile::tempdir().unwrap();
        let err = unpack(escaping.path(), &other.path().join("in")).unwrap_err();
        assert!(err.contains("outside the archive's folder"), "{err}");
        assert!(!other.path().join("evil").exists());

        let junk = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(junk.path(), b"not gzip").unwrap();
        assert!(unpack(junk.path(), dir.path())
            .unwrap_err()
            .contains("not a .tar.gz"));
    }

    #[test]
    fn an_install_pins_one_entry_per_name_and_keeps_the_rest_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plugins.toml");
        std::fs::write(
            &file,
            "# mine\n[[plugin]]\nname = \"other\"\npath = \"/x.so\"\nsha256 = \"00\"\n",
        )
        .unwrap();
        let first = Path::new("/data/cdkd/plugins/acme/1.0.0/libacme.so");
        assert_eq!(
            pin_in_user_file(&file, "acme", first, "1.0.0", "aa").unwrap(),
            None
        );
        let second = Path::new("/data/cdkd/plugins/acme/1.1.0/libacme.so");
        assert_eq!(
            pin_in_user_file(&file, "acme", second, "1.1.0", "bb").unwrap(),
            Some("1.0.0".to_string())
        );
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.starts_with("# mine\n"), "{text}");
        assert_eq!(text.matches("name = \"acme\"").count(), 1, "{text}");
        assert!(
            text.contains("version = \"=1.1.0\"\nsha256 = \"bb\""),
            "{text}"
        );
        assert!(text.contains("name = \"other\""), "{text}");
    }
}
