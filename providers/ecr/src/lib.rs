//! cdkd's ECR provider plugin: `AWS::ECR::Repository` through direct ECR calls. The physical id
//! (and `Ref`) is the repository name, which cdkd chooses before the create (the template's, or
//! a lowercase `{stack}-{logicalId}-{suffix}` as CloudFormation generates), so the run after a
//! crash finds the repository by its name.

mod repository;

cdkd_provider_api::export_plugin!(description: "AWS::ECR::Repository (lifecycle policy, scanning, tag mutability, encryption, repository policy) through the ECR API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<repository::Repository>);

use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// An ECR client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_ecr::Client, ProviderError> {
    let config = aws_sdk_ecr::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-ecr"))
        .build();
    Ok(aws_sdk_ecr::Client::from_conf(config))
}

/// ECR's own error codes the shared table does not know (they end in `Exception`).
pub(crate) const KINDS: &[(&str, ErrorKind)] = &[
    ("RepositoryNotFoundException", ErrorKind::NOT_FOUND),
    ("LifecyclePolicyNotFoundException", ErrorKind::NOT_FOUND),
    ("RepositoryPolicyNotFoundException", ErrorKind::NOT_FOUND),
    (
        "RepositoryAlreadyExistsException",
        ErrorKind::ALREADY_EXISTS,
    ),
    ("RepositoryNotEmptyException", ErrorKind::CONFLICT),
    ("InvalidParameterException", ErrorKind::VALIDATION),
    ("InvalidTagParameterException", ErrorKind::VALIDATION),
    ("TooManyTagsException", ErrorKind::VALIDATION),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("KmsException", ErrorKind::VALIDATION),
    ("ServerException", ErrorKind::SERVICE_ERROR),
];

/// A failed call's error, named by `context`, with ECR's kinds.
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
    fn ecr_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "RepositoryNotEmptyException"),
            Some(ErrorKind::CONFLICT)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "RepositoryNotFoundException"),
            Some(ErrorKind::NOT_FOUND)
        );
    }
}
