//! `AWS::EC2::VPCGatewayAttachment` (internet gateways): physical id
//! `<internetGatewayId>|<vpcId>`.

use cdkd_aws_common::{aws_error, require_str};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, split};
use crate::internet_gateway::{describe_igw, detach};
use crate::{client, in_place, what};

const ATTACHMENT: &str = "AWS::EC2::VPCGatewayAttachment";

/// `AWS::EC2::VPCGatewayAttachment` (internet gateways).
#[derive(Default)]
pub struct VpcGatewayAttachment;

const ATTACHMENT_SEGMENTS: &[&str] = &["internetGatewayId", "vpcId"];

#[async_trait]
impl Readable for VpcGatewayAttachment {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let parts = split(what, &request.physical_id, ATTACHMENT_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        let attached = describe_igw(&ec2, what, parts[0])
            .await?
            .is_some_and(|g| g.attachments().iter().any(|a| a.vpc_id() == Some(parts[1])));
        Ok(attached.then(|| {
            let mut props = Map::new();
            props.insert("InternetGatewayId".into(), json!(parts[0]));
            props.insert("VpcId".into(), json!(parts[1]));
            props
        }))
    }
}

#[async_trait]
impl ResourceProvider for VpcGatewayAttachment {
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
        Ok(in_place(request, Map::new()))
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
}
