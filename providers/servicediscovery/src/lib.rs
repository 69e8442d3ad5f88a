//! cdkd's servicediscovery provider plugin: the Cloud Map namespaces
//! (`AWS::ServiceDiscovery::HttpNamespace`, `PrivateDnsNamespace`, `PublicDnsNamespace`)
//! through direct Cloud Map calls. A namespace's physical id (and `Ref`) is its id. Its create,
//! update and delete are asynchronous operations the plugin waits for (GetOperation until
//! `SUCCESS`); the create carries a `CreatorRequestId` from cdkd's create token, so a retried
//! create makes nothing twice and the run after a crash finds the namespace by it. A service
//! (`AWS::ServiceDiscovery::Service`, physical id its id) is created at once with a
//! `CreatorRequestId` from the token too, and found by its name in its namespace and that id.

mod namespace;
mod service;

cdkd_provider_api::export_plugin!(description: "AWS::ServiceDiscovery HttpNamespace, PrivateDnsNamespace, PublicDnsNamespace and Service through the Cloud Map API");

cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<namespace::Namespace<namespace::Http>>
);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<namespace::Namespace<namespace::PrivateDns>>
);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<namespace::Namespace<namespace::PublicDns>>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<service::Service>);

use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// A Cloud Map client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_servicediscovery::Client, ProviderError> {
    let config =
        aws_sdk_servicediscovery::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-servicediscovery"))
            .build();
    Ok(aws_sdk_servicediscovery::Client::from_conf(config))
}

/// Cloud Map's own error codes where the shared table has none or the wrong kind.
pub(crate) const KINDS: &[(&str, ErrorKind)] = &[
    ("NamespaceNotFound", ErrorKind::NOT_FOUND),
    ("ServiceNotFound", ErrorKind::NOT_FOUND),
    ("OperationNotFound", ErrorKind::NOT_FOUND),
    ("NamespaceAlreadyExists", ErrorKind::ALREADY_EXISTS),
    ("ServiceAlreadyExists", ErrorKind::ALREADY_EXISTS),
    ("DuplicateRequest", ErrorKind::CONFLICT),
    ("ResourceInUse", ErrorKind::CONFLICT),
    ("InvalidInput", ErrorKind::VALIDATION),
    ("ResourceLimitExceeded", ErrorKind::VALIDATION),
    ("TooManyTagsException", ErrorKind::VALIDATION),
];

/// A failed call's error, named by `context`, with Cloud Map's kinds.
macro_rules! failed {
    ($context:expr) => {
        |e| cdkd_aws_common::aws_error_in(&$context, e, $crate::KINDS)
    };
}
pub(crate) use failed;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloud_map_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "NamespaceNotFound"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "ResourceInUse"),
            Some(ErrorKind::CONFLICT)
        );
    }
}
