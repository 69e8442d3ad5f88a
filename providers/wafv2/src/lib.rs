//! cdkd's wafv2 provider plugin: `AWS::WAFv2::WebACL` and `AWS::WAFv2::WebACLAssociation`
//! through direct WAFv2 calls. A web ACL's physical id (and `Ref`) is CloudFormation's
//! `Name|Id|Scope`; the name is chosen before the create (the template's, or one generated from
//! the create token), so the run after a crash finds the web ACL by name in its scope. An
//! association's is `ResourceArn|WebACLArn`.

mod body;
mod web_acl;
mod web_acl_association;

cdkd_provider_api::export_plugin!(description: "AWS::WAFv2 WebACL (rules passed through as written) and WebACLAssociation through the WAFv2 API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<web_acl::WebAcl>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<web_acl_association::WebAclAssociation>
);

use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// A WAFv2 client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_wafv2::Client, ProviderError> {
    let config = aws_sdk_wafv2::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-wafv2"))
        .build();
    Ok(aws_sdk_wafv2::Client::from_conf(config))
}

/// WAF's own error codes (none of which the shared table knows).
pub(crate) const KINDS: &[(&str, ErrorKind)] = &[
    ("WAFNonexistentItemException", ErrorKind::NOT_FOUND),
    ("WAFDuplicateItemException", ErrorKind::ALREADY_EXISTS),
    ("WAFOptimisticLockException", ErrorKind::CONFLICT),
    ("WAFAssociatedItemException", ErrorKind::CONFLICT),
    ("WAFInvalidParameterException", ErrorKind::VALIDATION),
    ("WAFInvalidOperationException", ErrorKind::VALIDATION),
    ("WAFInvalidResourceException", ErrorKind::VALIDATION),
    ("WAFLimitsExceededException", ErrorKind::VALIDATION),
    ("WAFSubscriptionNotFoundException", ErrorKind::VALIDATION),
    ("WAFTagOperationException", ErrorKind::VALIDATION),
    (
        "WAFExpiredManagedRuleGroupVersionException",
        ErrorKind::VALIDATION,
    ),
    // A resource WAF cannot see yet (a stage just created): worth trying again.
    ("WAFUnavailableEntityException", ErrorKind::THROTTLED),
    ("WAFInternalErrorException", ErrorKind::SERVICE_ERROR),
    (
        "WAFTagOperationInternalErrorException",
        ErrorKind::THROTTLED,
    ),
];

/// A failed call's error, named by `context`, with WAF's kinds.
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
    fn waf_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "WAFNonexistentItemException"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "WAFOptimisticLockException"),
            Some(ErrorKind::CONFLICT)
        );
    }
}
