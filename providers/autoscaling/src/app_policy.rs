//! `AWS::ApplicationAutoScaling::ScalingPolicy` (target tracking and step scaling): physical id
//! (and `Ref`, and `Arn`) is the policy's ARN. The template names the policy (`PolicyName` is
//! required) and its target (`ScalingTargetId`, the target's `Ref`, or the three properties);
//! PutScalingPolicy creates or replaces the policy of that name on that target, so create and
//! update are one call and a create repeated after a crash makes the same policy.

use aws_sdk_applicationautoscaling::types::{
    AdjustmentType, CustomizedMetricSpecification, MetricAggregationType, MetricDimension,
    MetricStatistic, MetricType, PolicyType, PredefinedMetricSpecification,
    ScalingPolicy as LivePolicy, StepAdjustment, StepScalingPolicyConfiguration,
    TargetTrackingScalingPolicyConfiguration,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, int, put, require_str, string, text, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::app_target::TargetKey;
use crate::{app_client, app_failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApplicationAutoScaling::ScalingPolicy";

/// The `AWS::ApplicationAutoScaling::ScalingPolicy` provider.
#[derive(Default)]
pub struct ScalingPolicy;

/// A template number (numbers often come as strings).
fn number(value: Option<&Value>) -> Option<f64> {
    let value = value?;
    value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

/// A live number as the template writes it: whole numbers without a fraction, so a template's
/// `70` and the read's `70.0` are the same value.
fn num(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// The policy's target: `ScalingTargetId`, or `ResourceId`, `ScalableDimension` and
/// `ServiceNamespace`.
fn target_of(props: &Map<String, Value>, what: &str) -> Result<TargetKey, ProviderError> {
    if let Some(id) = string(props.get("ScalingTargetId")) {
        return TargetKey::parse(&id).ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: ScalingTargetId {id} is not resourceId|scalableDimension|serviceNamespace (a ScalableTarget's Ref)"
            ))
        });
    }
    Ok(TargetKey {
        resource_id: require_str(props, "ResourceId", what)?.into(),
        dimension: require_str(props, "ScalableDimension", what)?.into(),
        namespace: require_str(props, "ServiceNamespace", what)?.into(),
    })
}

/// The namespace, resource id and policy name an ARN names
/// (`…:scalingPolicy:<uuid>:resource/<namespace>/<resourceId>:policyName/<name>`).
fn parse_arn(arn: &str) -> Option<(&str, &str, &str)> {
    let (rest, name) = arn.rsplit_once(":policyName/")?;
    let (_, resource) = rest.split_once(":resource/")?;
    let (namespace, resource_id) = resource.split_once('/')?;
    Some((namespace, resource_id, name))
}

/// `StepScalingPolicyConfiguration` as Application Auto Scaling's.
fn step_scaling(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<StepScalingPolicyConfiguration>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let steps = value
        .get("StepAdjustments")
        .and_then(Value::as_array)
        .map(|steps| {
            steps
                .iter()
                .map(|s| {
                    StepAdjustment::builder()
                        .set_metric_interval_lower_bound(number(s.get("MetricIntervalLowerBound")))
                        .set_metric_interval_upper_bound(number(s.get("MetricIntervalUpperBound")))
                        .set_scaling_adjustment(int(s.get("ScalingAdjustment")))
                        .build()
                        .map_err(|e| {
                            ProviderError::validation(format!("{what}: StepAdjustments: {e}"))
                        })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    Ok(Some(
        StepScalingPolicyConfiguration::builder()
            .set_adjustment_type(
                string(value.get("AdjustmentType")).map(|t| AdjustmentType::from(t.as_str())),
            )
            .set_step_adjustments(steps)
            .set_min_adjustment_magnitude(int(value.get("MinAdjustmentMagnitude")))
            .set_cooldown(int(value.get("Cooldown")))
            .set_metric_aggregation_type(
                string(value.get("MetricAggregationType"))
                    .map(|t| MetricAggregationType::from(t.as_str())),
            )
            .build(),
    ))
}

/// `TargetTrackingScalingPolicyConfiguration` as Application Auto Scaling's; a customized
/// metric given as metric math (`Metrics`) is refused by name (not mapped).
fn target_tracking(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<TargetTrackingScalingPolicyConfiguration>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let predefined = match value
        .get("PredefinedMetricSpecification")
        .filter(|v| v.is_object())
    {
        Some(p) => Some(
            PredefinedMetricSpecification::builder()
                .set_predefined_metric_type(
                    string(p.get("PredefinedMetricType")).map(|t| MetricType::from(t.as_str())),
                )
                .set_resource_label(string(p.get("ResourceLabel")))
                .build()
                .map_err(|e| {
                    ProviderError::validation(format!("{what}: PredefinedMetricSpecification: {e}"))
                })?,
        ),
        None => None,
    };
    let customized = match value
        .get("CustomizedMetricSpecification")
        .filter(|v| v.is_object())
    {
        Some(c) if c.get("Metrics").is_some_and(|m| !m.is_null()) => {
            return Err(ProviderError::validation(format!(
                "{what}: TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification.Metrics (metric math) is not supported by cdkd's autoscaling plugin; use MetricName/Namespace/Statistic, or disable the plugin for this type to deploy it through Cloud Control"
            )));
        }
        Some(c) => Some(
            CustomizedMetricSpecification::builder()
                .set_metric_name(string(c.get("MetricName")))
                .set_namespace(string(c.get("Namespace")))
                .set_dimensions(
                    c.get("Dimensions")
                        .and_then(Value::as_array)
                        .map(|ds| {
                            ds.iter()
                                .map(|d| {
                                    MetricDimension::builder()
                                        .set_name(string(d.get("Name")))
                                        .set_value(text(d.get("Value")))
                                        .build()
                                        .map_err(|e| {
                                            ProviderError::validation(format!(
                                                "{what}: Dimensions: {e}"
                                            ))
                                        })
                                })
                                .collect::<Result<Vec<_>, _>>()
                        })
                        .transpose()?,
                )
                .set_statistic(
                    string(c.get("Statistic")).map(|s| MetricStatistic::from(s.as_str())),
                )
                .set_unit(string(c.get("Unit")))
                .build(),
        ),
        None => None,
    };
    TargetTrackingScalingPolicyConfiguration::builder()
        .set_target_value(number(value.get("TargetValue")))
        .set_predefined_metric_specification(predefined)
        .set_customized_metric_specification(customized)
        .set_scale_in_cooldown(int(value.get("ScaleInCooldown")))
        .set_scale_out_cooldown(int(value.get("ScaleOutCooldown")))
        .set_disable_scale_in(flag(value.get("DisableScaleIn")))
        .build()
        .map(Some)
        .map_err(|e| {
            ProviderError::validation(format!(
                "{what}: TargetTrackingScalingPolicyConfiguration: {e}"
            ))
        })
}

/// The live policy in template shape; the target is named as the template names it.
/// `PredefinedMetricSpecification.ResourceLabel` is write-only in CloudFormation's schema,
/// so the template's is kept.
fn template_shape(policy: &LivePolicy, template: &Map<String, Value>) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("PolicyName".into(), json!(policy.policy_name()));
    props.insert("PolicyType".into(), json!(policy.policy_type().as_str()));
    let key = TargetKey {
        resource_id: policy.resource_id().into(),
        dimension: policy.scalable_dimension().as_str().into(),
        namespace: policy.service_namespace().as_str().into(),
    };
    if template.contains_key("ScalingTargetId") {
        props.insert("ScalingTargetId".into(), json!(key.id()));
    } else {
        props.insert("ResourceId".into(), json!(key.resource_id));
        props.insert("ScalableDimension".into(), json!(key.dimension));
        props.insert("ServiceNamespace".into(), json!(key.namespace));
    }
    if let Some(step) = policy.step_scaling_policy_configuration() {
        let mut shape = Map::new();
        put(
            &mut shape,
            "AdjustmentType",
            step.adjustment_type().map(|t| json!(t.as_str())),
        );
        put(
            &mut shape,
            "MinAdjustmentMagnitude",
            step.min_adjustment_magnitude().map(Value::from),
        );
        put(&mut shape, "Cooldown", step.cooldown().map(Value::from));
        put(
            &mut shape,
            "MetricAggregationType",
            step.metric_aggregation_type().map(|t| json!(t.as_str())),
        );
        let steps: Vec<Value> = step
            .step_adjustments()
            .iter()
            .map(|s| {
                let mut adjustment = Map::new();
                put(
                    &mut adjustment,
                    "MetricIntervalLowerBound",
                    s.metric_interval_lower_bound().map(num),
                );
                put(
                    &mut adjustment,
                    "MetricIntervalUpperBound",
                    s.metric_interval_upper_bound().map(num),
                );
                adjustment.insert("ScalingAdjustment".into(), json!(s.scaling_adjustment()));
                Value::Object(adjustment)
            })
            .collect();
        if !steps.is_empty() {
            shape.insert("StepAdjustments".into(), Value::Array(steps));
        }
        props.insert(
            "StepScalingPolicyConfiguration".into(),
            Value::Object(shape),
        );
    }
    if let Some(t) = policy.target_tracking_scaling_policy_configuration() {
        let mut shape = Map::new();
        shape.insert("TargetValue".into(), num(t.target_value()));
        put(
            &mut shape,
            "PredefinedMetricSpecification",
            t.predefined_metric_specification().map(|p| {
                let mut spec = Map::new();
                spec.insert(
                    "PredefinedMetricType".into(),
                    json!(p.predefined_metric_type().as_str()),
                );
                put(
                    &mut spec,
                    "ResourceLabel",
                    template
                        .get("TargetTrackingScalingPolicyConfiguration")
                        .and_then(|c| c.get("PredefinedMetricSpecification"))
                        .and_then(|s| s.get("ResourceLabel"))
                        .cloned(),
                );
                Value::Object(spec)
            }),
        );
        put(
            &mut shape,
            "CustomizedMetricSpecification",
            t.customized_metric_specification().map(|c| {
                crate::customized_metric(
                    c.metric_name(),
                    c.namespace(),
                    c.statistic().map(|s| s.as_str()),
                    c.unit(),
                    c.dimensions()
                        .iter()
                        .map(|d| json!({"Name": d.name(), "Value": d.value()})),
                )
            }),
        );
        put(
            &mut shape,
            "ScaleInCooldown",
            t.scale_in_cooldown().map(Value::from),
        );
        put(
            &mut shape,
            "ScaleOutCooldown",
            t.scale_out_cooldown().map(Value::from),
        );
        put(
            &mut shape,
            "DisableScaleIn",
            t.disable_scale_in().map(Value::from),
        );
        props.insert(
            "TargetTrackingScalingPolicyConfiguration".into(),
            Value::Object(shape),
        );
    }
    props
}

/// The policy `arn`; `None` when it (or its target) no longer exists.
async fn describe(
    aas: &aws_sdk_applicationautoscaling::Client,
    what: &str,
    arn: &str,
) -> Result<Option<LivePolicy>, ProviderError> {
    let (namespace, resource_id, name) = parse_arn(arn).ok_or_else(|| {
        ProviderError::validation(format!("{what}: {arn} is not a scaling policy ARN"))
    })?;
    let mut next: Option<String> = None;
    loop {
        let page = aas
            .describe_scaling_policies()
            .service_namespace(namespace.into())
            .resource_id(resource_id)
            .policy_names(name)
            .set_next_token(next.take())
            .send()
            .await
            .map_err(app_failed!(format!(
                "{what}: DescribeScalingPolicies {arn}"
            )))?;
        if let Some(policy) = page
            .scaling_policies()
            .iter()
            .find(|p| p.policy_arn() == arn)
        {
            return Ok(Some(policy.clone()));
        }
        match page.next_token() {
            Some(token) if !token.is_empty() => next = Some(token.to_string()),
            _ => return Ok(None),
        }
    }
}

/// Creates or replaces the template's policy on its target; its ARN.
async fn put_policy(
    aas: &aws_sdk_applicationautoscaling::Client,
    what: &str,
    props: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let name = require_str(props, "PolicyName", what)?;
    let key = target_of(props, what)?;
    let answer = aas
        .put_scaling_policy()
        .policy_name(name)
        .service_namespace(key.namespace())
        .resource_id(&key.resource_id)
        .scalable_dimension(key.dimension())
        .set_policy_type(string(props.get("PolicyType")).map(|t| PolicyType::from(t.as_str())))
        .set_step_scaling_policy_configuration(step_scaling(
            props.get("StepScalingPolicyConfiguration"),
            what,
        )?)
        .set_target_tracking_scaling_policy_configuration(target_tracking(
            props.get("TargetTrackingScalingPolicyConfiguration"),
            what,
        )?)
        .send()
        .await
        .map_err(app_failed!(format!(
            "{what}: PutScalingPolicy {name} on {}",
            key.id()
        )))?;
    Ok(answer.policy_arn().to_string())
}

fn attributes_of(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes
}

#[async_trait]
impl ResourceProvider for ScalingPolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "PolicyName",
                "PolicyType",
                "ScalingTargetId",
                "ResourceId",
                "ScalableDimension",
                "ServiceNamespace",
                "StepScalingPolicyConfiguration",
                "TargetTrackingScalingPolicyConfiguration",
            ])
            .create_only(&[
                "PolicyName",
                "ScalingTargetId",
                "ResourceId",
                "ScalableDimension",
                "ServiceNamespace",
            ])
            .read_and_import()
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let aas = app_client(ctx).await?;
        let arn = put_policy(&aas, &what, &request.properties).await?;
        Ok(CreateResult {
            attributes: attributes_of(&arn),
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
        let aas = app_client(ctx).await?;
        // The same name on the same target (both create-only): PutScalingPolicy replaces the
        // policy in place and keeps its ARN.
        let arn = put_policy(&aas, &what, &request.properties).await?;
        Ok(UpdateResult {
            attributes: attributes_of(&arn),
            physical_id: arn,
            ..Default::default()
        })
    }

    /// A policy already gone (deleted with its deregistered target, or by hand) is deleted.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let aas = app_client(ctx).await?;
        // The ARN does not name the scalable dimension DeleteScalingPolicy needs: the live
        // policy does.
        let Some(policy) = describe(&aas, &what, arn).await? else {
            return Ok(DeleteResult::Deleted);
        };
        deleted_unless_failed(
            aas.delete_scaling_policy()
                .policy_name(policy.policy_name())
                .service_namespace(policy.service_namespace().clone())
                .resource_id(policy.resource_id())
                .scalable_dimension(policy.scalable_dimension().clone())
                .send()
                .await
                .map(|_| ())
                .map_err(app_failed!(format!("{what}: DeleteScalingPolicy {arn}"))),
        )
    }
}

#[async_trait]
impl Readable for ScalingPolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let aas = app_client(ctx).await?;
        Ok(describe(&aas, what, &request.physical_id)
            .await?
            .map(|p| template_shape(&p, &request.properties)))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        parse_arn(physical_id)
            .ok_or_else(|| does_not_exist(what, physical_id, "Application Auto Scaling"))?;
        Ok(attributes_of(physical_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARN: &str = "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:1a2b-3c:resource/dynamodb/table/Shop:policyName/ShopReadScaling";

    #[test]
    fn an_arn_names_its_namespace_resource_and_name() {
        assert_eq!(
            parse_arn(ARN),
            Some(("dynamodb", "table/Shop", "ShopReadScaling"))
        );
        assert_eq!(parse_arn("nonsense"), None);
    }

    #[test]
    fn the_target_comes_from_its_ref_or_three_properties() {
        let by_ref =
            json!({"ScalingTargetId": "table/Shop|dynamodb:table:ReadCapacityUnits|dynamodb"});
        let by_parts = json!({"ResourceId": "table/Shop", "ScalableDimension": "dynamodb:table:ReadCapacityUnits", "ServiceNamespace": "dynamodb"});
        assert_eq!(
            target_of(by_ref.as_object().unwrap(), "w").unwrap(),
            target_of(by_parts.as_object().unwrap(), "w").unwrap()
        );
        let bad = json!({"ScalingTargetId": "table/Shop"});
        assert!(target_of(bad.as_object().unwrap(), "w")
            .unwrap_err()
            .message
            .contains("ScalingTargetId"));
    }

    #[test]
    fn a_target_tracking_policy_converts_and_reads_back() {
        let template = json!({
            "PolicyName": "ShopReadScaling",
            "PolicyType": "TargetTrackingScaling",
            "ScalingTargetId": "table/Shop|dynamodb:table:ReadCapacityUnits|dynamodb",
            "TargetTrackingScalingPolicyConfiguration": {
                "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"},
                "TargetValue": "70",
            },
        });
        let props = template.as_object().unwrap();
        let config = target_tracking(props.get("TargetTrackingScalingPolicyConfiguration"), "w")
            .unwrap()
            .unwrap();
        let policy = LivePolicy::builder()
            .policy_arn(ARN)
            .policy_name("ShopReadScaling")
            .service_namespace("dynamodb".into())
            .resource_id("table/Shop")
            .scalable_dimension("dynamodb:table:ReadCapacityUnits".into())
            .policy_type(PolicyType::TargetTrackingScaling)
            .target_tracking_scaling_policy_configuration(config)
            .creation_time(aws_sdk_applicationautoscaling::primitives::DateTime::from_secs(0))
            .build()
            .unwrap();
        let mut expected = template.clone();
        expected["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] = json!(70);
        assert_eq!(Value::Object(template_shape(&policy, props)), expected);
        assert_eq!(num(0.5), json!(0.5));
        let math =
            json!({"CustomizedMetricSpecification": {"Metrics": [{"Id": "m1"}]}, "TargetValue": 1});
        assert!(target_tracking(Some(&math), "w")
            .unwrap_err()
            .message
            .contains("Metrics"));
    }

    #[test]
    fn step_scaling_keeps_its_bounds() {
        let config = step_scaling(
            Some(
                &json!({"AdjustmentType": "ChangeInCapacity", "StepAdjustments": [
                    {"MetricIntervalUpperBound": "0", "ScalingAdjustment": -1},
                    {"MetricIntervalLowerBound": 0, "ScalingAdjustment": "2"},
                ]}),
            ),
            "w",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            config.step_adjustments()[0].metric_interval_upper_bound(),
            Some(0.0)
        );
        assert_eq!(config.step_adjustments()[1].scaling_adjustment(), 2);
        assert_eq!(
            config.adjustment_type(),
            Some(&AdjustmentType::ChangeInCapacity)
        );
    }
}
