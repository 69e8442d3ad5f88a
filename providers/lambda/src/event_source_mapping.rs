//! `AWS::Lambda::EventSourceMapping`: a poller from a queue or stream to a function. Physical id
//! (and `Ref`) = the mapping's UUID; attribute `Id` (the same) and `EventSourceMappingArn`.

use std::collections::HashMap;

use cdkd_aws_common::{aws_error, deleted_unless_failed, flag, int, require_str, strings, text};
use cdkd_aws_common::{optional, put};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use aws_sdk_lambda::types::{
    DestinationConfig, EventSourceMappingLoggingConfig, EventSourceMappingMetric,
    EventSourceMappingMetricsConfig, EventSourceMappingSystemLogLevel, EventSourcePosition, Filter,
    FilterCriteria, FunctionResponseType, OnFailure, OnSuccess, ProvisionedPollerConfig,
    ScalingConfig, SourceAccessConfiguration, SourceAccessType,
};

use crate::client;

/// The provider.
#[derive(Default)]
pub struct EventSourceMapping;

const TYPE: &str = "AWS::Lambda::EventSourceMapping";

fn attributes(uuid: &str, arn: Option<&str>) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(uuid));
    if let Some(arn) = arn {
        attributes.insert("EventSourceMappingArn".into(), json!(arn));
    }
    attributes
}

/// `AWS::Lambda::EventSourceMapping` by UUID, with its ARN.
async fn current(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    uuid: &str,
) -> Result<Option<(Map<String, Value>, Option<String>)>, ProviderError> {
    let Some(mapping) = optional(
        &format!("{what}: GetEventSourceMapping"),
        lambda.get_event_source_mapping().uuid(uuid).send().await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    put(
        &mut props,
        "FunctionName",
        mapping.function_arn().map(|f| json!(f)),
    );
    put(
        &mut props,
        "EventSourceArn",
        mapping.event_source_arn().map(|e| json!(e)),
    );
    put(
        &mut props,
        "BatchSize",
        mapping.batch_size().map(|b| json!(b)),
    );
    put(
        &mut props,
        "MaximumBatchingWindowInSeconds",
        mapping
            .maximum_batching_window_in_seconds()
            .map(|w| json!(w)),
    );
    put(
        &mut props,
        "StartingPosition",
        mapping.starting_position().map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "Enabled",
        mapping.state().map(|s| {
            json!(matches!(
                s,
                "Enabled" | "Enabling" | "Creating" | "Updating"
            ))
        }),
    );
    let access: Vec<Value> = mapping
        .source_access_configurations()
        .iter()
        .map(|c| json!({"Type": c.r#type().map(|t| t.as_str()), "URI": c.uri()}))
        .collect();
    if !access.is_empty() {
        props.insert("SourceAccessConfigurations".into(), Value::Array(access));
    }
    put(
        &mut props,
        "MetricsConfig",
        mapping
            .metrics_config()
            .filter(|m| !m.metrics().is_empty())
            .map(
                |m| json!({"Metrics": m.metrics().iter().map(|x| x.as_str()).collect::<Vec<_>>()}),
            ),
    );
    put(
        &mut props,
        "LoggingConfig",
        mapping
            .logging_config()
            .and_then(|l| l.system_log_level())
            .map(|level| json!({"SystemLogLevel": level.as_str()})),
    );
    put(
        &mut props,
        "ProvisionedPollerConfig",
        mapping.provisioned_poller_config().map(|p| {
            let mut block = Map::new();
            put(
                &mut block,
                "MinimumPollers",
                p.minimum_pollers().map(|v| json!(v)),
            );
            put(
                &mut block,
                "MaximumPollers",
                p.maximum_pollers().map(|v| json!(v)),
            );
            put(
                &mut block,
                "PollerGroupName",
                p.poller_group_name().map(|v| json!(v)),
            );
            Value::Object(block)
        }),
    );
    Ok(Some((
        props,
        mapping.event_source_mapping_arn().map(ToString::to_string),
    )))
}

#[async_trait]
impl Readable for EventSourceMapping {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let lambda = client(ctx).await?;
        Ok(current(&lambda, what, &request.physical_id)
            .await?
            .map(|(props, _)| props))
    }

    /// `Id` (the UUID) and `EventSourceMappingArn`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let lambda = client(ctx).await?;
        let arn = current(&lambda, what, physical_id)
            .await?
            .and_then(|(_, arn)| arn);
        Ok(attributes(physical_id, arn.as_deref()))
    }

    /// The mapping from the template's event source to its function: Lambda refuses a second
    /// one of a queue or stream to the same function, so the one there is the one a repeated
    /// create would meet. A source without an ARN (self-managed Kafka) cannot be searched.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let function = require_str(&request.properties, "FunctionName", what)?;
        let source = require_str(&request.properties, "EventSourceArn", what)?;
        let lambda = client(ctx).await?;
        let mut uuids = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let page = lambda
                .list_event_source_mappings()
                .function_name(function)
                .event_source_arn(source)
                .set_marker(marker.take())
                .send()
                .await;
            // A function or source that is gone has no mapping.
            let Some(page) = cdkd_aws_common::optional(
                &format!("{what}: ListEventSourceMappings of {function} from {source}"),
                page,
            )?
            else {
                return Ok(None);
            };
            uuids.extend(
                page.event_source_mappings()
                    .iter()
                    .filter_map(|m| m.uuid().map(str::to_string)),
            );
            match page.next_marker() {
                Some(next) if !next.is_empty() => marker = Some(next.to_string()),
                _ => break,
            }
        }
        match uuids.len() {
            0 => Ok(None),
            1 => Ok(uuids.pop()),
            _ => Err(ProviderError::new(
                ErrorKind::CONFLICT,
                format!(
                    "{what}: {} mappings from {source} to {function}: {}; cdkd cannot tell which one its create made (delete the extra ones, or import the right one)",
                    uuids.len(),
                    uuids.join(", ")
                ),
            )),
        }
    }
}

