//! Reading the IAM types of `principals.rs` back from IAM, in template shape: what
//! `read_current_state` reports (drift, `observedProperties`) and what `import` checks before it
//! adopts a resource. `None`: the resource is gone.

use cdkd_aws_common::{aws_error, optional};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::names;
use crate::principal::{attached_policies, inline_policy_names, Principal, PRINCIPALS};
use crate::role::percent_decode;

/// A policy document as IAM returns it (URL-encoded JSON) in template shape.
pub(crate) fn document(text: &str) -> Value {
    let decoded = percent_decode(text);
    serde_json::from_str(&decoded).unwrap_or(Value::String(decoded))
}

/// IAM tags in template shape (none: absent).
pub(crate) fn tags(tags: &[aws_sdk_iam::types::Tag]) -> Option<Value> {
    (!tags.is_empty()).then(|| {
        Value::Array(
            tags.iter()
                .map(|t| json!({"Key": t.key(), "Value": t.value()}))
                .collect(),
        )
    })
}

/// The inline policy `name` on `target`, if it is there.
async fn inline_document(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    target: &str,
    name: &str,
) -> Result<Option<Value>, ProviderError> {
    let context = format!("{what}: reading {name} on {target}");
    Ok(match kind {
        Principal::Role => optional(
            &context,
            iam.get_role_policy()
                .role_name(target)
                .policy_name(name)
                .send()
                .await,
        )?
        .map(|p| document(p.policy_document())),
        Principal::User => optional(
            &context,
            iam.get_user_policy()
                .user_name(target)
                .policy_name(name)
                .send()
                .await,
        )?
        .map(|p| document(p.policy_document())),
        Principal::Group => optional(
            &context,
            iam.get_group_policy()
                .group_name(target)
                .policy_name(name)
                .send()
                .await,
        )?
        .map(|p| document(p.policy_document())),
    })
}

/// `AWS::IAM::Policy` `name`: on which of the template's roles, users and groups it still is.
pub(crate) async fn inline_policy(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    template: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let mut props = Map::new();
    let mut body = None;
    for (kind, key) in PRINCIPALS {
        let mut found = Vec::new();
        for target in names(template, key) {
            if let Some(doc) = inline_document(iam, what, kind, &target, name).await? {
                body.get_or_insert(doc);
                found.push(target);
            }
        }
        if !found.is_empty() {
            props.insert(key.into(), json!(found));
        }
    }
    Ok(body.map(|body| {
        props.insert("PolicyName".into(), json!(name));
        props.insert("PolicyDocument".into(), body);
        props
    }))
}

/// `AWS::IAM::ManagedPolicy` by ARN: its default version's document and where it is attached.
pub(crate) async fn managed_policy(
    iam: &aws_sdk_iam::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(policy) = optional(
        &format!("{what}: GetPolicy"),
        iam.get_policy().policy_arn(arn).send().await,
    )?
    .and_then(|p| p.policy) else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("ManagedPolicyName".into(), json!(policy.policy_name()));
    props.insert("Path".into(), json!(policy.path()));
    if let Some(description) = policy.description().filter(|d| !d.is_empty()) {
        props.insert("Description".into(), json!(description));
    }
    if let Some(version) = policy.default_version_id() {
        let answer = iam
            .get_policy_version()
            .policy_arn(arn)
            .version_id(version)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: GetPolicyVersion"), e))?;
        if let Some(doc) = answer.policy_version().and_then(|v| v.document()) {
            props.insert("PolicyDocument".into(), document(doc));
        }
    }
    let entities = iam
        .list_entities_for_policy()
        .policy_arn(arn)
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: ListEntitiesForPolicy"), e))?;
    for (key, found) in [
        (
            "Roles",
            entities
                .policy_roles()
                .iter()
                .filter_map(|r| r.role_name())
                .collect::<Vec<_>>(),
        ),
        (
            "Users",
            entities
                .policy_users()
                .iter()
                .filter_map(|u| u.user_name())
                .collect(),
        ),
        (
            "Groups",
            entities
                .policy_groups()
                .iter()
                .filter_map(|g| g.group_name())
                .collect(),
        ),
    ] {
        if !found.is_empty() {
            props.insert(key.into(), json!(found));
        }
    }
    Ok(Some(props))
}

