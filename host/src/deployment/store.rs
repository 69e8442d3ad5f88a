//! The engine's seam to storage, after OpenTofu's `statemgr`: a stack's record and its
//! rollback journal ([`RecordStore`]), and its lock ([`StackLocks`]). The S3 state bucket and
//! its lock manager implement them; the engine's unit tests use in-memory ones.

use async_trait::async_trait;

use super::journal::{Journal, Segment};
use crate::state::backend::{StateBackend, StoredState};
use crate::state::exports_index;
use crate::state::lock::{LockHandle, LockManager};
use crate::state::purge::{
    purge_and_report_on, remove_versions, version_ids, PurgeLogLevel, PurgedObject, Versions,
};
use crate::state::schema::StackState;
use crate::state::StateError;

/// Where stack records and rollback journals are kept.
#[async_trait]
pub trait RecordStore: Send + Sync {
    /// A stack's record, with what a conditional save needs.
    async fn load(&self, stack: &str, region: &str) -> Result<Option<StoredState>, StateError>;

    /// Writes a record, conditional on `previous` (none: there must be no record yet);
    /// returns the new ETag.
    async fn save(
        &self,
        stack: &str,
        region: &str,
        state: &mut StackState,
        previous: Option<&StoredState>,
    ) -> Result<String, StateError>;

    /// Deletes a stack's record (a fully destroyed stack).
    async fn delete(&self, stack: &str, region: &str) -> Result<(), StateError>;

    /// The stack's rollback journal.
    async fn read_journal(&self, stack: &str, region: &str) -> Result<Option<Journal>, StateError>;

    /// Writes the journal (the caller holds the stack lock).
    async fn write_journal(&self, journal: &Journal) -> Result<(), StateError>;

    /// Deletes the journal and every earlier version of it (it holds attempted properties).
    async fn remove_journal(&self, stack: &str, region: &str) -> Result<(), StateError>;

    /// Appends a segment to the stack's journal (a new journal when it has none).
    async fn append_segment(
        &self,
        stack: &str,
        region: &str,
        segment: Segment,
    ) -> Result<(), StateError> {
        let mut journal = self
            .read_journal(stack, region)
            .await?
            .unwrap_or_else(|| Journal::new(stack, region));
        journal.segments.push(segment);
        self.write_journal(&journal).await
    }

    /// Forgets a stack whose resources now belong to someone else (`cdkd state orphan`, an
    /// export): its journal and then its record go, the resources stay. Journal first: a
    /// failure part way leaves the record, so the same command can run again. Its exports
    /// leave the exports index too.
    async fn forget(&self, stack: &str, region: &str) -> Result<(), StateError> {
        self.remove_journal(stack, region).await?;
        self.delete(stack, region).await?;
        self.withdraw_exports(stack, region).await;
        Ok(())
    }

    /// Writes a deployed record's exports into its region's exports index and warns about a
    /// name another stack exported until now. Never fails: the index is a derived view that
    /// a reader rebuilds from the records.
    async fn publish_exports(&self, _state: &StackState) {}

    /// Takes a stack's exports out of its region's exports index (a clean destroy). Never
    /// fails, as [`RecordStore::publish_exports`].
    async fn withdraw_exports(&self, _stack: &str, _region: &str) {}
}

#[async_trait]
impl RecordStore for StateBackend {
    async fn load(&self, stack: &str, region: &str) -> Result<Option<StoredState>, StateError> {
        StateBackend::load(self, stack, region).await
    }

    async fn save(
        &self,
        stack: &str,
        region: &str,
        state: &mut StackState,
        previous: Option<&StoredState>,
    ) -> Result<String, StateError> {
        StateBackend::save(self, stack, region, state, previous).await
    }

    async fn delete(&self, stack: &str, region: &str) -> Result<(), StateError> {
        StateBackend::delete(self, stack, region).await
    }

    async fn publish_exports(&self, state: &StackState) {
        match exports_index::publish(self, state).await {
            Ok(warnings) => {
                for warning in warnings {
                    tracing::warn!("{warning}");
                }
            }
            Err(err) => tracing::warn!(
                "could not update the exports index of {}: {err}; Fn::ImportValue still finds the exports of {} by reading every record",
                state.region.as_deref().unwrap_or("?"),
                state.stack_name
            ),
        }
    }

