//! cdkd's SNS provider plugin: topics, subscriptions and topic policies. Every SNS resource is
//! named by an ARN, whose region may differ from the host's (a subscription to a topic in
//! another region), so clients are built for the ARN's region when it names one.

mod subscription;
mod topic;
mod topic_inline_policy;
mod topic_policy;

cdkd_provider_api::export_plugin!(description: "AWS::SNS::Topic, Subscription, TopicPolicy, TopicInlinePolicy");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<topic::Topic>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<subscription::Subscription>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<topic_policy::TopicPolicy>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<topic_inline_policy::TopicInlinePolicy>
);

use std::collections::BTreeMap;

use aws_sdk_sns::config::Region;
use cdkd_aws_common::{aws_error, optional, policy_principals, while_iam_propagates};
pub(crate) use cdkd_aws_common::{json_text as document, parsed};
use cdkd_provider_api::{PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// An SNS client for the host's region, endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_sns::Client, ProviderError> {
    client_in(ctx, None).await
}

/// An SNS client for `region` (the host's when `None` or empty).
pub(crate) async fn client_in(
    ctx: &PluginContext,
    region: Option<&str>,
) -> Result<aws_sdk_sns::Client, ProviderError> {
    let sdk_config = cdkd_aws_common::sdk_config(ctx).await?;
    let mut builder = aws_sdk_sns::config::Builder::from(&sdk_config)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-sns"));
    if let Some(region) = region.filter(|r| !r.is_empty()) {
        builder = builder.region(Region::new(region.to_string()));
    }
    Ok(aws_sdk_sns::Client::from_conf(builder.build()))
}

/// An SNS client for the region an ARN names (the host's when the ARN names none).
pub(crate) async fn client_for(
    ctx: &PluginContext,
    arn: &str,
) -> Result<aws_sdk_sns::Client, ProviderError> {
    client_in(ctx, arn_field(arn, 3)).await
}

/// Field `index` of an ARN (`arn:partition:service:region:account:resource`), when non-empty.
pub(crate) fn arn_field(arn: &str, index: usize) -> Option<&str> {
    if !arn.starts_with("arn:") {
        return None;
    }
    arn.splitn(6, ':').nth(index).filter(|f| !f.is_empty())
}

/// A template value SNS wants as a string attribute: objects and arrays as JSON, booleans as
/// `"true"`/`"false"`, numbers as written.
pub(crate) fn attribute_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Object(_) | Value::Array(_) => Some(value.to_string()),
        other => cdkd_aws_common::text(Some(other)),
    }
}

/// What to set for each attribute that differs between two attribute maps: the new value, or
/// `reset(name)` for one that `after` no longer has (skipped when `reset` has none).
pub(crate) fn attribute_changes(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
    reset: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut changes: Vec<(String, String)> = after
        .iter()
        .filter(|(name, value)| before.get(*name) != Some(*value))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    changes.extend(
        before
            .keys()
            .filter(|name| !after.contains_key(*name))
            .filter_map(|name| reset(name).map(|value| (name.clone(), value))),
    );
    changes
}

/// `Tags: [{Key, Value}]` as SNS tags.
pub(crate) fn tags(properties: &Map<String, Value>) -> Vec<aws_sdk_sns::types::Tag> {
    cdkd_aws_common::tag_pairs(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(key, value)| {
            aws_sdk_sns::types::Tag::builder()
                .key(key)
                .value(value)
                .build()
                .ok()
        })
        .collect()
}

/// The policy SNS attaches to a topic at CreateTopic: its owner may do everything. A topic
/// policy that goes away leaves this behind, as CloudFormation does.
pub(crate) fn default_policy(topic_arn: &str) -> Value {
    json!({
        "Version": "2008-10-17",
        "Id": "__default_policy_ID",
        "Statement": [{
            "Sid": "__default_statement_ID",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": [
                "SNS:GetTopicAttributes",
                "SNS:SetTopicAttributes",
                "SNS:AddPermission",
                "SNS:RemovePermission",
                "SNS:DeleteTopic",
                "SNS:Subscribe",
                "SNS:ListSubscriptionsByTopic",
                "SNS:Publish"
            ],
            "Resource": topic_arn,
            "Condition": {"StringEquals": {"AWS:SourceOwner": arn_field(topic_arn, 4).unwrap_or_default()}}
        }]
    })
}

/// Whether `policy` is SNS's default one for `topic_arn` (SNS may list its actions in another
/// order, so its id marks it too).
pub(crate) fn is_default_policy(topic_arn: &str, policy: &Value) -> bool {
    *policy == default_policy(topic_arn)
        || policy.get("Id").and_then(Value::as_str) == Some("__default_policy_ID")
}

