//! `AWS::EC2::NetworkAcl`, `AWS::EC2::NetworkAclEntry` (`<networkAclId>|<ruleNumber>|<egress>`)
//! and `AWS::EC2::SubnetNetworkAclAssociation` (the association id). A subnet always has an
//! ACL: associating replaces the subnet's current association, and deleting one hands the
//! subnet back to its VPC's default ACL, as CloudFormation does.

use aws_sdk_ec2::types::{IcmpTypeCode, PortRange, ResourceType, RuleAction};
use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, flag, int, optional, put, require_str, text};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, split};
use crate::{
    client, delete_released, does_not_exist, filter, id_attribute, read_existing, retag_only,
    some_str, tag_spec, tags_value, unchanged, what,
};

const ACL: &str = "AWS::EC2::NetworkAcl";
const ENTRY: &str = "AWS::EC2::NetworkAclEntry";
const ASSOCIATION: &str = "AWS::EC2::SubnetNetworkAclAssociation";

async fn describe_acls(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    filters: &[(&str, &str)],
) -> Result<Vec<aws_sdk_ec2::types::NetworkAcl>, ProviderError> {
    let mut call = ec2.describe_network_acls();
    for (name, value) in filters {
        call = call.filters(filter(name, value));
    }
    Ok(optional(what, call.send().await)?
        .map(|out| out.network_acls().to_vec())
        .unwrap_or_default())
}

async fn describe_acl(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::NetworkAcl>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_network_acls().network_acl_ids(id).send().await,
    )?
    .and_then(|out| out.network_acls().first().cloned()))
}

/// `AWS::EC2::NetworkAcl`.
#[derive(Default)]
pub struct NetworkAcl;

