//! `AWS::Events::EventBus`: physical id (and `Ref`) is the bus name; attributes `Arn`, `Name`
//! and, when the template sets one, `Policy` (the resource policy as a JSON string). The policy
//! is the bus's resource policy, put whole with PutPermission and removed with
//! RemovePermission(RemoveAllPermissions).

use aws_sdk_eventbridge::operation::describe_event_bus::DescribeEventBusOutput;
use aws_sdk_eventbridge::types::{DeadLetterConfig, IncludeDetail, Level, LogConfig, Tag};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, put, require_str, string, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, events_error, found, given, json_text, live_tags, parsed, sdk_tags, tag_map,
    template_tags, update_tags,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Events::EventBus";

/// The settings UpdateEventBus applies; a change to any of them is one UpdateEventBus call.
const SETTINGS: &[&str] = &[
    "Description",
    "KmsKeyIdentifier",
    "DeadLetterConfig",
    "LogConfig",
];

/// The `AWS::Events::EventBus` provider.
#[derive(Default)]
pub struct EventBus;

/// The settings CreateEventBus and UpdateEventBus share.
#[derive(Debug, Clone, PartialEq, Default)]
struct BusSettings {
    /// `Description` (`""` clears it on update).
    description: Option<String>,
    /// `KmsKeyIdentifier`; left out, EventBridge uses an AWS owned key.
    kms_key: Option<String>,
    /// `DeadLetterConfig.Arn`; left out, the bus has no dead-letter queue.
    dead_letter_arn: Option<String>,
    /// `LogConfig` as (`IncludeDetail`, `Level`).
    log_config: Option<(Option<String>, Option<String>)>,
}

/// A template string property, an empty one counted as absent.
fn setting(properties: &Map<String, Value>, name: &str) -> Option<String> {
    text(properties.get(name)).filter(|s| !s.is_empty())
}

/// The bus settings of a template.
fn bus_settings(properties: &Map<String, Value>) -> BusSettings {
    BusSettings {
        description: setting(properties, "Description"),
        kms_key: setting(properties, "KmsKeyIdentifier"),
        dead_letter_arn: properties
            .get("DeadLetterConfig")
            .and_then(|d| text(d.get("Arn")))
            .filter(|s| !s.is_empty()),
        log_config: properties
            .get("LogConfig")
            .filter(|l| l.is_object())
            .map(|l| (text(l.get("IncludeDetail")), text(l.get("Level")))),
    }
}

/// The UpdateEventBus settings from `before` to `after`. UpdateEventBus replaces the bus's
/// settings (a key or dead-letter queue left out is dropped), so only the description and the
/// log configuration are reset explicitly: to `""` and to logging off, EventBridge's defaults.
fn update_settings(before: &Map<String, Value>, after: &Map<String, Value>) -> BusSettings {
    let mut settings = bus_settings(after);
    if settings.description.is_none() && given(before, "Description") {
        settings.description = Some(String::new());
    }
    if settings.log_config.is_none() && given(before, "LogConfig") {
        settings.log_config = Some((Some("NONE".into()), Some("OFF".into())));
    }
    settings
}

/// Whether an update changes anything UpdateEventBus sets.
fn settings_changed(before: &Map<String, Value>, after: &Map<String, Value>) -> bool {
    SETTINGS.iter().any(|name| {
        let value = |m: &Map<String, Value>| m.get(*name).filter(|v| !v.is_null()).cloned();
        value(before) != value(after)
    })
}

/// The SDK's dead-letter configuration of `settings`.
fn dead_letter(settings: &BusSettings) -> Option<DeadLetterConfig> {
    settings
        .dead_letter_arn
        .as_ref()
        .map(|arn| DeadLetterConfig::builder().arn(arn).build())
}

/// The SDK's log configuration of `settings`.
fn log_config(settings: &BusSettings) -> Option<LogConfig> {
    settings.log_config.as_ref().map(|(detail, level)| {
        LogConfig::builder()
            .set_include_detail(detail.as_deref().map(IncludeDetail::from))
            .set_level(level.as_deref().map(Level::from))
            .build()
    })
}

/// The attributes of the bus `name`: its ARN and name, and the policy when there is one.
fn attributes_of(name: &str, arn: &str, policy: Option<String>) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes.insert("Name".into(), json!(name));
    put(&mut attributes, "Policy", policy.map(Value::String));
    attributes
}

/// Puts the bus's whole resource policy, or removes every statement when the template has
/// none (a bus without a policy already counts as done).
async fn apply_policy(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    name: &str,
    policy: Option<&str>,
) -> Result<(), ProviderError> {
    match policy {
        Some(policy) => events
            .put_permission()
            .event_bus_name(name)
            .policy(policy)
            .send()
            .await
            .map(|_| ())
            .map_err(events_error!(what, format!("PutPermission {name}"))),
        None => found(
            events
                .remove_permission()
                .event_bus_name(name)
                .remove_all_permissions(true)
                .send()
                .await
                .map(|_| ())
                .map_err(events_error!(what, format!("RemovePermission {name}"))),
        )
        .map(|_| ()),
    }
}

