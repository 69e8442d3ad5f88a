//! cdkd's API Gateway provider plugin: the types CDK's `RestApi` and `LambdaRestApi` synthesize
//! (`AWS::ApiGateway::RestApi`, `Resource`, `Method`, `Deployment`, `Stage`, `Account`, a usage
//! plan's `UsagePlan`, `ApiKey` and `UsagePlanKey`, a custom domain's `DomainName` and
//! `BasePathMapping`, and `Model`, `RequestValidator`, `Authorizer` and `GatewayResponse`) through direct API Gateway calls. The
//! API's physical id is its id; each child's is `RestApiId|ChildId` (a resource's, deployment's
//! or validator's id, a stage's or model's name) and `Ref` returns the child part, as
//! CloudFormation's does.

mod account;
mod api_key;
mod authorizer;
mod base_path_mapping;
mod deployment;
mod domain_name;
mod gateway_response;
mod method;
mod model;
mod patch;
mod request_validator;
mod resource;
mod rest_api;
mod stage;
mod usage_plan;
mod usage_plan_key;

cdkd_provider_api::export_plugin!(description: "AWS::ApiGateway REST APIs: RestApi, Resource, Method, Deployment, Stage, Account, UsagePlan, ApiKey, UsagePlanKey, DomainName, BasePathMapping, Model, RequestValidator, Authorizer and GatewayResponse through the API Gateway API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<rest_api::RestApi>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<resource::Resource>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<method::Method>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<deployment::Deployment>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<stage::Stage>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<account::Account>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<usage_plan::UsagePlan>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<api_key::ApiKey>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<usage_plan_key::UsagePlanKey>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<domain_name::DomainName>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<base_path_mapping::BasePathMapping>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<model::Model>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<request_validator::RequestValidator>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<authorizer::Authorizer>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<gateway_response::GatewayResponse>);

use std::collections::{BTreeMap, HashMap};

pub(crate) use cdkd_aws_common::ChildId;
use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// An API Gateway client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_apigateway::Client, ProviderError> {
    let config =
        aws_sdk_apigateway::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-apigateway"))
            .build();
    Ok(aws_sdk_apigateway::Client::from_conf(config))
}

/// The account the host's credentials belong to (STS GetCallerIdentity): the `Account`
/// singleton's id.
pub(crate) async fn account_id(ctx: &PluginContext, what: &str) -> Result<String, ProviderError> {
    let config = aws_sdk_sts::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-apigateway-sts"))
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

/// The ARN TagResource and UntagResource take for an API Gateway path (`/restapis/{id}`).
pub(crate) fn arn(region: &str, path: &str) -> String {
    format!("arn:{}:apigateway:{region}::{path}", partition(region))
}

/// API Gateway's own codes: `NotFoundException` for anything missing, `ConflictException` for
/// a name or path its parent already has.
const KINDS: &[(&str, ErrorKind)] = &[
    ("NotFoundException", ErrorKind::NOT_FOUND),
    ("ConflictException", ErrorKind::ALREADY_EXISTS),
    ("BadRequestException", ErrorKind::VALIDATION),
    ("TooManyRequestsException", ErrorKind::THROTTLED),
];

/// `err` (from `aws_error`) with the kind API Gateway's code stands for.
pub(crate) fn kinds(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, KINDS)
}

/// A failed call's error, named by `context`, with API Gateway's kinds.
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

/// Whether `key`'s value differs between two templates (a missing key and `null` alike).
pub(crate) fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    before.get(key).filter(|v| !v.is_null()) != after.get(key).filter(|v| !v.is_null())
}

/// A template map of strings (`Variables`, `RequestTemplates`), non-strings written as text.
pub(crate) fn string_map(value: Option<&Value>) -> Option<HashMap<String, String>> {
    value?.as_object().map(|map| {
        map.iter()
            .filter_map(|(k, v)| cdkd_aws_common::text(Some(v)).map(|v| (k.clone(), v)))
            .collect()
    })
}

/// A template map of flags (`RequestParameters` of a method: required or not).
pub(crate) fn flag_map(value: Option<&Value>) -> Option<HashMap<String, bool>> {
    value?.as_object().map(|map| {
        map.iter()
            .filter_map(|(k, v)| cdkd_aws_common::flag(Some(v)).map(|v| (k.clone(), v)))
            .collect()
    })
}

/// A live map in template shape (sorted); `None` when empty.
pub(crate) fn map_shape<V: serde::Serialize>(map: Option<&HashMap<String, V>>) -> Option<Value> {
    let sorted: BTreeMap<&String, &V> = map?.iter().collect();
    (!sorted.is_empty()).then(|| json!(sorted))
}

