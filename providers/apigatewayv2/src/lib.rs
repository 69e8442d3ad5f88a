//! cdkd's API Gateway v2 provider plugin: the types CDK's `HttpApi` synthesizes
//! (`AWS::ApiGatewayV2::Api`, `Stage`, `Integration`, `Route`, `Authorizer`, and a custom
//! domain's `DomainName` and `ApiMapping`) through direct API
//! Gateway v2 calls. The API's physical id is its id; each child's is `ApiId|ChildId` (the
//! stage's name, the integration's, route's or authorizer's id), and `Ref` returns the child
//! part, as CloudFormation's does.

mod api;
mod api_mapping;
mod authorizer;
mod domain_name;
mod integration;
mod parameter_mapping;
mod route;
mod stage;

cdkd_provider_api::export_plugin!(description: "AWS::ApiGatewayV2 HTTP APIs: Api, Stage, Integration, Route, Authorizer, DomainName and ApiMapping through the API Gateway v2 API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<api::Api>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<stage::Stage>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<integration::Integration>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<route::Route>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<authorizer::Authorizer>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<domain_name::DomainName>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<api_mapping::ApiMapping>);

pub(crate) use cdkd_aws_common::ChildId;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{Map, Value};

/// An API Gateway v2 client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_apigatewayv2::Client, ProviderError> {
    let config =
        aws_sdk_apigatewayv2::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-apigatewayv2"))
            .build();
    Ok(aws_sdk_apigatewayv2::Client::from_conf(config))
}

/// The account the host's credentials belong to (STS GetCallerIdentity), for ARNs API Gateway
/// does not return (an API's `ExecuteApiArn`).
pub(crate) async fn account(ctx: &PluginContext, what: &str) -> Result<String, ProviderError> {
    let config = aws_sdk_sts::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-apigatewayv2-sts"))
        .build();
    let identity = aws_sdk_sts::Client::from_conf(config)
        .get_caller_identity()
        .send()
        .await
        .map_err(|e| cdkd_aws_common::aws_error(&format!("{what}: GetCallerIdentity"), e))?;
    identity.account().map(ToString::to_string).ok_or_else(|| {
        ProviderError::other(format!("{what}: GetCallerIdentity returned no account"))
    })
}

/// The partition of `region` (`aws-cn` for China, `aws-us-gov` for GovCloud, else `aws`).
pub(crate) fn partition(region: &str) -> &'static str {
    if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    }
}

/// API Gateway v2's own codes: `NotFoundException` for anything missing (an API, a stage, a
/// route...), `ConflictException` for a stage name or route key the API already has.
const KINDS: &[(&str, ErrorKind)] = &[
    ("NotFoundException", ErrorKind::NOT_FOUND),
    ("ConflictException", ErrorKind::ALREADY_EXISTS),
    ("BadRequestException", ErrorKind::VALIDATION),
    ("TooManyRequestsException", ErrorKind::THROTTLED),
];

/// `err` (from [`aws_error`]) with the kind API Gateway v2's code stands for.
pub(crate) fn kinds(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, KINDS)
}

/// A failed call's error, named by `context`, with API Gateway v2's kinds.
macro_rules! failed {
    ($context:expr) => {
        |e| $crate::kinds(cdkd_aws_common::aws_error(&$context, e))
    };
}
pub(crate) use failed;

/// `Ok(None)` for a "not found" error, the value or the error otherwise.
pub(crate) fn found<T>(result: Result<T, ProviderError>) -> Result<Option<T>, ProviderError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(None),
        Err(err) => Err(err),
    }
}

/// The template's `ApiId`, required.
pub(crate) fn api_id<'a>(
    properties: &'a Map<String, Value>,
    what: &str,
) -> Result<&'a str, ProviderError> {
    cdkd_aws_common::require_str(properties, "ApiId", what)
}

/// A template map of strings (`StageVariables`, `Tags`), non-strings left out.
pub(crate) fn string_map(
    value: Option<&Value>,
) -> Option<std::collections::HashMap<String, String>> {
    value?.as_object().map(|map| {
        map.iter()
            .filter_map(|(k, v)| cdkd_aws_common::text(Some(v)).map(|v| (k.clone(), v)))
            .collect()
    })
}

/// Whether `key`'s value differs between two templates (a missing key and `null` alike).
pub(crate) fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    before.get(key).filter(|v| !v.is_null()) != after.get(key).filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_get_their_kinds_and_maps_read_as_strings() {
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "ConflictException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        let map = string_map(Some(&json!({"a": "1", "b": 2, "c": {}}))).unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!(map["b"], "2");
        let before = json!({"D": "x", "N": null}).as_object().cloned().unwrap();
        let after = json!({"D": "x"}).as_object().cloned().unwrap();
        assert!(!changed(&before, &after, "D"));
        assert!(!changed(&before, &after, "N"));
        assert!(changed(&before, &Map::new(), "D"));
        assert_eq!(partition("cn-north-1"), "aws-cn");
        assert_eq!(partition("us-gov-west-1"), "aws-us-gov");
        assert_eq!(partition("eu-west-1"), "aws");
    }
}
