//! `AWS::EC2::SecurityGroup` (inline rules; the default allow-all egress rule kept or removed
//! the way CloudFormation does), `AWS::EC2::SecurityGroupIngress`
//! (`<groupId>|<ipProtocol>|<fromPort>|<toPort>`, attribute `Id` = the `sgr-…` rule id when the
//! rule has one source) and `AWS::EC2::SecurityGroupEgress` (the `sgr-…` rule id). Standalone
//! rules are updated by revoke + authorize, which mints a new rule id.

use aws_sdk_ec2::types::{IpPermission, ResourceType, SecurityGroupRule};
use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, int, optional, physical_name, put, require_str, text};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, port, split};
use crate::rules::{
    default_egress, matches, permission, rule_changes, rule_properties, source_count,
    template_rules, Direction,
};
use crate::{
    client, delete_released, does_not_exist, filter, retag, some_str, tag_spec, tags_value, what,
};

const GROUP: &str = "AWS::EC2::SecurityGroup";
const INGRESS: &str = "AWS::EC2::SecurityGroupIngress";
const EGRESS: &str = "AWS::EC2::SecurityGroupEgress";

/// `AWS::EC2::SecurityGroup`.
#[derive(Default)]
pub struct SecurityGroup;

/// The permissions of an inline rule list.
fn permissions(
    properties: &Map<String, Value>,
    key: &str,
    direction: Direction,
) -> Vec<IpPermission> {
    properties
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|rule| permission(rule, direction))
        .collect()
}

/// The egress a VPC group has: the declared rules, or AWS's allow-all default when none are
/// declared (CloudFormation removes the default only when egress rules are declared).
fn effective_egress(properties: &Map<String, Value>) -> Vec<IpPermission> {
    let declared = permissions(properties, "SecurityGroupEgress", Direction::Egress);
    if declared.is_empty() {
        vec![default_egress()]
    } else {
        declared
    }
}

/// Brings a group's rules of one direction from `before` to `after` (revoke first, so a rule
/// that only moves between sources never collides with itself).
async fn sync_rules(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    group: &str,
    direction: Direction,
    before: &[IpPermission],
    after: &[IpPermission],
) -> Result<(), ProviderError> {
    let (revoke, authorize, redescribe) = rule_changes(before, after);
    let label = match direction {
        Direction::Ingress => "ingress",
        Direction::Egress => "egress",
    };
    if !revoke.is_empty() {
        let result = match direction {
            Direction::Ingress => ec2
                .revoke_security_group_ingress()
                .group_id(group)
                .set_ip_permissions(Some(revoke))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: revoking {label} rules"), e)),
            Direction::Egress => ec2
                .revoke_security_group_egress()
                .group_id(group)
                .set_ip_permissions(Some(revoke))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: revoking {label} rules"), e)),
        };
        match result {
            Err(err) if err.kind != ErrorKind::NOT_FOUND => return Err(err),
            _ => {}
        }
    }
    if !authorize.is_empty() {
        match direction {
            Direction::Ingress => ec2
                .authorize_security_group_ingress()
                .group_id(group)
                .set_ip_permissions(Some(authorize))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: authorizing {label} rules"), e))?,
            Direction::Egress => ec2
                .authorize_security_group_egress()
                .group_id(group)
                .set_ip_permissions(Some(authorize))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: authorizing {label} rules"), e))?,
        }
    }
    if !redescribe.is_empty() {
        match direction {
            Direction::Ingress => ec2
                .update_security_group_rule_descriptions_ingress()
                .group_id(group)
                .set_ip_permissions(Some(redescribe))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: describing {label} rules"), e))?,
            Direction::Egress => ec2
                .update_security_group_rule_descriptions_egress()
                .group_id(group)
                .set_ip_permissions(Some(redescribe))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: describing {label} rules"), e))?,
        }
    }
    Ok(())
}

async fn describe_group(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::SecurityGroup>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_security_groups().group_ids(id).send().await,
    )?
    .and_then(|out| out.security_groups().first().cloned()))
}

fn group_attributes(id: &str, vpc: Option<&str>) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("GroupId".into(), json!(id));
    put(&mut attributes, "VpcId", some_str(vpc));
    attributes
}

