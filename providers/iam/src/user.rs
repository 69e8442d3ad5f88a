//! `AWS::IAM::User`.

use cdkd_aws_common::{aws_error, flag, given_or_generated_name, optional, string};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{arn_attribute, changes, client, inline_policies, names, read};

use crate::principal::{arn, attach, delete_inline, put_inline, remove_policies, Principal};

/// `AWS::IAM::User`: physical id = name; attribute `Arn`.
#[derive(Default)]
pub struct User;

const USER: &str = "AWS::IAM::User";

/// `AWS::IAM::User` by name, with its `Arn`.
///
/// `LoginProfile` is never reported, not even `PasswordResetRequired`: IAM does not return the
/// password, and against a `properties` baseline (a deploy that did not read back) drift
/// compares an object over the baseline's own keys, so the template's `Password` would show as
/// drift on every check. Left out at the top level, the key is skipped instead. The cost: a
/// console password added or removed outside cdkd is not seen as drift.
async fn current(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    template: &Map<String, Value>,
) -> Result<Option<(Map<String, Value>, String)>, ProviderError> {
    let Some(user) = optional(
        &format!("{what}: GetUser"),
        iam.get_user().user_name(name).send().await,
    )?
    .and_then(|u| u.user) else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("UserName".into(), json!(user.user_name()));
    props.insert("Path".into(), json!(user.path()));
    if let Some(boundary) = user
        .permissions_boundary()
        .and_then(|b| b.permissions_boundary_arn())
    {
        props.insert("PermissionsBoundary".into(), json!(boundary));
    }
    if let Some(tags) = read::tags(user.tags()) {
        props.insert("Tags".into(), tags);
    }
    let groups = iam
        .list_groups_for_user()
        .user_name(name)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: ListGroupsForUser"), e))?;
    if !groups.groups().is_empty() {
        props.insert(
            "Groups".into(),
            json!(groups
                .groups()
                .iter()
                .map(|g| g.group_name())
                .collect::<Vec<_>>()),
        );
    }
    read::policies_of(iam, what, Principal::User, name, template, &mut props).await?;
    Ok(Some((props, user.arn().to_string())))
}

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
            current(&iam, what, &request.physical_id, &request.properties)
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
                "LoginProfile",
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
        // Checked before CreateUser: a malformed profile must not leave a user behind.
        let profile = login_profile(props, &what)?;
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
        if let Some(change) = login_profile_change(None, profile.as_ref()) {
            if let Err(err) = apply_login_profile(&iam, &what, &name, &change).await {
                // A password the account's policy refuses is the likely failure: the user has
                // nothing attached yet, so removing it lets the next attempt start clean instead
                // of tripping over EntityAlreadyExists.
                let _ = iam.delete_user().user_name(&name).send().await;
                return Err(err);
            }
        }
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
        // The previous profile was accepted when it was applied; one that no longer parses is
        // treated as absent, and the create that follows falls back to an update.
        let before = login_profile(&request.previous_properties, &what)
            .ok()
            .flatten();
        let after = login_profile(&request.properties, &what)?;
        let iam = client(ctx).await?;
        sync_user(
            &iam,
            &what,
            &request.physical_id,
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        // Last, so that a retry after a failure elsewhere does not set the same password again
        // (an account that forbids reusing passwords refuses that).
        if let Some(change) = login_profile_change(before.as_ref(), after.as_ref()) {
            apply_login_profile(&iam, &what, &request.physical_id, &change).await?;
        }
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
        // DeleteUser refuses a user that still has a console password. First, so that a failure
        // here leaves the user as it was rather than stripped of its groups and policies.
        // Without a declared profile a failure is not this resource's concern (a role without
        // iam:DeleteLoginProfile deleting a user that never had one); DeleteUser names any
        // profile that really is in the way.
        if let Err(err) = delete_login_profile(&iam, &what, name).await {
            if matches!(
                request.properties.get("LoginProfile"),
                Some(Value::Object(_))
            ) {
                return Err(err);
            }
        }
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

/// `LoginProfile`: the user's console password and whether it must be changed at the next
/// sign-in.
#[derive(Clone, PartialEq, Eq)]
struct LoginProfile {
    password: String,
    reset_required: bool,
}

// Written by hand so that no `{:?}` (a log line, a failed assertion) can print the password.
impl std::fmt::Debug for LoginProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoginProfile")
            .field("password", &"***")
            .field("reset_required", &self.reset_required)
            .finish()
    }
}

/// The template's `LoginProfile` (absent or null: none). The error names the property, never
/// its value.
fn login_profile(
    props: &Map<String, Value>,
    what: &str,
) -> Result<Option<LoginProfile>, ProviderError> {
    let profile = match props.get("LoginProfile") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(profile)) => profile,
        Some(_) => {
            return Err(ProviderError::validation(format!(
            "{what}: property LoginProfile must be an object {{Password, PasswordResetRequired}}"
        )))
        }
    };
    let password = string(profile.get("Password")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: property LoginProfile.Password is required and must be a string"
        ))
    })?;
    Ok(Some(LoginProfile {
        password,
        // CloudFormation's default; absent and false are the same profile.
        reset_required: flag(profile.get("PasswordResetRequired")).unwrap_or(false),
    }))
}

