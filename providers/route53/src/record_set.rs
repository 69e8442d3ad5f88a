//! `AWS::Route53::RecordSet`: physical id `<zoneId>|<name>|<type>|<setIdentifier>` (the last
//! segment empty for a simple record), `Ref` = the record's name, as CloudFormation's. Written
//! with `UPSERT`: a create repeated after a crash writes the same record again.

use aws_sdk_route53::types::ChangeAction;
use cdkd_aws_common::{string, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::record::{change, live_record, to_sdk, to_template, Key, RECORD_PROPERTIES};
use crate::{client, fqdn, zone_of};

const TYPE: &str = "AWS::Route53::RecordSet";

/// The `AWS::Route53::RecordSet` provider.
#[derive(Default)]
pub struct RecordSet;

/// The physical id of the record `properties` describe in `zone`.
pub(crate) fn physical_id(zone: &str, properties: &Map<String, Value>) -> String {
    let key = Key::of(properties);
    format!(
        "{zone}|{}|{}|{}",
        string(properties.get("Name")).unwrap_or(key.name),
        key.kind,
        key.set_identifier.unwrap_or_default()
    )
}

/// The zone and key a physical id names.
pub(crate) fn parse_id(what: &str, id: &str) -> Result<(String, Key), ProviderError> {
    let parts: Vec<&str> = id.split('|').collect();
    match parts.as_slice() {
        [zone, name, kind, rest @ ..] if rest.len() <= 1 => Ok((
            zone.to_string(),
            Key {
                name: fqdn(name),
                kind: kind.to_string(),
                set_identifier: rest
                    .first()
                    .filter(|s| !s.is_empty())
                    .map(|s| s.to_string()),
            },
        )),
        _ => Err(ProviderError::validation(format!(
            "{what}: '{id}' is not a record set id (<zoneId>|<name>|<type>|<setIdentifier>)"
        ))),
    }
}

#[async_trait]
impl ResourceProvider for RecordSet {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(RECORD_PROPERTIES)
            .handles(&["HostedZoneId", "HostedZoneName", "Comment"])
            .create_only(&[
                "HostedZoneId",
                "HostedZoneName",
                "Name",
                "Type",
                "SetIdentifier",
            ])
            .read_and_import()
            .operations(&[operation::IDEMPOTENT_CREATE])
            .composite_id(
                &["hostedZoneId", "name", "type", "setIdentifier"],
                &[&[], &["Name"], &["Type"], &["SetIdentifier"]],
            )
            .ref_value(RefValue::Segment(1))
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
        let set = to_sdk(&request.properties, &what)?;
        change(
            &r53c,
            &what,
            &zone,
            string(request.properties.get("Comment")),
            vec![(ChangeAction::Upsert, set)],
        )
        .await?;
        Ok(CreateResult {
            physical_id: physical_id(&zone, &request.properties),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (zone, _) = parse_id(&what, &request.physical_id)?;
        let r53c = client(ctx).await?;
        let set = to_sdk(&request.properties, &what)?;
        change(
            &r53c,
            &what,
            &zone,
            string(request.properties.get("Comment")),
            vec![(ChangeAction::Upsert, set)],
        )
        .await?;
        Ok(UpdateResult {
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
        let (zone, key) = parse_id(&what, &request.physical_id)?;
        let r53c = client(ctx).await?;
        // Route 53 deletes a record only by its exact current values: read them first.
        let Some(live) = live_record(&r53c, &what, &zone, &key).await? else {
            return Ok(DeleteResult::Deleted);
        };
        cdkd_aws_common::deleted_unless_failed(
            change(
                &r53c,
                &what,
                &zone,
                None,
                vec![(ChangeAction::Delete, live)],
            )
            .await,
        )
    }
}

#[async_trait]
impl Readable for RecordSet {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (zone, key) = parse_id(what, &request.physical_id)?;
        let r53c = client(ctx).await?;
        let Some(live) = live_record(&r53c, what, &zone, &key).await? else {
            return Ok(None);
        };
        let template = &request.properties;
        let mut properties = to_template(&live, template);
        match string(template.get("HostedZoneName")) {
            Some(name) => properties.insert("HostedZoneName".into(), json!(name)),
            None => properties.insert("HostedZoneId".into(), json!(zone)),
        };
        // The change batch's comment is not kept by Route 53: it reads as the template's.
        if let Some(comment) = template.get("Comment") {
            properties.insert("Comment".into(), comment.clone());
        }
        Ok(Some(properties))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_names_zone_record_type_and_set() {
        let simple = json!({"Name": "www.example.com", "Type": "CNAME"});
        let id = physical_id("Z1", simple.as_object().unwrap());
        assert_eq!(id, "Z1|www.example.com|CNAME|");
        let (zone, key) = parse_id("w", &id).unwrap();
        assert_eq!(zone, "Z1");
        assert_eq!(
            key,
            Key {
                name: "www.example.com.".into(),
                kind: "CNAME".into(),
                set_identifier: None
            }
        );
        let weighted = json!({"Name": "a.example.com.", "Type": "A", "SetIdentifier": "blue"});
        let id = physical_id("Z1", weighted.as_object().unwrap());
        assert_eq!(id, "Z1|a.example.com.|A|blue");
        assert_eq!(
            parse_id("w", &id).unwrap().1.set_identifier.as_deref(),
            Some("blue")
        );
        assert_eq!(parse_id("w", "Z1|a.|A").unwrap().1.set_identifier, None);
        assert!(parse_id("w", "www.example.com").is_err());
    }
}
