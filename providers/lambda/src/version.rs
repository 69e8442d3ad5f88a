//! `AWS::Lambda::Version`.

use std::time::Duration;

use cdkd_aws_common::{aws_error, deleted_unless_failed, require_str, retry_while, text};
use cdkd_aws_common::{optional, put};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, function_name, not_ready, NOT_READY_PATIENCE};

/// `AWS::Lambda::Version`: physical id = the version ARN; attribute `Version`.
#[derive(Default)]
pub struct Version;

const VERSION: &str = "AWS::Lambda::Version";

/// `AWS::Lambda::Version` by version ARN, with its version number.
async fn current(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    arn: &str,
) -> Result<Option<(Map<String, Value>, String)>, ProviderError> {
    let Some((function, number)) = arn.rsplit_once(':') else {
        return Err(ProviderError::validation(format!(
            "{what}: {arn} is not a version ARN (…:function:<name>:<version>)"
        )));
    };
    let Some(config) = optional(
        &format!("{what}: GetFunctionConfiguration"),
        lambda
            .get_function_configuration()
            .function_name(function_name(function))
            .qualifier(number)
            .send()
            .await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("FunctionName".into(), json!(function_name(function)));
    put(
        &mut props,
        "Description",
        config
            .description()
            .filter(|d| !d.is_empty())
            .map(|d| json!(d)),
    );
    put(
        &mut props,
        "CodeSha256",
        config.code_sha256().map(|c| json!(c)),
    );
    Ok(Some((
        props,
        config.version().unwrap_or(number).to_string(),
    )))
}

#[async_trait]
impl Readable for Version {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let lambda = client(ctx).await?;
        Ok(current(&lambda, what, &request.physical_id)
            .await?
            .map(|(props, _)| props))
    }

    /// `Version`, the version number.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let lambda = client(ctx).await?;
        let version = current(&lambda, what, physical_id)
            .await?
            .map(|(_, version)| version)
            .unwrap_or_default();
        Ok(json!({"Version": version})
            .as_object()
            .cloned()
            .unwrap_or_default())
    }
}

#[async_trait]
impl ResourceProvider for Version {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(VERSION)
            .handles(&["FunctionName", "Description", "CodeSha256"])
            .all_create_only()
            .read_and_import()
            // Lambda publishes nothing when code and configuration have not changed since the
            // last version: it answers that version, so a repeated create makes no second one.
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{VERSION} {}", request.logical_id);
        let function = require_str(&request.properties, "FunctionName", &what)?;
        let lambda = client(ctx).await?;
        // A function created or updated in this run may still be `Pending` or updating: its
        // create answers before `Active` (function.rs), so the version waits for it here.
        let published = retry_while(
            Duration::from_millis(200),
            NOT_READY_PATIENCE,
            |error, pause| {
                let again = not_ready(error);
                if again {
                    tracing::debug!("{what}: {function} not ready, publishing again in {pause:?}");
                }
                again
            },
            || async {
                lambda
                    .publish_version()
                    .function_name(function)
                    .set_description(text(request.properties.get("Description")))
                    .set_code_sha256(text(request.properties.get("CodeSha256")))
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: PublishVersion of {function}"), e))
            },
        )
        .await?;
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
