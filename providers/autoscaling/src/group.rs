//! `AWS::AutoScaling::AutoScalingGroup`: physical id (and `Ref`) is the group's name, chosen
//! before the create; no attributes. Its delete is CloudFormation's: forced (the instances are
//! terminated with it) and waited out until Auto Scaling no longer describes the group, so the
//! launch template, subnets and target groups deleted next are free of it.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_autoscaling::types::{AutoScalingGroup, LaunchTemplateSpecification, Tag};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, found, given_or_generated_name, int, poll, put,
    string, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::mixed_instances::{mixed_instances, mixed_instances_shape, mixed_instances_update};
use crate::notifications;
use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::AutoScaling::AutoScalingGroup";

/// The longest group name Auto Scaling takes.
pub(crate) const MAX_NAME: usize = 255;

/// How long a delete waits for the group (and its instances) to be gone without a host timeout.
const DELETE_PATIENCE: Duration = Duration::from_secs(600);

/// The `AWS::AutoScaling::AutoScalingGroup` provider.
#[derive(Default)]
pub struct Group;

/// Whether `key`'s value differs between two templates (a missing key and `null` alike).
fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    before.get(key).filter(|v| !v.is_null()) != after.get(key).filter(|v| !v.is_null())
}

/// The template's `LaunchTemplate` (`LaunchTemplateId` or `LaunchTemplateName`, `Version`).
/// Auto Scaling refuses both at once, and a read (a drift revert's properties) answers both:
/// the id wins.
fn launch_template(value: Option<&Value>) -> Option<LaunchTemplateSpecification> {
    let value = value.filter(|v| v.is_object())?;
    let id = string(value.get("LaunchTemplateId"));
    let name = string(value.get("LaunchTemplateName")).filter(|_| id.is_none());
    Some(
        LaunchTemplateSpecification::builder()
            .set_launch_template_id(id)
            .set_launch_template_name(name)
            .set_version(text(value.get("Version")))
            .build(),
    )
}

/// `VPCZoneIdentifier` (a list of subnet ids) as Auto Scaling's comma-separated text.
fn zone_identifier(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        other => strings(Some(other)).map(|s| s.join(",")),
    }
}

/// Whether Auto Scaling refused a create or update as it does while IAM has not propagated a
/// role or instance profile the group uses: a service-linked role of the same run (`ARN
/// specified for Service-Linked Role does not exist.`, or `AccessDenied` naming it while its
/// permissions spread), or the launch template's instance profile (`Invalid IAM Instance
/// Profile name`, which Terraform's `aws_autoscaling_group` retries on).
fn role_not_propagated(err: &ProviderError) -> bool {
    let code = err.aws_code().unwrap_or_default();
    let message = err.message.to_lowercase();
    let names_a_role = message.contains("service-linked role")
        || message.contains("invalid iam instance profile")
        || message.contains("invalid iam role");
    matches!(code, "ValidationError" | "AccessDenied") && names_a_role
}

/// What a refused group waits for, for the message when IAM never propagates it.
fn principals_used(properties: &Map<String, Value>) -> String {
    match string(properties.get("ServiceLinkedRoleARN")) {
        Some(role) => {
            format!("the service-linked role {role} (or the launch template's instance profile)")
        }
        None => "the launch template's instance profile".into(),
    }
}

/// The template's tags (`Key`, `Value`, `PropagateAtLaunch`) by key.
fn group_tags(properties: &Map<String, Value>) -> BTreeMap<String, (String, bool)> {
    properties
        .get("Tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some((
                string(t.get("Key"))?,
                (
                    text(t.get("Value")).unwrap_or_default(),
                    flag(t.get("PropagateAtLaunch")).unwrap_or(false),
                ),
            ))
        })
        .collect()
}

/// Tags of group `name` as Auto Scaling's.
fn sdk_tags(name: &str, tags: &BTreeMap<String, (String, bool)>) -> Vec<Tag> {
    tags.iter()
        .map(|(key, (value, propagate))| {
            Tag::builder()
                .resource_id(name)
                .resource_type("auto-scaling-group")
                .key(key)
                .value(value)
                .propagate_at_launch(*propagate)
                .build()
        })
        .collect()
}

