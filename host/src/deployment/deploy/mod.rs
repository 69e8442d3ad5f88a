//! Deploying one stack, in phases: plan → pre-flight → write-ahead → execute (creates and
//! updates in dependency order, event-driven) → deletes (reverse order) → outputs → finish.
//! The stack lock is held throughout. A failure rolls back what this deploy did (unless
//! `--no-rollback`), and either way the rollback journal records what `cdkd rollback` needs.

mod apply;
mod environment;
mod finish;
mod observe;
mod run;
mod unchanged;
mod write_ahead;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use self::observe::Captures;
use self::run::RunRecord;
pub use self::unchanged::RememberedDeploys;
use self::write_ahead::WriteAhead;
use super::deletes::{is_snapshot, no_snapshot_path};
use super::engine::Engine;
use super::executor::{Executor, Outcome, Task};
use super::expected_time::{longest_pole_first, plan_durations, ExpectedTimes, Operation};
use super::external::StateSnapshot;
use super::ledger::Ledger;
use super::nested::{nested_ids, ChildDeploys, NestedStacks, WithNested};
use super::planning::plan_stack;
use super::secrets::RunSecrets;
use crate::analyzer::diff::Action;
use crate::analyzer::no_echo::NoEcho;
use crate::analyzer::plan::{StackContext, StackPlan};
use crate::analyzer::security::{RequireApproval, SecurityChanges};
use crate::analyzer::template::Template;
use crate::provisioning::cloud_control::has_attribute;
use crate::provisioning::concurrency::{service_of, Concurrency, Lanes};
use crate::provisioning::create_only::KnownCreateOnly;
use crate::provisioning::operations::{
    owner_types, AccountIds, Observation, ProviderSet, ReadCall,
};
use crate::provisioning::preflight::{refuse_unprovisionable, route_all, Candidate};
use crate::provisioning::router::{AllowedDrops, Decision};
use crate::state::schema::{ProvisionedBy, ResourceState, StackState};

/// How to deploy.
#[derive(Debug, Clone)]
pub struct DeployOptions {
    /// Resources in flight at once, per AWS service.
    pub lanes: Arc<Lanes>,
    /// Undo what this deploy did when it fails.
    pub rollback: bool,
    /// Properties plugins may drop.
    pub allowed: AllowedDrops,
    /// Delete a replaced resource before creating its successor (for names that collide).
    pub replace_first: bool,
    /// The longest one resource operation may take.
    pub resource_timeout: Duration,
    /// Resources to destroy and re-create on the given layer (`--recreate-via-…`).
    pub recreate: BTreeMap<String, ProvisionedBy>,
    /// Read each created or updated resource back as its `observedProperties` (and fill in
    /// records that lack them); off with `--no-capture-observed-state`.
    pub capture_observed: bool,
    /// What this machine deployed last (none: always try the no-change fast path).
    pub remembered: Option<RememberedDeploys>,
    /// Which security-sensitive changes need the user's approval (`--require-approval`).
    pub require_approval: RequireApproval,
    /// Who is asked (none: a change that needs approval is refused).
    pub approver: Option<Arc<dyn Approver>>,
}

/// Asks whether a stack's security-sensitive changes may be deployed.
#[async_trait::async_trait]
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// `Ok(true)` to go ahead, `Ok(false)` when the answer was no, `Err(why)` when there is no
    /// one to ask.
    async fn approve(
        &self,
        stack: &str,
        level: RequireApproval,
        changes: &SecurityChanges,
    ) -> Result<bool, NoAnswer>;
}

/// Why an approval question got no answer (no one to ask, or the asking failed): the reason
/// completes the refusal's sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NoAnswer(pub String);

impl From<&str> for NoAnswer {
    fn from(why: &str) -> NoAnswer {
        NoAnswer(why.to_string())
    }
}

impl From<String> for NoAnswer {
    fn from(why: String) -> NoAnswer {
        NoAnswer(why)
    }
}

