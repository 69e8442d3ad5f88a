//! The state bucket as commands use it: the resolved bucket, its stack records and its locks.

use super::backend::StateBackend;
use super::bucket::StateBucket;
use super::lock::LockManager;
use super::StateError;

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
        (self.backend.client().ok())
            .and_then(|client| client.config().region())
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
    ) -> Result<String, StateError> {
        if let Some(region) = flag {
            return Ok(region.to_string());
        }
        let regions = self.backend.regions_of(stack).await?;
        match regions.as_slice() {
            [] => Ok(fallback.to_string()),
            [only] => Ok(only.clone()),
            several => Err(StateError::SeveralRegions {
                stack: stack.to_string(),
                regions: several.to_vec(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::state::bucket::BucketSource;
    use crate::state::keys::StateKeys;
    use crate::state::lock::LockConfig;
    use crate::state::schema::StackState;
    use crate::state::storage::{MemoryStorage, ObjectStorage};

    fn store() -> StateStore {
        let storage: Arc<dyn ObjectStorage> = Arc::new(MemoryStorage::new("state"));
        StateStore {
            bucket: StateBucket {
                name: "state".into(),
                source: BucketSource::CliFlag,
            },
            backend: StateBackend::on(Arc::clone(&storage), StateKeys::new("cdkd")),
            locks: LockManager::on(
                storage,
                StateKeys::new("cdkd"),
                LockConfig::default(),
                "test@host:1".into(),
            ),
        }
    }

    #[tokio::test]
    async fn the_stack_region_is_the_flag_else_the_only_record_else_the_fallback() {
        let store = store();
        assert_eq!(
            store.stack_region("App", None, "eu-north-1").await.unwrap(),
            "eu-north-1"
        );
        for region in ["us-east-1", "eu-west-1"] {
            let mut state = StackState::new("App", region);
            store
                .backend
                .save("App", region, &mut state, None)
                .await
                .unwrap();
            if region == "us-east-1" {
                assert_eq!(
                    store.stack_region("App", None, "x").await.unwrap(),
                    "us-east-1"
                );
            }
        }
        assert_eq!(
            store
                .stack_region("App", Some("ap-south-1"), "x")
                .await
                .unwrap(),
            "ap-south-1"
        );
        let err = store.stack_region("App", None, "x").await.unwrap_err();
        match &err {
            StateError::SeveralRegions { stack, regions } => {
                assert_eq!(stack, "App");
                assert_eq!(regions, &["eu-west-1", "us-east-1"]);
            }
            other => panic!("{other}"),
        }
        assert_eq!(
            err.to_string(),
            "stack App has state in several regions (eu-west-1, us-east-1); pick one with --stack-region"
        );
    }
}
