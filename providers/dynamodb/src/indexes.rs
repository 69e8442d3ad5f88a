//! Secondary indexes: template indexes as DynamoDB shapes, and the global secondary index
//! changes of an update as single steps. DynamoDB creates or deletes one global secondary index
//! per UpdateTable call and refuses another while one is in progress, so every change is its
//! own step; an index whose key schema or projection changed is deleted and created again.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{
    CreateGlobalSecondaryIndexAction, DeleteGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, LocalSecondaryIndex, UpdateGlobalSecondaryIndexAction,
};
use cdkd_aws_common::{string, strings};
use serde_json::{Map, Value};

use crate::input::{
    key_schema, number, on_demand_throughput, projection, provisioned_throughput,
    unlimited_on_demand, warm_throughput,
};

/// A template global secondary index; its provisioned throughput only on a `provisioned` table
/// (DynamoDB refuses one on an on-demand table).
pub(crate) fn global_index(
    index: &Value,
    provisioned: bool,
) -> Result<GlobalSecondaryIndex, String> {
    GlobalSecondaryIndex::builder()
        .set_index_name(string(index.get("IndexName")))
        .set_key_schema(Some(key_schema(index.get("KeySchema"))?))
        .projection(projection(index.get("Projection")))
        .set_provisioned_throughput(if provisioned {
            provisioned_throughput(index.get("ProvisionedThroughput"))?
        } else {
            None
        })
        .set_on_demand_throughput(on_demand_throughput(index.get("OnDemandThroughput")))
        .set_warm_throughput(warm_throughput(index.get("WarmThroughput")))
        .build()
        .map_err(|e| format!("GlobalSecondaryIndexes: {e}"))
}

/// A template local secondary index.
pub(crate) fn local_index(index: &Value) -> Result<LocalSecondaryIndex, String> {
    LocalSecondaryIndex::builder()
        .set_index_name(string(index.get("IndexName")))
        .set_key_schema(Some(key_schema(index.get("KeySchema"))?))
        .projection(projection(index.get("Projection")))
        .build()
        .map_err(|e| format!("LocalSecondaryIndexes: {e}"))
}

/// One global secondary index change, sent alone in an UpdateTable.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GsiStep {
    /// Delete the index of that name.
    Delete(String),
    /// Create the index (its template).
    Create(Value),
    /// Change the throughput of the index (its template).
    Update(Value),
}

/// The template's global secondary indexes by name.
pub(crate) fn by_name(properties: &Map<String, Value>) -> BTreeMap<String, Value> {
    properties
        .get("GlobalSecondaryIndexes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| Some((string(i.get("IndexName"))?, i.clone())))
        .collect()
}

/// What makes an index what it is: key schema and projection (neither can change in place).
fn identity(index: &Value) -> (Vec<(String, String)>, String, Vec<String>) {
    let keys = index
        .get("KeySchema")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|k| {
            (
                string(k.get("AttributeName")).unwrap_or_default(),
                string(k.get("KeyType")).unwrap_or_default(),
            )
        })
        .collect();
    let projection = index.get("Projection");
    let kind = string(projection.and_then(|p| p.get("ProjectionType"))).unwrap_or_default();
    let mut attributes =
        strings(projection.and_then(|p| p.get("NonKeyAttributes"))).unwrap_or_default();
    attributes.sort();
    (keys, kind, attributes)
}

/// A throughput object's numbers under `keys`, strings read as numbers.
fn numbers(value: Option<&Value>, keys: &[&str]) -> Option<Vec<Option<i64>>> {
    let value = value.filter(|v| v.is_object())?;
    Some(keys.iter().map(|k| number(value.get(*k))).collect())
}

/// Provisioned capacity of an index, normalised.
fn capacity(index: &Value) -> Option<Vec<Option<i64>>> {
    numbers(
        index.get("ProvisionedThroughput"),
        &["ReadCapacityUnits", "WriteCapacityUnits"],
    )
}

/// On-demand limits of an index, normalised.
fn on_demand(index: &Value) -> Option<Vec<Option<i64>>> {
    numbers(
        index.get("OnDemandThroughput"),
        &["MaxReadRequestUnits", "MaxWriteRequestUnits"],
    )
}

/// Warm throughput of an index, normalised.
fn warm(index: &Value) -> Option<Vec<Option<i64>>> {
    numbers(
        index.get("WarmThroughput"),
        &["ReadUnitsPerSecond", "WriteUnitsPerSecond"],
    )
}

