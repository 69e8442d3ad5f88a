//! `AWS::DynamoDB::GlobalTable` (global tables version 2019.11.21): one table DynamoDB
//! replicates to every region of `Replicas`. Physical id (and `Ref`) is the table name;
//! attributes `Arn`, `StreamArn` (while a stream is on) and `TableId` are the stack region's.
//!
//! The table is created in the stack's region, whose replica the template must list; every
//! other replica is added by an UpdateTable of its own, since DynamoDB takes one replica change
//! per call and none while another is under way. Shared settings (keys, indexes, billing, write
//! capacity, stream, time to live) change in the stack's region and DynamoDB carries them to the
//! replicas. Each replica's own settings (tags, deletion protection, recovery, insights, Kinesis,
//! policies) change in its region through `AWS::DynamoDB::Table`'s helpers, applied to a
//! table-shaped view of that replica ([`regional_view`]); its key, class and read capacity go
//! through ReplicaUpdates, and auto scaling through UpdateTableReplicaAutoScaling.

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_dynamodb::operation::update_table_replica_auto_scaling::{
    builders::UpdateTableReplicaAutoScalingInputBuilder, UpdateTableReplicaAutoScalingInput,
};
use aws_sdk_dynamodb::types::{
    AutoScalingPolicyUpdate, AutoScalingSettingsUpdate,
    AutoScalingTargetTrackingScalingPolicyConfigurationUpdate, CreateReplicationGroupMemberAction,
    DeleteReplicationGroupMemberAction, GlobalSecondaryIndexAutoScalingUpdate,
    OnDemandThroughputOverride, ProvisionedThroughputOverride, ReplicaAutoScalingUpdate,
    ReplicaDescription, ReplicaGlobalSecondaryIndex, ReplicaGlobalSecondaryIndexAutoScalingUpdate,
    ReplicationGroupUpdate, TableClass, TableDescription, Tag, TimeToLiveDescription,
    UpdateReplicationGroupMemberAction,
};
use aws_sdk_dynamodb::Client;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, flag, given_or_generated_name, int, optional,
    string, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::indexes::{by_name, gsi_steps, GsiStep};
use crate::input::{create_table_input, is_provisioned, number};
use crate::read::order_like;
use crate::settings::set_ttl;
use crate::table::{
    apply_settings, attributes, create_table, existing, list_tags, normalized, run_steps,
    stream_policy, sync_ttl, ttl_attribute, update_steps,
};
use crate::{
    client, describe, regional_client, wait_active, wait_replicas, while_busy, with_dynamodb_kind,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::DynamoDB::GlobalTable";

/// The longest table name DynamoDB takes.
const MAX_NAME: usize = 255;

/// A replica's (or replica index's) read capacity settings.
const READS: &str = "ReadProvisionedThroughputSettings";
/// The write capacity settings of the table or an index.
const WRITES: &str = "WriteProvisionedThroughputSettings";
/// A replica's (or replica index's) on-demand read limit.
const READ_LIMIT: &str = "ReadOnDemandThroughputSettings";
/// The on-demand write limit of the table or an index.
const WRITE_LIMIT: &str = "WriteOnDemandThroughputSettings";
/// The auto scaling inside [`WRITES`].
const WRITE_SCALING: &str = "WriteCapacityAutoScalingSettings";
/// The auto scaling inside [`READS`].
const READ_SCALING: &str = "ReadCapacityAutoScalingSettings";

/// The key a KMS-encrypted replica falls back to when its template no longer names one.
const AWS_MANAGED_KEY: &str = "alias/aws/dynamodb";

/// Top-level keys every replica's view takes as they are.
const SHARED_KEYS: &[&str] = &[
    "KeySchema",
    "AttributeDefinitions",
    "BillingMode",
    "LocalSecondaryIndexes",
    "TimeToLiveSpecification",
    "WarmThroughput",
];

/// Replica keys `AWS::DynamoDB::Table` spells alike, so its helpers read them from the view.
const REPLICA_KEYS: &[&str] = &[
    "TableClass",
    "DeletionProtectionEnabled",
    "Tags",
    "ResourcePolicy",
    "PointInTimeRecoverySpecification",
    "ContributorInsightsSpecification",
    "KinesisStreamSpecification",
];

/// Replica keys this plugin does not apply, with why. `Replicas` is handled as a whole, so a
/// template using one cannot go to Cloud Control for it alone: it is refused rather than
/// deployed without it.
const UNSUPPORTED_REPLICA_KEYS: &[(&str, &str)] = &[
    (
        "GlobalTableSettingsReplicationMode",
        "settings replication modes are not managed by this plugin",
    ),
    (
        "DisassociationProtectionEnabled",
        "replica disassociation is not managed by this plugin",
    ),
];

/// The `AWS::DynamoDB::GlobalTable` provider.
#[derive(Default)]
pub struct GlobalTable;

/// The template's replicas by region.
fn replicas(props: &Map<String, Value>) -> BTreeMap<String, Value> {
    props
        .get("Replicas")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| Some((string(r.get("Region"))?, r.clone())))
        .collect()
}

/// What the template asks that cannot work, found before anything changes: replicas without a
/// region or listed twice, the stack region's missing, replica and index keys this plugin does
/// not apply, and provisioned billing without the write auto scaling a global table's capacity
/// needs.
fn check(props: &Map<String, Value>, region: &str) -> Result<(), String> {
    let list = props
        .get("Replicas")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty())
        .ok_or("Replicas must list at least the replica in the stack's region")?;
    let mut seen = BTreeSet::new();
    for replica in list {
        let name = string(replica.get("Region")).ok_or("every replica needs a Region")?;
        if !seen.insert(name.clone()) {
            return Err(format!("Replicas lists {name} twice"));
        }
        for (key, why) in UNSUPPORTED_REPLICA_KEYS {
            if replica.get(*key).is_some_and(|v| !v.is_null()) {
                return Err(format!("Replicas ({name}): {key} is not supported: {why}"));
            }
        }
        if replica
            .get("ReplicaStreamSpecification")
            .and_then(|s| s.get("Tags"))
            .is_some()
        {
            return Err(format!(
                "Replicas ({name}): ReplicaStreamSpecification.Tags is not supported: this plugin tags tables, not their streams"
            ));
        }
    }
    for (index, settings) in by_name(props) {
        for key in [READS, READ_LIMIT] {
            if settings.get(key).is_some_and(|v| !v.is_null()) {
                return Err(format!(
                    "GlobalSecondaryIndexes ({index}): {key} is not supported: this plugin sets index reads per replica (Replicas[].GlobalSecondaryIndexes)"
                ));
            }
        }
    }
    if !seen.contains(region) {
        return Err(format!(
            "Replicas must include the stack's region {region}: the table is created there and the other replicas are added to it"
        ));
    }
    if is_provisioned(props)
        && props
            .get(WRITES)
            .and_then(|w| w.get(WRITE_SCALING))
            .is_none()
    {
        return Err(format!(
            "BillingMode PROVISIONED needs {WRITES}.{WRITE_SCALING}: a global table's write capacity is auto scaled"
        ));
    }
    Ok(())
}

/// The capacity a setting starts with: fixed `ReadCapacityUnits`, else its auto scaling's seed,
/// else its minimum.
fn initial_units(settings: Option<&Value>, scaling: &str) -> Option<i64> {
    let settings = settings?;
    number(settings.get("ReadCapacityUnits")).or_else(|| {
        let scaling = settings.get(scaling)?;
        number(scaling.get("SeedCapacity")).or_else(|| number(scaling.get("MinCapacity")))
    })
}

/// Fixed read capacity, where auto scaling does not own it.
fn fixed_read(settings: Option<&Value>) -> Option<i64> {
    number(settings?.get("ReadCapacityUnits"))
}

/// An on-demand read limit.
fn max_read(settings: Option<&Value>) -> Option<i64> {
    number(settings?.get("MaxReadRequestUnits"))
}

/// `OnDemandThroughput` in `AWS::DynamoDB::Table`'s shape from the read and write limits.
fn limits(read: Option<&Value>, write: Option<&Value>) -> Option<Value> {
    let mut out = Map::new();
    if let Some(units) = max_read(read) {
        out.insert("MaxReadRequestUnits".into(), json!(units));
    }
    if let Some(units) = write.and_then(|w| number(w.get("MaxWriteRequestUnits"))) {
        out.insert("MaxWriteRequestUnits".into(), json!(units));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// A replica's settings for the index `name`.
fn replica_index<'a>(replica: &'a Value, name: &str) -> Option<&'a Value> {
    replica
        .get("GlobalSecondaryIndexes")?
        .as_array()?
        .iter()
        .find(|i| string(i.get("IndexName")).as_deref() == Some(name))
}

/// One setting of a replica's index.
fn index_setting<'a>(replica: &'a Value, name: &str, key: &str) -> Option<&'a Value> {
    replica_index(replica, name).and_then(|i| i.get(key))
}

