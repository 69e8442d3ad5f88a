//! `AWS::Lambda::Alias`. `RoutingConfig` goes with CreateAlias / UpdateAlias;
//! `ProvisionedConcurrencyConfig` is put on the alias after it exists (and deleted when the
//! template drops it), and the plugin waits for it to be `READY`, as CloudFormation does.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_lambda::types::{AliasRoutingConfiguration, ProvisionedConcurrencyStatusEnum};
use cdkd_aws_common::{aws_error, deleted_unless_failed, int, optional, require_str, text};
use cdkd_aws_common::{poll_paced, Pacing, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{client, read};

/// `AWS::Lambda::Alias`: physical id = the alias ARN.
#[derive(Default)]
pub struct Alias;

const ALIAS: &str = "AWS::Lambda::Alias";

/// `RoutingConfig: {AdditionalVersionWeights: [{FunctionVersion, FunctionWeight}]}` as
/// Lambda's map of version to weight. On update a removed one is sent empty, which stops the
/// shifting.
pub(crate) fn routing(
    what: &str,
    before: Option<&Map<String, Value>>,
    props: &Map<String, Value>,
) -> Result<Option<AliasRoutingConfiguration>, ProviderError> {
    let Some(config) = props.get("RoutingConfig") else {
        return Ok(before
            .is_some_and(|b| b.contains_key("RoutingConfig"))
            .then(|| {
                AliasRoutingConfiguration::builder()
                    .set_additional_version_weights(Some(HashMap::new()))
                    .build()
            }));
    };
    let mut weights = HashMap::new();
    for weight in config
        .get("AdditionalVersionWeights")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let version = text(weight.get("FunctionVersion"));
        let share = weight.get("FunctionWeight").and_then(|w| {
            w.as_f64()
                .or_else(|| w.as_str().and_then(|s| s.parse().ok()))
        });
        let (Some(version), Some(share)) = (version, share) else {
            return Err(ProviderError::validation(format!(
                "{what}: property RoutingConfig: each AdditionalVersionWeights entry needs FunctionVersion and a numeric FunctionWeight"
            )));
        };
        weights.insert(version, share);
    }
    Ok(Some(
        AliasRoutingConfiguration::builder()
            .set_additional_version_weights(Some(weights))
            .build(),
    ))
}

/// `ProvisionedConcurrencyConfig.ProvisionedConcurrentExecutions`.
fn provisioned(props: &Map<String, Value>) -> Option<i32> {
    int(props
        .get("ProvisionedConcurrencyConfig")?
        .get("ProvisionedConcurrentExecutions"))
}

/// Puts provisioned concurrency on the alias and waits until Lambda reports it `READY`.
async fn put_provisioned(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    function: &str,
    alias: &str,
    executions: i32,
) -> Result<(), ProviderError> {
    let failed = format!("{what}: ProvisionedConcurrencyConfig");
    let put = lambda
        .put_provisioned_concurrency_config()
        .function_name(function)
        .qualifier(alias)
        .provisioned_concurrent_executions(executions)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{failed} (PutProvisionedConcurrencyConfig)"), e))?;
    if put.status() == Some(&ProvisionedConcurrencyStatusEnum::Ready) {
        return Ok(());
    }
    // Allocation takes minutes on AWS: polled for up to 30 min, paced by the time waited and
    // capped at 15 s (a few minutes' wait, where 15 s is under a tenth of it), starting 1 s
    // after the put (never READY sooner).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let ready = poll_paced(
        Pacing::capped(Duration::from_secs(15)),
        Duration::from_secs(1800),
        || async {
            let config = lambda
                .get_provisioned_concurrency_config()
                .function_name(function)
                .qualifier(alias)
                .send()
                .await
                .map_err(|e| {
                    aws_error(&format!("{failed} (GetProvisionedConcurrencyConfig)"), e)
                })?;
            match config.status() {
                Some(ProvisionedConcurrencyStatusEnum::Ready) => Ok(Some(())),
                Some(ProvisionedConcurrencyStatusEnum::Failed) => {
                    Err(ProviderError::other(format!(
                        "{failed}: Lambda could not allocate it: {}",
                        config.status_reason().unwrap_or("no reason given")
                    )))
                }
                _ => Ok(None),
            }
        },
    )
    .await?;
    ready.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!("{failed}: not READY after 30 minutes"),
        )
    })
}

