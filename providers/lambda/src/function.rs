//! `AWS::Lambda::Function`. Code and configuration are separate updates, and Lambda accepts
//! one at a time: the plugin waits for `State: Active` / `LastUpdateStatus: Successful`
//! between them. A create answers while the function is still `Pending` unless something must
//! follow it ([`waits_for_active`]).

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::{
    Architecture, DeadLetterConfig, Environment, EphemeralStorage, FileSystemConfig, FunctionCode,
    ImageConfig, LastUpdateStatus, LogFormat, LoggingConfig, PackageType, RecursiveLoop, Runtime,
    SnapStart, SnapStartApplyOn, State, TracingConfig, TracingMode, UpdateRuntimeOn, VpcConfig,
};
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, int, optional, physical_name, strings, tag_pairs, text,
    while_iam_propagates,
};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult, Wait,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::client;

const TYPE: &str = "AWS::Lambda::Function";

/// Configuration properties (updated with UpdateFunctionConfiguration).
const CONFIGURATION: &[&str] = &[
    "Runtime",
    "Handler",
    "Role",
    "Environment",
    "Timeout",
    "MemorySize",
    "Layers",
    "VpcConfig",
    "EphemeralStorage",
    "LoggingConfig",
    "DeadLetterConfig",
    "TracingConfig",
    "Description",
    "FileSystemConfigs",
    "KmsKeyArn",
    "ImageConfig",
    "SnapStart",
];

/// Settings Lambda keeps outside the function configuration, each put by its own call after
/// the function is ready (and on update when it changed).
const SETTINGS: &[&str] = &[
    "RecursiveLoop",
    "RuntimeManagementConfig",
    "CodeSigningConfigArn",
];

#[derive(Default)]
pub struct Function;

/// The file name inline code gets, as CloudFormation names it per runtime.
pub fn inline_file_name(runtime: &str) -> &'static str {
    if runtime.starts_with("python") {
        "index.py"
    } else if runtime.starts_with("nodejs") {
        "index.js"
    } else {
        "index"
    }
}

/// Zips inline code as the single file the runtime loads (fixed timestamp: reproducible).
pub fn zip_inline(runtime: &str, source: &str) -> Result<Vec<u8>, ProviderError> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(zip::DateTime::default())
        .unix_permissions(0o644);
    writer
        .start_file(inline_file_name(runtime), options)
        .and_then(|()| {
            writer
                .write_all(source.as_bytes())
                .map_err(zip::result::ZipError::Io)
        })
        .map_err(|e| ProviderError::other(format!("cannot zip inline code: {e}")))?;
    Ok(writer
        .finish()
        .map_err(|e| ProviderError::other(format!("cannot zip inline code: {e}")))?
        .into_inner())
}

fn code(what: &str, props: &Map<String, Value>) -> Result<FunctionCode, ProviderError> {
    let code = props
        .get("Code")
        .ok_or_else(|| ProviderError::validation(format!("{what}: property Code is required")))?;
    let mut built = FunctionCode::builder();
    if let Some(source) = code.get("ZipFile").and_then(Value::as_str) {
        let runtime = text(props.get("Runtime")).unwrap_or_default();
        built = built.zip_file(Blob::new(zip_inline(&runtime, source)?));
    } else if let Some(bucket) = code.get("S3Bucket").and_then(Value::as_str) {
        built = built
            .s3_bucket(bucket)
            .set_s3_key(
                code.get("S3Key")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
            .set_s3_object_version(
                code.get("S3ObjectVersion")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            );
    } else if let Some(image) = code.get("ImageUri").and_then(Value::as_str) {
        built = built.image_uri(image);
    } else {
        return Err(ProviderError::validation(format!(
            "{what}: property Code needs ZipFile, S3Bucket/S3Key or ImageUri"
        )));
    }
    Ok(built.build())
}

fn environment(props: &Map<String, Value>) -> Option<Environment> {
    let variables = props.get("Environment")?.get("Variables")?.as_object()?;
    let map: HashMap<String, String> = variables
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.as_str()
                    .map_or_else(|| v.to_string(), ToString::to_string),
            )
        })
        .collect();
    Some(Environment::builder().set_variables(Some(map)).build())
}

