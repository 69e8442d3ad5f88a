//! AWS facts remembered on disk between runs, so a run that changes nothing does not ask
//! them again: the account an access key belongs to (fixed for the key's life), the region
//! a state bucket lives in (fixed until the bucket is deleted), and a digest of the template
//! last deployed from this machine to each stack (a hint only: it decides whether a deploy
//! first tries the no-change fast path).
//!
//! Entries are keyed by a SHA-256 of the endpoint and the access key id or bucket name (the
//! file names no key). The file is `facts.json` in the cache folder
//! ([`crate::provisioning::type_schemas::cache_dir`]); a file that cannot be read or written
//! is ignored: the facts are asked of AWS as before. A bucket region that AWS contradicts (a
//! 301 answer) is forgotten ([`FactsFile::forget_bucket_regions`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::aws_env::{cache_dir, AwsEnvironment};

#[derive(Debug, Default, Serialize, Deserialize)]
struct Facts {
    #[serde(default)]
    accounts: BTreeMap<String, String>,
    #[serde(default, rename = "bucketRegions")]
    bucket_regions: BTreeMap<String, String>,
    #[serde(default, rename = "deployedTemplates")]
    deployed_templates: BTreeMap<String, String>,
}

/// The facts file.
#[derive(Debug, Clone)]
pub struct FactsFile {
    path: Option<PathBuf>,
}

impl FactsFile {
    /// `facts.json` in the default cache folder (none when there is no home or cache folder).
    pub fn in_cache_dir() -> FactsFile {
        FactsFile {
            path: cache_dir().map(|dir| dir.join("facts.json")),
        }
    }

    /// `facts.json` in `aws`'s cache folder.
    pub fn of(aws: &AwsEnvironment) -> FactsFile {
        FactsFile {
            path: aws.cache_dir().map(|dir| dir.join("facts.json")),
        }
    }

    /// A file at `path`.
    pub fn at(path: PathBuf) -> FactsFile {
        FactsFile { path: Some(path) }
    }

    fn read(&self) -> Facts {
        self.path
            .as_ref()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn change(&self, f: impl FnOnce(&mut Facts)) {
        let Some(path) = &self.path else {
            return;
        };
        let mut facts = self.read();
        f(&mut facts);
        let Ok(bytes) = serde_json::to_vec_pretty(&facts) else {
            return;
        };
        // Written aside and renamed: two runs at once never leave a half-written file.
        let partial = path.with_extension(format!("json.{}", std::process::id()));
        let written = path
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| std::fs::write(&partial, bytes))
            .and_then(|_| std::fs::rename(&partial, path));
        if let Err(err) = written {
            tracing::debug!("cannot remember AWS facts in {}: {err}", path.display());
            let _ = std::fs::remove_file(&partial);
        }
    }

    /// The remembered account of an access key.
    pub fn account(&self, endpoint: Option<&str>, access_key_id: &str) -> Option<String> {
        self.read()
            .accounts
            .get(&key(endpoint, access_key_id))
            .cloned()
    }

    /// Remembers the account of an access key.
    pub fn remember_account(&self, endpoint: Option<&str>, access_key_id: &str, account: &str) {
        self.change(|facts| {
            facts
                .accounts
                .insert(key(endpoint, access_key_id), account.to_string());
        });
    }

    /// The remembered region of a bucket.
    pub fn bucket_region(&self, endpoint: Option<&str>, bucket: &str) -> Option<String> {
        self.read()
            .bucket_regions
            .get(&key(endpoint, bucket))
            .cloned()
    }

    /// Remembers the region of a bucket.
    pub fn remember_bucket_region(&self, endpoint: Option<&str>, bucket: &str, region: &str) {
        self.change(|facts| {
            facts
                .bucket_regions
                .insert(key(endpoint, bucket), region.to_string());
        });
    }

    /// The digest remembered for what was last deployed to `scope` (endpoint, bucket, stack,
    /// region) from this machine.
    pub fn deployed(&self, scope: &[&str]) -> Option<String> {
        self.read()
            .deployed_templates
            .get(&key(None, &scope.join("\n")))
            .cloned()
    }

    /// Remembers what was deployed to `scope`.
    pub fn remember_deployed(&self, scope: &[&str], digest: &str) {
        self.change(|facts| {
            facts
                .deployed_templates
                .insert(key(None, &scope.join("\n")), digest.to_string());
        });
    }

    /// Forgets every bucket's region (AWS said one is elsewhere; they are cheap to ask again).
    pub fn forget_bucket_regions(&self) {
        self.change(|facts| facts.bucket_regions.clear());
    }
}

fn key(endpoint: Option<&str>, name: &str) -> String {
    let digest = Sha256::digest(format!("{}\n{name}", endpoint.unwrap_or("")).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_kept_per_endpoint_and_name_and_the_file_names_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let facts = FactsFile::at(dir.path().join("facts.json"));
        assert_eq!(facts.account(None, "AKIAEXAMPLE"), None);
        facts.remember_account(None, "AKIAEXAMPLE", "111122223333");
        facts.remember_account(Some("http://127.0.0.1:1"), "AKIAEXAMPLE", "123456789012");
        assert_eq!(
            facts.account(None, "AKIAEXAMPLE").as_deref(),
            Some("111122223333")
        );
        assert_eq!(
            facts
                .account(Some("http://127.0.0.1:1"), "AKIAEXAMPLE")
                .as_deref(),
            Some("123456789012")
        );
        facts.remember_bucket_region(None, "my-state", "eu-west-1");
        assert_eq!(
            facts.bucket_region(None, "my-state").as_deref(),
            Some("eu-west-1")
        );
        facts.forget_bucket_regions();
        assert_eq!(facts.bucket_region(None, "my-state"), None);
        let scope = ["http://127.0.0.1:1", "my-state", "MyStack", "us-east-1"];
        assert_eq!(facts.deployed(&scope), None);
        facts.remember_deployed(&scope, "abc");
        assert_eq!(facts.deployed(&scope).as_deref(), Some("abc"));
        assert_eq!(
            facts.deployed(&["other", "my-state", "MyStack", "us-east-1"]),
            None
        );
        let text = std::fs::read_to_string(dir.path().join("facts.json")).unwrap();
        assert!(!text.contains("AKIAEXAMPLE") && !text.contains("my-state"));
    }

    #[test]
    fn an_unreadable_or_unwritable_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("facts.json"), b"{not json").unwrap();
        let facts = FactsFile::at(dir.path().join("facts.json"));
        assert_eq!(facts.account(None, "AKIA"), None);
        facts.remember_account(None, "AKIA", "1");
        assert_eq!(facts.account(None, "AKIA").as_deref(), Some("1"));
        let blocked = FactsFile::at(dir.path().join("facts.json").join("below-a-file.json"));
        blocked.remember_account(None, "AKIA", "1");
        assert_eq!(blocked.account(None, "AKIA"), None);
    }
}
