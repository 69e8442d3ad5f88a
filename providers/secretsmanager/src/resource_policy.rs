//! `AWS::SecretsManager::ResourcePolicy`: physical id (and `Ref`) is the ARN of the secret the
//! policy is attached to; attribute `Id` (the same ARN). `BlockPublicPolicy` is write-only:
//! sent with every put (left out, Secrets Manager's default, not blocking, applies), never
//! read back. Delete removes the secret's policy.

use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, flag, require_str, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, found, id_attribute, json_text, marked_for_deletion, parsed, secret_id_like,
    with_secrets_kind,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::SecretsManager::ResourcePolicy";

/// The `AWS::SecretsManager::ResourcePolicy` provider.
#[derive(Default)]
pub struct ResourcePolicy;

/// The template's `ResourcePolicy` as a JSON string, required.
fn policy_document(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    properties
        .get("ResourcePolicy")
        .filter(|d| !d.is_null())
        .map(json_text)
        .ok_or_else(|| {
            ProviderError::validation(format!("{what}: property ResourcePolicy is required"))
        })
}

/// Whether Secrets Manager refused a policy because a principal in it is unknown to it yet.
fn principal_unknown(err: &ProviderError) -> bool {
    err.aws_code() == Some("MalformedPolicyDocumentException")
        && err.message.to_lowercase().contains("principal")
}

/// Puts the template's policy on the secret `secret_id`; answers the secret's ARN.
async fn put_policy(
    sm: &aws_sdk_secretsmanager::Client,
    what: &str,
    secret_id: &str,
    properties: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let document = policy_document(properties, what)?;
    let principals = cdkd_aws_common::policy_principals(&Value::String(document.clone()));
    let put = || async {
        sm.put_resource_policy()
            .secret_id(secret_id)
            .resource_policy(&document)
            .set_block_public_policy(flag(properties.get("BlockPublicPolicy")))
            .send()
            .await
            .map_err(|e| {
                with_secrets_kind(aws_error(
                    &format!("{what}: PutResourcePolicy {secret_id}"),
                    e,
                ))
            })
    };
    // Secrets Manager refuses a principal too new for it to know (MalformedPolicyDocument
    // "... invalid principal") until IAM has propagated it: a role of the same run.
    let answer = if principals.starts_with("the principals") {
        cdkd_aws_common::while_iam_propagates(&principals, principal_unknown, put).await?
    } else {
        put().await?
    };
    Ok(answer.arn().unwrap_or(secret_id).to_string())
}

/// The live policy in the template's shape: parsed, or the template's own string when that is
/// how the template writes the same document.
fn policy_like(template: Option<&Value>, live: &str) -> Value {
    let document = parsed(live);
    match template {
        Some(Value::String(text)) if parsed(text) == document => Value::String(text.clone()),
        _ => document,
    }
}

/// The read answer for the secret `arn` (named `name`) carrying `policy`; `None` without one.
fn read_answer(
    template: &Map<String, Value>,
    arn: &str,
    name: Option<&str>,
    policy: Option<&str>,
) -> Option<Map<String, Value>> {
    let policy = policy.filter(|p| !p.trim().is_empty())?;
    let mut props = Map::new();
    props.insert(
        "SecretId".into(),
        json!(secret_id_like(template.get("SecretId"), arn, name)),
    );
    props.insert(
        "ResourcePolicy".into(),
        policy_like(template.get("ResourcePolicy"), policy),
    );
    Some(props)
}

