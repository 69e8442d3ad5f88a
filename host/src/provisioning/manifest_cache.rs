//! What each plugin library says about itself, kept so a run can route without loading it.
//!
//! A plugin's manifest (name, version, provider-api version, types and patterns, handled
//! properties) is what routing needs; its code is only needed for the types a run provisions.
//! The manifest of a library is written the first time the library is loaded (or installed)
//! and kept under the cache folder by the host's provider-api version and the library's SHA-256: a rebuilt library has another
//! hash, so its old manifest is never used for it. A manifest is routing data, not code: a
//! library is still checked against its pin before it loads, whatever its manifest says.

use std::path::PathBuf;

use cdkd_provider_api::protocol::PluginManifest;
use serde::{Deserialize, Serialize};

use super::plugins_file::is_sha256;

/// A library's manifest as cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedManifest {
    /// The library's SHA-256.
    pub sha256: String,
    /// The provider-api version its root module declares.
    pub api_version: String,
    /// What its `describe` returned.
    pub manifest: PluginManifest,
}

/// The folder of cached manifests (`<cache>/manifests`).
#[derive(Debug, Clone)]
pub struct ManifestCache {
    dir: PathBuf,
}

impl ManifestCache {
    /// The user's: `manifests/api-<provider-api version>/` in cdkd's cache folder
    /// (`CDKD_CACHE_DIR`, `$XDG_CACHE_HOME/cdkd`). Per provider-api version of the host,
    /// because a manifest is kept as this host reads it: an older host would drop the fields a
    /// newer plugin declares, and a newer host must not route with that.
    pub fn for_user() -> Option<ManifestCache> {
        crate::aws_env::cache_dir().map(|dir| {
            ManifestCache::at(
                dir.join("manifests")
                    .join(format!("api-{}", cdkd_provider_api::VERSION)),
            )
        })
    }

    /// Manifests kept in `dir`.
    pub fn at(dir: PathBuf) -> ManifestCache {
        ManifestCache { dir }
    }

    fn path(&self, sha256: &str) -> Option<PathBuf> {
        is_sha256(sha256).then(|| self.dir.join(format!("{sha256}.json")))
    }

    /// The manifest of the library whose SHA-256 is `sha256`, when cached and readable.
    pub fn get(&self, sha256: &str) -> Option<CachedManifest> {
        let text = std::fs::read_to_string(self.path(sha256)?).ok()?;
        serde_json::from_str::<CachedManifest>(&text)
            .ok()
            .filter(|cached| cached.sha256 == sha256)
    }

    /// Keeps `cached`; a failure only costs a load next time, so it is logged, not returned.
    pub fn put(&self, cached: &CachedManifest) {
        let Some(path) = self.path(&cached.sha256) else {
            return;
        };
        let written = std::fs::create_dir_all(&self.dir).and_then(|()| {
            // Written beside and renamed: another cdkd may read it meanwhile.
            let draft = path.with_extension(format!("json.{}", std::process::id()));
            let json = serde_json::to_string(cached).map_err(std::io::Error::other)?;
            std::fs::write(&draft, json)?;
            std::fs::rename(&draft, &path)
        });
        if let Err(err) = written {
            tracing::debug!(path = %path.display(), "manifest not cached: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_is_found_by_its_librarys_hash_only() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ManifestCache::at(dir.path().join("manifests"));
        let sha = "a".repeat(64);
        let cached = CachedManifest {
            sha256: sha.clone(),
            api_version: "0.1.10".into(),
            manifest: PluginManifest {
                name: "acme".into(),
                version: "1.0.0".into(),
                description: String::new(),
                provider_api_version: "0.1.10".into(),
                resource_types: Vec::new(),
            },
        };
        assert_eq!(cache.get(&sha), None);
        cache.put(&cached);
        assert_eq!(cache.get(&sha), Some(cached.clone()));
        assert_eq!(cache.get(&"b".repeat(64)), None);
        // A file whose content names another hash is not taken for this one.
        std::fs::copy(
            dir.path().join(format!("manifests/{sha}.json")),
            dir.path()
                .join(format!("manifests/{}.json", "c".repeat(64))),
        )
        .unwrap();
        assert_eq!(cache.get(&"c".repeat(64)), None);
        assert_eq!(cache.get("../../etc/passwd"), None);
    }
}