/// Whether Lambda refused a mapping because the function's execution role cannot read the
/// source yet (a role or policy IAM has not propagated): "The provided execution role does not
/// have permissions to call ReceiveMessage on SQS", "Cannot access stream ... Please ensure
/// the role can perform the GetRecords ... Actions on your stream".
fn role_not_ready(err: &ProviderError) -> bool {
    err.aws_code() == Some("InvalidParameterValueException")
        && (err
            .message
            .contains("execution role does not have permissions")
            || err.message.contains("Please ensure the role can perform"))
}

#[async_trait]
impl ResourceProvider for EventSourceMapping {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "FunctionName",
                "EventSourceArn",
                "BatchSize",
                "Enabled",
                "StartingPosition",
                "StartingPositionTimestamp",
                "MaximumBatchingWindowInSeconds",
                "FilterCriteria",
                "FunctionResponseTypes",
                "ScalingConfig",
                "BisectBatchOnFunctionError",
                "MaximumRecordAgeInSeconds",
                "MaximumRetryAttempts",
                "ParallelizationFactor",
                "TumblingWindowInSeconds",
                "DestinationConfig",
                "KmsKeyArn",
                "Queues",
                "Topics",
                "Tags",
                "SourceAccessConfigurations",
                "MetricsConfig",
                "LoggingConfig",
                "ProvisionedPollerConfig",
            ])
            .create_only(&[
                "EventSourceArn",
                "StartingPosition",
                "StartingPositionTimestamp",
                "Queues",
                "Topics",
            ])
            .read_and_import()
            .finds_created_in(&["FunctionName", "EventSourceArn"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let function = require_str(props, "FunctionName", &what)?;
        let call = client(ctx)
            .await?
            .create_event_source_mapping()
            .function_name(function)
            .event_source_arn(require_str(props, "EventSourceArn", &what)?)
            .set_batch_size(int(props.get("BatchSize")))
            .set_enabled(flag(props.get("Enabled")))
            .set_maximum_batching_window_in_seconds(
                int(props.get("MaximumBatchingWindowInSeconds")),
            )
            .set_starting_position(
                props
                    .get("StartingPosition")
                    .and_then(Value::as_str)
                    .map(EventSourcePosition::from),
            )
            .set_starting_position_timestamp(
                props
                    .get("StartingPositionTimestamp")
                    .and_then(Value::as_f64)
                    .map(aws_sdk_lambda::primitives::DateTime::from_secs_f64),
            )
            .set_filter_criteria(filter_criteria(props))
            .set_function_response_types(response_types(props))
            .set_scaling_config(scaling_config(props))
            .set_bisect_batch_on_function_error(flag(props.get("BisectBatchOnFunctionError")))
            .set_maximum_record_age_in_seconds(int(props.get("MaximumRecordAgeInSeconds")))
            .set_maximum_retry_attempts(int(props.get("MaximumRetryAttempts")))
            .set_parallelization_factor(int(props.get("ParallelizationFactor")))
            .set_tumbling_window_in_seconds(int(props.get("TumblingWindowInSeconds")))
            .set_destination_config(destination_config(props))
            .set_kms_key_arn(text(props.get("KmsKeyArn")))
            .set_queues(strings(props.get("Queues")))
            .set_topics(strings(props.get("Topics")))
            .set_source_access_configurations(source_access(props))
            .set_metrics_config(metrics_config(props))
            .set_logging_config(logging_config(props))
            .set_provisioned_poller_config(poller_config(props))
            .set_tags(tags(props.get("Tags")));
        // Lambda checks the source against the function's execution role: a role (or policy)
        // of the same run is refused until IAM has propagated it.
        let what = what.as_str();
        let created = cdkd_aws_common::while_iam_propagates(
            &format!("the execution role of {function}"),
            role_not_ready,
            || {
                let call = call.clone();
                async move {
                    call.send()
                        .await
                        .map_err(|e| aws_error(&format!("{what}: CreateEventSourceMapping"), e))
                }
            },
        )
        .await?;
        let uuid = created.uuid().unwrap_or_default().to_string();
        Ok(CreateResult {
            attributes: attributes(&uuid, created.event_source_mapping_arn()),
            physical_id: uuid,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let previous = &request.previous_properties;
        let was = |key: &str| previous.contains_key(key);
        let updated = client(ctx)
            .await?
            .update_event_source_mapping()
            .uuid(&request.physical_id)
            .function_name(require_str(props, "FunctionName", &what)?)
            .set_batch_size(int(props.get("BatchSize")))
            .set_enabled(flag(props.get("Enabled")))
            .set_maximum_batching_window_in_seconds(
                int(props.get("MaximumBatchingWindowInSeconds")),
            )
            // A setting removed from the template is sent empty so the removal reaches AWS (an
            // update keeps what it is not told); one never set is not sent (some sources
            // refuse settings they do not support, even empty).
            .set_filter_criteria(cleared(
                was("FilterCriteria"),
                filter_criteria(props),
                || FilterCriteria::builder().build(),
            ))
            .set_function_response_types(cleared(
                was("FunctionResponseTypes"),
                response_types(props),
                Vec::new,
            ))
            .set_scaling_config(cleared(was("ScalingConfig"), scaling_config(props), || {
                ScalingConfig::builder().build()
            }))
            .set_bisect_batch_on_function_error(flag(props.get("BisectBatchOnFunctionError")))
            .set_maximum_record_age_in_seconds(int(props.get("MaximumRecordAgeInSeconds")))
            .set_maximum_retry_attempts(int(props.get("MaximumRetryAttempts")))
            .set_parallelization_factor(int(props.get("ParallelizationFactor")))
            .set_tumbling_window_in_seconds(int(props.get("TumblingWindowInSeconds")))
            .set_destination_config(cleared(
                was("DestinationConfig"),
                destination_config(props),
                || DestinationConfig::builder().build(),
            ))
            .set_kms_key_arn(cleared(
                was("KmsKeyArn"),
                text(props.get("KmsKeyArn")),
                String::new,
            ))
            .set_source_access_configurations(cleared(
                was("SourceAccessConfigurations"),
                source_access(props),
                Vec::new,
            ))
            .set_metrics_config(cleared(was("MetricsConfig"), metrics_config(props), || {
                EventSourceMappingMetricsConfig::builder()
                    .set_metrics(Some(Vec::new()))
                    .build()
            }))
            .set_logging_config(cleared(was("LoggingConfig"), logging_config(props), || {
                EventSourceMappingLoggingConfig::builder().build()
            }))
            .set_provisioned_poller_config(cleared(
                was("ProvisionedPollerConfig"),
                poller_config(props),
                || ProvisionedPollerConfig::builder().build(),
            ))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: UpdateEventSourceMapping"), e))?;
        let before = tags(request.previous_properties.get("Tags")).unwrap_or_default();
        let after = tags(props.get("Tags")).unwrap_or_default();
        if before != after {
            let arn = updated.event_source_mapping_arn().unwrap_or_default();
            retag(&client(ctx).await?, &what, arn, &before, &after).await?;
        }
        Ok(UpdateResult {
            attributes: attributes(&request.physical_id, updated.event_source_mapping_arn()),
            physical_id: request.physical_id,
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
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_event_source_mapping()
                .uuid(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteEventSourceMapping"), e)),
        )
    }
}

/// `FilterCriteria: {Filters: [{Pattern}]}`.
fn filter_criteria(props: &Map<String, Value>) -> Option<FilterCriteria> {
    let filters = props.get("FilterCriteria")?.get("Filters")?.as_array()?;
    Some(
        FilterCriteria::builder()
            .set_filters(Some(
                filters
                    .iter()
                    .map(|f| {
                        Filter::builder()
                            .set_pattern(text(f.get("Pattern")))
                            .build()
                    })
                    .collect(),
            ))
            .build(),
    )
}

fn response_types(props: &Map<String, Value>) -> Option<Vec<FunctionResponseType>> {
    strings(props.get("FunctionResponseTypes")).map(|types| {
        types
            .iter()
            .map(|t| FunctionResponseType::from(t.as_str()))
            .collect()
    })
}

fn scaling_config(props: &Map<String, Value>) -> Option<ScalingConfig> {
    let config = props.get("ScalingConfig")?;
    Some(
        ScalingConfig::builder()
            .set_maximum_concurrency(int(config.get("MaximumConcurrency")))
            .build(),
    )
}

/// `SourceAccessConfigurations: [{Type, URI}]` (a Kafka or MQ source's credentials, VPC).
fn source_access(props: &Map<String, Value>) -> Option<Vec<SourceAccessConfiguration>> {
    let items = props.get("SourceAccessConfigurations")?.as_array()?;
    Some(
        items
            .iter()
            .map(|c| {
                SourceAccessConfiguration::builder()
                    .set_type(text(c.get("Type")).map(|t| SourceAccessType::from(t.as_str())))
                    .set_uri(text(c.get("URI")))
                    .build()
            })
            .collect(),
    )
}

/// `MetricsConfig: {Metrics: [EventCount, ...]}`.
fn metrics_config(props: &Map<String, Value>) -> Option<EventSourceMappingMetricsConfig> {
    let config = props.get("MetricsConfig")?;
    Some(
        EventSourceMappingMetricsConfig::builder()
            .set_metrics(strings(config.get("Metrics")).map(|metrics| {
                metrics
                    .iter()
                    .map(|m| EventSourceMappingMetric::from(m.as_str()))
                    .collect()
            }))
            .build(),
    )
}

/// `LoggingConfig: {SystemLogLevel}`.
fn logging_config(props: &Map<String, Value>) -> Option<EventSourceMappingLoggingConfig> {
    let config = props.get("LoggingConfig")?;
    Some(
        EventSourceMappingLoggingConfig::builder()
            .set_system_log_level(
                text(config.get("SystemLogLevel"))
                    .map(|l| EventSourceMappingSystemLogLevel::from(l.as_str())),
            )
            .build(),
    )
}

/// `ProvisionedPollerConfig: {MinimumPollers, MaximumPollers, PollerGroupName}`.
fn poller_config(props: &Map<String, Value>) -> Option<ProvisionedPollerConfig> {
    let config = props.get("ProvisionedPollerConfig")?;
    Some(
        ProvisionedPollerConfig::builder()
            .set_minimum_pollers(int(config.get("MinimumPollers")))
            .set_maximum_pollers(int(config.get("MaximumPollers")))
            .set_poller_group_name(text(config.get("PollerGroupName")))
            .build(),
    )
}

/// `DestinationConfig: {OnFailure: {Destination}, OnSuccess: {Destination}}`.
fn destination_config(props: &Map<String, Value>) -> Option<DestinationConfig> {
    let config = props.get("DestinationConfig")?;
    let destination = |key: &str| text(config.get(key).and_then(|d| d.get("Destination")));
    Some(
        DestinationConfig::builder()
            .set_on_failure(
                destination("OnFailure").map(|d| OnFailure::builder().destination(d).build()),
            )
            .set_on_success(
                destination("OnSuccess").map(|d| OnSuccess::builder().destination(d).build()),
            )
            .build(),
    )
}

/// `Tags: [{Key, Value}]` as a map.
fn tags(value: Option<&Value>) -> Option<HashMap<String, String>> {
    let items = value?.as_array()?;
    Some(
        items
            .iter()
            .filter_map(|t| {
                Some((
                    text(t.get("Key"))?,
                    text(t.get("Value")).unwrap_or_default(),
                ))
            })
            .collect(),
    )
}

/// Brings the mapping's tags from `before` to `after`.
async fn retag(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    arn: &str,
    before: &HashMap<String, String>,
    after: &HashMap<String, String>,
) -> Result<(), ProviderError> {
    let removed: Vec<String> = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .cloned()
        .collect();
    if !removed.is_empty() {
        lambda
            .untag_resource()
            .resource(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: UntagResource"), e))?;
    }
    if !after.is_empty() {
        lambda
            .tag_resource()
            .resource(arn)
            .set_tags(Some(after.clone()))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: TagResource"), e))?;
    }
    Ok(())
}

/// The value to send on an update: the template's, else an empty one when the previous
/// template had the setting (a removal), else nothing.
fn cleared<T>(was_set: bool, value: Option<T>, empty: impl FnOnce() -> T) -> Option<T> {
    match value {
        Some(value) => Some(value),
        None if was_set => Some(empty()),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_role_lambda_cannot_use_yet_is_waited_for() {
        let refused = |message: &str| {
            ProviderError::new(ErrorKind::VALIDATION, message)
                .with_aws_code("InvalidParameterValueException")
        };
        assert!(role_not_ready(&refused(
            "E: CreateEventSourceMapping: The provided execution role does not have permissions to call ReceiveMessage on SQS"
        )));
        assert!(role_not_ready(&refused(
            "E: CreateEventSourceMapping: Cannot access stream arn:s. Please ensure the role can perform the GetRecords, GetShardIterator, DescribeStream, and ListStreams Actions on your stream in IAM."
        )));
        assert!(!role_not_ready(&refused(
            "E: CreateEventSourceMapping: Unsupported MaximumBatchingWindowInSeconds"
        )));
    }
}
