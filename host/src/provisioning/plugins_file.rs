//! `plugins.toml`: which provider plugins the host loads, from where, at which versions.
//!
//! ```toml
//! [[plugin]]
//! name = "example-echo"                                   # how cdkd refers to it
//! path = "target/debug/libcdkd_provider_example_echo.so"  # relative to this file's folder
//! version = "^1.0"                                        # semver requirement on the plugin
//! enabled = true                                          # default true
//!
//! [owners]                 # who wins when two plugins claim one type
//! "Acme::Echo::Thing" = "example-echo"
//! ```
//!
//! Files are layered, lowest first: the bundled file (beside the executable, in the installed
//! layout's `lib/cdkd/`, or at the root of the cargo workspace that built it), `./plugins.toml`,
//! the user's `$XDG_CONFIG_HOME/cdkd/plugins.toml`, `CDKD_PLUGINS`, `--plugins`. An entry
//! replaces a lower layer's entry of the same name, `[owners]` entries likewise; when two
//! plugins claim a type and no `[owners]` entry settles it, the higher layer's wins. A file
//! with `inherit = false` drops every layer below it. `${profile}` in a path is the cargo
//! profile folder the running `cdkd` was built into (`release` for `target/release/cdkd`,
//! else `debug`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Where the plugins file was found, and what it says.
#[derive(Debug, Clone)]
pub struct PluginsFile {
    /// The file's path (absolute).
    pub path: PathBuf,
    /// How the file was chosen, for `providers list`.
    pub source: PluginsFileSource,
    /// Plugin entries in file order.
    pub plugins: Vec<PluginSpec>,
    /// Type name → plugin name, settling types two plugins claim.
    pub owners: BTreeMap<String, String>,
    /// Whether the layers below this file count (`inherit = false` drops them).
    pub inherit: bool,
    /// Every file that contributed, lowest layer first.
    pub layers: Vec<(PathBuf, PluginsFileSource)>,
}

/// How the plugins file was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginsFileSource {
    /// `--plugins FILE`.
    Flag,
    /// `CDKD_PLUGINS`.
    Env,
    /// `./plugins.toml`.
    WorkingDirectory,
    /// The user's `$XDG_CONFIG_HOME/cdkd/plugins.toml` (or `~/.config/cdkd/plugins.toml`).
    User,
    /// Beside the `cdkd` executable, or at the root of the cargo workspace that built it.
    Bundled,
    /// No file anywhere: no plugins, every AWS type goes to Cloud Control.
    None,
}

impl PluginsFileSource {
    /// A short word for output.
    pub fn as_str(self) -> &'static str {
        match self {
            PluginsFileSource::Flag => "--plugins",
            PluginsFileSource::Env => "CDKD_PLUGINS",
            PluginsFileSource::WorkingDirectory => "working directory",
            PluginsFileSource::User => "user",
            PluginsFileSource::Bundled => "bundled",
            PluginsFileSource::None => "none",
        }
    }
}

/// One `[[plugin]]` entry with its path resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginSpec {
    /// The name cdkd uses for the plugin.
    pub name: String,
    /// The shared library, absolute.
    pub path: PathBuf,
    /// The semver requirement the plugin's own version must meet.
    pub version: semver::VersionReq,
    /// Whether to load it at all.
    pub enabled: bool,
    /// The plugins file the entry comes from.
    pub file: PathBuf,
    /// Its file's layer (0 lowest): a higher layer's plugin wins a contested type.
    pub layer: usize,
}

/// A plugins file that cannot be used; names the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum PluginsFileError {
    /// The file could not be read.
    #[error("cannot read plugins file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("invalid plugins file {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default = "enabled_by_default")]
    inherit: bool,
    #[serde(default)]
    plugin: Vec<RawPlugin>,
    #[serde(default)]
    owners: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlugin {
    name: String,
    path: PathBuf,
    #[serde(default = "any_version")]
    version: String,
    #[serde(default = "enabled_by_default")]
    enabled: bool,
}

