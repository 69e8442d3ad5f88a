//! `plugins.toml`: which provider plugins the host loads, from where, at which versions, pinned
//! by which SHA-256.
//!
//! ```toml
//! [[plugin]]
//! name = "s3"                                           # how cdkd refers to it
//! path = "plugins/${cdylib:cdkd_provider_s3}"           # relative to this file's folder
//! version = "^0.2"                                      # semver requirement on the plugin
//! sha256 = "9f2c…"                                      # the library's pin (`cdkd providers lock`)
//! enabled = true                                        # default true
//!
//! [owners]                 # who wins when two plugins claim one type
//! "Acme::Echo::Thing" = "example-echo"
//! ```
//!
//! This module reads and writes one file. Which files apply, in which order, and which of them
//! are trusted is [`super::plugin_layers`]'s business. `${profile}` in a path is the cargo
//! profile folder the running `cdkd` was built into (`release` for `target/release/cdkd`, else
//! `debug`); `${cdylib:NAME}` is the file the `cdylib` crate NAME builds to on this platform
//! (`libNAME.so`, `libNAME.dylib`, `NAME.dll`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Where the plugins file was found, and what it says (for a layered set: the top file's path
/// and source, every layer's entries).
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
    /// The file this one was locked from (`cdkd providers lock --output`), and that file's
    /// SHA-256 then: the workspace's own `plugins.toml` is not a second layer while unchanged.
    pub locked_from: Option<(PathBuf, String)>,
    /// What the user must hear on every run: project files skipped, bundled plugins replaced.
    pub notices: Vec<String>,
}

/// How the plugins file was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginsFileSource {
    /// `--plugins FILE`.
    Flag,
    /// `CDKD_PLUGINS`.
    Env,
    /// `./plugins.toml`: a project's file, loaded only once trusted.
    WorkingDirectory,
    /// The user's `$XDG_CONFIG_HOME/cdkd/plugins.toml` (or `~/.config/cdkd/plugins.toml`).
    User,
    /// The install's own: beside the `cdkd` executable, or in `PREFIX/lib/cdkd/`.
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
    /// The SHA-256 the library must have to be loaded: the entry's own `sha256` in the
    /// install's or the user's file, the trust record's in a project file.
    pub pin: Option<String>,
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
    /// A project file given with `--plugins` or `CDKD_PLUGINS` that the user has not trusted.
    #[error("plugins file {} is not trusted ({reason}): its libraries would run with your AWS credentials. Read it, then run `cdkd providers trust {}`", path.display(), path.display())]
    Untrusted {
        /// The file.
        path: PathBuf,
        /// Never trusted, or changed since.
        reason: String,
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
    #[serde(default)]
    locked_from: Option<PathBuf>,
    #[serde(default)]
    locked_from_sha256: Option<String>,
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
    #[serde(default)]
    sha256: Option<String>,
}

fn any_version() -> String {
    "*".to_string()
}

fn enabled_by_default() -> bool {
    true
}

