//! `AWS::StepFunctions::StateMachine`: physical id (and `Ref`) is the state machine ARN;
//! attributes `Arn`, `Name` and `StateMachineRevisionId`. The definition comes from `Definition`
//! (an object, sent as JSON with sorted keys) or `DefinitionString`, with
//! `DefinitionSubstitutions` applied to its text as CloudFormation applies them.
//! `DefinitionS3Location` is not handled (this plugin has no S3 client): a template using it
//! goes to Cloud Control.

use std::future::Future;

use aws_sdk_sfn::operation::describe_state_machine::DescribeStateMachineOutput;
use aws_sdk_sfn::types::{
    CloudWatchLogsLogGroup, EncryptionConfiguration, LogDestination, LogLevel,
    LoggingConfiguration, StateMachineStatus, StateMachineType, Tag, TracingConfiguration,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, given_or_generated_name, put, require_str, string,
    text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, default_encryption, encryption, encryption_shape, found, given, given_in, live_tags,
    name_of, sdk_tags, sfn_error, tag_map, template_tags, update_tags,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::StepFunctions::StateMachine";

/// The longest state machine name.
const MAX_NAME: usize = 80;

/// The revision id CloudFormation reports for a state machine never updated.
const INITIAL_REVISION: &str = "INITIAL";

/// Parts of Step Functions' messages meaning the role (or its policy) is not yet visible to it,
/// which IAM's propagation delay causes right after the role is made: CloudFormation's own
/// handler retries these.
const ROLE_NOT_READY: &[&str] = &[
    "is authorized to assume the provided role",
    "is not authorized to assume the provided role",
    "The state machine IAM Role is not authorized to access the Log Destination",
    "managed-rule",
];

/// The template properties that make up the definition.
const DEFINITION_PROPERTIES: &[&str] = &["Definition", "DefinitionString", "DefinitionS3Location"];

/// The `AWS::StepFunctions::StateMachine` provider.
#[derive(Default)]
pub struct StateMachine;

/// `value` with every object's keys in sorted order, as CloudFormation writes a `Definition`
/// object (and so the text does not depend on the template's key order).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// The template's `DefinitionSubstitutions` as `(key, value)` pairs (numbers and booleans as
/// written); `None` when there are none.
fn substitutions(properties: &Map<String, Value>) -> Option<Vec<(String, String)>> {
    let map = properties.get("DefinitionSubstitutions")?.as_object()?;
    Some(
        map.iter()
            .map(|(key, value)| {
                let value = text(Some(value)).unwrap_or_else(|| value.to_string());
                (key.clone(), value)
            })
            .collect(),
    )
}

/// One pass replacing each `${key}` of `definition` whose key has a substitution; whether any
/// was replaced.
fn substitute_once(definition: &str, substitutions: &[(String, String)]) -> (String, bool) {
    let mut out = String::with_capacity(definition.len());
    let mut rest = definition;
    let mut replaced = false;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let value = after.find('}').and_then(|end| {
            let key = &after[..end];
            substitutions
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| (v, end))
        });
        match value {
            Some((value, end)) => {
                out.push_str(value);
                rest = &after[end + 1..];
                replaced = true;
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, replaced)
}

/// `definition` with its `${key}` placeholders replaced, repeatedly (a value may hold another
/// placeholder) as CloudFormation's `replaceEachRepeatedly` does, which also refuses a loop.
fn substitute(
    definition: &str,
    substitutions: &[(String, String)],
    what: &str,
) -> Result<String, ProviderError> {
    let mut text = definition.to_string();
    for _ in 0..=substitutions.len() {
        let (next, replaced) = substitute_once(&text, substitutions);
        if !replaced {
            return Ok(next);
        }
        text = next;
    }
    Err(ProviderError::validation(format!(
        "{what}: DefinitionSubstitutions refer to each other in a loop"
    )))
}

/// The definition text the template gives, before substitutions: `Definition` as JSON with
/// sorted keys, or `DefinitionString`. Exactly one of them is required, as CloudFormation
/// requires; `DefinitionS3Location` is refused (this plugin does not handle it).
fn raw_definition(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    let named: Vec<&str> = DEFINITION_PROPERTIES
        .iter()
        .copied()
        .filter(|name| given(properties, name))
        .collect();
    match named.as_slice() {
        [] => Err(ProviderError::validation(format!(
            "{what}: one of Definition, DefinitionString or DefinitionS3Location is required"
        ))),
        [_, _, ..] => Err(ProviderError::validation(format!(
            "{what}: use only one of Definition, DefinitionString or DefinitionS3Location \
             (the template gives {})",
            named.join(", ")
        ))),
        ["DefinitionS3Location"] => Err(ProviderError::validation(format!(
            "{what}: DefinitionS3Location is not supported by this provider; use Definition or \
             DefinitionString"
        ))),
        ["Definition"] => match &properties["Definition"] {
            Value::String(text) => Ok(text.clone()),
            object @ Value::Object(_) => serde_json::to_string_pretty(&sorted(object))
                .map_err(|e| ProviderError::validation(format!("{what}: Definition: {e}"))),
            _ => Err(ProviderError::validation(format!(
                "{what}: Definition must be a JSON object"
            ))),
        },
        _ => text(properties.get("DefinitionString")).ok_or_else(|| {
            ProviderError::validation(format!("{what}: DefinitionString must be a string"))
        }),
    }
}

/// The definition Step Functions is given: the template's, with its substitutions applied.
fn definition_text(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    let raw = raw_definition(properties, what)?;
    match substitutions(properties) {
        Some(subs) => substitute(&raw, &subs, what),
        None => Ok(raw),
    }
}

/// Whether two definition texts say the same: equal as JSON when both are JSON (key order and
/// spacing aside), else equal as text.
fn same_definition(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The template's `LoggingConfiguration` as Step Functions takes it; `None` when absent.
fn logging(value: Option<&Value>) -> Option<LoggingConfiguration> {
    let block = value.filter(|v| v.is_object())?;
    let destinations = block
        .get("Destinations")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|d| {
                    let group = d.get("CloudWatchLogsLogGroup").map(|g| {
                        CloudWatchLogsLogGroup::builder()
                            .set_log_group_arn(string(g.get("LogGroupArn")))
                            .build()
                    });
                    LogDestination::builder()
                        .set_cloud_watch_logs_log_group(group)
                        .build()
                })
                .collect::<Vec<_>>()
        });
    Some(
        LoggingConfiguration::builder()
            .set_level(text(block.get("Level")).map(|l| LogLevel::from(l.as_str())))
            .set_include_execution_data(flag(block.get("IncludeExecutionData")))
            .set_destinations(destinations)
            .build(),
    )
}

