//! The ways out of a VPC: `AWS::EC2::InternetGateway`, `AWS::EC2::VPCGatewayAttachment`
//! (`<internetGatewayId>|<vpcId>`), `AWS::EC2::NatGateway` and `AWS::EC2::EIP`
//! (`<publicIp>|<allocationId>`, `Ref` = the public IP).

use cdkd_aws_common::TypeSchema;
use std::time::Duration;

use std::time::Instant;

use aws_sdk_ec2::types::{ConnectivityType, DomainType, NatGatewayState, ResourceType};
use cdkd_aws_common::{aws_error, optional, put, require_str, text};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, RefValue, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, split};
use crate::{
    client, delete_released, does_not_exist, id_attribute, read_existing, retag, retag_only,
    some_str, tag_spec, tags_value, unchanged, until_released, what, DEPENDENCY_BUDGET,
};

const IGW: &str = "AWS::EC2::InternetGateway";
const ATTACHMENT: &str = "AWS::EC2::VPCGatewayAttachment";
const NAT: &str = "AWS::EC2::NatGateway";
const EIP: &str = "AWS::EC2::EIP";

/// `AWS::EC2::InternetGateway`.
#[derive(Default)]
pub struct InternetGateway;

async fn describe_igw(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::InternetGateway>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_internet_gateways()
            .internet_gateway_ids(id)
            .send()
            .await,
    )?
    .and_then(|out| out.internet_gateways().first().cloned()))
}

