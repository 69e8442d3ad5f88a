//! One reader per type: a type says how to read its live properties once ([`Readable::read`]),
//! and [`Reads`] derives both `read_current_state` (drift, observed state) and `import` (adopt an
//! existing resource) from it, so neither is written per type. A type declared with
//! `finds_created_in` also says which id a create with a given token took
//! ([`Readable::created_id`]), and [`Reads`] answers `find_created` by reading that id.

use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    FindCreatedResult, GetAttributeRequest, GetAttributeResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::does_not_exist;

/// A resource type whose live state one function reads.
#[async_trait]
pub trait Readable: ResourceProvider {
    /// The resource's live properties in template shape; `None` when it no longer exists.
    /// `what` names the resource in messages (`AWS::IAM::Role MyRole`).
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError>;

    /// The attributes an adopted resource reports (`Arn`, ...); none unless the type says.
    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        _physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(Map::new())
    }

    /// For a type whose physical id is the name its create took: the template property that
    /// names it (`None`: always generated) and the longest name the service takes. The
    /// default [`Readable::created_id`] answers that name.
    const CREATED_NAME: Option<(Option<&'static str>, usize)> = None;

    /// For a type declared with `finds_created_in`: the physical id of the resource a create
    /// with `request`'s token made, when one exists (the read that follows confirms it). By
    /// default the name the create took ([`Readable::CREATED_NAME`], [`created_name`]).
    async fn created_id(
        &self,
        _ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        match Self::CREATED_NAME {
            Some((property, max)) => Ok(created_name(request, property, max, false)),
            None => Err(ProviderError::unsupported(format!(
                "{what}: the type cannot be looked up by its create token"
            ))),
        }
    }
}

/// The name a create with `request`'s token took: the scope's `property` when the template
/// gave one, else the one generated from the stack, logical id and token as
/// [`crate::given_or_generated_name`] generates it. `None` when the request cannot tell (an
/// older host sent no stack name and the template gave none).
pub fn created_name(
    request: &FindCreatedRequest,
    property: Option<&str>,
    max: usize,
    lowercase: bool,
) -> Option<String> {
    if let Some(given) = property.and_then(|p| crate::string(request.properties.get(p))) {
        return Some(given);
    }
    if request.stack_name.is_empty() || request.token.is_empty() {
        return None;
    }
    Some(crate::generated_name(
        &request.stack_name,
        &request.logical_id,
        &request.token,
        max,
        lowercase,
        "",
    ))
}

/// Answers `find_created` for `provider`: the id its create with the token took, read back.
async fn find_created<T: Readable>(
    provider: &T,
    ctx: &PluginContext,
    request: Value,
) -> Result<Value, ProviderError> {
    let schema = provider.schema();
    let request: FindCreatedRequest = serde_json::from_value(request).map_err(|e| {
        ProviderError::validation(format!("{}: find_created: {e}", schema.type_name))
    })?;
    let what = what(&schema, &request.logical_id);
    let mut found = FindCreatedResult::default();
    if let Some(id) = provider.created_id(ctx, &what, &request).await? {
        let read = ReadCurrentStateRequest {
            logical_id: request.logical_id.clone(),
            physical_id: id.clone(),
            properties: request.properties.clone(),
        };
        if let Some(properties) = provider.read(ctx, &what, &read).await? {
            found = FindCreatedResult {
                physical_id: Some(id),
                properties,
            };
        }
    }
    serde_json::to_value(found).map_err(|e| ProviderError::other(e.to_string()))
}

/// A [`Readable`] type as a provider: create, update, delete and the rest are the type's own;
/// `read_current_state` and `import` come from its reader. Register `Reads<MyType>`.
#[derive(Debug, Default)]
pub struct Reads<T>(pub T);

fn what(schema: &ResourceTypeSchema, logical_id: &str) -> String {
    format!("{} {logical_id}", schema.type_name)
}

/// `AWS::IAM::Role` is in IAM.
fn service(type_name: &str) -> &str {
    type_name.split("::").nth(1).unwrap_or(type_name)
}

#[async_trait]
impl<T: Readable> ResourceProvider for Reads<T> {
    fn schema(&self) -> ResourceTypeSchema {
        self.0.schema()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        self.0.create(ctx, request).await
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        self.0.update(ctx, request).await
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        self.0.delete(ctx, request).await
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(&self.0.schema(), &request.logical_id);
        Ok(ReadCurrentStateResult {
            properties: self.0.read(ctx, &what, &request).await?,
        })
    }

    /// Adopting a resource is reading it: one that cannot be read is refused by name.
    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let schema = self.0.schema();
        let what = what(&schema, &request.logical_id);
        let read = ReadCurrentStateRequest {
            logical_id: request.logical_id,
            physical_id: request.physical_id,
            properties: request.properties,
        };
        // Both asked at once (two requests, one round trip's wait); when the resource turns
        // out not to exist, that wins over whatever the attribute read answered.
        let (found, attributes) = tokio::join!(
            self.0.read(ctx, &what, &read),
            self.0.attributes(ctx, &what, &read.physical_id)
        );
        if found?.is_none() {
            return Err(does_not_exist(
                &what,
                &read.physical_id,
                service(&schema.type_name),
            ));
        }
        Ok(CreateResult {
            attributes: attributes?,
            physical_id: read.physical_id,
            ..Default::default()
        })
    }

    async fn get_attribute(
        &self,
        ctx: &PluginContext,
        request: GetAttributeRequest,
    ) -> Result<GetAttributeResult, ProviderError> {
        self.0.get_attribute(ctx, request).await
    }

    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        operation: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if operation == operation::FIND_CREATED && !self.0.schema().find_scope.is_empty() {
            return find_created(&self.0, ctx, request).await;
        }
        self.0.invoke_other(ctx, operation, request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_is_the_type_names_second_part() {
        assert_eq!(service("AWS::IAM::Role"), "IAM");
        assert_eq!(service("Custom"), "Custom");
    }
}
