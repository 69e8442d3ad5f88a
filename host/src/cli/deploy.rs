//! `cdkd deploy`, `cdkd destroy`, `cdkd rollback` and `cdkd state destroy`.
//!
//! The first Ctrl-C or SIGTERM stops dispatching, lets calls in flight finish, saves state,
//! writes the journal and releases the lock; a second one exits 130 at once.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use cdkd_provider_api::protocol::Wait;
use clap::Args;
use serde_json::Value;

use super::app::{load_assembly, stack_target, AppArgs};
use super::approval::TerminalApprover;
use super::events::History;
use super::{confirm, CommandContext};
use crate::analyzer::security::RequireApproval;
use crate::analyzer::template::Template;
use crate::app::deploy::{initial_snapshot, warn_recreate_consumers, AssemblyInputs, RunLog};
use crate::app::destroy::{
    destroy_stacks, journaled_stacks, purge_events, recorded_destroy_order, DestroyTarget,
};
use crate::app::fallback::{read_fallbacks, Consumer};
use crate::app::{Backends, RunOrder, StackRun};
use crate::deployment::deploy::{DeployOptions, RememberedDeploys};
use crate::deployment::destroy::{DestroyOptions, RollbackOutcome};
use crate::deployment::external::StateSnapshot;
use crate::deployment::prepare::Preparation;
use crate::deployment::report::{Progress, Reporter};
use crate::provisioning::concurrency::{Concurrency, Lanes};
use crate::provisioning::router::AllowedDrops;
use crate::state::history::Operation;
use crate::synthesis::annotations;
use crate::synthesis::assembly::StackArtifact;
use crate::synthesis::selection::select;

/// Installs the Ctrl-C / SIGTERM handling and returns the stop signal.
pub(super) fn stop_signal(what: &'static str) -> tokio::sync::watch::Sender<bool> {
    let sender = tokio::sync::watch::Sender::new(false);
    let signal = sender.clone();
    tokio::spawn(async move {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let mut seen = 0;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match terminate.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending().await } } => {}
            }
            seen += 1;
            if seen == 1 {
                eprintln!("\nStopping the {what}: no new operations start; those in flight finish, state is saved and the lock released. Press Ctrl-C again to quit at once.");
                signal.send_replace(true);
            } else {
                eprintln!("\nQuitting at once. The stack lock may be left behind: it expires on its own, or run `cdkd force-unlock <stack>`.");
                std::process::exit(130);
            }
        }
    });
    sender
}

/// `--wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WaitArg {
    /// What a dependent needs to be created correctly, and no more.
    Dependents,
    /// Everything stable, as CloudFormation waits.
    Full,
    /// Each create and update accepted: no stabilization waits.
    None,
}

impl WaitArg {
    /// The mode plugins are given: `--no-wait` wins.
    fn mode(self, no_wait: bool) -> Wait {
        match (self, no_wait) {
            (_, true) | (WaitArg::None, _) => Wait::None,
            (WaitArg::Full, _) => Wait::Full,
            (WaitArg::Dependents, _) => Wait::Dependents,
        }
    }
}

/// `--progress`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressArg {
    /// A live view on a terminal, event lines otherwise.
    Auto,
    /// Event lines only.
    Events,
}

impl From<ProgressArg> for Progress {
    fn from(arg: ProgressArg) -> Progress {
        match arg {
            // In CI a live view would only fill logs with redraws.
            ProgressArg::Auto if super::in_ci() => Progress::Events,
            ProgressArg::Auto => Progress::Auto,
            ProgressArg::Events => Progress::Events,
        }
    }
}

/// `--no-cfn-fallback`, shared by `deploy` and `diff`.
#[derive(Debug, Clone, Copy, Args)]
pub struct CfnFallbackArgs {
    /// Read `Fn::GetStackOutput` and `Fn::ImportValue` values from cdkd state only: do not
    /// fall back to the outputs of a CloudFormation stack (`DescribeStacks`) or to
    /// CloudFormation's exports (`ListExports`) for a producer cdkd has no state for.
    #[arg(long)]
    pub no_cfn_fallback: bool,
}

