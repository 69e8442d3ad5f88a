//! The user's trust in project plugins files, as direnv's `direnv allow` records an `.envrc`.
//!
//! A plugins file that is neither the install's own nor the user's is a project's: a repository
//! can carry one naming any library, and a library's code runs the moment it is loaded, with
//! the user's AWS credentials in the environment. Such a file is ignored until the user trusts
//! it. `cdkd providers trust FILE` records the file's path, the SHA-256 of its bytes and of
//! every library it names; a later change to the file or to a library needs trust again.
//!
//! Records live in `$XDG_CONFIG_HOME/cdkd/trusted/`, one JSON file per trusted plugins file
//! (named by the SHA-256 of its path), so two processes trusting two files never race on one
//! document.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::plugins_file::{PluginsFile, PluginsFileError, PluginsFileSource};

/// What the user trusted: one plugins file as it was, and its libraries as they were.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustRecord {
    /// The plugins file, absolute and canonical.
    pub file: PathBuf,
    /// The SHA-256 of the file's bytes when it was trusted.
    pub sha256: String,
    /// Each library the file names (absolute path) and its SHA-256 then.
    pub libraries: BTreeMap<PathBuf, String>,
    /// Libraries the file names that did not exist then: not loaded until trusted again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<PathBuf>,
    /// When (RFC 3339).
    pub trusted_at: String,
}

