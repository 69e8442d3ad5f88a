//! `AWS::Lambda::Permission`, `Url`, `Version` and `Alias`.

use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, deleted_unless_failed, flag, physical_name, require_str, text};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, function_name, read};

// ---------------------------------------------------------------------------------------------

/// `AWS::Lambda::Permission`: physical id = the statement id. State written by Cloud Control
/// holds `<functionArn>|<statementId>`; both forms are read.
#[derive(Default)]
pub struct Permission;

const PERMISSION: &str = "AWS::Lambda::Permission";

/// The function and statement id a recorded permission names.
pub fn permission_target<'a>(
    physical_id: &'a str,
    properties: &'a Map<String, Value>,
) -> (String, &'a str) {
    match physical_id.split_once('|') {
        Some((function, statement)) => (function_name(function).to_string(), statement),
        None => (
            properties
                .get("FunctionName")
                .and_then(Value::as_str)
                .map(function_name)
                .unwrap_or_default()
                .to_string(),
            physical_id,
        ),
    }
}

#[async_trait]
impl ResourceProvider for Permission {
    fn schema(&self) -> ResourceTypeSchema {
        let all = [
            "FunctionName",
            "Action",
            "Principal",
            "SourceArn",
            "SourceAccount",
            "EventSourceToken",
            "FunctionUrlAuthType",
            "PrincipalOrgID",
            "InvokedViaFunctionUrl",
        ];
        // Lambda permissions cannot be changed in place: every property replaces.
        TypeSchema::builder(PERMISSION)
            .handles(&all)
            .all_create_only()
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{PERMISSION} {}", request.logical_id);
        let lambda = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::permission(&lambda, &what, &request.physical_id, &request.properties)
                .await?,
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{PERMISSION} {}", request.logical_id);
        let lambda = client(ctx).await?;
        read::permission(&lambda, &what, &request.physical_id, &request.properties)
            .await?
            .ok_or_else(|| read::missing(&what, &format!("statement {}", request.physical_id)))?;
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{PERMISSION} {}", request.logical_id);
        let props = &request.properties;
        let function = require_str(props, "FunctionName", &what)?;
        let statement = physical_name(&request, 100, false);
        client(ctx)
            .await?
            .add_permission()
            .function_name(function)
            .statement_id(&statement)
            .action(require_str(props, "Action", &what)?)
            .principal(require_str(props, "Principal", &what)?)
            .set_source_arn(text(props.get("SourceArn")))
            .set_source_account(text(props.get("SourceAccount")))
            .set_event_source_token(text(props.get("EventSourceToken")))
            .set_principal_org_id(text(props.get("PrincipalOrgID")))
            .set_invoked_via_function_url(flag(props.get("InvokedViaFunctionUrl")))
            .set_function_url_auth_type(
                text(props.get("FunctionUrlAuthType"))
                    .map(|t| aws_sdk_lambda::types::FunctionUrlAuthType::from(t.as_str())),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: AddPermission on {function}"), e))?;
        Ok(CreateResult {
            physical_id: statement,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Err(ProviderError::validation(format!(
            "{PERMISSION} {}: permissions are replaced, not updated",
            request.logical_id
        )))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{PERMISSION} {}", request.logical_id);
        let (function, statement) = permission_target(&request.physical_id, &request.properties);
        deleted_unless_failed(
            client(ctx)
                .await?
                .remove_permission()
                .function_name(&function)
                .statement_id(statement)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: RemovePermission"), e)),
        )
    }
}

// ---------------------------------------------------------------------------------------------

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
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{URL} {}", request.logical_id);
        let lambda = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::url(&lambda, &what, &request.physical_id, &request.properties)
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
        let (_, function_url) =
            read::url(&lambda, &what, &request.physical_id, &request.properties)
                .await?
                .ok_or_else(|| {
                    read::missing(&what, &format!("the URL of {}", request.physical_id))
                })?;
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

/// `AWS::Lambda::Version`: physical id = the version ARN; attribute `Version`.
#[derive(Default)]
pub struct Version;

const VERSION: &str = "AWS::Lambda::Version";

#[async_trait]
impl ResourceProvider for Version {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(VERSION)
            .handles(&["FunctionName", "Description", "CodeSha256"])
            .all_create_only()
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{VERSION} {}", request.logical_id);
        let lambda = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::version(&lambda, &what, &request.physical_id)
                .await?
                .map(|(props, _)| props),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{VERSION} {}", request.logical_id);
        let lambda = client(ctx).await?;
        let (_, version) = read::version(&lambda, &what, &request.physical_id)
            .await?
            .ok_or_else(|| read::missing(&what, &request.physical_id))?;
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: json!({"Version": version})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{VERSION} {}", request.logical_id);
        let function = require_str(&request.properties, "FunctionName", &what)?;
        let published = client(ctx)
            .await?
            .publish_version()
            .function_name(function)
            .set_description(text(request.properties.get("Description")))
            .set_code_sha256(text(request.properties.get("CodeSha256")))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: PublishVersion of {function}"), e))?;
        let arn = published.function_arn().unwrap_or_default().to_string();
        Ok(CreateResult {
            physical_id: arn,
            attributes: json!({"Version": published.version()})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Err(ProviderError::validation(format!(
            "{VERSION} {}: versions are replaced, not updated",
            request.logical_id
        )))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let (function, version) = request
            .physical_id
            .rsplit_once(':')
            .unwrap_or((&request.physical_id, ""));
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_function()
                .function_name(function_name(function))
                .qualifier(version)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    aws_error(
                        &format!(
                            "{VERSION} {}: deleting version {version}",
                            request.logical_id
                        ),
                        e,
                    )
                }),
        )
    }
}

// ---------------------------------------------------------------------------------------------

/// `AWS::Lambda::Alias`: physical id = the alias ARN.
#[derive(Default)]
pub struct Alias;

const ALIAS: &str = "AWS::Lambda::Alias";

#[async_trait]
impl ResourceProvider for Alias {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ALIAS)
            .handles(&["FunctionName", "FunctionVersion", "Name", "Description"])
            .create_only(&["FunctionName", "Name"])
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{ALIAS} {}", request.logical_id);
        let lambda = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::alias(&lambda, &what, &request.physical_id).await?,
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{ALIAS} {}", request.logical_id);
        let lambda = client(ctx).await?;
        read::alias(&lambda, &what, &request.physical_id)
            .await?
            .ok_or_else(|| read::missing(&what, &request.physical_id))?;
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{ALIAS} {}", request.logical_id);
        let props = &request.properties;
        let created = client(ctx)
            .await?
            .create_alias()
            .function_name(require_str(props, "FunctionName", &what)?)
            .name(require_str(props, "Name", &what)?)
            .function_version(require_str(props, "FunctionVersion", &what)?)
            .set_description(text(props.get("Description")))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateAlias"), e))?;
        Ok(CreateResult {
            physical_id: created.alias_arn().unwrap_or_default().to_string(),
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{ALIAS} {}", request.logical_id);
        let props = &request.properties;
        client(ctx)
            .await?
            .update_alias()
            .function_name(require_str(props, "FunctionName", &what)?)
            .name(require_str(props, "Name", &what)?)
            .set_function_version(text(props.get("FunctionVersion")))
            .set_description(text(props.get("Description")))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: UpdateAlias"), e))?;
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{ALIAS} {}", request.logical_id);
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_alias()
                .function_name(require_str(&request.properties, "FunctionName", &what)?)
                .name(require_str(&request.properties, "Name", &what)?)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteAlias"), e)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_is_found_from_either_id_form() {
        let props = json!({"FunctionName": "arn:aws:lambda:us-east-1:123:function:fn"})
            .as_object()
            .cloned()
            .unwrap();
        assert_eq!(
            permission_target("sid-1", &props),
            ("fn".to_string(), "sid-1")
        );
        assert_eq!(
            permission_target("arn:aws:lambda:us-east-1:123:function:other|sid-2", &props),
            ("other".to_string(), "sid-2")
        );
    }
}
