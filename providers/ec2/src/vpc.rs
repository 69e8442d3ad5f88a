//! `AWS::EC2::VPC`: physical id (and `Ref`) is the AWS id.

use aws_sdk_ec2::types::Filter;
use aws_sdk_ec2::types::{ResourceType, Tenancy, VpcAttributeName};
use cdkd_aws_common::{aws_error, flag, optional, put, require_str, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::created::FindsCreated;
use crate::dependants::{delete_unless_held, in_vpc};
use crate::{
    boolean, client, does_not_exist, filter, in_place, retag, some_str, tag_spec, tags_value, what,
};

const VPC: &str = "AWS::EC2::VPC";

/// `AWS::EC2::VPC`.
#[derive(Default)]
pub struct Vpc;

/// Sets the DNS attributes the template asks for; AWS's defaults (support on, host names off)
/// cost no call.
async fn apply_dns(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    before: Option<&Map<String, Value>>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    for (key, default) in [("EnableDnsSupport", true), ("EnableDnsHostnames", false)] {
        let was = before
            .map(|b| flag(b.get(key)).unwrap_or(default))
            .unwrap_or(default);
        let wanted = flag(after.get(key)).unwrap_or(default);
        if was == wanted {
            continue;
        }
        let call = ec2.modify_vpc_attribute().vpc_id(id);
        let call = if key == "EnableDnsSupport" {
            call.enable_dns_support(boolean(wanted))
        } else {
            call.enable_dns_hostnames(boolean(wanted))
        };
        call.send()
            .await
            .map_err(|e| aws_error(&format!("{what}: setting {key}"), e))?;
    }
    Ok(())
}

/// The VPC's attributes: its own fields plus its default network ACL and security group.
async fn vpc_attributes(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    vpc: &aws_sdk_ec2::types::Vpc,
) -> Result<Map<String, Value>, ProviderError> {
    let id = vpc.vpc_id().unwrap_or_default();
    let (acls, groups) = tokio::join!(
        ec2.describe_network_acls()
            .filters(filter("vpc-id", id))
            .filters(filter("default", "true"))
            .send(),
        ec2.describe_security_groups()
            .filters(filter("vpc-id", id))
            .filters(filter("group-name", "default"))
            .send()
    );
    let acls =
        acls.map_err(|e| aws_error(&format!("{what}: reading its default network ACL"), e))?;
    let groups =
        groups.map_err(|e| aws_error(&format!("{what}: reading its default security group"), e))?;
    let mut attributes = Map::new();
    put(&mut attributes, "VpcId", some_str(vpc.vpc_id()));
    put(&mut attributes, "CidrBlock", some_str(vpc.cidr_block()));
    attributes.insert(
        "CidrBlockAssociations".into(),
        json!(vpc
            .cidr_block_association_set()
            .iter()
            .filter_map(|a| a.association_id())
            .collect::<Vec<_>>()),
    );
    put(
        &mut attributes,
        "DefaultNetworkAcl",
        some_str(acls.network_acls().first().and_then(|a| a.network_acl_id())),
    );
    put(
        &mut attributes,
        "DefaultSecurityGroup",
        some_str(groups.security_groups().first().and_then(|g| g.group_id())),
    );
    attributes.insert(
        "Ipv6CidrBlocks".into(),
        json!(vpc
            .ipv6_cidr_block_association_set()
            .iter()
            .filter_map(|a| a.ipv6_cidr_block())
            .collect::<Vec<_>>()),
    );
    Ok(attributes)
}

async fn describe_vpc(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::Vpc>, ProviderError> {
    Ok(
        optional(what, ec2.describe_vpcs().vpc_ids(id).send().await)?
            .and_then(|out| out.vpcs().first().cloned()),
    )
}

/// The attributes of existing VPC `id` (described again).
async fn current_attributes(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let vpc = describe_vpc(ec2, what, id)
        .await?
        .ok_or_else(|| does_not_exist(what, id))?;
    vpc_attributes(ec2, what, &vpc).await
}

#[async_trait]
impl Readable for Vpc {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        let Some(vpc) = describe_vpc(&ec2, what, id).await? else {
            return Ok(None);
        };
        let mut props = Map::new();
        put(&mut props, "CidrBlock", some_str(vpc.cidr_block()));
        put(
            &mut props,
            "InstanceTenancy",
            some_str(vpc.instance_tenancy().map(|t| t.as_str())),
        );
        for (key, name) in [
            ("EnableDnsSupport", VpcAttributeName::EnableDnsSupport),
            ("EnableDnsHostnames", VpcAttributeName::EnableDnsHostnames),
        ] {
            let out = ec2
                .describe_vpc_attribute()
                .vpc_id(id)
                .attribute(name)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: reading {key}"), e))?;
            let value = if key == "EnableDnsSupport" {
                out.enable_dns_support()
            } else {
                out.enable_dns_hostnames()
            };
            put(
                &mut props,
                key,
                value.and_then(|v| v.value()).map(Value::Bool),
            );
        }
        put(&mut props, "Tags", tags_value(vpc.tags()));
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        current_attributes(&client(ctx).await?, what, physical_id).await
    }
}

#[async_trait]
impl FindsCreated for Vpc {
    const TYPE_NAME: &'static str = VPC;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_vpcs()
            .filters(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| aws_error(&format!("{what}: finding its VPC"), e))?;
            ids.extend(
                page.vpcs()
                    .iter()
                    .filter_map(|v| v.vpc_id().map(String::from)),
            );
        }
        Ok(ids)
    }
}

#[async_trait]
impl ResourceProvider for Vpc {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(VPC)
            .handles(&[
                "CidrBlock",
                "EnableDnsHostnames",
                "EnableDnsSupport",
                "InstanceTenancy",
                "Tags",
            ])
            .create_only(&["CidrBlock", "InstanceTenancy"])
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
        let what = what(VPC, &request.logical_id);
        let props = &request.properties;
        let cidr = require_str(props, "CidrBlock", &what)?;
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_vpc()
            .cidr_block(cidr)
            .set_instance_tenancy(
                text(props.get("InstanceTenancy")).map(|t| Tenancy::from(t.as_str())),
            )
            .set_tag_specifications(tag_spec(ResourceType::Vpc, props, &request.client_token))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating"), e))?;
        let vpc = created
            .vpc()
            .cloned()
            .ok_or_else(|| does_not_exist(&what, "the new VPC"))?;
        let id = vpc.vpc_id().unwrap_or_default().to_string();
        // The DNS settings and the default ACL / group lookups are independent: one round trip.
        let (dns, attributes) = tokio::join!(
            apply_dns(&ec2, &what, &id, None, props),
            vpc_attributes(&ec2, &what, &vpc)
        );
        dns?;
        Ok(CreateResult {
            attributes: attributes?,
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(VPC, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        apply_dns(
            &ec2,
            &what,
            id,
            Some(&request.previous_properties),
            &request.properties,
        )
        .await?;
        retag(
            &ec2,
            &what,
            id,
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        let attributes = current_attributes(&ec2, &what, id).await?;
        Ok(in_place(request, attributes))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(VPC, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_unless_held(
            &what,
            id,
            "still in it",
            || async {
                ec2.delete_vpc()
                    .vpc_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
            || in_vpc(&ec2, &what, id),
        )
        .await
    }
}
