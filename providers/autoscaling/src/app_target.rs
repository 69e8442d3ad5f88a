//! `AWS::ApplicationAutoScaling::ScalableTarget`: physical id (and `Ref`, and the `Id`
//! attribute) is `resourceId|scalableDimension|serviceNamespace`, as CloudFormation has it.
//! RegisterScalableTarget creates or updates the target those three name, so create and update
//! are one call and a create repeated after a crash makes the same target. Scheduled actions
//! are put and deleted by name; tags go with the register and by TagResource afterwards.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_applicationautoscaling::primitives::{DateTime, DateTimeFormat};
use aws_sdk_applicationautoscaling::types::{
    ScalableDimension, ScalableTarget as LiveTarget, ScalableTargetAction, ServiceNamespace,
    SuspendedState,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, found, int, put, require_str, string, tag_changes,
    tag_map, template_tags, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{app_client, app_failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApplicationAutoScaling::ScalableTarget";

/// The `AWS::ApplicationAutoScaling::ScalableTarget` provider.
#[derive(Default)]
pub struct ScalableTarget;

/// What names a scalable target: resource id, scalable dimension and service namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetKey {
    /// `table/Orders`, `service/cluster/name`, ...
    pub resource_id: String,
    /// `dynamodb:table:ReadCapacityUnits`, ...
    pub dimension: String,
    /// `dynamodb`, `ecs`, ...
    pub namespace: String,
}

impl TargetKey {
    /// The key a physical id (or a policy's `ScalingTargetId`) names.
    pub(crate) fn parse(id: &str) -> Option<TargetKey> {
        // A resource id may be an ARN (colons, slashes) but holds no `|`: the last two fields
        // are the dimension and the namespace.
        let (rest, namespace) = id.rsplit_once('|')?;
        let (resource_id, dimension) = rest.rsplit_once('|')?;
        if resource_id.is_empty() || dimension.is_empty() || namespace.is_empty() {
            return None;
        }
        Some(TargetKey {
            resource_id: resource_id.into(),
            dimension: dimension.into(),
            namespace: namespace.into(),
        })
    }

    /// The key the template's three properties name.
    fn of(props: &Map<String, Value>, what: &str) -> Result<TargetKey, ProviderError> {
        Ok(TargetKey {
            resource_id: require_str(props, "ResourceId", what)?.into(),
            dimension: require_str(props, "ScalableDimension", what)?.into(),
            namespace: require_str(props, "ServiceNamespace", what)?.into(),
        })
    }

    /// `resourceId|scalableDimension|serviceNamespace`.
    pub(crate) fn id(&self) -> String {
        format!("{}|{}|{}", self.resource_id, self.dimension, self.namespace)
    }

    /// The service namespace as the SDK's.
    pub(crate) fn namespace(&self) -> ServiceNamespace {
        ServiceNamespace::from(self.namespace.as_str())
    }

    /// The scalable dimension as the SDK's.
    pub(crate) fn dimension(&self) -> ScalableDimension {
        ScalableDimension::from(self.dimension.as_str())
    }
}

/// The template's `SuspendedState`.
fn suspended_state(props: &Map<String, Value>) -> Option<SuspendedState> {
    let state = props.get("SuspendedState").filter(|v| v.is_object())?;
    Some(
        SuspendedState::builder()
            .set_dynamic_scaling_in_suspended(flag(state.get("DynamicScalingInSuspended")))
            .set_dynamic_scaling_out_suspended(flag(state.get("DynamicScalingOutSuspended")))
            .set_scheduled_scaling_suspended(flag(state.get("ScheduledScalingSuspended")))
            .build(),
    )
}

/// The template's `ScheduledActions` by name.
fn scheduled_actions(props: &Map<String, Value>) -> BTreeMap<String, Value> {
    props
        .get("ScheduledActions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| Some((string(a.get("ScheduledActionName"))?, a.clone())))
        .collect()
}

/// A template time (`2025-01-01T00:00:00Z`) as the SDK's.
fn time(value: Option<&Value>, what: &str) -> Result<Option<DateTime>, ProviderError> {
    let Some(text) = string(value) else {
        return Ok(None);
    };
    DateTime::from_str(&text, DateTimeFormat::DateTime)
        .map(Some)
        .map_err(|e| {
            ProviderError::validation(format!(
                "{what}: ScheduledActions: {text} is not an ISO 8601 time: {e}"
            ))
        })
}

/// Puts the scheduled actions of `after` that are new or changed, deletes those it dropped.
async fn apply_scheduled_actions(
    aas: &aws_sdk_applicationautoscaling::Client,
    what: &str,
    key: &TargetKey,
    before: &BTreeMap<String, Value>,
    after: &BTreeMap<String, Value>,
) -> Result<(), ProviderError> {
    for name in before.keys().filter(|n| !after.contains_key(*n)) {
        found(
            aas.delete_scheduled_action()
                .service_namespace(key.namespace())
                .resource_id(&key.resource_id)
                .scalable_dimension(key.dimension())
                .scheduled_action_name(name)
                .send()
                .await
                .map_err(app_failed!(format!("{what}: DeleteScheduledAction {name}"))),
        )?;
    }
    for (name, action) in after.iter().filter(|(n, a)| before.get(*n) != Some(*a)) {
        let target_action = action
            .get("ScalableTargetAction")
            .filter(|v| v.is_object())
            .map(|t| {
                ScalableTargetAction::builder()
                    .set_min_capacity(int(t.get("MinCapacity")))
                    .set_max_capacity(int(t.get("MaxCapacity")))
                    .build()
            });
        aas.put_scheduled_action()
            .service_namespace(key.namespace())
            .resource_id(&key.resource_id)
            .scalable_dimension(key.dimension())
            .scheduled_action_name(name)
            .set_schedule(string(action.get("Schedule")))
            .set_timezone(string(action.get("Timezone")))
            .set_start_time(time(action.get("StartTime"), what)?)
            .set_end_time(time(action.get("EndTime"), what)?)
            .set_scalable_target_action(target_action)
            .send()
            .await
            .map_err(app_failed!(format!("{what}: PutScheduledAction {name}")))?;
    }
    Ok(())
}

/// The target `key` names; `None` when it is not registered.
async fn describe(
    aas: &aws_sdk_applicationautoscaling::Client,
    what: &str,
    key: &TargetKey,
) -> Result<Option<LiveTarget>, ProviderError> {
    let answer = aas
        .describe_scalable_targets()
        .service_namespace(key.namespace())
        .resource_ids(&key.resource_id)
        .scalable_dimension(key.dimension())
        .send()
        .await
        .map_err(app_failed!(format!(
            "{what}: DescribeScalableTargets {}",
            key.id()
        )))?;
    Ok(answer
        .scalable_targets()
        .iter()
        .find(|t| {
            t.resource_id() == key.resource_id && t.scalable_dimension().as_str() == key.dimension
        })
        .cloned())
}

/// Registers (creates or updates) the target with the template's capacities and settings.
async fn register(
    aas: &aws_sdk_applicationautoscaling::Client,
    what: &str,
    key: &TargetKey,
    props: &Map<String, Value>,
    tags: Option<HashMap<String, String>>,
) -> Result<(), ProviderError> {
    let role = string(props.get("RoleARN"));
    let register = || async {
        aas.register_scalable_target()
            .service_namespace(key.namespace())
            .resource_id(&key.resource_id)
            .scalable_dimension(key.dimension())
            .set_min_capacity(int(props.get("MinCapacity")))
            .set_max_capacity(int(props.get("MaxCapacity")))
            .set_role_arn(role.clone())
            .set_suspended_state(suspended_state(props))
            .set_tags(tags.clone())
            .send()
            .await
            .map(|_| ())
            .map_err(app_failed!(format!(
                "{what}: RegisterScalableTarget {}",
                key.id()
            )))
    };
    // Application Auto Scaling assumes the role on registering: a role of the same run is
    // refused ("Unable to assume IAM role") until IAM has propagated it.
    let principal = match &role {
        Some(role) => format!("the role {role}"),
        None => "the service-linked role".to_string(),
    };
    let unassumable = |e: &ProviderError| e.message.contains("Unable to assume IAM role");
    cdkd_aws_common::while_iam_propagates(&principal, unassumable, register).await
}

fn attributes_of(key: &TargetKey) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(key.id()));
    attributes
}

