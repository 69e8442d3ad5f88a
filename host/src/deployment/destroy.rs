//! Destroying a stack from its state record (`cdkd destroy`, `cdkd state destroy`), and
//! replaying its rollback journal (`cdkd rollback`).
//!
//! Destroy deletes in reverse dependency order, keeps resources whose `DeletionPolicy` is
//! `Retain`/`RetainExceptOnCreate` (their rows stay in every intermediate and partial-failure
//! snapshot), trims the record after each delete (outputs cleared, imports and outputReads
//! dropped), deletes the record and journal on full success, and
//! refuses a producer that live consumers still import from.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Map;

use super::deletes::{
    delete_one, deletion_tasks, is_retained, is_snapshot, no_snapshot_path, SnapshotDue,
};
use super::engine::Engine;
use super::executor::{Executor, Outcome};
use super::external::StateSnapshot;
use super::journal::{self, Reason};
use super::ledger::{Ledger, Saver};
use super::nested::{NestedStacks, WithNested};
use super::reconcile;
use super::report::Summary;
use super::revert::revert_operations;
use super::secrets::replay_refusal;
use crate::provisioning::concurrency::{Concurrency, Lanes};
use crate::provisioning::operations::{owner_types, ProviderSet, UpdateCall};
use crate::state::schema::ResourceState;

/// How a rollback ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollbackOutcome {
    /// Everything reverted; the journal is gone.
    Clean,
    /// Some operations could not be reverted; they stay in the journal.
    Partial,
    /// There was nothing to roll back.
    Nothing,
}

/// How a destroy runs.
#[derive(Debug, Clone)]
pub struct DestroyOptions {
    /// Deletes at once, per AWS service.
    pub lanes: Arc<Lanes>,
    /// Delete `DeletionPolicy: Snapshot` resources without their final snapshot.
    pub skip_final_snapshot: bool,
}

impl Default for DestroyOptions {
    fn default() -> DestroyOptions {
        DestroyOptions {
            lanes: Lanes::new(Concurrency::Adaptive),
            skip_final_snapshot: false,
        }
    }
}

