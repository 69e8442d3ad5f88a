//! cdkd's Lambda provider plugin: functions (inline `ZipFile` code zipped here under the file
//! name the runtime expects, or S3 code, or an image), permissions, function URLs, versions
//! aliases, layer versions, event source mappings and event invoke configs. A function's physical id is its name, which is what `Ref` returns; its ARN is
//! the `Arn` attribute.

mod alias;
mod event_invoke_config;
mod event_source_mapping;
mod function;
mod layer_version;
mod permission;
mod read;
mod url;
mod version;

cdkd_provider_api::export_plugin!(description: "AWS::Lambda::Function, Permission, Url, Version, Alias, LayerVersion, EventSourceMapping and EventInvokeConfig through the Lambda API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<function::Function>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<permission::Permission>);
cdkd_provider_api::register_provider!(url::Url);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<version::Version>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<alias::Alias>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<layer_version::LayerVersion>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<event_source_mapping::EventSourceMapping>
);
cdkd_provider_api::register_provider!(event_invoke_config::EventInvokeConfig);

use cdkd_provider_api::{PluginContext, ProviderError};

/// A Lambda client for the host's region, endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_lambda::Client, ProviderError> {
    let config = aws_sdk_lambda::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-lambda"))
        .build();
    Ok(aws_sdk_lambda::Client::from_conf(config))
}

/// Whether Lambda refused a call because the function is not ready yet (`Pending` after its
/// create, or an update in progress): the caller waits and tries again.
pub(crate) fn not_ready(error: &ProviderError) -> bool {
    error.aws_code() == Some("ResourceConflictException")
}

/// How long a call on a function that is not ready yet is tried again: a VPC function can stay
/// `Pending` for minutes.
pub(crate) const NOT_READY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// The function name inside a name, partial ARN or ARN (`Permission.FunctionName` takes all).
pub(crate) fn function_name(reference: &str) -> &str {
    match reference.split(':').collect::<Vec<_>>().as_slice() {
        [.., "function", name] | [.., "function", name, _] => name,
        _ => reference,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn function_names_come_out_of_arns() {
        assert_eq!(
            super::function_name("arn:aws:lambda:us-east-1:123:function:fn"),
            "fn"
        );
        assert_eq!(
            super::function_name("arn:aws:lambda:us-east-1:123:function:fn:live"),
            "fn"
        );
        assert_eq!(super::function_name("fn"), "fn");
    }
}
