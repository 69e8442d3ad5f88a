//! cdkd's EventBridge provider plugin: `AWS::Events::Rule` (with its targets),
//! `AWS::Events::EventBus` and `AWS::Events::Archive` through direct EventBridge calls. A rule
//! is addressed by its name and event bus (both in its ARN), a bus and an archive by name; tags
//! go by ARN.

mod archive;
mod event_bus;
mod rule;

cdkd_provider_api::export_plugin!(description: "AWS::Events::Rule, EventBus and Archive through the EventBridge API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<rule::Rule>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<event_bus::EventBus>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<archive::Archive>);

use std::collections::BTreeMap;

use aws_sdk_eventbridge::types::Tag;
use cdkd_aws_common::tag_pairs;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// An EventBridge client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_eventbridge::Client, ProviderError> {
    let config =
        aws_sdk_eventbridge::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-events"))
            .build();
    Ok(aws_sdk_eventbridge::Client::from_conf(config))
}

/// The kind EventBridge's own error codes stand for, where the shared table has none: its
/// codes end in `Exception`, which the shared suffix rules do not read.
pub(crate) fn events_kind(code: &str) -> Option<ErrorKind> {
    match code {
        "ResourceAlreadyExistsException" => Some(ErrorKind::ALREADY_EXISTS),
        // Another change to the same rule or bus is in flight; a later try succeeds.
        "ConcurrentModificationException" | "InternalException" => Some(ErrorKind::THROTTLED),
        "InvalidEventPatternException"
        | "LimitExceededException"
        | "PolicyLengthExceededException"
        | "ManagedRuleException"
        | "OperationDisabledException" => Some(ErrorKind::VALIDATION),
        "InvalidStateException" | "IllegalStatusException" => Some(ErrorKind::CONFLICT),
        _ => None,
    }
}

/// `err` (from [`aws_error`]) with the kind its EventBridge code stands for; unchanged when the
/// code is not EventBridge's own.
pub(crate) fn with_events_kind(mut err: ProviderError) -> ProviderError {
    if let Some(kind) = err
        .aws_code
        .as_ref()
        .into_option()
        .and_then(|code| events_kind(code))
    {
        err.kind = kind;
    }
    err
}

/// A `map_err` closure turning an SDK error of the call `$call` into a provider error with
/// EventBridge's kinds, naming `$what` and the call.
macro_rules! events_error {
    ($what:expr, $call:expr) => {
        |e| {
            $crate::with_events_kind(cdkd_aws_common::aws_error(
                &format!("{}: {}", $what, $call),
                e,
            ))
        }
    };
}
pub(crate) use events_error;

/// A result whose "not found" error means absence: `Ok(None)` for it, other errors kept.
pub(crate) fn found<T>(result: Result<T, ProviderError>) -> Result<Option<T>, ProviderError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(None),
        Err(err) => Err(err),
    }
}

/// An event pattern or policy as EventBridge takes it: a JSON string, which a template writes
/// as an object or as the string itself. `None` for an absent, null or empty value.
pub(crate) fn json_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// A JSON string EventBridge answered, back in template shape (a string that is not JSON stays
/// one).
pub(crate) fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// The template's tags by key (a later duplicate wins, as EventBridge keeps one per key).
pub(crate) fn tag_map(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    tag_pairs(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// Tags as EventBridge takes them.
pub(crate) fn sdk_tags(
    tags: &BTreeMap<String, String>,
    what: &str,
) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(key, value)| {
            Tag::builder()
                .key(key)
                .value(value)
                .build()
                .map_err(|e| ProviderError::validation(format!("{what}: tag {key}: {e}")))
        })
        .collect()
}

/// The tags to set (new or changed values) and the keys to remove, from `before` to `after`.
pub(crate) fn tag_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let (old, new) = (tag_map(before), tag_map(after));
    let set = new
        .iter()
        .filter(|(key, value)| old.get(*key) != Some(*value))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let removed = old
        .keys()
        .filter(|key| !new.contains_key(*key))
        .cloned()
        .collect();
    (set, removed)
}

