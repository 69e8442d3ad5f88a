//! `AWS::IAM::InstanceProfile`.

use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, physical_name};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Value};

use crate::{changes, client, names, read};

use crate::principal::missing;

/// `AWS::IAM::InstanceProfile`: physical id = name; attribute `Arn`.
#[derive(Default)]
pub struct InstanceProfile;

const PROFILE: &str = "AWS::IAM::InstanceProfile";

#[async_trait]
impl ResourceProvider for InstanceProfile {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(PROFILE)
            .handles(&["InstanceProfileName", "Path", "Roles"])
            .create_only(&["InstanceProfileName", "Path"])
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{PROFILE} {}", request.logical_id);
        let iam = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::instance_profile(&iam, &what, &request.physical_id)
                .await?
                .map(|(props, _)| props),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{PROFILE} {}", request.logical_id);
        let iam = client(ctx).await?;
        let (_, arn) = read::instance_profile(&iam, &what, &request.physical_id)
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
        let what = format!("{PROFILE} {}", request.logical_id);
        let name = match request
            .properties
            .get("InstanceProfileName")
            .and_then(Value::as_str)
        {
            Some(name) => name.to_string(),
            None => physical_name(&request, 128, false),
        };
        let iam = client(ctx).await?;
        let created = iam
            .create_instance_profile()
            .instance_profile_name(&name)
            .set_path(
                request
                    .properties
                    .get("Path")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateInstanceProfile {name}"), e))?;
        for role in names(&request.properties, "Roles") {
            iam.add_role_to_instance_profile()
                .instance_profile_name(&name)
                .role_name(&role)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: adding {role}"), e))?;
        }
        let arn = created
            .instance_profile()
            .map(|p| p.arn().to_string())
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
        let what = format!("{PROFILE} {}", request.logical_id);
        let iam = client(ctx).await?;
        let (added, removed) = changes(
            &names(&request.previous_properties, "Roles"),
            &names(&request.properties, "Roles"),
        );
        for role in removed {
            iam.remove_role_from_instance_profile()
                .instance_profile_name(&request.physical_id)
                .role_name(&role)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: removing {role}"), e))?;
        }
        for role in added {
            iam.add_role_to_instance_profile()
                .instance_profile_name(&request.physical_id)
                .role_name(&role)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: adding {role}"), e))?;
        }
        let arn = iam
            .get_instance_profile()
            .instance_profile_name(&request.physical_id)
            .send()
            .await
            .ok()
            .and_then(|p| p.instance_profile().map(|p| p.arn().to_string()))
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
        let what = format!("{PROFILE} {}", request.logical_id);
        let iam = client(ctx).await?;
        for role in names(&request.properties, "Roles") {
            let _ = iam
                .remove_role_from_instance_profile()
                .instance_profile_name(&request.physical_id)
                .role_name(&role)
                .send()
                .await;
        }
        cdkd_aws_common::deleted_unless_failed(
            iam.delete_instance_profile()
                .instance_profile_name(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteInstanceProfile"), e)),
        )
    }
}

// ---------------------------------------------------------------------------------------------
