//! `AWS::EC2::RouteTable`: physical id (and `Ref`) is the AWS id.

use aws_sdk_ec2::types::{Filter, ResourceType};
use cdkd_aws_common::{aws_error, optional, put, require_str};
use cdkd_provider_api::{async_trait, ProviderError};
use serde_json::{Map, Value};

use crate::dependants::{table_associations, Dependant};
use crate::tagged::{Kind, Tagged};
use crate::{does_not_exist, some_str, tag_spec, tags_value};

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
pub(crate) type RouteTable = Tagged<Table>;

/// The route table's own calls.
pub(crate) struct Table;

#[async_trait]
impl Kind for Table {
    type Described = aws_sdk_ec2::types::RouteTable;
    const TYPE_NAME: &'static str = "AWS::EC2::RouteTable";
    const ID_ATTRIBUTE: &'static str = "RouteTableId";
    const HANDLES: &'static [&'static str] = &["VpcId", "Tags"];
    const CREATE_ONLY: &'static [&'static str] = &["VpcId"];
    const HELD: &'static str = "still associated with";

    async fn describe(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Self::Described>, ProviderError> {
        describe_table(ec2, what, id).await
    }

    fn properties(table: &Self::Described) -> Map<String, Value> {
        let mut props = Map::new();
        put(&mut props, "VpcId", some_str(table.vpc_id()));
        put(&mut props, "Tags", tags_value(table.tags()));
        props
    }

    async fn tagged(
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

    async fn create(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        properties: &Map<String, Value>,
        token: &str,
    ) -> Result<String, ProviderError> {
        let vpc = require_str(properties, "VpcId", what)?;
        let created = ec2
            .create_route_table()
            .vpc_id(vpc)
            .set_tag_specifications(tag_spec(ResourceType::RouteTable, properties, token))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {vpc}"), e))?;
        Ok(created
            .route_table()
            .and_then(|t| t.route_table_id())
            .ok_or_else(|| does_not_exist(what, "the new route table"))?
            .to_string())
    }

    fn dependants(table: &Self::Described) -> Vec<Dependant> {
        table_associations(table)
    }

    async fn delete(ec2: &aws_sdk_ec2::Client, what: &str, id: &str) -> Result<(), ProviderError> {
        ec2.delete_route_table()
            .route_table_id(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
    }
}