#[async_trait]
impl ResourceProvider for SecurityGroup {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(GROUP)
            .handles(&[
                "GroupDescription",
                "GroupName",
                "VpcId",
                "SecurityGroupIngress",
                "SecurityGroupEgress",
                "Tags",
            ])
            .create_only(&["GroupDescription", "GroupName", "VpcId"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(GROUP, &request.logical_id);
        let props = &request.properties;
        let description = require_str(props, "GroupDescription", &what)?;
        let name =
            text(props.get("GroupName")).unwrap_or_else(|| physical_name(&request, 255, false));
        let vpc = text(props.get("VpcId"));
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_security_group()
            .group_name(&name)
            .description(description)
            .set_vpc_id(vpc.clone())
            .set_tag_specifications(tag_spec(ResourceType::SecurityGroup, props).map(|t| vec![t]))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating {name}"), e))?;
        let id = created
            .group_id()
            .ok_or_else(|| does_not_exist(&what, "the new security group"))?
            .to_string();
        let ingress = permissions(props, "SecurityGroupIngress", Direction::Ingress);
        sync_rules(&ec2, &what, &id, Direction::Ingress, &[], &ingress).await?;
        if vpc.is_some() {
            sync_rules(
                &ec2,
                &what,
                &id,
                Direction::Egress,
                &[default_egress()],
                &effective_egress(props),
            )
            .await?;
        }
        Ok(CreateResult {
            attributes: group_attributes(&id, vpc.as_deref()),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(GROUP, &request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let id = &request.physical_id;
        let ec2 = client(ctx).await?;
        sync_rules(
            &ec2,
            &what,
            id,
            Direction::Ingress,
            &permissions(before, "SecurityGroupIngress", Direction::Ingress),
            &permissions(after, "SecurityGroupIngress", Direction::Ingress),
        )
        .await?;
        if after.contains_key("VpcId") {
            sync_rules(
                &ec2,
                &what,
                id,
                Direction::Egress,
                &effective_egress(before),
                &effective_egress(after),
            )
            .await?;
        }
        retag(&ec2, &what, id, before, after).await?;
        Ok(UpdateResult {
            attributes: group_attributes(id, after.get("VpcId").and_then(Value::as_str)),
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
        let what = what(GROUP, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_released(
            &what,
            "the network interfaces using the group and other groups' rules that name it to go",
            || async {
                ec2.delete_security_group()
                    .group_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
        )
        .await
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(GROUP, &request.logical_id);
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_group(&ec2, &what, &request.physical_id)
                .await?
                .map(|g| {
                    let mut props = Map::new();
                    put(&mut props, "GroupDescription", some_str(g.description()));
                    put(&mut props, "GroupName", some_str(g.group_name()));
                    put(&mut props, "VpcId", some_str(g.vpc_id()));
                    props.insert(
                        "SecurityGroupIngress".into(),
                        Value::Array(template_rules(g.ip_permissions(), Direction::Ingress)),
                    );
                    props.insert(
                        "SecurityGroupEgress".into(),
                        Value::Array(template_rules(g.ip_permissions_egress(), Direction::Egress)),
                    );
                    put(&mut props, "Tags", tags_value(g.tags()));
                    props
                }),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(GROUP, &request.logical_id);
        let ec2 = client(ctx).await?;
        let group = describe_group(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: group_attributes(&request.physical_id, group.vpc_id()),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

/// The rules of `group` in one direction, as EC2 reports them.
async fn group_rules(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    group: &str,
    direction: Direction,
) -> Result<Vec<SecurityGroupRule>, ProviderError> {
    let mut rules = Vec::new();
    let mut pages = ec2
        .describe_security_group_rules()
        .filters(filter("group-id", group))
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        match optional(what, page)? {
            Some(page) => rules.extend(page.security_group_rules().iter().cloned()),
            None => return Ok(Vec::new()),
        }
    }
    rules.retain(|r| r.is_egress() == Some(direction == Direction::Egress));
    Ok(rules)
}

/// The rule ids an authorize call minted.
fn minted(rules: &[SecurityGroupRule]) -> Vec<String> {
    rules
        .iter()
        .filter_map(|r| r.security_group_rule_id().map(ToString::to_string))
        .collect()
}

/// `AWS::EC2::SecurityGroupIngress`.
#[derive(Default)]
pub struct Ingress;

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

/// The `Id` attribute: the rule id when AWS minted exactly one (a rule with several sources
/// gets none on purpose: no single id names the resource).
fn rule_id_attribute(ids: &[String]) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let [id] = ids {
        attributes.insert("Id".into(), json!(id));
    }
    attributes
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

#[async_trait]
impl ResourceProvider for Ingress {
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
        authorize_ingress(&ec2, &what, &request.properties).await
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
            Ok(created) => Ok(UpdateResult {
                physical_id: created.physical_id,
                replaced: false,
                attributes: created.attributes,
                ..Default::default()
            }),
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

/// `AWS::EC2::SecurityGroupEgress`: physical id and `Id` are the `sgr-…` rule id.
#[derive(Default)]
pub struct Egress;

async fn authorize_egress(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    props: &Map<String, Value>,
) -> Result<CreateResult, ProviderError> {
    let group = require_str(props, "GroupId", what)?;
    let out = ec2
        .authorize_security_group_egress()
        .group_id(group)
        .ip_permissions(permission(props, Direction::Egress))
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: authorizing the rule on {group}"), e))?;
    let id = minted(out.security_group_rules())
        .into_iter()
        .next()
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::OTHER,
                format!("{what}: EC2 authorized the rule on {group} but returned no rule id"),
            )
        })?;
    Ok(CreateResult {
        attributes: rule_id_attribute(std::slice::from_ref(&id)),
        physical_id: id,
        ..Default::default()
    })
}

/// Revokes egress rule `id` (its group from the template, else looked up); gone = deleted.
async fn revoke_egress(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    props: &Map<String, Value>,
) -> Result<DeleteResult, ProviderError> {
    let group = match text(props.get("GroupId")) {
        Some(group) => group,
        None => match describe_rule(ec2, what, id).await? {
            Some(rule) => rule.group_id().unwrap_or_default().to_string(),
            None => return Ok(DeleteResult::Deleted),
        },
    };
    cdkd_aws_common::deleted_unless_failed(
        ec2.revoke_security_group_egress()
            .group_id(&group)
            .security_group_rule_ids(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("{what}: revoking {id} on {group}"), e)),
    )
}

async fn describe_rule(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<SecurityGroupRule>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_security_group_rules()
            .security_group_rule_ids(id)
            .send()
            .await,
    )?
    .and_then(|out| out.security_group_rules().first().cloned()))
}

#[async_trait]
impl ResourceProvider for Egress {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(EGRESS)
            .handles(&[
                "GroupId",
                "IpProtocol",
                "FromPort",
                "ToPort",
                "CidrIp",
                "CidrIpv6",
                "Description",
                "DestinationPrefixListId",
                "DestinationSecurityGroupId",
            ])
            .create_only(&["GroupId"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(EGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        authorize_egress(&ec2, &what, &request.properties).await
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(EGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        revoke_egress(
            &ec2,
            &what,
            &request.physical_id,
            &request.previous_properties,
        )
        .await?;
        let created = authorize_egress(&ec2, &what, &request.properties).await?;
        Ok(UpdateResult {
            physical_id: created.physical_id,
            replaced: false,
            attributes: created.attributes,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(EGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        revoke_egress(&ec2, &what, &request.physical_id, &request.properties).await
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(EGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_rule(&ec2, &what, &request.physical_id)
                .await?
                .map(|r| rule_properties(&r, Direction::Egress)),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(EGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        describe_rule(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: rule_id_attribute(std::slice::from_ref(&request.physical_id)),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::protocol;

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

    #[test]
    fn only_a_single_minted_rule_becomes_the_id() {
        assert_eq!(
            Value::Object(rule_id_attribute(&["sgr-1".into()])),
            json!({"Id": "sgr-1"})
        );
        assert!(rule_id_attribute(&["sgr-1".into(), "sgr-2".into()]).is_empty());
    }

    #[test]
    fn undeclared_egress_is_the_default_rule() {
        let none = Map::new();
        assert_eq!(effective_egress(&none), [default_egress()]);
        let declared = json!({"SecurityGroupEgress": [{"IpProtocol": "icmp", "FromPort": 252, "ToPort": 86, "CidrIp": "255.255.255.255/32"}]});
        assert_eq!(
            effective_egress(declared.as_object().unwrap())[0].ip_protocol(),
            Some("icmp")
        );
        assert_eq!(protocol(Some(&json!(-1))), "-1");
    }
}
