//! Finding what an interrupted create made ([`operation::FIND_CREATED`]): the types with no
//! name cdkd chooses are tagged with the create's token at creation ([`crate::tag_spec`]), so
//! the next run asks EC2 for the resources carrying that tag. One is the create's; none means
//! it made nothing; more than one is refused, never guessed.

use aws_sdk_ec2::types::Filter;
use cdkd_aws_common::Readable;
use cdkd_provider_api::protocol::{
    operation, FindCreatedRequest, FindCreatedResult, ReadCurrentStateRequest, CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError};
use serde_json::{Map, Value};

use crate::{client, what};

/// A type whose creates are tagged with their token and can be looked up by it.
#[async_trait]
pub(crate) trait FindsCreated: Readable {
    /// The CloudFormation type name, for messages.
    const TYPE_NAME: &'static str;

    /// The physical ids (in the form the type's create returns) of the resources `by_token`
    /// selects.
    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError>;
}

/// The describe filter selecting the resources a create with `token` tagged.
pub(crate) fn token_filter(token: &str) -> Filter {
    crate::filter(&format!("tag:{CREATE_TOKEN_TAG}"), token)
}

/// The one resource a token names, none, or an error naming every one found.
pub(crate) fn one_or_none(
    type_name: &str,
    logical_id: &str,
    token: &str,
    mut ids: Vec<String>,
) -> Result<Option<String>, ProviderError> {
    ids.sort();
    ids.dedup();
    match ids.len() {
        0 => Ok(None),
        1 => Ok(ids.pop()),
        _ => Err(ProviderError::new(
            ErrorKind::CONFLICT,
            format!(
                "{type_name} {logical_id}: {} resources carry the create token {CREATE_TOKEN_TAG}={token}: {}; cdkd cannot tell which one its create made (delete the extra ones, or import the right one)",
                ids.len(),
                ids.join(", ")
            ),
        )),
    }
}

/// Answers an operation `T` has beyond create, update and delete: [`operation::FIND_CREATED`],
/// else `unsupported`.
pub(crate) async fn invoke<T: FindsCreated>(
    this: &T,
    ctx: &PluginContext,
    name: &str,
    request: Value,
) -> Result<Value, ProviderError> {
    if name != operation::FIND_CREATED {
        return Err(ProviderError::unsupported(format!(
            "{} does not implement the '{name}' operation",
            T::TYPE_NAME
        )));
    }
    let request: FindCreatedRequest = serde_json::from_value(request)
        .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
    let what = what(T::TYPE_NAME, &request.logical_id);
    // No token, no tag: an empty filter value would match nothing and prove nothing.
    if request.token.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: {name} needs the create's token"
        )));
    }
    let ec2 = client(ctx).await?;
    let ids = this
        .tagged(&ec2, &what, token_filter(&request.token))
        .await?;
    let physical_id = one_or_none(T::TYPE_NAME, &request.logical_id, &request.token, ids)?;
    let properties = match &physical_id {
        Some(id) => this
            .read(
                ctx,
                &what,
                &ReadCurrentStateRequest {
                    logical_id: request.logical_id.clone(),
                    physical_id: id.clone(),
                    properties: request.properties.clone(),
                },
            )
            .await?
            .unwrap_or_default(),
        None => Map::new(),
    };
    serde_json::to_value(FindCreatedResult {
        physical_id,
        properties,
    })
    .map_err(|e| ProviderError::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_is_the_token_tag() {
        let filter = token_filter("tok-1");
        assert_eq!(filter.name(), Some("tag:cdkd:create-token"));
        assert_eq!(filter.values(), ["tok-1"]);
    }

    #[test]
    fn one_is_the_create_none_is_nothing_and_more_is_refused() {
        let find = |ids: &[&str]| {
            one_or_none(
                "AWS::EC2::VPC",
                "Vpc",
                "tok",
                ids.iter().map(ToString::to_string).collect(),
            )
        };
        assert_eq!(find(&[]).unwrap(), None);
        assert_eq!(find(&["vpc-1"]).unwrap(), Some("vpc-1".into()));
        // The same id answered twice (two pages, two filters) is still one resource.
        assert_eq!(find(&["vpc-1", "vpc-1"]).unwrap(), Some("vpc-1".into()));
        let err = find(&["vpc-2", "vpc-1"]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        for part in ["AWS::EC2::VPC Vpc", "cdkd:create-token=tok", "vpc-1, vpc-2"] {
            assert!(err.message.contains(part), "{part}: {}", err.message);
        }
    }
}