/// `MetricsCollection` as (granularity, metrics) pairs; an empty metric list means all.
fn metrics_collection(properties: &Map<String, Value>) -> Vec<(String, Vec<String>)> {
    properties
        .get("MetricsCollection")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| {
            Some((
                string(m.get("Granularity"))?,
                strings(m.get("Metrics")).unwrap_or_default(),
            ))
        })
        .collect()
}

/// A size property (`MinSize`, `MaxSize`), required.
fn size(properties: &Map<String, Value>, key: &str, what: &str) -> Result<i32, ProviderError> {
    int(properties.get(key)).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: {key} is required and must be a number (the template gives {})",
            properties.get(key).map_or("none".into(), Value::to_string)
        ))
    })
}

/// The group named `name`; `None` when it does not exist (or is being deleted).
async fn describe(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
) -> Result<Option<AutoScalingGroup>, ProviderError> {
    let answer = found(
        asg.describe_auto_scaling_groups()
            .auto_scaling_group_names(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeAutoScalingGroups {name}"))),
    )?;
    Ok(answer.and_then(|a| a.auto_scaling_groups().first().cloned()))
}

/// The live group in template shape (sizes as the strings CloudFormation templates carry).
fn template_shape(group: &AutoScalingGroup) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "AutoScalingGroupName",
        group.auto_scaling_group_name().map(Value::from),
    );
    put(
        &mut props,
        "MinSize",
        group.min_size().map(|n| json!(n.to_string())),
    );
    put(
        &mut props,
        "MaxSize",
        group.max_size().map(|n| json!(n.to_string())),
    );
    put(
        &mut props,
        "DesiredCapacity",
        group.desired_capacity().map(|n| json!(n.to_string())),
    );
    put(
        &mut props,
        "LaunchConfigurationName",
        group.launch_configuration_name().map(Value::from),
    );
    put(
        &mut props,
        "LaunchTemplate",
        group.launch_template().map(launch_template_shape),
    );
    let subnets: Vec<Value> = group
        .vpc_zone_identifier()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Value::from)
        .collect();
    if !subnets.is_empty() {
        props.insert("VPCZoneIdentifier".into(), Value::Array(subnets));
    }
    let list = |items: &[String]| {
        (!items.is_empty()).then(|| Value::Array(items.iter().map(|s| json!(s)).collect()))
    };
    put(
        &mut props,
        "AvailabilityZones",
        list(group.availability_zones()),
    );
    put(
        &mut props,
        "TargetGroupARNs",
        list(group.target_group_arns()),
    );
    put(
        &mut props,
        "LoadBalancerNames",
        list(group.load_balancer_names()),
    );
    put(
        &mut props,
        "TerminationPolicies",
        list(group.termination_policies()),
    );
    put(
        &mut props,
        "HealthCheckType",
        group.health_check_type().map(Value::from),
    );
    put(
        &mut props,
        "HealthCheckGracePeriod",
        group.health_check_grace_period().map(Value::from),
    );
    put(
        &mut props,
        "Cooldown",
        group.default_cooldown().map(|n| json!(n.to_string())),
    );
    put(
        &mut props,
        "NewInstancesProtectedFromScaleIn",
        group
            .new_instances_protected_from_scale_in()
            .map(Value::from),
    );
    put(
        &mut props,
        "CapacityRebalance",
        group.capacity_rebalance().map(Value::from),
    );
    put(
        &mut props,
        "MaxInstanceLifetime",
        group.max_instance_lifetime().map(Value::from),
    );
    put(
        &mut props,
        "DefaultInstanceWarmup",
        group.default_instance_warmup().map(Value::from),
    );
    put(
        &mut props,
        "PlacementGroup",
        group.placement_group().map(Value::from),
    );
    put(&mut props, "Context", group.context().map(Value::from));
    put(
        &mut props,
        "DesiredCapacityType",
        group.desired_capacity_type().map(Value::from),
    );
    put(
        &mut props,
        "ServiceLinkedRoleARN",
        group.service_linked_role_arn().map(Value::from),
    );
    put(
        &mut props,
        "MetricsCollection",
        live_metrics_collection(group),
    );
    put(
        &mut props,
        "MixedInstancesPolicy",
        group.mixed_instances_policy().map(mixed_instances_shape),
    );
    // `aws:` tags are AWS's own (CloudFormation's stack tags), never the template's.
    let tags: Vec<Value> = group
        .tags()
        .iter()
        .filter(|t| !t.key().unwrap_or_default().starts_with("aws:"))
        .map(|t| {
            json!({
                "Key": t.key(),
                "Value": t.value().unwrap_or_default(),
                "PropagateAtLaunch": t.propagate_at_launch().unwrap_or(false),
            })
        })
        .collect();
    if !tags.is_empty() {
        props.insert("Tags".into(), Value::Array(tags));
    }
    props
}