/// Sets a topic's `Policy` attribute. A policy naming IAM principals is refused ("Policy Error:
/// PrincipalNotFound") while one of them is too new for SNS to know: tried again for as long
/// as IAM takes to propagate it.
pub(crate) async fn set_policy(
    ctx: &PluginContext,
    what: &str,
    topic_arn: &str,
    policy: &str,
) -> Result<(), ProviderError> {
    let sns = client_for(ctx, topic_arn).await?;
    let set = || async {
        sns.set_topic_attributes()
            .topic_arn(topic_arn)
            .attribute_name("Policy")
            .attribute_value(policy)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                aws_error(
                    &format!("{what}: SetTopicAttributes Policy on {topic_arn}"),
                    e,
                )
            })
    };
    let principals = policy_principals(&Value::String(policy.to_string()));
    if !principals.starts_with("the principals") {
        return set().await;
    }
    while_iam_propagates(
        &principals,
        |e| e.message.contains("PrincipalNotFound"),
        set,
    )
    .await
}

/// Gives a topic SNS's default policy back; a topic that no longer exists has nothing to reset.
pub(crate) async fn reset_policy(
    ctx: &PluginContext,
    what: &str,
    topic_arn: &str,
) -> Result<(), ProviderError> {
    match set_policy(ctx, what, topic_arn, &default_policy(topic_arn).to_string()).await {
        Err(err) if err.kind != cdkd_provider_api::ErrorKind::NOT_FOUND => Err(err),
        _ => Ok(()),
    }
}

/// A topic's policy in template shape; `None` when the topic is gone.
pub(crate) async fn read_policy(
    ctx: &PluginContext,
    what: &str,
    topic_arn: &str,
) -> Result<Option<Value>, ProviderError> {
    let answer = client_for(ctx, topic_arn)
        .await?
        .get_topic_attributes()
        .topic_arn(topic_arn)
        .send()
        .await;
    let Some(answer) = optional(&format!("{what}: GetTopicAttributes {topic_arn}"), answer)? else {
        return Ok(None);
    };
    Ok(Some(
        answer
            .attributes()
            .and_then(|a| a.get("Policy"))
            .map(|p| parsed(p))
            .unwrap_or(Value::Null),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_policy_names_the_topic_and_its_owner() {
        let arn = "arn:aws:sns:eu-west-1:123456789012:orders";
        let policy = default_policy(arn);
        assert_eq!(policy["Id"], "__default_policy_ID");
        assert_eq!(policy["Version"], "2008-10-17");
        let statement = &policy["Statement"][0];
        assert_eq!(statement["Resource"], arn);
        assert_eq!(
            statement["Condition"]["StringEquals"]["AWS:SourceOwner"],
            "123456789012"
        );
        assert_eq!(statement["Principal"], json!({"AWS": "*"}));
        assert_eq!(statement["Action"].as_array().unwrap().len(), 8);
        assert_eq!(statement["Action"][7], "SNS:Publish");
        assert!(is_default_policy(arn, &policy));
        assert!(!is_default_policy(
            arn,
            &json!({"Version": "2012-10-17", "Statement": []})
        ));
    }

    #[test]
    fn arns_split_into_their_fields() {
        let arn = "arn:aws:sns:us-east-2:111122223333:my-topic:3f1c-4b";
        assert_eq!(arn_field(arn, 3), Some("us-east-2"));
        assert_eq!(arn_field(arn, 4), Some("111122223333"));
        assert_eq!(arn_field(arn, 5), Some("my-topic:3f1c-4b"));
        assert_eq!(arn_field("my-topic", 3), None);
        assert_eq!(arn_field("arn:aws:s3:::bucket", 3), None);
    }

    #[test]
    fn attribute_values_are_strings() {
        assert_eq!(
            attribute_text(&json!({"a": [1]})),
            Some("{\"a\":[1]}".into())
        );
        assert_eq!(attribute_text(&json!(true)), Some("true".into()));
        assert_eq!(attribute_text(&json!(50)), Some("50".into()));
        assert_eq!(attribute_text(&json!("x")), Some("x".into()));
        assert_eq!(attribute_text(&Value::Null), None);
        assert_eq!(parsed("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(parsed("not json"), json!("not json"));
    }

    #[test]
    fn changed_attributes_are_set_and_removed_ones_reset() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let before = map(&[("A", "1"), ("B", "2"), ("C", "3")]);
        let after = map(&[("A", "1"), ("B", "20"), ("D", "4")]);
        let changes = attribute_changes(&before, &after, |name| {
            (name == "C").then(|| "default".to_string())
        });
        assert_eq!(
            changes,
            vec![
                ("B".to_string(), "20".to_string()),
                ("D".to_string(), "4".to_string()),
                ("C".to_string(), "default".to_string()),
            ]
        );
        let tagged = json!({"Tags": [{"Key": "env", "Value": "prod"}]});
        let tagged = tags(tagged.as_object().unwrap());
        assert_eq!((tagged[0].key(), tagged[0].value()), ("env", "prod"));
    }
}