/// Logging as a state machine has it when the template names none: off, no execution data,
/// no destinations.
fn default_logging() -> LoggingConfiguration {
    LoggingConfiguration::builder()
        .level(LogLevel::Off)
        .include_execution_data(false)
        .build()
}

/// The template's `TracingConfiguration` as Step Functions takes it; `None` when absent.
fn tracing_config(value: Option<&Value>) -> Option<TracingConfiguration> {
    let block = value.filter(|v| v.is_object())?;
    Some(
        TracingConfiguration::builder()
            .set_enabled(flag(block.get("Enabled")))
            .build(),
    )
}

/// Tracing as a state machine has it when the template names none: off.
fn default_tracing() -> TracingConfiguration {
    TracingConfiguration::builder().enabled(false).build()
}

/// What an UpdateStateMachine call changes; `None` fields are left as they are.
#[derive(Debug, Clone, PartialEq, Default)]
struct Changes {
    /// The new definition text.
    definition: Option<String>,
    /// The new role.
    role_arn: Option<String>,
    /// The new logging, or logging off when the template no longer names any.
    logging: Option<LoggingConfiguration>,
    /// The new tracing, or tracing off when the template no longer names any.
    tracing: Option<TracingConfiguration>,
    /// The new encryption, or the AWS owned key when the template no longer names any.
    encryption: Option<EncryptionConfiguration>,
}

