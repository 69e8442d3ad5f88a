//! `AWS::Kinesis::Stream`: physical id (and `Ref`) is the stream name; attributes `Arn` and,
//! when Kinesis reports one (on-demand streams), `WarmThroughputObject`
//! (`{TargetMiBps, CurrentMiBps}`). A create waits until the stream is ACTIVE (an event source
//! mapping needs it), and so does every update step: Kinesis refuses a change while the stream
//! is UPDATING.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_kinesis::operation::create_stream::builders::CreateStreamInputBuilder;
use aws_sdk_kinesis::operation::create_stream::CreateStreamInput;
use aws_sdk_kinesis::types::{
    EncryptionType, MetricsName, RecordDistributionStrategy, ScalingType, StreamDescriptionSummary,
    StreamMode, StreamModeDetails, StreamStatus,
};
use aws_sdk_kinesis::Client;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, given_or_generated_name, int, string,
    strings, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, found, in_use_exists, live_tags, tag_map, tags_value, wait_for, while_busy,
    with_kinesis_kind,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Kinesis::Stream";

/// The longest stream name Kinesis takes.
const MAX_NAME: usize = 128;

/// How long Kinesis keeps records unless told otherwise.
const DEFAULT_RETENTION_HOURS: i32 = 24;

/// The shards of a provisioned stream whose template names none (CloudFormation's default).
const DEFAULT_SHARD_COUNT: i32 = 1;

/// The largest record Kinesis takes unless told otherwise.
const DEFAULT_MAX_RECORD_KIB: i32 = 1024;

/// How an on-demand stream places records unless told otherwise.
const DEFAULT_DISTRIBUTION: &str = "USER_PARTITION_KEY";

/// The `AWS::Kinesis::Stream` provider.
#[derive(Default)]
pub struct Stream;

/// Whether the template asks for an on-demand stream (provisioned is the default).
fn is_on_demand(properties: &Map<String, Value>) -> bool {
    string(
        properties
            .get("StreamModeDetails")
            .and_then(|d| d.get("StreamMode")),
    )
    .as_deref()
        == Some("ON_DEMAND")
}

/// The SDK's mode details for a mode.
fn mode_details(on_demand: bool) -> StreamModeDetails {
    let mode = if on_demand {
        StreamMode::OnDemand
    } else {
        StreamMode::Provisioned
    };
    StreamModeDetails::builder()
        .stream_mode(mode)
        .build()
        .expect("the stream mode is set")
}

/// The template's shard count, the default when it names none.
fn shard_count(properties: &Map<String, Value>) -> i32 {
    int(properties.get("ShardCount")).unwrap_or(DEFAULT_SHARD_COUNT)
}

/// The template's retention in hours, the default when it names none.
fn retention(properties: &Map<String, Value>) -> i32 {
    int(properties.get("RetentionPeriodHours")).unwrap_or(DEFAULT_RETENTION_HOURS)
}

/// The KMS key the template encrypts the stream with, if any.
fn encryption_key(properties: &Map<String, Value>) -> Option<String> {
    let encryption = properties.get("StreamEncryption")?;
    match string(encryption.get("EncryptionType")).as_deref() {
        None | Some("KMS") => string(encryption.get("KeyId")),
        Some(_) => None,
    }
}

