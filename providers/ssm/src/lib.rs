//! cdkd's SSM provider plugin: `AWS::SSM::Parameter` through direct Parameter Store calls. A
//! parameter is addressed by its name in every call, tags included.

mod parameter;

cdkd_provider_api::export_plugin!(description: "AWS::SSM::Parameter through the SSM Parameter Store API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<parameter::Parameter>);

pub(crate) use cdkd_aws_common::found;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// An SSM client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_ssm::Client, ProviderError> {
    let config = aws_sdk_ssm::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-ssm"))
        .build();
    Ok(aws_sdk_ssm::Client::from_conf(config))
}

/// The kind SSM's own error codes stand for, where the shared table has none or the wrong one:
/// SSM names its validation failures after the rule broken, and answers a tag call on a missing
/// parameter with `InvalidResourceId`.
pub(crate) const SSM_KINDS: &[(&str, ErrorKind)] = &[
    ("ParameterNotFound", ErrorKind::NOT_FOUND),
    ("ParameterVersionNotFound", ErrorKind::NOT_FOUND),
    ("InvalidResourceId", ErrorKind::NOT_FOUND),
    ("ParameterAlreadyExists", ErrorKind::ALREADY_EXISTS),
    // One update at a time per parameter: another is in flight, so a later try succeeds.
    ("TooManyUpdates", ErrorKind::THROTTLED),
    ("InvalidAllowedPatternException", ErrorKind::VALIDATION),
    ("ParameterPatternMismatchException", ErrorKind::VALIDATION),
    ("UnsupportedParameterType", ErrorKind::VALIDATION),
    (
        "HierarchyLevelLimitExceededException",
        ErrorKind::VALIDATION,
    ),
    ("HierarchyTypeMismatchException", ErrorKind::VALIDATION),
    ("InvalidPolicyTypeException", ErrorKind::VALIDATION),
    ("InvalidPolicyAttributeException", ErrorKind::VALIDATION),
    ("IncompatiblePolicyException", ErrorKind::VALIDATION),
    ("PoliciesLimitExceededException", ErrorKind::VALIDATION),
    ("ParameterLimitExceeded", ErrorKind::VALIDATION),
    ("ParameterMaxVersionLimitExceeded", ErrorKind::VALIDATION),
    ("TooManyTagsError", ErrorKind::VALIDATION),
    ("InvalidKeyId", ErrorKind::VALIDATION),
    ("InvalidResourceType", ErrorKind::VALIDATION),
];

/// `err` (from [`cdkd_aws_common::aws_error`]) with the kind its SSM code stands for; unchanged
/// when the code is not SSM's own.
pub(crate) fn with_ssm_kind(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, SSM_KINDS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssm_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(SSM_KINDS, "ParameterNotFound"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SSM_KINDS, "InvalidResourceId"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SSM_KINDS, "ParameterAlreadyExists"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SSM_KINDS, "TooManyUpdates"),
            Some(ErrorKind::THROTTLED)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SSM_KINDS, "ParameterPatternMismatchException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(cdkd_aws_common::kind_in(SSM_KINDS, "Throttling"), None);
        let err = with_ssm_kind(
            ProviderError::new(ErrorKind::OTHER, "bad tag call").with_aws_code("InvalidResourceId"),
        );
        assert_eq!(err.kind, ErrorKind::NOT_FOUND);
        let untouched = with_ssm_kind(ProviderError::new(ErrorKind::THROTTLED, "slow"));
        assert_eq!(untouched.kind, ErrorKind::THROTTLED);
    }

    #[test]
    fn not_found_reads_as_absent_and_other_errors_stay() {
        assert_eq!(found(Ok::<_, ProviderError>(3)).unwrap(), Some(3));
        let gone = found::<i32>(Err(ProviderError::new(ErrorKind::NOT_FOUND, "gone")));
        assert_eq!(gone.unwrap(), None);
        let denied = found::<i32>(Err(ProviderError::new(ErrorKind::ACCESS_DENIED, "no")));
        assert_eq!(denied.unwrap_err().kind, ErrorKind::ACCESS_DENIED);
    }
}
