//! `AWS::Lambda::Alias`.

use cdkd_aws_common::{aws_error, deleted_unless_failed, optional, require_str, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{client, read};

/// `AWS::Lambda::Alias`: physical id = the alias ARN.
#[derive(Default)]
pub struct Alias;

const ALIAS: &str = "AWS::Lambda::Alias";

#[async_trait]
impl Readable for Alias {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        read::alias(&client(ctx).await?, what, &request.physical_id).await
    }

    /// The alias the template names on its function (the name is required, so a repeated
    /// create would meet it), by its ARN.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let function = require_str(&request.properties, "FunctionName", what)?;
        let name = require_str(&request.properties, "Name", what)?;
        let alias = optional(
            &format!("{what}: GetAlias {name} of {function}"),
            client(ctx)
                .await?
                .get_alias()
                .function_name(function)
                .name(name)
                .send()
                .await,
        )?;
        Ok(alias.and_then(|a| a.alias_arn().map(str::to_string)))
    }
}

#[async_trait]
impl ResourceProvider for Alias {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ALIAS)
            .handles(&["FunctionName", "FunctionVersion", "Name", "Description"])
            .create_only(&["FunctionName", "Name"])
            .read_and_import()
            .finds_created_in(&["FunctionName", "Name"])
            .build()
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
