//! `AWS::IAM::Group`.

use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, physical_name};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Value};

use crate::{changes, client, inline_policies, names, read};

use crate::principal::{attach, missing, put_inline, Principal};

/// `AWS::IAM::Group`: physical id = name; attribute `Arn`.
#[derive(Default)]
pub struct Group;

const GROUP: &str = "AWS::IAM::Group";

#[async_trait]
impl ResourceProvider for Group {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(GROUP)
            .handles(&["GroupName", "Path", "Policies", "ManagedPolicyArns"])
            .create_only(&["GroupName"])
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{GROUP} {}", request.logical_id);
        let iam = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::group(&iam, &what, &request.physical_id, &request.properties)
                .await?
                .map(|(props, _, _)| props),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{GROUP} {}", request.logical_id);
        let iam = client(ctx).await?;
        let (_, arn, _) = read::group(&iam, &what, &request.physical_id, &request.properties)
            .await?
            .ok_or_else(|| missing(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: json!({"Arn": arn}).as_object().cloned().unwrap_or_default(),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{GROUP} {}", request.logical_id);
        let name = match request.properties.get("GroupName").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => physical_name(&request, 128, false),
        };
        let iam = client(ctx).await?;
        let created = iam
            .create_group()
            .group_name(&name)
            .set_path(
                request
                    .properties
                    .get("Path")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
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
        let arn = iam
            .get_group()
            .group_name(&name)
            .send()
            .await
            .ok()
            .and_then(|g| g.group().map(|g| g.arn().to_string()))
            .unwrap_or_default();
        Ok(UpdateResult {
            attributes: json!({"Arn": arn}).as_object().cloned().unwrap_or_default(),
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
        if let Ok(attached) = iam
            .list_attached_group_policies()
            .group_name(name)
            .send()
            .await
        {
            for policy in attached.attached_policies() {
                let _ = iam
                    .detach_group_policy()
                    .group_name(name)
                    .set_policy_arn(policy.policy_arn().map(ToString::to_string))
                    .send()
                    .await;
            }
        }
        if let Ok(inline) = iam.list_group_policies().group_name(name).send().await {
            for policy in inline.policy_names() {
                let _ = iam
                    .delete_group_policy()
                    .group_name(name)
                    .policy_name(policy)
                    .send()
                    .await;
            }
        }
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