impl Engine<'_> {
    /// Cloud Control for `region` and the plugins that own `records` or `intents`.
    pub(crate) async fn owners_of(
        &self,
        region: &str,
        records: &[&ResourceState],
        intents: &[journal::CreateIntent],
    ) -> anyhow::Result<Box<dyn ProviderSet + '_>> {
        let types = owner_types(
            records.iter().copied(),
            intents
                .iter()
                .map(|i| (i.resource_type.as_str(), i.provisioned_by)),
        );
        let timeout = std::time::Duration::from_secs(30 * 60);
        Ok(Box::new(WithNested {
            inner: self.providers.prepare(region, &types, timeout).await?,
            nested: NestedStacks {
                engine: self,
                region: region.to_string(),
                deploys: None,
            },
        }))
    }

    /// Deletes what interrupted runs created but never recorded (their journal intents);
    /// returns the journal with the intents that could not be settled.
    async fn remove_pending(
        &self,
        stack: &str,
        region: &str,
        journal: Option<journal::Journal>,
        state: Option<&crate::state::schema::StackState>,
    ) -> anyhow::Result<Option<journal::Journal>> {
        let Some(mut journal) = journal else {
            return Ok(None);
        };
        if journal.pending_creates.is_empty() {
            return Ok(Some(journal));
        }
        let pending = std::mem::take(&mut journal.pending_creates);
        let records: Vec<&ResourceState> =
            pending.iter().filter_map(|i| i.replaces.as_ref()).collect();
        let providers = self.owners_of(region, &records, &pending).await?;
        let ids = self.providers.account_ids(region).await;
        journal.pending_creates = reconcile::remove_unrecorded(
            &self.reporter,
            stack,
            providers.as_ref(),
            pending,
            state,
            &ids,
        )
        .await;
        if journal.segments.is_empty() && journal.pending_creates.is_empty() {
            self.store.remove_journal(stack, region).await?;
            return Ok(None);
        }
        self.store.write_journal(&journal).await?;
        Ok(Some(journal))
    }

    /// Destroys one stack. `template_policies` supplies `DeletionPolicy` for records that
    /// predate schema v5 (synth-driven destroy only).
    pub async fn destroy(
        &self,
        stack: &str,
        region: &str,
        template_policies: &BTreeMap<String, String>,
        snapshot: &StateSnapshot,
        options: DestroyOptions,
    ) -> anyhow::Result<bool> {
        let work = self.destroy_locked(stack, region, template_policies, snapshot, options);
        self.locked(stack, region, "destroy", work).await
    }
    pub(crate) async fn destroy_locked(
        &self,
        stack: &str,
        region: &str,
        template_policies: &BTreeMap<String, String>,
        snapshot: &StateSnapshot,
        options: DestroyOptions,
    ) -> anyhow::Result<bool> {
        let started = Instant::now();
        let (stored, found_journal) = tokio::join!(
            self.store.load(stack, region),
            self.store.read_journal(stack, region)
        );
        let stored = stored?;
        let left = self
            .remove_pending(
                stack,
                region,
                found_journal?,
                stored.as_ref().map(|s| &s.state),
            )
            .await?;
        let Some(stored) = stored else {
            if left.is_none() {
                self.reporter
                    .stack(stack, &format!("no state in {region}; nothing to destroy"));
            }
            return Ok(false);
        };
        // Strong references: consumers importing this stack's exports block its destroy.
        let consumers: Vec<String> = snapshot_consumers(snapshot, stack, region);
        if !consumers.is_empty() {
            anyhow::bail!(
                "stack {stack} ({region}) exports values that {} still import (Fn::ImportValue); destroy or update those stacks first",
                consumers.join(", ")
            );
        }
        let records: Vec<&ResourceState> = stored.state.resources.values().collect();
        let providers = self.owners_of(region, &records, &[]).await?;
        let doomed: BTreeMap<String, ResourceState> = stored.state.resources.clone();
        // Pre-flight: a resource whose snapshot cannot be taken stops the destroy before any
        // delete, never deleted silently.
        let unsnapshottable: Vec<String> = doomed
            .iter()
            .filter(|(id, record)| {
                !options.skip_final_snapshot
                    && is_snapshot(policy_of(template_policies, id, record).as_deref())
                    && providers.for_snapshot(&record.resource_type).is_none()
            })
            .map(|(id, record)| no_snapshot_path(id, &record.resource_type, true))
            .collect();
        if !unsnapshottable.is_empty() {
            anyhow::bail!(
                "stack {stack} ({region}): nothing was deleted:\n  - {}",
                unsnapshottable.join("\n  - ")
            );
        }
        let ledger = Ledger::new(self.store.clone(), stack, region, Some(stored));
        let saver = ledger.start_saver();
        let teardown = Teardown {
            engine: self,
            stack,
            region,
            providers: providers.as_ref(),
            ledger: &ledger,
            summary: Mutex::new(Summary::default()),
        };
        let tasks = deletion_tasks(&doomed);
        self.reporter.expect(stack, tasks.len());
        let work = |logical_id: String| {
            let record = doomed[&logical_id].clone();
            let policy = policy_of(template_policies, &logical_id, &record);
            let (shown_id, resource_type) = (logical_id.clone(), record.resource_type.clone());
            let teardown = &teardown;
            let delete = async move {
                let began = Instant::now();
                let retained = is_retained(policy.as_deref());
                let mut snapshot = None;
                if !retained {
                    let due = (is_snapshot(policy.as_deref()) && !options.skip_final_snapshot)
                        .then_some(SnapshotDue { stack, region });
                    let deleted = delete_one(
                        &self.reporter,
                        stack,
                        teardown.providers,
                        &logical_id,
                        &record,
                        began,
                        due,
                    );
                    match deleted.await {
                        Ok(taken) => snapshot = taken,
                        Err(err) => {
                            teardown
                                .summary
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .failed += 1;
                            return Err(err);
                        }
                    }
                }
                teardown.trim(&logical_id, &record, retained, snapshot, began);
                Ok(())
            };
            let reporter = &self.reporter;
            async move {
                reporter
                    .track(stack, &shown_id, &resource_type, delete)
                    .await
            }
        };
        let outcomes = Executor::in_lanes(Arc::clone(&options.lanes))
            .run(&tasks, &self.stop, work)
            .await;
        teardown.finish(outcomes, saver, left, started).await
    }

    /// Replays the newest journal segment of a stack (without synthesis).
    pub async fn rollback(
        &self,
        stack: &str,
        region: &str,
        revert_failed: bool,
        orphan: &[String],
    ) -> anyhow::Result<RollbackOutcome> {
        let work = self.rollback_locked(stack, region, revert_failed, orphan);
        self.locked(stack, region, "rollback", work).await
    }

    async fn rollback_locked(
        &self,
        stack: &str,
        region: &str,
        revert_failed: bool,
        orphan: &[String],
    ) -> anyhow::Result<RollbackOutcome> {
        let (found_journal, stored) = tokio::join!(
            self.store.read_journal(stack, region),
            self.store.load(stack, region)
        );
        let stored = stored?;
        let had_pending = found_journal
            .as_ref()
            .ok()
            .and_then(|j| j.as_ref())
            .is_some_and(|j| !j.pending_creates.is_empty());
        let found_journal = self
            .remove_pending(
                stack,
                region,
                found_journal?,
                stored.as_ref().map(|s| &s.state),
            )
            .await?;
        let Some(mut journal) = found_journal else {
            if had_pending {
                return Ok(RollbackOutcome::Clean);
            }
            self.reporter.stack(
                stack,
                &format!("no rollback journal in {region}; nothing to roll back"),
            );
            return Ok(RollbackOutcome::Nothing);
        };
        let ledger = Ledger::new(self.store.clone(), stack, region, stored.clone());
        let _saver = ledger.start_saver();
        let records: Vec<ResourceState> = stored
            .map(|s| s.state.resources.into_values().collect())
            .unwrap_or_default();
        let mut involved: Vec<ResourceState> = records;
        for segment in &journal.segments {
            for operation in &segment.operations {
                involved.extend(operation.after.iter().cloned());
                involved.extend(operation.before.iter().cloned());
            }
        }
        let refs: Vec<&ResourceState> = involved.iter().collect();
        let providers = self.owners_of(region, &refs, &[]).await?;

        let mut partial = false;
        while let Some(mut segment) = journal.segments.pop() {
            // Orphaned ids are forgotten rather than reverted: their AWS side stays as is.
            let (forget, replay): (Vec<_>, Vec<_>) = segment
                .operations
                .drain(..)
                .partition(|op| orphan.contains(&op.logical_id));
            for operation in forget {
                let id = operation.logical_id.clone();
                ledger.change(|s| {
                    s.resources.remove(&id);
                });
                self.reporter.resource(
                    stack,
                    &id,
                    &operation.resource_type,
                    "orphaned (left in AWS, forgotten)",
                    None,
                );
            }
            let remaining =
                revert_operations(&self.reporter, stack, &ledger, providers.as_ref(), replay).await;
            if !remaining.is_empty() {
                segment.operations = remaining;
                journal.segments.push(segment);
                partial = true;
                break;
            }
            if revert_failed {
                let failed = std::mem::take(&mut segment.failed_operations);
                let unreverted = self
                    .revert_failed_operations(stack, &ledger, providers.as_ref(), failed)
                    .await;
                // What could not be reverted stays in the journal for the next attempt.
                if !unreverted.is_empty() {
                    partial = true;
                    segment.failed_operations = unreverted;
                    journal.segments.push(segment);
                    break;
                }
            }
            // Only the newest segment is replayed per run, except clean auto-rollback markers.
            if segment.reason != Reason::AutoRollbackClean {
                break;
            }
        }
        ledger.flush().await?;
        if partial {
            self.store.write_journal(&journal).await?;
            return Ok(RollbackOutcome::Partial);
        }
        if journal.segments.is_empty() && journal.pending_creates.is_empty() {
            self.store.remove_journal(stack, region).await?;
        } else {
            self.store.write_journal(&journal).await?;
        }
        Ok(RollbackOutcome::Clean)
    }

    /// `--revert-failed`: puts each failed operation's resource back as it was recorded
    /// before the operation; returns the failed operations that could not be reverted.
    async fn revert_failed_operations(
        &self,
        stack: &str,
        ledger: &Ledger,
        providers: &dyn ProviderSet,
        failed_operations: Vec<journal::FailedOperation>,
    ) -> Vec<journal::FailedOperation> {
        let mut unreverted = Vec::new();
        for failed in failed_operations {
            let Some(before) = failed.before.clone() else {
                continue;
            };
            let id = failed.logical_id.clone();
            if let Some(refusal) = replay_refusal(&id, &before.properties) {
                self.reporter.resource(
                    stack,
                    &id,
                    &failed.resource_type,
                    &format!("not reverted: {refusal}"),
                    None,
                );
                unreverted.push(failed);
                continue;
            }
            let result = providers
                .for_record(&before)
                .update(UpdateCall {
                    resource_type: &before.resource_type,
                    logical_id: &id,
                    stack,
                    physical_id: &before.physical_id,
                    previous: &failed.attempted_properties,
                    desired: &before.properties,
                    needed: &[],
                })
                .await;
            match result {
                Ok(_) => {
                    ledger.change(|s| {
                        s.resources.insert(id.clone(), before.clone());
                    });
                    self.reporter.resource(
                        stack,
                        &id,
                        &failed.resource_type,
                        "failed operation reverted",
                        None,
                    );
                }
                Err(err) => {
                    self.reporter.resource(
                        stack,
                        &id,
                        &failed.resource_type,
                        &format!("could not revert the failed operation: {err}"),
                        None,
                    );
                    unreverted.push(failed);
                }
            }
        }
        unreverted
    }
}

