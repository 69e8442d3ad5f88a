//! The engine: what deploy, destroy and rollback work with, each behind its seam (providers,
//! the record store, the locks), so the rules above them run on in-memory fakes in tests.

use std::sync::Arc;

use super::report::Reporter;
use super::store::{RecordStore, StackLocks};
use crate::provisioning::operations::ProviderSource;
use crate::provisioning::registry::Registry;

/// What the engine works with.
///
/// Operations that change a stack's record run under its lock ([`Engine::locked`]).
pub struct Engine<'a> {
    /// Loaded plugins: routing decisions and type schemas.
    pub registry: &'a Registry,
    /// Where resource operations go.
    pub providers: &'a dyn ProviderSource,
    /// Stack records and journals.
    pub store: Arc<dyn RecordStore>,
    /// Stack locks.
    pub locks: &'a dyn StackLocks,
    /// Output.
    pub reporter: Reporter,
    /// Set on the first Ctrl-C / SIGTERM, or when this run can no longer count on a stack's
    /// lock: no new operation starts after it.
    pub stop: tokio::sync::watch::Sender<bool>,
}

impl Engine<'_> {
    /// Runs `work` holding the lock of `stack` in `region` for `operation`; the lock is released
    /// on every path out. If the lock lapses meanwhile (another process took it, or it could
    /// not be renewed in time), the run is stopped as a Ctrl-C stops it, and fails.
    pub async fn locked<T>(
        &self,
        stack: &str,
        region: &str,
        operation: &str,
        work: impl std::future::Future<Output = anyhow::Result<T>>,
    ) -> anyhow::Result<T> {
        let lock = self.locks.acquire(stack, region, operation).await?;
        lock.stop_when_lapsed(self.stop.clone());
        let result = work.await;
        let lapsed = lock.lapsed();
        lock.release().await;
        match (lapsed, result) {
            (None, result) => result,
            (Some(reason), result) => {
                let also = match result {
                    Ok(_) => String::new(),
                    Err(err) => format!("\nThe {operation} also reported: {err:#}"),
                };
                anyhow::bail!(
                    "{reason}. The {operation} of stack {stack} stopped: no operation started after that, those in flight finished and what they did was saved. Check who holds the lock (`cdkd state show {stack}`), then run the {operation} again.{also}"
                )
            }
        }
    }
}
