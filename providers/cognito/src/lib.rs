//! cdkd's Cognito provider plugin: `AWS::Cognito::UserPool` through direct Cognito user pool
//! calls. A user pool's physical id (and `Ref`) is the id Cognito gives it; its create carries
//! cdkd's create-token tag in `UserPoolTags`, so the run after a crash finds it by its name and
//! that tag. A client's id is `UserPoolId|ClientId`, found after a crash by its name in its
//! pool; its secret is a sensitive attribute, never stored in plaintext. A domain's id is the
//! domain itself; an identity pool's is its id, found like a user pool by name and token tag.

mod identity_pool;
mod user_pool;
mod user_pool_client;
mod user_pool_domain;

cdkd_provider_api::export_plugin!(description: "AWS::Cognito::UserPool, UserPoolClient, UserPoolDomain and IdentityPool through the Cognito APIs");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<user_pool::UserPool>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<user_pool_client::UserPoolClient>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<user_pool_domain::UserPoolDomain>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<identity_pool::IdentityPool>);

use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

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
    ("InternalErrorException", ErrorKind::THROTTLED),
];

/// A failed call's error, named by `context`, with Cognito's kinds.
macro_rules! failed {
    ($context:expr) => {
        |e| cdkd_aws_common::aws_error_in(&$context, e, $crate::KINDS)
    };
}
pub(crate) use failed;

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