impl CfnFallbackArgs {
    /// Reads what `consumers` (stack, template) read outside this account's cdkd state:
    /// other accounts' records and, unless turned off, the CloudFormation outputs and exports
    /// of producers that have no record and are not in this run.
    pub async fn read_into(
        &self,
        context: &CommandContext,
        snapshot: &mut StateSnapshot,
        consumers: &[(&StackArtifact, &Template)],
    ) -> anyhow::Result<()> {
        let aws = context.aws().await;
        let fallback = aws.region();
        let regions: Vec<String> = consumers
            .iter()
            .map(|(stack, _)| stack.environment.region.clone().unwrap_or(fallback.clone()))
            .collect();
        let consumers: Vec<Consumer<'_>> = (consumers.iter().zip(&regions))
            .map(|((stack, template), region)| Consumer {
                stack: &stack.stack_name,
                template,
                region,
            })
            .collect();
        read_fallbacks(
            snapshot,
            aws,
            &crate::state::keys::StateKeys::new(&context.global.state_prefix),
            &consumers,
            !self.no_cfn_fallback,
        )
        .await
    }
}

#[derive(Debug, Clone, Args)]
pub struct DeployArgs {
    /// Stacks to deploy (names or display paths, `*` wildcards; `--stack NAME` also works).
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Every stack of the app.
    #[arg(long)]
    all: bool,
    /// Only the named stacks, not their dependencies.
    #[arg(long, short = 'e')]
    exclusively: bool,
    /// The most resource operations in flight at once (default: adapt per AWS service to
    /// throttling, from 16 up to 128; with a number, start there and never exceed it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: Option<u64>,
    /// Independent stacks deployed at once (a stack waits for the stacks it depends on).
    #[arg(long, default_value_t = 4)]
    stack_concurrency: usize,
    /// Keep what succeeded when something fails (undo later with `cdkd rollback`).
    #[arg(long)]
    no_rollback: bool,
    /// Delete a resource before creating its replacement (for names that must be reused).
    #[arg(long)]
    replace: bool,
    /// Keep a resource on its plugin although the plugin drops this property (`Type:Property`).
    #[arg(long, value_name = "TYPE:PROPERTY")]
    allow_unsupported_properties: Vec<String>,
    /// Destroy this resource and create it again through Cloud Control (repeatable).
    #[arg(long, value_name = "LOGICAL_ID")]
    recreate_via_cc_api: Vec<String>,
    /// Destroy this resource and create it again through its SDK provider plugin (repeatable).
    #[arg(long, value_name = "LOGICAL_ID")]
    recreate_via_sdk_provider: Vec<String>,
    /// A template parameter value, `Name=Value` (repeatable).
    #[arg(long = "parameters", value_name = "NAME=VALUE")]
    parameters: Vec<String>,
    /// Do not publish the app's file and image assets: they are in the asset bucket and
    /// repository already (`cdkd publish-assets` in an earlier step).
    #[arg(long)]
    skip_assets: bool,
    /// The longest one resource operation may take, in seconds (default: 1800, and 3600 for a
    /// custom resource's handler, CloudFormation's limits).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    resource_timeout: Option<u64>,
    /// What creates and updates wait for: `dependents` (what the resources that depend on them
    /// need, the default), `full` (every resource stable, as CloudFormation waits: a
    /// distribution deployed, a load balancer active, a service's tasks running) or `none`.
    #[arg(long, value_enum, default_value_t = WaitArg::Dependents)]
    wait: WaitArg,
    /// The same as `--wait none`: each create and update answers once AWS accepted it.
    #[arg(long, conflicts_with = "wait")]
    no_wait: bool,
    /// Do not read resources back as their drift baseline (`observedProperties`) after
    /// creates and updates, nor fill in records that lack one.
    #[arg(long)]
    no_capture_observed_state: bool,
    /// How progress shows: `auto` (a live view on a terminal, event lines otherwise) or
    /// `events` (event lines only).
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    progress: ProgressArg,
    /// Print one JSON object per event.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    cfn_fallback: CfnFallbackArgs,
    /// Write the deployed stacks' outputs to this JSON file (`{stack: {output: value}}`, as
    /// `cdk deploy --outputs-file`).
    #[arg(long, short = 'O', value_name = "FILE")]
    outputs_file: Option<std::path::PathBuf>,
    /// Refuse stacks with synthesis warnings too, not only errors.
    #[arg(long)]
    strict: bool,
    /// Deploy stacks despite synthesis errors.
    #[arg(long)]
    ignore_errors: bool,
    /// When to ask before deploying security-sensitive changes: `never`, `any-change` (any
    /// IAM statement, managed policy or security-group rule added or removed) or `broadening`
    /// (one added). Without a terminal to ask on, such a deploy is refused.
    #[arg(
        long,
        value_name = "LEVEL",
        env = "CDKD_REQUIRE_APPROVAL",
        default_value = "broadening"
    )]
    require_approval: RequireApproval,
}

