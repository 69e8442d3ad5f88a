//! `AWS::Route53::RecordSetGroup`: several records of one zone written in one change batch
//! (all or none). Cloud Control cannot provision it (its schema has no read handler). Physical
//! id: a generated `<stack>-<logical id>-<suffix>` (CloudFormation's is generated too); the
//! records are found from the template's zone and `RecordSets`.

use std::collections::BTreeMap;

use aws_sdk_route53::types::ChangeAction;
use cdkd_aws_common::{physical_name, string, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::record::{change, live_record, to_sdk, to_template, Key};
use crate::{client, zone_of};

const TYPE: &str = "AWS::Route53::RecordSetGroup";

/// The `AWS::Route53::RecordSetGroup` provider.
#[derive(Default)]
pub struct RecordSetGroup;

/// The template's records by key.
fn records(properties: &Map<String, Value>) -> BTreeMap<Key, Map<String, Value>> {
    properties
        .get("RecordSets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|r| (Key::of(r), r.clone()))
        .collect()
}

/// Whether two template records differ (numbers and their string spelling alike).
fn differs(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    let norm = |m: &Map<String, Value>| -> BTreeMap<String, String> {
        m.iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    cdkd_aws_common::text(Some(v)).unwrap_or_else(|| v.to_string()),
                )
            })
            .collect()
    };
    norm(a) != norm(b)
}

/// The schema's read-only `Id`: the group's physical id.
fn id_attribute(id: &str) -> Map<String, Value> {
    [("Id".to_string(), json!(id))].into_iter().collect()
}

#[async_trait]
impl ResourceProvider for RecordSetGroup {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["HostedZoneId", "HostedZoneName", "RecordSets", "Comment"])
            .create_only(&["HostedZoneId", "HostedZoneName"])
            .read_and_import()
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let r53c = client(ctx).await?;
        let zone = zone_of(&r53c, &what, &request.properties).await?;
        let mut changes = Vec::new();
        for record in records(&request.properties).values() {
            changes.push((ChangeAction::Upsert, to_sdk(record, &what)?));
        }
        change(
            &r53c,
            &what,
            &zone,
            string(request.properties.get("Comment")),
            changes,
        )
        .await?;
        let id = physical_name(&request, 128, false);
        Ok(CreateResult {
            attributes: id_attribute(&id),
            physical_id: id,
            ..Default::default()
        })
    }

    /// One batch: records gone from the template deleted (with their live values), new and
    /// changed ones upserted.
    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let r53c = client(ctx).await?;
        let zone = zone_of(&r53c, &what, &request.properties).await?;
        let (before, after) = (
            records(&request.previous_properties),
            records(&request.properties),
        );
        let mut changes = Vec::new();
        for key in before.keys().filter(|k| !after.contains_key(*k)) {
            if let Some(live) = live_record(&r53c, &what, &zone, key).await? {
                changes.push((ChangeAction::Delete, live));
            }
        }
        for (key, record) in &after {
            if before.get(key).is_none_or(|old| differs(old, record)) {
                changes.push((ChangeAction::Upsert, to_sdk(record, &what)?));
            }
        }
        change(
            &r53c,
            &what,
            &zone,
            string(request.properties.get("Comment")),
            changes,
        )
        .await?;
        Ok(UpdateResult {
            attributes: id_attribute(&request.physical_id),
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
        let r53c = client(ctx).await?;
        let zone = match zone_of(&r53c, &what, &request.properties).await {
            Err(err) if err.kind == cdkd_provider_api::ErrorKind::NOT_FOUND => {
                return Ok(DeleteResult::Deleted)
            }
            other => other?,
        };
        let mut changes = Vec::new();
        for key in records(&request.properties).keys() {
            if let Some(live) = live_record(&r53c, &what, &zone, key).await? {
                changes.push((ChangeAction::Delete, live));
            }
        }
        cdkd_aws_common::deleted_unless_failed(change(&r53c, &what, &zone, None, changes).await)
    }
}

#[async_trait]
impl Readable for RecordSetGroup {
    /// The template's records as they are live; `None` when none of them exists any more.
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let template = &request.properties;
        let wanted = records(template);
        if wanted.is_empty() {
            return Err(ProviderError::validation(format!(
                "{what}: a record set group is read from its template's RecordSets; none were given"
            )));
        }
        let r53c = client(ctx).await?;
        let zone = match zone_of(&r53c, what, template).await {
            Err(err) if err.kind == cdkd_provider_api::ErrorKind::NOT_FOUND => return Ok(None),
            other => other?,
        };
        let mut live = Vec::new();
        // In the template's order, so an unchanged group reads back equal.
        let in_order = template
            .get("RecordSets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for record in in_order.filter_map(Value::as_object) {
            if let Some(set) = live_record(&r53c, what, &zone, &Key::of(record)).await? {
                live.push(Value::Object(to_template(&set, record)));
            }
        }
        if live.is_empty() {
            return Ok(None);
        }
        let mut properties = Map::new();
        for key in ["HostedZoneId", "HostedZoneName", "Comment"] {
            if let Some(value) = template.get(key) {
                properties.insert(key.into(), value.clone());
            }
        }
        properties.insert("RecordSets".into(), json!(live));
        Ok(Some(properties))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(id_attribute(physical_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_keyed_and_compared_in_either_spelling() {
        let group = json!({"RecordSets": [
            {"Name": "a.example.com", "Type": "A", "TTL": "60", "ResourceRecords": ["192.0.2.1"]},
            {"Name": "b.example.com.", "Type": "TXT", "TTL": 60, "ResourceRecords": ["\"x\""]},
        ]});
        let by_key = records(group.as_object().unwrap());
        assert_eq!(by_key.len(), 2);
        let a = by_key.values().next().unwrap();
        let mut same = a.clone();
        same.insert("TTL".into(), json!(60));
        assert!(!differs(a, &same));
        same.insert("TTL".into(), json!(61));
        assert!(differs(a, &same));
    }
}