/// The launch template in template shape.
fn launch_template_shape(t: &aws_sdk_autoscaling::types::LaunchTemplateSpecification) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "LaunchTemplateId",
        t.launch_template_id().map(Value::from),
    );
    put(
        &mut shape,
        "LaunchTemplateName",
        t.launch_template_name().map(Value::from),
    );
    put(&mut shape, "Version", t.version().map(Value::from));
    Value::Object(shape)
}

/// `MetricsCollection`: the enabled metrics by granularity (none: absent).
fn live_metrics_collection(group: &AutoScalingGroup) -> Option<Value> {
    let mut by_granularity: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for metric in group.enabled_metrics() {
        if let (Some(granularity), Some(name)) = (metric.granularity(), metric.metric()) {
            by_granularity
                .entry(granularity.to_string())
                .or_default()
                .push(name.to_string());
        }
    }
    (!by_granularity.is_empty()).then(|| {
        Value::Array(
            by_granularity
                .into_iter()
                .map(|(g, mut m)| {
                    m.sort();
                    json!({"Granularity": g, "Metrics": m})
                })
                .collect(),
        )
    })
}

/// Turns metrics collection from `before`'s to `after`'s.
async fn apply_metrics(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
    before: &[(String, Vec<String>)],
    after: &[(String, Vec<String>)],
) -> Result<(), ProviderError> {
    if before == after {
        return Ok(());
    }
    if !before.is_empty() {
        // Without a metric list Auto Scaling disables every metric: the new set follows.
        asg.disable_metrics_collection()
            .auto_scaling_group_name(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: DisableMetricsCollection {name}")))?;
    }
    for (granularity, metrics) in after {
        asg.enable_metrics_collection()
            .auto_scaling_group_name(name)
            .granularity(granularity)
            .set_metrics(Some(metrics.clone()).filter(|m| !m.is_empty()))
            .send()
            .await
            .map_err(failed!(format!("{what}: EnableMetricsCollection {name}")))?;
    }
    Ok(())
}

/// What is in `after` but not `before`, and what is in `before` but not `after`.
fn list_changes(
    before: Option<Vec<String>>,
    after: Option<Vec<String>>,
) -> (Vec<String>, Vec<String>) {
    let (before, after) = (before.unwrap_or_default(), after.unwrap_or_default());
    (
        after
            .iter()
            .filter(|a| !before.contains(a))
            .cloned()
            .collect(),
        before.into_iter().filter(|b| !after.contains(b)).collect(),
    )
}

#[async_trait]
impl ResourceProvider for Group {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "AutoScalingGroupName",
                "MinSize",
                "MaxSize",
                "DesiredCapacity",
                "LaunchTemplate",
                "LaunchConfigurationName",
                "VPCZoneIdentifier",
                "AvailabilityZones",
                "TargetGroupARNs",
                "LoadBalancerNames",
                "HealthCheckType",
                "HealthCheckGracePeriod",
                "Cooldown",
                "TerminationPolicies",
                "NewInstancesProtectedFromScaleIn",
                "CapacityRebalance",
                "MaxInstanceLifetime",
                "DefaultInstanceWarmup",
                "PlacementGroup",
                "Context",
                "DesiredCapacityType",
                "ServiceLinkedRoleARN",
                "MetricsCollection",
                "Tags",
                "MixedInstancesPolicy",
                "NotificationConfigurations",
                "NotificationConfiguration",
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
        let props = &request.properties;
        let name = given_or_generated_name(&request, "AutoScalingGroupName", MAX_NAME, false);
        let asg = client(ctx).await?;
        let (min, max) = (
            size(props, "MinSize", &what)?,
            size(props, "MaxSize", &what)?,
        );
        let create = || async {
            asg.create_auto_scaling_group()
                .auto_scaling_group_name(&name)
                .min_size(min)
                .max_size(max)
                .set_desired_capacity(int(props.get("DesiredCapacity")))
                .set_launch_template(launch_template(props.get("LaunchTemplate")))
                .set_launch_configuration_name(string(props.get("LaunchConfigurationName")))
                .set_vpc_zone_identifier(zone_identifier(props.get("VPCZoneIdentifier")))
                .set_availability_zones(strings(props.get("AvailabilityZones")))
                .set_target_group_arns(strings(props.get("TargetGroupARNs")))
                .set_load_balancer_names(strings(props.get("LoadBalancerNames")))
                .set_health_check_type(string(props.get("HealthCheckType")))
                .set_health_check_grace_period(int(props.get("HealthCheckGracePeriod")))
                .set_default_cooldown(int(props.get("Cooldown")))
                .set_termination_policies(strings(props.get("TerminationPolicies")))
                .set_new_instances_protected_from_scale_in(flag(
                    props.get("NewInstancesProtectedFromScaleIn"),
                ))
                .set_capacity_rebalance(flag(props.get("CapacityRebalance")))
                .set_max_instance_lifetime(int(props.get("MaxInstanceLifetime")))
                .set_default_instance_warmup(int(props.get("DefaultInstanceWarmup")))
                .set_placement_group(string(props.get("PlacementGroup")))
                .set_context(string(props.get("Context")))
                .set_desired_capacity_type(string(props.get("DesiredCapacityType")))
                .set_service_linked_role_arn(string(props.get("ServiceLinkedRoleARN")))
                .set_mixed_instances_policy(mixed_instances(props.get("MixedInstancesPolicy")))
                .set_tags(Some(sdk_tags(&name, &group_tags(props))).filter(|t| !t.is_empty()))
                .send()
                .await
                .map_err(failed!(format!("{what}: CreateAutoScalingGroup {name}")))
        };
        cdkd_aws_common::while_iam_propagates(&principals_used(props), role_not_propagated, create)
            .await?;
        // The group exists from here: a refused metrics or notification setting must not leave
        // it unrecorded.
        let configured = async {
            apply_metrics(&asg, &what, &name, &[], &metrics_collection(props)).await?;
            notifications::apply(
                &asg,
                &what,
                &name,
                &notifications::Notifications::new(),
                &notifications::wanted(props),
            )
            .await
        };
        if let Err(err) = configured.await {
            let undone = asg
                .delete_auto_scaling_group()
                .auto_scaling_group_name(&name)
                .force_delete(true)
                .send()
                .await
                .is_ok();
            let fate = if undone {
                "deleted again"
            } else {
                "NOT deleted: delete it by hand (aws autoscaling delete-auto-scaling-group --force-delete)"
            };
            return Err(ProviderError::new(
                err.kind,
                format!(
                    "{}; the group {name} it had created was {fate}",
                    err.message
                ),
            ));
        }
        Ok(CreateResult {
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
        let asg = client(ctx).await?;
        const SETTINGS: &[&str] = &[
            "MinSize",
            "MaxSize",
            "DesiredCapacity",
            "LaunchTemplate",
            "LaunchConfigurationName",
            "VPCZoneIdentifier",
            "AvailabilityZones",
            "HealthCheckType",
            "HealthCheckGracePeriod",
            "Cooldown",
            "TerminationPolicies",
            "NewInstancesProtectedFromScaleIn",
            "CapacityRebalance",
            "MaxInstanceLifetime",
            "DefaultInstanceWarmup",
            "PlacementGroup",
            "Context",
            "DesiredCapacityType",
            "ServiceLinkedRoleARN",
            "MixedInstancesPolicy",
        ];
        if SETTINGS.iter().any(|k| changed(before, after, k)) {
            // A desired capacity the template dropped is left where scaling put it, as
            // CloudFormation leaves it.
            let (min, max) = (
                size(after, "MinSize", &what)?,
                size(after, "MaxSize", &what)?,
            );
            let update = || async {
                asg.update_auto_scaling_group()
                    .auto_scaling_group_name(name)
                    .min_size(min)
                    .max_size(max)
                    .set_desired_capacity(
                        int(after.get("DesiredCapacity"))
                            .filter(|_| changed(before, after, "DesiredCapacity")),
                    )
                    .set_launch_template(launch_template(after.get("LaunchTemplate")))
                    .set_launch_configuration_name(string(after.get("LaunchConfigurationName")))
                    .set_vpc_zone_identifier(zone_identifier(after.get("VPCZoneIdentifier")))
                    .set_availability_zones(strings(after.get("AvailabilityZones")))
                    .set_health_check_type(string(after.get("HealthCheckType")))
                    .set_health_check_grace_period(int(after.get("HealthCheckGracePeriod")))
                    .set_default_cooldown(int(after.get("Cooldown")))
                    .set_termination_policies(strings(after.get("TerminationPolicies")))
                    .set_new_instances_protected_from_scale_in(flag(
                        after.get("NewInstancesProtectedFromScaleIn"),
                    ))
                    .set_capacity_rebalance(flag(after.get("CapacityRebalance")))
                    .set_max_instance_lifetime(int(after.get("MaxInstanceLifetime")))
                    .set_default_instance_warmup(int(after.get("DefaultInstanceWarmup")))
                    .set_placement_group(string(after.get("PlacementGroup")))
                    .set_context(string(after.get("Context")))
                    .set_desired_capacity_type(string(after.get("DesiredCapacityType")))
                    .set_service_linked_role_arn(string(after.get("ServiceLinkedRoleARN")))
                    .set_mixed_instances_policy(mixed_instances_update(
                        before.get("MixedInstancesPolicy"),
                        after.get("MixedInstancesPolicy"),
                    ))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: UpdateAutoScalingGroup {name}")))
            };
            cdkd_aws_common::while_iam_propagates(
                &principals_used(after),
                role_not_propagated,
                update,
            )
            .await?;
        }
        reattach(&asg, &what, name, before, after).await?;
        apply_metrics(
            &asg,
            &what,
            name,
            &metrics_collection(before),
            &metrics_collection(after),
        )
        .await?;
        retag(&asg, &what, name, before, after).await?;
        notifications::apply(
            &asg,
            &what,
            name,
            &notifications::wanted(before),
            &notifications::wanted(after),
        )
        .await?;
        Ok(UpdateResult {
            physical_id: name.to_string(),
            ..Default::default()
        })
    }

    /// CloudFormation deletes a group with its instances and waits until they are terminated
    /// and the group is gone; so does this (ForceDelete, then until it is no longer described).
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let asg = client(ctx).await?;
        let deleted = deleted_unless_failed(
            asg.delete_auto_scaling_group()
                .auto_scaling_group_name(name)
                .force_delete(true)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteAutoScalingGroup {name}"))),
        )?;
        let patience = ctx.resource_timeout().unwrap_or(DELETE_PATIENCE);
        let gone = poll(patience, || {
            let (asg, what) = (&asg, &what);
            async move { Ok(describe(asg, what, name).await?.is_none().then_some(())) }
        })
        .await?;
        if gone.is_none() {
            return Err(ProviderError::new(
                ErrorKind::TIMEOUT,
                format!(
                    "{what}: the group {name} is still described {}s after DeleteAutoScalingGroup (its instances terminating); run the destroy again once it is gone",
                    patience.as_secs()
                ),
            ));
        }
        Ok(deleted)
    }
}

#[async_trait]
impl Readable for Group {
    const CREATED_NAME: Option<(Option<&'static str>, usize)> =
        Some((Some("AutoScalingGroupName"), MAX_NAME));

    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let asg = client(ctx).await?;
        let group = describe(&asg, what, &request.physical_id).await?;
        // A group being deleted is on its way out: not one cdkd would adopt or compare.
        let Some(group) = group.filter(|g| g.status().is_none()) else {
            return Ok(None);
        };
        let mut props = template_shape(&group);
        let live = notifications::live(&asg, what, &request.physical_id).await?;
        if let Some((name, value)) = notifications::shape(&live, &request.properties) {
            props.insert(name, value);
        }
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let asg = client(ctx).await?;
        describe(&asg, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "AutoScaling"))?;
        Ok(Map::new())
    }
}