impl PluginsFile {
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
            locked_from: None,
            notices: Vec::new(),
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
                expand(&entry.path.to_string_lossy(), std::env::consts::OS).map_err(|message| {
                    invalid(format!("plugin '{}': path: {message}", entry.name))
                })?,
            );
            let path = if expanded.is_absolute() {
                expanded
            } else {
                folder.join(expanded)
            };
            let pin = match entry.sha256 {
                Some(pin) if !is_sha256(&pin) => {
                    return Err(invalid(format!(
                        "plugin '{}': sha256 '{pin}' is not 64 hexadecimal digits",
                        entry.name
                    )))
                }
                pin => pin.map(|pin| pin.to_ascii_lowercase()),
            };
            plugins.push(PluginSpec {
                name: entry.name,
                path: normalize(&path),
                version,
                enabled: entry.enabled,
                file: file.clone(),
                layer: 0,
                pin,
            });
        }
        for (type_name, owner) in &raw.owners {
            if !plugins.iter().any(|p| &p.name == owner) {
                return Err(invalid(format!(
                    "owners.\"{type_name}\" names plugin '{owner}', which is not listed"
                )));
            }
        }
        let locked_from = match (raw.locked_from, raw.locked_from_sha256) {
            (Some(from), Some(hash)) => Some((folder.join(from), hash.to_ascii_lowercase())),
            _ => None,
        };
        Ok(PluginsFile {
            path: path.to_path_buf(),
            source,
            plugins,
            owners: raw.owners,
            inherit: raw.inherit,
            layers: vec![(path.to_path_buf(), source)],
            locked_from,
            notices: Vec::new(),
        })
    }

    /// `upper` layered over `self`: its entries replace this one's by name (a notice says so
    /// when the replaced entry is the install's own), and `inherit = false` drops the layers
    /// below it.
    pub fn overlaid_with(self, upper: PluginsFile) -> PluginsFile {
        let mut notices = self.notices.clone();
        let locked_from = self.locked_from.clone();
        let mut below = if upper.inherit {
            self
        } else {
            PluginsFile::empty()
        };
        let layer = below.layers.len();
        let bundled = |spec: &PluginSpec| {
            below
                .layers
                .iter()
                .any(|(path, source)| *source == PluginsFileSource::Bundled && *path == spec.file)
        };
        for mut spec in upper.plugins {
            spec.layer = layer;
            match below.plugins.iter().position(|p| p.name == spec.name) {
                Some(at) => {
                    if bundled(&below.plugins[at]) {
                        let what = if spec.enabled { "replaces" } else { "disables" };
                        notices.push(format!(
                            "plugin '{}' of {} {what} the bundled one ({}); remove the entry to use the bundled plugin again",
                            spec.name,
                            spec.file.display(),
                            below.plugins[at].path.display()
                        ));
                    }
                    below.plugins[at] = spec;
                }
                None => below.plugins.push(spec),
            }
        }
        below.owners.extend(upper.owners);
        below.layers.push((upper.path.clone(), upper.source));
        notices.extend(upper.notices);
        PluginsFile {
            path: upper.path,
            source: upper.source,
            plugins: below.plugins,
            owners: below.owners,
            inherit: true,
            layers: below.layers,
            locked_from: locked_from.or(upper.locked_from),
            notices,
        }
    }

    /// The file as `cdkd providers lock` writes it: every entry's path relative to `output`'s
    /// folder when it lies under it, with its pin from `pins` (entry name → SHA-256).
    pub fn to_locked_toml(
        &self,
        output: &Path,
        pins: &BTreeMap<String, String>,
        source: Option<(&Path, &str)>,
    ) -> String {
        let folder = output.parent().unwrap_or(Path::new("."));
        let quote = |text: &str| toml::Value::String(text.to_string()).to_string();
        let mut out = String::from(
            "# Written by `cdkd providers lock`: every library is pinned by its SHA-256, and cdkd\n\
             # refuses one whose bytes differ. Lock again after rebuilding a plugin.\n",
        );
        if !self.inherit {
            out.push_str("inherit = false\n");
        }
        if let Some((from, hash)) = source {
            out.push_str(&format!(
                "locked_from = {}\nlocked_from_sha256 = {}\n",
                quote(&from.display().to_string()),
                quote(hash)
            ));
        }
        for spec in &self.plugins {
            let path = spec
                .path
                .strip_prefix(folder)
                .map(Path::to_path_buf)
                .unwrap_or_else(|_| spec.path.clone());
            out.push_str(&format!(
                "\n[[plugin]]\nname = {}\npath = {}\nversion = {}\n",
                quote(&spec.name),
                quote(&path.display().to_string()),
                quote(&spec.version.to_string())
            ));
            if let Some(pin) = pins.get(&spec.name) {
                out.push_str(&format!("sha256 = {}\n", quote(pin)));
            }
            if !spec.enabled {
                out.push_str("enabled = false\n");
            }
        }
        if !self.owners.is_empty() {
            out.push_str("\n[owners]\n");
            for (type_name, owner) in &self.owners {
                out.push_str(&format!("{} = {}\n", quote(type_name), quote(owner)));
            }
        }
        out
    }
}

