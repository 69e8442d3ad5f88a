//! What the Lambda types' readers share: the error of an import whose resource is gone. Each
//! type reads itself back in its own file; the alias's reader is here until alias.rs takes it.

use cdkd_aws_common::{optional, put};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::function_name;

/// The error of an import whose Lambda resource does not exist.
pub(crate) fn missing(what: &str, id: &str) -> ProviderError {
    cdkd_aws_common::does_not_exist(what, id, "Lambda")
}

/// `AWS::Lambda::Alias` by alias ARN (`…:function:<name>:<alias>`).
pub(crate) async fn alias(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some((function, name)) = arn.rsplit_once(':') else {
        return Err(ProviderError::validation(format!(
            "{what}: {arn} is not an alias ARN (…:function:<name>:<alias>)"
        )));
    };
    let function = function_name(function);
    let Some(alias) = optional(
        &format!("{what}: GetAlias"),
        lambda
            .get_alias()
            .function_name(function)
            .name(name)
            .send()
            .await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("FunctionName".into(), json!(function));
    props.insert("Name".into(), json!(name));
    put(
        &mut props,
        "FunctionVersion",
        alias.function_version().map(|v| json!(v)),
    );
    put(
        &mut props,
        "Description",
        alias
            .description()
            .filter(|d| !d.is_empty())
            .map(|d| json!(d)),
    );
    if let Some(weights) = alias
        .routing_config()
        .and_then(|r| r.additional_version_weights())
        .filter(|w| !w.is_empty())
    {
        let mut entries: Vec<Value> = weights
            .iter()
            .map(|(version, weight)| json!({"FunctionVersion": version, "FunctionWeight": weight}))
            .collect();
        entries.sort_by_key(|e| e["FunctionVersion"].to_string());
        props.insert(
            "RoutingConfig".into(),
            json!({"AdditionalVersionWeights": entries}),
        );
    }
    if let Some(provisioned) = optional(
        &format!("{what}: GetProvisionedConcurrencyConfig"),
        lambda
            .get_provisioned_concurrency_config()
            .function_name(function)
            .qualifier(name)
            .send()
            .await,
    )? {
        put(
            &mut props,
            "ProvisionedConcurrencyConfig",
            provisioned
                .requested_provisioned_concurrent_executions()
                .map(|n| json!({"ProvisionedConcurrentExecutions": n})),
        );
    }
    Ok(Some(props))
}
