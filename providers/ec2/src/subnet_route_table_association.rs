//! `AWS::EC2::SubnetRouteTableAssociation`: physical id is the association id.

use cdkd_aws_common::{aws_error, optional, put, require_str};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{
    already_there, client, does_not_exist, filter, id_attribute, in_place, some_str, what,
};

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

/// The id of `subnet`'s association when it is with `table`, the pair a retried create adopts;
/// `None` when the subnet is associated with another table (or with none).
fn association_with(
    tables: &[aws_sdk_ec2::types::RouteTable],
    subnet: &str,
    table: &str,
) -> Option<String> {
    tables
        .iter()
        .flat_map(|t| t.associations())
        .find(|a| a.subnet_id() == Some(subnet))
        .filter(|a| a.route_table_id() == Some(table))
        .and_then(|a| a.route_table_association_id().map(ToString::to_string))
}

/// The association of `subnet` with `table`, when that is the subnet's association.
async fn existing_association(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    subnet: &str,
    table: &str,
) -> Result<Option<String>, ProviderError> {
    let tables = ec2
        .describe_route_tables()
        .filters(filter("association.subnet-id", subnet))
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: reading the association of {subnet}"), e))?;
    Ok(association_with(tables.route_tables(), subnet, table))
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
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
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
            .map_err(|e| aws_error(&format!("{what}: associating {subnet} with {table}"), e));
        let id = match associated {
            Ok(associated) => associated
                .association_id()
                .ok_or_else(|| does_not_exist(&what, "the new association"))?
                .to_string(),
            // A create retried after a crash finds its own association: adopted. The subnet
            // associated with another table is not this pair, and the refusal stands.
            Err(err) if already_there(&err) => {
                match existing_association(&ec2, &what, subnet, table).await? {
                    Some(id) => {
                        tracing::info!("{what}: {subnet} is already associated with {table} ({id}); adopting it");
                        id
                    }
                    None => return Err(err),
                }
            }
            Err(err) => return Err(err),
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{RouteTable, RouteTableAssociation};

    #[test]
    fn only_the_subnets_association_with_the_same_table_is_adopted() {
        let tables = [RouteTable::builder()
            .route_table_id("rtb-1")
            .associations(
                RouteTableAssociation::builder()
                    .route_table_id("rtb-1")
                    .subnet_id("subnet-9")
                    .route_table_association_id("rtbassoc-9")
                    .build(),
            )
            .associations(
                RouteTableAssociation::builder()
                    .route_table_id("rtb-1")
                    .subnet_id("subnet-1")
                    .route_table_association_id("rtbassoc-1")
                    .build(),
            )
            .build()];
        assert_eq!(
            association_with(&tables, "subnet-1", "rtb-1"),
            Some("rtbassoc-1".into())
        );
        assert_eq!(association_with(&tables, "subnet-1", "rtb-2"), None);
        assert_eq!(association_with(&tables, "subnet-2", "rtb-1"), None);
    }
}
