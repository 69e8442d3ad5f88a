//! `AWS::SNS::Topic`: physical id (and `Ref`) is the topic ARN; attributes `TopicArn` and
//! `TopicName`. `Subscription` is create-time wiring: its pairs are subscribed and unsubscribed
//! as the list changes, but never read back (subscriptions of their own type live there too).

use std::collections::{BTreeMap, HashMap};

use cdkd_aws_common::{
    aws_error, deleted_unless_failed, flag, generated_name, optional, string, while_iam_propagates,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{attribute_changes, attribute_text, client, client_for, parsed, tags};

const TYPE: &str = "AWS::SNS::Topic";

/// Template `DeliveryStatusLogging` protocols and the prefix SNS gives their attributes; the
/// first spelling of a prefix is the one read back.
const PROTOCOLS: &[(&str, &str)] = &[
    ("http/s", "HTTP"),
    ("http", "HTTP"),
    ("https", "HTTP"),
    ("sqs", "SQS"),
    ("lambda", "Lambda"),
    ("firehose", "Firehose"),
    ("application", "Application"),
];

/// The feedback settings of one protocol: template key and SNS attribute suffix.
const FEEDBACK: &[(&str, &str)] = &[
    ("SuccessFeedbackRoleArn", "SuccessFeedbackRoleArn"),
    ("SuccessFeedbackSampleRate", "SuccessFeedbackSampleRate"),
    ("FailureFeedbackRoleArn", "FailureFeedbackRoleArn"),
];

/// Template properties that are SNS topic attributes of the same name and value.
const PLAIN: &[&str] = &[
    "DisplayName",
    "ContentBasedDeduplication",
    "FifoThroughputScope",
    "KmsMasterKeyId",
    "SignatureVersion",
    "TracingConfig",
    "ArchivePolicy",
];

/// The `AWS::SNS::Topic` provider.
#[derive(Default)]
pub struct Topic;

/// `DeliveryStatusLogging` as SNS attributes (`SQSSuccessFeedbackRoleArn`, ...).
fn logging_attributes(value: Option<&Value>) -> Result<BTreeMap<String, String>, String> {
    let mut attributes = BTreeMap::new();
    for entry in value.and_then(Value::as_array).into_iter().flatten() {
        let protocol = string(entry.get("Protocol")).unwrap_or_default();
        let prefix = PROTOCOLS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(&protocol))
            .map(|(_, prefix)| *prefix)
            .ok_or_else(|| format!("DeliveryStatusLogging protocol {protocol:?} is not one of http/s, sqs, lambda, firehose, application"))?;
        for (key, suffix) in FEEDBACK {
            if let Some(value) = entry.get(*key).and_then(attribute_text) {
                attributes.insert(format!("{prefix}{suffix}"), value);
            }
        }
    }
    Ok(attributes)
}

/// `DeliveryStatusLogging` rebuilt from a topic's attributes; `None` when no protocol logs.
fn logging_from(attributes: &HashMap<String, String>) -> Option<Value> {
    let mut seen = Vec::new();
    let mut entries = Vec::new();
    for (protocol, prefix) in PROTOCOLS {
        if seen.contains(prefix) {
            continue;
        }
        seen.push(*prefix);
        let mut entry = Map::new();
        for (key, suffix) in FEEDBACK {
            if let Some(value) = attributes
                .get(&format!("{prefix}{suffix}"))
                .filter(|v| !v.is_empty())
            {
                entry.insert(key.to_string(), json!(value));
            }
        }
        if !entry.is_empty() {
            entry.insert("Protocol".into(), json!(protocol));
            entries.push(Value::Object(entry));
        }
    }
    (!entries.is_empty()).then_some(Value::Array(entries))
}

/// Puts read-back `DeliveryStatusLogging` entries in the template's protocol order (lists
/// compare whole, and SNS's attributes carry no order).
fn order_like(logging: &mut Value, template: Option<&Value>) {
    let prefix = |entry: &Value| {
        let protocol = string(entry.get("Protocol")).unwrap_or_default();
        PROTOCOLS
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(&protocol))
            .map(|(_, prefix)| *prefix)
    };
    let order: Vec<Option<&str>> = template
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(prefix)
        .collect();
    if let Some(entries) = logging.as_array_mut() {
        entries.sort_by_key(|entry| {
            let at = prefix(entry);
            order.iter().position(|p| *p == at).unwrap_or(order.len())
        });
    }
}