impl Changes {
    /// Whether there is anything to send.
    fn any(&self) -> bool {
        *self != Changes::default()
    }
}

/// The UpdateStateMachine settings from `before` to `after`: each setting that changed, a
/// removed one back at Step Functions' default, as CloudFormation resets it.
fn changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    what: &str,
) -> Result<Changes, ProviderError> {
    let value = |m: &Map<String, Value>, name: &str| m.get(name).filter(|v| !v.is_null()).cloned();
    let changed = |name: &str| value(before, name) != value(after, name);
    let definition = definition_text(after, what)?;
    let old_definition = definition_text(before, what).ok();
    let role = require_str(after, "RoleArn", what)?;
    Ok(Changes {
        definition: (old_definition.as_deref() != Some(definition.as_str())).then_some(definition),
        role_arn: changed("RoleArn").then(|| role.to_string()),
        logging: changed("LoggingConfiguration")
            .then(|| logging(after.get("LoggingConfiguration")).unwrap_or_else(default_logging)),
        tracing: changed("TracingConfiguration").then(|| {
            tracing_config(after.get("TracingConfiguration")).unwrap_or_else(default_tracing)
        }),
        encryption: if changed("EncryptionConfiguration") {
            Some(
                encryption(after.get("EncryptionConfiguration"), what)?
                    .unwrap_or_else(default_encryption),
            )
        } else {
            None
        },
    })
}

/// Whether `err` is Step Functions not yet seeing a role (or its policy) that IAM just made.
fn role_not_ready(err: &ProviderError) -> bool {
    let code = err.aws_code.as_ref().into_option().map(|c| c.as_str());
    let message = err.message.as_str();
    ROLE_NOT_READY.iter().any(|part| message.contains(part))
        && (matches!(
            code,
            Some("AccessDeniedException" | "InvalidLoggingConfiguration" | "InvalidArn")
        ) || err.kind == ErrorKind::ACCESS_DENIED)
}

/// `call` retried while `role` is not yet usable by Step Functions, for up to
/// [`IAM_PROPAGATION`](cdkd_aws_common::IAM_PROPAGATION); then an error naming the role.
async fn while_role_propagates<T, F, Fut>(
    what: &str,
    role: &str,
    call: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let retry = |err: &ProviderError| {
        let again = role_not_ready(err);
        if again {
            tracing::debug!("{what}: role not usable yet, retrying: {}", err.message);
        }
        again
    };
    cdkd_aws_common::while_iam_propagates(&format!("the role {role}"), retry, call).await
}

/// The attributes of the state machine `arn`.
fn attributes_of(arn: &str, revision: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes.insert("Name".into(), json!(name_of(arn)));
    attributes.insert("StateMachineRevisionId".into(), json!(revision));
    attributes
}

/// The revision id CloudFormation reports for a described state machine.
fn revision_of(machine: &DescribeStateMachineOutput) -> String {
    machine
        .revision_id()
        .unwrap_or(INITIAL_REVISION)
        .to_string()
}

/// The live state machine; `None` when there is none or it is being deleted.
async fn describe(
    sfn: &aws_sdk_sfn::Client,
    what: &str,
    arn: &str,
) -> Result<Option<DescribeStateMachineOutput>, ProviderError> {
    let answer = found(
        sfn.describe_state_machine()
            .state_machine_arn(arn)
            .send()
            .await
            .map_err(sfn_error!(what, format!("DescribeStateMachine {arn}"))),
    )?;
    Ok(answer.filter(|m| m.status() != Some(&StateMachineStatus::Deleting)))
}

