//! The phases after execution. On success: deletes (removed resources and the old halves of
//! replacements, dependents first), outputs and cross-stack reads, the final save. On failure
//! or interruption: the journal, then the automatic rollback unless `--no-rollback`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use serde_json::{Map, Value};

use super::environment::LiveEnvironment;
use super::{DeployFailed, Deployed, StackRun};
use crate::analyzer::diff::Action;
use crate::analyzer::intrinsics::{Environment, Resolver};
use crate::analyzer::no_echo::NoEcho;
use crate::analyzer::template::Template;
use crate::deployment::deletes::{
    delete_one, deletion_tasks, is_retained, is_snapshot, DeleteError, DeleteKind, SnapshotDue,
};
use crate::deployment::executor::{Executor, Outcome};
use crate::deployment::journal::{Journal, Reason, Segment};
use crate::deployment::reconcile;
use crate::deployment::revert::revert_operations;
use crate::state::schema::{ResourceState, StateImportEntry, StateOutputReadEntry};

/// One doomed resource's delete failed.
#[derive(Debug, thiserror::Error)]
#[error("{logical_id}: {error}")]
struct ResourceNotDeleted {
    logical_id: String,
    error: DeleteError,
}

/// The deletes after a deploy stopped at a failure: the first failed task's message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct DoomedNotDeleted(String);

