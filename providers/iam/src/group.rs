//! `AWS::IAM::Group`.

use cdkd_aws_common::{aws_error, given_or_generated_name, optional, string};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{arn_attribute, changes, client, inline_policies, names, read};

use crate::principal::{arn, attach, put_inline, remove_policies, Principal};

/// `AWS::IAM::Group`: physical id = name; attribute `Arn`.
#[derive(Default)]
pub struct Group;

const GROUP: &str = "AWS::IAM::Group";

/// `AWS::IAM::Group` by name, with its `Arn` and members.
async fn current(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    template: &Map<String, Value>,
) -> Result<Option<(Map<String, Value>, String, Vec<String>)>, ProviderError> {
    let Some(answer) = optional(
        &format!("{what}: GetGroup"),
        iam.get_group().group_name(name).send().await,
    )?
    else {
        return Ok(None);
    };
    let Some(group) = answer.group() else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("GroupName".into(), json!(group.group_name()));
    props.insert("Path".into(), json!(group.path()));
    read::policies_of(iam, what, Principal::Group, name, template, &mut props).await?;
    let members = answer
        .users()
        .iter()
        .map(|u| u.user_name().to_string())
        .collect();
    Ok(Some((props, group.arn().to_string(), members)))
}

#[async_trait]
impl Readable for Group {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx).await?;
        Ok(
            current(&iam, what, &request.physical_id, &request.properties)
                .await?
                .map(|(props, _, _)| props),
        )
    }

    /// `Arn`, from GetGroup.
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
                Principal::Group,
                &format!("{what}: GetGroup"),
                physical_id,
            )
            .await?,
        ))
    }
}

#[async_trait]
impl ResourceProvider for Group {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(GROUP)
            .handles(&["GroupName", "Path", "Policies", "ManagedPolicyArns"])
            .create_only(&["GroupName"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{GROUP} {}", request.logical_id);
        let name = given_or_generated_name(&request, "GroupName", 128, false);
        let iam = client(ctx).await?;
        let created = iam
            .create_group()
            .group_name(&name)
            .set_path(string(request.properties.get("Path")))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateGroup {name}"), e))?;
        for arn in names(&request.properties, "ManagedPolicyArns") {
            attach(&iam, &what, Principal::Group, &name, &arn, true).await?;
        }
        for (policy, body) in inline_policies(&request.properties) {
            put_inline(&iam, &what, Principal::Group, &name, &policy, &body).await?;
        }
        let arn = created
            .group()
            .map(|g| g.arn().to_string())
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
        let what = format!("{GROUP} {}", request.logical_id);
        let iam = client(ctx).await?;
        let name = request.physical_id.clone();
        let (attach_arns, detach_arns) = changes(
            &names(&request.previous_properties, "ManagedPolicyArns"),
            &names(&request.properties, "ManagedPolicyArns"),
        );
        for arn in attach_arns {
            attach(&iam, &what, Principal::Group, &name, &arn, true).await?;
        }
        for arn in detach_arns {
            attach(&iam, &what, Principal::Group, &name, &arn, false).await?;
        }
        for (policy, body) in inline_policies(&request.properties) {
            put_inline(&iam, &what, Principal::Group, &name, &policy, &body).await?;
        }
        let arn = arn(&iam, Principal::Group, &what, &name)
            .await
            .unwrap_or_default();
        Ok(UpdateResult {
            attributes: arn_attribute(&arn),
            physical_id: name,
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{GROUP} {}", request.logical_id);
        let iam = client(ctx).await?;
        let name = request.physical_id.as_str();
        remove_policies(&iam, &what, Principal::Group, name).await;
        cdkd_aws_common::deleted_unless_failed(
            iam.delete_group()
                .group_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteGroup"), e)),
        )
    }
}

// ---------------------------------------------------------------------------------------------
