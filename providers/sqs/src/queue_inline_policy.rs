//! `AWS::SQS::QueueInlinePolicy`: a policy document set as the `Policy` attribute of one queue.
//! Physical id (and `Ref`) is the queue URL; no attributes. Deleting it removes the queue's
//! policy.

use cdkd_aws_common::{require_str, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{clear_policy, client, parsed, policy_document, queue_policy, set_policy};

/// The CloudFormation type name.
const TYPE: &str = "AWS::SQS::QueueInlinePolicy";

/// The `AWS::SQS::QueueInlinePolicy` provider.
#[derive(Default)]
pub struct QueueInlinePolicy;

/// Sets the template's document on its queue; answers the queue URL.
async fn put(
    ctx: &PluginContext,
    logical_id: &str,
    properties: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let what = format!("{TYPE} {logical_id}");
    let url = require_str(properties, "Queue", &what)?.to_string();
    let document = policy_document(properties, &what)?;
    set_policy(&client(ctx).await?, &what, &url, &document).await?;
    Ok(url)
}

#[async_trait]
impl ResourceProvider for QueueInlinePolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["PolicyDocument", "Queue"])
            .create_only(&["Queue"])
            .read_and_import()
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let url = put(ctx, &request.logical_id, &request.properties).await?;
        Ok(CreateResult {
            physical_id: url,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let url = put(ctx, &request.logical_id, &request.properties).await?;
        Ok(UpdateResult {
            physical_id: url,
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
        clear_policy(&client(ctx).await?, &what, &request.physical_id).await?;
        Ok(DeleteResult::Deleted)
    }
}

/// A policy reads back as its queue and document; a queue without one (or without the queue)
/// has none.
#[async_trait]
impl Readable for QueueInlinePolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let url = request.physical_id.as_str();
        let Some(policy) = queue_policy(&client(ctx).await?, what, url).await? else {
            return Ok(None);
        };
        Ok(json!({"PolicyDocument": parsed(&policy), "Queue": url})
            .as_object()
            .cloned())
    }
}
