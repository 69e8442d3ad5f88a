//! `AWS::Logs::ResourcePolicy`: an account-level resource policy letting other services write to
//! CloudWatch Logs. Physical id (and `Ref`) is the policy name; no attributes. PutResourcePolicy
//! writes the whole policy, so a create and an update are one call.

use cdkd_aws_common::{aws_error, deleted_unless_failed, require_str, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, document_like, json_text, with_logs_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Logs::ResourcePolicy";

/// The `AWS::Logs::ResourcePolicy` provider.
#[derive(Default)]
pub struct ResourcePolicy;

/// The template's `PolicyDocument` as the JSON string CloudWatch Logs takes, required.
fn policy_document(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    properties
        .get("PolicyDocument")
        .filter(|d| !d.is_null())
        .map(json_text)
        .ok_or_else(|| {
            ProviderError::validation(format!("{what}: property PolicyDocument is required"))
        })
}

/// The live policy in template shape, its document in the shape the template wrote it.
fn template_shape(name: &str, document: &str, template: Option<&Value>) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("PolicyName".into(), json!(name));
    props.insert("PolicyDocument".into(), document_like(document, template));
    props
}

/// The document of the account's policy `name`; `None` when there is none.
async fn find_policy(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    name: &str,
) -> Result<Option<String>, ProviderError> {
    let mut token: Option<String> = None;
    loop {
        let page = logs
            .describe_resource_policies()
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| {
                with_logs_kind(aws_error(&format!("{what}: DescribeResourcePolicies"), e))
            })?;
        if let Some(policy) = page
            .resource_policies()
            .iter()
            .find(|p| p.policy_name() == Some(name))
        {
            return Ok(Some(
                policy.policy_document().unwrap_or_default().to_string(),
            ));
        }
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => return Ok(None),
        }
    }
}

/// Writes the policy `name` with the template's document.
async fn put(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    name: &str,
    properties: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let document = policy_document(properties, what)?;
    logs.put_resource_policy()
        .policy_name(name)
        .policy_document(document)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| with_logs_kind(aws_error(&format!("{what}: PutResourcePolicy {name}"), e)))
}

#[async_trait]
impl ResourceProvider for ResourcePolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["PolicyName", "PolicyDocument"])
            .create_only(&["PolicyName"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = require_str(&request.properties, "PolicyName", &what)?;
        let logs = client(ctx).await?;
        // PutResourcePolicy overwrites a policy of the same name; CloudFormation refuses one
        // that exists instead of taking it over.
        if find_policy(&logs, &what, name).await?.is_some() {
            return Err(ProviderError::new(
                ErrorKind::ALREADY_EXISTS,
                format!("{what}: resource policy {name} already exists"),
            ));
        }
        put(&logs, &what, name, &request.properties).await?;
        Ok(CreateResult {
            physical_id: name.to_string(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let logs = client(ctx).await?;
        put(&logs, &what, &request.physical_id, &request.properties).await?;
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
        let name = &request.physical_id;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_resource_policy()
                .policy_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    with_logs_kind(aws_error(
                        &format!("{what}: DeleteResourcePolicy {name}"),
                        e,
                    ))
                }),
        )
    }
}

#[async_trait]
impl Readable for ResourcePolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let logs = client(ctx).await?;
        let name = request.physical_id.as_str();
        Ok(find_policy(&logs, what, name).await?.map(|document| {
            template_shape(name, &document, request.properties.get("PolicyDocument"))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_travels_as_json_text() {
        let object = json!({"PolicyName": "p", "PolicyDocument": {"Version": "2012-10-17"}});
        assert_eq!(
            policy_document(object.as_object().unwrap(), "T L").unwrap(),
            "{\"Version\":\"2012-10-17\"}"
        );
        let text = json!({"PolicyDocument": "{\"Version\": \"2012-10-17\"}"});
        assert_eq!(
            policy_document(text.as_object().unwrap(), "T L").unwrap(),
            "{\"Version\": \"2012-10-17\"}"
        );
        let err = policy_document(&Map::new(), "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(err.message.contains("T L: property PolicyDocument"));
    }

    #[test]
    fn the_live_policy_reads_back_as_the_template_wrote_it() {
        let live = "{\"Version\":\"2012-10-17\",\"Statement\":[]}";
        let as_text = json!("{ \"Version\": \"2012-10-17\", \"Statement\": [] }");
        assert_eq!(
            Value::Object(template_shape("p", live, Some(&as_text))),
            json!({"PolicyName": "p", "PolicyDocument": as_text})
        );
        assert_eq!(
            Value::Object(template_shape("p", live, Some(&json!({"Version": "x"})))),
            json!({"PolicyName": "p", "PolicyDocument": {"Version": "2012-10-17", "Statement": []}})
        );
        assert_eq!(
            Value::Object(template_shape("p", live, None)),
            json!({"PolicyName": "p", "PolicyDocument": {"Version": "2012-10-17", "Statement": []}})
        );
    }
}
