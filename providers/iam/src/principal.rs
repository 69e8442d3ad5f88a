//! What the inline and managed policy types share: the principals a policy applies to, putting
//! and deleting an inline policy on them, attaching a managed one.

use cdkd_aws_common::aws_error;
use cdkd_provider_api::{ErrorKind, ProviderError};

/// The error of an import whose IAM resource does not exist.
pub(crate) fn missing(what: &str, id: &str) -> ProviderError {
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

pub(crate) async fn put_inline(
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

pub(crate) async fn delete_inline(
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
