//! cdkd's SSM provider plugin: `AWS::SSM::Parameter` through direct Parameter Store calls. A
//! parameter is addressed by its name in every call, tags included.

mod parameter;

cdkd_provider_api::export_plugin!(description: "AWS::SSM::Parameter through the SSM Parameter Store API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<parameter::Parameter>);

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
pub(crate) fn ssm_kind(code: &str) -> Option<ErrorKind> {
    match code {
        "ParameterNotFound" | "ParameterVersionNotFound" | "InvalidResourceId" => {
            Some(ErrorKind::NOT_FOUND)
        }
        "ParameterAlreadyExists" => Some(ErrorKind::ALREADY_EXISTS),
        // One update at a time per parameter: another is in flight, so a later try succeeds.
        "TooManyUpdates" => Some(ErrorKind::THROTTLED),
        "InvalidAllowedPatternException"
        | "ParameterPatternMismatchException"
        | "UnsupportedParameterType"
        | "HierarchyLevelLimitExceededException"
        | "HierarchyTypeMismatchException"
        | "InvalidPolicyTypeException"
        | "InvalidPolicyAttributeException"
        | "IncompatiblePolicyException"
        | "PoliciesLimitExceededException"
        | "ParameterLimitExceeded"
        | "ParameterMaxVersionLimitExceeded"
        | "TooManyTagsError"
        | "InvalidKeyId"
        | "InvalidResourceType" => Some(ErrorKind::VALIDATION),
        _ => None,
    }
}

/// `err` (from [`cdkd_aws_common::aws_error`]) with the kind its SSM code stands for; unchanged
/// when the code is not SSM's own.
pub(crate) fn with_ssm_kind(mut err: ProviderError) -> ProviderError {
    if let Some(kind) = err
        .aws_code
        .as_ref()
        .into_option()
        .and_then(|code| ssm_kind(code))
    {
        err.kind = kind;
    }
    err
}

/// A result whose "not found" error means absence: `Ok(None)` for it, other errors kept.
pub(crate) fn found<T>(result: Result<T, ProviderError>) -> Result<Option<T>, ProviderError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(None),
        Err(err) => Err(err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssm_codes_get_their_kinds() {
        assert_eq!(ssm_kind("ParameterNotFound"), Some(ErrorKind::NOT_FOUND));
        assert_eq!(ssm_kind("InvalidResourceId"), Some(ErrorKind::NOT_FOUND));
        assert_eq!(
            ssm_kind("ParameterAlreadyExists"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(ssm_kind("TooManyUpdates"), Some(ErrorKind::THROTTLED));
        assert_eq!(
            ssm_kind("ParameterPatternMismatchException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(ssm_kind("Throttling"), None);
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