pub(super) fn parameters(items: &[String]) -> anyhow::Result<BTreeMap<String, Value>> {
    items
        .iter()
        .map(|item| {
            item.split_once('=')
                .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                .ok_or_else(|| anyhow::anyhow!("--parameters {item}: write Name=Value"))
        })
        .collect()
}

impl DeployArgs {
    /// The cloud assembly folder `-a` names, if it names one (not a command).
    pub(super) fn app_folder(&self) -> Option<std::path::PathBuf> {
        let app = self.app.app.as_deref()?;
        let path = std::path::Path::new(app);
        path.is_dir().then(|| path.to_path_buf())
    }
}

pub async fn deploy(context: &CommandContext, args: DeployArgs) -> anyhow::Result<ExitCode> {
    deploy_until(context, args, stop_signal("deploy")).await
}

/// `cdkd deploy` stopped by `stop` (Ctrl-C: the command's own, or `cdkd watch`'s).
pub(super) async fn deploy_until(
    context: &CommandContext,
    args: DeployArgs,
    stop: tokio::sync::watch::Sender<bool>,
) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    let stacks = select(&assembly, &args.stacks, args.all, args.exclusively)?;
    let (shown, refusal) = annotations::check(
        &stacks,
        annotations::Strictness {
            strict: args.strict,
            ignore_errors: args.ignore_errors,
        },
    );
    for line in shown {
        eprintln!("{line}");
    }
    if let Some(refusal) = refusal {
        anyhow::bail!("{refusal}");
    }
    let registry = context.registry()?;
    registry.warn_about_failures();
    let ref_values = std::sync::Arc::new(registry.ref_values());
    // Independent start-up calls at once: the state bucket's region and the caller's account.
    let needs_account = stacks.iter().any(|s| s.environment.account.is_none());
    let (store, account) = tokio::join!(context.state(), async {
        if needs_account {
            context.account().await.map(Some)
        } else {
            Ok(None)
        }
    });
    let store = store?;
    account?;
    registry.set_state_bucket(&store.bucket.name, &store.region());
    if let Some(seconds) = args.resource_timeout {
        registry.set_resource_timeout(seconds);
    }
    registry.set_wait(args.wait.mode(args.no_wait));
    // Stacks that read each other's values run in order; other stacks' records are read only
    // when some template reads another stack.
    let aws = context.aws().await;
    let order = RunOrder::read(&stacks, &aws.region())?;
    let mut snapshot = initial_snapshot(&store.backend, &order).await?;
    if order.cross_stack() {
        // A producer cdkd has no record of (e.g. exported to CloudFormation) and that this run
        // does not deploy: its outputs are read from CloudFormation, once, before the run.
        let consumers: Vec<_> = (stacks.iter())
            .map(|stack| (*stack, &order.templates[&stack.id]))
            .collect();
        args.cfn_fallback
            .read_into(context, &mut snapshot, &consumers)
            .await?;
    }
    let options = deploy_options(&args, aws, &store.bucket.name)?;
    if !options.recreate.is_empty() {
        warn_recreate_consumers(&store.backend, &order, &options.recreate).await?;
    }
    let parameters = parameters(&args.parameters)?;
    let mut targets = BTreeMap::new();
    for stack in &stacks {
        targets.insert(stack.id.clone(), stack_target(context, stack).await?);
    }
    let backends = Backends::new(&registry, aws, &store);
    let engine = backends.engine(
        Reporter::new(args.json, args.progress.into()).recording(),
        stop,
    );
    let history = History::start(context, &store.backend, &engine.reporter).await;
    let inputs = AssemblyInputs {
        assembly: &assembly,
        preparation: Preparation {
            assembly: &assembly,
            registry: &registry,
            aws,
            store: Some(&store),
            ref_values,
            parameters: &parameters,
            publish_assets: !args.skip_assets,
        },
        targets,
    };
    let run = StackRun {
        engine: &engine,
        options: &options,
        stack_concurrency: args.stack_concurrency,
        inputs: &inputs,
        log: &history,
    };
    let result = run.deploy(&order, snapshot).await;
    // What did deploy is written even when another stack failed, as the CDK CLI does.
    if let Some(file) = &args.outputs_file {
        let outputs = Value::Object(result.outputs);
        std::fs::write(file, serde_json::to_string_pretty(&outputs)? + "\n")
            .with_context(|| format!("writing the outputs file {}", file.display()))?;
    }
    if !result.failures.is_empty() {
        anyhow::bail!("{}", result.failures.join("\n"));
    }
    Ok(ExitCode::SUCCESS)
}

