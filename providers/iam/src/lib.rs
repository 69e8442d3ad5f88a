//! cdkd's IAM provider plugin. IAM is global and eventually consistent: a new role may not be
//! assumable for seconds; the host retries such errors on a dense schedule.

mod access_key;
mod group;
mod instance_profile;
mod managed_policy;
mod policy;
mod principal;
mod read;
mod role;
mod user;
mod user_to_group_addition;

cdkd_provider_api::export_plugin!(description: "AWS::IAM::Role, Policy, ManagedPolicy, InstanceProfile, User, Group, UserToGroupAddition, AccessKey");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<role::Role>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<policy::InlinePolicy>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<managed_policy::ManagedPolicy>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<instance_profile::InstanceProfile>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<user::User>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<group::Group>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<user_to_group_addition::UserToGroupAddition>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<access_key::AccessKey>);

use cdkd_provider_api::{PluginContext, ProviderError};
use serde_json::{Map, Value};

/// An IAM client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_iam::Client, ProviderError> {
    let config = aws_sdk_iam::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-iam"))
        .build();
    Ok(aws_sdk_iam::Client::from_conf(config))
}

/// A policy document as IAM wants it: a JSON string.
pub(crate) fn document(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A list of strings from a property (absent: empty).
pub(crate) fn names(properties: &Map<String, Value>, key: &str) -> Vec<String> {
    properties
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(ToString::to_string))
        .collect()
}

/// Inline policies (`Policies: [{PolicyName, PolicyDocument}]`) by name.
pub(crate) fn inline_policies(properties: &Map<String, Value>) -> Vec<(String, String)> {
    properties
        .get("Policies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p.get("PolicyName")?.as_str()?.to_string(),
                document(p.get("PolicyDocument")?),
            ))
        })
        .collect()
}

/// `Tags: [{Key, Value}]`.
pub(crate) fn tags(properties: &Map<String, Value>) -> Vec<aws_sdk_iam::types::Tag> {
    cdkd_aws_common::tag_pairs(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(key, value)| {
            aws_sdk_iam::types::Tag::builder()
                .key(key)
                .value(value)
                .build()
                .ok()
        })
        .collect()
}

/// The `Arn` attribute.
pub(crate) fn arn_attribute(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), Value::String(arn.to_string()));
    attributes
}

/// Items in `after` not in `before`, and the other way round.
pub(crate) fn changes<T: PartialEq + Clone>(before: &[T], after: &[T]) -> (Vec<T>, Vec<T>) {
    let added = after
        .iter()
        .filter(|a| !before.contains(a))
        .cloned()
        .collect();
    let removed = before
        .iter()
        .filter(|b| !after.contains(b))
        .cloned()
        .collect();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn helpers_read_templates() {
        let props = json!({"Policies": [{"PolicyName": "p", "PolicyDocument": {"Version": "2012-10-17"}}], "ManagedPolicyArns": ["a", "b"]});
        let props = props.as_object().unwrap();
        assert_eq!(
            inline_policies(props),
            [("p".to_string(), "{\"Version\":\"2012-10-17\"}".to_string())]
        );
        assert_eq!(names(props, "ManagedPolicyArns"), ["a", "b"]);
        assert_eq!(changes(&["a", "b"], &["b", "c"]), (vec!["c"], vec!["a"]));
        let tagged = json!({"Tags": [{"Key": "a", "Value": "1"}, {"Key": "n", "Value": 5}]});
        let tagged = tags(tagged.as_object().unwrap());
        assert_eq!(tagged.len(), 1);
        assert_eq!((tagged[0].key(), tagged[0].value()), ("a", "1"));
        assert_eq!(
            arn_attribute("arn:x"),
            *json!({"Arn": "arn:x"}).as_object().unwrap()
        );
    }
}
