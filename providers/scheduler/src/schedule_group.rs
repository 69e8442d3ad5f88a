//! `AWS::Scheduler::ScheduleGroup`: physical id (and `Ref`) is the group name; attributes
//! `Arn`, `CreationDate`, `LastModificationDate` (ISO 8601) and `State`. Only the tags change in
//! place (by ARN). Scheduler deletes a group, and every schedule in it, in the background; the
//! delete does not wait for it.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_scheduler::operation::get_schedule_group::GetScheduleGroupOutput;
use aws_sdk_scheduler::types::Tag;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, given_or_generated_name, put, Readable,
    TypeSchema,
};
use cdkd_aws_common::{tag_map, template_tag_changes as tag_changes};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, client_token, found, iso_date, scheduler_error, with_create_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Scheduler::ScheduleGroup";

/// The longest group name Scheduler takes.
const MAX_NAME: usize = 64;

/// How long a create waits for its group to be readable.
const APPEAR_WAIT: Duration = Duration::from_secs(600);

/// The `AWS::Scheduler::ScheduleGroup` provider.
#[derive(Default)]
pub struct ScheduleGroup;

/// Tags as Scheduler takes them.
fn sdk_tags(tags: &BTreeMap<String, String>, what: &str) -> Result<Vec<Tag>, ProviderError> {
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

/// Tags as a template writes them: `[{Key, Value}]` sorted by key, AWS's own (`aws:`) left
/// out; `None` when there are none.
fn template_tags(tags: &[Tag]) -> Option<Value> {
    cdkd_aws_common::template_tags(tags.iter().map(|t| (t.key(), t.value())))
}

/// The attributes of a live group.
fn attributes_of(group: &GetScheduleGroupOutput) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "Arn", group.arn().map(|v| json!(v)));
    put(
        &mut attributes,
        "CreationDate",
        group.creation_date().and_then(iso_date).map(Value::String),
    );
    put(
        &mut attributes,
        "LastModificationDate",
        group
            .last_modification_date()
            .and_then(iso_date)
            .map(Value::String),
    );
    put(
        &mut attributes,
        "State",
        group.state().map(|s| json!(s.as_str())),
    );
    attributes
}

/// The live group `name`; `None` when there is none.
async fn get_group(
    scheduler: &aws_sdk_scheduler::Client,
    what: &str,
    name: &str,
) -> Result<Option<GetScheduleGroupOutput>, ProviderError> {
    found(
        scheduler
            .get_schedule_group()
            .name(name)
            .send()
            .await
            .map_err(scheduler_error!(what, format!("GetScheduleGroup {name}"))),
    )
}

/// The group just created, read once Scheduler answers for it (a read may briefly miss a
/// group just made).
async fn created_group(
    scheduler: &aws_sdk_scheduler::Client,
    what: &str,
    name: &str,
) -> Result<GetScheduleGroupOutput, ProviderError> {
    cdkd_aws_common::poll(APPEAR_WAIT, || get_group(scheduler, what, name))
        .await?
        .ok_or_else(|| {
            ProviderError::other(format!(
                "{what}: schedule group {name} did not appear within 10 minutes of CreateScheduleGroup"
            ))
        })
}

/// Applies a template's tag change to the group `arn`: untag removed keys, tag new and changed
/// ones.
async fn update_tags(
    scheduler: &aws_sdk_scheduler::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed) = tag_changes(before, after);
    if !removed.is_empty() {
        scheduler
            .untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(scheduler_error!(what, "UntagResource"))?;
    }
    if !set.is_empty() {
        scheduler
            .tag_resource()
            .resource_arn(arn)
            .set_tags(Some(sdk_tags(&set, what)?))
            .send()
            .await
            .map_err(scheduler_error!(what, "TagResource"))?;
    }
    Ok(())
}

/// A live group in template shape.
fn template_shape(group: &GetScheduleGroupOutput, tags: &[Tag]) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", group.name().map(|v| json!(v)));
    put(&mut props, "Tags", template_tags(tags));
    props
}