/// The template's shard-level metrics.
fn metrics(properties: &Map<String, Value>) -> BTreeSet<String> {
    strings(properties.get("DesiredShardLevelMetrics"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The template's largest record size in KiB.
fn max_record_size(properties: &Map<String, Value>) -> Option<i32> {
    int(properties.get("MaxRecordSizeInKiB"))
}

/// The template's warm throughput in MiB/s.
fn warm_throughput(properties: &Map<String, Value>) -> Option<i32> {
    int(properties.get("WarmThroughputMiBps"))
}

/// The template's record distribution strategy.
fn distribution(properties: &Map<String, Value>) -> Option<String> {
    string(properties.get("RecordDistributionStrategy"))
}

/// The CreateStream for `name`: the shard count only for a provisioned stream (an on-demand
/// one has none to give).
fn create_stream_input(name: &str, properties: &Map<String, Value>) -> CreateStreamInputBuilder {
    let on_demand = is_on_demand(properties);
    CreateStreamInput::builder()
        .stream_name(name)
        .stream_mode_details(mode_details(on_demand))
        .set_shard_count((!on_demand).then(|| shard_count(properties)))
        .set_max_record_size_in_kib(max_record_size(properties))
        .set_warm_throughput_mibps(warm_throughput(properties))
        .set_record_distribution_strategy(
            distribution(properties)
                .as_deref()
                .map(RecordDistributionStrategy::from),
        )
}

/// One change to a live stream; each runs once the stream is ACTIVE.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// UpdateStreamMode, with the warm throughput a stream turning on-demand starts with.
    Mode {
        /// Whether the stream becomes on-demand.
        on_demand: bool,
        /// Its warm throughput in MiB/s.
        warm_mibps: Option<i32>,
    },
    /// UpdateShardCount (uniform scaling) to this many open shards.
    ShardCount(i32),
    /// Increase- or DecreaseStreamRetentionPeriod to this many hours.
    Retention(i32),
    /// StartStreamEncryption with this KMS key.
    StartEncryption(String),
    /// StopStreamEncryption; the key the template had, should Kinesis not report its own.
    StopEncryption(String),
    /// DisableEnhancedMonitoring of these metrics.
    DisableMetrics(Vec<String>),
    /// EnableEnhancedMonitoring of these metrics.
    EnableMetrics(Vec<String>),
    /// UpdateMaxRecordSize to this many KiB.
    MaxRecordSize(i32),
    /// UpdateStreamWarmThroughput to this many MiB/s.
    WarmThroughput(i32),
    /// UpdateStreamRecordDistributionStrategy to this strategy.
    Distribution(String),
    /// RemoveTagsFromStream of these keys.
    RemoveTags(Vec<String>),
    /// AddTagsToStream of these tags (new ones and changed values).
    AddTags(BTreeMap<String, String>),
}

/// The steps after CreateStream, which takes neither retention, encryption, metrics nor tags.
fn create_steps(properties: &Map<String, Value>) -> Vec<Step> {
    let mut steps = Vec::new();
    let hours = retention(properties);
    if hours != DEFAULT_RETENTION_HOURS {
        steps.push(Step::Retention(hours));
    }
    if let Some(key) = encryption_key(properties) {
        steps.push(Step::StartEncryption(key));
    }
    let metrics = metrics(properties);
    if !metrics.is_empty() {
        steps.push(Step::EnableMetrics(metrics.into_iter().collect()));
    }
    let tags = tag_map(properties);
    if !tags.is_empty() {
        steps.push(Step::AddTags(tags));
    }
    steps
}

/// The steps from `before` to `after`, in the order they run: mode first (the shard count
/// and the on-demand settings depend on it), then capacity, retention, encryption, metrics,
/// record size, the on-demand settings and tags. A property the template dropped goes back to
/// Kinesis's default.
fn update_steps(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<Step> {
    let mut steps = Vec::new();
    let (was_on_demand, on_demand) = (is_on_demand(before), is_on_demand(after));
    let switched = was_on_demand != on_demand;
    if switched {
        steps.push(Step::Mode {
            on_demand,
            warm_mibps: warm_throughput(after).filter(|_| on_demand),
        });
    }
    // A stream turning provisioned keeps the shards it had on demand, so its count is set too.
    if !on_demand && (switched || shard_count(before) != shard_count(after)) {
        steps.push(Step::ShardCount(shard_count(after)));
    }
    if retention(before) != retention(after) {
        steps.push(Step::Retention(retention(after)));
    }
    match (encryption_key(before), encryption_key(after)) {
        (old, Some(new)) if old.as_ref() != Some(&new) => steps.push(Step::StartEncryption(new)),
        (Some(old), None) => steps.push(Step::StopEncryption(old)),
        _ => {}
    }
    let (old_metrics, new_metrics) = (metrics(before), metrics(after));
    let removed: Vec<String> = old_metrics.difference(&new_metrics).cloned().collect();
    if !removed.is_empty() {
        steps.push(Step::DisableMetrics(removed));
    }
    let added: Vec<String> = new_metrics.difference(&old_metrics).cloned().collect();
    if !added.is_empty() {
        steps.push(Step::EnableMetrics(added));
    }
    if max_record_size(before) != max_record_size(after) {
        steps.push(Step::MaxRecordSize(
            max_record_size(after).unwrap_or(DEFAULT_MAX_RECORD_KIB),
        ));
    }
    if on_demand && !switched && warm_throughput(before) != warm_throughput(after) {
        steps.push(Step::WarmThroughput(warm_throughput(after).unwrap_or(0)));
    }
    let old_distribution = distribution(before).filter(|_| was_on_demand);
    if on_demand && old_distribution != distribution(after) {
        steps.push(Step::Distribution(
            distribution(after).unwrap_or_else(|| DEFAULT_DISTRIBUTION.to_string()),
        ));
    }
    let (old_tags, new_tags) = (tag_map(before), tag_map(after));
    let removed: Vec<String> = old_tags
        .keys()
        .filter(|k| !new_tags.contains_key(*k))
        .cloned()
        .collect();
    if !removed.is_empty() {
        steps.push(Step::RemoveTags(removed));
    }
    let set: BTreeMap<String, String> = new_tags
        .into_iter()
        .filter(|(key, value)| old_tags.get(key) != Some(value))
        .collect();
    if !set.is_empty() {
        steps.push(Step::AddTags(set));
    }
    steps
}

/// The live summary of the stream `name`; `None` when there is no such stream.
async fn describe(
    kinesis: &Client,
    what: &str,
    name: &str,
) -> Result<Option<StreamDescriptionSummary>, ProviderError> {
    let answer = kinesis
        .describe_stream_summary()
        .stream_name(name)
        .send()
        .await
        .map_err(|e| {
            with_kinesis_kind(aws_error(
                &format!("{what}: DescribeStreamSummary {name}"),
                e,
            ))
        });
    Ok(found(answer)?.and_then(|a| a.stream_description_summary().cloned()))
}

/// Waits until the stream `name` is ACTIVE; answers its summary then.
async fn wait_active(
    kinesis: &Client,
    what: &str,
    name: &str,
) -> Result<StreamDescriptionSummary, ProviderError> {
    wait_for(what, "ACTIVE", || async move {
        let summary = describe(kinesis, what, name).await?.ok_or_else(|| {
            ProviderError::new(
                ErrorKind::NOT_FOUND,
                format!("{what}: stream {name} disappeared while waiting for it to be ACTIVE"),
            )
        })?;
        Ok(match summary.stream_status() {
            StreamStatus::Active => Ok(summary),
            status => Err(status.as_str().to_string()),
        })
    })
    .await
}

/// `Arn`, and `WarmThroughputObject` when Kinesis reports one.
fn attributes(summary: &StreamDescriptionSummary) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(summary.stream_arn()));
    if let Some(warm) = summary.warm_throughput() {
        let mut object = Map::new();
        if let Some(target) = warm.target_mibps() {
            object.insert("TargetMiBps".into(), json!(target));
        }
        if let Some(current) = warm.current_mibps() {
            object.insert("CurrentMiBps".into(), json!(current));
        }
        attributes.insert("WarmThroughputObject".into(), Value::Object(object));
    }
    attributes
}

/// The live stream in template shape.
fn template_properties(
    summary: &StreamDescriptionSummary,
    tags: &BTreeMap<String, String>,
) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert("Name".into(), json!(summary.stream_name()));
    let on_demand = summary
        .stream_mode_details()
        .is_some_and(|d| d.stream_mode() == &StreamMode::OnDemand);
    let mode = if on_demand {
        "ON_DEMAND"
    } else {
        "PROVISIONED"
    };
    properties.insert("StreamModeDetails".into(), json!({"StreamMode": mode}));
    if !on_demand {
        properties.insert("ShardCount".into(), json!(summary.open_shard_count()));
    }
    properties.insert(
        "RetentionPeriodHours".into(),
        json!(summary.retention_period_hours()),
    );
    if let (Some(EncryptionType::Kms), Some(key)) = (summary.encryption_type(), summary.key_id()) {
        properties.insert(
            "StreamEncryption".into(),
            json!({"EncryptionType": "KMS", "KeyId": key}),
        );
    }
    let metrics: BTreeSet<&str> = summary
        .enhanced_monitoring()
        .iter()
        .flat_map(|m| m.shard_level_metrics())
        .map(MetricsName::as_str)
        .collect();
    if !metrics.is_empty() {
        properties.insert("DesiredShardLevelMetrics".into(), json!(metrics));
    }
    if let Some(size) = summary.max_record_size_in_kib() {
        properties.insert("MaxRecordSizeInKiB".into(), json!(size));
    }
    if on_demand {
        if let Some(strategy) = summary.record_distribution_strategy() {
            properties.insert(
                "RecordDistributionStrategy".into(),
                json!(strategy.as_str()),
            );
        }
        if let Some(target) = summary.warm_throughput().and_then(|w| w.target_mibps()) {
            properties.insert("WarmThroughputMiBps".into(), json!(target));
        }
    }
    if !tags.is_empty() {
        properties.insert("Tags".into(), tags_value(tags));
    }
    properties
}

