//! In-memory implementations of the engine's seams, for the engine's unit tests: a cloud
//! that keeps resources in a map and can be told to fail or stall a resource, a record store
//! with conditional saves, and locks that refuse a second holder.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use cdkd_provider_api::protocol::{
    CreateResult, DeleteResult, FinalSnapshotRequest, FinalSnapshotResult, UpdateResult,
};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use super::journal::Journal;
use super::store::{HeldLock, RecordStore, StackLocks};
use crate::provisioning::operations::{
    AccountIds, CreateCall, DeleteCall, Found, Observation, ProviderSet, ProviderSource, ReadCall,
    ResourceOperations, UpdateCall,
};
use crate::provisioning::router::Decision;
use crate::state::backend::{StateLocation, StoredState};
use crate::state::schema::{ProvisionedBy, ResourceState, StackState};
use crate::state::StateError;

fn guard<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A resource the fake cloud holds.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveResource {
    /// Its type.
    pub resource_type: String,
    /// Its logical id when made.
    pub logical_id: String,
    /// Its properties.
    pub properties: Map<String, Value>,
    /// The create's token (as a plugin tags an unnamed resource with it).
    pub token: String,
}

#[derive(Default)]
struct Cloud {
    next: u32,
    resources: BTreeMap<String, LiveResource>,
    calls: Vec<String>,
    failing: BTreeMap<String, String>,
    delays: BTreeMap<String, Duration>,
}

/// A cloud in a map. Every call is logged as `"{verb} {logical id}"`.
#[derive(Default)]
pub struct FakeCloud {
    cloud: Mutex<Cloud>,
}

impl FakeCloud {
    /// Makes every call for `logical_id` fail with `message` until [`FakeCloud::heal`].
    pub fn fail(&self, logical_id: &str, message: &str) {
        guard(&self.cloud)
            .failing
            .insert(logical_id.into(), message.into());
    }

    /// Lets calls for `logical_id` succeed again.
    pub fn heal(&self, logical_id: &str) {
        guard(&self.cloud).failing.remove(logical_id);
    }

    /// Makes calls for `logical_id` take `delay` (tokio time: pause it in tests).
    pub fn delay(&self, logical_id: &str, delay: Duration) {
        guard(&self.cloud).delays.insert(logical_id.into(), delay);
    }

    /// The calls so far, in order.
    pub fn calls(&self) -> Vec<String> {
        guard(&self.cloud).calls.clone()
    }

    /// Forgets the call log.
    pub fn clear_calls(&self) {
        guard(&self.cloud).calls.clear();
    }

    /// What exists, by physical id.
    pub fn live(&self) -> BTreeMap<String, LiveResource> {
        guard(&self.cloud).resources.clone()
    }

    /// Changes a resource behind the engine's back (drift), or deletes it with `None`.
    pub fn tamper(&self, physical_id: &str, change: Option<(&str, Value)>) {
        let mut cloud = guard(&self.cloud);
        match change {
            Some((key, value)) => {
                let resource = cloud.resources.get_mut(physical_id).expect("a resource");
                resource.properties.insert(key.to_string(), value);
            }
            None => {
                cloud.resources.remove(physical_id);
            }
        }
    }

    /// Logs the call, waits its delay, then fails it if told to.
    async fn enter(&self, verb: &str, logical_id: &str) -> Result<(), ProviderError> {
        let delay = {
            let mut cloud = guard(&self.cloud);
            cloud.calls.push(format!("{verb} {logical_id}"));
            cloud.delays.get(logical_id).copied()
        };
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        match guard(&self.cloud).failing.get(logical_id) {
            Some(message) => Err(ProviderError::validation(message.clone())),
            None => Ok(()),
        }
    }
}

fn attributes_of(physical_id: &str) -> Map<String, Value> {
    json!({ "Arn": format!("arn:aws:fake:::{physical_id}") })
        .as_object()
        .cloned()
        .expect("an object")
}

#[async_trait]
impl ResourceOperations for FakeCloud {
    fn label(&self) -> String {
        "the fake cloud".into()
    }