#[async_trait]
impl ResourceProvider for ScalableTarget {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "ResourceId",
                "ScalableDimension",
                "ServiceNamespace",
                "MinCapacity",
                "MaxCapacity",
                "RoleARN",
                "SuspendedState",
                "ScheduledActions",
                "Tags",
            ])
            .create_only(&["ResourceId", "ScalableDimension", "ServiceNamespace"])
            .read_and_import()
            .composite_id(
                &["ResourceId", "ScalableDimension", "ServiceNamespace"],
                &[
                    &["ResourceId"],
                    &["ScalableDimension"],
                    &["ServiceNamespace"],
                ],
            )
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let key = TargetKey::of(props, &what)?;
        let aas = app_client(ctx).await?;
        let tags: HashMap<String, String> = tag_map(props).into_iter().collect();
        register(
            &aas,
            &what,
            &key,
            props,
            Some(tags).filter(|t| !t.is_empty()),
        )
        .await?;
        apply_scheduled_actions(
            &aas,
            &what,
            &key,
            &BTreeMap::new(),
            &scheduled_actions(props),
        )
        .await?;
        Ok(CreateResult {
            physical_id: key.id(),
            attributes: attributes_of(&key),
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
        let key = TargetKey::of(after, &what)?;
        let aas = app_client(ctx).await?;
        let changed = |k: &str| before.get(k) != after.get(k);
        if ["MinCapacity", "MaxCapacity", "RoleARN", "SuspendedState"]
            .iter()
            .any(|&k| changed(k))
        {
            register(&aas, &what, &key, after, None).await?;
        }
        apply_scheduled_actions(
            &aas,
            &what,
            &key,
            &scheduled_actions(before),
            &scheduled_actions(after),
        )
        .await?;
        let (set, removed): (BTreeMap<String, String>, Vec<String>) =
            tag_changes(&tag_map(before), &tag_map(after));
        if !set.is_empty() || !removed.is_empty() {
            let arn = describe(&aas, &what, &key)
                .await?
                .and_then(|t| t.scalable_target_arn().map(str::to_string))
                .ok_or_else(|| does_not_exist(&what, &key.id(), "Application Auto Scaling"))?;
            if !removed.is_empty() {
                aas.untag_resource()
                    .resource_arn(&arn)
                    .set_tag_keys(Some(removed))
                    .send()
                    .await
                    .map_err(app_failed!(format!("{what}: UntagResource {arn}")))?;
            }
            if !set.is_empty() {
                aas.tag_resource()
                    .resource_arn(&arn)
                    .set_tags(Some(set.into_iter().collect()))
                    .send()
                    .await
                    .map_err(app_failed!(format!("{what}: TagResource {arn}")))?;
            }
        }
        Ok(UpdateResult {
            physical_id: key.id(),
            attributes: attributes_of(&key),
            ..Default::default()
        })
    }

    /// Deregistering the target deletes its scaling policies and scheduled actions with it
    /// (Application Auto Scaling's own rule); a target already gone is deleted.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let key = TargetKey::parse(&request.physical_id).ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: {} is not resourceId|scalableDimension|serviceNamespace",
                request.physical_id
            ))
        })?;
        let aas = app_client(ctx).await?;
        deleted_unless_failed(
            aas.deregister_scalable_target()
                .service_namespace(key.namespace())
                .resource_id(&key.resource_id)
                .scalable_dimension(key.dimension())
                .send()
                .await
                .map(|_| ())
                .map_err(app_failed!(format!(
                    "{what}: DeregisterScalableTarget {}",
                    key.id()
                ))),
        )
    }
}

