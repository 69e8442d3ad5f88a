//! `AWS::SQS::Queue`: physical id (and `Ref`) is the queue URL; attributes `Arn`, `QueueName`,
//! `QueueUrl`. The reader also takes a bare queue name for an id (a resource the host looks up
//! by its name after a crash) and resolves it to the URL, which `QueueUrl` then reports.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_sqs::types::QueueAttributeName;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, flag, generated_name, string, text, Readable,
    TypeSchema,
};
use cdkd_aws_common::{tag_map, template_tag_changes as tag_changes};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, json_text, parsed, with_sqs_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::SQS::Queue";

/// The longest queue name SQS takes, `.fifo` included.
const MAX_NAME: usize = 80;

/// The `AWS::SQS::Queue` provider.
#[derive(Default)]
pub struct Queue;

/// How a setting's template value is written as SQS's attribute string, and read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A whole number (templates write `30` or `"30"`).
    Number,
    /// `true` / `false`.
    Flag,
    /// A plain string.
    Text,
    /// A JSON document SQS keeps as a string (templates write an object or the string).
    Json,
}

/// The settable attributes: each template property has the SQS attribute's name. `FifoQueue`
/// is not here: SQS only takes it at create.
const SETTINGS: &[(&str, Shape)] = &[
    ("ContentBasedDeduplication", Shape::Flag),
    ("DeduplicationScope", Shape::Text),
    ("FifoThroughputLimit", Shape::Text),
    ("DelaySeconds", Shape::Number),
    ("MaximumMessageSize", Shape::Number),
    ("MessageRetentionPeriod", Shape::Number),
    ("ReceiveMessageWaitTimeSeconds", Shape::Number),
    ("VisibilityTimeout", Shape::Number),
    ("KmsMasterKeyId", Shape::Text),
    ("KmsDataKeyReusePeriodSeconds", Shape::Number),
    ("SqsManagedSseEnabled", Shape::Flag),
    ("RedrivePolicy", Shape::Json),
    ("RedriveAllowPolicy", Shape::Json),
];

/// A template value as SQS's attribute string; `None` when it has no usable value.
fn attribute_value(shape: Shape, value: &Value) -> Option<String> {
    match (shape, value) {
        (_, Value::Null) => None,
        (Shape::Flag, value) => flag(Some(value)).map(|b| b.to_string()),
        (Shape::Json, value) => Some(json_text(value)),
        (Shape::Number | Shape::Text, value) => text(Some(value)),
    }
}

/// Whether the template asks for a FIFO queue.
fn is_fifo(properties: &Map<String, Value>) -> bool {
    flag(properties.get("FifoQueue")) == Some(true)
}

/// The attributes a CreateQueue sends for `properties`, by attribute name.
fn create_attributes(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    let mut attributes = BTreeMap::new();
    // Only `true`: SQS refuses `FifoQueue=false` on a standard queue rather than ignoring it.
    if is_fifo(properties) {
        attributes.insert("FifoQueue".to_string(), "true".to_string());
    }
    for (name, shape) in SETTINGS {
        if let Some(value) = properties
            .get(*name)
            .and_then(|v| attribute_value(*shape, v))
        {
            attributes.insert((*name).to_string(), value);
        }
    }
    attributes
}

/// The value a setting returns to when the template drops it, as CloudFormation resets it;
/// `None` where there is nothing to reset (a FIFO-only setting on a standard queue, or SSE-SQS
/// while a KMS key encrypts the queue).
fn default_value(name: &str, after: &Map<String, Value>) -> Option<&'static str> {
    let fifo = is_fifo(after);
    match name {
        "DelaySeconds" | "ReceiveMessageWaitTimeSeconds" => Some("0"),
        "MaximumMessageSize" => Some("262144"),
        "MessageRetentionPeriod" => Some("345600"),
        "VisibilityTimeout" => Some("30"),
        "KmsDataKeyReusePeriodSeconds" => Some("300"),
        "KmsMasterKeyId" | "RedrivePolicy" | "RedriveAllowPolicy" => Some(""),
        "SqsManagedSseEnabled" if !after.contains_key("KmsMasterKeyId") => Some("true"),
        "ContentBasedDeduplication" if fifo => Some("false"),
        "DeduplicationScope" if fifo => Some("queue"),
        "FifoThroughputLimit" if fifo => Some("perQueue"),
        _ => None,
    }
}

