//! `AWS::IAM::Role`: physical id (and `Ref`) is the role name; attributes `Arn`, `RoleId`.
//! Deleting a role first detaches its managed policies, deletes its inline policies and takes
//! it out of instance profiles.

use cdkd_aws_common::{
    aws_error, deleted_unless_failed, given_or_generated_name, optional, string, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changes, client, document, inline_policies, names, tags};

const TYPE: &str = "AWS::IAM::Role";

#[derive(Default)]
pub struct Role;

fn attributes(role: &aws_sdk_iam::types::Role) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(role.arn()));
    attributes.insert("RoleId".into(), json!(role.role_id()));
    attributes
}

/// `Arn` and `RoleId`, from GetRole (`context` names a failure).
async fn role_attributes(
    iam: &aws_sdk_iam::Client,
    context: &str,
    name: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let answer = iam
        .get_role()
        .role_name(name)
        .send()
        .await
        .map_err(|e| aws_error(context, e))?;
    Ok(answer.role().map(attributes).unwrap_or_default())
}

async fn apply_policies(
    iam: &aws_sdk_iam::Client,
    what: &str,
    role: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (attach, detach) = changes(
        &names(before, "ManagedPolicyArns"),
        &names(after, "ManagedPolicyArns"),
    );
    for arn in attach {
        iam.attach_role_policy()
            .role_name(role)
            .policy_arn(&arn)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: attaching {arn}"), e))?;
    }
    for arn in detach {
        iam.detach_role_policy()
            .role_name(role)
            .policy_arn(&arn)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: detaching {arn}"), e))?;
    }
    let (old, new) = (inline_policies(before), inline_policies(after));
    for (name, body) in &new {
        if !old.iter().any(|(n, b)| n == name && b == body) {
            iam.put_role_policy()
                .role_name(role)
                .policy_name(name)
                .policy_document(body)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: inline policy {name}"), e))?;
        }
    }
    for (name, _) in old.iter().filter(|(n, _)| !new.iter().any(|(m, _)| m == n)) {
        iam.delete_role_policy()
            .role_name(role)
            .policy_name(name)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: removing inline policy {name}"), e))?;
    }
    Ok(())
}

#[async_trait]
impl ResourceProvider for Role {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "AssumeRolePolicyDocument",
                "Policies",
                "ManagedPolicyArns",
                "Path",
                "RoleName",
                "Description",
                "MaxSessionDuration",
                "PermissionsBoundary",
                "Tags",
            ])
            .create_only(&["Path", "RoleName"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = given_or_generated_name(&request, "RoleName", 64, false);
        let trust = props
            .get("AssumeRolePolicyDocument")
            .map(document)
            .ok_or_else(|| {
                ProviderError::validation(format!(
                    "{what}: property AssumeRolePolicyDocument is required"
                ))
            })?;
        let iam = client(ctx).await?;
        let created = iam
            .create_role()
            .role_name(&name)
            .assume_role_policy_document(trust)
            .set_path(string(props.get("Path")))
            .set_description(string(props.get("Description")))
            .set_max_session_duration(
                props
                    .get("MaxSessionDuration")
                    .and_then(Value::as_i64)
                    .map(|v| v as i32),
            )
            .set_permissions_boundary(string(props.get("PermissionsBoundary")))
            .set_tags(Some(tags(props)).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateRole {name}"), e))?;
        apply_policies(&iam, &what, &name, &Map::new(), props).await?;
        let role = created
            .role()
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateRole returned no role")))?;
        Ok(CreateResult {
            attributes: attributes(role),
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, name) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let iam = client(ctx).await?;
        if before.get("AssumeRolePolicyDocument") != after.get("AssumeRolePolicyDocument") {
            let trust = after
                .get("AssumeRolePolicyDocument")
                .map(document)
                .unwrap_or_default();
            iam.update_assume_role_policy()
                .role_name(name)
                .policy_document(trust)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: trust policy"), e))?;
        }
        if before.get("Description") != after.get("Description")
            || before.get("MaxSessionDuration") != after.get("MaxSessionDuration")
        {
            iam.update_role()
                .role_name(name)
                .description(
                    after
                        .get("Description")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                )
                .set_max_session_duration(
                    after
                        .get("MaxSessionDuration")
                        .and_then(Value::as_i64)
                        .map(|v| v as i32),
                )
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: UpdateRole"), e))?;
        }
        if before.get("PermissionsBoundary") != after.get("PermissionsBoundary") {
            let context = format!("{what}: permissions boundary");
            match after.get("PermissionsBoundary").and_then(Value::as_str) {
                Some(arn) => iam
                    .put_role_permissions_boundary()
                    .role_name(name)
                    .permissions_boundary(arn)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&context, e))?,
                None => iam
                    .delete_role_permissions_boundary()
                    .role_name(name)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&context, e))?,
            }
        }
        if before.get("Tags") != after.get("Tags") {
            let old: Vec<String> = tags(before).iter().map(|t| t.key().to_string()).collect();
            if !old.is_empty() {
                iam.untag_role()
                    .role_name(name)
                    .set_tag_keys(Some(old))
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: tags"), e))?;
            }
            let new = tags(after);
            if !new.is_empty() {
                iam.tag_role()
                    .role_name(name)
                    .set_tags(Some(new))
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: tags"), e))?;
            }
        }
        apply_policies(&iam, &what, name, before, after).await?;
        Ok(UpdateResult {
            physical_id: name.to_string(),
            replaced: false,
            attributes: role_attributes(&iam, &format!("{what}: GetRole"), name).await?,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let iam = client(ctx).await?;
        let attached = match iam
            .list_attached_role_policies()
            .role_name(name)
            .send()
            .await
        {
            Ok(answer) => answer
                .attached_policies()
                .iter()
                .filter_map(|p| p.policy_arn().map(ToString::to_string))
                .collect::<Vec<_>>(),
            Err(e) => {
                return deleted_unless_failed(Err(aws_error(
                    &format!("{what}: listing attached policies"),
                    e,
                )))
            }
        };
        for arn in attached {
            iam.detach_role_policy()
                .role_name(name)
                .policy_arn(&arn)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: detaching {arn}"), e))?;
        }
        if let Ok(inline) = iam.list_role_policies().role_name(name).send().await {
            for policy in inline.policy_names() {
                iam.delete_role_policy()
                    .role_name(name)
                    .policy_name(policy)
                    .send()
                    .await
                    .map_err(|e| {
                        aws_error(&format!("{what}: deleting inline policy {policy}"), e)
                    })?;
            }
        }
        if let Ok(profiles) = iam
            .list_instance_profiles_for_role()
            .role_name(name)
            .send()
            .await
        {
            for profile in profiles.instance_profiles() {
                iam.remove_role_from_instance_profile()
                    .instance_profile_name(profile.instance_profile_name())
                    .role_name(name)
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: leaving instance profile"), e))?;
            }
        }
        deleted_unless_failed(
            iam.delete_role()
                .role_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteRole {name}"), e)),
        )
    }
}

