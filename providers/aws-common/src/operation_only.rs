//! Types declared only to answer one operation (a final snapshot, a context lookup): their
//! resources stay on Cloud Control, so create, update and delete are refused, and the one
//! operation's request and answer cross the boundary as JSON.

use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::TypeSchema;

/// A type that only answers [`OperationOnly::OPERATION`].
#[async_trait]
pub trait OperationOnly: Send + Sync + 'static {
    /// The operation's request.
    type Request: DeserializeOwned + Send;
    /// Its answer.
    type Answer: Serialize;
    /// The operation ([`cdkd_provider_api::protocol::operation`]).
    const OPERATION: &'static str;

    /// The declared type.
    fn type_name(&self) -> &'static str;

    /// Why a create, update or delete reaches this plugin by mistake.
    fn not_provisioned(&self) -> String;

    /// Answers the operation.
    async fn answer(
        &self,
        ctx: &PluginContext,
        request: Self::Request,
    ) -> Result<Self::Answer, ProviderError>;
}

/// An [`OperationOnly`] type as a provider. Register `Answers<MyType>`.
#[derive(Debug, Default)]
pub struct Answers<T>(pub T);

#[async_trait]
impl<T: OperationOnly> ResourceProvider for Answers<T> {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(self.0.type_name())
            .operations(&[T::OPERATION])
            .build()
    }

    async fn create(
        &self,
        _: &PluginContext,
        _: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        Err(ProviderError::unsupported(self.0.not_provisioned()))
    }

    async fn update(
        &self,
        _: &PluginContext,
        _: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Err(ProviderError::unsupported(self.0.not_provisioned()))
    }

    async fn delete(
        &self,
        _: &PluginContext,
        _: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        Err(ProviderError::unsupported(self.0.not_provisioned()))
    }

    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if name != T::OPERATION {
            return Err(ProviderError::unsupported(format!(
                "{} does not implement the '{name}' operation",
                self.0.type_name()
            )));
        }
        let request: T::Request = serde_json::from_value(request)
            .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
        let answer = self.0.answer(ctx, request).await?;
        serde_json::to_value(answer).map_err(|e| ProviderError::other(e.to_string()))
    }
}
