//! `AWS::IAM::InstanceProfile`.

use cdkd_aws_common::{aws_error, given_or_generated_name, optional, string};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{arn_attribute, changes, client, names};

/// `AWS::IAM::InstanceProfile`: physical id = name; attribute `Arn`.
#[derive(Default)]
pub struct InstanceProfile;

const PROFILE: &str = "AWS::IAM::InstanceProfile";

/// `AWS::IAM::InstanceProfile` by name, with its `Arn`.
async fn current(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
) -> Result<Option<(Map<String, Value>, String)>, ProviderError> {
    let profile = optional(
        &format!("{what}: GetInstanceProfile"),
        iam.get_instance_profile()
            .instance_profile_name(name)
            .send()
            .await,
    )?
    .and_then(|p| p.instance_profile);
    Ok(profile.map(|p| {
        let mut props = Map::new();
        props.insert(
            "InstanceProfileName".into(),
            json!(p.instance_profile_name()),
        );
        props.insert("Path".into(), json!(p.path()));
        props.insert(
            "Roles".into(),
            json!(p.roles().iter().map(|r| r.role_name()).collect::<Vec<_>>()),
        );
        (props, p.arn().to_string())
    }))
}

#[async_trait]
impl Readable for InstanceProfile {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx).await?;
        Ok(current(&iam, what, &request.physical_id)
            .await?
            .map(|(props, _)| props))
    }

    /// `Arn`, from GetInstanceProfile.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let iam = client(ctx).await?;
        let arn = current(&iam, what, physical_id)
            .await?
            .map(|(_, arn)| arn)
            .unwrap_or_default();
        Ok(arn_attribute(&arn))
    }
}

#[async_trait]
impl ResourceProvider for InstanceProfile {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(PROFILE)
            .handles(&["InstanceProfileName", "Path", "Roles"])
            .create_only(&["InstanceProfileName", "Path"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{PROFILE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "InstanceProfileName", 128, false);
        let iam = client(ctx).await?;
        let created = iam
            .create_instance_profile()
            .instance_profile_name(&name)
            .set_path(string(request.properties.get("Path")))
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
        let arn = current(&iam, &what, &request.physical_id)
            .await
            .ok()
            .flatten()
            .map(|(_, arn)| arn)
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
