//! `AWS::Events::Archive`: physical id (and `Ref`) is the archive name; attribute `Arn`. A
//! create and an update wait until the archive leaves `CREATING` / `UPDATING`, so the next change
//! to it (or its deletion) is accepted.

use std::time::Duration;

use aws_sdk_eventbridge::operation::describe_archive::DescribeArchiveOutput;
use aws_sdk_eventbridge::types::ArchiveState;
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, given_or_generated_name, int, put, require_str, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, events_error, found, given, json_text, parsed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Events::Archive";

/// The longest archive name.
const MAX_NAME: usize = 48;

/// The retention of an archive that names none: 0, kept forever.
const KEEP_FOREVER: i32 = 0;

/// The `AWS::Events::Archive` provider.
#[derive(Default)]
pub struct Archive;

/// The settings CreateArchive and UpdateArchive share.
#[derive(Debug, Clone, PartialEq, Default)]
struct ArchiveSettings {
    /// `Description` (`""` clears it on update).
    description: Option<String>,
    /// `EventPattern` as a JSON string.
    event_pattern: Option<String>,
    /// `RetentionDays` (0 keeps events forever).
    retention_days: Option<i32>,
    /// `KmsKeyIdentifier`; left out, EventBridge uses an AWS owned key.
    kms_key: Option<String>,
}

/// The archive settings of a template.
fn archive_settings(properties: &Map<String, Value>) -> ArchiveSettings {
    ArchiveSettings {
        description: text(properties.get("Description")).filter(|s| !s.is_empty()),
        event_pattern: json_text(properties.get("EventPattern")),
        retention_days: int(properties.get("RetentionDays")),
        kms_key: text(properties.get("KmsKeyIdentifier")).filter(|s| !s.is_empty()),
    }
}

/// The UpdateArchive settings from `before` to `after`: a removed description is cleared and a
/// removed retention goes back to "forever", AWS's defaults. UpdateArchive keeps a pattern it
/// is not given, and takes no value meaning "none", so a removed `EventPattern` stays.
fn update_settings(before: &Map<String, Value>, after: &Map<String, Value>) -> ArchiveSettings {
    let mut settings = archive_settings(after);
    if settings.description.is_none() && given(before, "Description") {
        settings.description = Some(String::new());
    }
    if settings.retention_days.is_none() && given(before, "RetentionDays") {
        settings.retention_days = Some(KEEP_FOREVER);
    }
    settings
}

/// The attributes of an archive.
fn attributes_of(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes
}

/// The live archive; `None` when there is none.
async fn describe(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    name: &str,
) -> Result<Option<DescribeArchiveOutput>, ProviderError> {
    found(
        events
            .describe_archive()
            .archive_name(name)
            .send()
            .await
            .map_err(events_error!(what, format!("DescribeArchive {name}"))),
    )
}

/// Waits until the archive `name` is out of `CREATING` / `UPDATING` and answers its ARN; a
/// failed create or update is an error with AWS's reason.
async fn settled_arn(
    events: &aws_sdk_eventbridge::Client,
    what: &str,
    name: &str,
) -> Result<String, ProviderError> {
    let arn = cdkd_aws_common::poll(Duration::from_secs(600), || async move {
        let Some(archive) = describe(events, what, name).await? else {
            return Err(does_not_exist(what, name, "EventBridge"));
        };
        match archive.state() {
            Some(ArchiveState::Creating | ArchiveState::Updating) => Ok(None),
            Some(state @ (ArchiveState::CreateFailed | ArchiveState::UpdateFailed)) => {
                Err(ProviderError::new(
                    ErrorKind::OTHER,
                    format!(
                        "{what}: archive {name} is {}: {}",
                        state.as_str(),
                        archive.state_reason().unwrap_or("no reason given")
                    ),
                ))
            }
            _ => archive.archive_arn.map(Some).ok_or_else(|| {
                ProviderError::other(format!("{what}: DescribeArchive {name} gave no ARN"))
            }),
        }
    })
    .await?;
    arn.ok_or_else(|| {
        ProviderError::other(format!(
            "{what}: archive {name} did not settle within 10 minutes"
        ))
    })
}

/// A live archive in template shape; the retention written when it keeps events for a while,
/// or when the template names it.
fn template_shape(
    archive: &DescribeArchiveOutput,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "ArchiveName",
        archive.archive_name().map(|v| json!(v)),
    );
    put(
        &mut props,
        "SourceArn",
        archive.event_source_arn().map(|v| json!(v)),
    );
    put(
        &mut props,
        "Description",
        archive
            .description()
            .filter(|d| !d.is_empty())
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "EventPattern",
        archive
            .event_pattern()
            .filter(|p| !p.is_empty())
            .map(parsed),
    );
    put(
        &mut props,
        "RetentionDays",
        archive
            .retention_days()
            .filter(|days| *days != KEEP_FOREVER || given(template, "RetentionDays"))
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "KmsKeyIdentifier",
        archive
            .kms_key_identifier()
            .filter(|k| !k.is_empty())
            .map(|v| json!(v)),
    );
    props
}

