//! `AWS::IAM::User`.

use cdkd_aws_common::{aws_error, given_or_generated_name, string};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{arn_attribute, changes, client, inline_policies, names, read};

use crate::principal::{arn, attach, delete_inline, put_inline, remove_policies, Principal};

/// `AWS::IAM::User`: physical id = name; attribute `Arn`.
#[derive(Default)]
pub struct User;

const USER: &str = "AWS::IAM::User";

#[async_trait]
impl Readable for User {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx).await?;
        Ok(
            read::user(&iam, what, &request.physical_id, &request.properties)
                .await?
                .map(|(props, _)| props),
        )
    }

    /// `Arn`, from GetUser.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let iam = client(ctx).await?;
        Ok(arn_attribute(
            &arn(
                &iam,
                Principal::User,
                &format!("{what}: importing {physical_id}"),
                physical_id,
            )
            .await?,
        ))
    }
}

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

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{USER} {}", request.logical_id);
        let props = &request.properties;
        let name = given_or_generated_name(&request, "UserName", 64, false);
        let iam = client(ctx).await?;
        let created = iam
            .create_user()
            .user_name(&name)
            .set_path(string(props.get("Path")))
            .set_permissions_boundary(string(props.get("PermissionsBoundary")))
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
            attributes: arn_attribute(&arn),
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
        let arn = arn(&iam, Principal::User, &what, &request.physical_id)
            .await
            .unwrap_or_default();
        Ok(UpdateResult {
            attributes: arn_attribute(&arn),
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
        remove_policies(&iam, &what, Principal::User, name).await;
        cdkd_aws_common::deleted_unless_failed(
            iam.delete_user()
                .user_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteUser"), e)),
        )
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