/// `FileSystemConfigs: [{Arn, LocalMountPath}]` (EFS access points).
fn file_systems(props: &Map<String, Value>) -> Option<Vec<FileSystemConfig>> {
    let configs = props.get("FileSystemConfigs")?.as_array()?;
    configs
        .iter()
        .map(|c| {
            FileSystemConfig::builder()
                .set_arn(text(c.get("Arn")))
                .set_local_mount_path(text(c.get("LocalMountPath")))
                .build()
                .ok()
        })
        .collect()
}

fn vpc(props: &Map<String, Value>) -> Option<VpcConfig> {
    let config = props.get("VpcConfig")?;
    Some(
        VpcConfig::builder()
            .set_subnet_ids(strings(config.get("SubnetIds")))
            .set_security_group_ids(strings(config.get("SecurityGroupIds")))
            .build(),
    )
}

fn logging(props: &Map<String, Value>) -> Option<LoggingConfig> {
    let config = props.get("LoggingConfig")?;
    Some(
        LoggingConfig::builder()
            .set_log_format(
                config
                    .get("LogFormat")
                    .and_then(Value::as_str)
                    .map(LogFormat::from),
            )
            .set_log_group(
                config
                    .get("LogGroup")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
            .build(),
    )
}

fn ephemeral(
    what: &str,
    props: &Map<String, Value>,
) -> Result<Option<EphemeralStorage>, ProviderError> {
    match int(props.get("EphemeralStorage").and_then(|e| e.get("Size"))) {
        Some(size) => EphemeralStorage::builder()
            .size(size)
            .build()
            .map(Some)
            .map_err(|e| {
                ProviderError::validation(format!("{what}: property EphemeralStorage: {e}"))
            }),
        None => Ok(None),
    }
}

/// `ImageConfig: {EntryPoint, Command, WorkingDirectory}` (container-image functions). On
/// update a removed one is sent empty, which clears the overrides.
fn image_config(props: &Map<String, Value>) -> Option<ImageConfig> {
    let config = props.get("ImageConfig")?;
    Some(
        ImageConfig::builder()
            .set_entry_point(strings(config.get("EntryPoint")))
            .set_command(strings(config.get("Command")))
            .set_working_directory(text(config.get("WorkingDirectory")))
            .build(),
    )
}

/// `SnapStart: {ApplyOn}`; on update a removed one is `ApplyOn: None`.
fn snap_start(props: &Map<String, Value>) -> Option<SnapStart> {
    let apply_on = text(props.get("SnapStart")?.get("ApplyOn"))?;
    Some(
        SnapStart::builder()
            .apply_on(SnapStartApplyOn::from(apply_on.as_str()))
            .build(),
    )
}

/// `RecursiveLoop` as Lambda takes it; absent is Lambda's default, `Terminate`.
fn recursive_loop(props: &Map<String, Value>) -> RecursiveLoop {
    RecursiveLoop::from(
        text(props.get("RecursiveLoop"))
            .unwrap_or_else(|| "Terminate".into())
            .as_str(),
    )
}

/// `RuntimeManagementConfig: {UpdateRuntimeOn, RuntimeVersionArn}`; absent is Lambda's
/// default, `Auto`.
fn runtime_management(props: &Map<String, Value>) -> (UpdateRuntimeOn, Option<String>) {
    let config = props.get("RuntimeManagementConfig");
    (
        UpdateRuntimeOn::from(
            config
                .and_then(|c| text(c.get("UpdateRuntimeOn")))
                .unwrap_or_else(|| "Auto".into())
                .as_str(),
        ),
        config.and_then(|c| text(c.get("RuntimeVersionArn"))),
    )
}

/// Applies one of [`SETTINGS`] as `after` has it (absent: Lambda's default, or no code
/// signing config).
async fn apply_setting(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    name: &str,
    setting: &str,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let failed = |operation: &str| format!("{what}: {setting} ({operation})");
    match setting {
        "RecursiveLoop" => lambda
            .put_function_recursion_config()
            .function_name(name)
            .recursive_loop(recursive_loop(after))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&failed("PutFunctionRecursionConfig"), e)),
        "RuntimeManagementConfig" => {
            let (on, arn) = runtime_management(after);
            lambda
                .put_runtime_management_config()
                .function_name(name)
                .update_runtime_on(on)
                .set_runtime_version_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&failed("PutRuntimeManagementConfig"), e))
        }
        "CodeSigningConfigArn" => match text(after.get("CodeSigningConfigArn")) {
            Some(arn) => lambda
                .put_function_code_signing_config()
                .function_name(name)
                .code_signing_config_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&failed("PutFunctionCodeSigningConfig"), e)),
            None => lambda
                .delete_function_code_signing_config()
                .function_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&failed("DeleteFunctionCodeSigningConfig"), e)),
        },
        other => Err(ProviderError::unsupported(format!(
            "{what}: property {other} is not handled"
        ))),
    }
}

