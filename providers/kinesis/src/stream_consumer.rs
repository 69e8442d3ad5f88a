//! `AWS::Kinesis::StreamConsumer`: physical id (and `Ref`) is the consumer ARN; attributes
//! `ConsumerARN`, `ConsumerName`, `ConsumerStatus`, `ConsumerCreationTimestamp` (ISO 8601) and
//! `StreamARN`. Every property is create-only (CloudFormation has no update for it either), so
//! a change replaces the consumer. A create waits until the consumer is ACTIVE: it cannot
//! subscribe to shards before.

use aws_sdk_kinesis::operation::register_stream_consumer::builders::RegisterStreamConsumerInputBuilder;
use aws_sdk_kinesis::operation::register_stream_consumer::RegisterStreamConsumerInput;
use aws_sdk_kinesis::types::{ConsumerDescription, ConsumerStatus};
use aws_sdk_kinesis::Client;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, require_str, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, found, in_use_exists, iso_time, live_tags, tag_map, tags_value, wait_for, while_busy,
    with_kinesis_kind,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Kinesis::StreamConsumer";

/// The `AWS::Kinesis::StreamConsumer` provider.
#[derive(Default)]
pub struct StreamConsumer;

/// The RegisterStreamConsumer a template asks for, tags included (they are create-only).
fn register_input(
    properties: &Map<String, Value>,
    what: &str,
) -> Result<RegisterStreamConsumerInputBuilder, ProviderError> {
    let tags = tag_map(properties);
    Ok(RegisterStreamConsumerInput::builder()
        .stream_arn(require_str(properties, "StreamARN", what)?)
        .consumer_name(require_str(properties, "ConsumerName", what)?)
        .set_tags((!tags.is_empty()).then(|| tags.into_iter().collect())))
}

/// The attributes CloudFormation reports for a consumer.
fn attributes(consumer: &ConsumerDescription) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("ConsumerARN".into(), json!(consumer.consumer_arn()));
    attributes.insert("ConsumerName".into(), json!(consumer.consumer_name()));
    attributes.insert(
        "ConsumerStatus".into(),
        json!(consumer.consumer_status().as_str()),
    );
    attributes.insert(
        "ConsumerCreationTimestamp".into(),
        json!(iso_time(consumer.consumer_creation_timestamp())),
    );
    attributes.insert("StreamARN".into(), json!(consumer.stream_arn()));
    attributes
}

/// The live consumer in template shape.
fn template_properties(
    consumer: &ConsumerDescription,
    tags: &std::collections::BTreeMap<String, String>,
) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert("ConsumerName".into(), json!(consumer.consumer_name()));
    properties.insert("StreamARN".into(), json!(consumer.stream_arn()));
    if !tags.is_empty() {
        properties.insert("Tags".into(), tags_value(tags));
    }
    properties
}

/// The live description of the consumer `arn`; `None` when there is no such consumer.
async fn describe(
    kinesis: &Client,
    what: &str,
    arn: &str,
) -> Result<Option<ConsumerDescription>, ProviderError> {
    let answer = kinesis
        .describe_stream_consumer()
        .consumer_arn(arn)
        .send()
        .await
        .map_err(|e| {
            with_kinesis_kind(aws_error(
                &format!("{what}: DescribeStreamConsumer {arn}"),
                e,
            ))
        });
    Ok(found(answer)?.and_then(|a| a.consumer_description().cloned()))
}

/// Waits until the consumer `arn` is ACTIVE; answers its description then.
async fn wait_active(
    kinesis: &Client,
    what: &str,
    arn: &str,
) -> Result<ConsumerDescription, ProviderError> {
    wait_for(what, "ACTIVE", || async move {
        let consumer = describe(kinesis, what, arn).await?.ok_or_else(|| {
            ProviderError::new(
                ErrorKind::NOT_FOUND,
                format!("{what}: consumer {arn} disappeared while waiting for it to be ACTIVE"),
            )
        })?;
        Ok(match consumer.consumer_status() {
            ConsumerStatus::Active => Ok(consumer),
            status => Err(status.as_str().to_string()),
        })
    })
    .await
}