#[async_trait]
impl ResourceProvider for ScheduleGroup {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["Name", "Tags"])
            .create_only(&["Name"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let tags = sdk_tags(&tag_map(&request.properties), &what)?;
        let scheduler = client(ctx).await?;
        scheduler
            .create_schedule_group()
            .name(&name)
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .set_client_token(client_token(&request.client_token))
            .send()
            .await
            .map_err(|e| {
                with_create_kind(aws_error(&format!("{what}: CreateScheduleGroup {name}"), e))
            })?;
        let group = created_group(&scheduler, &what, &name).await?;
        Ok(CreateResult {
            attributes: attributes_of(&group),
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
        let scheduler = client(ctx).await?;
        let group = get_group(&scheduler, &what, name)
            .await?
            .ok_or_else(|| does_not_exist(&what, name, "Scheduler"))?;
        let arn = group.arn().unwrap_or_default();
        update_tags(
            &scheduler,
            &what,
            arn,
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        Ok(UpdateResult {
            attributes: attributes_of(&group),
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
        let scheduler = client(ctx).await?;
        deleted_unless_failed(
            scheduler
                .delete_schedule_group()
                .name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(scheduler_error!(
                    what,
                    format!("DeleteScheduleGroup {name}")
                )),
        )
    }
}

#[async_trait]
impl Readable for ScheduleGroup {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let scheduler = client(ctx).await?;
        let Some(group) = get_group(&scheduler, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let tags = match group.arn() {
            Some(arn) => {
                let answer = scheduler
                    .list_tags_for_resource()
                    .resource_arn(arn)
                    .send()
                    .await
                    .map_err(scheduler_error!(what, "ListTagsForResource"));
                match found(answer)? {
                    Some(answer) => answer.tags.unwrap_or_default(),
                    None => return Ok(None),
                }
            }
            None => Vec::new(),
        };
        Ok(Some(template_shape(&group, &tags)))
    }

    /// `Arn`, `CreationDate`, `LastModificationDate` and `State`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let scheduler = client(ctx).await?;
        match get_group(&scheduler, what, physical_id).await? {
            Some(group) => Ok(attributes_of(&group)),
            None => Err(does_not_exist(what, physical_id, "Scheduler")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_scheduler::primitives::DateTime;
    use aws_sdk_scheduler::types::ScheduleGroupState;

    fn live_group() -> GetScheduleGroupOutput {
        GetScheduleGroupOutput::builder()
            .arn("arn:aws:scheduler:us-east-1:123456789012:schedule-group/jobs")
            .name("jobs")
            .state(ScheduleGroupState::Active)
            .creation_date(DateTime::from_secs(1_893_456_000))
            .last_modification_date(DateTime::from_secs(1_893_456_060))
            .build()
    }

    #[test]
    fn every_attribute_comes_from_the_live_group() {
        assert_eq!(
            Value::Object(attributes_of(&live_group())),
            json!({
                "Arn": "arn:aws:scheduler:us-east-1:123456789012:schedule-group/jobs",
                "CreationDate": "2030-01-01T00:00:00Z",
                "LastModificationDate": "2030-01-01T00:01:00Z",
                "State": "ACTIVE",
            })
        );
    }

    #[test]
    fn the_live_group_reads_back_in_template_shape() {
        let tags = [
            Tag::builder().key("team").value("x").build().unwrap(),
            Tag::builder().key("app").value("y").build().unwrap(),
            Tag::builder()
                .key("aws:cloudformation:stack-name")
                .value("S")
                .build()
                .unwrap(),
        ];
        assert_eq!(
            Value::Object(template_shape(&live_group(), &tags)),
            json!({
                "Name": "jobs",
                "Tags": [{"Key": "app", "Value": "y"}, {"Key": "team", "Value": "x"}],
            })
        );
        assert_eq!(
            Value::Object(template_shape(&live_group(), &[])),
            json!({"Name": "jobs"})
        );
    }
}