/// The definition as the template shape answers it. With substitutions, the template's own
/// `Definition` or `DefinitionString` when, substituted, it is the live definition (so the
/// placeholders show no drift); else the live definition, parsed when the template gives a
/// `Definition` object.
fn definition_shape(live: &str, template: &Map<String, Value>, props: &mut Map<String, Value>) {
    if let Some(subs) = template
        .get("DefinitionSubstitutions")
        .filter(|v| !v.is_null())
    {
        props.insert("DefinitionSubstitutions".into(), subs.clone());
        let matches = definition_text(template, "")
            .map(|text| same_definition(&text, live))
            .unwrap_or(false);
        if matches {
            for name in ["Definition", "DefinitionString"] {
                put(
                    props,
                    name,
                    template.get(name).filter(|v| !v.is_null()).cloned(),
                );
            }
            return;
        }
    }
    let parsed = serde_json::from_str::<Value>(live)
        .ok()
        .filter(Value::is_object);
    match parsed {
        Some(parsed) if given(template, "Definition") => {
            props.insert("Definition".into(), parsed);
        }
        _ => {
            props.insert("DefinitionString".into(), json!(live));
        }
    }
}

/// A live logging configuration in template shape; `None` for logging off, every machine's
/// default, unless the template names a logging configuration. `Level` and
/// `IncludeExecutionData` are written when not the default or when the template gives them.
fn logging_shape(
    live: Option<&LoggingConfiguration>,
    template: &Map<String, Value>,
) -> Option<Value> {
    let block = template
        .get("LoggingConfiguration")
        .filter(|v| v.is_object());
    let live = live.cloned().unwrap_or_else(default_logging);
    let level_off = live.level().is_none_or(|l| *l == LogLevel::Off);
    let destinations: Vec<Value> = live
        .destinations()
        .iter()
        .map(|d| match d.cloud_watch_logs_log_group() {
            Some(group) => {
                let mut inner = Map::new();
                put(
                    &mut inner,
                    "LogGroupArn",
                    group.log_group_arn().map(|a| json!(a)),
                );
                json!({"CloudWatchLogsLogGroup": inner})
            }
            None => json!({}),
        })
        .collect();
    if level_off && !live.include_execution_data() && destinations.is_empty() && block.is_none() {
        return None;
    }
    let asked = |name: &str| block.is_some_and(|b| given_in(b, name));
    let mut shape = Map::new();
    if !level_off || asked("Level") {
        put(
            &mut shape,
            "Level",
            Some(json!(live.level().map_or("OFF", |l| l.as_str()))),
        );
    }
    if live.include_execution_data() || asked("IncludeExecutionData") {
        shape.insert(
            "IncludeExecutionData".into(),
            json!(live.include_execution_data()),
        );
    }
    if !destinations.is_empty() {
        shape.insert("Destinations".into(), Value::Array(destinations));
    }
    Some(Value::Object(shape))
}

/// A live tracing configuration in template shape; `None` for tracing off unless the template
/// names a tracing configuration.
fn tracing_shape(
    live: Option<&TracingConfiguration>,
    template: &Map<String, Value>,
) -> Option<Value> {
    let block = template
        .get("TracingConfiguration")
        .filter(|v| v.is_object());
    let enabled = live.is_some_and(TracingConfiguration::enabled);
    match block {
        None if !enabled => None,
        Some(block) if !enabled && !given_in(block, "Enabled") => Some(json!({})),
        _ => Some(json!({"Enabled": enabled})),
    }
}