#[async_trait]
impl ResourceProvider for Archive {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "ArchiveName",
                "SourceArn",
                "Description",
                "EventPattern",
                "RetentionDays",
                "KmsKeyIdentifier",
            ])
            .create_only(&["ArchiveName", "SourceArn"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "ArchiveName", MAX_NAME, false);
        let source = require_str(&request.properties, "SourceArn", &what)?;
        let settings = archive_settings(&request.properties);
        let events = client(ctx).await?;
        events
            .create_archive()
            .archive_name(&name)
            .event_source_arn(source)
            .set_description(settings.description)
            .set_event_pattern(settings.event_pattern)
            .set_retention_days(settings.retention_days)
            .set_kms_key_identifier(settings.kms_key)
            .send()
            .await
            .map_err(events_error!(what, format!("CreateArchive {name}")))?;
        let arn = settled_arn(&events, &what, &name).await?;
        Ok(CreateResult {
            attributes: attributes_of(&arn),
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
        let name = request.physical_id.as_str();
        let settings = update_settings(&request.previous_properties, &request.properties);
        let events = client(ctx).await?;
        events
            .update_archive()
            .archive_name(name)
            .set_description(settings.description)
            .set_event_pattern(settings.event_pattern)
            .set_retention_days(settings.retention_days)
            .set_kms_key_identifier(settings.kms_key)
            .send()
            .await
            .map_err(events_error!(what, format!("UpdateArchive {name}")))?;
        let arn = settled_arn(&events, &what, name).await?;
        Ok(UpdateResult {
            attributes: attributes_of(&arn),
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
                .delete_archive()
                .archive_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(events_error!(what, format!("DeleteArchive {name}"))),
        )
    }
}

#[async_trait]
impl Readable for Archive {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let events = client(ctx).await?;
        Ok(describe(&events, what, &request.physical_id)
            .await?
            .map(|archive| template_shape(&archive, &request.properties)))
    }

    /// `Arn`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let events = client(ctx).await?;
        match describe(&events, what, physical_id)
            .await?
            .and_then(|a| a.archive_arn)
        {
            Some(arn) => Ok(attributes_of(&arn)),
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
    fn a_create_takes_every_setting_and_the_pattern_as_json_text() {
        let template = props(json!({
            "SourceArn": "arn:aws:events:us-east-1:123456789012:event-bus/orders",
            "Description": "all orders",
            "EventPattern": {"source": ["shop"]},
            "RetentionDays": "30",
            "KmsKeyIdentifier": "alias/archive",
        }));
        let settings = archive_settings(&template);
        assert_eq!(
            serde_json::from_str::<Value>(settings.event_pattern.as_deref().unwrap()).unwrap(),
            json!({"source": ["shop"]})
        );
        assert_eq!(
            settings,
            ArchiveSettings {
                description: Some("all orders".into()),
                event_pattern: settings.event_pattern.clone(),
                retention_days: Some(30),
                kms_key: Some("alias/archive".into()),
            }
        );
        assert_eq!(archive_settings(&Map::new()), ArchiveSettings::default());
    }

    #[test]
    fn an_update_resets_removed_settings_to_aws_defaults() {
        let before = props(json!({
            "Description": "d",
            "RetentionDays": 7,
            "EventPattern": {"source": ["a"]},
        }));
        let after = props(json!({"EventPattern": "{\"source\":[\"b\"]}"}));
        assert_eq!(
            update_settings(&before, &after),
            ArchiveSettings {
                description: Some(String::new()),
                event_pattern: Some("{\"source\":[\"b\"]}".into()),
                retention_days: Some(0),
                kms_key: None,
            }
        );
        assert_eq!(update_settings(&after, &after).retention_days, None);
    }

    #[test]
    fn the_live_archive_reads_back_in_template_shape() {
        let archive = DescribeArchiveOutput::builder()
            .archive_name("orders-archive")
            .archive_arn("arn:aws:events:us-east-1:123456789012:archive/orders-archive")
            .event_source_arn("arn:aws:events:us-east-1:123456789012:event-bus/orders")
            .description("")
            .event_pattern("{\"source\":[\"shop\"]}")
            .retention_days(0)
            .state(ArchiveState::Enabled)
            .build();
        assert_eq!(
            Value::Object(template_shape(&archive, &Map::new())),
            json!({
                "ArchiveName": "orders-archive",
                "SourceArn": "arn:aws:events:us-east-1:123456789012:event-bus/orders",
                "EventPattern": {"source": ["shop"]},
            })
        );
        let asked = props(json!({"RetentionDays": 0}));
        assert_eq!(template_shape(&archive, &asked)["RetentionDays"], json!(0));
        assert_eq!(
            Value::Object(attributes_of("arn:a")),
            json!({"Arn": "arn:a"})
        );
    }
}