/// The engine's options for every stack of the deploy.
fn deploy_options(
    args: &DeployArgs,
    aws: &crate::aws_env::AwsEnvironment,
    bucket: &str,
) -> anyhow::Result<DeployOptions> {
    Ok(DeployOptions {
        lanes: Lanes::new(Concurrency::from_flag(args.concurrency.map(|n| n as usize))),
        rollback: !args.no_rollback,
        allowed: AllowedDrops::parse(&args.allow_unsupported_properties)
            .map_err(anyhow::Error::msg)?,
        replace_first: args.replace,
        resource_timeout: std::time::Duration::from_secs(args.resource_timeout.unwrap_or(1800)),
        recreate: args
            .recreate_via_cc_api
            .iter()
            .map(|id| (id.clone(), crate::state::schema::ProvisionedBy::CcApi))
            .chain(
                args.recreate_via_sdk_provider
                    .iter()
                    .map(|id| (id.clone(), crate::state::schema::ProvisionedBy::Sdk)),
            )
            .collect(),
        capture_observed: !args.no_capture_observed_state,
        remembered: Some(RememberedDeploys::for_bucket(aws, bucket)),
        require_approval: args.require_approval,
        approver: Some(std::sync::Arc::new(TerminalApprover::default())),
    })
}

#[async_trait::async_trait(?Send)]
impl RunLog for History {
    async fn finished(
        &self,
        operation: Operation,
        stack: &str,
        region: &str,
        started: Instant,
        failure: Option<&str>,
    ) {
        self.record(operation, stack, region, started, failure)
            .await;
    }
}

#[derive(Debug, Args)]
pub struct DestroyArgs {
    /// Stacks to destroy (names or display paths, `*` wildcards; `--stack NAME` also works).
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Every stack of the app.
    #[arg(long)]
    all: bool,
    /// Only the named stacks (as `cdk destroy -e`): what destroy always does, it never adds
    /// the stacks they depend on.
    #[arg(long, short = 'e')]
    exclusively: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'f')]
    force: bool,
    /// The most deletions in flight at once (default: adapt per AWS service to throttling,
    /// from 16 up to 128; with a number, start there and never exceed it).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: Option<u64>,
    /// Delete `DeletionPolicy: Snapshot` resources without taking their final snapshot.
    #[arg(long)]
    skip_final_snapshot: bool,
    /// How progress shows: `auto` (a live view on a terminal, event lines otherwise) or
    /// `events` (event lines only).
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    progress: ProgressArg,
    /// Print one JSON object per event.
    #[arg(long)]
    json: bool,
    /// Once every stack is destroyed, delete their event history too (`cdkd events`), this
    /// destroy's own event included.
    #[arg(long)]
    purge_events: bool,
}

