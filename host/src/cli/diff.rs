//! `cdkd diff [stacks] [--all] [--json] [--fail] [--critical-path]`: the app's stacks against
//! their state.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};

use super::app::{load_assembly, stack_target, AppArgs};
use super::CommandContext;
use crate::analyzer::diff::{Action, ResourceChange};
use crate::analyzer::intrinsics::{contains_unknown, is_unknown};
use crate::analyzer::plan::StackPlan;
use crate::analyzer::security::SecurityChanges;
use crate::analyzer::template::Template;
use crate::deployment::expected_time::{routed_critical_path, CriticalPath, ExpectedTimes, Route};
use crate::deployment::external::StateSnapshot;
use crate::deployment::planning::{plan_tree, PlannedTree};
use crate::deployment::prepare::Preparation;
use crate::provisioning::providers::LiveProviders;
use crate::state::StateError;
use crate::synthesis::selection::select;

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Stacks to compare (names or display paths, `*` wildcards; `--stack NAME` also works).
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Every stack of the app.
    #[arg(long)]
    all: bool,
    /// Print a JSON document instead.
    #[arg(long)]
    json: bool,
    /// Exit with code 1 when there are changes.
    #[arg(long)]
    fail: bool,
    /// Only the named stacks, not their dependencies.
    #[arg(long, short = 'e')]
    exclusively: bool,
    /// A template parameter value, `Name=Value` (repeatable), as `cdkd deploy` takes it.
    #[arg(long = "parameters", value_name = "NAME=VALUE")]
    parameters: Vec<String>,
    #[command(flatten)]
    cfn_fallback: super::deploy::CfnFallbackArgs,
    /// Also the plan's critical path: the longest chain of dependent operations by expected AWS
    /// time, each on its route (plugin or Cloud Control).
    #[arg(long)]
    critical_path: bool,
}

/// Prints a stack's critical path (`--critical-path`).
fn print_critical_path(path: &CriticalPath) {
    let seconds = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
    println!(
        "Critical path (expected AWS time): {}",
        seconds(path.total_ms)
    );
    let own = |after: bool| {
        for call in path.own_calls.iter().filter(|c| c.after == after) {
            println!("  {:>8}  ({})", seconds(call.expected_ms), call.what);
        }
    };
    own(false);
    for step in &path.steps {
        let route = match step.route {
            Route::Sdk => "plugin",
            Route::CloudControl => "Cloud Control",
        };
        let operation = format!("{:?}", step.operation).to_lowercase();
        if step.settle_ms > 0 {
            println!(
                "  {:>8}  (what {} uses settling: IAM propagation, a function Active)",
                seconds(step.settle_ms),
                step.logical_id
            );
        }
        println!(
            "  {:>8}  {} ({}) {operation} via {route}",
            seconds(step.expected_ms),
            step.logical_id,
            step.resource_type
        );
    }
    own(true);
    println!();
}

struct Palette {
    on: bool,
}

impl Palette {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

fn show(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".into(),
        Some(v) if is_unknown(v) => "(known after deploy)".into(),
        Some(v) if contains_unknown(v) => format!("{} (parts known after deploy)", render(v)),
        Some(v) => render(v),
    }
}

