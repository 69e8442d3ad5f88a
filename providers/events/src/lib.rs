//! cdkd's EventBridge provider plugin: `AWS::Events::Rule` (with its targets),
//! `AWS::Events::EventBus` and `AWS::Events::Archive` through direct EventBridge calls. A rule
//! is addressed by its name and event bus (both in its ARN), a bus and an archive by name; tags
//! go by ARN.

mod archive;
mod ecs_target;
mod event_bus;
mod rule;

cdkd_provider_api::export_plugin!(description: "AWS::Events::Rule, EventBus and Archive through the EventBridge API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<rule::Rule>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<event_bus::EventBus>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<archive::Archive>);

use std::collections::BTreeMap;

use aws_sdk_eventbridge::types::Tag;
pub(crate) use cdkd_aws_common::found;
pub(crate) use cdkd_aws_common::{parsed, tag_map, template_tag_changes as tag_changes};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{Map, Value};

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
pub(crate) const EVENTS_KINDS: &[(&str, ErrorKind)] = &[
    ("ResourceAlreadyExistsException", ErrorKind::ALREADY_EXISTS),
    // Another change to the same rule or bus is in flight; a later try succeeds.
    ("ConcurrentModificationException", ErrorKind::THROTTLED),
    ("InternalException", ErrorKind::SERVICE_ERROR),
    ("InvalidEventPatternException", ErrorKind::VALIDATION),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("PolicyLengthExceededException", ErrorKind::VALIDATION),
    ("ManagedRuleException", ErrorKind::VALIDATION),
    ("OperationDisabledException", ErrorKind::VALIDATION),
    ("InvalidStateException", ErrorKind::CONFLICT),
    ("IllegalStatusException", ErrorKind::CONFLICT),
];

/// A `map_err` closure turning an SDK error of the call `$call` into a provider error with
/// EventBridge's kinds, naming `$what` and the call.
macro_rules! events_error {
    ($what:expr, $call:expr) => {
        cdkd_aws_common::call_error!($crate::EVENTS_KINDS, $what, $call)
    };
}
pub(crate) use events_error;

/// An event pattern or policy as EventBridge takes it: a JSON string, which a template writes
/// as an object or as the string itself. `None` for an absent, null or empty value.
pub(crate) fn json_text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(text) if text.is_empty() => None,
        other => Some(cdkd_aws_common::json_text(other)),
    }
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
    cdkd_aws_common::template_tags(tags.iter().map(|t| (t.key(), t.value())))
}

/// Whether a template names a setting (present and not null).
pub(crate) fn given(properties: &Map<String, Value>, name: &str) -> bool {
    properties.get(name).is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn eventbridge_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(EVENTS_KINDS, "ResourceAlreadyExistsException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(EVENTS_KINDS, "InvalidEventPatternException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(EVENTS_KINDS, "ConcurrentModificationException"),
            Some(ErrorKind::THROTTLED)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(EVENTS_KINDS, "ResourceNotFoundException"),
            None
        );
        let err = cdkd_aws_common::reclassify(
            ProviderError::new(ErrorKind::OTHER, "exists")
                .with_aws_code("ResourceAlreadyExistsException"),
            EVENTS_KINDS,
        );
        assert_eq!(err.kind, ErrorKind::ALREADY_EXISTS);
        let kept = cdkd_aws_common::reclassify(
            ProviderError::new(ErrorKind::NOT_FOUND, "gone"),
            EVENTS_KINDS,
        );
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
