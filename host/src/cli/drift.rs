//! `cdkd drift [stacks] [--all] [--accept | --revert] [--json]`: compares what AWS holds with
//! each recorded resource's baseline, from state alone (no synthesis).
//!
//! Exit codes: 0 nothing drifted, 1 drift found (a changed or deleted resource), 2 nothing
//! drifted but something could not be compared. `--accept` and `--revert` exit 0 when they
//! did what they could and 2 when some resource could not be reverted.

use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Value};

use super::table;
use super::{confirm, CommandContext};
use crate::app::Backends;
use crate::deployment::drift::{DriftStatus, Reverted, StackDrift};
use crate::deployment::engine::Engine;
use crate::deployment::report::Reporter;
use crate::state::store::StateStore;

#[derive(Debug, Args)]
pub struct DriftArgs {
    #[command(flatten)]
    records: RecordSelection,
    /// Write AWS's values into the records' baselines (state ← AWS).
    #[arg(long, conflicts_with = "revert")]
    accept: bool,
    /// Update drifted resources back to their recorded values (AWS ← state).
    #[arg(long)]
    revert: bool,
    /// With --revert: drop the records of resources deleted outside cdkd, so that the next
    /// `cdkd deploy` creates them again.
    #[arg(long, requires = "revert")]
    recreate_deleted: bool,
    /// With --accept or --revert: say what each would do, change nothing (no confirmation).
    #[arg(long)]
    dry_run: bool,
    /// Resources read (and reverted) at once.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
    /// Print JSON: one object per stack.
    #[arg(long)]
    json: bool,
}

/// `cdkd state refresh-observed`.
#[derive(Debug, Args)]
pub struct RefreshObservedArgs {
    #[command(flatten)]
    records: RecordSelection,
    /// Resources read at once.
    #[arg(long, default_value_t = 10)]
    concurrency: usize,
}