impl StackRun<'_> {
    /// After every resource succeeded: the deletes, then a save holding every create (so the
    /// journal's intents may go). Runs beside the last observed-state reads.
    pub(super) async fn settle(&self) -> anyhow::Result<()> {
        let (stack, region) = (self.stack(), self.region());
        if let Err(message) = self.delete_doomed().await {
            self.ledger.flush().await?;
            return Err(DeployFailed(format!(
                "deploy of {stack} ({region}) failed while deleting: {message}"
            ))
            .into());
        }
        // The journal goes only once the record holds what its intents were for.
        self.ledger.flush().await?;
        Ok(())
    }

    /// The journal clean-up, the outputs and the final save of a settled deploy (with every
    /// observed-state read): the save and the clean-up touch different keys, so both at once.
    pub(super) async fn finish(&self) -> anyhow::Result<Deployed> {
        let (stack, region) = (self.stack(), self.region());
        let outputs = self.record_outputs()?;
        // Intents this run could not settle (an interrupted run's) stay for the next one.
        let store = &self.engine.store;
        let unsettled = &self.write_ahead.unsettled;
        let cleanup = async {
            if unsettled.is_empty() {
                store.remove_journal(stack, region).await
            } else {
                let mut left = Journal::new(stack, region);
                left.pending_creates = unsettled.clone();
                store.write_journal(&left).await
            }
        };
        // The exports index beside the save: a derived view, never failing the deploy.
        let published = self.ledger.snapshot();
        let publish = store.publish_exports(&published);
        let (saved, cleaned, ()) = tokio::join!(self.ledger.flush(), cleanup, publish);
        saved?;
        cleaned?;
        let summary = self.record().summary.clone();
        let shown = self.ledger.read(|s| s.outputs.clone());
        (self.engine.reporter).finish(stack, &summary, self.started.elapsed(), &shown);
        Ok(Deployed {
            state: self.ledger.snapshot(),
            secret_outputs: outputs,
        })
    }

    /// Deletes what the template no longer has and what replacements superseded.
    async fn delete_doomed(&self) -> Result<(), DoomedNotDeleted> {
        let mut doomed: BTreeMap<String, (DeleteKind, ResourceState)> = BTreeMap::new();
        for change in self.planned.changes.iter() {
            if change.action != Action::Delete {
                continue;
            }
            let recorded = self.recorded.as_ref();
            if let Some(record) = recorded.and_then(|s| s.resources.get(&change.logical_id)) {
                doomed.insert(
                    change.logical_id.clone(),
                    (DeleteKind::Removed, record.clone()),
                );
            }
        }
        let superseded = std::mem::take(&mut self.record().superseded);
        for (id, record) in superseded {
            doomed.insert(id, (DeleteKind::Superseded, record));
        }
        if doomed.is_empty() {
            return Ok(());
        }
        let tasks = deletion_tasks(doomed.iter().map(|(id, (_, record))| (id, record)));
        let reporter = &self.engine.reporter;
        reporter.expect(self.stack(), tasks.len());
        let work = |logical_id: String| {
            let (kind, record) = doomed[&logical_id].clone();
            let (shown_id, resource_type) = (logical_id.clone(), record.resource_type.clone());
            let delete = async move {
                let began = Instant::now();
                let superseded = kind == DeleteKind::Superseded;
                let retained = !superseded && is_retained(record.deletion_policy.as_deref());
                let policy = match kind {
                    DeleteKind::Removed => record.deletion_policy.as_deref(),
                    DeleteKind::Superseded => record.update_replace_policy.as_deref(),
                };
                let due = is_snapshot(policy).then_some(SnapshotDue {
                    stack: self.stack(),
                    region: &self.input.context.region,
                });
                let mut snapshot = None;
                if !retained {
                    let providers = self.providers.as_ref();
                    snapshot = delete_one(
                        &self.engine.reporter,
                        self.stack(),
                        providers,
                        &logical_id,
                        &record,
                        began,
                        due,
                    )
                    .await
                    .map_err(|error| ResourceNotDeleted {
                        logical_id: logical_id.clone(),
                        error,
                    })?;
                }
                if !superseded {
                    self.ledger.change(|s| {
                        s.resources.remove(&logical_id);
                    });
                }
                let action = match (superseded, retained) {
                    (true, _) => "old resource deleted after replacement",
                    (false, true) => "removed from state, kept in AWS (DeletionPolicy)",
                    (false, false) => "deleted",
                };
                let action = match snapshot {
                    Some(snapshot) => format!("{action} ({snapshot})"),
                    None => action.to_string(),
                };
                self.engine.reporter.resource(
                    self.stack(),
                    &logical_id,
                    &record.resource_type,
                    &action,
                    Some(began.elapsed()),
                );
                Ok::<(), ResourceNotDeleted>(())
            };
            async move {
                let stack = self.stack();
                reporter
                    .track(stack, &shown_id, &resource_type, delete)
                    .await
            }
        };
        let executor = Executor::in_lanes(std::sync::Arc::clone(&self.options.lanes));
        let outcomes = executor.run(&tasks, &self.engine.stop, work).await;
        match outcomes.into_values().find_map(|o| match o {
            Outcome::Failed(message) => Some(message),
            _ => None,
        }) {
            Some(message) => Err(DoomedNotDeleted(message)),
            None => Ok(()),
        }
    }

    /// Resolves outputs, export names and the cross-stack reads into the live record;
    /// returns the plaintext of outputs recorded masked.
    fn record_outputs(&self) -> anyhow::Result<Map<String, Value>> {
        let env = LiveEnvironment {
            context: &self.input.context,
            ledger: &self.ledger,
            snapshot: self.snapshot,
            run: &self.run,
            secrets: &self.secrets,
            for_outputs: true,
        };
        let recorded = OutputsRecord::resolve(self.input, &env, &self.secrets, &self.run)?;
        // Written only when it differs: a deploy that changed nothing writes nothing.
        let mut updated = self.ledger.snapshot();
        recorded.apply(&mut updated);
        if self.ledger.read(|current| *current != updated) {
            self.ledger.change(|s| *s = updated);
        }
        Ok(recorded.secret_outputs)
    }

    /// After a failure or interruption: the journal, and the rollback unless disabled.
    /// Returns the deploy's error (a failed save does not stop the journal or the rollback:
    /// it is reported with the deploy's own error).
    pub(super) async fn fail(
        &self,
        outcomes: &BTreeMap<String, Outcome>,
        interrupted: bool,
        reason: String,
    ) -> anyhow::Result<DeployFailed> {
        let (stack, region) = (self.stack(), self.region());
        let store = &self.engine.store;
        let save_failure = self.ledger.flush().await.err();
        let save_note = save_failure
            .as_ref()
            .map(|err| format!(" (and saving state failed: {err})"))
            .unwrap_or_default();
        self.keep_failed_intents(outcomes).await?;
        let (operations, failures, summary) = {
            let mut run = self.record();
            (
                std::mem::take(&mut run.completed),
                std::mem::take(&mut run.failed),
                run.summary.clone(),
            )
        };
        let reporter = &self.engine.reporter;
        if interrupted || !self.options.rollback {
            let why = if interrupted {
                Reason::Interrupted
            } else {
                Reason::NoRollbackFailure
            };
            let segment = Segment::new(why, operations, failures);
            store.append_segment(stack, region, segment).await?;
            reporter.finish(stack, &summary, self.started.elapsed(), &Map::new());
            let what = if interrupted {
                "was interrupted"
            } else {
                "failed"
            };
            return Ok(DeployFailed(format!(
                "deploy of {stack} ({region}) {what}: {reason}{save_note}. What succeeded is kept and recorded; run `cdkd rollback {stack}` to undo it, or fix the cause and deploy again"
            )));
        }
        // Automatic rollback: journal first, so a rollback that dies can be resumed.
        let started = Segment::new(
            Reason::AutoRollbackStarted,
            operations.clone(),
            failures.clone(),
        );
        store.append_segment(stack, region, started).await?;
        reporter.stack(
            stack,
            &format!(
                "deploy failed ({reason}); rolling back {} completed operation(s)",
                operations.len()
            ),
        );
        let providers = self.providers.as_ref();
        let remaining =
            revert_operations(reporter, stack, &self.ledger, providers, operations).await;
        let save_failure = self.ledger.flush().await.err().or(save_failure);
        let mut journal = store
            .read_journal(stack, region)
            .await?
            .unwrap_or_else(|| Journal::new(stack, region));
        journal.segments.pop();
        // What a failed create left in AWS unrecorded goes with the rollback.
        let pending = std::mem::take(&mut journal.pending_creates);
        let recorded_now = self.ledger.snapshot();
        journal.pending_creates = reconcile::remove_unrecorded(
            reporter,
            stack,
            providers,
            pending,
            Some(&recorded_now),
            &self.ids,
        )
        .await;
        let clean = remaining.is_empty();
        let why = if clean {
            Reason::AutoRollbackClean
        } else {
            Reason::AutoRollbackStarted
        };
        journal
            .segments
            .push(Segment::new(why, remaining, failures));
        store.write_journal(&journal).await?;
        reporter.finish(stack, &summary, self.started.elapsed(), &Map::new());
        let save_note = save_failure
            .map(|err| format!(" (saving state failed: {err}; the journal has what `cdkd rollback {stack}` needs)"))
            .unwrap_or_default();
        Ok(DeployFailed(if clean {
            format!("deploy of {stack} ({region}) failed and was rolled back: {reason}{save_note}")
        } else {
            format!("deploy of {stack} ({region}) failed and the rollback did not finish: {reason}{save_note}; run `cdkd rollback {stack}` to retry it")
        }))
    }

    /// Only creates that were sent and failed can have left something unrecorded: the others
    /// finished (and are recorded) or never started. A create refused because the name was
    /// taken made nothing. An interrupted run's unsettled intents stay.
    async fn keep_failed_intents(
        &self,
        outcomes: &BTreeMap<String, Outcome>,
    ) -> anyhow::Result<()> {
        let (stack, region) = (self.stack(), self.region());
        let store = &self.engine.store;
        let made_nothing: BTreeSet<String> = self.record().made_nothing.clone();
        let unsettled = &self.write_ahead.unsettled;
        if let Some(mut doc) = store.read_journal(stack, region).await? {
            let before = doc.pending_creates.len();
            doc.pending_creates.retain(|intent| {
                let failed = matches!(outcomes.get(&intent.logical_id), Some(Outcome::Failed(_)))
                    && !made_nothing.contains(&intent.logical_id);
                failed || unsettled.iter().any(|u| u.token == intent.token)
            });
            if doc.pending_creates.len() != before {
                store.write_journal(&doc).await?;
            }
        }
        Ok(())
    }
}

