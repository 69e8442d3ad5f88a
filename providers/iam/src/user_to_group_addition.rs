//! `AWS::IAM::UserToGroupAddition`.

use cdkd_aws_common::{aws_error, optional, require_str};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changes, client, names};

/// `AWS::IAM::UserToGroupAddition`: physical id = the group name.
#[derive(Default)]
pub struct UserToGroupAddition;

const ADDITION: &str = "AWS::IAM::UserToGroupAddition";

/// `AWS::IAM::UserToGroupAddition` (physical id = the group): which of the template's users
/// are still in the group (all members when the template names none).
async fn current(
    iam: &aws_sdk_iam::Client,
    what: &str,
    group_name: &str,
    template: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    // Only the members matter here: one GetGroup, not the group's policies too.
    let Some(answer) = optional(
        &format!("{what}: GetGroup"),
        iam.get_group().group_name(group_name).send().await,
    )?
    else {
        return Ok(None);
    };
    let members: Vec<String> = answer
        .users()
        .iter()
        .map(|u| u.user_name().to_string())
        .collect();
    let wanted = names(template, "Users");
    let users: Vec<String> = if wanted.is_empty() {
        members
    } else {
        wanted.into_iter().filter(|u| members.contains(u)).collect()
    };
    let mut props = Map::new();
    props.insert("GroupName".into(), json!(group_name));
    props.insert("Users".into(), json!(users));
    Ok(Some(props))
}

#[async_trait]
impl Readable for UserToGroupAddition {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx).await?;
        current(&iam, what, &request.physical_id, &request.properties).await
    }
}

#[async_trait]
impl ResourceProvider for UserToGroupAddition {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ADDITION)
            .handles(&["GroupName", "Users"])
            .create_only(&["GroupName"])
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
        let what = format!("{ADDITION} {}", request.logical_id);
        let group = require_str(&request.properties, "GroupName", &what)?.to_string();
        let iam = client(ctx).await?;
        for user in names(&request.properties, "Users") {
            iam.add_user_to_group()
                .group_name(&group)
                .user_name(&user)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: adding {user}"), e))?;
        }
        Ok(CreateResult {
            physical_id: group,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{ADDITION} {}", request.logical_id);
        let iam = client(ctx).await?;
        let (added, removed) = changes(
            &names(&request.previous_properties, "Users"),
            &names(&request.properties, "Users"),
        );
        for user in added {
            iam.add_user_to_group()
                .group_name(&request.physical_id)
                .user_name(&user)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: adding {user}"), e))?;
        }
        for user in removed {
            iam.remove_user_from_group()
                .group_name(&request.physical_id)
                .user_name(&user)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: removing {user}"), e))?;
        }
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let iam = client(ctx).await?;
        for user in names(&request.properties, "Users") {
            let _ = iam
                .remove_user_from_group()
                .group_name(&request.physical_id)
                .user_name(&user)
                .send()
                .await;
        }
        Ok(DeleteResult::Deleted)
    }
}

// ---------------------------------------------------------------------------------------------
