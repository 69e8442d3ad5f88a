//! `AWS::ApiGatewayV2::Api` (HTTP and WebSocket APIs created from properties, not from an
//! OpenAPI body): physical id (and `Ref`) is the API id; attributes `ApiId` and `ApiEndpoint`.
//! The create tags the API `cdkd:create-token` so the run after a crash finds it by that tag.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_apigatewayv2::types::Cors;
use cdkd_aws_common::{
    all_pages, carries_token, deleted_unless_failed, does_not_exist, find_created_answer,
    find_created_request, flag, generated_name, int, one_tagged, put, strings, tag_changes, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult, CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{account, changed, client, failed, found, partition, string_map};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGatewayV2::Api";

/// The longest API name API Gateway takes.
const MAX_NAME: usize = 128;

/// The `AWS::ApiGatewayV2::Api` provider.
#[derive(Default)]
pub struct Api;

/// The template's `Tags` (a map for this type), cdkd's token tag left out.
fn template_tags(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    string_map(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| k != CREATE_TOKEN_TAG)
        .collect()
}

/// `CorsConfiguration` as the SDK's `Cors`.
fn cors(value: &Value) -> Cors {
    let list = |key: &str| strings(value.get(key)).filter(|l| !l.is_empty());
    Cors::builder()
        .set_allow_credentials(flag(value.get("AllowCredentials")))
        .set_allow_headers(list("AllowHeaders"))
        .set_allow_methods(list("AllowMethods"))
        .set_allow_origins(list("AllowOrigins"))
        .set_expose_headers(list("ExposeHeaders"))
        .set_max_age(int(value.get("MaxAge")))
        .build()
}

/// The live `Cors` in template shape.
fn cors_shape(cors: &Cors) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "AllowCredentials",
        cors.allow_credentials().map(Value::from),
    );
    for (key, list) in [
        ("AllowHeaders", cors.allow_headers()),
        ("AllowMethods", cors.allow_methods()),
        ("AllowOrigins", cors.allow_origins()),
        ("ExposeHeaders", cors.expose_headers()),
    ] {
        if !list.is_empty() {
            shape.insert(key.into(), json!(list));
        }
    }
    put(&mut shape, "MaxAge", cors.max_age().map(Value::from));
    Value::Object(shape)
}

/// The name a create gives the API: the template's, else one generated from the token.
fn api_name(request: &CreateRequest) -> String {
    text(request.properties.get("Name")).unwrap_or_else(|| {
        generated_name(
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
            MAX_NAME,
            false,
            "",
        )
    })
}

/// The live API in template shape.
fn template_shape(api: &aws_sdk_apigatewayv2::types::Api) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", api.name().map(Value::from));
    put(
        &mut props,
        "ProtocolType",
        api.protocol_type().map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "Description",
        api.description().filter(|d| !d.is_empty()).map(Value::from),
    );
    put(
        &mut props,
        "Version",
        api.version().filter(|d| !d.is_empty()).map(Value::from),
    );
    put(
        &mut props,
        "CorsConfiguration",
        api.cors_configuration().map(cors_shape),
    );
    if api.disable_execute_api_endpoint() == Some(true) {
        props.insert("DisableExecuteApiEndpoint".into(), json!(true));
    }
    if api.disable_schema_validation() == Some(true) {
        props.insert("DisableSchemaValidation".into(), json!(true));
    }
    put(
        &mut props,
        "ApiKeySelectionExpression",
        api.api_key_selection_expression().map(Value::from),
    );
    put(
        &mut props,
        "RouteSelectionExpression",
        api.route_selection_expression().map(Value::from),
    );
    let tags: BTreeMap<&str, &str> = api
        .tags()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != CREATE_TOKEN_TAG && !k.starts_with("aws:"))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    if !tags.is_empty() {
        props.insert("Tags".into(), json!(tags));
    }
    props
}