/// The settings a create applies after CreateFunction: those the template sets (code signing
/// goes with CreateFunction itself).
fn settings_to_create(props: &Map<String, Value>) -> Vec<&'static str> {
    SETTINGS
        .iter()
        .copied()
        .filter(|s| *s != "CodeSigningConfigArn" && props.contains_key(*s))
        .collect()
}

/// The settings an update applies: those whose template value changed.
fn settings_to_update(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Vec<&'static str> {
    SETTINGS
        .iter()
        .copied()
        .filter(|s| before.get(*s) != after.get(*s))
        .collect()
}

/// How long a function may stay `Pending` or `InProgress`: a VPC function's network interfaces
/// can take minutes (Terraform allows 10 min for the create).
const READY_PATIENCE: Duration = Duration::from_secs(15 * 60);

/// Waits until the function is `Active` and its last update `Successful`, paced by the time
/// waited ([`cdkd_aws_common::poll`]).
async fn wait_until_ready(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    name: &str,
) -> Result<(), ProviderError> {
    let ready = cdkd_aws_common::poll(READY_PATIENCE, || async {
        let config = lambda
            .get_function_configuration()
            .function_name(name)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: GetFunctionConfiguration"), e))?;
        if matches!(config.state(), Some(State::Failed))
            || matches!(config.last_update_status(), Some(LastUpdateStatus::Failed))
        {
            return Err(ProviderError::other(format!(
                "{what}: the function failed to become ready: {}",
                config
                    .state_reason()
                    .or(config.last_update_status_reason())
                    .unwrap_or("no reason given")
            )));
        }
        let active = !matches!(config.state(), Some(State::Pending));
        let updated = !matches!(
            config.last_update_status(),
            Some(LastUpdateStatus::InProgress)
        );
        Ok((active && updated).then_some(()))
    })
    .await?;
    ready.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!("{what}: the function did not become ready"),
        )
    })
}

/// Whether Lambda refused the function's role because IAM has not propagated it yet.
fn role_not_assumable(error: &ProviderError) -> bool {
    error.message.contains("cannot be assumed by Lambda")
}

/// Whether a create waits for the function to be `Active`: under `--wait full`, and when calls
/// follow that Lambda refuses while it is `Pending` (reserved concurrency, the settings put
/// after the create). Otherwise it answers at `Pending`: its permission, URL, event source
/// mappings and aliases are accepted meanwhile, and what needs it `Active` (a version, a custom
/// resource's invoke) waits for that itself. A VPC function can stay `Pending` for minutes.
fn waits_for_active(wait: Wait, props: &Map<String, Value>) -> bool {
    wait == Wait::Full
        || props.contains_key("ReservedConcurrentExecutions")
        || !settings_to_create(props).is_empty()
}

