//! `AWS::SNS::TopicInlinePolicy`: the policy document of one topic. Physical id (and `Ref`) is
//! the topic ARN; no attributes. Deleting it gives the topic SNS's default policy back.

use cdkd_aws_common::{require_str, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{document, is_default_policy, read_policy, reset_policy, set_policy};

const TYPE: &str = "AWS::SNS::TopicInlinePolicy";

/// The `AWS::SNS::TopicInlinePolicy` provider.
#[derive(Default)]
pub struct TopicInlinePolicy;

/// The template's document, as SNS wants it.
fn policy(what: &str, properties: &Map<String, Value>) -> Result<String, ProviderError> {
    properties
        .get("PolicyDocument")
        .map(document)
        .ok_or_else(|| {
            ProviderError::validation(format!("{what}: property PolicyDocument is required"))
        })
}

#[async_trait]
impl ResourceProvider for TopicInlinePolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["PolicyDocument", "TopicArn"])
            .create_only(&["TopicArn"])
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
        let what = format!("{TYPE} {}", request.logical_id);
        let topic = require_str(&request.properties, "TopicArn", &what)?;
        set_policy(ctx, &what, topic, &policy(&what, &request.properties)?).await?;
        Ok(CreateResult {
            physical_id: topic.to_string(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let document = policy(&what, &request.properties)?;
        set_policy(ctx, &what, &request.physical_id, &document).await?;
        Ok(UpdateResult {
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
        reset_policy(ctx, &what, &request.physical_id).await?;
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for TopicInlinePolicy {
    /// The topic's policy; none when the topic is gone or carries only SNS's default.
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let topic = request.physical_id.as_str();
        let Some(policy) = read_policy(ctx, what, topic).await? else {
            return Ok(None);
        };
        if policy.is_null() || is_default_policy(topic, &policy) {
            return Ok(None);
        }
        let mut props = Map::new();
        props.insert("PolicyDocument".into(), policy);
        props.insert("TopicArn".into(), json!(topic));
        Ok(Some(props))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_sent_as_json_text() {
        let props = json!({"PolicyDocument": {"Statement": []}, "TopicArn": "arn:t"});
        assert_eq!(
            policy("T P", props.as_object().unwrap()).unwrap(),
            "{\"Statement\":[]}"
        );
        let text = json!({"PolicyDocument": "{\"a\":1}"});
        assert_eq!(
            policy("T P", text.as_object().unwrap()).unwrap(),
            "{\"a\":1}"
        );
        assert!(policy("T P", &Map::new()).is_err());
    }
}
