//! `AWS::ApiGatewayV2::Route`: physical id `ApiId|RouteId`, `Ref` the route id. A route key
//! is unique in its API, so the run after a crash finds the route by its key there.

use cdkd_aws_common::{
    deleted_unless_failed, flag, put, require_str, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{api_id, changed, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGatewayV2::Route";

/// The settable properties beyond `ApiId`.
const SETTINGS: &[&str] = &[
    "RouteKey",
    "Target",
    "AuthorizationType",
    "AuthorizerId",
    "AuthorizationScopes",
    "ApiKeyRequired",
    "OperationName",
];

/// The `AWS::ApiGatewayV2::Route` provider.
#[derive(Default)]
pub struct Route;

fn attributes(route_id: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("RouteId".into(), json!(route_id));
    attributes
}

/// A route in template shape.
fn template_shape(api: &str, route: &aws_sdk_apigatewayv2::types::Route) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("ApiId".into(), json!(api));
    put(&mut props, "RouteKey", route.route_key().map(Value::from));
    put(&mut props, "Target", route.target().map(Value::from));
    put(
        &mut props,
        "AuthorizationType",
        route.authorization_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut props,
        "AuthorizerId",
        route.authorizer_id().map(Value::from),
    );
    if !route.authorization_scopes().is_empty() {
        props.insert(
            "AuthorizationScopes".into(),
            json!(route.authorization_scopes()),
        );
    }
    if route.api_key_required() == Some(true) {
        props.insert("ApiKeyRequired".into(), json!(true));
    }
    put(
        &mut props,
        "OperationName",
        route.operation_name().map(Value::from),
    );
    props
}

/// The API's routes, every page.
async fn routes(
    apigw: &aws_sdk_apigatewayv2::Client,
    what: &str,
    api: &str,
) -> Result<Option<Vec<aws_sdk_apigatewayv2::types::Route>>, ProviderError> {
    let mut all = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let Some(page) = found(
            apigw
                .get_routes()
                .api_id(api)
                .set_next_token(next.take())
                .send()
                .await
                .map_err(failed!(format!("{what}: GetRoutes in {api}"))),
        )?
        else {
            return Ok(None);
        };
        all.extend(page.items().iter().cloned());
        match page.next_token() {
            Some(token) if !token.is_empty() => next = Some(token.to_string()),
            _ => return Ok(Some(all)),
        }
    }
}

#[async_trait]
impl ResourceProvider for Route {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["ApiId"])
            .handles(SETTINGS)
            .create_only(&["ApiId"])
            .read_and_import()
            .composite_id(&["ApiId", "RouteId"], &[&["ApiId"], &[]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["ApiId", "RouteKey"])
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
        let key = require_str(props, "RouteKey", &what)?;
        let created = client(ctx)
            .await?
            .create_route()
            .api_id(api)
            .route_key(key)
            .set_target(text(props.get("Target")))
            .set_authorization_type(text(props.get("AuthorizationType")).map(|t| t.as_str().into()))
            .set_authorizer_id(text(props.get("AuthorizerId")))
            .set_authorization_scopes(strings(props.get("AuthorizationScopes")))
            .set_api_key_required(flag(props.get("ApiKeyRequired")))
            .set_operation_name(text(props.get("OperationName")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateRoute {key} in {api}")))?;
        let id = created.route_id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateRoute returned no RouteId"))
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
            // A dropped target, authorizer or scope list is sent empty: UpdateRoute leaves out
            // what it is not sent.
            let cleared = |key: &str| changed(before, after, key).then(String::new);
            client(ctx)
                .await?
                .update_route()
                .api_id(api)
                .route_id(id)
                .set_route_key(text(after.get("RouteKey")))
                .set_target(text(after.get("Target")).or_else(|| cleared("Target")))
                .authorization_type(
                    text(after.get("AuthorizationType"))
                        .unwrap_or_else(|| "NONE".into())
                        .as_str()
                        .into(),
                )
                .set_authorizer_id(
                    text(after.get("AuthorizerId")).or_else(|| cleared("AuthorizerId")),
                )
                .set_authorization_scopes(
                    strings(after.get("AuthorizationScopes"))
                        .or_else(|| changed(before, after, "AuthorizationScopes").then(Vec::new)),
                )
                .api_key_required(flag(after.get("ApiKeyRequired")).unwrap_or(false))
                .set_operation_name(
                    text(after.get("OperationName")).or_else(|| cleared("OperationName")),
                )
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateRoute {id} in {api}")))?;
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
                .delete_route()
                .api_id(api)
                .route_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteRoute {id} in {api}"))),
        )
    }
}

#[async_trait]
impl Readable for Route {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId { parent: api, id } =
            ChildId::parse(&request.physical_id, &request.properties, "ApiId", what)?;
        let route = found(
            client(ctx)
                .await?
                .get_route()
                .api_id(api)
                .route_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetRoute {id} in {api}"))),
        )?;
        Ok(route.map(|r| {
            let route = aws_sdk_apigatewayv2::types::Route::builder()
                .set_route_key(r.route_key().map(ToString::to_string))
                .set_target(r.target().map(ToString::to_string))
                .set_authorization_type(r.authorization_type().cloned())
                .set_authorizer_id(r.authorizer_id().map(ToString::to_string))
                .set_authorization_scopes(Some(r.authorization_scopes().to_vec()))
                .set_api_key_required(r.api_key_required())
                .set_operation_name(r.operation_name().map(ToString::to_string))
                .build();
            template_shape(api, &route)
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

    /// The route with the template's key in its API.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(api), Some(key)) = (
            text(request.properties.get("ApiId")),
            text(request.properties.get("RouteKey")),
        ) else {
            return Ok(None);
        };
        let apigw = client(ctx).await?;
        let Some(routes) = routes(&apigw, what, &api).await? else {
            return Ok(None);
        };
        let ids: Vec<&str> = routes
            .iter()
            .filter(|r| r.route_key() == Some(key.as_str()))
            .filter_map(|r| r.route_id())
            .collect();
        ChildId::only(what, &api, &format!("routes of key {key}"), &ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_reads_back_in_template_shape() {
        let route = aws_sdk_apigatewayv2::types::Route::builder()
            .route_key("GET /items/{id}")
            .target("integrations/i1")
            .authorization_type("JWT".into())
            .authorizer_id("au1")
            .authorization_scopes("read")
            .api_key_required(false)
            .build();
        assert_eq!(
            Value::Object(template_shape("a1", &route)),
            json!({
                "ApiId": "a1",
                "RouteKey": "GET /items/{id}",
                "Target": "integrations/i1",
                "AuthorizationType": "JWT",
                "AuthorizerId": "au1",
                "AuthorizationScopes": ["read"],
            })
        );
        assert_eq!(Route.schema().find_scope, ["ApiId", "RouteKey"]);
    }
}
