//! cdkd's CloudFront provider plugin: `AWS::CloudFront::Distribution`, `OriginAccessControl`,
//! `CloudFrontOriginAccessIdentity`, `Function`, `CachePolicy`, `OriginRequestPolicy` and
//! `ResponseHeadersPolicy` through direct CloudFront calls (CloudFront is global: every call is
//! signed for us-east-1). Every update and delete carries the ETag CloudFront requires
//! (`IfMatch`), read just before. A distribution's create returns as soon as CloudFront has
//! accepted it (its id and domain name exist at once; `InProgress` → `Deployed` is edge
//! propagation, which no dependent's creation needs); its delete is CloudFormation's: disable,
//! wait for `Deployed`, delete.

mod cache_policy;
mod distribution;
mod distribution_config;
mod function;
mod named_config;
mod origin_access_control;
mod origin_access_identity;
mod origin_request_policy;
mod response_headers_policy;

cdkd_provider_api::export_plugin!(description: "AWS::CloudFront distributions, origin access controls and identities, functions and cache, origin request and response headers policies through the CloudFront API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<distribution::Distribution>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<named_config::Named<origin_access_control::OriginAccessControl>>
);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<origin_access_identity::OriginAccessIdentity>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<function::Function>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<named_config::Named<cache_policy::CachePolicy>>
);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<named_config::Named<origin_request_policy::OriginRequestPolicy>>
);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<named_config::Named<response_headers_policy::ResponseHeadersPolicy>>
);

use std::collections::BTreeMap;

use cdkd_provider_api::protocol::{FindCreatedRequest, FindCreatedResult};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{Map, Value};

/// A CloudFront client for the host's endpoint and credentials, signing for us-east-1
/// whatever the stack's region (CloudFront is a global service).
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_cloudfront::Client, ProviderError> {
    let config =
        aws_sdk_cloudfront::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .region(aws_sdk_cloudfront::config::Region::new("us-east-1"))
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-cloudfront"))
            .build();
    Ok(aws_sdk_cloudfront::Client::from_conf(config))
}

/// CloudFront's own error codes the shared table does not know or gets wrong.
const KINDS: &[(&str, ErrorKind)] = &[
    ("NoSuchDistribution", ErrorKind::NOT_FOUND),
    ("NoSuchCloudFrontOriginAccessIdentity", ErrorKind::NOT_FOUND),
    ("NoSuchOriginAccessControl", ErrorKind::NOT_FOUND),
    ("NoSuchFunctionExists", ErrorKind::NOT_FOUND),
    ("NoSuchCachePolicy", ErrorKind::NOT_FOUND),
    ("NoSuchOriginRequestPolicy", ErrorKind::NOT_FOUND),
    ("NoSuchResponseHeadersPolicy", ErrorKind::NOT_FOUND),
    ("NoSuchResource", ErrorKind::NOT_FOUND),
    ("PreconditionFailed", ErrorKind::CONFLICT),
    ("DistributionNotDisabled", ErrorKind::CONFLICT),
    ("FunctionInUse", ErrorKind::CONFLICT),
    ("CachePolicyInUse", ErrorKind::CONFLICT),
    ("OriginRequestPolicyInUse", ErrorKind::CONFLICT),
    ("ResponseHeadersPolicyInUse", ErrorKind::CONFLICT),
    ("OriginAccessControlInUse", ErrorKind::CONFLICT),
    ("CloudFrontOriginAccessIdentityInUse", ErrorKind::CONFLICT),
    ("InvalidIfMatchVersion", ErrorKind::VALIDATION),
    ("IllegalUpdate", ErrorKind::VALIDATION),
    ("InconsistentQuantities", ErrorKind::VALIDATION),
    ("InvalidFunctionAssociation", ErrorKind::VALIDATION),
    ("NoSuchOrigin", ErrorKind::VALIDATION),
    ("CNAMEAlreadyExists", ErrorKind::VALIDATION),
];

/// `err` (from `aws_error`) with the kind its CloudFront code stands for.
pub(crate) fn kinds(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, KINDS)
}

/// A failed call's error, named by `context`, with CloudFront's kinds.
macro_rules! failed {
    ($context:expr) => {
        |e| $crate::kinds(cdkd_aws_common::aws_error(&$context, e))
    };
}
pub(crate) use failed;

/// The longest `CallerReference` cdkd sends.
const MAX_CALLER_REFERENCE: usize = 128;

/// The `CallerReference` of a create: its token (CloudFront's own idempotency token: a repeated
/// create with the same reference and configuration answers the first one's resource).
pub(crate) fn caller_reference(token: &str) -> String {
    if token.is_empty() {
        // No token (an older host, `providers call` without one): unique, so never adopted.
        return format!(
            "cdkd-{}",
            cdkd_aws_common::generated_name("", "r", "", 40, false, "")
        );
    }
    token.chars().take(MAX_CALLER_REFERENCE).collect()
}

/// An SDK builder's error as a validation error naming the resource.
pub(crate) fn built<T>(
    what: &str,
    result: Result<T, aws_sdk_cloudfront::error::BuildError>,
) -> Result<T, ProviderError> {
    result.map_err(|e| ProviderError::validation(format!("{what}: {e}")))
}

