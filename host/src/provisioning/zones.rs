//! `Fn::GetAZs`: the host keeps no EC2 client of its own, so the loaded plugin whose type lists
//! the `availability_zones` operation answers (the EC2 plugin, on `AWS::EC2::Subnet`).

use cdkd_provider_api::protocol::{operation, AvailabilityZonesRequest, AvailabilityZonesResult};

use super::registry::Registry;
use crate::aws_env::AwsEnvironment;

/// The zones `Fn::GetAZs` returns for `region`, or why they cannot be had.
pub async fn availability_zones(
    registry: &Registry,
    aws: &AwsEnvironment,
    region: &str,
) -> Result<Vec<String>, String> {
    let answering = registry
        .owners()
        .keys()
        .find(|t| {
            registry
                .schema(t)
                .is_some_and(|s| s.supports(operation::AVAILABILITY_ZONES))
        })
        .ok_or_else(|| {
            format!(
                "Fn::GetAZs ({region}): no loaded plugin lists availability zones; enable the ec2 plugin in plugins.toml"
            )
        })?;
    let plugin = registry
        .plugin_for(answering, aws)
        .await
        .map_err(|e| format!("Fn::GetAZs ({region}): {e}"))?;
    let result: AvailabilityZonesResult = plugin
        .invoke(
            operation::AVAILABILITY_ZONES,
            answering,
            &AvailabilityZonesRequest {
                region: region.to_string(),
            },
        )
        .await
        .map_err(|e| format!("Fn::GetAZs ({region}): {e}"))?;
    Ok(result.zones)
}