/// The steps from `before`'s global secondary indexes to `after`'s, in the order they run:
/// deletions first (removed indexes, then those recreated), so a recreated index's name is
/// free again; then creations; then throughput changes of kept indexes. `compare_capacity` is
/// false when the billing mode changes, where the switch itself sets the indexes' capacity.
pub(crate) fn gsi_steps(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    compare_capacity: bool,
) -> Vec<GsiStep> {
    let (old, new) = (by_name(before), by_name(after));
    let mut deletes = Vec::new();
    let mut recreates = Vec::new();
    let mut recreated = Vec::new();
    let mut creates = Vec::new();
    let mut updates = Vec::new();
    for name in old.keys().filter(|n| !new.contains_key(*n)) {
        deletes.push(GsiStep::Delete(name.clone()));
    }
    for (name, index) in &new {
        let Some(previous) = old.get(name) else {
            creates.push(GsiStep::Create(index.clone()));
            continue;
        };
        if identity(previous) != identity(index) {
            recreates.push(GsiStep::Delete(name.clone()));
            recreated.push(GsiStep::Create(index.clone()));
            continue;
        }
        let capacity_changed = compare_capacity && capacity(previous) != capacity(index);
        let on_demand_changed = on_demand(previous) != on_demand(index);
        let warm_changed = warm(index).is_some() && warm(previous) != warm(index);
        if capacity_changed || on_demand_changed || warm_changed {
            updates.push(GsiStep::Update(index.clone()));
        }
    }
    // Recreated indexes come back before brand-new ones, in name order both.
    deletes.extend(recreates);
    deletes.extend(recreated);
    deletes.extend(creates);
    deletes.extend(updates);
    deletes
}

/// The UpdateTable index change of one step; `before` is the index's previous template, for
/// lifting on-demand limits the template dropped.
pub(crate) fn gsi_update(
    step: &GsiStep,
    before: &Map<String, Value>,
    provisioned: bool,
) -> Result<GlobalSecondaryIndexUpdate, String> {
    let update = match step {
        GsiStep::Delete(name) => GlobalSecondaryIndexUpdate::builder().delete(
            DeleteGlobalSecondaryIndexAction::builder()
                .index_name(name)
                .build()
                .map_err(|e| format!("GlobalSecondaryIndexes: {e}"))?,
        ),
        GsiStep::Create(index) => GlobalSecondaryIndexUpdate::builder().create(
            CreateGlobalSecondaryIndexAction::builder()
                .set_index_name(string(index.get("IndexName")))
                .set_key_schema(Some(key_schema(index.get("KeySchema"))?))
                .projection(projection(index.get("Projection")))
                .set_provisioned_throughput(if provisioned {
                    provisioned_throughput(index.get("ProvisionedThroughput"))?
                } else {
                    None
                })
                .set_on_demand_throughput(on_demand_throughput(index.get("OnDemandThroughput")))
                .set_warm_throughput(warm_throughput(index.get("WarmThroughput")))
                .build()
                .map_err(|e| format!("GlobalSecondaryIndexes: {e}"))?,
        ),
        GsiStep::Update(index) => {
            let name = string(index.get("IndexName")).unwrap_or_default();
            let previous = by_name(before).remove(&name).unwrap_or(Value::Null);
            let on_demand_value = on_demand_throughput(index.get("OnDemandThroughput"))
                .or_else(|| on_demand(&previous).map(|_| unlimited_on_demand()));
            let capacity_value = if provisioned && capacity(&previous) != capacity(index) {
                provisioned_throughput(index.get("ProvisionedThroughput"))?
            } else {
                None
            };
            let warm_value = if warm(&previous) != warm(index) {
                warm_throughput(index.get("WarmThroughput"))
            } else {
                None
            };
            GlobalSecondaryIndexUpdate::builder().update(
                UpdateGlobalSecondaryIndexAction::builder()
                    .index_name(name)
                    .set_provisioned_throughput(capacity_value)
                    .set_on_demand_throughput(
                        on_demand_value.filter(|_| on_demand(&previous) != on_demand(index)),
                    )
                    .set_warm_throughput(warm_value)
                    .build()
                    .map_err(|e| format!("GlobalSecondaryIndexes: {e}"))?,
            )
        }
    };
    Ok(update.build())
}

