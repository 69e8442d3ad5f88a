//! `AWS::EC2::InternetGateway`: physical id (and `Ref`) is the AWS id.

use aws_sdk_ec2::types::{Filter, ResourceType};
use cdkd_aws_common::{aws_error, optional, put};
use cdkd_provider_api::{async_trait, ErrorKind, ProviderError};
use serde_json::{Map, Value};

use crate::dependants::{attachments, Dependant};
use crate::tagged::{Kind, Tagged};
use crate::{does_not_exist, tag_spec, tags_value, until_released, DEPENDENCY_BUDGET};

/// `AWS::EC2::InternetGateway`.
pub(crate) type InternetGateway = Tagged<Gateway>;

/// The internet gateway's own calls.
pub(crate) struct Gateway;

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
impl Kind for Gateway {
    type Described = aws_sdk_ec2::types::InternetGateway;
    const TYPE_NAME: &'static str = "AWS::EC2::InternetGateway";
    const ID_ATTRIBUTE: &'static str = "InternetGatewayId";
    const HANDLES: &'static [&'static str] = &["Tags"];
    const CREATE_ONLY: &'static [&'static str] = &[];
    const HELD: &'static str = "still attached to";

    async fn describe(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Self::Described>, ProviderError> {
        describe_igw(ec2, what, id).await
    }

    fn properties(gateway: &Self::Described) -> Map<String, Value> {
        let mut props = Map::new();
        put(&mut props, "Tags", tags_value(gateway.tags()));
        props
    }

    async fn tagged(
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

    async fn create(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        properties: &Map<String, Value>,
        token: &str,
    ) -> Result<String, ProviderError> {
        let created = ec2
            .create_internet_gateway()
            .set_tag_specifications(tag_spec(ResourceType::InternetGateway, properties, token))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating"), e))?;
        Ok(created
            .internet_gateway()
            .and_then(|g| g.internet_gateway_id())
            .ok_or_else(|| does_not_exist(what, "the new internet gateway"))?
            .to_string())
    }

    fn dependants(gateway: &Self::Described) -> Vec<Dependant> {
        attachments(gateway)
    }

    /// Detaches the gateway from any VPC still attached: an attachment made outside the stack
    /// would otherwise block the delete for good.
    async fn before_delete(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<bool, ProviderError> {
        let Some(gateway) = describe_igw(ec2, what, id).await? else {
            return Ok(false);
        };
        for vpc in gateway.attachments().iter().filter_map(|a| a.vpc_id()) {
            tracing::info!("{what}: detaching {id} from {vpc} before deleting it");
            detach(ec2, what, id, vpc).await?;
        }
        Ok(true)
    }

    async fn delete(ec2: &aws_sdk_ec2::Client, what: &str, id: &str) -> Result<(), ProviderError> {
        ec2.delete_internet_gateway()
            .internet_gateway_id(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
    }
}