#[async_trait]
impl ResourceProvider for ResourcePolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["SecretId", "ResourcePolicy", "BlockPublicPolicy"])
            .create_only(&["SecretId"])
            .read_and_import()
            // Its create is an upsert: repeated after a crash it makes nothing twice.
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let secret_id = require_str(&request.properties, "SecretId", &what)?;
        let sm = client(ctx).await?;
        let arn = put_policy(&sm, &what, secret_id, &request.properties).await?;
        Ok(CreateResult {
            attributes: id_attribute(&arn),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let sm = client(ctx).await?;
        let arn = put_policy(&sm, &what, &request.physical_id, &request.properties).await?;
        Ok(UpdateResult {
            attributes: id_attribute(&arn),
            physical_id: arn,
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
        let arn = request.physical_id.as_str();
        let sm = client(ctx).await?;
        let result = sm
            .delete_resource_policy()
            .secret_id(arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                with_secrets_kind(aws_error(&format!("{what}: DeleteResourcePolicy {arn}"), e))
            });
        match result {
            // A secret scheduled for deletion takes its policy with it.
            Err(err) if marked_for_deletion(&err) => Ok(DeleteResult::Deleted),
            other => deleted_unless_failed(other),
        }
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
        let sm = client(ctx).await?;
        let id = request.physical_id.as_str();
        let answer = found(
            sm.get_resource_policy()
                .secret_id(id)
                .send()
                .await
                .map_err(|e| {
                    with_secrets_kind(aws_error(&format!("{what}: GetResourcePolicy {id}"), e))
                }),
        )?;
        Ok(answer.and_then(|a| {
            read_answer(
                &request.properties,
                a.arn().unwrap_or(id),
                a.name(),
                a.resource_policy(),
            )
        }))
    }

    /// `Id`, the secret's ARN, while the secret has a policy.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let sm = client(ctx).await?;
        let answer = found(
            sm.get_resource_policy()
                .secret_id(physical_id)
                .send()
                .await
                .map_err(|e| {
                    with_secrets_kind(aws_error(
                        &format!("{what}: GetResourcePolicy {physical_id}"),
                        e,
                    ))
                }),
        )?;
        match answer {
            Some(a) if a.resource_policy().is_some_and(|p| !p.trim().is_empty()) => {
                Ok(id_attribute(a.arn().unwrap_or(physical_id)))
            }
            _ => Err(does_not_exist(what, physical_id, "Secrets Manager")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::ErrorKind;

    const ARN: &str = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf";

    #[test]
    fn the_policy_travels_as_json_text_and_is_required() {
        let props = json!({"ResourcePolicy": {"Version": "2012-10-17", "Statement": []}});
        assert_eq!(
            policy_document(props.as_object().unwrap(), "T L").unwrap(),
            "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
        );
        let err = policy_document(&Map::new(), "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(err.message.contains("ResourcePolicy"), "{}", err.message);
    }

    #[test]
    fn the_live_policy_reads_back_in_the_templates_shape() {
        let live = "{\n  \"Version\" : \"2012-10-17\",\n  \"Statement\" : [ ]\n}";
        let object_template = json!({
            "SecretId": "db",
            "ResourcePolicy": {"Version": "2012-10-17", "Statement": []},
            "BlockPublicPolicy": true,
        });
        assert_eq!(
            Value::Object(
                read_answer(
                    object_template.as_object().unwrap(),
                    ARN,
                    Some("db"),
                    Some(live)
                )
                .unwrap()
            ),
            json!({
                "SecretId": "db",
                "ResourcePolicy": {"Version": "2012-10-17", "Statement": []},
            })
        );
        let string_template = json!({
            "SecretId": ARN,
            "ResourcePolicy": "{\"Version\":\"2012-10-17\",\"Statement\":[]}",
        });
        assert_eq!(
            Value::Object(
                read_answer(
                    string_template.as_object().unwrap(),
                    ARN,
                    Some("db"),
                    Some(live)
                )
                .unwrap()
            ),
            string_template
        );
        // Without a template: the ARN and the parsed document; no policy, no resource.
        let bare = read_answer(&Map::new(), ARN, Some("db"), Some(live)).unwrap();
        assert_eq!(bare["SecretId"], ARN);
        assert_eq!(bare["ResourcePolicy"]["Version"], "2012-10-17");
        assert_eq!(read_answer(&Map::new(), ARN, Some("db"), None), None);
        assert_eq!(read_answer(&Map::new(), ARN, Some("db"), Some(" ")), None);
    }
}
