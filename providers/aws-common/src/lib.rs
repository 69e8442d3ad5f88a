//! What cdkd's AWS provider plugins share, so each concern lives in one place:
//! - [`sdk_config`]: an AWS SDK configuration from the host's context (region, endpoint,
//!   credentials the host resolved; the plugin never runs the credential chain);
//! - [`retry_config`] and [`retry_partition`]: the one retry policy of every AWS call cdkd
//!   makes, the host's included;
//! - [`aws_error`]: an SDK error as a [`ProviderError`] with a stable kind and the AWS code;
//! - [`physical_name`]: CloudFormation-style generated names;
//! - [`require_str`] and friends: reading template properties with errors naming the property;
//! - [`reclassify`], [`found`]: a service's own error codes read as kinds, "not found" as absence;
//! - [`tag_map`], [`tag_changes`], [`template_tags`]: template tags and their changes;
//! - [`poll`] and [`retry_while`]: waiting for AWS to settle; [`while_iam_propagates`]: for a
//!   principal IAM made moments ago;
//! - [`TypeSchema`]: declaring a type; [`Readable`] and [`Reads`]: reading it once for drift and
//!   import;
//! - [`ChildId`]: a child's `ParentId|ChildId` physical id;
//! - [`find_created_request`], [`one_tagged`] and friends: finding what a crashed create made by
//!   its create-token tag.
//!
//! Not for: anything specific to one service.

mod child_id;
mod find_tagged;
#[cfg(feature = "plugin")]
mod operation_only;
mod propagation;
#[cfg(feature = "plugin")]
mod readable;
mod schema;
mod tags;
mod wait;
pub use child_id::ChildId;
pub use find_tagged::{
    all_pages, carries_token, find_created_answer, find_created_request, one_tagged,
};
#[cfg(feature = "plugin")]
pub use operation_only::{Answers, OperationOnly};
pub use propagation::{not_propagated, policy_principals, while_iam_propagates, IAM_PROPAGATION};
#[cfg(feature = "plugin")]
pub use readable::{created_name, Readable, Reads};
pub use schema::TypeSchema;
pub use tags::{tag_changes, tag_map, tag_map_without_token, template_tag_changes, template_tags};
pub use wait::{poll, poll_paced, retry_while, Pacing};

use std::time::Duration;

use cdkd_provider_api::protocol::CreateRequest;
#[cfg(feature = "plugin")]
use cdkd_provider_api::PluginContext;
use cdkd_provider_api::{ErrorKind, ProviderError};

/// Attempts per AWS call, the first included.
pub const MAX_ATTEMPTS: u32 = 8;

/// The SDK retry policy every AWS client of cdkd uses, host and plugins alike: standard mode
/// (throttling, 5xx, timeouts and transport errors), exponential backoff with full jitter from
/// 100 ms to 10 s, [`MAX_ATTEMPTS`] attempts.
pub fn retry_config() -> aws_smithy_types::retry::RetryConfig {
    aws_smithy_types::retry::RetryConfig::standard()
        .with_max_attempts(MAX_ATTEMPTS)
        .with_initial_backoff(Duration::from_millis(100))
        .with_max_backoff(Duration::from_secs(10))
}

/// A retry partition without the SDK's client-side retry quota: under sustained throttling
/// the default quota (500 tokens, 5-14 per retry) empties and calls then fail on their first
/// error, which is how a state save gave up after three attempts.
pub fn retry_partition(
    service: &'static str,
) -> aws_smithy_runtime::client::retries::RetryPartition {
    aws_smithy_runtime::client::retries::RetryPartition::custom(service)
        .token_bucket(aws_smithy_runtime::client::retries::TokenBucket::unlimited())
        .build()
}