/// The replica in its region as an `AWS::DynamoDB::Table` template: the shared settings with the
/// replica's own, so Table's request builders, update steps and settings serve each replica.
/// `live`, the stack region's description when billing stays provisioned, supplies what auto
/// scaling owns (write capacity, and read capacity without fixed units), so an update compares
/// only what the template fixes and sets capacity auto scaling moved to where it is.
fn regional_view(
    props: &Map<String, Value>,
    replica: &Value,
    live: Option<&TableDescription>,
) -> Map<String, Value> {
    let mut view = Map::new();
    for key in SHARED_KEYS {
        if let Some(value) = props.get(*key) {
            view.insert((*key).into(), value.clone());
        }
    }
    for key in REPLICA_KEYS {
        if let Some(value) = replica.get(*key) {
            view.insert((*key).into(), value.clone());
        }
    }
    let mut stream = props
        .get("StreamSpecification")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(policy) = replica
        .get("ReplicaStreamSpecification")
        .and_then(|s| s.get("ResourcePolicy"))
    {
        stream.insert("ResourcePolicy".into(), policy.clone());
    }
    if !stream.is_empty() {
        view.insert("StreamSpecification".into(), Value::Object(stream));
    }
    if let Some(mut sse) = props
        .get("SSESpecification")
        .and_then(Value::as_object)
        .cloned()
    {
        if let Some(key) = replica
            .get("SSESpecification")
            .and_then(|s| s.get("KMSMasterKeyId"))
        {
            sse.insert("KMSMasterKeyId".into(), key.clone());
        }
        view.insert("SSESpecification".into(), Value::Object(sse));
    }
    let provisioned = is_provisioned(props);
    let live_capacity = live.and_then(TableDescription::provisioned_throughput);
    let write = live_capacity
        .and_then(|c| c.write_capacity_units())
        .or_else(|| initial_units(props.get(WRITES), WRITE_SCALING));
    let reads = replica.get(READS);
    // Without any read setting a replica reads as much as it writes.
    let read = fixed_read(reads)
        .or_else(|| live_capacity.and_then(|c| c.read_capacity_units()))
        .or_else(|| initial_units(reads, READ_SCALING))
        .or(write);
    if let (true, Some(read), Some(write)) = (provisioned, read, write) {
        view.insert(
            "ProvisionedThroughput".into(),
            json!({"ReadCapacityUnits": read, "WriteCapacityUnits": write}),
        );
    }
    if let Some(limits) = limits(replica.get(READ_LIMIT), props.get(WRITE_LIMIT)) {
        view.insert("OnDemandThroughput".into(), limits);
    }
    let indexes: Vec<Value> = props
        .get("GlobalSecondaryIndexes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|index| {
            let name = string(index.get("IndexName")).unwrap_or_default();
            let mut out = Map::new();
            for key in ["IndexName", "KeySchema", "Projection", "WarmThroughput"] {
                if let Some(value) = index.get(key) {
                    out.insert(key.into(), value.clone());
                }
            }
            let live_index = live
                .and_then(|t| {
                    t.global_secondary_indexes()
                        .iter()
                        .find(|i| i.index_name() == Some(name.as_str()))
                })
                .and_then(|i| i.provisioned_throughput());
            let index_write = live_index
                .and_then(|c| c.write_capacity_units())
                .or_else(|| initial_units(index.get(WRITES), WRITE_SCALING))
                .or(write);
            let own_reads = index_setting(replica, &name, READS);
            let index_read = fixed_read(own_reads)
                .or_else(|| live_index.and_then(|c| c.read_capacity_units()))
                .or_else(|| initial_units(own_reads, READ_SCALING))
                .or(index_write);
            if let (true, Some(read), Some(write)) = (provisioned, index_read, index_write) {
                out.insert(
                    "ProvisionedThroughput".into(),
                    json!({"ReadCapacityUnits": read, "WriteCapacityUnits": write}),
                );
            }
            if let Some(limits) = limits(
                index_setting(replica, &name, READ_LIMIT),
                index.get(WRITE_LIMIT),
            ) {
                out.insert("OnDemandThroughput".into(), limits);
            }
            if let Some(insights) =
                index_setting(replica, &name, "ContributorInsightsSpecification")
            {
                out.insert("ContributorInsightsSpecification".into(), insights.clone());
            }
            Value::Object(out)
        })
        .collect();
    if !indexes.is_empty() {
        view.insert("GlobalSecondaryIndexes".into(), Value::Array(indexes));
    }
    view
}

/// How a create makes the replicas: the stack region's with the table, then the others one by
/// one, in region order.
#[derive(Debug, Clone, PartialEq)]
struct CreatePlan {
    /// The replica in the stack's region.
    home: Value,
    /// The others, each added by an UpdateTable of its own.
    others: Vec<Value>,
}

/// The create plan of a template whose replicas [`check`] accepted.
fn create_plan(props: &Map<String, Value>, region: &str) -> Result<CreatePlan, String> {
    let mut all = replicas(props);
    let home = all
        .remove(region)
        .ok_or_else(|| format!("Replicas must include the stack's region {region}"))?;
    Ok(CreatePlan {
        home,
        others: all.into_values().collect(),
    })
}

/// How an update changes the replicas, each list in region order. It runs removals first (a
/// shared change then reaches fewer replicas, and a stream can only change with one), then the
/// shared changes, then additions (which copy the table as it now is), then the kept replicas
/// whose view changed. The stack region's replica is never added or removed; its own settings
/// go with the shared ones.
#[derive(Debug, Clone, Default, PartialEq)]
struct ReplicaPlan {
    /// Regions whose replica goes.
    removed: Vec<String>,
    /// Regions whose replica is new.
    added: Vec<String>,
    /// Kept regions, the stack's aside, whose view differs.
    changed: Vec<String>,
}

/// The replica changes from `before` to `after` in a stack in `region`.
fn replica_plan(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    region: &str,
) -> ReplicaPlan {
    let (old, new) = (replicas(before), replicas(after));
    ReplicaPlan {
        removed: old
            .keys()
            .filter(|r| !new.contains_key(*r) && *r != region)
            .cloned()
            .collect(),
        added: new
            .keys()
            .filter(|r| !old.contains_key(*r) && *r != region)
            .cloned()
            .collect(),
        changed: new
            .iter()
            .filter(|(r, _)| r.as_str() != region)
            .filter_map(|(r, replica)| {
                let previous = old.get(r)?;
                let (was, is) = (
                    regional_view(before, previous, None),
                    regional_view(after, replica, None),
                );
                (normalized(Some(&Value::Object(was))) != normalized(Some(&Value::Object(is))))
                    .then(|| r.clone())
            })
            .collect(),
    }
}

/// Whether the template encrypts with KMS (where a replica's key means something).
fn kms_encrypted(props: &Map<String, Value>) -> bool {
    flag(
        props
            .get("SSESpecification")
            .and_then(|s| s.get("SSEEnabled")),
    )
    .unwrap_or(false)
}

/// The KMS key a replica names, on a KMS-encrypted table.
fn replica_key(props: &Map<String, Value>, replica: &Value) -> Option<String> {
    string(replica.get("SSESpecification")?.get("KMSMasterKeyId")).filter(|_| kms_encrypted(props))
}

/// A replica's table class.
fn table_class(replica: &Value) -> Option<TableClass> {
    string(replica.get("TableClass")).map(|c| TableClass::from(c.as_str()))
}

/// One index's ReplicaUpdates settings; `None` when they set nothing.
fn index_override(
    name: &str,
    capacity: Option<i64>,
    limit: Option<i64>,
) -> Result<Option<ReplicaGlobalSecondaryIndex>, String> {
    if capacity.is_none() && limit.is_none() {
        return Ok(None);
    }
    ReplicaGlobalSecondaryIndex::builder()
        .index_name(name)
        .set_provisioned_throughput_override(capacity.map(read_override))
        .set_on_demand_throughput_override(limit.map(limit_override))
        .build()
        .map(Some)
        .map_err(|e| format!("Replicas: {e}"))
}

/// A replica's read capacity, where it differs from the table's.
fn read_override(units: i64) -> ProvisionedThroughputOverride {
    ProvisionedThroughputOverride::builder()
        .read_capacity_units(units)
        .build()
}

/// A replica's on-demand read limit, where it differs from the table's.
fn limit_override(units: i64) -> OnDemandThroughputOverride {
    OnDemandThroughputOverride::builder()
        .max_read_request_units(units)
        .build()
}

/// The ReplicaUpdates `Create` of `replica`: its key, class, starting read capacity (or
/// on-demand read limit), and those of its indexes.
fn replica_create(
    props: &Map<String, Value>,
    replica: &Value,
) -> Result<ReplicationGroupUpdate, String> {
    let provisioned = is_provisioned(props);
    let mut indexes = Vec::new();
    for name in by_name(props).keys() {
        let capacity = initial_units(index_setting(replica, name, READS), READ_SCALING)
            .filter(|_| provisioned);
        let limit = max_read(index_setting(replica, name, READ_LIMIT)).filter(|_| !provisioned);
        indexes.extend(index_override(name, capacity, limit)?);
    }
    let action = CreateReplicationGroupMemberAction::builder()
        .set_region_name(string(replica.get("Region")))
        .set_kms_master_key_id(replica_key(props, replica))
        .set_provisioned_throughput_override(
            initial_units(replica.get(READS), READ_SCALING)
                .filter(|_| provisioned)
                .map(read_override),
        )
        .set_on_demand_throughput_override(
            max_read(replica.get(READ_LIMIT))
                .filter(|_| !provisioned)
                .map(limit_override),
        )
        .set_global_secondary_indexes(Some(indexes).filter(|i| !i.is_empty()))
        .set_table_class_override(table_class(replica))
        .build()
        .map_err(|e| format!("Replicas: {e}"))?;
    Ok(ReplicationGroupUpdate::builder().create(action).build())
}

