//! The CDK's missing-context lookups that need AWS reads the host has no client for
//! (`vpc-provider`, `security-group`, `ami`, `endpoint-service-availability-zones`, ...): each
//! loaded plugin whose type lists `context_lookup` is asked in turn until one answers.

use cdkd_provider_api::protocol::{operation, ContextLookupRequest, ContextLookupResult};
use cdkd_provider_api::{ErrorKind, ProviderError};
use serde_json::Value;

use super::registry::{Registry, RegistryError};
use crate::aws_env::AwsEnvironment;

/// Why a context lookup has no value.
#[derive(Debug, thiserror::Error)]
pub enum ContextLookupError {
    /// A plugin that answers lookups could not be loaded.
    #[error("{0}")]
    Plugin(RegistryError),
    /// The plugin whose provider it is failed (its message, without the error kind).
    #[error("{}", .0.message)]
    Answer(ProviderError),
    /// No loaded plugin answers the provider's lookups.
    #[error("no loaded plugin answers '{0}' lookups (the ec2 plugin answers vpc-provider, security-group, ami and endpoint-service-availability-zones)")]
    Unanswered(String),
}

/// The value for `provider`'s lookup with `props`, or why there is none.
pub async fn context_lookup(
    registry: &Registry,
    aws: &AwsEnvironment,
    provider: &str,
    props: &Value,
) -> Result<Value, ContextLookupError> {
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
            .map_err(ContextLookupError::Plugin)?;
        match plugin
            .invoke::<_, ContextLookupResult>(operation::CONTEXT_LOOKUP, type_name, &request)
            .await
        {
            Ok(result) => return Ok(result.value),
            // Not this plugin's provider: ask the next one.
            Err(err) if err.kind == ErrorKind::UNSUPPORTED => continue,
            Err(err) => return Err(ContextLookupError::Answer(err)),
        }
    }
    Err(ContextLookupError::Unanswered(provider.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provisioning::plugins_file::PluginsFile;

    #[tokio::test]
    async fn a_lookup_no_loaded_plugin_answers_names_the_provider() {
        let registry = Registry::load(PluginsFile::empty());
        let aws = crate::provisioning::zones::tests::offline().await;
        let err = context_lookup(&registry, &aws, "vpc-provider", &Value::Null)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ContextLookupError::Unanswered(provider) if provider == "vpc-provider"),
            "{err}"
        );
        assert!(err
            .to_string()
            .starts_with("no loaded plugin answers 'vpc-provider' lookups"));
    }
}
