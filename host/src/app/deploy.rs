//! Deploying several stacks: each waits for the stacks it depends on or reads from, at most
//! `--stack-concurrency` at once, a failed stack's consumers are not started, and every stack
//! sees the records (and in-memory secret outputs) its producers left in the run's one shared
//! state snapshot.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value};

use super::order::RunOrder;
use crate::analyzer::template::Template;
use crate::deployment::deploy::{DeployOptions, StackInput};
use crate::deployment::engine::Engine;
use crate::deployment::executor::{Executor, Outcome, Task};
use crate::deployment::external::{self, StateSnapshot};
use crate::deployment::prepare::Preparation;
use crate::state::backend::StateBackend;
use crate::state::history::Operation;
use crate::state::schema::ProvisionedBy;
use crate::synthesis::assembly::CloudAssembly;

fn guard<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where each stack's engine input comes from.
#[async_trait(?Send)]
pub trait StackInputs {
    /// The input of stack `id` (its artifact id) from its parsed `template`.
    async fn input(&self, id: &str, template: Template) -> anyhow::Result<StackInput>;
}

/// Where each stack's operation is written down once it ends (the events history).
#[async_trait(?Send)]
pub trait RunLog {
    /// `operation` on `stack` in `region`, begun at `started`, ended now with `failure` (if
    /// any).
    async fn finished(
        &self,
        operation: Operation,
        stack: &str,
        region: &str,
        started: Instant,
        failure: Option<&str>,
    );
}

/// A log that keeps nothing.
pub struct NoLog;

#[async_trait(?Send)]
impl RunLog for NoLog {
    async fn finished(&self, _: Operation, _: &str, _: &str, _: Instant, _: Option<&str>) {}
}

/// The app's stacks prepared for the engine: assets published, parameters and nested
/// templates read, each deployed to its target account and region.
pub struct AssemblyInputs<'a> {
    /// The app.
    pub assembly: &'a CloudAssembly,
    /// What preparing a stack needs.
    pub preparation: Preparation<'a>,
    /// Each stack's account and region, by artifact id.
    pub targets: BTreeMap<String, (String, String)>,
}

#[async_trait(?Send)]
impl StackInputs for AssemblyInputs<'_> {
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    async fn input(&self, id: &str, template: Template) -> anyhow::Result<StackInput> {
        let stack = (self.assembly.stack(id)).expect("selected stacks are in the assembly");
        let (account, region) = self.targets[id].clone();
        self.preparation
            .stack_input(stack, template, account, region)
            .await
    }
}

/// A multi-stack deploy.
pub struct StackRun<'a> {
    /// The engine every stack deploys with.
    pub engine: &'a Engine<'a>,
    /// The options of every stack's deploy.
    pub options: &'a DeployOptions,
    /// The most stacks deploying at once (at least one).
    pub stack_concurrency: usize,
    /// Each stack's input.
    pub inputs: &'a dyn StackInputs,
    /// Where each stack's deploy is written down.
    pub log: &'a dyn RunLog,
}

/// How a multi-stack deploy ended.
#[derive(Debug, Default)]
pub struct RunResult {
    /// One message per stack that failed or was not deployed, in artifact-id order.
    pub failures: Vec<String>,
    /// The deployed stacks' outputs under their template names: `{stack: {output: value}}`.
    pub outputs: Map<String, Value>,
}