async fn arn_of(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    name: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let config = lambda
        .get_function_configuration()
        .function_name(name)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: GetFunctionConfiguration"), e))?;
    Ok(function_attributes(
        config.function_arn(),
        config.snap_start(),
    ))
}

/// The `Arn` attribute (none when Lambda gave no ARN) and `SnapStartResponse`
/// (`{ApplyOn, OptimizationStatus}`, read as `SnapStartResponse.ApplyOn`).
fn function_attributes(
    arn: Option<&str>,
    snap_start: Option<&aws_sdk_lambda::types::SnapStartResponse>,
) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let Some(arn) = arn {
        attributes.insert("Arn".into(), json!(arn));
    }
    if let Some(snap) = snap_start {
        attributes.insert(
            "SnapStartResponse".into(),
            json!({
                "ApplyOn": snap.apply_on().map(|a| a.as_str()).unwrap_or("None"),
                "OptimizationStatus": snap.optimization_status().map(|o| o.as_str()).unwrap_or("Off"),
            }),
        );
    }
    attributes
}

/// The image, SnapStart, recursion, runtime management and code signing settings in template
/// shape. Lambda's defaults (`Zip`, SnapStart `None`, `Terminate`, `Auto`, no code signing) are
/// left out, as a template that does not set them has them.
async fn read_settings(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    name: &str,
    config: &aws_sdk_lambda::operation::get_function_configuration::GetFunctionConfigurationOutput,
    properties: &mut Map<String, Value>,
) -> Result<(), ProviderError> {
    if let Some(PackageType::Image) = config.package_type() {
        properties.insert("PackageType".into(), json!("Image"));
    }
    if let Some(image) = config
        .image_config_response()
        .and_then(|r| r.image_config())
    {
        let mut shape = Map::new();
        if let Some(entry) = image.entry_point.as_ref().filter(|e| !e.is_empty()) {
            shape.insert("EntryPoint".into(), json!(entry));
        }
        if let Some(command) = image.command.as_ref().filter(|c| !c.is_empty()) {
            shape.insert("Command".into(), json!(command));
        }
        if let Some(dir) = image.working_directory().filter(|d| !d.is_empty()) {
            shape.insert("WorkingDirectory".into(), json!(dir));
        }
        if !shape.is_empty() {
            properties.insert("ImageConfig".into(), Value::Object(shape));
        }
    }
    if let Some(apply_on) = config
        .snap_start()
        .and_then(|s| s.apply_on())
        .filter(|a| **a != SnapStartApplyOn::None)
    {
        properties.insert("SnapStart".into(), json!({"ApplyOn": apply_on.as_str()}));
    }
    let recursion = lambda
        .get_function_recursion_config()
        .function_name(name)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: GetFunctionRecursionConfig"), e))?;
    if let Some(loop_) = recursion
        .recursive_loop()
        .filter(|l| **l != RecursiveLoop::Terminate)
    {
        properties.insert("RecursiveLoop".into(), json!(loop_.as_str()));
    }
    let runtime = lambda
        .get_runtime_management_config()
        .function_name(name)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: GetRuntimeManagementConfig"), e))?;
    if let Some(on) = runtime
        .update_runtime_on()
        .filter(|o| **o != UpdateRuntimeOn::Auto)
    {
        let mut shape = Map::new();
        shape.insert("UpdateRuntimeOn".into(), json!(on.as_str()));
        if let Some(arn) = runtime.runtime_version_arn().filter(|a| !a.is_empty()) {
            shape.insert("RuntimeVersionArn".into(), json!(arn));
        }
        properties.insert("RuntimeManagementConfig".into(), Value::Object(shape));
    }
    let signing = lambda
        .get_function_code_signing_config()
        .function_name(name)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: GetFunctionCodeSigningConfig"), e))?;
    if !signing.code_signing_config_arn().is_empty() {
        properties.insert(
            "CodeSigningConfigArn".into(),
            json!(signing.code_signing_config_arn()),
        );
    }
    Ok(())
}

