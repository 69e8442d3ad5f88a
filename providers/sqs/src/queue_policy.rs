//! `AWS::SQS::QueuePolicy`: one policy document set as the `Policy` attribute of every listed
//! queue. Physical id (and `Ref`) is a generated id, as CloudFormation generates one; no
//! attributes. Deleting it removes the policy of every listed queue.

use cdkd_aws_common::{physical_name, strings, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{clear_policy, client, parsed, policy_document, queue_policy, set_policy};

/// The CloudFormation type name.
const TYPE: &str = "AWS::SQS::QueuePolicy";

/// The `AWS::SQS::QueuePolicy` provider.
#[derive(Default)]
pub struct QueuePolicy;

/// The template's `Queues` (queue URLs).
fn queues(properties: &Map<String, Value>) -> Vec<String> {
    strings(properties.get("Queues")).unwrap_or_default()
}

/// The queues listed `before` and no longer `after`.
fn dropped(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<String> {
    let now = queues(after);
    queues(before)
        .into_iter()
        .filter(|q| !now.contains(q))
        .collect()
}

/// Sets `properties`' document on every queue it lists.
async fn apply(
    sqs: &aws_sdk_sqs::Client,
    what: &str,
    properties: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let document = policy_document(properties, what)?;
    let listed = queues(properties);
    if listed.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: property Queues must list at least one queue URL"
        )));
    }
    for url in &listed {
        set_policy(sqs, what, url, &document).await?;
    }
    Ok(())
}

/// The answer of a read: the first policy found and the queues carrying that same document;
/// `None` when no queue carries one. `policies` pairs each listed queue with its policy text.
fn read_answer(policies: &[(String, Option<String>)]) -> Option<Map<String, Value>> {
    let first = policies.iter().find_map(|(_, p)| p.as_deref())?;
    let document = parsed(first);
    let carrying: Vec<&str> = policies
        .iter()
        .filter(|(_, p)| p.as_deref().is_some_and(|p| parsed(p) == document))
        .map(|(url, _)| url.as_str())
        .collect();
    json!({"PolicyDocument": document, "Queues": carrying})
        .as_object()
        .cloned()
}

#[async_trait]
impl ResourceProvider for QueuePolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["PolicyDocument", "Queues"])
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
        apply(&client(ctx).await?, &what, &request.properties).await?;
        Ok(CreateResult {
            physical_id: physical_name(&request, 255, false),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let sqs = client(ctx).await?;
        apply(&sqs, &what, &request.properties).await?;
        for url in dropped(&request.previous_properties, &request.properties) {
            clear_policy(&sqs, &what, &url).await?;
        }
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
        let sqs = client(ctx).await?;
        for url in queues(&request.properties) {
            clear_policy(&sqs, &what, &url).await?;
        }
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for QueuePolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sqs = client(ctx).await?;
        let mut policies = Vec::new();
        for url in queues(&request.properties) {
            let policy = queue_policy(&sqs, what, &url).await?;
            policies.push((url, policy));
        }
        Ok(read_answer(&policies))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_dropped_from_the_list_are_found() {
        let before = json!({"Queues": ["https://q/1", "https://q/2"]});
        let after = json!({"Queues": ["https://q/2", "https://q/3"]});
        assert_eq!(
            dropped(before.as_object().unwrap(), after.as_object().unwrap()),
            ["https://q/1"]
        );
        assert_eq!(queues(&Map::new()), Vec::<String>::new());
    }

    #[test]
    fn a_read_answers_the_queues_that_carry_the_first_policy() {
        let doc = "{\"Version\":\"2012-10-17\",\"Statement\":[]}";
        let policies = vec![
            ("https://q/1".to_string(), None),
            ("https://q/2".to_string(), Some(doc.to_string())),
            (
                "https://q/3".to_string(),
                Some("{\"Version\":\"other\"}".into()),
            ),
            (
                "https://q/4".to_string(),
                Some("{ \"Version\": \"2012-10-17\", \"Statement\": [] }".into()),
            ),
        ];
        assert_eq!(
            Value::Object(read_answer(&policies).unwrap()),
            json!({
                "PolicyDocument": {"Version": "2012-10-17", "Statement": []},
                "Queues": ["https://q/2", "https://q/4"],
            })
        );
        assert_eq!(read_answer(&[("https://q/1".into(), None)]), None);
        assert_eq!(read_answer(&[]), None);
    }
}