/// The live bus; `None` when there is none.
async fn describe(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    name: &str,
) -> Result<Option<DescribeEventBusOutput>, ProviderError> {
    found(
        events
            .describe_event_bus()
            .name(name)
            .send()
            .await
            .map_err(events_error!(what, format!("DescribeEventBus {name}"))),
    )
}

/// The ARN of the bus: answered by the call when it does, else read.
async fn arn_of(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    name: &str,
    answered: Option<String>,
) -> Result<String, ProviderError> {
    if let Some(arn) = answered {
        return Ok(arn);
    }
    describe(events, what, name)
        .await?
        .and_then(|bus| bus.arn)
        .ok_or_else(|| does_not_exist(what, name, "EventBridge"))
}

/// A live bus in template shape; the write-only `EventSourceName` echoed from the template.
fn template_shape(
    bus: &DescribeEventBusOutput,
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", bus.name().map(|v| json!(v)));
    put(
        &mut props,
        "EventSourceName",
        template.get("EventSourceName").cloned(),
    );
    put(
        &mut props,
        "Description",
        bus.description()
            .filter(|d| !d.is_empty())
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "KmsKeyIdentifier",
        bus.kms_key_identifier()
            .filter(|k| !k.is_empty())
            .map(|v| json!(v)),
    );
    if let Some(arn) = bus.dead_letter_config().and_then(|d| d.arn()) {
        props.insert("DeadLetterConfig".into(), json!({"Arn": arn}));
    }
    if let Some(log) = bus.log_config() {
        let off = log.level().is_none_or(|l| *l == Level::Off)
            && log
                .include_detail()
                .is_none_or(|d| *d == IncludeDetail::None);
        // Logging off is every bus's default: written only when the template says it.
        if !off || given(template, "LogConfig") {
            let mut block = Map::new();
            put(
                &mut block,
                "IncludeDetail",
                log.include_detail().map(|d| json!(d.as_str())),
            );
            put(&mut block, "Level", log.level().map(|l| json!(l.as_str())));
            props.insert("LogConfig".into(), Value::Object(block));
        }
    }
    put(&mut props, "Policy", bus.policy().map(parsed));
    put(&mut props, "Tags", template_tags(tags));
    props
}