/// The attributes a SetQueueAttributes sends for an update from `before` to `after`: each
/// setting whose template value changed, a removed one back at its default.
fn changed_attributes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> BTreeMap<String, String> {
    let mut attributes = BTreeMap::new();
    for (name, shape) in SETTINGS {
        let new = after.get(*name).filter(|v| !v.is_null());
        if before.get(*name).filter(|v| !v.is_null()) == new {
            continue;
        }
        let value = match new {
            Some(value) => attribute_value(*shape, value),
            None => default_value(name, after).map(ToString::to_string),
        };
        if let Some(value) = value {
            attributes.insert((*name).to_string(), value);
        }
    }
    attributes
}

/// Attributes by name as the SDK takes them.
fn sdk_attributes(attributes: BTreeMap<String, String>) -> HashMap<QueueAttributeName, String> {
    attributes
        .into_iter()
        .map(|(name, value)| (QueueAttributeName::from(name.as_str()), value))
        .collect()
}

/// The name a create gives the queue: the template's, else a generated one (a FIFO queue's
/// ends in `.fifo`, which SQS requires).
fn queue_name(request: &CreateRequest) -> String {
    string(request.properties.get("QueueName")).unwrap_or_else(|| {
        let ending = if is_fifo(&request.properties) {
            ".fifo"
        } else {
            ""
        };
        generated_name(
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
            MAX_NAME,
            false,
            ending,
        )
    })
}

/// The live queue in template shape, from its name, GetQueueAttributes(All) and its tags.
fn template_properties(
    name: &str,
    attributes: &BTreeMap<String, String>,
    tags: &BTreeMap<String, String>,
) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert("QueueName".into(), json!(name));
    if attributes.get("FifoQueue").map(String::as_str) == Some("true") {
        properties.insert("FifoQueue".into(), json!(true));
    }
    for (name, shape) in SETTINGS {
        let Some(raw) = attributes.get(*name).filter(|v| !v.is_empty()) else {
            continue;
        };
        let value = match shape {
            Shape::Number => raw
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| json!(raw)),
            Shape::Flag => match raw.as_str() {
                "true" => json!(true),
                "false" => json!(false),
                other => json!(other),
            },
            Shape::Text => json!(raw),
            Shape::Json => parsed(raw),
        };
        properties.insert((*name).to_string(), value);
    }
    if !tags.is_empty() {
        let tags: Vec<Value> = tags
            .iter()
            .map(|(key, value)| json!({"Key": key, "Value": value}))
            .collect();
        properties.insert("Tags".into(), Value::Array(tags));
    }
    properties
}

/// The queue's name: the ARN's last part, else the URL's last path segment.
fn name_of(arn: Option<&str>, url: &str) -> String {
    arn.and_then(|a| a.rsplit(':').next())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| url.trim_end_matches('/').rsplit('/').next().unwrap_or(url))
        .to_string()
}

/// The URL of a queue given by URL or by name: a URL as it is, a name through GetQueueUrl;
/// `None` when no queue has that name.
pub(crate) async fn queue_url(
    sqs: &aws_sdk_sqs::Client,
    name_or_url: &str,
) -> Result<Option<String>, ProviderError> {
    if name_or_url.starts_with("http") {
        return Ok(Some(name_or_url.to_string()));
    }
    match sqs.get_queue_url().queue_name(name_or_url).send().await {
        Ok(answer) => Ok(answer.queue_url().map(ToString::to_string)),
        Err(err) => match with_sqs_kind(aws_error(
            &format!("{TYPE}: GetQueueUrl {name_or_url}"),
            err,
        )) {
            err if err.kind == ErrorKind::NOT_FOUND => Ok(None),
            err => Err(err),
        },
    }
}