/// The stream's tags, every page; `None` when the stream is gone.
async fn stream_tags(
    kinesis: &Client,
    what: &str,
    name: &str,
) -> Result<Option<BTreeMap<String, String>>, ProviderError> {
    let mut tags = BTreeMap::new();
    let mut start: Option<String> = None;
    loop {
        let answer = kinesis
            .list_tags_for_stream()
            .stream_name(name)
            .set_exclusive_start_tag_key(start.clone())
            .send()
            .await
            .map_err(|e| with_kinesis_kind(aws_error(&format!("{what}: ListTagsForStream"), e)));
        let Some(answer) = found(answer)? else {
            return Ok(None);
        };
        tags.extend(live_tags(answer.tags()));
        match answer.tags().last() {
            Some(last) if answer.has_more_tags() => start = Some(last.key().to_string()),
            _ => return Ok(Some(tags)),
        }
    }
}

/// Whether the live stream already is as `step` would make it (a step that only adds or
/// removes, such as tags or metrics, never is).
fn satisfied(live: &StreamDescriptionSummary, step: &Step) -> bool {
    match step {
        Step::Mode { on_demand, .. } => {
            live.stream_mode_details()
                .is_some_and(|d| d.stream_mode() == &StreamMode::OnDemand)
                == *on_demand
        }
        Step::ShardCount(count) => live.open_shard_count() == *count,
        Step::Retention(hours) => live.retention_period_hours() == *hours,
        Step::StartEncryption(key) => {
            live.encryption_type() == Some(&EncryptionType::Kms)
                && live.key_id() == Some(key.as_str())
        }
        Step::StopEncryption(_) => live.encryption_type() != Some(&EncryptionType::Kms),
        Step::MaxRecordSize(size) => live.max_record_size_in_kib() == Some(*size),
        Step::Distribution(strategy) => live
            .record_distribution_strategy()
            .is_some_and(|s| s.as_str() == strategy),
        Step::DisableMetrics(_)
        | Step::EnableMetrics(_)
        | Step::WarmThroughput(_)
        | Step::RemoveTags(_)
        | Step::AddTags(_) => false,
    }
}