/// An answer's ETag, required for the next update or delete.
pub(crate) fn etag(what: &str, etag: Option<&str>) -> Result<String, ProviderError> {
    etag.map(ToString::to_string)
        .ok_or_else(|| ProviderError::other(format!("{what}: CloudFront answered without an ETag")))
}

/// The request of a `find_created` call, parsed and checked to carry a token when `token`.
pub(crate) fn find_request(
    type_name: &str,
    request: Value,
    token: bool,
) -> Result<FindCreatedRequest, ProviderError> {
    let request: FindCreatedRequest = serde_json::from_value(request)
        .map_err(|e| ProviderError::validation(format!("{type_name}: find_created: {e}")))?;
    if token && request.token.is_empty() {
        return Err(ProviderError::validation(format!(
            "{type_name} {}: find_created needs the create's token",
            request.logical_id
        )));
    }
    Ok(request)
}

/// A `find_created` answer.
pub(crate) fn found_answer(
    physical_id: Option<String>,
    properties: Option<Map<String, Value>>,
) -> Result<Value, ProviderError> {
    let result = match (physical_id, properties) {
        (Some(id), Some(properties)) => FindCreatedResult {
            physical_id: Some(id),
            properties,
        },
        _ => FindCreatedResult::default(),
    };
    serde_json::to_value(result).map_err(|e| ProviderError::other(e.to_string()))
}

/// The error of an operation a type does not implement.
pub(crate) fn unsupported(type_name: &str, name: &str) -> ProviderError {
    ProviderError::unsupported(format!(
        "{type_name} does not implement the '{name}' operation"
    ))
}

/// A CloudFront timestamp as CloudFormation reports it (ISO 8601, UTC).
pub(crate) fn timestamp(time: &aws_sdk_cloudfront::primitives::DateTime) -> Value {
    Value::String(
        time.fmt(aws_sdk_cloudfront::primitives::DateTimeFormat::DateTime)
            .unwrap_or_default(),
    )
}

/// The name of a template's config object (`CachePolicyConfig.Name`, ...), where the type is
/// found by after a crash.
pub(crate) fn config_name(properties: &Map<String, Value>, config: &str) -> Option<String> {
    properties
        .get(config)
        .and_then(|c| cdkd_aws_common::string(c.get("Name")))
}

/// Template tags as CloudFront's.
pub(crate) fn sdk_tags(
    what: &str,
    tags: &BTreeMap<String, String>,
) -> Result<Vec<aws_sdk_cloudfront::types::Tag>, ProviderError> {
    tags.iter()
        .map(|(k, v)| {
            built(
                what,
                aws_sdk_cloudfront::types::Tag::builder()
                    .key(k)
                    .value(v)
                    .build(),
            )
        })
        .collect()
}

/// Changes the tags of the resource `arn` from `before` to `after` (TagResource, UntagResource).
pub(crate) async fn set_tags(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    arn: &str,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Result<(), ProviderError> {
    let (set, removed): (BTreeMap<String, String>, Vec<String>) =
        cdkd_aws_common::tag_changes(before, after);
    if !removed.is_empty() {
        cf.untag_resource()
            .resource(arn)
            .tag_keys(
                aws_sdk_cloudfront::types::TagKeys::builder()
                    .set_items(Some(removed))
                    .build(),
            )
            .send()
            .await
            .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
    }
    if !set.is_empty() {
        cf.tag_resource()
            .resource(arn)
            .tags(
                aws_sdk_cloudfront::types::Tags::builder()
                    .set_items(Some(sdk_tags(what, &set)?))
                    .build(),
            )
            .send()
            .await
            .map_err(failed!(format!("{what}: TagResource {arn}")))?;
    }
    Ok(())
}

/// The live tags of the resource `arn`, cdkd's token tag left out.
pub(crate) async fn live_tags(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    arn: &str,
) -> Result<BTreeMap<String, String>, ProviderError> {
    let answer = cf
        .list_tags_for_resource()
        .resource(arn)
        .send()
        .await
        .map_err(failed!(format!("{what}: ListTagsForResource {arn}")))?;
    Ok(answer
        .tags()
        .map(|t| t.items())
        .unwrap_or_default()
        .iter()
        .filter(|t| t.key() != cdkd_provider_api::protocol::CREATE_TOKEN_TAG)
        .map(|t| {
            (
                t.key().to_string(),
                t.value().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_come_from_the_token_and_codes_get_their_kinds() {
        assert_eq!(caller_reference("tok-1"), "tok-1");
        assert_eq!(
            caller_reference(&"t".repeat(300)).len(),
            MAX_CALLER_REFERENCE
        );
        assert_ne!(caller_reference(""), caller_reference(""));
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "NoSuchDistribution"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            kinds(ProviderError::new(ErrorKind::OTHER, "x").with_aws_code("PreconditionFailed"))
                .kind,
            ErrorKind::CONFLICT
        );
        let props = serde_json::json!({"CachePolicyConfig": {"Name": "p"}});
        assert_eq!(
            config_name(props.as_object().unwrap(), "CachePolicyConfig").as_deref(),
            Some("p")
        );
    }
}