#[async_trait]
impl ResourceProvider for EventBus {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["Name", "EventSourceName", "Policy", "Tags"])
            .handles(SETTINGS)
            // The schema lists only Name, but no call changes a bus's partner event source: a
            // new one is a new bus.
            .create_only(&["Name", "EventSourceName"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let properties = &request.properties;
        let name = require_str(properties, "Name", &what)?.to_string();
        let settings = bus_settings(properties);
        let policy = json_text(properties.get("Policy"));
        let tags = sdk_tags(&tag_map(properties), &what)?;
        let events = client(ctx).await?;
        let answer = events
            .create_event_bus()
            .name(&name)
            .set_event_source_name(string(properties.get("EventSourceName")))
            .set_description(settings.description.clone())
            .set_kms_key_identifier(settings.kms_key.clone())
            .set_dead_letter_config(dead_letter(&settings))
            .set_log_config(log_config(&settings))
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(events_error!(what, format!("CreateEventBus {name}")))?;
        if policy.is_some() {
            apply_policy(&events, &what, &name, policy.as_deref()).await?;
        }
        let arn = arn_of(&events, &what, &name, answer.event_bus_arn).await?;
        Ok(CreateResult {
            attributes: attributes_of(&name, &arn, policy),
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let name = request.physical_id.as_str();
        let events = client(ctx).await?;
        let mut answered = None;
        if settings_changed(before, after) {
            let settings = update_settings(before, after);
            let answer = events
                .update_event_bus()
                .name(name)
                .set_description(settings.description.clone())
                .set_kms_key_identifier(settings.kms_key.clone())
                .set_dead_letter_config(dead_letter(&settings))
                .set_log_config(log_config(&settings))
                .send()
                .await
                .map_err(events_error!(what, format!("UpdateEventBus {name}")))?;
            answered = answer.arn;
        }
        let (old_policy, policy) = (
            json_text(before.get("Policy")),
            json_text(after.get("Policy")),
        );
        if old_policy != policy {
            apply_policy(&events, &what, name, policy.as_deref()).await?;
        }
        let arn = arn_of(&events, &what, name, answered).await?;
        update_tags(&events, &what, &arn, before, after).await?;
        Ok(UpdateResult {
            attributes: attributes_of(name, &arn, policy),
            physical_id: name.to_string(),
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let events = client(ctx).await?;
        deleted_unless_failed(
            events
                .delete_event_bus()
                .name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(events_error!(what, format!("DeleteEventBus {name}"))),
        )
    }
}

#[async_trait]
impl Readable for EventBus {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let events = client(ctx).await?;
        let Some(bus) = describe(&events, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let tags = match bus.arn() {
            Some(arn) => match live_tags(&events, what, arn).await? {
                Some(tags) => tags,
                None => return Ok(None),
            },
            None => Vec::new(),
        };
        Ok(Some(template_shape(&bus, &tags, &request.properties)))
    }

    /// `Arn`, `Name` and `Policy` (when the bus has one).
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let events = client(ctx).await?;
        match describe(&events, what, physical_id).await? {
            Some(bus) => Ok(attributes_of(
                physical_id,
                bus.arn().unwrap_or_default(),
                bus.policy.clone(),
            )),
            None => Err(does_not_exist(what, physical_id, "EventBridge")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_create_takes_every_setting_of_the_template() {
        let template = props(json!({
            "Name": "orders",
            "Description": "order events",
            "KmsKeyIdentifier": "alias/events",
            "DeadLetterConfig": {"Arn": "arn:aws:sqs:us-east-1:123456789012:dlq"},
            "LogConfig": {"IncludeDetail": "FULL", "Level": "INFO"},
        }));
        let settings = bus_settings(&template);
        assert_eq!(
            settings,
            BusSettings {
                description: Some("order events".into()),
                kms_key: Some("alias/events".into()),
                dead_letter_arn: Some("arn:aws:sqs:us-east-1:123456789012:dlq".into()),
                log_config: Some((Some("FULL".into()), Some("INFO".into()))),
            }
        );
        let log = log_config(&settings).unwrap();
        assert_eq!(
            (log.include_detail(), log.level()),
            (Some(&IncludeDetail::Full), Some(&Level::Info))
        );
        assert_eq!(
            dead_letter(&settings).unwrap().arn(),
            Some("arn:aws:sqs:us-east-1:123456789012:dlq")
        );
        assert_eq!(bus_settings(&Map::new()), BusSettings::default());
    }

    #[test]
    fn an_update_resets_removed_settings_to_eventbridge_defaults() {
        let before = props(json!({
            "Name": "b",
            "Description": "d",
            "KmsKeyIdentifier": "k",
            "DeadLetterConfig": {"Arn": "q"},
            "LogConfig": {"Level": "ERROR"},
        }));
        let after = props(json!({"Name": "b"}));
        assert!(settings_changed(&before, &after));
        assert_eq!(
            update_settings(&before, &after),
            BusSettings {
                description: Some(String::new()),
                kms_key: None,
                dead_letter_arn: None,
                log_config: Some((Some("NONE".into()), Some("OFF".into()))),
            }
        );
        assert_eq!(update_settings(&after, &after), BusSettings::default());
        let policy_only = props(json!({"Name": "b", "Policy": {"Statement": []}}));
        assert!(!settings_changed(&after, &policy_only));
    }

    #[test]
    fn the_live_bus_reads_back_in_template_shape() {
        let policy = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"s\",\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"events:PutEvents\",\"Resource\":\"*\"}]}";
        let bus = DescribeEventBusOutput::builder()
            .name("orders")
            .arn("arn:aws:events:us-east-1:123456789012:event-bus/orders")
            .description("order events")
            .kms_key_identifier("alias/events")
            .dead_letter_config(DeadLetterConfig::builder().arn("q").build())
            .log_config(
                LogConfig::builder()
                    .level(Level::Off)
                    .include_detail(IncludeDetail::None)
                    .build(),
            )
            .policy(policy)
            .build();
        let tags = [Tag::builder().key("team").value("x").build().unwrap()];
        let template = props(json!({"EventSourceName": "aws.partner/saas.com/1/src"}));
        assert_eq!(
            Value::Object(template_shape(&bus, &tags, &template)),
            json!({
                "Name": "orders",
                "EventSourceName": "aws.partner/saas.com/1/src",
                "Description": "order events",
                "KmsKeyIdentifier": "alias/events",
                "DeadLetterConfig": {"Arn": "q"},
                "Policy": serde_json::from_str::<Value>(policy).unwrap(),
                "Tags": [{"Key": "team", "Value": "x"}],
            })
        );
        // Logging off is written back when the template asked for it.
        let asked = props(json!({"LogConfig": {"Level": "OFF"}}));
        assert_eq!(
            template_shape(&bus, &[], &asked)["LogConfig"],
            json!({"IncludeDetail": "NONE", "Level": "OFF"})
        );
    }

    #[test]
    fn attributes_carry_the_policy_when_there_is_one() {
        assert_eq!(
            Value::Object(attributes_of("b", "arn:b", Some("{}".into()))),
            json!({"Arn": "arn:b", "Name": "b", "Policy": "{}"})
        );
        assert_eq!(
            Value::Object(attributes_of("b", "arn:b", None)),
            json!({"Arn": "arn:b", "Name": "b"})
        );
    }
}
