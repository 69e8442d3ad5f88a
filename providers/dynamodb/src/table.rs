//! `AWS::DynamoDB::Table`: physical id (and `Ref`) is the table name; attributes `Arn` and
//! `StreamArn` (only while a stream is on). A create waits until the table is ACTIVE (event
//! source mappings and writers need it) before the settings DynamoDB only changes by separate
//! calls: time to live, point-in-time recovery, contributor insights, Kinesis streaming and the
//! stream's resource policy. `ImportSourceSpecification` is not handled.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::operation::create_table::builders::CreateTableInputBuilder;
use aws_sdk_dynamodb::operation::update_table::builders::UpdateTableInputBuilder;
use aws_sdk_dynamodb::operation::update_table::UpdateTableInput;
use aws_sdk_dynamodb::types::{
    ApproximateCreationDateTimePrecision, BillingMode, TableClass, TableDescription,
    TimeToLiveStatus, UpdateKinesisStreamingConfiguration,
};
use aws_sdk_dynamodb::Client;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, flag, given_or_generated_name, optional,
    string, tag_pairs, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult, Wait,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::indexes::{by_name, capacity_for_switch, gsi_steps, gsi_update, GsiStep};
use crate::input::{
    attribute_definitions, create_table_input, default_sse, is_provisioned, number,
    on_demand_throughput, policy_document, provisioned_throughput, sse_specification,
    stream_specification, stream_view, tags, unlimited_on_demand, warm_throughput,
};
use crate::settings::{
    disable_kinesis, enable_kinesis, set_insights, set_policy, set_recovery, set_ttl,
};
use crate::{client, describe, wait_active, wait_replicas, while_busy, with_dynamodb_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::DynamoDB::Table";

/// The longest table name DynamoDB takes.
const MAX_NAME: usize = 255;

/// The `AWS::DynamoDB::Table` provider.
#[derive(Default)]
pub struct Table;

/// A template value with numbers and booleans written as strings read as what they are, so
/// `"5"` and `5` compare equal.
pub(crate) fn normalized(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => match s.as_str() {
            "true" => json!(true),
            "false" => json!(false),
            _ => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| json!(s)),
        },
        Some(Value::Array(items)) => items.iter().map(|i| normalized(Some(i))).collect(),
        Some(Value::Object(map)) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalized(Some(v))))
                .collect(),
        ),
        Some(other) => other.clone(),
    }
}

/// Whether `key` differs between the two templates, spelling aside.
fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    normalized(before.get(key)) != normalized(after.get(key))
}

/// An UpdateTable of `name` with nothing in it yet.
fn update_of(name: &str) -> UpdateTableInputBuilder {
    UpdateTableInput::builder().table_name(name)
}

