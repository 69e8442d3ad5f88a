//! `AWS::EC2::SecurityGroup`: inline rules; the default allow-all egress rule kept or removed
//! the way CloudFormation does.

use aws_sdk_ec2::types::{Filter, IpPermission, ResourceType};
use cdkd_aws_common::{aws_error, optional, physical_name, put, require_str, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::created::FindsCreated;
use crate::dependants::{delete_unless_held, using_group};
use crate::rules::{default_egress, permission, rule_changes, template_rules, Direction};
use crate::{client, does_not_exist, in_place, retag, some_str, tag_spec, tags_value, what};

const GROUP: &str = "AWS::EC2::SecurityGroup";

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

/// Sends the ingress or the egress variant of a rule call with `permissions` on `group` (the
/// two builders have the same setters but no common trait); a failure is `failed: <error>`.
macro_rules! rules_call {
    ($ec2:expr, $direction:expr, $ingress:ident, $egress:ident, $group:expr, $permissions:expr, $failed:expr) => {
        match $direction {
            Direction::Ingress => $ec2
                .$ingress()
                .group_id($group)
                .set_ip_permissions(Some($permissions))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error($failed, e)),
            Direction::Egress => $ec2
                .$egress()
                .group_id($group)
                .set_ip_permissions(Some($permissions))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error($failed, e)),
        }
    };
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
        let result = rules_call!(
            ec2,
            direction,
            revoke_security_group_ingress,
            revoke_security_group_egress,
            group,
            revoke,
            &format!("{what}: revoking {label} rules")
        );
        match result {
            Err(err) if err.kind != ErrorKind::NOT_FOUND => return Err(err),
            _ => {}
        }
    }
    if !authorize.is_empty() {
        rules_call!(
            ec2,
            direction,
            authorize_security_group_ingress,
            authorize_security_group_egress,
            group,
            authorize,
            &format!("{what}: authorizing {label} rules")
        )?;
    }
    if !redescribe.is_empty() {
        rules_call!(
            ec2,
            direction,
            update_security_group_rule_descriptions_ingress,
            update_security_group_rule_descriptions_egress,
            group,
            redescribe,
            &format!("{what}: describing {label} rules")
        )?;
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
impl Readable for SecurityGroup {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(describe_group(&ec2, what, &request.physical_id)
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
            }))
    }

    /// `GroupId` and the group's `VpcId` (described again).
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ec2 = client(ctx).await?;
        let group = describe_group(&ec2, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id))?;
        Ok(group_attributes(physical_id, group.vpc_id()))
    }
}

#[async_trait]
impl FindsCreated for SecurityGroup {
    const TYPE_NAME: &'static str = GROUP;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_security_groups()
            .filters(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| aws_error(&format!("{what}: finding its security group"), e))?;
            ids.extend(
                page.security_groups()
                    .iter()
                    .filter_map(|r| r.group_id().map(String::from)),
            );
        }
        Ok(ids)
    }
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
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        crate::created::invoke(self, ctx, name, request).await
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
            .set_tag_specifications(tag_spec(
                ResourceType::SecurityGroup,
                props,
                &request.client_token,
            ))
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
        let attributes = group_attributes(id, after.get("VpcId").and_then(Value::as_str));
        Ok(in_place(request, attributes))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(GROUP, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_unless_held(
            &what,
            id,
            "still using it",
            || async {
                ec2.delete_security_group()
                    .group_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
            || using_group(&ec2, &what, id),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::protocol;

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