/// The SNS attributes a template sets (not `DataProtectionPolicy`, `Tags` or `Subscription`,
/// which have their own calls). `FifoTopic` only when true: a standard topic is the default.
fn topic_attributes(properties: &Map<String, Value>) -> Result<BTreeMap<String, String>, String> {
    let mut attributes = logging_attributes(properties.get("DeliveryStatusLogging"))?;
    for name in PLAIN {
        if let Some(value) = properties.get(*name).and_then(attribute_text) {
            attributes.insert(name.to_string(), value);
        }
    }
    if flag(properties.get("FifoTopic")) == Some(true) {
        attributes.insert("FifoTopic".into(), "true".into());
    }
    Ok(attributes)
}

/// The value that takes a removed attribute back to SNS's default. Feedback attributes are
/// cleared with "" (SNS drops an empty one); `FifoTopic` cannot change.
fn reset_value(name: &str) -> Option<String> {
    let value = match name {
        "DisplayName" | "KmsMasterKeyId" => "",
        "ContentBasedDeduplication" => "false",
        "FifoThroughputScope" => "Topic",
        "SignatureVersion" => "1",
        "TracingConfig" => "PassThrough",
        // An empty archive policy turns archiving off.
        "ArchivePolicy" => "{}",
        _ if FEEDBACK.iter().any(|(_, suffix)| name.ends_with(suffix)) => "",
        _ => return None,
    };
    Some(value.to_string())
}

/// `Subscription: [{Endpoint, Protocol}]` as (protocol, endpoint) pairs.
fn subscriptions(properties: &Map<String, Value>) -> Vec<(String, String)> {
    properties
        .get("Subscription")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| Some((string(s.get("Protocol"))?, string(s.get("Endpoint"))?)))
        .collect()
}

/// Items in `after` not in `before`, and the other way round.
fn changes<T: PartialEq + Clone>(before: &[T], after: &[T]) -> (Vec<T>, Vec<T>) {
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

/// The topic name, the last field of its ARN.
fn name_of(arn: &str) -> &str {
    arn.rsplit(':').next().unwrap_or(arn)
}

/// `TopicArn` and `TopicName`.
fn attributes(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("TopicArn".into(), json!(arn));
    attributes.insert("TopicName".into(), json!(name_of(arn)));
    attributes
}

/// The ARN of a topic named by its ARN or (a resource looked up by name after a crash) its bare
/// name; `None` when no topic has that name.
async fn resolve(
    ctx: &PluginContext,
    what: &str,
    id: &str,
) -> Result<Option<String>, ProviderError> {
    if id.starts_with("arn:") {
        return Ok(Some(id.to_string()));
    }
    let sns = client(ctx).await?;
    let ending = format!(":{id}");
    let mut token = None;
    loop {
        let page = sns
            .list_topics()
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: ListTopics"), e))?;
        if let Some(arn) = page
            .topics()
            .iter()
            .filter_map(|t| t.topic_arn())
            .find(|arn| arn.ends_with(&ending))
        {
            return Ok(Some(arn.to_string()));
        }
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => return Ok(None),
        }
    }
}

/// Subscribes each (protocol, endpoint) pair to the topic.
async fn subscribe(
    sns: &aws_sdk_sns::Client,
    what: &str,
    topic_arn: &str,
    pairs: &[(String, String)],
) -> Result<(), ProviderError> {
    for (protocol, endpoint) in pairs {
        sns.subscribe()
            .topic_arn(topic_arn)
            .protocol(protocol)
            .endpoint(endpoint)
            .return_subscription_arn(true)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: Subscribe {protocol} {endpoint}"), e))?;
    }
    Ok(())
}

