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
use crate::{already_there, client, in_place, what};

const ATTACHMENT: &str = "AWS::EC2::VPCGatewayAttachment";

/// `AWS::EC2::VPCGatewayAttachment` (internet gateways).
#[derive(Default)]
pub struct VpcGatewayAttachment;

const ATTACHMENT_SEGMENTS: &[&str] = &["internetGatewayId", "vpcId"];

/// Whether `gateway` is attached (or attaching) to `vpc`: the pair a retried create adopts.
fn attached(gateway: &aws_sdk_ec2::types::InternetGateway, vpc: &str) -> bool {
    gateway
        .attachments()
        .iter()
        .any(|a| a.vpc_id() == Some(vpc))
}

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
            .is_some_and(|g| attached(&g, parts[1]));
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
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
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
        let result = ec2
            .attach_internet_gateway()
            .internet_gateway_id(gateway)
            .vpc_id(vpc)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: attaching {gateway} to {vpc}"), e));
        match result {
            // A create retried after a crash finds its own attachment: adopted. Attached to
            // another VPC, the gateway is not this pair and the refusal stands.
            Err(err) if already_there(&err) => {
                let ours = describe_igw(&ec2, &what, gateway)
                    .await?
                    .is_some_and(|g| attached(&g, vpc));
                if !ours {
                    return Err(err);
                }
                tracing::info!("{what}: {gateway} is already attached to {vpc}; adopting it");
            }
            other => {
                other?;
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{AttachmentStatus, InternetGateway, InternetGatewayAttachment};

    #[test]
    fn only_the_same_vpc_is_the_pair_asked_for() {
        let gateway = InternetGateway::builder()
            .internet_gateway_id("igw-1")
            .attachments(
                InternetGatewayAttachment::builder()
                    .vpc_id("vpc-1")
                    .state(AttachmentStatus::Attached)
                    .build(),
            )
            .build();
        assert!(attached(&gateway, "vpc-1"));
        assert!(!attached(&gateway, "vpc-2"));
        assert!(!attached(&InternetGateway::builder().build(), "vpc-1"));
    }
}
