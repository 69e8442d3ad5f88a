//! `AWS::ApiGateway::RestApi`: physical id (and `Ref`) is the API id; attributes `RestApiId`
//! and `RootResourceId`. An OpenAPI `Body` (or the S3 object `BodyS3Location` names) is put
//! after the create (PutRestApi, the template's `Mode`, overwrite by default) and again when it
//! changes. The create tags the API
//! `cdkd:create-token` so the run after a crash finds it by that tag.

use aws_sdk_apigateway::types::{EndpointConfiguration, Op, PatchOperation, PutMode};
use cdkd_aws_common::{
    all_pages, carries_token, deleted_unless_failed, does_not_exist, find_created_answer,
    find_created_request, flag, generated_name, int, one_tagged, put, strings, text, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::{op, replace, set_ops_in_path};
use crate::{
    arn, attributes, changed, client, create_tags, document, document_shape, failed, found, retag,
    string_map, tags_shape,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::RestApi";

/// The longest API name API Gateway takes.
const MAX_NAME: usize = 128;

/// The `AWS::ApiGateway::RestApi` provider.
#[derive(Default)]
pub struct RestApi;

/// The template's `EndpointConfiguration` as the SDK's.
fn endpoint(value: &Value) -> EndpointConfiguration {
    EndpointConfiguration::builder()
        .set_types(
            strings(value.get("Types")).map(|t| t.iter().map(|t| t.as_str().into()).collect()),
        )
        .set_vpc_endpoint_ids(strings(value.get("VpcEndpointIds")))
        .set_ip_address_type(text(value.get("IpAddressType")).map(|t| t.as_str().into()))
        .build()
}

/// The live endpoint configuration in template shape.
fn endpoint_shape(e: &EndpointConfiguration) -> Value {
    let mut shape = Map::new();
    let types: Vec<&str> = e.types().iter().map(|t| t.as_str()).collect();
    if !types.is_empty() {
        shape.insert("Types".into(), json!(types));
    }
    if !e.vpc_endpoint_ids().is_empty() {
        shape.insert("VpcEndpointIds".into(), json!(e.vpc_endpoint_ids()));
    }
    put(
        &mut shape,
        "IpAddressType",
        e.ip_address_type().map(|t| json!(t.as_str())),
    );
    Value::Object(shape)
}

/// The name a create gives the API: the template's, else one generated from the token.
fn api_name(request: &CreateRequest) -> String {
    text(request.properties.get("Name")).unwrap_or_else(|| {
        generated_name(
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
            MAX_NAME,
            false,
            "",
        )
    })
}

/// The live API in template shape (from GetRestApi's or GetRestApis' fields).
fn template_shape(api: &aws_sdk_apigateway::types::RestApi) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", api.name().map(Value::from));
    put(
        &mut props,
        "Description",
        api.description().filter(|d| !d.is_empty()).map(Value::from),
    );
    put(
        &mut props,
        "Version",
        api.version().filter(|d| !d.is_empty()).map(Value::from),
    );
    if !api.binary_media_types().is_empty() {
        props.insert("BinaryMediaTypes".into(), json!(api.binary_media_types()));
    }
    put(
        &mut props,
        "MinimumCompressionSize",
        api.minimum_compression_size().map(Value::from),
    );
    put(
        &mut props,
        "ApiKeySourceType",
        api.api_key_source().map(|s| json!(s.as_str())),
    );
    put(
        &mut props,
        "EndpointConfiguration",
        api.endpoint_configuration().map(endpoint_shape),
    );
    put(
        &mut props,
        "Policy",
        api.policy()
            .filter(|p| !p.is_empty())
            .map(|p| document_shape(&p.replace("\\\"", "\""))),
    );
    if api.disable_execute_api_endpoint() {
        props.insert("DisableExecuteApiEndpoint".into(), json!(true));
    }
    put(
        &mut props,
        "SecurityPolicy",
        api.security_policy().map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "EndpointAccessMode",
        api.endpoint_access_mode().map(|m| json!(m.as_str())),
    );
    put(&mut props, "Tags", tags_shape(api.tags()));
    props
}

/// `RestApiId` and `RootResourceId`.
fn attributes_of(id: &str, root: Option<&str>) -> Map<String, Value> {
    let mut attrs = attributes(&[("RestApiId", id)]);
    put(&mut attrs, "RootResourceId", root.map(Value::from));
    attrs
}

/// The API of `id`; `None` when it is gone.
async fn get_api(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_apigateway::types::RestApi>, ProviderError> {
    let answer = found(
        apigw
            .get_rest_api()
            .rest_api_id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetRestApi {id}"))),
    )?;
    Ok(answer.map(|a| {
        aws_sdk_apigateway::types::RestApi::builder()
            .set_id(a.id().map(ToString::to_string))
            .set_name(a.name().map(ToString::to_string))
            .set_description(a.description().map(ToString::to_string))
            .set_version(a.version().map(ToString::to_string))
            .set_binary_media_types(Some(a.binary_media_types().to_vec()))
            .set_minimum_compression_size(a.minimum_compression_size())
            .set_api_key_source(a.api_key_source().cloned())
            .set_endpoint_configuration(a.endpoint_configuration().cloned())
            .set_policy(a.policy().map(ToString::to_string))
            .set_tags(a.tags().cloned())
            .disable_execute_api_endpoint(a.disable_execute_api_endpoint())
            .set_root_resource_id(a.root_resource_id().map(ToString::to_string))
            .set_security_policy(a.security_policy().cloned())
            .set_endpoint_access_mode(a.endpoint_access_mode().cloned())
            .build()
    }))
}

/// The template's OpenAPI definition: `Body`, else the object `BodyS3Location` names (its
/// `Version` and `ETag` when given).
async fn definition(
    ctx: &PluginContext,
    what: &str,
    props: &Map<String, Value>,
) -> Result<Option<Vec<u8>>, ProviderError> {
    if let Some(body) = document(props.get("Body")) {
        return Ok(Some(body.into_bytes()));
    }
    let Some(location) = props.get("BodyS3Location").filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let (Some(bucket), Some(key)) = (text(location.get("Bucket")), text(location.get("Key")))
    else {
        return Err(ProviderError::validation(format!(
            "{what}: BodyS3Location needs Bucket and Key"
        )));
    };
    let config = aws_sdk_s3::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-apigateway-s3"))
        .force_path_style(true)
        .build();
    let object = aws_sdk_s3::Client::from_conf(config)
        .get_object()
        .bucket(&bucket)
        .key(&key)
        .set_version_id(text(location.get("Version")))
        .set_if_match(text(location.get("ETag")))
        .send()
        .await
        .map_err(|e| {
            cdkd_aws_common::aws_error(
                &format!("{what}: GetObject s3://{bucket}/{key} (BodyS3Location)"),
                e,
            )
        })?;
    let bytes = object.body.collect().await.map_err(|e| {
        ProviderError::other(format!(
            "{what}: reading s3://{bucket}/{key} (BodyS3Location): {e}"
        ))
    })?;
    Ok(Some(bytes.into_bytes().to_vec()))
}

/// Whether the template defines the API by an OpenAPI document.
fn has_definition(props: &Map<String, Value>) -> bool {
    ["Body", "BodyS3Location"]
        .iter()
        .any(|k| props.get(*k).is_some_and(|v| !v.is_null()))
}

/// Puts the template's OpenAPI definition into the API (PutRestApi in the template's `Mode`).
async fn put_body(
    ctx: &PluginContext,
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    id: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let Some(body) = definition(ctx, what, props).await? else {
        return Ok(());
    };
    let mode = text(props.get("Mode")).unwrap_or_else(|| "overwrite".into());
    apigw
        .put_rest_api()
        .rest_api_id(id)
        .mode(PutMode::from(mode.as_str()))
        .set_fail_on_warnings(flag(props.get("FailOnWarnings")))
        .set_parameters(string_map(props.get("Parameters")))
        .body(aws_sdk_apigateway::primitives::Blob::new(body))
        .send()
        .await
        .map_err(failed!(format!("{what}: PutRestApi {id}")))?;
    Ok(())
}

/// The patch operations that turn the API of `before` into the one of `after` (tags and
/// `Body` are their own calls).
fn update_ops(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    for (key, path) in [
        ("Name", "/name"),
        ("Description", "/description"),
        ("Version", "/version"),
        ("ApiKeySourceType", "/apiKeySource"),
        ("MinimumCompressionSize", "/minimumCompressionSize"),
        ("DisableExecuteApiEndpoint", "/disableExecuteApiEndpoint"),
        ("SecurityPolicy", "/securityPolicy"),
        ("EndpointAccessMode", "/endpointAccessMode"),
    ] {
        if changed(before, after, key) {
            let value = match key {
                "ApiKeySourceType" => Some(text(after.get(key)).unwrap_or_else(|| "HEADER".into())),
                "DisableExecuteApiEndpoint" => {
                    Some(flag(after.get(key)).unwrap_or(false).to_string())
                }
                _ => text(after.get(key)),
            };
            ops.push(replace(path, value));
        }
    }
    if changed(before, after, "Policy") {
        ops.push(replace("/policy", document(after.get("Policy"))));
    }
    if changed(before, after, "BinaryMediaTypes") {
        ops.extend(set_ops_in_path(
            "/binaryMediaTypes",
            &strings(before.get("BinaryMediaTypes")).unwrap_or_default(),
            &strings(after.get("BinaryMediaTypes")).unwrap_or_default(),
        ));
    }
    if changed(before, after, "EndpointConfiguration") {
        let (b, a) = (
            before.get("EndpointConfiguration"),
            after.get("EndpointConfiguration"),
        );
        let list =
            |v: Option<&Value>, key: &str| strings(v.and_then(|v| v.get(key))).unwrap_or_default();
        let (old_types, new_types) = (list(b, "Types"), list(a, "Types"));
        if old_types != new_types {
            // One endpoint type per API: the old one is replaced by the new (EDGE when none).
            let old = old_types.first().cloned().unwrap_or_else(|| "EDGE".into());
            let new = new_types.first().cloned().unwrap_or_else(|| "EDGE".into());
            if old != new {
                ops.push(op(
                    Op::Replace,
                    &format!("/endpointConfiguration/types/{old}"),
                    Some(new),
                ));
            }
        }
        let (old_ids, new_ids) = (list(b, "VpcEndpointIds"), list(a, "VpcEndpointIds"));
        ops.extend(crate::patch::set_ops_in_value(
            "/endpointConfiguration/vpcEndpointIds",
            &old_ids,
            &new_ids,
        ));
        let ip = |v: Option<&Value>| text(v.and_then(|v| v.get("IpAddressType")));
        if ip(b) != ip(a) {
            if let Some(new) = ip(a) {
                ops.push(replace("/endpointConfiguration/ipAddressType", Some(new)));
            }
        }
    }
    ops
}

/// The ids of the REST APIs tagged with the create's `token`.
async fn tagged(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    token: &str,
) -> Result<Vec<String>, ProviderError> {
    all_pages(|next| async move {
        let page = apigw
            .get_rest_apis()
            .limit(500)
            .set_position(next)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetRestApis")))?;
        let ids = page
            .items()
            .iter()
            .filter(|item| carries_token(item.tags(), token))
            .filter_map(|item| item.id().map(ToString::to_string))
            .collect();
        Ok((ids, page.position().map(ToString::to_string)))
    })
    .await
}

#[async_trait]
impl ResourceProvider for RestApi {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "Description",
                "Version",
                "CloneFrom",
                "BinaryMediaTypes",
                "MinimumCompressionSize",
                "ApiKeySourceType",
                "EndpointConfiguration",
                "Policy",
                "DisableExecuteApiEndpoint",
                "Body",
                "BodyS3Location",
                "Mode",
                "SecurityPolicy",
                "EndpointAccessMode",
                "FailOnWarnings",
                "Parameters",
                "Tags",
            ])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = api_name(&request);
        let apigw = client(ctx).await?;
        let created = apigw
            .create_rest_api()
            .name(&name)
            .set_description(text(props.get("Description")))
            .set_version(text(props.get("Version")))
            .set_clone_from(text(props.get("CloneFrom")))
            .set_binary_media_types(strings(props.get("BinaryMediaTypes")))
            .set_minimum_compression_size(int(props.get("MinimumCompressionSize")))
            .set_api_key_source(text(props.get("ApiKeySourceType")).map(|s| s.as_str().into()))
            .set_endpoint_configuration(
                props
                    .get("EndpointConfiguration")
                    .filter(|v| v.is_object())
                    .map(endpoint),
            )
            .set_policy(document(props.get("Policy")))
            .set_disable_execute_api_endpoint(flag(props.get("DisableExecuteApiEndpoint")))
            .set_security_policy(text(props.get("SecurityPolicy")).map(|p| p.as_str().into()))
            .set_endpoint_access_mode(
                text(props.get("EndpointAccessMode")).map(|m| m.as_str().into()),
            )
            .set_tags(create_tags(props, Some(&request.client_token)))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateRestApi {name}")))?;
        let id = created
            .id()
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateRestApi returned no id")))?
            .to_string();
        let mut root = created.root_resource_id().map(ToString::to_string);
        if has_definition(props) {
            put_body(ctx, &apigw, &what, &id, props).await?;
            // An overwrite takes the definition's title and description: the template's win.
            let mut ops = vec![replace("/name", Some(name.clone()))];
            if let Some(description) = text(props.get("Description")) {
                ops.push(replace("/description", Some(description)));
            }
            let api = apigw
                .update_rest_api()
                .rest_api_id(&id)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateRestApi {id}")))?;
            root = api.root_resource_id().map(ToString::to_string).or(root);
        }
        Ok(CreateResult {
            attributes: attributes_of(&id, root.as_deref()),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, id) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let apigw = client(ctx).await?;
        let redefined = [
            "Body",
            "BodyS3Location",
            "Mode",
            "FailOnWarnings",
            "Parameters",
        ]
        .iter()
        .any(|k| changed(before, after, k));
        if redefined {
            put_body(ctx, &apigw, &what, id, after).await?;
        }
        let mut ops = update_ops(before, after);
        if redefined && !ops.iter().any(|o| o.path() == Some("/name")) {
            if let Some(name) = text(after.get("Name")) {
                ops.push(replace("/name", Some(name)));
            }
        }
        if !ops.is_empty() {
            apigw
                .update_rest_api()
                .rest_api_id(id)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateRestApi {id}")))?;
        }
        retag(
            &apigw,
            &what,
            &arn(ctx.region(), &format!("/restapis/{id}")),
            before,
            after,
        )
        .await?;
        let api = get_api(&apigw, &what, id)
            .await?
            .ok_or_else(|| does_not_exist(&what, id, "API Gateway"))?;
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes: attributes_of(id, api.root_resource_id()),
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let id = &request.physical_id;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_rest_api()
                .rest_api_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteRestApi {id}"))),
        )
    }

    /// [`operation::FIND_CREATED`]: the API carrying the create's token tag.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        let (request, what) = find_created_request(TYPE, name, request, true)?;
        let apigw = client(ctx).await?;
        let ids = tagged(&apigw, &what, &request.token).await?;
        let found = match one_tagged(&what, "REST APIs", &request.token, ids)? {
            Some(id) => get_api(&apigw, &what, &id)
                .await?
                .map(|api| (id, template_shape(&api))),
            None => None,
        };
        find_created_answer(found)
    }
}