/// An SDK configuration for the host's region, endpoint and credentials.
///
/// Built field by field rather than through `aws_config::defaults(..).load()`: the host hands
/// over the region, endpoint and credentials, and the loader's credential, token, profile and
/// IMDS chains (with the STS, SSO and SSO-OIDC clients behind them) would otherwise be linked
/// into every plugin library for code that never runs. The rest is what the loader would set.
#[cfg(feature = "plugin")]
pub async fn sdk_config(ctx: &PluginContext) -> Result<aws_types::SdkConfig, ProviderError> {
    use aws_credential_types::provider::SharedCredentialsProvider;
    use aws_smithy_runtime::client::identity::IdentityCache;
    use aws_smithy_runtime_api::client::behavior_version::BehaviorVersion;
    use aws_smithy_types::timeout::TimeoutConfig;
    use aws_types::region::Region;
    use std::time::UNIX_EPOCH;
    let creds = ctx.credentials().await?;
    let credentials = aws_credential_types::Credentials::new(
        creds.access_key_id,
        creds.secret_access_key,
        creds.session_token,
        creds
            .expires_at_epoch_secs
            .map(|s| UNIX_EPOCH + Duration::from_secs(s)),
        "cdkd-host",
    );
    let mut builder = aws_types::SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(ctx.region().to_string()))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .identity_cache(IdentityCache::lazy().build())
        .retry_config(retry_config())
        // The loader's default: 3.1 s to connect, no other limit (calls have their own).
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_millis(3100))
                .build(),
        )
        .time_source(aws_smithy_async::time::SystemTimeSource::new());
    if let Some(sleep) = aws_smithy_async::rt::sleep::default_async_sleep() {
        builder = builder.sleep_impl(sleep);
    }
    if let Some(endpoint) = ctx.endpoint_url() {
        builder = builder.endpoint_url(endpoint);
    }
    // The environment's switches the loader reads, as the host's own clients honour them.
    let switch = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.trim().to_ascii_lowercase().parse::<bool>().ok())
    };
    if let Some(fips) = switch("AWS_USE_FIPS_ENDPOINT") {
        builder = builder.use_fips(fips);
    }
    if let Some(dual_stack) = switch("AWS_USE_DUALSTACK_ENDPOINT") {
        builder = builder.use_dual_stack(dual_stack);
    }
    Ok(builder.service_config(EnvServiceConfig).build())
}

/// Service-specific settings from the environment (`AWS_ENDPOINT_URL_SQS`, …), which the
/// loader reads too; its shared-config `services` sections are not read here.
#[cfg(feature = "plugin")]
#[derive(Debug)]
struct EnvServiceConfig;

#[cfg(feature = "plugin")]
impl aws_types::service_config::LoadServiceConfig for EnvServiceConfig {
    fn load_config(&self, key: aws_types::service_config::ServiceConfigKey<'_>) -> Option<String> {
        let service = key
            .service_id()
            .to_ascii_uppercase()
            .replace([' ', '-'], "_");
        let value = |name: String| std::env::var(name).ok().filter(|v| !v.is_empty());
        value(format!("{}_{service}", key.env())).or_else(|| value(key.env().to_string()))
    }
}

