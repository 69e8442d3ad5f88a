//! `AWS::ApiGateway::Authorizer` (Lambda token/request authorizers and Cognito user pools):
//! physical id `RestApiId|AuthorizerId`, `Ref` and attribute `AuthorizerId` the authorizer's
//! id. Its name is required and the run after a crash looks it up by name in its API.

use cdkd_aws_common::{
    deleted_unless_failed, int, put, require_str, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::{replace, set_ops_in_value};
use crate::{attributes, changed, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::Authorizer";

/// Scalar settings and their patch paths.
const SCALARS: &[(&str, &str)] = &[
    ("Name", "/name"),
    ("Type", "/type"),
    ("AuthType", "/authType"),
    ("AuthorizerUri", "/authorizerUri"),
    ("AuthorizerCredentials", "/authorizerCredentials"),
    ("IdentitySource", "/identitySource"),
    (
        "IdentityValidationExpression",
        "/identityValidationExpression",
    ),
    (
        "AuthorizerResultTtlInSeconds",
        "/authorizerResultTtlInSeconds",
    ),
];

/// The `AWS::ApiGateway::Authorizer` provider.
#[derive(Default)]
pub struct Authorizer;

#[async_trait]
impl ResourceProvider for Authorizer {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["RestApiId", "ProviderARNs"])
            .handles(&SCALARS.iter().map(|(k, _)| *k).collect::<Vec<_>>())
            .create_only(&["RestApiId"])
            .read_and_import()
            .composite_id(&["RestApiId", "AuthorizerId"], &[&["RestApiId"], &[]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["RestApiId", "Name"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let api = require_str(props, "RestApiId", &what)?;
        let name = require_str(props, "Name", &what)?;
        let created = client(ctx)
            .await?
            .create_authorizer()
            .rest_api_id(api)
            .name(name)
            .set_type(text(props.get("Type")).map(|t| t.as_str().into()))
            .set_provider_arns(strings(props.get("ProviderARNs")))
            .set_auth_type(text(props.get("AuthType")))
            .set_authorizer_uri(text(props.get("AuthorizerUri")))
            .set_authorizer_credentials(text(props.get("AuthorizerCredentials")))
            .set_identity_source(text(props.get("IdentitySource")))
            .set_identity_validation_expression(text(props.get("IdentityValidationExpression")))
            .set_authorizer_result_ttl_in_seconds(int(props.get("AuthorizerResultTtlInSeconds")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateAuthorizer {name} in {api}")))?;
        let id = created.id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateAuthorizer returned no id"))
        })?;
        Ok(CreateResult {
            physical_id: ChildId::join(api, id),
            attributes: attributes(&[("AuthorizerId", id)]),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let ChildId { parent: api, id } =
            ChildId::parse(&request.physical_id, after, "RestApiId", &what)?;
        let mut ops: Vec<_> = SCALARS
            .iter()
            .filter(|(k, _)| changed(before, after, k))
            .map(|(k, path)| replace(path, text(after.get(*k))))
            .collect();
        if changed(before, after, "ProviderARNs") {
            ops.extend(set_ops_in_value(
                "/providerARNs",
                &strings(before.get("ProviderARNs")).unwrap_or_default(),
                &strings(after.get("ProviderARNs")).unwrap_or_default(),
            ));
        }
        if !ops.is_empty() {
            client(ctx)
                .await?
                .update_authorizer()
                .rest_api_id(api)
                .authorizer_id(id)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateAuthorizer {id} in {api}")))?;
        }
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes: attributes(&[("AuthorizerId", id)]),
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let ChildId { parent: api, id } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "RestApiId",
            &what,
        )?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_authorizer()
                .rest_api_id(api)
                .authorizer_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteAuthorizer {id} in {api}"))),
        )
    }
}

#[async_trait]
impl Readable for Authorizer {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId { parent: api, id } =
            ChildId::parse(&request.physical_id, &request.properties, "RestApiId", what)?;
        let live = found(
            client(ctx)
                .await?
                .get_authorizer()
                .rest_api_id(api)
                .authorizer_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetAuthorizer {id} in {api}"))),
        )?;
        Ok(live.map(|a| {
            let mut props = Map::new();
            props.insert("RestApiId".into(), json!(api));
            put(&mut props, "Name", a.name().map(Value::from));
            put(&mut props, "Type", a.r#type().map(|t| json!(t.as_str())));
            if !a.provider_arns().is_empty() {
                props.insert("ProviderARNs".into(), json!(a.provider_arns()));
            }
            put(&mut props, "AuthType", a.auth_type().map(Value::from));
            put(
                &mut props,
                "AuthorizerUri",
                a.authorizer_uri().map(Value::from),
            );
            put(
                &mut props,
                "AuthorizerCredentials",
                a.authorizer_credentials().map(Value::from),
            );
            put(
                &mut props,
                "IdentitySource",
                a.identity_source().map(Value::from),
            );
            put(
                &mut props,
                "IdentityValidationExpression",
                a.identity_validation_expression().map(Value::from),
            );
            put(
                &mut props,
                "AuthorizerResultTtlInSeconds",
                a.authorizer_result_ttl_in_seconds().map(Value::from),
            );
            props
        }))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let empty = Map::new();
        let ChildId { parent: _, id } = ChildId::parse(physical_id, &empty, "RestApiId", what)?;
        Ok(attributes(&[("AuthorizerId", id)]))
    }

    /// The authorizer of the template's name in its API.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(api), Some(name)) = (
            text(request.properties.get("RestApiId")),
            text(request.properties.get("Name")),
        ) else {
            return Ok(None);
        };
        let apigw = client(ctx).await?;
        let Some(page) = found(
            apigw
                .get_authorizers()
                .rest_api_id(&api)
                .limit(500)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetAuthorizers in {api}"))),
        )?
        else {
            return Ok(None);
        };
        let ids: Vec<&str> = page
            .items()
            .iter()
            .filter(|a| a.name() == Some(name.as_str()))
            .filter_map(|a| a.id())
            .collect();
        ChildId::only(what, &api, &format!("authorizers named {name}"), &ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authorizer_is_found_by_its_name_in_its_api() {
        let schema = Authorizer.schema();
        assert_eq!(schema.find_scope, ["RestApiId", "Name"]);
        assert_eq!(schema.handled_properties.len(), 10);
    }
}