    async fn create(&self, call: CreateCall<'_>) -> Result<CreateResult, ProviderError> {
        let CreateCall {
            resource_type,
            logical_id,
            properties,
            spec,
            ..
        } = call;
        self.enter("create", logical_id).await?;
        let mut cloud = guard(&self.cloud);
        cloud.next += 1;
        let physical_id = format!("{logical_id}-{}", cloud.next);
        cloud.resources.insert(
            physical_id.clone(),
            LiveResource {
                resource_type: resource_type.into(),
                logical_id: logical_id.into(),
                properties: properties.clone(),
                token: spec.token.to_string(),
            },
        );
        Ok(CreateResult {
            attributes: attributes_of(&physical_id),
            physical_id,
            ..Default::default()
        })
    }

    async fn find_created(
        &self,
        _resource_type: &str,
        logical_id: &str,
        token: &str,
        _stack: &str,
        _scope: &Map<String, Value>,
    ) -> Result<Option<Found>, ProviderError> {
        self.enter("find", logical_id).await?;
        let cloud = guard(&self.cloud);
        Ok(cloud
            .resources
            .iter()
            .find(|(_, r)| !token.is_empty() && r.token == token)
            .map(|(id, r)| Found {
                physical_id: id.clone(),
                properties: r.properties.clone(),
            }))
    }

    async fn update(&self, call: UpdateCall<'_>) -> Result<UpdateResult, ProviderError> {
        let UpdateCall {
            logical_id,
            physical_id,
            desired,
            ..
        } = call;
        self.enter("update", logical_id).await?;
        let mut cloud = guard(&self.cloud);
        let Some(resource) = cloud.resources.get_mut(physical_id) else {
            return Err(ProviderError::new(
                cdkd_provider_api::ErrorKind::NOT_FOUND,
                format!("{physical_id} does not exist"),
            ));
        };
        resource.properties = desired.clone();
        Ok(UpdateResult {
            physical_id: physical_id.into(),
            attributes: attributes_of(physical_id),
            ..Default::default()
        })
    }

    async fn delete(&self, call: DeleteCall<'_>) -> Result<DeleteResult, ProviderError> {
        let DeleteCall {
            logical_id,
            physical_id,
            ..
        } = call;
        self.enter("delete", logical_id).await?;
        guard(&self.cloud).resources.remove(physical_id);
        Ok(DeleteResult::Deleted)
    }

    async fn read_current_state(&self, call: ReadCall<'_>) -> Result<Observation, ProviderError> {
        let ReadCall { physical_id, .. } = call;
        let cloud = guard(&self.cloud);
        Ok(match cloud.resources.get(physical_id) {
            Some(resource) => Observation::Live(resource.properties.clone()),
            None => Observation::Gone,
        })
    }

    /// Logged as `"import {logical id}"`: a resource the cloud holds is adopted as it is.
    async fn import(&self, call: ReadCall<'_>) -> Result<CreateResult, ProviderError> {
        let ReadCall {
            logical_id,
            physical_id,
            ..
        } = call;
        self.enter("import", logical_id).await?;
        if !guard(&self.cloud).resources.contains_key(physical_id) {
            return Err(ProviderError::new(
                cdkd_provider_api::ErrorKind::NOT_FOUND,
                format!("{physical_id} does not exist"),
            ));
        }
        Ok(CreateResult {
            physical_id: physical_id.into(),
            attributes: attributes_of(physical_id),
            ..Default::default()
        })
    }

    /// Logged as `"snapshot {logical id}"`; fails when `"{logical id}#snapshot"` is failing.
    async fn final_snapshot(
        &self,
        _resource_type: &str,
        request: &FinalSnapshotRequest,
    ) -> Result<FinalSnapshotResult, ProviderError> {
        let mut cloud = guard(&self.cloud);
        cloud.calls.push(format!("snapshot {}", request.logical_id));
        let failing = format!("{}#snapshot", request.logical_id);
        if let Some(message) = cloud.failing.get(&failing) {
            return Err(ProviderError::validation(message.clone()));
        }
        if !cloud.resources.contains_key(&request.physical_id) {
            return Err(ProviderError::new(
                cdkd_provider_api::ErrorKind::NOT_FOUND,
                format!("{} is gone", request.physical_id),
            ));
        }
        Ok(FinalSnapshotResult {
            snapshot_id: Some(request.snapshot_id.clone()),
            note: None,
        })
    }
}

