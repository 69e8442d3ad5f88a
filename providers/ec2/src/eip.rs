//! `AWS::EC2::EIP`: physical id `<publicIp>|<allocationId>`, `Ref` = the public IP.

use aws_sdk_ec2::types::{DomainType, Filter, ResourceType};
use cdkd_aws_common::{aws_error, optional, put, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, RefValue, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, split};
use crate::created::FindsCreated;
use crate::{
    client, delete_released, does_not_exist, in_place, retag, some_str, tag_spec, tags_value, what,
};

const EIP: &str = "AWS::EC2::EIP";

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

/// Not registered through `Reads`: its import also takes the allocation id or public IP alone.
/// The reader serves `read_current_state` and `find_created`.
#[async_trait]
impl Readable for Eip {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let parts = split(what, &request.physical_id, EIP_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        Ok(describe_address(&ec2, what, parts[1]).await?.map(|a| {
            let mut props = Map::new();
            put(
                &mut props,
                "Domain",
                some_str(a.domain().map(|d| d.as_str())),
            );
            put(&mut props, "Tags", tags_value(a.tags()));
            props
        }))
    }
}

#[async_trait]
impl FindsCreated for Eip {
    const TYPE_NAME: &'static str = EIP;

    /// DescribeAddresses answers every address at once (it has no pages).
    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let out = ec2
            .describe_addresses()
            .filters(by_token)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: finding its address"), e))?;
        out.addresses()
            .iter()
            .map(|a| eip_id(what, a).map(|(id, _)| id))
            .collect()
    }
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
        let what = what(EIP, &request.logical_id);
        let ec2 = client(ctx).await?;
        let allocated = ec2
            .allocate_address()
            .domain(
                text(request.properties.get("Domain"))
                    .map(|d| DomainType::from(d.as_str()))
                    .unwrap_or(DomainType::Vpc),
            )
            .set_tag_specifications(tag_spec(
                ResourceType::ElasticIp,
                &request.properties,
                &request.client_token,
            ))
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
        Ok(in_place(request, attributes))
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
        Ok(ReadCurrentStateResult {
            properties: self.read(ctx, &what, &request).await?,
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