/// The UpdateTable calls from `before` to `after`, one change each and in the order they run
/// (DynamoDB takes one index change, stream change or capacity change per call): index
/// deletions, then billing and capacity, stream, encryption, class and deletion protection,
/// then index creations and throughput changes.
pub(crate) fn update_steps(
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<Vec<UpdateTableInputBuilder>, String> {
    let provisioned = is_provisioned(after);
    let switched = is_provisioned(before) != provisioned;
    let indexes = gsi_steps(before, after, !switched && provisioned);
    let index_step = |step: &GsiStep| -> Result<UpdateTableInputBuilder, String> {
        let update =
            update_of(name).global_secondary_index_updates(gsi_update(step, before, provisioned)?);
        Ok(match step {
            // A new index's key attributes must be defined in the same call.
            GsiStep::Create(_) => update.set_attribute_definitions(attribute_definitions(
                after.get("AttributeDefinitions"),
            )?),
            _ => update,
        })
    };
    let mut steps = Vec::new();
    for step in indexes.iter().filter(|s| matches!(s, GsiStep::Delete(_))) {
        steps.push(index_step(step)?);
    }
    if switched && provisioned {
        steps.push(
            update_of(name)
                .billing_mode(BillingMode::Provisioned)
                .set_provisioned_throughput(provisioned_throughput(
                    after.get("ProvisionedThroughput"),
                )?)
                .set_global_secondary_index_updates(
                    Some(capacity_for_switch(before, after)?).filter(|u| !u.is_empty()),
                ),
        );
    } else if switched {
        steps.push(
            update_of(name)
                .billing_mode(BillingMode::PayPerRequest)
                .set_on_demand_throughput(on_demand_throughput(after.get("OnDemandThroughput"))),
        );
    } else if provisioned && changed(before, after, "ProvisionedThroughput") {
        steps.push(
            update_of(name).set_provisioned_throughput(provisioned_throughput(
                after.get("ProvisionedThroughput"),
            )?),
        );
    } else if !provisioned && changed(before, after, "OnDemandThroughput") {
        steps.push(
            update_of(name).on_demand_throughput(
                on_demand_throughput(after.get("OnDemandThroughput"))
                    .unwrap_or_else(unlimited_on_demand),
            ),
        );
    }
    // Warm throughput only grows; a dropped one stays where it is.
    if let Some(warm) = warm_throughput(after.get("WarmThroughput"))
        .filter(|_| changed(before, after, "WarmThroughput"))
    {
        steps.push(update_of(name).warm_throughput(warm));
    }
    let (old_view, new_view) = (stream_view(before), stream_view(after));
    if old_view != new_view {
        // The view type of a stream cannot change: it is turned off, then on again.
        if old_view.is_some() {
            steps.push(update_of(name).stream_specification(stream_specification(None)));
        }
        if let Some(view) = new_view.as_deref() {
            steps.push(update_of(name).stream_specification(stream_specification(Some(view))));
        }
    }
    if changed(before, after, "SSESpecification") {
        steps.push(update_of(name).sse_specification(
            sse_specification(after.get("SSESpecification")).unwrap_or_else(default_sse),
        ));
    }
    if changed(before, after, "TableClass") {
        let class = string(after.get("TableClass")).unwrap_or_else(|| "STANDARD".into());
        steps.push(update_of(name).table_class(TableClass::from(class.as_str())));
    }
    if changed(before, after, "DeletionProtectionEnabled") {
        steps.push(update_of(name).deletion_protection_enabled(
            flag(after.get("DeletionProtectionEnabled")).unwrap_or(false),
        ));
    }
    for step in indexes.iter().filter(|s| !matches!(s, GsiStep::Delete(_))) {
        steps.push(index_step(step)?);
    }
    Ok(steps)
}

/// `Arn`, and `StreamArn` while a stream is on.
pub(crate) fn attributes(table: &TableDescription) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let Some(arn) = table.table_arn() {
        attributes.insert("Arn".into(), json!(arn));
    }
    let streaming = table
        .stream_specification()
        .is_some_and(|s| s.stream_enabled());
    if let Some(stream) = table.latest_stream_arn().filter(|_| streaming) {
        attributes.insert("StreamArn".into(), json!(stream));
    }
    attributes
}

/// A template's `ContributorInsightsSpecification` as (enabled, mode).
fn insights(value: Option<&Value>) -> (bool, Option<String>) {
    let value = value.cloned().unwrap_or(Value::Null);
    (
        flag(value.get("Enabled")).unwrap_or(false),
        string(value.get("Mode")),
    )
}

/// A template's `PointInTimeRecoverySpecification` as (enabled, period in days).
fn recovery(properties: &Map<String, Value>) -> (bool, Option<i64>) {
    let value = properties
        .get("PointInTimeRecoverySpecification")
        .cloned()
        .unwrap_or(Value::Null);
    let enabled = flag(value.get("PointInTimeRecoveryEnabled")).unwrap_or(false);
    (
        enabled,
        number(value.get("RecoveryPeriodInDays")).filter(|_| enabled),
    )
}

