//! `cdkd state list | show | info | resources | orphan | migrate` (`state destroy` is
//! [`super::deploy`]'s, `state refresh-observed` [`super::drift`]'s), and `cdkd orphan`.
//!
//! Stdout is the payload (records, tables, JSON); every log line goes to stderr. Routine
//! output never names the state bucket, whose name carries the account id; `state info`
//! does, because that is what it is asked for.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::app::{load_assembly, stack_target, AppArgs};
use super::{confirm, table, CommandContext};
use crate::analyzer::template::Template;
use crate::deployment::secrets::MASK;
use crate::deployment::store::RecordStore as _;
use crate::state::bootstrap;
use crate::state::bucket::{self, BucketSource};
use crate::state::keys::{child_stack_name, StackRef};
use crate::state::schema::{LockInfo, StackState, SCHEMA_VERSION_CURRENT};
use crate::state::store::StateStore;
use crate::synthesis::selection::select;

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// List the stacks with a state record, one `Stack (region)` per line.
    #[command(alias = "ls")]
    List {
        /// Add resource count, last modification and lock status.
        #[arg(long)]
        long: bool,
        /// Show nested stacks under their parents.
        #[arg(long)]
        tree: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one stack's whole record: metadata, lock, outputs, resources.
    Show {
        /// The stack.
        stack: String,
        /// The stack's region, when it has records in several.
        #[arg(long, value_name = "REGION")]
        stack_region: Option<String>,
        /// Print JSON (`{state, lock}`).
        #[arg(long)]
        json: bool,
        /// Also show every nested child stack's record.
        #[arg(long)]
        show_nested: bool,
    },
    /// Describe the state bucket: name, region, where the name came from, stacks.
    Info {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List one stack's resources.
    Resources {
        /// The stack.
        stack: String,
        /// The stack's region, when it has records in several.
        #[arg(long, value_name = "REGION")]
        stack_region: Option<String>,
        /// Add provisioning layer and dependencies.
        #[arg(long)]
        long: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Forget a stack: delete its state record, leave its AWS resources alone.
    Orphan {
        /// The stack.
        stack: String,
        /// The stack's region, when it has records in several.
        #[arg(long, value_name = "REGION")]
        stack_region: Option<String>,
        /// Do not ask for confirmation.
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Destroy stacks from their state records alone (no CDK app needed).
    Destroy(super::deploy::StateDestroyArgs),
    /// Read every recorded resource back from AWS as its drift baseline (`observedProperties`),
    /// without deploying.
    RefreshObserved(super::drift::RefreshObservedArgs),
    /// Copy state from a legacy `cdkd-state-{account}-{region}` bucket to the default bucket.
    Migrate {
        /// The region of the legacy bucket.
        #[arg(long)]
        region: String,
        /// Show what would be copied without copying.
        #[arg(long)]
        dry_run: bool,
        /// Delete the legacy bucket after a verified copy.
        #[arg(long)]
        remove_legacy: bool,
    },
}

pub async fn run(context: &CommandContext, command: StateCommand) -> anyhow::Result<ExitCode> {
    if let StateCommand::Migrate {
        region,
        dry_run,
        remove_legacy,
    } = command
    {
        return migrate(context, &region, dry_run, remove_legacy).await;
    }
    if let StateCommand::Destroy(args) = command {
        return super::deploy::state_destroy(context, args).await;
    }
    if let StateCommand::RefreshObserved(args) = command {
        return super::drift::refresh_observed(context, args).await;
    }
    let store = context.state().await?;
    match command {
        StateCommand::List { long, tree, json } => list(&store, long, tree, json).await,
        StateCommand::Show {
            stack,
            stack_region,
            json,
            show_nested,
        } => {
            let region = resolve_region(context, &store, &stack, stack_region.as_deref()).await?;
            show(context, &store, &stack, &region, json, show_nested).await
        }
        StateCommand::Info { json } => info(context, &store, json).await,
        StateCommand::Resources {
            stack,
            stack_region,
            long,
            json,
        } => {
            let region = resolve_region(context, &store, &stack, stack_region.as_deref()).await?;
            resources(&store, &stack, &region, long, json).await
        }
        StateCommand::Orphan {
            stack,
            stack_region,
            force,
        } => {
            let region = resolve_region(context, &store, &stack, stack_region.as_deref()).await?;
            orphan(context, &store, &stack, &region, force).await
        }
        StateCommand::Migrate { .. }
        | StateCommand::Destroy(_)
        | StateCommand::RefreshObserved(_) => unreachable!("handled above"),
    }
}

async fn resolve_region(
    context: &CommandContext,
    store: &StateStore,
    stack: &str,
    flag: Option<&str>,
) -> anyhow::Result<String> {
    let fallback = context.aws().await.region();
    Ok(store.stack_region(stack, flag, &fallback).await?)
}

pub(super) async fn load(
    store: &StateStore,
    stack: &str,
    region: &str,
) -> anyhow::Result<StackState> {
    match store.backend.load(stack, region).await? {
        Some(stored) => Ok(stored.state),
        None => anyhow::bail!(
            "no state record for stack {stack} in {region} (cdkd state list shows what exists)"
        ),
    }
}

struct Listed {
    stack: StackRef,
    state: Option<StackState>,
    lock: Option<LockInfo>,
    /// Why the record (or its lock) could not be read; the other stacks are still listed.
    problem: Option<String>,
}

async fn list(
    store: &StateStore,
    long: bool,
    tree: bool,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let stacks = store.backend.list_stacks().await?;
    let mut listed = Vec::with_capacity(stacks.len());
    for stack in stacks {
        let region = stack.region.clone().unwrap_or_default();
        let mut problem = None;
        let (state, lock) = if long || tree {
            let state = match store.backend.load(&stack.stack, &region).await {
                Ok(stored) => stored.map(|s| s.state),
                Err(err) => {
                    problem = Some(err.to_string());
                    None
                }
            };
            let lock = if long {
                match store.locks.read(&stack.stack, &region).await {
                    Ok(lock) => lock.map(|(info, _)| info),
                    Err(err) => {
                        problem.get_or_insert(err.to_string());
                        None
                    }
                }
            } else {
                None
            };
            (state, lock)
        } else {
            (None, None)
        };
        listed.push(Listed {
            stack,
            state,
            lock,
            problem,
        });
    }
    let unreadable: Vec<&Listed> = listed.iter().filter(|e| e.problem.is_some()).collect();
    for entry in &unreadable {
        eprintln!(
            "error: stack {} ({}): {}",
            entry.stack.stack,
            entry.stack.region.as_deref().unwrap_or("?"),
            entry.problem.as_deref().unwrap_or_default()
        );
    }
    let code = if unreadable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if tree {
        print_tree(&listed, long, as_json)?;
        return Ok(code);
    }
    if as_json {
        let rows: Vec<Value> = listed
            .iter()
            .map(|entry| list_entry_json(entry, long))
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else if long {
        let rows: Vec<Vec<String>> = listed.iter().map(long_row).collect();
        print!(
            "{}",
            table::render(
                &["STACK", "REGION", "RESOURCES", "LAST MODIFIED", "LOCK"],
                &rows
            )
        );
    } else {
        for entry in &listed {
            println!(
                "{} ({})",
                entry.stack.stack,
                entry.stack.region.as_deref().unwrap_or("?")
            );
        }
    }
    Ok(code)
}

fn format_millis(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || "-".into(),
        |at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}

fn lock_summary(lock: Option<&LockInfo>) -> String {
    match lock {
        None => "unlocked".into(),
        Some(info) => {
            let until = info
                .expires_at_millis()
                .map_or_else(|| "an invalid deadline".into(), format_millis);
            let expired = if info.is_expired(crate::state::schema::now_millis()) {
                ", expired"
            } else {
                ""
            };
            format!(
                "locked by {} ({}) until {until}{expired}",
                info.owner,
                info.operation.as_deref().unwrap_or("unknown")
            )
        }
    }
}

fn long_row(entry: &Listed) -> Vec<String> {
    vec![
        entry.stack.stack.clone(),
        entry.stack.region.clone().unwrap_or_default(),
        match (&entry.problem, &entry.state) {
            (Some(_), _) => "unreadable".into(),
            (None, state) => state
                .as_ref()
                .map_or_else(|| "-".into(), |s| s.resources.len().to_string()),
        },
        entry
            .state
            .as_ref()
            .map_or_else(|| "-".into(), |s| format_millis(s.last_modified)),
        lock_summary(entry.lock.as_ref()),
    ]
}

fn list_entry_json(entry: &Listed, long: bool) -> Value {
    let mut row = json!({"stackName": entry.stack.stack, "region": entry.stack.region});
    if long {
        row["resourceCount"] = json!(entry.state.as_ref().map(|s| s.resources.len()));
        row["lastModified"] = json!(entry.state.as_ref().map(|s| s.last_modified));
        row["locked"] = json!(entry.lock.is_some());
        row["lock"] = json!(entry.lock);
        if let Some(problem) = &entry.problem {
            row["error"] = json!(problem);
        }
    }
    row
}

fn print_tree(listed: &[Listed], long: bool, as_json: bool) -> anyhow::Result<()> {
    // A child whose parent record is missing stays visible at the root.
    let key = |stack: &str, region: &str| format!("{stack}\u{0}{region}");
    let present: std::collections::HashSet<String> = listed
        .iter()
        .map(|e| key(&e.stack.stack, e.stack.region.as_deref().unwrap_or("")))
        .collect();
    let mut children: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut roots = Vec::new();
    for (index, entry) in listed.iter().enumerate() {
        let parent = entry.state.as_ref().and_then(|s| {
            let parent = s.parent_stack.as_deref()?;
            let region = s.parent_region.as_deref().or(s.region.as_deref())?;
            Some(key(parent, region))
        });
        match parent {
            Some(parent) if present.contains(&parent) => {
                children.entry(parent).or_default().push(index)
            }
            _ => roots.push(index),
        }
    }
    fn node_json(
        index: usize,
        listed: &[Listed],
        children: &BTreeMap<String, Vec<usize>>,
        long: bool,
    ) -> Value {
        let entry = &listed[index];
        let mut row = list_entry_json(entry, long);
        let own = format!(
            "{}\u{0}{}",
            entry.stack.stack,
            entry.stack.region.as_deref().unwrap_or("")
        );
        row["children"] = Value::Array(
            children
                .get(&own)
                .into_iter()
                .flatten()
                .map(|&child| node_json(child, listed, children, long))
                .collect(),
        );
        row
    }
    fn node_lines(
        index: usize,
        listed: &[Listed],
        children: &BTreeMap<String, Vec<usize>>,
        prefix: &str,
        lines: &mut Vec<String>,
    ) {
        let entry = &listed[index];
        let own = format!(
            "{}\u{0}{}",
            entry.stack.stack,
            entry.stack.region.as_deref().unwrap_or("")
        );
        let kids = children.get(&own).cloned().unwrap_or_default();
        for (position, child) in kids.iter().enumerate() {
            let last = position + 1 == kids.len();
            let entry = &listed[*child];
            lines.push(format!(
                "{prefix}{}{} ({})",
                if last { "└── " } else { "├── " },
                entry.stack.stack,
                entry.stack.region.as_deref().unwrap_or("?")
            ));
            let deeper = format!("{prefix}{}", if last { "    " } else { "│   " });
            node_lines(*child, listed, children, &deeper, lines);
        }
    }
    if as_json {
        let tree: Vec<Value> = roots
            .iter()
            .map(|&i| node_json(i, listed, &children, long))
            .collect();
        println!("{}", serde_json::to_string_pretty(&tree)?);
    } else {
        for &root in &roots {
            let entry = &listed[root];
            println!(
                "{} ({})",
                entry.stack.stack,
                entry.stack.region.as_deref().unwrap_or("?")
            );
            let mut lines = Vec::new();
            node_lines(root, listed, &children, "", &mut lines);
            for line in lines {
                println!("{line}");
            }
        }
    }
    Ok(())
}

fn render_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// One stack and, with `--show-nested`, its children, as the JSON document `show` prints.
async fn show_json(
    store: &StateStore,
    stack: &str,
    region: &str,
    nested: bool,
) -> anyhow::Result<Value> {
    let state = load(store, stack, region).await?;
    let lock = store.locks.read(stack, region).await?.map(|(info, _)| info);
    let mut doc = json!({"state": state, "lock": lock});
    if nested {
        let mut children = Vec::new();
        for child in nested_children(&state) {
            let child_name = child_stack_name(stack, &child);
            let child_doc = Box::pin(show_json(store, &child_name, region, true))
                .await
                .with_context(|| {
                    format!(
                        "stack {stack} lists nested stack {child}, but its record {child_name} cannot be read; run `cdkd state orphan {stack}` and re-deploy, or finish the operation that tore the tree"
                    )
                })?;
            children.push(child_doc);
        }
        doc["children"] = Value::Array(children);
    }
    Ok(doc)
}

fn nested_children(state: &StackState) -> Vec<String> {
    state
        .resources
        .iter()
        .filter(|(_, r)| r.resource_type == "AWS::CloudFormation::Stack")
        .map(|(id, _)| id.clone())
        .collect()
}

async fn show(
    context: &CommandContext,
    store: &StateStore,
    stack: &str,
    region: &str,
    as_json: bool,
    nested: bool,
) -> anyhow::Result<ExitCode> {
    let mut doc = show_json(store, stack, region, nested).await?;
    let registry = context.registry().ok();
    mask_sensitive(&mut doc, &|resource_type| {
        sensitive_attributes(registry.as_deref(), resource_type)
    });
    if as_json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_show(&doc, true);
    Ok(ExitCode::SUCCESS)
}

/// The attributes of `resource_type` that hold secrets: the owning plugin's declaration, and
/// CloudFormation's own for the types whose secrets it returns as attributes.
fn sensitive_attributes(
    registry: Option<&crate::provisioning::registry::Registry>,
    resource_type: &str,
) -> Vec<String> {
    let mut names: Vec<String> = registry
        .and_then(|r| r.schema(resource_type))
        .map(|schema| schema.sensitive_attributes.clone())
        .unwrap_or_default();
    if resource_type == "AWS::IAM::AccessKey" && !names.iter().any(|n| n == "SecretAccessKey") {
        names.push("SecretAccessKey".into());
    }
    names
}

/// Masks sensitive attributes in every resource record of a `state show` document.
fn mask_sensitive(doc: &mut Value, sensitive: &dyn Fn(&str) -> Vec<String>) {
    match doc {
        Value::Object(object) => {
            let kind = object
                .get("resourceType")
                .and_then(Value::as_str)
                .map(str::to_string);
            if let (Some(kind), Some(Value::Object(attributes))) =
                (kind, object.get_mut("attributes"))
            {
                for name in sensitive(&kind) {
                    if let Some(value) = attributes.get_mut(&name) {
                        *value = json!(MASK);
                    }
                }
            }
            for value in object.values_mut() {
                mask_sensitive(value, sensitive);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| mask_sensitive(v, sensitive)),
        _ => {}
    }
}
fn print_show(doc: &Value, first: bool) {
    let state: StackState = match serde_json::from_value(doc["state"].clone()) {
        Ok(state) => state,
        Err(err) => {
            eprintln!(
                "cannot show this record ({err}); `cdkd state show --json` prints it as stored"
            );
            return;
        }
    };
    let lock: Option<LockInfo> = serde_json::from_value(doc["lock"].clone()).ok().flatten();
    if !first {
        println!();
        println!("Nested stack: {}", state.stack_name);
    }
    println!("Stack:         {}", state.stack_name);
    println!("Region:        {}", state.region.as_deref().unwrap_or("?"));
    println!("Schema:        {}", state.version);
    println!("Last modified: {}", format_millis(state.last_modified));
    println!("Lock:          {}", lock_summary(lock.as_ref()));
    if let Some(parent) = &state.parent_stack {
        println!(
            "Parent:        {parent} (as {})",
            state.parent_logical_id.as_deref().unwrap_or("?")
        );
    }
    println!(
        "Outputs:{}",
        if state.outputs.is_empty() {
            " (none)"
        } else {
            ""
        }
    );
    for (name, value) in &state.outputs {
        println!("  {name} = {}", render_value(value));
    }
    println!("Resources ({}):", state.resources.len());
    for (logical_id, resource) in &state.resources {
        println!("  {logical_id}  {}", resource.resource_type);
        println!("    PhysicalId:    {}", resource.physical_id);
        let provisioned = resource
            .provisioned_by
            .map_or("(sdk, legacy default)", |p| p.as_str());
        println!("    ProvisionedBy: {provisioned}");
        if let Some(policy) = &resource.deletion_policy {
            println!("    DeletionPolicy: {policy}");
        }
        if let Some(policy) = &resource.update_replace_policy {
            println!("    UpdateReplacePolicy: {policy}");
        }
        if let Some(deps) = resource.dependencies.as_ref().filter(|d| !d.is_empty()) {
            println!("    Dependencies:  {}", deps.join(", "));
        }
        println!(
            "    Properties:    {}",
            Value::Object(resource.properties.clone())
        );
        if let Some(attributes) = resource.attributes.as_ref().filter(|a| !a.is_empty()) {
            println!("    Attributes:    {}", Value::Object(attributes.clone()));
        }
    }
    for child in doc["children"].as_array().into_iter().flatten() {
        print_show(child, false);
    }
}

async fn info(
    context: &CommandContext,
    store: &StateStore,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let aws = context.aws().await;
    let region = bucket::bucket_region(aws, &store.bucket.name).await;
    let stacks = store.backend.list_stacks().await?;
    let asset_regions =
        bootstrap::opted_in_regions(store.backend.client()?, &store.bucket.name).await?;
    let doc = json!({
        "bucket": store.bucket.name,
        "region": region,
        "source": store.bucket.source.as_str(),
        "prefix": store.backend.keys().prefix(),
        "schemaVersion": SCHEMA_VERSION_CURRENT,
        "stackCount": stacks.len(),
        "assetRegions": asset_regions,
    });
    if as_json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("Bucket:         {}", store.bucket.name);
        println!("Region:         {region}");
        println!("Source:         {}", store.bucket.source.as_str());
        if store.bucket.source == BucketSource::LegacyDefault {
            println!("                (legacy name: run `cdkd state migrate --region {region}`)");
        }
        println!("Prefix:         {}", store.backend.keys().prefix());
        println!("Schema version: {SCHEMA_VERSION_CURRENT}");
        println!("Stacks:         {}", stacks.len());
        println!(
            "Asset regions:  {}",
            if asset_regions.is_empty() {
                "(none)".to_string()
            } else {
                asset_regions.join(", ")
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn resources(
    store: &StateStore,
    stack: &str,
    region: &str,
    long: bool,
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    let state = load(store, stack, region).await?;
    if as_json {
        let rows: Vec<Value> = state
            .resources
            .iter()
            .map(|(id, r)| {
                let mut row = json!({"logicalId": id, "resourceType": r.resource_type, "physicalId": r.physical_id});
                if long {
                    row["provisionedBy"] = json!(r.provisioned_by);
                    row["dependencies"] = json!(r.dependencies);
                }
                row
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = state
        .resources
        .iter()
        .map(|(id, r)| {
            let mut row = vec![id.clone(), r.resource_type.clone(), r.physical_id.clone()];
            if long {
                row.push(
                    r.provisioned_by
                        .map_or("(sdk, legacy default)", |p| p.as_str())
                        .to_string(),
                );
                row.push(
                    r.dependencies
                        .as_ref()
                        .map(|d| d.join(","))
                        .unwrap_or_default(),
                );
            }
            row
        })
        .collect();
    let headers: &[&str] = if long {
        &[
            "LOGICAL ID",
            "TYPE",
            "PHYSICAL ID",
            "PROVISIONED BY",
            "DEPENDENCIES",
        ]
    } else {
        &["LOGICAL ID", "TYPE", "PHYSICAL ID"]
    };
    print!("{}", table::render(headers, &rows));
    Ok(ExitCode::SUCCESS)
}

pub(super) async fn orphan(
    context: &CommandContext,
    store: &StateStore,
    stack: &str,
    region: &str,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let state = load(store, stack, region).await?;
    let question = format!(
        "Forget stack {stack} ({region})? Its {} resource(s) stay in AWS, no longer managed by cdkd.",
        state.resources.len()
    );
    if !confirm(&question, force || context.assume_yes())? {
        println!("Nothing changed.");
        return Ok(ExitCode::SUCCESS);
    }
    let lock = store.locks.acquire(stack, region, "orphan").await?;
    let result = async {
        store.backend.forget(stack, region).await?;
        anyhow::Ok(())
    }
    .await;
    lock.release().await;
    result?;
    println!(
        "Forgot stack {stack} ({region}); its {} resource(s) are left in AWS untouched.",
        state.resources.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Forgets some resources of a stack (a construct's): their records go, the resources stay in
/// AWS. Under the stack's lock, conditional on the record read.
pub(super) async fn orphan_resources(
    context: &CommandContext,
    store: &StateStore,
    stack: &str,
    region: &str,
    logical_ids: &[String],
    force: bool,
) -> anyhow::Result<()> {
    let question = format!(
        "Forget {} of stack {stack} ({region})? They stay in AWS, no longer managed by cdkd.",
        logical_ids.join(", ")
    );
    if !confirm(&question, force || context.assume_yes())? {
        println!("Nothing changed.");
        return Ok(());
    }
    let lock = store.locks.acquire(stack, region, "orphan").await?;
    let result = async {
        let Some(stored) = store.backend.load(stack, region).await? else {
            anyhow::bail!(
                "no state record for stack {stack} in {region} (cdkd state list shows what exists)"
            );
        };
        let mut state = stored.state.clone();
        let forgotten: Vec<String> = logical_ids
            .iter()
            .filter(|id| state.resources.remove(id.as_str()).is_some())
            .cloned()
            .collect();
        if !forgotten.is_empty() {
            store
                .backend
                .save(stack, region, &mut state, Some(&stored))
                .await?;
        }
        anyhow::Ok(forgotten)
    }
    .await;
    lock.release().await;
    let forgotten = result?;
    if forgotten.is_empty() {
        println!(
            "{stack} ({region}) records none of {}; nothing changed.",
            logical_ids.join(", ")
        );
    } else {
        println!(
            "Forgot {} of {stack} ({region}); they are left in AWS untouched. Remove the construct from the app, or the next deploy creates it again (`cdkd import` adopts it back).",
            forgotten.join(", ")
        );
    }
    Ok(())
}

async fn migrate(
    context: &CommandContext,
    region: &str,
    dry_run: bool,
    remove_legacy: bool,
) -> anyhow::Result<ExitCode> {
    let aws = context.aws().await;
    let account = bucket::account_id(aws).await?;
    let source = bucket::legacy_bucket_name(&account, region);
    let destination = context
        .global
        .state_bucket
        .clone()
        .unwrap_or_else(|| bucket::default_bucket_name(&account));
    if !bucket::bucket_exists(aws, &source).await? {
        anyhow::bail!("there is no legacy state bucket {source} to migrate");
    }
    let source_client = bucket::state_bucket_client(aws, &source).await?;
    let keys = crate::state::keys::StateKeys::new(&context.global.state_prefix);
    let source_store =
        crate::state::backend::StateBackend::new(source_client.clone(), &source, keys.clone());
    let objects = source_store.list_keys("").await?;
    let locks: Vec<&String> = objects.iter().filter(|k| keys.is_lock_key(k)).collect();
    if !locks.is_empty() {
        anyhow::bail!(
            "refusing to migrate while {} lock(s) exist in {source} (a deploy or destroy may be running): {}. Wait, or clear a stale one with `cdkd force-unlock <stack> --stack-region <region>`",
            locks.len(),
            locks.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    if dry_run {
        println!(
            "Would copy {} object(s) from {source} to {destination}:",
            objects.len()
        );
        for key in &objects {
            println!("  {key}");
        }
        if remove_legacy {
            println!("Would then delete {source}.");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let dest_region = if bucket::bucket_exists(aws, &destination).await? {
        bucket::bucket_region(aws, &destination).await
    } else {
        let plan = bootstrap::BootstrapPlan {
            account: account.clone(),
            region: aws.region(),
            state_bucket: destination.clone(),
            assets: None,
        };
        bootstrap::bootstrap(
            &bucket::owned_s3_client(aws, &aws.region(), &account),
            &plan,
        )
        .await?;
        aws.region()
    };
    let dest_client = bucket::owned_s3_client(aws, &dest_region, &account);
    for key in &objects {
        dest_client
            .copy_object()
            .bucket(&destination)
            .key(key)
            .copy_source(format!("{source}/{key}"))
            .send()
            .await
            .map_err(|err| {
                anyhow::anyhow!(
                    "cannot copy {key}: {}",
                    crate::state::s3_error::S3Failure::from_sdk(&err)
                )
            })?;
    }
    let dest_store = crate::state::backend::StateBackend::new(dest_client, &destination, keys);
    let copied = dest_store.list_keys("").await?;
    let missing: Vec<&String> = objects.iter().filter(|k| !copied.contains(k)).collect();
    if !missing.is_empty() || copied.len() < objects.len() {
        anyhow::bail!(
            "the copy is incomplete ({} of {} objects found in {destination}; missing: {}); the legacy bucket was kept",
            copied.len(),
            objects.len(),
            missing.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    println!(
        "Copied {} object(s) from {source} to {destination}.",
        objects.len()
    );
    if remove_legacy {
        bootstrap::delete_bucket_completely(&source_client, &source).await?;
        println!("Deleted the legacy bucket {source} (every version).");
    } else {
        println!("Kept {source}; re-run with --remove-legacy to delete it once you have checked {destination}.");
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct OrphanArgs {
    /// Stacks to forget (names or display paths, `*` wildcards; `--stack NAME` also works), or construct paths
    /// (`Stack/Construct/Path`) whose resources alone to forget.
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Every stack of the app.
    #[arg(long)]
    all: bool,
    /// Do not ask for confirmation.
    #[arg(long, short = 'f')]
    force: bool,
}

/// `cdkd orphan`: forget the app's stacks (their records), leaving every resource in AWS.
pub async fn orphan_command(
    context: &CommandContext,
    args: OrphanArgs,
) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    // A name that is no stack but starts with one's display path is a construct path in it.
    let mut constructs = Vec::new();
    let mut patterns = Vec::new();
    for name in &args.stacks {
        let is_stack = select(&assembly, std::slice::from_ref(name), false, true).is_ok();
        let owner = (!is_stack)
            .then(|| {
                assembly
                    .stacks
                    .iter()
                    .filter(|s| name.starts_with(&format!("{}/", s.display_name)))
                    .max_by_key(|s| s.display_name.len())
            })
            .flatten();
        match owner {
            Some(stack) => constructs.push((stack, name.clone())),
            None => patterns.push(name.clone()),
        }
    }
    let store = context.state().await?;
    for (stack, path) in constructs {
        let (_, region) = stack_target(context, stack).await?;
        let template = Template::parse(&stack.template()?)
            .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
        let covered = template.resources_under(&path);
        if covered.is_empty() {
            anyhow::bail!(
                "no resource of stack {} is under the construct path {path} (the template's aws:cdk:path metadata names none; `cdkd state resources {}` lists what is recorded)",
                stack.display_name,
                stack.stack_name
            );
        }
        orphan_resources(
            context,
            &store,
            &stack.stack_name,
            &region,
            &covered,
            args.force,
        )
        .await?;
    }
    // No name at all is the app's only stack (or a refusal naming the stacks), as elsewhere.
    if !patterns.is_empty() || args.all || args.stacks.is_empty() {
        for stack in select(&assembly, &patterns, args.all, true)? {
            let (_, region) = stack_target(context, stack).await?;
            orphan(context, &store, &stack.stack_name, &region, args.force).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
