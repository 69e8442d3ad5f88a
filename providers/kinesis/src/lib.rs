//! cdkd's Kinesis provider plugin: `AWS::Kinesis::Stream` and `AWS::Kinesis::StreamConsumer`
//! through direct Kinesis Data Streams calls. A stream is addressed by its name (its ARN where
//! the newer calls take only that), a consumer by its ARN. Kinesis is asynchronous: a stream
//! goes through CREATING / UPDATING and refuses changes until it is ACTIVE again, a consumer
//! is CREATING before it is ACTIVE, so the waiting lives here once.

mod stream;
mod stream_consumer;

cdkd_provider_api::export_plugin!(description: "AWS::Kinesis::Stream and StreamConsumer through the Kinesis Data Streams API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<stream::Stream>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<stream_consumer::StreamConsumer>);

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use aws_sdk_kinesis::primitives::{DateTime, DateTimeFormat};
pub(crate) use cdkd_aws_common::found;
pub(crate) use cdkd_aws_common::tag_map;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Value};

/// The first pause between two polls.
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// How long a wait lasts before it gives up.
const PATIENCE: Duration = Duration::from_secs(600);

/// A Kinesis client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_kinesis::Client, ProviderError> {
    let config = aws_sdk_kinesis::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-kinesis"))
        .build();
    Ok(aws_sdk_kinesis::Client::from_conf(config))
}

/// The kind Kinesis's own error codes stand for, where the shared table has none or the wrong
/// one: a bad argument is `InvalidArgumentException`, and the KMS failures of encryption calls
/// are about the key, not the stream (a missing key must not read as a missing stream).
pub(crate) const KINESIS_KINDS: &[(&str, ErrorKind)] = &[
    ("InvalidArgumentException", ErrorKind::VALIDATION),
    ("KMSInvalidStateException", ErrorKind::VALIDATION),
    ("KMSNotFoundException", ErrorKind::VALIDATION),
    ("KMSDisabledException", ErrorKind::VALIDATION),
    ("KMSOptInRequired", ErrorKind::VALIDATION),
    ("ValidationException", ErrorKind::VALIDATION),
    ("KMSAccessDeniedException", ErrorKind::ACCESS_DENIED),
    ("KMSThrottlingException", ErrorKind::THROTTLED),
];

/// `err` (from [`cdkd_aws_common::aws_error`]) with the kind its Kinesis code stands for;
/// unchanged when the code is not Kinesis's own.
pub(crate) fn with_kinesis_kind(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, KINESIS_KINDS)
}

/// A create's error with "in use" read as "already exists": Kinesis answers a stream or
/// consumer name that is taken with `ResourceInUseException`.
pub(crate) fn in_use_exists(err: ProviderError) -> ProviderError {
    if err.aws_code() == Some("ResourceInUseException") {
        ProviderError::new(ErrorKind::ALREADY_EXISTS, err.message.to_string())
            .with_aws_code("ResourceInUseException")
    } else {
        err
    }
}

/// Polls `poll` until it answers `Ok(Ok(value))`, from 200 ms doubling to 5 s for up to 10
/// minutes; `Ok(Err(status))` means "not yet" and names the status for the timeout message.
pub(crate) async fn wait_for<T, F, Fut>(
    what: &str,
    goal: &str,
    mut poll: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Result<T, String>, ProviderError>>,
{
    let started = Instant::now();
    let status = std::sync::Mutex::new(String::new());
    let status = &status;
    let found = cdkd_aws_common::poll(PATIENCE, || {
        let answer = poll();
        async move {
            match answer.await? {
                Ok(value) => Ok(Some(value)),
                Err(now) => {
                    tracing::debug!("{what}: waiting to be {goal} (status {now})");
                    *status.lock().unwrap_or_else(|e| e.into_inner()) = now;
                    Ok(None)
                }
            }
        }
    })
    .await?;
    found.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: not {goal} after {:.0?} (status {})",
                started.elapsed(),
                status.lock().unwrap_or_else(|e| e.into_inner())
            ),
        )
    })
}