/// The fake cloud as the provider of everything.
pub struct FakeSet<'a>(&'a FakeCloud);

impl ProviderSet for FakeSet<'_> {
    fn for_decision(&self, _: &str, _: &Decision) -> &dyn ResourceOperations {
        self.0
    }

    fn for_layer(&self, _: &str, _: ProvisionedBy) -> &dyn ResourceOperations {
        self.0
    }

    fn for_record(&self, _: &ResourceState) -> &dyn ResourceOperations {
        self.0
    }

    /// Every type but ElastiCache clusters has a snapshot path.
    fn for_snapshot(&self, resource_type: &str) -> Option<&dyn ResourceOperations> {
        (resource_type != "AWS::ElastiCache::CacheCluster")
            .then_some(self.0 as &dyn ResourceOperations)
    }
}

#[async_trait]
impl ProviderSource for FakeCloud {
    async fn prepare(
        &self,
        _region: &str,
        _plugin_types: &BTreeSet<String>,
        _timeout: Duration,
    ) -> anyhow::Result<Box<dyn ProviderSet + '_>> {
        Ok(Box::new(FakeSet(self)))
    }

    async fn account_ids(&self, _region: &str) -> AccountIds {
        AccountIds {
            account: "123456789012".into(),
            partition: "aws".into(),
        }
    }
}

#[derive(Default)]
struct Records {
    records: BTreeMap<(String, String), (StackState, String)>,
    journals: BTreeMap<(String, String), Journal>,
    next_etag: u64,
}

/// Records and journals in maps; saves are conditional on the ETag, as S3's.
#[derive(Default)]
pub struct MemoryStore {
    records: Mutex<Records>,
}

impl MemoryStore {
    /// The stored record of a stack.
    pub fn record(&self, stack: &str, region: &str) -> Option<StackState> {
        let records = guard(&self.records);
        let key = (stack.to_string(), region.to_string());
        records.records.get(&key).map(|(state, _)| state.clone())
    }

    /// The stored record's ETag (a new one per write).
    pub fn etag(&self, stack: &str, region: &str) -> Option<String> {
        let records = guard(&self.records);
        let key = (stack.to_string(), region.to_string());
        records.records.get(&key).map(|(_, etag)| etag.clone())
    }

    /// Changes a stored record in place (an older writer's record, a hand edit).
    pub fn edit(&self, stack: &str, region: &str, change: impl FnOnce(&mut StackState)) {
        let mut records = guard(&self.records);
        let key = (stack.to_string(), region.to_string());
        if let Some((state, _)) = records.records.get_mut(&key) {
            change(state);
        }
    }

    /// The stored journal of a stack.
    pub fn journal(&self, stack: &str, region: &str) -> Option<Journal> {
        let records = guard(&self.records);
        let key = (stack.to_string(), region.to_string());
        records.journals.get(&key).cloned()
    }
}

#[async_trait]
impl RecordStore for MemoryStore {
    async fn load(&self, stack: &str, region: &str) -> Result<Option<StoredState>, StateError> {
        let records = guard(&self.records);
        let key = (stack.to_string(), region.to_string());
        Ok(records.records.get(&key).map(|(state, etag)| StoredState {
            state: state.clone(),
            etag: etag.clone(),
            location: StateLocation::Current,
        }))
    }

    async fn save(
        &self,
        stack: &str,
        region: &str,
        state: &mut StackState,
        previous: Option<&StoredState>,
    ) -> Result<String, StateError> {
        let mut records = guard(&self.records);
        let key = (stack.to_string(), region.to_string());
        let current = records.records.get(&key).map(|(_, etag)| etag.clone());
        if current != previous.map(|p| p.etag.clone()) {
            return Err(StateError::ConcurrentModification {
                stack: stack.into(),
                region: region.into(),
            });
        }
        records.next_etag += 1;
        let etag = format!("etag-{}", records.next_etag);
        state.stack_name = stack.into();
        state.region = Some(region.into());
        records.records.insert(key, (state.clone(), etag.clone()));
        Ok(etag)
    }

