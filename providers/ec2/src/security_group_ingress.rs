//! `AWS::EC2::SecurityGroupIngress`: physical id `<groupId>|<ipProtocol>|<fromPort>|<toPort>`,
//! attribute `Id` = the `sgr-…` rule id when the rule has one source. Updated by revoke +
//! authorize, which mints a new rule id.

use aws_sdk_ec2::types::SecurityGroupRule;
use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, int, require_str, text};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, port, split};
use crate::rules::{
    existing_rule, group_rules, matches, minted, permission, rule_id_attribute, rule_properties,
    source_count, Direction,
};
use crate::{already_there, client, does_not_exist, recreated, what};

const INGRESS: &str = "AWS::EC2::SecurityGroupIngress";

/// `AWS::EC2::SecurityGroupIngress`.
#[derive(Default)]
pub struct SecurityGroupIngress;

const INGRESS_SEGMENTS: &[&str] = &["groupId", "ipProtocol", "fromPort", "toPort"];

/// The rule's composite id from its template properties.
fn ingress_id(what: &str, props: &Map<String, Value>) -> Result<String, ProviderError> {
    let group = require_str(props, "GroupId", what)?;
    let proto = text(props.get("IpProtocol")).unwrap_or_else(|| "-1".into());
    let (from, to) = (
        port(int(props.get("FromPort"))),
        port(int(props.get("ToPort"))),
    );
    join(
        what,
        &[
            ("groupId", group),
            ("ipProtocol", &proto),
            ("fromPort", &from),
            ("toPort", &to),
        ],
    )
}

async fn authorize_ingress(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    props: &Map<String, Value>,
) -> Result<CreateResult, ProviderError> {
    let physical_id = ingress_id(what, props)?;
    let group = require_str(props, "GroupId", what)?;
    let out = ec2
        .authorize_security_group_ingress()
        .group_id(group)
        .ip_permissions(permission(props, Direction::Ingress))
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: authorizing the rule on {group}"), e))?;
    let ids = minted(out.security_group_rules());
    let sources = source_count(props, Direction::Ingress);
    if sources > 1 {
        tracing::info!(
            "{what}: the rule declares {sources} sources, so AWS made one rule per source and no `Id` is recorded (cdkd export needs one resource per source)"
        );
    }
    Ok(CreateResult {
        physical_id,
        attributes: rule_id_attribute(&ids),
        ..Default::default()
    })
}

async fn revoke_ingress(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let group = require_str(props, "GroupId", what)?;
    let result = ec2
        .revoke_security_group_ingress()
        .group_id(group)
        .ip_permissions(permission(props, Direction::Ingress))
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: revoking the rule on {group}"), e));
    match result {
        // moto and AWS both answer a revoke of a missing rule without an error sometimes and
        // with InvalidPermission.NotFound other times; both mean "gone".
        Err(err) if err.kind != ErrorKind::NOT_FOUND => Err(err),
        _ => Ok(()),
    }
}

/// The ingress rules of the group an id names that match its tuple (and, when the template
/// names one, its source).
async fn find_ingress(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    physical_id: &str,
    props: &Map<String, Value>,
) -> Result<Vec<SecurityGroupRule>, ProviderError> {
    let parts = split(what, physical_id, INGRESS_SEGMENTS)?;
    let mut wanted: Map<String, Value> = props
        .iter()
        .filter(|(k, _)| k.starts_with("Cidr") || k.starts_with("Source"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    wanted.insert("IpProtocol".into(), json!(parts[1]));
    wanted.insert("FromPort".into(), json!(parts[2]));
    wanted.insert("ToPort".into(), json!(parts[3]));
    let mut rules = group_rules(ec2, what, parts[0], Direction::Ingress).await?;
    rules.retain(|r| matches(r, &wanted, Direction::Ingress));
    Ok(rules)
}

/// Whether a template property names a rule's source.
fn is_source(key: &str) -> bool {
    key.starts_with("Cidr") || key.starts_with("Source")
}

/// The one rule's id when the caller knows only the physical id (`cdkd export` recovering an
/// `Id` state lacks): exactly one ingress rule of the group may carry the protocol and port
/// range. Rules are counted before any without an id is set aside, so such a rule cannot let
/// its sibling pass as the only one.
fn only_rule(
    what: &str,
    physical_id: &str,
    rules: &[SecurityGroupRule],
) -> Result<String, ProviderError> {
    let tuple = physical_id
        .split('|')
        .skip(1)
        .collect::<Vec<_>>()
        .join(", ");
    match rules {
        [] => Err(ProviderError::new(
            ErrorKind::NOT_FOUND,
            format!("{what}: no ingress rule of the group carries (protocol, from port, to port) = ({tuple}); nothing matched {physical_id}"),
        )),
        [rule] => rule
            .security_group_rule_id()
            .filter(|id| id.starts_with("sgr-"))
            .map(ToString::to_string)
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::CONFLICT,
                    format!("{what}: the one rule matching ({tuple}) has no usable sgr- id"),
                )
            }),
        several => {
            let ids: Vec<&str> = several
                .iter()
                .map(|r| r.security_group_rule_id().unwrap_or("(no id)"))
                .collect();
            Err(ProviderError::new(
                ErrorKind::CONFLICT,
                format!(
                    "{what}: {} ingress rules of the group carry ({tuple}): {}; cdkd's id cannot tell them apart. If one resource declares several sources (CidrIp and CidrIpv6), split it into one ingress resource per source; if these are distinct resources differing only by source, record the right sgr- id as the row's attributes.Id or remove the row before exporting",
                    several.len(),
                    ids.join(", ")
                ),
            ))
        }
    }
}