/// The part of a record a deploy writes after its resources: outputs (masked), export names,
/// the exports and outputs of other stacks it read, and a nested stack's parent.
pub(super) struct OutputsRecord {
    outputs: Map<String, Value>,
    export_names: Vec<String>,
    imports: Vec<StateImportEntry>,
    output_reads: Vec<StateOutputReadEntry>,
    parent: Option<super::ParentStack>,
    /// The fingerprints of the `NoEcho` parameter values this deploy sent.
    no_echo_parameters: Option<BTreeMap<String, String>>,
    /// The values themselves, masked once more over the whole record (one written in
    /// plaintext by a cdkd before masking is cleaned by its next deploy).
    no_echo: NoEcho,
    /// Output name → plaintext, for outputs recorded as the mask (this run's consumers only).
    pub(super) secret_outputs: Map<String, Value>,
}

impl OutputsRecord {
    /// Resolves `input`'s outputs in `env`; what `env` read is in `run`.
    pub(super) fn resolve(
        input: &super::StackInput,
        env: &LiveEnvironment,
        secrets: &crate::deployment::secrets::RunSecrets,
        run: &std::sync::Mutex<super::run::RunRecord>,
    ) -> anyhow::Result<OutputsRecord> {
        let (plain, export_names) = resolve_outputs(&input.template, env, &input.parameters)?;
        let outputs = secrets.mask_map(&plain);
        let secret_outputs: Map<String, Value> = plain
            .into_iter()
            .filter(|(name, value)| outputs.get(name) != Some(value))
            .collect();
        let (imports, output_reads) = {
            let run = run.lock().unwrap_or_else(|e| e.into_inner());
            (run.imports.clone(), run.output_reads.clone())
        };
        let imports = imports
            .into_iter()
            .map(
                |(source_stack, source_region, export_name)| StateImportEntry {
                    source_stack,
                    source_region,
                    export_name,
                    extra: Map::new(),
                },
            )
            .collect();
        let output_reads = output_reads
            .into_iter()
            .map(
                |(source_stack, source_region, output_name)| StateOutputReadEntry {
                    source_stack,
                    source_region,
                    output_name,
                    extra: Map::new(),
                },
            )
            .collect();
        let no_echo = NoEcho::of(&input.template, &input.parameters);
        let no_echo_parameters = (!no_echo.is_empty()).then(|| {
            let recorded = env.ledger.read(|s| s.no_echo_parameters.clone());
            no_echo.fingerprints(recorded.as_ref())
        });
        Ok(OutputsRecord {
            outputs,
            export_names,
            imports,
            output_reads,
            parent: input.parent.clone(),
            no_echo_parameters,
            no_echo,
            secret_outputs,
        })
    }

