//! `AWS::Scheduler::Schedule`: physical id (and `Ref`) is the schedule name; attribute `Arn`.
//! Every call names the schedule's group too: the template's `GroupName`, `default` without
//! one. UpdateSchedule replaces the whole definition, so an update sends all of it and a
//! setting the template dropped goes back to Scheduler's default. Every target block
//! CloudFormation has is mapped, `EcsParameters` (an ECS task on a schedule) included.

use std::future::Future;
use std::time::Duration;

use aws_sdk_scheduler::error::ProvideErrorMetadata;
use aws_sdk_scheduler::operation::get_schedule::GetScheduleOutput;
use aws_sdk_scheduler::primitives::DateTime;
use aws_sdk_scheduler::types::{
    ActionAfterCompletion, AssignPublicIp, AwsVpcConfiguration, CapacityProviderStrategyItem,
    DeadLetterConfig, EcsParameters, EventBridgeParameters, FlexibleTimeWindow,
    FlexibleTimeWindowMode, KinesisParameters, LaunchType, NetworkConfiguration,
    PlacementConstraint, PlacementConstraintType, PlacementStrategy, PlacementStrategyType,
    PropagateTags, RetryPolicy, SageMakerPipelineParameter, SageMakerPipelineParameters,
    ScheduleState, SqsParameters, Target,
};
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, flag, given_or_generated_name, int, put,
    string, strings, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, client_token, found, iso_date, parse_date, scheduler_error, with_create_kind,
    with_scheduler_kind,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Scheduler::Schedule";

/// The longest schedule name Scheduler takes.
const MAX_NAME: usize = 64;

/// The group a schedule without `GroupName` belongs to.
const DEFAULT_GROUP: &str = "default";

/// Scheduler's retry policy when a target names none: a day, 185 attempts.
const DEFAULT_RETRY: (i32, i32) = (86_400, 185);

/// How long a create or update waits for a role just created to become assumable.
const ROLE_WAIT: Duration = cdkd_aws_common::IAM_PROPAGATION;

/// The `AWS::Scheduler::Schedule` provider.
#[derive(Default)]
pub struct Schedule;

/// A schedule's whole definition, as CreateSchedule and UpdateSchedule both take it.
#[derive(Debug, Clone, PartialEq)]
struct Definition {
    /// `ScheduleExpression`.
    expression: String,
    /// `ScheduleExpressionTimezone`; left out, UTC.
    timezone: Option<String>,
    /// `Description`.
    description: Option<String>,
    /// `StartDate`.
    start_date: Option<DateTime>,
    /// `EndDate`.
    end_date: Option<DateTime>,
    /// `State`; left out, enabled.
    state: Option<ScheduleState>,
    /// `FlexibleTimeWindow`.
    window: FlexibleTimeWindow,
    /// `KmsKeyArn`; left out, an AWS owned key.
    kms_key_arn: Option<String>,
    /// `ActionAfterCompletion`; left out, the schedule stays.
    after_completion: Option<ActionAfterCompletion>,
    /// `Target`.
    target: Target,
}

/// Sets every setting of a [`Definition`] on a CreateSchedule or UpdateSchedule builder (the
/// two have the same setters but no common trait).
macro_rules! with_definition {
    ($builder:expr, $definition:expr) => {{
        let d: &Definition = $definition;
        $builder
            .schedule_expression(d.expression.clone())
            .set_schedule_expression_timezone(d.timezone.clone())
            .set_description(d.description.clone())
            .set_start_date(d.start_date)
            .set_end_date(d.end_date)
            .set_state(d.state.clone())
            .flexible_time_window(d.window.clone())
            .set_kms_key_arn(d.kms_key_arn.clone())
            .set_action_after_completion(d.after_completion.clone())
            .target(d.target.clone())
    }};
}

/// The schedule's group: the template's `GroupName`, else `default`.
fn group_of(properties: &Map<String, Value>) -> String {
    string(properties.get("GroupName"))
        .filter(|g| !g.is_empty())
        .unwrap_or_else(|| DEFAULT_GROUP.to_string())
}

/// A template string, an empty one counted as absent.
fn setting(block: &Map<String, Value>, name: &str) -> Option<String> {
    string(block.get(name)).filter(|s| !s.is_empty())
}

/// A template block (`FlexibleTimeWindow`, `Target.RetryPolicy`, ...) when it is an object.
fn block<'a>(properties: &'a Map<String, Value>, name: &str) -> Option<&'a Map<String, Value>> {
    properties.get(name).and_then(Value::as_object)
}

/// A required template string, refused by its path when absent.
fn required(block: &Map<String, Value>, path: &str, what: &str) -> Result<String, ProviderError> {
    let name = path.rsplit('.').next().unwrap_or(path);
    setting(block, name).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: property {path} is required and must be a string"
        ))
    })
}

/// A template date-time property as the SDK's date.
fn date(
    properties: &Map<String, Value>,
    name: &str,
    what: &str,
) -> Result<Option<DateTime>, ProviderError> {
    match setting(properties, name) {
        None => Ok(None),
        Some(text) => parse_date(&text).map(Some).ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: {name} {text:?} is not an ISO 8601 date-time (such as 2030-01-01T00:00:00Z)"
            ))
        }),
    }
}

/// A target's `Input`: text as written, a JSON document a template resolved to an object as
/// its JSON text.
fn input_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// The template's `FlexibleTimeWindow`, required.
fn flexible_window(
    properties: &Map<String, Value>,
    what: &str,
) -> Result<FlexibleTimeWindow, ProviderError> {
    let window = block(properties, "FlexibleTimeWindow").ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: property FlexibleTimeWindow is required (Mode OFF or FLEXIBLE)"
        ))
    })?;
    let mode = required(window, "FlexibleTimeWindow.Mode", what)?;
    FlexibleTimeWindow::builder()
        .mode(FlexibleTimeWindowMode::from(mode.as_str()))
        .set_maximum_window_in_minutes(int(window.get("MaximumWindowInMinutes")))
        .build()
        .map_err(|e| ProviderError::validation(format!("{what}: FlexibleTimeWindow: {e}")))
}

