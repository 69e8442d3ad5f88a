//! `AWS::Route53::HostedZone`: physical id (and `Ref`) is the zone id without `/hostedzone/`;
//! attributes `Id` and `NameServers` (empty for a private zone). The create's token is the
//! zone's `CallerReference`, Route 53's own idempotency token: a repeated create answers
//! `HostedZoneAlreadyExists` and the zone is adopted, and after a crash `find_created` finds the
//! zone by it (ListHostedZones).

use std::collections::{BTreeMap, BTreeSet};

use aws_sdk_route53::types::{HostedZoneConfig, Tag, TagResourceType, Vpc, VpcRegion};
use cdkd_aws_common::{aws_error, string, tag_changes, tag_pairs, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    FindCreatedResult, ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{as_template_spells, bare_zone_id, client, r53};

const TYPE: &str = "AWS::Route53::HostedZone";

/// The longest `CallerReference` Route 53 takes.
const MAX_CALLER_REFERENCE: usize = 128;

/// The `AWS::Route53::HostedZone` provider.
#[derive(Default)]
pub struct HostedZone;

/// The template's VPCs as (id, region) pairs.
fn vpcs(properties: &Map<String, Value>) -> BTreeSet<(String, String)> {
    properties
        .get("VPCs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| Some((string(v.get("VPCId"))?, string(v.get("VPCRegion"))?)))
        .collect()
}

fn sdk_vpc((id, region): &(String, String)) -> Vpc {
    Vpc::builder()
        .vpc_id(id)
        .vpc_region(VpcRegion::from(region.as_str()))
        .build()
}

/// The template's `HostedZoneTags` by key.
fn zone_tags(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    tag_pairs(properties.get("HostedZoneTags"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

fn comment(properties: &Map<String, Value>) -> Option<String> {
    properties
        .get("HostedZoneConfig")
        .and_then(|c| string(c.get("Comment")))
}

fn log_group(properties: &Map<String, Value>) -> Option<String> {
    properties
        .get("QueryLoggingConfig")
        .and_then(|c| string(c.get("CloudWatchLogsLogGroupArn")))
}

/// The create's `CallerReference`: its token, cut to Route 53's limit.
fn caller_reference(token: &str) -> String {
    token.chars().take(MAX_CALLER_REFERENCE).collect()
}

async fn set_tags(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Result<(), ProviderError> {
    let (set, removed): (Vec<(String, String)>, Vec<String>) = tag_changes(before, after);
    if set.is_empty() && removed.is_empty() {
        return Ok(());
    }
    let tags: Vec<Tag> = set
        .into_iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect();
    r53c.change_tags_for_resource()
        .resource_type(TagResourceType::Hostedzone)
        .resource_id(zone)
        .set_add_tags(Some(tags).filter(|t| !t.is_empty()))
        .set_remove_tag_keys(Some(removed).filter(|r| !r.is_empty()))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            r53(aws_error(
                &format!("{what}: ChangeTagsForResource {zone}"),
                e,
            ))
        })
}

/// The ids of the zone's query logging configurations.
async fn logging_configs(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
) -> Result<Vec<(String, String)>, ProviderError> {
    let answer = r53c
        .list_query_logging_configs()
        .hosted_zone_id(zone)
        .send()
        .await
        .map_err(|e| {
            r53(aws_error(
                &format!("{what}: ListQueryLoggingConfigs {zone}"),
                e,
            ))
        })?;
    Ok(answer
        .query_logging_configs()
        .iter()
        .map(|c| {
            (
                c.id().to_string(),
                c.cloud_watch_logs_log_group_arn().to_string(),
            )
        })
        .collect())
}

async fn set_logging(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
    wanted: Option<String>,
) -> Result<(), ProviderError> {
    for (id, arn) in logging_configs(r53c, what, zone).await? {
        if Some(&arn) == wanted.as_ref() {
            return Ok(());
        }
        r53c.delete_query_logging_config()
            .id(&id)
            .send()
            .await
            .map_err(|e| {
                r53(aws_error(
                    &format!("{what}: DeleteQueryLoggingConfig {id}"),
                    e,
                ))
            })?;
    }
    if let Some(arn) = wanted {
        r53c.create_query_logging_config()
            .hosted_zone_id(zone)
            .cloud_watch_logs_log_group_arn(&arn)
            .send()
            .await
            .map_err(|e| {
                r53(aws_error(
                    &format!("{what}: CreateQueryLoggingConfig {arn}"),
                    e,
                ))
            })?;
    }
    Ok(())
}

/// `Id` and `NameServers` of the zone.
async fn zone_attributes(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let answer = r53c
        .get_hosted_zone()
        .id(zone)
        .send()
        .await
        .map_err(|e| r53(aws_error(&format!("{what}: GetHostedZone {zone}"), e)))?;
    let servers: Vec<&str> = answer
        .delegation_set()
        .map(|d| d.name_servers().iter().map(String::as_str).collect())
        .unwrap_or_default();
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(zone));
    attributes.insert("NameServers".into(), json!(servers));
    Ok(attributes)
}

/// The zone a create with `token` made, by its `CallerReference`.
async fn zone_with_reference(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    token: &str,
) -> Result<Option<String>, ProviderError> {
    let reference = caller_reference(token);
    let mut marker: Option<String> = None;
    loop {
        let answer = r53c
            .list_hosted_zones()
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| r53(aws_error(&format!("{what}: ListHostedZones"), e)))?;
        if let Some(zone) = answer
            .hosted_zones()
            .iter()
            .find(|z| z.caller_reference() == reference)
        {
            return Ok(Some(bare_zone_id(zone.id())));
        }
        match answer.next_marker() {
            Some(next) if answer.is_truncated() => marker = Some(next.to_string()),
            _ => return Ok(None),
        }
    }
}

#[async_trait]
impl ResourceProvider for HostedZone {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "HostedZoneConfig",
                "HostedZoneTags",
                "VPCs",
                "QueryLoggingConfig",
                "DelegationSetId",
            ])
            .create_only(&["Name", "DelegationSetId"])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = cdkd_aws_common::require_str(props, "Name", &what)?;
        let vpcs: Vec<(String, String)> = vpcs(props).into_iter().collect();
        let reference = caller_reference(&request.client_token);
        let r53c = client(ctx).await?;
        let config = HostedZoneConfig::builder()
            .set_comment(comment(props))
            .private_zone(!vpcs.is_empty())
            .build();
        let created = r53c
            .create_hosted_zone()
            .name(name)
            .caller_reference(&reference)
            .hosted_zone_config(config)
            .set_vpc(vpcs.first().map(sdk_vpc))
            .set_delegation_set_id(string(props.get("DelegationSetId")))
            .send()
            .await;
        let zone = match created {
            Ok(answer) => bare_zone_id(answer.hosted_zone().map(|z| z.id()).ok_or_else(|| {
                ProviderError::other(format!("{what}: CreateHostedZone returned no zone"))
            })?),
            Err(err) => {
                let err = r53(aws_error(&format!("{what}: CreateHostedZone {name}"), err));
                // Our own earlier attempt (the SDK's retry of a lost answer, a resumed run):
                // the caller reference is this create's token.
                match (
                    err.kind,
                    zone_with_reference(&r53c, &what, &request.client_token).await?,
                ) {
                    (ErrorKind::ALREADY_EXISTS, Some(zone)) => zone,
                    _ => return Err(err),
                }
            }
        };
        let rest = async {
            for vpc in vpcs.iter().skip(1) {
                associate(&r53c, &what, &zone, vpc).await?;
            }
            set_tags(&r53c, &what, &zone, &BTreeMap::new(), &zone_tags(props)).await?;
            set_logging(&r53c, &what, &zone, log_group(props)).await
        };
        if let Err(err) = rest.await {
            // Undo: a zone whose settings were refused is not left unrecorded.
            let undone = r53c.delete_hosted_zone().id(&zone).send().await.is_ok();
            return Err(ProviderError::new(
                err.kind,
                format!(
                    "{} (the zone {zone} was {})",
                    err.message,
                    if undone {
                        "deleted again"
                    } else {
                        "left: delete it by hand"
                    }
                ),
            ));
        }
        Ok(CreateResult {
            attributes: zone_attributes(&r53c, &what, &zone).await?,
            physical_id: zone,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let zone = request.physical_id.clone();
        let r53c = client(ctx).await?;
        if comment(before) != comment(after) {
            r53c.update_hosted_zone_comment()
                .id(&zone)
                .comment(comment(after).unwrap_or_default())
                .send()
                .await
                .map_err(|e| r53(aws_error(&format!("{what}: UpdateHostedZoneComment"), e)))?;
        }
        let (old, new) = (vpcs(before), vpcs(after));
        for vpc in new.difference(&old) {
            associate(&r53c, &what, &zone, vpc).await?;
        }
        for vpc in old.difference(&new) {
            r53c.disassociate_vpc_from_hosted_zone()
                .hosted_zone_id(&zone)
                .vpc(sdk_vpc(vpc))
                .send()
                .await
                .map_err(|e| {
                    r53(aws_error(
                        &format!("{what}: DisassociateVPCFromHostedZone {}", vpc.0),
                        e,
                    ))
                })?;
        }
        set_tags(&r53c, &what, &zone, &zone_tags(before), &zone_tags(after)).await?;
        if log_group(before) != log_group(after) {
            set_logging(&r53c, &what, &zone, log_group(after)).await?;
        }
        Ok(UpdateResult {
            attributes: zone_attributes(&r53c, &what, &zone).await?,
            physical_id: zone,
            replaced: false,
            ..Default::default()
        })
    }

    /// Records other than the zone's own NS and SOA make Route 53 refuse, as CloudFormation's
    /// delete fails: the stack's records are deleted first (they depend on the zone).
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let zone = bare_zone_id(&request.physical_id);
        let r53c = client(ctx).await?;
        match logging_configs(&r53c, &what, &zone).await {
            Ok(configs) => {
                for (id, _) in configs {
                    let _ = r53c.delete_query_logging_config().id(&id).send().await;
                }
            }
            Err(err) if err.kind == ErrorKind::NOT_FOUND => return Ok(DeleteResult::Deleted),
            Err(err) => return Err(err),
        }
        remove_validation_records(&r53c, &what, &zone).await?;
        cdkd_aws_common::deleted_unless_failed(
            r53c.delete_hosted_zone()
                .id(&zone)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| r53(aws_error(&format!("{what}: DeleteHostedZone {zone}"), e))),
        )
    }

    /// `find_created`: the zone whose `CallerReference` is the create's token.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if name != operation::FIND_CREATED {
            return Err(ProviderError::unsupported(format!(
                "{TYPE} does not implement the '{name}' operation"
            )));
        }
        let request: FindCreatedRequest = serde_json::from_value(request)
            .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
        let what = format!("{TYPE} {}", request.logical_id);
        if request.token.is_empty() {
            return Err(ProviderError::validation(format!(
                "{what}: {name} needs the create's token"
            )));
        }
        let r53c = client(ctx).await?;
        let physical_id = zone_with_reference(&r53c, &what, &request.token).await?;
        let properties = match &physical_id {
            Some(zone) => self
                .read(
                    ctx,
                    &what,
                    &ReadCurrentStateRequest {
                        logical_id: request.logical_id.clone(),
                        physical_id: zone.clone(),
                        properties: request.properties.clone(),
                    },
                )
                .await?
                .unwrap_or_default(),
            None => Map::new(),
        };
        serde_json::to_value(FindCreatedResult {
            physical_id,
            properties,
        })
        .map_err(|e| ProviderError::other(e.to_string()))
    }
}

