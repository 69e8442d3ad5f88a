//! `cdkd export [stack]`: hand a stack over to CloudFormation through an IMPORT change set,
//! every AWS resource kept as it is (docs/commands.md#export).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::app::{load_assembly, stack_target, AppArgs};
use super::CommandContext;
use crate::cloudformation::{BucketStaging, CloudFormation};
use crate::deployment::export::destination::Destinations;
use crate::deployment::export::handover::{Handover, Phases};
use crate::deployment::export::plan::{Blocked, ExportPlan, Import, PlanOptions};
use crate::deployment::export::tree::{Loader, TreeStack};
use crate::deployment::export::{reads_of, template};
use crate::provisioning::providers::LiveProviders;
use crate::provisioning::type_schemas::TypeSchemas;
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
    /// The region whose state record is exported (and where the CloudFormation stack is
    /// made), for a stack cdkd deployed in several regions.
    #[arg(long, value_name = "REGION")]
    stack_region: Option<String>,
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

/// The stack to export: its name (and the CDK's, for `cdk` commands), region, template (in
/// the source's format), the folder its nested templates are in, and the app's other
/// templates (for the consumer scan; none with `--template`).
struct Source {
    stack: String,
    display: String,
    region: String,
    file: TemplateFile,
    folder: PathBuf,
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
            display: stack.clone(),
            stack,
            region,
            file,
            folder: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            others: Vec::new(),
        });
    }
    let assembly = load_assembly(context, &args.app).await?;
    let names: Vec<String> = args.stack.iter().cloned().collect();
    let stacks = select(&assembly, &names, false, true)?;
    let [stack] = stacks.as_slice() else {
        anyhow::bail!("cdkd export hands one stack at a time to CloudFormation; name it");
    };
    let (_, mut region) = stack_target(context, stack).await?;
    if let Some(wanted) = &args.stack_region {
        match &stack.environment.region {
            Some(fixed) if fixed != wanted => anyhow::bail!(
                "stack {} is deployed to {fixed} (its environment in the app), not --stack-region {wanted}; drop --stack-region, or export the app's stack for that region",
                stack.display_name
            ),
            _ => region = wanted.clone(),
        }
    }
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
        display: stack.display_name.clone(),
        region,
        file: TemplateFile {
            body,
            format: TemplateFormat::Json,
        },
        folder: stack
            .template_file
            .parent()
            .unwrap_or(Path::new("."))
            .to_path_buf(),
        others,
    })
}

