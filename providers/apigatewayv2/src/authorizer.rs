//! `AWS::ApiGatewayV2::Authorizer` (JWT and Lambda `REQUEST` authorizers): physical id
//! `ApiId|AuthorizerId`, `Ref` the authorizer id. The run after a crash finds it by its `Name`
//! in its API; two of one name are refused, never guessed.

use aws_sdk_apigatewayv2::types::JwtConfiguration;
use cdkd_aws_common::{
    deleted_unless_failed, flag, int, put, require_str, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{api_id, changed, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGatewayV2::Authorizer";

/// The settable properties beyond `ApiId`.
const SETTINGS: &[&str] = &[
    "Name",
    "AuthorizerType",
    "IdentitySource",
    "JwtConfiguration",
    "AuthorizerUri",
    "AuthorizerPayloadFormatVersion",
    "AuthorizerResultTtlInSeconds",
    "EnableSimpleResponses",
    "AuthorizerCredentialsArn",
    "IdentityValidationExpression",
];

/// The `AWS::ApiGatewayV2::Authorizer` provider.
#[derive(Default)]
pub struct Authorizer;

fn attributes(id: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("AuthorizerId".into(), json!(id));
    attributes
}

fn jwt(value: &Value) -> JwtConfiguration {
    JwtConfiguration::builder()
        .set_audience(strings(value.get("Audience")))
        .set_issuer(text(value.get("Issuer")))
        .build()
}

/// An authorizer in template shape.
fn template_shape(api: &str, a: &aws_sdk_apigatewayv2::types::Authorizer) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("ApiId".into(), json!(api));
    put(&mut props, "Name", a.name().map(Value::from));
    put(
        &mut props,
        "AuthorizerType",
        a.authorizer_type().map(|t| json!(t.as_str())),
    );
    if !a.identity_source().is_empty() {
        props.insert("IdentitySource".into(), json!(a.identity_source()));
    }
    if let Some(config) = a.jwt_configuration() {
        let mut shape = Map::new();
        if !config.audience().is_empty() {
            shape.insert("Audience".into(), json!(config.audience()));
        }
        put(&mut shape, "Issuer", config.issuer().map(Value::from));
        props.insert("JwtConfiguration".into(), Value::Object(shape));
    }
    put(
        &mut props,
        "AuthorizerUri",
        a.authorizer_uri().map(Value::from),
    );
    put(
        &mut props,
        "AuthorizerPayloadFormatVersion",
        a.authorizer_payload_format_version().map(Value::from),
    );
    put(
        &mut props,
        "AuthorizerResultTtlInSeconds",
        a.authorizer_result_ttl_in_seconds().map(Value::from),
    );
    put(
        &mut props,
        "EnableSimpleResponses",
        a.enable_simple_responses().map(Value::from),
    );
    put(
        &mut props,
        "AuthorizerCredentialsArn",
        a.authorizer_credentials_arn().map(Value::from),
    );
    put(
        &mut props,
        "IdentityValidationExpression",
        a.identity_validation_expression().map(Value::from),
    );
    props
}

#[async_trait]
impl ResourceProvider for Authorizer {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["ApiId"])
            .handles(SETTINGS)
            .create_only(&["ApiId"])
            .read_and_import()
            .composite_id(&["ApiId", "AuthorizerId"], &[&["ApiId"], &[]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["ApiId", "Name"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let p = &request.properties;
        let api = api_id(p, &what)?;
        let name = require_str(p, "Name", &what)?;
        let kind = require_str(p, "AuthorizerType", &what)?;
        let created = client(ctx)
            .await?
            .create_authorizer()
            .api_id(api)
            .name(name)
            .authorizer_type(kind.into())
            .set_identity_source(strings(p.get("IdentitySource")))
            .set_jwt_configuration(p.get("JwtConfiguration").filter(|v| v.is_object()).map(jwt))
            .set_authorizer_uri(text(p.get("AuthorizerUri")))
            .set_authorizer_payload_format_version(text(p.get("AuthorizerPayloadFormatVersion")))
            .set_authorizer_result_ttl_in_seconds(int(p.get("AuthorizerResultTtlInSeconds")))
            .set_enable_simple_responses(flag(p.get("EnableSimpleResponses")))
            .set_authorizer_credentials_arn(text(p.get("AuthorizerCredentialsArn")))
            .set_identity_validation_expression(text(p.get("IdentityValidationExpression")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateAuthorizer {name} in {api}")))?;
        let id = created.authorizer_id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateAuthorizer returned no AuthorizerId"))
        })?;
        Ok(CreateResult {
            physical_id: ChildId::join(api, id),
            attributes: attributes(id),
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
            ChildId::parse(&request.physical_id, after, "ApiId", &what)?;
        if SETTINGS.iter().any(|k| changed(before, after, k)) {
            let p = after;
            client(ctx)
                .await?
                .update_authorizer()
                .api_id(api)
                .authorizer_id(id)
                .set_name(text(p.get("Name")))
                .set_authorizer_type(text(p.get("AuthorizerType")).map(|t| t.as_str().into()))
                .set_identity_source(strings(p.get("IdentitySource")))
                .set_jwt_configuration(p.get("JwtConfiguration").filter(|v| v.is_object()).map(jwt))
                .set_authorizer_uri(text(p.get("AuthorizerUri")))
                .set_authorizer_payload_format_version(text(
                    p.get("AuthorizerPayloadFormatVersion"),
                ))
                .set_authorizer_result_ttl_in_seconds(int(p.get("AuthorizerResultTtlInSeconds")))
                .set_enable_simple_responses(flag(p.get("EnableSimpleResponses")))
                .set_authorizer_credentials_arn(text(p.get("AuthorizerCredentialsArn")))
                .set_identity_validation_expression(text(p.get("IdentityValidationExpression")))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateAuthorizer {id} in {api}")))?;
        }
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes: attributes(id),
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
        let ChildId { parent: api, id } =
            ChildId::parse(&request.physical_id, &request.properties, "ApiId", &what)?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_authorizer()
                .api_id(api)
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
            ChildId::parse(&request.physical_id, &request.properties, "ApiId", what)?;
        let answer = found(
            client(ctx)
                .await?
                .get_authorizer()
                .api_id(api)
                .authorizer_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetAuthorizer {id} in {api}"))),
        )?;
        Ok(answer.map(|a| {
            let authorizer = aws_sdk_apigatewayv2::types::Authorizer::builder()
                .set_name(a.name().map(ToString::to_string))
                .set_authorizer_type(a.authorizer_type().cloned())
                .set_identity_source(Some(a.identity_source().to_vec()))
                .set_jwt_configuration(a.jwt_configuration().cloned())
                .set_authorizer_uri(a.authorizer_uri().map(ToString::to_string))
                .set_authorizer_payload_format_version(
                    a.authorizer_payload_format_version()
                        .map(ToString::to_string),
                )
                .set_authorizer_result_ttl_in_seconds(a.authorizer_result_ttl_in_seconds())
                .set_enable_simple_responses(a.enable_simple_responses())
                .set_authorizer_credentials_arn(
                    a.authorizer_credentials_arn().map(ToString::to_string),
                )
                .set_identity_validation_expression(
                    a.identity_validation_expression().map(ToString::to_string),
                )
                .build();
            template_shape(api, &authorizer)
        }))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let empty = Map::new();
        let ChildId { id, .. } = ChildId::parse(physical_id, &empty, "ApiId", what)?;
        Ok(attributes(id))
    }

    /// The authorizer of the template's name in its API.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(api), Some(name)) = (
            text(request.properties.get("ApiId")),
            text(request.properties.get("Name")),
        ) else {
            return Ok(None);
        };
        let Some(page) = found(
            client(ctx)
                .await?
                .get_authorizers()
                .api_id(&api)
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
            .filter_map(|a| a.authorizer_id())
            .collect();
        ChildId::only(what, &api, &format!("authorizers named {name}"), &ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jwt_authorizer_reads_back_in_template_shape() {
        let template = json!({"Audience": ["client"], "Issuer": "https://issuer.example.com"});
        let authorizer = aws_sdk_apigatewayv2::types::Authorizer::builder()
            .name("jwt")
            .authorizer_type("JWT".into())
            .identity_source("$request.header.Authorization")
            .jwt_configuration(jwt(&template))
            .build();
        assert_eq!(
            Value::Object(template_shape("a1", &authorizer)),
            json!({
                "ApiId": "a1",
                "Name": "jwt",
                "AuthorizerType": "JWT",
                "IdentitySource": ["$request.header.Authorization"],
                "JwtConfiguration": template,
            })
        );
    }
}