/// Shard-level metric names as Kinesis's.
fn metric_names(metrics: &[String]) -> Vec<MetricsName> {
    metrics
        .iter()
        .map(|m| MetricsName::from(m.as_str()))
        .collect()
}

/// Runs `step` on the live stream `live`; answers whether it changed anything (a step the
/// stream already satisfies is skipped).
async fn run_step(
    kinesis: &Client,
    what: &str,
    live: &StreamDescriptionSummary,
    step: &Step,
) -> Result<bool, ProviderError> {
    let name = live.stream_name();
    let arn = live.stream_arn();
    // One error mapping for calls whose SDK error types differ.
    macro_rules! fail {
        ($op:literal) => {
            |e| with_kinesis_kind(aws_error(&format!("{what}: {} {name}", $op), e))
        };
    }
    if satisfied(live, step) {
        return Ok(false);
    }
    match step {
        Step::Mode {
            on_demand,
            warm_mibps,
        } => {
            kinesis
                .update_stream_mode()
                .stream_arn(arn)
                .stream_mode_details(mode_details(*on_demand))
                .set_warm_throughput_mibps(*warm_mibps)
                .send()
                .await
                .map_err(fail!("UpdateStreamMode"))?;
        }
        Step::ShardCount(count) => {
            kinesis
                .update_shard_count()
                .stream_name(name)
                .target_shard_count(*count)
                .scaling_type(ScalingType::UniformScaling)
                .send()
                .await
                .map_err(fail!("UpdateShardCount"))?;
        }
        Step::Retention(hours) => {
            if *hours > live.retention_period_hours() {
                kinesis
                    .increase_stream_retention_period()
                    .stream_name(name)
                    .retention_period_hours(*hours)
                    .send()
                    .await
                    .map_err(fail!("IncreaseStreamRetentionPeriod"))?;
            } else {
                kinesis
                    .decrease_stream_retention_period()
                    .stream_name(name)
                    .retention_period_hours(*hours)
                    .send()
                    .await
                    .map_err(fail!("DecreaseStreamRetentionPeriod"))?;
            }
        }
        Step::StartEncryption(key) => {
            kinesis
                .start_stream_encryption()
                .stream_name(name)
                .encryption_type(EncryptionType::Kms)
                .key_id(key)
                .send()
                .await
                .map_err(fail!("StartStreamEncryption"))?;
        }
        Step::StopEncryption(template_key) => {
            kinesis
                .stop_stream_encryption()
                .stream_name(name)
                .encryption_type(EncryptionType::Kms)
                .key_id(live.key_id().unwrap_or(template_key))
                .send()
                .await
                .map_err(fail!("StopStreamEncryption"))?;
        }
        Step::DisableMetrics(metrics) => {
            kinesis
                .disable_enhanced_monitoring()
                .stream_name(name)
                .set_shard_level_metrics(Some(metric_names(metrics)))
                .send()
                .await
                .map_err(fail!("DisableEnhancedMonitoring"))?;
        }
        Step::EnableMetrics(metrics) => {
            kinesis
                .enable_enhanced_monitoring()
                .stream_name(name)
                .set_shard_level_metrics(Some(metric_names(metrics)))
                .send()
                .await
                .map_err(fail!("EnableEnhancedMonitoring"))?;
        }
        Step::MaxRecordSize(size) => {
            kinesis
                .update_max_record_size()
                .stream_arn(arn)
                .max_record_size_in_kib(*size)
                .send()
                .await
                .map_err(fail!("UpdateMaxRecordSize"))?;
        }
        Step::WarmThroughput(mibps) => {
            kinesis
                .update_stream_warm_throughput()
                .stream_name(name)
                .warm_throughput_mibps(*mibps)
                .send()
                .await
                .map_err(fail!("UpdateStreamWarmThroughput"))?;
        }
        Step::Distribution(strategy) => {
            kinesis
                .update_stream_record_distribution_strategy()
                .stream_arn(arn)
                .record_distribution_strategy(RecordDistributionStrategy::from(strategy.as_str()))
                .send()
                .await
                .map_err(fail!("UpdateStreamRecordDistributionStrategy"))?;
        }
        Step::RemoveTags(keys) => {
            kinesis
                .remove_tags_from_stream()
                .stream_name(name)
                .set_tag_keys(Some(keys.clone()))
                .send()
                .await
                .map_err(fail!("RemoveTagsFromStream"))?;
        }
        Step::AddTags(tags) => {
            kinesis
                .add_tags_to_stream()
                .stream_name(name)
                .set_tags(Some(tags.clone().into_iter().collect()))
                .send()
                .await
                .map_err(fail!("AddTagsToStream"))?;
        }
    }
    Ok(true)
}

