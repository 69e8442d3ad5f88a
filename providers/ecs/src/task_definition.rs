//! `AWS::ECS::TaskDefinition`: physical id (and `Ref`) is the revision's ARN; attribute
//! `TaskDefinitionArn`. A revision cannot change: every property but `Tags` is create-only, so a
//! change registers a new revision (a replacement, as under CloudFormation) and the service that
//! names it is updated to it. The delete deregisters the revision and asks ECS to delete it
//! (DeleteTaskDefinitions). The create tags the revision `cdkd:create-token`, so the run after a
//! crash finds it among its family's revisions.

use aws_sdk_ecs::types::{SortOrder, TaskDefinitionField, TaskDefinitionStatus};
use cdkd_aws_common::{
    created_name, does_not_exist, found, given_or_generated_name, put, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult, CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::raw::{template_key, to_template, RawJson};
use crate::{client, failed, members, retag, tags, template_tags};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ECS::TaskDefinition";

/// The longest family name ECS takes.
const MAX_FAMILY: usize = 255;

/// How many of a family's newest revisions a search for a create's token looks at.
const SEARCHED_REVISIONS: usize = 25;

/// The template properties that make up the revision (all but `Family` and `Tags`).
const DEFINITION: &[&str] = &[
    "ContainerDefinitions",
    "Cpu",
    "EnableFaultInjection",
    "EphemeralStorage",
    "ExecutionRoleArn",
    "InferenceAccelerators",
    "IpcMode",
    "Memory",
    "NetworkMode",
    "PidMode",
    "PlacementConstraints",
    "ProxyConfiguration",
    "RequiresCompatibilities",
    "RuntimePlatform",
    "TaskRoleArn",
    "Volumes",
];

/// The `AWS::ECS::TaskDefinition` provider.
#[derive(Default)]
pub struct TaskDefinition;

/// The RegisterTaskDefinition body of a template: its definition in ECS's casing, the family,
/// and its tags with cdkd's token tag. ECS takes the task's `cpu` and `memory` as strings.
fn register_body(properties: &Map<String, Value>, family: &str, token: &str) -> Value {
    let mut body = members(properties, DEFINITION);
    for key in ["cpu", "memory"] {
        if let Some(Value::Number(n)) = body.get(key) {
            let text = n.to_string();
            body.insert(key.into(), json!(text));
        }
    }
    body.insert("family".into(), json!(family));
    let mut tags = tags(properties.get("Tags"));
    if !token.is_empty() {
        tags.push(json!({"key": CREATE_TOKEN_TAG, "value": token}));
    }
    if !tags.is_empty() {
        body.insert("tags".into(), Value::Array(tags));
    }
    Value::Object(body)
}

/// The revision `arn` as ECS answers it (`taskDefinition` and `tags`); `None` when it does not
/// exist.
async fn describe(
    ecs: &aws_sdk_ecs::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Value>, ProviderError> {
    let raw = RawJson::new(None);
    let sent = ecs
        .describe_task_definition()
        .task_definition(arn)
        .include(TaskDefinitionField::Tags)
        .customize()
        .interceptor(raw.clone())
        .send()
        .await
        .map_err(failed!(format!("{what}: DescribeTaskDefinition {arn}")))
        .map_err(missing_is_not_found);
    if found(sent)?.is_none() {
        return Ok(None);
    }
    raw.answer(&format!("{what}: DescribeTaskDefinition {arn}"))
        .map(Some)
}

/// ECS answers a revision it does not know with a generic `ClientException` ("Unable to describe
/// task definition."): read as "not found".
fn missing_is_not_found(mut err: ProviderError) -> ProviderError {
    if err.aws_code() == Some("ClientException")
        && (err.message.contains("Unable to describe") || err.message.contains("does not exist"))
    {
        err.kind = ErrorKind::NOT_FOUND;
    }
    err
}

/// A described revision in template shape; `None` once it is deregistered (INACTIVE or being
/// deleted), which CloudFormation counts as deleted.
fn template_shape(answer: &Value) -> Option<Map<String, Value>> {
    let definition = &answer["taskDefinition"];
    if definition["status"] != "ACTIVE" {
        return None;
    }
    let mut props = Map::new();
    put(&mut props, "Family", definition.get("family").cloned());
    for key in DEFINITION {
        let member = crate::raw::api_key(key);
        if let Some(value) = definition.get(&member).and_then(to_template) {
            props.insert(template_key(&member), value);
        }
    }
    put(&mut props, "Tags", template_tags(answer.get("tags")));
    Some(props)
}

/// `TaskDefinitionArn`.
fn attributes_of(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("TaskDefinitionArn".into(), json!(arn));
    attributes
}

/// Whether a described revision carries the create token `token`.
fn carries_token(answer: &Value, token: &str) -> bool {
    answer["tags"].as_array().is_some_and(|tags| {
        tags.iter()
            .any(|t| t["key"] == CREATE_TOKEN_TAG && t["value"] == token)
    })
}

#[async_trait]
impl ResourceProvider for TaskDefinition {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(DEFINITION)
            .handles(&["Family"])
            .all_create_only()
            .handles(&["Tags"])
            .read_and_import()
            .finds_created_in(&["Family"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let family = given_or_generated_name(&request, "Family", MAX_FAMILY, false);
        let body = register_body(&request.properties, &family, &request.client_token);
        let ecs = client(ctx).await?;
        let raw = RawJson::new(Some(&body));
        ecs.register_task_definition()
            .family(&family)
            .customize()
            .interceptor(raw.clone())
            .send()
            .await
            .map_err(failed!(format!("{what}: RegisterTaskDefinition {family}")))?;
        let answer = raw.answer(&format!("{what}: RegisterTaskDefinition {family}"))?;
        let arn = answer["taskDefinition"]["taskDefinitionArn"]
            .as_str()
            .ok_or_else(|| {
                ProviderError::other(format!(
                    "{what}: RegisterTaskDefinition returned no taskDefinitionArn"
                ))
            })?
            .to_string();
        Ok(CreateResult {
            attributes: attributes_of(&arn),
            physical_id: arn,
            ..Default::default()
        })
    }

    /// Only the tags change in place (by the revision's ARN); anything else is a new revision.
    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let ecs = client(ctx).await?;
        retag(
            &ecs,
            &what,
            &request.physical_id,
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        Ok(UpdateResult {
            attributes: attributes_of(&request.physical_id),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let ecs = client(ctx).await?;
        let Some(answer) = describe(&ecs, &what, arn).await? else {
            return Ok(DeleteResult::Deleted);
        };
        let status = answer["taskDefinition"]["status"].as_str().unwrap_or("");
        if status == "DELETE_IN_PROGRESS" {
            return Ok(DeleteResult::Deleted);
        }
        if status == "ACTIVE" {
            let deregistered = ecs
                .deregister_task_definition()
                .task_definition(arn)
                .send()
                .await
                .map_err(failed!(format!("{what}: DeregisterTaskDefinition {arn}")))
                .map_err(missing_is_not_found);
            if found(deregistered)?.is_none() {
                return Ok(DeleteResult::Deleted);
            }
        }
        let deleted = ecs
            .delete_task_definitions()
            .task_definitions(arn)
            .send()
            .await
            .map_err(failed!(format!("{what}: DeleteTaskDefinitions {arn}")))
            .map_err(missing_is_not_found);
        // The revision is deregistered, which is all CloudFormation does; a refused deletion of
        // the INACTIVE revision is worth a warning, not a failed destroy.
        match found(deleted) {
            Ok(Some(answer)) => {
                for failure in answer.failures() {
                    tracing::warn!(
                        "{what}: DeleteTaskDefinitions {arn}: {} {}",
                        failure.reason().unwrap_or_default(),
                        failure.detail().unwrap_or_default()
                    );
                }
            }
            Ok(None) => {}
            Err(err) => tracing::warn!("{what}: the revision is deregistered; {}", err.message),
        }
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for TaskDefinition {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ecs = client(ctx).await?;
        Ok(describe(&ecs, what, &request.physical_id)
            .await?
            .and_then(|a| template_shape(&a)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ecs = client(ctx).await?;
        let answer = describe(&ecs, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "ECS"))?;
        let arn = answer["taskDefinition"]["taskDefinitionArn"]
            .as_str()
            .unwrap_or(physical_id);
        Ok(attributes_of(arn))
    }

    /// The newest ACTIVE revision of the family (the template's, or the one generated from the
    /// token) that carries the create's token tag.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(family) = created_name(request, Some("Family"), MAX_FAMILY, false) else {
            return Ok(None);
        };
        let ecs = client(ctx).await?;
        let listed = ecs
            .list_task_definitions()
            .family_prefix(&family)
            .status(TaskDefinitionStatus::Active)
            .sort(SortOrder::Desc)
            .send()
            .await
            .map_err(failed!(format!("{what}: ListTaskDefinitions {family}")))?;
        let revisions = listed
            .task_definition_arns()
            .iter()
            .filter(|arn| {
                crate::last_part(arn)
                    .rsplit_once(':')
                    .is_some_and(|(f, _)| f == family)
            })
            .take(SEARCHED_REVISIONS);
        for arn in revisions {
            if let Some(answer) = describe(&ecs, what, arn).await? {
                if carries_token(&answer, &request.token) {
                    return Ok(Some(arn.clone()));
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_register_body_is_the_template_in_ecs_casing_with_the_token_tag() {
        let props = json!({
            "Family": "web",
            "Cpu": 256,
            "Memory": "512",
            "NetworkMode": "awsvpc",
            "RequiresCompatibilities": ["FARGATE"],
            "ContainerDefinitions": [{"Name": "web", "Image": "nginx", "Essential": true}],
            "Tags": [{"Key": "team", "Value": "a"}],
        });
        let body = register_body(props.as_object().unwrap(), "web", "t1");
        assert_eq!(
            body,
            json!({
                "family": "web",
                "cpu": "256",
                "memory": "512",
                "networkMode": "awsvpc",
                "requiresCompatibilities": ["FARGATE"],
                "containerDefinitions": [{"name": "web", "image": "nginx", "essential": true}],
                "tags": [{"key": "team", "value": "a"}, {"key": CREATE_TOKEN_TAG, "value": "t1"}],
            })
        );
    }

    #[test]
    fn a_described_revision_reads_back_and_a_deregistered_one_is_gone() {
        let answer = json!({
            "taskDefinition": {
                "taskDefinitionArn": "arn:aws:ecs:us-east-1:1:task-definition/web:3",
                "family": "web",
                "revision": 3,
                "status": "ACTIVE",
                "cpu": "256",
                "containerDefinitions": [{"name": "web", "image": "nginx", "cpu": 0, "environment": [], "mountPoints": []}],
                "volumes": [],
                "compatibilities": ["EC2", "FARGATE"],
            },
            "tags": [{"key": CREATE_TOKEN_TAG, "value": "t1"}, {"key": "team", "value": "a"}],
        });
        assert_eq!(
            Value::Object(template_shape(&answer).unwrap()),
            json!({
                "Family": "web",
                "Cpu": "256",
                "ContainerDefinitions": [{"Name": "web", "Image": "nginx", "Cpu": 0}],
                "Tags": [{"Key": "team", "Value": "a"}],
            })
        );
        assert!(carries_token(&answer, "t1"));
        assert!(!carries_token(&answer, "t2"));
        let mut inactive = answer.clone();
        inactive["taskDefinition"]["status"] = json!("INACTIVE");
        assert!(template_shape(&inactive).is_none());
    }

    #[test]
    fn every_property_but_tags_makes_a_new_revision() {
        let schema = TaskDefinition.schema();
        assert!(schema
            .create_only_properties
            .contains(&"ContainerDefinitions".to_string()));
        assert!(!schema.create_only_properties.contains(&"Tags".to_string()));
        assert_eq!(schema.find_scope, ["Family"]);
    }
}
