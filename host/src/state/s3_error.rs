//! One reading of an S3 SDK error: HTTP status, error code, and a one-line message.
//!
//! S3 answers a failed precondition with 412 `PreconditionFailed`, which the SDK does not model
//! as an error variant, so cdkd looks at the status and the code rather than at types.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};

/// What went wrong with one S3 call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Failure {
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The S3 error code (`NoSuchKey`, `PreconditionFailed`, `AccessDenied`, ...).
    pub code: Option<String>,
    /// A one-line description.
    pub message: String,
}

impl S3Failure {
    /// Reads an SDK error.
    pub fn from_sdk<E, R>(err: &SdkError<E, R>) -> S3Failure
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: std::fmt::Debug + HasStatus + 'static,
    {
        let status = err.raw_response().and_then(HasStatus::status);
        let code = err.code().map(ToString::to_string);
        let message = match (err.code(), err.message()) {
            (Some(code), Some(message)) => format!("{code}: {message}"),
            (Some(code), None) => code.to_string(),
            _ => cdkd_aws_common::error_line(err),
        };
        S3Failure {
            status,
            code,
            message,
        }
    }

    /// A failed `If-Match` / `If-None-Match`.
    pub fn is_precondition_failed(&self) -> bool {
        self.status == Some(412) || self.code.as_deref() == Some("PreconditionFailed")
    }

    /// The key or version is not there.
    pub fn is_not_found(&self) -> bool {
        self.status == Some(404)
            || matches!(
                self.code.as_deref(),
                Some("NoSuchKey" | "NotFound" | "NoSuchVersion")
            )
    }

    /// The bucket is not there.
    pub fn is_no_such_bucket(&self) -> bool {
        self.code.as_deref() == Some("NoSuchBucket")
    }

    /// The HTTP status, or 0 when none arrived.
    pub fn status_or_zero(&self) -> u16 {
        self.status.unwrap_or(0)
    }
}

impl std::fmt::Display for S3Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(status) => write!(f, "{} (HTTP {status})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

pub use cdkd_aws_common::HasStatus;
