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
            let path = if entry.path.is_absolute() {
                entry.path
            } else {
                folder.join(entry.path)
            };
            plugins.push(PluginSpec {
                name: entry.name,
                path: normalize(&path),
                version,
                enabled: entry.enabled,
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
        })
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
