//! `AWS::ElasticLoadBalancingV2::TargetGroup` (instance, ip, lambda and alb targets): physical
//! id (and `Ref`) is the ARN. Its name is chosen before the call (the template's, or
//! `{stack}-{logicalId}-{SUFFIX}` in 32 characters from the create's token), so the run after a
//! crash finds it by name. `Targets` are registered after the create (a Lambda target needs the
//! function's permission for `elasticloadbalancing.amazonaws.com`, which CDK makes the target
//! group depend on). Nothing is waited for: a listener may forward to a target group at once.

use std::time::Duration;

use aws_sdk_elasticloadbalancingv2::types::{
    Matcher, TargetDescription, TargetGroupAttribute, TargetHealthStateEnum,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, found, int, put, retry_while, string, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    arn_suffix, changed, changed_key_values, client, configured_or_undone, created_name,
    created_or_own, failed, key_values, key_values_shape, name_for, read_tags, sdk_tags,
    update_tags,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ElasticLoadBalancingV2::TargetGroup";

/// The health-check settings ModifyTargetGroup changes in place.
const HEALTH: &[&str] = &[
    "HealthCheckEnabled",
    "HealthCheckIntervalSeconds",
    "HealthCheckPath",
    "HealthCheckPort",
    "HealthCheckProtocol",
    "HealthCheckTimeoutSeconds",
    "HealthyThresholdCount",
    "UnhealthyThresholdCount",
    "Matcher",
];

/// How long a delete retries while ELBv2 still counts a just-deleted listener or rule as a
/// user of the group (ResourceInUse).
const IN_USE_PATIENCE: Duration = Duration::from_secs(120);

/// The `AWS::ElasticLoadBalancingV2::TargetGroup` provider.
#[derive(Default)]
pub struct TargetGroup;

type Live = aws_sdk_elasticloadbalancingv2::types::TargetGroup;

fn matcher(value: Option<&Value>) -> Option<Matcher> {
    value.filter(|v| v.is_object()).map(|m| {
        Matcher::builder()
            .set_http_code(text(m.get("HttpCode")))
            .set_grpc_code(text(m.get("GrpcCode")))
            .build()
    })
}

/// A template target as the SDK's.
fn target(value: &Value) -> TargetDescription {
    TargetDescription::builder()
        .set_id(text(value.get("Id")))
        .set_port(int(value.get("Port")))
        .set_availability_zone(text(value.get("AvailabilityZone")))
        .build()
}

/// A template target list, each target as a comparable JSON value.
fn template_targets(value: Option<&Value>) -> Vec<Value> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let mut shape = Map::new();
            put(&mut shape, "Id", text(t.get("Id")).map(Value::from));
            put(&mut shape, "Port", int(t.get("Port")).map(Value::from));
            put(
                &mut shape,
                "AvailabilityZone",
                text(t.get("AvailabilityZone")).map(Value::from),
            );
            Value::Object(shape)
        })
        .collect()
}

fn sdk_attributes(pairs: Vec<(String, String)>) -> Vec<TargetGroupAttribute> {
    pairs
        .into_iter()
        .map(|(k, v)| TargetGroupAttribute::builder().key(k).value(v).build())
        .collect()
}

