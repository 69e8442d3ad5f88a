//! `AWS::S3::Bucket.ReplicationConfiguration`, from the template's shape to S3's
//! `PutBucketReplication` request (the V2 rule form: `Filter` and `Priority`, or the legacy
//! `Prefix` form, as the template chooses).

use aws_sdk_s3::types::{
    AccessControlTranslation, DeleteMarkerReplication, DeleteMarkerReplicationStatus, Destination,
    EncryptionConfiguration, Metrics, MetricsStatus, OwnerOverride, ReplicaModifications,
    ReplicaModificationsStatus, ReplicationConfiguration, ReplicationRule,
    ReplicationRuleAndOperator, ReplicationRuleFilter, ReplicationRuleStatus, ReplicationTime,
    ReplicationTimeStatus, ReplicationTimeValue, SourceSelectionCriteria, SseKmsEncryptedObjects,
    SseKmsEncryptedObjectsStatus, StorageClass,
};
use serde_json::Value;

use crate::{tag, text};

fn number(value: &Value, key: &str) -> Option<i32> {
    value.get(key).and_then(|v| match v {
        Value::Number(n) => n.as_i64().map(|n| n as i32),
        Value::String(s) => s.parse().ok(),
        _ => None,
    })
}

fn filter(value: &Value) -> Result<ReplicationRuleFilter, String> {
    let mut filter = ReplicationRuleFilter::builder().set_prefix(text(value, "Prefix"));
    if let Some(single) = value.get("TagFilter") {
        filter = filter.tag(tag(single)?);
    }
    if let Some(and) = value.get("And") {
        let tags = and
            .get("TagFilters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(tag)
            .collect::<Result<Vec<_>, _>>()?;
        filter = filter.and(
            ReplicationRuleAndOperator::builder()
                .set_prefix(text(and, "Prefix"))
                .set_tags(Some(tags))
                .build(),
        );
    }
    Ok(filter.build())
}

fn destination(value: &Value) -> Result<Destination, String> {
    let mut destination = Destination::builder()
        .set_bucket(text(value, "Bucket"))
        .set_account(text(value, "Account"))
        .set_storage_class(text(value, "StorageClass").map(|s| StorageClass::from(s.as_str())));
    if let Some(translation) = value.get("AccessControlTranslation") {
        destination = destination.access_control_translation(
            AccessControlTranslation::builder()
                .set_owner(text(translation, "Owner").map(|o| OwnerOverride::from(o.as_str())))
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    if let Some(encryption) = value.get("EncryptionConfiguration") {
        destination = destination.encryption_configuration(
            EncryptionConfiguration::builder()
                .set_replica_kms_key_id(text(encryption, "ReplicaKmsKeyID"))
                .build(),
        );
    }
    if let Some(metrics) = value.get("Metrics") {
        destination = destination.metrics(
            Metrics::builder()
                .set_status(text(metrics, "Status").map(|s| MetricsStatus::from(s.as_str())))
                .set_event_threshold(metrics.get("EventThreshold").map(|t| {
                    ReplicationTimeValue::builder()
                        .set_minutes(number(t, "Minutes"))
                        .build()
                }))
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    if let Some(time) = value.get("ReplicationTime") {
        destination = destination.replication_time(
            ReplicationTime::builder()
                .set_status(text(time, "Status").map(|s| ReplicationTimeStatus::from(s.as_str())))
                .set_time(time.get("Time").map(|t| {
                    ReplicationTimeValue::builder()
                        .set_minutes(number(t, "Minutes"))
                        .build()
                }))
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    destination.build().map_err(|e| e.to_string())
}

fn selection(value: &Value) -> Result<SourceSelectionCriteria, String> {
    let mut criteria = SourceSelectionCriteria::builder();
    if let Some(kms) = value.get("SseKmsEncryptedObjects") {
        criteria = criteria.sse_kms_encrypted_objects(
            SseKmsEncryptedObjects::builder()
                .set_status(
                    text(kms, "Status").map(|s| SseKmsEncryptedObjectsStatus::from(s.as_str())),
                )
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    if let Some(replicas) = value.get("ReplicaModifications") {
        criteria = criteria.replica_modifications(
            ReplicaModifications::builder()
                .set_status(
                    text(replicas, "Status").map(|s| ReplicaModificationsStatus::from(s.as_str())),
                )
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    Ok(criteria.build())
}

/// The request body for the template's `ReplicationConfiguration`.
pub fn configuration(value: &Value) -> Result<ReplicationConfiguration, String> {
    let mut rules = Vec::new();
    for rule in value
        .get("Rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mut built = ReplicationRule::builder()
            .set_id(text(rule, "Id"))
            .set_priority(number(rule, "Priority"))
            .set_status(text(rule, "Status").map(|s| ReplicationRuleStatus::from(s.as_str())))
            .destination(destination(
                rule.get("Destination").unwrap_or(&Value::Null),
            )?);
        match rule.get("Filter") {
            Some(f) => built = built.filter(filter(f)?),
            // The legacy form: a rule-level prefix (V1 rules take no filter).
            None => {
                #[allow(deprecated)]
                {
                    built = built.set_prefix(Some(text(rule, "Prefix").unwrap_or_default()));
                }
            }
        }
        if let Some(markers) = rule.get("DeleteMarkerReplication") {
            built = built.delete_marker_replication(
                DeleteMarkerReplication::builder()
                    .set_status(
                        text(markers, "Status")
                            .map(|s| DeleteMarkerReplicationStatus::from(s.as_str())),
                    )
                    .build(),
            );
        }
        if let Some(criteria) = rule.get("SourceSelectionCriteria") {
            built = built.source_selection_criteria(selection(criteria)?);
        }
        rules.push(built.build().map_err(|e| e.to_string())?);
    }
    ReplicationConfiguration::builder()
        .set_role(text(value, "Role"))
        .set_rules(Some(rules))
        .build()
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_v2_rule_keeps_its_filter_destination_and_markers() {
        let built = configuration(&json!({
            "Role": "arn:aws:iam::123456789012:role/replication",
            "Rules": [{
                "Id": "all", "Priority": 1, "Status": "Enabled",
                "Filter": {"And": {"Prefix": "logs/", "TagFilters": [{"Key": "k", "Value": "v"}]}},
                "Destination": {"Bucket": "arn:aws:s3:::backup", "StorageClass": "STANDARD_IA",
                                "ReplicationTime": {"Status": "Enabled", "Time": {"Minutes": 15}},
                                "Metrics": {"Status": "Enabled", "EventThreshold": {"Minutes": 15}}},
                "DeleteMarkerReplication": {"Status": "Disabled"}
            }]
        }))
        .unwrap();
        assert_eq!(built.role(), "arn:aws:iam::123456789012:role/replication");
        let rule = &built.rules()[0];
        assert_eq!(rule.priority(), Some(1));
        assert_eq!(
            rule.filter().unwrap().and().unwrap().prefix(),
            Some("logs/")
        );
        let destination = rule.destination().unwrap();
        assert_eq!(destination.bucket(), "arn:aws:s3:::backup");
        assert_eq!(destination.storage_class(), Some(&StorageClass::StandardIa));
        assert_eq!(
            destination
                .replication_time()
                .unwrap()
                .time()
                .unwrap()
                .minutes(),
            Some(15)
        );
        assert!(configuration(&json!({"Role": "r", "Rules": [{"Status": "Enabled"}]})).is_err());
    }
}
