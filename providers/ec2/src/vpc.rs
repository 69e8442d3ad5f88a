//! `AWS::EC2::VPC` and `AWS::EC2::Subnet`: physical id (and `Ref`) is the AWS id.

use aws_sdk_ec2::types::{AttributeBooleanValue, ResourceType, Tenancy, VpcAttributeName};
use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, flag, optional, put, require_str, text};
use cdkd_provider_api::protocol::{
    operation, AvailabilityZonesRequest, AvailabilityZonesResult, ContextLookupRequest,
    ContextLookupResult, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, delete_released, does_not_exist, filter, retag, some_str, tag_spec, tags_value, what,
};

const VPC: &str = "AWS::EC2::VPC";
const SUBNET: &str = "AWS::EC2::Subnet";

/// `AWS::EC2::VPC`.
#[derive(Default)]
pub struct Vpc;

fn boolean(value: bool) -> AttributeBooleanValue {
    AttributeBooleanValue::builder().value(value).build()
}

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
            .build()
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
            .set_tag_specifications(tag_spec(ResourceType::Vpc, props).map(|t| vec![t]))
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
        let vpc = describe_vpc(&ec2, &what, id)
            .await?
            .ok_or_else(|| does_not_exist(&what, id))?;
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            replaced: false,
            attributes: vpc_attributes(&ec2, &what, &vpc).await?,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(VPC, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_released(
            &what,
            "the VPC's subnets, gateways and interfaces to go",
            || async {
                ec2.delete_vpc()
                    .vpc_id(id)
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
        let what = what(VPC, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        let Some(vpc) = describe_vpc(&ec2, &what, id).await? else {
            return Ok(ReadCurrentStateResult { properties: None });
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
        Ok(ReadCurrentStateResult {
            properties: Some(props),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(VPC, &request.logical_id);
        let ec2 = client(ctx).await?;
        let vpc = describe_vpc(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: vpc_attributes(&ec2, &what, &vpc).await?,
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

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

#[async_trait]
impl ResourceProvider for Subnet {
    fn schema(&self) -> ResourceTypeSchema {
        let mut schema = TypeSchema::builder(SUBNET)
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
            .build();
        schema.operations.push(operation::AVAILABILITY_ZONES.into());
        schema.operations.push(operation::CONTEXT_LOOKUP.into());
        schema
    }

    /// `availability_zones`: the zones `Fn::GetAZs` returns (available ones, sorted), for the
    /// host, which keeps no EC2 client of its own.
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
            return Err(ProviderError::unsupported(format!(
                "{SUBNET} does not implement the '{name}' operation"
            )));
        }
        let request: AvailabilityZonesRequest = serde_json::from_value(request)
            .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
        let config = aws_sdk_ec2::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .region(aws_sdk_ec2::config::Region::new(request.region.clone()))
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-ec2"))
            .build();
        let zones = aws_sdk_ec2::Client::from_conf(config)
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
        serde_json::to_value(AvailabilityZonesResult { zones: names })
            .map_err(|e| ProviderError::new(cdkd_provider_api::ErrorKind::OTHER, e.to_string()))
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
            .set_tag_specifications(tag_spec(ResourceType::Subnet, props).map(|t| vec![t]))
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
        let subnet = describe_subnet(&ec2, &what, id)
            .await?
            .ok_or_else(|| does_not_exist(&what, id))?;
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            replaced: false,
            attributes: subnet_attributes(&ec2, &what, &subnet).await?,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(SUBNET, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_released(&what, "the network interfaces in the subnet (a Lambda in a VPC releases them minutes after it is deleted)", || async {
                    ec2.delete_subnet()
                        .subnet_id(id)
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
        let what = what(SUBNET, &request.logical_id);
        let ec2 = client(ctx).await?;
        let Some(subnet) = describe_subnet(&ec2, &what, &request.physical_id).await? else {
            return Ok(ReadCurrentStateResult { properties: None });
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
        Ok(ReadCurrentStateResult {
            properties: Some(props),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(SUBNET, &request.logical_id);
        let ec2 = client(ctx).await?;
        let subnet = describe_subnet(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: subnet_attributes(&ec2, &what, &subnet).await?,
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}