/// Unsubscribes the topic's subscriptions matching the (protocol, endpoint) pairs. One still
/// pending confirmation has no ARN yet and cannot be unsubscribed; SNS drops it after 3 days.
async fn unsubscribe(
    sns: &aws_sdk_sns::Client,
    what: &str,
    topic_arn: &str,
    pairs: &[(String, String)],
) -> Result<(), ProviderError> {
    if pairs.is_empty() {
        return Ok(());
    }
    let mut arns = Vec::new();
    let mut token = None;
    loop {
        let page = sns
            .list_subscriptions_by_topic()
            .topic_arn(topic_arn)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: ListSubscriptionsByTopic"), e))?;
        for s in page.subscriptions() {
            let pair = (
                s.protocol().unwrap_or_default().to_string(),
                s.endpoint().unwrap_or_default().to_string(),
            );
            match s.subscription_arn() {
                Some(arn) if arn.starts_with("arn:") && pairs.contains(&pair) => {
                    arns.push(arn.to_string())
                }
                _ => {}
            }
        }
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => break,
        }
    }
    for arn in arns {
        let result = sns
            .unsubscribe()
            .subscription_arn(&arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("{what}: Unsubscribe {arn}"), e));
        deleted_unless_failed(result)?;
    }
    Ok(())
}

/// The delivery-status feedback roles among a topic's attributes, for a message ("the roles
/// A, B"); `None` when it has none.
fn feedback_roles(attributes: &BTreeMap<String, String>) -> Option<String> {
    let roles: Vec<&str> = attributes
        .iter()
        .filter(|(name, value)| name.ends_with("FeedbackRoleArn") && !value.is_empty())
        .map(|(_, value)| value.as_str())
        .collect();
    (!roles.is_empty()).then(|| format!("the roles {}", roles.join(", ")))
}

/// Whether SNS refused a feedback role it cannot use yet ("... is not a valid role to allow SNS
/// to write to Cloudwatch Logs"): a role of the same run IAM has not propagated.
fn feedback_role_unknown(err: &ProviderError) -> bool {
    err.message.contains("is not a valid role to allow SNS")
}