fn any_version() -> String {
    "*".to_string()
}

fn enabled_by_default() -> bool {
    true
}

impl PluginsFile {
    /// Finds the plugins file: `--plugins` > `CDKD_PLUGINS` > `./plugins.toml` > beside the
    /// executable > the root of the cargo workspace whose `target/<profile>/` holds it.
    pub fn locate(flag: Option<&Path>, env: Option<&Path>) -> (Option<PathBuf>, PluginsFileSource) {
        if let Some(path) = flag {
            return (Some(path.to_path_buf()), PluginsFileSource::Flag);
        }
        if let Some(path) = env {
            return (Some(path.to_path_buf()), PluginsFileSource::Env);
        }
        let local = PathBuf::from("plugins.toml");
        if local.is_file() {
            return (Some(local), PluginsFileSource::WorkingDirectory);
        }
        let exe_dir = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf));
        if let Some(dir) = exe_dir {
            for candidate in [dir.join("plugins.toml"), dir.join("../../plugins.toml")] {
                if candidate.is_file() {
                    return (Some(candidate), PluginsFileSource::Bundled);
                }
            }
        }
        (None, PluginsFileSource::None)
    }

    /// Reads and validates the file at `path`.
    pub fn read(path: &Path, source: PluginsFileSource) -> Result<PluginsFile, PluginsFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| PluginsFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Self::parse(&text, &absolute, source)
    }

    /// An empty file, used when none exists.
    pub fn empty() -> PluginsFile {
        PluginsFile {
            path: PathBuf::new(),
            source: PluginsFileSource::None,
            plugins: Vec::new(),
            owners: BTreeMap::new(),
            inherit: true,
            layers: Vec::new(),
        }
    }

    /// Every plugins file that applies, layered (see the module's documentation).
    pub fn load(flag: Option<&Path>, env: Option<&Path>) -> Result<PluginsFile, PluginsFileError> {
        let mut candidates: Vec<(PathBuf, PluginsFileSource)> = Vec::new();
        if let Some(bundled) = bundled_file() {
            candidates.push((bundled, PluginsFileSource::Bundled));
        }
        let local = PathBuf::from("plugins.toml");
        if local.is_file() {
            candidates.push((local, PluginsFileSource::WorkingDirectory));
        }
        if let Some(user) = user_file().filter(|f| f.is_file()) {
            candidates.push((user, PluginsFileSource::User));
        }
        if let Some(path) = env {
            candidates.push((path.to_path_buf(), PluginsFileSource::Env));
        }
        if let Some(path) = flag {
            candidates.push((path.to_path_buf(), PluginsFileSource::Flag));
        }
        // The same file twice (the workspace's plugins.toml is both bundled and local) is one
        // layer, at its highest place.
        let canonical =
            |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut merged = PluginsFile::empty();
        for (at, (path, source)) in candidates.iter().enumerate() {
            let again = candidates[at + 1..]
                .iter()
                .any(|(later, _)| canonical(later) == canonical(path));
            if !again {
                merged = merged.overlaid_with(PluginsFile::read(path, *source)?);
            }
        }
        Ok(merged)
    }

    /// `upper` layered over `self`.
    fn overlaid_with(self, upper: PluginsFile) -> PluginsFile {
        let mut below = if upper.inherit {
            self
        } else {
            PluginsFile::empty()
        };
        let layer = below.layers.len();
        for mut spec in upper.plugins {
            spec.layer = layer;
            match below.plugins.iter_mut().find(|p| p.name == spec.name) {
                Some(existing) => *existing = spec,
                None => below.plugins.push(spec),
            }
        }
        below.owners.extend(upper.owners);
        below.layers.push((upper.path.clone(), upper.source));
        PluginsFile {
            path: upper.path,
            source: upper.source,
            plugins: below.plugins,
            owners: below.owners,
            inherit: true,
            layers: below.layers,
        }
    }

    /// Parses `text` as the plugins file at `path` (relative plugin paths resolve against its folder).
    pub fn parse(
        text: &str,
        path: &Path,
        source: PluginsFileSource,
    ) -> Result<PluginsFile, PluginsFileError> {
        let invalid = |message: String| PluginsFileError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let raw: RawFile =
            toml::from_str(text).map_err(|err| invalid(one_line(&err.to_string())))?;
        let folder = path.parent().unwrap_or(Path::new("."));
        let file = path.to_path_buf();
        let mut plugins: Vec<PluginSpec> = Vec::with_capacity(raw.plugin.len());
        for (index, entry) in raw.plugin.into_iter().enumerate() {
            if entry.name.trim().is_empty() {
                return Err(invalid(format!("plugin[{index}].name is empty")));
            }
            if plugins.iter().any(|p| p.name == entry.name) {
                return Err(invalid(format!(
                    "plugin[{index}].name '{}' is listed twice; give each plugin its own name",
                    entry.name
                )));
            }
            let version = semver::VersionReq::parse(&entry.version).map_err(|err| {
                invalid(format!(
                    "plugin '{}': version '{}' is not a semver requirement ({err}); write e.g. \"^1.2\"",
                    entry.name, entry.version
                ))
            })?;
            let expanded = PathBuf::from(
                entry
                    .path
                    .to_string_lossy()
                    .replace("${profile}", running_profile()),
            );
            let path = if expanded.is_absolute() {
                expanded
            } else {
                folder.join(expanded)
            };
            plugins.push(PluginSpec {
                name: entry.name,
                path: normalize(&path),
                version,
                enabled: entry.enabled,
                file: file.clone(),
                layer: 0,
            });
        }
        for (type_name, owner) in &raw.owners {
            if !plugins.iter().any(|p| &p.name == owner) {
                return Err(invalid(format!(
                    "owners.\"{type_name}\" names plugin '{owner}', which is not listed"
                )));
            }
        }
        Ok(PluginsFile {
            path: path.to_path_buf(),
            source,
            plugins,
            owners: raw.owners,
            inherit: raw.inherit,
            layers: vec![(path.to_path_buf(), source)],
        })
    }
}

