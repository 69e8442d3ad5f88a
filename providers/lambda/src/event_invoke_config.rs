//! `AWS::Lambda::EventInvokeConfig`: asynchronous-invocation settings of one function qualifier.
//! Physical id = `<functionName>|<qualifier>`; a bare function name (older state) means
//! `$LATEST`.

use cdkd_aws_common::optional;
use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, deleted_unless_failed, int, require_str};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use aws_sdk_lambda::types::{DestinationConfig, OnFailure, OnSuccess};

use crate::{client, function_name, read};

/// The provider.
#[derive(Default)]
pub struct EventInvokeConfig;

const TYPE: &str = "AWS::Lambda::EventInvokeConfig";

/// The function name and qualifier a physical id names.
pub fn target(physical_id: &str) -> (&str, &str) {
    physical_id
        .split_once('|')
        .unwrap_or((physical_id, "$LATEST"))
}

fn destination(props: &Map<String, Value>, kind: &str) -> Option<String> {
    props
        .get("DestinationConfig")?
        .get(kind)?
        .get("Destination")?
        .as_str()
        .map(ToString::to_string)
}

/// Puts the whole configuration (create and update alike: Put replaces every setting).
async fn put(
    ctx: &PluginContext,
    what: &str,
    props: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let function = function_name(require_str(props, "FunctionName", what)?).to_string();
    let qualifier = require_str(props, "Qualifier", what)?.to_string();
    let destinations = DestinationConfig::builder()
        .set_on_success(
            destination(props, "OnSuccess").map(|d| OnSuccess::builder().destination(d).build()),
        )
        .set_on_failure(
            destination(props, "OnFailure").map(|d| OnFailure::builder().destination(d).build()),
        )
        .build();
    client(ctx)
        .await?
        .put_function_event_invoke_config()
        .function_name(&function)
        .qualifier(&qualifier)
        .set_maximum_retry_attempts(int(props.get("MaximumRetryAttempts")))
        .set_maximum_event_age_in_seconds(int(props.get("MaximumEventAgeInSeconds")))
        .set_destination_config(props.get("DestinationConfig").map(|_| destinations))
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: PutFunctionEventInvokeConfig"), e))?;
    Ok(format!("{function}|{qualifier}"))
}

/// `AWS::Lambda::EventInvokeConfig` by `<functionName>|<qualifier>`.
async fn current(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    physical_id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let (function, qualifier) = target(physical_id);
    let Some(config) = optional(
        &format!("{what}: GetFunctionEventInvokeConfig"),
        lambda
            .get_function_event_invoke_config()
            .function_name(function)
            .qualifier(qualifier)
            .send()
            .await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("FunctionName".into(), json!(function));
    props.insert("Qualifier".into(), json!(qualifier));
    cdkd_aws_common::put(
        &mut props,
        "MaximumRetryAttempts",
        config.maximum_retry_attempts().map(|m| json!(m)),
    );
    cdkd_aws_common::put(
        &mut props,
        "MaximumEventAgeInSeconds",
        config.maximum_event_age_in_seconds().map(|m| json!(m)),
    );
    if let Some(destinations) = config.destination_config() {
        let mut d = Map::new();
        if let Some(to) = destinations.on_success().and_then(|o| o.destination()) {
            d.insert("OnSuccess".into(), json!({"Destination": to}));
        }
        if let Some(to) = destinations.on_failure().and_then(|o| o.destination()) {
            d.insert("OnFailure".into(), json!({"Destination": to}));
        }
        if !d.is_empty() {
            props.insert("DestinationConfig".into(), Value::Object(d));
        }
    }
    Ok(Some(props))
}

#[async_trait]
impl ResourceProvider for EventInvokeConfig {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "FunctionName",
                "Qualifier",
                "MaximumRetryAttempts",
                "MaximumEventAgeInSeconds",
                "DestinationConfig",
            ])
            .create_only(&["FunctionName", "Qualifier"])
            .read_and_import()
            // Its create is an upsert: repeated after a crash it makes nothing twice.
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let lambda = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: current(&lambda, &what, &request.physical_id).await?,
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let lambda = client(ctx).await?;
        current(&lambda, &what, &request.physical_id)
            .await?
            .ok_or_else(|| read::missing(&what, &request.physical_id))?;
        // A bare function name (older state) is recorded in the composite form.
        let (function, qualifier) = target(&request.physical_id);
        Ok(CreateResult {
            physical_id: format!("{function}|{qualifier}"),
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        Ok(CreateResult {
            physical_id: put(ctx, &what, &request.properties).await?,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        put(ctx, &what, &request.properties).await?;
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
        let what = format!("{TYPE} {}", request.logical_id);
        let (function, qualifier) = target(&request.physical_id);
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_function_event_invoke_config()
                .function_name(function)
                .qualifier(qualifier)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteFunctionEventInvokeConfig"), e)),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bare_function_name_means_latest() {
        assert_eq!(super::target("fn|live"), ("fn", "live"));
        assert_eq!(super::target("fn"), ("fn", "$LATEST"));
    }
}
