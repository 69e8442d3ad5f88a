//! A rule target's `EcsParameters`: the ECS task EventBridge runs on the cluster the target's
//! `Arn` names (CDK's `ScheduledFargateTask` and `targets.EcsTask`), in both directions.

use aws_sdk_eventbridge::error::BuildError;
use aws_sdk_eventbridge::types::{
    AssignPublicIp, AwsVpcConfiguration, CapacityProviderStrategyItem, EcsParameters, LaunchType,
    NetworkConfiguration, PlacementConstraint, PlacementConstraintType, PlacementStrategy,
    PlacementStrategyType, PropagateTags, Tag,
};
use cdkd_aws_common::{flag, int, put, string, strings};
use serde_json::{json, Map, Value};

/// The objects of a template list (`CapacityProviderStrategy`, `TagList`, ...).
fn objects<'a>(block: &'a Value, name: &str) -> Vec<&'a Value> {
    block
        .get(name)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter(|v| v.is_object()).collect())
        .unwrap_or_default()
}

/// The template's `EcsParameters` block as EventBridge takes it; the error names the part of
/// the block that is missing a required setting.
pub(crate) fn ecs_parameters(p: &Value) -> Result<EcsParameters, (String, BuildError)> {
    let at = |path: &'static str| move |e: BuildError| (format!("EcsParameters{path}"), e);
    let network = p
        .get("NetworkConfiguration")
        .and_then(|n| n.get("AwsVpcConfiguration"))
        .filter(|v| v.is_object())
        .map(|vpc| {
            AwsVpcConfiguration::builder()
                .set_subnets(strings(vpc.get("Subnets")))
                .set_security_groups(strings(vpc.get("SecurityGroups")))
                .set_assign_public_ip(
                    string(vpc.get("AssignPublicIp"))
                        .as_deref()
                        .map(AssignPublicIp::from),
                )
                .build()
                .map_err(at(".NetworkConfiguration.AwsVpcConfiguration"))
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
                .set_capacity_provider(string(item.get("CapacityProvider")))
                .set_weight(int(item.get("Weight")))
                .set_base(int(item.get("Base")))
                .build()
                .map_err(at(".CapacityProviderStrategy"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let constraints: Vec<PlacementConstraint> = objects(p, "PlacementConstraints")
        .into_iter()
        .map(|item| {
            PlacementConstraint::builder()
                .set_type(
                    string(item.get("Type"))
                        .as_deref()
                        .map(PlacementConstraintType::from),
                )
                .set_expression(string(item.get("Expression")))
                .build()
        })
        .collect();
    let placement: Vec<PlacementStrategy> = objects(p, "PlacementStrategies")
        .into_iter()
        .map(|item| {
            PlacementStrategy::builder()
                .set_type(
                    string(item.get("Type"))
                        .as_deref()
                        .map(PlacementStrategyType::from),
                )
                .set_field(string(item.get("Field")))
                .build()
        })
        .collect();
    let tags = objects(p, "TagList")
        .into_iter()
        .map(|tag| {
            Tag::builder()
                .set_key(string(tag.get("Key")))
                .set_value(string(tag.get("Value")))
                .build()
                .map_err(at(".TagList"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    EcsParameters::builder()
        .set_task_definition_arn(string(p.get("TaskDefinitionArn")))
        .set_task_count(int(p.get("TaskCount")))
        .set_launch_type(string(p.get("LaunchType")).as_deref().map(LaunchType::from))
        .set_network_configuration(network)
        .set_platform_version(string(p.get("PlatformVersion")))
        .set_group(string(p.get("Group")))
        .set_capacity_provider_strategy(Some(strategy).filter(|s| !s.is_empty()))
        .set_enable_ecs_managed_tags(flag(p.get("EnableECSManagedTags")))
        .set_enable_execute_command(flag(p.get("EnableExecuteCommand")))
        .set_placement_constraints(Some(constraints).filter(|c| !c.is_empty()))
        .set_placement_strategy(Some(placement).filter(|s| !s.is_empty()))
        .set_propagate_tags(
            string(p.get("PropagateTags"))
                .as_deref()
                .map(PropagateTags::from),
        )
        .set_reference_id(string(p.get("ReferenceId")))
        .set_tags(Some(tags).filter(|t| !t.is_empty()))
        .build()
        .map_err(at(""))
}

/// A live `EcsParameters` in template shape.
pub(crate) fn ecs_shape(p: &EcsParameters) -> Value {
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
            json!({"AwsVpcConfiguration": config}),
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
            // 0 is the API's "not set" for both.
            put(
                &mut entry,
                "Weight",
                (item.weight() != 0).then(|| json!(item.weight())),
            );
            put(
                &mut entry,
                "Base",
                (item.base() != 0).then(|| json!(item.base())),
            );
            Value::Object(entry)
        })
        .collect();
    if !strategy.is_empty() {
        block.insert("CapacityProviderStrategy".into(), Value::Array(strategy));
    }
    // EventBridge answers `false` for a flag never set: only `true` is the template's.
    put(
        &mut block,
        "EnableECSManagedTags",
        p.enable_ecs_managed_tags().then_some(json!(true)),
    );
    put(
        &mut block,
        "EnableExecuteCommand",
        p.enable_execute_command().then_some(json!(true)),
    );
    let constraints: Vec<Value> = p
        .placement_constraints()
        .iter()
        .map(|c| {
            let mut entry = Map::new();
            put(&mut entry, "Type", c.r#type().map(|t| json!(t.as_str())));
            put(&mut entry, "Expression", c.expression().map(|v| json!(v)));
            Value::Object(entry)
        })
        .collect();
    if !constraints.is_empty() {
        block.insert("PlacementConstraints".into(), Value::Array(constraints));
    }
    let placement: Vec<Value> = p
        .placement_strategy()
        .iter()
        .map(|s| {
            let mut entry = Map::new();
            put(&mut entry, "Type", s.r#type().map(|t| json!(t.as_str())));
            put(&mut entry, "Field", s.field().map(|v| json!(v)));
            Value::Object(entry)
        })
        .collect();
    if !placement.is_empty() {
        block.insert("PlacementStrategies".into(), Value::Array(placement));
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
    let tags: Vec<Value> = p
        .tags()
        .iter()
        .map(|t| json!({"Key": t.key(), "Value": t.value()}))
        .collect();
    if !tags.is_empty() {
        block.insert("TagList".into(), Value::Array(tags));
    }
    Value::Object(block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheduled_fargate_task_maps_and_reads_back_as_written() {
        let written = json!({
            "TaskDefinitionArn": "arn:aws:ecs:us-east-1:123456789012:task-definition/td:3",
            "TaskCount": 1,
            "LaunchType": "FARGATE",
            "PlatformVersion": "1.4.0",
            "NetworkConfiguration": {"AwsVpcConfiguration": {
                "Subnets": ["subnet-a"], "SecurityGroups": ["sg-a"], "AssignPublicIp": "DISABLED"}},
            "CapacityProviderStrategy": [{"CapacityProvider": "FARGATE", "Weight": 1}],
            "PlacementConstraints": [{"Type": "distinctInstance"}],
            "PlacementStrategies": [{"Type": "binpack", "Field": "memory"}],
            "EnableECSManagedTags": true,
            "PropagateTags": "TASK_DEFINITION",
            "TagList": [{"Key": "team", "Value": "data"}],
        });
        let built = ecs_parameters(&written).expect("maps");
        assert_eq!(built.launch_type(), Some(&LaunchType::Fargate));
        assert_eq!(built.tags()[0].key(), "team");
        assert_eq!(ecs_shape(&built), written);
        let (path, _) = ecs_parameters(&json!({
            "TaskDefinitionArn": "td",
            "NetworkConfiguration": {"AwsVpcConfiguration": {"AssignPublicIp": "ENABLED"}},
        }))
        .expect_err("no subnets");
        assert_eq!(
            path,
            "EcsParameters.NetworkConfiguration.AwsVpcConfiguration"
        );
        let (path, _) = ecs_parameters(&json!({"LaunchType": "FARGATE"})).expect_err("no task");
        assert_eq!(path, "EcsParameters");
    }
}
