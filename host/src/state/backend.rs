//! Reading, writing, listing and deleting state records, with optimistic concurrency.
//!
//! A first write sends `If-None-Match: *`, later writes `If-Match: <etag>` with the ETag
//! exactly as S3 returned it (quotes kept). A 412 means someone else wrote in between.

use std::sync::Arc;

use aws_sdk_s3::Client;

use super::keys::{StackRef, StateKeys};
use super::schema::{now_millis, StackState, SCHEMA_VERSION_CURRENT};
use super::storage::{ObjectStorage, PutCondition, S3Storage};
use super::upgrade::read_state;
use super::StateError;

/// The state bucket seen as a store of state records.
#[derive(Debug, Clone)]
pub struct StateBackend {
    storage: Arc<dyn ObjectStorage>,
    /// The S3 client behind `storage`, for the bucket-level calls outside the seam; `None` on
    /// in-memory storage.
    client: Option<Client>,
    keys: StateKeys,
}

/// Where a loaded record was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateLocation {
    /// The region-scoped key.
    Current,
    /// The legacy v1 key; the next save moves it.
    Legacy,
}

/// A record as loaded, with what a later save needs to be conditional on.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredState {
    /// The record, upgraded to the current schema in memory.
    pub state: StackState,
    /// The ETag as S3 returned it (quotes kept).
    pub etag: String,
    /// Which key it came from.
    pub location: StateLocation,
}

/// A raw object read: body and ETag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawObject {
    /// The bytes.
    pub body: Vec<u8>,
    /// The ETag as returned.
    pub etag: String,
}

impl StateBackend {
    /// A backend over `bucket` (the client must be aimed at the bucket's region).
    pub fn new(client: Client, bucket: &str, keys: StateKeys) -> StateBackend {
        StateBackend {
            storage: Arc::new(S3Storage::new(client.clone(), bucket)),
            client: Some(client),
            keys,
        }
    }

    /// A backend over any [`ObjectStorage`] (the conformance suite, the engine's tests).
    pub fn on(storage: Arc<dyn ObjectStorage>, keys: StateKeys) -> StateBackend {
        StateBackend {
            storage,
            client: None,
            keys,
        }
    }

    /// The storage under the records.
    pub fn storage(&self) -> &Arc<dyn ObjectStorage> {
        &self.storage
    }

    /// The key layout.
    pub fn keys(&self) -> &StateKeys {
        &self.keys
    }

    /// The bucket name.
    pub fn bucket(&self) -> &str {
        self.storage.bucket()
    }

    /// The S3 client, for the calls outside the seam (bootstrap markers, gc, scrub), which run
    /// only on the state bucket: over other storage, [`StateError::NotOnS3`].
    pub fn client(&self) -> Result<&Client, StateError> {
        self.client.as_ref().ok_or_else(|| StateError::NotOnS3 {
            bucket: self.bucket().to_string(),
        })
    }

    /// Reads an object, `None` when it does not exist.
    pub async fn get_object(&self, key: &str) -> Result<Option<RawObject>, StateError> {
        match self.storage.get(key).await {
            Ok(found) => Ok(found.map(|object| RawObject {
                body: object.body,
                etag: object.etag,
            })),
            Err(failure) => Err(StateError::from_failure(
                "read",
                key,
                self.bucket(),
                failure,
            )),
        }
    }

    /// Loads a stack's record: the region-scoped key, else the legacy key when the record
    /// there names this region.
    pub async fn load(&self, stack: &str, region: &str) -> Result<Option<StoredState>, StateError> {
        let key = self.keys.state(stack, region);
        let legacy_key = self.keys.legacy_state(stack);
        // Both reads at once: a first deploy would otherwise pay two sequential misses.
        let (current, legacy) = tokio::join!(self.get_object(&key), self.get_object(&legacy_key));
        if let Some(object) = current? {
            let state =
                read_state(&object.body).map_err(|source| StateError::Schema { key, source })?;
            return Ok(Some(StoredState {
                state,
                etag: object.etag,
                location: StateLocation::Current,
            }));
        }
        let Some(object) = legacy? else {
            return Ok(None);
        };
        let state = read_state(&object.body).map_err(|source| StateError::Schema {
            key: legacy_key,
            source,
        })?;
        if state.region.as_deref() != Some(region) {
            // The legacy record belongs to another region: not this stack's state here.
            return Ok(None);
        }
        Ok(Some(StoredState {
            state,
            etag: object.etag,
            location: StateLocation::Legacy,
        }))
    }