#[async_trait]
impl Readable for Role {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx).await?;
        let name = request.physical_id.as_str();
        // The role, its managed and its inline policy names at once: the reader runs after
        // every create and update, so its round trips are a deploy's tail.
        let (role, managed, names) = tokio::join!(
            iam.get_role().role_name(name).send(),
            iam.list_attached_role_policies().role_name(name).send(),
            iam.list_role_policies().role_name(name).send(),
        );
        let Some(role) = optional(&format!("{what}: GetRole"), role)? else {
            return Ok(None);
        };
        let role = role
            .role
            .ok_or_else(|| ProviderError::other(format!("{what}: GetRole returned no role")))?;
        let trust = role
            .assume_role_policy_document()
            .map(crate::read::percent_decode)
            .and_then(|d| serde_json::from_str::<Value>(&d).ok())
            .unwrap_or(Value::Null);
        let managed: Vec<String> = managed
            .map(|a| {
                a.attached_policies()
                    .iter()
                    .filter_map(|p| p.policy_arn().map(ToString::to_string))
                    .collect()
            })
            .map_err(|e| aws_error(&format!("{what}: ListAttachedRolePolicies"), e))?;
        // Inline policies: one added outside cdkd is drift, as a managed one is.
        let names = names.map_err(|e| aws_error(&format!("{what}: ListRolePolicies"), e))?;
        let mut reads = tokio::task::JoinSet::new();
        for (at, policy) in names.policy_names().iter().enumerate() {
            let (iam, role_name, policy) = (iam.clone(), name.to_string(), policy.clone());
            reads.spawn(async move {
                let answer = iam
                    .get_role_policy()
                    .role_name(role_name)
                    .policy_name(&policy)
                    .send()
                    .await;
                (at, policy, answer)
            });
        }
        let mut inline = Vec::new();
        while let Some(joined) = reads.join_next().await {
            let (at, policy, answer) =
                joined.map_err(|e| ProviderError::other(format!("{what}: GetRolePolicy: {e}")))?;
            let answer =
                answer.map_err(|e| aws_error(&format!("{what}: GetRolePolicy {policy}"), e))?;
            inline.push((
                at,
                json!({
                    "PolicyName": policy,
                    "PolicyDocument": crate::read::document(answer.policy_document()),
                }),
            ));
        }
        inline.sort_by_key(|(at, _)| *at);
        let inline: Vec<Value> = inline.into_iter().map(|(_, policy)| policy).collect();
        let mut properties = Map::new();
        properties.insert("RoleName".into(), json!(role.role_name()));
        if !inline.is_empty() {
            properties.insert("Policies".into(), Value::Array(inline));
        }
        properties.insert("Path".into(), json!(role.path()));
        properties.insert("AssumeRolePolicyDocument".into(), trust);
        properties.insert("ManagedPolicyArns".into(), json!(managed));
        if let Some(description) = role.description() {
            properties.insert("Description".into(), json!(description));
        }
        if let Some(duration) = role.max_session_duration() {
            properties.insert("MaxSessionDuration".into(), json!(duration));
        }
        if let Some(boundary) = role
            .permissions_boundary()
            .and_then(|b| b.permissions_boundary_arn())
        {
            properties.insert("PermissionsBoundary".into(), json!(boundary));
        }
        if let Some(tags) = crate::read::tags(role.tags()) {
            properties.insert("Tags".into(), tags);
        }
        Ok(Some(properties))
    }

    /// `Arn` and `RoleId`, from GetRole.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let iam = client(ctx).await?;
        role_attributes(
            &iam,
            &format!("{what}: importing {physical_id}"),
            physical_id,
        )
        .await
    }
}
