//! `cdkd import [stack] (--resource L=P ... | --resource-mapping FILE |
//! --resource-mapping-inline JSON | --auto) [--force] [--dry-run]`: adopts existing AWS
//! resources into the stack's record, as the CDK CLI's `cdk import` does into a CloudFormation
//! stack.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::app::{load_assembly, stack_target, AppArgs};
use super::CommandContext;
use crate::analyzer::template::Template;
use crate::app::Backends;
use crate::cloudformation::{BucketStaging, CloudFormation};
use crate::deployment::external::StateSnapshot;
use crate::deployment::import::{ImportRequest, Imported};
use crate::deployment::migrate::Migration;
use crate::deployment::prepare::Preparation;
use crate::deployment::report::Reporter;
use crate::synthesis::selection::select;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The stack (may be left out when the app has one).
    stack: Option<String>,
    #[command(flatten)]
    app: AppArgs,
    /// A resource to adopt, `LogicalId=physicalId` (repeatable; quote composite ids: `'R=a|b'`).
    #[arg(long = "resource", value_name = "LOGICAL_ID=PHYSICAL_ID")]
    resources: Vec<String>,
    /// A JSON file `{"LogicalId": "physicalId", ...}`.
    #[arg(long, value_name = "FILE", conflicts_with = "resource_mapping_inline")]
    resource_mapping: Option<PathBuf>,
    /// The same mapping as a JSON string.
    #[arg(long, value_name = "JSON")]
    resource_mapping_inline: Option<String>,
    /// Also find every other resource by the physical name its template declares
    /// (`BucketName`, `FunctionName`, `RoleName`, `QueueName`, `TableName`, ...).
    #[arg(long)]
    auto: bool,
    /// Re-point resources that are already in state (each is named in the output).
    #[arg(long)]
    force: bool,
    /// Check and read everything, write nothing.
    #[arg(long, conflicts_with = "migrate_from_cloudformation")]
    dry_run: bool,
    /// Adopt every resource of this CloudFormation stack (default: the stack's own name), then
    /// retire it without deleting anything (Retain policies, then DeleteStack).
    #[arg(long, value_name = "CFN_STACK", num_args = 0..=1, default_missing_value = "")]
    migrate_from_cloudformation: Option<String>,
    #[command(flatten)]
    cfn_fallback: super::deploy::CfnFallbackArgs,
}

/// The mapping from every source; `--resource` wins over a mapping file for the same id.
fn mapping(args: &ImportArgs) -> anyhow::Result<BTreeMap<String, String>> {
    let mut mapping = BTreeMap::new();
    let document = match (&args.resource_mapping, &args.resource_mapping_inline) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .map_err(|err| anyhow::anyhow!("--resource-mapping {}: {err}", path.display()))?;
            Some((format!("--resource-mapping {}", path.display()), text))
        }
        (None, Some(text)) => Some(("--resource-mapping-inline".to_string(), text.clone())),
        (None, None) => None,
    };
    if let Some((source, text)) = document {
        let parsed: Value = serde_json::from_str(&text)
            .map_err(|err| anyhow::anyhow!("{source}: not JSON: {err}"))?;
        let Value::Object(entries) = parsed else {
            anyhow::bail!("{source}: write a JSON object {{\"LogicalId\": \"physicalId\"}}");
        };
        for (logical_id, physical_id) in entries {
            let Value::String(physical_id) = physical_id else {
                anyhow::bail!("{source}: the value for {logical_id} must be a string (its physical id), not {physical_id}");
            };
            mapping.insert(logical_id, physical_id);
        }
    }
    for item in &args.resources {
        match item.split_once('=') {
            Some((logical_id, physical_id))
                if !logical_id.is_empty() && !physical_id.is_empty() =>
            {
                mapping.insert(logical_id.to_string(), physical_id.to_string());
            }
            _ => anyhow::bail!("--resource {item}: write LogicalId=physicalId"),
        }
    }
    Ok(mapping)
}