/// Not a `Readable` type: its import records the `Id` of the rule the template's source picks
/// out, and `Readable::attributes` sees the physical id only, not the template.
#[async_trait]
impl ResourceProvider for SecurityGroupIngress {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(INGRESS)
            .handles(&[
                "GroupId",
                "IpProtocol",
                "FromPort",
                "ToPort",
                "CidrIp",
                "CidrIpv6",
                "Description",
                "SourcePrefixListId",
                "SourceSecurityGroupId",
                "SourceSecurityGroupOwnerId",
            ])
            .create_only(&["GroupId"])
            .read_and_import()
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .composite_id(
                INGRESS_SEGMENTS,
                &[&["GroupId"], &["IpProtocol"], &["FromPort"], &["ToPort"]],
            )
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(INGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        let props = &request.properties;
        match authorize_ingress(&ec2, &what, props).await {
            // A create retried after a crash finds its own rule: adopted, recorded as a create
            // records it. A rule that differs (its description) is not the one asked for.
            Err(err) if already_there(&err) => {
                match existing_rule(&ec2, &what, props, Direction::Ingress).await? {
                    Some(rule) => {
                        tracing::info!("{what}: the rule already exists ({rule}); adopting it");
                        Ok(CreateResult {
                            physical_id: ingress_id(&what, props)?,
                            attributes: rule_id_attribute(&[rule]),
                            ..Default::default()
                        })
                    }
                    None => Err(err),
                }
            }
            other => other,
        }
    }

    /// Revoke + authorize: EC2 cannot change a rule's ports or source in place. If the new
    /// rule is refused, the old one is put back so the group keeps its access.
    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(INGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        ingress_id(&what, &request.properties)?;
        revoke_ingress(&ec2, &what, &request.previous_properties).await?;
        match authorize_ingress(&ec2, &what, &request.properties).await {
            Ok(created) => Ok(recreated(created)),
            Err(err) => {
                if let Err(restore) =
                    authorize_ingress(&ec2, &what, &request.previous_properties).await
                {
                    tracing::warn!(
                        "{what}: could not restore the previous rule: {}",
                        restore.message
                    );
                }
                Err(err)
            }
        }
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(INGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        let mut props = request.properties.clone();
        if !props.contains_key("GroupId") {
            let parts = split(&what, &request.physical_id, INGRESS_SEGMENTS)?;
            props.insert("GroupId".into(), json!(parts[0]));
        }
        revoke_ingress(&ec2, &what, &props).await?;
        Ok(DeleteResult::Deleted)
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(INGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        let rules = find_ingress(&ec2, &what, &request.physical_id, &request.properties).await?;
        Ok(ReadCurrentStateResult {
            properties: rules
                .first()
                .map(|r| rule_properties(r, Direction::Ingress)),
        })
    }

    /// Adopts the rule the composite id names; its `Id` is recorded when exactly one rule on
    /// the group has the id's protocol and ports (narrowed by the template's source).
    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(INGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        let rules = find_ingress(&ec2, &what, &request.physical_id, &request.properties).await?;
        if !request.properties.keys().any(|k| is_source(k)) {
            let id = only_rule(&what, &request.physical_id, &rules)?;
            return Ok(CreateResult {
                physical_id: request.physical_id,
                attributes: rule_id_attribute(&[id]),
                ..Default::default()
            });
        }
        if rules.is_empty() {
            return Err(does_not_exist(
                &what,
                &format!("a rule matching {}", request.physical_id),
            ));
        }
        let ids = minted(&rules);
        if ids.len() > 1 {
            tracing::warn!(
                "{what}: {} rules match {} ({}); none is recorded as Id",
                ids.len(),
                request.physical_id,
                ids.join(", ")
            );
        }
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: rule_id_attribute(&ids),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(id: Option<&str>) -> SecurityGroupRule {
        SecurityGroupRule::builder()
            .set_security_group_rule_id(id.map(ToString::to_string))
            .build()
    }

    #[test]
    fn only_exactly_one_rule_with_an_id_is_adopted_by_its_tuple() {
        let id = "sg-1|tcp|443|443";
        assert_eq!(only_rule("I", id, &[rule(Some("sgr-1"))]).unwrap(), "sgr-1");
        let none = only_rule("I", id, &[]).unwrap_err();
        assert_eq!(none.kind, ErrorKind::NOT_FOUND);
        assert!(none.message.contains("(tcp, 443, 443)"), "{}", none.message);
        let two = only_rule("I", id, &[rule(Some("sgr-1")), rule(Some("sgr-2"))]).unwrap_err();
        assert!(two.message.contains("sgr-1, sgr-2"), "{}", two.message);
        assert!(two
            .message
            .contains("split it into one ingress resource per source"));
        let unnamed = only_rule("I", id, &[rule(Some("sgr-1")), rule(None)]).unwrap_err();
        assert!(
            unnamed.message.contains("2 ingress rules"),
            "{}",
            unnamed.message
        );
        assert!(only_rule("I", id, &[rule(None)]).is_err());
    }

    #[test]
    fn an_ingress_id_records_omitted_ports_as_minus_one() {
        let props = json!({"GroupId": "sg-1", "IpProtocol": "-1", "CidrIp": "10.0.0.0/8"});
        assert_eq!(
            ingress_id("I", props.as_object().unwrap()).unwrap(),
            "sg-1|-1|-1|-1"
        );
        let tcp =
            json!({"GroupId": "sg-1", "IpProtocol": "tcp", "FromPort": 8000, "ToPort": "8010"});
        assert_eq!(
            ingress_id("I", tcp.as_object().unwrap()).unwrap(),
            "sg-1|tcp|8000|8010"
        );
        let bad = json!({"GroupId": "sg-1", "IpProtocol": "t|cp"});
        assert!(ingress_id("I", bad.as_object().unwrap()).is_err());
    }
}