/// Runs `steps` one after the other, each once the stream is ACTIVE again; answers the
/// summary of the ACTIVE stream after the last.
async fn run_steps(
    kinesis: &Client,
    what: &str,
    name: &str,
    steps: &[Step],
) -> Result<StreamDescriptionSummary, ProviderError> {
    let mut live = wait_active(kinesis, what, name).await?;
    for step in steps {
        let changed = while_busy(what, || run_step(kinesis, what, &live, step)).await?;
        if changed {
            live = wait_active(kinesis, what, name).await?;
        }
    }
    Ok(live)
}

#[async_trait]
impl ResourceProvider for Stream {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "ShardCount",
                "StreamModeDetails",
                "RetentionPeriodHours",
                "StreamEncryption",
                "DesiredShardLevelMetrics",
                "MaxRecordSizeInKiB",
                "WarmThroughputMiBps",
                "RecordDistributionStrategy",
                "Tags",
            ])
            .create_only(&["Name"])
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
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let kinesis = client(ctx).await?;
        create_stream_input(&name, props)
            .send_with(&kinesis)
            .await
            .map_err(|e| {
                in_use_exists(with_kinesis_kind(aws_error(
                    &format!("{what}: CreateStream {name}"),
                    e,
                )))
            })?;
        let live = run_steps(&kinesis, &what, &name, &create_steps(props)).await?;
        Ok(CreateResult {
            attributes: attributes(&live),
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
        let name = request.physical_id.as_str();
        let steps = update_steps(&request.previous_properties, &request.properties);
        let kinesis = client(ctx).await?;
        let live = run_steps(&kinesis, &what, name, &steps).await?;
        Ok(UpdateResult {
            attributes: attributes(&live),
            physical_id: name.to_string(),
            replaced: false,
            ..Default::default()
        })
    }

    /// DeleteStream with its consumers, as CloudFormation deletes; no wait for it to be gone.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let kinesis = client(ctx).await?;
        let (kinesis, what) = (&kinesis, what.as_str());
        // A stream still CREATING or UPDATING refuses DeleteStream with "in use" for a while.
        deleted_unless_failed(
            while_busy(what, || async move {
                kinesis
                    .delete_stream()
                    .stream_name(name)
                    .enforce_consumer_deletion(true)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        with_kinesis_kind(aws_error(&format!("{what}: DeleteStream {name}"), e))
                    })
            })
            .await,
        )
    }
}