/// The target groups and classic load balancers the template adds to or drops from group `name`.
async fn reattach(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (attach, detach) = list_changes(
        strings(before.get("TargetGroupARNs")),
        strings(after.get("TargetGroupARNs")),
    );
    if !attach.is_empty() {
        asg.attach_load_balancer_target_groups()
            .auto_scaling_group_name(name)
            .set_target_group_arns(Some(attach))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: AttachLoadBalancerTargetGroups {name}"
            )))?;
    }
    if !detach.is_empty() {
        asg.detach_load_balancer_target_groups()
            .auto_scaling_group_name(name)
            .set_target_group_arns(Some(detach))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DetachLoadBalancerTargetGroups {name}"
            )))?;
    }
    let (attach, detach) = list_changes(
        strings(before.get("LoadBalancerNames")),
        strings(after.get("LoadBalancerNames")),
    );
    if !attach.is_empty() {
        asg.attach_load_balancers()
            .auto_scaling_group_name(name)
            .set_load_balancer_names(Some(attach))
            .send()
            .await
            .map_err(failed!(format!("{what}: AttachLoadBalancers {name}")))?;
    }
    if !detach.is_empty() {
        asg.detach_load_balancers()
            .auto_scaling_group_name(name)
            .set_load_balancer_names(Some(detach))
            .send()
            .await
            .map_err(failed!(format!("{what}: DetachLoadBalancers {name}")))?;
    }
    Ok(())
}