/// The bundled file: beside the executable, in the installed layout
/// (`PREFIX/bin/cdkd` → `PREFIX/lib/cdkd/plugins.toml`), or at the root of the cargo workspace
/// whose `target/<profile>/` holds the executable.
fn bundled_file() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join("plugins.toml"),
        dir.join("../lib/cdkd/plugins.toml"),
        dir.join("../../plugins.toml"),
    ]
    .into_iter()
    .find(|candidate| candidate.is_file())
    .map(|found| normalize(&found))
}

/// The user's plugins file: `$XDG_CONFIG_HOME/cdkd/plugins.toml`, else
/// `~/.config/cdkd/plugins.toml`.
fn user_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("cdkd").join("plugins.toml"))
}

/// The cargo profile folder the running executable sits in: `release` for
/// `target/release/cdkd`, else `debug`.
fn running_profile() -> &'static str {
    let in_release = std::env::current_exe().ok().is_some_and(|exe| {
        let folder = exe.parent();
        folder.and_then(Path::file_name) == Some(std::ffi::OsStr::new("release"))
            && folder.and_then(Path::parent).and_then(Path::file_name)
                == Some(std::ffi::OsStr::new("target"))
    });
    if in_release {
        "release"
    } else {
        "debug"
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Removes `.` and `..` components lexically, so output paths read well.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<PluginsFile, PluginsFileError> {
        PluginsFile::parse(
            text,
            Path::new("/etc/cdkd/plugins.toml"),
            PluginsFileSource::Flag,
        )
    }

    fn layer(text: &str, path: &str, source: PluginsFileSource) -> PluginsFile {
        PluginsFile::parse(text, Path::new(path), source).unwrap()
    }

    #[test]
    fn a_higher_layer_replaces_entries_by_name_and_can_drop_the_layers_below() {
        let bundled = layer(
            "[[plugin]]\nname = \"s3\"\npath = \"target/${profile}/libs3.so\"\n[[plugin]]\nname = \"iam\"\npath = \"libiam.so\"\n[owners]\n\"AWS::S3::Bucket\" = \"s3\"\n",
            "/opt/cdkd/plugins.toml",
            PluginsFileSource::Bundled,
        );
        // This test binary is not target/release/cdkd.
        assert_eq!(
            bundled.plugins[0].path,
            PathBuf::from("/opt/cdkd/target/debug/libs3.so")
        );
        let user = layer(
            "[[plugin]]\nname = \"s3\"\npath = \"/home/u/libs3-next.so\"\n[[plugin]]\nname = \"acme\"\npath = \"/home/u/libacme.so\"\n",
            "/home/u/.config/cdkd/plugins.toml",
            PluginsFileSource::User,
        );
        let merged = PluginsFile::empty()
            .overlaid_with(bundled)
            .overlaid_with(user);
        let names: Vec<(&str, &Path, usize)> = merged
            .plugins
            .iter()
            .map(|p| (p.name.as_str(), p.file.as_path(), p.layer))
            .collect();
        assert_eq!(
            names,
            [
                ("s3", Path::new("/home/u/.config/cdkd/plugins.toml"), 1),
                ("iam", Path::new("/opt/cdkd/plugins.toml"), 0),
                ("acme", Path::new("/home/u/.config/cdkd/plugins.toml"), 1),
            ]
        );
        assert_eq!(
            merged.plugins[0].path,
            PathBuf::from("/home/u/libs3-next.so")
        );
        assert_eq!(merged.owners["AWS::S3::Bucket"], "s3");
        assert_eq!(merged.layers.len(), 2);
        assert_eq!(merged.source, PluginsFileSource::User);

        let alone = layer(
            "inherit = false\n[[plugin]]\nname = \"only\"\npath = \"/x.so\"\n",
            "/tmp/plugins.toml",
            PluginsFileSource::Flag,
        );
        let replaced = merged.overlaid_with(alone);
        assert_eq!(replaced.plugins.len(), 1);
        assert_eq!(replaced.plugins[0].name, "only");
        assert!(replaced.owners.is_empty());
    }

    #[test]
    fn relative_paths_resolve_against_the_files_folder() {
        let file = parse(
            r#"
            [[plugin]]
            name = "s3"
            path = "../lib/libs3.so"
            version = "^1.2"
            [[plugin]]
            name = "abs"
            path = "/opt/x.so"
            enabled = false
            "#,
        )
        .unwrap();
        assert_eq!(file.plugins[0].path, PathBuf::from("/etc/lib/libs3.so"));
        assert!(file.plugins[0]
            .version
            .matches(&semver::Version::new(1, 3, 0)));
        assert!(!file.plugins[0]
            .version
            .matches(&semver::Version::new(2, 0, 0)));
        assert_eq!(file.plugins[1].path, PathBuf::from("/opt/x.so"));
        assert!(!file.plugins[1].enabled);
        assert!(file.plugins[1]
            .version
            .matches(&semver::Version::new(9, 9, 9)));
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let err =
            parse("[[plugin]]\nname = \"a\"\npath = \"a.so\"\nversion = \"one\"\n").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/etc/cdkd/plugins.toml"), "{text}");
        assert!(text.contains("plugin 'a': version 'one'"), "{text}");

        let err = parse("[[plugin]]\nname = \"a\"\npath = \"a.so\"\n[[plugin]]\nname = \"a\"\npath = \"b.so\"\n")
            .unwrap_err();
        assert!(err.to_string().contains("'a' is listed twice"), "{err}");

        let err = parse("[owners]\n\"X::Y::Z\" = \"ghost\"\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("owners.\"X::Y::Z\" names plugin 'ghost'"),
            "{err}"
        );

        let err = parse("[[plugin]]\nname = \"a\"\npath = \"a.so\"\nfoo = 1\n").unwrap_err();
        assert!(err.to_string().contains("foo"), "{err}");
    }
}