/// The kind of an AWS error code.
pub fn kind_of(code: &str, status: Option<u16>) -> ErrorKind {
    match code {
        "NoSuchBucket"
        | "NoSuchEntity"
        | "NoSuchKey"
        | "NotFound"
        | "ResourceNotFoundException"
        | "NoSuchBucketPolicy" => ErrorKind::NOT_FOUND,
        "BucketAlreadyExists"
        | "BucketAlreadyOwnedByYou"
        | "EntityAlreadyExists"
        | "ResourceConflictException" => ErrorKind::ALREADY_EXISTS,
        "Throttling"
        | "ThrottlingException"
        | "SlowDown"
        | "TooManyRequestsException"
        | "RequestLimitExceeded"
        // Lambda's 5xx answers that do mean "slow down".
        | "EC2ThrottledException"
        | "BandwidthLimitExceeded" => ErrorKind::THROTTLED,
        "AccessDenied" | "AccessDeniedException" | "UnauthorizedOperation" => {
            ErrorKind::ACCESS_DENIED
        }
        "NatGatewayNotFound" | "Gateway.NotAttached" => ErrorKind::NOT_FOUND,
        _ if code.ends_with(".NotFound") => ErrorKind::NOT_FOUND,
        "InvalidPermission.Duplicate"
        | "InvalidGroup.Duplicate"
        | "RouteAlreadyExists"
        | "NetworkAclEntryAlreadyExists"
        | "Resource.AlreadyAssociated" => ErrorKind::ALREADY_EXISTS,
        "BucketNotEmpty"
        | "DependencyViolation"
        | "InvalidIPAddress.InUse"
        | "DeleteConflict"
        | "ResourceInUseException"
        | "OperationAborted"
        | "ConcurrentModification" => ErrorKind::CONFLICT,
        "InvalidParameterValue"
        | "InvalidParameterValueException"
        | "ValidationError"
        | "ValidationException"
        | "MalformedPolicyDocument"
        | "MalformedXML"
        | "InvalidRequest"
        | "InvalidArgument"
        | "InvalidBucketName"
        | "InvalidParameter"
        | "InvalidParameterCombination"
        | "MissingParameter"
        | "LimitExceeded" => ErrorKind::VALIDATION,
        // RDS's shapes: DBInstanceNotFound, DBClusterNotFoundFault, DBSnapshotAlreadyExists.
        _ if code.ends_with("NotFound") || code.ends_with("NotFoundFault") => ErrorKind::NOT_FOUND,
        _ if code.ends_with("AlreadyExists") || code.ends_with("AlreadyExistsFault") => {
            ErrorKind::ALREADY_EXISTS
        }
        _ if status == Some(404) => ErrorKind::NOT_FOUND,
        // A service's own failure, not a request to slow down: lanes stay as they are.
        "InternalFailure" | "InternalError" | "InternalServerError" | "ServiceUnavailable" => {
            ErrorKind::SERVICE_ERROR
        }
        _ if matches!(status, Some(500..=599)) => ErrorKind::SERVICE_ERROR,
        _ => ErrorKind::OTHER,
    }
}

/// The answer of a read whose "not configured" error (S3's 404s such as `NoSuchTagSet`) means
/// the setting is absent; any other error is returned, never mistaken for absence.
pub fn optional<T, E, R>(
    what: &str,
    result: Result<T, aws_smithy_runtime_api::client::result::SdkError<E, R>>,
) -> Result<Option<T>, ProviderError>
where
    E: aws_smithy_runtime_api::client::result::CreateUnhandledError
        + aws_smithy_types::error::metadata::ProvideErrorMetadata
        + std::error::Error
        + Send
        + Sync
        + 'static,
    R: std::fmt::Debug + HasStatus + 'static,
{
    match result {
        Ok(answer) => Ok(Some(answer)),
        Err(err) => match aws_error(what, err) {
            err if err.kind == ErrorKind::NOT_FOUND => Ok(None),
            err => Err(err),
        },
    }
}

/// An SDK error as a provider error: `what` names the type, logical id and operation.
pub fn aws_error<E, R>(
    what: &str,
    err: aws_smithy_runtime_api::client::result::SdkError<E, R>,
) -> ProviderError
where
    E: aws_smithy_runtime_api::client::result::CreateUnhandledError
        + aws_smithy_types::error::metadata::ProvideErrorMetadata
        + std::error::Error
        + Send
        + Sync
        + 'static,
    R: std::fmt::Debug + HasStatus + 'static,
{
    let status = err.raw_response().and_then(HasStatus::status);
    let (code, message) = match err.as_service_error() {
        Some(service) => (
            service.code().unwrap_or_default().to_string(),
            service.message().unwrap_or_default().to_string(),
        ),
        None => (String::new(), String::new()),
    };
    let detail = if message.is_empty() && code.is_empty() {
        error_line(&err)
    } else if message.is_empty() {
        code.clone()
    } else {
        message
    };
    let error = ProviderError::new(kind_of(&code, status), format!("{what}: {detail}"));
    if code.is_empty() {
        error
    } else {
        error.with_aws_code(code)
    }
}

