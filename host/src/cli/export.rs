//! `cdkd export [stack]`: hand a stack over to CloudFormation through an IMPORT change set,
//! every AWS resource kept as it is (docs/commands.md#export).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::app::{load_assembly, stack_target, AppArgs};
use super::CommandContext;
use crate::deployment::export::changeset::{Body, Outcome, ToImport};
use crate::deployment::export::plan::{plan, ExportPlan, PlanOptions};
use crate::deployment::export::{reads_of, template};
use crate::deployment::migrate::CloudFormation;
use crate::provisioning::providers::LiveProviders;
use crate::provisioning::type_schemas::TypeSchemas;
use crate::state::purge::{purge_and_report, PurgeLogLevel, PurgedObject};
use crate::state::store::StateStore;
use crate::synthesis::selection::select;
use crate::synthesis::template_file::{TemplateFile, TemplateFormat};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The stack (may be left out when the app has one).
    stack: Option<String>,
    #[command(flatten)]
    app: AppArgs,
    /// The CloudFormation stack to create (default: the cdkd stack's name).
    #[arg(long, value_name = "NAME")]
    cfn_stack_name: Option<String>,
    /// Print the import plan; no CloudFormation call, no change.
    #[arg(long)]
    dry_run: bool,
    /// A pre-rendered template (JSON or YAML) instead of synthesizing the app.
    #[arg(long, value_name = "PATH")]
    template: Option<PathBuf>,
    /// Let CloudFormation create custom resources in phase 2 (their handlers run again).
    #[arg(long)]
    include_non_importable: bool,
    /// Refuse IMPORT-unsupported types (AWS::IAM::Policy, AWS::ApiGatewayV2::Stage) instead of
    /// deleting them between the phases for CloudFormation to create again.
    #[arg(long)]
    no_recreate_import_unsupported: bool,
    /// Submit types the registry says CloudFormation cannot import, and let it answer.
    #[arg(long)]
    skip_import_support_preflight: bool,
    /// A template parameter's value, `KEY=VALUE` (repeatable; default: the template's).
    #[arg(long = "parameter", value_name = "KEY=VALUE")]
    parameters: Vec<String>,
    /// A nested stack's CloudFormation name, `cdkdName=cfnName` (repeatable).
    #[arg(long = "cfn-child-stack-name", value_name = "CDKD_NAME=CFN_NAME")]
    child_stack_names: Vec<String>,
    /// Refuse, instead of warning, when other stacks of the app read this one's outputs.
    #[arg(long)]
    strict_cross_stack: bool,
    /// Go ahead with `-c` context overrides (they are not saved for later `cdk deploy`s).
    #[arg(long)]
    accept_transient_context: bool,
}

fn key_values(items: &[String], flag: &str) -> anyhow::Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|item| match item.split_once('=') {
            Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
            _ => anyhow::bail!("{flag} {item}: write KEY=VALUE"),
        })
        .collect()
}

/// The stack to export: its name, region, template (in the source's format) and the app's
/// other templates (for the consumer scan; none with `--template`).
struct Source {
    stack: String,
    region: String,
    file: TemplateFile,
    others: Vec<(String, Value)>,
}

async fn source(context: &CommandContext, args: &ExportArgs) -> anyhow::Result<Source> {
    if let Some(path) = &args.template {
        let Some(stack) = args.stack.clone() else {
            anyhow::bail!(
                "with --template, name the cdkd stack to export: cdkd export <stack> --template {}",
                path.display()
            );
        };
        let file = TemplateFile::read(path)?;
        let region = context.aws().await.region();
        return Ok(Source {
            stack,
            region,
            file,
            others: Vec::new(),
        });
    }
    let assembly = load_assembly(context, &args.app).await?;
    let names: Vec<String> = args.stack.iter().cloned().collect();
    let stacks = select(&assembly, &names, false, true)?;
    let [stack] = stacks.as_slice() else {
        anyhow::bail!("cdkd export hands one stack at a time to CloudFormation; name it");
    };
    let (_, region) = stack_target(context, stack).await?;
    let body = stack
        .template()
        .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
    let mut others = Vec::new();
    for other in select(&assembly, &[], true, false)? {
        if other.stack_name != stack.stack_name {
            if let Ok(template) = other.template() {
                others.push((other.stack_name.clone(), template));
            }
        }
    }
    Ok(Source {
        stack: stack.stack_name.clone(),
        region,
        file: TemplateFile {
            body,
            format: TemplateFormat::Json,
        },
        others,
    })
}