impl StackRun<'_> {
    /// Deploys the stacks of `order`, starting from `snapshot` (the records the run's reads
    /// need): every stack waits for what it waits for, and sees what its producers recorded.
    pub async fn deploy(&self, order: &RunOrder, snapshot: StateSnapshot) -> RunResult {
        let tasks: Vec<Task> = (order.ids.iter())
            .map(|id| Task {
                id: id.clone(),
                dependencies: order.waits[id].clone(),
                priority: 0,
                expected: Duration::ZERO,
                lane: None,
            })
            .collect();
        let snapshot = Mutex::new(snapshot);
        let outputs = Mutex::new(Map::new());
        let work = |id: String| {
            let (snapshot, outputs) = (&snapshot, &outputs);
            let template = order.templates[&id].clone();
            async move {
                let run = async {
                    let input = self.inputs.input(&id, template).await?;
                    // Producers this stack reads from finished before it started.
                    let view = guard(snapshot).clone();
                    let started = Instant::now();
                    let result = self.engine.deploy(&input, &view, self.options).await;
                    let failure = result.as_ref().err().map(|err| format!("{err:#}"));
                    self.log
                        .finished(
                            Operation::Deploy,
                            &input.context.stack_name,
                            &input.context.region,
                            started,
                            failure.as_deref(),
                        )
                        .await;
                    let deployed = result?;
                    let mut shared = guard(snapshot);
                    shared.keep_secret_outputs(
                        &input.context.stack_name,
                        &input.context.region,
                        deployed.secret_outputs,
                    );
                    guard(outputs).insert(
                        input.context.stack_name.clone(),
                        Value::Object(template_outputs(&input.template, &deployed.state.outputs)),
                    );
                    shared.update(deployed.state);
                    anyhow::Ok(())
                };
                run.await.map_err(|err| format!("{err:#}"))
            }
        };
        let outcomes = Executor::fixed(self.stack_concurrency.max(1))
            .run(&tasks, &self.engine.stop, work)
            .await;
        let failures = (outcomes.into_iter())
            .filter_map(|(id, outcome)| match outcome {
                Outcome::Done => None,
                Outcome::Failed(message) => Some(message),
                Outcome::Skipped(reason) => Some(format!("{id} was not deployed ({reason})")),
            })
            .collect();
        RunResult {
            failures,
            outputs: outputs.into_inner().unwrap_or_else(|e| e.into_inner()),
        }
    }
}

/// A stack's recorded outputs under the template's output names (the record also holds the
/// values under their export names).
fn template_outputs(template: &Template, recorded: &Map<String, Value>) -> Map<String, Value> {
    template
        .outputs
        .keys()
        .filter_map(|name| Some((name.clone(), recorded.get(name)?.clone())))
        .collect()
}

/// The records a run's reads need: none when no stack reads another; only the records the
/// templates name (an export's producer through the exports index), unless a read cannot be
/// followed that way.
pub async fn initial_snapshot(
    backend: &StateBackend,
    order: &RunOrder,
) -> anyhow::Result<StateSnapshot> {
    if !order.cross_stack() {
        return Ok(StateSnapshot::default());
    }
    if (order.templates.values()).any(external::needs_every_record) {
        Ok(StateSnapshot::load(backend).await?)
    } else {
        Ok(StateSnapshot::load_for(backend, order.stack_reads()).await?)
    }
}

/// Warns, before `--recreate-via-cc-api` / `--recreate-via-sdk-provider` re-creates a
/// resource under a new physical id, which downstream stacks read the stack's outputs (their
/// `imports` and `outputReads`): they keep the old values until they are deployed again.
pub async fn warn_recreate_consumers(
    backend: &StateBackend,
    order: &RunOrder,
    recreate: &BTreeMap<String, ProvisionedBy>,
) -> anyhow::Result<()> {
    let records = StateSnapshot::load(backend).await?;
    for id in &order.ids {
        let template = &order.templates[id];
        let ids: Vec<&str> = (recreate.keys())
            .filter(|id| template.resources.contains_key(*id))
            .map(String::as_str)
            .collect();
        if ids.is_empty() {
            continue;
        }
        let (stack, region) = (&order.names[id], &order.regions[id]);
        let rows = external::downstream_consumers(&records, stack, region);
        if !rows.is_empty() {
            tracing::warn!(
                "re-creating {} in {stack} ({region}) gives it a new physical id; these downstream stacks read {stack}'s outputs and keep the old values until they are deployed again:\n  - {}\nRe-deploy them after this deploy.",
                ids.join(", "),
                rows.join("\n  - ")
            );
        }
    }
    Ok(())
}
