//! cdkd's ECS provider plugin: `AWS::ECS::Cluster`, `ClusterCapacityProviderAssociations`,
//! `TaskDefinition` and `Service` through direct ECS calls. Physical ids are CloudFormation's:
//! a cluster's name, a task definition's ARN (a new revision for any change but its tags, as
//! CloudFormation replaces it), a service's ARN. A service's create waits until it is ACTIVE
//! (what a dependent needs), not for steady state; its delete scales it to 0, deletes it and
//! waits until it is INACTIVE (its tasks drained), as CloudFormation does, so the cluster's
//! delete that follows is not refused.

mod capacity_associations;
mod cluster;
mod raw;
mod service;
mod task_definition;

cdkd_provider_api::export_plugin!(description: "AWS::ECS Cluster, ClusterCapacityProviderAssociations, TaskDefinition and Service through the ECS API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<cluster::Cluster>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<capacity_associations::CapacityAssociations>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<task_definition::TaskDefinition>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<service::Service>);

use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{Map, Value};

/// An ECS client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_ecs::Client, ProviderError> {
    let config = aws_sdk_ecs::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-ecs"))
        .build();
    Ok(aws_sdk_ecs::Client::from_conf(config))
}

/// ECS's own error codes the shared table does not know.
pub(crate) const KINDS: &[(&str, ErrorKind)] = &[
    ("ClusterNotFoundException", ErrorKind::NOT_FOUND),
    ("ServiceNotFoundException", ErrorKind::NOT_FOUND),
    ("ServiceNotActiveException", ErrorKind::NOT_FOUND),
    ("ClusterContainsServicesException", ErrorKind::CONFLICT),
    ("ClusterContainsTasksException", ErrorKind::CONFLICT),
    (
        "ClusterContainsContainerInstancesException",
        ErrorKind::CONFLICT,
    ),
    (
        "ClusterContainsCapacityProviderException",
        ErrorKind::CONFLICT,
    ),
    ("ResourceInUseException", ErrorKind::CONFLICT),
    ("UpdateInProgressException", ErrorKind::CONFLICT),
    ("InvalidParameterException", ErrorKind::VALIDATION),
    ("PlatformUnknownException", ErrorKind::VALIDATION),
    (
        "PlatformTaskDefinitionIncompatibilityException",
        ErrorKind::VALIDATION,
    ),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("ServerException", ErrorKind::SERVICE_ERROR),
];

/// A failed call's error, named by `context`, with ECS's kinds.
macro_rules! failed {
    ($context:expr) => {
        |e| cdkd_aws_common::aws_error_in(&$context, e, $crate::KINDS)
    };
}
pub(crate) use failed;

/// Whether `key`'s value differs between two templates (a missing key and `null` alike).
pub(crate) fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    before.get(key).filter(|v| !v.is_null()) != after.get(key).filter(|v| !v.is_null())
}

/// The template's properties named in `keys`, in ECS's casing ([`raw::to_api`]).
pub(crate) fn members(properties: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|key| {
            let value = properties.get(*key).filter(|v| !v.is_null())?;
            let value = if *key == "Tags" {
                Value::Array(tags(Some(value)))
            } else {
                raw::to_api(value)
            };
            Some((raw::api_key(key), value))
        })
        .collect()
}

/// Template tags (`[{Key, Value}]`) as ECS's (`[{key, value}]`), cdkd's token tag left out.
pub(crate) fn tags(value: Option<&Value>) -> Vec<Value> {
    cdkd_aws_common::tag_pairs(value)
        .unwrap_or_default()
        .into_iter()
        .filter(|(key, _)| key != cdkd_provider_api::protocol::CREATE_TOKEN_TAG)
        .map(|(key, value)| serde_json::json!({"key": key, "value": value}))
        .collect()
}

/// ECS's `tags` (`[{key, value}]`) in template shape, sorted, without cdkd's token tag and
/// AWS's own.
pub(crate) fn template_tags(value: Option<&Value>) -> Option<Value> {
    let pairs: Vec<(&str, &str)> = value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("key")?.as_str()?, t.get("value")?.as_str()?)))
        .filter(|(key, _)| *key != cdkd_provider_api::protocol::CREATE_TOKEN_TAG)
        .collect();
    cdkd_aws_common::template_tags(pairs)
}

/// Changes a resource's tags from one template to the next by its ARN.
pub(crate) async fn retag(
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed): (Vec<(String, String)>, Vec<String>) = cdkd_aws_common::tag_changes(
        &cdkd_aws_common::tag_map_without_token(before),
        &cdkd_aws_common::tag_map_without_token(after),
    );
    if !removed.is_empty() {
        ecs.untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
    }
    if !set.is_empty() {
        let tags = set
            .into_iter()
            .map(|(k, v)| aws_sdk_ecs::types::Tag::builder().key(k).value(v).build())
            .collect();
        ecs.tag_resource()
            .resource_arn(arn)
            .set_tags(Some(tags))
            .send()
            .await
            .map_err(failed!(format!("{what}: TagResource {arn}")))?;
    }
    Ok(())
}

/// The last `/`-separated part of an ECS name or ARN (a cluster's name from its ARN).
pub(crate) fn last_part(name_or_arn: &str) -> &str {
    name_or_arn.rsplit('/').next().unwrap_or(name_or_arn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_recase_and_tags_leave_out_the_token() {
        let props = json!({
            "ClusterName": "c",
            "ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}],
            "Tags": [{"Key": "team", "Value": "a"}, {"Key": "cdkd:create-token", "Value": "t"}],
            "Ignored": 1,
        });
        let members = members(
            props.as_object().unwrap(),
            &["ClusterName", "ClusterSettings", "Tags"],
        );
        assert_eq!(
            Value::Object(members),
            json!({
                "clusterName": "c",
                "settings": [{"name": "containerInsights", "value": "enabled"}],
                "tags": [{"key": "team", "value": "a"}],
            })
        );
        assert_eq!(
            template_tags(Some(
                &json!([{"key": "b", "value": "2"}, {"key": "a", "value": "1"}, {"key": "cdkd:create-token", "value": "t"}])
            )),
            Some(json!([{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]))
        );
        assert_eq!(last_part("arn:aws:ecs:us-east-1:1:cluster/shop"), "shop");
        assert_eq!(last_part("shop"), "shop");
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "ClusterNotFoundException"),
            Some(ErrorKind::NOT_FOUND)
        );
    }
}