/// Group `name`'s tags as the template has them now: dropped keys deleted, new or changed set.
async fn retag(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (old_tags, new_tags) = (group_tags(before), group_tags(after));
    let removed: BTreeMap<String, (String, bool)> = old_tags
        .iter()
        .filter(|(k, _)| !new_tags.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let set: BTreeMap<String, (String, bool)> = new_tags
        .iter()
        .filter(|(k, v)| old_tags.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !removed.is_empty() {
        asg.delete_tags()
            .set_tags(Some(sdk_tags(name, &removed)))
            .send()
            .await
            .map_err(failed!(format!("{what}: DeleteTags {name}")))?;
    }
    if !set.is_empty() {
        asg.create_or_update_tags()
            .set_tags(Some(sdk_tags(name, &set)))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateOrUpdateTags {name}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_autoscaling::types::{EnabledMetric, TagDescription};

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn refusals_while_a_role_propagates_are_told_from_other_validation_errors() {
        let refused = |code: &str, message: &str| {
            ProviderError::validation(format!(
                "AWS::AutoScaling::AutoScalingGroup G: CreateAutoScalingGroup g: {message}"
            ))
            .with_aws_code(code)
        };
        assert!(role_not_propagated(&refused(
            "ValidationError",
            "ARN specified for Service-Linked Role does not exist."
        )));
        assert!(role_not_propagated(&refused(
            "ValidationError",
            "You must use a valid fully-formed launch template. Value (p) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name"
        )));
        assert!(role_not_propagated(&refused(
            "AccessDenied",
            "The service-linked role arn:aws:iam::1:role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling_x cannot be used"
        )));
        assert!(!role_not_propagated(&refused(
            "ValidationError",
            "Max bound, 1, must be greater than or equal to min bound, 2"
        )));
        assert!(!role_not_propagated(&refused(
            "AccessDenied",
            "User is not authorized to perform: autoscaling:CreateAutoScalingGroup"
        )));
        assert!(!role_not_propagated(&refused(
            "AlreadyExists",
            "AutoScalingGroup by this name already exists (service-linked role)"
        )));
        assert!(
            principals_used(&props(json!({"ServiceLinkedRoleARN": "arn:slr"})))
                .contains("the service-linked role arn:slr")
        );
    }

    #[test]
    fn template_settings_convert_to_auto_scaling() {
        let template = props(json!({
            "MinSize": "1", "MaxSize": 3,
            "LaunchTemplate": {"LaunchTemplateId": "lt-1", "Version": 2},
            "VPCZoneIdentifier": ["subnet-a", "subnet-b"],
            "Tags": [{"Key": "team", "Value": "web", "PropagateAtLaunch": "true"}, {"Key": "x", "Value": 1, "PropagateAtLaunch": false}],
            "MetricsCollection": [{"Granularity": "1Minute"}],
        }));
        assert_eq!(size(&template, "MinSize", "w").unwrap(), 1);
        assert_eq!(size(&template, "MaxSize", "w").unwrap(), 3);
        assert!(size(&template, "DesiredCapacity", "w")
            .unwrap_err()
            .message
            .contains("DesiredCapacity is required"));
        let spec = launch_template(template.get("LaunchTemplate")).unwrap();
        assert_eq!(spec.launch_template_id(), Some("lt-1"));
        assert_eq!(spec.version(), Some("2"));
        let both = json!({"LaunchTemplateId": "lt-1", "LaunchTemplateName": "web", "Version": "1"});
        let spec = launch_template(Some(&both)).unwrap();
        assert_eq!(
            (spec.launch_template_id(), spec.launch_template_name()),
            (Some("lt-1"), None)
        );
        let by_name = launch_template(Some(&json!({"LaunchTemplateName": "web"}))).unwrap();
        assert_eq!(by_name.launch_template_name(), Some("web"));
        assert_eq!(
            zone_identifier(template.get("VPCZoneIdentifier")).unwrap(),
            "subnet-a,subnet-b"
        );
        let tags = sdk_tags("g", &group_tags(&template));
        assert_eq!(tags.len(), 2);
        assert_eq!(tags[0].key(), Some("team"));
        assert_eq!(tags[0].propagate_at_launch(), Some(true));
        assert_eq!(tags[1].value(), Some("1"));
        assert_eq!(tags[1].resource_id(), Some("g"));
        assert_eq!(
            metrics_collection(&template),
            vec![("1Minute".to_string(), vec![])]
        );
    }

    #[test]
    fn the_live_group_reads_back_in_template_shape() {
        let group = AutoScalingGroup::builder()
            .auto_scaling_group_name("web")
            .min_size(1)
            .max_size(3)
            .desired_capacity(2)
            .default_cooldown(300)
            .launch_template(
                LaunchTemplateSpecification::builder()
                    .launch_template_id("lt-1")
                    .version("2")
                    .build(),
            )
            .vpc_zone_identifier("subnet-a,subnet-b")
            .target_group_arns("arn:tg")
            .health_check_type("EC2")
            .enabled_metrics(
                EnabledMetric::builder()
                    .metric("GroupMaxSize")
                    .granularity("1Minute")
                    .build(),
            )
            .tags(
                TagDescription::builder()
                    .key("team")
                    .value("web")
                    .propagate_at_launch(true)
                    .build(),
            )
            .tags(
                TagDescription::builder()
                    .key("aws:cloudformation:stack-name")
                    .value("s")
                    .build(),
            )
            .build();
        assert_eq!(
            Value::Object(template_shape(&group)),
            json!({
                "AutoScalingGroupName": "web",
                "MinSize": "1", "MaxSize": "3", "DesiredCapacity": "2", "Cooldown": "300",
                "LaunchTemplate": {"LaunchTemplateId": "lt-1", "Version": "2"},
                "VPCZoneIdentifier": ["subnet-a", "subnet-b"],
                "TargetGroupARNs": ["arn:tg"],
                "HealthCheckType": "EC2",
                "MetricsCollection": [{"Granularity": "1Minute", "Metrics": ["GroupMaxSize"]}],
                "Tags": [{"Key": "team", "Value": "web", "PropagateAtLaunch": true}],
            })
        );
    }

    #[test]
    fn list_changes_say_what_to_attach_and_detach() {
        let (attach, detach) = list_changes(
            Some(vec!["a".into(), "b".into()]),
            Some(vec!["b".into(), "c".into()]),
        );
        assert_eq!(
            (attach, detach),
            (vec!["c".to_string()], vec!["a".to_string()])
        );
    }

    #[test]
    fn a_generated_name_is_fixed_by_the_token() {
        let request = CreateRequest {
            logical_id: "AsgASGD1D7B4E2".into(),
            stack_name: "Shop".into(),
            client_token: "t1".into(),
            properties: Map::new(),
        };
        let first = given_or_generated_name(&request, "AutoScalingGroupName", MAX_NAME, false);
        let again = given_or_generated_name(&request, "AutoScalingGroupName", MAX_NAME, false);
        assert!(first.starts_with("Shop-AsgASGD1D7B4E2-"), "{first}");
        assert_eq!(first, again);
    }
}