/// The `(stack, region)` records named on the command line (each with its nested children's
/// records), every record with `all`, or the only record when there is exactly one.
pub(super) async fn recorded_targets(
    context: &CommandContext,
    store: &StateStore,
    names: &[String],
    all: bool,
    stack_region: Option<&str>,
) -> anyhow::Result<Vec<(String, String)>> {
    let listed = store.backend.list_stacks().await?;
    let with_region: Vec<(String, String)> = listed
        .into_iter()
        .filter_map(|r| Some((r.stack, r.region?)))
        .filter(|(_, region)| stack_region.is_none_or(|wanted| wanted == region))
        .collect();
    if all {
        return Ok(with_region);
    }
    if names.is_empty() {
        return match with_region.as_slice() {
            [only] => Ok(vec![only.clone()]),
            [] => anyhow::bail!("no stack has a state record (run `cdkd deploy` first)"),
            several => anyhow::bail!(
                "several stacks have state records ({}); name the stacks, or pass --all",
                several
                    .iter()
                    .map(|(s, r)| format!("{s} ({r})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
    }
    let fallback = context.aws().await.region();
    let mut targets = Vec::new();
    for name in names {
        let region = store.stack_region(name, stack_region, &fallback).await?;
        if !with_region.iter().any(|(s, r)| s == name && *r == region) {
            anyhow::bail!(
                "no state record for stack {name} in {region} (cdkd state list shows what exists)"
            );
        }
        targets.push((name.clone(), region.clone()));
        let children = format!("{name}~");
        targets.extend(
            with_region
                .iter()
                .filter(|(s, r)| s.starts_with(&children) && *r == region)
                .cloned(),
        );
    }
    Ok(targets)
}

/// Which state records a command works on.
#[derive(Debug, Args)]
struct RecordSelection {
    /// Stacks, by state record name (their nested stacks' records are included).
    stacks: Vec<String>,
    /// Every stack with a state record.
    #[arg(long)]
    all: bool,
    /// The stacks' region, when a name has records in several.
    #[arg(long, value_name = "REGION")]
    stack_region: Option<String>,
}

impl RecordSelection {
    /// The state bucket, the selected records and the loaded plugins.
    async fn load(&self, context: &CommandContext) -> anyhow::Result<Recorded> {
        recorded(
            context,
            &self.stacks,
            self.all,
            self.stack_region.as_deref(),
        )
        .await
    }
}

/// What `drift` and `refresh-observed` start from: the state bucket, the records to work on,
/// the loaded plugins.
struct Recorded {
    store: StateStore,
    targets: Vec<(String, String)>,
    registry: std::sync::Arc<crate::provisioning::registry::Registry>,
}

async fn recorded(
    context: &CommandContext,
    stacks: &[String],
    all: bool,
    stack_region: Option<&str>,
) -> anyhow::Result<Recorded> {
    let store = context.state().await?;
    let targets = recorded_targets(context, &store, stacks, all, stack_region).await?;
    let registry = context.registry()?;
    registry.warn_about_failures();
    Ok(Recorded {
        store,
        targets,
        registry,
    })
}

/// `cdkd state refresh-observed`: exit 0, or 2 when some read failed.
pub async fn refresh_observed(
    context: &CommandContext,
    args: RefreshObservedArgs,
) -> anyhow::Result<ExitCode> {
    let Recorded {
        store,
        targets,
        registry,
    } = args.records.load(context).await?;
    let backends = Backends::new(&registry, context.aws().await, &store);
    let engine = reading_engine(&backends, false);
    let mut failed = false;
    for (stack, region) in &targets {
        let Some(report) = engine
            .refresh_observed(stack, region, args.concurrency.max(1))
            .await?
        else {
            println!("{stack} ({region}): no state record");
            continue;
        };
        println!(
            "{stack} ({region}): {} refreshed, {} without a reader, {} deleted outside cdkd, {} failed",
            report.refreshed.len(),
            report.unsupported.len(),
            report.deleted.len(),
            report.failed.len()
        );
        for id in &report.deleted {
            println!("  {stack}/{id}: not found in AWS (its baseline is unchanged; `cdkd drift` reports it)");
        }
        for (id, err) in &report.failed {
            failed = true;
            println!("  {stack}/{id}: reading it failed: {err}");
        }
    }
    Ok(ExitCode::from(if failed { 2 } else { 0 }))
}

/// An engine for commands that read and write records but never deploy.
fn reading_engine<'a>(backends: &'a Backends<'_>, json: bool) -> Engine<'a> {
    // Nothing here dispatches work that a Ctrl-C should stop early: reads are short and
    // each writer saves once at its end.
    let stop = tokio::sync::watch::Sender::new(false);
    backends.engine(Reporter::events(json), stop)
}

/// `cdkd drift`.
pub async fn run(context: &CommandContext, args: DriftArgs) -> anyhow::Result<ExitCode> {
    let Recorded {
        store,
        targets,
        registry,
    } = args.records.load(context).await?;
    let backends = Backends::new(&registry, context.aws().await, &store);
    let engine = reading_engine(&backends, args.json);
    let concurrency = args.concurrency.max(1);
    let (accept, revert) = (args.accept && !args.dry_run, args.revert && !args.dry_run);
    let rehearsal = args.dry_run.then_some(if args.accept {
        "accept"
    } else if args.revert {
        "revert"
    } else {
        ""
    });
    if accept || revert {
        let names: Vec<String> = targets.iter().map(|(s, r)| format!("{s} ({r})")).collect();
        let question = if accept {
            format!(
                "Write AWS's current values into the records of {}?",
                names.join(", ")
            )
        } else {
            format!(
                "Update the drifted resources of {} back to their recorded values?",
                names.join(", ")
            )
        };
        if !confirm(&question, context.assume_yes())? {
            println!("Nothing changed.");
            return Ok(ExitCode::SUCCESS);
        }
    }
    let mut reports = Vec::new();
    let (mut any_drift, mut any_incomplete, mut revert_failed) = (false, false, false);
    for (stack, region) in &targets {
        if accept {
            let (drift, accepted) = engine.accept_drift(stack, region, concurrency).await?;
            show(&drift, args.json);
            for entry in &accepted {
                for path in &entry.paths {
                    println!("  accepted {stack}/{}: {path}", entry.logical_id);
                }
                for refused in &entry.refused {
                    println!(
                        "  not accepted {stack}/{}: {}: {}",
                        entry.logical_id, refused.path, refused.reason
                    );
                }
            }
            reports.push(drift);
        } else if revert {
            let (drift, reverted) = engine
                .revert_drift(stack, region, concurrency, args.recreate_deleted)
                .await?;
            show(&drift, args.json);
            for outcome in &reverted {
                match outcome {
                    Reverted::Restored(id) => println!("  reverted {stack}/{id}"),
                    Reverted::Forgotten(id) => println!(
                        "  {stack}/{id} was deleted outside cdkd; its record is removed: run `cdkd deploy {stack}` to create it again"
                    ),
                    Reverted::LeftDeleted(id) => println!(
                        "  {stack}/{id} was deleted outside cdkd and is left so (pass --recreate-deleted to have the next deploy create it again)"
                    ),
                    Reverted::Failed(id, reason) => {
                        revert_failed = true;
                        println!("  could not revert {stack}/{id}: {reason}");
                    }
                }
            }
            reports.push(drift);
        } else {
            let drift = engine.detect_drift(stack, region, concurrency).await?;
            show(&drift, args.json);
            if let Some(verb) = rehearsal.filter(|v| !v.is_empty()) {
                rehearse(&drift, verb, args.recreate_deleted);
            }
            any_drift |= drift.drifted();
            any_incomplete |= drift.incomplete();
            reports.push(drift);
        }
    }
    if args.json {
        let doc: Vec<Value> = reports.iter().map(drift_json).collect();
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    Ok(ExitCode::from(if any_drift {
        1
    } else if any_incomplete || revert_failed {
        2
    } else {
        0
    }))
}

/// What `--accept` / `--revert` would do to each resource that drifted (`--dry-run`).
fn rehearse(drift: &StackDrift, verb: &str, recreate_deleted: bool) {
    let stack = &drift.stack;
    for resource in &drift.resources {
        let id = &resource.logical_id;
        match (&resource.status, verb) {
            (DriftStatus::Drifted(differences), _) => {
                for difference in differences {
                    println!(
                        "  would {verb} {stack}/{id}: {}",
                        difference.path.join(".")
                    );
                }
            }
            (DriftStatus::Deleted, "revert") if recreate_deleted => println!(
                "  would drop the record of {stack}/{id} (deleted outside cdkd) for the next deploy to create it again"
            ),
            (DriftStatus::Deleted, "revert") => println!(
                "  would leave {stack}/{id} deleted (pass --recreate-deleted to have the next deploy create it again)"
            ),
            (DriftStatus::Deleted, _) => println!("  {stack}/{id} was deleted outside cdkd"),
            _ => {}
        }
    }
    println!("  (dry run: nothing changed)");
}

/// The readable report of one stack (nothing with `--json`: the JSON comes at the end).
fn show(drift: &StackDrift, as_json: bool) {
    if as_json {
        return;
    }
    let StackDrift { stack, region, .. } = drift;
    let compared = (drift.resources.iter())
        .filter(|r| !matches!(r.status, DriftStatus::Skipped))
        .count();
    let skipped = drift.resources.len() - compared;
    let drifted = (drift.resources.iter())
        .filter(|r| matches!(r.status, DriftStatus::Drifted(_) | DriftStatus::Deleted))
        .count();
    let headline = if drifted > 0 {
        format!("{stack} ({region}): drift on {drifted} of {compared} resource(s)")
    } else if drift.incomplete() {
        format!("{stack} ({region}): no drift found, but some resources could not be compared")
    } else {
        format!("{stack} ({region}): no drift ({compared} resource(s) compared)")
    };
    println!(
        "{headline}{}",
        if skipped > 0 {
            format!(", {skipped} skipped (custom resources and nested stacks)")
        } else {
            String::new()
        }
    );
    let rows: Vec<Vec<String>> = drift
        .resources
        .iter()
        .filter(|r| !matches!(r.status, DriftStatus::Skipped))
        .map(|r| {
            let (status, detail) = match &r.status {
                DriftStatus::InSync if r.masked > 0 => (
                    "in sync".to_string(),
                    format!("{} masked position(s) not compared", r.masked),
                ),
                DriftStatus::InSync => ("in sync".into(), String::new()),
                DriftStatus::Drifted(d) => ("DRIFTED".into(), format!("{} path(s)", d.len())),
                DriftStatus::Deleted => ("DELETED".into(), "deleted outside cdkd".into()),
                DriftStatus::NotComparable(reason) => ("not comparable".into(), reason.clone()),
                DriftStatus::Skipped => unreachable!("filtered out"),
            };
            vec![
                r.logical_id.clone(),
                r.resource_type.clone(),
                status,
                detail,
            ]
        })
        .collect();
    if !rows.is_empty() {
        let text = table::render(&["RESOURCE", "TYPE", "STATUS", "DETAIL"], &rows);
        for line in text.lines() {
            println!("  {line}");
        }
    }
    for r in &drift.resources {
        let DriftStatus::Drifted(differences) = &r.status else {
            continue;
        };
        let baseline = if r.observed_baseline {
            "observed"
        } else {
            "recorded"
        };
        println!("  {} ({}):", r.logical_id, r.physical_id);
        for d in differences {
            println!(
                "    {}: {baseline} {} -> live {}",
                d.dotted(),
                shown(d.recorded.as_ref()),
                shown(d.live.as_ref())
            );
        }
    }
}

fn shown(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".into(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// One stack's JSON: the reference CLI's keys, plus `deleted`.
fn drift_json(drift: &StackDrift) -> Value {
    let mut drifted = Vec::new();
    let mut clean = Vec::new();
    let mut deleted = Vec::new();
    let mut not_supported = Vec::new();
    let mut skipped = Vec::new();
    for r in &drift.resources {
        let base = json!({"logicalId": r.logical_id, "type": r.resource_type, "physicalId": r.physical_id});
        let mut entry = base.as_object().cloned().unwrap_or_default();
        match &r.status {
            DriftStatus::InSync => {
                entry.insert("maskedPositions".into(), json!(r.masked));
                clean.push(Value::Object(entry));
            }
            DriftStatus::Drifted(differences) => {
                let changes: Vec<Value> = differences
                    .iter()
                    .map(|d| {
                        let mut change = serde_json::Map::new();
                        change.insert("path".into(), json!(d.dotted()));
                        if let Some(recorded) = &d.recorded {
                            change.insert("stateValue".into(), recorded.clone());
                        }
                        if let Some(live) = &d.live {
                            change.insert("awsValue".into(), live.clone());
                        }
                        Value::Object(change)
                    })
                    .collect();
                entry.insert("changes".into(), Value::Array(changes));
                entry.insert(
                    "baseline".into(),
                    json!(if r.observed_baseline {
                        "observedProperties"
                    } else {
                        "properties"
                    }),
                );
                drifted.push(Value::Object(entry));
            }
            DriftStatus::Deleted => deleted.push(Value::Object(entry)),
            DriftStatus::NotComparable(reason) => {
                entry.insert("reason".into(), json!(reason));
                not_supported.push(Value::Object(entry));
            }
            DriftStatus::Skipped => skipped.push(Value::Object(entry)),
        }
    }
    json!({
        "stack": drift.stack,
        "region": drift.region,
        "drifted": drifted,
        "deleted": deleted,
        "clean": clean,
        "notSupported": not_supported,
        "skipped": skipped,
    })
}
