//! cdkd's ACM provider plugin: `AWS::CertificateManager::Certificate` through direct ACM calls,
//! DNS validation included: when the template's `DomainValidationOptions` name a
//! `HostedZoneId` (what CDK's `CertificateValidation.fromDns(zone)` synthesizes), the
//! validation CNAME is written into that zone (Route 53 `UPSERT`) and the create waits for
//! `ISSUED`, as CloudFormation does.

mod certificate;

cdkd_provider_api::export_plugin!(description: "AWS::CertificateManager::Certificate (DNS validation into Route 53) through the ACM API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<certificate::Certificate>);

use cdkd_provider_api::{PluginContext, ProviderError};

/// An ACM client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_acm::Client, ProviderError> {
    let config = aws_sdk_acm::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-acm"))
        .build();
    Ok(aws_sdk_acm::Client::from_conf(config))
}

/// A Route 53 client (global: us-east-1) for the validation records.
pub(crate) async fn route53(ctx: &PluginContext) -> Result<aws_sdk_route53::Client, ProviderError> {
    let config = aws_sdk_route53::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .region(aws_sdk_route53::config::Region::new("us-east-1"))
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-acm-route53"))
        .build();
    Ok(aws_sdk_route53::Client::from_conf(config))
}
