//! cdkd's CloudWatch Logs provider plugin: `AWS::Logs::LogGroup`, `LogStream`, `MetricFilter`,
//! `SubscriptionFilter` and `ResourcePolicy` through direct CloudWatch Logs calls. Every one of
//! them is named by its name (a stream and the filters within their log group, which the
//! template's `LogGroupName` gives), so each physical id is that name.

mod log_group;
mod log_stream;
mod metric_filter;
mod resource_policy;
mod subscription_filter;

cdkd_provider_api::export_plugin!(description: "AWS::Logs::LogGroup, LogStream, MetricFilter, SubscriptionFilter and ResourcePolicy through the CloudWatch Logs API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<log_group::LogGroup>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<log_stream::LogStream>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<metric_filter::MetricFilter>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<subscription_filter::SubscriptionFilter>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<resource_policy::ResourcePolicy>);

use std::future::Future;
use std::time::{Duration, Instant};

pub(crate) use cdkd_aws_common::{found, json_text, parsed};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// The longest name CloudWatch Logs takes for a log group, stream or filter.
pub(crate) const MAX_NAME: usize = 512;

/// A CloudWatch Logs client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_cloudwatchlogs::Client, ProviderError> {
    let config =
        aws_sdk_cloudwatchlogs::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-logs"))
            .build();
    Ok(aws_sdk_cloudwatchlogs::Client::from_conf(config))
}

/// The kind CloudWatch Logs' own error codes stand for, where the shared table has none: its
/// codes end in `Exception`, so `ResourceAlreadyExistsException` does not read as "already
/// exists" there.
pub(crate) const LOGS_KINDS: &[(&str, ErrorKind)] = &[
    ("ResourceAlreadyExistsException", ErrorKind::ALREADY_EXISTS),
    ("InvalidParameterException", ErrorKind::VALIDATION),
    ("InvalidOperationException", ErrorKind::VALIDATION),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("OperationAbortedException", ErrorKind::CONFLICT),
    ("ConflictException", ErrorKind::CONFLICT),
    ("ServiceUnavailableException", ErrorKind::THROTTLED),
];

/// `err` (from `aws_error`) with the kind its CloudWatch Logs code stands for; unchanged when
/// the code is not one of Logs' own.
pub(crate) fn with_logs_kind(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, LOGS_KINDS)
}

/// A live JSON document in the shape the template wrote it: the template's own string when it
/// holds the same document (CloudWatch Logs may reformat it), the parsed document otherwise.
pub(crate) fn document_like(live: &str, template: Option<&Value>) -> Value {
    let document = parsed(live);
    match template {
        Some(Value::String(text)) if parsed(text) == document => Value::String(text.clone()),
        Some(Value::String(_)) => Value::String(live.to_string()),
        _ => document,
    }
}

/// A number CloudWatch Logs answered as a double, as a template writes it: whole numbers
/// without a fraction, so `0` reads back as `0` rather than `0.0`.
pub(crate) fn number(value: f64) -> Value {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// A template number (written as a number or a string).
pub(crate) fn template_number(value: Option<&Value>) -> Option<f64> {
    let value = value?;
    value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

/// `Key`/`Value` pairs as a template list sorted by key (`None` when there are none).
pub(crate) fn key_value_list<'a>(
    pairs: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Option<Value> {
    let mut pairs: Vec<(&String, &String)> = pairs.into_iter().collect();
    pairs.sort();
    (!pairs.is_empty()).then(|| {
        Value::Array(
            pairs
                .into_iter()
                .map(|(k, v)| json!({"Key": k, "Value": v}))
                .collect(),
        )
    })
}

/// Inserts a list of strings under `key` when it has any.
pub(crate) fn put_strings(map: &mut Map<String, Value>, key: &str, items: &[String]) {
    if !items.is_empty() {
        map.insert(key.into(), json!(items));
    }
}

/// Inserts a string under `key` when it is there and not empty.
pub(crate) fn put_text(map: &mut Map<String, Value>, key: &str, value: Option<&str>) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        map.insert(key.into(), json!(value));
    }
}

