//! One record set as both record types write it: the template's shape (a `RecordSet`'s
//! properties, or one entry of a `RecordSetGroup`'s `RecordSets`) to Route 53's
//! `ResourceRecordSet` and back, the live record found by its key (name, type, set
//! identifier), and one change batch.

use aws_sdk_route53::types::{
    AliasTarget, Change, ChangeAction, ChangeBatch, GeoLocation, ResourceRecord, ResourceRecordSet,
    ResourceRecordSetFailover, ResourceRecordSetRegion, RrType,
};
use cdkd_aws_common::{aws_error, flag, string, strings, text};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::{as_template_spells, bare_zone_id, fqdn, r53};

/// The properties of one record a template may set (the zone's are the type's own).
pub(crate) const RECORD_PROPERTIES: &[&str] = &[
    "Name",
    "Type",
    "TTL",
    "ResourceRecords",
    "AliasTarget",
    "SetIdentifier",
    "Weight",
    "Failover",
    "Region",
    "MultiValueAnswer",
    "HealthCheckId",
    "GeoLocation",
];

/// What identifies a record in its zone: name (fully qualified), type, set identifier.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub name: String,
    pub kind: String,
    pub set_identifier: Option<String>,
}

impl Key {
    pub(crate) fn of(record: &Map<String, Value>) -> Key {
        Key {
            name: fqdn(&string(record.get("Name")).unwrap_or_default()),
            kind: string(record.get("Type")).unwrap_or_default(),
            set_identifier: text(record.get("SetIdentifier")).filter(|s| !s.is_empty()),
        }
    }
}

/// The template's record as Route 53's `ResourceRecordSet`.
pub(crate) fn to_sdk(
    record: &Map<String, Value>,
    what: &str,
) -> Result<ResourceRecordSet, ProviderError> {
    let name = string(record.get("Name"))
        .ok_or_else(|| ProviderError::validation(format!("{what}: property Name is required")))?;
    let kind = string(record.get("Type"))
        .ok_or_else(|| ProviderError::validation(format!("{what}: property Type is required")))?;
    let mut set = ResourceRecordSet::builder()
        .name(name)
        .r#type(RrType::from(kind.as_str()))
        .set_set_identifier(text(record.get("SetIdentifier")))
        .set_ttl(text(record.get("TTL")).and_then(|t| t.parse::<i64>().ok()))
        .set_weight(text(record.get("Weight")).and_then(|t| t.parse::<i64>().ok()))
        .set_failover(
            string(record.get("Failover")).map(|f| ResourceRecordSetFailover::from(f.as_str())),
        )
        .set_region(string(record.get("Region")).map(|r| ResourceRecordSetRegion::from(r.as_str())))
        .set_multi_value_answer(flag(record.get("MultiValueAnswer")))
        .set_health_check_id(string(record.get("HealthCheckId")));
    for value in strings(record.get("ResourceRecords")).unwrap_or_default() {
        set = set.resource_records(
            ResourceRecord::builder()
                .value(value)
                .build()
                .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?,
        );
    }
    if let Some(alias) = record.get("AliasTarget").and_then(Value::as_object) {
        set = set.alias_target(
            AliasTarget::builder()
                .set_dns_name(string(alias.get("DNSName")))
                .set_hosted_zone_id(string(alias.get("HostedZoneId")))
                .evaluate_target_health(flag(alias.get("EvaluateTargetHealth")).unwrap_or(false))
                .build()
                .map_err(|e| ProviderError::validation(format!("{what}: AliasTarget: {e}")))?,
        );
    }
    if let Some(geo) = record.get("GeoLocation").and_then(Value::as_object) {
        set = set.geo_location(
            GeoLocation::builder()
                .set_continent_code(string(geo.get("ContinentCode")))
                .set_country_code(string(geo.get("CountryCode")))
                .set_subdivision_code(string(geo.get("SubdivisionCode")))
                .build(),
        );
    }
    set.build()
        .map_err(|e| ProviderError::validation(format!("{what}: {e}")))
}

