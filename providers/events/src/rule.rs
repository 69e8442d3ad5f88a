//! `AWS::Events::Rule`: physical id is the rule's ARN
//! (`arn:aws:events:<region>:<account>:rule/[<bus>/]<name>`, the schema's primary identifier),
//! which names both the rule and its event bus. `Ref` gives that physical id; CloudFormation's
//! own `Ref` returns the bare name for a rule on the default bus and `<bus>|<name>` on another,
//! and an imported id of either shape is read too. Attributes `Arn` and `RuleName`.
//!
//! Targets are part of the rule: put after the rule, diffed by `Id` on update, removed before
//! the rule is deleted. Every target block CloudFormation has is mapped (`EcsParameters` in
//! `ecs_target`).

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use aws_sdk_eventbridge::operation::describe_rule::DescribeRuleOutput;
use aws_sdk_eventbridge::types::{
    AppSyncParameters, BatchArrayProperties, BatchParameters, BatchRetryStrategy, DeadLetterConfig,
    HttpParameters, InputTransformer, KinesisParameters, RedshiftDataParameters, RetryPolicy,
    RuleState, RunCommandParameters, RunCommandTarget, SageMakerPipelineParameter,
    SageMakerPipelineParameters, SqsParameters, Tag, Target,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, given_or_generated_name, int, kind_of, put,
    string, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, events_error, found, json_text, live_tags, parsed, sdk_tags, tag_map, template_tags,
    update_tags,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Events::Rule";

/// The longest rule name.
const MAX_NAME: usize = 64;

/// The bus a rule without `EventBusName` is on.
const DEFAULT_BUS: &str = "default";

/// How long a refused PutTargets is tried again: a resource policy created just before (a
/// queue's or topic's) may not have propagated yet. A target with a role is tried for
/// [`IAM_PROPAGATION`](cdkd_aws_common::IAM_PROPAGATION) instead: IAM is slower.
const PUT_TARGETS_PATIENCE: Duration = Duration::from_secs(30);

/// The pauses between two PutTargets: from 200 ms, a tenth of the time waited, up to 5 s.
const PUT_TARGETS_PACING: cdkd_aws_common::Pacing = cdkd_aws_common::Pacing {
    floor: Duration::from_millis(200),
    cap: Duration::from_secs(5),
};

/// Most targets one PutTargets call takes.
const PUT_TARGETS_BATCH: usize = 10;

/// Most target ids one RemoveTargets call takes.
const REMOVE_TARGETS_BATCH: usize = 100;

/// The `AWS::Events::Rule` provider.
#[derive(Default)]
pub struct Rule;

/// A rule as its physical id names it.
#[derive(Debug, Clone, PartialEq)]
struct RuleId {
    /// The event bus name; `None` for the default bus.
    bus: Option<String>,
    /// The rule name.
    name: String,
}

/// The rule a physical id names: its ARN (`rule/<name>` or `rule/<bus>/<name>`; a bus name may
/// itself hold `/`, a rule name never does), CloudFormation's `<bus>|<name>`, or a bare name on
/// the default bus.
fn rule_id(physical_id: &str) -> RuleId {
    let (bus, name) = if physical_id.starts_with("arn:") {
        let resource = physical_id.splitn(6, ':').nth(5).unwrap_or_default();
        let path = resource.strip_prefix("rule/").unwrap_or(resource);
        match path.rsplit_once('/') {
            Some((bus, name)) => (Some(bus), name),
            None => (None, path),
        }
    } else {
        match physical_id.split_once('|') {
            Some((bus, name)) => (Some(bus), name),
            None => (None, physical_id),
        }
    };
    RuleId {
        bus: bus
            .filter(|b| !b.is_empty() && *b != DEFAULT_BUS)
            .map(ToString::to_string),
        name: name.to_string(),
    }
}

/// One PutRule call's settings. PutRule replaces the whole rule, so a setting left out is
/// cleared, which is how a property removed from the template goes back to AWS's default.
#[derive(Debug, Clone, PartialEq, Default)]
struct PutRule {
    /// The rule name.
    name: String,
    /// The bus name or ARN; `None` for the default bus.
    bus: Option<String>,
    /// `ScheduleExpression`.
    schedule_expression: Option<String>,
    /// `EventPattern` as a JSON string.
    event_pattern: Option<String>,
    /// `State`; left out, EventBridge enables the rule.
    state: Option<String>,
    /// `Description`.
    description: Option<String>,
    /// `RoleArn`.
    role_arn: Option<String>,
}

/// A template string property, an empty one counted as absent.
fn setting(properties: &Map<String, Value>, name: &str) -> Option<String> {
    text(properties.get(name)).filter(|s| !s.is_empty())
}

/// The PutRule of the rule `name` on `bus` from the template's `properties`.
fn put_rule_of(name: &str, bus: Option<&str>, properties: &Map<String, Value>) -> PutRule {
    PutRule {
        name: name.to_string(),
        bus: bus.map(ToString::to_string),
        schedule_expression: setting(properties, "ScheduleExpression"),
        event_pattern: json_text(properties.get("EventPattern")),
        state: setting(properties, "State"),
        description: setting(properties, "Description"),
        role_arn: setting(properties, "RoleArn"),
    }
}

/// A validation error about the target `id`.
fn target_error(what: &str, id: &str, detail: impl std::fmt::Display) -> ProviderError {
    ProviderError::validation(format!("{what}: target {id}: {detail}"))
}

/// A template object `{key: string}` as a map (non-string values taken as written).
fn string_map(value: Option<&Value>) -> Option<HashMap<String, String>> {
    value?.as_object().map(|object| {
        object
            .iter()
            .filter_map(|(key, value)| Some((key.clone(), text(Some(value))?)))
            .collect()
    })
}

/// A map as a template object, sorted by key.
fn object_of(map: &HashMap<String, String>) -> Value {
    let sorted: BTreeMap<&String, &String> = map.iter().collect();
    json!(sorted)
}

/// A target's `RunCommandParameters` as EventBridge takes them.
fn run_command_parameters(
    r: &Value,
) -> Result<RunCommandParameters, aws_sdk_eventbridge::error::BuildError> {
    let targets = r
        .get("RunCommandTargets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            RunCommandTarget::builder()
                .set_key(text(t.get("Key")))
                .set_values(strings(t.get("Values")))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()?;
    RunCommandParameters::builder()
        .set_run_command_targets(Some(targets))
        .build()
}

/// A target's `SageMakerPipelineParameters` as EventBridge takes them.
fn sage_maker_pipeline_parameters(
    s: &Value,
) -> Result<SageMakerPipelineParameters, aws_sdk_eventbridge::error::BuildError> {
    let list = match s.get("PipelineParameterList").and_then(Value::as_array) {
        Some(items) => Some(
            items
                .iter()
                .map(|p| {
                    SageMakerPipelineParameter::builder()
                        .set_name(text(p.get("Name")))
                        .set_value(text(p.get("Value")))
                        .build()
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    Ok(SageMakerPipelineParameters::builder()
        .set_pipeline_parameter_list(list)
        .build())
}

/// A target's `BatchParameters` as EventBridge takes them.
fn batch_parameters(b: &Value) -> Result<BatchParameters, aws_sdk_eventbridge::error::BuildError> {
    BatchParameters::builder()
        .set_job_definition(text(b.get("JobDefinition")))
        .set_job_name(text(b.get("JobName")))
        .set_array_properties(b.get("ArrayProperties").filter(|v| v.is_object()).map(|a| {
            BatchArrayProperties::builder()
                .set_size(int(a.get("Size")))
                .build()
        }))
        .set_retry_strategy(b.get("RetryStrategy").filter(|v| v.is_object()).map(|r| {
            BatchRetryStrategy::builder()
                .set_attempts(int(r.get("Attempts")))
                .build()
        }))
        .build()
}

/// A target's `RedshiftDataParameters` as EventBridge takes them.
fn redshift_data_parameters(
    r: &Value,
) -> Result<RedshiftDataParameters, aws_sdk_eventbridge::error::BuildError> {
    RedshiftDataParameters::builder()
        .set_database(text(r.get("Database")))
        .set_db_user(text(r.get("DbUser")))
        .set_secret_manager_arn(text(r.get("SecretManagerArn")))
        .set_sql(text(r.get("Sql")))
        .set_sqls(strings(r.get("Sqls")))
        .set_statement_name(text(r.get("StatementName")))
        .set_with_event(flag(r.get("WithEvent")))
        .build()
}

/// A target of the template as PutTargets takes it.
fn target(value: &Value, what: &str) -> Result<Target, ProviderError> {
    let id = string(value.get("Id")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: every target needs an Id (a string), got {value}"
        ))
    })?;
    let arn = string(value.get("Arn"))
        .ok_or_else(|| target_error(what, &id, "property Arn is required and must be a string"))?;
    let built = |block: &str, e: aws_sdk_eventbridge::error::BuildError| {
        target_error(what, &id, format!("{block}: {e}"))
    };
    let block = |name: &str| value.get(name).filter(|v| v.is_object());
    let input_transformer = match block("InputTransformer") {
        Some(t) => Some(
            InputTransformer::builder()
                .set_input_paths_map(string_map(t.get("InputPathsMap")))
                .set_input_template(text(t.get("InputTemplate")))
                .build()
                .map_err(|e| built("InputTransformer", e))?,
        ),
        None => None,
    };
    let kinesis = match block("KinesisParameters") {
        Some(k) => Some(
            KinesisParameters::builder()
                .set_partition_key_path(text(k.get("PartitionKeyPath")))
                .build()
                .map_err(|e| built("KinesisParameters", e))?,
        ),
        None => None,
    };
    let run_command = block("RunCommandParameters")
        .map(run_command_parameters)
        .transpose()
        .map_err(|e| built("RunCommandParameters", e))?;
    let sage_maker = block("SageMakerPipelineParameters")
        .map(sage_maker_pipeline_parameters)
        .transpose()
        .map_err(|e| built("SageMakerPipelineParameters", e))?;
    let batch = block("BatchParameters")
        .map(batch_parameters)
        .transpose()
        .map_err(|e| built("BatchParameters", e))?;
    let redshift = block("RedshiftDataParameters")
        .map(redshift_data_parameters)
        .transpose()
        .map_err(|e| built("RedshiftDataParameters", e))?;
    let ecs = block("EcsParameters")
        .map(crate::ecs_target::ecs_parameters)
        .transpose()
        .map_err(|(path, e)| built(&path, e))?;
    Target::builder()
        .id(&id)
        .arn(arn)
        .set_role_arn(string(value.get("RoleArn")))
        .set_input(text(value.get("Input")))
        .set_input_path(text(value.get("InputPath")))
        .set_input_transformer(input_transformer)
        .set_dead_letter_config(block("DeadLetterConfig").map(|d| {
            DeadLetterConfig::builder()
                .set_arn(text(d.get("Arn")))
                .build()
        }))
        .set_retry_policy(block("RetryPolicy").map(|r| {
            RetryPolicy::builder()
                .set_maximum_retry_attempts(int(r.get("MaximumRetryAttempts")))
                .set_maximum_event_age_in_seconds(int(r.get("MaximumEventAgeInSeconds")))
                .build()
        }))
        .set_sqs_parameters(block("SqsParameters").map(|s| {
            SqsParameters::builder()
                .set_message_group_id(text(s.get("MessageGroupId")))
                .build()
        }))
        .set_kinesis_parameters(kinesis)
        .set_http_parameters(block("HttpParameters").map(|h| {
            HttpParameters::builder()
                .set_path_parameter_values(strings(h.get("PathParameterValues")))
                .set_header_parameters(string_map(h.get("HeaderParameters")))
                .set_query_string_parameters(string_map(h.get("QueryStringParameters")))
                .build()
        }))
        .set_app_sync_parameters(block("AppSyncParameters").map(|a| {
            AppSyncParameters::builder()
                .set_graph_ql_operation(text(a.get("GraphQLOperation")))
                .build()
        }))
        .set_run_command_parameters(run_command)
        .set_sage_maker_pipeline_parameters(sage_maker)
        .set_batch_parameters(batch)
        .set_redshift_data_parameters(redshift)
        .set_ecs_parameters(ecs)
        .build()
        .map_err(|e| target_error(what, &id, e))
}

/// The template's targets by `Id` (a target without a string `Id` is left out here; building
/// it refuses it by name).
fn targets_by_id(properties: &Map<String, Value>) -> BTreeMap<String, &Value> {
    properties
        .get("Targets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| Some((string(t.get("Id"))?, t)))
        .collect()
}

/// Every target of the template, built (so a refused one fails before any AWS call).
fn targets(properties: &Map<String, Value>, what: &str) -> Result<Vec<Target>, ProviderError> {
    properties
        .get("Targets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| target(t, what))
        .collect()
}

/// The targets an update puts (added or changed, by `Id`) and the ids it removes.
fn target_changes<'a>(
    before: &Map<String, Value>,
    after: &'a Map<String, Value>,
) -> (Vec<&'a Value>, Vec<String>) {
    let (old, new) = (targets_by_id(before), targets_by_id(after));
    let put = new
        .iter()
        .filter(|(id, target)| old.get(*id) != Some(*target))
        .map(|(_, target)| *target)
        .collect();
    let removed = old
        .keys()
        .filter(|id| !new.contains_key(*id))
        .cloned()
        .collect();
    (put, removed)
}

/// A live target in template shape.
fn target_shape(target: &Target) -> Value {
    let mut shape = Map::new();
    shape.insert("Id".into(), json!(target.id()));
    shape.insert("Arn".into(), json!(target.arn()));
    put(&mut shape, "RoleArn", target.role_arn().map(|v| json!(v)));
    put(&mut shape, "Input", target.input().map(|v| json!(v)));
    put(
        &mut shape,
        "InputPath",
        target.input_path().map(|v| json!(v)),
    );
    if let Some(t) = target.input_transformer() {
        let mut block = Map::new();
        put(
            &mut block,
            "InputPathsMap",
            t.input_paths_map().map(object_of),
        );
        block.insert("InputTemplate".into(), json!(t.input_template()));
        shape.insert("InputTransformer".into(), Value::Object(block));
    }
    if let Some(d) = target.dead_letter_config() {
        let mut block = Map::new();
        put(&mut block, "Arn", d.arn().map(|v| json!(v)));
        shape.insert("DeadLetterConfig".into(), Value::Object(block));
    }
    if let Some(r) = target.retry_policy() {
        let mut block = Map::new();
        put(
            &mut block,
            "MaximumRetryAttempts",
            r.maximum_retry_attempts().map(|v| json!(v)),
        );
        put(
            &mut block,
            "MaximumEventAgeInSeconds",
            r.maximum_event_age_in_seconds().map(|v| json!(v)),
        );
        shape.insert("RetryPolicy".into(), Value::Object(block));
    }
    if let Some(s) = target.sqs_parameters() {
        let mut block = Map::new();
        put(
            &mut block,
            "MessageGroupId",
            s.message_group_id().map(|v| json!(v)),
        );
        shape.insert("SqsParameters".into(), Value::Object(block));
    }
    if let Some(k) = target.kinesis_parameters() {
        shape.insert(
            "KinesisParameters".into(),
            json!({"PartitionKeyPath": k.partition_key_path()}),
        );
    }
    if let Some(h) = target.http_parameters() {
        let mut block = Map::new();
        put(
            &mut block,
            "PathParameterValues",
            h.path_parameter_values.as_ref().map(|values| json!(values)),
        );
        put(
            &mut block,
            "HeaderParameters",
            h.header_parameters().map(object_of),
        );
        put(
            &mut block,
            "QueryStringParameters",
            h.query_string_parameters().map(object_of),
        );
        shape.insert("HttpParameters".into(), Value::Object(block));
    }
    if let Some(a) = target.app_sync_parameters() {
        let mut block = Map::new();
        put(
            &mut block,
            "GraphQLOperation",
            a.graph_ql_operation().map(|v| json!(v)),
        );
        shape.insert("AppSyncParameters".into(), Value::Object(block));
    }
    if let Some(r) = target.run_command_parameters() {
        let targets: Vec<Value> = r
            .run_command_targets()
            .iter()
            .map(|t| json!({"Key": t.key(), "Values": t.values()}))
            .collect();
        shape.insert(
            "RunCommandParameters".into(),
            json!({"RunCommandTargets": targets}),
        );
    }
    if let Some(s) = target.sage_maker_pipeline_parameters() {
        let mut block = Map::new();
        put(
            &mut block,
            "PipelineParameterList",
            s.pipeline_parameter_list.as_ref().map(|list| {
                list.iter()
                    .map(|p| json!({"Name": p.name(), "Value": p.value()}))
                    .collect()
            }),
        );
        shape.insert("SageMakerPipelineParameters".into(), Value::Object(block));
    }
    put(
        &mut shape,
        "BatchParameters",
        target.batch_parameters().map(batch_shape),
    );
    put(
        &mut shape,
        "RedshiftDataParameters",
        target.redshift_data_parameters().map(redshift_data_shape),
    );
    put(
        &mut shape,
        "EcsParameters",
        target.ecs_parameters().map(crate::ecs_target::ecs_shape),
    );
    Value::Object(shape)
}

/// A target's `BatchParameters` in template shape.
fn batch_shape(b: &BatchParameters) -> Value {
    let mut block = Map::new();
    block.insert("JobDefinition".into(), json!(b.job_definition()));
    block.insert("JobName".into(), json!(b.job_name()));
    put(
        &mut block,
        "ArrayProperties",
        b.array_properties().map(|a| json!({"Size": a.size()})),
    );
    put(
        &mut block,
        "RetryStrategy",
        b.retry_strategy()
            .map(|r| json!({"Attempts": r.attempts()})),
    );
    Value::Object(block)
}

/// A target's `RedshiftDataParameters` in template shape.
fn redshift_data_shape(r: &RedshiftDataParameters) -> Value {
    let mut block = Map::new();
    block.insert("Database".into(), json!(r.database()));
    put(&mut block, "DbUser", r.db_user().map(|v| json!(v)));
    put(
        &mut block,
        "SecretManagerArn",
        r.secret_manager_arn().map(|v| json!(v)),
    );
    put(&mut block, "Sql", r.sql().map(|v| json!(v)));
    put(&mut block, "Sqls", r.sqls.as_ref().map(|v| json!(v)));
    put(
        &mut block,
        "StatementName",
        r.statement_name().map(|v| json!(v)),
    );
    if r.with_event() {
        block.insert("WithEvent".into(), json!(true));
    }
    Value::Object(block)
}

/// Whether the template's `EventBusName` (a name or an ARN) names the bus `live`.
fn names_bus(template: &str, live: &str) -> bool {
    template == live || template.ends_with(&format!(":event-bus/{live}"))
}

/// A live rule in template shape: targets sorted by `Id`, the pattern parsed; the template's
/// own spelling of the bus kept when it names the live one.
fn template_shape(
    rule: &DescribeRuleOutput,
    targets: &[Target],
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", rule.name().map(|v| json!(v)));
    let live_bus = rule.event_bus_name().unwrap_or(DEFAULT_BUS);
    match string(template.get("EventBusName")) {
        Some(given) if names_bus(&given, live_bus) => {
            props.insert("EventBusName".into(), json!(given));
        }
        _ if live_bus != DEFAULT_BUS => {
            props.insert("EventBusName".into(), json!(live_bus));
        }
        _ => {}
    }
    put(
        &mut props,
        "Description",
        rule.description()
            .filter(|d| !d.is_empty())
            .map(|v| json!(v)),
    );
    put(&mut props, "EventPattern", rule.event_pattern().map(parsed));
    put(
        &mut props,
        "ScheduleExpression",
        rule.schedule_expression()
            .filter(|s| !s.is_empty())
            .map(|v| json!(v)),
    );
    put(&mut props, "State", rule.state().map(|s| json!(s.as_str())));
    put(&mut props, "RoleArn", rule.role_arn().map(|v| json!(v)));
    if !targets.is_empty() {
        let mut sorted: Vec<&Target> = targets.iter().collect();
        sorted.sort_by(|a, b| a.id().cmp(b.id()));
        props.insert(
            "Targets".into(),
            Value::Array(sorted.into_iter().map(target_shape).collect()),
        );
    }
    put(&mut props, "Tags", template_tags(tags));
    props
}

/// The attributes of the rule `arn`.
fn attributes_of(arn: &str, name: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes.insert("RuleName".into(), json!(name));
    attributes
}

/// The PutRule call of `rule`, answering the rule's ARN; `tags` only on a create (PutRule on an
/// existing rule leaves its tags alone).
async fn send_put_rule(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    rule: &PutRule,
    tags: Vec<Tag>,
) -> Result<String, ProviderError> {
    let answer = events
        .put_rule()
        .name(&rule.name)
        .set_event_bus_name(rule.bus.clone())
        .set_schedule_expression(rule.schedule_expression.clone())
        .set_event_pattern(rule.event_pattern.clone())
        .set_state(rule.state.as_deref().map(RuleState::from))
        .set_description(rule.description.clone())
        .set_role_arn(rule.role_arn.clone())
        .set_tags(Some(tags).filter(|t| !t.is_empty()))
        .send()
        .await
        .map_err(events_error!(what, format!("PutRule {}", rule.name)))?;
    answer.rule_arn.ok_or_else(|| {
        ProviderError::other(format!("{what}: PutRule {} answered no RuleArn", rule.name))
    })
}

/// The live rule; `None` when there is none.
async fn describe_rule(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    id: &RuleId,
) -> Result<Option<DescribeRuleOutput>, ProviderError> {
    found(
        events
            .describe_rule()
            .name(&id.name)
            .set_event_bus_name(id.bus.clone())
            .send()
            .await
            .map_err(events_error!(what, format!("DescribeRule {}", id.name))),
    )
}

/// Every target of the rule (all pages).
async fn list_targets(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    id: &RuleId,
) -> Result<Vec<Target>, ProviderError> {
    let mut all = Vec::new();
    let mut token = None;
    loop {
        let page = events
            .list_targets_by_rule()
            .rule(&id.name)
            .set_event_bus_name(id.bus.clone())
            .set_next_token(token)
            .send()
            .await
            .map_err(events_error!(
                what,
                format!("ListTargetsByRule {}", id.name)
            ))?;
        all.extend(page.targets.unwrap_or_default());
        match page.next_token {
            Some(next) if !next.is_empty() => token = Some(next),
            _ => return Ok(all),
        }
    }
}

/// Puts `targets` on the rule. An entry EventBridge refuses (or an AccessDenied answer) is tried
/// again for up to [`PUT_TARGETS_PATIENCE`]: a role or resource policy created just before may
/// not have propagated yet.
async fn put_targets(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    id: &RuleId,
    targets: Vec<Target>,
) -> Result<(), ProviderError> {
    for batch in targets.chunks(PUT_TARGETS_BATCH) {
        let started = tokio::time::Instant::now();
        let roles: Vec<&str> = batch.iter().filter_map(|t| t.role_arn()).collect();
        let patience = if roles.is_empty() {
            PUT_TARGETS_PATIENCE
        } else {
            cdkd_aws_common::IAM_PROPAGATION
        };
        let mut pending = batch.to_vec();
        loop {
            let answer = events
                .put_targets()
                .rule(&id.name)
                .set_event_bus_name(id.bus.clone())
                .set_targets(Some(pending.clone()))
                .send()
                .await
                .map_err(events_error!(what, format!("PutTargets {}", id.name)));
            let failure = match answer {
                Ok(out) if out.failed_entry_count == 0 => break,
                Ok(out) => {
                    let failed = out.failed_entries.unwrap_or_default();
                    pending.retain(|t| failed.iter().any(|f| f.target_id() == Some(t.id())));
                    let first = failed.first();
                    let code = first.and_then(|f| f.error_code()).unwrap_or_default();
                    let kind = cdkd_aws_common::kind_in(crate::EVENTS_KINDS, code)
                        .unwrap_or_else(|| kind_of(code, None));
                    let detail: Vec<String> = failed
                        .iter()
                        .map(|f| {
                            format!(
                                "target {}: {} {}",
                                f.target_id().unwrap_or("?"),
                                f.error_code().unwrap_or_default(),
                                f.error_message().unwrap_or_default()
                            )
                        })
                        .collect();
                    let mut err = ProviderError::new(
                        kind,
                        format!(
                            "{what}: PutTargets {} refused {}",
                            id.name,
                            detail.join("; ")
                        ),
                    );
                    if !code.is_empty() {
                        err = err.with_aws_code(code);
                    }
                    if pending.is_empty() {
                        // The answer named no target of the call: nothing to try again.
                        return Err(err);
                    }
                    err
                }
                Err(err) if err.kind == ErrorKind::ACCESS_DENIED => err,
                Err(err) => return Err(err),
            };
            let delay = PUT_TARGETS_PACING.pause(started.elapsed());
            if started.elapsed() + delay > patience {
                return Err(if roles.is_empty() {
                    failure
                } else {
                    let roles = format!("the target roles {}", roles.join(", "));
                    cdkd_aws_common::not_propagated(failure, &roles, started.elapsed())
                });
            }
            tracing::debug!("{what}: PutTargets not accepted yet, trying again: {failure:?}");
            tokio::time::sleep(delay).await;
        }
    }
    Ok(())
}

/// Removes the targets `ids` from the rule; a target already gone counts as removed.
async fn remove_targets(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    id: &RuleId,
    ids: &[String],
) -> Result<(), ProviderError> {
    for batch in ids.chunks(REMOVE_TARGETS_BATCH) {
        let out = events
            .remove_targets()
            .rule(&id.name)
            .set_event_bus_name(id.bus.clone())
            .set_ids(Some(batch.to_vec()))
            .send()
            .await
            .map_err(events_error!(what, format!("RemoveTargets {}", id.name)))?;
        let failed: Vec<String> = out
            .failed_entries
            .unwrap_or_default()
            .iter()
            .filter(|f| f.error_code() != Some("ResourceNotFoundException"))
            .map(|f| {
                format!(
                    "target {}: {} {}",
                    f.target_id().unwrap_or("?"),
                    f.error_code().unwrap_or_default(),
                    f.error_message().unwrap_or_default()
                )
            })
            .collect();
        if !failed.is_empty() {
            return Err(ProviderError::new(
                ErrorKind::CONFLICT,
                format!(
                    "{what}: RemoveTargets {} refused {}",
                    id.name,
                    failed.join("; ")
                ),
            ));
        }
    }
    Ok(())
}

#[async_trait]
impl ResourceProvider for Rule {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "EventBusName",
                "Description",
                "EventPattern",
                "ScheduleExpression",
                "State",
                "RoleArn",
                "Targets",
                "Tags",
            ])
            // The schema lists only Name, but a rule cannot move to another bus, and its bus is
            // part of its ARN: a new bus is a new rule.
            .create_only(&["Name", "EventBusName"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let bus = setting(&request.properties, "EventBusName");
        let rule = put_rule_of(&name, bus.as_deref(), &request.properties);
        let targets = targets(&request.properties, &what)?;
        let tags = sdk_tags(&tag_map(&request.properties), &what)?;
        let events = client(ctx).await?;
        let id = RuleId {
            bus: bus.clone(),
            name: name.clone(),
        };
        // PutRule overwrites a rule of that name without a word: one already there is
        // "already exists", never silently taken over.
        if describe_rule(&events, &what, &id).await?.is_some() {
            return Err(ProviderError::new(
                ErrorKind::ALREADY_EXISTS,
                format!("{what}: a rule named {name} already exists"),
            ));
        }
        let arn = send_put_rule(&events, &what, &rule, tags).await?;
        put_targets(&events, &what, &id, targets).await?;
        Ok(CreateResult {
            attributes: attributes_of(&arn, &name),
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
        let id = rule_id(&request.physical_id);
        let rule = put_rule_of(&id.name, id.bus.as_deref(), after);
        let (changed, removed) = target_changes(before, after);
        let changed = changed
            .into_iter()
            .map(|t| target(t, &what))
            .collect::<Result<Vec<_>, _>>()?;
        let events = client(ctx).await?;
        let arn = send_put_rule(&events, &what, &rule, Vec::new()).await?;
        update_tags(&events, &what, &arn, before, after).await?;
        // Removed first: a rule holds at most five targets, and a replaced set may need the room.
        remove_targets(&events, &what, &id, &removed).await?;
        put_targets(&events, &what, &id, changed).await?;
        Ok(UpdateResult {
            attributes: attributes_of(&arn, &id.name),
            physical_id: request.physical_id,
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
        let id = rule_id(&request.physical_id);
        let events = client(ctx).await?;
        let result = async {
            // EventBridge refuses to delete a rule that still has targets.
            let ids: Vec<String> = list_targets(&events, &what, &id)
                .await?
                .iter()
                .map(|t| t.id().to_string())
                .collect();
            remove_targets(&events, &what, &id, &ids).await?;
            events
                .delete_rule()
                .name(&id.name)
                .set_event_bus_name(id.bus.clone())
                .send()
                .await
                .map(|_| ())
                .map_err(events_error!(what, format!("DeleteRule {}", id.name)))
        }
        .await;
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl Readable for Rule {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let events = client(ctx).await?;
        let id = rule_id(&request.physical_id);
        let Some(rule) = describe_rule(&events, what, &id).await? else {
            return Ok(None);
        };
        let arn = rule.arn().unwrap_or(&request.physical_id).to_string();
        let (targets, tags) = tokio::join!(
            list_targets(&events, what, &id),
            live_tags(&events, what, &arn)
        );
        let Some(targets) = found(targets)? else {
            return Ok(None);
        };
        let Some(tags) = tags? else {
            return Ok(None);
        };
        Ok(Some(template_shape(
            &rule,
            &targets,
            &tags,
            &request.properties,
        )))
    }

    /// `Arn` and `RuleName`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let events = client(ctx).await?;
        let id = rule_id(physical_id);
        match describe_rule(&events, what, &id).await? {
            Some(rule) => Ok(attributes_of(
                rule.arn().unwrap_or(physical_id),
                rule.name().unwrap_or(&id.name),
            )),
            None => Err(does_not_exist(what, physical_id, "EventBridge")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_arn_names_the_rule_and_its_bus() {
        assert_eq!(
            rule_id("arn:aws:events:us-east-1:123456789012:rule/MyRule"),
            RuleId {
                bus: None,
                name: "MyRule".into()
            }
        );
        assert_eq!(
            rule_id("arn:aws:events:us-east-1:123456789012:rule/orders/MyRule"),
            RuleId {
                bus: Some("orders".into()),
                name: "MyRule".into()
            }
        );
        // A partner bus's name holds slashes; the rule's is the last segment.
        assert_eq!(
            rule_id("arn:aws:events:eu-west-1:123456789012:rule/aws.partner/saas/abc/R"),
            RuleId {
                bus: Some("aws.partner/saas/abc".into()),
                name: "R".into()
            }
        );
        // CloudFormation's own Ref shapes, for imports.
        assert_eq!(
            rule_id("orders|MyRule"),
            RuleId {
                bus: Some("orders".into()),
                name: "MyRule".into()
            }
        );
        assert_eq!(
            rule_id("MyRule"),
            RuleId {
                bus: None,
                name: "MyRule".into()
            }
        );
        assert_eq!(rule_id("default|MyRule").bus, None);
    }

    #[test]
    fn put_rule_takes_every_setting_and_the_pattern_as_json_text() {
        let template = props(json!({
            "Name": "r",
            "EventBusName": "orders",
            "Description": "on orders",
            "EventPattern": {"source": ["shop"], "detail-type": ["Order Placed"]},
            "State": "DISABLED",
            "RoleArn": "arn:aws:iam::123456789012:role/r",
        }));
        let rule = put_rule_of("r", Some("orders"), &template);
        let pattern: Value = serde_json::from_str(rule.event_pattern.as_deref().unwrap()).unwrap();
        assert_eq!(
            pattern,
            json!({"source": ["shop"], "detail-type": ["Order Placed"]})
        );
        assert_eq!(
            rule,
            PutRule {
                name: "r".into(),
                bus: Some("orders".into()),
                schedule_expression: None,
                event_pattern: rule.event_pattern.clone(),
                state: Some("DISABLED".into()),
                description: Some("on orders".into()),
                role_arn: Some("arn:aws:iam::123456789012:role/r".into()),
            }
        );
        // A pattern written as a string goes as written; removed settings are left out, which
        // PutRule reads as cleared.
        let scheduled = props(json!({
            "ScheduleExpression": "rate(5 minutes)",
            "EventPattern": "{\"source\":[\"a\"]}",
        }));
        let rule = put_rule_of("r", None, &scheduled);
        assert_eq!(rule.event_pattern.as_deref(), Some("{\"source\":[\"a\"]}"));
        assert_eq!(rule.schedule_expression.as_deref(), Some("rate(5 minutes)"));
        assert_eq!(
            (rule.state, rule.description, rule.role_arn, rule.bus),
            (None, None, None, None)
        );
    }

    #[test]
    fn targets_build_every_mapped_block_and_read_back_alike() {
        let template = json!({
            "Id": "Target0",
            "Arn": "arn:aws:sqs:us-east-1:123456789012:q.fifo",
            "RoleArn": "arn:aws:iam::123456789012:role/events",
            "InputTransformer": {
                "InputPathsMap": {"id": "$.detail.id", "at": "$.time"},
                "InputTemplate": "{\"id\": <id>, \"at\": <at>}",
            },
            "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:dlq"},
            "RetryPolicy": {"MaximumRetryAttempts": 3, "MaximumEventAgeInSeconds": 3600},
            "SqsParameters": {"MessageGroupId": "orders"},
        });
        let built = target(&template, "T L").unwrap();
        assert_eq!(built.id(), "Target0");
        assert_eq!(built.arn(), "arn:aws:sqs:us-east-1:123456789012:q.fifo");
        let transformer = built.input_transformer().unwrap();
        assert_eq!(transformer.input_template(), "{\"id\": <id>, \"at\": <at>}");
        assert_eq!(
            transformer.input_paths_map().unwrap().get("id").unwrap(),
            "$.detail.id"
        );
        assert_eq!(
            built.dead_letter_config().unwrap().arn(),
            Some("arn:aws:sqs:us-east-1:123456789012:dlq")
        );
        let retry = built.retry_policy().unwrap();
        assert_eq!(
            (
                retry.maximum_retry_attempts(),
                retry.maximum_event_age_in_seconds()
            ),
            (Some(3), Some(3600))
        );
        assert_eq!(
            built.sqs_parameters().unwrap().message_group_id(),
            Some("orders")
        );
        assert_eq!(target_shape(&built), template);

        let others = json!({
            "Id": "k",
            "Arn": "arn:aws:kinesis:us-east-1:123456789012:stream/s",
            "Input": "{\"a\":1}",
            "KinesisParameters": {"PartitionKeyPath": "$.id"},
            "HttpParameters": {
                "PathParameterValues": ["v1"],
                "HeaderParameters": {"X-A": "1"},
                "QueryStringParameters": {"q": "x"},
            },
            "AppSyncParameters": {"GraphQLOperation": "mutation M { m }"},
            "RunCommandParameters": {"RunCommandTargets": [{"Key": "tag:Env", "Values": ["prod"]}]},
            "SageMakerPipelineParameters": {"PipelineParameterList": [{"Name": "n", "Value": "v"}]},
            "BatchParameters": {
                "JobDefinition": "jd",
                "JobName": "jn",
                "ArrayProperties": {"Size": 4},
                "RetryStrategy": {"Attempts": 2},
            },
            "RedshiftDataParameters": {"Database": "db", "Sql": "select 1", "WithEvent": true},
        });
        let built = target(&others, "T L").unwrap();
        assert_eq!(built.input(), Some("{\"a\":1}"));
        assert_eq!(
            built.kinesis_parameters().unwrap().partition_key_path(),
            "$.id"
        );
        assert_eq!(target_shape(&built), others);
        // Numbers written as strings are taken, and read back as numbers.
        let stringly = json!({"Id": "s", "Arn": "a", "RetryPolicy": {"MaximumRetryAttempts": "5"}});
        let built = target(&stringly, "T L").unwrap();
        assert_eq!(
            target_shape(&built)["RetryPolicy"],
            json!({"MaximumRetryAttempts": 5})
        );
    }

    #[test]
    fn targets_with_an_incomplete_block_or_no_id_are_refused_by_name() {
        // An ECS task without its task definition names the rule, the target and the block.
        let ecs = json!({
            "Id": "Task",
            "Arn": "arn:aws:ecs:us-east-1:123456789012:cluster/c",
            "EcsParameters": {"LaunchType": "FARGATE"},
        });
        let err = target(&ecs, "AWS::Events::Rule Nightly").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(
            err.message.contains("AWS::Events::Rule Nightly")
                && err.message.contains("target Task")
                && err.message.contains("EcsParameters"),
            "{}",
            err.message
        );
        let task = json!({
            "Id": "Task",
            "Arn": "arn:aws:ecs:us-east-1:123456789012:cluster/c",
            "RoleArn": "arn:aws:iam::123456789012:role/r",
            "EcsParameters": {"TaskDefinitionArn": "arn:aws:ecs:us-east-1:123456789012:task-definition/t:1", "TaskCount": 1},
        });
        assert_eq!(target_shape(&target(&task, "T L").unwrap()), task);
        let err = target(&json!({"Arn": "a"}), "T L").unwrap_err();
        assert!(err.message.contains("Id"), "{}", err.message);
        let err = target(&json!({"Id": "x"}), "T L").unwrap_err();
        assert!(err.message.contains("target x") && err.message.contains("Arn"));
        let err = target(
            &json!({"Id": "k", "Arn": "a", "KinesisParameters": {}}),
            "T L",
        )
        .unwrap_err();
        assert!(err.message.contains("KinesisParameters"), "{}", err.message);
        // The whole template's targets fail before any call.
        let template = props(json!({"Targets": [{"Id": "ok", "Arn": "a"}, ecs]}));
        assert!(targets(&template, "T L").is_err());
    }

    #[test]
    fn an_update_puts_added_and_changed_targets_and_removes_the_rest() {
        let before = props(json!({"Targets": [
            {"Id": "a", "Arn": "arn:1"},
            {"Id": "b", "Arn": "arn:2"},
            {"Id": "c", "Arn": "arn:3"},
        ]}));
        let after = props(json!({"Targets": [
            {"Id": "a", "Arn": "arn:1"},
            {"Id": "b", "Arn": "arn:2", "Input": "{}"},
            {"Id": "d", "Arn": "arn:4"},
        ]}));
        let (put, removed) = target_changes(&before, &after);
        let put_ids: Vec<&str> = put.iter().map(|t| t["Id"].as_str().unwrap()).collect();
        assert_eq!(put_ids, ["b", "d"]);
        assert_eq!(removed, ["c"]);
        let (put, removed) = target_changes(&after, &after);
        assert!(put.is_empty() && removed.is_empty());
        let empty = Map::new();
        let (put, removed) = target_changes(&before, &empty);
        assert!(put.is_empty());
        assert_eq!(removed, ["a", "b", "c"]);
    }

    #[test]
    fn the_live_rule_reads_back_in_template_shape() {
        let rule = DescribeRuleOutput::builder()
            .name("r")
            .arn("arn:aws:events:us-east-1:123456789012:rule/orders/r")
            .event_bus_name("orders")
            .event_pattern("{\"source\":[\"shop\"]}")
            .state(RuleState::Enabled)
            .description("")
            .build();
        let targets = [
            Target::builder().id("z").arn("arn:z").build().unwrap(),
            Target::builder()
                .id("a")
                .arn("arn:a")
                .input_path("$.detail")
                .build()
                .unwrap(),
        ];
        let tags = [Tag::builder().key("team").value("x").build().unwrap()];
        let template = props(json!({
            "EventBusName": "arn:aws:events:us-east-1:123456789012:event-bus/orders"
        }));
        let shape = template_shape(&rule, &targets, &tags, &template);
        assert_eq!(
            Value::Object(shape),
            json!({
                "Name": "r",
                "EventBusName": "arn:aws:events:us-east-1:123456789012:event-bus/orders",
                "EventPattern": {"source": ["shop"]},
                "State": "ENABLED",
                "Targets": [
                    {"Id": "a", "Arn": "arn:a", "InputPath": "$.detail"},
                    {"Id": "z", "Arn": "arn:z"},
                ],
                "Tags": [{"Key": "team", "Value": "x"}],
            })
        );
        // Without a template, the bus is the live name; the default bus is not written.
        let shape = template_shape(&rule, &[], &[], &Map::new());
        assert_eq!(shape["EventBusName"], "orders");
        assert!(!shape.contains_key("Targets") && !shape.contains_key("Tags"));
        let on_default = DescribeRuleOutput::builder()
            .name("d")
            .event_bus_name("default")
            .schedule_expression("rate(1 hour)")
            .build();
        let shape = template_shape(&on_default, &[], &[], &Map::new());
        assert_eq!(
            Value::Object(shape),
            json!({"Name": "d", "ScheduleExpression": "rate(1 hour)"})
        );
    }

    #[test]
    fn create_and_update_report_the_arn_and_name() {
        assert_eq!(
            Value::Object(attributes_of("arn:aws:events:r:1:rule/x", "x")),
            json!({"Arn": "arn:aws:events:r:1:rule/x", "RuleName": "x"})
        );
    }
}