/// The kind a service's own error `code` stands for in `table` (`(code, kind)` pairs), `None`
/// when the table has no row for it.
pub fn kind_in(table: &[(&str, ErrorKind)], code: &str) -> Option<ErrorKind> {
    table
        .iter()
        .find(|(known, _)| *known == code)
        .map(|(_, kind)| *kind)
}

/// `err` (from [`aws_error`]) with the kind `kind` gives its AWS code; unchanged when there is
/// no code or `kind` answers `None`.
pub fn reclassify_by(
    mut err: ProviderError,
    kind: impl FnOnce(&str) -> Option<ErrorKind>,
) -> ProviderError {
    if let Some(kind) = err.aws_code().and_then(kind) {
        err.kind = kind;
    }
    err
}

/// `err` (from [`aws_error`]) with the kind a service's `table` gives its AWS code (where the
/// shared table of [`kind_of`] has none or the wrong one); unchanged when the code is not in
/// `table`.
pub fn reclassify(err: ProviderError, table: &[(&str, ErrorKind)]) -> ProviderError {
    reclassify_by(err, |code| kind_in(table, code))
}

/// [`aws_error`] with the kinds of a service's `table` (see [`reclassify`]).
pub fn aws_error_in<E, R>(
    what: &str,
    err: aws_smithy_runtime_api::client::result::SdkError<E, R>,
    table: &[(&str, ErrorKind)],
) -> ProviderError
where
    E: aws_smithy_runtime_api::client::result::CreateUnhandledError
        + aws_smithy_types::error::metadata::ProvideErrorMetadata
        + std::error::Error
        + Send
        + Sync
        + 'static,
    R: std::fmt::Debug + HasStatus + 'static,
{
    reclassify(aws_error(what, err), table)
}

/// A `map_err` closure turning an SDK error of the call `$call` into a provider error with the
/// kinds of `$table` (see [`reclassify`]), naming `$what` and the call.
#[macro_export]
macro_rules! call_error {
    ($table:expr, $what:expr, $call:expr) => {
        |e| $crate::aws_error_in(&format!("{}: {}", $what, $call), e, $table)
    };
}

/// A result whose "not found" error means absence: `Ok(None)` for it, other errors kept.
pub fn found<T>(result: Result<T, ProviderError>) -> Result<Option<T>, ProviderError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(None),
        Err(err) => Err(err),
    }
}

/// A JSON document (policy, pattern, body ...) as AWS takes it, a JSON string: a template
/// writes it as an object or as the string itself.
pub fn json_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A JSON string AWS answered, back in template shape (a string that is not JSON stays one).
pub fn parsed(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_string()))
}

