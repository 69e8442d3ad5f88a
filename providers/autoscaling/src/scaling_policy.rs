//! `AWS::AutoScaling::ScalingPolicy` (target tracking, step and simple scaling): physical id
//! (and `Ref`) is the policy's ARN; attributes `Arn` and `PolicyName`. CloudFormation generates
//! the policy's name; cdkd generates it from the create's token before the call, so the run
//! after a crash finds the policy by that name in its group. PutScalingPolicy creates or
//! replaces a policy of that name in place: create and update are the same call.

use aws_sdk_autoscaling::types::{
    CustomizedMetricSpecification, MetricDimension, MetricStatistic, MetricType,
    PredefinedMetricSpecification, ScalingPolicy as LivePolicy, StepAdjustment,
    TargetTrackingConfiguration,
};
use cdkd_aws_common::{
    created_name, deleted_unless_failed, does_not_exist, flag, found, int, physical_name, put,
    string, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::AutoScaling::ScalingPolicy";

/// The longest policy name Auto Scaling takes.
const MAX_NAME: usize = 255;

/// The `AWS::AutoScaling::ScalingPolicy` provider.
#[derive(Default)]
pub struct ScalingPolicy;

/// A template number (numbers often come as strings).
fn number(value: Option<&Value>) -> Option<f64> {
    let value = value?;
    value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

/// The group and policy name an ARN names
/// (`…:scalingPolicy:<uuid>:autoScalingGroupName/<group>:policyName/<name>`).
fn parse_arn(arn: &str) -> Option<(&str, &str)> {
    let (rest, name) = arn.rsplit_once(":policyName/")?;
    let (_, group) = rest.rsplit_once(":autoScalingGroupName/")?;
    Some((group, name))
}

/// `StepAdjustments` as Auto Scaling's.
fn step_adjustments(value: Option<&Value>) -> Option<Vec<StepAdjustment>> {
    value.and_then(Value::as_array).map(|steps| {
        steps
            .iter()
            .map(|s| {
                StepAdjustment::builder()
                    .set_metric_interval_lower_bound(number(s.get("MetricIntervalLowerBound")))
                    .set_metric_interval_upper_bound(number(s.get("MetricIntervalUpperBound")))
                    .set_scaling_adjustment(int(s.get("ScalingAdjustment")))
                    .build()
            })
            .collect()
    })
}

/// `TargetTrackingConfiguration` as Auto Scaling's; a customized metric given as metric math
/// (`Metrics`) is refused by name (not mapped).
fn target_tracking(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<TargetTrackingConfiguration>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let predefined = value
        .get("PredefinedMetricSpecification")
        .filter(|v| v.is_object())
        .map(|p| {
            PredefinedMetricSpecification::builder()
                .set_predefined_metric_type(
                    string(p.get("PredefinedMetricType")).map(|t| MetricType::from(t.as_str())),
                )
                .set_resource_label(string(p.get("ResourceLabel")))
                .build()
        });
    let customized = match value
        .get("CustomizedMetricSpecification")
        .filter(|v| v.is_object())
    {
        Some(c) if c.get("Metrics").is_some_and(|m| !m.is_null()) => {
            return Err(ProviderError::validation(format!(
                "{what}: TargetTrackingConfiguration.CustomizedMetricSpecification.Metrics (metric math) is not supported by cdkd's autoscaling plugin; use MetricName/Namespace/Statistic, or disable the plugin for this type to deploy it through Cloud Control"
            )));
        }
        Some(c) => Some(
            CustomizedMetricSpecification::builder()
                .set_metric_name(string(c.get("MetricName")))
                .set_namespace(string(c.get("Namespace")))
                .set_dimensions(c.get("Dimensions").and_then(Value::as_array).map(|ds| {
                    ds.iter()
                        .map(|d| {
                            MetricDimension::builder()
                                .set_name(string(d.get("Name")))
                                .set_value(text(d.get("Value")))
                                .build()
                        })
                        .collect()
                }))
                .set_statistic(
                    string(c.get("Statistic")).map(|s| MetricStatistic::from(s.as_str())),
                )
                .set_unit(string(c.get("Unit")))
                .set_period(int(c.get("Period")))
                .build(),
        ),
        None => None,
    };
    Ok(Some(
        TargetTrackingConfiguration::builder()
            .set_predefined_metric_specification(predefined)
            .set_customized_metric_specification(customized)
            .set_target_value(number(value.get("TargetValue")))
            .set_disable_scale_in(flag(value.get("DisableScaleIn")))
            .build(),
    ))
}

/// The live policy in template shape.
fn template_shape(policy: &LivePolicy) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "AutoScalingGroupName",
        policy.auto_scaling_group_name().map(Value::from),
    );
    put(
        &mut props,
        "PolicyType",
        policy.policy_type().map(Value::from),
    );
    put(
        &mut props,
        "AdjustmentType",
        policy.adjustment_type().map(Value::from),
    );
    put(
        &mut props,
        "MinAdjustmentMagnitude",
        policy.min_adjustment_magnitude().map(Value::from),
    );
    put(
        &mut props,
        "ScalingAdjustment",
        policy.scaling_adjustment().map(Value::from),
    );
    put(
        &mut props,
        "Cooldown",
        policy.cooldown().map(|n| json!(n.to_string())),
    );
    put(
        &mut props,
        "MetricAggregationType",
        policy.metric_aggregation_type().map(Value::from),
    );
    put(
        &mut props,
        "EstimatedInstanceWarmup",
        policy.estimated_instance_warmup().map(Value::from),
    );
    let steps: Vec<Value> = policy
        .step_adjustments()
        .iter()
        .map(|s| {
            let mut step = Map::new();
            put(
                &mut step,
                "MetricIntervalLowerBound",
                s.metric_interval_lower_bound().map(Value::from),
            );
            put(
                &mut step,
                "MetricIntervalUpperBound",
                s.metric_interval_upper_bound().map(Value::from),
            );
            put(
                &mut step,
                "ScalingAdjustment",
                s.scaling_adjustment().map(Value::from),
            );
            Value::Object(step)
        })
        .collect();
    if !steps.is_empty() {
        props.insert("StepAdjustments".into(), Value::Array(steps));
    }
    if let Some(t) = policy.target_tracking_configuration() {
        let mut shape = Map::new();
        put(
            &mut shape,
            "PredefinedMetricSpecification",
            t.predefined_metric_specification().map(|p| {
                let mut spec = Map::new();
                put(
                    &mut spec,
                    "PredefinedMetricType",
                    p.predefined_metric_type().map(|t| json!(t.as_str())),
                );
                put(
                    &mut spec,
                    "ResourceLabel",
                    p.resource_label().map(Value::from),
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
        put(&mut shape, "TargetValue", t.target_value().map(Value::from));
        put(
            &mut shape,
            "DisableScaleIn",
            t.disable_scale_in().map(Value::from),
        );
        props.insert("TargetTrackingConfiguration".into(), Value::Object(shape));
    }
    props
}

/// `Arn` and `PolicyName` of a policy.
fn attributes_of(arn: &str, name: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes.insert("PolicyName".into(), json!(name));
    attributes
}

/// The policy `name` of group `group`; `None` when either does not exist.
async fn describe(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    group: &str,
    name: &str,
) -> Result<Option<LivePolicy>, ProviderError> {
    let answer = found(
        asg.describe_policies()
            .auto_scaling_group_name(group)
            .policy_names(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribePolicies {group} {name}"))),
    )?;
    Ok(answer.and_then(|a| {
        a.scaling_policies()
            .iter()
            .find(|p| p.policy_name() == Some(name))
            .cloned()
    }))
}

/// Creates or replaces policy `name` with the template's settings; its ARN.
async fn put_policy(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
    props: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let group = string(props.get("AutoScalingGroupName")).ok_or_else(|| {
        ProviderError::validation(format!("{what}: AutoScalingGroupName is required"))
    })?;
    let answer = asg
        .put_scaling_policy()
        .auto_scaling_group_name(&group)
        .policy_name(name)
        .set_policy_type(string(props.get("PolicyType")))
        .set_adjustment_type(string(props.get("AdjustmentType")))
        .set_min_adjustment_magnitude(int(props.get("MinAdjustmentMagnitude")))
        .set_scaling_adjustment(int(props.get("ScalingAdjustment")))
        .set_cooldown(int(props.get("Cooldown")))
        .set_metric_aggregation_type(string(props.get("MetricAggregationType")))
        .set_step_adjustments(step_adjustments(props.get("StepAdjustments")))
        .set_estimated_instance_warmup(int(props.get("EstimatedInstanceWarmup")))
        .set_target_tracking_configuration(target_tracking(
            props.get("TargetTrackingConfiguration"),
            what,
        )?)
        .send()
        .await
        .map_err(failed!(format!("{what}: PutScalingPolicy {group} {name}")))?;
    answer
        .policy_arn()
        .map(str::to_string)
        .ok_or_else(|| ProviderError::other(format!("{what}: PutScalingPolicy returned no ARN")))
}

#[async_trait]
impl ResourceProvider for ScalingPolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "AutoScalingGroupName",
                "PolicyType",
                "AdjustmentType",
                "MinAdjustmentMagnitude",
                "ScalingAdjustment",
                "Cooldown",
                "MetricAggregationType",
                "StepAdjustments",
                "EstimatedInstanceWarmup",
                "TargetTrackingConfiguration",
            ])
            .create_only(&["AutoScalingGroupName"])
            .read_and_import()
            .finds_created_in(&["AutoScalingGroupName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = physical_name(&request, MAX_NAME, false);
        let asg = client(ctx).await?;
        let arn = put_policy(&asg, &what, &name, &request.properties).await?;
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
        let (_, name) = parse_arn(&request.physical_id).ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: {} is not a scaling policy ARN",
                request.physical_id
            ))
        })?;
        let asg = client(ctx).await?;
        // The same name in the same group: PutScalingPolicy replaces the policy in place.
        let arn = put_policy(&asg, &what, name, &request.properties).await?;
        Ok(UpdateResult {
            attributes: attributes_of(&arn, name),
            physical_id: arn,
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
        let (group, name) = parse_arn(arn).ok_or_else(|| {
            ProviderError::validation(format!("{what}: {arn} is not a scaling policy ARN"))
        })?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_policy()
                .auto_scaling_group_name(group)
                .policy_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeletePolicy {arn}"))),
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
        let Some((group, name)) = parse_arn(&request.physical_id) else {
            return Err(ProviderError::validation(format!(
                "{what}: {} is not a scaling policy ARN",
                request.physical_id
            )));
        };
        let asg = client(ctx).await?;
        Ok(describe(&asg, what, group, name)
            .await?
            .map(|p| template_shape(&p)))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let (_, name) = parse_arn(physical_id)
            .ok_or_else(|| does_not_exist(what, physical_id, "AutoScaling"))?;
        Ok(attributes_of(physical_id, name))
    }

    /// The policy named from the create's token in the template's group.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(name), Some(group)) = (
            created_name(request, None, MAX_NAME, false),
            string(request.properties.get("AutoScalingGroupName")),
        ) else {
            return Ok(None);
        };
        let asg = client(ctx).await?;
        Ok(describe(&asg, what, &group, &name)
            .await?
            .and_then(|p| p.policy_arn().map(str::to_string)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARN: &str = "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:1a2b:autoScalingGroupName/web:policyName/Shop-Cpu-ABC";

    #[test]
    fn an_arn_names_its_group_and_policy() {
        assert_eq!(parse_arn(ARN), Some(("web", "Shop-Cpu-ABC")));
        assert_eq!(parse_arn("nonsense"), None);
        assert_eq!(
            Value::Object(attributes_of(ARN, "Shop-Cpu-ABC")),
            json!({"Arn": ARN, "PolicyName": "Shop-Cpu-ABC"})
        );
    }

    #[test]
    fn a_target_tracking_policy_converts_and_reads_back() {
        let template = json!({
            "PredefinedMetricSpecification": {"PredefinedMetricType": "ASGAverageCPUUtilization"},
            "TargetValue": 50,
        });
        let config = target_tracking(Some(&template), "w").unwrap().unwrap();
        assert_eq!(config.target_value(), Some(50.0));
        let policy = LivePolicy::builder()
            .auto_scaling_group_name("web")
            .policy_type("TargetTrackingScaling")
            .target_tracking_configuration(config)
            .build();
        assert_eq!(
            Value::Object(template_shape(&policy)),
            json!({
                "AutoScalingGroupName": "web",
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingConfiguration": {
                    "PredefinedMetricSpecification": {"PredefinedMetricType": "ASGAverageCPUUtilization"},
                    "TargetValue": 50.0,
                },
            })
        );
        let math =
            json!({"CustomizedMetricSpecification": {"Metrics": [{"Id": "m1"}]}, "TargetValue": 1});
        assert!(target_tracking(Some(&math), "w")
            .unwrap_err()
            .message
            .contains("Metrics"));
    }

    #[test]
    fn step_adjustments_keep_their_bounds() {
        let steps = step_adjustments(Some(&json!([
            {"MetricIntervalUpperBound": "0", "ScalingAdjustment": -1},
            {"MetricIntervalLowerBound": 0, "ScalingAdjustment": "2"},
        ])))
        .unwrap();
        assert_eq!(steps[0].metric_interval_upper_bound(), Some(0.0));
        assert_eq!(steps[0].metric_interval_lower_bound(), None);
        assert_eq!(steps[1].scaling_adjustment(), Some(2));
    }
}
