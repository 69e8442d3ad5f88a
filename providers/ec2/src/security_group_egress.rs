//! `AWS::EC2::SecurityGroupEgress`: physical id and attribute `Id` are the `sgr-…` rule id.
//! Updated by revoke + authorize, which mints a new rule id.

use aws_sdk_ec2::types::SecurityGroupRule;
use cdkd_aws_common::{aws_error, optional, require_str, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::rules::{
    existing_rule, minted, permission, rule_id_attribute, rule_properties, Direction,
};
use crate::{already_there, client, recreated, what};

const EGRESS: &str = "AWS::EC2::SecurityGroupEgress";

/// `AWS::EC2::SecurityGroupEgress`: physical id and `Id` are the `sgr-…` rule id.
#[derive(Default)]
pub struct SecurityGroupEgress;

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
impl Readable for SecurityGroupEgress {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(describe_rule(&ec2, what, &request.physical_id)
            .await?
            .map(|r| rule_properties(&r, Direction::Egress)))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(rule_id_attribute(&[physical_id.to_string()]))
    }
}

#[async_trait]
impl ResourceProvider for SecurityGroupEgress {
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
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(EGRESS, &request.logical_id);
        let ec2 = client(ctx).await?;
        let props = &request.properties;
        match authorize_egress(&ec2, &what, props).await {
            // A create retried after a crash finds its own rule: adopted under its rule id, as
            // a create records it. A rule that differs (its description) is not the one asked
            // for.
            Err(err) if already_there(&err) => {
                match existing_rule(&ec2, &what, props, Direction::Egress).await? {
                    Some(rule) => {
                        tracing::info!("{what}: the rule already exists ({rule}); adopting it");
                        Ok(CreateResult {
                            attributes: rule_id_attribute(std::slice::from_ref(&rule)),
                            physical_id: rule,
                            ..Default::default()
                        })
                    }
                    None => Err(err),
                }
            }
            other => other,
        }
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
        Ok(recreated(
            authorize_egress(&ec2, &what, &request.properties).await?,
        ))
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
}
