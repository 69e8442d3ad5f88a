//! `AWS::EC2::SubnetRouteTableAssociation`: physical id is the association id.

use cdkd_aws_common::{aws_error, optional, put, require_str};
use cdkd_provider_api::protocol::DeleteResult;
use cdkd_provider_api::{async_trait, ProviderError};
use serde_json::{Map, Value};

use crate::association::{Association, Pair};
use crate::{already_there, does_not_exist, filter, some_str};

/// `AWS::EC2::SubnetRouteTableAssociation`.
pub(crate) type SubnetRouteTableAssociation = Association<TablePair>;

/// The route table association's own calls.
pub(crate) struct TablePair;

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
impl Pair for TablePair {
    const TYPE_NAME: &'static str = "AWS::EC2::SubnetRouteTableAssociation";
    const ID_ATTRIBUTE: &'static str = "Id";
    const PROPERTIES: &'static [&'static str] = &["RouteTableId", "SubnetId"];

    async fn read(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        Ok(describe_association(ec2, what, id).await?.map(|a| {
            let mut props = Map::new();
            put(&mut props, "RouteTableId", some_str(a.route_table_id()));
            put(&mut props, "SubnetId", some_str(a.subnet_id()));
            props
        }))
    }

    async fn create(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        properties: &Map<String, Value>,
    ) -> Result<String, ProviderError> {
        let table = require_str(properties, "RouteTableId", what)?;
        let subnet = require_str(properties, "SubnetId", what)?;
        let associated = ec2
            .associate_route_table()
            .route_table_id(table)
            .subnet_id(subnet)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: associating {subnet} with {table}"), e));
        match associated {
            Ok(associated) => Ok(associated
                .association_id()
                .ok_or_else(|| does_not_exist(what, "the new association"))?
                .to_string()),
            // A create retried after a crash finds its own association: adopted. The subnet
            // associated with another table is not this pair, and the refusal stands.
            Err(err) if already_there(&err) => {
                match existing_association(ec2, what, subnet, table).await? {
                    Some(id) => {
                        tracing::info!("{what}: {subnet} is already associated with {table} ({id}); adopting it");
                        Ok(id)
                    }
                    None => Err(err),
                }
            }
            Err(err) => Err(err),
        }
    }

    async fn delete(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<DeleteResult, ProviderError> {
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
