//! `Fn::GetAZs`: the host keeps no EC2 client of its own, so the loaded plugin whose type lists
//! the `availability_zones` operation answers (the EC2 plugin, on `AWS::EC2::Subnet`).

use cdkd_provider_api::protocol::{operation, AvailabilityZonesRequest, AvailabilityZonesResult};
use cdkd_provider_api::ProviderError;

use super::registry::{Registry, RegistryError};
use crate::aws_env::AwsEnvironment;

/// Why `Fn::GetAZs` has no zones for a region.
#[derive(Debug, thiserror::Error)]
pub enum ZonesError {
    /// No loaded plugin lists the `availability_zones` operation.
    #[error("Fn::GetAZs ({region}): no loaded plugin lists availability zones; enable the ec2 plugin in plugins.toml")]
    NoPlugin {
        /// The region asked about.
        region: String,
    },
    /// The plugin that lists it could not be loaded.
    #[error("Fn::GetAZs ({region}): {error}")]
    Plugin {
        /// The region asked about.
        region: String,
        /// Why.
        error: RegistryError,
    },
    /// The plugin's answer was an error.
    #[error("Fn::GetAZs ({region}): {error}")]
    Answer {
        /// The region asked about.
        region: String,
        /// The plugin's error.
        error: ProviderError,
    },
}

/// The zones `Fn::GetAZs` returns for `region`, or why they cannot be had.
pub async fn availability_zones(
    registry: &Registry,
    aws: &AwsEnvironment,
    region: &str,
) -> Result<Vec<String>, ZonesError> {
    let answering = registry
        .owners()
        .keys()
        .find(|t| {
            registry
                .schema(t)
                .is_some_and(|s| s.supports(operation::AVAILABILITY_ZONES))
        })
        .ok_or_else(|| ZonesError::NoPlugin {
            region: region.to_string(),
        })?;
    let plugin = registry
        .plugin_for(answering, aws)
        .await
        .map_err(|error| ZonesError::Plugin {
            region: region.to_string(),
            error,
        })?;
    let result: AvailabilityZonesResult = plugin
        .invoke(
            operation::AVAILABILITY_ZONES,
            answering,
            &AvailabilityZonesRequest {
                region: region.to_string(),
            },
        )
        .await
        .map_err(|error| ZonesError::Answer {
            region: region.to_string(),
            error,
        })?;
    Ok(result.zones)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::aws_env::{AwsOptions, StaticCredentials};
    use crate::provisioning::plugins_file::PluginsFile;

    /// An environment that never reaches AWS: the region and keys are given.
    pub(crate) async fn offline() -> AwsEnvironment {
        AwsEnvironment::load(&AwsOptions {
            region: Some("eu-west-1".into()),
            static_credentials: Some(StaticCredentials {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: "secret".into(),
            }),
            ..AwsOptions::default()
        })
        .await
    }

    #[tokio::test]
    async fn without_a_plugin_listing_zones_the_error_says_to_enable_ec2() {
        let registry = Registry::load(PluginsFile::empty());
        let err = availability_zones(&registry, &offline().await, "eu-west-1")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ZonesError::NoPlugin { region } if region == "eu-west-1"),
            "{err}"
        );
        // The advice is what the user acts on.
        assert!(err
            .to_string()
            .ends_with("enable the ec2 plugin in plugins.toml"));
    }
}