/// A template's `KinesisStreamSpecification` as (stream ARN, precision).
fn kinesis(properties: &Map<String, Value>) -> Option<(String, Option<String>)> {
    let value = properties.get("KinesisStreamSpecification")?;
    Some((
        string(value.get("StreamArn"))?,
        string(value.get("ApproximateCreationDateTimePrecision")),
    ))
}

/// A template's time to live attribute when it is enabled.
pub(crate) fn ttl_attribute(properties: &Map<String, Value>) -> Option<String> {
    let value = properties.get("TimeToLiveSpecification")?;
    if flag(value.get("Enabled")) == Some(true) {
        string(value.get("AttributeName"))
    } else {
        None
    }
}

/// The stream's resource policy a template asks for.
pub(crate) fn stream_policy(properties: &Map<String, Value>) -> Option<String> {
    policy_document(properties.get("StreamSpecification")?.get("ResourcePolicy"))
}

/// The template's tags by key.
fn tag_map(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    tag_pairs(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Contributor insights of each global secondary index whose setting differs between the
/// templates (an index new in `after` counts as off before).
fn index_insight_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Vec<(String, (bool, Option<String>))> {
    let old = by_name(before);
    by_name(after)
        .into_iter()
        .filter_map(|(name, index)| {
            let new = insights(index.get("ContributorInsightsSpecification"));
            let previous = old
                .get(&name)
                .map(|o| insights(o.get("ContributorInsightsSpecification")))
                .unwrap_or((false, None));
            // An index recreated starts without insights, so an enabled one is set again.
            let recreated = old.get(&name).is_some_and(|o| {
                normalized(o.get("KeySchema")) != normalized(index.get("KeySchema"))
                    || normalized(o.get("Projection")) != normalized(index.get("Projection"))
            });
            (new != previous || (recreated && new.0)).then_some((name, new))
        })
        .collect()
}

/// The live description of the table `name`, which must exist.
pub(crate) async fn existing(
    ddb: &Client,
    what: &str,
    name: &str,
) -> Result<TableDescription, ProviderError> {
    describe(ddb, what, name).await?.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::NOT_FOUND,
            format!("{what}: table {name} not found"),
        )
    })
}

/// Sends a CreateTable; an existing table of that name is `ALREADY_EXISTS` (DynamoDB answers
/// it with "in use").
pub(crate) async fn create_table(
    ddb: &Client,
    what: &str,
    name: &str,
    input: CreateTableInputBuilder,
) -> Result<(), ProviderError> {
    input.send_with(ddb).await.map(|_| ()).map_err(|e| {
        let err = with_dynamodb_kind(aws_error(&format!("{what}: CreateTable {name}"), e));
        if err.aws_code() == Some("ResourceInUseException") {
            ProviderError::new(ErrorKind::ALREADY_EXISTS, err.message.to_string())
                .with_aws_code("ResourceInUseException")
        } else {
            err
        }
    })
}

/// Sends the UpdateTable calls of [`update_steps`] one after the other, each once the previous
/// one is done (an index backfilling too; with `replicas`, every replica of a global table).
pub(crate) async fn run_steps(
    ddb: &Client,
    what: &str,
    name: &str,
    steps: &[UpdateTableInputBuilder],
    replicas: bool,
) -> Result<(), ProviderError> {
    for step in steps {
        if replicas {
            wait_replicas(ddb, what, name, true).await?;
        } else {
            wait_active(ddb, what, name, true).await?;
        }
        while_busy(what, || async move {
            step.clone()
                .send_with(ddb)
                .await
                .map(|_| ())
                .map_err(|e| with_dynamodb_kind(aws_error(&format!("{what}: UpdateTable"), e)))
        })
        .await?;
    }
    Ok(())
}