/// A scheduled action in template shape.
fn action_shape(action: &aws_sdk_applicationautoscaling::types::ScheduledAction) -> Value {
    let mut shape = Map::new();
    shape.insert(
        "ScheduledActionName".into(),
        json!(action.scheduled_action_name()),
    );
    shape.insert("Schedule".into(), json!(action.schedule()));
    put(&mut shape, "Timezone", action.timezone().map(Value::from));
    let time = |t: Option<&DateTime>| {
        t.and_then(|t| t.fmt(DateTimeFormat::DateTime).ok())
            .map(Value::from)
    };
    put(&mut shape, "StartTime", time(action.start_time()));
    put(&mut shape, "EndTime", time(action.end_time()));
    put(
        &mut shape,
        "ScalableTargetAction",
        action.scalable_target_action().map(|t| {
            let mut capacity = Map::new();
            put(
                &mut capacity,
                "MinCapacity",
                t.min_capacity().map(Value::from),
            );
            put(
                &mut capacity,
                "MaxCapacity",
                t.max_capacity().map(Value::from),
            );
            Value::Object(capacity)
        }),
    );
    Value::Object(shape)
}

/// The live target in template shape. `RoleARN` is write-only in CloudFormation's schema (AWS
/// answers its service-linked role for a target registered without one), so the template's
/// is kept; `SuspendedState` is read back where the template has it or something is suspended.
fn template_shape(target: &LiveTarget, template: &Map<String, Value>) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("ResourceId".into(), json!(target.resource_id()));
    props.insert(
        "ScalableDimension".into(),
        json!(target.scalable_dimension().as_str()),
    );
    props.insert(
        "ServiceNamespace".into(),
        json!(target.service_namespace().as_str()),
    );
    props.insert("MinCapacity".into(), json!(target.min_capacity()));
    props.insert("MaxCapacity".into(), json!(target.max_capacity()));
    put(&mut props, "RoleARN", template.get("RoleARN").cloned());
    if let Some(state) = target.suspended_state() {
        let flags = [
            (
                "DynamicScalingInSuspended",
                state.dynamic_scaling_in_suspended(),
            ),
            (
                "DynamicScalingOutSuspended",
                state.dynamic_scaling_out_suspended(),
            ),
            (
                "ScheduledScalingSuspended",
                state.scheduled_scaling_suspended(),
            ),
        ];
        if template.contains_key("SuspendedState") || flags.iter().any(|(_, f)| *f == Some(true)) {
            let mut shape = Map::new();
            for (name, value) in flags {
                put(&mut shape, name, value.map(Value::from));
            }
            props.insert("SuspendedState".into(), Value::Object(shape));
        }
    }
    props
}