/// What a create or update does to the login profile.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LoginProfileChange {
    Create(LoginProfile),
    /// `password_changed` false: only the reset flag changed, and the password is not sent
    /// again, which an account that forbids reusing passwords would refuse.
    Update {
        profile: LoginProfile,
        password_changed: bool,
    },
    Delete,
}

/// The change from the profile applied before to the one wanted now; `None` when they match.
fn login_profile_change(
    before: Option<&LoginProfile>,
    after: Option<&LoginProfile>,
) -> Option<LoginProfileChange> {
    match (before, after) {
        (None, None) => None,
        (None, Some(after)) => Some(LoginProfileChange::Create(after.clone())),
        (Some(_), None) => Some(LoginProfileChange::Delete),
        (Some(before), Some(after)) if before == after => None,
        (Some(before), Some(after)) => Some(LoginProfileChange::Update {
            profile: after.clone(),
            password_changed: before.password != after.password,
        }),
    }
}

/// Applies `change` to `name`'s login profile. Each step converges when AWS already differs
/// from the previous properties (an earlier attempt that got this far, a change made outside
/// cdkd): a profile that exists is updated, a missing one created, a missing one deleted.
async fn apply_login_profile(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    change: &LoginProfileChange,
) -> Result<(), ProviderError> {
    match change {
        LoginProfileChange::Create(profile) => {
            match create_login_profile(iam, what, name, profile).await {
                Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => {
                    update_login_profile(iam, what, name, profile, true).await
                }
                done => done,
            }
        }
        LoginProfileChange::Update {
            profile,
            password_changed,
        } => match update_login_profile(iam, what, name, profile, *password_changed).await {
            Err(err) if err.kind == ErrorKind::NOT_FOUND => {
                create_login_profile(iam, what, name, profile).await
            }
            done => done,
        },
        LoginProfileChange::Delete => delete_login_profile(iam, what, name).await,
    }
}

async fn create_login_profile(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    profile: &LoginProfile,
) -> Result<(), ProviderError> {
    iam.create_login_profile()
        .user_name(name)
        .password(&profile.password)
        .password_reset_required(profile.reset_required)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| aws_error(&format!("{what}: CreateLoginProfile for {name}"), e))
}

async fn update_login_profile(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    profile: &LoginProfile,
    send_password: bool,
) -> Result<(), ProviderError> {
    iam.update_login_profile()
        .user_name(name)
        .set_password(send_password.then(|| profile.password.clone()))
        .password_reset_required(profile.reset_required)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| aws_error(&format!("{what}: UpdateLoginProfile for {name}"), e))
}

/// Deletes `name`'s login profile; none there (or no such user) is already done.
async fn delete_login_profile(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
) -> Result<(), ProviderError> {
    match iam
        .delete_login_profile()
        .user_name(name)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: DeleteLoginProfile for {name}"), e))
    {
        Err(err) if err.kind != ErrorKind::NOT_FOUND => Err(err),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn profile(value: Value) -> Option<LoginProfile> {
        login_profile(json!({ "LoginProfile": value }).as_object().unwrap(), "U").unwrap()
    }

    #[test]
    fn login_profiles_read_from_templates() {
        let read = profile(json!({"Password": "s3cret!", "PasswordResetRequired": "true"}));
        assert_eq!(
            read,
            Some(LoginProfile {
                password: "s3cret!".into(),
                reset_required: true
            })
        );
        assert!(!profile(json!({"Password": "p"})).unwrap().reset_required);
        assert_eq!(profile(Value::Null), None);
        assert_eq!(login_profile(&Map::new(), "U").unwrap(), None);
        for bad in [json!({"PasswordResetRequired": true}), json!("p")] {
            let err = login_profile(json!({ "LoginProfile": bad }).as_object().unwrap(), "U")
                .unwrap_err();
            assert_eq!(err.kind, ErrorKind::VALIDATION);
        }
        let shown = format!("{:?}", read.unwrap());
        assert!(!shown.contains("s3cret!"), "{shown}");
    }

    #[test]
    fn login_profile_changes_create_update_and_delete() {
        let with = |password: &str, reset: bool| LoginProfile {
            password: password.into(),
            reset_required: reset,
        };
        let (a, a_reset, b) = (with("a", false), with("a", true), with("b", false));
        assert_eq!(login_profile_change(None, None), None);
        assert_eq!(login_profile_change(Some(&a), Some(&a)), None);
        assert_eq!(
            login_profile_change(None, Some(&a)),
            Some(LoginProfileChange::Create(a.clone()))
        );
        assert_eq!(
            login_profile_change(Some(&a), None),
            Some(LoginProfileChange::Delete)
        );
        assert_eq!(
            login_profile_change(Some(&a), Some(&b)),
            Some(LoginProfileChange::Update {
                profile: b.clone(),
                password_changed: true
            })
        );
        assert_eq!(
            login_profile_change(Some(&a), Some(&a_reset)),
            Some(LoginProfileChange::Update {
                profile: a_reset.clone(),
                password_changed: false
            })
        );
    }
}

// ---------------------------------------------------------------------------------------------