/// The API's `execute-api` ARN (`ExecuteApiArn`), which API Gateway does not return.
fn execute_api_arn(region: &str, account: &str, id: &str) -> String {
    format!(
        "arn:{}:execute-api:{region}:{account}:{id}",
        partition(region)
    )
}

/// `ApiId`, `ApiEndpoint` and `ExecuteApiArn`.
fn attributes_of(
    api: &aws_sdk_apigatewayv2::types::Api,
    region: &str,
    account: &str,
) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "ApiId", api.api_id().map(Value::from));
    put(
        &mut attributes,
        "ApiEndpoint",
        api.api_endpoint().map(Value::from),
    );
    put(
        &mut attributes,
        "ExecuteApiArn",
        api.api_id()
            .map(|id| json!(execute_api_arn(region, account, id))),
    );
    attributes
}

/// The API of `id`; `None` when it is gone.
async fn get_api(
    apigw: &aws_sdk_apigatewayv2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_apigatewayv2::types::Api>, ProviderError> {
    let answer = found(
        apigw
            .get_api()
            .api_id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetApi {id}"))),
    )?;
    let Some(a) = answer else {
        return Ok(None);
    };
    Ok(Some(
        aws_sdk_apigatewayv2::types::Api::builder()
            .set_api_id(a.api_id().map(ToString::to_string))
            .set_api_endpoint(a.api_endpoint().map(ToString::to_string))
            .set_name(a.name().map(ToString::to_string))
            .set_protocol_type(a.protocol_type().cloned())
            .set_description(a.description().map(ToString::to_string))
            .set_version(a.version().map(ToString::to_string))
            .set_cors_configuration(a.cors_configuration().cloned())
            .set_disable_execute_api_endpoint(a.disable_execute_api_endpoint())
            .set_disable_schema_validation(a.disable_schema_validation())
            .set_api_key_selection_expression(
                a.api_key_selection_expression().map(ToString::to_string),
            )
            .set_route_selection_expression(a.route_selection_expression().map(ToString::to_string))
            .set_tags(a.tags().cloned())
            .build(),
    ))
}

/// The ids of the APIs tagged with the create's `token`.
async fn tagged(
    apigw: &aws_sdk_apigatewayv2::Client,
    what: &str,
    token: &str,
) -> Result<Vec<String>, ProviderError> {
    all_pages(|next| async move {
        let page = apigw
            .get_apis()
            .set_next_token(next)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetApis")))?;
        let ids = page
            .items()
            .iter()
            .filter(|item| carries_token(item.tags(), token))
            .filter_map(|item| item.api_id().map(ToString::to_string))
            .collect();
        Ok((ids, page.next_token().map(ToString::to_string)))
    })
    .await
}

#[async_trait]
impl ResourceProvider for Api {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "ProtocolType",
                "Description",
                "Version",
                "CorsConfiguration",
                "DisableExecuteApiEndpoint",
                "DisableSchemaValidation",
                "ApiKeySelectionExpression",
                "RouteSelectionExpression",
                "Tags",
            ])
            .create_only(&["ProtocolType"])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let protocol = text(props.get("ProtocolType")).unwrap_or_else(|| "HTTP".into());
        let name = api_name(&request);
        let mut tags: HashMap<String, String> = template_tags(props).into_iter().collect();
        tags.insert(CREATE_TOKEN_TAG.into(), request.client_token.clone());
        let apigw = client(ctx).await?;
        let create = apigw
            .create_api()
            .name(&name)
            .protocol_type(protocol.as_str().into())
            .set_description(text(props.get("Description")))
            .set_version(text(props.get("Version")))
            .set_cors_configuration(
                props
                    .get("CorsConfiguration")
                    .filter(|v| v.is_object())
                    .map(cors),
            )
            .set_disable_execute_api_endpoint(flag(props.get("DisableExecuteApiEndpoint")))
            .set_disable_schema_validation(flag(props.get("DisableSchemaValidation")))
            .set_api_key_selection_expression(text(props.get("ApiKeySelectionExpression")))
            .set_route_selection_expression(text(props.get("RouteSelectionExpression")))
            .set_tags(Some(tags))
            .send();
        // The account (for ExecuteApiArn) is asked at the same time: one round trip's wait.
        let (created, account) = tokio::join!(create, account(ctx, &what));
        let created = created.map_err(failed!(format!("{what}: CreateApi {name}")))?;
        let id = created
            .api_id()
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateApi returned no ApiId")))?
            .to_string();
        // The API exists: a failed account lookup must not leave it unrecorded.
        let account = match account {
            Ok(account) => account,
            Err(err) => {
                let undone = apigw.delete_api().api_id(&id).send().await.is_ok();
                let fate = if undone {
                    "deleted again"
                } else {
                    "NOT deleted: delete it by hand"
                };
                return Err(ProviderError::new(
                    err.kind,
                    format!("{}; the API {id} it had created was {fate}", err.message),
                ));
            }
        };
        let mut attributes = Map::new();
        attributes.insert("ApiId".into(), json!(id));
        put(
            &mut attributes,
            "ApiEndpoint",
            created.api_endpoint().map(Value::from),
        );
        attributes.insert(
            "ExecuteApiArn".into(),
            json!(execute_api_arn(ctx.region(), &account, &id)),
        );
        Ok(CreateResult {
            physical_id: id,
            attributes,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, id) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let apigw = client(ctx).await?;
        let cleared = |key: &str| changed(before, after, key) && after.get(key).is_none();
        let mut update = apigw
            .update_api()
            .api_id(id)
            .set_name(text(after.get("Name")));
        let mut any = changed(before, after, "Name");
        for key in ["Description", "Version"] {
            if changed(before, after, key) {
                any = true;
            }
        }
        // A dropped description or version is set empty: UpdateApi leaves out what it is not sent.
        update = update
            .set_description(
                text(after.get("Description")).or_else(|| cleared("Description").then(String::new)),
            )
            .set_version(
                text(after.get("Version")).or_else(|| cleared("Version").then(String::new)),
            );
        for key in [
            "DisableExecuteApiEndpoint",
            "DisableSchemaValidation",
            "ApiKeySelectionExpression",
            "RouteSelectionExpression",
        ] {
            any |= changed(before, after, key);
        }
        update = update
            .disable_execute_api_endpoint(
                flag(after.get("DisableExecuteApiEndpoint")).unwrap_or(false),
            )
            .set_api_key_selection_expression(text(after.get("ApiKeySelectionExpression")))
            .set_route_selection_expression(text(after.get("RouteSelectionExpression")));
        if changed(before, after, "DisableSchemaValidation") {
            update = update.disable_schema_validation(
                flag(after.get("DisableSchemaValidation")).unwrap_or(false),
            );
        }
        let cors_changed = changed(before, after, "CorsConfiguration");
        let new_cors = after.get("CorsConfiguration").filter(|v| v.is_object());
        if cors_changed {
            if let Some(value) = new_cors {
                update = update.cors_configuration(cors(value));
                any = true;
            }
        }
        if any {
            update
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateApi {id}")))?;
        }
        if cors_changed && new_cors.is_none() {
            found(
                apigw
                    .delete_cors_configuration()
                    .api_id(id)
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: DeleteCorsConfiguration {id}"))),
            )?;
        }
        let (set, removed): (HashMap<String, String>, Vec<String>) =
            tag_changes(&template_tags(before), &template_tags(after));
        let api = get_api(&apigw, &what, id)
            .await?
            .ok_or_else(|| does_not_exist(&what, id, "API Gateway"))?;
        if !set.is_empty() || !removed.is_empty() {
            let arn = format!("arn:aws:apigateway:{}::/apis/{id}", ctx.region());
            if !removed.is_empty() {
                apigw
                    .untag_resource()
                    .resource_arn(&arn)
                    .set_tag_keys(Some(removed))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
            }
            if !set.is_empty() {
                apigw
                    .tag_resource()
                    .resource_arn(&arn)
                    .set_tags(Some(set))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: TagResource {arn}")))?;
            }
        }
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes: attributes_of(&api, ctx.region(), &account(ctx, &what).await?),
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
        let id = &request.physical_id;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_api()
                .api_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteApi {id}"))),
        )
    }

    /// [`operation::FIND_CREATED`]: the API carrying the create's token tag.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        let (request, what) = find_created_request(TYPE, name, request, true)?;
        let apigw = client(ctx).await?;
        let ids = tagged(&apigw, &what, &request.token).await?;
        let found = match one_tagged(&what, "APIs", &request.token, ids)? {
            Some(id) => get_api(&apigw, &what, &id)
                .await?
                .map(|api| (id, template_shape(&api))),
            None => None,
        };
        find_created_answer(found)
    }
}