    /// Writes a record as schema v9, conditional on `previous` (none: the key must not exist).
    /// A record loaded from the legacy key is written to the region-scoped key, then the
    /// legacy key is deleted. Returns the new ETag.
    #[allow(
        clippy::expect_used,
        reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
    )]
    pub async fn save(
        &self,
        stack: &str,
        region: &str,
        state: &mut StackState,
        previous: Option<&StoredState>,
    ) -> Result<String, StateError> {
        state.version = SCHEMA_VERSION_CURRENT;
        state.stack_name = stack.to_string();
        state.region = Some(region.to_string());
        state.last_modified = now_millis();
        let mut body = serde_json::to_vec_pretty(state).expect("a state record serialises");
        body.push(b'\n');
        let key = self.keys.state(stack, region);
        let condition = match previous {
            Some(stored) if stored.location == StateLocation::Current => {
                PutCondition::IfMatch(stored.etag.clone())
            }
            _ => PutCondition::IfAbsent,
        };
        let etag = match self.storage.put(&key, body.clone(), condition).await {
            Ok(written) => written.etag,
            Err(failure) => {
                if failure.is_precondition_failed() {
                    // A retried write whose first attempt landed with its answer lost meets
                    // its own write: the stored record is byte for byte this one (each save
                    // stamps lastModified), so it is ours, not a concurrent writer's.
                    if let Ok(Some(stored)) = self.get_object(&key).await {
                        if stored.body == body {
                            return Ok(stored.etag);
                        }
                    }
                    return Err(StateError::ConcurrentModification {
                        stack: stack.to_string(),
                        region: region.to_string(),
                    });
                }
                return Err(StateError::from_failure(
                    "write",
                    &key,
                    self.bucket(),
                    failure,
                ));
            }
        };
        if previous.is_some_and(|stored| stored.location == StateLocation::Legacy) {
            // The record is safe at its new key; the old one must not be read again. Its
            // noncurrent versions are kept: they are state history.
            self.delete_object(&self.keys.legacy_state(stack)).await?;
            tracing::debug!(
                stack,
                region,
                "moved a legacy state record to its region-scoped key"
            );
        }
        Ok(etag)
    }

    /// Deletes a stack's record (unconditionally; callers hold the stack lock).
    pub async fn delete(&self, stack: &str, region: &str) -> Result<(), StateError> {
        self.delete_object(&self.keys.state(stack, region)).await
    }

    /// Writes one JSON object unconditionally (the caller holds the stack lock).
    pub async fn put_json(&self, key: &str, body: Vec<u8>) -> Result<(), StateError> {
        self.storage
            .put(key, body, PutCondition::Always)
            .await
            .map_err(|failure| StateError::from_failure("write", key, self.bucket(), failure))?;
        Ok(())
    }

    /// Deletes one object; one already gone counts as deleted.
    pub async fn delete_object(&self, key: &str) -> Result<(), StateError> {
        match self.storage.delete(key, None).await {
            Ok(()) => Ok(()),
            Err(failure) if failure.is_not_found() && !failure.is_no_such_bucket() => Ok(()),
            Err(failure) => Err(StateError::from_failure(
                "delete",
                key,
                self.bucket(),
                failure,
            )),
        }
    }

    /// Every key under `prefix`.
    pub async fn list_keys(&self, prefix: &str) -> Result<Vec<String>, StateError> {
        self.storage
            .list_keys(prefix)
            .await
            .map_err(|failure| StateError::from_failure("list", prefix, self.bucket(), failure))
    }

    /// Every (stack, region) with a record, sorted; legacy records get their region from the
    /// body.
    pub async fn list_stacks(&self) -> Result<Vec<StackRef>, StateError> {
        let mut stacks = Vec::new();
        for key in self.list_keys(&self.keys.root()).await? {
            let Some(mut found) = self.keys.parse_state_key(&key) else {
                continue;
            };
            if found.region.is_none() {
                match self.get_object(&key).await? {
                    Some(object) => match read_state(&object.body) {
                        Ok(state) => found.region = state.region,
                        Err(err) => {
                            tracing::warn!("skipping unreadable legacy record {key}: {err}")
                        }
                    },
                    None => continue,
                }
                if found.region.is_none() {
                    continue;
                }
            }
            stacks.push(found);
        }
        stacks.sort();
        stacks.dedup();
        Ok(stacks)
    }

    /// The regions that hold a record of `stack`.
    pub async fn regions_of(&self, stack: &str) -> Result<Vec<String>, StateError> {
        Ok(self
            .list_stacks()
            .await?
            .into_iter()
            .filter(|found| found.stack == stack)
            .filter_map(|found| found.region)
            .collect())
    }
}
