//! cdkd's KMS provider plugin: `AWS::KMS::Key` and `AWS::KMS::Alias` through direct KMS calls.
//! A key is addressed by its key id (a UUID), an alias by its name (`alias/...`).

mod alias;
mod key;

cdkd_provider_api::export_plugin!(description: "AWS::KMS::Key and AWS::KMS::Alias through the KMS API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<key::Key>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<alias::Alias>);

use std::future::Future;
use std::time::Duration;

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
pub(crate) fn kms_kind(code: &str) -> Option<ErrorKind> {
    match code {
        "NotFoundException" => Some(ErrorKind::NOT_FOUND),
        "AlreadyExistsException" => Some(ErrorKind::ALREADY_EXISTS),
        // The key's state forbids the call now (pending deletion, disabled, being created).
        "KMSInvalidStateException" | "DisabledException" => Some(ErrorKind::CONFLICT),
        "MalformedPolicyDocumentException"
        | "InvalidAliasNameException"
        | "InvalidArnException"
        | "InvalidMarkerException"
        | "TagException"
        | "LimitExceededException"
        | "UnsupportedOperationException"
        | "CustomKeyStoreNotFoundException"
        | "CustomKeyStoreInvalidStateException"
        | "XksKeyNotFoundException"
        | "XksKeyInvalidConfigurationException" => Some(ErrorKind::VALIDATION),
        _ => None,
    }
}

/// `err` (from [`cdkd_aws_common::aws_error`]) with the kind its KMS code stands for; unchanged
/// when the code is not KMS's own.
pub(crate) fn with_kms_kind(mut err: ProviderError) -> ProviderError {
    if let Some(kind) = err
        .aws_code
        .as_ref()
        .into_option()
        .and_then(|code| kms_kind(code))
    {
        err.kind = kind;
    }
    err
}

/// Whether `err` carries the AWS error code `code`.
pub(crate) fn has_code(err: &ProviderError, code: &str) -> bool {
    err.aws_code.as_ref().into_option().map(|c| c.as_str()) == Some(code)
}

/// A result whose "not found" error means absence: `Ok(None)` for it, other errors kept.
pub(crate) fn found<T>(result: Result<T, ProviderError>) -> Result<Option<T>, ProviderError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(None),
        Err(err) => Err(err),
    }
}

/// `call` again while it fails with an error `retryable` accepts, waiting 200 ms doubling to
/// 5 s between tries, until `limit` has passed; then its last answer.
pub(crate) async fn retrying<T, F, Fut>(
    limit: Duration,
    retryable: impl Fn(&ProviderError) -> bool,
    mut call: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    let mut delay = Duration::from_millis(200);
    loop {
        match call().await {
            Err(err) if retryable(&err) && tokio::time::Instant::now() + delay <= deadline => {
                tracing::debug!(error = %err.message, "retrying in {delay:?}");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kms_codes_get_their_kinds() {
        assert_eq!(kms_kind("NotFoundException"), Some(ErrorKind::NOT_FOUND));
        assert_eq!(
            kms_kind("AlreadyExistsException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            kms_kind("KMSInvalidStateException"),
            Some(ErrorKind::CONFLICT)
        );
        assert_eq!(
            kms_kind("MalformedPolicyDocumentException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(kms_kind("ThrottlingException"), None);
        let err = with_kms_kind(
            ProviderError::new(ErrorKind::OTHER, "gone").with_aws_code("NotFoundException"),
        );
        assert_eq!(err.kind, ErrorKind::NOT_FOUND);
        assert!(has_code(&err, "NotFoundException"));
        assert!(!has_code(&err, "AlreadyExistsException"));
        let untouched = with_kms_kind(ProviderError::new(ErrorKind::THROTTLED, "slow"));
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

    #[tokio::test(start_paused = true)]
    async fn retryable_errors_are_tried_again_until_an_answer() {
        let mut tries = 0;
        let answer = retrying(
            Duration::from_secs(60),
            |e| e.kind == ErrorKind::NOT_FOUND,
            || {
                tries += 1;
                let result = if tries < 3 {
                    Err(ProviderError::new(ErrorKind::NOT_FOUND, "not yet"))
                } else {
                    Ok(tries)
                };
                async move { result }
            },
        )
        .await;
        assert_eq!(answer.unwrap(), 3);
        let refused = retrying(
            Duration::from_secs(60),
            |e| e.kind == ErrorKind::NOT_FOUND,
            || async { Err::<(), _>(ProviderError::validation("bad")) },
        )
        .await;
        assert_eq!(refused.unwrap_err().kind, ErrorKind::VALIDATION);
    }
}