/// `cdkd export`.
pub async fn run(context: &CommandContext, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let overrides = context_overrides(&args)?;
    let child_names = key_values(&args.child_stack_names, "--cfn-child-stack-name")?;
    let parameter_overrides = key_values(&args.parameters, "--parameter")?;
    let Source {
        stack,
        display,
        mut region,
        file,
        folder,
        others,
    } = source(context, &args).await?;
    let cfn_stack = args.cfn_stack_name.clone().unwrap_or_else(|| stack.clone());
    let aws = context.aws().await;
    let store = context.state().await?;
    if args.template.is_some() {
        // A template file says nothing of where the stack lives: its one record's region, or
        // the one --stack-region names.
        region = store
            .stack_region(&stack, args.stack_region.as_deref(), &region)
            .await?;
    }
    let state = super::state::load(&store, &stack, &region).await?;

    // Planning: state, the templates and the registry; no AWS write and no lock yet.
    let loader = Loader {
        store: &store,
        region: &region,
        folder: &folder,
        child_names: &child_names,
    };
    let mut tree = loader
        .load(stack.clone(), cfn_stack.clone(), file, state)
        .await?;
    check_child_names(&tree, &child_names, &stack)?;
    let types = tree.resource_types();
    let schemas = if args.dry_run {
        TypeSchemas::new(aws).cached_only(&region, types)
    } else {
        TypeSchemas::new(aws).get(&region, types).await
    };
    let options = PlanOptions {
        include_non_importable: args.include_non_importable,
        no_recreate_import_unsupported: args.no_recreate_import_unsupported,
        skip_import_support_preflight: args.skip_import_support_preflight,
        cached_schemas_only: args.dry_run,
    };
    let parameters = template::parameters(&tree.file.body, &parameter_overrides)
        .map_err(|err| anyhow::anyhow!("cdkd export {stack}: {err}"))?;
    tree.plan(&region, parameters, &schemas, &options);
    let registry = context.registry()?;
    registry.warn_about_failures();
    registry.set_state_bucket(&store.bucket.name, &store.region());
    let live = LiveProviders {
        registry: &registry,
        aws,
    };
    for plan in tree.plans_mut() {
        look_up_identifiers(&live, &region, plan).await?;
    }
    if let Some(message) = consumers_warning(&others, &stack, &cfn_stack) {
        if args.strict_cross_stack {
            anyhow::bail!("{message}; refusing because of --strict-cross-stack (export the consumers first, or drop the flag)");
        }
        tree.plan.warnings.push(message);
    }
    let cloudformation = CloudFormation::new(aws, &region);
    let destinations = if args.dry_run {
        Destinations::default()
    } else {
        Destinations::read(&cloudformation, &tree, &region).await?
    };
    add_problems(&mut tree, &destinations);
    for warning in tree.warnings() {
        eprintln!("warning: {warning}");
    }
    if tree.refused() {
        eprintln!("{}", tree.refusal());
        return Ok(ExitCode::FAILURE);
    }
    for part in tree.all() {
        print_plan(part, &region);
    }
    for line in &destinations.taken_up {
        println!("{line}");
    }
    if args.dry_run {
        println!("Dry run: no CloudFormation call was made and nothing changed (the real run also reads the registry schemas not cached yet, and checks what each destination CloudFormation stack already holds).");
        return Ok(ExitCode::SUCCESS);
    }

    let planned = Planned {
        stack: &stack,
        cfn_stack: &cfn_stack,
        region: &region,
        tree: &tree,
        destinations: &destinations,
    };
    if planned
        .hand_over(context, &store, &cloudformation, &live)
        .await?
    {
        planned.print_done(&display, &overrides);
    }
    Ok(ExitCode::SUCCESS)
}

/// The `-c` context overrides as `cdk` flags. Refused unless `--accept-transient-context`:
/// they are not saved, so a later `cdk deploy` without them would synthesize another
/// template.
fn context_overrides(args: &ExportArgs) -> anyhow::Result<Vec<String>> {
    let overrides: Vec<String> = (args.app.context.iter())
        .map(|(k, v)| format!("-c {}", shell_word(&format!("{k}={v}"))))
        .collect();
    if !overrides.is_empty() {
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
    Ok(overrides)
}

/// Refuses a `--cfn-child-stack-name` that names no nested stack of the tree.
fn check_child_names(
    tree: &TreeStack,
    child_names: &BTreeMap<String, String>,
    stack: &str,
) -> anyhow::Result<()> {
    let known: BTreeSet<&str> = tree.all().iter().map(|s| s.name.as_str()).collect();
    let unknown: Vec<&String> = child_names
        .keys()
        .filter(|k| !known.contains(k.as_str()) || *k == stack)
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let nested: Vec<&str> = known.iter().copied().filter(|k| *k != stack).collect();
    anyhow::bail!(
        "--cfn-child-stack-name names {} but {stack}'s nested stacks are: {}",
        unknown
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        if nested.is_empty() {
            "none".to_string()
        } else {
            nested.join(", ")
        }
    );
}

/// The warning when other stacks of the app read the stack's outputs (`Fn::GetStackOutput`);
/// `None` when none does.
fn consumers_warning(others: &[(String, Value)], stack: &str, cfn_stack: &str) -> Option<String> {
    let consumers: Vec<String> = others
        .iter()
        .filter_map(|(name, template)| {
            let reads = reads_of(template, stack);
            (!reads.is_empty()).then(|| format!("{name} ({})", reads.join(", ")))
        })
        .collect();
    if consumers.is_empty() {
        return None;
    }
    // Their reads name the stack: CloudFormation's fallback finds it only under that name.
    Some(if cfn_stack == stack {
        format!(
            "stack(s) {} read {stack}'s outputs by Fn::GetStackOutput; after the export they resolve through the CloudFormation fallback (they break only when deployed with --no-cfn-fallback)",
            consumers.join(", ")
        )
    } else {
        format!(
            "stack(s) {} read {stack}'s outputs by Fn::GetStackOutput, which names stack {stack}: exported as CloudFormation stack {cfn_stack}, their next deploy finds neither cdkd state nor a CloudFormation stack of that name and fails. Export without --cfn-stack-name, or after the export give the CDK stack stackName '{cfn_stack}' (the consumers' reads follow it) before deploying them again",
            consumers.join(", ")
        )
    })
}

/// Adds to the tree what its destinations and its handover phases cannot take.
fn add_problems(tree: &mut TreeStack, destinations: &Destinations) {
    let mut problems = destinations.problems.clone();
    for part in tree.all() {
        for problem in Phases::of(part).problems(part) {
            problems.push((part.name.clone(), problem));
        }
    }
    for (name, problem) in problems {
        tree.add_problem(&name, problem);
    }
}

/// A planned export, ready to be handed over.
struct Planned<'a> {
    stack: &'a str,
    cfn_stack: &'a str,
    region: &'a str,
    tree: &'a TreeStack,
    destinations: &'a Destinations,
}