/// Turns time to live to what `after` asks for, from what is live (a table keeps one TTL
/// attribute; another one is set after the old one is turned off).
pub(crate) async fn sync_ttl(
    ddb: &Client,
    what: &str,
    name: &str,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let live_ttl = ddb
        .describe_time_to_live()
        .table_name(name)
        .send()
        .await
        .map_err(|e| with_dynamodb_kind(aws_error(&format!("{what}: DescribeTimeToLive"), e)))?;
    let live_ttl = live_ttl.time_to_live_description();
    let live_attribute = live_ttl
        .filter(|d| {
            matches!(
                d.time_to_live_status(),
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            )
        })
        .and_then(|d| d.attribute_name())
        .map(ToString::to_string);
    let wanted = ttl_attribute(after);
    if live_attribute != wanted {
        if let Some(old) = live_attribute.as_deref() {
            set_ttl(ddb, what, name, old, false).await?;
        }
        if let Some(new) = wanted.as_deref() {
            set_ttl(ddb, what, name, new, true).await?;
        }
    }
    Ok(())
}

/// Brings the settings DynamoDB changes by calls of their own, time to live aside, from
/// `before` to `after`: point-in-time recovery, contributor insights (table and indexes),
/// Kinesis streaming, tags, and the resource policies of table and stream. `table` is the live
/// description once the UpdateTable calls are done and `old_stream` the stream before them;
/// answers the description once a Kinesis change settled.
pub(crate) async fn apply_settings(
    ddb: &Client,
    what: &str,
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    mut table: TableDescription,
    old_stream: Option<&str>,
) -> Result<TableDescription, ProviderError> {
    let arn = table.table_arn().unwrap_or_default().to_string();
    if recovery(before) != recovery(after) {
        set_recovery(ddb, what, name, recovery(after)).await?;
    }
    let (old_insights, new_insights) = (
        insights(before.get("ContributorInsightsSpecification")),
        insights(after.get("ContributorInsightsSpecification")),
    );
    if old_insights != new_insights && (old_insights.0 || new_insights.0) {
        set_insights(ddb, what, name, None, new_insights).await?;
    }
    let index_insights = index_insight_changes(before, after);
    if !index_insights.is_empty() {
        wait_active(ddb, what, name, true).await?;
    }
    for (index, setting) in index_insights {
        set_insights(ddb, what, name, Some(index.as_str()), setting).await?;
    }
    let (old_kinesis, new_kinesis) = (kinesis(before), kinesis(after));
    match (&old_kinesis, &new_kinesis) {
        (Some(old), Some(new)) if old.0 == new.0 => {
            if old.1 != new.1 {
                let config = UpdateKinesisStreamingConfiguration::builder()
                    .set_approximate_creation_date_time_precision(
                        new.1
                            .as_deref()
                            .map(ApproximateCreationDateTimePrecision::from),
                    )
                    .build();
                let config = &config;
                while_busy(what, || async move {
                    ddb.update_kinesis_streaming_destination()
                        .table_name(name)
                        .stream_arn(&new.0)
                        .update_kinesis_streaming_configuration(config.clone())
                        .send()
                        .await
                        .map(|_| ())
                        .map_err(|e| {
                            with_dynamodb_kind(aws_error(
                                &format!("{what}: UpdateKinesisStreamingDestination"),
                                e,
                            ))
                        })
                })
                .await?;
            }
        }
        _ => {
            if let Some(old) = &old_kinesis {
                disable_kinesis(ddb, what, name, &old.0).await?;
            }
            if let Some(new) = &new_kinesis {
                enable_kinesis(ddb, what, name, new).await?;
            }
        }
    }
    let (old_tags, new_tags) = (tag_map(before), tag_map(after));
    let removed: Vec<String> = old_tags
        .keys()
        .filter(|k| !new_tags.contains_key(*k))
        .cloned()
        .collect();
    if !removed.is_empty() {
        ddb.untag_resource()
            .resource_arn(&arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(|e| with_dynamodb_kind(aws_error(&format!("{what}: UntagResource"), e)))?;
    }
    let set: Vec<_> = tags(after)
        .into_iter()
        .filter(|t| old_tags.get(t.key()).map(String::as_str) != Some(t.value()))
        .collect();
    if !set.is_empty() {
        ddb.tag_resource()
            .resource_arn(&arn)
            .set_tags(Some(set))
            .send()
            .await
            .map_err(|e| with_dynamodb_kind(aws_error(&format!("{what}: TagResource"), e)))?;
    }
    if changed(before, after, "ResourcePolicy") {
        let policy = policy_document(after.get("ResourcePolicy"));
        set_policy(ddb, what, &arn, policy.as_deref()).await?;
    }
    let new_stream = table.latest_stream_arn().map(ToString::to_string);
    let stream_on = table
        .stream_specification()
        .is_some_and(|s| s.stream_enabled());
    let (old_policy, new_policy) = (stream_policy(before), stream_policy(after));
    if let (true, Some(stream)) = (stream_on, new_stream.as_deref()) {
        // A new stream starts without a policy; an unchanged one keeps its own.
        let same_stream = old_stream == Some(stream);
        if (old_policy != new_policy || !same_stream) && (new_policy.is_some() || same_stream) {
            set_policy(ddb, what, stream, new_policy.as_deref()).await?;
        }
    }
    if old_kinesis != new_kinesis {
        table = wait_active(ddb, what, name, false).await?;
    }
    Ok(table)
}

#[async_trait]
impl ResourceProvider for Table {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "TableName",
                "AttributeDefinitions",
                "KeySchema",
                "BillingMode",
                "ProvisionedThroughput",
                "OnDemandThroughput",
                "WarmThroughput",
                "GlobalSecondaryIndexes",
                "LocalSecondaryIndexes",
                "StreamSpecification",
                "TimeToLiveSpecification",
                "PointInTimeRecoverySpecification",
                "SSESpecification",
                "ContributorInsightsSpecification",
                "DeletionProtectionEnabled",
                "TableClass",
                "Tags",
                "KinesisStreamSpecification",
                "ResourcePolicy",
            ])
            // KeySchema and LocalSecondaryIndexes cannot change on a live table either
            // (CloudFormation replaces the table for them).
            .create_only(&["TableName", "KeySchema", "LocalSecondaryIndexes"])
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
        let name = given_or_generated_name(&request, "TableName", MAX_NAME, false);
        let input = create_table_input(&name, props)
            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        let ddb = client(ctx).await?;
        create_table(&ddb, &what, &name, input).await?;
        // The settings below need the table ACTIVE, and so do a dependent's item writes and
        // stream readers; `--no-wait` takes the CREATING table's description when nothing
        // follows (its ARN and stream ARN are there already).
        let follows = ttl_attribute(props).is_some()
            || recovery(props).0
            || insights(props.get("ContributorInsightsSpecification")).0
            || !index_insight_changes(&Map::new(), props).is_empty()
            || kinesis(props).is_some()
            || stream_policy(props).is_some();
        let mut table = if ctx.wait() == Wait::None && !follows {
            describe(&ddb, &what, &name).await?.ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::NOT_FOUND,
                    format!("{what}: table {name} disappeared right after its create"),
                )
            })?
        } else {
            wait_active(&ddb, &what, &name, false).await?
        };
        if let Some(attribute) = ttl_attribute(props) {
            set_ttl(&ddb, &what, &name, &attribute, true).await?;
        }
        if recovery(props).0 {
            set_recovery(&ddb, &what, &name, recovery(props)).await?;
        }
        let table_insights = insights(props.get("ContributorInsightsSpecification"));
        if table_insights.0 {
            set_insights(&ddb, &what, &name, None, table_insights).await?;
        }
        let index_insights = index_insight_changes(&Map::new(), props);
        if !index_insights.is_empty() {
            wait_active(&ddb, &what, &name, true).await?;
        }
        for (index, setting) in index_insights {
            set_insights(&ddb, &what, &name, Some(index.as_str()), setting).await?;
        }
        if let Some(destination) = kinesis(props) {
            enable_kinesis(&ddb, &what, &name, &destination).await?;
        }
        if let (Some(policy), Some(stream)) = (stream_policy(props), table.latest_stream_arn()) {
            set_policy(&ddb, &what, stream, Some(&policy)).await?;
        }
        if kinesis(props).is_some() {
            table = wait_active(&ddb, &what, &name, false).await?;
        }
        Ok(CreateResult {
            attributes: attributes(&table),
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
        let (before, after, name) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let steps = update_steps(name, before, after)
            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        let ddb = client(ctx).await?;
        let (ddb, what) = (&ddb, what.as_str());
        let old_stream = existing(ddb, what, name)
            .await?
            .latest_stream_arn()
            .map(ToString::to_string);
        run_steps(ddb, what, name, &steps, false).await?;
        let table = wait_active(ddb, what, name, false).await?;
        sync_ttl(ddb, what, name, after).await?;
        let table =
            apply_settings(ddb, what, name, before, after, table, old_stream.as_deref()).await?;
        Ok(UpdateResult {
            attributes: attributes(&table),
            physical_id: name.to_string(),
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
        let name = request.physical_id.as_str();
        let ddb = client(ctx).await?;
        let (ddb, what) = (&ddb, what.as_str());
        let Some(table) = describe(ddb, what, name).await? else {
            return Ok(DeleteResult::Deleted);
        };
        if table.deletion_protection_enabled() == Some(true) {
            return Err(ProviderError::validation(format!(
                "{what}: table {name} has deletion protection enabled; set DeletionProtectionEnabled to false (and deploy) before deleting it"
            )));
        }
        // A table still being created or updated refuses DeleteTable with "in use" for a while.
        deleted_unless_failed(
            while_busy(what, || async move {
                ddb.delete_table()
                    .table_name(name)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        with_dynamodb_kind(aws_error(&format!("{what}: DeleteTable {name}"), e))
                    })
            })
            .await,
        )
    }
}