/// A live state machine in template shape.
fn template_shape(
    machine: &DescribeStateMachineOutput,
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("StateMachineName".into(), json!(machine.name()));
    props.insert("StateMachineType".into(), json!(machine.r#type().as_str()));
    props.insert("RoleArn".into(), json!(machine.role_arn()));
    definition_shape(machine.definition(), template, &mut props);
    put(
        &mut props,
        "LoggingConfiguration",
        logging_shape(machine.logging_configuration(), template),
    );
    put(
        &mut props,
        "TracingConfiguration",
        tracing_shape(machine.tracing_configuration(), template),
    );
    put(
        &mut props,
        "EncryptionConfiguration",
        encryption_shape(machine.encryption_configuration(), template),
    );
    put(&mut props, "Tags", template_tags(tags));
    props
}

#[async_trait]
impl ResourceProvider for StateMachine {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "StateMachineName",
                "StateMachineType",
                "RoleArn",
                "Definition",
                "DefinitionString",
                "DefinitionSubstitutions",
                "LoggingConfiguration",
                "TracingConfiguration",
                "EncryptionConfiguration",
                "Tags",
            ])
            .create_only(&["StateMachineName", "StateMachineType"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let properties = &request.properties;
        let name = given_or_generated_name(&request, "StateMachineName", MAX_NAME, false);
        let definition = definition_text(properties, &what)?;
        let role = require_str(properties, "RoleArn", &what)?.to_string();
        let kind =
            text(properties.get("StateMachineType")).map(|t| StateMachineType::from(t.as_str()));
        let logging = logging(properties.get("LoggingConfiguration"));
        let tracing_configuration = tracing_config(properties.get("TracingConfiguration"));
        let encryption = encryption(properties.get("EncryptionConfiguration"), &what)?;
        let tags = sdk_tags(&tag_map(properties));
        let sfn = client(ctx).await?;
        // An identical CreateStateMachine of an existing name answers that machine's ARN (so a
        // retried create is idempotent); a differing one fails as StateMachineAlreadyExists.
        let what = what.as_str();
        let operation = format!("CreateStateMachine {name}");
        let operation = operation.as_str();
        let answer = while_role_propagates(what, &role, || {
            let call = sfn
                .create_state_machine()
                .name(&name)
                .definition(&definition)
                .role_arn(&role)
                .set_type(kind.clone())
                .set_logging_configuration(logging.clone())
                .set_tracing_configuration(tracing_configuration.clone())
                .set_encryption_configuration(encryption.clone())
                .set_tags(Some(tags.clone()).filter(|t| !t.is_empty()));
            async move { call.send().await.map_err(sfn_error!(what, operation)) }
        })
        .await?;
        let arn = answer.state_machine_arn;
        Ok(CreateResult {
            attributes: attributes_of(&arn, INITIAL_REVISION),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let arn = request.physical_id.as_str();
        let changes = changes(before, after, &what)?;
        let sfn = client(ctx).await?;
        let mut revision = None;
        if changes.any() {
            let what = what.as_str();
            let role = text(after.get("RoleArn")).unwrap_or_default();
            let answer = while_role_propagates(what, &role, || {
                let call = sfn
                    .update_state_machine()
                    .state_machine_arn(arn)
                    .set_definition(changes.definition.clone())
                    .set_role_arn(changes.role_arn.clone())
                    .set_logging_configuration(changes.logging.clone())
                    .set_tracing_configuration(changes.tracing.clone())
                    .set_encryption_configuration(changes.encryption.clone())
                    .publish(false);
                async move {
                    call.send()
                        .await
                        .map_err(sfn_error!(what, format!("UpdateStateMachine {arn}")))
                }
            })
            .await?;
            revision = answer.revision_id;
        }
        update_tags(&sfn, &what, arn, before, after).await?;
        let revision = match revision {
            Some(revision) => revision,
            None => match describe(&sfn, &what, arn).await? {
                Some(machine) => revision_of(&machine),
                None => return Err(does_not_exist(&what, arn, "StepFunctions")),
            },
        };
        Ok(UpdateResult {
            attributes: attributes_of(arn, &revision),
            physical_id: arn.to_string(),
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
        let arn = request.physical_id.as_str();
        let sfn = client(ctx).await?;
        // Deletion goes on in the background (status DELETING); nothing depends on its end.
        deleted_unless_failed(
            sfn.delete_state_machine()
                .state_machine_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(sfn_error!(what, format!("DeleteStateMachine {arn}"))),
        )
    }
}

#[async_trait]
impl Readable for StateMachine {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sfn = client(ctx).await?;
        let arn = request.physical_id.as_str();
        let (machine, tags) = tokio::join!(describe(&sfn, what, arn), live_tags(&sfn, what, arn));
        let Some(machine) = machine? else {
            return Ok(None);
        };
        let Some(tags) = tags? else {
            return Ok(None);
        };
        Ok(Some(template_shape(&machine, &tags, &request.properties)))
    }

    /// `Arn`, `Name` and `StateMachineRevisionId`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let sfn = client(ctx).await?;
        match describe(&sfn, what, physical_id).await? {
            Some(machine) => Ok(attributes_of(
                machine.state_machine_arn(),
                &revision_of(&machine),
            )),
            None => Err(does_not_exist(what, physical_id, "StepFunctions")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sfn::types::EncryptionType;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_definition_object_goes_as_json_with_sorted_keys() {
        let template = props(json!({
            "Definition": {"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}},
        }));
        let text = definition_text(&template, "T L").unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            template["Definition"]
        );
        assert!(
            text.find("\"StartAt\"").unwrap() < text.find("\"States\"").unwrap()
                && text.find("\"End\"").unwrap() < text.find("\"Type\"").unwrap(),
            "{text}"
        );
        let string = props(json!({"DefinitionString": "{\"StartAt\":\"A\"}"}));
        assert_eq!(
            definition_text(&string, "T L").unwrap(),
            "{\"StartAt\":\"A\"}"
        );
    }

    #[test]
    fn exactly_one_definition_is_required() {
        let none = definition_text(&props(json!({"RoleArn": "r"})), "T L").unwrap_err();
        assert_eq!(none.kind, ErrorKind::VALIDATION);
        let both = props(json!({"Definition": {"a": 1}, "DefinitionString": "{}"}));
        let err = definition_text(&both, "T L").unwrap_err();
        assert!(
            err.message.contains("Definition, DefinitionString"),
            "{}",
            err.message
        );
        let s3 = props(json!({"DefinitionS3Location": {"Bucket": "b", "Key": "k"}}));
        let err = definition_text(&s3, "T L").unwrap_err();
        assert!(
            err.message.contains("DefinitionS3Location"),
            "{}",
            err.message
        );
    }

    #[test]
    fn substitutions_replace_placeholders_as_cloudformation_does() {
        let template = props(json!({
            "DefinitionString": "{\"Resource\":\"${Fn}\",\"Seconds\":${Wait},\"Other\":\"${Unknown}\"}",
            "DefinitionSubstitutions": {"Fn": "arn:aws:lambda:us-east-1:1:function:f", "Wait": 30},
        }));
        assert_eq!(
            definition_text(&template, "T L").unwrap(),
            "{\"Resource\":\"arn:aws:lambda:us-east-1:1:function:f\",\"Seconds\":30,\"Other\":\"${Unknown}\"}"
        );
        // A value holding another placeholder is replaced again; a loop is refused.
        let chained = vec![
            ("a".to_string(), "${b}".to_string()),
            ("b".to_string(), "x".to_string()),
        ];
        assert_eq!(substitute("<${a}>", &chained, "T L").unwrap(), "<x>");
        let looped = vec![("a".to_string(), "${a}".to_string())];
        assert_eq!(
            substitute("${a}", &looped, "T L").unwrap_err().kind,
            ErrorKind::VALIDATION
        );
        let object = props(json!({
            "Definition": {"States": {"A": {"Resource": "${Fn}", "Type": "Task"}}},
            "DefinitionSubstitutions": {"Fn": "arn:f", "Flag": true},
        }));
        let text = definition_text(&object, "T L").unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({"States": {"A": {"Resource": "arn:f", "Type": "Task"}}})
        );
    }

    #[test]
    fn logging_and_tracing_go_in_as_the_template_says() {
        let block = json!({
            "Level": "ALL",
            "IncludeExecutionData": "true",
            "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": "arn:aws:logs:us-east-1:1:log-group:g:*"}}],
        });
        let config = logging(Some(&block)).unwrap();
        assert_eq!(config.level(), Some(&LogLevel::All));
        assert!(config.include_execution_data());
        assert_eq!(
            config.destinations()[0]
                .cloud_watch_logs_log_group()
                .and_then(|g| g.log_group_arn()),
            Some("arn:aws:logs:us-east-1:1:log-group:g:*")
        );
        assert!(logging(None).is_none());
        assert!(tracing_config(Some(&json!({"Enabled": true})))
            .unwrap()
            .enabled());
        assert!(!tracing_config(Some(&json!({}))).unwrap().enabled());
        assert!(tracing_config(None).is_none());
    }

    #[test]
    fn an_update_sends_what_changed_and_resets_what_was_removed() {
        let before = props(json!({
            "RoleArn": "arn:role/a",
            "DefinitionString": "{\"StartAt\":\"A\"}",
            "LoggingConfiguration": {"Level": "ERROR", "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": "g"}}]},
            "TracingConfiguration": {"Enabled": true},
            "EncryptionConfiguration": {"Type": "CUSTOMER_MANAGED_KMS_KEY", "KmsKeyId": "k"},
        }));
        let after = props(json!({
            "RoleArn": "arn:role/a",
            "Definition": {"StartAt": "B"},
        }));
        let changes = changes(&before, &after, "T L").unwrap();
        assert!(changes.definition.as_deref().unwrap().contains("\"B\""));
        assert_eq!(changes.role_arn, None);
        assert_eq!(changes.logging, Some(default_logging()));
        assert_eq!(changes.tracing, Some(default_tracing()));
        assert_eq!(
            changes.encryption.as_ref().map(|e| e.r#type().clone()),
            Some(EncryptionType::AwsOwnedKey)
        );
        // A tags-only change sends nothing to UpdateStateMachine.
        let mut retagged = before.clone();
        retagged.insert("Tags".into(), json!([{"Key": "a", "Value": "b"}]));
        assert!(!super::changes(&before, &retagged, "T L").unwrap().any());
        let mut new_role = before.clone();
        new_role.insert("RoleArn".into(), json!("arn:role/b"));
        assert_eq!(
            super::changes(&before, &new_role, "T L").unwrap(),
            Changes {
                role_arn: Some("arn:role/b".into()),
                ..Changes::default()
            }
        );
    }

    #[test]
    fn only_role_propagation_errors_are_retried() {
        let assume = ProviderError::new(
            ErrorKind::ACCESS_DENIED,
            "T L: Neither the global service principal states.amazonaws.com, nor the regional \
             one is authorized to assume the provided role.",
        )
        .with_aws_code("AccessDeniedException");
        assert!(role_not_ready(&assume));
        let logs = ProviderError::new(
            ErrorKind::VALIDATION,
            "T L: The state machine IAM Role is not authorized to access the Log Destination",
        )
        .with_aws_code("InvalidLoggingConfiguration");
        assert!(role_not_ready(&logs));
        let denied = ProviderError::new(
            ErrorKind::ACCESS_DENIED,
            "T L: User: arn:aws:iam::1:user/u is not authorized to perform: states:CreateStateMachine",
        )
        .with_aws_code("AccessDeniedException");
        assert!(!role_not_ready(&denied));
        let invalid = ProviderError::new(
            ErrorKind::VALIDATION,
            "T L: Invalid State Machine Definition",
        )
        .with_aws_code("InvalidDefinition");
        assert!(!role_not_ready(&invalid));
    }

    fn machine(definition: &str) -> DescribeStateMachineOutput {
        DescribeStateMachineOutput::builder()
            .state_machine_arn("arn:aws:states:us-east-1:123456789012:stateMachine:Flow")
            .name("Flow")
            .definition(definition)
            .role_arn("arn:aws:iam::123456789012:role/r")
            .r#type(StateMachineType::Standard)
            .creation_date(a_date())
            .logging_configuration(default_logging())
            .tracing_configuration(default_tracing())
            .encryption_configuration(default_encryption())
            .build()
            .unwrap()
    }

    /// A fixed creation date (the shape never reads it).
    fn a_date() -> aws_sdk_sfn::primitives::DateTime {
        aws_sdk_sfn::primitives::DateTime::from_secs(1_700_000_000)
    }

    #[test]
    fn the_live_machine_reads_back_in_template_shape() {
        let live = "{\"StartAt\":\"A\",\"States\":{\"A\":{\"Type\":\"Pass\",\"End\":true}}}";
        let tags = [Tag::builder().key("team").value("x").build()];
        let shape = template_shape(&machine(live), &tags, &Map::new());
        assert_eq!(
            Value::Object(shape),
            json!({
                "StateMachineName": "Flow",
                "StateMachineType": "STANDARD",
                "RoleArn": "arn:aws:iam::123456789012:role/r",
                "DefinitionString": live,
                "Tags": [{"Key": "team", "Value": "x"}],
            })
        );
        // A template with a Definition object gets the live definition parsed.
        let object = props(json!({"Definition": {"StartAt": "A"}}));
        let shape = template_shape(&machine(live), &[], &object);
        assert_eq!(
            shape["Definition"],
            serde_json::from_str::<Value>(live).unwrap()
        );
        assert!(!shape.contains_key("DefinitionString"));
    }

    #[test]
    fn substituted_definitions_read_back_as_the_template_wrote_them() {
        let template = props(json!({
            "DefinitionString": "{\"Resource\":\"${Fn}\"}",
            "DefinitionSubstitutions": {"Fn": "arn:f"},
        }));
        let shape = template_shape(&machine("{\"Resource\": \"arn:f\"}"), &[], &template);
        assert_eq!(shape["DefinitionString"], json!("{\"Resource\":\"${Fn}\"}"));
        assert_eq!(shape["DefinitionSubstitutions"], json!({"Fn": "arn:f"}));
        // Changed outside the template: the live text shows, so the drift does.
        let drifted = template_shape(&machine("{\"Resource\":\"arn:g\"}"), &[], &template);
        assert_eq!(
            drifted["DefinitionString"],
            json!("{\"Resource\":\"arn:g\"}")
        );
        let object = props(json!({
            "Definition": {"Resource": "${Fn}"},
            "DefinitionSubstitutions": {"Fn": "arn:f"},
        }));
        let shape = template_shape(&machine("{\"Resource\":\"arn:f\"}"), &[], &object);
        assert_eq!(shape["Definition"], json!({"Resource": "${Fn}"}));
        assert!(!shape.contains_key("DefinitionString"));
    }

    #[test]
    fn logging_and_tracing_read_back_only_when_set_or_asked_for() {
        let live = LoggingConfiguration::builder()
            .level(LogLevel::Error)
            .include_execution_data(false)
            .destinations(
                LogDestination::builder()
                    .cloud_watch_logs_log_group(
                        CloudWatchLogsLogGroup::builder().log_group_arn("g").build(),
                    )
                    .build(),
            )
            .build();
        assert_eq!(
            logging_shape(Some(&live), &Map::new()),
            Some(json!({
                "Level": "ERROR",
                "Destinations": [{"CloudWatchLogsLogGroup": {"LogGroupArn": "g"}}],
            }))
        );
        let asked = props(
            json!({"LoggingConfiguration": {"Level": "ERROR", "IncludeExecutionData": false}}),
        );
        assert_eq!(
            logging_shape(Some(&live), &asked).unwrap()["IncludeExecutionData"],
            json!(false)
        );
        assert_eq!(logging_shape(Some(&default_logging()), &Map::new()), None);
        let off = props(json!({"LoggingConfiguration": {"Level": "OFF"}}));
        assert_eq!(
            logging_shape(Some(&default_logging()), &off),
            Some(json!({"Level": "OFF"}))
        );
        let enabled = TracingConfiguration::builder().enabled(true).build();
        assert_eq!(
            tracing_shape(Some(&enabled), &Map::new()),
            Some(json!({"Enabled": true}))
        );
        assert_eq!(tracing_shape(Some(&default_tracing()), &Map::new()), None);
        let asked = props(json!({"TracingConfiguration": {"Enabled": false}}));
        assert_eq!(
            tracing_shape(Some(&default_tracing()), &asked),
            Some(json!({"Enabled": false}))
        );
    }

    #[test]
    fn attributes_name_the_machine_and_its_revision() {
        assert_eq!(
            Value::Object(attributes_of(
                "arn:aws:states:us-east-1:1:stateMachine:Flow",
                INITIAL_REVISION
            )),
            json!({
                "Arn": "arn:aws:states:us-east-1:1:stateMachine:Flow",
                "Name": "Flow",
                "StateMachineRevisionId": "INITIAL",
            })
        );
        assert_eq!(revision_of(&machine("{}")), "INITIAL");
    }
}
