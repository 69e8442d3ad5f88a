//! The CDK's missing-context lookups that need AWS reads the host has no client for
//! (`vpc-provider`, `security-group`, `ami`, `endpoint-service-availability-zones`, ...): each
//! loaded plugin whose type lists `context_lookup` is asked in turn until one answers.

use cdkd_provider_api::protocol::{operation, ContextLookupRequest, ContextLookupResult};
use cdkd_provider_api::ErrorKind;
use serde_json::Value;

use super::registry::Registry;
use crate::aws_env::AwsEnvironment;

/// The value for `provider`'s lookup with `props`, or why there is none.
pub async fn context_lookup(
    registry: &Registry,
    aws: &AwsEnvironment,
    provider: &str,
    props: &Value,
) -> Result<Value, String> {
    let answering: Vec<&String> = registry
        .owners()
        .keys()
        .filter(|t| {
            registry
                .schema(t)
                .is_some_and(|s| s.supports(operation::CONTEXT_LOOKUP))
        })
        .collect();
    let request = ContextLookupRequest {
        provider: provider.to_string(),
        props: props.clone(),
    };
    for type_name in answering {
        let plugin = registry
            .plugin_for(type_name, aws)
            .await
            .map_err(|e| e.to_string())?;
        match plugin
            .invoke::<_, ContextLookupResult>(operation::CONTEXT_LOOKUP, type_name, &request)
            .await
        {
            Ok(result) => return Ok(result.value),
            // Not this plugin's provider: ask the next one.
            Err(err) if err.kind == ErrorKind::UNSUPPORTED => continue,
            Err(err) => return Err(err.message.to_string()),
        }
    }
    Err(format!(
        "no loaded plugin answers '{provider}' lookups (the ec2 plugin answers vpc-provider, security-group, ami and endpoint-service-availability-zones)"
    ))
}