/// The `DeletionPolicy` of a record, or (records that predate schema v5) of its template.
fn policy_of(
    template_policies: &BTreeMap<String, String>,
    logical_id: &str,
    record: &ResourceState,
) -> Option<String> {
    record
        .deletion_policy
        .clone()
        .or_else(|| template_policies.get(logical_id).cloned())
}

/// One destroy under way: the stack, its providers and its record as it is trimmed.
struct Teardown<'a, 'e> {
    engine: &'a Engine<'e>,
    stack: &'a str,
    region: &'a str,
    providers: &'a dyn ProviderSet,
    ledger: &'a Ledger,
    summary: Mutex<Summary>,
}

impl Teardown<'_, '_> {
    /// Trims the record after one resource was deleted (or, `retained`, kept in AWS by its
    /// policy), and reports it.
    fn trim(
        &self,
        logical_id: &str,
        record: &ResourceState,
        retained: bool,
        snapshot: Option<String>,
        began: Instant,
    ) {
        self.ledger.change(|s| {
            // A retained row stays in every snapshot until the record itself is deleted, so a
            // destroy that stops part-way still knows what it kept.
            if !retained {
                s.resources.remove(logical_id);
            }
            // A partly destroyed stack advertises nothing.
            s.outputs = Map::new();
            s.imports = None;
            s.output_reads = None;
        });
        self.summary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .deleted += 1;
        let action = match (retained, snapshot) {
            (true, _) => "kept in AWS (DeletionPolicy); its row goes with the record".to_string(),
            (false, Some(snapshot)) => format!("deleted ({snapshot})"),
            (false, None) => "deleted".to_string(),
        };
        self.engine.reporter.resource(
            self.stack,
            logical_id,
            &record.resource_type,
            &action,
            Some(began.elapsed()),
        );
    }

