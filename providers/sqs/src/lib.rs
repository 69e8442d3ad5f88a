//! cdkd's SQS provider plugin: `AWS::SQS::Queue`, `AWS::SQS::QueuePolicy` and
//! `AWS::SQS::QueueInlinePolicy` through direct SQS calls. A queue is addressed by its URL in
//! every call; a policy is the queue's `Policy` attribute, so both policy types set and clear
//! that one attribute.

mod queue;
mod queue_inline_policy;
mod queue_policy;

cdkd_provider_api::export_plugin!(description: "AWS::SQS::Queue, QueuePolicy and QueueInlinePolicy through the SQS API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<queue::Queue>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<queue_policy::QueuePolicy>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<queue_inline_policy::QueueInlinePolicy>
);

use aws_sdk_sqs::types::QueueAttributeName;
use cdkd_aws_common::{aws_error, policy_principals, while_iam_propagates};
pub(crate) use cdkd_aws_common::{json_text, parsed};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::Value;

/// An SQS client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_sqs::Client, ProviderError> {
    let config = aws_sdk_sqs::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-sqs"))
        .build();
    Ok(aws_sdk_sqs::Client::from_conf(config))
}

/// The kind SQS's own error codes stand for, where the shared table has none: SQS answers a
/// missing queue with HTTP 400, so neither the code nor the status reads as "not found" there.
/// The code is the query-protocol one (`AWS.SimpleQueueService.NonExistentQueue`) when AWS sends
/// the compatibility header, the JSON shape's name (`QueueDoesNotExist`) otherwise.
pub(crate) const SQS_KINDS: &[(&str, ErrorKind)] = &[
    ("NonExistentQueue", ErrorKind::NOT_FOUND),
    ("QueueDoesNotExist", ErrorKind::NOT_FOUND),
    ("QueueAlreadyExists", ErrorKind::ALREADY_EXISTS),
    ("QueueNameExists", ErrorKind::ALREADY_EXISTS),
    ("InvalidAttributeName", ErrorKind::VALIDATION),
    ("InvalidAttributeValue", ErrorKind::VALIDATION),
    ("InvalidTag", ErrorKind::VALIDATION),
];

/// The kind of an SQS code in [`SQS_KINDS`], the query protocol's `AWS.SimpleQueueService.`
/// prefix taken off first.
pub(crate) fn sqs_kind(code: &str) -> Option<ErrorKind> {
    let code = code.strip_prefix("AWS.SimpleQueueService.").unwrap_or(code);
    cdkd_aws_common::kind_in(SQS_KINDS, code)
}

/// `err` (from [`aws_error`]) with the kind its SQS code stands for; unchanged when the code is
/// not SQS's own.
pub(crate) fn with_sqs_kind(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify_by(err, sqs_kind)
}

/// The `Policy` attribute of the queue at `url`: `None` when it has none, or when the queue is
/// gone.
pub(crate) async fn queue_policy(
    sqs: &aws_sdk_sqs::Client,
    what: &str,
    url: &str,
) -> Result<Option<String>, ProviderError> {
    let answer = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::Policy)
        .send()
        .await;
    match answer {
        Ok(answer) => Ok(answer
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::Policy))
            .filter(|p| !p.is_empty())
            .cloned()),
        Err(err) => match with_sqs_kind(aws_error(
            &format!("{what}: GetQueueAttributes on {url}"),
            err,
        )) {
            err if err.kind == ErrorKind::NOT_FOUND => Ok(None),
            err => Err(err),
        },
    }
}

/// Sets the `Policy` attribute of the queue at `url` (`""` removes it). A policy naming IAM
/// principals is refused ("Invalid value for the parameter Policy") while one of them is too
/// new for SQS to know: tried again for as long as IAM takes to propagate it.
pub(crate) async fn set_policy(
    sqs: &aws_sdk_sqs::Client,
    what: &str,
    url: &str,
    document: &str,
) -> Result<(), ProviderError> {
    let set = || async {
        sqs.set_queue_attributes()
            .queue_url(url)
            .attributes(QueueAttributeName::Policy, document)
            .send()
            .await
            .map(|_| ())
            .map_err(|err| {
                with_sqs_kind(aws_error(
                    &format!("{what}: SetQueueAttributes Policy on {url}"),
                    err,
                ))
            })
    };
    let principals = policy_principals(&Value::String(document.to_string()));
    if !principals.starts_with("the principals") {
        return set().await;
    }
    while_iam_propagates(&principals, principal_unknown, set).await
}

/// Whether SQS refused a policy as SQS does while a principal it names is not yet known.
fn principal_unknown(err: &ProviderError) -> bool {
    err.message
        .contains("Invalid value for the parameter Policy")
}

/// Removes the policy of the queue at `url`; a queue already gone has none left to remove.
pub(crate) async fn clear_policy(
    sqs: &aws_sdk_sqs::Client,
    what: &str,
    url: &str,
) -> Result<(), ProviderError> {
    match set_policy(sqs, what, url, "").await {
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(()),
        other => other,
    }
}

/// The template's `PolicyDocument` as a JSON string, required.
pub(crate) fn policy_document(
    properties: &serde_json::Map<String, Value>,
    what: &str,
) -> Result<String, ProviderError> {
    properties
        .get("PolicyDocument")
        .filter(|d| !d.is_null())
        .map(json_text)
        .ok_or_else(|| {
            ProviderError::validation(format!("{what}: property PolicyDocument is required"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sqs_codes_get_their_kinds() {
        assert_eq!(
            sqs_kind("AWS.SimpleQueueService.NonExistentQueue"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(sqs_kind("QueueDoesNotExist"), Some(ErrorKind::NOT_FOUND));
        assert_eq!(
            sqs_kind("QueueAlreadyExists"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(sqs_kind("QueueNameExists"), Some(ErrorKind::ALREADY_EXISTS));
        assert_eq!(sqs_kind("Throttling"), None);
        let err = with_sqs_kind(
            ProviderError::new(ErrorKind::OTHER, "gone")
                .with_aws_code("AWS.SimpleQueueService.NonExistentQueue"),
        );
        assert_eq!(err.kind, ErrorKind::NOT_FOUND);
        let untouched = with_sqs_kind(ProviderError::new(ErrorKind::THROTTLED, "slow"));
        assert_eq!(untouched.kind, ErrorKind::THROTTLED);
    }

    #[test]
    fn documents_travel_as_json_text_and_read_back_as_objects() {
        assert_eq!(json_text(&json!({"a": 1})), "{\"a\":1}");
        assert_eq!(json_text(&json!("{\"a\":1}")), "{\"a\":1}");
        assert_eq!(parsed("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(parsed("not json"), json!("not json"));
        let props = json!({"PolicyDocument": {"Version": "2012-10-17"}});
        assert_eq!(
            policy_document(props.as_object().unwrap(), "w").unwrap(),
            "{\"Version\":\"2012-10-17\"}"
        );
        let err = policy_document(&serde_json::Map::new(), "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
    }
}
