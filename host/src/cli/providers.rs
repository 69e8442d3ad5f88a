//! `cdkd providers list | show | call | trust | untrust | lock | install | remove`: what is
//! configured and who handles a type (answered from manifests, loading no library once they
//! are known), a direct call into a provider (for plugin authors and the demo), trusting a
//! project's plugins file, pinning a file's libraries, and the user's own installed plugins.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context as _};
use cdkd_provider_api::protocol::{CreateRequest, DeleteRequest, RefValue, UpdateRequest};
use clap::Subcommand;
use serde_json::{json, Map, Value};

use std::collections::BTreeMap;
use std::path::Path;

use cdkd_provider_api::protocol::best_match;

use super::{table, CommandContext};
use crate::aws_env::AwsEnvironment;
use crate::provisioning::manifest_cache::ManifestCache;
use crate::provisioning::plugins_file::{PluginsFile, PluginsFileSource};
use crate::provisioning::registry::{PluginStatus, Registry, Route, TypeOwner};
use crate::provisioning::trust::TrustStore;
use crate::provisioning::user_plugins;
use crate::state::schema::ProvisionedBy;

// Parsed once per process: boxing the large `Call` variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum ProvidersCommand {
    /// List the plugins of the plugins files: version, provider-api version, status, types.
    List {
        /// Print JSON on stdout instead of a table.
        #[arg(long)]
        json: bool,
        /// Also hash every library and compare it with its pin (loads none).
        #[arg(long)]
        verify: bool,
    },
    /// Trust a project's plugins file: record its hash and its libraries' so cdkd loads them.
    Trust {
        /// The plugins file (default: ./plugins.toml).
        #[arg(value_name = "FILE", default_value = "plugins.toml")]
        file: std::path::PathBuf,
    },
    /// Forget the trust given to a project's plugins file.
    Untrust {
        /// The plugins file (default: ./plugins.toml).
        #[arg(value_name = "FILE", default_value = "plugins.toml")]
        file: std::path::PathBuf,
    },
    /// Pin every library of a plugins file by its SHA-256 (loads none).
    Lock {
        /// The plugins file to pin.
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// Write the pinned file here instead of in place (relative library paths are then
        /// written relative to it, and FILE is recorded as its source).
        #[arg(long, value_name = "OUT")]
        output: Option<std::path::PathBuf>,
        /// Copy each enabled library into this folder first and pin the copies (a package:
        /// the source file is not recorded).
        #[arg(long, value_name = "DIR")]
        copy_into: Option<std::path::PathBuf>,
        /// With --copy-into: store each copy gzip-compressed (`NAME.gz`, about a third of the
        /// size); cdkd inflates it into memory when it loads it (Linux only).
        #[arg(long, requires = "copy_into")]
        compress: bool,
    },
    /// Install a provider archive (.tar.gz) for this user: pinned in the user's plugins file.
    Install {
        /// The archive: provider.toml and the library it names.
        #[arg(value_name = "ARCHIVE")]
        archive: std::path::PathBuf,
    },
    /// Remove a plugin installed with `providers install` (refused while state records use it).
    Remove {
        /// The plugin's name.
        name: String,
        /// Remove it even though deployed stacks' records were provisioned by it.
        #[arg(long)]
        force: bool,
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
        #[arg(long, value_name = "SECONDS", value_parser = crate::seconds::parse)]
        timeout: Option<Duration>,
    },
}