/// The live record in template shape, its names spelled as `template` spells them.
pub(crate) fn to_template(
    live: &ResourceRecordSet,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert(
        "Name".into(),
        json!(as_template_spells(
            live.name(),
            template.get("Name").and_then(Value::as_str)
        )),
    );
    out.insert("Type".into(), json!(live.r#type().as_str()));
    let number = |key: &str, value: i64| {
        // A template that writes the number as a string reads back as one.
        if template.get(key).is_some_and(Value::is_string) {
            json!(value.to_string())
        } else {
            json!(value)
        }
    };
    if let Some(ttl) = live.ttl() {
        out.insert("TTL".into(), number("TTL", ttl));
    }
    if let Some(weight) = live.weight() {
        out.insert("Weight".into(), number("Weight", weight));
    }
    if let Some(id) = live.set_identifier() {
        out.insert("SetIdentifier".into(), json!(id));
    }
    if let Some(failover) = live.failover() {
        out.insert("Failover".into(), json!(failover.as_str()));
    }
    if let Some(region) = live.region() {
        out.insert("Region".into(), json!(region.as_str()));
    }
    if let Some(multi) = live.multi_value_answer() {
        out.insert("MultiValueAnswer".into(), json!(multi));
    }
    if let Some(check) = live.health_check_id() {
        out.insert("HealthCheckId".into(), json!(check));
    }
    let values: Vec<Value> = live
        .resource_records()
        .iter()
        .map(|r| json!(r.value()))
        .collect();
    if !values.is_empty() {
        out.insert("ResourceRecords".into(), Value::Array(values));
    }
    if let Some(alias) = live.alias_target() {
        let given = template.get("AliasTarget").and_then(Value::as_object);
        let mut target = Map::new();
        target.insert(
            "DNSName".into(),
            json!(as_template_spells(
                alias.dns_name(),
                given.and_then(|g| g.get("DNSName")).and_then(Value::as_str)
            )),
        );
        target.insert(
            "HostedZoneId".into(),
            json!(bare_zone_id(alias.hosted_zone_id())),
        );
        if alias.evaluate_target_health()
            || given.is_some_and(|g| g.contains_key("EvaluateTargetHealth"))
        {
            target.insert(
                "EvaluateTargetHealth".into(),
                json!(alias.evaluate_target_health()),
            );
        }
        out.insert("AliasTarget".into(), Value::Object(target));
    }
    if let Some(geo) = live.geo_location() {
        let mut location = Map::new();
        cdkd_aws_common::put(
            &mut location,
            "ContinentCode",
            geo.continent_code().map(|v| json!(v)),
        );
        cdkd_aws_common::put(
            &mut location,
            "CountryCode",
            geo.country_code().map(|v| json!(v)),
        );
        cdkd_aws_common::put(
            &mut location,
            "SubdivisionCode",
            geo.subdivision_code().map(|v| json!(v)),
        );
        out.insert("GeoLocation".into(), Value::Object(location));
    }
    out
}

/// The live record of `key` in `zone`; `None` when there is none (or the zone is gone).
pub(crate) async fn live_record(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
    key: &Key,
) -> Result<Option<ResourceRecordSet>, ProviderError> {
    let mut start: Option<(String, String, Option<String>)> = Some((
        key.name.clone(),
        key.kind.clone(),
        key.set_identifier.clone(),
    ));
    // A weighted or failover name has several records: page on until past the name.
    for _ in 0..20 {
        let Some((name, kind, id)) = start.take() else {
            break;
        };
        let answer = r53c
            .list_resource_record_sets()
            .hosted_zone_id(zone)
            .start_record_name(name)
            .start_record_type(RrType::from(kind.as_str()))
            .set_start_record_identifier(id)
            .send()
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(err) => {
                let err = r53(aws_error(
                    &format!("{what}: ListResourceRecordSets in {zone}"),
                    err,
                ));
                if err.kind == cdkd_provider_api::ErrorKind::NOT_FOUND {
                    return Ok(None);
                }
                return Err(err);
            }
        };
        for set in answer.resource_record_sets() {
            if fqdn(set.name()) != key.name || set.r#type().as_str() != key.kind {
                return Ok(None);
            }
            if set.set_identifier() == key.set_identifier.as_deref() {
                return Ok(Some(set.clone()));
            }
        }
        if answer.is_truncated() {
            start = answer.next_record_name().map(|n| {
                (
                    n.to_string(),
                    answer
                        .next_record_type()
                        .map(|t| t.as_str().to_string())
                        .unwrap_or_default(),
                    answer.next_record_identifier().map(ToString::to_string),
                )
            });
        }
    }
    Ok(None)
}

