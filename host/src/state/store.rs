//! The state bucket as commands use it: the resolved bucket, its stack records and its locks.

use super::backend::StateBackend;
use super::bucket::StateBucket;
use super::lock::LockManager;

/// The state bucket as the commands use it.
pub struct StateStore {
    /// The resolved bucket.
    pub bucket: StateBucket,
    /// Stack records.
    pub backend: StateBackend,
    /// Stack locks.
    pub locks: LockManager,
}

impl StateStore {
    /// The state bucket's region (its client's).
    pub fn region(&self) -> String {
        self.backend
            .client()
            .config()
            .region()
            .map(ToString::to_string)
            .unwrap_or_else(|| crate::aws_env::FALLBACK_REGION.to_string())
    }

    /// The region a stack's record lives in: `--stack-region`, else the only region holding a
    /// record, else `fallback` when there is none.
    pub async fn stack_region(
        &self,
        stack: &str,
        flag: Option<&str>,
        fallback: &str,
    ) -> anyhow::Result<String> {
        if let Some(region) = flag {
            return Ok(region.to_string());
        }
        let regions = self.backend.regions_of(stack).await?;
        match regions.as_slice() {
            [] => Ok(fallback.to_string()),
            [only] => Ok(only.clone()),
            several => anyhow::bail!(
                "stack {stack} has state in several regions ({}); pick one with --stack-region",
                several.join(", ")
            ),
        }
    }
}
