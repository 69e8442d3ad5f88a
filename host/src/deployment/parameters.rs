//! Template parameter values: `--parameters` overrides, and `AWS::SSM::Parameter::Value<…>`
//! parameters read from SSM Parameter Store (CDK's `BootstrapVersion` is skipped earlier, with
//! no SSM call).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::analyzer::template::Template;
use crate::aws_env::AwsEnvironment;

/// Why an SSM parameter's value could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SsmParameterError {
    /// The call failed.
    #[error("cannot read SSM parameter {name} in {region}: {detail}")]
    Unreadable {
        /// The parameter.
        name: String,
        /// Its region.
        region: String,
        /// The AWS error, in one line.
        detail: String,
    },
    /// The parameter has no value.
    #[error("SSM parameter {name} in {region} has no value")]
    NoValue {
        /// The parameter.
        name: String,
        /// Its region.
        region: String,
    },
}

/// Reads one SSM parameter's value.
pub async fn ssm_parameter(
    aws: &AwsEnvironment,
    region: &str,
    name: &str,
) -> Result<String, SsmParameterError> {
    let config = aws_sdk_ssm::config::Builder::from(aws.sdk_config())
        .region(aws_sdk_ssm::config::Region::new(region.to_string()))
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-ssm"))
        .build();
    let client = aws_sdk_ssm::Client::from_conf(config);
    let answer = client
        .get_parameter()
        .name(name)
        .with_decryption(true)
        .send()
        .await
        .map_err(|err| SsmParameterError::Unreadable {
            name: name.to_string(),
            region: region.to_string(),
            detail: cdkd_aws_common::error_line(&err),
        })?;
    answer
        .parameter()
        .and_then(|p| p.value())
        .map(ToString::to_string)
        .ok_or_else(|| SsmParameterError::NoValue {
            name: name.to_string(),
            region: region.to_string(),
        })
}

/// The values of a stack's parameters beyond their defaults: `overrides`, and SSM-typed
/// parameters resolved through SSM (their default or override is the parameter's name).
pub async fn resolve(
    template: &Template,
    overrides: &BTreeMap<String, Value>,
    aws: &AwsEnvironment,
    region: &str,
) -> anyhow::Result<BTreeMap<String, Value>> {
    let mut values = overrides.clone();
    for (name, parameter) in &template.parameters {
        if !parameter.is_ssm() {
            continue;
        }
        let Some(ssm_name) = overrides
            .get(name)
            .or(parameter.default.as_ref())
            .and_then(Value::as_str)
        else {
            anyhow::bail!("parameter {name} ({}) names no SSM parameter; give it a Default or pass --parameters {name}=/path", parameter.kind);
        };
        let value = ssm_parameter(aws, region, ssm_name)
            .await
            .map_err(|err| anyhow::anyhow!("parameter {name}: {err}"))?;
        values.insert(name.clone(), Value::String(value));
    }
    Ok(values)
}