#[async_trait]
impl Readable for Stream {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let kinesis = client(ctx).await?;
        let name = request.physical_id.as_str();
        let (summary, tags) = tokio::join!(
            describe(&kinesis, what, name),
            stream_tags(&kinesis, what, name)
        );
        let (Some(summary), Some(tags)) = (summary?, tags?) else {
            return Ok(None);
        };
        if summary.stream_status() == &StreamStatus::Deleting {
            return Ok(None);
        }
        Ok(Some(template_properties(&summary, &tags)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let kinesis = client(ctx).await?;
        match describe(&kinesis, what, physical_id).await? {
            Some(summary) => Ok(attributes(&summary)),
            None => Err(does_not_exist(what, physical_id, "Kinesis")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_kinesis::primitives::DateTime;
    use aws_sdk_kinesis::types::{EnhancedMetrics, WarmThroughputObject};

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn tags(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_provisioned_stream_is_created_with_its_shards() {
        let input = create_stream_input(
            "orders",
            &props(json!({"ShardCount": "3", "RetentionPeriodHours": 48})),
        )
        .build()
        .unwrap();
        assert_eq!(input.stream_name(), Some("orders"));
        assert_eq!(input.shard_count(), Some(3));
        assert_eq!(
            input.stream_mode_details().map(|d| d.stream_mode()),
            Some(&StreamMode::Provisioned)
        );
        assert_eq!(input.max_record_size_in_kib(), None);
        assert_eq!(input.record_distribution_strategy(), None);
        let defaulted = create_stream_input("s", &props(json!({}))).build().unwrap();
        assert_eq!(defaulted.shard_count(), Some(DEFAULT_SHARD_COUNT));
    }

    #[test]
    fn an_on_demand_stream_is_created_without_shards() {
        let input = create_stream_input(
            "events",
            &props(json!({
                "StreamModeDetails": {"StreamMode": "ON_DEMAND"},
                "ShardCount": 4,
                "MaxRecordSizeInKiB": 2048,
                "WarmThroughputMiBps": 10,
                "RecordDistributionStrategy": "AUTO",
            })),
        )
        .build()
        .unwrap();
        assert_eq!(input.shard_count(), None);
        assert_eq!(
            input.stream_mode_details().map(|d| d.stream_mode()),
            Some(&StreamMode::OnDemand)
        );
        assert_eq!(input.max_record_size_in_kib(), Some(2048));
        assert_eq!(input.warm_throughput_mibps(), Some(10));
        assert_eq!(
            input.record_distribution_strategy(),
            Some(&RecordDistributionStrategy::Auto)
        );
    }

    #[test]
    fn a_create_sets_what_create_stream_cannot_after_it() {
        let steps = create_steps(&props(json!({
            "RetentionPeriodHours": 168,
            "StreamEncryption": {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"},
            "DesiredShardLevelMetrics": ["OutgoingBytes", "IncomingBytes"],
            "Tags": [{"Key": "team", "Value": "a"}],
        })));
        assert_eq!(
            steps,
            [
                Step::Retention(168),
                Step::StartEncryption("alias/aws/kinesis".into()),
                Step::EnableMetrics(vec!["IncomingBytes".into(), "OutgoingBytes".into()]),
                Step::AddTags(tags(&[("team", "a")])),
            ]
        );
        assert!(create_steps(&props(json!({"RetentionPeriodHours": "24"}))).is_empty());
    }

    #[test]
    fn update_steps_run_mode_first_and_tags_last() {
        let before = props(json!({
            "ShardCount": 2,
            "RetentionPeriodHours": 24,
            "DesiredShardLevelMetrics": ["IncomingBytes", "OutgoingBytes"],
            "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}],
        }));
        let after = props(json!({
            "StreamModeDetails": {"StreamMode": "ON_DEMAND"},
            "WarmThroughputMiBps": 20,
            "RetentionPeriodHours": 72,
            "StreamEncryption": {"EncryptionType": "KMS", "KeyId": "alias/k"},
            "DesiredShardLevelMetrics": ["IncomingBytes", "IteratorAgeMilliseconds"],
            "MaxRecordSizeInKiB": 4096,
            "RecordDistributionStrategy": "AUTO",
            "Tags": [{"Key": "a", "Value": "10"}, {"Key": "c", "Value": "3"}],
        }));
        assert_eq!(
            update_steps(&before, &after),
            [
                Step::Mode {
                    on_demand: true,
                    warm_mibps: Some(20)
                },
                Step::Retention(72),
                Step::StartEncryption("alias/k".into()),
                Step::DisableMetrics(vec!["OutgoingBytes".into()]),
                Step::EnableMetrics(vec!["IteratorAgeMilliseconds".into()]),
                Step::MaxRecordSize(4096),
                Step::Distribution("AUTO".into()),
                Step::RemoveTags(vec!["b".into()]),
                Step::AddTags(tags(&[("a", "10"), ("c", "3")])),
            ]
        );
        assert!(update_steps(&after, &after).is_empty());
    }

    #[test]
    fn removed_settings_go_back_to_kinesis_defaults() {
        let before = props(json!({
            "StreamModeDetails": {"StreamMode": "ON_DEMAND"},
            "RetentionPeriodHours": 72,
            "StreamEncryption": {"EncryptionType": "KMS", "KeyId": "alias/k"},
            "MaxRecordSizeInKiB": 4096,
            "WarmThroughputMiBps": 20,
            "RecordDistributionStrategy": "AUTO",
        }));
        let still_on_demand = props(json!({"StreamModeDetails": {"StreamMode": "ON_DEMAND"}}));
        assert_eq!(
            update_steps(&before, &still_on_demand),
            [
                Step::Retention(DEFAULT_RETENTION_HOURS),
                Step::StopEncryption("alias/k".into()),
                Step::MaxRecordSize(DEFAULT_MAX_RECORD_KIB),
                Step::WarmThroughput(0),
                Step::Distribution(DEFAULT_DISTRIBUTION.into()),
            ]
        );
        // Back to provisioned: the mode, then the template's shards (default one); the
        // on-demand settings no longer apply.
        let provisioned = props(json!({"ShardCount": 5}));
        assert_eq!(
            update_steps(&still_on_demand, &provisioned),
            [
                Step::Mode {
                    on_demand: false,
                    warm_mibps: None
                },
                Step::ShardCount(5),
            ]
        );
        assert!(update_steps(&provisioned, &props(json!({"ShardCount": "5"}))).is_empty());
        assert_eq!(
            update_steps(&provisioned, &props(json!({}))),
            [Step::ShardCount(DEFAULT_SHARD_COUNT)]
        );
    }

    fn summary(
        on_demand: bool,
    ) -> aws_sdk_kinesis::types::builders::StreamDescriptionSummaryBuilder {
        StreamDescriptionSummary::builder()
            .stream_name("orders")
            .stream_arn("arn:aws:kinesis:us-east-1:123456789012:stream/orders")
            .stream_status(StreamStatus::Active)
            .stream_mode_details(mode_details(on_demand))
            .retention_period_hours(48)
            .stream_creation_timestamp(DateTime::from_secs(1_700_000_000))
            .open_shard_count(3)
            .max_record_size_in_kib(1024)
            .set_enhanced_monitoring(Some(Vec::new()))
    }

    #[test]
    fn a_provisioned_stream_reads_back_in_template_shape() {
        let live = summary(false)
            .set_enhanced_monitoring(None)
            .enhanced_monitoring(
                EnhancedMetrics::builder()
                    .shard_level_metrics(MetricsName::OutgoingBytes)
                    .shard_level_metrics(MetricsName::IncomingBytes)
                    .build(),
            )
            .encryption_type(EncryptionType::Kms)
            .key_id("alias/aws/kinesis")
            .build()
            .unwrap();
        let read = template_properties(&live, &tags(&[("z", "26"), ("a", "1")]));
        assert_eq!(
            Value::Object(read),
            json!({
                "Name": "orders",
                "StreamModeDetails": {"StreamMode": "PROVISIONED"},
                "ShardCount": 3,
                "RetentionPeriodHours": 48,
                "StreamEncryption": {"EncryptionType": "KMS", "KeyId": "alias/aws/kinesis"},
                "DesiredShardLevelMetrics": ["IncomingBytes", "OutgoingBytes"],
                "MaxRecordSizeInKiB": 1024,
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}],
            })
        );
        assert_eq!(
            Value::Object(attributes(&live)),
            json!({"Arn": "arn:aws:kinesis:us-east-1:123456789012:stream/orders"})
        );
    }

    #[test]
    fn an_on_demand_stream_reads_back_without_shards() {
        let live = summary(true)
            .encryption_type(EncryptionType::None)
            .record_distribution_strategy(RecordDistributionStrategy::UserPartitionKey)
            .warm_throughput(
                WarmThroughputObject::builder()
                    .target_mibps(20)
                    .current_mibps(8)
                    .build(),
            )
            .build()
            .unwrap();
        assert_eq!(
            Value::Object(template_properties(&live, &BTreeMap::new())),
            json!({
                "Name": "orders",
                "StreamModeDetails": {"StreamMode": "ON_DEMAND"},
                "RetentionPeriodHours": 48,
                "MaxRecordSizeInKiB": 1024,
                "RecordDistributionStrategy": "USER_PARTITION_KEY",
                "WarmThroughputMiBps": 20,
            })
        );
        assert_eq!(
            Value::Object(attributes(&live)),
            json!({
                "Arn": "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
                "WarmThroughputObject": {"TargetMiBps": 20, "CurrentMiBps": 8},
            })
        );
    }
}