#[async_trait]
impl Readable for Table {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let name = request.physical_id.as_str();
        let ddb = client(ctx).await?;
        let Some(table) = describe(&ddb, what, name).await? else {
            return Ok(None);
        };
        let arn = table.table_arn().unwrap_or_default().to_string();
        let (ttl, backups, tags) = tokio::join!(
            ddb.describe_time_to_live().table_name(name).send(),
            ddb.describe_continuous_backups().table_name(name).send(),
            list_tags(&ddb, what, &arn),
        );
        let ttl = optional(&format!("{what}: DescribeTimeToLive"), ttl)?;
        let backups = match backups {
            Ok(answer) => Some(answer),
            Err(err) => match with_dynamodb_kind(aws_error(
                &format!("{what}: DescribeContinuousBackups"),
                err,
            )) {
                err if err.kind == ErrorKind::NOT_FOUND => None,
                err => return Err(err),
            },
        };
        let pitr = backups.as_ref().and_then(|b| {
            b.continuous_backups_description()
                .and_then(|d| d.point_in_time_recovery_description())
        });
        Ok(Some(crate::read::template_shape(
            &table,
            ttl.as_ref().and_then(|t| t.time_to_live_description()),
            pitr,
            &tags?,
            &request.properties,
        )))
    }

    /// `Arn` and `StreamArn`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ddb = client(ctx).await?;
        let table = describe(&ddb, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "DynamoDB"))?;
        Ok(attributes(&table))
    }
}

