//! `AWS::IAM::ManagedPolicy`.

use cdkd_aws_common::{aws_error, given_or_generated_name, optional, string};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changes, client, document, names, read};

use crate::principal::{attach, Principal, PRINCIPALS};

/// `AWS::IAM::ManagedPolicy`: physical id (and `Ref`) = the policy ARN.
#[derive(Default)]
pub struct ManagedPolicy;

const MANAGED: &str = "AWS::IAM::ManagedPolicy";

/// `AWS::IAM::ManagedPolicy` by ARN: its default version's document and where it is attached.
async fn current(
    iam: &aws_sdk_iam::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(policy) = optional(
        &format!("{what}: GetPolicy"),
        iam.get_policy().policy_arn(arn).send().await,
    )?
    .and_then(|p| p.policy) else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("ManagedPolicyName".into(), json!(policy.policy_name()));
    props.insert("Path".into(), json!(policy.path()));
    if let Some(description) = policy.description().filter(|d| !d.is_empty()) {
        props.insert("Description".into(), json!(description));
    }
    if let Some(version) = policy.default_version_id() {
        let answer = iam
            .get_policy_version()
            .policy_arn(arn)
            .version_id(version)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: GetPolicyVersion"), e))?;
        if let Some(doc) = answer.policy_version().and_then(|v| v.document()) {
            props.insert("PolicyDocument".into(), read::document(doc));
        }
    }
    let entities = iam
        .list_entities_for_policy()
        .policy_arn(arn)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: ListEntitiesForPolicy"), e))?;
    for (key, found) in [
        (
            "Roles",
            entities
                .policy_roles()
                .iter()
                .filter_map(|r| r.role_name())
                .collect::<Vec<_>>(),
        ),
        (
            "Users",
            entities
                .policy_users()
                .iter()
                .filter_map(|u| u.user_name())
                .collect(),
        ),
        (
            "Groups",
            entities
                .policy_groups()
                .iter()
                .filter_map(|g| g.group_name())
                .collect(),
        ),
    ] {
        if !found.is_empty() {
            props.insert(key.into(), json!(found));
        }
    }
    Ok(Some(props))
}

#[async_trait]
impl Readable for ManagedPolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx).await?;
        current(&iam, what, &request.physical_id).await
    }

    /// `PolicyArn`: the physical id.
    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(json!({"PolicyArn": physical_id})
            .as_object()
            .cloned()
            .unwrap_or_default())
    }
}

#[async_trait]
impl ResourceProvider for ManagedPolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(MANAGED)
            .handles(&[
                "ManagedPolicyName",
                "PolicyDocument",
                "Path",
                "Description",
                "Roles",
                "Users",
                "Groups",
            ])
            .create_only(&["ManagedPolicyName", "Path", "Description"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{MANAGED} {}", request.logical_id);
        let props = &request.properties;
        let name = given_or_generated_name(&request, "ManagedPolicyName", 128, false);
        let iam = client(ctx).await?;
        let created = iam
            .create_policy()
            .policy_name(&name)
            .policy_document(
                props
                    .get("PolicyDocument")
                    .map(document)
                    .unwrap_or_default(),
            )
            .set_path(string(props.get("Path")))
            .set_description(string(props.get("Description")))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreatePolicy {name}"), e))?;
        let arn = created
            .policy()
            .and_then(|p| p.arn())
            .unwrap_or_default()
            .to_string();
        for (kind, key) in PRINCIPALS {
            for target in names(props, key) {
                attach(&iam, &what, kind, &target, &arn, true).await?;
            }
        }
        Ok(CreateResult {
            attributes: json!({"PolicyArn": arn})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{MANAGED} {}", request.logical_id);
        let arn = request.physical_id.clone();
        let iam = client(ctx).await?;
        if request.previous_properties.get("PolicyDocument")
            != request.properties.get("PolicyDocument")
        {
            // A policy keeps at most five versions: drop the oldest non-default one first.
            if let Ok(versions) = iam.list_policy_versions().policy_arn(&arn).send().await {
                let old: Vec<String> = versions
                    .versions()
                    .iter()
                    .filter(|v| !v.is_default_version())
                    .filter_map(|v| v.version_id().map(ToString::to_string))
                    .collect();
                if old.len() >= 4 {
                    if let Some(oldest) = old.last() {
                        let _ = iam
                            .delete_policy_version()
                            .policy_arn(&arn)
                            .version_id(oldest)
                            .send()
                            .await;
                    }
                }
            }
            iam.create_policy_version()
                .policy_arn(&arn)
                .policy_document(
                    request
                        .properties
                        .get("PolicyDocument")
                        .map(document)
                        .unwrap_or_default(),
                )
                .set_as_default(true)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: new policy version"), e))?;
        }
        for (kind, key) in PRINCIPALS {
            let (added, removed) = changes(
                &names(&request.previous_properties, key),
                &names(&request.properties, key),
            );
            for target in added {
                attach(&iam, &what, kind, &target, &arn, true).await?;
            }
            for target in removed {
                attach(&iam, &what, kind, &target, &arn, false).await?;
            }
        }
        Ok(UpdateResult {
            attributes: json!({"PolicyArn": arn})
                .as_object()
                .cloned()
                .unwrap_or_default(),
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
        let what = format!("{MANAGED} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let iam = client(ctx).await?;
        cdkd_aws_common::deleted_unless_failed(
            async {
                let entities = iam
                    .list_entities_for_policy()
                    .policy_arn(arn)
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: listing attachments"), e))?;
                for role in entities.policy_roles() {
                    attach(
                        &iam,
                        &what,
                        Principal::Role,
                        role.role_name().unwrap_or_default(),
                        arn,
                        false,
                    )
                    .await?;
                }
                for user in entities.policy_users() {
                    attach(
                        &iam,
                        &what,
                        Principal::User,
                        user.user_name().unwrap_or_default(),
                        arn,
                        false,
                    )
                    .await?;
                }
                for group in entities.policy_groups() {
                    attach(
                        &iam,
                        &what,
                        Principal::Group,
                        group.group_name().unwrap_or_default(),
                        arn,
                        false,
                    )
                    .await?;
                }
                if let Ok(versions) = iam.list_policy_versions().policy_arn(arn).send().await {
                    for version in versions
                        .versions()
                        .iter()
                        .filter(|v| !v.is_default_version())
                    {
                        let _ = iam
                            .delete_policy_version()
                            .policy_arn(arn)
                            .set_version_id(version.version_id().map(ToString::to_string))
                            .send()
                            .await;
                    }
                }
                iam.delete_policy()
                    .policy_arn(arn)
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: DeletePolicy"), e))?;
                Ok(())
            }
            .await,
        )
    }
}

// ---------------------------------------------------------------------------------------------