fn render(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Prints a stack's changes, then those of the nested stacks its deploy would deploy.
fn print_tree(title: &str, tree: &PlannedTree, palette: &Palette) {
    print_stack(title, &tree.region, &tree.plan, &tree.security, palette);
    for (logical_id, child) in &tree.nested {
        print_tree(
            &format!("{title} > nested stack {logical_id}"),
            child,
            palette,
        );
    }
}

fn print_stack(
    name: &str,
    region: &str,
    plan: &StackPlan,
    security: &SecurityChanges,
    palette: &Palette,
) {
    println!("Stack {name} ({region})");
    let changes: Vec<&ResourceChange> = plan
        .changes
        .iter()
        .filter(|c| c.action != Action::NoChange)
        .collect();
    if changes.is_empty() {
        println!("There were no differences");
        println!();
        return;
    }
    // As the CDK CLI: what widens or narrows access first, then the resources.
    if !security.is_empty() {
        print!("{}", super::approval::tables(security));
    }
    println!("Resources");
    for change in changes {
        let (mark, note) = match change.action {
            Action::Create => (palette.paint("32", "[+]"), String::new()),
            Action::Delete => (
                palette.paint("31", "[-]"),
                palette.paint("31", " (destroy)"),
            ),
            Action::Update if change.replacement => (
                palette.paint("33", "[~]"),
                palette.paint("31", " (replace)"),
            ),
            Action::Update if change.policies_only => (
                palette.paint("33", "[~]"),
                " (policy only, no AWS call)".to_string(),
            ),
            _ => (palette.paint("33", "[~]"), String::new()),
        };
        println!(
            "{mark} {} {}{note}",
            change.resource_type, change.logical_id
        );
        if change.action != Action::Update {
            continue;
        }
        let count = change.properties.len();
        for (index, property) in change.properties.iter().enumerate() {
            let branch = if index + 1 == count {
                " └─"
            } else {
                " ├─"
            };
            let stem = if index + 1 == count { "    " } else { " │  " };
            let replace = if property.create_only {
                palette.paint("31", " (requires replacement)")
            } else {
                String::new()
            };
            println!("{branch} [~] {}{replace}", property.name);
            println!(
                "{stem} ├─ {} {}",
                palette.paint("31", "[-]"),
                show(property.before.as_ref())
            );
            println!(
                "{stem} └─ {} {}",
                palette.paint("32", "[+]"),
                show(property.after.as_ref())
            );
        }
    }
    let (create, update, delete, same) = plan.summary();
    let replaced = plan.changes.iter().filter(|c| c.replacement).count();
    println!();
    println!("{create} to create, {update} to update ({replaced} replaced), {delete} to delete, {same} unchanged");
    println!();
}

fn stack_json(tree: &PlannedTree) -> Value {
    let plan = &tree.plan;
    let (create, update, delete, same) = plan.summary();
    let nested: Vec<Value> = (tree.nested.iter())
        .map(|(logical_id, child)| {
            let mut document = stack_json(child);
            document["logicalId"] = json!(logical_id);
            document
        })
        .collect();
    json!({
        "stackName": tree.stack_name,
        "region": tree.region,
        "changes": plan.changes,
        "summary": {"create": create, "update": update, "delete": delete, "noChange": same},
        "hasChanges": tree.has_changes(),
        "nested": nested,
    })
}

pub async fn run(context: &CommandContext, args: DiffArgs) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    let stacks = select(&assembly, &args.stacks, args.all, args.exclusively)?;
    let registry = context.registry()?;
    registry.warn_about_failures();
    let store = match context.state().await {
        Ok(store) => Some(store),
        Err(err)
            if matches!(
                err.downcast_ref::<StateError>(),
                Some(StateError::NoBucket { .. })
            ) =>
        {
            tracing::warn!("{err}; comparing against empty state");
            None
        }
        Err(err) => return Err(err),
    };
    if let Some(store) = &store {
        registry.set_state_bucket(&store.bucket.name, &store.region());
    }
    let mut snapshot = match &store {
        Some(store) => StateSnapshot::load(&store.backend).await?,
        None => StateSnapshot::default(),
    };
    snapshot.pending = stacks.iter().map(|s| s.stack_name.clone()).collect();
    // Producers outside the selection that cdkd has no record of: from CloudFormation.
    let templates = (stacks.iter())
        .map(|stack| {
            Template::parse(&stack.template()?)
                .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))
        })
        .collect::<anyhow::Result<Vec<Template>>>()?;
    if templates.iter().any(|t| !t.stack_reads().is_empty()) {
        let consumers: Vec<_> = stacks.iter().copied().zip(&templates).collect();
        args.cfn_fallback
            .read_into(context, &mut snapshot, &consumers)
            .await?;
    }
    let parameters = super::deploy::parameters(&args.parameters)?;
    // Deploy's own preparation, with nothing published: the same asset locations, parameter
    // values (SSM-typed ones read), nested templates and availability zones.
    let preparation = Preparation {
        assembly: &assembly,
        registry: &registry,
        aws: context.aws().await,
        store: store.as_ref(),
        ref_values: std::sync::Arc::new(registry.ref_values()),
        parameters: &parameters,
        publish_assets: false,
    };
    let live = LiveProviders {
        registry: &registry,
        aws: context.aws().await,
    };
    let palette = Palette {
        on: std::io::stdout().is_terminal() && !args.json,
    };
    let mut documents = Vec::new();
    let mut any_change = false;
    for (stack, template) in stacks.into_iter().zip(templates) {
        let (account, region) = stack_target(context, stack).await?;
        // Fail closed: comparing against a record it cannot read would plan "create everything".
        if let Some(reason) = snapshot.unreadable(&stack.stack_name, &region) {
            anyhow::bail!(
                "stack {} ({region}): its state record cannot be read, so there is nothing to compare against: {reason}; upgrade cdkd or repair the record",
                stack.display_name
            );
        }
        let input = preparation
            .planned_input(stack, template, account, region)
            .await?;
        let tree = plan_tree(&registry, &live, &input, &snapshot).await?;
        any_change |= tree.has_changes();
        let critical = if args.critical_path {
            let table = ExpectedTimes::current().map_err(|err| anyhow::anyhow!(err))?;
            let recorded = snapshot.record(&tree.stack_name, &tree.region);
            let nested = input.children.keys().cloned().collect();
            Some(routed_critical_path(
                &registry,
                &tree.stack_name,
                &tree.plan,
                &input.template,
                &nested,
                recorded,
                table,
            ))
        } else {
            None
        };
        if args.json {
            let mut document = stack_json(&tree);
            if let Some(path) = &critical {
                document["criticalPath"] = serde_json::to_value(path)?;
            }
            documents.push(document);
        } else {
            print_tree(&stack.display_name, &tree, &palette);
            critical.iter().for_each(print_critical_path);
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"stacks": documents, "hasChanges": any_change}))?
        );
    }
    Ok(if args.fail && any_change {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