/// `cdkd export`.
pub async fn run(context: &CommandContext, args: ExportArgs) -> anyhow::Result<ExitCode> {
    if !args.app.context.is_empty() {
        let overrides: Vec<String> = args
            .app
            .context
            .iter()
            .map(|(k, v)| format!("-c {k}={v}"))
            .collect();
        if !args.accept_transient_context {
            anyhow::bail!(
                "cdkd export refuses context overrides ({}): they are not saved, so a later `cdk deploy` without them would synthesize another template. Move them into cdk.json's \"context\" and run again, or pass --accept-transient-context and give the same -c flags to every later cdk command",
                overrides.join(" ")
            );
        }
        eprintln!(
            "warning: exporting with context overrides {}: give the same flags to every later `cdk diff` / `cdk deploy` of this stack, or move them into cdk.json",
            overrides.join(" ")
        );
    }
    if !args.child_stack_names.is_empty() {
        key_values(&args.child_stack_names, "--cfn-child-stack-name")?;
    }
    let overrides = key_values(&args.parameters, "--parameter")?;
    let Source {
        stack,
        region,
        file,
        others,
    } = source(context, &args).await?;
    let cfn_stack = args.cfn_stack_name.clone().unwrap_or_else(|| stack.clone());
    let aws = context.aws().await;
    let store = context.state().await?;
    let state = super::state::load(&store, &stack, &region).await?;

    // Planning: state, the template and the registry; no AWS write and no lock yet.
    let types: BTreeSet<String> = state
        .resources
        .values()
        .map(|r| r.resource_type.clone())
        .collect();
    let schemas = if args.dry_run {
        TypeSchemas::new(aws).cached_only(&region, types)
    } else {
        TypeSchemas::new(aws).get(&region, types).await
    };
    let options = PlanOptions {
        include_non_importable: args.include_non_importable,
        no_recreate_import_unsupported: args.no_recreate_import_unsupported,
        skip_import_support_preflight: args.skip_import_support_preflight,
    };
    let mut plan = plan(&file.body, &state, &schemas, &options);
    let registry = context.registry()?;
    registry.warn_about_failures();
    registry.set_state_bucket(&store.bucket.name, &store.region());
    let live = LiveProviders {
        registry: &registry,
        aws,
    };
    look_up_identifiers(&live, &region, &mut plan).await?;
    let consumers: Vec<String> = others
        .iter()
        .filter_map(|(name, template)| {
            let reads = reads_of(template, &stack);
            (!reads.is_empty()).then(|| format!("{name} ({})", reads.join(", ")))
        })
        .collect();
    if !consumers.is_empty() {
        let message = format!(
            "stack(s) {} read {stack}'s outputs by Fn::GetStackOutput; after the export they resolve through the CloudFormation fallback (they break only when deployed with --no-cfn-fallback)",
            consumers.join(", ")
        );
        if args.strict_cross_stack {
            anyhow::bail!("{message}; refusing because of --strict-cross-stack (export the consumers first, or drop the flag)");
        }
        plan.warnings.push(message);
    }
    let cloudformation = CloudFormation::new(aws, &region);
    if !args.dry_run {
        if let Some((status, _)) = cloudformation.status(&cfn_stack).await? {
            anyhow::bail!(
                "a CloudFormation stack named {cfn_stack} already exists in {region} ({status}); export under another name with --cfn-stack-name, or delete that stack first. Nothing was changed"
            );
        }
    }
    let parameters = template::parameters(&file.body, &overrides)
        .map_err(|err| anyhow::anyhow!("cdkd export {stack}: {err}"))?;
    let (phase_one, phase_two) = templates(&file.body, &plan)?;
    for warning in &plan.warnings {
        eprintln!("warning: {warning}");
    }
    if plan.refused() {
        eprintln!("{}", plan.refusal(&stack));
        return Ok(ExitCode::FAILURE);
    }
    print_plan(&stack, &cfn_stack, &region, &plan);
    if args.dry_run {
        println!("Dry run: no CloudFormation call was made and nothing changed (the real run also checks that no CloudFormation stack named {cfn_stack} exists).");
        return Ok(ExitCode::SUCCESS);
    }

    let lock = store.locks.acquire(&stack, &region, "export").await?;
    let result = async {
        // Planned without the lock: a deploy that ran meanwhile changed what is to be handed
        // over, so the plan no longer holds.
        let locked = super::state::load(&store, &stack, &region).await?;
        if locked.resources != state.resources {
            anyhow::bail!("stack {stack}'s state changed while the export was being planned (another cdkd command ran); nothing was changed, run cdkd export again");
        }
        if !super::confirm(
            &format!("Hand stack {stack} ({region}) over to CloudFormation stack {cfn_stack}? Its resources stay as they are; cdkd's state record is deleted at the end."),
            context.assume_yes(),
        )? {
            println!("Nothing changed.");
            return Ok(false);
        }
        let extension = match file.format {
            TemplateFormat::Json => "json",
            TemplateFormat::Yaml => "yaml",
        };
        let body = |template: &Value| Body {
            text: match file.format {
                TemplateFormat::Json => serde_json::to_string(template).expect("a template serialises"),
                TemplateFormat::Yaml => file.render(template),
            },
            extension,
        };
        let to_import: Vec<ToImport> = plan
            .imports
            .iter()
            .map(|i| ToImport {
                logical_id: i.logical_id.clone(),
                resource_type: i.resource_type.clone(),
                identifier: i.identifier.clone(),
            })
            .collect();
        cloudformation
            .import(&cfn_stack, &body(&phase_one), &parameters, &to_import, &store.backend)
            .await
            .map_err(|err| anyhow::anyhow!("phase 1 (IMPORT) failed; CloudFormation stack {cfn_stack} was not created and cdkd's state of {stack} is unchanged: {err:#}"))?;
        println!("Phase 1: CloudFormation stack {cfn_stack} imported {} resource(s).", plan.imports.len());
        let finish = async {
            delete_recreated(&live, &region, &plan).await?;
            cloudformation
                .update_to(&cfn_stack, &body(&phase_two), &parameters, &store.backend)
                .await
        }
        .await;
        match finish {
            Ok(outcome) => {
                if let Outcome::Done = outcome {
                    println!("Phase 2: CloudFormation stack {cfn_stack} holds the whole template (Outputs and {} resource(s) it created).", plan.recreated.len() + plan.created.len());
                }
            }
            Err(err) => {
                let saved = std::env::current_dir()
                    .unwrap_or_default()
                    .join(format!("{cfn_stack}.export-phase2.{extension}"));
                let _ = std::fs::write(&saved, body(&phase_two).text);
                anyhow::bail!(
                    "phase 2 (UPDATE) failed after CloudFormation stack {cfn_stack} imported the resources: {err:#}\ncdkd's state of {stack} is kept. To finish by hand: `aws cloudformation create-change-set --stack-name {cfn_stack} --change-set-type UPDATE --change-set-name finish --template-body file://{} --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM CAPABILITY_AUTO_EXPAND`, execute it, then `cdkd state orphan {stack}` so cdkd forgets the stack",
                    saved.display()
                );
            }
        }
        forget(&store, &stack, &region).await?;
        Ok(true)
    }
    .await;
    lock.release().await;
    if result? {
        println!("{stack} ({region}) is now CloudFormation stack {cfn_stack}; cdkd's state record is deleted and every resource kept its id.");
        if args.accept_transient_context && !args.app.context.is_empty() {
            let flags: Vec<String> = args
                .app
                .context
                .iter()
                .map(|(k, v)| format!("-c {k}={v}"))
                .collect();
            println!("Deploy it from now on with the same context: cdk diff {stack} {0} && cdk deploy {stack} {0}", flags.join(" "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The two change sets' templates: the identifier overlay on both, phase 1 narrowed to the
/// imported resources.
fn templates(template: &Value, plan: &ExportPlan) -> anyhow::Result<(Value, Value)> {
    let mut full = template.clone();
    let mut unrepresentable = Vec::new();
    for import in &plan.imports {
        if let Some(resource) = full
            .get_mut("Resources")
            .and_then(|r| r.get_mut(&import.logical_id))
        {
            if let Err(err) = template::overlay(&import.logical_id, resource, &import.identifier) {
                unrepresentable.push(err.to_string());
            }
        }
    }
    if !unrepresentable.is_empty() {
        anyhow::bail!("cdkd export: nothing was changed; the template's identifier properties cannot be matched:\n  {}", unrepresentable.join("\n  "));
    }
    let imported: BTreeSet<String> = plan.imports.iter().map(|i| i.logical_id.clone()).collect();
    let one = template::phase_one(&full, &imported).map_err(|reads| {
        let pairs: Vec<String> = reads
            .iter()
            .map(|(reader, read)| format!("{reader} reads {read}"))
            .collect();
        anyhow::anyhow!("cdkd export: nothing was changed; these resources read a resource CloudFormation only creates in phase 2, so they cannot be imported first: {}. Remove the reference, or keep the stack on cdkd", pairs.join(", "))
    })?;
    Ok((one, full))
}

/// Reads the identifiers state lacks from AWS (a security group rule recorded without its
/// `sgr-` id): the provider's import, asked with no source, answers the one rule of that
/// protocol and port range on the group, or refuses naming what it found.
async fn look_up_identifiers(
    live: &LiveProviders<'_>,
    region: &str,
    plan: &mut ExportPlan,
) -> anyhow::Result<()> {
    use crate::provisioning::operations::ProviderSource;
    if plan.looked_up.is_empty() {
        return Ok(());
    }
    let types: BTreeSet<String> = plan
        .looked_up
        .iter()
        .map(|(_, r)| r.resource_type.clone())
        .collect();
    let providers = live
        .prepare(region, &types, std::time::Duration::from_secs(300))
        .await?;
    for (logical_id, row) in std::mem::take(&mut plan.looked_up) {
        let operations = providers.for_record(&row);
        let answer = operations
            .import(
                &row.resource_type,
                &logical_id,
                &row.physical_id,
                &serde_json::Map::new(),
            )
            .await;
        match answer.map(|created| {
            created
                .attributes
                .get("Id")
                .and_then(Value::as_str)
                .map(str::to_string)
        }) {
            Ok(Some(id)) => plan.imports.push(crate::deployment::export::plan::Import {
                logical_id,
                resource_type: row.resource_type.clone(),
                physical_id: row.physical_id.clone(),
                identifier: serde_json::Map::from_iter([("Id".to_string(), Value::String(id))]),
            }),
            Ok(None) => plan.blocked.push(crate::deployment::export::plan::Blocked {
                logical_id,
                resource_type: row.resource_type.clone(),
                reason: format!(
                    "the rule's sgr- id is not recorded and AWS reports none for {}",
                    row.physical_id
                ),
            }),
            Err(err) => plan.blocked.push(crate::deployment::export::plan::Blocked {
                logical_id,
                resource_type: row.resource_type.clone(),
                reason: format!(
                    "the rule's sgr- id is not recorded and could not be read from AWS: {}",
                    err.message
                ),
            }),
        }
    }
    Ok(())
}

/// Deletes the IMPORT-unsupported resources between the phases (CloudFormation creates them
/// again in phase 2).
async fn delete_recreated(
    live: &LiveProviders<'_>,
    region: &str,
    plan: &ExportPlan,
) -> anyhow::Result<()> {
    use crate::provisioning::operations::ProviderSource;
    if plan.recreated.is_empty() {
        return Ok(());
    }
    let types: BTreeSet<String> = plan
        .recreated
        .iter()
        .map(|r| r.resource_type.clone())
        .collect();
    let providers = live
        .prepare(region, &types, std::time::Duration::from_secs(300))
        .await?;
    for recreated in &plan.recreated {
        providers
            .for_record(&recreated.state)
            .delete(
                &recreated.resource_type,
                &recreated.logical_id,
                &recreated.state.physical_id,
                &recreated.state.properties,
            )
            .await
            .map_err(|err| {
                anyhow::anyhow!(
                    "deleting {} ({}) for CloudFormation to create it again: {}",
                    recreated.logical_id,
                    recreated.resource_type,
                    err.message
                )
            })?;
        println!(
            "Deleted {} ({}); CloudFormation creates it again in phase 2.",
            recreated.logical_id, recreated.resource_type
        );
    }
    Ok(())
}

/// Deletes the stack's record and journal, as `cdkd state orphan` does.
async fn forget(store: &StateStore, stack: &str, region: &str) -> anyhow::Result<()> {
    store.backend.delete(stack, region).await?;
    let journal = store.backend.keys().journal(stack, region);
    store.backend.delete_object(&journal).await?;
    purge_and_report(
        store.backend.client(),
        store.backend.bucket(),
        &journal,
        PurgedObject::RollbackJournal,
        PurgeLogLevel::Warn,
    )
    .await;
    Ok(())
}

fn print_plan(stack: &str, cfn_stack: &str, region: &str, plan: &ExportPlan) {
    println!("Export {stack} ({region}) to CloudFormation stack {cfn_stack}:");
    for import in &plan.imports {
        let identifier: Vec<String> = import
            .identifier
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k}={}",
                    v.as_str().map_or_else(|| v.to_string(), str::to_string)
                )
            })
            .collect();
        println!(
            "  import    {} ({}) {}",
            import.logical_id,
            import.resource_type,
            identifier.join(", ")
        );
    }
    for recreated in &plan.recreated {
        println!("  recreate  {} ({}): CloudFormation cannot import it; deleted after phase 1, created by phase 2", recreated.logical_id, recreated.resource_type);
    }
    for (logical_id, resource_type, why) in &plan.created {
        println!("  create    {logical_id} ({resource_type}): {why}");
    }
}