#[async_trait]
impl ResourceProvider for Topic {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "TopicName",
                "DisplayName",
                "FifoTopic",
                "ContentBasedDeduplication",
                "FifoThroughputScope",
                "KmsMasterKeyId",
                "SignatureVersion",
                "TracingConfig",
                "DataProtectionPolicy",
                "ArchivePolicy",
                "DeliveryStatusLogging",
                "Subscription",
                "Tags",
            ])
            .create_only(&["TopicName", "FifoTopic"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let fifo = flag(props.get("FifoTopic")) == Some(true);
        let name = string(props.get("TopicName")).unwrap_or_else(|| {
            generated_name(
                &request.stack_name,
                &request.logical_id,
                &request.client_token,
                256,
                false,
                if fifo { ".fifo" } else { "" },
            )
        });
        let attributes_map = topic_attributes(props)
            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        let tags = tags(props);
        let sns = client(ctx).await?;
        let roles = feedback_roles(&attributes_map);
        // CreateTopic answers the existing topic for the same name and attributes, so a retried
        // create finds its own topic (and a retry while a feedback role propagates is safe).
        let call = sns
            .create_topic()
            .name(&name)
            .set_attributes(
                Some(attributes_map.into_iter().collect::<HashMap<_, _>>())
                    .filter(|a| !a.is_empty()),
            )
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .set_data_protection_policy(props.get("DataProtectionPolicy").and_then(attribute_text));
        let create = || {
            let call = call.clone();
            let what = &what;
            let name = &name;
            async move {
                call.send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: CreateTopic {name}"), e))
            }
        };
        let created = match roles {
            None => create().await?,
            Some(roles) => while_iam_propagates(&roles, feedback_role_unknown, create).await?,
        };
        let arn = created
            .topic_arn()
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateTopic returned no ARN")))?
            .to_string();
        subscribe(&sns, &what, &arn, &subscriptions(props)).await?;
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
        let (before, after) = (&request.previous_properties, &request.properties);
        let arn = resolve(ctx, &what, &request.physical_id)
            .await?
            .ok_or_else(|| {
                ProviderError::new(
                    cdkd_provider_api::ErrorKind::NOT_FOUND,
                    format!("{what}: topic {} not found", request.physical_id),
                )
            })?;
        let sns = client_for(ctx, &arn).await?;
        let mut old = topic_attributes(before).unwrap_or_default();
        let mut new = topic_attributes(after)
            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        old.remove("FifoTopic");
        new.remove("FifoTopic");
        for (name, value) in attribute_changes(&old, &new, reset_value) {
            let set = || async {
                sns.set_topic_attributes()
                    .topic_arn(&arn)
                    .attribute_name(&name)
                    .attribute_value(&value)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: SetTopicAttributes {name}"), e))
            };
            if name.ends_with("FeedbackRoleArn") && !value.is_empty() {
                let role = format!("the role {value}");
                while_iam_propagates(&role, feedback_role_unknown, set).await?;
            } else {
                set().await?;
            }
        }
        if before.get("DataProtectionPolicy") != after.get("DataProtectionPolicy") {
            // A removed policy is put as "": SNS takes an empty policy as none, which is what
            // CloudFormation's handler sends too.
            let policy = after
                .get("DataProtectionPolicy")
                .and_then(attribute_text)
                .unwrap_or_default();
            sns.put_data_protection_policy()
                .resource_arn(&arn)
                .data_protection_policy(policy)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: PutDataProtectionPolicy"), e))?;
        }
        if before.get("Tags") != after.get("Tags") {
            let (old_tags, new_tags) = (tags(before), tags(after));
            let gone: Vec<String> = old_tags
                .iter()
                .filter(|t| !new_tags.iter().any(|n| n.key() == t.key()))
                .map(|t| t.key().to_string())
                .collect();
            if !gone.is_empty() {
                sns.untag_resource()
                    .resource_arn(&arn)
                    .set_tag_keys(Some(gone))
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: UntagResource"), e))?;
            }
            let set: Vec<_> = new_tags
                .into_iter()
                .filter(|n| !old_tags.contains(n))
                .collect();
            if !set.is_empty() {
                sns.tag_resource()
                    .resource_arn(&arn)
                    .set_tags(Some(set))
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: TagResource"), e))?;
            }
        }
        let (added, removed) = changes(&subscriptions(before), &subscriptions(after));
        subscribe(&sns, &what, &arn, &added).await?;
        unsubscribe(&sns, &what, &arn, &removed).await?;
        Ok(UpdateResult {
            attributes: attributes(&arn),
            physical_id: arn,
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let Some(arn) = resolve(ctx, &what, &request.physical_id).await? else {
            return Ok(DeleteResult::Deleted);
        };
        // DeleteTopic of a missing topic succeeds; its subscriptions go with it.
        deleted_unless_failed(
            client_for(ctx, &arn)
                .await?
                .delete_topic()
                .topic_arn(&arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteTopic {arn}"), e)),
        )
    }
}

/// A topic's attributes and tags in template shape.
fn template_shape(
    arn: &str,
    attributes: &HashMap<String, String>,
    tags: &[aws_sdk_sns::types::Tag],
) -> Map<String, Value> {
    let get = |name: &str| attributes.get(name).filter(|v| !v.is_empty());
    let mut props = Map::new();
    props.insert("TopicName".into(), json!(name_of(arn)));
    if let Some(display) = get("DisplayName") {
        props.insert("DisplayName".into(), json!(display));
    }
    if get("FifoTopic").map(String::as_str) == Some("true") {
        props.insert("FifoTopic".into(), json!(true));
        props.insert(
            "ContentBasedDeduplication".into(),
            json!(get("ContentBasedDeduplication").map(String::as_str) == Some("true")),
        );
    }
    for name in ["KmsMasterKeyId", "SignatureVersion", "TracingConfig"] {
        if let Some(value) = get(name) {
            props.insert(name.into(), json!(value));
        }
    }
    if let Some(policy) = get("ArchivePolicy").map(|p| parsed(p)) {
        if policy.as_object().is_none_or(|p| !p.is_empty()) {
            props.insert("ArchivePolicy".into(), policy);
        }
    }
    if let Some(logging) = logging_from(attributes) {
        props.insert("DeliveryStatusLogging".into(), logging);
    }
    let mut tags: Vec<(&str, &str)> = tags.iter().map(|t| (t.key(), t.value())).collect();
    tags.sort();
    if !tags.is_empty() {
        props.insert(
            "Tags".into(),
            Value::Array(
                tags.into_iter()
                    .map(|(k, v)| json!({"Key": k, "Value": v}))
                    .collect(),
            ),
        );
    }
    props
}

#[async_trait]
impl Readable for Topic {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let Some(arn) = resolve(ctx, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let sns = client_for(ctx, &arn).await?;
        let (found, tagged) = tokio::join!(
            sns.get_topic_attributes().topic_arn(&arn).send(),
            sns.list_tags_for_resource().resource_arn(&arn).send(),
        );
        let Some(found) = optional(&format!("{what}: GetTopicAttributes"), found)? else {
            return Ok(None);
        };
        let Some(tagged) = optional(&format!("{what}: ListTagsForResource"), tagged)? else {
            return Ok(None);
        };
        let empty = HashMap::new();
        let mut props = template_shape(&arn, found.attributes().unwrap_or(&empty), tagged.tags());
        if let Some(logging) = props.get_mut("DeliveryStatusLogging") {
            order_like(logging, request.properties.get("DeliveryStatusLogging"));
        }
        Ok(Some(props))
    }

    /// `TopicArn` and `TopicName` (none when the topic cannot be found by name).
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(resolve(ctx, what, physical_id)
            .await?
            .map(|arn| attributes(&arn))
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_roles_are_named_and_their_refusal_waited_for() {
        let attributes = topic_attributes(&props(json!({"DeliveryStatusLogging": [
            {"Protocol": "sqs", "SuccessFeedbackRoleArn": "arn:role/ok", "FailureFeedbackRoleArn": "arn:role/bad"}
        ]})))
        .unwrap();
        assert_eq!(
            feedback_roles(&attributes).as_deref(),
            Some("the roles arn:role/bad, arn:role/ok")
        );
        assert_eq!(feedback_roles(&BTreeMap::new()), None);
        let refused = ProviderError::validation(
            "T: CreateTopic t: InvalidParameter: Invalid parameter: Attributes Reason: arn:role/ok is not a valid role to allow SNS to write to Cloudwatch Logs",
        );
        assert!(feedback_role_unknown(&refused));
        assert!(!feedback_role_unknown(&ProviderError::validation(
            "bad name"
        )));
    }

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_template_becomes_topic_attributes() {
        let template = props(json!({
            "TopicName": "orders.fifo",
            "FifoTopic": true,
            "ContentBasedDeduplication": true,
            "DisplayName": "Orders",
            "ArchivePolicy": {"MessageRetentionPeriod": "30"},
            "SignatureVersion": 2,
            "Tags": [{"Key": "a", "Value": "b"}],
            "DataProtectionPolicy": {"Name": "p"},
        }));
        let attributes = topic_attributes(&template).unwrap();
        let expected: BTreeMap<String, String> = [
            ("ArchivePolicy", "{\"MessageRetentionPeriod\":\"30\"}"),
            ("ContentBasedDeduplication", "true"),
            ("DisplayName", "Orders"),
            ("FifoTopic", "true"),
            ("SignatureVersion", "2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(attributes, expected);
        let standard = topic_attributes(&props(json!({"FifoTopic": false}))).unwrap();
        assert!(standard.is_empty());
    }

    #[test]
    fn delivery_status_logging_expands_and_reads_back() {
        let logging = json!([
            {"Protocol": "http/s", "SuccessFeedbackRoleArn": "arn:role/ok", "SuccessFeedbackSampleRate": "50", "FailureFeedbackRoleArn": "arn:role/bad"},
            {"Protocol": "sqs", "FailureFeedbackRoleArn": "arn:role/q"},
        ]);
        let attributes = logging_attributes(Some(&logging)).unwrap();
        assert_eq!(attributes.len(), 4);
        assert_eq!(attributes["HTTPSuccessFeedbackRoleArn"], "arn:role/ok");
        assert_eq!(attributes["HTTPSuccessFeedbackSampleRate"], "50");
        assert_eq!(attributes["HTTPFailureFeedbackRoleArn"], "arn:role/bad");
        assert_eq!(attributes["SQSFailureFeedbackRoleArn"], "arn:role/q");
        let lambda = logging_attributes(Some(
            &json!([{"Protocol": "lambda", "SuccessFeedbackSampleRate": 10}]),
        ))
        .unwrap();
        assert_eq!(lambda["LambdaSuccessFeedbackSampleRate"], "10");
        assert!(logging_attributes(Some(&json!([{"Protocol": "smtp"}]))).is_err());

        let read: HashMap<String, String> = attributes.into_iter().collect();
        let back = logging_from(&read).unwrap();
        assert_eq!(back, logging);
        let mut reversed = back.clone();
        order_like(
            &mut reversed,
            Some(&json!([{"Protocol": "sqs"}, {"Protocol": "http/s"}])),
        );
        assert_eq!(reversed[0]["Protocol"], "sqs");
        assert_eq!(reversed[1]["Protocol"], "http/s");
        let mut none = HashMap::new();
        none.insert("HTTPSuccessFeedbackRoleArn".to_string(), String::new());
        assert_eq!(logging_from(&none), None);
    }

    #[test]
    fn removed_attributes_go_back_to_defaults() {
        assert_eq!(reset_value("DisplayName").as_deref(), Some(""));
        assert_eq!(reset_value("TracingConfig").as_deref(), Some("PassThrough"));
        assert_eq!(reset_value("ArchivePolicy").as_deref(), Some("{}"));
        assert_eq!(
            reset_value("SQSFailureFeedbackRoleArn").as_deref(),
            Some("")
        );
        assert_eq!(reset_value("FifoTopic"), None);
    }

    #[test]
    fn subscription_lists_diff_by_protocol_and_endpoint() {
        let before = props(json!({"Subscription": [
            {"Protocol": "sqs", "Endpoint": "arn:q1"},
            {"Protocol": "email", "Endpoint": "a@example.com"},
        ]}));
        let after = props(json!({"Subscription": [
            {"Protocol": "sqs", "Endpoint": "arn:q1"},
            {"Protocol": "lambda", "Endpoint": "arn:fn"},
        ]}));
        let (added, removed) = changes(&subscriptions(&before), &subscriptions(&after));
        assert_eq!(added, vec![("lambda".to_string(), "arn:fn".to_string())]);
        assert_eq!(
            removed,
            vec![("email".to_string(), "a@example.com".to_string())]
        );
    }

    #[test]
    fn attributes_read_back_in_template_shape() {
        let arn = "arn:aws:sns:us-east-1:123456789012:orders.fifo";
        let attributes: HashMap<String, String> = [
            ("TopicArn", arn),
            ("FifoTopic", "true"),
            ("ContentBasedDeduplication", "false"),
            ("DisplayName", ""),
            ("KmsMasterKeyId", "alias/aws/sns"),
            ("ArchivePolicy", "{\"MessageRetentionPeriod\":\"7\"}"),
            ("LambdaFailureFeedbackRoleArn", "arn:role/f"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let tags = [
            aws_sdk_sns::types::Tag::builder()
                .key("z")
                .value("1")
                .build()
                .unwrap(),
            aws_sdk_sns::types::Tag::builder()
                .key("a")
                .value("2")
                .build()
                .unwrap(),
        ];
        let shape = template_shape(arn, &attributes, &tags);
        assert_eq!(
            Value::Object(shape),
            json!({
                "TopicName": "orders.fifo",
                "FifoTopic": true,
                "ContentBasedDeduplication": false,
                "KmsMasterKeyId": "alias/aws/sns",
                "ArchivePolicy": {"MessageRetentionPeriod": "7"},
                "DeliveryStatusLogging": [{"FailureFeedbackRoleArn": "arn:role/f", "Protocol": "lambda"}],
                "Tags": [{"Key": "a", "Value": "2"}, {"Key": "z", "Value": "1"}],
            })
        );
        assert_eq!(
            Value::Object(super::attributes(arn)),
            json!({"TopicArn": arn, "TopicName": "orders.fifo"})
        );
    }
}
