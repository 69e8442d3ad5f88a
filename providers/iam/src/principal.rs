//! What the types that deal with roles, users and groups share: the principals a policy applies
//! to, putting and deleting an inline policy on them, attaching a managed one, listing and
//! removing their policies, and their ARNs.

use cdkd_aws_common::aws_error;
use cdkd_provider_api::{ErrorKind, ProviderError};

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

/// One IAM call on a principal: `$role`, `$user` or `$group` by `kind`, named `$target`;
/// `|$call| $finish` completes the request builder and sends it. The three builders are
/// different types, so the one request is written once and expanded three times.
macro_rules! on_principal {
    ($iam:expr, $kind:expr, $target:expr, $role:ident / $user:ident / $group:ident,
     |$call:ident| $finish:expr) => {
        match $kind {
            $crate::principal::Principal::Role => {
                let $call = $iam.$role().role_name($target);
                $finish
            }
            $crate::principal::Principal::User => {
                let $call = $iam.$user().user_name($target);
                $finish
            }
            $crate::principal::Principal::Group => {
                let $call = $iam.$group().group_name($target);
                $finish
            }
        }
    };
}
pub(crate) use on_principal;

pub(crate) async fn put_inline(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    target: &str,
    name: &str,
    body: &str,
) -> Result<(), ProviderError> {
    let context = format!("{what}: putting it on {target}");
    on_principal!(
        iam,
        kind,
        target,
        put_role_policy / put_user_policy / put_group_policy,
        |call| call
            .policy_name(name)
            .policy_document(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e))
    )
}

pub(crate) async fn delete_inline(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    target: &str,
    name: &str,
) -> Result<(), ProviderError> {
    let context = format!("{what}: removing it from {target}");
    let result = on_principal!(
        iam,
        kind,
        target,
        delete_role_policy / delete_user_policy / delete_group_policy,
        |call| call
            .policy_name(name)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&context, e))
    );
    match result {
        Err(e) if e.kind == ErrorKind::NOT_FOUND => Ok(()),
        other => other,
    }
}

pub(crate) async fn attach(
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
    // Attaching and detaching take the same request: one call, by operation.
    macro_rules! by_arn {
        ($role:ident / $user:ident / $group:ident) => {
            on_principal!(iam, kind, target, $role / $user / $group, |call| call
                .policy_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&context, e)))
        };
    }
    let result = if on {
        by_arn!(attach_role_policy / attach_user_policy / attach_group_policy)
    } else {
        by_arn!(detach_role_policy / detach_user_policy / detach_group_policy)
    };
    match result {
        Err(e) if !on && e.kind == ErrorKind::NOT_FOUND => Ok(()),
        other => other,
    }
}

/// The ARNs of the managed policies attached to a principal.
pub(crate) async fn attached_policies(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    name: &str,
) -> Result<Vec<String>, ProviderError> {
    let operation = match kind {
        Principal::Role => "ListAttachedRolePolicies",
        Principal::User => "ListAttachedUserPolicies",
        Principal::Group => "ListAttachedGroupPolicies",
    };
    let attached = on_principal!(
        iam,
        kind,
        name,
        list_attached_role_policies / list_attached_user_policies / list_attached_group_policies,
        |call| call
            .send()
            .await
            .map(|a| a.attached_policies().to_vec())
            .map_err(|e| aws_error(&format!("{what}: {operation}"), e))?
    );
    Ok(attached
        .iter()
        .filter_map(|p| p.policy_arn().map(ToString::to_string))
        .collect())
}

/// The names of the inline policies on a principal.
pub(crate) async fn inline_policy_names(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    name: &str,
) -> Result<Vec<String>, ProviderError> {
    let operation = match kind {
        Principal::Role => "ListRolePolicies",
        Principal::User => "ListUserPolicies",
        Principal::Group => "ListGroupPolicies",
    };
    on_principal!(
        iam,
        kind,
        name,
        list_role_policies / list_user_policies / list_group_policies,
        |call| call
            .send()
            .await
            .map(|a| a.policy_names().to_vec())
            .map_err(|e| aws_error(&format!("{what}: {operation}"), e))
    )
}

/// Before a principal is deleted, best effort: detaches its managed policies and deletes its
/// inline ones (what fails here is left for the delete to report).
pub(crate) async fn remove_policies(
    iam: &aws_sdk_iam::Client,
    what: &str,
    kind: Principal,
    name: &str,
) {
    for arn in attached_policies(iam, what, kind, name)
        .await
        .unwrap_or_default()
    {
        let _ = attach(iam, what, kind, name, &arn, false).await;
    }
    for policy in inline_policy_names(iam, what, kind, name)
        .await
        .unwrap_or_default()
    {
        let _ = delete_inline(iam, what, kind, name, &policy).await;
    }
}

/// A principal's ARN, from GetRole, GetUser or GetGroup (`context` names a failure).
pub(crate) async fn arn(
    iam: &aws_sdk_iam::Client,
    kind: Principal,
    context: &str,
    name: &str,
) -> Result<String, ProviderError> {
    let arn = match kind {
        Principal::Role => iam
            .get_role()
            .role_name(name)
            .send()
            .await
            .map(|a| a.role().map(|r| r.arn().to_string()))
            .map_err(|e| aws_error(context, e))?,
        Principal::User => iam
            .get_user()
            .user_name(name)
            .send()
            .await
            .map(|a| a.user().map(|u| u.arn().to_string()))
            .map_err(|e| aws_error(context, e))?,
        Principal::Group => iam
            .get_group()
            .group_name(name)
            .send()
            .await
            .map(|a| a.group().map(|g| g.arn().to_string()))
            .map_err(|e| aws_error(context, e))?,
    };
    Ok(arn.unwrap_or_default())
}