impl Default for DeployOptions {
    fn default() -> DeployOptions {
        DeployOptions {
            lanes: Lanes::new(Concurrency::Adaptive),
            rollback: true,
            allowed: AllowedDrops::default(),
            replace_first: false,
            resource_timeout: Duration::from_secs(30 * 60),
            recreate: BTreeMap::new(),
            capture_observed: true,
            remembered: None,
            require_approval: RequireApproval::Never,
            approver: None,
        }
    }
}

/// One stack to deploy.
#[derive(Clone)]
pub struct StackInput {
    /// The stack's name and target.
    pub context: StackContext,
    /// Its template.
    pub template: Template,
    /// Parameter values beyond defaults.
    pub parameters: BTreeMap<String, Value>,
    /// Its nested stacks, by the logical id of their `AWS::CloudFormation::Stack` resource.
    pub children: BTreeMap<String, StackInput>,
    /// For a nested stack: its parent.
    pub parent: Option<ParentStack>,
}

/// Where a nested stack sits (its record's `parentStack`, `parentLogicalId`, `parentRegion`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentStack {
    /// The parent's stack name.
    pub stack: String,
    /// The logical id of the child's resource in the parent.
    pub logical_id: String,
    /// The parent's region.
    pub region: String,
}

/// A finished deploy: the record as saved, and, for consumers in the same run only, the
/// plaintext of the outputs it recorded masked.
#[derive(Debug, Clone)]
pub struct Deployed {
    /// The saved record.
    pub state: StackState,
    /// Output name → plaintext, for outputs whose recorded value is the mask.
    pub secret_outputs: Map<String, Value>,
}

/// A deploy that did not finish.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DeployFailed(pub String);

/// One stack's deploy once planned and routed: what its later phases share.
struct StackRun<'r> {
    engine: &'r Engine<'r>,
    input: &'r StackInput,
    snapshot: &'r StateSnapshot,
    options: &'r DeployOptions,
    planned: StackPlan,
    /// Where each logical id's change sits in `planned.changes`.
    change_at: BTreeMap<String, usize>,
    recorded: Option<StackState>,
    decisions: BTreeMap<String, Decision>,
    providers: Box<dyn ProviderSet + 'r>,
    ids: AccountIds,
    write_ahead: WriteAhead,
    /// Attributes the template reads, per logical id.
    needed_attributes: BTreeMap<String, Vec<String>>,
    create_only: KnownCreateOnly<'r>,
    ledger: Ledger,
    run: Mutex<RunRecord>,
    secrets: RunSecrets,
    captures: Captures,
    started: Instant,
}