    async fn delete(&self, stack: &str, region: &str) -> Result<(), StateError> {
        let key = (stack.to_string(), region.to_string());
        guard(&self.records).records.remove(&key);
        Ok(())
    }

    async fn read_journal(&self, stack: &str, region: &str) -> Result<Option<Journal>, StateError> {
        Ok(self.journal(stack, region))
    }

    async fn write_journal(&self, journal: &Journal) -> Result<(), StateError> {
        let key = (journal.stack_name.clone(), journal.region.clone());
        guard(&self.records).journals.insert(key, journal.clone());
        Ok(())
    }

    async fn remove_journal(&self, stack: &str, region: &str) -> Result<(), StateError> {
        let key = (stack.to_string(), region.to_string());
        guard(&self.records).journals.remove(&key);
        Ok(())
    }
}

/// Locks in a set: a second holder is refused, as a live S3 lock refuses it.
#[derive(Default, Clone)]
pub struct MemoryLocks {
    held: Arc<Mutex<BTreeSet<(String, String)>>>,
    taken: Arc<std::sync::atomic::AtomicUsize>,
    checked: Arc<std::sync::atomic::AtomicUsize>,
}

impl MemoryLocks {
    /// How many times a lock was looked at without taking it (the fast path's read).
    pub fn checked(&self) -> usize {
        self.checked.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many times a lock was taken.
    pub fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether the stack's lock is held.
    pub fn is_held(&self, stack: &str, region: &str) -> bool {
        guard(&self.held).contains(&(stack.to_string(), region.to_string()))
    }
}

struct MemoryLock {
    held: Arc<Mutex<BTreeSet<(String, String)>>>,
    key: (String, String),
}

#[async_trait]
impl StackLocks for MemoryLocks {
    async fn acquire(
        &self,
        stack: &str,
        region: &str,
        operation: &str,
    ) -> Result<Box<dyn HeldLock>, StateError> {
        let key = (stack.to_string(), region.to_string());
        self.taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if !guard(&self.held).insert(key.clone()) {
            return Err(StateError::Locked {
                stack: stack.into(),
                region: region.into(),
                owner: "another test".into(),
                operation: operation.into(),
                expires: "later".into(),
            });
        }
        Ok(Box::new(MemoryLock {
            held: self.held.clone(),
            key,
        }))
    }

    async fn is_locked(&self, stack: &str, region: &str) -> Result<bool, StateError> {
        self.checked
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(self.is_held(stack, region))
    }
}

#[async_trait]
impl HeldLock for MemoryLock {
    async fn release(&self) {
        guard(&self.held).remove(&self.key);
    }

    // An in-memory lock has no deadline and no other holder: it never lapses.
    fn stop_when_lapsed(&self, _stop: tokio::sync::watch::Sender<bool>) {}

    fn lapsed(&self) -> Option<String> {
        None
    }
}

/// The seam-level rules the engine's tests rely on, run against the fakes above and against
/// the real store and locks over [`MemoryStorage`](crate::state::storage::MemoryStorage)
/// (which `state_conformance_tests!` proves to answer as S3): a rule the fakes break is a
/// place where the engine's unit tests would pass against a store that does not exist.
#[cfg(test)]
mod conformance {
    use std::sync::Arc;
    use std::time::Duration;

    use super::{Journal, MemoryLocks, MemoryStore, RecordStore, StackLocks, StackState};
    use crate::state::backend::StateBackend;
    use crate::state::keys::StateKeys;
    use crate::state::lock::{LockConfig, LockManager};
    use crate::state::storage::{MemoryStorage, ObjectStorage};
    use crate::state::StateError;

    const REGION: &str = "us-east-1";

