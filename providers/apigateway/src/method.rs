//! `AWS::ApiGateway::Method` with its `Integration` (Lambda proxy and the rest, integration
//! responses included) and `MethodResponses`: physical id (and `Ref`)
//! `RestApiId|ResourceId|HttpMethod`, which the template names, so the run after a crash looks
//! the method up there. A change rebuilds the method in place (DeleteMethod, then PutMethod,
//! PutIntegration and the responses): callers see a REST API's methods only through a
//! deployment, which CDK makes anew after any method change, so the rebuild is never live.

use std::collections::HashMap;

use aws_sdk_apigateway::types::{Integration, MethodResponse};
use cdkd_aws_common::{
    deleted_unless_failed, flag, int, put, require_str, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changed, client, failed, flag_map, found, map_shape, string_map};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::Method";

/// Every property but the three that name the method.
const SETTINGS: &[&str] = &[
    "ApiKeyRequired",
    "AuthorizationScopes",
    "AuthorizationType",
    "AuthorizerId",
    "Integration",
    "MethodResponses",
    "OperationName",
    "RequestModels",
    "RequestParameters",
    "RequestValidatorId",
];

/// The `AWS::ApiGateway::Method` provider.
#[derive(Default)]
pub struct Method;

/// `RestApiId|ResourceId|HttpMethod`, split; a bare id is refused.
fn split(physical_id: &str, what: &str) -> Result<(String, String, String), ProviderError> {
    let parts: Vec<&str> = physical_id.split('|').collect();
    match parts.as_slice() {
        [api, resource, method] => Ok((api.to_string(), resource.to_string(), method.to_string())),
        _ => Err(ProviderError::validation(format!(
            "{what}: physical id {physical_id} is not RestApiId|ResourceId|HttpMethod"
        ))),
    }
}

/// Puts the method, its integration and their responses as the template has them.
async fn put_method(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    (api, resource, method): (&str, &str, &str),
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let at = format!("{method} on {resource} in {api}");
    apigw
        .put_method()
        .rest_api_id(api)
        .resource_id(resource)
        .http_method(method)
        .authorization_type(text(props.get("AuthorizationType")).unwrap_or_else(|| "NONE".into()))
        .set_authorizer_id(text(props.get("AuthorizerId")))
        .set_api_key_required(flag(props.get("ApiKeyRequired")))
        .set_operation_name(text(props.get("OperationName")))
        .set_request_parameters(flag_map(props.get("RequestParameters")))
        .set_request_models(string_map(props.get("RequestModels")))
        .set_request_validator_id(text(props.get("RequestValidatorId")))
        .set_authorization_scopes(strings(props.get("AuthorizationScopes")))
        .send()
        .await
        .map_err(failed!(format!("{what}: PutMethod {at}")))?;
    for response in props
        .get("MethodResponses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let code = require_str(
            response.as_object().unwrap_or(&Map::new()),
            "StatusCode",
            what,
        )?
        .to_string();
        apigw
            .put_method_response()
            .rest_api_id(api)
            .resource_id(resource)
            .http_method(method)
            .status_code(&code)
            .set_response_parameters(flag_map(response.get("ResponseParameters")))
            .set_response_models(string_map(response.get("ResponseModels")))
            .send()
            .await
            .map_err(failed!(format!("{what}: PutMethodResponse {code} of {at}")))?;
    }
    let Some(integration) = props.get("Integration").filter(|v| v.is_object()) else {
        return Ok(());
    };
    let get = |key: &str| integration.get(key);
    apigw
        .put_integration()
        .rest_api_id(api)
        .resource_id(resource)
        .http_method(method)
        .set_type(text(get("Type")).map(|t| t.as_str().into()))
        .set_integration_http_method(text(get("IntegrationHttpMethod")))
        .set_uri(text(get("Uri")))
        .set_connection_type(text(get("ConnectionType")).map(|t| t.as_str().into()))
        .set_connection_id(text(get("ConnectionId")))
        .set_credentials(text(get("Credentials")))
        .set_request_parameters(string_map(get("RequestParameters")))
        .set_request_templates(string_map(get("RequestTemplates")))
        .set_passthrough_behavior(text(get("PassthroughBehavior")))
        .set_cache_namespace(text(get("CacheNamespace")))
        .set_cache_key_parameters(strings(get("CacheKeyParameters")))
        .set_content_handling(text(get("ContentHandling")).map(|t| t.as_str().into()))
        .set_timeout_in_millis(int(get("TimeoutInMillis")))
        .set_response_transfer_mode(text(get("ResponseTransferMode")).map(|t| t.as_str().into()))
        .set_integration_target(text(get("IntegrationTarget")))
        .send()
        .await
        .map_err(failed!(format!("{what}: PutIntegration of {at}")))?;
    for response in get("IntegrationResponses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let code = require_str(
            response.as_object().unwrap_or(&Map::new()),
            "StatusCode",
            what,
        )?
        .to_string();
        apigw
            .put_integration_response()
            .rest_api_id(api)
            .resource_id(resource)
            .http_method(method)
            .status_code(&code)
            .set_selection_pattern(text(response.get("SelectionPattern")))
            .set_response_parameters(string_map(response.get("ResponseParameters")))
            .set_response_templates(string_map(response.get("ResponseTemplates")))
            .set_content_handling(text(response.get("ContentHandling")).map(|t| t.as_str().into()))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: PutIntegrationResponse {code} of {at}"
            )))?;
    }
    Ok(())
}

