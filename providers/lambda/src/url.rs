//! `AWS::Lambda::Url`.

use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, deleted_unless_failed, require_str, text};
use cdkd_aws_common::{optional, put};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    FindCreatedResult, ImportRequest, ReadCurrentStateRequest, ReadCurrentStateResult,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, read};

/// `AWS::Lambda::Url`: physical id = the target function's ARN; attributes `FunctionUrl`,
/// `FunctionArn`.
#[derive(Default)]
pub struct Url;

const URL: &str = "AWS::Lambda::Url";

fn cors(props: &Map<String, Value>) -> Option<aws_sdk_lambda::types::Cors> {
    let cors = props.get("Cors")?;
    let list = |key: &str| {
        cors.get(key).and_then(Value::as_array).map(|v| {
            v.iter()
                .filter_map(|i| i.as_str().map(ToString::to_string))
                .collect()
        })
    };
    Some(
        aws_sdk_lambda::types::Cors::builder()
            .set_allow_origins(list("AllowOrigins"))
            .set_allow_methods(list("AllowMethods"))
            .set_allow_headers(list("AllowHeaders"))
            .set_expose_headers(list("ExposeHeaders"))
            .set_allow_credentials(cors.get("AllowCredentials").and_then(Value::as_bool))
            .set_max_age(cors.get("MaxAge").and_then(Value::as_i64).map(|m| m as i32))
            .build(),
    )
}

/// `AWS::Lambda::Url` of a function ARN, with its `FunctionUrl`.
async fn current(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    function_arn: &str,
    template: &Map<String, Value>,
) -> Result<Option<(Map<String, Value>, String)>, ProviderError> {
    let Some(config) = optional(
        &format!("{what}: GetFunctionUrlConfig"),
        lambda
            .get_function_url_config()
            .function_name(function_arn)
            .set_qualifier(text(template.get("Qualifier")))
            .send()
            .await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("TargetFunctionArn".into(), json!(config.function_arn()));
    props.insert("AuthType".into(), json!(config.auth_type().as_str()));
    put(&mut props, "Qualifier", template.get("Qualifier").cloned());
    put(
        &mut props,
        "InvokeMode",
        config.invoke_mode().map(|m| json!(m.as_str())),
    );
    if let Some(cors) = config.cors() {
        let mut c = Map::new();
        for (key, values) in [
            ("AllowOrigins", cors.allow_origins()),
            ("AllowMethods", cors.allow_methods()),
            ("AllowHeaders", cors.allow_headers()),
            ("ExposeHeaders", cors.expose_headers()),
        ] {
            if !values.is_empty() {
                c.insert(key.into(), json!(values));
            }
        }
        put(
            &mut c,
            "AllowCredentials",
            cors.allow_credentials().map(Value::Bool),
        );
        put(&mut c, "MaxAge", cors.max_age().map(|m| json!(m)));
        if !c.is_empty() {
            props.insert("Cors".into(), Value::Object(c));
        }
    }
    Ok(Some((props, config.function_url().to_string())))
}

#[async_trait]
impl ResourceProvider for Url {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(URL)
            .handles(&[
                "TargetFunctionArn",
                "AuthType",
                "Cors",
                "InvokeMode",
                "Qualifier",
            ])
            .create_only(&["TargetFunctionArn", "Qualifier"])
            .read_and_import()
            .finds_created_in(&["TargetFunctionArn", "Qualifier"])
            .build()
    }

    /// `find_created`: a function (and qualifier) has one URL at most, so the URL it has is the
    /// one a repeated create would meet.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if name != operation::FIND_CREATED {
            return Err(ProviderError::unsupported(format!(
                "{URL} does not implement the '{name}' operation"
            )));
        }
        let request: FindCreatedRequest = serde_json::from_value(request)
            .map_err(|e| ProviderError::validation(format!("{URL}: {name}: {e}")))?;
        let what = format!("{URL} {}", request.logical_id);
        let target = require_str(&request.properties, "TargetFunctionArn", &what)?;
        let lambda = client(ctx).await?;
        let found = match current(&lambda, &what, target, &request.properties).await? {
            Some((properties, _)) => FindCreatedResult {
                physical_id: properties
                    .get("TargetFunctionArn")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                properties,
            },
            None => FindCreatedResult::default(),
        };
        serde_json::to_value(found).map_err(|e| ProviderError::other(e.to_string()))
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{URL} {}", request.logical_id);
        let lambda = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: current(&lambda, &what, &request.physical_id, &request.properties)
                .await?
                .map(|(props, _)| props),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{URL} {}", request.logical_id);
        let lambda = client(ctx).await?;
        let (_, function_url) = current(&lambda, &what, &request.physical_id, &request.properties)
            .await?
            .ok_or_else(|| read::missing(&what, &format!("the URL of {}", request.physical_id)))?;
        let attributes = json!({"FunctionUrl": function_url, "FunctionArn": request.physical_id});
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: attributes.as_object().cloned().unwrap_or_default(),
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{URL} {}", request.logical_id);
        let props = &request.properties;
        let target = require_str(props, "TargetFunctionArn", &what)?;
        let created = client(ctx)
            .await?
            .create_function_url_config()
            .function_name(target)
            .set_qualifier(text(props.get("Qualifier")))
            .auth_type(aws_sdk_lambda::types::FunctionUrlAuthType::from(
                require_str(props, "AuthType", &what)?,
            ))
            .set_cors(cors(props))
            .set_invoke_mode(
                text(props.get("InvokeMode"))
                    .map(|m| aws_sdk_lambda::types::InvokeMode::from(m.as_str())),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateFunctionUrlConfig"), e))?;
        let attributes =
            json!({"FunctionUrl": created.function_url(), "FunctionArn": created.function_arn()});
        Ok(CreateResult {
            physical_id: created.function_arn().to_string(),
            attributes: attributes.as_object().cloned().unwrap_or_default(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{URL} {}", request.logical_id);
        let props = &request.properties;
        let updated = client(ctx)
            .await?
            .update_function_url_config()
            .function_name(&request.physical_id)
            .set_qualifier(text(props.get("Qualifier")))
            .set_auth_type(
                text(props.get("AuthType"))
                    .map(|t| aws_sdk_lambda::types::FunctionUrlAuthType::from(t.as_str())),
            )
            .set_cors(cors(props))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: UpdateFunctionUrlConfig"), e))?;
        let attributes =
            json!({"FunctionUrl": updated.function_url(), "FunctionArn": updated.function_arn()});
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            attributes: attributes.as_object().cloned().unwrap_or_default(),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_function_url_config()
                .function_name(&request.physical_id)
                .set_qualifier(text(request.properties.get("Qualifier")))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    aws_error(
                        &format!("{URL} {}: DeleteFunctionUrlConfig", request.logical_id),
                        e,
                    )
                }),
        )
    }
}

// ---------------------------------------------------------------------------------------------