/// An SDK error as one readable line: `Code: message (HTTP status)` when AWS answered, else
/// the chain of causes (dispatch failure, timeout, connection refused ...) each once; never the
/// SDK's `Debug` dump of the raw response.
pub fn error_line<E, R>(err: &aws_smithy_runtime_api::client::result::SdkError<E, R>) -> String
where
    E: aws_smithy_types::error::metadata::ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug + HasStatus + 'static,
{
    use aws_smithy_types::error::metadata::ProvideErrorMetadata;
    let status = err.raw_response().and_then(HasStatus::status);
    let status = status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
    match (err.code(), err.message()) {
        (Some(code), Some(message)) => return format!("{code}: {message}{status}"),
        (Some(code), None) => return format!("{code}{status}"),
        (None, Some(message)) => return format!("{message}{status}"),
        (None, None) => {}
    }
    let mut line = String::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = cause {
        let text = current.to_string();
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !text.is_empty() && !line.contains(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = current.source();
    }
    let line: String = line.chars().take(300).collect();
    format!("{line}{status}")
}

/// Raw responses expose their status through this.
pub trait HasStatus {
    /// The HTTP status.
    fn status(&self) -> Option<u16>;
}

impl HasStatus for aws_smithy_runtime_api::http::Response {
    fn status(&self) -> Option<u16> {
        Some(self.status().as_u16())
    }
}

const SUFFIX_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// FNV-1a of `parts` (each ended by a NUL): stable across builds and platforms, which std's
/// hashers do not promise; for names and tokens that must come out the same on every run.
pub fn stable_hash(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// Twelve characters of `SUFFIX_ALPHABET`: drawn from `token` when there is one (so every
/// attempt of one create names its resource alike), at random otherwise.
fn suffix(token: &str) -> String {
    if token.is_empty() {
        return (0..12)
            .map(|_| SUFFIX_ALPHABET[rand::random_range(0..SUFFIX_ALPHABET.len())] as char)
            .collect();
    }
    let base = SUFFIX_ALPHABET.len() as u64;
    let (mut value, second) = (stable_hash(&[token]), stable_hash(&[token, "suffix"]));
    (0..12)
        .map(|i| {
            if i == 6 {
                value = second;
            }
            let c = SUFFIX_ALPHABET[(value % base) as usize] as char;
            value /= base;
            c
        })
        .collect()
}

/// A CloudFormation-style generated name, `{stack}-{logicalId}-{SUFFIX}{ending}`, at most
/// `max` characters (the stack and logical parts are shortened, the 12-character suffix and
/// the ending kept), lowercased where the service requires it. The suffix comes from the
/// create's idempotency `token` (random without one).
pub fn generated_name(
    stack: &str,
    logical_id: &str,
    token: &str,
    max: usize,
    lowercase: bool,
    ending: &str,
) -> String {
    let suffix = suffix(token);
    let budget = max.saturating_sub(suffix.len() + 2 + ending.len());
    let stack_part: String = stack.chars().take(budget / 2).collect();
    let logical_part: String = logical_id
        .chars()
        .take(budget - stack_part.chars().count())
        .collect();
    let name = if stack_part.is_empty() {
        format!("{logical_part}-{suffix}{ending}")
    } else {
        format!("{stack_part}-{logical_part}-{suffix}{ending}")
    };
    if lowercase {
        name.to_lowercase()
    } else {
        name
    }
}

/// The generated name of the resource a create makes (see [`generated_name`]).
pub fn physical_name(request: &CreateRequest, max: usize, lowercase: bool) -> String {
    generated_name(
        &request.stack_name,
        &request.logical_id,
        &request.client_token,
        max,
        lowercase,
        "",
    )
}

/// A template string (numbers and booleans as CloudFormation writes them too).
pub fn text(value: Option<&serde_json::Value>) -> Option<String> {
    match value? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A template integer; templates often carry numbers as strings.
pub fn int(value: Option<&serde_json::Value>) -> Option<i32> {
    let value = value?;
    value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
        .map(|n| n as i32)
}

/// A template boolean, `true` or `"true"`.
pub fn flag(value: Option<&serde_json::Value>) -> Option<bool> {
    let value = value?;
    value
        .as_bool()
        .or_else(|| value.as_str().map(|s| s == "true"))
}

/// A template list of strings (non-strings skipped).
pub fn strings(value: Option<&serde_json::Value>) -> Option<Vec<String>> {
    value?.as_array().map(|items| {
        items
            .iter()
            .filter_map(|i| i.as_str().map(ToString::to_string))
            .collect()
    })
}

/// A delete's result where "already gone" counts as deleted.
pub fn deleted_unless_failed(
    result: Result<(), ProviderError>,
) -> Result<cdkd_provider_api::protocol::DeleteResult, ProviderError> {
    match result {
        Err(err) if err.kind != ErrorKind::NOT_FOUND => Err(err),
        _ => Ok(cdkd_provider_api::protocol::DeleteResult::Deleted),
    }
}

/// The error of a read or import whose resource does not exist in `service`.
pub fn does_not_exist(what: &str, id: &str, service: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::NOT_FOUND,
        format!("{what}: {id} does not exist in {service}"),
    )
}

/// Inserts `value` under `key` when there is one (a value that cannot be read is left out
/// rather than stored as "").
pub fn put(
    map: &mut serde_json::Map<String, serde_json::Value>,
    key: &str,
    value: Option<serde_json::Value>,
) {
    if let Some(value) = value {
        map.insert(key.into(), value);
    }
}

/// Reads a required string property, naming it when absent.
pub fn require_str<'a>(
    properties: &'a serde_json::Map<String, serde_json::Value>,
    name: &str,
    what: &str,
) -> Result<&'a str, ProviderError> {
    properties
        .get(name)
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: property {name} is required and must be a string"
            ))
        })
}