/// Every tag of the table `arn`, page by page.
pub(crate) async fn list_tags(
    ddb: &Client,
    what: &str,
    arn: &str,
) -> Result<Vec<aws_sdk_dynamodb::types::Tag>, ProviderError> {
    let mut all = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let page = ddb
            .list_tags_of_resource()
            .resource_arn(arn)
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| {
                with_dynamodb_kind(aws_error(&format!("{what}: ListTagsOfResource"), e))
            })?;
        all.extend(page.tags().iter().cloned());
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => return Ok(all),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::StreamSpecification;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn gsi(name: &str, key: &str) -> Value {
        json!({
            "IndexName": name,
            "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "ALL"},
            "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}
        })
    }

    fn built(steps: Vec<UpdateTableInputBuilder>) -> Vec<UpdateTableInput> {
        steps.into_iter().map(|s| s.build().unwrap()).collect()
    }

    #[test]
    fn an_update_runs_one_change_per_call_in_order() {
        let before = props(json!({
            "AttributeDefinitions": [{"AttributeName": "a", "AttributeType": "S"}],
            "ProvisionedThroughput": {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1},
            "StreamSpecification": {"StreamViewType": "KEYS_ONLY"},
            "GlobalSecondaryIndexes": [gsi("old", "a"), gsi("rekeyed", "a")],
            "DeletionProtectionEnabled": true,
            "TableClass": "STANDARD_INFREQUENT_ACCESS"
        }));
        let after = props(json!({
            "AttributeDefinitions": [
                {"AttributeName": "a", "AttributeType": "S"},
                {"AttributeName": "b", "AttributeType": "S"}
            ],
            "ProvisionedThroughput": {"ReadCapacityUnits": "2", "WriteCapacityUnits": 1},
            "StreamSpecification": {"StreamViewType": "NEW_IMAGE"},
            "GlobalSecondaryIndexes": [gsi("rekeyed", "b"), gsi("new", "b")],
            "SSESpecification": {"SSEEnabled": true}
        }));
        let steps = built(update_steps("t", &before, &after).unwrap());
        let summary: Vec<String> = steps
            .iter()
            .map(|s| {
                assert_eq!(s.table_name(), Some("t"));
                if let [update] = s.global_secondary_index_updates() {
                    if let Some(d) = update.delete() {
                        return format!("delete {}", d.index_name());
                    }
                    if let Some(c) = update.create() {
                        assert_eq!(s.attribute_definitions().len(), 2);
                        return format!("create {}", c.index_name());
                    }
                }
                assert!(s.global_secondary_index_updates().is_empty());
                if let Some(t) = s.provisioned_throughput() {
                    return format!("capacity {}", t.read_capacity_units());
                }
                if let Some(stream) = s.stream_specification() {
                    return format!("stream {}", stream.stream_enabled());
                }
                if let Some(sse) = s.sse_specification() {
                    return format!("sse {:?}", sse.enabled());
                }
                if let Some(class) = s.table_class() {
                    return format!("class {}", class.as_str());
                }
                if let Some(protect) = s.deletion_protection_enabled() {
                    return format!("protect {protect}");
                }
                "other".to_string()
            })
            .collect();
        assert_eq!(
            summary,
            [
                "delete old",
                "delete rekeyed",
                "capacity 2",
                "stream false",
                "stream true",
                "sse Some(true)",
                "class STANDARD",
                "protect false",
                "create rekeyed",
                "create new",
            ]
        );
        assert!(update_steps("t", &after, &after).unwrap().is_empty());
    }

    #[test]
    fn billing_switches_carry_what_dynamodb_wants_with_them() {
        let on_demand = props(json!({
            "BillingMode": "PAY_PER_REQUEST",
            "GlobalSecondaryIndexes": [gsi("i", "a")],
            "OnDemandThroughput": {"MaxReadRequestUnits": 50}
        }));
        let provisioned = props(json!({
            "BillingMode": "PROVISIONED",
            "ProvisionedThroughput": {"ReadCapacityUnits": 4, "WriteCapacityUnits": 4},
            "GlobalSecondaryIndexes": [gsi("i", "a")]
        }));
        let to_provisioned = built(update_steps("t", &on_demand, &provisioned).unwrap());
        assert_eq!(to_provisioned.len(), 1);
        assert_eq!(
            to_provisioned[0].billing_mode(),
            Some(&BillingMode::Provisioned)
        );
        assert_eq!(
            to_provisioned[0]
                .provisioned_throughput()
                .unwrap()
                .read_capacity_units(),
            4
        );
        assert_eq!(to_provisioned[0].global_secondary_index_updates().len(), 1);
        let to_on_demand = built(update_steps("t", &provisioned, &on_demand).unwrap());
        assert_eq!(to_on_demand.len(), 1);
        assert_eq!(
            to_on_demand[0].billing_mode(),
            Some(&BillingMode::PayPerRequest)
        );
        assert_eq!(
            to_on_demand[0]
                .on_demand_throughput()
                .unwrap()
                .max_read_request_units(),
            Some(50)
        );
        // Limits dropped from an on-demand table are lifted with -1.
        let mut unlimited = on_demand.clone();
        unlimited.remove("OnDemandThroughput");
        let lifted = built(update_steps("t", &on_demand, &unlimited).unwrap());
        assert_eq!(
            lifted[0]
                .on_demand_throughput()
                .unwrap()
                .max_write_request_units(),
            Some(-1)
        );
    }

    #[test]
    fn removed_settings_go_back_to_defaults() {
        let before = props(json!({
            "SSESpecification": {"SSEEnabled": true, "SSEType": "KMS"},
            "TableClass": "STANDARD_INFREQUENT_ACCESS",
            "DeletionProtectionEnabled": "true",
            "StreamSpecification": {"StreamViewType": "NEW_IMAGE"}
        }));
        let steps = built(update_steps("t", &before, &Map::new()).unwrap());
        assert_eq!(steps.len(), 4);
        assert!(!steps[0].stream_specification().unwrap().stream_enabled());
        assert_eq!(steps[1].sse_specification().unwrap().enabled(), Some(false));
        assert_eq!(steps[2].table_class(), Some(&TableClass::Standard));
        assert_eq!(steps[3].deletion_protection_enabled(), Some(false));
    }

    #[test]
    fn settings_read_from_the_template() {
        let template = props(json!({
            "TimeToLiveSpecification": {"AttributeName": "exp", "Enabled": "true"},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true, "RecoveryPeriodInDays": "7"},
            "KinesisStreamSpecification": {"StreamArn": "arn:k", "ApproximateCreationDateTimePrecision": "MILLISECOND"},
            "StreamSpecification": {"StreamViewType": "KEYS_ONLY", "ResourcePolicy": {"PolicyDocument": {"a": 1}}},
            "GlobalSecondaryIndexes": [
                {"IndexName": "i", "ContributorInsightsSpecification": {"Enabled": true, "Mode": "THROTTLED_KEYS"}},
                {"IndexName": "j"}
            ]
        }));
        assert_eq!(ttl_attribute(&template).as_deref(), Some("exp"));
        assert_eq!(recovery(&template), (true, Some(7)));
        assert_eq!(
            kinesis(&template),
            Some(("arn:k".to_string(), Some("MILLISECOND".to_string())))
        );
        assert_eq!(stream_policy(&template).as_deref(), Some("{\"a\":1}"));
        assert_eq!(
            index_insight_changes(&Map::new(), &template),
            [("i".to_string(), (true, Some("THROTTLED_KEYS".to_string())))]
        );
        assert_eq!(
            ttl_attribute(&props(
                json!({"TimeToLiveSpecification": {"AttributeName": "x", "Enabled": false}})
            )),
            None
        );
        assert_eq!(recovery(&Map::new()), (false, None));
    }

    #[test]
    fn attributes_name_the_stream_only_while_it_is_on() {
        let on = TableDescription::builder()
            .table_arn("arn:aws:dynamodb:us-east-1:1:table/t")
            .latest_stream_arn("arn:aws:dynamodb:us-east-1:1:table/t/stream/x")
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .build()
                    .unwrap(),
            )
            .build();
        assert_eq!(
            Value::Object(attributes(&on)),
            json!({
                "Arn": "arn:aws:dynamodb:us-east-1:1:table/t",
                "StreamArn": "arn:aws:dynamodb:us-east-1:1:table/t/stream/x"
            })
        );
        let off = TableDescription::builder()
            .table_arn("arn:t")
            .latest_stream_arn("arn:old-stream")
            .build();
        assert_eq!(Value::Object(attributes(&off)), json!({"Arn": "arn:t"}));
    }
}
