//! `AWS::Lambda::EventSourceMapping`: a poller from a queue or stream to a function. Physical id
//! (and `Ref`) = the mapping's UUID; attribute `Id` (the same) and `EventSourceMappingArn`.

use cdkd_aws_common::{aws_error, deleted_unless_failed, flag, int, require_str};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use aws_sdk_lambda::types::EventSourcePosition;

use crate::{client, read};

/// The provider.
#[derive(Default)]
pub struct EventSourceMapping;

const TYPE: &str = "AWS::Lambda::EventSourceMapping";

fn attributes(uuid: &str, arn: Option<&str>) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(uuid));
    if let Some(arn) = arn {
        attributes.insert("EventSourceMappingArn".into(), json!(arn));
    }
    attributes
}

#[async_trait]
impl ResourceProvider for EventSourceMapping {
    fn schema(&self) -> ResourceTypeSchema {
        ResourceTypeSchema {
            type_name: TYPE.into(),
            handled_properties: [
                "FunctionName",
                "EventSourceArn",
                "BatchSize",
                "Enabled",
                "StartingPosition",
                "MaximumBatchingWindowInSeconds",
            ]
            .map(String::from)
            .to_vec(),
            create_only_properties: ["EventSourceArn", "StartingPosition"]
                .map(String::from)
                .to_vec(),
            operations: vec![
                operation::READ_CURRENT_STATE.into(),
                operation::IMPORT.into(),
            ],
            ..ResourceTypeSchema::default()
        }
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let lambda = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::event_source_mapping(&lambda, &what, &request.physical_id)
                .await?
                .map(|(props, _)| props),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let lambda = client(ctx).await?;
        let (_, arn) = read::event_source_mapping(&lambda, &what, &request.physical_id)
            .await?
            .ok_or_else(|| read::missing(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: attributes(&request.physical_id, arn.as_deref()),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let created = client(ctx)
            .await?
            .create_event_source_mapping()
            .function_name(require_str(props, "FunctionName", &what)?)
            .event_source_arn(require_str(props, "EventSourceArn", &what)?)
            .set_batch_size(int(props.get("BatchSize")))
            .set_enabled(flag(props.get("Enabled")))
            .set_maximum_batching_window_in_seconds(
                int(props.get("MaximumBatchingWindowInSeconds")),
            )
            .set_starting_position(
                props
                    .get("StartingPosition")
                    .and_then(Value::as_str)
                    .map(EventSourcePosition::from),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateEventSourceMapping"), e))?;
        let uuid = created.uuid().unwrap_or_default().to_string();
        Ok(CreateResult {
            attributes: attributes(&uuid, created.event_source_mapping_arn()),
            physical_id: uuid,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let updated = client(ctx)
            .await?
            .update_event_source_mapping()
            .uuid(&request.physical_id)
            .function_name(require_str(props, "FunctionName", &what)?)
            .set_batch_size(int(props.get("BatchSize")))
            .set_enabled(flag(props.get("Enabled")))
            .set_maximum_batching_window_in_seconds(
                int(props.get("MaximumBatchingWindowInSeconds")),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: UpdateEventSourceMapping"), e))?;
        Ok(UpdateResult {
            attributes: attributes(&request.physical_id, updated.event_source_mapping_arn()),
            physical_id: request.physical_id,
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
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_event_source_mapping()
                .uuid(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteEventSourceMapping"), e)),
        )
    }
}