    /// Ends the destroy: on full success the record and its exports go, and the journal keeps
    /// only the intents that could not be checked; otherwise the trimmed record is saved and
    /// the destroy fails with what failed. `Ok(true)`: the stack is gone.
    async fn finish(
        self,
        outcomes: BTreeMap<String, Outcome>,
        saver: Saver,
        left: Option<journal::Journal>,
        started: Instant,
    ) -> anyhow::Result<bool> {
        let (stack, region) = (self.stack, self.region);
        let (store, reporter) = (&self.engine.store, &self.engine.reporter);
        let failed: Vec<String> = outcomes
            .iter()
            .filter_map(|(id, o)| match o {
                Outcome::Failed(message) => Some(format!("{id}: {message}")),
                _ => None,
            })
            .collect();
        let summary = self.summary.into_inner().unwrap_or_else(|e| e.into_inner());
        if outcomes.values().all(|o| *o == Outcome::Done) {
            drop(saver);
            self.ledger.delete().await?;
            store.withdraw_exports(stack, region).await;
            match left.filter(|j| !j.pending_creates.is_empty()) {
                // Intents that could not be checked stay, so nothing is forgotten silently.
                Some(mut kept) => {
                    kept.segments.clear();
                    store.write_journal(&kept).await?;
                }
                None => store.remove_journal(stack, region).await?,
            }
            reporter.finish(stack, &summary, started.elapsed(), &Map::new());
            return Ok(true);
        }
        self.ledger.flush().await?;
        drop(saver);
        reporter.finish(stack, &summary, started.elapsed(), &Map::new());
        if failed.is_empty() {
            anyhow::bail!("destroy of {stack} ({region}) was interrupted; the state lists what still exists; run it again to finish");
        }
        anyhow::bail!("destroy of {stack} ({region}) failed: {}; the state lists what still exists; fix the cause and run it again", failed.join("; "))
    }
}

fn snapshot_consumers(snapshot: &StateSnapshot, stack: &str, region: &str) -> Vec<String> {
    let mut consumers = Vec::new();
    for (consumer, consumer_region, state) in snapshot.iter() {
        if consumer == stack && consumer_region == region {
            continue;
        }
        if state
            .imports
            .iter()
            .flatten()
            .any(|import| import.source_stack == stack && import.source_region == region)
        {
            consumers.push(format!("{consumer} ({consumer_region})"));
        }
    }
    consumers
}