#[async_trait]
impl Readable for RestApi {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let apigw = client(ctx).await?;
        Ok(get_api(&apigw, what, &request.physical_id)
            .await?
            .map(|api| template_shape(&api)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let apigw = client(ctx).await?;
        let api = get_api(&apigw, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "API Gateway"))?;
        Ok(attributes_of(physical_id, api.root_resource_id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn changes_become_patch_operations() {
        let before = props(json!({
            "Name": "a", "Description": "d", "BinaryMediaTypes": ["image/png"],
            "EndpointConfiguration": {"Types": ["EDGE"]}, "MinimumCompressionSize": 10,
        }));
        let after = props(json!({
            "Name": "a", "BinaryMediaTypes": ["image/png", "application/pdf"],
            "EndpointConfiguration": {"Types": ["REGIONAL"]}, "Policy": {"Version": "2012-10-17"},
        }));
        let ops: Vec<(String, String, String)> = update_ops(&before, &after)
            .iter()
            .map(|o| {
                (
                    o.op().unwrap().as_str().to_string(),
                    o.path().unwrap().to_string(),
                    o.value().unwrap_or("-").to_string(),
                )
            })
            .collect();
        let expect = |op: &str, path: &str, value: &str| {
            (op.to_string(), path.to_string(), value.to_string())
        };
        assert_eq!(
            ops,
            [
                expect("replace", "/description", ""),
                expect("replace", "/minimumCompressionSize", ""),
                expect("replace", "/policy", r#"{"Version":"2012-10-17"}"#),
                expect("add", "/binaryMediaTypes/application~1pdf", "-"),
                expect("replace", "/endpointConfiguration/types/EDGE", "REGIONAL"),
            ]
        );
        assert!(update_ops(&before, &before).is_empty());
    }

    #[test]
    fn the_live_api_reads_back_in_template_shape() {
        let api = aws_sdk_apigateway::types::RestApi::builder()
            .id("a1")
            .name("shop")
            .description("")
            .binary_media_types("image/png")
            .endpoint_configuration(
                EndpointConfiguration::builder()
                    .types("REGIONAL".into())
                    .build(),
            )
            .policy(r#"{\"Version\":\"2012-10-17\"}"#)
            .tags(CREATE_TOKEN_TAG, "t")
            .tags("team", "a")
            .build();
        assert_eq!(
            Value::Object(template_shape(&api)),
            json!({
                "Name": "shop",
                "BinaryMediaTypes": ["image/png"],
                "EndpointConfiguration": {"Types": ["REGIONAL"]},
                "Policy": {"Version": "2012-10-17"},
                "Tags": [{"Key": "team", "Value": "a"}],
            })
        );
        let sdk = endpoint(&json!({"Types": ["PRIVATE"], "VpcEndpointIds": ["vpce-1"]}));
        assert_eq!(
            endpoint_shape(&sdk),
            json!({"Types": ["PRIVATE"], "VpcEndpointIds": ["vpce-1"]})
        );
    }
}