/// The `ImageConfig` an UpdateFunctionConfiguration sends: the template's, an empty one when
/// it was removed (clearing the overrides), none when neither side has one (a zip function).
fn updated_image_config(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Option<ImageConfig> {
    image_config(after).or_else(|| {
        before
            .contains_key("ImageConfig")
            .then(|| ImageConfig::builder().build())
    })
}

/// The `SnapStart` an UpdateFunctionConfiguration sends: the template's, `ApplyOn: None` when
/// it was removed, none when neither side has one.
fn updated_snap_start(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Option<SnapStart> {
    snap_start(after).or_else(|| {
        before.contains_key("SnapStart").then(|| {
            SnapStart::builder()
                .apply_on(SnapStartApplyOn::None)
                .build()
        })
    })
}

#[async_trait]
impl Readable for Function {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let Some(config) = optional(
            &format!("{what}: GetFunctionConfiguration"),
            client(ctx)
                .await?
                .get_function_configuration()
                .function_name(&request.physical_id)
                .send()
                .await,
        )?
        else {
            return Ok(None);
        };
        let mut properties = Map::new();
        properties.insert("FunctionName".into(), json!(config.function_name()));
        properties.insert(
            "Runtime".into(),
            json!(config.runtime().map(|r| r.as_str())),
        );
        properties.insert("Handler".into(), json!(config.handler()));
        properties.insert("Role".into(), json!(config.role()));
        properties.insert("Timeout".into(), json!(config.timeout()));
        properties.insert("MemorySize".into(), json!(config.memory_size()));
        if let Some(variables) = config.environment().and_then(|e| e.variables()) {
            properties.insert("Environment".into(), json!({"Variables": variables}));
        }
        let lambda = client(ctx).await?;
        read_settings(
            &lambda,
            what,
            &request.physical_id,
            &config,
            &mut properties,
        )
        .await?;
        Ok(Some(properties))
    }

    /// `Arn`, from GetFunctionConfiguration.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        arn_of(&client(ctx).await?, what, physical_id).await
    }
}

/// What a create does once CreateFunction answered: waits while the function is `Pending` when
/// it must ([`waits_for_active`]), then puts reserved concurrency and the [`SETTINGS`] the
/// template sets.
async fn finish_create(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    name: &str,
    props: &Map<String, Value>,
    state: Option<&State>,
    wait: Wait,
) -> Result<(), ProviderError> {
    // Lambda answers `Pending` while it prepares the function; only then is polling needed.
    if matches!(state, Some(State::Pending) | None) && waits_for_active(wait, props) {
        wait_until_ready(lambda, what, name).await?;
    }
    if let Some(reserved) = int(props.get("ReservedConcurrentExecutions")) {
        lambda
            .put_function_concurrency()
            .function_name(name)
            .reserved_concurrent_executions(reserved)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: ReservedConcurrentExecutions"), e))?;
    }
    for setting in settings_to_create(props) {
        apply_setting(lambda, what, name, setting, props).await?;
    }
    Ok(())
}

