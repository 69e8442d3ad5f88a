//! `AWS::SNS::TopicPolicy`: one policy document set on several topics. Physical id (and `Ref`)
//! is a generated id, as CloudFormation's; no attributes. A topic the policy leaves, or every
//! topic when the policy is deleted, gets SNS's default policy back.

use cdkd_aws_common::{physical_name, strings, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{document, is_default_policy, read_policy, reset_policy, set_policy};

const TYPE: &str = "AWS::SNS::TopicPolicy";

/// The `AWS::SNS::TopicPolicy` provider.
#[derive(Default)]
pub struct TopicPolicy;

/// The template's document (as SNS wants it) and topics.
fn policy_and_topics(
    what: &str,
    properties: &Map<String, Value>,
) -> Result<(String, Vec<String>), ProviderError> {
    let policy = properties
        .get("PolicyDocument")
        .map(document)
        .ok_or_else(|| {
            ProviderError::validation(format!("{what}: property PolicyDocument is required"))
        })?;
    let topics = strings(properties.get("Topics")).unwrap_or_default();
    if topics.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: property Topics must list at least one topic ARN"
        )));
    }
    Ok((policy, topics))
}

/// Topics in `before` that `after` no longer lists.
fn left(before: &[String], after: &[String]) -> Vec<String> {
    before
        .iter()
        .filter(|t| !after.contains(t))
        .cloned()
        .collect()
}

/// Of the policies read from each topic (`None`: the topic is gone), the first one that is not
/// SNS's default, with the topics that carry it.
fn current(read: &[(String, Option<Value>)]) -> Option<(Value, Vec<String>)> {
    let policy = read.iter().find_map(|(topic, policy)| {
        policy
            .as_ref()
            .filter(|p| !p.is_null() && !is_default_policy(topic, p))
    })?;
    let topics = read
        .iter()
        .filter(|(_, p)| p.as_ref() == Some(policy))
        .map(|(topic, _)| topic.clone())
        .collect();
    Some((policy.clone(), topics))
}

#[async_trait]
impl ResourceProvider for TopicPolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["PolicyDocument", "Topics"])
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
        let (policy, topics) = policy_and_topics(&what, &request.properties)?;
        for topic in &topics {
            set_policy(ctx, &what, topic, &policy).await?;
        }
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
        let (policy, topics) = policy_and_topics(&what, &request.properties)?;
        let before = strings(request.previous_properties.get("Topics")).unwrap_or_default();
        for topic in &topics {
            set_policy(ctx, &what, topic, &policy).await?;
        }
        for topic in left(&before, &topics) {
            reset_policy(ctx, &what, &topic).await?;
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
        for topic in strings(request.properties.get("Topics")).unwrap_or_default() {
            reset_policy(ctx, &what, &topic).await?;
        }
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for TopicPolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let mut read = Vec::new();
        for topic in strings(request.properties.get("Topics")).unwrap_or_default() {
            let policy = read_policy(ctx, what, &topic).await?;
            read.push((topic, policy));
        }
        Ok(current(&read).map(|(policy, topics)| {
            let mut props = Map::new();
            props.insert("PolicyDocument".into(), policy);
            props.insert("Topics".into(), json!(topics));
            props
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::default_policy;

    #[test]
    fn the_template_gives_a_document_and_topics() {
        let props =
            json!({"PolicyDocument": {"Version": "2012-10-17"}, "Topics": ["arn:t1", "arn:t2"]});
        let (policy, topics) = policy_and_topics("T P", props.as_object().unwrap()).unwrap();
        assert_eq!(policy, "{\"Version\":\"2012-10-17\"}");
        assert_eq!(topics, ["arn:t1", "arn:t2"]);
        let none = json!({"PolicyDocument": {}, "Topics": []});
        assert!(policy_and_topics("T P", none.as_object().unwrap()).is_err());
        let before = vec!["a".to_string(), "b".to_string()];
        assert_eq!(left(&before, &["b".to_string()]), ["a"]);
    }

    #[test]
    fn the_live_policy_is_the_first_one_that_is_not_the_default() {
        let (t1, t2, t3) = (
            "arn:aws:sns:us-east-1:123456789012:one".to_string(),
            "arn:aws:sns:us-east-1:123456789012:two".to_string(),
            "arn:aws:sns:us-east-1:123456789012:three".to_string(),
        );
        let ours = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow"}]});
        let read = vec![
            (t1.clone(), Some(default_policy(&t1))),
            (t2.clone(), Some(ours.clone())),
            (t3.clone(), Some(ours.clone())),
            ("arn:aws:sns:us-east-1:123456789012:gone".to_string(), None),
        ];
        assert_eq!(current(&read), Some((ours, vec![t2, t3])));
        assert_eq!(current(&[(t1.clone(), Some(default_policy(&t1)))]), None);
        assert_eq!(current(&[(t1, None)]), None);
    }
}