/// `cdkd import`.
pub async fn run(context: &CommandContext, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let resources = mapping(&args)?;
    if resources.is_empty() && !args.auto && args.migrate_from_cloudformation.is_none() {
        anyhow::bail!("name the resources to import (--resource, --resource-mapping, --resource-mapping-inline), or pass --auto to find them by their physical names");
    }
    let assembly = load_assembly(context, &args.app).await?;
    let names: Vec<String> = args.stack.iter().cloned().collect();
    let stacks = select(&assembly, &names, false, true)?;
    let [stack] = stacks.as_slice() else {
        anyhow::bail!("cdkd import adopts resources into one stack at a time; name it");
    };
    let registry = context.registry()?;
    registry.warn_about_failures();
    let store = context.state().await?;
    registry.set_state_bucket(&store.bucket.name, &store.region());
    let (account, region) = stack_target(context, stack).await?;
    let template = Template::parse(&stack.template()?)
        .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
    let aws = context.aws().await;
    let preparation = Preparation {
        assembly: &assembly,
        registry: &registry,
        aws,
        store: Some(&store),
        ref_values: std::sync::Arc::new(registry.ref_values()),
        parameters: &BTreeMap::new(),
        publish_assets: true,
    };
    let input = preparation
        .stack_input(stack, template, account, region.clone())
        .await?;
    let snapshot = if input.template.stack_reads().is_empty() {
        StateSnapshot::default()
    } else {
        let mut snapshot = StateSnapshot::load(&store.backend).await?;
        // A producer exported to CloudFormation answers from there, as in a deploy.
        args.cfn_fallback
            .read_into(context, &mut snapshot, &[(*stack, &input.template)])
            .await?;
        snapshot
    };
    let backends = Backends::new(&registry, aws, &store);
    let stop = tokio::sync::watch::Sender::new(false);
    let engine = backends.engine(Reporter::events(false), stop);
    let migrating = match args.migrate_from_cloudformation.as_deref() {
        None => None,
        Some("") => Some(stack.stack_name.clone()),
        Some(name) => Some(name.to_string()),
    };
    let cloudformation = CloudFormation::new(aws, &region);
    let outcomes = match &migrating {
        Some(source) => {
            let mut migration = Migration {
                engine: &engine,
                cloudformation: &cloudformation,
                snapshot: &snapshot,
                force: args.force,
                dry_run: false,
            };
            migration.run(&input, source, resources).await?
        }
        None => {
            let request = ImportRequest {
                resources,
                auto: args.auto,
                force: args.force,
                dry_run: args.dry_run,
                ..ImportRequest::default()
            };
            let outcomes = engine.import(&input, &snapshot, &request).await?;
            vec![(stack.stack_name.clone(), outcomes)]
        }
    };
    let stack_name = &stack.stack_name;
    let mut adopted = 0;
    for (record, outcomes) in &outcomes {
        if record != stack_name {
            println!("  nested stack {record}:");
        }
        print_outcomes(outcomes, args.dry_run, &mut adopted);
    }
    if let Some(source) = &migrating {
        println!("{stack_name} ({region}): {adopted} resource(s) of CloudFormation stack {source} are in cdkd's state.");
        if !super::confirm(
            &format!("Retire CloudFormation stack {source}: set DeletionPolicy and UpdateReplacePolicy to Retain on every resource, then delete the stack (no resource is deleted)?"),
            context.assume_yes(),
        )? {
            println!("CloudFormation stack {source} is left as it is; cdkd's state already holds its resources. Retire it later with the same command and --force.");
            return Ok(ExitCode::SUCCESS);
        }
        cloudformation
            .retire(source, &BucketStaging::new(store.backend.clone(), &region))
            .await
            .map_err(|err| anyhow::anyhow!("{err:#}. cdkd's state already holds the resources; retire the CloudFormation stack {source} yourself (Retain policies on every resource, then delete it), or run this command again with --force"))?;
        println!(
            "CloudFormation stack {source} retired: every resource kept, now managed by cdkd."
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        println!("{stack_name} ({region}): {adopted} resource(s) would be imported; nothing was written (--dry-run).");
    } else {
        println!("{stack_name} ({region}): {adopted} resource(s) imported. `cdkd diff` shows where AWS differs from the template; `cdkd deploy` creates what is not imported.");
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints one record's import lines and counts the adopted resources.
fn print_outcomes(outcomes: &[Imported], dry_run: bool, adopted: &mut usize) {
    for outcome in outcomes {
        match outcome {
            Imported::Adopted {
                logical_id,
                resource_type,
                physical_id,
                replaced,
            } => {
                *adopted += 1;
                let verb = if dry_run { "would import" } else { "imported" };
                match replaced {
                    Some(before) if before != physical_id => println!(
                        "  {verb} {logical_id} ({resource_type}) {physical_id}, re-pointed from {before} (--force)"
                    ),
                    Some(_) => println!(
                        "  {verb} {logical_id} ({resource_type}) {physical_id}, recorded again (--force)"
                    ),
                    None => println!("  {verb} {logical_id} ({resource_type}) {physical_id}"),
                }
            }
            Imported::Skipped(logical_id, reason) => {
                println!("  skipped {logical_id}: {reason}")
            }
        }
    }
}