/// Applies a template's tag change to the resource `arn`: untag removed keys, tag new and
/// changed ones.
pub(crate) async fn update_tags(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed) = tag_changes(before, after);
    if !removed.is_empty() {
        events
            .untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(events_error!(what, "UntagResource"))?;
    }
    if !set.is_empty() {
        events
            .tag_resource()
            .resource_arn(arn)
            .set_tags(Some(sdk_tags(&set, what)?))
            .send()
            .await
            .map_err(events_error!(what, "TagResource"))?;
    }
    Ok(())
}

/// The tags of the resource `arn` in template shape, sorted by key, AWS's own (`aws:`) left
/// out; `None` when the resource is gone.
pub(crate) async fn live_tags(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Vec<Tag>>, ProviderError> {
    let answer = events
        .list_tags_for_resource()
        .resource_arn(arn)
        .send()
        .await
        .map_err(events_error!(what, "ListTagsForResource"));
    Ok(found(answer)?.map(|a| a.tags.unwrap_or_default()))
}

/// Tags as a template writes them: `[{Key, Value}]` sorted by key, AWS's own left out; `None`
/// when there are none.
pub(crate) fn template_tags(tags: &[Tag]) -> Option<Value> {
    let sorted: BTreeMap<&str, &str> = tags
        .iter()
        .filter(|t| !t.key().starts_with("aws:"))
        .map(|t| (t.key(), t.value()))
        .collect();
    if sorted.is_empty() {
        return None;
    }
    Some(Value::Array(
        sorted
            .into_iter()
            .map(|(key, value)| json!({"Key": key, "Value": value}))
            .collect(),
    ))
}

/// Whether a template names a setting (present and not null).
pub(crate) fn given(properties: &Map<String, Value>, name: &str) -> bool {
    properties.get(name).is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn eventbridge_codes_get_their_kinds() {
        assert_eq!(
            events_kind("ResourceAlreadyExistsException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            events_kind("InvalidEventPatternException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            events_kind("ConcurrentModificationException"),
            Some(ErrorKind::THROTTLED)
        );
        assert_eq!(events_kind("ResourceNotFoundException"), None);
        let err = with_events_kind(
            ProviderError::new(ErrorKind::OTHER, "exists")
                .with_aws_code("ResourceAlreadyExistsException"),
        );
        assert_eq!(err.kind, ErrorKind::ALREADY_EXISTS);
        let kept = with_events_kind(ProviderError::new(ErrorKind::NOT_FOUND, "gone"));
        assert_eq!(kept.kind, ErrorKind::NOT_FOUND);
    }

    #[test]
    fn event_patterns_go_as_json_text_and_come_back_parsed() {
        let pattern = json!({"source": ["aws.s3"], "detail-type": ["Object Created"]});
        let text = json_text(Some(&pattern)).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), pattern);
        assert_eq!(
            json_text(Some(&json!("{\"source\":[\"a\"]}"))).as_deref(),
            Some("{\"source\":[\"a\"]}")
        );
        assert_eq!(json_text(Some(&json!(""))), None);
        assert_eq!(json_text(Some(&Value::Null)), None);
        assert_eq!(json_text(None), None);
        assert_eq!(parsed(&text), pattern);
        assert_eq!(parsed("not json"), json!("not json"));
    }

    #[test]
    fn tags_are_set_when_new_or_changed_and_removed_by_key() {
        let before = props(json!({"Tags": [
            {"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}, {"Key": "c", "Value": "3"}
        ]}));
        let after = props(json!({"Tags": [
            {"Key": "a", "Value": "1"}, {"Key": "b", "Value": "20"}, {"Key": "d", "Value": "4"}
        ]}));
        let (set, removed) = tag_changes(&before, &after);
        let set: Vec<(&str, &str)> = set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(set, [("b", "20"), ("d", "4")]);
        assert_eq!(removed, ["c"]);
        let (_, all_gone) = tag_changes(&before, &Map::new());
        assert_eq!(all_gone, ["a", "b", "c"]);
    }

    #[test]
    fn live_tags_read_back_sorted_without_aws_ones() {
        let tags = [
            Tag::builder().key("z").value("26").build().unwrap(),
            Tag::builder().key("a").value("1").build().unwrap(),
            Tag::builder()
                .key("aws:cloudformation:stack-name")
                .value("S")
                .build()
                .unwrap(),
        ];
        assert_eq!(
            template_tags(&tags),
            Some(json!([{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}]))
        );
        assert_eq!(template_tags(&tags[2..]), None);
    }
}