/// The read capacity an update sets: fixed units that changed, or the starting units of what is
/// `fresh` (new to the table, or newly provisioned). Auto scaled capacity is auto scaling's.
fn capacity_change(
    provisioned: bool,
    fresh: bool,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<i64> {
    if !provisioned {
        None
    } else if fresh {
        initial_units(after, READ_SCALING)
    } else {
        fixed_read(after).filter(|units| fixed_read(before) != Some(*units))
    }
}

/// The on-demand read limit an update sets: a changed one, or -1 (none) for one dropped; what is
/// `fresh` only gets a limit it names.
fn limit_change(
    provisioned: bool,
    fresh: bool,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<i64> {
    let (old, new) = (max_read(before), max_read(after));
    if provisioned {
        None
    } else if fresh {
        new
    } else if old == new {
        None
    } else {
        Some(new.unwrap_or(-1))
    }
}

/// The ReplicaUpdates `Update` of a kept replica, when what DynamoDB sets through it changed:
/// key, class, read capacity or limit, and those of its indexes (`fresh_indexes`, created or
/// recreated by this update, get theirs anew).
fn replica_update(
    before_props: &Map<String, Value>,
    after_props: &Map<String, Value>,
    before: &Value,
    after: &Value,
    fresh_indexes: &BTreeSet<String>,
) -> Result<Option<ReplicationGroupUpdate>, String> {
    let provisioned = is_provisioned(after_props);
    let switched = is_provisioned(before_props) != provisioned;
    let key = match (
        replica_key(before_props, before),
        replica_key(after_props, after),
    ) {
        (old, new) if old == new => None,
        (_, Some(new)) => Some(new),
        (_, None) => kms_encrypted(after_props).then(|| AWS_MANAGED_KEY.to_string()),
    };
    let class = (string(before.get("TableClass")) != string(after.get("TableClass")))
        .then(|| table_class(after).unwrap_or(TableClass::Standard));
    let capacity = capacity_change(provisioned, switched, before.get(READS), after.get(READS));
    let limit = limit_change(
        provisioned,
        switched,
        before.get(READ_LIMIT),
        after.get(READ_LIMIT),
    );
    let mut indexes = Vec::new();
    for name in by_name(after_props).keys() {
        let fresh = switched || fresh_indexes.contains(name);
        let capacity = capacity_change(
            provisioned,
            fresh,
            index_setting(before, name, READS),
            index_setting(after, name, READS),
        );
        let limit = limit_change(
            provisioned,
            fresh,
            index_setting(before, name, READ_LIMIT),
            index_setting(after, name, READ_LIMIT),
        );
        indexes.extend(index_override(name, capacity, limit)?);
    }
    if key.is_none()
        && class.is_none()
        && capacity.is_none()
        && limit.is_none()
        && indexes.is_empty()
    {
        return Ok(None);
    }
    let action = UpdateReplicationGroupMemberAction::builder()
        .set_region_name(string(after.get("Region")))
        .set_kms_master_key_id(key)
        .set_provisioned_throughput_override(capacity.map(read_override))
        .set_on_demand_throughput_override(limit.map(limit_override))
        .set_global_secondary_indexes(Some(indexes).filter(|i| !i.is_empty()))
        .set_table_class_override(class)
        .build()
        .map_err(|e| format!("Replicas: {e}"))?;
    Ok(Some(
        ReplicationGroupUpdate::builder().update(action).build(),
    ))
}

/// The ReplicaUpdates `Delete` of the replica in `region`.
fn replica_delete(region: &str) -> Result<ReplicationGroupUpdate, String> {
    let action = DeleteReplicationGroupMemberAction::builder()
        .region_name(region)
        .build()
        .map_err(|e| format!("Replicas: {e}"))?;
    Ok(ReplicationGroupUpdate::builder().delete(action).build())
}

/// Where auto scaling applies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    /// The table's writes (every replica's).
    Write,
    /// An index's writes.
    IndexWrite(String),
    /// A replica's reads (region).
    Read(String),
    /// A replica index's reads (region, index).
    IndexRead(String, String),
}

/// The auto scaling settings of a provisioned template by where they apply.
fn scaling_slots(props: &Map<String, Value>) -> BTreeMap<Slot, Value> {
    let mut slots = BTreeMap::new();
    if !is_provisioned(props) {
        return slots;
    }
    let scaling = |settings: Option<&Value>, key: &str| {
        settings
            .and_then(|s| s.get(key))
            .filter(|v| v.is_object())
            .cloned()
    };
    if let Some(settings) = scaling(props.get(WRITES), WRITE_SCALING) {
        slots.insert(Slot::Write, settings);
    }
    let indexes = by_name(props);
    for (name, index) in &indexes {
        if let Some(settings) = scaling(index.get(WRITES), WRITE_SCALING) {
            slots.insert(Slot::IndexWrite(name.clone()), settings);
        }
    }
    for (region, replica) in replicas(props) {
        if let Some(settings) = scaling(replica.get(READS), READ_SCALING) {
            slots.insert(Slot::Read(region.clone()), settings);
        }
        for name in indexes.keys() {
            if let Some(settings) = scaling(index_setting(&replica, name, READS), READ_SCALING) {
                slots.insert(Slot::IndexRead(region.clone(), name.clone()), settings);
            }
        }
    }
    slots
}

/// A template `CapacityAutoScalingSettings` as DynamoDB's update (`SeedCapacity` is only the
/// starting capacity of a create); `None`: auto scaling turned off.
fn scaling_update(settings: Option<&Value>) -> Result<AutoScalingSettingsUpdate, String> {
    let Some(settings) = settings else {
        return Ok(AutoScalingSettingsUpdate::builder()
            .auto_scaling_disabled(true)
            .build());
    };
    let policy = settings
        .get("TargetTrackingScalingPolicyConfiguration")
        .cloned()
        .unwrap_or(Value::Null);
    let target = policy.get("TargetValue").and_then(|v| {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
    });
    let tracking = AutoScalingTargetTrackingScalingPolicyConfigurationUpdate::builder()
        .set_target_value(target)
        .set_disable_scale_in(flag(policy.get("DisableScaleIn")))
        .set_scale_in_cooldown(int(policy.get("ScaleInCooldown")))
        .set_scale_out_cooldown(int(policy.get("ScaleOutCooldown")))
        .build()
        .map_err(|e| format!("TargetTrackingScalingPolicyConfiguration: {e}"))?;
    Ok(AutoScalingSettingsUpdate::builder()
        .set_minimum_units(number(settings.get("MinCapacity")))
        .set_maximum_units(number(settings.get("MaxCapacity")))
        .auto_scaling_disabled(false)
        .scaling_policy_update(
            AutoScalingPolicyUpdate::builder()
                .target_tracking_scaling_policy_configuration(tracking)
                .build(),
        )
        .build())
}

/// The UpdateTableReplicaAutoScaling from `before` to `after`: every setting `after` scales
/// with, and scaling turned off where `before` scaled and the replica or index stays without.
/// `None` when nothing changed, unless `fresh` (a create, or replicas, indexes or provisioned
/// billing new to the table, which start without the scaling the template gives them).
fn auto_scaling(
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    fresh: bool,
) -> Result<Option<UpdateTableReplicaAutoScalingInputBuilder>, String> {
    let (old, new) = (scaling_slots(before), scaling_slots(after));
    let same = |a: &BTreeMap<Slot, Value>, b: &BTreeMap<Slot, Value>| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|((k, v), (l, w))| k == l && normalized(Some(v)) == normalized(Some(w)))
    };
    if !fresh && same(&old, &new) {
        return Ok(None);
    }
    let (regions, indexes) = (replicas(after), by_name(after));
    let remains = |slot: &Slot| match slot {
        Slot::Write => true,
        Slot::IndexWrite(index) => indexes.contains_key(index),
        Slot::Read(region) => regions.contains_key(region),
        Slot::IndexRead(region, index) => {
            regions.contains_key(region) && indexes.contains_key(index)
        }
    };
    let mut wanted: BTreeMap<Slot, Option<&Value>> =
        new.iter().map(|(k, v)| (k.clone(), Some(v))).collect();
    if is_provisioned(after) {
        for slot in old.keys().filter(|s| !new.contains_key(*s) && remains(s)) {
            wanted.insert(slot.clone(), None);
        }
    }
    if wanted.is_empty() {
        return Ok(None);
    }
    let mut input = UpdateTableReplicaAutoScalingInput::builder().table_name(name);
    type ReplicaScaling = (
        Option<AutoScalingSettingsUpdate>,
        Vec<ReplicaGlobalSecondaryIndexAutoScalingUpdate>,
    );
    let mut by_region: BTreeMap<String, ReplicaScaling> = BTreeMap::new();
    for (slot, settings) in wanted {
        let update = scaling_update(settings)?;
        match slot {
            Slot::Write => input = input.provisioned_write_capacity_auto_scaling_update(update),
            Slot::IndexWrite(index) => {
                input = input.global_secondary_index_updates(
                    GlobalSecondaryIndexAutoScalingUpdate::builder()
                        .index_name(index)
                        .provisioned_write_capacity_auto_scaling_update(update)
                        .build(),
                );
            }
            Slot::Read(region) => by_region.entry(region).or_default().0 = Some(update),
            Slot::IndexRead(region, index) => by_region.entry(region).or_default().1.push(
                ReplicaGlobalSecondaryIndexAutoScalingUpdate::builder()
                    .index_name(index)
                    .provisioned_read_capacity_auto_scaling_update(update)
                    .build(),
            ),
        }
    }
    for (region, (read, indexes)) in by_region {
        input = input.replica_updates(
            ReplicaAutoScalingUpdate::builder()
                .region_name(region)
                .set_replica_provisioned_read_capacity_auto_scaling_update(read)
                .set_replica_global_secondary_index_updates(Some(indexes).filter(|i| !i.is_empty()))
                .build()
                .map_err(|e| format!("Replicas: {e}"))?,
        );
    }
    Ok(Some(input))
}

