//! `cdkd scrub [stacks] [--all] [--dry-run]`: rewrites records that hold the resolved value of
//! a dynamic reference back to the `{{resolve:...}}` expression, and removes the earlier
//! versions that held it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::app::{load_assembly, stack_target, AppArgs};
use super::CommandContext;
use crate::deployment::scrub::{scrub_stack, ScrubReport};
use crate::provisioning::dynamic_references::{expressions, AwsSecrets, DynamicReferences};
use crate::synthesis::selection::select;

#[derive(Debug, Args)]
pub struct ScrubArgs {
    /// Stacks to scrub (names or display paths, `*` wildcards; `--stack NAME` also works).
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Every stack of the app.
    #[arg(long)]
    all: bool,
    /// Report what holds a resolved value; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Exit 1 when a record held a resolved value (with --dry-run: holds one), for CI gates.
    #[arg(long)]
    fail: bool,
}

/// `cdkd scrub`.
pub async fn run(context: &CommandContext, args: ScrubArgs) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    let stacks = select(&assembly, &args.stacks, args.all, true)?;
    let store = context.state().await?;
    let aws = context.aws().await;
    let mut dirty = false;
    for stack in stacks {
        let (_, region) = stack_target(context, stack).await?;
        // Every reference any template of the app makes: a secret that leaked into this
        // stack's record from another stack's template is a leak too.
        let folder = stack.template_file.parent().unwrap_or(Path::new("."));
        let found = references_in(folder)?;
        let references = DynamicReferences::new(Box::new(AwsSecrets::new(aws, &region)));
        let known = references
            .known_values(found.iter().map(String::as_str))
            .await;
        let mut names = vec![stack.stack_name.clone()];
        let children = format!("{}~", stack.stack_name);
        names.extend(
            store
                .backend
                .list_stacks()
                .await?
                .into_iter()
                .filter(|r| r.stack.starts_with(&children) && r.region.as_deref() == Some(&region))
                .map(|r| r.stack),
        );
        for name in names {
            let report = scrub_stack(&store, &name, &region, &known, args.dry_run).await?;
            dirty |= report.recorded && report.found_anything();
            print_report(&report, args.dry_run, found.len());
        }
    }
    Ok(if args.fail && dirty {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The distinct `{{resolve:...}}` expressions in the templates of `folder`.
fn references_in(folder: &Path) -> anyhow::Result<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    for entry in std::fs::read_dir(folder)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !name.ends_with(".template.json") {
            continue;
        }
        let document: Value = serde_json::from_slice(&std::fs::read(&path)?)
            .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
        collect(&document, &mut found);
    }
    Ok(found)
}

fn collect(value: &Value, found: &mut BTreeSet<String>) {
    match value {
        Value::String(text) => found.extend(expressions(text).into_iter().map(str::to_string)),
        Value::Array(items) => items.iter().for_each(|v| collect(v, found)),
        Value::Object(map) => map.values().for_each(|v| collect(v, found)),
        _ => {}
    }
}

fn print_report(report: &ScrubReport, dry_run: bool, references: usize) {
    let ScrubReport { stack, region, .. } = report;
    if !report.recorded {
        println!("{stack} ({region}): no state record.");
        return;
    }
    if !report.found_anything() {
        println!(
            "{stack} ({region}): clean; no record holds the value of the app's {references} dynamic reference(s)."
        );
        return;
    }
    let verb = if dry_run { "would be" } else { "was" };
    let mut what = Vec::new();
    if !report.resources.is_empty() {
        what.push(format!("resource(s) {}", report.resources.join(", ")));
    }
    if report.outputs {
        what.push("the outputs".to_string());
    }
    if report.journal {
        what.push("the rollback journal".to_string());
    }
    if !what.is_empty() {
        println!(
            "{stack} ({region}): {} held a resolved secret; {verb} rewritten to the {{{{resolve:...}}}} expression.",
            what.join(", ")
        );
    }
    println!(
        "{stack} ({region}): {} earlier version(s) holding a resolved secret {verb} removed.",
        report.versions
    );
    if !report.failures.is_empty() {
        println!(
            "{stack} ({region}): {} key(s) could not be purged (see the warning above).",
            report.failures.len()
        );
    }
}