impl Planned<'_> {
    /// Locks every stack of the tree, checks that nothing changed since the plan, asks, and
    /// hands the tree over. `Ok(false)`: the user said no.
    async fn hand_over(
        &self,
        context: &CommandContext,
        store: &StateStore,
        cloudformation: &CloudFormation,
        live: &LiveProviders<'_>,
    ) -> anyhow::Result<bool> {
        let mut locks = Vec::new();
        for part in self.tree.all() {
            match store.locks.acquire(&part.name, self.region, "export").await {
                Ok(lock) => locks.push(lock),
                Err(err) => {
                    for lock in locks {
                        lock.release().await;
                    }
                    return Err(err.into());
                }
            }
        }
        let result = self
            .hand_over_locked(context, store, cloudformation, live)
            .await;
        for lock in locks {
            lock.release().await;
        }
        result
    }

    async fn hand_over_locked(
        &self,
        context: &CommandContext,
        store: &StateStore,
        cloudformation: &CloudFormation,
        live: &LiveProviders<'_>,
    ) -> anyhow::Result<bool> {
        let (stack, cfn_stack, region, tree) = (self.stack, self.cfn_stack, self.region, self.tree);
        // Planned without the locks: a deploy that ran meanwhile changed what is to be handed
        // over, so the plan no longer holds.
        for part in tree.all() {
            let locked = super::state::load(store, &part.name, region).await?;
            if locked.resources != part.state.resources {
                anyhow::bail!("stack {}'s state changed while the export was being planned (another cdkd command ran); nothing was changed, run cdkd export again", part.name);
            }
        }
        // Read again for the same reason: another export may have made or changed one.
        let locked = Destinations::read(cloudformation, tree, region).await?;
        if let Some(part) = (tree.all().into_iter())
            .find(|p| locked.by_stack.get(&p.name) != self.destinations.by_stack.get(&p.name))
        {
            anyhow::bail!("CloudFormation stack {} (where {} goes) changed while the export was being planned (another export ran?); nothing was changed, run cdkd export again", part.cfn_name, part.name);
        }
        let nested = tree.all().len() - 1;
        let question = if nested == 0 {
            format!("Hand stack {stack} ({region}) over to CloudFormation stack {cfn_stack}? Its resources stay as they are; cdkd's state record is deleted at the end.")
        } else {
            format!("Hand stack {stack} ({region}) and its {nested} nested stack(s) over to CloudFormation stack {cfn_stack}? Their resources stay as they are; cdkd's state records are deleted at the end.")
        };
        if !super::confirm(&question, context.assume_yes())? {
            println!("Nothing changed.");
            return Ok(false);
        }
        Handover {
            cloudformation,
            records: &store.backend,
            staging: &BucketStaging::new(store.backend.clone(), region),
            live,
            region,
        }
        .run(tree, self.destinations)
        .await?;
        Ok(true)
    }

    /// What the user does next, after a handover.
    fn print_done(&self, display: &str, overrides: &[String]) {
        let (stack, cfn_stack, region) = (self.stack, self.cfn_stack, self.region);
        let records = if self.tree.children.is_empty() {
            "cdkd's state record is deleted"
        } else {
            "cdkd's state records are deleted"
        };
        println!("{stack} ({region}) is now CloudFormation stack {cfn_stack}; {records} and every resource kept its id.");
        if cfn_stack != stack {
            println!("The CDK app still names the stack {stack}: give it stackName: '{cfn_stack}' before the next `cdk deploy`, which would otherwise create a second stack.");
        }
        if !overrides.is_empty() {
            let target = shell_word(display);
            println!(
                "Deploy it from now on with the same context: cdk diff {target} {0} && cdk deploy {target} {0}",
                overrides.join(" ")
            );
        }
    }
}

