//! `AWS::EC2::NetworkAcl`: physical id (and `Ref`) is the AWS id.

use aws_sdk_ec2::types::{Filter, ResourceType};
use cdkd_aws_common::{aws_error, optional, put, require_str};
use cdkd_provider_api::{async_trait, ProviderError};
use serde_json::{Map, Value};

use crate::dependants::{acl_associations, Dependant};
use crate::tagged::{Kind, Tagged};
use crate::{does_not_exist, some_str, tag_spec, tags_value};

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
pub(crate) type NetworkAcl = Tagged<Acl>;

/// The network ACL's own calls.
pub(crate) struct Acl;

#[async_trait]
impl Kind for Acl {
    type Described = aws_sdk_ec2::types::NetworkAcl;
    const TYPE_NAME: &'static str = "AWS::EC2::NetworkAcl";
    const ID_ATTRIBUTE: &'static str = "Id";
    const HANDLES: &'static [&'static str] = &["VpcId", "Tags"];
    const CREATE_ONLY: &'static [&'static str] = &["VpcId"];
    const HELD: &'static str = "still associated with";

    async fn describe(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Self::Described>, ProviderError> {
        describe_acl(ec2, what, id).await
    }

    fn properties(acl: &Self::Described) -> Map<String, Value> {
        let mut props = Map::new();
        put(&mut props, "VpcId", some_str(acl.vpc_id()));
        put(&mut props, "Tags", tags_value(acl.tags()));
        props
    }

    async fn tagged(
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

    async fn create(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        properties: &Map<String, Value>,
        token: &str,
    ) -> Result<String, ProviderError> {
        let vpc = require_str(properties, "VpcId", what)?;
        let created = ec2
            .create_network_acl()
            .vpc_id(vpc)
            .set_tag_specifications(tag_spec(ResourceType::NetworkAcl, properties, token))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {vpc}"), e))?;
        Ok(created
            .network_acl()
            .and_then(|a| a.network_acl_id())
            .ok_or_else(|| does_not_exist(what, "the new network ACL"))?
            .to_string())
    }

    fn dependants(acl: &Self::Described) -> Vec<Dependant> {
        acl_associations(acl)
    }

    async fn delete(ec2: &aws_sdk_ec2::Client, what: &str, id: &str) -> Result<(), ProviderError> {
        ec2.delete_network_acl()
            .network_acl_id(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
    }
}
