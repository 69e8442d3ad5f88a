//! The shape EC2's subnet associations share (`SubnetRouteTableAssociation`,
//! `SubnetNetworkAclAssociation`): the physical id is the association id, both properties are
//! create-only (nothing changes in place), a repeated create adopts the identical pair. A
//! [`Pair`] says one type's own calls; [`Association`] is its provider.

use std::marker::PhantomData;

use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{client, id_attribute, in_place, what};

/// One subnet association type: its name, its attribute and its EC2 calls.
#[async_trait]
pub(crate) trait Pair: Send + Sync + 'static {
    /// The CloudFormation type name.
    const TYPE_NAME: &'static str;
    /// The attribute that carries the association id.
    const ID_ATTRIBUTE: &'static str;
    /// The two template properties naming the pair.
    const PROPERTIES: &'static [&'static str];

    /// The association `id`'s properties in template shape; `None` when it is gone.
    async fn read(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError>;

    /// Associates the template's pair (adopting it when already so); the association id.
    async fn create(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        properties: &Map<String, Value>,
    ) -> Result<String, ProviderError>;

    /// Ends association `id`.
    async fn delete(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<DeleteResult, ProviderError>;
}

/// The provider of a [`Pair`].
pub(crate) struct Association<P>(PhantomData<P>);

impl<P> Default for Association<P> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

#[async_trait]
impl<P: Pair> Readable for Association<P> {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        P::read(&client(ctx).await?, what, &request.physical_id).await
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(id_attribute(P::ID_ATTRIBUTE, physical_id))
    }
}

#[async_trait]
impl<P: Pair> ResourceProvider for Association<P> {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(P::TYPE_NAME)
            .handles(P::PROPERTIES)
            .all_create_only()
            .read_and_import()
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(P::TYPE_NAME, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = P::create(&ec2, &what, &request.properties).await?;
        Ok(CreateResult {
            attributes: id_attribute(P::ID_ATTRIBUTE, &id),
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
        let attributes = id_attribute(P::ID_ATTRIBUTE, &request.physical_id);
        Ok(in_place(request, attributes))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(P::TYPE_NAME, &request.logical_id);
        let ec2 = client(ctx).await?;
        P::delete(&ec2, &what, &request.physical_id).await
    }
}
