//! cdkd's Cognito provider plugin: `AWS::Cognito::UserPool` through direct Cognito user pool
//! calls. A user pool's physical id (and `Ref`) is the id Cognito gives it; its create carries
//! cdkd's create-token tag in `UserPoolTags`, so the run after a crash finds it by its name and
//! that tag. A client's id is `UserPoolId|ClientId`, found after a crash by its name in its
//! pool; its secret is a sensitive attribute, never stored in plaintext. A domain's id is the
//! domain itself; an identity pool's is its id, found like a user pool by name and token tag.

mod identity_pool;
mod pool_blocks;
mod user_pool;
mod user_pool_client;
mod user_pool_domain;

cdkd_provider_api::export_plugin!(description: "AWS::Cognito::UserPool, UserPoolClient, UserPoolDomain and IdentityPool through the Cognito APIs");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<user_pool::UserPool>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<user_pool_client::UserPoolClient>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<user_pool_domain::UserPoolDomain>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<identity_pool::IdentityPool>);

use std::collections::{BTreeMap, HashMap};

use cdkd_provider_api::protocol::{FindCreatedRequest, CREATE_TOKEN_TAG};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// A Cognito user pool client for the host's endpoint and credentials.
pub(crate) async fn idp(
    ctx: &PluginContext,
) -> Result<aws_sdk_cognitoidentityprovider::Client, ProviderError> {
    let config = aws_sdk_cognitoidentityprovider::config::Builder::from(
        &cdkd_aws_common::sdk_config(ctx).await?,
    )
    .retry_partition(cdkd_aws_common::retry_partition("cdkd-cognito-idp"))
    .build();
    Ok(aws_sdk_cognitoidentityprovider::Client::from_conf(config))
}

/// Cognito's own error codes the shared table does not know or reads otherwise.
pub(crate) const KINDS: &[(&str, ErrorKind)] = &[
    ("ResourceNotFoundException", ErrorKind::NOT_FOUND),
    ("InvalidParameterException", ErrorKind::VALIDATION),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("UserPoolTaggingException", ErrorKind::VALIDATION),
    (
        "InvalidEmailRoleAccessPolicyException",
        ErrorKind::VALIDATION,
    ),
    ("InvalidSmsRoleAccessPolicyException", ErrorKind::VALIDATION),
    (
        "InvalidSmsRoleTrustRelationshipException",
        ErrorKind::VALIDATION,
    ),
    ("FeatureUnavailableInTierException", ErrorKind::VALIDATION),
    ("TierChangeNotAllowedException", ErrorKind::VALIDATION),
    ("NotAuthorizedException", ErrorKind::ACCESS_DENIED),
    ("ConcurrentModificationException", ErrorKind::CONFLICT),
    ("InternalErrorException", ErrorKind::SERVICE_ERROR),
];

/// A failed call's error, named by `context`, with Cognito's kinds.
macro_rules! failed {
    ($context:expr) => {
        |e| cdkd_aws_common::aws_error_in(&$context, e, $crate::KINDS)
    };
}
pub(crate) use failed;

/// A template's pool tags under `key` (`UserPoolTags`, `IdentityPoolTags`: a `{key: value}`
/// map) by key, values as text; cdkd's create-token tag is never a template tag.
pub(crate) fn template_tags(
    properties: &Map<String, Value>,
    key: &str,
) -> BTreeMap<String, String> {
    properties
        .get(key)
        .and_then(Value::as_object)
        .map(|tags| {
            tags.iter()
                .filter(|(k, _)| k.as_str() != CREATE_TOKEN_TAG)
                .filter_map(|(k, v)| Some((k.clone(), cdkd_aws_common::text(Some(v))?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The tags a create or update sends: the template's and the create token, when there is one
/// (a create's own; on an update the one the live pool carries, kept because Cognito replaces
/// the pool's whole settings): the run after a crash finds the pool by it.
pub(crate) fn sent_tags(
    template: BTreeMap<String, String>,
    token: Option<&String>,
) -> HashMap<String, String> {
    let mut tags: HashMap<String, String> = template.into_iter().collect();
    if let Some(token) = token.filter(|t| !t.is_empty()) {
        tags.insert(CREATE_TOKEN_TAG.into(), token.clone());
    }
    tags
}

/// A live pool's tags in template shape, cdkd's token tag and AWS's own (`aws:`) left out;
/// `None` when none are left.
pub(crate) fn live_tags(tags: Option<&HashMap<String, String>>) -> Option<Value> {
    let tags: Map<String, Value> = tags
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.as_str() != CREATE_TOKEN_TAG && !k.starts_with("aws:"))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    (!tags.is_empty()).then_some(Value::Object(tags))
}

/// The name a crashed create gave its pool (`name_of` the request's properties, stack,
/// logical id and token). A pool is found by its token tag among the pools of that name, so a
/// request without the token is refused.
pub(crate) fn created_pool_name(
    what: &str,
    request: &FindCreatedRequest,
    name_of: fn(&Map<String, Value>, &str, &str, &str) -> String,
) -> Result<String, ProviderError> {
    if request.token.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: find_created needs the create's token"
        )));
    }
    Ok(name_of(
        &request.properties,
        &request.stack_name,
        &request.logical_id,
        &request.token,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cognito_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "InvalidParameterException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "NotAuthorizedException"),
            Some(ErrorKind::ACCESS_DENIED)
        );
    }
}
