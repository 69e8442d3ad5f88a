//! The state record of a stack while an operation changes it.
//!
//! Every completed resource is written into the ledger and a save is requested; one background
//! task performs the saves one at a time, each conditional on the ETag of the previous one,
//! always writing the latest ledger (several completions in one save when they arrive while a
//! save is in flight). Dependents never wait for a save, and a crash loses at most the
//! resources completed since the save in flight.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::store::RecordStore;
use crate::state::backend::{StateLocation, StoredState};
use crate::state::schema::StackState;
use crate::state::StateError;

struct Inner {
    state: StackState,
    stored: Option<StoredState>,
    version: u64,
    saved_version: u64,
    failure: Option<String>,
    deleted: bool,
}

/// The background saver of a ledger; dropping it stops the saver on every path out of an
/// operation, early returns included (a save in flight is abandoned: `flush` first).
pub struct Saver(tokio::task::JoinHandle<()>);

impl Drop for Saver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The shared, saved state of one stack.
#[derive(Clone)]
pub struct Ledger {
    inner: Arc<Mutex<Inner>>,
    wake: Arc<Notify>,
    /// One save at a time: each is conditional on the ETag the previous one returned.
    save_gate: Arc<tokio::sync::Mutex<()>>,
    store: Arc<dyn RecordStore>,
    stack: String,
    region: String,
}

impl Ledger {
    /// A ledger starting from `stored` (or a fresh record).
    pub fn new(
        store: Arc<dyn RecordStore>,
        stack: &str,
        region: &str,
        stored: Option<StoredState>,
    ) -> Ledger {
        let state = stored
            .as_ref()
            .map(|s| s.state.clone())
            .unwrap_or_else(|| StackState::new(stack, region));
        Ledger {
            inner: Arc::new(Mutex::new(Inner {
                state,
                stored,
                version: 0,
                saved_version: 0,
                failure: None,
                deleted: false,
            })),
            wake: Arc::new(Notify::new()),
            save_gate: Arc::new(tokio::sync::Mutex::new(())),
            store,
            stack: stack.to_string(),
            region: region.to_string(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the current record.
    pub fn read<T>(&self, f: impl FnOnce(&StackState) -> T) -> T {
        f(&self.lock().state)
    }

    /// Changes the record and asks for a save.
    pub fn change(&self, f: impl FnOnce(&mut StackState)) {
        {
            let mut inner = self.lock();
            f(&mut inner.state);
            inner.version += 1;
        }
        self.wake.notify_one();
    }

    /// Starts the background saver; it stops when the returned guard is dropped.
    pub fn start_saver(&self) -> Saver {
        let ledger = self.clone();
        Saver(tokio::spawn(async move {
            loop {
                ledger.wake.notified().await;
                let _ = ledger.save_latest().await;
            }
        }))
    }

    async fn save_latest(&self) -> Result<(), StateError> {
        let _one_at_a_time = self.save_gate.lock().await;
        let (mut snapshot, previous, version) = {
            let inner = self.lock();
            if inner.version == inner.saved_version || inner.deleted {
                return Ok(());
            }
            (inner.state.clone(), inner.stored.clone(), inner.version)
        };
        match self
            .store
            .save(&self.stack, &self.region, &mut snapshot, previous.as_ref())
            .await
        {
            Ok(etag) => {
                let mut inner = self.lock();
                inner.saved_version = inner.saved_version.max(version);
                // A later save that landed supersedes an earlier failure: it wrote everything.
                if inner.saved_version == inner.version {
                    inner.failure = None;
                }
                inner.stored = Some(StoredState {
                    state: snapshot,
                    etag,
                    location: StateLocation::Current,
                });
                Ok(())
            }
            Err(err) => {
                tracing::warn!(
                    "could not save the state of {} ({}): {err}",
                    self.stack,
                    self.region
                );
                self.lock().failure = Some(err.to_string());
                Err(err)
            }
        }
    }

    /// Saves whatever is unsaved now (changes made while it saves are not waited for) and
    /// reports the first save failure, if any.
    pub async fn flush(&self) -> Result<(), StateError> {
        let target = self.lock().version;
        // The background saver may hold a save in flight; saving again is conditional on its
        // ETag only after it lands, so serialise through the same path.
        loop {
            let pending = {
                let inner = self.lock();
                inner.saved_version < target && !inner.deleted
            };
            if !pending {
                break;
            }
            self.save_latest().await?;
        }
        match self.lock().failure.take() {
            Some(failure) => Err(StateError::Aws(format!("saving state failed: {failure}"))),
            None => Ok(()),
        }
    }

    /// Deletes the record (a fully destroyed stack).
    pub async fn delete(&self) -> Result<(), StateError> {
        self.lock().deleted = true;
        self.store.delete(&self.stack, &self.region).await
    }

    /// The latest record.
    pub fn snapshot(&self) -> StackState {
        self.lock().state.clone()
    }
}
