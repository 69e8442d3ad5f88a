//! `AWS::EC2::RouteTable`: physical id (and `Ref`) is the AWS id.

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
use crate::dependants::{delete_unless_held, table_associations};
use crate::{
    client, does_not_exist, id_attribute, retag_only, some_str, tag_spec, tags_value, what,
};

const TABLE: &str = "AWS::EC2::RouteTable";

/// Route table `id`, or `None` when EC2 does not know it.
pub(crate) async fn describe_table(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::RouteTable>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_route_tables().route_table_ids(id).send().await,
    )?
    .and_then(|out| out.route_tables().first().cloned()))
}

/// `AWS::EC2::RouteTable`.
#[derive(Default)]
pub struct RouteTable;

#[async_trait]
impl Readable for RouteTable {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(describe_table(&ec2, what, &request.physical_id)
            .await?
            .map(|t| {
                let mut props = Map::new();
                put(&mut props, "VpcId", some_str(t.vpc_id()));
                put(&mut props, "Tags", tags_value(t.tags()));
                props
            }))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(id_attribute("RouteTableId", physical_id))
    }
}

#[async_trait]
impl FindsCreated for RouteTable {
    const TYPE_NAME: &'static str = TABLE;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_route_tables()
            .filters(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page =
                page.map_err(|e| aws_error(&format!("{what}: finding its route table"), e))?;
            ids.extend(
                page.route_tables()
                    .iter()
                    .filter_map(|r| r.route_table_id().map(String::from)),
            );
        }
        Ok(ids)
    }
}

#[async_trait]
impl ResourceProvider for RouteTable {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TABLE)
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
        let what = what(TABLE, &request.logical_id);
        let vpc = require_str(&request.properties, "VpcId", &what)?;
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_route_table()
            .vpc_id(vpc)
            .set_tag_specifications(tag_spec(
                ResourceType::RouteTable,
                &request.properties,
                &request.client_token,
            ))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {vpc}"), e))?;
        let id = created
            .route_table()
            .and_then(|t| t.route_table_id())
            .ok_or_else(|| does_not_exist(&what, "the new route table"))?
            .to_string();
        Ok(CreateResult {
            attributes: id_attribute("RouteTableId", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("RouteTableId", &request.physical_id);
        retag_only(ctx, &what(TABLE, &request.logical_id), request, attributes).await
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(TABLE, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_unless_held(
            &what,
            id,
            "still associated with",
            || async {
                ec2.delete_route_table()
                    .route_table_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
            || async {
                Ok::<_, ProviderError>(
                    describe_table(&ec2, &what, id)
                        .await?
                        .map(|t| table_associations(&t))
                        .unwrap_or_default(),
                )
            },
        )
        .await
    }
}
