//! The bucket's `NotificationConfiguration` in the S3 API's shape. (CDK apps usually configure
//! notifications through the `Custom::S3BucketNotifications` resource instead; this is the
//! plain property.)

use aws_sdk_s3::types::{
    Event, EventBridgeConfiguration, FilterRule, FilterRuleName, LambdaFunctionConfiguration,
    NotificationConfiguration, NotificationConfigurationFilter, QueueConfiguration, S3KeyFilter,
    TopicConfiguration,
};
use cdkd_provider_api::ProviderError;
use serde_json::Value;

/// One destination entry of any kind: its events, target ARN and key filter.
struct Target {
    events: Vec<Event>,
    arn: String,
    filter: Option<NotificationConfigurationFilter>,
}

fn targets(
    what: &str,
    value: &Value,
    list: &str,
    arn_key: &str,
) -> Result<Vec<Target>, ProviderError> {
    let mut targets = Vec::new();
    for (index, entry) in value
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("{what}: property NotificationConfiguration.{list}[{index}]");
        let arn = entry
            .get(arn_key)
            .and_then(Value::as_str)
            .ok_or_else(|| ProviderError::validation(format!("{at}: {arn_key} is required")))?;
        let event = entry
            .get("Event")
            .and_then(Value::as_str)
            .ok_or_else(|| ProviderError::validation(format!("{at}: Event is required")))?;
        let rules: Vec<FilterRule> = entry
            .pointer("/Filter/S3Key/Rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|rule| {
                FilterRule::builder()
                    .set_name(
                        rule.get("Name")
                            .and_then(Value::as_str)
                            .map(|n| FilterRuleName::from(n.to_ascii_lowercase().as_str())),
                    )
                    .set_value(rule.get("Value").and_then(Value::as_str).map(String::from))
                    .build()
            })
            .collect();
        targets.push(Target {
            events: vec![Event::from(event)],
            arn: arn.to_string(),
            filter: (!rules.is_empty()).then(|| {
                NotificationConfigurationFilter::builder()
                    .key(S3KeyFilter::builder().set_filter_rules(Some(rules)).build())
                    .build()
            }),
        });
    }
    Ok(targets)
}

/// The S3 configuration for a template value; `None` (property removed) clears every
/// notification.
pub fn configuration(
    what: &str,
    value: Option<&Value>,
) -> Result<NotificationConfiguration, ProviderError> {
    let mut built = NotificationConfiguration::builder();
    let Some(value) = value else {
        return Ok(built.build());
    };
    let invalid = |e: aws_sdk_s3::error::BuildError| {
        ProviderError::validation(format!("{what}: property NotificationConfiguration: {e}"))
    };
    for target in targets(what, value, "LambdaConfigurations", "Function")? {
        built = built.lambda_function_configurations(
            LambdaFunctionConfiguration::builder()
                .lambda_function_arn(target.arn)
                .set_events(Some(target.events))
                .set_filter(target.filter)
                .build()
                .map_err(invalid)?,
        );
    }
    for target in targets(what, value, "QueueConfigurations", "Queue")? {
        built = built.queue_configurations(
            QueueConfiguration::builder()
                .queue_arn(target.arn)
                .set_events(Some(target.events))
                .set_filter(target.filter)
                .build()
                .map_err(invalid)?,
        );
    }
    for target in targets(what, value, "TopicConfigurations", "Topic")? {
        built = built.topic_configurations(
            TopicConfiguration::builder()
                .topic_arn(target.arn)
                .set_events(Some(target.events))
                .set_filter(target.filter)
                .build()
                .map_err(invalid)?,
        );
    }
    if value
        .pointer("/EventBridgeConfiguration/EventBridgeEnabled")
        .and_then(|v| v.as_bool().or_else(|| v.as_str().map(|s| s == "true")))
        .unwrap_or(value.get("EventBridgeConfiguration").is_some())
    {
        built = built.event_bridge_configuration(EventBridgeConfiguration::builder().build());
    }
    Ok(built.build())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn queue_topic_and_eventbridge_entries_map_with_their_filters() {
        let value = json!({
            "QueueConfigurations": [{"Event": "s3:ObjectCreated:*", "Queue": "arn:aws:sqs:us-east-1:1:q",
                "Filter": {"S3Key": {"Rules": [{"Name": "prefix", "Value": "in/"}, {"Name": "Suffix", "Value": ".csv"}]}}}],
            "TopicConfigurations": [{"Event": "s3:ObjectRemoved:*", "Topic": "arn:aws:sns:us-east-1:1:t"}],
            "EventBridgeConfiguration": {"EventBridgeEnabled": true},
        });
        let built = super::configuration("AWS::S3::Bucket B", Some(&value)).unwrap();
        let queue = &built.queue_configurations()[0];
        assert_eq!(queue.queue_arn(), "arn:aws:sqs:us-east-1:1:q");
        assert_eq!(queue.events()[0].as_str(), "s3:ObjectCreated:*");
        let rules = queue.filter().unwrap().key().unwrap().filter_rules();
        assert_eq!(rules[1].name().unwrap().as_str(), "suffix");
        assert_eq!(
            built.topic_configurations()[0].topic_arn(),
            "arn:aws:sns:us-east-1:1:t"
        );
        assert!(built.event_bridge_configuration().is_some());
        assert!(super::configuration("B", None)
            .unwrap()
            .queue_configurations()
            .is_empty());
    }

    #[test]
    fn a_missing_target_names_the_entry() {
        let value = json!({"LambdaConfigurations": [{"Event": "s3:ObjectCreated:*"}]});
        let err = super::configuration("AWS::S3::Bucket B", Some(&value)).unwrap_err();
        assert!(
            err.message.contains(
                "NotificationConfiguration.LambdaConfigurations[0]: Function is required"
            ),
            "{}",
            err.message
        );
    }
}