impl StackRun<'_> {
    fn stack(&self) -> &str {
        &self.input.context.stack_name
    }

    fn region(&self) -> &str {
        &self.input.context.region
    }

    fn record(&self) -> std::sync::MutexGuard<'_, RunRecord> {
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Engine<'_> {
    /// Deploys one stack and returns its final record.
    pub async fn deploy(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        options: &DeployOptions,
    ) -> anyhow::Result<Deployed> {
        let started = Instant::now();
        let remembered = options.remembered.as_ref();
        if remembered.is_none_or(|r| r.is_last(input)) {
            if let Some(deployed) = self.unchanged(input, snapshot, options, started).await? {
                return Ok(deployed);
            }
        }
        let context = &input.context;
        let work = self.deploy_child(input, snapshot, options);
        let deployed = (self.locked(&context.stack_name, &context.region, "deploy", work)).await?;
        if let Some(remembered) = remembered {
            remembered.remember(input);
        }
        Ok(deployed)
    }

    /// Deploys one stack whose lock is held (its own, or its parent's for a nested stack).
    pub(crate) async fn deploy_child(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        options: &DeployOptions,
    ) -> anyhow::Result<Deployed> {
        let started = Instant::now();
        let context = &input.context;
        let (stack, region) = (context.stack_name.as_str(), context.region.as_str());

        // Plan. The journal may hold an interrupted run's intents: read it with the record.
        let (stored, journal_found) = tokio::join!(
            self.store.load(stack, region),
            self.store.read_journal(stack, region),
        );
        let (stored, journal_found) = (stored?, journal_found?);
        if stored.is_none() && journal_found.is_none() {
            self.refuse_held_by_cloudformation(stack, region).await?;
        }
        let recorded = stored.as_ref().map(|s| s.state.clone());
        let (planned, create_only) = plan_stack(
            self.registry,
            self.providers,
            input,
            snapshot,
            recorded.as_ref(),
        )
        .await?;

        // Pre-flight: every resource must have somewhere to go, before anything changes.
        ExpectedTimes::current().map_err(|err| DeployFailed(format!("stack {stack}: {err}")))?;
        let decisions = self
            .route(
                input,
                &planned,
                recorded.as_ref(),
                &options.allowed,
                &options.recreate,
            )
            .map_err(|refused| {
                DeployFailed(format!(
                    "stack {stack} cannot be deployed; nothing was changed:\n  - {}",
                    refused.join("\n  - ")
                ))
            })?;
        self.refuse_unprovisionable(input, &planned, &decisions)
            .await?;

        // Security-sensitive changes wait for approval, before anything changes.
        self.approved(stack, &planned, recorded.as_ref(), options)
            .await?;

        let plugin_types =
            plugin_types(input, &decisions, recorded.as_ref(), journal_found.as_ref());
        let providers = self
            .deploy_providers(input, snapshot, options, &plugin_types)
            .await?;
        refuse_unsnapshottable(
            stack,
            region,
            &planned,
            recorded.as_ref(),
            providers.as_ref(),
        )?;
        let ids = AccountIds {
            account: context.account.clone(),
            partition: context
                .pseudo("AWS::Partition")
                .and_then(|p| p.as_str().map(str::to_string))
                .unwrap_or_else(|| "aws".into()),
        };

        // Write-ahead: this run's creates are recorded before the first one is sent.
        let write_ahead = write_ahead::record_intents(
            self,
            input,
            providers.as_ref(),
            journal_found,
            recorded.as_ref(),
            &planned,
            &decisions,
            options,
            &ids,
        )
        .await?;

        // A first record, or one still at the legacy key, is written even when nothing changes.
        let must_write = stored
            .as_ref()
            .is_none_or(|s| s.location == crate::state::backend::StateLocation::Legacy);
        let ledger = Ledger::new(self.store.clone(), stack, region, stored);
        let _saver = ledger.start_saver();
        if must_write {
            ledger.change(|_| {});
        }
        let run = StackRun {
            engine: self,
            input,
            snapshot,
            options,
            needed_attributes: input.template.referenced_attributes(&input.parameters),
            change_at: (planned.changes.iter().enumerate())
                .map(|(at, change)| (change.logical_id.clone(), at))
                .collect(),
            planned,
            recorded,
            decisions,
            providers,
            ids,
            write_ahead,
            create_only,
            ledger,
            run: Mutex::new(RunRecord::default()),
            secrets: RunSecrets::with_no_echo(NoEcho::of(&input.template, &input.parameters)),
            captures: Captures::new(options.capture_observed),
            started,
        };
        run.run_to_end().await
    }

    /// A first deploy of a stack CloudFormation holds (one `cdkd export` handed over) would
    /// create every resource a second time: a stack without record or journal asks
    /// CloudFormation, one round trip on first deploys only. Nested records (`parent~child`)
    /// are not names CloudFormation allows, and are not asked about.
    async fn refuse_held_by_cloudformation(&self, stack: &str, region: &str) -> anyhow::Result<()> {
        if stack.contains('~') {
            return Ok(());
        }
        match self.providers.cloudformation_status(region, stack).await {
            Ok(Some(status)) => {
                return Err(DeployFailed(format!(
                    "stack {stack} has no cdkd state in {region}, but CloudFormation stack {stack} exists ({status}): it was handed to CloudFormation (cdkd export) or is managed there, and deploying it with cdkd would create its resources a second time; nothing was changed. Deploy the other stacks with --exclusively (-e), or take it back with `cdkd import {stack} --migrate-from-cloudformation`"
                ))
                .into());
            }
            Ok(None) => {}
            // Callers without cloudformation:DescribeStacks deploy as before.
            Err(err) => tracing::debug!("stack {stack}: CloudFormation not asked: {err:#}"),
        }
        Ok(())
    }

    /// Cloud Control refuses some types outright (no read handler): refused now, by name,
    /// rather than part-way. Their schemas are cached a day, so this asks once.
    async fn refuse_unprovisionable(
        &self,
        input: &StackInput,
        planned: &StackPlan,
        decisions: &BTreeMap<String, Decision>,
    ) -> anyhow::Result<()> {
        let context = &input.context;
        let (stack, region) = (context.stack_name.as_str(), context.region.as_str());
        let to_cloud_control: Vec<(&str, &str)> = planned
            .changes
            .iter()
            .filter(|c| matches!(c.action, Action::Create | Action::Update))
            .filter(|c| {
                matches!(
                    decisions.get(&c.logical_id),
                    Some(Decision::CloudControl(_))
                )
            })
            .map(|c| {
                let kind = input.template.resources[&c.logical_id].kind.as_str();
                (c.logical_id.as_str(), kind)
            })
            .collect();
        if to_cloud_control.is_empty() {
            return Ok(());
        }
        let types: BTreeSet<String> = to_cloud_control
            .iter()
            .map(|(_, t)| t.to_string())
            .collect();
        let schemas = self
            .providers
            .registry_schemas(region, types.into_iter().collect())
            .await;
        let refused = refuse_unprovisionable(to_cloud_control, &schemas);
        if !refused.is_empty() {
            return Err(DeployFailed(format!(
                "stack {stack} cannot be deployed; nothing was changed:\n  - {}",
                refused.join("\n  - ")
            ))
            .into());
        }
        Ok(())
    }

    /// The providers of `plugin_types` and Cloud Control, nested stacks included.
    async fn deploy_providers<'a>(
        &'a self,
        input: &'a StackInput,
        snapshot: &'a StateSnapshot,
        options: &'a DeployOptions,
        plugin_types: &BTreeSet<String>,
    ) -> anyhow::Result<Box<dyn ProviderSet + 'a>> {
        let region = &input.context.region;
        Ok(Box::new(WithNested {
            inner: self
                .providers
                .prepare(region, plugin_types, options.resource_timeout)
                .await?,
            nested: NestedStacks {
                engine: self,
                region: region.to_string(),
                deploys: Some(ChildDeploys {
                    children: &input.children,
                    snapshot,
                    options,
                }),
            },
        }))
    }
}

