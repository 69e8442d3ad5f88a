//! `AWS::EC2::NetworkAcl`: physical id (and `Ref`) is the AWS id.

use aws_sdk_ec2::types::{Filter, ResourceType};
use cdkd_aws_common::{aws_error, optional, put, require_str};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::created::FindsCreated;
use crate::dependants::{acl_associations, delete_unless_held};
use crate::{
    client, does_not_exist, id_attribute, retag_only, some_str, tag_spec, tags_value, what,
};

const ACL: &str = "AWS::EC2::NetworkAcl";

/// Network ACL `id`, or `None` when EC2 does not know it.
pub(crate) async fn describe_acl(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::NetworkAcl>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_network_acls().network_acl_ids(id).send().await,
    )?
    .and_then(|out| out.network_acls().first().cloned()))
}

/// `AWS::EC2::NetworkAcl`.
#[derive(Default)]
pub struct NetworkAcl;

#[async_trait]
impl Readable for NetworkAcl {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(describe_acl(&ec2, what, &request.physical_id)
            .await?
            .map(|a| {
                let mut props = Map::new();
                put(&mut props, "VpcId", some_str(a.vpc_id()));
                put(&mut props, "Tags", tags_value(a.tags()));
                props
            }))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(id_attribute("Id", physical_id))
    }
}

#[async_trait]
impl FindsCreated for NetworkAcl {
    const TYPE_NAME: &'static str = ACL;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_network_acls()
            .filters(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| aws_error(&format!("{what}: finding its network ACL"), e))?;
            ids.extend(
                page.network_acls()
                    .iter()
                    .filter_map(|r| r.network_acl_id().map(String::from)),
            );
        }
        Ok(ids)
    }
}

#[async_trait]
impl ResourceProvider for NetworkAcl {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ACL)
            .handles(&["VpcId", "Tags"])
            .create_only(&["VpcId"])
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
        let what = what(ACL, &request.logical_id);
        let vpc = require_str(&request.properties, "VpcId", &what)?;
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_network_acl()
            .vpc_id(vpc)
            .set_tag_specifications(tag_spec(
                ResourceType::NetworkAcl,
                &request.properties,
                &request.client_token,
            ))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {vpc}"), e))?;
        let id = created
            .network_acl()
            .and_then(|a| a.network_acl_id())
            .ok_or_else(|| does_not_exist(&what, "the new network ACL"))?
            .to_string();
        Ok(CreateResult {
            attributes: id_attribute("Id", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("Id", &request.physical_id);
        retag_only(ctx, &what(ACL, &request.logical_id), request, attributes).await
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ACL, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_unless_held(
            &what,
            id,
            "still associated with",
            || async {
                ec2.delete_network_acl()
                    .network_acl_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
            || async {
                Ok::<_, ProviderError>(
                    describe_acl(&ec2, &what, id)
                        .await?
                        .map(|a| acl_associations(&a))
                        .unwrap_or_default(),
                )
            },
        )
        .await
    }
}