pub async fn run(context: &CommandContext, command: ProvidersCommand) -> anyhow::Result<ExitCode> {
    match command {
        ProvidersCommand::Trust { file } => return trust(&file),
        ProvidersCommand::Untrust { file } => {
            let store = TrustStore::for_user()
                .context("no folder to keep trust in: set XDG_CONFIG_HOME or HOME")?;
            let shown = file.display();
            match store.untrust(&file)? {
                true => println!("{shown} is no longer trusted"),
                false => println!("{shown} was not trusted"),
            }
            return Ok(ExitCode::SUCCESS);
        }
        ProvidersCommand::Lock {
            file,
            output,
            copy_into,
            compress,
        } => return lock(&file, output.as_deref(), copy_into.as_deref(), compress),
        ProvidersCommand::Install { archive } => {
            let done = user_plugins::install(&archive, ManifestCache::for_user().as_ref())?;
            match &done.replaced {
                Some(old) => println!("installed {} {} (was {old})", done.name, done.version),
                None => println!("installed {} {}", done.name, done.version),
            }
            println!("  library: {}", done.library.display());
            println!("  sha256:  {}", done.sha256);
            println!("  pinned in {}", done.plugins_file.display());
            return Ok(ExitCode::SUCCESS);
        }
        ProvidersCommand::Remove { name, force } => return remove(context, &name, force).await,
        _ => {}
    }
    let registry = context.registry()?;
    match command {
        ProvidersCommand::List { json, verify } => {
            let verified = verify.then(|| verify_pins(&registry));
            if json {
                let mut doc = list_json(&registry);
                if let (Some(verified), Some(plugins)) = (&verified, doc["plugins"].as_array_mut())
                {
                    for entry in plugins {
                        if let Some(problem) = entry["name"].as_str().and_then(|n| verified.get(n))
                        {
                            entry["verified"] = json!(problem.is_none());
                            if let Some(problem) = problem {
                                entry["verifyError"] = json!(problem);
                            }
                        }
                    }
                }
                println!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                print!("{}", list_table(&registry));
                for (name, problem) in verified.iter().flatten() {
                    match problem {
                        None => println!("verified: plugin '{name}' matches its pin"),
                        Some(problem) => println!("MISMATCH: plugin '{name}': {problem}"),
                    }
                }
            }
            let mismatched = verified
                .iter()
                .flatten()
                .any(|(_, problem)| problem.is_some());
            Ok(if mismatched {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
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
                Some(limit) => tokio::time::timeout(limit, call)
                    .await
                    .unwrap_or_else(|_| {
                        bail!("{operation} of {type_name} did not finish within {} s; the plugin's task was cancelled", limit.as_secs_f64())
                    }),
                None => call.await,
            };
            println!("{}", serde_json::to_string_pretty(&answer?)?);
            Ok(ExitCode::SUCCESS)
        }
        _ => unreachable!("answered above without the registry"),
    }
}

/// `providers trust FILE`.
fn trust(file: &Path) -> anyhow::Result<ExitCode> {
    let store = TrustStore::for_user()
        .context("no folder to keep trust in: set XDG_CONFIG_HOME or HOME")?;
    let record = store.trust(file)?;
    println!(
        "trusted {} (sha256 {})",
        record.file.display(),
        record.sha256
    );
    for (library, sha256) in &record.libraries {
        println!("  {}  sha256 {sha256}", library.display());
    }
    for library in &record.missing {
        println!(
            "  {}  not found: not loaded until it exists and the file is trusted again",
            library.display()
        );
    }
    if record.libraries.is_empty() && record.missing.is_empty() {
        println!("  (it names no enabled library)");
    }
    println!(
        "a change to the file or to one of these libraries needs `cdkd providers trust` again"
    );
    Ok(ExitCode::SUCCESS)
}

/// `providers lock FILE [--output OUT] [--copy-into DIR [--compress]]`.
fn lock(
    file: &Path,
    output: Option<&Path>,
    copy_into: Option<&Path>,
    compress: bool,
) -> anyhow::Result<ExitCode> {
    let source = crate::provisioning::trust::canonical(file);
    let bytes = std::fs::read(&source)
        .with_context(|| format!("cannot read plugins file {}", file.display()))?;
    let mut parsed = PluginsFile::parse(
        &String::from_utf8_lossy(&bytes),
        &source,
        PluginsFileSource::Flag,
    )?;
    let output = match output {
        Some(output) => std::path::absolute(output).context("the output path")?,
        None => source.clone(),
    };
    if let Some(dir) = copy_into {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut pins = BTreeMap::new();
    let mut copied = std::collections::BTreeSet::new();
    for spec in &mut parsed.plugins {
        if !spec.path.is_file() {
            if spec.enabled {
                bail!(
                    "cannot lock {}: plugin '{}' names {}, which does not exist; build it first or set enabled = false",
                    file.display(),
                    spec.name,
                    spec.path.display()
                );
            }
            continue;
        }
        if let (Some(dir), true) = (copy_into, spec.enabled) {
            let name = spec
                .path
                .file_name()
                .context("a library path names a file")?;
            if !copied.insert(name.to_os_string()) {
                bail!(
                    "cannot lock {} into {}: two plugins' libraries are both named {}",
                    file.display(),
                    dir.display(),
                    name.to_string_lossy()
                );
            }
            let copy = std::path::absolute(dir.join(name))?;
            let copied = if compress {
                let copy = copy.with_file_name(format!("{}.gz", name.to_string_lossy()));
                gzip(&spec.path, &copy).map(|()| copy)
            } else {
                std::fs::copy(&spec.path, &copy).map(|_| copy)
            };
            spec.path = copied.with_context(|| {
                format!("cannot copy {} into {}", spec.path.display(), dir.display())
            })?;
        }
        let sha256 = cdkd_provider_api::host::sha256_file(&spec.path)
            .with_context(|| format!("cannot read {}", spec.path.display()))?;
        pins.insert(spec.name.clone(), sha256);
    }
    if output == source && copy_into.is_none() {
        // In place: only the pins change, the file keeps its comments, placeholders and keys.
        let mut document = String::from_utf8_lossy(&bytes)
            .parse::<toml_edit::DocumentMut>()
            .with_context(|| format!("cannot edit {}", file.display()))?;
        if let Some(entries) = document
            .get_mut("plugin")
            .and_then(toml_edit::Item::as_array_of_tables_mut)
        {
            for entry in entries.iter_mut() {
                let name = entry
                    .get("name")
                    .and_then(|n| n.as_str())
                    .map(str::to_string);
                if let Some(pin) = name.and_then(|name| pins.get(&name)) {
                    entry["sha256"] = toml_edit::value(pin.as_str());
                }
            }
        }
        write_atomically(&output, document.to_string())?;
        println!("locked {} plugins in {}", pins.len(), output.display());
        return Ok(ExitCode::SUCCESS);
    }
    // A development build's file remembers its source, so the workspace's own plugins.toml is
    // not a second layer; a package (`--copy-into`) stands alone.
    let recorded_source = (output != source && copy_into.is_none())
        .then(|| crate::provisioning::trust::sha256_hex(&bytes))
        .map(|hash| (source.clone(), hash));
    let text = parsed.to_locked_toml(
        &output,
        &pins,
        recorded_source
            .as_ref()
            .map(|(path, hash)| (path.as_path(), hash.as_str())),
    );
    write_atomically(&output, text)?;
    println!("locked {} plugins into {}", pins.len(), output.display());
    Ok(ExitCode::SUCCESS)
}

/// Writes `from` gzip-compressed to `to`.
fn gzip(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut input = std::io::BufReader::new(std::fs::File::open(from)?);
    let output = std::io::BufWriter::new(std::fs::File::create(to)?);
    let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
    std::io::copy(&mut input, &mut encoder)?;
    use std::io::Write;
    encoder.finish()?.flush()
}

/// Writes `text` beside `path` and renames it there: a cdkd starting meanwhile reads the old
/// file or the new one, never half of one.
fn write_atomically(path: &Path, text: String) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let draft = path.with_extension(format!("toml.{}", std::process::id()));
    std::fs::write(&draft, text).with_context(|| format!("cannot write {}", draft.display()))?;
    std::fs::rename(&draft, path).with_context(|| format!("cannot write {}", path.display()))
}

/// `providers list --verify`: each ready plugin's library hashed and compared with its pin.
fn verify_pins(registry: &Registry) -> BTreeMap<String, Option<String>> {
    registry
        .slots()
        .iter()
        .filter_map(|slot| match &slot.status {
            PluginStatus::Ready(plugin) => {
                let problem = match cdkd_provider_api::host::sha256_file(&slot.spec.path) {
                    Ok(actual) if actual == plugin.sha256() => None,
                    Ok(actual) => Some(format!(
                        "{} is {actual}, but its pin is {}",
                        slot.spec.path.display(),
                        plugin.sha256()
                    )),
                    Err(err) => Some(format!("cannot read {}: {err}", slot.spec.path.display())),
                };
                Some((slot.spec.name.clone(), problem))
            }
            _ => None,
        })
        .collect()
}

/// `providers remove NAME [--force]`: refused while a state record was provisioned by it.
async fn remove(context: &CommandContext, name: &str, force: bool) -> anyhow::Result<ExitCode> {
    if !force {
        let registry = context.registry()?;
        let Some(slot) = registry.slots().iter().find(|slot| slot.spec.name == name) else {
            bail!("no plugin named '{name}' is configured (`cdkd providers list` shows them)");
        };
        let PluginStatus::Ready(plugin) = &slot.status else {
            bail!("plugin '{name}' is not usable, so the types it handles are unknown; pass --force to remove it without checking the state");
        };
        let types: Vec<String> = plugin
            .manifest()
            .resource_types
            .iter()
            .filter(|schema| !schema.handled_properties.is_empty())
            .map(|schema| schema.type_name.clone())
            .collect();
        let store = context.state().await.with_context(|| {
            format!("cannot read the state to check that no stack uses plugin '{name}'; pass --force to remove it anyway")
        })?;
        let mut users = Vec::new();
        for stack in store.backend.list_stacks().await? {
            let region = stack.region.clone().unwrap_or_default();
            let Some(stored) = store.backend.load(&stack.stack, &region).await? else {
                continue;
            };
            let count = stored
                .state
                .resources
                .values()
                .filter(|r| r.provisioned_by != Some(ProvisionedBy::CcApi))
                .filter(|r| {
                    best_match(types.iter().map(String::as_str), &r.resource_type).is_some()
                })
                .count();
            if count > 0 {
                users.push(format!("{} ({region}): {count}", stack.stack));
            }
        }
        if !users.is_empty() {
            bail!(
                "plugin '{name}' provisioned resources the state still records: {}; destroy those stacks (or move them to another plugin) first, or pass --force to remove it anyway",
                users.join(", ")
            );
        }
    }
    match user_plugins::remove(name)? {
        Some(path) => {
            println!("removed plugin '{name}' ({}) from the user's plugins file", path.display());
            Ok(ExitCode::SUCCESS)
        }
        None => bail!(
            "the user's plugins file has no plugin '{name}'; only plugins installed with `cdkd providers install` (or written there) can be removed"
        ),
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
        PluginStatus::Ready(_) => "ready",
    }
}

fn list_table(registry: &Registry) -> String {
    let rows: Vec<Vec<String>> = registry
        .slots()
        .iter()
        .map(|slot| {
            let (version, api, types) = match &slot.status {
                PluginStatus::Ready(plugin) => {
                    let manifest = plugin.manifest();
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
                        plugin.api_version().to_string(),
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
                PluginStatus::Ready(plugin) => {
                    let manifest = plugin.manifest();
                    entry["status"] = json!("ready");
                    entry["loaded"] = json!(plugin.is_loaded());
                    entry["sha256"] = json!(plugin.sha256());
                    entry["version"] = json!(manifest.version);
                    entry["providerApiVersion"] = json!(plugin.api_version());
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
        "notices": registry.file().notices,
    })
}

fn show(registry: &Registry, type_name: &str, as_json: bool) -> anyhow::Result<ExitCode> {
    let route = registry.route(type_name);
    // The host deploys nested stacks itself (each child template is a stack of its own,
    // recorded as `parent~child`), whatever the registry would route the type to.
    if type_name == crate::provisioning::preflight::NESTED_STACK {
        let handler = "the cdkd host: each child template is deployed as a stack of its own, recorded as parent~child";
        if as_json {
            let doc = json!({"type": type_name, "provisionedBy": "host", "handler": handler});
            println!("{}", serde_json::to_string_pretty(&doc)?);
        } else {
            println!("{type_name}: {handler}");
        }
        return Ok(ExitCode::SUCCESS);
    }
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