/// The plugin types of what will be routed, recorded or reconciled (an interrupted run's
/// intents).
fn plugin_types(
    input: &StackInput,
    decisions: &BTreeMap<String, Decision>,
    recorded: Option<&StackState>,
    journal: Option<&super::journal::Journal>,
) -> BTreeSet<String> {
    let pending = journal
        .map(|j| j.pending_creates.as_slice())
        .unwrap_or_default();
    let mut plugin_types: BTreeSet<String> = decisions
        .iter()
        .filter(|(_, d)| matches!(d, Decision::Plugin(_)))
        .map(|(id, _)| input.template.resources[id].kind.clone())
        .collect();
    plugin_types.extend(owner_types(
        recorded.iter().flat_map(|s| s.resources.values()),
        pending
            .iter()
            .map(|i| (i.resource_type.as_str(), i.provisioned_by)),
    ));
    plugin_types
}

impl StackRun<'_> {
    /// Runs the deploy's resource steps and settles: finished when every step succeeded, else
    /// failed (with the first failure, or as interrupted).
    async fn run_to_end(self) -> anyhow::Result<Deployed> {
        self.read_back_missing_attributes().await;
        self.queue_missing_baselines();
        let run = &self;
        // A deploy whose resources all succeeded settles (deletes, a save, the journal
        // clean-up) while the last observed-state reads are still running.
        let ((outcomes, settled), ()) = tokio::join!(
            async {
                let outcomes = run.execute().await;
                run.captures.close();
                let clean = !*run.engine.stop.borrow()
                    && !outcomes.values().any(|o| matches!(o, Outcome::Failed(_)));
                let settled = if clean {
                    Some(run.settle().await)
                } else {
                    None
                };
                (outcomes, settled)
            },
            run.capture_observed()
        );
        if let Some(settled) = settled {
            settled?;
            return run.finish().await;
        }
        let interrupted = *run.engine.stop.borrow();
        let failure = outcomes.iter().find_map(|(id, o)| match o {
            Outcome::Failed(message) => Some(format!("{id}: {message}")),
            _ => None,
        });
        let reason = failure.unwrap_or_else(|| "interrupted".into());
        Err(run.fail(&outcomes, interrupted, reason).await?.into())
    }
}