#[async_trait]
impl ResourceProvider for Function {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(CONFIGURATION)
            .handles(&[
                "Code",
                "FunctionName",
                "Architectures",
                "ReservedConcurrentExecutions",
                "Tags",
                "PackageType",
            ])
            .handles(SETTINGS)
            .create_only(&["FunctionName", "PackageType"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name =
            text(props.get("FunctionName")).unwrap_or_else(|| physical_name(&request, 64, false));
        let lambda = client(ctx).await?;
        let tags: Option<HashMap<String, String>> =
            tag_pairs(props.get("Tags")).map(|tags| tags.into_iter().collect());
        // Lambda refuses a role IAM made moments ago ("cannot be assumed by Lambda") for 7-12 s,
        // longer in its tail: the create is tried again, naming the role when that runs out.
        let role = format!(
            "the role {}",
            text(props.get("Role")).unwrap_or_else(|| "(none)".into())
        );
        let created = while_iam_propagates(&role, role_not_assumable, || async {
            lambda
                .create_function()
                .function_name(&name)
                .code(code(&what, props)?)
                .set_runtime(text(props.get("Runtime")).map(|r| Runtime::from(r.as_str())))
                .set_handler(text(props.get("Handler")))
                .set_role(text(props.get("Role")))
                .set_description(text(props.get("Description")))
                .set_environment(environment(props))
                .set_timeout(int(props.get("Timeout")))
                .set_memory_size(int(props.get("MemorySize")))
                .set_layers(strings(props.get("Layers")))
                .set_vpc_config(vpc(props))
                .set_file_system_configs(file_systems(props))
                .set_kms_key_arn(text(props.get("KmsKeyArn")))
                .set_architectures(
                    strings(props.get("Architectures"))
                        .map(|a| a.iter().map(|s| Architecture::from(s.as_str())).collect()),
                )
                .set_ephemeral_storage(ephemeral(&what, props)?)
                .set_logging_config(logging(props))
                .set_dead_letter_config(props.get("DeadLetterConfig").map(|d| {
                    DeadLetterConfig::builder()
                        .set_target_arn(
                            d.get("TargetArn")
                                .and_then(Value::as_str)
                                .map(ToString::to_string),
                        )
                        .build()
                }))
                .set_tracing_config(props.get("TracingConfig").map(|t| {
                    TracingConfig::builder()
                        .set_mode(t.get("Mode").and_then(Value::as_str).map(TracingMode::from))
                        .build()
                }))
                .set_tags(tags.clone())
                .set_package_type(
                    text(props.get("PackageType")).map(|p| PackageType::from(p.as_str())),
                )
                .set_image_config(image_config(props))
                .set_snap_start(snap_start(props))
                .set_code_signing_config_arn(text(props.get("CodeSigningConfigArn")))
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: CreateFunction {name}"), e))
        })
        .await?;
        if let Err(error) =
            finish_create(&lambda, &what, &name, props, created.state(), ctx.wait()).await
        {
            // The function exists: undo it so nothing is left unrecorded.
            let note = match lambda.delete_function().function_name(&name).send().await {
                Ok(_) => format!("; the new function {name} was deleted again"),
                Err(err) => format!(
                    "; the new function {name} could not be deleted again ({}), the next deploy, rollback or destroy removes it",
                    aws_error("DeleteFunction", err).message
                ),
            };
            let undone = ProviderError::new(error.kind, format!("{}{note}", error.message));
            return Err(match error.aws_code() {
                Some(code) => undone.with_aws_code(code),
                None => undone,
            });
        }
        Ok(CreateResult {
            attributes: function_attributes(created.function_arn(), created.snap_start()),
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, name) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let lambda = client(ctx).await?;
        if before.get("Code") != after.get("Code")
            || before.get("Architectures") != after.get("Architectures")
        {
            let code = code(&what, after)?;
            lambda
                .update_function_code()
                .function_name(name)
                .set_zip_file(code.zip_file().cloned())
                .set_s3_bucket(code.s3_bucket().map(ToString::to_string))
                .set_s3_key(code.s3_key().map(ToString::to_string))
                .set_s3_object_version(code.s3_object_version().map(ToString::to_string))
                .set_image_uri(code.image_uri().map(ToString::to_string))
                .set_architectures(
                    strings(after.get("Architectures"))
                        .map(|a| a.iter().map(|s| Architecture::from(s.as_str())).collect()),
                )
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: UpdateFunctionCode"), e))?;
            wait_until_ready(&lambda, &what, name).await?;
        }
        if CONFIGURATION
            .iter()
            .any(|key| before.get(*key) != after.get(*key))
        {
            lambda
                .update_function_configuration()
                .function_name(name)
                .set_runtime(text(after.get("Runtime")).map(|r| Runtime::from(r.as_str())))
                .set_handler(text(after.get("Handler")))
                .set_role(text(after.get("Role")))
                .description(text(after.get("Description")).unwrap_or_default())
                .environment(environment(after).unwrap_or_else(|| {
                    Environment::builder()
                        .set_variables(Some(HashMap::new()))
                        .build()
                }))
                .set_timeout(int(after.get("Timeout")))
                .set_memory_size(int(after.get("MemorySize")))
                .set_layers(Some(strings(after.get("Layers")).unwrap_or_default()))
                .set_vpc_config(vpc(after))
                // Removed from the template: detached and back to the AWS-managed key.
                .set_file_system_configs(Some(file_systems(after).unwrap_or_default()))
                .kms_key_arn(text(after.get("KmsKeyArn")).unwrap_or_default())
                .set_ephemeral_storage(ephemeral(&what, after)?)
                .set_logging_config(logging(after))
                .set_tracing_config(after.get("TracingConfig").map(|t| {
                    TracingConfig::builder()
                        .set_mode(t.get("Mode").and_then(Value::as_str).map(TracingMode::from))
                        .build()
                }))
                .set_image_config(updated_image_config(before, after))
                .set_snap_start(updated_snap_start(before, after))
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: UpdateFunctionConfiguration"), e))?;
            wait_until_ready(&lambda, &what, name).await?;
        }
        if before.get("ReservedConcurrentExecutions") != after.get("ReservedConcurrentExecutions") {
            match int(after.get("ReservedConcurrentExecutions")) {
                Some(reserved) => lambda
                    .put_function_concurrency()
                    .function_name(name)
                    .reserved_concurrent_executions(reserved)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: ReservedConcurrentExecutions"), e))?,
                None => lambda
                    .delete_function_concurrency()
                    .function_name(name)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: ReservedConcurrentExecutions"), e))?,
            }
        }
        for setting in settings_to_update(before, after) {
            apply_setting(&lambda, &what, name, setting, after).await?;
        }
        Ok(UpdateResult {
            attributes: arn_of(&lambda, &what, name).await?,
            physical_id: name.to_string(),
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_function()
                .function_name(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    aws_error(
                        &format!("{what}: DeleteFunction {}", request.physical_id),
                        e,
                    )
                }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lambdas_propagation_refusal_is_retried_as_propagation() {
        let refused = ProviderError::validation(
            "InvalidParameterValueException: The role defined for the function cannot be assumed by Lambda.",
        );
        assert!(role_not_assumable(&refused));
        let other = ProviderError::validation(
            "InvalidParameterValueException: Unzipped size must be smaller",
        );
        assert!(!role_not_assumable(&other));
    }

    #[test]
    fn a_create_waits_for_active_only_when_something_follows_or_full_is_asked() {
        let plain: Map<String, Value> = json!({"Runtime": "nodejs20.x", "VpcConfig": {}})
            .as_object()
            .cloned()
            .unwrap();
        assert!(!waits_for_active(Wait::Dependents, &plain));
        assert!(!waits_for_active(Wait::None, &plain));
        assert!(waits_for_active(Wait::Full, &plain));
        let mut reserved = plain.clone();
        reserved.insert("ReservedConcurrentExecutions".into(), json!(5));
        assert!(waits_for_active(Wait::Dependents, &reserved));
        let mut setting = plain.clone();
        let put_after = SETTINGS
            .iter()
            .find(|s| **s != "CodeSigningConfigArn")
            .unwrap();
        setting.insert((*put_after).into(), json!({}));
        assert!(waits_for_active(Wait::Dependents, &setting));
    }

    #[test]
    fn inline_code_is_named_for_its_runtime_and_zipped_reproducibly() {
        assert_eq!(inline_file_name("nodejs20.x"), "index.js");
        assert_eq!(inline_file_name("python3.12"), "index.py");
        let first = zip_inline("nodejs20.x", "exports.handler = 1;").unwrap();
        let second = zip_inline("nodejs20.x", "exports.handler = 1;").unwrap();
        assert_eq!(first, second);
        let archive = zip::ZipArchive::new(std::io::Cursor::new(first)).unwrap();
        assert_eq!(archive.file_names().collect::<Vec<_>>(), ["index.js"]);
    }

    #[test]
    fn image_functions_and_settings_are_declared_and_package_type_replaces() {
        let schema = Function.schema();
        for property in [
            "PackageType",
            "ImageConfig",
            "RecursiveLoop",
            "SnapStart",
            "RuntimeManagementConfig",
            "CodeSigningConfigArn",
        ] {
            assert!(
                schema.handled_properties.iter().any(|h| h == property),
                "{property}"
            );
        }
        assert!(schema
            .create_only_properties
            .iter()
            .any(|p| p == "PackageType"));
    }

    #[test]
    fn image_config_and_snap_start_become_lambda_requests() {
        let props = json!({
            "ImageConfig": {"EntryPoint": ["/bin/sh"], "Command": ["app.handler"], "WorkingDirectory": "/app"},
            "SnapStart": {"ApplyOn": "PublishedVersions"},
        });
        let props = props.as_object().unwrap();
        let image = image_config(props).unwrap();
        assert_eq!(image.entry_point(), ["/bin/sh"]);
        assert_eq!(image.command(), ["app.handler"]);
        assert_eq!(image.working_directory(), Some("/app"));
        assert_eq!(
            snap_start(props).unwrap().apply_on(),
            Some(&SnapStartApplyOn::PublishedVersions)
        );
        let none = Map::new();
        // Removed from the template: cleared (empty overrides, ApplyOn None).
        let cleared = updated_image_config(props, &none).unwrap();
        assert!(cleared.entry_point().is_empty() && cleared.working_directory().is_none());
        assert_eq!(
            updated_snap_start(props, &none).unwrap().apply_on(),
            Some(&SnapStartApplyOn::None)
        );
        // Neither side: nothing sent (a zip function takes no ImageConfig).
        assert!(updated_image_config(&none, &none).is_none());
        assert!(updated_snap_start(&none, &none).is_none());
    }

    #[test]
    fn settings_default_as_lambda_does_and_only_changes_are_put() {
        let none = Map::new();
        assert_eq!(recursive_loop(&none), RecursiveLoop::Terminate);
        assert_eq!(runtime_management(&none), (UpdateRuntimeOn::Auto, None));
        let props = json!({
            "RecursiveLoop": "Allow",
            "RuntimeManagementConfig": {"UpdateRuntimeOn": "Manual", "RuntimeVersionArn": "arn:aws:lambda:us-east-1::runtime:abc"},
            "CodeSigningConfigArn": "arn:aws:lambda:us-east-1:123456789012:code-signing-config:csc-1",
        });
        let props = props.as_object().unwrap();
        assert_eq!(recursive_loop(props), RecursiveLoop::Allow);
        assert_eq!(
            runtime_management(props),
            (
                UpdateRuntimeOn::Manual,
                Some("arn:aws:lambda:us-east-1::runtime:abc".into())
            )
        );
        // Code signing goes with CreateFunction; the others are put after it.
        assert_eq!(
            settings_to_create(props),
            ["RecursiveLoop", "RuntimeManagementConfig"]
        );
        assert_eq!(settings_to_update(props, props), Vec::<&str>::new());
        assert_eq!(
            settings_to_update(props, &none),
            [
                "RecursiveLoop",
                "RuntimeManagementConfig",
                "CodeSigningConfigArn"
            ]
        );
    }

    #[test]
    fn snap_start_response_is_an_attribute() {
        let snap = aws_sdk_lambda::types::SnapStartResponse::builder()
            .apply_on(SnapStartApplyOn::PublishedVersions)
            .optimization_status(aws_sdk_lambda::types::SnapStartOptimizationStatus::On)
            .build();
        let attributes = function_attributes(Some("arn:fn"), Some(&snap));
        assert_eq!(attributes["Arn"], "arn:fn");
        assert_eq!(
            attributes["SnapStartResponse"],
            json!({"ApplyOn": "PublishedVersions", "OptimizationStatus": "On"})
        );
    }
}