/// A JSON document property (`Policy`, a model's `Schema`, a `Body`) as the text API Gateway
/// takes: an object is serialized, a string passed as it is.
pub(crate) fn document(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A live JSON document in template shape: parsed when it is JSON (a template writes an
/// object), else the text.
pub(crate) fn document_shape(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// The template's `Tags` (`[{Key, Value}]`), cdkd's token tag left out.
pub(crate) fn template_tags(props: &Map<String, Value>) -> BTreeMap<String, String> {
    cdkd_aws_common::tag_map_without_token(props)
}

/// Live tags in template shape, cdkd's token tag and AWS's own left out.
pub(crate) fn tags_shape(tags: Option<&HashMap<String, String>>) -> Option<Value> {
    cdkd_aws_common::template_tags(
        tags.into_iter()
            .flatten()
            .filter(|(k, _)| k.as_str() != CREATE_TOKEN_TAG)
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

/// The template's tags as a create takes them, with cdkd's token tag when `token` is given.
pub(crate) fn create_tags(
    props: &Map<String, Value>,
    token: Option<&str>,
) -> Option<HashMap<String, String>> {
    let mut tags: HashMap<String, String> = template_tags(props).into_iter().collect();
    if let Some(token) = token {
        tags.insert(CREATE_TOKEN_TAG.into(), token.to_string());
    }
    (!tags.is_empty()).then_some(tags)
}

/// Sets and removes the tags that changed from `before` to `after` on the resource `arn`.
pub(crate) async fn retag(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed): (HashMap<String, String>, Vec<String>) =
        cdkd_aws_common::tag_changes(&template_tags(before), &template_tags(after));
    if !removed.is_empty() {
        apigw
            .untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
    }
    if !set.is_empty() {
        apigw
            .tag_resource()
            .resource_arn(arn)
            .set_tags(Some(set))
            .send()
            .await
            .map_err(failed!(format!("{what}: TagResource {arn}")))?;
    }
    Ok(())
}

/// A name for a resource whose template gives none and whose name must be alphanumeric (a
/// model's): the logical id and a hash of the stack and token, so the run after a crash
/// computes the same one.
pub(crate) fn alphanumeric_name(stack: &str, logical_id: &str, token: &str, max: usize) -> String {
    let hash = format!(
        "{:016x}",
        cdkd_aws_common::stable_hash(&[stack, logical_id, token])
    );
    let stem: String = logical_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(max.saturating_sub(hash.len() + 1))
        .collect();
    format!("{stem}{}", &hash[..hash.len().min(max - stem.len())])
}

/// One attribute map.
pub(crate) fn attributes(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_ids_split_and_bare_ones_take_the_templates_parent() {
        let props = json!({"RestApiId": "abc"}).as_object().cloned().unwrap();
        let split = |id| ChildId::parse(id, &props, "RestApiId", "w").map(|c| (c.parent, c.id));
        assert_eq!(split("a1|r1").unwrap(), ("a1", "r1"));
        assert_eq!(split("r1").unwrap(), ("abc", "r1"));
        let err = ChildId::parse("r1", &Map::new(), "RestApiId", "w").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
    }

    #[test]
    fn documents_travel_as_text_and_read_back_as_objects() {
        assert_eq!(
            document(Some(&json!({"a": 1}))).as_deref(),
            Some(r#"{"a":1}"#)
        );
        assert_eq!(document(Some(&json!("x: 1"))).as_deref(), Some("x: 1"));
        assert_eq!(document_shape(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(document_shape("x: 1"), json!("x: 1"));
    }

    #[test]
    fn tags_leave_the_token_out_and_names_are_stable() {
        let props = json!({"Tags": [{"Key": "team", "Value": "a"}]});
        let tags = create_tags(props.as_object().unwrap(), Some("t1")).unwrap();
        assert_eq!(tags[CREATE_TOKEN_TAG], "t1");
        let live: HashMap<String, String> = tags.into_iter().collect();
        assert_eq!(
            tags_shape(Some(&live)),
            Some(json!([{"Key": "team", "Value": "a"}]))
        );
        let name = alphanumeric_name("S", "Api-Model_1", "tok", 40);
        assert_eq!(name, alphanumeric_name("S", "Api-Model_1", "tok", 40));
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric()), "{name}");
        assert!(name.starts_with("ApiModel1"));
        assert_ne!(name, alphanumeric_name("S", "Api-Model_1", "tok2", 40));
        assert_eq!(
            arn("us-east-1", "/restapis/a"),
            "arn:aws:apigateway:us-east-1::/restapis/a"
        );
    }
}