/// A template string, only a string (unlike [`text`], a number or boolean is not taken).
pub fn string(value: Option<&serde_json::Value>) -> Option<String> {
    value?.as_str().map(ToString::to_string)
}

/// The name a create gives its resource: the template's `property` when it is a string, else
/// a generated one (see [`physical_name`]).
pub fn given_or_generated_name(
    request: &CreateRequest,
    property: &str,
    max: usize,
    lowercase: bool,
) -> String {
    string(request.properties.get(property))
        .unwrap_or_else(|| physical_name(request, max, lowercase))
}

/// A template's `Tags: [{Key, Value}]` as key/value pairs in template order, a tag whose key or
/// value is not a string left out; `None` when there is no tag list.
pub fn tag_pairs(value: Option<&serde_json::Value>) -> Option<Vec<(String, String)>> {
    value?.as_array().map(|tags| {
        tags.iter()
            .filter_map(|t| Some((string(t.get("Key"))?, string(t.get("Value"))?)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_values_read_in_both_spellings() {
        use serde_json::json;
        assert_eq!(int(Some(&json!("30"))), Some(30));
        assert_eq!(int(Some(&json!(30))), Some(30));
        assert_eq!(flag(Some(&json!("true"))), Some(true));
        assert_eq!(text(Some(&json!(5))), Some("5".into()));
        assert_eq!(
            strings(Some(&json!(["a", 1, "b"]))),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(int(None), None);
    }

    #[test]
    fn generated_names_fit_and_keep_the_shape() {
        let name = generated_name("MyStack", "Bucket83908E77", "t1", 63, true, "");
        assert!(name.starts_with("mystack-bucket83908e77-"), "{name}");
        assert_eq!(name.len(), "mystack-bucket83908e77-".len() + 12);
        let long = generated_name(&"S".repeat(80), &"L".repeat(80), "t1", 64, false, "");
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("SSSS") && long.contains("-LLL"), "{long}");
        let fifo = generated_name(&"S".repeat(80), "Q", "t1", 80, false, ".fifo");
        assert!(fifo.ends_with(".fifo") && fifo.len() <= 80, "{fifo}");
    }

    #[test]
    fn a_token_fixes_the_suffix_and_no_token_draws_one() {
        let request = |token: &str| CreateRequest {
            logical_id: "Role".into(),
            stack_name: "App".into(),
            client_token: token.into(),
            ..CreateRequest::default()
        };
        assert_eq!(
            physical_name(&request("t1"), 64, false),
            physical_name(&request("t1"), 64, false)
        );
        assert_ne!(
            physical_name(&request("t1"), 64, false),
            physical_name(&request("t2"), 64, false)
        );
        assert_ne!(
            physical_name(&request(""), 64, false),
            physical_name(&request(""), 64, false)
        );
    }

    #[test]
    fn sdk_errors_read_as_one_line() {
        use aws_smithy_runtime_api::client::result::SdkError;
        use aws_smithy_types::error::ErrorMetadata;
        let timeout: SdkError<ErrorMetadata, aws_smithy_runtime_api::http::Response> =
            SdkError::timeout_error(std::io::Error::other("read timed out after 5s"));
        let line = error_line(&timeout);
        assert_eq!(line, "request has timed out: read timed out after 5s");
        let response = aws_smithy_runtime_api::http::Response::new(
            aws_smithy_runtime_api::http::StatusCode::try_from(400).unwrap(),
            aws_smithy_types::body::SdkBody::empty(),
        );
        let throttled: SdkError<ErrorMetadata, aws_smithy_runtime_api::http::Response> =
            SdkError::service_error(
                ErrorMetadata::builder()
                    .code("Throttling")
                    .message("Rate exceeded")
                    .build(),
                response,
            );
        assert_eq!(
            error_line(&throttled),
            "Throttling: Rate exceeded (HTTP 400)"
        );
    }

    #[test]
    fn codes_map_to_kinds() {
        assert_eq!(
            kind_of("DBClusterNotFoundFault", Some(404)),
            ErrorKind::NOT_FOUND
        );
        assert_eq!(
            kind_of("DBSnapshotAlreadyExists", Some(400)),
            ErrorKind::ALREADY_EXISTS
        );
        assert_eq!(kind_of("NoSuchEntity", Some(404)), ErrorKind::NOT_FOUND);
        assert_eq!(kind_of("BucketNotEmpty", Some(409)), ErrorKind::CONFLICT);
        assert_eq!(kind_of("SlowDown", Some(503)), ErrorKind::THROTTLED);
        assert_eq!(kind_of("", Some(500)), ErrorKind::SERVICE_ERROR);
        assert_eq!(
            kind_of("EC2ThrottledException", Some(502)),
            ErrorKind::THROTTLED
        );
        assert_eq!(
            kind_of("InternalFailure", Some(500)),
            ErrorKind::SERVICE_ERROR
        );
        assert_eq!(kind_of("Whatever", Some(404)), ErrorKind::NOT_FOUND);
        assert_eq!(
            kind_of("InvalidRouteTableID.NotFound", Some(400)),
            ErrorKind::NOT_FOUND
        );
        assert_eq!(
            kind_of("DependencyViolation", Some(400)),
            ErrorKind::CONFLICT
        );
        assert_eq!(
            kind_of("MalformedPolicyDocument", Some(400)),
            ErrorKind::VALIDATION
        );
    }

    #[test]
    fn service_codes_reclassify_and_others_keep_their_kind() {
        const TABLE: &[(&str, ErrorKind)] = &[
            ("QueueDoesNotExist", ErrorKind::NOT_FOUND),
            ("ConflictException", ErrorKind::CONFLICT),
        ];
        assert_eq!(
            kind_in(TABLE, "QueueDoesNotExist"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(kind_in(TABLE, "Throttling"), None);
        let err = reclassify(
            ProviderError::new(ErrorKind::OTHER, "busy").with_aws_code("ConflictException"),
            TABLE,
        );
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        let kept = reclassify(ProviderError::new(ErrorKind::THROTTLED, "slow"), TABLE);
        assert_eq!(kept.kind, ErrorKind::THROTTLED);
        let other = reclassify(
            ProviderError::new(ErrorKind::VALIDATION, "bad").with_aws_code("Unknown"),
            TABLE,
        );
        assert_eq!(other.kind, ErrorKind::VALIDATION);
    }

    #[test]
    fn not_found_reads_as_absent_and_other_errors_stay() {
        assert_eq!(found(Ok::<_, ProviderError>(3)).unwrap(), Some(3));
        let gone = found::<i32>(Err(ProviderError::new(ErrorKind::NOT_FOUND, "gone")));
        assert_eq!(gone.unwrap(), None);
        let denied = found::<i32>(Err(ProviderError::new(ErrorKind::ACCESS_DENIED, "no")));
        assert_eq!(denied.unwrap_err().kind, ErrorKind::ACCESS_DENIED);
    }

    #[test]
    fn documents_go_as_json_text_and_come_back_parsed() {
        use serde_json::json;
        assert_eq!(json_text(&json!({"a": 1})), "{\"a\":1}");
        assert_eq!(json_text(&json!("{\"a\":1}")), "{\"a\":1}");
        assert_eq!(parsed("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(parsed("nope"), json!("nope"));
    }
}
