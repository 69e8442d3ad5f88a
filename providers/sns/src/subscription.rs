//! `AWS::SNS::Subscription`: physical id (and `Ref`) is the subscription ARN; attribute `Arn`.
//! The subscription lives in the topic's region (`Region`, else the one in `TopicArn`). An
//! http/s or email subscription still waiting for its confirmation has the ARN "pending
//! confirmation", as CloudFormation records it too: such a subscription cannot be read, changed
//! or unsubscribed until confirmed (SNS drops an unconfirmed one after three days).

use std::collections::{BTreeMap, HashMap};

use cdkd_aws_common::{
    aws_error, deleted_unless_failed, optional, require_str, string, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{arn_field, attribute_changes, attribute_text, client_for, client_in, parsed};

const TYPE: &str = "AWS::SNS::Subscription";

/// Template properties that are subscription attributes of the same name.
const ATTRIBUTES: &[&str] = &[
    "FilterPolicy",
    "FilterPolicyScope",
    "RawMessageDelivery",
    "RedrivePolicy",
    "DeliveryPolicy",
    "SubscriptionRoleArn",
    "ReplayPolicy",
];

/// Subscription attributes read back as JSON documents.
const DOCUMENTS: &[&str] = &[
    "FilterPolicy",
    "RedrivePolicy",
    "DeliveryPolicy",
    "ReplayPolicy",
];

/// The `AWS::SNS::Subscription` provider.
#[derive(Default)]
pub struct Subscription;

/// The SNS attributes a template sets: documents as JSON, `RawMessageDelivery` as
/// `"true"`/`"false"`.
fn subscription_attributes(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    ATTRIBUTES
        .iter()
        .filter_map(|name| {
            let value = properties.get(*name).and_then(attribute_text)?;
            Some((name.to_string(), value))
        })
        .collect()
}

/// The value that takes a removed attribute back to SNS's default.
fn reset_value(name: &str) -> Option<String> {
    Some(
        match name {
            "RawMessageDelivery" => "false",
            "FilterPolicyScope" => "MessageAttributes",
            _ => "",
        }
        .to_string(),
    )
}

/// The region the subscription lives in: `Region`, else the topic ARN's, else the host's.
fn region_of(properties: &Map<String, Value>) -> Option<String> {
    string(properties.get("Region"))
        .filter(|r| !r.is_empty())
        .or_else(|| {
            string(properties.get("TopicArn"))
                .and_then(|arn| arn_field(&arn, 3).map(ToString::to_string))
        })
}

/// Whether SNS gave the subscription an ARN (an unconfirmed one has none yet).
fn confirmed(arn: &str) -> bool {
    arn.starts_with("arn:")
}

/// `Arn`.
fn attributes(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes
}

/// A subscription's attributes in template shape.
fn template_shape(attributes: &HashMap<String, String>) -> Map<String, Value> {
    let get = |name: &str| attributes.get(name).filter(|v| !v.is_empty());
    let mut props = Map::new();
    for name in ["TopicArn", "Protocol", "Endpoint"] {
        if let Some(value) = get(name) {
            props.insert(name.into(), json!(value));
        }
    }
    props.insert(
        "RawMessageDelivery".into(),
        json!(get("RawMessageDelivery").map(String::as_str) == Some("true")),
    );
    for name in DOCUMENTS {
        if let Some(document) = get(name) {
            props.insert(name.to_string(), parsed(document));
        }
    }
    // SNS reports a scope only with a filter policy.
    if props.contains_key("FilterPolicy") {
        if let Some(scope) = get("FilterPolicyScope") {
            props.insert("FilterPolicyScope".into(), json!(scope));
        }
    }
    if let Some(role) = get("SubscriptionRoleArn") {
        props.insert("SubscriptionRoleArn".into(), json!(role));
    }
    props
}

#[async_trait]
impl ResourceProvider for Subscription {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "TopicArn",
                "Protocol",
                "Endpoint",
                "FilterPolicy",
                "FilterPolicyScope",
                "RawMessageDelivery",
                "RedrivePolicy",
                "DeliveryPolicy",
                "Region",
                "SubscriptionRoleArn",
                "ReplayPolicy",
            ])
            .create_only(&["TopicArn", "Protocol", "Endpoint", "Region"])
            .read_and_import()
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let topic = require_str(props, "TopicArn", &what)?;
        let protocol = require_str(props, "Protocol", &what)?;
        let sns = client_in(ctx, region_of(props).as_deref()).await?;
        let attributes_map: HashMap<String, String> =
            subscription_attributes(props).into_iter().collect();
        // Subscribe answers the existing subscription for the same topic, protocol and
        // endpoint, so a retried create finds its own.
        let subscribed = sns
            .subscribe()
            .topic_arn(topic)
            .protocol(protocol)
            .set_endpoint(string(props.get("Endpoint")))
            .return_subscription_arn(true)
            .set_attributes(Some(attributes_map).filter(|a| !a.is_empty()))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: Subscribe to {topic}"), e))?;
        let arn = subscribed
            .subscription_arn()
            .ok_or_else(|| ProviderError::other(format!("{what}: Subscribe returned no ARN")))?
            .to_string();
        Ok(CreateResult {
            attributes: attributes(&arn),
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
        let arn = request.physical_id.as_str();
        let changes = attribute_changes(
            &subscription_attributes(&request.previous_properties),
            &subscription_attributes(&request.properties),
            reset_value,
        );
        if !changes.is_empty() && !confirmed(arn) {
            return Err(ProviderError::validation(format!(
                "{what}: the subscription is pending confirmation and cannot be changed until it is confirmed"
            )));
        }
        if !changes.is_empty() {
            let sns = client_for(ctx, arn).await?;
            for (name, value) in changes {
                sns.set_subscription_attributes()
                    .subscription_arn(arn)
                    .attribute_name(&name)
                    .attribute_value(value)
                    .send()
                    .await
                    .map_err(|e| {
                        aws_error(&format!("{what}: SetSubscriptionAttributes {name}"), e)
                    })?;
            }
        }
        Ok(UpdateResult {
            physical_id: arn.to_string(),
            replaced: false,
            attributes: attributes(arn),
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
        // An unconfirmed subscription has no ARN to unsubscribe; SNS expires it itself.
        if !confirmed(arn) {
            return Ok(DeleteResult::Deleted);
        }
        deleted_unless_failed(
            client_for(ctx, arn)
                .await?
                .unsubscribe()
                .subscription_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: Unsubscribe {arn}"), e)),
        )
    }
}

#[async_trait]
impl Readable for Subscription {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let arn = request.physical_id.as_str();
        // An unconfirmed subscription cannot be read back (SNS has no ARN to ask about): what
        // was last applied is all there is to say about it.
        if !confirmed(arn) {
            return Ok(Some(request.properties.clone()));
        }
        let answer = client_for(ctx, arn)
            .await?
            .get_subscription_attributes()
            .subscription_arn(arn)
            .send()
            .await;
        let Some(answer) = optional(&format!("{what}: GetSubscriptionAttributes"), answer)? else {
            return Ok(None);
        };
        let empty = HashMap::new();
        Ok(Some(template_shape(answer.attributes().unwrap_or(&empty))))
    }

    /// `Arn`: the physical id.
    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(attributes(physical_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn documents_and_flags_become_strings() {
        let template = props(json!({
            "TopicArn": "arn:aws:sns:eu-west-1:123456789012:orders",
            "Protocol": "sqs",
            "Endpoint": "arn:aws:sqs:eu-west-1:123456789012:q",
            "FilterPolicy": {"kind": ["order"]},
            "FilterPolicyScope": "MessageBody",
            "RawMessageDelivery": true,
            "RedrivePolicy": {"deadLetterTargetArn": "arn:dlq"},
        }));
        let attributes = subscription_attributes(&template);
        let expected: BTreeMap<String, String> = [
            ("FilterPolicy", "{\"kind\":[\"order\"]}"),
            ("FilterPolicyScope", "MessageBody"),
            ("RawMessageDelivery", "true"),
            ("RedrivePolicy", "{\"deadLetterTargetArn\":\"arn:dlq\"}"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(attributes, expected);
        assert_eq!(region_of(&template).as_deref(), Some("eu-west-1"));
        let mut elsewhere = template.clone();
        elsewhere.insert("Region".into(), json!("us-west-2"));
        assert_eq!(region_of(&elsewhere).as_deref(), Some("us-west-2"));
        assert_eq!(region_of(&props(json!({"TopicArn": "t"}))), None);
        assert_eq!(
            subscription_attributes(&props(json!({"RawMessageDelivery": "false"})))
                ["RawMessageDelivery"],
            "false"
        );
    }

    #[test]
    fn removed_attributes_are_reset() {
        let before = subscription_attributes(&props(
            json!({"FilterPolicy": {"a": ["b"]}, "RawMessageDelivery": true}),
        ));
        let changes = attribute_changes(&before, &BTreeMap::new(), reset_value);
        assert_eq!(
            changes,
            vec![
                ("FilterPolicy".to_string(), String::new()),
                ("RawMessageDelivery".to_string(), "false".to_string()),
            ]
        );
    }

    #[test]
    fn attributes_read_back_in_template_shape() {
        let attributes: HashMap<String, String> = [
            ("TopicArn", "arn:aws:sns:us-east-1:1:t"),
            ("Protocol", "sqs"),
            ("Endpoint", "arn:aws:sqs:us-east-1:1:q"),
            ("RawMessageDelivery", "true"),
            ("FilterPolicy", "{\"kind\":[\"order\"]}"),
            ("FilterPolicyScope", "MessageAttributes"),
            ("Owner", "1"),
            ("PendingConfirmation", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            Value::Object(template_shape(&attributes)),
            json!({
                "TopicArn": "arn:aws:sns:us-east-1:1:t",
                "Protocol": "sqs",
                "Endpoint": "arn:aws:sqs:us-east-1:1:q",
                "RawMessageDelivery": true,
                "FilterPolicy": {"kind": ["order"]},
                "FilterPolicyScope": "MessageAttributes",
            })
        );
        assert!(!confirmed("pending confirmation"));
        assert!(confirmed("arn:aws:sns:us-east-1:1:t:abc"));
    }
}
