//! The shape EC2's plain tagged types share (`InternetGateway`, `RouteTable`, `NetworkAcl`):
//! described by id, created with the template's tags and the create token (so an interrupted
//! create is found again), retagged in place, and deleted once nothing holds them. A [`Kind`]
//! says one type's own calls; [`Tagged`] is its provider.

use std::marker::PhantomData;

use aws_sdk_ec2::types::Filter;
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::created::FindsCreated;
use crate::dependants::{delete_unless_held, Dependant};
use crate::{client, id_attribute, retag_only, what};

/// One plain tagged EC2 type: its name, its attribute and its EC2 calls.
#[async_trait]
pub(crate) trait Kind: Send + Sync + 'static {
    /// What EC2's describe answers for one.
    type Described: Send + Sync;
    /// The CloudFormation type name.
    const TYPE_NAME: &'static str;
    /// The attribute that carries the id (`Ref` is the id too).
    const ID_ATTRIBUTE: &'static str;
    /// The template properties the type handles.
    const HANDLES: &'static [&'static str];
    /// The ones a change of which replaces it.
    const CREATE_ONLY: &'static [&'static str];
    /// How a dependant holds it, for the message of a delete that waits ("still attached to").
    const HELD: &'static str;

    /// The one with `id`, or `None` when EC2 does not know it.
    async fn describe(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Self::Described>, ProviderError>;

    /// A described one's properties in template shape.
    fn properties(described: &Self::Described) -> Map<String, Value>;

    /// The ids of the ones `by_token` selects.
    async fn tagged(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError>;

    /// Creates one (tagged with `token`); its id.
    async fn create(
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        properties: &Map<String, Value>,
        token: &str,
    ) -> Result<String, ProviderError>;

    /// What still holds a described one.
    fn dependants(described: &Self::Described) -> Vec<Dependant>;

    /// The delete call itself.
    async fn delete(ec2: &aws_sdk_ec2::Client, what: &str, id: &str) -> Result<(), ProviderError>;

    /// Runs before the delete: `false` when the resource is already gone. None by default.
    async fn before_delete(
        _ec2: &aws_sdk_ec2::Client,
        _what: &str,
        _id: &str,
    ) -> Result<bool, ProviderError> {
        Ok(true)
    }
}

/// The provider of a [`Kind`].
pub(crate) struct Tagged<K>(PhantomData<K>);

impl<K> Default for Tagged<K> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

#[async_trait]
impl<K: Kind> Readable for Tagged<K> {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(K::describe(&ec2, what, &request.physical_id)
            .await?
            .map(|d| K::properties(&d)))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(id_attribute(K::ID_ATTRIBUTE, physical_id))
    }
}

#[async_trait]
impl<K: Kind> FindsCreated for Tagged<K> {
    const TYPE_NAME: &'static str = K::TYPE_NAME;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        K::tagged(ec2, what, by_token).await
    }
}

#[async_trait]
impl<K: Kind> ResourceProvider for Tagged<K> {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(K::TYPE_NAME)
            .handles(K::HANDLES)
            .create_only(K::CREATE_ONLY)
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
        let what = what(K::TYPE_NAME, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = K::create(&ec2, &what, &request.properties, &request.client_token).await?;
        Ok(CreateResult {
            attributes: id_attribute(K::ID_ATTRIBUTE, &id),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute(K::ID_ATTRIBUTE, &request.physical_id);
        retag_only(
            ctx,
            &what(K::TYPE_NAME, &request.logical_id),
            request,
            attributes,
        )
        .await
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(K::TYPE_NAME, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        if !K::before_delete(&ec2, &what, id).await? {
            return Ok(DeleteResult::Deleted);
        }
        delete_unless_held(
            &what,
            id,
            K::HELD,
            || K::delete(&ec2, &what, id),
            || async {
                Ok::<_, ProviderError>(
                    K::describe(&ec2, &what, id)
                        .await?
                        .map(|d| K::dependants(&d))
                        .unwrap_or_default(),
                )
            },
        )
        .await
    }
}