/// `Arn`, `QueueName` and `QueueUrl` of the queue at `url`.
async fn queue_attributes(
    sqs: &aws_sdk_sqs::Client,
    what: &str,
    url: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let answer = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| {
            with_sqs_kind(aws_error(
                &format!("{what}: GetQueueAttributes QueueArn of {url}"),
                e,
            ))
        })?;
    let arn = answer
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .ok_or_else(|| {
            ProviderError::other(format!("{what}: GetQueueAttributes returned no QueueArn"))
        })?;
    let mut attributes = Map::new();
    attributes.insert("QueueName".into(), json!(name_of(Some(&arn), url)));
    attributes.insert("Arn".into(), json!(arn));
    attributes.insert("QueueUrl".into(), json!(url));
    Ok(attributes)
}

#[async_trait]
impl ResourceProvider for Queue {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["QueueName", "FifoQueue", "Tags"])
            .handles(&SETTINGS.iter().map(|(name, _)| *name).collect::<Vec<_>>())
            .create_only(&["QueueName", "FifoQueue"])
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
        let name = queue_name(&request);
        let attributes = create_attributes(props);
        let tags: HashMap<String, String> = tag_map(props).into_iter().collect();
        let sqs = client(ctx).await?;
        // CreateQueue is idempotent for an identical queue, so a retried create finds its own;
        // a queue of that name with other settings is "already exists".
        let created = sqs
            .create_queue()
            .queue_name(&name)
            .set_attributes(Some(sdk_attributes(attributes)).filter(|a| !a.is_empty()))
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(|e| with_sqs_kind(aws_error(&format!("{what}: CreateQueue {name}"), e)))?;
        let url = created
            .queue_url()
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateQueue returned no URL")))?
            .to_string();
        Ok(CreateResult {
            attributes: queue_attributes(&sqs, &what, &url).await?,
            physical_id: url,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, url) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let sqs = client(ctx).await?;
        let changed = changed_attributes(before, after);
        if !changed.is_empty() {
            sqs.set_queue_attributes()
                .queue_url(url)
                .set_attributes(Some(sdk_attributes(changed)))
                .send()
                .await
                .map_err(|e| with_sqs_kind(aws_error(&format!("{what}: SetQueueAttributes"), e)))?;
        }
        let (set, removed) = tag_changes(before, after);
        if !removed.is_empty() {
            sqs.untag_queue()
                .queue_url(url)
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(|e| with_sqs_kind(aws_error(&format!("{what}: UntagQueue"), e)))?;
        }
        if !set.is_empty() {
            sqs.tag_queue()
                .queue_url(url)
                .set_tags(Some(set.into_iter().collect()))
                .send()
                .await
                .map_err(|e| with_sqs_kind(aws_error(&format!("{what}: TagQueue"), e)))?;
        }
        Ok(UpdateResult {
            attributes: queue_attributes(&sqs, &what, url).await?,
            physical_id: url.to_string(),
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
        let sqs = client(ctx).await?;
        let Some(url) = queue_url(&sqs, &request.physical_id).await? else {
            return Ok(DeleteResult::Deleted);
        };
        deleted_unless_failed(
            sqs.delete_queue()
                .queue_url(&url)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| with_sqs_kind(aws_error(&format!("{what}: DeleteQueue {url}"), e))),
        )
    }
}

