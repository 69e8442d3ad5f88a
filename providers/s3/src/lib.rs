//! cdkd's S3 provider plugin: `AWS::S3::Bucket` and `AWS::S3::BucketPolicy` through direct S3
//! calls (no polling). Properties it does not declare (ABAC, S3 metadata tables, …) send
//! the resource to Cloud Control.

mod auto_delete;
mod bucket;
mod bucket_policy;
mod configurations;
mod keyed_configurations;
mod notification;
mod replication;

cdkd_provider_api::export_plugin!(description: "AWS::S3::Bucket and AWS::S3::BucketPolicy through the S3 API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<bucket::Bucket>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<bucket_policy::BucketPolicy>);

use aws_sdk_s3::types::Tag;
use cdkd_provider_api::{PluginContext, ProviderError};
use serde_json::Value;

/// An S3 client for the host's region, endpoint, credentials and addressing.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_s3::Client, ProviderError> {
    let config = cdkd_aws_common::sdk_config(ctx).await?;
    let s3 = aws_sdk_s3::config::Builder::from(&config)
        .force_path_style(ctx.s3_force_path_style())
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-s3"))
        .build();
    Ok(aws_sdk_s3::Client::from_conf(s3))
}

/// A property's value S3 cannot take, naming the property.
pub(crate) fn invalid(what: &str, property: &str, detail: impl std::fmt::Display) -> ProviderError {
    ProviderError::validation(format!("{what}: property {property}: {detail}"))
}

/// The string field `key` of a template object (only a string: unlike
/// `cdkd_aws_common::text`, a number or boolean is not taken).
pub(crate) fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A template tag (`Key`, `Value`) as S3's.
pub(crate) fn tag(value: &Value) -> Result<Tag, String> {
    Tag::builder()
        .set_key(text(value, "Key"))
        .set_value(text(value, "Value"))
        .build()
        .map_err(|e| e.to_string())
}
