//! The other IAM types: inline and managed policies, instance profiles, users, groups, group
//! membership and access keys.

use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, physical_name, require_str};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changes, client, document, inline_policies, names, read};

/// The error of an import whose IAM resource does not exist.
fn missing(what: &str, id: &str) -> ProviderError {
    cdkd_aws_common::does_not_exist(what, id, "IAM")
}

/// Who a policy applies to.
#[derive(Clone, Copy)]
pub(crate) enum Principal {
    Role,
    User,
    Group,
}

pub(crate) const PRINCIPALS: [(Principal, &str); 3] = [
    (Principal::Role, "Roles"),
    (Principal::User, "Users"),
    (Principal::Group, "Groups"),
];

// ---------------------------------------------------------------------------------------------

/// `AWS::IAM::Policy`: an inline policy put on roles, users and groups; physical id = its name.
#[derive(Default)]
pub struct InlinePolicy;

const INLINE: &str = "AWS::IAM::Policy";

async fn put_inline(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    target: &str,
    name: &str,
    body: &str,
) -> Result<(), ProviderError> {
    let context = format!("{what}: putting it on {target}");
    match kind {
        Principal::Role => iam
            .put_role_policy()
            .role_name(target)
            .policy_name(name)
            .policy_document(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        Principal::User => iam
            .put_user_policy()
            .user_name(target)
            .policy_name(name)
            .policy_document(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        Principal::Group => iam
            .put_group_policy()
            .group_name(target)
            .policy_name(name)
            .policy_document(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
    }
}

async fn delete_inline(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    target: &str,
    name: &str,
) -> Result<(), ProviderError> {
    let context = format!("{what}: removing it from {target}");
    let result = match kind {
        Principal::Role => iam
            .delete_role_policy()
            .role_name(target)
            .policy_name(name)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        Principal::User => iam
            .delete_user_policy()
            .user_name(target)
            .policy_name(name)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        Principal::Group => iam
            .delete_group_policy()
            .group_name(target)
            .policy_name(name)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
    };
    match result {
        Err(e) if e.kind == ErrorKind::NOT_FOUND => Ok(()),
        other => other,
    }
}

#[async_trait]
impl ResourceProvider for InlinePolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(INLINE)
            .handles(&["PolicyName", "PolicyDocument", "Roles", "Users", "Groups"])
            .create_only(&["PolicyName"])
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{INLINE} {}", request.logical_id);
        let iam = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::inline_policy(&iam, &what, &request.physical_id, &request.properties)
                .await?,
        })
    }

    /// An inline policy has no id of its own: it is found by name on the template's roles,
    /// users and groups.
    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{INLINE} {}", request.logical_id);
        let iam = client(ctx).await?;
        read::inline_policy(&iam, &what, &request.physical_id, &request.properties)
            .await?
            .ok_or_else(|| {
                missing(
                    &what,
                    &format!(
                        "inline policy {} on the template's roles, users and groups",
                        request.physical_id
                    ),
                )
            })?;
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{INLINE} {}", request.logical_id);
        let name = require_str(&request.properties, "PolicyName", &what)?.to_string();
        let body = request
            .properties
            .get("PolicyDocument")
            .map(document)
            .unwrap_or_default();
        let iam = client(ctx).await?;
        for (kind, key) in PRINCIPALS {
            for target in names(&request.properties, key) {
                put_inline(&iam, &what, kind, &target, &name, &body).await?;
            }
        }
        Ok(CreateResult {
            physical_id: name,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{INLINE} {}", request.logical_id);
        let name = request.physical_id.clone();
        let body = request
            .properties
            .get("PolicyDocument")
            .map(document)
            .unwrap_or_default();
        let iam = client(ctx).await?;
        for (kind, key) in PRINCIPALS {
            let (_, removed) = changes(
                &names(&request.previous_properties, key),
                &names(&request.properties, key),
            );
            for target in removed {
                delete_inline(&iam, &what, kind, &target, &name).await?;
            }
            for target in names(&request.properties, key) {
                put_inline(&iam, &what, kind, &target, &name, &body).await?;
            }
        }
        Ok(UpdateResult {
            physical_id: name,
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
        let what = format!("{INLINE} {}", request.logical_id);
        let iam = client(ctx).await?;
        for (kind, key) in PRINCIPALS {
            for target in names(&request.properties, key) {
                delete_inline(&iam, &what, kind, &target, &request.physical_id).await?;
            }
        }
        Ok(DeleteResult::Deleted)
    }
}

// ---------------------------------------------------------------------------------------------

/// `AWS::IAM::ManagedPolicy`: physical id (and `Ref`) = the policy ARN.
#[derive(Default)]
pub struct ManagedPolicy;

const MANAGED: &str = "AWS::IAM::ManagedPolicy";

async fn attach(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    target: &str,
    arn: &str,
    on: bool,
) -> Result<(), ProviderError> {
    let context = format!(
        "{what}: {} {target}",
        if on { "attaching to" } else { "detaching from" }
    );
    let result = match (kind, on) {
        (Principal::Role, true) => iam
            .attach_role_policy()
            .role_name(target)
            .policy_arn(arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        (Principal::Role, false) => iam
            .detach_role_policy()
            .role_name(target)
            .policy_arn(arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        (Principal::User, true) => iam
            .attach_user_policy()
            .user_name(target)
            .policy_arn(arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        (Principal::User, false) => iam
            .detach_user_policy()
            .user_name(target)
            .policy_arn(arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        (Principal::Group, true) => iam
            .attach_group_policy()
            .group_name(target)
            .policy_arn(arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
        (Principal::Group, false) => iam
            .detach_group_policy()
            .group_name(target)
            .policy_arn(arn)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e)),
    };
    match result {
        Err(e) if !on && e.kind == ErrorKind::NOT_FOUND => Ok(()),
        other => other,
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

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{MANAGED} {}", request.logical_id);
        let iam = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::managed_policy(&iam, &what, &request.physical_id).await?,
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{MANAGED} {}", request.logical_id);
        let props = &request.properties;
        let name = match props.get("ManagedPolicyName").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => physical_name(&request, 128, false),
        };
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
            .set_path(
                props
                    .get("Path")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
            .set_description(
                props
                    .get("Description")
                    .and_then(Value::as_str)
                    .map(ToString::to_string),
            )
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

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        client(ctx)
            .await?
            .get_policy()
            .policy_arn(&request.physical_id)
            .send()
            .await
            .map_err(|e| {
                aws_error(
                    &format!(
                        "{MANAGED} {}: importing {}",
                        request.logical_id, request.physical_id
                    ),
                    e,
                )
            })?;
        Ok(CreateResult {
            attributes: json!({"PolicyArn": request.physical_id})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

// ---------------------------------------------------------------------------------------------

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

/// `AWS::IAM::UserToGroupAddition`: physical id = the group name.
#[derive(Default)]
pub struct UserToGroupAddition;

const ADDITION: &str = "AWS::IAM::UserToGroupAddition";

#[async_trait]
impl ResourceProvider for UserToGroupAddition {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ADDITION)
            .handles(&["GroupName", "Users"])
            .create_only(&["GroupName"])
            .read_and_import()
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{ADDITION} {}", request.logical_id);
        let iam = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::addition(&iam, &what, &request.physical_id, &request.properties)
                .await?,
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{ADDITION} {}", request.logical_id);
        let iam = client(ctx).await?;
        read::addition(&iam, &what, &request.physical_id, &request.properties)
            .await?
            .ok_or_else(|| missing(&what, &format!("group {}", request.physical_id)))?;
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: Map::new(),
            ..Default::default()
        })
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

/// `AWS::IAM::AccessKey`: physical id (and `Ref`) = the access key id; the secret is the
/// `SecretAccessKey` attribute only, where CloudFormation exposes it, and is never logged.
#[derive(Default)]
pub struct AccessKey;

const ACCESS_KEY: &str = "AWS::IAM::AccessKey";

#[async_trait]
impl ResourceProvider for AccessKey {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ACCESS_KEY)
            .handles(&["UserName", "Status", "Serial"])
            .create_only(&["UserName", "Serial"])
            .read_and_import()
            .sensitive(&["SecretAccessKey"])
            .build()
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?;
        let iam = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: read::access_key(&iam, &what, &request.physical_id, user).await?,
        })
    }

    /// IAM returns a secret only when the key is created, so an adopted key has no
    /// `SecretAccessKey` attribute (a `Fn::GetAtt` on it fails rather than serving nothing).
    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?;
        let iam = client(ctx).await?;
        read::access_key(&iam, &what, &request.physical_id, user)
            .await?
            .ok_or_else(|| {
                missing(
                    &what,
                    &format!("access key {} of {user}", request.physical_id),
                )
            })?;
        tracing::warn!("{what}: an imported access key has no SecretAccessKey attribute; IAM returns the secret only at creation");
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?.to_string();
        let iam = client(ctx).await?;
        let created = iam
            .create_access_key()
            .user_name(&user)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: CreateAccessKey for {user}"), e))?;
        let key = created
            .access_key()
            .ok_or_else(|| ProviderError::other(format!("{what}: no key returned")))?;
        let id = key.access_key_id().to_string();
        if request.properties.get("Status").and_then(Value::as_str) == Some("Inactive") {
            iam.update_access_key()
                .user_name(&user)
                .access_key_id(&id)
                .status(aws_sdk_iam::types::StatusType::Inactive)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: deactivating"), e))?;
        }
        Ok(CreateResult {
            attributes: json!({"SecretAccessKey": key.secret_access_key()})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?.to_string();
        let status = request
            .properties
            .get("Status")
            .and_then(Value::as_str)
            .unwrap_or("Active");
        client(ctx)
            .await?
            .update_access_key()
            .user_name(&user)
            .access_key_id(&request.physical_id)
            .status(aws_sdk_iam::types::StatusType::from(status))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: status"), e))?;
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
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?.to_string();
        cdkd_aws_common::deleted_unless_failed(
            client(ctx)
                .await?
                .delete_access_key()
                .user_name(&user)
                .access_key_id(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteAccessKey"), e)),
        )
    }
}