#[async_trait]
impl Readable for ScalableTarget {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let key = TargetKey::parse(&request.physical_id).ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: {} is not resourceId|scalableDimension|serviceNamespace",
                request.physical_id
            ))
        })?;
        let aas = app_client(ctx).await?;
        let Some(target) = describe(&aas, what, &key).await? else {
            return Ok(None);
        };
        let mut props = template_shape(&target, &request.properties);
        let actions = aas
            .describe_scheduled_actions()
            .service_namespace(key.namespace())
            .resource_id(&key.resource_id)
            .scalable_dimension(key.dimension())
            .send()
            .await
            .map_err(app_failed!(format!(
                "{what}: DescribeScheduledActions {}",
                key.id()
            )))?;
        let actions: Vec<Value> = actions
            .scheduled_actions()
            .iter()
            .filter(|a| a.resource_id() == key.resource_id)
            .map(action_shape)
            .collect();
        if !actions.is_empty() {
            props.insert("ScheduledActions".into(), Value::Array(actions));
        }
        if let Some(arn) = target.scalable_target_arn() {
            let tags = aas
                .list_tags_for_resource()
                .resource_arn(arn)
                .send()
                .await
                .map_err(app_failed!(format!("{what}: ListTagsForResource {arn}")))?;
            put(
                &mut props,
                "Tags",
                template_tags(
                    tags.tags()
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.as_str(), v.as_str())),
                ),
            );
        }
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let key = TargetKey::parse(physical_id)
            .ok_or_else(|| does_not_exist(what, physical_id, "Application Auto Scaling"))?;
        Ok(attributes_of(&key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_physical_id_is_cloudformations_triple() {
        let key = TargetKey::parse("table/Shop|dynamodb:table:ReadCapacityUnits|dynamodb").unwrap();
        assert_eq!(key.resource_id, "table/Shop");
        assert_eq!(key.dimension, "dynamodb:table:ReadCapacityUnits");
        assert_eq!(key.namespace, "dynamodb");
        assert_eq!(
            key.id(),
            "table/Shop|dynamodb:table:ReadCapacityUnits|dynamodb"
        );
        assert_eq!(TargetKey::parse("table/Shop|dynamodb"), None);
        assert_eq!(TargetKey::parse("||"), None);
    }

    #[test]
    fn a_live_target_reads_back_without_aws_defaults() {
        let target = LiveTarget::builder()
            .service_namespace(ServiceNamespace::Dynamodb)
            .resource_id("table/Shop")
            .scalable_dimension(ScalableDimension::DynamoDbTableReadCapacityUnits)
            .min_capacity(1)
            .max_capacity(10)
            .role_arn("arn:aws:iam::1:role/aws-service-role/x")
            .creation_time(DateTime::from_secs(0))
            .suspended_state(
                SuspendedState::builder()
                    .dynamic_scaling_in_suspended(false)
                    .build(),
            )
            .build()
            .unwrap();
        let template = json!({"RoleARN": "arn:aws:iam::1:role/mine"});
        assert_eq!(
            Value::Object(template_shape(&target, template.as_object().unwrap())),
            json!({
                "ResourceId": "table/Shop",
                "ScalableDimension": "dynamodb:table:ReadCapacityUnits",
                "ServiceNamespace": "dynamodb",
                "MinCapacity": 1,
                "MaxCapacity": 10,
                "RoleARN": "arn:aws:iam::1:role/mine",
            })
        );
    }

    #[test]
    fn scheduled_actions_are_keyed_by_name_and_times_parse() {
        let props = json!({"ScheduledActions": [
            {"ScheduledActionName": "night", "Schedule": "cron(0 0 * * ? *)"},
            {"Schedule": "rate(1 day)"},
        ]});
        let actions = scheduled_actions(props.as_object().unwrap());
        assert_eq!(actions.keys().collect::<Vec<_>>(), ["night"]);
        let at = time(Some(&json!("2030-01-01T00:00:00Z")), "w")
            .unwrap()
            .unwrap();
        assert_eq!(at.secs(), 1_893_456_000);
        assert!(time(Some(&json!("tomorrow")), "w").is_err());
    }
}