#[async_trait]
impl ResourceProvider for NetworkAcl {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ACL)
            .handles(&["VpcId", "Tags"])
            .create_only(&["VpcId"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ACL, &request.logical_id);
        let vpc = require_str(&request.properties, "VpcId", &what)?;
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_network_acl()
            .vpc_id(vpc)
            .set_tag_specifications(
                tag_spec(ResourceType::NetworkAcl, &request.properties).map(|t| vec![t]),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {vpc}"), e))?;
        let id = created
            .network_acl()
            .and_then(|a| a.network_acl_id())
            .ok_or_else(|| does_not_exist(&what, "the new network ACL"))?
            .to_string();
        Ok(CreateResult {
            attributes: id_attribute("Id", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("Id", &request.physical_id);
        retag_only(ctx, &what(ACL, &request.logical_id), request, attributes).await
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ACL, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_released(&what, "its subnet associations to go", || async {
            ec2.delete_network_acl()
                .network_acl_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
        })
        .await
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(ACL, &request.logical_id);
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_acl(&ec2, &what, &request.physical_id)
                .await?
                .map(|a| {
                    let mut props = Map::new();
                    put(&mut props, "VpcId", some_str(a.vpc_id()));
                    put(&mut props, "Tags", tags_value(a.tags()));
                    props
                }),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ACL, &request.logical_id);
        let ec2 = client(ctx).await?;
        describe_acl(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: id_attribute("Id", &request.physical_id),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

/// `AWS::EC2::NetworkAclEntry`.
#[derive(Default)]
pub struct Entry;

const ENTRY_SEGMENTS: &[&str] = &["networkAclId", "ruleNumber", "egress"];

/// Sets an entry's fields on a create or replace call (same setters, no common trait).
macro_rules! entry_fields {
    ($call:expr, $props:expr) => {{
        let p = $props;
        $call
            .set_protocol(text(p.get("Protocol")))
            .set_rule_action(text(p.get("RuleAction")).map(|a| RuleAction::from(a.as_str())))
            .set_cidr_block(text(p.get("CidrBlock")))
            .set_ipv6_cidr_block(text(p.get("Ipv6CidrBlock")))
            .set_icmp_type_code(p.get("Icmp").map(|icmp| {
                IcmpTypeCode::builder()
                    .set_code(int(icmp.get("Code")))
                    .set_type(int(icmp.get("Type")))
                    .build()
            }))
            .set_port_range(p.get("PortRange").map(|range| {
                PortRange::builder()
                    .set_from(int(range.get("From")))
                    .set_to(int(range.get("To")))
                    .build()
            }))
    }};
}

/// `(acl, rule number, egress)` of an entry's template properties, and its id.
fn entry_key(
    what: &str,
    props: &Map<String, Value>,
) -> Result<(String, i32, bool, String), ProviderError> {
    let acl = require_str(props, "NetworkAclId", what)?.to_string();
    let rule = int(props.get("RuleNumber")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: property RuleNumber is required and must be a number"
        ))
    })?;
    let egress = flag(props.get("Egress")).unwrap_or(false);
    let id = join(
        what,
        &[
            ("networkAclId", &acl),
            ("ruleNumber", &rule.to_string()),
            ("egress", &egress.to_string()),
        ],
    )?;
    Ok((acl, rule, egress, id))
}

/// The parts of an entry id.
fn parse_entry(what: &str, id: &str) -> Result<(String, i32, bool), ProviderError> {
    let parts = split(what, id, ENTRY_SEGMENTS)?;
    let rule = parts[1].parse().map_err(|_| {
        ProviderError::validation(format!(
            "{what}: rule number {:?} in {id:?} is not a number",
            parts[1]
        ))
    })?;
    let egress = match parts[2] {
        "true" => true,
        "false" => false,
        other => {
            return Err(ProviderError::validation(format!(
                "{what}: egress {other:?} in {id:?} must be true or false"
            )))
        }
    };
    Ok((parts[0].to_string(), rule, egress))
}

#[async_trait]
impl ResourceProvider for Entry {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ENTRY)
            .handles(&[
                "NetworkAclId",
                "RuleNumber",
                "Egress",
                "Protocol",
                "RuleAction",
                "CidrBlock",
                "Ipv6CidrBlock",
                "Icmp",
                "PortRange",
            ])
            .create_only(&["NetworkAclId", "RuleNumber", "Egress"])
            .read_and_import()
            .composite_id(
                ENTRY_SEGMENTS,
                &[&["NetworkAclId"], &["RuleNumber"], &["Egress"]],
            )
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ENTRY, &request.logical_id);
        let props = &request.properties;
        let (acl, rule, egress, id) = entry_key(&what, props)?;
        let ec2 = client(ctx).await?;
        entry_fields!(
            ec2.create_network_acl_entry()
                .network_acl_id(&acl)
                .rule_number(rule)
                .egress(egress),
            props
        )
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: adding rule {rule} to {acl}"), e))?;
        Ok(CreateResult {
            physical_id: id,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(ENTRY, &request.logical_id);
        let (acl, rule, egress) = parse_entry(&what, &request.physical_id)?;
        let ec2 = client(ctx).await?;
        entry_fields!(
            ec2.replace_network_acl_entry()
                .network_acl_id(&acl)
                .rule_number(rule)
                .egress(egress),
            &request.properties
        )
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: replacing rule {rule} of {acl}"), e))?;
        Ok(unchanged(request, Map::new()))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ENTRY, &request.logical_id);
        let (acl, rule, egress) = parse_entry(&what, &request.physical_id)?;
        let ec2 = client(ctx).await?;
        cdkd_aws_common::deleted_unless_failed(
            ec2.delete_network_acl_entry()
                .network_acl_id(&acl)
                .rule_number(rule)
                .egress(egress)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: deleting rule {rule} of {acl}"), e)),
        )
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(ENTRY, &request.logical_id);
        let (acl, rule, egress) = parse_entry(&what, &request.physical_id)?;
        let ec2 = client(ctx).await?;
        let found = describe_acl(&ec2, &what, &acl).await?.and_then(|a| {
            a.entries()
                .iter()
                .find(|e| e.rule_number() == Some(rule) && e.egress() == Some(egress))
                .cloned()
        });
        Ok(ReadCurrentStateResult {
            properties: found.map(|e| {
                let mut props = Map::new();
                props.insert("NetworkAclId".into(), json!(acl));
                props.insert("RuleNumber".into(), json!(rule));
                props.insert("Egress".into(), json!(egress));
                put(&mut props, "Protocol", some_str(e.protocol()));
                put(
                    &mut props,
                    "RuleAction",
                    some_str(e.rule_action().map(|a| a.as_str())),
                );
                put(&mut props, "CidrBlock", some_str(e.cidr_block()));
                put(&mut props, "Ipv6CidrBlock", some_str(e.ipv6_cidr_block()));
                put(
                    &mut props,
                    "PortRange",
                    e.port_range()
                        .map(|r| json!({"From": r.from(), "To": r.to()})),
                );
                put(
                    &mut props,
                    "Icmp",
                    e.icmp_type_code()
                        .map(|i| json!({"Code": i.code(), "Type": i.r#type()})),
                );
                props
            }),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        read_existing(self, ctx, &request, &what(ENTRY, &request.logical_id)).await?;
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: Map::new(),
            ..Default::default()
        })
    }
}

/// `AWS::EC2::SubnetNetworkAclAssociation`.
#[derive(Default)]
pub struct SubnetAssociation;

/// The ACL holding association `id`, with the association's subnet.
async fn find_association(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<(aws_sdk_ec2::types::NetworkAcl, String)>, ProviderError> {
    let acls = describe_acls(ec2, what, &[("association.association-id", id)]).await?;
    Ok(acls.into_iter().find_map(|acl| {
        let subnet = acl
            .associations()
            .iter()
            .find(|a| a.network_acl_association_id() == Some(id))?
            .subnet_id()?
            .to_string();
        Some((acl, subnet))
    }))
}

/// Moves `subnet`'s association (`association`) to `acl`; returns the new association id.
async fn reassociate(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    association: &str,
    acl: &str,
) -> Result<String, ProviderError> {
    let out = ec2
        .replace_network_acl_association()
        .association_id(association)
        .network_acl_id(acl)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: associating with {acl}"), e))?;
    out.new_association_id()
        .map(ToString::to_string)
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::OTHER,
                format!("{what}: EC2 returned no association id"),
            )
        })
}

#[async_trait]
impl ResourceProvider for SubnetAssociation {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ASSOCIATION)
            .handles(&["NetworkAclId", "SubnetId"])
            .all_create_only()
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let acl = require_str(&request.properties, "NetworkAclId", &what)?;
        let subnet = require_str(&request.properties, "SubnetId", &what)?;
        let ec2 = client(ctx).await?;
        let current = describe_acls(&ec2, &what, &[("association.subnet-id", subnet)])
            .await?
            .iter()
            .flat_map(|a| a.associations())
            .find(|a| a.subnet_id() == Some(subnet))
            .and_then(|a| a.network_acl_association_id().map(ToString::to_string))
            .ok_or_else(|| {
                does_not_exist(&what, &format!("the network ACL association of {subnet}"))
            })?;
        let id = reassociate(&ec2, &what, &current, acl).await?;
        Ok(CreateResult {
            attributes: id_attribute("AssociationId", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    /// Both properties are create-only: there is nothing to change in place.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("AssociationId", &request.physical_id);
        Ok(unchanged(request, attributes))
    }

    /// Hands the subnet back to its VPC's default ACL.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        let Some((acl, _subnet)) = find_association(&ec2, &what, id).await? else {
            return Ok(DeleteResult::Deleted);
        };
        if acl.is_default() == Some(true) {
            return Ok(DeleteResult::Deleted);
        }
        let vpc = acl.vpc_id().unwrap_or_default();
        let default = describe_acls(&ec2, &what, &[("vpc-id", vpc), ("default", "true")])
            .await?
            .first()
            .and_then(|a| a.network_acl_id().map(ToString::to_string))
            .ok_or_else(|| does_not_exist(&what, &format!("the default network ACL of {vpc}")))?;
        cdkd_aws_common::deleted_unless_failed(
            reassociate(&ec2, &what, id, &default).await.map(|_| ()),
        )
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: find_association(&ec2, &what, &request.physical_id)
                .await?
                .map(|(acl, subnet)| {
                    let mut props = Map::new();
                    put(&mut props, "NetworkAclId", some_str(acl.network_acl_id()));
                    props.insert("SubnetId".into(), json!(subnet));
                    props
                }),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let ec2 = client(ctx).await?;
        find_association(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: id_attribute("AssociationId", &request.physical_id),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_ids_encode_and_decode() {
        let props = json!({"NetworkAclId": "acl-1", "RuleNumber": 100, "Egress": true, "Protocol": -1, "RuleAction": "allow"});
        let (acl, rule, egress, id) = entry_key("E", props.as_object().unwrap()).unwrap();
        assert_eq!((acl.as_str(), rule, egress), ("acl-1", 100, true));
        assert_eq!(id, "acl-1|100|true");
        assert_eq!(parse_entry("E", &id).unwrap(), ("acl-1".into(), 100, true));
        let ingress = json!({"NetworkAclId": "acl-1", "RuleNumber": "100"});
        assert_eq!(
            entry_key("E", ingress.as_object().unwrap()).unwrap().3,
            "acl-1|100|false"
        );
        assert!(parse_entry("E", "acl-1|100|maybe").is_err());
        assert!(parse_entry("E", "acl-1|x|true").is_err());
    }
}