/// The capacity of every index kept across a switch to provisioned billing, which DynamoDB
/// wants in the same UpdateTable as the switch.
pub(crate) fn capacity_for_switch(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<Vec<GlobalSecondaryIndexUpdate>, String> {
    let old = by_name(before);
    by_name(after)
        .into_iter()
        .filter(|(name, index)| {
            old.get(name)
                .is_some_and(|o| identity(o) == identity(index))
        })
        .filter_map(|(name, index)| {
            let throughput = provisioned_throughput(index.get("ProvisionedThroughput"));
            match throughput {
                Ok(Some(throughput)) => Some(
                    UpdateGlobalSecondaryIndexAction::builder()
                        .index_name(name)
                        .provisioned_throughput(throughput)
                        .build()
                        .map(|u| GlobalSecondaryIndexUpdate::builder().update(u).build())
                        .map_err(|e| format!("GlobalSecondaryIndexes: {e}")),
                ),
                Ok(None) => None,
                Err(e) => Some(Err(e)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index(name: &str, key: &str, projection: &str, read: Value) -> Value {
        json!({
            "IndexName": name,
            "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
            "Projection": {"ProjectionType": projection},
            "ProvisionedThroughput": {"ReadCapacityUnits": read, "WriteCapacityUnits": 1}
        })
    }

    fn table(indexes: Vec<Value>) -> Map<String, Value> {
        json!({"GlobalSecondaryIndexes": indexes})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[test]
    fn index_changes_run_one_at_a_time_deletes_first() {
        let before = table(vec![
            index("kept", "a", "ALL", json!(1)),
            index("gone", "b", "ALL", json!(1)),
            index("rekeyed", "c", "ALL", json!(1)),
            index("faster", "d", "ALL", json!(1)),
            index("same", "e", "KEYS_ONLY", json!("2")),
        ]);
        let after = table(vec![
            index("kept", "a", "ALL", json!("1")),
            index("rekeyed", "c2", "ALL", json!(1)),
            index("faster", "d", "ALL", json!(9)),
            index("added", "f", "ALL", json!(1)),
            index("same", "e", "KEYS_ONLY", json!(2)),
        ]);
        let steps = gsi_steps(&before, &after, true);
        let names: Vec<String> = steps
            .iter()
            .map(|s| match s {
                GsiStep::Delete(n) => format!("delete {n}"),
                GsiStep::Create(i) => format!("create {}", i["IndexName"].as_str().unwrap()),
                GsiStep::Update(i) => format!("update {}", i["IndexName"].as_str().unwrap()),
            })
            .collect();
        assert_eq!(
            names,
            [
                "delete gone",
                "delete rekeyed",
                "create rekeyed",
                "create added",
                "update faster"
            ]
        );
        // With the billing mode switching, capacity is not compared.
        let no_capacity = gsi_steps(&before, &after, false);
        assert_eq!(no_capacity.len(), 4);
        assert!(gsi_steps(&after, &after, true).is_empty());
    }

    #[test]
    fn a_projection_change_recreates_the_index() {
        let before = table(vec![index("i", "a", "ALL", json!(1))]);
        let mut include = index("i", "a", "INCLUDE", json!(1));
        include["Projection"]["NonKeyAttributes"] = json!(["x", "y"]);
        let after = table(vec![include.clone()]);
        assert_eq!(
            gsi_steps(&before, &after, true),
            [
                GsiStep::Delete("i".into()),
                GsiStep::Create(include.clone())
            ]
        );
        // Non-key attributes compare as a set.
        let mut reordered = include.clone();
        reordered["Projection"]["NonKeyAttributes"] = json!(["y", "x"]);
        assert!(gsi_steps(&after, &table(vec![reordered]), true).is_empty());
    }

    #[test]
    fn each_step_is_one_index_update() {
        let before = table(vec![index("i", "a", "ALL", json!(1))]);
        let after = table(vec![index("i", "a", "ALL", json!(4))]);
        let update = gsi_update(&gsi_steps(&before, &after, true)[0], &before, true).unwrap();
        let action = update.update().unwrap();
        assert_eq!(action.index_name(), "i");
        assert_eq!(
            action
                .provisioned_throughput()
                .unwrap()
                .read_capacity_units(),
            4
        );
        assert!(update.create().is_none() && update.delete().is_none());

        let create = gsi_update(
            &GsiStep::Create(index("n", "b", "ALL", json!(2))),
            &before,
            false,
        )
        .unwrap();
        let action = create.create().unwrap();
        assert_eq!(action.index_name(), "n");
        assert_eq!(action.key_schema()[0].attribute_name(), "b");
        assert!(action.provisioned_throughput().is_none());

        let delete = gsi_update(&GsiStep::Delete("i".into()), &before, true).unwrap();
        assert_eq!(delete.delete().unwrap().index_name(), "i");
    }

    #[test]
    fn dropped_on_demand_limits_are_lifted() {
        let mut limited = index("i", "a", "ALL", json!(1));
        limited["OnDemandThroughput"] = json!({"MaxReadRequestUnits": 10});
        let before = table(vec![limited]);
        let after = table(vec![index("i", "a", "ALL", json!(1))]);
        let steps = gsi_steps(&before, &after, false);
        assert_eq!(steps.len(), 1);
        let update = gsi_update(&steps[0], &before, false).unwrap();
        let on_demand = update.update().unwrap().on_demand_throughput().unwrap();
        assert_eq!(on_demand.max_read_request_units(), Some(-1));
        assert_eq!(on_demand.max_write_request_units(), Some(-1));
    }

    #[test]
    fn a_switch_to_provisioned_carries_kept_indexes_capacity() {
        let before = table(vec![
            index("kept", "a", "ALL", json!(1)),
            index("rekeyed", "b", "ALL", json!(1)),
        ]);
        let after = table(vec![
            index("kept", "a", "ALL", json!(7)),
            index("rekeyed", "b2", "ALL", json!(1)),
            index("new", "c", "ALL", json!(1)),
        ]);
        let updates = capacity_for_switch(&before, &after).unwrap();
        assert_eq!(updates.len(), 1);
        let action = updates[0].update().unwrap();
        assert_eq!(action.index_name(), "kept");
        assert_eq!(
            action
                .provisioned_throughput()
                .unwrap()
                .read_capacity_units(),
            7
        );
    }
}