/// `AWS::IAM::InstanceProfile` by name, with its `Arn`.
pub(crate) async fn instance_profile(
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

/// The inline policies a template declares on a principal itself (`Policies`); `None` without a
/// template (an import), when every inline policy is reported.
fn declared_policies(template: &Map<String, Value>) -> Option<Vec<String>> {
    (!template.is_empty()).then(|| {
        crate::inline_policies(template)
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    })
}

/// The managed policies attached to, and the inline policies on, a user or group. Inline
/// policies another resource (`AWS::IAM::Policy`) puts there are not the principal's own: with
/// a template, only the ones it declares are reported, so they never read as drift.
async fn policies_of(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    name: &str,
    template: &Map<String, Value>,
    props: &mut Map<String, Value>,
) -> Result<(), ProviderError> {
    let attached = attached_policies(iam, what, kind, name).await?;
    let inline = inline_policy_names(iam, what, kind, name).await?;
    if !attached.is_empty() {
        props.insert("ManagedPolicyArns".into(), json!(attached));
    }
    let declared = declared_policies(template);
    let mut policies = Vec::new();
    for policy in inline
        .into_iter()
        .filter(|p| declared.as_ref().is_none_or(|d| d.contains(p)))
    {
        if let Some(doc) = inline_document(iam, what, kind, name, &policy).await? {
            policies.push(json!({"PolicyName": policy, "PolicyDocument": doc}));
        }
    }
    if !policies.is_empty() {
        props.insert("Policies".into(), Value::Array(policies));
    }
    Ok(())
}

/// `AWS::IAM::User` by name, with its `Arn`.
///
/// `LoginProfile` is never reported, not even `PasswordResetRequired`: IAM does not return the
/// password, and against a `properties` baseline (a deploy that did not read back) drift
/// compares an object over the baseline's own keys, so the template's `Password` would show as
/// drift on every check. Left out at the top level, the key is skipped instead. The cost: a
/// console password added or removed outside cdkd is not seen as drift.
pub(crate) async fn user(
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
    if let Some(tags) = tags(user.tags()) {
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
    policies_of(iam, what, Principal::User, name, template, &mut props).await?;
    Ok(Some((props, user.arn().to_string())))
}

/// `AWS::IAM::Group` by name, with its `Arn` and members.
pub(crate) async fn group(
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
    policies_of(iam, what, Principal::Group, name, template, &mut props).await?;
    let members = answer
        .users()
        .iter()
        .map(|u| u.user_name().to_string())
        .collect();
    Ok(Some((props, group.arn().to_string(), members)))
}

/// `AWS::IAM::UserToGroupAddition` (physical id = the group): which of the template's users
/// are still in the group (all members when the template names none).
pub(crate) async fn addition(
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

/// `AWS::IAM::AccessKey` (physical id = the key id) of the template's user.
pub(crate) async fn access_key(
    iam: &aws_sdk_iam::Client,
    what: &str,
    key_id: &str,
    user_name: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(keys) = optional(
        &format!("{what}: ListAccessKeys"),
        iam.list_access_keys().user_name(user_name).send().await,
    )?
    else {
        return Ok(None);
    };
    Ok(keys
        .access_key_metadata()
        .iter()
        .find(|k| k.access_key_id() == Some(key_id))
        .map(|k| {
            let mut props = Map::new();
            props.insert("UserName".into(), json!(user_name));
            if let Some(status) = k.status() {
                props.insert("Status".into(), json!(status.as_str()));
            }
            props
        }))
}