impl Engine<'_> {
    /// The stack's plan against `recorded`: resolved properties, the graph and the diff, with
    /// the create-only properties of the registry schemas of the recorded types (the shared
    /// planning path, [`plan_stack`]).
    pub(crate) async fn plan_against(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        recorded: Option<&StackState>,
    ) -> anyhow::Result<StackPlan> {
        let planned = plan_stack(self.registry, self.providers, input, snapshot, recorded).await?;
        Ok(planned.0)
    }

    /// Refuses the deploy unless its security-sensitive changes are approved, when
    /// `--require-approval`'s level asks for it.
    async fn approved(
        &self,
        stack: &str,
        planned: &StackPlan,
        recorded: Option<&StackState>,
        options: &DeployOptions,
    ) -> Result<(), DeployFailed> {
        let level = options.require_approval;
        if level == RequireApproval::Never {
            return Ok(());
        }
        let changes = SecurityChanges::of(planned, recorded);
        if !level.needed_for(&changes) {
            return Ok(());
        }
        let answer = match &options.approver {
            Some(approver) => approver.approve(stack, level, &changes).await,
            None => Err("there is no one to ask".into()),
        };
        match answer {
            Ok(true) => Ok(()),
            Ok(false) => Err(DeployFailed(format!(
                "stack {stack}: its security-sensitive changes were not approved; nothing was changed"
            ))),
            Err(why) => Err(DeployFailed(format!(
                "stack {stack} has security-sensitive changes ({}) that --require-approval {} asks to confirm, and {why}; nothing was changed. Review them with `cdkd diff {stack}`, then deploy with --require-approval never (or CDKD_REQUIRE_APPROVAL=never)",
                changes.counts(),
                level.as_str()
            ))),
        }
    }

    /// Where each planned resource goes (pre-flight routing), or every refusal.
    pub(crate) fn route(
        &self,
        input: &StackInput,
        planned: &StackPlan,
        recorded: Option<&StackState>,
        allowed: &AllowedDrops,
        recreate: &BTreeMap<String, ProvisionedBy>,
    ) -> Result<BTreeMap<String, Decision>, Vec<String>> {
        let candidates = planned.graph.order().iter().map(|id| Candidate {
            logical_id: id,
            resource_type: &input.template.resources[id].kind,
            properties: &planned.properties[id],
        });
        route_all(
            self.registry,
            &input.context.stack_name,
            candidates,
            &nested_ids(input),
            recorded,
            allowed,
            recreate,
        )
    }
}

