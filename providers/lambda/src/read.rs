//! Reading the Lambda types other than functions back from Lambda, in template shape: what
//! `read_current_state` reports and what `import` checks before it adopts a resource. `None`:
//! the resource is gone.

use cdkd_aws_common::{optional, put, text};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::event_invoke_config::target;
use crate::function_name;
use crate::layer_version::parse_arn;
use crate::permission::permission_target;

/// The error of an import whose Lambda resource does not exist.
pub(crate) fn missing(what: &str, id: &str) -> ProviderError {
    cdkd_aws_common::does_not_exist(what, id, "Lambda")
}

/// `AWS::Lambda::Permission`: the statement in the function's resource policy.
pub(crate) async fn permission(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    physical_id: &str,
    template: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let (function, statement) = permission_target(physical_id, template);
    if function.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: the statement id {physical_id} needs the template's FunctionName (or the id as <functionArn>|<statementId>)"
        )));
    }
    let Some(policy) = optional(
        &format!("{what}: GetPolicy of {function}"),
        lambda.get_policy().function_name(&function).send().await,
    )?
    .and_then(|p| p.policy) else {
        return Ok(None);
    };
    let policy: Value = serde_json::from_str(&policy).unwrap_or(Value::Null);
    Ok(statement_properties(&policy, &function, statement))
}

/// One statement of a resource policy in `AWS::Lambda::Permission` shape.
fn statement_properties(policy: &Value, function: &str, sid: &str) -> Option<Map<String, Value>> {
    let statements = match &policy["Statement"] {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        single => vec![single.clone()],
    };
    let found = statements.into_iter().find(|s| s["Sid"] == sid)?;
    let mut props = Map::new();
    props.insert("FunctionName".into(), json!(function));
    put(&mut props, "Action", found.get("Action").cloned());
    let principal = match &found["Principal"] {
        Value::Object(p) => p.get("Service").or_else(|| p.get("AWS")).cloned(),
        other if other.is_string() => Some(other.clone()),
        _ => None,
    };
    put(&mut props, "Principal", principal);
    let condition = &found["Condition"];
    put(
        &mut props,
        "SourceArn",
        condition["ArnLike"]["AWS:SourceArn"]
            .as_str()
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "SourceAccount",
        condition["StringEquals"]["AWS:SourceAccount"]
            .as_str()
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "FunctionUrlAuthType",
        condition["StringEquals"]["lambda:FunctionUrlAuthType"]
            .as_str()
            .map(|v| json!(v)),
    );
    Some(props)
}

/// `AWS::Lambda::Url` of a function ARN, with its `FunctionUrl`.
pub(crate) async fn url(
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

/// `AWS::Lambda::Version` by version ARN, with its version number.
pub(crate) async fn version(
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

/// `AWS::Lambda::LayerVersion` by layer version ARN. `Content` cannot be read back (Lambda
/// hands out a download link, not the S3 location it was published from).
pub(crate) async fn layer_version(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let (name, number) = parse_arn(arn).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: {arn} is not a layer version ARN (…:layer:<name>:<version>)"
        ))
    })?;
    let Some(layer) = optional(
        &format!("{what}: GetLayerVersion"),
        lambda
            .get_layer_version()
            .layer_name(name)
            .version_number(number)
            .send()
            .await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("LayerName".into(), json!(name));
    put(
        &mut props,
        "Description",
        layer
            .description()
            .filter(|d| !d.is_empty())
            .map(|d| json!(d)),
    );
    if !layer.compatible_runtimes().is_empty() {
        props.insert(
            "CompatibleRuntimes".into(),
            json!(layer
                .compatible_runtimes()
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()),
        );
    }
    if !layer.compatible_architectures().is_empty() {
        props.insert(
            "CompatibleArchitectures".into(),
            json!(layer
                .compatible_architectures()
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()),
        );
    }
    put(
        &mut props,
        "LicenseInfo",
        layer.license_info().map(|l| json!(l)),
    );
    Ok(Some(props))
}

/// `AWS::Lambda::EventSourceMapping` by UUID, with its ARN.
pub(crate) async fn event_source_mapping(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    uuid: &str,
) -> Result<Option<(Map<String, Value>, Option<String>)>, ProviderError> {
    let Some(mapping) = optional(
        &format!("{what}: GetEventSourceMapping"),
        lambda.get_event_source_mapping().uuid(uuid).send().await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    put(
        &mut props,
        "FunctionName",
        mapping.function_arn().map(|f| json!(f)),
    );
    put(
        &mut props,
        "EventSourceArn",
        mapping.event_source_arn().map(|e| json!(e)),
    );
    put(
        &mut props,
        "BatchSize",
        mapping.batch_size().map(|b| json!(b)),
    );
    put(
        &mut props,
        "MaximumBatchingWindowInSeconds",
        mapping
            .maximum_batching_window_in_seconds()
            .map(|w| json!(w)),
    );
    put(
        &mut props,
        "StartingPosition",
        mapping.starting_position().map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "Enabled",
        mapping.state().map(|s| {
            json!(matches!(
                s,
                "Enabled" | "Enabling" | "Creating" | "Updating"
            ))
        }),
    );
    Ok(Some((
        props,
        mapping.event_source_mapping_arn().map(ToString::to_string),
    )))
}

/// `AWS::Lambda::EventInvokeConfig` by `<functionName>|<qualifier>`.
pub(crate) async fn event_invoke_config(
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
    put(
        &mut props,
        "MaximumRetryAttempts",
        config.maximum_retry_attempts().map(|m| json!(m)),
    );
    put(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permission_statement_reads_back_in_template_shape() {
        let policy = json!({"Version": "2012-10-17", "Statement": [
            {"Sid": "other", "Action": "lambda:InvokeFunction", "Principal": "*"},
            {"Sid": "Stack-Invoke-ABC", "Effect": "Allow", "Action": "lambda:InvokeFunction",
             "Principal": {"Service": "s3.amazonaws.com"},
             "Condition": {"ArnLike": {"AWS:SourceArn": "arn:aws:s3:::b"},
                           "StringEquals": {"AWS:SourceAccount": "123456789012"}}}]});
        assert_eq!(
            Value::Object(statement_properties(&policy, "fn", "Stack-Invoke-ABC").unwrap()),
            json!({"FunctionName": "fn", "Action": "lambda:InvokeFunction",
                   "Principal": "s3.amazonaws.com", "SourceArn": "arn:aws:s3:::b",
                   "SourceAccount": "123456789012"})
        );
        assert!(statement_properties(&policy, "fn", "missing").is_none());
        assert_eq!(
            statement_properties(&policy, "fn", "other").unwrap()["Principal"],
            "*"
        );
    }
}