#[async_trait]
impl ResourceProvider for InternetGateway {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(IGW)
            .handles(&["Tags"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(IGW, &request.logical_id);
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_internet_gateway()
            .set_tag_specifications(
                tag_spec(ResourceType::InternetGateway, &request.properties).map(|t| vec![t]),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating"), e))?;
        let id = created
            .internet_gateway()
            .and_then(|g| g.internet_gateway_id())
            .ok_or_else(|| does_not_exist(&what, "the new internet gateway"))?
            .to_string();
        Ok(CreateResult {
            attributes: id_attribute("InternetGatewayId", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("InternetGatewayId", &request.physical_id);
        retag_only(ctx, &what(IGW, &request.logical_id), request, attributes).await
    }

    /// Detaches the gateway from any VPC still attached (an attachment made outside the stack
    /// would otherwise block the delete for good), then deletes it.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(IGW, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        let Some(gateway) = describe_igw(&ec2, &what, id).await? else {
            return Ok(DeleteResult::Deleted);
        };
        for vpc in gateway.attachments().iter().filter_map(|a| a.vpc_id()) {
            tracing::info!("{what}: detaching {id} from {vpc} before deleting it");
            detach(&ec2, &what, id, vpc).await?;
        }
        delete_released(&what, "its VPC attachments to go", || async {
            ec2.delete_internet_gateway()
                .internet_gateway_id(id)
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
        let what = what(IGW, &request.logical_id);
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_igw(&ec2, &what, &request.physical_id)
                .await?
                .map(|g| {
                    let mut props = Map::new();
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
        let what = what(IGW, &request.logical_id);
        let ec2 = client(ctx).await?;
        describe_igw(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: id_attribute("InternetGatewayId", &request.physical_id),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

/// Detaches a gateway; "not attached" counts as done. AWS refuses while public addresses are
/// still mapped in the VPC, which a NAT gateway being deleted releases shortly.
async fn detach(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    gateway: &str,
    vpc: &str,
) -> Result<(), ProviderError> {
    let result = until_released(
        what,
        "the VPC's public addresses (NAT gateways, EIPs) to be released",
        DEPENDENCY_BUDGET,
        || async {
            ec2.detach_internet_gateway()
                .internet_gateway_id(gateway)
                .vpc_id(vpc)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: detaching {gateway} from {vpc}"), e))
        },
    )
    .await;
    match result {
        Err(err) if err.kind != ErrorKind::NOT_FOUND => Err(err),
        _ => Ok(()),
    }
}

/// `AWS::EC2::VPCGatewayAttachment` (internet gateways).
#[derive(Default)]
pub struct GatewayAttachment;

const ATTACHMENT_SEGMENTS: &[&str] = &["internetGatewayId", "vpcId"];

#[async_trait]
impl ResourceProvider for GatewayAttachment {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ATTACHMENT)
            .handles(&["InternetGatewayId", "VpcId"])
            .all_create_only()
            .read_and_import()
            .composite_id(ATTACHMENT_SEGMENTS, &[&["InternetGatewayId"], &["VpcId"]])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ATTACHMENT, &request.logical_id);
        let gateway = require_str(&request.properties, "InternetGatewayId", &what)?;
        let vpc = require_str(&request.properties, "VpcId", &what)?;
        let id = join(&what, &[("internetGatewayId", gateway), ("vpcId", vpc)])?;
        let ec2 = client(ctx).await?;
        ec2.attach_internet_gateway()
            .internet_gateway_id(gateway)
            .vpc_id(vpc)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: attaching {gateway} to {vpc}"), e))?;
        Ok(CreateResult {
            physical_id: id,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    /// Both properties are create-only: there is nothing to change in place.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Ok(unchanged(request, Map::new()))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ATTACHMENT, &request.logical_id);
        let parts = split(&what, &request.physical_id, ATTACHMENT_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        detach(&ec2, &what, parts[0], parts[1]).await?;
        Ok(DeleteResult::Deleted)
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(ATTACHMENT, &request.logical_id);
        let parts = split(&what, &request.physical_id, ATTACHMENT_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        let attached = describe_igw(&ec2, &what, parts[0])
            .await?
            .is_some_and(|g| g.attachments().iter().any(|a| a.vpc_id() == Some(parts[1])));
        Ok(ReadCurrentStateResult {
            properties: attached.then(|| {
                let mut props = Map::new();
                props.insert("InternetGatewayId".into(), json!(parts[0]));
                props.insert("VpcId".into(), json!(parts[1]));
                props
            }),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        read_existing(self, ctx, &request, &what(ATTACHMENT, &request.logical_id)).await?;
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: Map::new(),
            ..Default::default()
        })
    }
}

/// `AWS::EC2::NatGateway`: the create waits until the gateway is available and the delete
/// until it is gone, because its EIP and subnet cannot be released before.
#[derive(Default)]
pub struct NatGateway;

/// How long a NAT gateway may take to become available or to go (AWS: a few minutes).
const NAT_BUDGET: Duration = Duration::from_secs(900);

async fn describe_nat(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::NatGateway>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_nat_gateways().nat_gateway_ids(id).send().await,
    )?
    .and_then(|out| out.nat_gateways().first().cloned()))
}

/// Polls until the gateway reaches `goal` (deleted: also when it is no longer listed).
async fn wait_for_nat(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    goal: NatGatewayState,
) -> Result<(), ProviderError> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        let gateway = describe_nat(ec2, what, id).await?;
        let state = gateway.as_ref().and_then(|g| g.state().cloned());
        match state {
            None if goal == NatGatewayState::Deleted => return Ok(()),
            Some(state) if state == goal => return Ok(()),
            Some(NatGatewayState::Failed) => {
                let gateway = gateway.as_ref();
                return Err(ProviderError::new(
                    ErrorKind::OTHER,
                    format!(
                        "{what}: NAT gateway {id} failed: {} ({})",
                        gateway
                            .and_then(|g| g.failure_message())
                            .unwrap_or("no message"),
                        gateway.and_then(|g| g.failure_code()).unwrap_or("no code")
                    ),
                ));
            }
            _ if started.elapsed() > NAT_BUDGET => {
                return Err(ProviderError::new(
                    ErrorKind::TIMEOUT,
                    format!(
                        "{what}: NAT gateway {id} did not become {} within {:?}",
                        goal.as_str(),
                        NAT_BUDGET
                    ),
                ))
            }
            _ => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    }
}

#[async_trait]
impl ResourceProvider for NatGateway {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(NAT)
            .handles(&[
                "SubnetId",
                "AllocationId",
                "ConnectivityType",
                "PrivateIpAddress",
                "Tags",
            ])
            .create_only(&[
                "SubnetId",
                "AllocationId",
                "ConnectivityType",
                "PrivateIpAddress",
            ])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(NAT, &request.logical_id);
        let props = &request.properties;
        let subnet = require_str(props, "SubnetId", &what)?;
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_nat_gateway()
            .subnet_id(subnet)
            .set_allocation_id(text(props.get("AllocationId")))
            .set_connectivity_type(
                text(props.get("ConnectivityType")).map(|c| ConnectivityType::from(c.as_str())),
            )
            .set_private_ip_address(text(props.get("PrivateIpAddress")))
            .set_tag_specifications(tag_spec(ResourceType::Natgateway, props).map(|t| vec![t]))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {subnet}"), e))?;
        let id = created
            .nat_gateway()
            .and_then(|g| g.nat_gateway_id())
            .ok_or_else(|| does_not_exist(&what, "the new NAT gateway"))?
            .to_string();
        wait_for_nat(&ec2, &what, &id, NatGatewayState::Available).await?;
        Ok(CreateResult {
            attributes: id_attribute("NatGatewayId", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("NatGatewayId", &request.physical_id);
        retag_only(ctx, &what(NAT, &request.logical_id), request, attributes).await
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(NAT, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        let deleted = ec2
            .delete_nat_gateway()
            .nat_gateway_id(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e));
        match deleted {
            Err(err) if err.kind == ErrorKind::NOT_FOUND => return Ok(DeleteResult::Deleted),
            Err(err) => return Err(err),
            Ok(()) => {}
        }
        wait_for_nat(&ec2, &what, id, NatGatewayState::Deleted).await?;
        Ok(DeleteResult::Deleted)
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(NAT, &request.logical_id);
        let ec2 = client(ctx).await?;
        let gateway = describe_nat(&ec2, &what, &request.physical_id)
            .await?
            .filter(|g| {
                !matches!(
                    g.state(),
                    Some(NatGatewayState::Deleted | NatGatewayState::Deleting)
                )
            });
        Ok(ReadCurrentStateResult {
            properties: gateway.map(|g| {
                let mut props = Map::new();
                put(&mut props, "SubnetId", some_str(g.subnet_id()));
                put(
                    &mut props,
                    "AllocationId",
                    some_str(
                        g.nat_gateway_addresses()
                            .first()
                            .and_then(|a| a.allocation_id()),
                    ),
                );
                put(
                    &mut props,
                    "ConnectivityType",
                    some_str(g.connectivity_type().map(|c| c.as_str())),
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
        let what = what(NAT, &request.logical_id);
        let ec2 = client(ctx).await?;
        describe_nat(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: id_attribute("NatGatewayId", &request.physical_id),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

/// `AWS::EC2::EIP`: the id reproduces the shape the Cloud Control path produced, so a record
/// moving between the two keeps working.
#[derive(Default)]
pub struct Eip;

const EIP_SEGMENTS: &[&str] = &["publicIp", "allocationId"];

async fn describe_address(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::Address>, ProviderError> {
    // An import may name the address by allocation id or public IP alone.
    let call = ec2.describe_addresses();
    let call = if id.starts_with("eipalloc-") {
        call.allocation_ids(id)
    } else {
        call.public_ips(id)
    };
    Ok(optional(what, call.send().await)?.and_then(|out| out.addresses().first().cloned()))
}

fn eip_id(
    what: &str,
    address: &aws_sdk_ec2::types::Address,
) -> Result<(String, Map<String, Value>), ProviderError> {
    let ip = address.public_ip().unwrap_or_default();
    let allocation = address.allocation_id().unwrap_or_default();
    let id = join(what, &[("publicIp", ip), ("allocationId", allocation)])?;
    let mut attributes = Map::new();
    attributes.insert("AllocationId".into(), json!(allocation));
    attributes.insert("PublicIp".into(), json!(ip));
    Ok((id, attributes))
}

#[async_trait]
impl ResourceProvider for Eip {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(EIP)
            .handles(&["Domain", "Tags"])
            .create_only(&["Domain"])
            .read_and_import()
            .composite_id(EIP_SEGMENTS, &[&[], &[]])
            .ref_value(RefValue::Segment(0))
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(EIP, &request.logical_id);
        let ec2 = client(ctx).await?;
        let allocated = ec2
            .allocate_address()
            .domain(
                text(request.properties.get("Domain"))
                    .map(|d| DomainType::from(d.as_str()))
                    .unwrap_or(DomainType::Vpc),
            )
            .set_tag_specifications(
                tag_spec(ResourceType::ElasticIp, &request.properties).map(|t| vec![t]),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: allocating"), e))?;
        let address = aws_sdk_ec2::types::Address::builder()
            .set_public_ip(allocated.public_ip().map(ToString::to_string))
            .set_allocation_id(allocated.allocation_id().map(ToString::to_string))
            .build();
        let (physical_id, attributes) = eip_id(&what, &address)?;
        Ok(CreateResult {
            physical_id,
            attributes,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(EIP, &request.logical_id);
        let parts = split(&what, &request.physical_id, EIP_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        retag(
            &ec2,
            &what,
            parts[1],
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        let mut attributes = Map::new();
        attributes.insert("PublicIp".into(), json!(parts[0]));
        attributes.insert("AllocationId".into(), json!(parts[1]));
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            attributes,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(EIP, &request.logical_id);
        let parts = split(&what, &request.physical_id, EIP_SEGMENTS)?;
        let allocation = parts[1];
        let ec2 = client(ctx).await?;
        delete_released(
            &what,
            "the NAT gateway or instance using the address to release it",
            || async {
                ec2.release_address()
                    .allocation_id(allocation)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: releasing {allocation}"), e))
            },
        )
        .await
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(EIP, &request.logical_id);
        let parts = split(&what, &request.physical_id, EIP_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_address(&ec2, &what, parts[1]).await?.map(|a| {
                let mut props = Map::new();
                put(
                    &mut props,
                    "Domain",
                    some_str(a.domain().map(|d| d.as_str())),
                );
                put(&mut props, "Tags", tags_value(a.tags()));
                props
            }),
        })
    }

    /// Accepts the composite, or the allocation id or public IP alone.
    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(EIP, &request.logical_id);
        let lookup = request
            .physical_id
            .rsplit('|')
            .next()
            .unwrap_or(&request.physical_id);
        let ec2 = client(ctx).await?;
        let address = describe_address(&ec2, &what, lookup)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        let (physical_id, attributes) = eip_id(&what, &address)?;
        Ok(CreateResult {
            physical_id,
            attributes,
            ..Default::default()
        })
    }
}