impl StackRun<'_> {
    /// Runs every resource step in dependency order; reports what was skipped.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    async fn execute(&self) -> BTreeMap<String, Outcome> {
        // Longest pole first: each task's expected AWS time on its route, a fresh role's or
        // instance profile's with the propagation its consumers wait out.
        let expected: BTreeMap<String, Duration> = match ExpectedTimes::current() {
            Ok(table) if longest_pole_first() => {
                plan_durations(&self.planned, &self.input.template, &self.decisions, table)
                    .into_iter()
                    .map(|(id, (_, operation, time))| {
                        let kind = &self.input.template.resources[&id].kind;
                        let propagation = match operation {
                            Operation::Create => table.propagation(kind),
                            _ => Duration::ZERO,
                        };
                        (id, time + propagation)
                    })
                    .collect()
            }
            _ => BTreeMap::new(),
        };
        let tasks: Vec<Task> = self
            .planned
            .graph
            .order()
            .iter()
            .map(|id| {
                let node = self.planned.graph.node(id).expect("ordered ids are nodes");
                Task {
                    id: id.clone(),
                    dependencies: node.dependencies.clone(),
                    priority: node.priority,
                    expected: expected.get(id).copied().unwrap_or_default(),
                    lane: Some(service_of(&self.input.template.resources[id].kind)),
                }
            })
            .collect();
        let executor = Executor::in_lanes(Arc::clone(&self.options.lanes));
        let reporter = &self.engine.reporter;
        reporter.expect(self.stack(), tasks.len());
        let outcomes = executor
            .run(&tasks, &self.engine.stop, |id| async move {
                let kind = &self.input.template.resources[&id].kind;
                reporter
                    .track(self.stack(), &id, kind, self.step(&id))
                    .await
            })
            .await;
        for (id, outcome) in &outcomes {
            if let Outcome::Skipped(reason) = outcome {
                self.record().summary.skipped += 1;
                self.engine.reporter.resource(
                    self.stack(),
                    id,
                    &self.input.template.resources[id].kind,
                    &format!("skipped ({reason})"),
                    None,
                );
            }
        }
        outcomes
    }

    /// Reads back, with one `GetResource` each and all at once, the Cloud Control records that
    /// lack an attribute the template now reads (a `Fn::GetAtt` added after they were made,
    /// or a record written from a sparse model by an older cdkd).
    async fn read_back_missing_attributes(&self) {
        let needed = &self.needed_attributes;
        let stale: Vec<(String, ResourceState)> = self.ledger.read(|state| {
            state
                .resources
                .iter()
                .filter(|(id, record)| {
                    record.provisioned_by == Some(ProvisionedBy::CcApi)
                        && needed.get(*id).is_some_and(|names| {
                            let attributes = record.attributes.clone().unwrap_or_default();
                            names.iter().any(|name| !has_attribute(&attributes, name))
                        })
                })
                .map(|(id, record)| (id.clone(), record.clone()))
                .collect()
        });
        let reads = stale.iter().map(|(id, record)| async move {
            let model = self
                .providers
                .for_record(record)
                .read_current_state(ReadCall {
                    properties: &Map::new(),
                    ..ReadCall::of(id, record)
                })
                .await;
            (id, model)
        });
        for (id, model) in futures_util::future::join_all(reads).await {
            let Ok(Observation::Live(model)) = model else {
                continue;
            };
            self.ledger.change(|state| {
                if let Some(record) = state.resources.get_mut(id) {
                    let attributes = record.attributes.get_or_insert_with(Map::new);
                    for (key, value) in model {
                        attributes.entry(key).or_insert(value);
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests;

/// Pre-flight: a delete or replacement whose policy asks for a snapshot that no loaded plugin
/// can take is refused before any change.
fn refuse_unsnapshottable(
    stack: &str,
    region: &str,
    planned: &StackPlan,
    recorded: Option<&StackState>,
    providers: &dyn ProviderSet,
) -> anyhow::Result<()> {
    let refused: Vec<String> = planned
        .changes
        .iter()
        .filter_map(|change| {
            let record = recorded?.resources.get(&change.logical_id)?;
            let policy = match change.action {
                Action::Delete => record.deletion_policy.as_deref(),
                Action::Update if change.replacement => record.update_replace_policy.as_deref(),
                _ => return None,
            };
            (is_snapshot(policy) && providers.for_snapshot(&record.resource_type).is_none())
                .then(|| no_snapshot_path(&change.logical_id, &record.resource_type, false))
        })
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "stack {stack} ({region}): nothing was changed:\n  - {}",
        refused.join("\n  - ")
    )
}