/// Why a file could not be trusted or its trust not recorded.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The plugins file is unreadable or invalid.
    #[error(transparent)]
    File(#[from] PluginsFileError),
    /// A library the file names could not be read.
    #[error("cannot trust {}: plugin '{plugin}' names {}, which cannot be read ({source}); build or copy it first", file.display(), library.display())]
    Library {
        /// The plugins file.
        file: PathBuf,
        /// The entry.
        plugin: String,
        /// Its library.
        library: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An entry's own pin does not match its library.
    #[error("cannot trust {}: plugin '{plugin}' pins sha256 {pinned}, but {} is {actual}; fix the pin or the library", file.display(), library.display())]
    PinMismatch {
        /// The plugins file.
        file: PathBuf,
        /// The entry.
        plugin: String,
        /// Its library.
        library: PathBuf,
        /// The entry's `sha256`.
        pinned: String,
        /// The library's.
        actual: String,
    },
    /// The record could not be written or read.
    #[error("cannot record trust in {}: {source}", dir.display())]
    Store {
        /// The trust folder.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// No configuration folder: neither `XDG_CONFIG_HOME` nor `HOME` is set.
    #[error("no folder to record trust in: set XDG_CONFIG_HOME or HOME")]
    NoConfigFolder,
}

/// The folder of trust records.
#[derive(Debug, Clone)]
pub struct TrustStore {
    dir: PathBuf,
}

/// What a trusted file's lookup says.
#[derive(Debug, Clone, PartialEq)]
pub enum Trust {
    /// Trusted as it is: the library pins to use.
    Trusted(BTreeMap<PathBuf, String>),
    /// Trusted once, changed since.
    Changed,
    /// Never trusted.
    Unknown,
}

impl TrustStore {
    /// The user's: `$XDG_CONFIG_HOME/cdkd/trusted`, else `~/.config/cdkd/trusted`.
    pub fn for_user() -> Option<TrustStore> {
        super::plugin_layers::config_dir().map(|dir| TrustStore::at(dir.join("trusted")))
    }

    /// Records kept in `dir`.
    pub fn at(dir: PathBuf) -> TrustStore {
        TrustStore { dir }
    }

    fn record_path(&self, file: &Path) -> PathBuf {
        let key = sha256_hex(file.display().to_string().as_bytes());
        self.dir.join(format!("{}.json", &key[..32]))
    }

    /// Whether `file` (canonical), whose bytes hash to `sha256`, is trusted as it is.
    pub fn lookup(&self, file: &Path, sha256: &str) -> Trust {
        let Ok(text) = std::fs::read_to_string(self.record_path(file)) else {
            return Trust::Unknown;
        };
        match serde_json::from_str::<TrustRecord>(&text) {
            Ok(record) if record.file == file && record.sha256 == sha256 => {
                Trust::Trusted(record.libraries)
            }
            Ok(record) if record.file == file => Trust::Changed,
            _ => Trust::Unknown,
        }
    }

    /// Trusts `file` as it is now: hashes it and every library it names (an entry's own
    /// `sha256` must agree), and records them.
    pub fn trust(&self, file: &Path) -> Result<TrustRecord, TrustError> {
        let file = canonical(file);
        let bytes = std::fs::read(&file).map_err(|source| PluginsFileError::Read {
            path: file.clone(),
            source,
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let parsed = PluginsFile::parse(&text, &file, PluginsFileSource::WorkingDirectory)?;
        let mut libraries = BTreeMap::new();
        let mut missing = Vec::new();
        for spec in &parsed.plugins {
            // A disabled entry loads nothing; one whose library is missing stays unpinned
            // until it is built and the file trusted again.
            if !spec.enabled {
                continue;
            }
            let actual = match cdkd_provider_api::host::sha256_file(&spec.path) {
                Ok(actual) => actual,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                    missing.push(spec.path.clone());
                    continue;
                }
                Err(source) => {
                    return Err(TrustError::Library {
                        file: file.clone(),
                        plugin: spec.name.clone(),
                        library: spec.path.clone(),
                        source,
                    })
                }
            };
            if let Some(pinned) = spec.pin.as_ref().filter(|pin| **pin != actual) {
                return Err(TrustError::PinMismatch {
                    file: file.clone(),
                    plugin: spec.name.clone(),
                    library: spec.path.clone(),
                    pinned: pinned.clone(),
                    actual,
                });
            }
            libraries.insert(spec.path.clone(), actual);
        }
        let record = TrustRecord {
            file: file.clone(),
            sha256: sha256_hex(&bytes),
            libraries,
            missing,
            trusted_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        };
        let store = |source| TrustError::Store {
            dir: self.dir.clone(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(store)?;
        let path = self.record_path(&file);
        // Written beside and renamed: a reader never sees half a record.
        let draft = path.with_extension(format!("json.{}", std::process::id()));
        // A library path that is not UTF-8 cannot be a JSON key.
        let json = serde_json::to_string_pretty(&record).map_err(std::io::Error::other);
        std::fs::write(&draft, json.map_err(store)?).map_err(store)?;
        std::fs::rename(&draft, &path).map_err(store)?;
        Ok(record)
    }

    /// Forgets `file`; whether it was trusted.
    pub fn untrust(&self, file: &Path) -> Result<bool, TrustError> {
        match std::fs::remove_file(self.record_path(&canonical(file))) {
            Ok(()) => Ok(true),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(TrustError::Store {
                dir: self.dir.clone(),
                source,
            }),
        }
    }
}

/// `path` made absolute and canonical when it exists, so one file has one record.
pub fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// The SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(path: &Path) -> String {
        cdkd_provider_api::host::sha256_file(path).unwrap()
    }

    #[test]
    fn trust_holds_while_file_and_libraries_are_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let library = dir.path().join("libacme.so");
        std::fs::write(&library, b"library one").unwrap();
        let file = dir.path().join("plugins.toml");
        std::fs::write(
            &file,
            "[[plugin]]\nname = \"acme\"\npath = \"libacme.so\"\n",
        )
        .unwrap();
        let store = TrustStore::at(dir.path().join("trusted"));
        let file = canonical(&file);
        assert_eq!(store.lookup(&file, &hash(&file)), Trust::Unknown);

        let record = store.trust(&file).unwrap();
        assert_eq!(record.libraries[&canonical(&library)], hash(&library));
        match store.lookup(&file, &hash(&file)) {
            Trust::Trusted(pins) => assert_eq!(pins[&canonical(&library)], hash(&library)),
            other => panic!("expected trusted, got {other:?}"),
        }

        std::fs::write(
            &file,
            "[[plugin]]\nname = \"acme\"\npath = \"libacme.so\"\n#\n",
        )
        .unwrap();
        assert_eq!(store.lookup(&file, &hash(&file)), Trust::Changed);
        assert!(store.untrust(&file).unwrap());
        assert_eq!(store.lookup(&file, &hash(&file)), Trust::Unknown);
        assert!(!store.untrust(&file).unwrap());
    }

    #[test]
    fn an_entry_pinned_to_other_bytes_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("liba.so"), b"a").unwrap();
        let file = dir.path().join("plugins.toml");
        let pin = "0".repeat(64);
        std::fs::write(
            &file,
            format!("[[plugin]]\nname = \"a\"\npath = \"liba.so\"\nsha256 = \"{pin}\"\n"),
        )
        .unwrap();
        let err = TrustStore::at(dir.path().join("t"))
            .trust(&file)
            .unwrap_err();
        assert!(matches!(err, TrustError::PinMismatch { .. }), "{err}");
        let err = err.to_string();
        assert!(err.contains("plugin 'a' pins sha256 0000"), "{err}");
    }
}