/// `word` as one shell word: as it is when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
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
            .import(crate::provisioning::operations::ReadCall {
                properties: &serde_json::Map::new(),
                ..crate::provisioning::operations::ReadCall::of(&logical_id, &row)
            })
            .await;
        match answer.map(|created| {
            created
                .attributes
                .get("Id")
                .and_then(Value::as_str)
                .map(str::to_string)
        }) {
            Ok(Some(id)) => plan.imports.push(Import {
                logical_id,
                resource_type: row.resource_type.clone(),
                physical_id: row.physical_id.clone(),
                identifier: serde_json::Map::from_iter([("Id".to_string(), Value::String(id))]),
            }),
            Ok(None) => plan.blocked.push(Blocked {
                logical_id,
                resource_type: row.resource_type.clone(),
                reason: format!(
                    "the rule's sgr- id is not recorded and AWS reports none for {}",
                    row.physical_id
                ),
            }),
            Err(err) => plan.blocked.push(Blocked {
                logical_id,
                resource_type: row.resource_type.clone(),
                reason: unreadable_rule(&err),
            }),
        }
    }
    Ok(())
}

/// Why a rule's `sgr-` id could not be read, with what to do: a missing permission and a
/// throttle (the provider has retried it with backoff) are named as such.
fn unreadable_rule(err: &cdkd_provider_api::ProviderError) -> String {
    use cdkd_provider_api::ErrorKind;
    let cause = if err.kind == ErrorKind::ACCESS_DENIED {
        "the credentials may not call ec2:DescribeSecurityGroupRules; grant it and run again"
    } else if err.kind == ErrorKind::THROTTLED {
        "EC2 kept throttling the lookup after cdkd's retries with backoff; run again later"
    } else {
        "run again, or record the rule's Id"
    };
    format!(
        "the rule's sgr- id is not recorded and could not be read from AWS ({cause}): {}",
        err.message
    )
}

fn print_plan(part: &TreeStack, region: &str) {
    let plan = &part.plan;
    println!(
        "Export {} ({region}) to CloudFormation stack {}:",
        part.name, part.cfn_name
    );
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
    for (logical_id, child) in &part.children {
        println!(
            "  nest      {logical_id} (AWS::CloudFormation::Stack): nested stack {}, exported first as CloudFormation stack {}",
            child.name, child.cfn_name
        );
    }
    for recreated in &plan.recreated {
        println!("  recreate  {} ({}): CloudFormation cannot import it; deleted after phase 1, created by phase 2", recreated.logical_id, recreated.resource_type);
    }
    for (logical_id, resource_type, why) in &plan.created {
        println!("  create    {logical_id} ({resource_type}): {why}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::{ErrorKind, ProviderError};

    #[test]
    fn a_word_with_shell_syntax_is_quoted() {
        assert_eq!(shell_word("env=prod"), "env=prod");
        assert_eq!(shell_word("Stage/Stack"), "Stage/Stack");
        assert_eq!(shell_word("name=a b"), "'name=a b'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn an_unreadable_rule_says_whether_permission_or_throttling_stopped_it() {
        let denied = unreadable_rule(&ProviderError::new(ErrorKind::ACCESS_DENIED, "denied"));
        assert!(
            denied.contains("ec2:DescribeSecurityGroupRules"),
            "{denied}"
        );
        let throttled = unreadable_rule(&ProviderError::new(ErrorKind::THROTTLED, "slow down"));
        assert!(throttled.contains("throttling"), "{throttled}");
        assert!(
            !throttled.contains("ec2:DescribeSecurityGroupRules"),
            "{throttled}"
        );
    }
}