/// The template's `Target`, required.
fn target(properties: &Map<String, Value>, what: &str) -> Result<Target, ProviderError> {
    let target = block(properties, "Target").ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: property Target is required (with Arn and RoleArn)"
        ))
    })?;
    let built = |e: aws_sdk_scheduler::error::BuildError, path: &str| {
        ProviderError::validation(format!("{what}: {path}: {e}"))
    };
    let retry = block(target, "RetryPolicy").map(|retry| {
        RetryPolicy::builder()
            .set_maximum_event_age_in_seconds(int(retry.get("MaximumEventAgeInSeconds")))
            .set_maximum_retry_attempts(int(retry.get("MaximumRetryAttempts")))
            .build()
    });
    let dead_letter = block(target, "DeadLetterConfig")
        .and_then(|d| setting(d, "Arn"))
        .map(|arn| DeadLetterConfig::builder().arn(arn).build());
    let event_bridge = block(target, "EventBridgeParameters")
        .map(|p| {
            EventBridgeParameters::builder()
                .set_detail_type(setting(p, "DetailType"))
                .set_source(setting(p, "Source"))
                .build()
                .map_err(|e| built(e, "Target.EventBridgeParameters"))
        })
        .transpose()?;
    let sqs = block(target, "SqsParameters").map(|p| {
        SqsParameters::builder()
            .set_message_group_id(setting(p, "MessageGroupId"))
            .build()
    });
    let kinesis = block(target, "KinesisParameters")
        .map(|p| {
            KinesisParameters::builder()
                .set_partition_key(setting(p, "PartitionKey"))
                .build()
                .map_err(|e| built(e, "Target.KinesisParameters"))
        })
        .transpose()?;
    let sagemaker = block(target, "SageMakerPipelineParameters")
        .map(|p| {
            let list = p
                .get("PipelineParameterList")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let parameters = list
                .iter()
                .map(|item| {
                    SageMakerPipelineParameter::builder()
                        .set_name(string(item.get("Name")))
                        .set_value(string(item.get("Value")))
                        .build()
                        .map_err(|e| {
                            built(
                                e,
                                "Target.SageMakerPipelineParameters.PipelineParameterList",
                            )
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, ProviderError>(
                SageMakerPipelineParameters::builder()
                    .set_pipeline_parameter_list(Some(parameters).filter(|p| !p.is_empty()))
                    .build(),
            )
        })
        .transpose()?;
    Target::builder()
        .arn(required(target, "Target.Arn", what)?)
        .role_arn(required(target, "Target.RoleArn", what)?)
        .set_input(input_text(target.get("Input")))
        .set_retry_policy(retry)
        .set_dead_letter_config(dead_letter)
        .set_event_bridge_parameters(event_bridge)
        .set_sqs_parameters(sqs)
        .set_kinesis_parameters(kinesis)
        .set_sage_maker_pipeline_parameters(sagemaker)
        .set_ecs_parameters(
            block(target, "EcsParameters")
                .map(|p| ecs_parameters(p, what))
                .transpose()?,
        )
        .build()
        .map_err(|e| built(e, "Target"))
}

/// The objects of a template list (`CapacityProviderStrategy`, `PlacementConstraints`, ...).
fn objects<'a>(block: &'a Map<String, Value>, name: &str) -> Vec<&'a Map<String, Value>> {
    block
        .get(name)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

/// `Target.EcsParameters`: the task Scheduler runs on the cluster the target's `Arn` names.
fn ecs_parameters(p: &Map<String, Value>, what: &str) -> Result<EcsParameters, ProviderError> {
    const PATH: &str = "Target.EcsParameters";
    let built = |e: aws_sdk_scheduler::error::BuildError, path: &str| {
        ProviderError::validation(format!("{what}: {PATH}{path}: {e}"))
    };
    let network = block(p, "NetworkConfiguration")
        .and_then(|n| block(n, "AwsvpcConfiguration"))
        .map(|vpc| {
            AwsVpcConfiguration::builder()
                .set_subnets(strings(vpc.get("Subnets")))
                .set_security_groups(strings(vpc.get("SecurityGroups")))
                .set_assign_public_ip(
                    setting(vpc, "AssignPublicIp")
                        .as_deref()
                        .map(AssignPublicIp::from),
                )
                .build()
                .map_err(|e| built(e, ".NetworkConfiguration.AwsvpcConfiguration"))
        })
        .transpose()?
        .map(|vpc| {
            NetworkConfiguration::builder()
                .awsvpc_configuration(vpc)
                .build()
        });
    let strategy = objects(p, "CapacityProviderStrategy")
        .into_iter()
        .map(|item| {
            CapacityProviderStrategyItem::builder()
                .set_capacity_provider(setting(item, "CapacityProvider"))
                .set_weight(int(item.get("Weight")))
                .set_base(int(item.get("Base")))
                .build()
                .map_err(|e| built(e, ".CapacityProviderStrategy"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let constraints = objects(p, "PlacementConstraints")
        .into_iter()
        .map(|item| {
            PlacementConstraint::builder()
                .set_type(
                    setting(item, "Type")
                        .as_deref()
                        .map(PlacementConstraintType::from),
                )
                .set_expression(setting(item, "Expression"))
                .build()
        })
        .collect::<Vec<_>>();
    let placement = objects(p, "PlacementStrategy")
        .into_iter()
        .map(|item| {
            PlacementStrategy::builder()
                .set_type(
                    setting(item, "Type")
                        .as_deref()
                        .map(PlacementStrategyType::from),
                )
                .set_field(setting(item, "Field"))
                .build()
        })
        .collect::<Vec<_>>();
    // `Tags` is free JSON in CloudFormation; Scheduler takes a list of string maps, and CDK
    // writes `[{"key": ..., "value": ...}]`, which is one such map per tag.
    let tags = p.get("Tags").and_then(Value::as_array).map(|items| {
        items
            .iter()
            .filter_map(Value::as_object)
            .map(|tag| {
                tag.iter()
                    .filter_map(|(k, v)| string(Some(v)).map(|v| (k.clone(), v)))
                    .collect()
            })
            .collect::<Vec<std::collections::HashMap<String, String>>>()
    });
    EcsParameters::builder()
        .set_task_definition_arn(setting(p, "TaskDefinitionArn"))
        .set_task_count(int(p.get("TaskCount")))
        .set_launch_type(setting(p, "LaunchType").as_deref().map(LaunchType::from))
        .set_network_configuration(network)
        .set_platform_version(setting(p, "PlatformVersion"))
        .set_group(setting(p, "Group"))
        .set_capacity_provider_strategy(Some(strategy).filter(|s| !s.is_empty()))
        .set_enable_ecs_managed_tags(flag(p.get("EnableECSManagedTags")))
        .set_enable_execute_command(flag(p.get("EnableExecuteCommand")))
        .set_placement_constraints(Some(constraints).filter(|c| !c.is_empty()))
        .set_placement_strategy(Some(placement).filter(|s| !s.is_empty()))
        .set_propagate_tags(
            setting(p, "PropagateTags")
                .as_deref()
                .map(PropagateTags::from),
        )
        .set_reference_id(setting(p, "ReferenceId"))
        .set_tags(tags.filter(|t| !t.is_empty()))
        .build()
        .map_err(|e| built(e, ""))
}

/// A live `EcsParameters` in template shape.
fn ecs_shape(p: &EcsParameters) -> Value {
    let mut block = Map::new();
    block.insert("TaskDefinitionArn".into(), json!(p.task_definition_arn()));
    put(&mut block, "TaskCount", p.task_count().map(|v| json!(v)));
    put(
        &mut block,
        "LaunchType",
        p.launch_type().map(|v| json!(v.as_str())),
    );
    if let Some(vpc) = p
        .network_configuration()
        .and_then(NetworkConfiguration::awsvpc_configuration)
    {
        let mut config = Map::new();
        config.insert("Subnets".into(), json!(vpc.subnets()));
        if !vpc.security_groups().is_empty() {
            config.insert("SecurityGroups".into(), json!(vpc.security_groups()));
        }
        put(
            &mut config,
            "AssignPublicIp",
            vpc.assign_public_ip().map(|v| json!(v.as_str())),
        );
        block.insert(
            "NetworkConfiguration".into(),
            json!({"AwsvpcConfiguration": config}),
        );
    }
    put(
        &mut block,
        "PlatformVersion",
        p.platform_version().map(|v| json!(v)),
    );
    put(&mut block, "Group", p.group().map(|v| json!(v)));
    let strategy: Vec<Value> = p
        .capacity_provider_strategy()
        .iter()
        .map(|item| {
            let mut entry = Map::new();
            entry.insert("CapacityProvider".into(), json!(item.capacity_provider()));
            put(
                &mut entry,
                "Weight",
                Some(json!(item.weight())).filter(|_| item.weight() != 0),
            );
            put(
                &mut entry,
                "Base",
                Some(json!(item.base())).filter(|_| item.base() != 0),
            );
            Value::Object(entry)
        })
        .collect();
    if !strategy.is_empty() {
        block.insert("CapacityProviderStrategy".into(), Value::Array(strategy));
    }
    put(
        &mut block,
        "EnableECSManagedTags",
        p.enable_ecs_managed_tags().map(|v| json!(v)),
    );
    put(
        &mut block,
        "EnableExecuteCommand",
        p.enable_execute_command().map(|v| json!(v)),
    );
    let pairs = |items: Vec<(Option<&str>, Option<&str>)>, second: &str| -> Vec<Value> {
        items
            .into_iter()
            .map(|(kind, other)| {
                let mut entry = Map::new();
                put(&mut entry, "Type", kind.map(|v| json!(v)));
                put(&mut entry, second, other.map(|v| json!(v)));
                Value::Object(entry)
            })
            .collect()
    };
    let constraints = pairs(
        p.placement_constraints()
            .iter()
            .map(|c| (c.r#type().map(|t| t.as_str()), c.expression()))
            .collect(),
        "Expression",
    );
    if !constraints.is_empty() {
        block.insert("PlacementConstraints".into(), Value::Array(constraints));
    }
    let placement = pairs(
        p.placement_strategy()
            .iter()
            .map(|s| (s.r#type().map(|t| t.as_str()), s.field()))
            .collect(),
        "Field",
    );
    if !placement.is_empty() {
        block.insert("PlacementStrategy".into(), Value::Array(placement));
    }
    put(
        &mut block,
        "PropagateTags",
        p.propagate_tags().map(|v| json!(v.as_str())),
    );
    put(
        &mut block,
        "ReferenceId",
        p.reference_id().map(|v| json!(v)),
    );
    if !p.tags().is_empty() {
        block.insert("Tags".into(), json!(p.tags()));
    }
    Value::Object(block)
}

/// The whole definition a template asks for.
fn definition(properties: &Map<String, Value>, what: &str) -> Result<Definition, ProviderError> {
    Ok(Definition {
        expression: required(properties, "ScheduleExpression", what)?,
        timezone: setting(properties, "ScheduleExpressionTimezone"),
        description: setting(properties, "Description"),
        start_date: date(properties, "StartDate", what)?,
        end_date: date(properties, "EndDate", what)?,
        state: setting(properties, "State").map(|s| ScheduleState::from(s.as_str())),
        window: flexible_window(properties, what)?,
        kms_key_arn: setting(properties, "KmsKeyArn"),
        after_completion: setting(properties, "ActionAfterCompletion")
            .map(|a| ActionAfterCompletion::from(a.as_str())),
        target: target(properties, what)?,
    })
}

/// Whether Scheduler refused a call because it cannot assume the target's role yet: IAM
/// propagates a role just created within seconds, and Scheduler checks it on every write.
fn role_not_ready(code: Option<&str>, message: Option<&str>) -> bool {
    let message = message.unwrap_or_default().to_ascii_lowercase();
    code == Some("ValidationException") && (message.contains("role") || message.contains("assume"))
}

/// `call` retried while Scheduler cannot assume the target's role yet, up to [`ROLE_WAIT`]
/// (paced by the time waited from 500 ms); any other answer returned as it is.
async fn with_role_retry<T, E, F, Fut>(what: &str, call: F) -> Result<T, E>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let retry = |err: &E, delay: Duration| {
        let again = role_not_ready(err.code(), err.message());
        if again {
            tracing::debug!(
                "{what}: the target's role is not assumable yet ({}); retrying in {delay:?}",
                err.message().unwrap_or_default()
            );
        }
        again
    };
    cdkd_aws_common::retry_while(Duration::from_millis(500), ROLE_WAIT, retry, call).await
}

/// `err`, naming the target's role when Scheduler still could not assume it after
/// [`ROLE_WAIT`] (`refused`).
fn role_still_refused(
    err: ProviderError,
    refused: bool,
    properties: &Map<String, Value>,
) -> ProviderError {
    if !refused {
        return err;
    }
    let role = properties
        .get("Target")
        .and_then(|t| t.get("RoleArn"))
        .and_then(Value::as_str)
        .unwrap_or("of the target");
    cdkd_aws_common::not_propagated(err, &format!("the role {role}"), ROLE_WAIT)
}

/// The attributes of the schedule whose ARN is `arn`.
fn attributes_of(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes
}

/// The live schedule `group`/`name`; `None` when there is none.
async fn get_schedule(
    scheduler: &aws_sdk_scheduler::Client,
    what: &str,
    group: &str,
    name: &str,
) -> Result<Option<GetScheduleOutput>, ProviderError> {
    found(
        scheduler
            .get_schedule()
            .name(name)
            .group_name(group)
            .send()
            .await
            .map_err(scheduler_error!(
                what,
                format!("GetSchedule {group}/{name}")
            )),
    )
}

/// The ARN of the schedule `name` in whichever group holds it (an adopted schedule comes with
/// only its name): the one in `default` when several groups have one.
async fn find_arn(
    scheduler: &aws_sdk_scheduler::Client,
    what: &str,
    name: &str,
) -> Result<Option<String>, ProviderError> {
    let mut token: Option<String> = None;
    let mut matches: Vec<(String, String)> = Vec::new();
    loop {
        let page = scheduler
            .list_schedules()
            .name_prefix(name)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(scheduler_error!(what, format!("ListSchedules {name}")))?;
        matches.extend(
            page.schedules()
                .iter()
                .filter(|s| s.name() == Some(name))
                .filter_map(|s| {
                    Some((
                        s.group_name().unwrap_or(DEFAULT_GROUP).to_string(),
                        s.arn()?.to_string(),
                    ))
                }),
        );
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => break,
        }
    }
    match matches.len() {
        0 => Ok(None),
        1 => Ok(matches.pop().map(|(_, arn)| arn)),
        _ => match matches.iter().find(|(group, _)| group == DEFAULT_GROUP) {
            Some((_, arn)) => Ok(Some(arn.clone())),
            None => Err(ProviderError::validation(format!(
                "{what}: schedules named {name} exist in several groups ({}); cannot tell which",
                matches
                    .iter()
                    .map(|(group, _)| group.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        },
    }
}

/// A live date back in template shape: the template's own text when it names the same
/// instant (so its spelling is no drift), else ISO 8601 in UTC.
fn date_shape(live: Option<&DateTime>, template: Option<&Value>) -> Option<Value> {
    let live = live?;
    if let Some(text) = template.and_then(Value::as_str) {
        if parse_date(text).is_some_and(|d| d.secs() == live.secs()) {
            return Some(json!(text));
        }
    }
    iso_date(live).map(Value::String)
}

/// A live target in template shape; settings at Scheduler's defaults written only when the
/// template names them.
fn target_shape(target: &Target, template: Option<&Value>) -> Value {
    let template = template.and_then(Value::as_object);
    let given = |name: &str| template.is_some_and(|t| t.get(name).is_some_and(|v| !v.is_null()));
    let mut shape = Map::new();
    shape.insert("Arn".into(), json!(target.arn()));
    shape.insert("RoleArn".into(), json!(target.role_arn()));
    if let Some(input) = target.input() {
        // An object the template wrote is answered as that object when it says the same.
        let written = template
            .and_then(|t| t.get("Input"))
            .filter(|v| !v.is_string());
        let value = match written {
            Some(object) if serde_json::from_str::<Value>(input).ok().as_ref() == Some(object) => {
                object.clone()
            }
            _ => json!(input),
        };
        shape.insert("Input".into(), value);
    }
    if let Some(retry) = target.retry_policy() {
        let live = (
            retry.maximum_event_age_in_seconds(),
            retry.maximum_retry_attempts(),
        );
        let default = (Some(DEFAULT_RETRY.0), Some(DEFAULT_RETRY.1));
        if live != default || given("RetryPolicy") {
            let mut block = Map::new();
            put(
                &mut block,
                "MaximumEventAgeInSeconds",
                live.0.map(|v| json!(v)),
            );
            put(&mut block, "MaximumRetryAttempts", live.1.map(|v| json!(v)));
            shape.insert("RetryPolicy".into(), Value::Object(block));
        }
    }
    if let Some(arn) = target.dead_letter_config().and_then(DeadLetterConfig::arn) {
        shape.insert("DeadLetterConfig".into(), json!({"Arn": arn}));
    }
    if let Some(p) = target.event_bridge_parameters() {
        shape.insert(
            "EventBridgeParameters".into(),
            json!({"DetailType": p.detail_type(), "Source": p.source()}),
        );
    }
    if let Some(p) = target.sqs_parameters() {
        let mut block = Map::new();
        put(
            &mut block,
            "MessageGroupId",
            p.message_group_id().map(|v| json!(v)),
        );
        shape.insert("SqsParameters".into(), Value::Object(block));
    }
    if let Some(p) = target.kinesis_parameters() {
        shape.insert(
            "KinesisParameters".into(),
            json!({"PartitionKey": p.partition_key()}),
        );
    }
    if let Some(p) = target.sage_maker_pipeline_parameters() {
        let list: Vec<Value> = p
            .pipeline_parameter_list()
            .iter()
            .map(|item| json!({"Name": item.name(), "Value": item.value()}))
            .collect();
        let mut block = Map::new();
        if !list.is_empty() {
            block.insert("PipelineParameterList".into(), Value::Array(list));
        }
        shape.insert("SageMakerPipelineParameters".into(), Value::Object(block));
    }
    if let Some(p) = target.ecs_parameters() {
        shape.insert("EcsParameters".into(), ecs_shape(p));
    }
    Value::Object(shape)
}

/// A live schedule in template shape; settings at Scheduler's defaults (group `default`,
/// timezone UTC, enabled, no action after completion) written only when the template names
/// them.
fn template_shape(live: &GetScheduleOutput, template: &Map<String, Value>) -> Map<String, Value> {
    let given = |name: &str| template.get(name).is_some_and(|v| !v.is_null());
    let mut props = Map::new();
    put(&mut props, "Name", live.name().map(|v| json!(v)));
    if let Some(group) = live.group_name() {
        if group != DEFAULT_GROUP || given("GroupName") {
            props.insert("GroupName".into(), json!(group));
        }
    }
    put(
        &mut props,
        "Description",
        live.description()
            .filter(|d| !d.is_empty())
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "ScheduleExpression",
        live.schedule_expression().map(|v| json!(v)),
    );
    if let Some(zone) = live.schedule_expression_timezone() {
        if zone != "UTC" || given("ScheduleExpressionTimezone") {
            props.insert("ScheduleExpressionTimezone".into(), json!(zone));
        }
    }
    put(
        &mut props,
        "StartDate",
        date_shape(live.start_date(), template.get("StartDate")),
    );
    put(
        &mut props,
        "EndDate",
        date_shape(live.end_date(), template.get("EndDate")),
    );
    if let Some(state) = live.state() {
        if *state != ScheduleState::Enabled || given("State") {
            props.insert("State".into(), json!(state.as_str()));
        }
    }
    if let Some(window) = live.flexible_time_window() {
        let mut block = Map::new();
        block.insert("Mode".into(), json!(window.mode().as_str()));
        put(
            &mut block,
            "MaximumWindowInMinutes",
            window.maximum_window_in_minutes().map(|v| json!(v)),
        );
        props.insert("FlexibleTimeWindow".into(), Value::Object(block));
    }
    put(
        &mut props,
        "KmsKeyArn",
        live.kms_key_arn()
            .filter(|k| !k.is_empty())
            .map(|v| json!(v)),
    );
    if let Some(action) = live.action_after_completion() {
        if *action != ActionAfterCompletion::None || given("ActionAfterCompletion") {
            props.insert("ActionAfterCompletion".into(), json!(action.as_str()));
        }
    }
    if let Some(target) = live.target() {
        props.insert(
            "Target".into(),
            target_shape(target, template.get("Target")),
        );
    }
    props
}

#[async_trait]
impl ResourceProvider for Schedule {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "GroupName",
                "Description",
                "ScheduleExpression",
                "ScheduleExpressionTimezone",
                "StartDate",
                "EndDate",
                "State",
                "FlexibleTimeWindow",
                "KmsKeyArn",
                "ActionAfterCompletion",
                "Target",
            ])
            // The schema lists only Name, but UpdateSchedule cannot move a schedule to
            // another group: a new group is a new schedule.
            .create_only(&["Name", "GroupName"])
            .read_and_import()
            .finds_created_in(&["GroupName", "Name"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let group = group_of(&request.properties);
        let definition = definition(&request.properties, &what)?;
        let scheduler = client(ctx).await?;
        let call = with_definition!(
            scheduler
                .create_schedule()
                .name(&name)
                .group_name(&group)
                .set_client_token(client_token(&request.client_token)),
            &definition
        );
        let answer = with_role_retry(&what, || call.clone().send())
            .await
            .map_err(|e| {
                let refused = role_not_ready(e.code(), e.message());
                let err = with_create_kind(aws_error(
                    &format!("{what}: CreateSchedule {group}/{name}"),
                    e,
                ));
                role_still_refused(err, refused, &request.properties)
            })?;
        Ok(CreateResult {
            attributes: attributes_of(answer.schedule_arn()),
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
        let name = request.physical_id.as_str();
        let group = group_of(&request.properties);
        let definition = definition(&request.properties, &what)?;
        let scheduler = client(ctx).await?;
        let call = with_definition!(
            scheduler.update_schedule().name(name).group_name(&group),
            &definition
        );
        let answer = with_role_retry(&what, || call.clone().send())
            .await
            .map_err(|e| {
                let refused = role_not_ready(e.code(), e.message());
                let err = with_scheduler_kind(aws_error(
                    &format!("{what}: UpdateSchedule {group}/{name}"),
                    e,
                ));
                role_still_refused(err, refused, &request.properties)
            })?;
        Ok(UpdateResult {
            attributes: attributes_of(answer.schedule_arn()),
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
        let name = request.physical_id.as_str();
        let group = group_of(&request.properties);
        let scheduler = client(ctx).await?;
        deleted_unless_failed(
            scheduler
                .delete_schedule()
                .name(name)
                .group_name(&group)
                .send()
                .await
                .map(|_| ())
                .map_err(scheduler_error!(
                    what,
                    format!("DeleteSchedule {group}/{name}")
                )),
        )
    }
}

#[async_trait]
impl Readable for Schedule {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let scheduler = client(ctx).await?;
        let group = group_of(&request.properties);
        let live = get_schedule(&scheduler, what, &group, &request.physical_id).await?;
        Ok(live.map(|live| template_shape(&live, &request.properties)))
    }

    /// `Arn`, of the schedule of that name in whichever group holds it.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let scheduler = client(ctx).await?;
        match find_arn(&scheduler, what, physical_id).await? {
            Some(arn) => Ok(attributes_of(&arn)),
            None => Err(does_not_exist(what, physical_id, "Scheduler")),
        }
    }

    /// The template's name or the one generated from the token, in its group.
    const CREATED_NAME: Option<(Option<&'static str>, usize)> = Some((Some("Name"), MAX_NAME));
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_scheduler::error::ErrorMetadata;
    use cdkd_provider_api::ErrorKind;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    const ROLE: &str = "arn:aws:iam::123456789012:role/scheduler";
    const QUEUE: &str = "arn:aws:sqs:us-east-1:123456789012:jobs.fifo";

    fn full_template() -> Map<String, Value> {
        props(json!({
            "Name": "nightly",
            "GroupName": "jobs",
            "Description": "nightly run",
            "ScheduleExpression": "cron(0 2 * * ? *)",
            "ScheduleExpressionTimezone": "Europe/Paris",
            "StartDate": "2030-01-01T00:00:00Z",
            "EndDate": "2031-01-01T09:00:00+09:00",
            "State": "DISABLED",
            "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": "15"},
            "KmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/abc",
            "ActionAfterCompletion": "DELETE",
            "Target": {
                "Arn": QUEUE,
                "RoleArn": ROLE,
                "Input": "{\"job\":\"nightly\"}",
                "RetryPolicy": {"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 0},
                "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:dlq"},
                "SqsParameters": {"MessageGroupId": "g1"},
            },
        }))
    }

    #[test]
    fn a_create_takes_every_setting_of_the_template() {
        let d = definition(&full_template(), "S").unwrap();
        assert_eq!(d.expression, "cron(0 2 * * ? *)");
        assert_eq!(d.timezone.as_deref(), Some("Europe/Paris"));
        assert_eq!(d.description.as_deref(), Some("nightly run"));
        assert_eq!(d.start_date, Some(DateTime::from_secs(1_893_456_000)));
        assert_eq!(d.end_date, Some(DateTime::from_secs(1_924_992_000)));
        assert_eq!(d.state, Some(ScheduleState::Disabled));
        assert_eq!(d.window.mode(), &FlexibleTimeWindowMode::Flexible);
        assert_eq!(d.window.maximum_window_in_minutes(), Some(15));
        assert_eq!(
            d.kms_key_arn.as_deref(),
            Some("arn:aws:kms:us-east-1:123456789012:key/abc")
        );
        assert_eq!(d.after_completion, Some(ActionAfterCompletion::Delete));
        let t = &d.target;
        assert_eq!((t.arn(), t.role_arn()), (QUEUE, ROLE));
        assert_eq!(t.input(), Some("{\"job\":\"nightly\"}"));
        let retry = t.retry_policy().unwrap();
        assert_eq!(
            (
                retry.maximum_event_age_in_seconds(),
                retry.maximum_retry_attempts()
            ),
            (Some(3600), Some(0))
        );
        assert_eq!(
            t.dead_letter_config().and_then(DeadLetterConfig::arn),
            Some("arn:aws:sqs:us-east-1:123456789012:dlq")
        );
        assert_eq!(
            t.sqs_parameters().and_then(SqsParameters::message_group_id),
            Some("g1")
        );
        assert!(t.event_bridge_parameters().is_none());
        // Both operations take the same definition.
        let create = with_definition!(
            aws_sdk_scheduler::operation::create_schedule::CreateScheduleInput::builder()
                .name("nightly")
                .group_name("jobs"),
            &d
        )
        .build()
        .unwrap();
        assert_eq!(create.target(), Some(&d.target));
        assert_eq!(create.state(), Some(&ScheduleState::Disabled));
        assert_eq!(create.start_date(), d.start_date.as_ref());
    }

    #[test]
    fn target_blocks_map_and_read_back_ecs_included() {
        let template = |target: Value| {
            props(json!({
                "ScheduleExpression": "rate(5 minutes)",
                "FlexibleTimeWindow": {"Mode": "OFF"},
                "Target": target,
            }))
        };
        let d = definition(
            &template(json!({
                "Arn": "arn:aws:events:us-east-1:123456789012:event-bus/default",
                "RoleArn": ROLE,
                "Input": {"a": 1},
                "EventBridgeParameters": {"DetailType": "tick", "Source": "my.app"},
            })),
            "S",
        )
        .unwrap();
        let eb = d.target.event_bridge_parameters().unwrap();
        assert_eq!((eb.detail_type(), eb.source()), ("tick", "my.app"));
        assert_eq!(d.target.input(), Some("{\"a\":1}"));
        assert_eq!(d.window.mode(), &FlexibleTimeWindowMode::Off);
        assert_eq!(d.window.maximum_window_in_minutes(), None);
        assert_eq!(d.state, None);
        assert_eq!(d.target.retry_policy(), None);

        let kinesis = definition(
            &template(json!({
                "Arn": "arn:aws:kinesis:us-east-1:123456789012:stream/s",
                "RoleArn": ROLE,
                "KinesisParameters": {"PartitionKey": "pk"},
            })),
            "S",
        )
        .unwrap();
        assert_eq!(
            kinesis.target.kinesis_parameters().unwrap().partition_key(),
            "pk"
        );

        let sagemaker = definition(
            &template(json!({
                "Arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/p",
                "RoleArn": ROLE,
                "SageMakerPipelineParameters": {
                    "PipelineParameterList": [{"Name": "n", "Value": "v"}]
                },
            })),
            "S",
        )
        .unwrap();
        let list = sagemaker
            .target
            .sage_maker_pipeline_parameters()
            .unwrap()
            .pipeline_parameter_list();
        assert_eq!((list[0].name(), list[0].value()), ("n", "v"));

        // An ECS task on a schedule, as CDK's EcsRunFargateTask writes it: mapped, and read
        // back in the template's shape.
        let ecs_block = json!({
            "TaskDefinitionArn": "arn:aws:ecs:us-east-1:123456789012:task-definition/td:1",
            "TaskCount": 2,
            "LaunchType": "FARGATE",
            "PlatformVersion": "LATEST",
            "NetworkConfiguration": {"AwsvpcConfiguration": {
                "Subnets": ["subnet-1", "subnet-2"], "SecurityGroups": ["sg-1"],
                "AssignPublicIp": "DISABLED"}},
            "CapacityProviderStrategy": [{"CapacityProvider": "FARGATE_SPOT", "Weight": 2, "Base": 1}],
            "EnableECSManagedTags": true,
            "EnableExecuteCommand": false,
            "PlacementConstraints": [{"Type": "memberOf", "Expression": "attribute:ecs.os-type == linux"}],
            "PlacementStrategy": [{"Type": "spread", "Field": "attribute:ecs.availability-zone"}],
            "PropagateTags": "TASK_DEFINITION",
            "ReferenceId": "nightly",
            "Group": "jobs",
            "Tags": [{"key": "team", "value": "data"}],
        });
        let ecs = definition(
            &template(json!({
                "Arn": "arn:aws:ecs:us-east-1:123456789012:cluster/c",
                "RoleArn": ROLE,
                "EcsParameters": ecs_block,
            })),
            "AWS::Scheduler::Schedule S",
        )
        .unwrap();
        let p = ecs.target.ecs_parameters().unwrap();
        assert_eq!(p.task_count(), Some(2));
        assert_eq!(p.launch_type(), Some(&LaunchType::Fargate));
        let vpc = p
            .network_configuration()
            .unwrap()
            .awsvpc_configuration()
            .unwrap();
        assert_eq!(vpc.subnets(), ["subnet-1", "subnet-2"]);
        assert_eq!(vpc.assign_public_ip(), Some(&AssignPublicIp::Disabled));
        assert_eq!(p.capacity_provider_strategy()[0].base(), 1);
        assert_eq!(p.tags()[0].get("key").map(String::as_str), Some("team"));
        assert_eq!(target_shape(&ecs.target, None)["EcsParameters"], ecs_block);
        let no_task = definition(
            &template(json!({
                "Arn": "arn:aws:ecs:us-east-1:123456789012:cluster/c",
                "RoleArn": ROLE,
                "EcsParameters": {"LaunchType": "FARGATE"},
            })),
            "AWS::Scheduler::Schedule S",
        )
        .unwrap_err();
        assert_eq!(no_task.kind, ErrorKind::VALIDATION);
        assert!(
            no_task.message.contains("Target.EcsParameters"),
            "{}",
            no_task.message
        );

        let no_partition = definition(
            &template(json!({"Arn": "a", "RoleArn": ROLE, "KinesisParameters": {}})),
            "S",
        )
        .unwrap_err();
        assert!(
            no_partition.message.contains("Target.KinesisParameters"),
            "{}",
            no_partition.message
        );
        let no_role = definition(&template(json!({"Arn": "a"})), "S").unwrap_err();
        assert!(
            no_role.message.contains("Target.RoleArn"),
            "{}",
            no_role.message
        );
    }

    #[test]
    fn missing_and_malformed_settings_are_refused() {
        let no_window = props(json!({
            "ScheduleExpression": "rate(1 hour)",
            "Target": {"Arn": "a", "RoleArn": ROLE},
        }));
        let err = definition(&no_window, "S").unwrap_err();
        assert!(
            err.message.contains("FlexibleTimeWindow"),
            "{}",
            err.message
        );
        let mut bad_date = full_template();
        bad_date.insert("StartDate".into(), json!("next monday"));
        let err = definition(&bad_date, "S").unwrap_err();
        assert!(err.message.contains("StartDate"), "{}", err.message);
    }

    #[test]
    fn the_group_defaults_to_default() {
        assert_eq!(group_of(&Map::new()), "default");
        assert_eq!(group_of(&props(json!({"GroupName": "jobs"}))), "jobs");
    }

    #[test]
    fn only_a_role_scheduler_cannot_assume_yet_is_retried() {
        assert!(role_not_ready(
            Some("ValidationException"),
            Some("The execution role you provide must allow AWS EventBridge Scheduler to assume the role.")
        ));
        assert!(!role_not_ready(
            Some("ValidationException"),
            Some("Invalid schedule expression")
        ));
        assert!(!role_not_ready(
            Some("ConflictException"),
            Some("role in use")
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn a_role_error_is_retried_until_the_call_succeeds() {
        let mut calls = 0;
        let answer: Result<u32, ErrorMetadata> = with_role_retry("S", || {
            calls += 1;
            let attempt = calls;
            async move {
                if attempt < 3 {
                    Err(ErrorMetadata::builder()
                        .code("ValidationException")
                        .message("Scheduler cannot assume the role")
                        .build())
                } else {
                    Ok(attempt)
                }
            }
        })
        .await;
        assert_eq!(answer.unwrap(), 3);
        let mut other = 0;
        let refused: Result<(), ErrorMetadata> = with_role_retry("S", || {
            other += 1;
            async {
                Err(ErrorMetadata::builder()
                    .code("ValidationException")
                    .message("bad expression")
                    .build())
            }
        })
        .await;
        assert!(refused.is_err());
        assert_eq!(other, 1);
    }

    #[test]
    fn the_live_schedule_reads_back_in_template_shape() {
        let d = definition(&full_template(), "S").unwrap();
        let live = GetScheduleOutput::builder()
            .arn("arn:aws:scheduler:us-east-1:123456789012:schedule/jobs/nightly")
            .name("nightly")
            .group_name("jobs")
            .description("nightly run")
            .schedule_expression("cron(0 2 * * ? *)")
            .schedule_expression_timezone("Europe/Paris")
            .start_date(DateTime::from_secs(1_893_456_000))
            .end_date(DateTime::from_secs(1_924_992_000))
            .state(ScheduleState::Disabled)
            .flexible_time_window(d.window.clone())
            .kms_key_arn("arn:aws:kms:us-east-1:123456789012:key/abc")
            .action_after_completion(ActionAfterCompletion::Delete)
            .target(d.target.clone())
            .build();
        let template = full_template();
        assert_eq!(
            Value::Object(template_shape(&live, &template)),
            json!({
                "Name": "nightly",
                "GroupName": "jobs",
                "Description": "nightly run",
                "ScheduleExpression": "cron(0 2 * * ? *)",
                "ScheduleExpressionTimezone": "Europe/Paris",
                "StartDate": "2030-01-01T00:00:00Z",
                // The template's own spelling of the same instant.
                "EndDate": "2031-01-01T09:00:00+09:00",
                "State": "DISABLED",
                "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 15},
                "KmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/abc",
                "ActionAfterCompletion": "DELETE",
                "Target": {
                    "Arn": QUEUE,
                    "RoleArn": ROLE,
                    "Input": "{\"job\":\"nightly\"}",
                    "RetryPolicy": {"MaximumEventAgeInSeconds": 3600, "MaximumRetryAttempts": 0},
                    "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:dlq"},
                    "SqsParameters": {"MessageGroupId": "g1"},
                },
            })
        );
    }

    #[test]
    fn scheduler_defaults_read_back_only_when_the_template_names_them() {
        let target = Target::builder()
            .arn("arn:aws:lambda:us-east-1:123456789012:function:f")
            .role_arn(ROLE)
            .input("{\"a\":1}")
            .retry_policy(
                RetryPolicy::builder()
                    .maximum_event_age_in_seconds(86_400)
                    .maximum_retry_attempts(185)
                    .build(),
            )
            .build()
            .unwrap();
        let live = GetScheduleOutput::builder()
            .name("s")
            .group_name("default")
            .schedule_expression("rate(1 hour)")
            .schedule_expression_timezone("UTC")
            .state(ScheduleState::Enabled)
            .action_after_completion(ActionAfterCompletion::None)
            .flexible_time_window(
                FlexibleTimeWindow::builder()
                    .mode(FlexibleTimeWindowMode::Off)
                    .build()
                    .unwrap(),
            )
            .target(target)
            .build();
        let template = props(json!({"Target": {"Input": {"a": 1}}}));
        assert_eq!(
            Value::Object(template_shape(&live, &template)),
            json!({
                "Name": "s",
                "ScheduleExpression": "rate(1 hour)",
                "FlexibleTimeWindow": {"Mode": "OFF"},
                "Target": {
                    "Arn": "arn:aws:lambda:us-east-1:123456789012:function:f",
                    "RoleArn": ROLE,
                    "Input": {"a": 1},
                },
            })
        );
        let named = props(json!({
            "GroupName": "default",
            "State": "ENABLED",
            "ScheduleExpressionTimezone": "UTC",
            "Target": {"RetryPolicy": {}},
        }));
        let shape = template_shape(&live, &named);
        assert_eq!(shape["GroupName"], json!("default"));
        assert_eq!(shape["State"], json!("ENABLED"));
        assert_eq!(shape["ScheduleExpressionTimezone"], json!("UTC"));
        assert_eq!(
            shape["Target"]["RetryPolicy"],
            json!({"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185})
        );
        assert_eq!(shape["Target"]["Input"], json!("{\"a\":1}"));
    }

    #[test]
    fn attributes_carry_the_arn() {
        assert_eq!(
            Value::Object(attributes_of("arn:s")),
            json!({"Arn": "arn:s"})
        );
    }
}