/// Whether a record is an ACM DNS-validation CNAME (its value under `acm-validations.aws.`).
fn is_validation_record(set: &aws_sdk_route53::types::ResourceRecordSet) -> bool {
    set.r#type() == &aws_sdk_route53::types::RrType::Cname
        && !set.resource_records().is_empty()
        && set.resource_records().iter().all(|r| {
            r.value()
                .trim_end_matches('.')
                .ends_with(".acm-validations.aws")
        })
}

/// Deletes the ACM validation CNAMEs left in a zone about to be deleted: a certificate's
/// delete leaves them (as CloudFormation's does), and they are no template's records, so a
/// stack holding the zone and a certificate validated in it could not be destroyed otherwise.
/// Any other record still makes the zone's delete fail, as CloudFormation's does.
async fn remove_validation_records(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
) -> Result<(), ProviderError> {
    let answer = match r53c
        .list_resource_record_sets()
        .hosted_zone_id(zone)
        .send()
        .await
    {
        Ok(answer) => answer,
        Err(err) => {
            let err = r53(aws_error(
                &format!("{what}: ListResourceRecordSets {zone}"),
                err,
            ));
            return if err.kind == ErrorKind::NOT_FOUND {
                Ok(())
            } else {
                Err(err)
            };
        }
    };
    let changes = answer
        .resource_record_sets()
        .iter()
        .filter(|set| is_validation_record(set))
        .map(|set| {
            aws_sdk_route53::types::Change::builder()
                .action(aws_sdk_route53::types::ChangeAction::Delete)
                .resource_record_set(set.clone())
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ProviderError::other(format!("{what}: {e}")))?;
    if changes.is_empty() {
        return Ok(());
    }
    tracing::info!(
        "{what}: deleting {} ACM validation record(s) left in {zone}",
        changes.len()
    );
    let batch = aws_sdk_route53::types::ChangeBatch::builder()
        .set_changes(Some(changes))
        .build()
        .map_err(|e| ProviderError::other(format!("{what}: {e}")))?;
    r53c.change_resource_record_sets()
        .hosted_zone_id(zone)
        .change_batch(batch)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            r53(aws_error(
                &format!("{what}: deleting ACM validation records in {zone}"),
                e,
            ))
        })
}