/// The view keys CreateTable already applied, as the `before` of the stack region replica's
/// first [`apply_settings`].
fn created_with_table(view: &Map<String, Value>) -> Map<String, Value> {
    ["Tags", "ResourcePolicy"]
        .into_iter()
        .filter_map(|k| Some((k.to_string(), view.get(k)?.clone())))
        .collect()
}

/// `Arn`, `StreamArn` while a stream is on, and `TableId`.
fn global_attributes(table: &TableDescription) -> Map<String, Value> {
    let mut out = attributes(table);
    if let Some(id) = table.table_id() {
        out.insert("TableId".into(), json!(id));
    }
    out
}

/// Sends one ReplicaUpdates change (`action` and `region` for messages) once the table and every
/// replica are ACTIVE, and waits for it to settle. `strict`: a replica DynamoDB gave up on fails
/// the wait; a teardown removes such replicas instead.
async fn change_replica(
    ddb: &Client,
    what: &str,
    name: &str,
    action: &str,
    region: &str,
    update: ReplicationGroupUpdate,
    strict: bool,
) -> Result<(), ProviderError> {
    wait_replicas(ddb, what, name, strict).await?;
    tracing::info!("{what}: {action} the replica in {region}");
    let context = format!("{what}: UpdateTable ({action} the replica in {region})");
    let (update, context) = (&update, context.as_str());
    while_busy(what, || async move {
        ddb.update_table()
            .table_name(name)
            .replica_updates(update.clone())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| with_dynamodb_kind(aws_error(context, e)))
    })
    .await?;
    wait_replicas(ddb, what, name, strict).await.map(|_| ())
}

/// Turns a replica's deletion protection on or off; DynamoDB keeps it per replica, so `ddb` is
/// a client in the replica's region.
async fn set_protection(
    ddb: &Client,
    what: &str,
    name: &str,
    enabled: bool,
) -> Result<(), ProviderError> {
    while_busy(what, || async move {
        ddb.update_table()
            .table_name(name)
            .deletion_protection_enabled(enabled)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                with_dynamodb_kind(aws_error(
                    &format!("{what}: UpdateTable DeletionProtectionEnabled"),
                    e,
                ))
            })
    })
    .await
}

/// One replica's own settings, in its region, from `before` (its view before; empty for a new
/// replica) to `after`: deletion protection, then what [`apply_settings`] changes.
async fn replica_settings(
    ctx: &PluginContext,
    what: &str,
    name: &str,
    region: &str,
    (before, after): (&Map<String, Value>, &Map<String, Value>),
    old_stream: Option<&str>,
) -> Result<(), ProviderError> {
    let what = format!("{what} (replica in {region})");
    let what = what.as_str();
    let ddb = regional_client(ctx, region).await?;
    let mut table = existing(&ddb, what, name).await?;
    let protect = flag(after.get("DeletionProtectionEnabled")).unwrap_or(false);
    if flag(before.get("DeletionProtectionEnabled")).unwrap_or(false) != protect {
        set_protection(&ddb, what, name, protect).await?;
        table = wait_active(&ddb, what, name, false).await?;
    }
    apply_settings(&ddb, what, name, before, after, table, old_stream)
        .await
        .map(|_| ())
}

/// Sends an UpdateTableReplicaAutoScaling once the table and every replica are ACTIVE.
async fn set_auto_scaling(
    ddb: &Client,
    what: &str,
    name: &str,
    input: UpdateTableReplicaAutoScalingInputBuilder,
) -> Result<(), ProviderError> {
    wait_replicas(ddb, what, name, true).await?;
    let input = &input;
    while_busy(what, || async move {
        input.clone().send_with(ddb).await.map(|_| ()).map_err(|e| {
            with_dynamodb_kind(aws_error(
                &format!("{what}: UpdateTableReplicaAutoScaling"),
                e,
            ))
        })
    })
    .await
}