    async fn withdraw_exports(&self, stack: &str, region: &str) {
        if let Err(err) = exports_index::withdraw(self, stack, region).await {
            tracing::warn!(
                "could not take {stack}'s exports out of the exports index of {region}: {err}; a reader finds the entries stale and rebuilds the index"
            );
        }
    }

    async fn read_journal(&self, stack: &str, region: &str) -> Result<Option<Journal>, StateError> {
        let key = self.keys().journal(stack, region);
        match self.get_object(&key).await? {
            None => Ok(None),
            Some(object) => serde_json::from_slice(&object.body)
                .map(Some)
                .map_err(|err| {
                    StateError::s3("read", &key, format!("not a rollback journal: {err}"))
                }),
        }
    }

    #[allow(
        clippy::expect_used,
        reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
    )]
    async fn write_journal(&self, journal: &Journal) -> Result<(), StateError> {
        let key = self.keys().journal(&journal.stack_name, &journal.region);
        let body = serde_json::to_vec_pretty(journal).expect("a journal serialises");
        self.put_json(&key, body).await
    }

    async fn remove_journal(&self, stack: &str, region: &str) -> Result<(), StateError> {
        let key = self.keys().journal(stack, region);
        // Every version at once, the current one included: two round trips leave neither the
        // journal nor its history (nor a delete marker). A listing or removal that is refused
        // falls back to deleting the current version and purging the rest.
        let storage = self.storage().as_ref();
        if let Ok(every) = version_ids(storage, &key, Versions::Every).await {
            if every.is_empty() {
                return Ok(());
            }
            let report = remove_versions(storage, &key, &every).await;
            if report.failures.is_empty() {
                return Ok(());
            }
        }
        if self.get_object(&key).await?.is_none() {
            return Ok(());
        }
        self.delete_object(&key).await?;
        purge_and_report_on(
            storage,
            &key,
            PurgedObject::RollbackJournal,
            PurgeLogLevel::Warn,
        )
        .await;
        Ok(())
    }
}

/// Takes stack locks.
#[async_trait]
pub trait StackLocks: Send + Sync {
    /// Takes the lock of `stack` in `region` for `operation` (waiting out a live holder).
    async fn acquire(
        &self,
        stack: &str,
        region: &str,
        operation: &str,
    ) -> Result<Box<dyn HeldLock>, StateError>;

    /// Whether a lock of `stack` in `region` exists (held or expired), without taking it.
    async fn is_locked(&self, stack: &str, region: &str) -> Result<bool, StateError>;
}

/// A lock this process holds.
#[async_trait]
pub trait HeldLock: Send + Sync {
    /// Releases it; never fails (what cannot be released lapses at its deadline).
    async fn release(&self);

    /// Sets `stop` when the lock lapses (taken over, or not renewed in time).
    fn stop_when_lapsed(&self, stop: tokio::sync::watch::Sender<bool>);

    /// Why the lock no longer protects the run, if it does not.
    fn lapsed(&self) -> Option<String>;
}

#[async_trait]
impl StackLocks for LockManager {
    async fn acquire(
        &self,
        stack: &str,
        region: &str,
        operation: &str,
    ) -> Result<Box<dyn HeldLock>, StateError> {
        Ok(Box::new(
            LockManager::acquire(self, stack, region, operation).await?,
        ))
    }

    async fn is_locked(&self, stack: &str, region: &str) -> Result<bool, StateError> {
        Ok(self.read(stack, region).await?.is_some())
    }
}

#[async_trait]
impl HeldLock for LockHandle {
    async fn release(&self) {
        LockHandle::release(self).await;
    }

    fn stop_when_lapsed(&self, stop: tokio::sync::watch::Sender<bool>) {
        LockHandle::stop_when_lapsed(self, stop);
    }

    fn lapsed(&self) -> Option<String> {
        LockHandle::lapsed(self)
    }
}
