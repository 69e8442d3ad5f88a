//! `cdkd providers list | show | call`: what is loaded, who handles a type, and a direct call
//! into a provider (for plugin authors and the demo).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _};
use cdkd_provider_api::protocol::{CreateRequest, DeleteRequest, RefValue, UpdateRequest};
use clap::Subcommand;
use serde_json::{json, Map, Value};

use super::{table, CommandContext};
use crate::aws_env::AwsEnvironment;
use crate::provisioning::registry::{PluginStatus, Registry, Route, TypeOwner};

// Parsed once per process: boxing the large `Call` variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// List the plugins of the plugins file: version, provider-api version, status, types.
    List {
        /// Print JSON on stdout instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Say which plugin, or Cloud Control, would handle a resource type.
    Show {
        /// A CloudFormation type name, e.g. AWS::S3::Bucket.
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// Print JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Call one operation of the plugin that handles a type, and print its JSON answer.
    Call {
        /// The resource type.
        #[arg(value_name = "TYPE")]
        type_name: String,
        /// create, update, delete, read_current_state, import, get_attribute, or another
        /// operation the plugin lists.
        operation: String,
        /// The logical id to report to the plugin.
        #[arg(long, default_value = "Resource")]
        logical_id: String,
        /// The physical id (update, delete, read_current_state, import, get_attribute).
        #[arg(long)]
        physical_id: Option<String>,
        /// The resource properties as a JSON object.
        #[arg(long, value_name = "JSON")]
        properties: Option<String>,
        /// The properties before the change (update; default: the same as --properties).
        #[arg(long, value_name = "JSON")]
        previous_properties: Option<String>,
        /// The stack name to report (used for generated names).
        #[arg(long, default_value = "")]
        stack_name: String,
        /// The create's idempotency token (create: generated names derive from it;
        /// find_created: the token to look for).
        #[arg(long, default_value = "")]
        token: String,
        /// The attribute to read (get_attribute).
        #[arg(long)]
        attribute: Option<String>,
        /// Give up after this many seconds; the plugin's task is cancelled.
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<f64>,
    },
}

pub async fn run(context: &CommandContext, command: ProvidersCommand) -> anyhow::Result<ExitCode> {
    let registry = context.registry()?;
    match command {
        ProvidersCommand::List { json } => {
            if json {
                println!("{}", serde_json::to_string_pretty(&list_json(&registry))?);
            } else {
                print!("{}", list_table(&registry));
            }
            Ok(ExitCode::SUCCESS)
        }
        ProvidersCommand::Show { type_name, json } => show(&registry, &type_name, json),
        ProvidersCommand::Call {
            type_name,
            operation,
            logical_id,
            physical_id,
            properties,
            previous_properties,
            stack_name,
            token,
            attribute,
            timeout,
        } => {
            registry.warn_about_failures();
            let properties: Map<String, Value> = match properties {
                Some(text) => serde_json::from_str(&text)
                    .with_context(|| format!("--properties is not a JSON object: {text}"))?,
                None => Map::new(),
            };
            let previous_properties: Map<String, Value> = match previous_properties {
                Some(text) => serde_json::from_str(&text).with_context(|| {
                    format!("--previous-properties is not a JSON object: {text}")
                })?,
                None => properties.clone(),
            };
            let request = json!({
                "logicalId": logical_id,
                "physicalId": physical_id.unwrap_or_default(),
                "stackName": stack_name,
                "clientToken": token,
                "token": token,
                "properties": properties,
                "previousProperties": previous_properties,
                "attribute": attribute.unwrap_or_default(),
            });
            let aws = context.aws().await;
            let call = call(&registry, aws, &type_name, &operation, request);
            let answer = match timeout {
                Some(seconds) => tokio::time::timeout(Duration::from_secs_f64(seconds), call)
                    .await
                    .unwrap_or_else(|_| {
                        bail!("{operation} of {type_name} did not finish within {seconds} s; the plugin's task was cancelled")
                    }),
                None => call.await,
            };
            println!("{}", serde_json::to_string_pretty(&answer?)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn call(
    registry: &Registry,
    aws: &AwsEnvironment,
    type_name: &str,
    operation: &str,
    request: Value,
) -> anyhow::Result<Value> {
    let plugin = registry.plugin_for(type_name, aws).await?;
    let failed = |err| anyhow::anyhow!("{operation} of {type_name} failed: {err}");
    let answer = match operation {
        "create" => {
            let request: CreateRequest = serde_json::from_value(request)?;
            serde_json::to_value(plugin.create(type_name, &request).await.map_err(failed)?)?
        }
        "update" => {
            let request: UpdateRequest = serde_json::from_value(request)?;
            serde_json::to_value(plugin.update(type_name, &request).await.map_err(failed)?)?
        }
        "delete" => {
            let request: DeleteRequest = serde_json::from_value(request)?;
            serde_json::to_value(plugin.delete(type_name, &request).await.map_err(failed)?)?
        }
        other => plugin
            .invoke::<Value, Value>(other, type_name, &request)
            .await
            .map_err(failed)?,
    };
    Ok(answer)
}

fn status_word(status: &PluginStatus) -> &'static str {
    match status {
        PluginStatus::Disabled => "disabled",
        PluginStatus::Failed(_) => "failed",
        PluginStatus::Loaded(_) => "loaded",
    }
}

fn list_table(registry: &Registry) -> String {
    let rows: Vec<Vec<String>> = registry
        .slots()
        .iter()
        .map(|slot| {
            let (version, api, types) = match &slot.status {
                PluginStatus::Loaded(plugin) => {
                    let manifest = plugin.library().manifest();
                    // A type with no handled property only answers operations (snapshots, lookups).
                    let types: Vec<String> = manifest
                        .resource_types
                        .iter()
                        .map(|schema| match schema.handled_properties.is_empty() {
                            true => format!("{}(operations only)", schema.type_name),
                            false => schema.type_name.clone(),
                        })
                        .collect();
                    (
                        manifest.version.clone(),
                        plugin.library().api_version(),
                        types.join(","),
                    )
                }
                _ => ("-".into(), "-".into(), "-".into()),
            };
            vec![
                slot.spec.name.clone(),
                version,
                api,
                status_word(&slot.status).to_string(),
                slot.spec.path.display().to_string(),
                slot.spec.file.display().to_string(),
                types,
            ]
        })
        .collect();
    let mut out = table::render(
        &["NAME", "VERSION", "API", "STATUS", "PATH", "FROM", "TYPES"],
        &rows,
    );
    // Reasons are long (they name the file); one line each under the table keeps it readable.
    for slot in registry.slots() {
        if let PluginStatus::Failed(reason) = &slot.status {
            out.push_str(&format!("failed: plugin '{}': {reason}\n", slot.spec.name));
        }
    }
    for (type_name, owner) in registry.owners() {
        if let TypeOwner::Contested(claimants) = owner {
            out.push_str(&format!(
                "conflict: {type_name} is claimed by {}; set [owners] \"{type_name}\" = \"<plugin>\" in {}\n",
                claimants.join(", "),
                registry.file().path.display()
            ));
        }
    }
    if registry.slots().is_empty() {
        out.push_str("(no plugins: every AWS:: type goes to Cloud Control)\n");
    }
    out
}

fn list_json(registry: &Registry) -> Value {
    let plugins: Vec<Value> = registry
        .slots()
        .iter()
        .map(|slot| {
            let mut entry = json!({
                "name": slot.spec.name,
                "path": slot.spec.path,
                "requirement": slot.spec.version.to_string(),
                "enabled": slot.spec.enabled,
                "file": slot.spec.file,
            });
            match &slot.status {
                PluginStatus::Loaded(plugin) => {
                    let manifest = plugin.library().manifest();
                    entry["status"] = json!("loaded");
                    entry["version"] = json!(manifest.version);
                    entry["providerApiVersion"] = json!(plugin.library().api_version());
                    entry["description"] = json!(manifest.description);
                    entry["resourceTypes"] = json!(manifest.resource_types);
                }
                PluginStatus::Failed(reason) => {
                    entry["status"] = json!("failed");
                    entry["error"] = json!(reason);
                }
                PluginStatus::Disabled => entry["status"] = json!("disabled"),
            }
            entry
        })
        .collect();
    let conflicts: Vec<Value> = registry
        .owners()
        .iter()
        .filter_map(|(type_name, owner)| match owner {
            TypeOwner::Contested(claimants) => {
                Some(json!({"type": type_name, "plugins": claimants}))
            }
            TypeOwner::Plugin(_) => None,
        })
        .collect();
    json!({
        "pluginsFile": registry.file().path,
        "pluginsFileSource": registry.file().source.as_str(),
        "pluginsFiles": registry.file().layers.iter().map(|(path, source)| {
            json!({"path": path, "source": source.as_str()})
        }).collect::<Vec<_>>(),
        "hostProviderApiVersion": cdkd_provider_api::VERSION,
        "plugins": plugins,
        "conflicts": conflicts,
    })
}

fn show(registry: &Registry, type_name: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let route = registry.route(type_name);
    let (provisioned_by, handler, detail) = match &route {
        Route::Plugin { name, version } => ("sdk", format!("plugin {name} {version}"), None),
        Route::CloudControl => ("cc-api", "Cloud Control API".to_string(), None),
        Route::CustomResource => (
            "custom-resource",
            "custom-resource path (not supported yet: deploys refuse it)".to_string(),
            None,
        ),
        Route::Unroutable(reason) => ("none", "nothing".to_string(), Some(reason.clone())),
    };
    if as_json {
        let mut doc =
            json!({"type": type_name, "provisionedBy": provisioned_by, "handler": handler});
        if let Route::Plugin { name, version } = &route {
            doc["plugin"] = json!({"name": name, "version": version});
            doc["schema"] = json!(registry.schema(type_name));
        }
        if let Some(reason) = &detail {
            doc["error"] = json!(reason);
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!("{type_name}: {handler}");
        if let Some(schema) = registry.schema(type_name) {
            println!(
                "  handled properties:  {}",
                schema.handled_properties.join(", ")
            );
            if !schema.create_only_properties.is_empty() {
                println!(
                    "  create-only:         {}",
                    schema.create_only_properties.join(", ")
                );
            }
            if !schema.operations.is_empty() {
                println!("  optional operations: {}", schema.operations.join(", "));
            }
            if let Some(composite) = &schema.composite_id {
                println!("  composite id:        {}", composite.segments.join("|"));
                let reference = match &composite.ref_value {
                    RefValue::Whole => "the whole id".to_string(),
                    RefValue::Segment(index) => format!("segment {index}"),
                    RefValue::Attribute(name) => format!("attribute {name}"),
                };
                println!("  Ref returns:         {reference}");
            }
        }
        if let Some(reason) = detail {
            eprintln!("error: {reason}");
        }
    }
    Ok(if matches!(route, Route::Unroutable(_)) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
