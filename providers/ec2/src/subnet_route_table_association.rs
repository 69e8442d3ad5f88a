//! `AWS::EC2::SubnetRouteTableAssociation`: physical id is the association id.

use cdkd_aws_common::{aws_error, optional, put, require_str};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{client, does_not_exist, filter, id_attribute, in_place, some_str, what};

const ASSOCIATION: &str = "AWS::EC2::SubnetRouteTableAssociation";

/// `AWS::EC2::SubnetRouteTableAssociation`.
#[derive(Default)]
pub struct SubnetRouteTableAssociation;

async fn describe_association(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::RouteTableAssociation>, ProviderError> {
    let tables = optional(
        what,
        ec2.describe_route_tables()
            .filters(filter("association.route-table-association-id", id))
            .send()
            .await,
    )?;
    Ok(tables.and_then(|out| {
        out.route_tables()
            .iter()
            .flat_map(|t| t.associations())
            .find(|a| a.route_table_association_id() == Some(id))
            .cloned()
    }))
}

#[async_trait]
impl Readable for SubnetRouteTableAssociation {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(describe_association(&ec2, what, &request.physical_id)
            .await?
            .map(|a| {
                let mut props = Map::new();
                put(&mut props, "RouteTableId", some_str(a.route_table_id()));
                put(&mut props, "SubnetId", some_str(a.subnet_id()));
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
impl ResourceProvider for SubnetRouteTableAssociation {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ASSOCIATION)
            .handles(&["RouteTableId", "SubnetId"])
            .all_create_only()
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let table = require_str(&request.properties, "RouteTableId", &what)?;
        let subnet = require_str(&request.properties, "SubnetId", &what)?;
        let ec2 = client(ctx).await?;
        let associated = ec2
            .associate_route_table()
            .route_table_id(table)
            .subnet_id(subnet)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: associating {subnet} with {table}"), e))?;
        let id = associated
            .association_id()
            .ok_or_else(|| does_not_exist(&what, "the new association"))?
            .to_string();
        Ok(CreateResult {
            attributes: id_attribute("Id", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    /// Both properties are create-only: there is nothing to change in place.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("Id", &request.physical_id);
        Ok(in_place(request, attributes))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        cdkd_aws_common::deleted_unless_failed(
            ec2.disassociate_route_table()
                .association_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: disassociating {id}"), e)),
        )
    }
}