pub async fn destroy(context: &CommandContext, args: DestroyArgs) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    // Only the named stacks, `-e` or not; consumers (by dependency or by reading values)
    // before producers.
    tracing::debug!(
        exclusively = args.exclusively,
        "destroy takes only the named stacks"
    );
    let selected = select(&assembly, &args.stacks, args.all, true)?;
    let order = RunOrder::read(&selected, &context.aws().await.region())?;
    let stacks: Vec<&StackArtifact> = (order.destroy_order().iter())
        .filter_map(|id| assembly.stack(id))
        .collect();
    let names: Vec<&str> = stacks.iter().map(|s| s.stack_name.as_str()).collect();
    if !confirm(
        &format!(
            "Destroy {} and every resource they contain?",
            names.join(", ")
        ),
        args.force || context.assume_yes(),
    )? {
        println!("Nothing destroyed.");
        return Ok(ExitCode::SUCCESS);
    }
    let registry = context.registry()?;
    registry.warn_about_failures();
    let store = context.state().await?;
    registry.set_state_bucket(&store.bucket.name, &store.region());
    let backends = Backends::new(&registry, context.aws().await, &store);
    let engine = backends.engine(
        Reporter::new(args.json, args.progress.into()).recording(),
        stop_signal("destroy"),
    );
    let history = History::start(context, &store.backend, &engine.reporter).await;
    let remembered = RememberedDeploys::for_bucket(context.aws().await, &store.bucket.name);
    let mut targets = Vec::new();
    for stack in stacks {
        let (_, region) = stack_target(context, stack).await?;
        let policies: BTreeMap<String, String> = order.templates[&stack.id]
            .resources
            .iter()
            .filter_map(|(id, r)| r.deletion_policy.clone().map(|p| (id.clone(), p)))
            .collect();
        targets.push(DestroyTarget {
            stack: stack.stack_name.clone(),
            region,
            policies,
        });
    }
    // One set of lanes for the run: throttling learnt on one stack holds for the next.
    let options = DestroyOptions {
        lanes: Lanes::new(Concurrency::from_flag(args.concurrency.map(|n| n as usize))),
        skip_final_snapshot: args.skip_final_snapshot,
    };
    let destroyed: Vec<(String, String)> = targets
        .iter()
        .map(|t| (t.stack.clone(), t.region.clone()))
        .collect();
    destroy_stacks(
        &engine,
        &store.backend,
        targets,
        options,
        Some(&remembered),
        &history,
    )
    .await?;
    if args.purge_events {
        let purged = purge_events(&store.backend, &destroyed).await?;
        println!("Purged {purged} event(s) of {}.", names.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct StateDestroyArgs {
    /// The stacks to destroy (their state records name everything).
    stacks: Vec<String>,
    /// Delete `DeletionPolicy: Snapshot` resources without taking their final snapshot.
    #[arg(long)]
    skip_final_snapshot: bool,
    /// Every stack with a record.
    #[arg(long)]
    all: bool,
    /// The stacks' region, when a stack has records in several.
    #[arg(long, value_name = "REGION")]
    stack_region: Option<String>,
    /// Do not ask for confirmation.
    #[arg(long, short = 'f')]
    force: bool,
    /// How progress shows: `auto` (a live view on a terminal, event lines otherwise) or
    /// `events` (event lines only).
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    progress: ProgressArg,
    /// Print one JSON object per event.
    #[arg(long)]
    json: bool,
}

pub async fn state_destroy(
    context: &CommandContext,
    args: StateDestroyArgs,
) -> anyhow::Result<ExitCode> {
    let registry = context.registry()?;
    registry.warn_about_failures();
    let store = context.state().await?;
    registry.set_state_bucket(&store.bucket.name, &store.region());
    let fallback = context.aws().await.region();
    let mut targets: Vec<(String, String)> = Vec::new();
    if args.all {
        // Consumers first: a stack importing from another goes before it.
        targets = recorded_destroy_order(&StateSnapshot::load(&store.backend).await?);
    } else {
        for stack in &args.stacks {
            targets.push((
                stack.clone(),
                store
                    .stack_region(stack, args.stack_region.as_deref(), &fallback)
                    .await?,
            ));
        }
    }
    if targets.is_empty() {
        anyhow::bail!("name the stacks to destroy, or pass --all");
    }
    let names: Vec<String> = targets.iter().map(|(s, r)| format!("{s} ({r})")).collect();
    if !confirm(
        &format!(
            "Destroy {} and every resource they contain?",
            names.join(", ")
        ),
        args.force || context.assume_yes(),
    )? {
        println!("Nothing destroyed.");
        return Ok(ExitCode::SUCCESS);
    }
    let backends = Backends::new(&registry, context.aws().await, &store);
    let engine = backends.engine(
        Reporter::new(args.json, args.progress.into()).recording(),
        stop_signal("destroy"),
    );
    let history = History::start(context, &store.backend, &engine.reporter).await;
    for (stack, region) in targets {
        // Each stack reads the records afresh, with its own lanes, and no template: its
        // record names everything.
        let target = DestroyTarget {
            stack,
            region,
            policies: BTreeMap::new(),
        };
        let options = DestroyOptions {
            skip_final_snapshot: args.skip_final_snapshot,
            ..DestroyOptions::default()
        };
        destroy_stacks(
            &engine,
            &store.backend,
            vec![target],
            options,
            None,
            &history,
        )
        .await?;
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct RollbackArgs {
    /// The stack whose last failed deploy to undo (default: the only one with a journal).
    stack: Option<String>,
    /// Every stack with a rollback journal (in the region, with --stack-region).
    #[arg(long)]
    all: bool,
    /// The stack's region.
    #[arg(long, value_name = "REGION")]
    stack_region: Option<String>,
    /// Also revert the operations that failed (re-apply their previous properties).
    #[arg(long)]
    revert_failed: bool,
    /// Forget this resource instead of reverting it (repeatable).
    #[arg(long, value_name = "LOGICAL_ID")]
    orphan: Vec<String>,
    /// How progress shows: `auto` (a live view on a terminal, event lines otherwise) or
    /// `events` (event lines only).
    #[arg(long, value_enum, default_value_t = ProgressArg::Auto)]
    progress: ProgressArg,
    /// Print one JSON object per event.
    #[arg(long)]
    json: bool,
}

pub async fn rollback(context: &CommandContext, args: RollbackArgs) -> anyhow::Result<ExitCode> {
    let registry = context.registry()?;
    let store = context.state().await?;
    registry.set_state_bucket(&store.bucket.name, &store.region());
    let fallback = context.aws().await.region();
    let targets: Vec<(String, String)> = match &args.stack {
        Some(_) if args.all => anyhow::bail!("name a stack or give --all, not both"),
        Some(stack) => vec![(
            stack.clone(),
            store
                .stack_region(stack, args.stack_region.as_deref(), &fallback)
                .await?,
        )],
        None => {
            let journaled = journaled_stacks(&store.backend, args.stack_region.as_deref()).await?;
            match journaled.len() {
                0 => anyhow::bail!("no stack has a rollback journal; nothing to roll back"),
                1 => journaled,
                _ if args.all => journaled,
                _ => anyhow::bail!(
                    "several stacks have rollback journals ({}); name one, or roll them all back with --all",
                    journaled
                        .iter()
                        .map(|(s, r)| format!("{s} ({r})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
    };
    let backends = Backends::new(&registry, context.aws().await, &store);
    let engine = backends.engine(
        Reporter::new(args.json, args.progress.into()).recording(),
        stop_signal("rollback"),
    );
    let history = History::start(context, &store.backend, &engine.reporter).await;
    let mut code = ExitCode::SUCCESS;
    let mut failures = Vec::new();
    // One stack after another: each holds its own lock, and a failure leaves the others to go.
    for (stack, region) in targets {
        let started = Instant::now();
        let result = engine
            .rollback(&stack, &region, args.revert_failed, &args.orphan)
            .await;
        let failure = match &result {
            Err(err) => Some(format!("{err:#}")),
            Ok(RollbackOutcome::Partial) => {
                Some("partial: what could not be undone stays in the journal".to_string())
            }
            Ok(_) => None,
        };
        if !matches!(result, Ok(RollbackOutcome::Nothing)) {
            history
                .record(
                    Operation::Rollback,
                    &stack,
                    &region,
                    started,
                    failure.as_deref(),
                )
                .await;
        }
        match result {
            Ok(RollbackOutcome::Clean) => println!("Rolled back {stack} ({region})."),
            Ok(RollbackOutcome::Nothing) => {}
            Ok(RollbackOutcome::Partial) => {
                eprintln!("The rollback of {stack} ({region}) is partial: what could not be undone stays in the journal; fix the cause and run `cdkd rollback {stack}` again.");
                code = ExitCode::from(2);
            }
            Err(err) => failures.push(format!("{stack} ({region}): {err:#}")),
        }
    }
    if !failures.is_empty() {
        anyhow::bail!("{}", failures.join("\n"));
    }
    Ok(code)
}