#[async_trait]
impl Readable for Api {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let apigw = client(ctx).await?;
        Ok(get_api(&apigw, what, &request.physical_id)
            .await?
            .map(|api| template_shape(&api)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let apigw = client(ctx).await?;
        let api = get_api(&apigw, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "API Gateway"))?;
        Ok(attributes_of(
            &api,
            ctx.region(),
            &account(ctx, what).await?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cors_travels_both_ways_in_template_shape() {
        let template = json!({
            "AllowOrigins": ["*"],
            "AllowMethods": ["GET", "POST"],
            "AllowHeaders": ["authorization"],
            "MaxAge": "600",
            "AllowCredentials": false,
        });
        let sdk = cors(&template);
        assert_eq!(sdk.allow_methods(), ["GET", "POST"]);
        assert_eq!(sdk.max_age(), Some(600));
        assert_eq!(
            cors_shape(&sdk),
            json!({
                "AllowCredentials": false,
                "AllowHeaders": ["authorization"],
                "AllowMethods": ["GET", "POST"],
                "AllowOrigins": ["*"],
                "MaxAge": 600,
            })
        );
    }

    #[test]
    fn the_live_api_reads_back_without_the_token_tag() {
        let api = aws_sdk_apigatewayv2::types::Api::builder()
            .api_id("a1")
            .name("shop")
            .protocol_type("HTTP".into())
            .description("")
            .disable_execute_api_endpoint(false)
            .route_selection_expression("$request.method $request.path")
            .tags(CREATE_TOKEN_TAG, "t1")
            .tags("team", "a")
            .build();
        assert_eq!(
            Value::Object(template_shape(&api)),
            json!({
                "Name": "shop",
                "ProtocolType": "HTTP",
                "RouteSelectionExpression": "$request.method $request.path",
                "Tags": {"team": "a"},
            })
        );
        let props = json!({"Tags": {"team": "a", CREATE_TOKEN_TAG: "x"}});
        assert_eq!(template_tags(props.as_object().unwrap()).len(), 1);
    }

    #[test]
    fn the_execute_api_arn_names_the_partition_region_and_account() {
        assert_eq!(
            execute_api_arn("us-east-1", "123456789012", "a1b2"),
            "arn:aws:execute-api:us-east-1:123456789012:a1b2"
        );
        assert_eq!(
            execute_api_arn("cn-north-1", "1", "x"),
            "arn:aws-cn:execute-api:cn-north-1:1:x"
        );
    }

    #[test]
    fn a_generated_name_comes_from_the_token() {
        let request = |properties: Value| CreateRequest {
            logical_id: "HttpApi".into(),
            stack_name: "Shop".into(),
            client_token: "t1".into(),
            properties: properties.as_object().cloned().unwrap(),
        };
        let name = api_name(&request(json!({})));
        assert!(name.starts_with("Shop-HttpApi-"), "{name}");
        assert_eq!(name, api_name(&request(json!({}))));
        assert_eq!(api_name(&request(json!({"Name": "given"}))), "given");
    }
}
