//! A group's SNS notifications: `NotificationConfigurations` (and the older single
//! `NotificationConfiguration`), one PutNotificationConfiguration per topic, which replaces
//! that topic's notification types; a topic the template dropped is deleted.

use std::collections::{BTreeMap, BTreeSet};

use cdkd_aws_common::{string, strings};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::failed;

/// Notification types by topic ARN.
pub(crate) type Notifications = BTreeMap<String, BTreeSet<String>>;

/// The configurations of one template property, in its order.
fn listed(properties: &Map<String, Value>) -> Vec<&Value> {
    let mut all: Vec<&Value> = properties
        .get("NotificationConfigurations")
        .and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default();
    all.extend(
        properties
            .get("NotificationConfiguration")
            .filter(|v| v.is_object()),
    );
    all
}

/// What the template asks for.
pub(crate) fn wanted(properties: &Map<String, Value>) -> Notifications {
    let mut wanted = Notifications::new();
    for item in listed(properties) {
        if let Some(topic) = string(item.get("TopicARN")) {
            wanted
                .entry(topic)
                .or_default()
                .extend(strings(item.get("NotificationTypes")).unwrap_or_default());
        }
    }
    wanted
}

/// Turns group `name`'s notifications from `before` into `after`.
pub(crate) async fn apply(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
    before: &Notifications,
    after: &Notifications,
) -> Result<(), ProviderError> {
    for (topic, types) in after {
        if before.get(topic) == Some(types) {
            continue;
        }
        asg.put_notification_configuration()
            .auto_scaling_group_name(name)
            .topic_arn(topic)
            .set_notification_types(Some(types.iter().cloned().collect()))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: PutNotificationConfiguration {name} to {topic}"
            )))?;
    }
    for topic in before.keys().filter(|t| !after.contains_key(*t)) {
        asg.delete_notification_configuration()
            .auto_scaling_group_name(name)
            .topic_arn(topic)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DeleteNotificationConfiguration {name} of {topic}"
            )))?;
    }
    Ok(())
}

/// Group `name`'s notifications as Auto Scaling holds them.
pub(crate) async fn live(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
) -> Result<Notifications, ProviderError> {
    let mut live = Notifications::new();
    let mut next: Option<String> = None;
    loop {
        let page = asg
            .describe_notification_configurations()
            .auto_scaling_group_names(name)
            .set_next_token(next)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DescribeNotificationConfigurations {name}"
            )))?;
        for c in page.notification_configurations() {
            if let (Some(topic), Some(kind)) = (c.topic_arn(), c.notification_type()) {
                live.entry(topic.to_string())
                    .or_default()
                    .insert(kind.to_string());
            }
        }
        next = page.next_token().map(ToString::to_string);
        if next.is_none() {
            return Ok(live);
        }
    }
}

/// `live` in the shape of `template`: the property it used (the single one for one topic
/// written that way), topics and types in its order where it lists the same ones.
pub(crate) fn shape(
    live: &Notifications,
    template: &Map<String, Value>,
) -> Option<(String, Value)> {
    if live.is_empty() {
        return None;
    }
    let written = listed(template);
    let order = |topic: &str| {
        written
            .iter()
            .position(|w| string(w.get("TopicARN")).as_deref() == Some(topic))
            .unwrap_or(usize::MAX)
    };
    let mut topics: Vec<(&String, &BTreeSet<String>)> = live.iter().collect();
    topics.sort_by_key(|(topic, _)| (order(topic), (*topic).clone()));
    let items: Vec<Value> = topics
        .into_iter()
        .map(|(topic, types)| {
            let as_written = written
                .iter()
                .find(|w| string(w.get("TopicARN")).as_deref() == Some(topic))
                .and_then(|w| strings(w.get("NotificationTypes")))
                .filter(|listed| listed.iter().cloned().collect::<BTreeSet<_>>() == *types);
            let types = as_written.unwrap_or_else(|| types.iter().cloned().collect());
            json!({"TopicARN": topic, "NotificationTypes": types})
        })
        .collect();
    let single = template
        .get("NotificationConfiguration")
        .is_some_and(Value::is_object)
        && template.get("NotificationConfigurations").is_none()
        && items.len() == 1;
    Some(if single {
        ("NotificationConfiguration".into(), items[0].clone())
    } else {
        ("NotificationConfigurations".into(), Value::Array(items))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_template_is_read_per_topic_and_written_back_in_its_own_shape() {
        let template = props(json!({"NotificationConfigurations": [
            {"TopicARN": "arn:b", "NotificationTypes": ["autoscaling:EC2_INSTANCE_TERMINATE", "autoscaling:EC2_INSTANCE_LAUNCH"]},
            {"TopicARN": "arn:a", "NotificationTypes": ["autoscaling:EC2_INSTANCE_LAUNCH_ERROR"]},
        ]}));
        let wanted = wanted(&template);
        assert_eq!(wanted.len(), 2);
        assert_eq!(wanted["arn:b"].len(), 2);
        let (name, value) = shape(&wanted, &template).unwrap();
        assert_eq!(name, "NotificationConfigurations");
        assert_eq!(value, template["NotificationConfigurations"]);

        let single = props(json!({"NotificationConfiguration":
            {"TopicARN": "arn:a", "NotificationTypes": ["autoscaling:EC2_INSTANCE_LAUNCH"]}}));
        let (name, value) = shape(&super::wanted(&single), &single).unwrap();
        assert_eq!(
            (name.as_str(), &value),
            (
                "NotificationConfiguration",
                &single["NotificationConfiguration"]
            )
        );
        assert_eq!(shape(&Notifications::new(), &single), None);
    }
}
