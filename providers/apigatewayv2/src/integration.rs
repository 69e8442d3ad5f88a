//! `AWS::ApiGatewayV2::Integration`: physical id `ApiId|IntegrationId`, `Ref` the integration
//! id. Integrations have no name or tag: the run after a crash looks in the API for the one of
//! the template's type and URI (CDK makes one per target); two such are refused, never guessed.

use cdkd_aws_common::{deleted_unless_failed, int, put, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::parameter_mapping::{
    request_parameters, request_shape, request_update, response_parameters, response_shape,
    response_update, tls, tls_shape,
};
use crate::{api_id, changed, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGatewayV2::Integration";

/// The settable properties beyond `ApiId`.
const SETTINGS: &[&str] = &[
    "IntegrationType",
    "IntegrationUri",
    "IntegrationMethod",
    "PayloadFormatVersion",
    "Description",
    "TimeoutInMillis",
    "ConnectionType",
    "ConnectionId",
    "CredentialsArn",
    "IntegrationSubtype",
    "RequestParameters",
    "ResponseParameters",
    "TlsConfig",
];

/// The `AWS::ApiGatewayV2::Integration` provider.
#[derive(Default)]
pub struct Integration;

fn attributes(id: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("IntegrationId".into(), json!(id));
    attributes
}

/// An integration in template shape.
fn template_shape(
    api: &str,
    i: &aws_sdk_apigatewayv2::types::Integration,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("ApiId".into(), json!(api));
    put(
        &mut props,
        "IntegrationType",
        i.integration_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut props,
        "IntegrationUri",
        i.integration_uri().map(Value::from),
    );
    put(
        &mut props,
        "IntegrationMethod",
        i.integration_method().map(Value::from),
    );
    put(
        &mut props,
        "PayloadFormatVersion",
        i.payload_format_version().map(Value::from),
    );
    put(
        &mut props,
        "Description",
        i.description().filter(|d| !d.is_empty()).map(Value::from),
    );
    put(
        &mut props,
        "TimeoutInMillis",
        i.timeout_in_millis().map(Value::from),
    );
    put(
        &mut props,
        "ConnectionType",
        i.connection_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut props,
        "ConnectionId",
        i.connection_id().map(Value::from),
    );
    put(
        &mut props,
        "CredentialsArn",
        i.credentials_arn().map(Value::from),
    );
    put(
        &mut props,
        "IntegrationSubtype",
        i.integration_subtype().map(Value::from),
    );
    put(
        &mut props,
        "RequestParameters",
        request_shape(i.request_parameters()),
    );
    put(
        &mut props,
        "ResponseParameters",
        response_shape(i.response_parameters(), template.get("ResponseParameters")),
    );
    put(&mut props, "TlsConfig", i.tls_config().map(tls_shape));
    props
}

#[async_trait]
impl ResourceProvider for Integration {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["ApiId"])
            .handles(SETTINGS)
            .create_only(&["ApiId"])
            .read_and_import()
            .composite_id(&["ApiId", "IntegrationId"], &[&["ApiId"], &[]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["ApiId", "IntegrationType", "IntegrationUri"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let api = api_id(props, &what)?;
        let kind = require_str(props, "IntegrationType", &what)?;
        let created = client(ctx)
            .await?
            .create_integration()
            .api_id(api)
            .integration_type(kind.into())
            .set_integration_uri(text(props.get("IntegrationUri")))
            .set_integration_method(text(props.get("IntegrationMethod")))
            .set_payload_format_version(text(props.get("PayloadFormatVersion")))
            .set_description(text(props.get("Description")))
            .set_timeout_in_millis(int(props.get("TimeoutInMillis")))
            .set_connection_type(text(props.get("ConnectionType")).map(|t| t.as_str().into()))
            .set_connection_id(text(props.get("ConnectionId")))
            .set_credentials_arn(text(props.get("CredentialsArn")))
            .set_integration_subtype(text(props.get("IntegrationSubtype")))
            .set_request_parameters(request_parameters(props.get("RequestParameters")))
            .set_response_parameters(response_parameters(props.get("ResponseParameters")))
            .set_tls_config(tls(props.get("TlsConfig")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateIntegration in {api}")))?;
        let id = created.integration_id().ok_or_else(|| {
            ProviderError::other(format!(
                "{what}: CreateIntegration returned no IntegrationId"
            ))
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
            let cleared = |key: &str| changed(before, after, key).then(String::new);
            client(ctx)
                .await?
                .update_integration()
                .api_id(api)
                .integration_id(id)
                .set_integration_type(text(after.get("IntegrationType")).map(|t| t.as_str().into()))
                .set_integration_uri(text(after.get("IntegrationUri")))
                .set_integration_method(text(after.get("IntegrationMethod")))
                .set_payload_format_version(text(after.get("PayloadFormatVersion")))
                .set_description(text(after.get("Description")).or_else(|| cleared("Description")))
                .set_timeout_in_millis(int(after.get("TimeoutInMillis")))
                .set_connection_type(text(after.get("ConnectionType")).map(|t| t.as_str().into()))
                .set_connection_id(text(after.get("ConnectionId")))
                .set_credentials_arn(
                    text(after.get("CredentialsArn")).or_else(|| cleared("CredentialsArn")),
                )
                .set_integration_subtype(text(after.get("IntegrationSubtype")))
                .set_request_parameters(
                    // An AWS service integration's parameters are its action's: AWS wants all
                    // of them on every update and refuses an empty value (Terraform does the
                    // same); a mapping's are merged, so only what changed goes.
                    if after.contains_key("IntegrationSubtype") {
                        request_parameters(after.get("RequestParameters"))
                    } else {
                        request_update(
                            before.get("RequestParameters"),
                            after.get("RequestParameters"),
                        )
                    },
                )
                .set_response_parameters(response_update(
                    before.get("ResponseParameters"),
                    after.get("ResponseParameters"),
                ))
                .set_tls_config(tls(after.get("TlsConfig")).or_else(|| {
                    // A dropped setting is cleared, not kept.
                    changed(before, after, "TlsConfig")
                        .then(|| aws_sdk_apigatewayv2::types::TlsConfigInput::builder().build())
                }))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateIntegration {id} in {api}")))?;
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
                .delete_integration()
                .api_id(api)
                .integration_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteIntegration {id} in {api}"))),
        )
    }
}

#[async_trait]
impl Readable for Integration {
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
                .get_integration()
                .api_id(api)
                .integration_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetIntegration {id} in {api}"))),
        )?;
        Ok(answer.map(|i| {
            let integration = aws_sdk_apigatewayv2::types::Integration::builder()
                .set_integration_type(i.integration_type().cloned())
                .set_integration_uri(i.integration_uri().map(ToString::to_string))
                .set_integration_method(i.integration_method().map(ToString::to_string))
                .set_payload_format_version(i.payload_format_version().map(ToString::to_string))
                .set_description(i.description().map(ToString::to_string))
                .set_timeout_in_millis(i.timeout_in_millis())
                .set_connection_type(i.connection_type().cloned())
                .set_connection_id(i.connection_id().map(ToString::to_string))
                .set_credentials_arn(i.credentials_arn().map(ToString::to_string))
                .set_integration_subtype(i.integration_subtype().map(ToString::to_string))
                .set_request_parameters(i.request_parameters().cloned())
                .set_response_parameters(i.response_parameters().cloned())
                .set_tls_config(i.tls_config().cloned())
                .build();
            template_shape(api, &integration, &request.properties)
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

    /// The one integration of the template's type and URI in its API.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let props = &request.properties;
        let (Some(api), Some(kind)) =
            (text(props.get("ApiId")), text(props.get("IntegrationType")))
        else {
            return Ok(None);
        };
        let uri = text(props.get("IntegrationUri"));
        let apigw = client(ctx).await?;
        let mut ids = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let Some(page) = found(
                apigw
                    .get_integrations()
                    .api_id(&api)
                    .set_next_token(next.take())
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: GetIntegrations in {api}"))),
            )?
            else {
                return Ok(None);
            };
            ids.extend(
                page.items()
                    .iter()
                    .filter(|i| i.integration_type().map(|t| t.as_str()) == Some(kind.as_str()))
                    .filter(|i| i.integration_uri().map(ToString::to_string) == uri)
                    .filter_map(|i| i.integration_id().map(ToString::to_string)),
            );
            match page.next_token() {
                Some(token) if !token.is_empty() => next = Some(token.to_string()),
                _ => break,
            }
        }
        ChildId::only(
            what,
            &api,
            &format!("integrations of type {kind} and that URI"),
            &ids,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_integration_reads_back_in_template_shape() {
        let integration = aws_sdk_apigatewayv2::types::Integration::builder()
            .integration_type("AWS_PROXY".into())
            .integration_uri("arn:aws:lambda:us-east-1:1:function:f")
            .payload_format_version("2.0")
            .description("")
            .build();
        assert_eq!(
            Value::Object(template_shape("a1", &integration, &Map::new())),
            json!({
                "ApiId": "a1",
                "IntegrationType": "AWS_PROXY",
                "IntegrationUri": "arn:aws:lambda:us-east-1:1:function:f",
                "PayloadFormatVersion": "2.0",
            })
        );
    }
}