/// Sends the `TargetGroupAttributes` that are new or changed from `before` to `after`
/// (ModifyTargetGroupAttributes).
async fn set_attributes(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Result<(), ProviderError> {
    let attributes = changed_key_values(before, after);
    if attributes.is_empty() {
        return Ok(());
    }
    elb.modify_target_group_attributes()
        .target_group_arn(arn)
        .set_attributes(Some(sdk_attributes(attributes)))
        .send()
        .await
        .map_err(failed!(format!(
            "{what}: ModifyTargetGroupAttributes {arn}"
        )))?;
    Ok(())
}

/// `Fn::GetAtt` attributes of a live target group.
fn attributes_of(group: &Live) -> Map<String, Value> {
    let mut attributes = Map::new();
    let arn = group.target_group_arn().unwrap_or_default();
    attributes.insert("TargetGroupArn".into(), json!(arn));
    put(
        &mut attributes,
        "TargetGroupName",
        group.target_group_name().map(Value::from),
    );
    put(
        &mut attributes,
        "TargetGroupFullName",
        arn_suffix(arn, ":targetgroup/").map(|rest| Value::from(format!("targetgroup/{rest}"))),
    );
    attributes.insert("LoadBalancerArns".into(), json!(group.load_balancer_arns()));
    attributes
}

async fn describe(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Live>, ProviderError> {
    let answer = found(
        elb.describe_target_groups()
            .target_group_arns(arn)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeTargetGroups {arn}"))),
    )?;
    Ok(answer.and_then(|a| a.target_groups().first().cloned()))
}

async fn describe_named(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    name: &str,
) -> Result<Option<Live>, ProviderError> {
    let answer = found(
        elb.describe_target_groups()
            .names(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeTargetGroups {name}"))),
    )?;
    Ok(answer.and_then(|a| a.target_groups().first().cloned()))
}

/// Registers and deregisters targets so the group holds `after`'s instead of `before`'s.
async fn sync_targets(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Result<(), ProviderError> {
    let (old, new) = (template_targets(before), template_targets(after));
    let gone: Vec<TargetDescription> = old
        .iter()
        .filter(|t| !new.contains(t))
        .map(target)
        .collect();
    let added: Vec<TargetDescription> = new
        .iter()
        .filter(|t| !old.contains(t))
        .map(target)
        .collect();
    if !gone.is_empty() {
        found(
            elb.deregister_targets()
                .target_group_arn(arn)
                .set_targets(Some(gone))
                .send()
                .await
                .map_err(failed!(format!("{what}: DeregisterTargets {arn}"))),
        )?;
    }
    if !added.is_empty() {
        elb.register_targets()
            .target_group_arn(arn)
            .set_targets(Some(added))
            .send()
            .await
            .map_err(failed!(format!("{what}: RegisterTargets {arn}")))?;
    }
    Ok(())
}

/// A live target group in template shape (`template`, the recorded properties, says which
/// attributes to report).
fn template_shape(
    group: &Live,
    attributes: &[TargetGroupAttribute],
    targets: Vec<Value>,
    tags: Option<Value>,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "Name",
        group.target_group_name().map(Value::from),
    );
    put(
        &mut props,
        "TargetType",
        group.target_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut props,
        "Protocol",
        group.protocol().map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "ProtocolVersion",
        group.protocol_version().map(Value::from),
    );
    put(&mut props, "Port", group.port().map(Value::from));
    put(&mut props, "VpcId", group.vpc_id().map(Value::from));
    put(
        &mut props,
        "IpAddressType",
        group.ip_address_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut props,
        "HealthCheckEnabled",
        group.health_check_enabled().map(Value::from),
    );
    put(
        &mut props,
        "HealthCheckIntervalSeconds",
        group.health_check_interval_seconds().map(Value::from),
    );
    put(
        &mut props,
        "HealthCheckPath",
        group.health_check_path().map(Value::from),
    );
    put(
        &mut props,
        "HealthCheckPort",
        group.health_check_port().map(Value::from),
    );
    put(
        &mut props,
        "HealthCheckProtocol",
        group.health_check_protocol().map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "HealthCheckTimeoutSeconds",
        group.health_check_timeout_seconds().map(Value::from),
    );
    put(
        &mut props,
        "HealthyThresholdCount",
        group.healthy_threshold_count().map(Value::from),
    );
    put(
        &mut props,
        "UnhealthyThresholdCount",
        group.unhealthy_threshold_count().map(Value::from),
    );
    if let Some(m) = group.matcher() {
        let mut shape = Map::new();
        put(&mut shape, "HttpCode", m.http_code().map(Value::from));
        put(&mut shape, "GrpcCode", m.grpc_code().map(Value::from));
        props.insert("Matcher".into(), Value::Object(shape));
    }
    if !targets.is_empty() {
        props.insert("Targets".into(), Value::Array(targets));
    }
    put(
        &mut props,
        "TargetGroupAttributes",
        key_values_shape(
            attributes
                .iter()
                .filter_map(|a| Some((a.key()?, a.value().unwrap_or_default()))),
            &key_values(template.get("TargetGroupAttributes")),
        ),
    );
    put(&mut props, "Tags", tags);
    props
}

/// The group's registered targets (draining ones, on their way out, left out), sorted by id;
/// a port is reported where the template gave one for that target.
async fn live_targets(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
    template: Option<&Value>,
) -> Result<Vec<Value>, ProviderError> {
    let health = elb
        .describe_target_health()
        .target_group_arn(arn)
        .send()
        .await
        .map_err(failed!(format!("{what}: DescribeTargetHealth {arn}")))?;
    let with_port: Vec<String> = template_targets(template)
        .iter()
        .filter(|t| t.get("Port").is_some())
        .filter_map(|t| string(t.get("Id")))
        .collect();
    let mut targets: Vec<Value> = health
        .target_health_descriptions()
        .iter()
        .filter(|d| {
            d.target_health()
                .and_then(|h| h.state())
                .is_none_or(|s| *s != TargetHealthStateEnum::Draining)
        })
        .filter_map(|d| d.target())
        .map(|t| {
            let mut shape = Map::new();
            put(&mut shape, "Id", t.id().map(Value::from));
            if t.id().is_some_and(|id| with_port.iter().any(|p| p == id)) {
                put(&mut shape, "Port", t.port().map(Value::from));
            }
            put(
                &mut shape,
                "AvailabilityZone",
                t.availability_zone().map(Value::from),
            );
            Value::Object(shape)
        })
        .collect();
    targets.sort_by_key(|t| t.get("Id").and_then(Value::as_str).map(str::to_string));
    Ok(targets)
}

/// Applies what a create cannot send (attributes, targets) to a new group.
async fn configure(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    set_attributes(elb, what, arn, None, props.get("TargetGroupAttributes")).await?;
    sync_targets(elb, what, arn, None, props.get("Targets")).await
}

#[async_trait]
impl ResourceProvider for TargetGroup {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "TargetType",
                "Protocol",
                "ProtocolVersion",
                "Port",
                "VpcId",
                "IpAddressType",
                "Targets",
                "TargetGroupAttributes",
                "Tags",
            ])
            .handles(HEALTH)
            .create_only(&[
                "Name",
                "TargetType",
                "Protocol",
                "ProtocolVersion",
                "Port",
                "VpcId",
                "IpAddressType",
            ])
            .read_and_import()
            .finds_created_in(&["Name"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = name_for(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
        );
        let elb = client(ctx).await?;
        let created = elb
            .create_target_group()
            .name(&name)
            .set_target_type(text(props.get("TargetType")).map(|t| t.as_str().into()))
            .set_protocol(text(props.get("Protocol")).map(|p| p.as_str().into()))
            .set_protocol_version(text(props.get("ProtocolVersion")))
            .set_port(int(props.get("Port")))
            .set_vpc_id(text(props.get("VpcId")))
            .set_ip_address_type(text(props.get("IpAddressType")).map(|t| t.as_str().into()))
            .set_health_check_enabled(flag(props.get("HealthCheckEnabled")))
            .set_health_check_interval_seconds(int(props.get("HealthCheckIntervalSeconds")))
            .set_health_check_path(text(props.get("HealthCheckPath")))
            .set_health_check_port(text(props.get("HealthCheckPort")))
            .set_health_check_protocol(
                text(props.get("HealthCheckProtocol")).map(|p| p.as_str().into()),
            )
            .set_health_check_timeout_seconds(int(props.get("HealthCheckTimeoutSeconds")))
            .set_healthy_threshold_count(int(props.get("HealthyThresholdCount")))
            .set_unhealthy_threshold_count(int(props.get("UnhealthyThresholdCount")))
            .set_matcher(matcher(props.get("Matcher")))
            .set_tags(sdk_tags(props))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateTargetGroup {name}")));
        let group = created_or_own(
            created.map(|answer| answer.target_groups().first().cloned()),
            props,
            || {
                ProviderError::other(format!(
                    "{what}: CreateTargetGroup returned no target group"
                ))
            },
            || describe_named(&elb, &what, &name),
        )
        .await?;
        let arn = group.target_group_arn().unwrap_or_default().to_string();
        configured_or_undone(
            configure(&elb, &what, &arn, props).await,
            "target group",
            &arn,
            || async {
                elb.delete_target_group()
                    .target_group_arn(&arn)
                    .send()
                    .await
                    .is_ok()
            },
        )
        .await?;
        Ok(CreateResult {
            physical_id: arn,
            attributes: attributes_of(&group),
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
        let elb = client(ctx).await?;
        if HEALTH.iter().any(|k| changed(before, after, k)) {
            elb.modify_target_group()
                .target_group_arn(arn)
                .set_health_check_enabled(flag(after.get("HealthCheckEnabled")))
                .set_health_check_interval_seconds(int(after.get("HealthCheckIntervalSeconds")))
                .set_health_check_path(text(after.get("HealthCheckPath")))
                .set_health_check_port(text(after.get("HealthCheckPort")))
                .set_health_check_protocol(
                    text(after.get("HealthCheckProtocol")).map(|p| p.as_str().into()),
                )
                .set_health_check_timeout_seconds(int(after.get("HealthCheckTimeoutSeconds")))
                .set_healthy_threshold_count(int(after.get("HealthyThresholdCount")))
                .set_unhealthy_threshold_count(int(after.get("UnhealthyThresholdCount")))
                .set_matcher(matcher(after.get("Matcher")))
                .send()
                .await
                .map_err(failed!(format!("{what}: ModifyTargetGroup {arn}")))?;
        }
        set_attributes(
            &elb,
            &what,
            arn,
            before.get("TargetGroupAttributes"),
            after.get("TargetGroupAttributes"),
        )
        .await?;
        if changed(before, after, "Targets") {
            sync_targets(
                &elb,
                &what,
                arn,
                before.get("Targets"),
                after.get("Targets"),
            )
            .await?;
        }
        update_tags(&elb, &what, arn, before, after).await?;
        let group = describe(&elb, &what, arn)
            .await?
            .ok_or_else(|| does_not_exist(&what, arn, "ElasticLoadBalancingV2"))?;
        Ok(UpdateResult {
            physical_id: arn.to_string(),
            attributes: attributes_of(&group),
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
        let elb = client(ctx).await?;
        let result = retry_while(
            Duration::from_millis(500),
            IN_USE_PATIENCE,
            |err: &ProviderError, pause| {
                let again = err.kind == ErrorKind::CONFLICT;
                if again {
                    tracing::info!("{what}: still in use, trying again in {pause:?}");
                }
                again
            },
            || async {
                elb.delete_target_group()
                    .target_group_arn(arn)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(failed!(format!("{what}: DeleteTargetGroup {arn}")))
            },
        )
        .await;
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl Readable for TargetGroup {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let elb = client(ctx).await?;
        let arn = request.physical_id.as_str();
        let Some(group) = describe(&elb, what, arn).await? else {
            return Ok(None);
        };
        let attributes = elb
            .describe_target_group_attributes()
            .target_group_arn(arn)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DescribeTargetGroupAttributes {arn}"
            )))?;
        let targets = live_targets(&elb, what, arn, request.properties.get("Targets")).await?;
        let tags = read_tags(&elb, what, arn).await?;
        Ok(Some(template_shape(
            &group,
            attributes.attributes(),
            targets,
            tags,
            &request.properties,
        )))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let elb = client(ctx).await?;
        let group = describe(&elb, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "ElasticLoadBalancingV2"))?;
        Ok(attributes_of(&group))
    }

    /// The target group of the name the create took.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(name) = created_name(request) else {
            return Ok(None);
        };
        let elb = client(ctx).await?;
        Ok(describe_named(&elb, what, &name)
            .await?
            .and_then(|g| g.target_group_arn().map(ToString::to_string)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_name_the_arn_and_full_name() {
        let group = Live::builder()
            .target_group_arn(
                "arn:aws:elasticloadbalancing:us-east-1:1:targetgroup/web/73e2d6bc24d8a067",
            )
            .target_group_name("web")
            .load_balancer_arns("lb1")
            .build();
        let attributes = attributes_of(&group);
        assert_eq!(
            attributes["TargetGroupFullName"],
            "targetgroup/web/73e2d6bc24d8a067"
        );
        assert_eq!(attributes["TargetGroupName"], "web");
        assert_eq!(attributes["LoadBalancerArns"], json!(["lb1"]));
    }

    #[test]
    fn targets_compare_in_one_shape_whatever_the_template_wrote() {
        let a = template_targets(Some(
            &json!([{"Id": "i-1", "Port": "80"}, {"Id": "arn:fn"}]),
        ));
        let b = template_targets(Some(&json!([{"Id": "i-1", "Port": 80}])));
        assert_eq!(a[0], b[0]);
        assert_eq!(a[1], json!({"Id": "arn:fn"}));
        assert_eq!(target(&a[0]).port(), Some(80));
    }

    #[test]
    fn the_live_group_reads_back_in_template_shape() {
        let group = Live::builder()
            .target_group_name("fn")
            .target_type("lambda".into())
            .health_check_enabled(false)
            .matcher(Matcher::builder().http_code("200").build())
            .build();
        let attributes = [TargetGroupAttribute::builder()
            .key("lambda.multi_value_headers.enabled")
            .value("false")
            .build()];
        let shape = template_shape(
            &group,
            &attributes,
            vec![json!({"Id": "arn:fn"})],
            None,
            &Map::new(),
        );
        assert_eq!(
            Value::Object(shape),
            json!({
                "Name": "fn",
                "TargetType": "lambda",
                "HealthCheckEnabled": false,
                "Matcher": {"HttpCode": "200"},
                "Targets": [{"Id": "arn:fn"}],
                "TargetGroupAttributes": [{"Key": "lambda.multi_value_headers.enabled", "Value": "false"}],
            })
        );
        assert_eq!(TargetGroup.schema().find_scope, ["Name"]);
    }
}