    /// The real store over an empty in-memory bucket.
    fn real_store() -> (StateBackend, Arc<dyn ObjectStorage>) {
        let storage: Arc<dyn ObjectStorage> = Arc::new(MemoryStorage::new("cdkd-state-test"));
        (
            StateBackend::on(storage.clone(), StateKeys::new("cdkd")),
            storage,
        )
    }

    /// A real lock manager acting as `owner`, never waiting for a held lock.
    fn real_locks(storage: &Arc<dyn ObjectStorage>, owner: &str) -> LockManager {
        let config = LockConfig {
            ttl: Duration::from_secs(600),
            retries: 0,
            retry_delay: Duration::from_millis(10),
            renew_every: Some(Duration::from_secs(3600)),
        };
        LockManager::on(
            storage.clone(),
            StateKeys::new("cdkd"),
            config,
            owner.into(),
        )
    }

    /// Saves are conditional on the record read before, deletes and journals are as written.
    async fn record_rules(store: &dyn RecordStore) {
        assert!(store.load("S", REGION).await.unwrap().is_none());
        let mut state = StackState::new("S", REGION);
        let first = store.save("S", REGION, &mut state, None).await.unwrap();
        let loaded = store.load("S", REGION).await.unwrap().expect("saved");
        assert_eq!(loaded.etag, first);
        assert_eq!(loaded.state.stack_name, "S");
        assert_eq!(loaded.state.region.as_deref(), Some(REGION));
        // A first save over a record someone else wrote is refused (a different record: the
        // store takes its own retried write, byte for byte the same, as written).
        state.outputs.insert("Written".into(), "first".into());
        let refused = store.save("S", REGION, &mut state.clone(), None).await;
        assert!(matches!(
            refused,
            Err(StateError::ConcurrentModification { .. })
        ));
        let second = (store.save("S", REGION, &mut state.clone(), Some(&loaded)))
            .await
            .unwrap();
        assert_ne!(second, first);
        // The record read before the second save is stale now.
        state.outputs.insert("Written".into(), "stale".into());
        let stale = store.save("S", REGION, &mut state, Some(&loaded)).await;
        assert!(matches!(
            stale,
            Err(StateError::ConcurrentModification { .. })
        ));
        store.delete("S", REGION).await.unwrap();
        assert!(store.load("S", REGION).await.unwrap().is_none());

        assert!(store.read_journal("S", REGION).await.unwrap().is_none());
        let journal = Journal::new("S", REGION);
        store.write_journal(&journal).await.unwrap();
        assert_eq!(
            store.read_journal("S", REGION).await.unwrap(),
            Some(journal)
        );
        store.remove_journal("S", REGION).await.unwrap();
        assert!(store.read_journal("S", REGION).await.unwrap().is_none());
        store.remove_journal("S", REGION).await.unwrap();
    }

    /// A held lock refuses another holder until it is released.
    async fn lock_rules(first: &dyn StackLocks, second: &dyn StackLocks) {
        assert!(!first.is_locked("S", REGION).await.unwrap());
        let held = first.acquire("S", REGION, "deploy").await.unwrap();
        assert!(second.is_locked("S", REGION).await.unwrap());
        let refused = second.acquire("S", REGION, "destroy").await;
        assert!(matches!(refused, Err(StateError::Locked { .. })));
        // Another stack's lock is another lock.
        let other = second.acquire("T", REGION, "deploy").await.unwrap();
        held.release().await;
        assert!(!second.is_locked("S", REGION).await.unwrap());
        second
            .acquire("S", REGION, "deploy")
            .await
            .unwrap()
            .release()
            .await;
        other.release().await;
    }

    #[tokio::test]
    async fn the_memory_store_saves_as_the_state_store() {
        record_rules(&MemoryStore::default()).await;
        record_rules(&real_store().0).await;
    }

    #[tokio::test]
    async fn the_memory_locks_lock_as_the_state_locks() {
        let locks = MemoryLocks::default();
        lock_rules(&locks, &locks.clone()).await;
        let (_, storage) = real_store();
        lock_rules(&real_locks(&storage, "one"), &real_locks(&storage, "two")).await;
    }
}