/// Runs `op` again while Kinesis answers that the stream is busy (`ResourceInUseException`:
/// it left ACTIVE between our check and the call), with the same pauses as [`wait_for`].
pub(crate) async fn while_busy<T, F, Fut>(what: &str, op: F) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let busy = |err: &ProviderError, _| {
        let again = err.aws_code() == Some("ResourceInUseException");
        if again {
            tracing::debug!("{what}: busy, retrying ({})", err.message);
        }
        again
    };
    cdkd_aws_common::retry_while(FIRST_PAUSE, PATIENCE, busy, op).await
}

/// Tags in template shape, `[{Key, Value}]` sorted by key.
pub(crate) fn tags_value(tags: &BTreeMap<String, String>) -> Value {
    Value::Array(
        tags.iter()
            .map(|(key, value)| json!({"Key": key, "Value": value}))
            .collect(),
    )
}

/// Live tags (`aws:` ones left out: CloudFormation manages those itself) by key.
pub(crate) fn live_tags(tags: &[aws_sdk_kinesis::types::Tag]) -> BTreeMap<String, String> {
    tags.iter()
        .filter(|t| !t.key().starts_with("aws:"))
        .map(|t| {
            (
                t.key().to_string(),
                t.value().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// A timestamp as CloudFormation reports it, ISO 8601 (`2024-05-01T10:00:00Z`).
pub(crate) fn iso_time(time: &DateTime) -> String {
    time.fmt(DateTimeFormat::DateTime)
        .unwrap_or_else(|_| time.secs().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinesis_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(KINESIS_KINDS, "InvalidArgumentException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KINESIS_KINDS, "KMSNotFoundException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KINESIS_KINDS, "KMSAccessDeniedException"),
            Some(ErrorKind::ACCESS_DENIED)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KINESIS_KINDS, "ResourceNotFoundException"),
            None
        );
        let err = with_kinesis_kind(
            ProviderError::new(ErrorKind::OTHER, "bad").with_aws_code("InvalidArgumentException"),
        );
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        let exists = in_use_exists(
            ProviderError::new(ErrorKind::CONFLICT, "taken")
                .with_aws_code("ResourceInUseException"),
        );
        assert_eq!(exists.kind, ErrorKind::ALREADY_EXISTS);
        assert_eq!(exists.aws_code(), Some("ResourceInUseException"));
        let other = in_use_exists(ProviderError::new(ErrorKind::THROTTLED, "slow"));
        assert_eq!(other.kind, ErrorKind::THROTTLED);
    }

    #[test]
    fn tags_read_back_sorted_without_aws_ones() {
        let tag = |k: &str, v: &str| {
            aws_sdk_kinesis::types::Tag::builder()
                .key(k)
                .value(v)
                .build()
                .unwrap()
        };
        let live = live_tags(&[
            tag("z", "26"),
            tag("aws:cloudformation:stack-name", "s"),
            tag("a", "1"),
        ]);
        assert_eq!(
            tags_value(&live),
            json!([{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}])
        );
        let template = json!({"Tags": [{"Key": "b", "Value": "2"}, {"Key": "a", "Value": "1"}]});
        let map = tag_map(template.as_object().unwrap());
        assert_eq!(map.keys().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn timestamps_read_as_iso_8601() {
        assert_eq!(
            iso_time(&DateTime::from_secs(1_700_000_000)),
            "2023-11-14T22:13:20Z"
        );
    }

    #[test]
    fn not_found_reads_as_absent() {
        assert_eq!(found(Ok::<_, ProviderError>(1)).unwrap(), Some(1));
        let gone = found::<i32>(Err(ProviderError::new(ErrorKind::NOT_FOUND, "gone")));
        assert_eq!(gone.unwrap(), None);
        let denied = found::<i32>(Err(ProviderError::new(ErrorKind::ACCESS_DENIED, "no")));
        assert_eq!(denied.unwrap_err().kind, ErrorKind::ACCESS_DENIED);
    }
}
