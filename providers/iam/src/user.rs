//! `AWS::IAM::User`.

use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, physical_name};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changes, client, inline_policies, names, read};

use crate::principal::{attach, delete_inline, put_inline, Principal};

/// `AWS::IAM::User`: physical id = name; attribute `Arn`.
#[derive(Default)]
pub struct User;

const USER: &str = "AWS::IAM::User";

#[async_trait]
impl ResourceProvider for User {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(USER)
            .handles(&[
                "UserName",
                "Path",
                "Policies",
                "ManagedPolicyArns",
                "Groups",
                "PermissionsBoundary",
                "Tags",
            ])
            .create_only(&["UserName"])
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{USER} {}", request.logical_id);
        let iam = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::user(&iam, &what, &request.physical_id, &request.properties)
                .await?
                .map(|(props, _)| props),
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{USER} {}", request.logical_id);
        let props = &request.properties;
        let name = match props.get("UserName").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => physical_name(&request, 64, false),
        };
        let iam = client(ctx).await?;
        let created = iam
            .create_user()
            .user_name(&name)
            .set_path(
                props
                    .get("Path")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
            .set_permissions_boundary(
                props
                    .get("PermissionsBoundary")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
            .set_tags(Some(crate::tags(props)).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateUser {name}"), e))?;
        sync_user(&iam, &what, &name, &Map::new(), props).await?;
        let arn = created
            .user()
            .map(|u| u.arn().to_string())
            .unwrap_or_default();
        Ok(CreateResult {
            attributes: json!({"Arn": arn}).as_object().cloned().unwrap_or_default(),
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{USER} {}", request.logical_id);
        let iam = client(ctx).await?;
        sync_user(
            &iam,
            &what,
            &request.physical_id,
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        let arn = iam
            .get_user()
            .user_name(&request.physical_id)
            .send()
            .await
            .ok()
            .and_then(|u| u.user().map(|u| u.arn().to_string()))
            .unwrap_or_default();
        Ok(UpdateResult {
            attributes: json!({"Arn": arn}).as_object().cloned().unwrap_or_default(),
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
        let what = format!("{USER} {}", request.logical_id);
        let iam = client(ctx).await?;
        let name = request.physical_id.as_str();
        if let Ok(groups) = iam.list_groups_for_user().user_name(name).send().await {
            for group in groups.groups() {
                let _ = iam
                    .remove_user_from_group()
                    .group_name(group.group_name())
                    .user_name(name)
                    .send()
                    .await;
            }
        }
        if let Ok(attached) = iam
            .list_attached_user_policies()
            .user_name(name)
            .send()
            .await
        {
            for policy in attached.attached_policies() {
                let _ = iam
                    .detach_user_policy()
                    .user_name(name)
                    .set_policy_arn(policy.policy_arn().map(ToString::to_string))
                    .send()
                    .await;
            }
        }
        if let Ok(inline) = iam.list_user_policies().user_name(name).send().await {
            for policy in inline.policy_names() {
                let _ = iam
                    .delete_user_policy()
                    .user_name(name)
                    .policy_name(policy)
                    .send()
                    .await;
            }
        }
        cdkd_aws_common::deleted_unless_failed(
            iam.delete_user()
                .user_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteUser"), e)),
        )
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let answer = client(ctx)
            .await?
            .get_user()
            .user_name(&request.physical_id)
            .send()
            .await
            .map_err(|e| {
                aws_error(
                    &format!(
                        "{USER} {}: importing {}",
                        request.logical_id, request.physical_id
                    ),
                    e,
                )
            })?;
        let arn = answer
            .user()
            .map(|u| u.arn().to_string())
            .unwrap_or_default();
        Ok(CreateResult {
            attributes: json!({"Arn": arn}).as_object().cloned().unwrap_or_default(),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

async fn sync_user(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (join, leave) = changes(&names(before, "Groups"), &names(after, "Groups"));
    for group in join {
        iam.add_user_to_group()
            .group_name(&group)
            .user_name(name)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: joining {group}"), e))?;
    }
    for group in leave {
        iam.remove_user_from_group()
            .group_name(&group)
            .user_name(name)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: leaving {group}"), e))?;
    }
    let (attach_arns, detach_arns) = changes(
        &names(before, "ManagedPolicyArns"),
        &names(after, "ManagedPolicyArns"),
    );
    for arn in attach_arns {
        attach(iam, what, Principal::User, name, &arn, true).await?;
    }
    for arn in detach_arns {
        attach(iam, what, Principal::User, name, &arn, false).await?;
    }
    let (old, new) = (inline_policies(before), inline_policies(after));
    for (policy, body) in &new {
        put_inline(iam, what, Principal::User, name, policy, body).await?;
    }
    for (policy, _) in old.iter().filter(|(n, _)| !new.iter().any(|(m, _)| m == n)) {
        delete_inline(iam, what, Principal::User, name, policy).await?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
