//! `AWS::Lambda::Function`. Code and configuration are separate updates, and Lambda accepts
//! one at a time: the plugin waits for `State: Active` / `LastUpdateStatus: Successful`
//! between them.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use aws_sdk_lambda::primitives::Blob;
use aws_sdk_lambda::types::{
    Architecture, DeadLetterConfig, Environment, EphemeralStorage, FileSystemConfig, FunctionCode,
    LastUpdateStatus, LogFormat, LoggingConfig, Runtime, State, TracingConfig, TracingMode,
    VpcConfig,
};
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, int, optional, physical_name, strings, tag_pairs, text,
};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
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

async fn wait_until_ready(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    name: &str,
) -> Result<(), ProviderError> {
    for attempt in 0..120u64 {
        let config = lambda
            .get_function_configuration()
            .function_name(name)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: GetFunctionConfiguration"), e))?;
        let active = !matches!(config.state(), Some(State::Pending));
        let updated = !matches!(
            config.last_update_status(),
            Some(LastUpdateStatus::InProgress)
        );
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
        if active && updated {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100 + 100 * attempt.min(9))).await;
    }
    Err(ProviderError::new(
        ErrorKind::TIMEOUT,
        format!("{what}: the function did not become ready"),
    ))
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
    Ok(arn_attribute(config.function_arn()))
}

/// The `Arn` attribute (none when Lambda gave no ARN).
fn arn_attribute(arn: Option<&str>) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let Some(arn) = arn {
        attributes.insert("Arn".into(), json!(arn));
    }
    attributes
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
            ])
            .create_only(&["FunctionName"])
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
        let created = lambda
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
            .set_tags(tags)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateFunction {name}"), e))?;
        // Lambda answers `Pending` while it prepares the function; only then is polling needed.
        if matches!(created.state(), Some(State::Pending) | None) {
            wait_until_ready(&lambda, &what, &name).await?;
        }
        if let Some(reserved) = int(props.get("ReservedConcurrentExecutions")) {
            lambda
                .put_function_concurrency()
                .function_name(&name)
                .reserved_concurrent_executions(reserved)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: ReservedConcurrentExecutions"), e))?;
        }
        Ok(CreateResult {
            attributes: arn_attribute(created.function_arn()),
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
    fn inline_code_is_named_for_its_runtime_and_zipped_reproducibly() {
        assert_eq!(inline_file_name("nodejs20.x"), "index.js");
        assert_eq!(inline_file_name("python3.12"), "index.py");
        let first = zip_inline("nodejs20.x", "exports.handler = 1;").unwrap();
        let second = zip_inline("nodejs20.x", "exports.handler = 1;").unwrap();
        assert_eq!(first, second);
        let archive = zip::ZipArchive::new(std::io::Cursor::new(first)).unwrap();
        assert_eq!(archive.file_names().collect::<Vec<_>>(), ["index.js"]);
    }
}