/// How long [`wait_for`] waits in all.
const PATIENCE: Duration = Duration::from_secs(600);

/// Runs `check` until it answers something, pausing from 200 ms doubling to 5 s, for up to 10
/// minutes (see [`cdkd_aws_common::poll`]); `waiting_for` says what in the log and the timeout error.
pub(crate) async fn wait_for<T, F, Fut>(
    what: &str,
    waiting_for: &str,
    mut check: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, ProviderError>>,
{
    let started = Instant::now();
    let found = cdkd_aws_common::poll(PATIENCE, || {
        let answer = check();
        async move {
            let answer = answer.await?;
            if answer.is_none() {
                tracing::info!(
                    "{what}: waiting for {waiting_for} ({:.0?} so far)",
                    started.elapsed()
                );
            }
            Ok(answer)
        }
    })
    .await?;
    found.ok_or_else(|| {
        ProviderError::other(format!(
            "{what}: gave up waiting for {waiting_for} after {:.0?}",
            started.elapsed()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(LOGS_KINDS, "ResourceAlreadyExistsException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(LOGS_KINDS, "InvalidParameterException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(LOGS_KINDS, "OperationAbortedException"),
            Some(ErrorKind::CONFLICT)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(LOGS_KINDS, "ResourceNotFoundException"),
            None
        );
        let err = with_logs_kind(
            ProviderError::new(ErrorKind::OTHER, "exists")
                .with_aws_code("ResourceAlreadyExistsException"),
        );
        assert_eq!(err.kind, ErrorKind::ALREADY_EXISTS);
        let untouched = with_logs_kind(ProviderError::new(ErrorKind::NOT_FOUND, "gone"));
        assert_eq!(untouched.kind, ErrorKind::NOT_FOUND);
        assert_eq!(
            found::<()>(Err(ProviderError::new(ErrorKind::NOT_FOUND, "x"))).unwrap(),
            None
        );
        assert!(found::<()>(Err(ProviderError::validation("x"))).is_err());
    }

    #[test]
    fn documents_travel_as_text_and_read_back_in_the_templates_shape() {
        assert_eq!(json_text(&json!({"a": 1})), "{\"a\":1}");
        assert_eq!(json_text(&json!("{\"a\":1}")), "{\"a\":1}");
        assert_eq!(parsed("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(parsed("not json"), json!("not json"));
        let live = "{\"a\": 1}";
        assert_eq!(document_like(live, None), json!({"a": 1}));
        assert_eq!(document_like(live, Some(&json!({"a": 2}))), json!({"a": 1}));
        assert_eq!(
            document_like(live, Some(&json!("{ \"a\":1 }"))),
            json!("{ \"a\":1 }")
        );
        assert_eq!(
            document_like(live, Some(&json!("{\"a\":2}"))),
            json!("{\"a\": 1}")
        );
    }

    #[test]
    fn numbers_read_back_whole_when_they_are() {
        assert_eq!(number(0.0), json!(0));
        assert_eq!(number(1.5), json!(1.5));
        assert_eq!(template_number(Some(&json!("2.5"))), Some(2.5));
        assert_eq!(template_number(Some(&json!(3))), Some(3.0));
        assert_eq!(template_number(Some(&json!(true))), None);
        let (a, b, z) = ("a".to_string(), "1".to_string(), "z".to_string());
        assert_eq!(
            key_value_list([(&z, &b), (&a, &b)]),
            Some(json!([{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "1"}]))
        );
        assert_eq!(key_value_list(std::iter::empty()), None);
        let mut map = Map::new();
        put_text(&mut map, "A", Some(""));
        put_strings(&mut map, "B", &[]);
        assert!(map.is_empty());
        put_text(&mut map, "A", Some("x"));
        put_strings(&mut map, "B", &["y".to_string()]);
        assert_eq!(Value::Object(map), json!({"A": "x", "B": ["y"]}));
    }
}
