//! `AWS::EC2::Subnet`: physical id (and `Ref`) is the AWS id. The type also answers the host's
//! EC2 questions (`Fn::GetAZs`, context lookups), having an EC2 client to hand.

use aws_sdk_ec2::types::{Filter, ResourceType};
use cdkd_aws_common::{aws_error, flag, optional, put, require_str, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, AvailabilityZonesRequest, AvailabilityZonesResult, ContextLookupRequest,
    ContextLookupResult, CreateRequest, CreateResult, DeleteRequest, DeleteResult,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::created::FindsCreated;
use crate::dependants::{delete_unless_held, in_subnet};
use crate::{
    boolean, client, does_not_exist, filter, in_place, regional_client, retag, some_str, tag_spec,
    tags_value, what,
};

const SUBNET: &str = "AWS::EC2::Subnet";

/// `AWS::EC2::Subnet`.
#[derive(Default)]
pub struct Subnet;

async fn describe_subnet(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::Subnet>, ProviderError> {
    Ok(
        optional(what, ec2.describe_subnets().subnet_ids(id).send().await)?
            .and_then(|out| out.subnets().first().cloned()),
    )
}

async fn subnet_attributes(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    subnet: &aws_sdk_ec2::types::Subnet,
) -> Result<Map<String, Value>, ProviderError> {
    let id = subnet.subnet_id().unwrap_or_default();
    let acls = ec2
        .describe_network_acls()
        .filters(filter("association.subnet-id", id))
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: reading its network ACL association"), e))?;
    let association = acls
        .network_acls()
        .iter()
        .flat_map(|a| a.associations())
        .find(|a| a.subnet_id() == Some(id))
        .and_then(|a| a.network_acl_association_id());
    let mut attributes = Map::new();
    put(&mut attributes, "SubnetId", some_str(subnet.subnet_id()));
    put(
        &mut attributes,
        "AvailabilityZone",
        some_str(subnet.availability_zone()),
    );
    put(
        &mut attributes,
        "AvailabilityZoneId",
        some_str(subnet.availability_zone_id()),
    );
    put(&mut attributes, "VpcId", some_str(subnet.vpc_id()));
    put(&mut attributes, "CidrBlock", some_str(subnet.cidr_block()));
    put(
        &mut attributes,
        "NetworkAclAssociationId",
        some_str(association),
    );
    Ok(attributes)
}

/// The attributes of existing subnet `id` (described again).
async fn current_attributes(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let subnet = describe_subnet(ec2, what, id)
        .await?
        .ok_or_else(|| does_not_exist(what, id))?;
    subnet_attributes(ec2, what, &subnet).await
}

async fn set_public_ip(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    value: bool,
) -> Result<(), ProviderError> {
    ec2.modify_subnet_attribute()
        .subnet_id(id)
        .map_public_ip_on_launch(boolean(value))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| aws_error(&format!("{what}: setting MapPublicIpOnLaunch"), e))
}

/// The zones `Fn::GetAZs` returns for `request.region`: the available ones, sorted.
async fn availability_zones(
    ctx: &PluginContext,
    request: &AvailabilityZonesRequest,
) -> Result<AvailabilityZonesResult, ProviderError> {
    let zones = regional_client(ctx, &request.region)
        .await?
        .describe_availability_zones()
        .filters(filter("state", "available"))
        .send()
        .await
        .map_err(|e| {
            aws_error(
                &format!(
                    "Fn::GetAZs: listing the availability zones of {}",
                    request.region
                ),
                e,
            )
        })?;
    let mut names: Vec<String> = zones
        .availability_zones()
        .iter()
        .filter(|z| {
            // Opt-in zones (Local Zones) are not what Fn::GetAZs lists.
            z.opt_in_status()
                .is_none_or(|s| s.as_str() == "opt-in-not-required")
        })
        .filter_map(|z| z.zone_name().map(ToString::to_string))
        .collect();
    names.sort();
    Ok(AvailabilityZonesResult { zones: names })
}

#[async_trait]
impl Readable for Subnet {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        let Some(subnet) = describe_subnet(&ec2, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let mut props = Map::new();
        put(&mut props, "VpcId", some_str(subnet.vpc_id()));
        put(&mut props, "CidrBlock", some_str(subnet.cidr_block()));
        put(
            &mut props,
            "AvailabilityZone",
            some_str(subnet.availability_zone()),
        );
        put(
            &mut props,
            "MapPublicIpOnLaunch",
            subnet.map_public_ip_on_launch().map(Value::Bool),
        );
        put(&mut props, "Tags", tags_value(subnet.tags()));
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
impl FindsCreated for Subnet {
    const TYPE_NAME: &'static str = SUBNET;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_subnets()
            .filters(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| aws_error(&format!("{what}: finding its subnet"), e))?;
            ids.extend(
                page.subnets()
                    .iter()
                    .filter_map(|s| s.subnet_id().map(String::from)),
            );
        }
        Ok(ids)
    }
}

#[async_trait]
impl ResourceProvider for Subnet {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(SUBNET)
            .handles(&[
                "VpcId",
                "CidrBlock",
                "AvailabilityZone",
                "AvailabilityZoneId",
                "MapPublicIpOnLaunch",
                "Tags",
            ])
            .create_only(&[
                "VpcId",
                "CidrBlock",
                "AvailabilityZone",
                "AvailabilityZoneId",
            ])
            .read_and_import()
            .operations(&[
                operation::AVAILABILITY_ZONES,
                operation::CONTEXT_LOOKUP,
                operation::FIND_CREATED,
            ])
            .build()
    }

    /// `availability_zones`: the zones `Fn::GetAZs` returns (available ones, sorted), for the
    /// host, which keeps no EC2 client of its own; `context_lookup` likewise; `find_created`.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if name == operation::CONTEXT_LOOKUP {
            let request: ContextLookupRequest = serde_json::from_value(request)
                .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
            let value = crate::lookups::answer(ctx, &request).await?;
            return serde_json::to_value(ContextLookupResult { value })
                .map_err(|e| ProviderError::other(e.to_string()));
        }
        if name != operation::AVAILABILITY_ZONES {
            return crate::created::invoke(self, ctx, name, request).await;
        }
        let request: AvailabilityZonesRequest = serde_json::from_value(request)
            .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
        let zones = availability_zones(ctx, &request).await?;
        serde_json::to_value(zones).map_err(|e| ProviderError::other(e.to_string()))
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(SUBNET, &request.logical_id);
        let props = &request.properties;
        let vpc = require_str(props, "VpcId", &what)?;
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_subnet()
            .vpc_id(vpc)
            .set_cidr_block(text(props.get("CidrBlock")))
            .set_availability_zone(text(props.get("AvailabilityZone")))
            .set_availability_zone_id(text(props.get("AvailabilityZoneId")))
            .set_tag_specifications(tag_spec(ResourceType::Subnet, props, &request.client_token))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {vpc}"), e))?;
        let mut subnet = created
            .subnet()
            .cloned()
            .ok_or_else(|| does_not_exist(&what, "the new subnet"))?;
        let id = subnet.subnet_id().unwrap_or_default().to_string();
        if flag(props.get("MapPublicIpOnLaunch")) == Some(true) {
            set_public_ip(&ec2, &what, &id, true).await?;
            subnet.map_public_ip_on_launch = Some(true);
        }
        Ok(CreateResult {
            attributes: subnet_attributes(&ec2, &what, &subnet).await?,
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(SUBNET, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        let (was, wanted) = (
            flag(request.previous_properties.get("MapPublicIpOnLaunch")).unwrap_or(false),
            flag(request.properties.get("MapPublicIpOnLaunch")).unwrap_or(false),
        );
        if was != wanted {
            set_public_ip(&ec2, &what, id, wanted).await?;
        }
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
        let what = what(SUBNET, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        // A Lambda in a VPC releases its interfaces minutes after it is deleted: waited for.
        delete_unless_held(
            &what,
            id,
            "still in it",
            || async {
                ec2.delete_subnet()
                    .subnet_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
            || in_subnet(&ec2, &what, id),
        )
        .await
    }
}