/// One `ChangeResourceRecordSets` call with `changes` (nothing sent when there are none).
/// Not waited on: see the crate's documentation.
pub(crate) async fn change(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
    comment: Option<String>,
    changes: Vec<(ChangeAction, ResourceRecordSet)>,
) -> Result<(), ProviderError> {
    if changes.is_empty() {
        return Ok(());
    }
    let changes = changes
        .into_iter()
        .map(|(action, set)| {
            Change::builder()
                .action(action)
                .resource_record_set(set)
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
    let batch = ChangeBatch::builder()
        .set_changes(Some(changes))
        .set_comment(comment)
        .build()
        .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
    r53c.change_resource_record_sets()
        .hosted_zone_id(zone)
        .change_batch(batch)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            r53(aws_error(
                &format!("{what}: ChangeResourceRecordSets in {zone}"),
                e,
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_goes_to_route53_and_reads_back_in_the_templates_spelling() {
        let template = json!({
            "Name": "www.example.com",
            "Type": "A",
            "TTL": "300",
            "ResourceRecords": ["192.0.2.1", "192.0.2.2"],
            "SetIdentifier": "blue",
            "Weight": 10,
        });
        let template = template.as_object().unwrap();
        let sdk = to_sdk(template, "w").unwrap();
        assert_eq!(sdk.ttl(), Some(300));
        assert_eq!(sdk.weight(), Some(10));
        assert_eq!(sdk.resource_records().len(), 2);
        let live = ResourceRecordSet::builder()
            .name("www.example.com.")
            .r#type(RrType::A)
            .ttl(300)
            .weight(10)
            .set_identifier("blue")
            .resource_records(
                ResourceRecord::builder()
                    .value("192.0.2.1")
                    .build()
                    .unwrap(),
            )
            .resource_records(
                ResourceRecord::builder()
                    .value("192.0.2.2")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        assert_eq!(
            Value::Object(to_template(&live, template)),
            Value::Object(template.clone())
        );
        assert_eq!(
            Key::of(template),
            Key {
                name: "www.example.com.".into(),
                kind: "A".into(),
                set_identifier: Some("blue".into())
            }
        );
    }

    #[test]
    fn an_alias_reads_back_with_a_bare_zone_id() {
        let template = json!({
            "Name": "example.com.",
            "Type": "A",
            "AliasTarget": {"DNSName": "www.example.com.", "HostedZoneId": "Z1"},
        });
        let template = template.as_object().unwrap();
        let sdk = to_sdk(template, "w").unwrap();
        assert!(!sdk.alias_target().unwrap().evaluate_target_health());
        let live = ResourceRecordSet::builder()
            .name("example.com.")
            .r#type(RrType::A)
            .alias_target(
                AliasTarget::builder()
                    .dns_name("www.example.com.")
                    .hosted_zone_id("/hostedzone/Z1")
                    .evaluate_target_health(false)
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        assert_eq!(
            Value::Object(to_template(&live, template)),
            Value::Object(template.clone())
        );
        assert!(to_sdk(&Map::new(), "T L").is_err());
    }
}
