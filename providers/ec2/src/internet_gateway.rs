//! `AWS::EC2::InternetGateway`: physical id (and `Ref`) is the AWS id.

use aws_sdk_ec2::types::{Filter, ResourceType};
use cdkd_aws_common::{aws_error, optional, put};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::created::FindsCreated;
use crate::dependants::{attachments, delete_unless_held};
use crate::{
    client, does_not_exist, id_attribute, retag_only, tag_spec, tags_value, until_released, what,
    DEPENDENCY_BUDGET,
};

const IGW: &str = "AWS::EC2::InternetGateway";

/// `AWS::EC2::InternetGateway`.
#[derive(Default)]
pub struct InternetGateway;

/// Internet gateway `id`, or `None` when EC2 does not know it.
pub(crate) async fn describe_igw(
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

/// Detaches a gateway; "not attached" counts as done. AWS refuses while public addresses are
/// still mapped in the VPC, which a NAT gateway being deleted releases shortly.
pub(crate) async fn detach(
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

#[async_trait]
impl Readable for InternetGateway {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(describe_igw(&ec2, what, &request.physical_id)
            .await?
            .map(|g| {
                let mut props = Map::new();
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
        Ok(id_attribute("InternetGatewayId", physical_id))
    }
}

#[async_trait]
impl FindsCreated for InternetGateway {
    const TYPE_NAME: &'static str = IGW;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_internet_gateways()
            .filters(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| aws_error(&format!("{what}: finding its internet gateway"), e))?;
            ids.extend(
                page.internet_gateways()
                    .iter()
                    .filter_map(|r| r.internet_gateway_id().map(String::from)),
            );
        }
        Ok(ids)
    }
}

#[async_trait]
impl ResourceProvider for InternetGateway {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(IGW)
            .handles(&["Tags"])
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
        let what = what(IGW, &request.logical_id);
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_internet_gateway()
            .set_tag_specifications(tag_spec(
                ResourceType::InternetGateway,
                &request.properties,
                &request.client_token,
            ))
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
        delete_unless_held(
            &what,
            id,
            "still attached to",
            || async {
                ec2.delete_internet_gateway()
                    .internet_gateway_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
            || async {
                Ok::<_, ProviderError>(
                    describe_igw(&ec2, &what, id)
                        .await?
                        .map(|g| attachments(&g))
                        .unwrap_or_default(),
                )
            },
        )
        .await
    }
}
