//! `observedProperties`: what AWS holds right after each create and update (the drift
//! baseline), read off the critical path. Steps queue their resource and go on; one reader
//! loop runs beside the execution, several reads at once, and writes each result into the
//! ledger, so the final save carries them all. Records an older cdkd wrote without the field
//! (or whose last read failed) are queued at the start, so even a deploy with no change
//! refreshes them; those reads may wait for the next deploy, so they never hold this one up
//! for more than [`REFRESH_GRACE`] (`read_budget`).

use std::sync::Mutex;

use futures_util::StreamExt;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::watch;

use super::StackRun;
use crate::analyzer::diff::Action;
use crate::deployment::secrets::masked_like;
use crate::provisioning::operations::{read_record, Observation};
use crate::provisioning::preflight::NESTED_STACK;
use crate::provisioning::read_budget::{ReadPurpose, REFRESH_GRACE};

/// One queued read: the resource and what its read is for.
type Request = (String, ReadPurpose);

/// The queue of resources whose live state is to be captured.
pub(super) struct Captures {
    queue: Mutex<Option<UnboundedSender<Request>>>,
    receiver: Mutex<Option<UnboundedReceiver<Request>>>,
    /// When refresh reads must end: [`REFRESH_GRACE`] after the run's own work is done.
    deadline: watch::Sender<Option<tokio::time::Instant>>,
}

impl Captures {
    /// A queue, or none when capture is off (`--no-capture-observed-state`).
    pub(super) fn new(enabled: bool) -> Captures {
        let (queue, receiver) = if enabled {
            let (sender, receiver) = unbounded_channel();
            (Some(sender), Some(receiver))
        } else {
            (None, None)
        };
        Captures {
            queue: Mutex::new(queue),
            receiver: Mutex::new(receiver),
            deadline: watch::Sender::new(None),
        }
    }

    /// Asks for `logical_id`'s live state once its current operation is recorded.
    pub(super) fn request(&self, logical_id: &str, purpose: ReadPurpose) {
        if let Some(queue) = self
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            let _ = queue.send((logical_id.to_string(), purpose));
        }
    }

    /// No more requests: the reader loop ends once the queued ones are read.
    pub(super) fn close(&self) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).take();
        self.deadline
            .send_replace(Some(tokio::time::Instant::now() + REFRESH_GRACE));
    }

    /// Whether the refresh deadline has passed (a refresh not started by then is skipped).
    fn past_deadline(&self) -> bool {
        self.deadline
            .borrow()
            .is_some_and(|at| tokio::time::Instant::now() >= at)
    }

    fn take_receiver(&self) -> Option<UnboundedReceiver<Request>> {
        self.receiver
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Resolves at the refresh deadline: one instant for every read, however late it started.
    async fn grace_over(&self) {
        let mut deadline = self.deadline.subscribe();
        // The sender lives as long as `self`, so the wait ends only by closing.
        let at = match deadline.wait_for(Option::is_some).await {
            Ok(at) => *at,
            Err(_) => None,
        };
        if let Some(at) = at {
            tokio::time::sleep_until(at).await;
        }
    }
}

impl StackRun<'_> {
    /// Queues the records that have no baseline yet and that this deploy leaves as they are.
    pub(super) fn queue_missing_baselines(&self) {
        let Some(recorded) = self.recorded.as_ref() else {
            return;
        };
        for (logical_id, record) in &recorded.resources {
            let unchanged = self
                .change_at
                .get(logical_id)
                .is_some_and(|&at| self.planned.changes[at].action == Action::NoChange);
            if unchanged
                && record.observed_properties.is_none()
                && record.resource_type != NESTED_STACK
            {
                self.captures.request(logical_id, ReadPurpose::Refresh);
            }
        }
    }

    /// Reads every queued resource until the queue is closed and drained.
    pub(super) async fn capture_observed(&self) {
        let Some(receiver) = self.captures.take_receiver() else {
            return;
        };
        let requests = futures_util::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|request| (request, receiver))
        });
        requests
            .for_each_concurrent(
                self.options.lanes.ceiling(),
                |(logical_id, purpose)| async move {
                    if *self.engine.stop.borrow() {
                        return;
                    }
                    if purpose != ReadPurpose::Refresh {
                        return self.capture_one(&logical_id, purpose).await;
                    }
                    if self.captures.past_deadline() {
                        return self.baseline_abandoned(&logical_id);
                    }
                    tokio::select! {
                        () = self.capture_one(&logical_id, purpose) => {}
                        () = self.captures.grace_over() => self.baseline_abandoned(&logical_id),
                    }
                },
            )
            .await;
    }

    fn baseline_abandoned(&self, logical_id: &str) {
        tracing::warn!(
            "{}: {logical_id}'s drift baseline was not read before the deploy finished; the next deploy reads it again",
            self.stack()
        );
    }

    async fn capture_one(&self, logical_id: &str, purpose: ReadPurpose) {
        let Some(record) = self.ledger.read(|s| s.resources.get(logical_id).cloned()) else {
            return;
        };
        let provider = self.providers.for_record(&record);
        let live = match read_record(provider, logical_id, &record, purpose).await {
            Ok(Observation::Live(live)) => live,
            Ok(Observation::Gone) => {
                tracing::warn!(
                    "{}: {logical_id} ({}) was not found when its observed state was read",
                    self.stack(),
                    record.physical_id
                );
                return;
            }
            Ok(Observation::NoReader) => return,
            Err(err) => {
                tracing::warn!(
                    "{}: reading {logical_id}'s observed state failed (the drift baseline stays as it was): {err}",
                    self.stack()
                );
                return;
            }
        };
        let observed = masked_like(&record, self.secrets.mask_map(&live));
        self.ledger.change(|s| {
            // Only the record that was read: a later operation in this run replaced it.
            if let Some(current) = s.resources.get_mut(logical_id) {
                if current.physical_id == record.physical_id
                    && current.properties == record.properties
                {
                    current.observed_properties = Some(observed);
                }
            }
        });
    }
}
