//! cdkd's KMS provider plugin: `AWS::KMS::Key` and `AWS::KMS::Alias` through direct KMS calls.
//! A key is addressed by its key id (a UUID), an alias by its name (`alias/...`).

mod alias;
mod key;

cdkd_provider_api::export_plugin!(description: "AWS::KMS::Key and AWS::KMS::Alias through the KMS API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<key::Key>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<alias::Alias>);

use std::future::Future;
use std::time::Duration;

pub(crate) use cdkd_aws_common::found;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// A KMS client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_kms::Client, ProviderError> {
    let config = aws_sdk_kms::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-kms"))
        .build();
    Ok(aws_sdk_kms::Client::from_conf(config))
}

/// The kind KMS's own error codes stand for, where the shared table has none: KMS suffixes its
/// codes with `Exception`, which the shared suffix rules do not read.
pub(crate) const KMS_KINDS: &[(&str, ErrorKind)] = &[
    ("NotFoundException", ErrorKind::NOT_FOUND),
    ("AlreadyExistsException", ErrorKind::ALREADY_EXISTS),
    // The key's state forbids the call now (pending deletion, disabled, being created).
    ("KMSInvalidStateException", ErrorKind::CONFLICT),
    ("DisabledException", ErrorKind::CONFLICT),
    ("MalformedPolicyDocumentException", ErrorKind::VALIDATION),
    ("InvalidAliasNameException", ErrorKind::VALIDATION),
    ("InvalidArnException", ErrorKind::VALIDATION),
    ("InvalidMarkerException", ErrorKind::VALIDATION),
    ("TagException", ErrorKind::VALIDATION),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("UnsupportedOperationException", ErrorKind::VALIDATION),
    ("CustomKeyStoreNotFoundException", ErrorKind::VALIDATION),
    ("CustomKeyStoreInvalidStateException", ErrorKind::VALIDATION),
    ("XksKeyNotFoundException", ErrorKind::VALIDATION),
    ("XksKeyInvalidConfigurationException", ErrorKind::VALIDATION),
];

/// `err` (from [`cdkd_aws_common::aws_error`]) with the kind its KMS code stands for; unchanged
/// when the code is not KMS's own.
pub(crate) fn with_kms_kind(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, KMS_KINDS)
}

/// Whether `err` carries the AWS error code `code`.
pub(crate) fn has_code(err: &ProviderError, code: &str) -> bool {
    err.aws_code.as_ref().into_option().map(|c| c.as_str()) == Some(code)
}

/// `call` again while it fails with an error `retryable` accepts, waiting 200 ms doubling to
/// 5 s between tries, until `limit` has passed; then its last answer.
pub(crate) async fn retrying<T, F, Fut>(
    limit: Duration,
    retryable: impl Fn(&ProviderError) -> bool,
    call: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let retry = |err: &ProviderError, delay: Duration| {
        let again = retryable(err);
        if again {
            tracing::debug!(error = %err.message, "retrying in {delay:?}");
        }
        again
    };
    cdkd_aws_common::retry_while(Duration::from_millis(200), limit, retry, call).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kms_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(KMS_KINDS, "NotFoundException"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KMS_KINDS, "AlreadyExistsException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KMS_KINDS, "KMSInvalidStateException"),
            Some(ErrorKind::CONFLICT)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KMS_KINDS, "MalformedPolicyDocumentException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KMS_KINDS, "ThrottlingException"),
            None
        );
        let err = with_kms_kind(
            ProviderError::new(ErrorKind::OTHER, "gone").with_aws_code("NotFoundException"),
        );
        assert_eq!(err.kind, ErrorKind::NOT_FOUND);
        assert!(has_code(&err, "NotFoundException"));
        assert!(!has_code(&err, "AlreadyExistsException"));
        let untouched = with_kms_kind(ProviderError::new(ErrorKind::THROTTLED, "slow"));
        assert_eq!(untouched.kind, ErrorKind::THROTTLED);
    }
}
