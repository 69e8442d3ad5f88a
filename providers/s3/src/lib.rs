//! cdkd's S3 provider plugin: `AWS::S3::Bucket` and `AWS::S3::BucketPolicy` through direct S3
//! calls (no polling). Properties it does not declare (metrics, intelligent tiering, …) send
//! the resource to Cloud Control.

mod bucket;
mod keyed_configurations;
mod notification;
mod policy;
mod replication;

cdkd_provider_api::export_plugin!(description: "AWS::S3::Bucket and AWS::S3::BucketPolicy through the S3 API");

cdkd_provider_api::register_provider!(bucket::Bucket);
cdkd_provider_api::register_provider!(policy::BucketPolicy);

use cdkd_provider_api::{PluginContext, ProviderError};

/// An S3 client for the host's region, endpoint, credentials and addressing.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_s3::Client, ProviderError> {
    let config = cdkd_aws_common::sdk_config(ctx).await?;
    let s3 = aws_sdk_s3::config::Builder::from(&config)
        .force_path_style(ctx.s3_force_path_style())
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-s3"))
        .build();
    Ok(aws_sdk_s3::Client::from_conf(s3))
}
