//! `AWS::EC2::NatGateway`: physical id (and `Ref`) is the AWS id.

use std::time::Duration;

use aws_sdk_ec2::types::{ConnectivityType, Filter, NatGatewayState, ResourceType};
use cdkd_aws_common::{aws_error, optional, poll_paced, put, require_str, text, Pacing};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult, Wait,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::created::FindsCreated;
use crate::{
    client, client_token, does_not_exist, id_attribute, retag_only, some_str, tag_spec, tags_value,
    what,
};

const NAT: &str = "AWS::EC2::NatGateway";

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
    // Capped at 10 s, not 5: a gateway takes 90-120 s to become available (and about a minute
    // to go), so pauses only reach the cap after 100 s, where 10 s is still a tenth of the
    // wait; a stack makes one per availability zone, and each poll is an EC2 describe drawn
    // from the account's shared EC2 rate limit.
    let reached = poll_paced(
        Pacing::capped(Duration::from_secs(10)),
        NAT_BUDGET,
        || async {
            let gateway = describe_nat(ec2, what, id).await?;
            let state = gateway.as_ref().and_then(|g| g.state().cloned());
            match state {
                None if goal == NatGatewayState::Deleted => Ok(Some(())),
                Some(state) if state == goal => Ok(Some(())),
                Some(NatGatewayState::Failed) => {
                    let gateway = gateway.as_ref();
                    Err(ProviderError::new(
                        ErrorKind::OTHER,
                        format!(
                            "{what}: NAT gateway {id} failed: {} ({})",
                            gateway
                                .and_then(|g| g.failure_message())
                                .unwrap_or("no message"),
                            gateway.and_then(|g| g.failure_code()).unwrap_or("no code")
                        ),
                    ))
                }
                _ => Ok(None),
            }
        },
    )
    .await?;
    reached.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: NAT gateway {id} did not become {} within {:?}",
                goal.as_str(),
                NAT_BUDGET
            ),
        )
    })
}

#[async_trait]
impl Readable for NatGateway {
    /// A gateway being deleted, or deleted and still listed, no longer exists.
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        let gateway = describe_nat(&ec2, what, &request.physical_id)
            .await?
            .filter(|g| {
                !matches!(
                    g.state(),
                    Some(NatGatewayState::Deleted | NatGatewayState::Deleting)
                )
            });
        Ok(gateway.map(|g| {
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
        }))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(id_attribute("NatGatewayId", physical_id))
    }
}

#[async_trait]
impl FindsCreated for NatGateway {
    const TYPE_NAME: &'static str = NAT;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_nat_gateways()
            .filter(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| aws_error(&format!("{what}: finding its NAT gateway"), e))?;
            ids.extend(
                page.nat_gateways()
                    .iter()
                    // A deleted gateway stays listed for a while; it is no create's result.
                    .filter(|g| g.state() != Some(&NatGatewayState::Deleted))
                    .filter_map(|r| r.nat_gateway_id().map(String::from)),
            );
        }
        Ok(ids)
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
                // Only secondary address operations (DisassociateNatGatewayAddress,
                // UnassignPrivateNatGatewayAddress) take it, and this plugin makes none: the
                // Secondary* properties are not handled, so a gateway with secondary addresses
                // goes to Cloud Control. Without them it has no effect, on AWS as here, so it is
                // accepted and not sent; nor is it readable back, so drift skips it.
                "MaxDrainDurationSeconds",
            ])
            .create_only(&[
                "SubnetId",
                "AllocationId",
                "ConnectivityType",
                "PrivateIpAddress",
            ])
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
            .set_tag_specifications(tag_spec(
                ResourceType::Natgateway,
                props,
                &request.client_token,
            ))
            // EC2's own idempotency: a retried create answers the gateway the first one made.
            .set_client_token(client_token(&request.client_token))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {subnet}"), e))?;
        let id = created
            .nat_gateway()
            .and_then(|g| g.nat_gateway_id())
            .ok_or_else(|| does_not_exist(&what, "the new NAT gateway"))?
            .to_string();
        // Routes through it carry traffic only once it is available, which is what the stack's
        // functions and instances behind it need; `--no-wait` leaves that to them (EC2 takes
        // a route to a pending gateway).
        if ctx.wait() != Wait::None {
            wait_for_nat(&ec2, &what, &id, NatGatewayState::Available).await?;
        }
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
}