/// Whether `text` reads as a SHA-256 in hexadecimal.
pub fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Expands `${profile}` and `${cdylib:NAME}` in a plugin path, for the platform `os`.
fn expand(path: &str, os: &str) -> Result<String, String> {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find('}') else {
            return Err(format!("'{path}' has an unclosed '${{'"));
        };
        let placeholder = &rest[at + 2..at + end];
        match placeholder.split_once(':') {
            None if placeholder == "profile" => out.push_str(running_profile()),
            Some(("cdylib", name)) if !name.is_empty() => out.push_str(
                &cdkd_provider_api::host::library_file_name(name, os),
            ),
            _ => {
                return Err(format!(
                    "unknown placeholder '${{{placeholder}}}' in '{path}'; write ${{profile}} or ${{cdylib:CRATE_NAME}}"
                ))
            }
        }
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
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
pub fn normalize(path: &Path) -> PathBuf {
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

    #[test]
    fn placeholders_expand_for_each_platform_and_unknown_ones_are_refused() {
        assert_eq!(
            expand("plugins/${cdylib:cdkd_provider_s3}", "linux").unwrap(),
            "plugins/libcdkd_provider_s3.so"
        );
        assert_eq!(
            expand("${cdylib:acme-provider}", "macos").unwrap(),
            "libacme_provider.dylib"
        );
        assert_eq!(expand("${cdylib:acme}", "windows").unwrap(), "acme.dll");
        // This test binary is not target/release/cdkd.
        assert_eq!(
            expand("target/${profile}/x", "linux").unwrap(),
            "target/debug/x"
        );
        let err = expand("${home}/x.so", "linux").unwrap_err();
        assert!(err.contains("unknown placeholder '${home}'"), "{err}");
        assert!(expand("${cdylib:x", "linux")
            .unwrap_err()
            .contains("unclosed"));
    }

    #[test]
    fn pins_are_read_checked_and_written_back_relative_to_the_output() {
        let pin = "AB".repeat(32);
        let file = parse(&format!(
            "[[plugin]]\nname = \"s3\"\npath = \"plugins/libs3.so\"\nversion = \"^0.2\"\nsha256 = \"{pin}\"\n\
             [[plugin]]\nname = \"off\"\npath = \"/opt/off.so\"\nenabled = false\n\
             [owners]\n\"AWS::S3::Bucket\" = \"s3\"\n"
        ))
        .unwrap();
        assert_eq!(
            file.plugins[0].pin.as_deref(),
            Some(pin.to_ascii_lowercase().as_str())
        );
        assert_eq!(file.plugins[1].pin, None);

        let pins = BTreeMap::from([("s3".to_string(), "c".repeat(64))]);
        let text = file.to_locked_toml(
            Path::new("/etc/cdkd/plugins.toml"),
            &pins,
            Some((Path::new("/src/plugins.toml"), "d00d")),
        );
        let again = PluginsFile::parse(
            &text,
            Path::new("/etc/cdkd/plugins.toml"),
            PluginsFileSource::Bundled,
        )
        .unwrap();
        assert!(text.contains("path = \"plugins/libs3.so\"\n"), "{text}");
        assert_eq!(
            again.plugins[0].path,
            PathBuf::from("/etc/cdkd/plugins/libs3.so")
        );
        assert_eq!(again.plugins[0].pin, Some("c".repeat(64)));
        assert_eq!(again.plugins[1].path, PathBuf::from("/opt/off.so"));
        assert!(!again.plugins[1].enabled);
        assert_eq!(again.owners["AWS::S3::Bucket"], "s3");
        assert_eq!(
            again.locked_from,
            Some((PathBuf::from("/src/plugins.toml"), "d00d".to_string()))
        );

        let err =
            parse("[[plugin]]\nname = \"a\"\npath = \"a.so\"\nsha256 = \"xyz\"\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("sha256 'xyz' is not 64 hexadecimal digits"),
            "{err}"
        );
    }

    #[test]
    fn replacing_or_disabling_a_bundled_plugin_leaves_a_notice() {
        let bundled = layer(
            "[[plugin]]\nname = \"s3\"\npath = \"/opt/libs3.so\"\n[[plugin]]\nname = \"sqs\"\npath = \"/opt/libsqs.so\"\n",
            "/opt/plugins.toml",
            PluginsFileSource::Bundled,
        );
        let user = layer(
            "[[plugin]]\nname = \"s3\"\npath = \"/home/u/libs3.so\"\n[[plugin]]\nname = \"sqs\"\npath = \"/x.so\"\nenabled = false\n[[plugin]]\nname = \"acme\"\npath = \"/a.so\"\n",
            "/home/u/plugins.toml",
            PluginsFileSource::User,
        );
        let merged = PluginsFile::empty()
            .overlaid_with(bundled)
            .overlaid_with(user);
        assert_eq!(merged.notices.len(), 2, "{:?}", merged.notices);
        assert!(merged.notices[0].starts_with(
            "plugin 's3' of /home/u/plugins.toml replaces the bundled one (/opt/libs3.so)"
        ));
        assert!(
            merged.notices[1].contains("'sqs' of /home/u/plugins.toml disables the bundled one")
        );
        // A replacement of a replacement is not the bundled one's business.
        let again = merged.overlaid_with(layer(
            "[[plugin]]\nname = \"acme\"\npath = \"/b.so\"\n",
            "/p/plugins.toml",
            PluginsFileSource::Flag,
        ));
        assert_eq!(again.notices.len(), 2);
    }
}