    /// Writes this part into a record.
    pub(super) fn apply(&self, s: &mut crate::state::schema::StackState) {
        if let Some(parent) = &self.parent {
            s.parent_stack = Some(parent.stack.clone());
            s.parent_logical_id = Some(parent.logical_id.clone());
            s.parent_region = Some(parent.region.clone());
        }
        s.outputs = self.outputs.clone();
        s.export_names = Some(self.export_names.clone());
        s.no_echo_parameters = self.no_echo_parameters.clone();
        self.no_echo.mask_record(s);
        s.imports = (!self.imports.is_empty()).then(|| self.imports.clone());
        s.output_reads = (!self.output_reads.is_empty()).then(|| self.output_reads.clone());
    }
}

fn resolve_outputs(
    template: &Template,
    env: &dyn Environment,
    parameters: &BTreeMap<String, Value>,
) -> anyhow::Result<(Map<String, Value>, Vec<String>)> {
    let resolver = Resolver::new(template, env, parameters)?;
    let mut outputs = Map::new();
    let mut export_names = Vec::new();
    for (name, output) in &template.outputs {
        if !resolver.is_active(output.condition.as_deref())? {
            continue;
        }
        let value = resolver.resolve(&output.value, &format!("Outputs.{name}.Value"))?;
        if let Some(export) = &output.export_name {
            let export = resolver.resolve(export, &format!("Outputs.{name}.Export.Name"))?;
            if let Some(export) = export.as_str() {
                outputs.insert(export.to_string(), value.clone());
                export_names.push(export.to_string());
            }
        }
        outputs.insert(name.clone(), value);
    }
    Ok((outputs, export_names))
}