/// Removes every replica but the stack region's, one at a time, then deletes the table. A delete
/// (`undo` false) refuses while any replica is protected from deletion; undoing a failed create
/// turns off the protection that create set.
async fn tear_down(
    ctx: &PluginContext,
    ddb: &Client,
    what: &str,
    name: &str,
    undo: bool,
) -> Result<DeleteResult, ProviderError> {
    let Some(table) = describe(ddb, what, name).await? else {
        return Ok(DeleteResult::Deleted);
    };
    let home = ctx.region();
    let others: BTreeSet<String> = table
        .replicas()
        .iter()
        .filter_map(ReplicaDescription::region_name)
        .filter(|r| *r != home)
        .map(ToString::to_string)
        .collect();
    let mut protected: Vec<(String, Option<Client>)> = Vec::new();
    if table.deletion_protection_enabled() == Some(true) {
        protected.push((home.to_string(), None));
    }
    for region in &others {
        let regional = regional_client(ctx, region).await?;
        let described = describe(&regional, what, name).await?;
        if described.and_then(|t| t.deletion_protection_enabled()) == Some(true) {
            protected.push((region.clone(), Some(regional)));
        }
    }
    if !protected.is_empty() {
        if !undo {
            let regions: Vec<&str> = protected.iter().map(|(r, _)| r.as_str()).collect();
            return Err(ProviderError::validation(format!(
                "{what}: table {name} has deletion protection enabled in {}; set DeletionProtectionEnabled to false on those replicas (and deploy) before deleting it",
                regions.join(", ")
            )));
        }
        for (_, regional) in &protected {
            set_protection(regional.as_ref().unwrap_or(ddb), what, name, false).await?;
        }
    }
    for region in &others {
        let update = replica_delete(region).map_err(ProviderError::validation)?;
        change_replica(ddb, what, name, "removing", region, update, false).await?;
    }
    // A table still being updated refuses DeleteTable with "in use" for a while.
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

/// A create's error once its table is torn down again, saying whether that worked.
async fn undo_create(
    ctx: &PluginContext,
    ddb: &Client,
    what: &str,
    name: &str,
    error: ProviderError,
) -> ProviderError {
    let note = match tear_down(ctx, ddb, what, name, true).await {
        Ok(_) => format!("; the new table {name} and its replicas were deleted again"),
        Err(err) => format!(
            "; the new table {name} could not be deleted again ({}) and is left in place",
            err.message
        ),
    };
    let undone = ProviderError::new(error.kind, format!("{}{note}", error.message));
    match error.aws_code() {
        Some(code) => undone.with_aws_code(code),
        None => undone,
    }
}

/// Everything a create does once CreateTable succeeded: the stack region's settings, the other
/// replicas one by one, their settings in their regions, auto scaling.
async fn finish_create(
    ctx: &PluginContext,
    ddb: &Client,
    what: &str,
    name: &str,
    props: &Map<String, Value>,
    (plan, adds): (&CreatePlan, Vec<ReplicationGroupUpdate>),
    scaling: Option<UpdateTableReplicaAutoScalingInputBuilder>,
) -> Result<TableDescription, ProviderError> {
    let table = wait_active(ddb, what, name, false).await?;
    // Before any replica exists, so each starts with it.
    if let Some(attribute) = ttl_attribute(props) {
        set_ttl(ddb, what, name, &attribute, true).await?;
    }
    let home = regional_view(props, &plan.home, None);
    apply_settings(
        ddb,
        what,
        name,
        &created_with_table(&home),
        &home,
        table,
        None,
    )
    .await?;
    for (replica, add) in plan.others.iter().zip(adds) {
        let region = string(replica.get("Region")).unwrap_or_default();
        change_replica(ddb, what, name, "adding", &region, add, true).await?;
    }
    for replica in &plan.others {
        let region = string(replica.get("Region")).unwrap_or_default();
        let view = regional_view(props, replica, None);
        replica_settings(ctx, what, name, &region, (&Map::new(), &view), None).await?;
    }
    if let Some(input) = scaling {
        set_auto_scaling(ddb, what, name, input).await?;
    }
    wait_replicas(ddb, what, name, true).await
}

/// What the reader learns of one replica in its own region.
#[derive(Debug, Clone)]
struct RegionalRead {
    /// The replica's region.
    region: String,
    /// Its table there; `None` when the region does not answer one.
    table: Option<TableDescription>,
    /// Its tags.
    tags: Vec<Tag>,
}

/// Whether a template key id names the key DynamoDB answers by ARN (the template may give the
/// ARN, the id or an alias; an alias is not resolved, so it is taken as given).
fn same_key(given: &str, arn: &str) -> bool {
    let id = given.rsplit('/').next().unwrap_or(given);
    given == arn || given.contains("alias/") || arn.ends_with(&format!("/{id}"))
}

/// One replica in template shape: what its region and the stack region's description say of
/// it (deletion protection, class, tags, key, fixed read capacity and read limit), over the
/// template's entry for the rest, which is not read (lists compare whole).
fn replica_shape(
    home: &TableDescription,
    is_home: bool,
    read: &RegionalRead,
    described: Option<&ReplicaDescription>,
    given: Option<&Value>,
) -> Value {
    let mut out = given
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    out.insert("Region".into(), json!(read.region));
    let has = |key: &str| given.and_then(|g| g.get(key)).is_some();
    if let Some(table) = &read.table {
        let protected = table.deletion_protection_enabled() == Some(true);
        if protected || has("DeletionProtectionEnabled") {
            out.insert("DeletionProtectionEnabled".into(), json!(protected));
        }
        let class = table
            .table_class_summary()
            .and_then(|s| s.table_class())
            .map_or("STANDARD", TableClass::as_str);
        if class != "STANDARD" || has("TableClass") {
            out.insert("TableClass".into(), json!(class));
        }
    }
    let mut pairs: Vec<(&str, &str)> = read.tags.iter().map(|t| (t.key(), t.value())).collect();
    pairs.sort();
    if !pairs.is_empty() || has("Tags") {
        out.insert(
            "Tags".into(),
            pairs
                .into_iter()
                .map(|(k, v)| json!({"Key": k, "Value": v}))
                .collect(),
        );
    }
    let given_key = given
        .and_then(|g| g.get("SSESpecification"))
        .and_then(|s| string(s.get("KMSMasterKeyId")));
    let live_key = if is_home {
        home.sse_description().and_then(|s| s.kms_master_key_arn())
    } else {
        described.and_then(ReplicaDescription::kms_master_key_id)
    };
    if let (Some(given_key), Some(live_key)) = (given_key, live_key) {
        let key = if same_key(&given_key, live_key) {
            given_key.as_str()
        } else {
            live_key
        };
        out.insert("SSESpecification".into(), json!({"KMSMasterKeyId": key}));
    }
    let home_capacity = home
        .provisioned_throughput()
        .and_then(|p| p.read_capacity_units());
    if fixed_read(given.and_then(|g| g.get(READS))).is_some() {
        let live = if is_home {
            home_capacity
        } else {
            described
                .and_then(ReplicaDescription::provisioned_throughput_override)
                .and_then(ProvisionedThroughputOverride::read_capacity_units)
                .or(home_capacity)
        };
        if let (Some(Value::Object(settings)), Some(units)) = (out.get_mut(READS), live) {
            settings.insert("ReadCapacityUnits".into(), json!(units));
        }
    }
    if max_read(given.and_then(|g| g.get(READ_LIMIT))).is_some() {
        let live = if is_home {
            home.on_demand_throughput()
                .and_then(|o| o.max_read_request_units())
        } else {
            described
                .and_then(ReplicaDescription::on_demand_throughput_override)
                .and_then(OnDemandThroughputOverride::max_read_request_units)
        };
        match live.filter(|units| *units > 0) {
            Some(units) => {
                out.insert(READ_LIMIT.into(), json!({"MaxReadRequestUnits": units}));
            }
            None => {
                out.remove(READ_LIMIT);
            }
        }
    }
    Value::Object(out)
}

/// The live global table in template shape: the shared settings from the stack region's
/// description (through `AWS::DynamoDB::Table`'s reader, its per-table keys left out), the
/// replicas from its `Replicas` list and each region's own answers, ordered like the template's
/// list (by region otherwise). Auto scaling is not read: the template's settings are carried.
fn global_shape(
    table: &TableDescription,
    home: &str,
    ttl: Option<&TimeToLiveDescription>,
    reads: &[RegionalRead],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = crate::read::template_shape(table, ttl, None, &[], template);
    // A global table keeps these per replica (or as auto scaling), not at the top.
    for key in [
        "ProvisionedThroughput",
        "DeletionProtectionEnabled",
        "TableClass",
        "Tags",
    ] {
        props.remove(key);
    }
    let given_indexes = by_name(template);
    if let Some(Value::Array(indexes)) = props.get_mut("GlobalSecondaryIndexes") {
        for index in indexes.iter_mut().filter_map(Value::as_object_mut) {
            index.remove("ProvisionedThroughput");
            let given = string(index.get("IndexName")).and_then(|n| given_indexes.get(&n));
            for key in [WRITES, WRITE_LIMIT] {
                if let Some(value) = given.and_then(|g| g.get(key)) {
                    index.insert(key.into(), value.clone());
                }
            }
        }
    }
    if let Some(value) = template.get(WRITES) {
        props.insert(WRITES.into(), value.clone());
    }
    if let Some(units) = table
        .on_demand_throughput()
        .and_then(|o| o.max_write_request_units())
        .filter(|units| *units > 0)
    {
        props.insert(WRITE_LIMIT.into(), json!({"MaxWriteRequestUnits": units}));
    }
    let given = replicas(template);
    let described: BTreeMap<&str, &ReplicaDescription> = table
        .replicas()
        .iter()
        .filter_map(|r| Some((r.region_name()?, r)))
        .collect();
    let mut list: Vec<Value> = reads
        .iter()
        .map(|read| {
            replica_shape(
                table,
                read.region == home,
                read,
                described.get(read.region.as_str()).copied(),
                given.get(&read.region),
            )
        })
        .collect();
    list.sort_by_key(|r| string(r.get("Region")).unwrap_or_default());
    order_like(&mut list, template.get("Replicas"), "Region");
    props.insert("Replicas".into(), Value::Array(list));
    props
}

#[async_trait]
impl ResourceProvider for GlobalTable {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "TableName",
                "AttributeDefinitions",
                "KeySchema",
                "BillingMode",
                "GlobalSecondaryIndexes",
                "LocalSecondaryIndexes",
                "Replicas",
                "SSESpecification",
                "StreamSpecification",
                "TimeToLiveSpecification",
                "WriteProvisionedThroughputSettings",
                "WriteOnDemandThroughputSettings",
                "WarmThroughput",
            ])
            // KeySchema and LocalSecondaryIndexes cannot change on a live table (the registry
            // schema lists them as conditionally create-only).
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
        let invalid = |e: String| ProviderError::validation(format!("{what}: {e}"));
        check(props, ctx.region()).map_err(invalid)?;
        let plan = create_plan(props, ctx.region()).map_err(invalid)?;
        let name = given_or_generated_name(&request, "TableName", MAX_NAME, false);
        // Everything is built before the table exists, so a template error leaves nothing.
        let input =
            create_table_input(&name, &regional_view(props, &plan.home, None)).map_err(invalid)?;
        let adds = plan
            .others
            .iter()
            .map(|r| replica_create(props, r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let scaling = auto_scaling(&name, &Map::new(), props, true).map_err(invalid)?;
        let ddb = client(ctx).await?;
        create_table(&ddb, &what, &name, input).await?;
        match finish_create(ctx, &ddb, &what, &name, props, (&plan, adds), scaling).await {
            Ok(table) => Ok(CreateResult {
                attributes: global_attributes(&table),
                physical_id: name,
                ..Default::default()
            }),
            Err(error) => Err(undo_create(ctx, &ddb, &what, &name, error).await),
        }
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
        let home = ctx.region();
        let invalid = |e: String| ProviderError::validation(format!("{what}: {e}"));
        check(after, home).map_err(invalid)?;
        let plan = replica_plan(before, after, home);
        let (old, new) = (replicas(before), replicas(after));
        let ddb = client(ctx).await?;
        let (ddb, what) = (&ddb, what.as_str());
        let table = existing(ddb, what, name).await?;
        let old_stream = table.latest_stream_arn().map(ToString::to_string);
        let live = (is_provisioned(before) && is_provisioned(after)).then_some(&table);
        let old_home = old.get(home).cloned().unwrap_or_else(|| json!({}));
        let (home_before, home_after) = (
            regional_view(before, &old_home, live),
            regional_view(after, &new[home], live),
        );
        // Everything is built before anything changes, so a template error changes nothing.
        let steps = update_steps(name, &home_before, &home_after).map_err(invalid)?;
        let fresh_indexes: BTreeSet<String> = gsi_steps(&home_before, &home_after, false)
            .into_iter()
            .filter_map(|step| match step {
                GsiStep::Create(index) => string(index.get("IndexName")),
                _ => None,
            })
            .collect();
        let adds = plan
            .added
            .iter()
            .map(|r| replica_create(after, &new[r]))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let changes = plan
            .changed
            .iter()
            .map(|r| replica_update(before, after, &old[r], &new[r], &fresh_indexes))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;
        let newly_provisioned = !is_provisioned(before) && is_provisioned(after);
        let fresh = !plan.added.is_empty() || !fresh_indexes.is_empty() || newly_provisioned;
        let scaling = auto_scaling(name, before, after, fresh).map_err(invalid)?;
        let removals = plan
            .removed
            .iter()
            .map(|r| replica_delete(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(invalid)?;

        let mut old_streams = BTreeMap::new();
        for region in &plan.removed {
            let regional = regional_client(ctx, region).await?;
            let described = describe(&regional, what, name).await?;
            if described.and_then(|t| t.deletion_protection_enabled()) == Some(true) {
                return Err(ProviderError::validation(format!(
                    "{what}: the replica in {region} has deletion protection enabled; set its DeletionProtectionEnabled to false (and deploy) before removing it"
                )));
            }
        }
        for region in &plan.changed {
            let (was, is) = (
                regional_view(before, &old[region], None),
                regional_view(after, &new[region], None),
            );
            // A stream policy is only put again on a stream that changed; which one it was
            // must be known before the shared changes.
            if stream_policy(&was).is_some() || stream_policy(&is).is_some() {
                let regional = regional_client(ctx, region).await?;
                let stream = existing(&regional, what, name)
                    .await?
                    .latest_stream_arn()
                    .map(ToString::to_string);
                old_streams.insert(region.clone(), stream);
            }
        }

        for (region, removal) in plan.removed.iter().zip(removals) {
            change_replica(ddb, what, name, "removing", region, removal, true).await?;
        }
        run_steps(ddb, what, name, &steps, true).await?;
        let table = wait_replicas(ddb, what, name, true).await?;
        sync_ttl(ddb, what, name, after).await?;
        apply_settings(
            ddb,
            what,
            name,
            &home_before,
            &home_after,
            table,
            old_stream.as_deref(),
        )
        .await?;
        for (region, add) in plan.added.iter().zip(adds) {
            change_replica(ddb, what, name, "adding", region, add, true).await?;
        }
        for region in &plan.added {
            let view = regional_view(after, &new[region], None);
            replica_settings(ctx, what, name, region, (&Map::new(), &view), None).await?;
        }
        for (region, change) in plan.changed.iter().zip(changes) {
            if let Some(change) = change {
                change_replica(ddb, what, name, "updating", region, change, true).await?;
            }
            let (was, is) = (
                regional_view(before, &old[region], None),
                regional_view(after, &new[region], None),
            );
            let stream = old_streams.get(region).cloned().flatten();
            replica_settings(ctx, what, name, region, (&was, &is), stream.as_deref()).await?;
        }
        if let Some(input) = scaling {
            set_auto_scaling(ddb, what, name, input).await?;
        }
        let table = wait_replicas(ddb, what, name, true).await?;
        Ok(UpdateResult {
            attributes: global_attributes(&table),
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
        let ddb = client(ctx).await?;
        tear_down(ctx, &ddb, &what, &request.physical_id, false).await
    }
}

#[async_trait]
impl Readable for GlobalTable {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let name = request.physical_id.as_str();
        let home = ctx.region();
        let ddb = client(ctx).await?;
        let Some(table) = describe(&ddb, what, name).await? else {
            return Ok(None);
        };
        let ttl = optional(
            &format!("{what}: DescribeTimeToLive"),
            ddb.describe_time_to_live().table_name(name).send().await,
        )?;
        let mut regions: BTreeSet<String> = table
            .replicas()
            .iter()
            .filter_map(ReplicaDescription::region_name)
            .map(ToString::to_string)
            .collect();
        regions.insert(home.to_string());
        let mut reads = Vec::new();
        for region in regions {
            let (regional, described) = if region == home {
                (ddb.clone(), Some(table.clone()))
            } else {
                let regional = regional_client(ctx, &region).await?;
                let described = describe(&regional, what, name).await?;
                (regional, described)
            };
            let tags = match described.as_ref().and_then(TableDescription::table_arn) {
                Some(arn) => list_tags(&regional, what, arn).await?,
                None => Vec::new(),
            };
            reads.push(RegionalRead {
                region,
                table: described,
                tags,
            });
        }
        Ok(Some(global_shape(
            &table,
            home,
            ttl.as_ref().and_then(|t| t.time_to_live_description()),
            &reads,
            &request.properties,
        )))
    }

    /// `Arn`, `StreamArn` and `TableId`.
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
        Ok(global_attributes(&table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, BillingModeSummary, GlobalSecondaryIndexDescription,
        KeySchemaElement, KeyType, OnDemandThroughput, ProvisionedThroughputDescription,
        ReplicaStatus, ScalarAttributeType, SseDescription, SseStatus, SseType,
        StreamSpecification, StreamViewType, TableClassSummary,
    };

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    /// An on-demand global table with these replicas.
    fn on_demand(replicas: Value) -> Map<String, Value> {
        props(json!({
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "Replicas": replicas
        }))
    }

    /// A provisioned global table: write capacity auto scaled, one index.
    fn provisioned(replicas: Value) -> Map<String, Value> {
        props(json!({
            "BillingMode": "PROVISIONED",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "WriteProvisionedThroughputSettings": {"WriteCapacityAutoScalingSettings": {
                "MinCapacity": 5, "MaxCapacity": 50, "SeedCapacity": 10,
                "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 70}
            }},
            "GlobalSecondaryIndexes": [{
                "IndexName": "byG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "WriteProvisionedThroughputSettings": {"WriteCapacityAutoScalingSettings": {
                    "MinCapacity": "3", "MaxCapacity": 30,
                    "TargetTrackingScalingPolicyConfiguration": {"TargetValue": "60.5", "ScaleInCooldown": 60}
                }}
            }],
            "Replicas": replicas
        }))
    }

    fn regions(replicas: &[Value]) -> Vec<String> {
        replicas
            .iter()
            .map(|r| string(r.get("Region")).unwrap())
            .collect()
    }

    #[test]
    fn the_stack_regions_replica_comes_with_the_table_and_the_others_one_by_one() {
        let template = on_demand(json!([
            {"Region": "us-west-2", "TableClass": "STANDARD_INFREQUENT_ACCESS"},
            {"Region": "us-east-1", "DeletionProtectionEnabled": true, "Tags": [{"Key": "a", "Value": "1"}]},
            {"Region": "eu-west-1", "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 40}}
        ]));
        assert_eq!(check(&template, "us-east-1"), Ok(()));
        let plan = create_plan(&template, "us-east-1").unwrap();
        assert_eq!(plan.home["Region"], "us-east-1");
        assert_eq!(regions(&plan.others), ["eu-west-1", "us-west-2"]);

        // The table is made with the stack region replica's own settings.
        let input = create_table_input("t", &regional_view(&template, &plan.home, None))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(input.deletion_protection_enabled(), Some(true));
        assert_eq!(input.tags()[0].key(), "a");
        assert_eq!(input.billing_mode(), Some(&BillingMode::PayPerRequest));
        assert_eq!(
            input.stream_specification().unwrap().stream_view_type(),
            Some(&StreamViewType::NewAndOldImages)
        );
        assert!(input.table_class().is_none());

        // Each other replica is one ReplicaUpdates Create of its own.
        let adds: Vec<ReplicationGroupUpdate> = plan
            .others
            .iter()
            .map(|r| replica_create(&template, r).unwrap())
            .collect();
        let eu = adds[0].create().unwrap();
        assert!(adds[0].update().is_none() && adds[0].delete().is_none());
        assert_eq!(eu.region_name(), "eu-west-1");
        assert_eq!(
            eu.on_demand_throughput_override()
                .unwrap()
                .max_read_request_units(),
            Some(40)
        );
        assert!(eu.provisioned_throughput_override().is_none());
        let us = adds[1].create().unwrap();
        assert_eq!(us.region_name(), "us-west-2");
        assert_eq!(
            us.table_class_override(),
            Some(&TableClass::StandardInfrequentAccess)
        );
        // The stack region's replica is where the table is made; there is no creating it elsewhere.
        let elsewhere = check(&template, "ap-south-1").unwrap_err();
        assert!(elsewhere.contains("ap-south-1"), "{elsewhere}");
        assert!(create_plan(&template, "ap-south-1").is_err());
    }

    #[test]
    fn templates_that_cannot_be_applied_are_refused_up_front() {
        let twice = on_demand(json!([{"Region": "us-east-1"}, {"Region": "us-east-1"}]));
        assert!(check(&twice, "us-east-1").unwrap_err().contains("twice"));
        let nameless = on_demand(json!([{"Region": "us-east-1"}, {"TableClass": "STANDARD"}]));
        assert!(check(&nameless, "us-east-1")
            .unwrap_err()
            .contains("Region"));
        let empty = on_demand(json!([]));
        assert!(check(&empty, "us-east-1").is_err());
        let unsupported = on_demand(json!([
            {"Region": "us-east-1", "GlobalTableSettingsReplicationMode": "ENABLED"}
        ]));
        assert!(check(&unsupported, "us-east-1")
            .unwrap_err()
            .contains("GlobalTableSettingsReplicationMode"));
        let stream_tags = on_demand(json!([
            {"Region": "us-east-1", "ReplicaStreamSpecification": {"Tags": [{"Key": "a", "Value": "b"}]}}
        ]));
        assert!(check(&stream_tags, "us-east-1")
            .unwrap_err()
            .contains("ReplicaStreamSpecification.Tags"));
        let mut index_reads = on_demand(json!([{"Region": "us-east-1"}]));
        index_reads.insert(
            "GlobalSecondaryIndexes".into(),
            json!([{"IndexName": "i", "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 5}}]),
        );
        assert!(check(&index_reads, "us-east-1")
            .unwrap_err()
            .contains("GlobalSecondaryIndexes (i): ReadOnDemandThroughputSettings"));
        let mut unscaled = provisioned(json!([{"Region": "us-east-1"}]));
        assert_eq!(check(&unscaled, "us-east-1"), Ok(()));
        unscaled.remove(WRITES);
        assert!(check(&unscaled, "us-east-1")
            .unwrap_err()
            .contains(WRITE_SCALING));
    }

    #[test]
    fn a_replicas_view_is_a_table_template_of_shared_and_own_settings() {
        let mut template = provisioned(json!([]));
        template.insert(
            "SSESpecification".into(),
            json!({"SSEEnabled": true, "SSEType": "KMS"}),
        );
        template.insert(
            "StreamSpecification".into(),
            json!({"StreamViewType": "NEW_AND_OLD_IMAGES"}),
        );
        let replica = json!({
            "Region": "eu-west-1",
            "ReadProvisionedThroughputSettings": {"ReadCapacityUnits": "5"},
            "SSESpecification": {"KMSMasterKeyId": "alias/eu"},
            "ReplicaStreamSpecification": {"ResourcePolicy": {"PolicyDocument": {"Version": "2012-10-17"}}},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true},
            "Tags": [{"Key": "team", "Value": "a"}],
            "GlobalSecondaryIndexes": [{
                "IndexName": "byG",
                "ReadProvisionedThroughputSettings": {"ReadCapacityAutoScalingSettings": {
                    "MinCapacity": 2, "MaxCapacity": 20,
                    "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 50}
                }},
                "ContributorInsightsSpecification": {"Enabled": true}
            }]
        });
        let view = regional_view(&template, &replica, None);
        assert_eq!(
            Value::Object(view.clone()),
            json!({
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "g", "AttributeType": "S"}
                ],
                "BillingMode": "PROVISIONED",
                "Tags": [{"Key": "team", "Value": "a"}],
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true},
                "StreamSpecification": {
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                    "ResourcePolicy": {"PolicyDocument": {"Version": "2012-10-17"}}
                },
                "SSESpecification": {"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": "alias/eu"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 10},
                "GlobalSecondaryIndexes": [{
                    "IndexName": "byG",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                    "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 3},
                    "ContributorInsightsSpecification": {"Enabled": true}
                }]
            })
        );
        assert_eq!(
            stream_policy(&view).as_deref(),
            Some("{\"Version\":\"2012-10-17\"}")
        );

        // Live: auto scaled capacity is taken where it is, fixed units stay the template's.
        let capacity = |read: i64, write: i64| {
            ProvisionedThroughputDescription::builder()
                .read_capacity_units(read)
                .write_capacity_units(write)
                .build()
        };
        let live = TableDescription::builder()
            .provisioned_throughput(capacity(40, 30))
            .global_secondary_indexes(
                GlobalSecondaryIndexDescription::builder()
                    .index_name("byG")
                    .provisioned_throughput(capacity(7, 8))
                    .build(),
            )
            .build();
        let view = regional_view(&template, &replica, Some(&live));
        assert_eq!(
            view["ProvisionedThroughput"],
            json!({"ReadCapacityUnits": 5, "WriteCapacityUnits": 30})
        );
        assert_eq!(
            view["GlobalSecondaryIndexes"][0]["ProvisionedThroughput"],
            json!({"ReadCapacityUnits": 7, "WriteCapacityUnits": 8})
        );
    }

    #[test]
    fn an_update_removes_then_adds_then_changes_replicas_in_region_order() {
        let before = on_demand(json!([
            {"Region": "us-east-1"},
            {"Region": "us-west-2", "TableClass": "STANDARD"},
            {"Region": "eu-west-1", "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 5}},
            {"Region": "ap-south-1"},
            {"Region": "sa-east-1"}
        ]));
        let after = on_demand(json!([
            {"Region": "eu-central-1"},
            {"Region": "us-east-1", "Tags": [{"Key": "a", "Value": "b"}]},
            {"Region": "us-west-2", "TableClass": "STANDARD_INFREQUENT_ACCESS"},
            {"Region": "ap-northeast-1"},
            {"Region": "eu-west-1", "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": "5"}}
        ]));
        let plan = replica_plan(&before, &after, "us-east-1");
        assert_eq!(
            plan,
            ReplicaPlan {
                removed: vec!["ap-south-1".into(), "sa-east-1".into()],
                added: vec!["ap-northeast-1".into(), "eu-central-1".into()],
                // The stack region's replica changes with the shared settings; "5" is 5.
                changed: vec!["us-west-2".into()],
            }
        );
        assert_eq!(
            replica_plan(&after, &after, "us-east-1"),
            ReplicaPlan::default()
        );
        // A shared change reaches every kept replica's view.
        let mut with_ttl = after.clone();
        with_ttl.insert(
            "TimeToLiveSpecification".into(),
            json!({"AttributeName": "exp", "Enabled": true}),
        );
        assert_eq!(
            replica_plan(&after, &with_ttl, "us-east-1").changed,
            ["ap-northeast-1", "eu-central-1", "eu-west-1", "us-west-2"]
        );
        let removal = replica_delete("ap-south-1").unwrap();
        assert_eq!(removal.delete().unwrap().region_name(), "ap-south-1");
    }

    #[test]
    fn a_replica_update_carries_only_what_changed() {
        let mut before = on_demand(json!([]));
        before.insert("SSESpecification".into(), json!({"SSEEnabled": true}));
        before.insert(
            "GlobalSecondaryIndexes".into(),
            json!([{"IndexName": "old", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}]),
        );
        let mut after = before.clone();
        after.insert(
            "GlobalSecondaryIndexes".into(),
            json!([
                {"IndexName": "old", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}},
                {"IndexName": "new", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "Projection": {"ProjectionType": "ALL"}}
            ]),
        );
        let was = json!({
            "Region": "eu-west-1",
            "TableClass": "STANDARD_INFREQUENT_ACCESS",
            "SSESpecification": {"KMSMasterKeyId": "k1"},
            "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 10},
            "GlobalSecondaryIndexes": [{"IndexName": "old", "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 3}}]
        });
        assert_eq!(
            replica_update(&before, &before, &was, &was, &BTreeSet::new()),
            Ok(None)
        );
        let is = json!({
            "Region": "eu-west-1",
            "GlobalSecondaryIndexes": [
                {"IndexName": "old", "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 3}},
                {"IndexName": "new", "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 4}}
            ]
        });
        let fresh = BTreeSet::from(["new".to_string()]);
        let update = replica_update(&before, &after, &was, &is, &fresh)
            .unwrap()
            .unwrap();
        let action = update.update().unwrap();
        assert_eq!(action.region_name(), "eu-west-1");
        // A dropped class, key and limit go back to DynamoDB's defaults.
        assert_eq!(action.table_class_override(), Some(&TableClass::Standard));
        assert_eq!(action.kms_master_key_id(), Some(AWS_MANAGED_KEY));
        assert_eq!(
            action
                .on_demand_throughput_override()
                .unwrap()
                .max_read_request_units(),
            Some(-1)
        );
        assert!(action.provisioned_throughput_override().is_none());
        // The kept index's unchanged limit is left alone; the new index gets its own.
        let indexes: Vec<(&str, Option<i64>)> = action
            .global_secondary_indexes()
            .iter()
            .map(|i| {
                (
                    i.index_name(),
                    i.on_demand_throughput_override()
                        .and_then(|o| o.max_read_request_units()),
                )
            })
            .collect();
        assert_eq!(indexes, [("new", Some(4))]);

        // Provisioned: fixed read units that changed are set; auto scaled ones are not.
        let table = provisioned(json!([]));
        let fixed = |units: Value| json!({"Region": "eu-west-1", "ReadProvisionedThroughputSettings": {"ReadCapacityUnits": units}});
        let update = replica_update(
            &table,
            &table,
            &fixed(json!(5)),
            &fixed(json!(9)),
            &BTreeSet::new(),
        )
        .unwrap()
        .unwrap();
        let action = update.update().unwrap();
        assert_eq!(
            action
                .provisioned_throughput_override()
                .unwrap()
                .read_capacity_units(),
            Some(9)
        );
        assert!(action.kms_master_key_id().is_none() && action.table_class_override().is_none());
        let scaled = json!({"Region": "eu-west-1", "ReadProvisionedThroughputSettings": {
            "ReadCapacityAutoScalingSettings": {"MinCapacity": 1, "MaxCapacity": 9, "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 70}}
        }});
        assert_eq!(
            replica_update(&table, &table, &fixed(json!(5)), &scaled, &BTreeSet::new()),
            Ok(None)
        );
    }

    #[test]
    fn auto_scaling_follows_the_template() {
        let scaled_reads = json!({"ReadCapacityAutoScalingSettings": {
            "MinCapacity": 1, "MaxCapacity": 9,
            "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 70, "DisableScaleIn": "true"}
        }});
        let template = provisioned(json!([
            {"Region": "us-east-1", "ReadProvisionedThroughputSettings": scaled_reads.clone()},
            {"Region": "eu-west-1", "GlobalSecondaryIndexes": [
                {"IndexName": "byG", "ReadProvisionedThroughputSettings": scaled_reads.clone()}
            ]}
        ]));
        let input = auto_scaling("t", &Map::new(), &template, true)
            .unwrap()
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(input.table_name(), Some("t"));
        let write = input
            .provisioned_write_capacity_auto_scaling_update()
            .unwrap();
        assert_eq!(
            (write.minimum_units(), write.maximum_units()),
            (Some(5), Some(50))
        );
        assert_eq!(write.auto_scaling_disabled(), Some(false));
        let policy = write
            .scaling_policy_update()
            .unwrap()
            .target_tracking_scaling_policy_configuration()
            .unwrap();
        assert_eq!(policy.target_value(), 70.0);
        let index = &input.global_secondary_index_updates()[0];
        assert_eq!(index.index_name(), Some("byG"));
        let index_policy = index
            .provisioned_write_capacity_auto_scaling_update()
            .unwrap();
        assert_eq!(index_policy.minimum_units(), Some(3));
        let tracking = index_policy
            .scaling_policy_update()
            .unwrap()
            .target_tracking_scaling_policy_configuration()
            .unwrap();
        assert_eq!(
            (tracking.target_value(), tracking.scale_in_cooldown()),
            (60.5, Some(60))
        );
        let replicas: Vec<(&str, bool, usize)> = input
            .replica_updates()
            .iter()
            .map(|r| {
                (
                    r.region_name(),
                    r.replica_provisioned_read_capacity_auto_scaling_update()
                        .is_some(),
                    r.replica_global_secondary_index_updates().len(),
                )
            })
            .collect();
        assert_eq!(replicas, [("eu-west-1", false, 1), ("us-east-1", true, 0)]);

        // Nothing changed, nothing new: no call.
        assert!(auto_scaling("t", &template, &template, false)
            .unwrap()
            .is_none());
        // A replica going back to fixed reads has its scaling turned off.
        let mut fixed = template.clone();
        fixed["Replicas"][0]["ReadProvisionedThroughputSettings"] = json!({"ReadCapacityUnits": 4});
        let input = auto_scaling("t", &template, &fixed, false)
            .unwrap()
            .unwrap()
            .build()
            .unwrap();
        let home = input
            .replica_updates()
            .iter()
            .find(|r| r.region_name() == "us-east-1")
            .unwrap();
        assert_eq!(
            home.replica_provisioned_read_capacity_auto_scaling_update()
                .unwrap()
                .auto_scaling_disabled(),
            Some(true)
        );
        // On demand, nothing scales.
        let on_demand_template = on_demand(json!([{"Region": "us-east-1"}]));
        assert!(auto_scaling("t", &template, &on_demand_template, true)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_global_table_reads_back_in_template_shape() {
        let table = TableDescription::builder()
            .table_name("orders")
            .table_id("id-1")
            .table_arn("arn:aws:dynamodb:us-east-1:1:table/orders")
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name("pk")
                    .key_type(KeyType::Hash)
                    .build()
                    .unwrap(),
            )
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name("pk")
                    .attribute_type(ScalarAttributeType::S)
                    .build()
                    .unwrap(),
            )
            .billing_mode_summary(
                BillingModeSummary::builder()
                    .billing_mode(BillingMode::PayPerRequest)
                    .build(),
            )
            .on_demand_throughput(
                OnDemandThroughput::builder()
                    .max_write_request_units(100)
                    .max_read_request_units(-1)
                    .build(),
            )
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewAndOldImages)
                    .build()
                    .unwrap(),
            )
            .sse_description(
                SseDescription::builder()
                    .status(SseStatus::Enabled)
                    .sse_type(SseType::Kms)
                    .kms_master_key_arn("arn:aws:kms:us-east-1:1:key/k1")
                    .build(),
            )
            .deletion_protection_enabled(true)
            .table_class_summary(
                TableClassSummary::builder()
                    .table_class(TableClass::StandardInfrequentAccess)
                    .build(),
            )
            .replicas(
                ReplicaDescription::builder()
                    .region_name("eu-west-1")
                    .replica_status(ReplicaStatus::Active)
                    .kms_master_key_id("arn:aws:kms:eu-west-1:1:key/k2")
                    .on_demand_throughput_override(limit_override(30))
                    .build(),
            )
            .replicas(
                ReplicaDescription::builder()
                    .region_name("ap-south-1")
                    .replica_status(ReplicaStatus::Active)
                    .build(),
            )
            .build();
        let eu = TableDescription::builder()
            .table_name("orders")
            .deletion_protection_enabled(false)
            .table_class_summary(
                TableClassSummary::builder()
                    .table_class(TableClass::Standard)
                    .build(),
            )
            .build();
        let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build().unwrap();
        let reads = [
            RegionalRead {
                region: "ap-south-1".into(),
                table: None,
                tags: vec![],
            },
            RegionalRead {
                region: "eu-west-1".into(),
                table: Some(eu),
                tags: vec![],
            },
            RegionalRead {
                region: "us-east-1".into(),
                table: Some(table.clone()),
                tags: vec![tag("z", "1"), tag("a", "2")],
            },
        ];
        let template = props(json!({
            "SSESpecification": {"SSEEnabled": true, "SSEType": "KMS"},
            "Replicas": [
                {
                    "Region": "us-east-1",
                    "Tags": [{"Key": "a", "Value": "2"}],
                    "SSESpecification": {"KMSMasterKeyId": "k1"}
                },
                {
                    "Region": "eu-west-1",
                    "SSESpecification": {"KMSMasterKeyId": "alias/eu"},
                    "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true},
                    "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 10}
                }
            ]
        }));
        let shape = global_shape(&table, "us-east-1", None, &reads, &template);
        assert_eq!(
            Value::Object(shape),
            json!({
                "TableName": "orders",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
                "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
                "SSESpecification": {"SSEEnabled": true, "SSEType": "KMS"},
                "WriteOnDemandThroughputSettings": {"MaxWriteRequestUnits": 100},
                // Ordered like the template; a replica it does not list comes last.
                "Replicas": [
                    {
                        "Region": "us-east-1",
                        "DeletionProtectionEnabled": true,
                        "TableClass": "STANDARD_INFREQUENT_ACCESS",
                        "Tags": [{"Key": "a", "Value": "2"}, {"Key": "z", "Value": "1"}],
                        "SSESpecification": {"KMSMasterKeyId": "k1"}
                    },
                    {
                        "Region": "eu-west-1",
                        "SSESpecification": {"KMSMasterKeyId": "alias/eu"},
                        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true},
                        "ReadOnDemandThroughputSettings": {"MaxReadRequestUnits": 30}
                    },
                    {"Region": "ap-south-1"}
                ]
            })
        );
        assert_eq!(
            Value::Object(global_attributes(&table)),
            json!({
                "Arn": "arn:aws:dynamodb:us-east-1:1:table/orders",
                "TableId": "id-1"
            })
        );
    }

    #[test]
    fn key_ids_match_the_arn_dynamodb_answers() {
        let arn = "arn:aws:kms:us-east-1:1:key/abc";
        assert!(same_key("abc", arn));
        assert!(same_key(arn, arn));
        assert!(same_key("alias/mine", arn));
        assert!(!same_key("def", arn));
    }

    #[test]
    fn created_settings_are_not_applied_twice() {
        let view = props(json!({
            "Tags": [{"Key": "a", "Value": "b"}],
            "ResourcePolicy": {"PolicyDocument": {}},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true}
        }));
        assert_eq!(
            Value::Object(created_with_table(&view)),
            json!({
                "Tags": [{"Key": "a", "Value": "b"}],
                "ResourcePolicy": {"PolicyDocument": {}}
            })
        );
    }
}