/// A live integration in template shape.
fn integration_shape(i: &Integration) -> Value {
    let mut shape = Map::new();
    put(&mut shape, "Type", i.r#type().map(|t| json!(t.as_str())));
    put(
        &mut shape,
        "IntegrationHttpMethod",
        i.http_method().map(Value::from),
    );
    put(&mut shape, "Uri", i.uri().map(Value::from));
    put(
        &mut shape,
        "ConnectionType",
        i.connection_type()
            .filter(|t| t.as_str() != "INTERNET")
            .map(|t| json!(t.as_str())),
    );
    put(
        &mut shape,
        "ConnectionId",
        i.connection_id().map(Value::from),
    );
    put(&mut shape, "Credentials", i.credentials().map(Value::from));
    put(
        &mut shape,
        "RequestParameters",
        map_shape(i.request_parameters()),
    );
    put(
        &mut shape,
        "RequestTemplates",
        map_shape(i.request_templates()),
    );
    put(
        &mut shape,
        "PassthroughBehavior",
        i.passthrough_behavior().map(Value::from),
    );
    put(
        &mut shape,
        "CacheNamespace",
        i.cache_namespace().map(Value::from),
    );
    if !i.cache_key_parameters().is_empty() {
        shape.insert("CacheKeyParameters".into(), json!(i.cache_key_parameters()));
    }
    put(
        &mut shape,
        "ContentHandling",
        i.content_handling().map(|t| json!(t.as_str())),
    );
    if i.timeout_in_millis() != 0 && i.timeout_in_millis() != 29000 {
        shape.insert("TimeoutInMillis".into(), json!(i.timeout_in_millis()));
    }
    put(
        &mut shape,
        "IntegrationTarget",
        i.integration_target().map(Value::from),
    );
    let mut responses: Vec<Value> = i
        .integration_responses()
        .into_iter()
        .flatten()
        .map(|(code, r)| {
            let mut response = Map::new();
            response.insert("StatusCode".into(), json!(code));
            put(
                &mut response,
                "SelectionPattern",
                r.selection_pattern().map(Value::from),
            );
            put(
                &mut response,
                "ResponseParameters",
                map_shape(r.response_parameters()),
            );
            put(
                &mut response,
                "ResponseTemplates",
                map_shape(r.response_templates()),
            );
            put(
                &mut response,
                "ContentHandling",
                r.content_handling().map(|t| json!(t.as_str())),
            );
            Value::Object(response)
        })
        .collect();
    responses.sort_by_key(|r| r["StatusCode"].as_str().unwrap_or_default().to_string());
    if !responses.is_empty() {
        shape.insert("IntegrationResponses".into(), Value::Array(responses));
    }
    Value::Object(shape)
}

/// Live method responses in template shape, by status code.
fn method_responses_shape(responses: Option<&HashMap<String, MethodResponse>>) -> Option<Value> {
    let mut list: Vec<Value> = responses
        .into_iter()
        .flatten()
        .map(|(code, r)| {
            let mut response = Map::new();
            response.insert("StatusCode".into(), json!(code));
            put(
                &mut response,
                "ResponseParameters",
                map_shape(r.response_parameters()),
            );
            put(
                &mut response,
                "ResponseModels",
                map_shape(r.response_models()),
            );
            Value::Object(response)
        })
        .collect();
    list.sort_by_key(|r| r["StatusCode"].as_str().unwrap_or_default().to_string());
    (!list.is_empty()).then_some(Value::Array(list))
}

#[async_trait]
impl ResourceProvider for Method {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["RestApiId", "ResourceId", "HttpMethod"])
            .handles(SETTINGS)
            .create_only(&["RestApiId", "ResourceId", "HttpMethod"])
            .read_and_import()
            .composite_id(
                &["RestApiId", "ResourceId", "HttpMethod"],
                &[&["RestApiId"], &["ResourceId"], &["HttpMethod"]],
            )
            .finds_created_in(&["RestApiId", "ResourceId", "HttpMethod"])
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
        let resource = require_str(props, "ResourceId", &what)?;
        let method = require_str(props, "HttpMethod", &what)?;
        let apigw = client(ctx).await?;
        put_method(&apigw, &what, (api, resource, method), props).await?;
        Ok(CreateResult {
            physical_id: format!("{api}|{resource}|{method}"),
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
        let (api, resource, method) = split(&request.physical_id, &what)?;
        if SETTINGS.iter().any(|k| changed(before, after, k)) {
            let apigw = client(ctx).await?;
            // Gone already (an earlier rebuild stopped half-way): it is put again below.
            found(
                apigw
                    .delete_method()
                    .rest_api_id(&api)
                    .resource_id(&resource)
                    .http_method(&method)
                    .send()
                    .await
                    .map_err(failed!(format!(
                        "{what}: DeleteMethod {method} on {resource} in {api}"
                    ))),
            )?;
            put_method(&apigw, &what, (&api, &resource, &method), after).await?;
        }
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
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
        let (api, resource, method) = split(&request.physical_id, &what)?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_method()
                .rest_api_id(&api)
                .resource_id(&resource)
                .http_method(&method)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteMethod {method} on {resource} in {api}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for Method {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (api, resource, method) = split(&request.physical_id, what)?;
        let Some(m) = found(
            client(ctx)
                .await?
                .get_method()
                .rest_api_id(&api)
                .resource_id(&resource)
                .http_method(&method)
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: GetMethod {method} on {resource} in {api}"
                ))),
        )?
        else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert("RestApiId".into(), json!(api));
        props.insert("ResourceId".into(), json!(resource));
        props.insert("HttpMethod".into(), json!(method));
        put(
            &mut props,
            "AuthorizationType",
            m.authorization_type().map(Value::from),
        );
        put(
            &mut props,
            "AuthorizerId",
            m.authorizer_id().map(Value::from),
        );
        if m.api_key_required() == Some(true) {
            props.insert("ApiKeyRequired".into(), json!(true));
        }
        put(
            &mut props,
            "OperationName",
            m.operation_name().map(Value::from),
        );
        put(
            &mut props,
            "RequestParameters",
            map_shape(m.request_parameters()),
        );
        put(&mut props, "RequestModels", map_shape(m.request_models()));
        put(
            &mut props,
            "RequestValidatorId",
            m.request_validator_id().map(Value::from),
        );
        if !m.authorization_scopes().is_empty() {
            props.insert(
                "AuthorizationScopes".into(),
                json!(m.authorization_scopes()),
            );
        }
        put(
            &mut props,
            "Integration",
            m.method_integration().map(integration_shape),
        );
        put(
            &mut props,
            "MethodResponses",
            method_responses_shape(m.method_responses()),
        );
        Ok(Some(props))
    }

    /// The template names the method: its id is those three.
    async fn created_id(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let props = &request.properties;
        Ok(
            match (
                text(props.get("RestApiId")),
                text(props.get("ResourceId")),
                text(props.get("HttpMethod")),
            ) {
                (Some(a), Some(r), Some(m)) => Some(format!("{a}|{r}|{m}")),
                _ => None,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_apigateway::types::IntegrationResponse;

    #[test]
    fn a_lambda_proxy_integration_reads_back_in_template_shape() {
        let integration = Integration::builder()
            .r#type("AWS_PROXY".into())
            .http_method("POST")
            .uri("arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:f/invocations")
            .connection_type("INTERNET".into())
            .timeout_in_millis(29000)
            .passthrough_behavior("WHEN_NO_MATCH")
            .integration_responses(
                "200",
                IntegrationResponse::builder()
                    .status_code("200")
                    .response_templates("application/json", "")
                    .build(),
            )
            .build();
        assert_eq!(
            integration_shape(&integration),
            json!({
                "Type": "AWS_PROXY",
                "IntegrationHttpMethod": "POST",
                "Uri": "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:f/invocations",
                "PassthroughBehavior": "WHEN_NO_MATCH",
                "IntegrationResponses": [{"StatusCode": "200", "ResponseTemplates": {"application/json": ""}}],
            })
        );
        let responses: HashMap<String, MethodResponse> = [(
            "200".to_string(),
            MethodResponse::builder()
                .status_code("200")
                .response_models("application/json", "Empty")
                .build(),
        )]
        .into();
        assert_eq!(
            method_responses_shape(Some(&responses)),
            Some(json!([{"StatusCode": "200", "ResponseModels": {"application/json": "Empty"}}]))
        );
    }

    #[test]
    fn the_method_is_named_by_its_api_resource_and_verb() {
        assert_eq!(
            split("a|r|GET", "w").unwrap(),
            ("a".into(), "r".into(), "GET".into())
        );
        assert!(split("a|r", "w").is_err());
        assert_eq!(
            Method.schema().find_scope,
            ["RestApiId", "ResourceId", "HttpMethod"]
        );
    }
}