#[async_trait]
impl ResourceProvider for StreamConsumer {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["StreamARN", "ConsumerName", "Tags"])
            .all_create_only()
            .read_and_import()
            .finds_created_in(&["StreamARN", "ConsumerName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let input = register_input(&request.properties, &what)?;
        let kinesis = client(ctx).await?;
        let registered = input.send_with(&kinesis).await.map_err(|e| {
            in_use_exists(with_kinesis_kind(aws_error(
                &format!("{what}: RegisterStreamConsumer"),
                e,
            )))
        })?;
        let arn = registered
            .consumer()
            .map(|c| c.consumer_arn().to_string())
            .filter(|a| !a.is_empty())
            .ok_or_else(|| {
                ProviderError::other(format!(
                    "{what}: RegisterStreamConsumer returned no consumer ARN"
                ))
            })?;
        let consumer = wait_active(&kinesis, &what, &arn).await?;
        Ok(CreateResult {
            attributes: attributes(&consumer),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Err(ProviderError::validation(format!(
            "{TYPE} {}: stream consumers are replaced, not updated",
            request.logical_id
        )))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let kinesis = client(ctx).await?;
        let (kinesis, what) = (&kinesis, what.as_str());
        // A consumer still CREATING refuses to be deregistered with "in use" for a while.
        deleted_unless_failed(
            while_busy(what, || async move {
                kinesis
                    .deregister_stream_consumer()
                    .consumer_arn(arn)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        with_kinesis_kind(aws_error(
                            &format!("{what}: DeregisterStreamConsumer {arn}"),
                            e,
                        ))
                    })
            })
            .await,
        )
    }
}

#[async_trait]
impl Readable for StreamConsumer {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let kinesis = client(ctx).await?;
        let arn = request.physical_id.as_str();
        let Some(consumer) = describe(&kinesis, what, arn).await? else {
            return Ok(None);
        };
        if consumer.consumer_status() == &ConsumerStatus::Deleting {
            return Ok(None);
        }
        let tags = kinesis
            .list_tags_for_resource()
            .resource_arn(arn)
            .send()
            .await
            .map_err(|e| {
                with_kinesis_kind(aws_error(&format!("{what}: ListTagsForResource {arn}"), e))
            });
        let Some(tags) = found(tags)? else {
            return Ok(None);
        };
        Ok(Some(template_properties(
            &consumer,
            &live_tags(tags.tags()),
        )))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let kinesis = client(ctx).await?;
        match describe(&kinesis, what, physical_id).await? {
            Some(consumer) => Ok(attributes(&consumer)),
            None => Err(does_not_exist(what, physical_id, "Kinesis")),
        }
    }

    /// The consumer the template names on its stream (the name is required, so a repeated
    /// registration would meet it), by its ARN.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let stream = require_str(&request.properties, "StreamARN", what)?;
        let name = require_str(&request.properties, "ConsumerName", what)?;
        let answer = client(ctx)
            .await?
            .describe_stream_consumer()
            .stream_arn(stream)
            .consumer_name(name)
            .send()
            .await
            .map_err(|e| {
                with_kinesis_kind(aws_error(
                    &format!("{what}: DescribeStreamConsumer {name} of {stream}"),
                    e,
                ))
            });
        Ok(found(answer)?
            .and_then(|a| {
                a.consumer_description()
                    .map(|c| c.consumer_arn().to_string())
            })
            .filter(|arn| !arn.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_kinesis::primitives::DateTime;

    const STREAM: &str = "arn:aws:kinesis:us-east-1:123456789012:stream/orders";
    const CONSUMER: &str =
        "arn:aws:kinesis:us-east-1:123456789012:stream/orders/consumer/reader:1700000000";

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_consumer_is_registered_with_its_tags() {
        let input = register_input(
            &props(json!({
                "StreamARN": STREAM,
                "ConsumerName": "reader",
                "Tags": [{"Key": "team", "Value": "a"}],
            })),
            "T L",
        )
        .unwrap()
        .build()
        .unwrap();
        assert_eq!(input.stream_arn(), Some(STREAM));
        assert_eq!(input.consumer_name(), Some("reader"));
        assert_eq!(
            input.tags().and_then(|t| t.get("team")).map(String::as_str),
            Some("a")
        );
        let untagged = register_input(
            &props(json!({"StreamARN": STREAM, "ConsumerName": "reader"})),
            "T L",
        )
        .unwrap()
        .build()
        .unwrap();
        assert_eq!(untagged.tags(), None);
        let err = register_input(&props(json!({"ConsumerName": "reader"})), "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
    }

    #[test]
    fn a_consumer_reads_back_in_template_shape_with_its_attributes() {
        let consumer = ConsumerDescription::builder()
            .consumer_name("reader")
            .consumer_arn(CONSUMER)
            .consumer_status(ConsumerStatus::Active)
            .consumer_creation_timestamp(DateTime::from_secs(1_700_000_000))
            .stream_arn(STREAM)
            .build()
            .unwrap();
        let tags = [
            ("z".to_string(), "26".to_string()),
            ("a".into(), "1".into()),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            Value::Object(template_properties(&consumer, &tags)),
            json!({
                "ConsumerName": "reader",
                "StreamARN": STREAM,
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}],
            })
        );
        assert_eq!(
            Value::Object(attributes(&consumer)),
            json!({
                "ConsumerARN": CONSUMER,
                "ConsumerName": "reader",
                "ConsumerStatus": "ACTIVE",
                "ConsumerCreationTimestamp": "2023-11-14T22:13:20Z",
                "StreamARN": STREAM,
            })
        );
    }
}