/// Applies the template's provisioned concurrency (none: deletes the alias's).
async fn apply_provisioned(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    function: &str,
    alias: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    match provisioned(props) {
        Some(executions) => put_provisioned(lambda, what, function, alias, executions).await,
        None => deleted_unless_failed(
            lambda
                .delete_provisioned_concurrency_config()
                .function_name(function)
                .qualifier(alias)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    aws_error(
                        &format!(
                            "{what}: ProvisionedConcurrencyConfig (DeleteProvisionedConcurrencyConfig)"
                        ),
                        e,
                    )
                }),
        )
        .map(|_| ()),
    }
}

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
            .handles(&[
                "FunctionName",
                "FunctionVersion",
                "Name",
                "Description",
                "RoutingConfig",
                "ProvisionedConcurrencyConfig",
            ])
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
        let lambda = client(ctx).await?;
        let (function, name) = (
            require_str(props, "FunctionName", &what)?,
            require_str(props, "Name", &what)?,
        );
        let created = lambda
            .create_alias()
            .function_name(function)
            .name(name)
            .function_version(require_str(props, "FunctionVersion", &what)?)
            .set_description(text(props.get("Description")))
            .set_routing_config(routing(&what, None, props)?)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateAlias"), e))?;
        if let Some(executions) = provisioned(props) {
            if let Err(error) = put_provisioned(&lambda, &what, function, name, executions).await {
                // The alias exists: undo it so nothing is left unrecorded.
                let note = match lambda
                    .delete_alias()
                    .function_name(function)
                    .name(name)
                    .send()
                    .await
                {
                    Ok(_) => format!("; the new alias {name} was deleted again"),
                    Err(err) => format!(
                        "; the new alias {name} could not be deleted again ({}), the next deploy, rollback or destroy removes it",
                        aws_error("DeleteAlias", err).message
                    ),
                };
                let undone = ProviderError::new(error.kind, format!("{}{note}", error.message));
                return Err(match error.aws_code() {
                    Some(code) => undone.with_aws_code(code),
                    None => undone,
                });
            }
        }
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
        let (before, props) = (&request.previous_properties, &request.properties);
        let lambda = client(ctx).await?;
        let (function, name) = (
            require_str(props, "FunctionName", &what)?,
            require_str(props, "Name", &what)?,
        );
        lambda
            .update_alias()
            .function_name(function)
            .name(name)
            .set_function_version(text(props.get("FunctionVersion")))
            .set_description(text(props.get("Description")))
            .set_routing_config(routing(&what, Some(before), props)?)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: UpdateAlias"), e))?;
        if provisioned(before) != provisioned(props) {
            apply_provisioned(&lambda, &what, function, name, props).await?;
        }
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
    use serde_json::json;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn routing_weights_become_lambdas_map_and_a_removed_one_is_cleared() {
        let props = map(json!({"RoutingConfig": {"AdditionalVersionWeights": [
            {"FunctionVersion": "2", "FunctionWeight": 0.1}]}}));
        let config = routing("A", None, &props).unwrap().unwrap();
        assert_eq!(config.additional_version_weights().unwrap()["2"], 0.1);
        let none = Map::new();
        assert!(routing("A", None, &none).unwrap().is_none());
        assert!(routing("A", Some(&none), &none).unwrap().is_none());
        let cleared = routing("A", Some(&props), &none).unwrap().unwrap();
        assert!(cleared.additional_version_weights().unwrap().is_empty());
        let bad =
            map(json!({"RoutingConfig": {"AdditionalVersionWeights": [{"FunctionVersion": "2"}]}}));
        assert!(routing("A", None, &bad).is_err());
    }

    #[test]
    fn provisioned_concurrency_and_routing_are_declared() {
        let schema = Alias.schema();
        for property in ["RoutingConfig", "ProvisionedConcurrencyConfig"] {
            assert!(schema.handled_properties.iter().any(|h| h == property));
        }
        assert_eq!(
            provisioned(&map(
                json!({"ProvisionedConcurrencyConfig": {"ProvisionedConcurrentExecutions": 2}})
            )),
            Some(2)
        );
    }
}