#[async_trait]
impl Readable for Queue {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sqs = client(ctx).await?;
        let Some(url) = queue_url(&sqs, &request.physical_id).await? else {
            return Ok(None);
        };
        // Attributes and tags at once: the reader runs after every create and update.
        let (attributes, tags) = tokio::join!(
            sqs.get_queue_attributes()
                .queue_url(&url)
                .attribute_names(QueueAttributeName::All)
                .send(),
            sqs.list_queue_tags().queue_url(&url).send(),
        );
        let attributes = match attributes {
            Ok(answer) => answer,
            Err(err) => {
                return match with_sqs_kind(aws_error(&format!("{what}: GetQueueAttributes"), err)) {
                    err if err.kind == ErrorKind::NOT_FOUND => Ok(None),
                    err => Err(err),
                }
            }
        };
        let tags = match tags {
            Ok(answer) => answer.tags().cloned().unwrap_or_default(),
            Err(err) => {
                return match with_sqs_kind(aws_error(&format!("{what}: ListQueueTags"), err)) {
                    err if err.kind == ErrorKind::NOT_FOUND => Ok(None),
                    err => Err(err),
                }
            }
        };
        let attributes: BTreeMap<String, String> = attributes
            .attributes()
            .into_iter()
            .flatten()
            .map(|(name, value)| (name.as_str().to_string(), value.clone()))
            .collect();
        let name = name_of(attributes.get("QueueArn").map(String::as_str), &url);
        Ok(Some(template_properties(
            &name,
            &attributes,
            &tags.into_iter().collect(),
        )))
    }

    /// `Arn`, `QueueName` and `QueueUrl`, the URL resolved from a name when the id is one.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let sqs = client(ctx).await?;
        let Some(url) = queue_url(&sqs, physical_id).await? else {
            return Err(does_not_exist(what, physical_id, "SQS"));
        };
        queue_attributes(&sqs, &format!("{what}: importing {physical_id}"), &url).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn pairs(map: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
        map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn create_attributes_come_from_the_template_in_every_spelling() {
        let template = props(json!({
            "QueueName": "q.fifo",
            "FifoQueue": "true",
            "ContentBasedDeduplication": true,
            "DelaySeconds": "5",
            "VisibilityTimeout": 60,
            "SqsManagedSseEnabled": "false",
            "RedrivePolicy": {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:1:dlq", "maxReceiveCount": 3},
            "RedriveAllowPolicy": "{\"redrivePermission\":\"denyAll\"}",
            "KmsMasterKeyId": "alias/aws/sqs",
            "Tags": [{"Key": "team", "Value": "a"}],
        }));
        assert_eq!(
            pairs(&create_attributes(&template)),
            [
                ("ContentBasedDeduplication", "true"),
                ("DelaySeconds", "5"),
                ("FifoQueue", "true"),
                ("KmsMasterKeyId", "alias/aws/sqs"),
                ("RedriveAllowPolicy", "{\"redrivePermission\":\"denyAll\"}"),
                (
                    "RedrivePolicy",
                    "{\"deadLetterTargetArn\":\"arn:aws:sqs:us-east-1:1:dlq\",\"maxReceiveCount\":3}"
                ),
                ("SqsManagedSseEnabled", "false"),
                ("VisibilityTimeout", "60"),
            ]
        );
        let standard = props(json!({"FifoQueue": false, "MessageRetentionPeriod": 1209600}));
        assert_eq!(
            pairs(&create_attributes(&standard)),
            [("MessageRetentionPeriod", "1209600")]
        );
        let sdk = sdk_attributes(create_attributes(&standard));
        assert_eq!(
            sdk.get(&QueueAttributeName::MessageRetentionPeriod)
                .map(String::as_str),
            Some("1209600")
        );
    }

    #[test]
    fn an_update_sends_changes_and_resets_removed_settings_to_defaults() {
        let before = props(json!({
            "DelaySeconds": 5,
            "MaximumMessageSize": 1024,
            "MessageRetentionPeriod": 60,
            "ReceiveMessageWaitTimeSeconds": 20,
            "VisibilityTimeout": 60,
            "KmsMasterKeyId": "alias/k",
            "KmsDataKeyReusePeriodSeconds": 600,
            "RedrivePolicy": {"deadLetterTargetArn": "arn:d", "maxReceiveCount": 3},
            "RedriveAllowPolicy": {"redrivePermission": "allowAll"},
            "ContentBasedDeduplication": true,
        }));
        let after = props(json!({"VisibilityTimeout": "90"}));
        assert_eq!(
            pairs(&changed_attributes(&before, &after)),
            [
                ("DelaySeconds", "0"),
                ("KmsDataKeyReusePeriodSeconds", "300"),
                ("KmsMasterKeyId", ""),
                ("MaximumMessageSize", "262144"),
                ("MessageRetentionPeriod", "345600"),
                ("ReceiveMessageWaitTimeSeconds", "0"),
                ("RedriveAllowPolicy", ""),
                ("RedrivePolicy", ""),
                ("VisibilityTimeout", "90"),
            ]
        );
        // Unchanged settings are not sent again.
        assert!(changed_attributes(&after, &after).is_empty());
    }

    #[test]
    fn fifo_and_encryption_defaults_depend_on_the_queue() {
        let before = props(json!({
            "FifoQueue": true,
            "ContentBasedDeduplication": true,
            "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId",
            "SqsManagedSseEnabled": false,
            "KmsMasterKeyId": "alias/k",
        }));
        let after = props(json!({"FifoQueue": true, "KmsMasterKeyId": "alias/k"}));
        assert_eq!(
            pairs(&changed_attributes(&before, &after)),
            [
                ("ContentBasedDeduplication", "false"),
                ("DeduplicationScope", "queue"),
                ("FifoThroughputLimit", "perQueue"),
            ]
        );
        let mut standard_before = before.clone();
        standard_before.remove("FifoQueue");
        let no_key = props(json!({}));
        assert_eq!(
            pairs(&changed_attributes(&standard_before, &no_key)),
            [("KmsMasterKeyId", ""), ("SqsManagedSseEnabled", "true")]
        );
    }

    #[test]
    fn the_live_queue_reads_back_in_template_shape() {
        let attributes: BTreeMap<String, String> = [
            ("QueueArn", "arn:aws:sqs:us-east-1:123456789012:jobs.fifo"),
            ("FifoQueue", "true"),
            ("ContentBasedDeduplication", "false"),
            ("DeduplicationScope", "queue"),
            ("FifoThroughputLimit", "perQueue"),
            ("DelaySeconds", "0"),
            ("MaximumMessageSize", "262144"),
            ("MessageRetentionPeriod", "345600"),
            ("ReceiveMessageWaitTimeSeconds", "0"),
            ("VisibilityTimeout", "30"),
            ("SqsManagedSseEnabled", "true"),
            ("ApproximateNumberOfMessages", "7"),
            (
                "RedrivePolicy",
                "{\"deadLetterTargetArn\":\"arn:d\",\"maxReceiveCount\":3}",
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let tags: BTreeMap<String, String> = [("z", "26"), ("a", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let name = name_of(
            attributes.get("QueueArn").map(String::as_str),
            "https://sqs.us-east-1.amazonaws.com/123456789012/jobs.fifo",
        );
        assert_eq!(name, "jobs.fifo");
        let read = Value::Object(template_properties(&name, &attributes, &tags));
        assert_eq!(
            read,
            json!({
                "QueueName": "jobs.fifo",
                "FifoQueue": true,
                "ContentBasedDeduplication": false,
                "DeduplicationScope": "queue",
                "FifoThroughputLimit": "perQueue",
                "DelaySeconds": 0,
                "MaximumMessageSize": 262144,
                "MessageRetentionPeriod": 345600,
                "ReceiveMessageWaitTimeSeconds": 0,
                "VisibilityTimeout": 30,
                "SqsManagedSseEnabled": true,
                "RedrivePolicy": {"deadLetterTargetArn": "arn:d", "maxReceiveCount": 3},
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}],
            })
        );
        let standard = template_properties("q", &BTreeMap::new(), &BTreeMap::new());
        assert_eq!(Value::Object(standard), json!({"QueueName": "q"}));
        assert_eq!(name_of(None, "http://localhost:4566/000000000000/q1"), "q1");
    }

    #[test]
    fn a_generated_fifo_name_ends_in_fifo_and_fits() {
        let request = |properties: Value| CreateRequest {
            logical_id: "OrdersQueue".into(),
            stack_name: "Shop".into(),
            client_token: "t1".into(),
            properties: props(properties),
        };
        let fifo = queue_name(&request(json!({"FifoQueue": true})));
        assert!(fifo.starts_with("Shop-OrdersQueue-"), "{fifo}");
        assert!(fifo.ends_with(".fifo"), "{fifo}");
        assert_eq!(fifo.len(), "Shop-OrdersQueue-".len() + 12 + ".fifo".len());
        let standard = queue_name(&request(json!({})));
        assert_eq!(standard.len(), "Shop-OrdersQueue-".len() + 12);
        assert!(!standard.ends_with(".fifo"));
        // The same token names the queue alike on every attempt.
        assert_eq!(standard, queue_name(&request(json!({}))));
        let long = CreateRequest {
            stack_name: "S".repeat(100),
            ..request(json!({"FifoQueue": "true"}))
        };
        let long = queue_name(&long);
        assert!(long.len() <= MAX_NAME && long.ends_with(".fifo"), "{long}");
        assert_eq!(queue_name(&request(json!({"QueueName": "given"}))), "given");
    }
}