async fn associate(
    r53c: &aws_sdk_route53::Client,
    what: &str,
    zone: &str,
    vpc: &(String, String),
) -> Result<(), ProviderError> {
    r53c.associate_vpc_with_hosted_zone()
        .hosted_zone_id(zone)
        .vpc(sdk_vpc(vpc))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            r53(aws_error(
                &format!("{what}: AssociateVPCWithHostedZone {}", vpc.0),
                e,
            ))
        })
}

#[async_trait]
impl Readable for HostedZone {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let zone = bare_zone_id(&request.physical_id);
        let r53c = client(ctx).await?;
        let answer = match r53c.get_hosted_zone().id(&zone).send().await {
            Ok(answer) => answer,
            Err(err) => {
                let err = r53(aws_error(&format!("{what}: GetHostedZone {zone}"), err));
                return if err.kind == ErrorKind::NOT_FOUND {
                    Ok(None)
                } else {
                    Err(err)
                };
            }
        };
        let Some(live) = answer.hosted_zone() else {
            return Ok(None);
        };
        let template = &request.properties;
        let mut properties = Map::new();
        properties.insert(
            "Name".into(),
            json!(as_template_spells(
                live.name(),
                template.get("Name").and_then(Value::as_str)
            )),
        );
        if let Some(comment) = live
            .config()
            .and_then(|c| c.comment())
            .filter(|c| !c.is_empty())
        {
            properties.insert("HostedZoneConfig".into(), json!({"Comment": comment}));
        }
        let vpcs: Vec<Value> = answer
            .vpcs()
            .iter()
            .map(|v| {
                json!({
                    "VPCId": v.vpc_id().unwrap_or_default(),
                    "VPCRegion": v.vpc_region().map(|r| r.as_str()).unwrap_or_default(),
                })
            })
            .collect();
        if !vpcs.is_empty() {
            properties.insert("VPCs".into(), json!(vpcs));
        }
        if let Some(set) = template.get("DelegationSetId") {
            properties.insert("DelegationSetId".into(), set.clone());
        }
        let tags = r53c
            .list_tags_for_resource()
            .resource_type(TagResourceType::Hostedzone)
            .resource_id(&zone)
            .send()
            .await
            .map_err(|e| r53(aws_error(&format!("{what}: ListTagsForResource {zone}"), e)))?;
        let tags = tags
            .resource_tag_set()
            .map(|s| s.tags())
            .unwrap_or_default();
        cdkd_aws_common::put(
            &mut properties,
            "HostedZoneTags",
            cdkd_aws_common::template_tags(
                tags.iter()
                    .map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default())),
            ),
        );
        if let Some((_, arn)) = logging_configs(&r53c, what, &zone)
            .await?
            .into_iter()
            .next()
        {
            properties.insert(
                "QueryLoggingConfig".into(),
                json!({"CloudWatchLogsLogGroupArn": arn}),
            );
        }
        Ok(Some(properties))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let r53c = client(ctx).await?;
        zone_attributes(&r53c, what, &bare_zone_id(physical_id)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_settings_read_in_their_shapes() {
        let props = json!({
            "Name": "example.com.",
            "HostedZoneConfig": {"Comment": "hi"},
            "VPCs": [{"VPCId": "vpc-1", "VPCRegion": "us-east-1"}, {"VPCId": "vpc-2", "VPCRegion": "eu-west-1"}],
            "HostedZoneTags": [{"Key": "team", "Value": "a"}],
            "QueryLoggingConfig": {"CloudWatchLogsLogGroupArn": "arn:aws:logs:us-east-1:1:log-group:q"},
        });
        let props = props.as_object().unwrap();
        assert_eq!(comment(props).as_deref(), Some("hi"));
        assert_eq!(vpcs(props).len(), 2);
        assert_eq!(zone_tags(props).get("team").map(String::as_str), Some("a"));
        assert!(log_group(props).unwrap().ends_with(":q"));
        assert_eq!(
            caller_reference(&"t".repeat(300)).len(),
            MAX_CALLER_REFERENCE
        );
        assert_eq!(caller_reference("abc"), "abc");
    }

    #[test]
    fn only_acm_validation_cnames_are_cleared_before_a_zone_goes() {
        use aws_sdk_route53::types::{ResourceRecord, ResourceRecordSet, RrType};
        let record = |kind: RrType, value: &str| {
            ResourceRecordSet::builder()
                .name("_x.example.com.")
                .r#type(kind)
                .ttl(60)
                .resource_records(ResourceRecord::builder().value(value).build().unwrap())
                .build()
                .unwrap()
        };
        assert!(is_validation_record(&record(
            RrType::Cname,
            "_c9.abc.acm-validations.aws."
        )));
        assert!(!is_validation_record(&record(
            RrType::Cname,
            "www.example.com"
        )));
        assert!(!is_validation_record(&record(
            RrType::Txt,
            "_c9.abc.acm-validations.aws."
        )));
    }
}
