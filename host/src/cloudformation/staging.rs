//! Where a template CloudFormation must read from a URL is put for the call: a template over
//! its inline limit, or a nested stack's template a parent points at. [`BucketStaging`] is the
//! state bucket, under `cdkd-migrate-tmp/` (the purge table's transient template); each upload
//! is purged with its earlier versions once the call is done.

use async_trait::async_trait;

use crate::state::backend::StateBackend;
use crate::state::purge::{purge_and_report_on, PurgeLogLevel, PurgedObject};

/// A transient template put for CloudFormation to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staged {
    /// Its key, for the purge.
    pub key: String,
    /// The URL CloudFormation reads it from.
    pub url: String,
}

/// Where transient templates go.
#[async_trait]
pub trait TemplateStaging: Send + Sync {
    /// Puts `body` for `stack` under `name` (with its extension).
    async fn put(&self, stack: &str, name: &str, body: Vec<u8>) -> anyhow::Result<Staged>;

    /// Deletes an upload and every earlier version of it (warns on failure).
    async fn purge(&self, key: &str);

    /// Where an upload is, for a person to find it (`s3://bucket/key`).
    fn location(&self, key: &str) -> String;
}

/// The state bucket, answering URLs in the stacks' region.
pub struct BucketStaging {
    backend: StateBackend,
    region: String,
}

impl BucketStaging {
    /// Uploads into `backend`'s bucket, for CloudFormation in `region`.
    pub fn new(backend: StateBackend, region: &str) -> BucketStaging {
        BucketStaging {
            backend,
            region: region.to_string(),
        }
    }
}

#[async_trait]
impl TemplateStaging for BucketStaging {
    async fn put(&self, stack: &str, name: &str, body: Vec<u8>) -> anyhow::Result<Staged> {
        let millis = chrono::Utc::now().timestamp_millis();
        let key = format!("cdkd-migrate-tmp/{stack}/{millis}-{name}");
        self.backend.put_json(&key, body).await?;
        let url = format!(
            "https://{}.s3.{}.{}/{key}",
            self.backend.bucket(),
            self.region,
            crate::aws_env::url_suffix(&self.region)
        );
        Ok(Staged { key, url })
    }

    async fn purge(&self, key: &str) {
        let bucket = &self.backend;
        let _ = bucket.delete_object(key).await;
        purge_and_report_on(
            bucket.storage().as_ref(),
            key,
            PurgedObject::TransientTemplate,
            PurgeLogLevel::Warn,
        )
        .await;
    }

    fn location(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.backend.bucket())
    }
}

/// Puts a transient template, noting its key in `uploads` for the purge; answers its URL.
pub async fn stage(
    staging: &dyn TemplateStaging,
    stack: &str,
    name: &str,
    body: Vec<u8>,
    uploads: &mut Vec<String>,
) -> anyhow::Result<String> {
    let staged = staging.put(stack, name, body).await?;
    uploads.push(staged.key);
    Ok(staged.url)
}
