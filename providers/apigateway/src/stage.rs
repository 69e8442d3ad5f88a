//! `AWS::ApiGateway::Stage`: physical id `RestApiId|StageName`, `Ref` the stage name. A stage
//! name is unique in its API, so the run after a crash finds the stage by its name there.
//! CreateStage takes what it can; access logging, method settings and the client certificate
//! follow in one UpdateStage, as every later change does ([`stage_ops`]).

use std::collections::BTreeMap;

use aws_sdk_apigateway::types::{CanarySettings, MethodSetting, Op, PatchOperation};
use cdkd_aws_common::{deleted_unless_failed, flag, put, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::{map_ops, op, replace};
use crate::{
    arn, changed, client, create_tags, failed, found, map_shape, retag, string_map, tags_shape,
    ChildId,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::Stage";

/// The `AWS::ApiGateway::Stage` provider.
#[derive(Default)]
pub struct Stage;

/// The ARN a stage's tags are set by.
pub(crate) fn stage_arn(region: &str, api: &str, name: &str) -> String {
    arn(region, &format!("/restapis/{api}/stages/{name}"))
}

/// A `MethodSettings` entry's key in patch paths: `*/*` for every method, else the escaped
/// resource path and the verb (`~1items/GET`).
fn setting_key(entry: &Value) -> String {
    let path = text(entry.get("ResourcePath")).unwrap_or_else(|| "/*".into());
    let path = if path == "/*" {
        "*".to_string()
    } else {
        crate::patch::escape(&path)
    };
    let method = text(entry.get("HttpMethod")).unwrap_or_else(|| "*".into());
    format!("{path}/{method}")
}

/// A method setting's template key and its patch path below the entry's key.
const SETTING_PATHS: &[(&str, &str)] = &[
    ("CacheDataEncrypted", "caching/dataEncrypted"),
    ("CacheTtlInSeconds", "caching/ttlInSeconds"),
    ("CachingEnabled", "caching/enabled"),
    ("DataTraceEnabled", "logging/dataTrace"),
    ("LoggingLevel", "logging/loglevel"),
    ("MetricsEnabled", "metrics/enabled"),
    ("ThrottlingBurstLimit", "throttling/burstLimit"),
    ("ThrottlingRateLimit", "throttling/rateLimit"),
];

/// The template's method settings by their patch key.
fn settings_by_key(props: &Map<String, Value>) -> BTreeMap<String, Value> {
    props
        .get("MethodSettings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|entry| (setting_key(entry), entry.clone()))
        .collect()
}

/// The patch operations that turn the stage of `before` into the one of `after` (tags are
/// their own calls; `RestApiId` and `StageName` never change in place).
pub(crate) fn stage_ops(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    for (key, path) in [
        ("DeploymentId", "/deploymentId"),
        ("Description", "/description"),
        ("CacheClusterEnabled", "/cacheClusterEnabled"),
        ("CacheClusterSize", "/cacheClusterSize"),
        ("ClientCertificateId", "/clientCertificateId"),
        ("DocumentationVersion", "/documentationVersion"),
        ("TracingEnabled", "/tracingEnabled"),
    ] {
        if changed(before, after, key) {
            let value = match key {
                "CacheClusterEnabled" | "TracingEnabled" => {
                    Some(flag(after.get(key)).unwrap_or(false).to_string())
                }
                _ => text(after.get(key)),
            };
            ops.push(replace(path, value));
        }
    }
    if changed(before, after, "Variables") {
        let vars = |p: &Map<String, Value>| -> BTreeMap<String, String> {
            string_map(p.get("Variables"))
                .unwrap_or_default()
                .into_iter()
                .collect()
        };
        ops.extend(map_ops("/variables", &vars(before), &vars(after)));
    }
    if changed(before, after, "AccessLogSetting") {
        match after.get("AccessLogSetting").filter(|v| v.is_object()) {
            Some(log) => {
                ops.push(replace(
                    "/accessLogSettings/destinationArn",
                    text(log.get("DestinationArn")),
                ));
                ops.push(replace(
                    "/accessLogSettings/format",
                    text(log.get("Format")),
                ));
            }
            None => ops.push(op(Op::Remove, "/accessLogSettings", None)),
        }
    }
    if changed(before, after, "CanarySetting") {
        match after.get("CanarySetting").filter(|v| v.is_object()) {
            Some(canary) => {
                for (key, path) in [
                    ("DeploymentId", "/canarySettings/deploymentId"),
                    ("PercentTraffic", "/canarySettings/percentTraffic"),
                    ("UseStageCache", "/canarySettings/useStageCache"),
                ] {
                    if let Some(value) = text(canary.get(key)) {
                        ops.push(replace(path, Some(value)));
                    }
                }
                let overrides = |v: Option<&Value>| -> BTreeMap<String, String> {
                    string_map(v.and_then(|v| v.get("StageVariableOverrides")))
                        .unwrap_or_default()
                        .into_iter()
                        .collect()
                };
                ops.extend(map_ops(
                    "/canarySettings/stageVariableOverrides",
                    &overrides(before.get("CanarySetting")),
                    &overrides(Some(canary)),
                ));
            }
            None => ops.push(op(Op::Remove, "/canarySettings", None)),
        }
    }
    if changed(before, after, "MethodSettings") {
        let (old, new) = (settings_by_key(before), settings_by_key(after));
        for (key, entry) in &new {
            for (setting, path) in SETTING_PATHS {
                let was = old.get(key).and_then(|e| e.get(*setting));
                if let Some(value) = text(entry.get(*setting)) {
                    if was.and_then(|w| text(Some(w))) != Some(value.clone()) {
                        ops.push(replace(&format!("/{key}/{path}"), Some(value)));
                    }
                }
            }
        }
        for key in old.keys().filter(|k| !new.contains_key(*k)) {
            ops.push(op(Op::Remove, &format!("/{key}"), None));
        }
    }
    ops
}

/// The template's `CanarySetting` as CreateStage takes it.
fn canary(value: &Value) -> CanarySettings {
    CanarySettings::builder()
        .set_deployment_id(text(value.get("DeploymentId")))
        .set_percent_traffic(value.get("PercentTraffic").and_then(|v| {
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        }))
        .set_stage_variable_overrides(string_map(value.get("StageVariableOverrides")))
        .set_use_stage_cache(flag(value.get("UseStageCache")))
        .build()
}

/// A live method setting in template shape, named by its key (`*/*`, `~1items/GET`).
fn method_setting_shape(key: &str, s: &MethodSetting) -> Value {
    let (path, method) = key.rsplit_once('/').unwrap_or((key, "*"));
    let path = if path == "*" {
        "/*".to_string()
    } else {
        path.replace("~1", "/").replace("~0", "~")
    };
    let mut shape = Map::new();
    shape.insert("ResourcePath".into(), json!(path));
    shape.insert("HttpMethod".into(), json!(method));
    shape.insert("CacheDataEncrypted".into(), json!(s.cache_data_encrypted()));
    shape.insert("CacheTtlInSeconds".into(), json!(s.cache_ttl_in_seconds()));
    shape.insert("CachingEnabled".into(), json!(s.caching_enabled()));
    shape.insert("DataTraceEnabled".into(), json!(s.data_trace_enabled()));
    put(
        &mut shape,
        "LoggingLevel",
        s.logging_level().map(Value::from),
    );
    shape.insert("MetricsEnabled".into(), json!(s.metrics_enabled()));
    shape.insert(
        "ThrottlingBurstLimit".into(),
        json!(s.throttling_burst_limit()),
    );
    shape.insert(
        "ThrottlingRateLimit".into(),
        json!(s.throttling_rate_limit()),
    );
    Value::Object(shape)
}

/// Creates the stage and applies what CreateStage cannot take. Shared with a deployment's
/// `StageName`/`StageDescription`.
pub(crate) async fn create_stage(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    api: &str,
    name: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    apigw
        .create_stage()
        .rest_api_id(api)
        .stage_name(name)
        .set_deployment_id(text(props.get("DeploymentId")))
        .set_description(text(props.get("Description")))
        .set_cache_cluster_enabled(flag(props.get("CacheClusterEnabled")))
        .set_cache_cluster_size(text(props.get("CacheClusterSize")).map(|s| s.as_str().into()))
        .set_variables(string_map(props.get("Variables")))
        .set_documentation_version(text(props.get("DocumentationVersion")))
        .set_canary_settings(
            props
                .get("CanarySetting")
                .filter(|v| v.is_object())
                .map(canary),
        )
        .set_tracing_enabled(flag(props.get("TracingEnabled")))
        .set_tags(create_tags(props, None))
        .send()
        .await
        .map_err(failed!(format!("{what}: CreateStage {name} in {api}")))?;
    let created: Map<String, Value> = props
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "AccessLogSetting" | "MethodSettings" | "ClientCertificateId"
            )
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let ops = stage_ops(&created, props);
    if !ops.is_empty() {
        apigw
            .update_stage()
            .rest_api_id(api)
            .stage_name(name)
            .set_patch_operations(Some(ops))
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateStage {name} in {api}")))?;
    }
    Ok(())
}

/// The live stage of `name` in `api` in template shape; `None` when it is gone.
pub(crate) async fn read_stage(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    api: &str,
    name: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(stage) = found(
        apigw
            .get_stage()
            .rest_api_id(api)
            .stage_name(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetStage {name} in {api}"))),
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("RestApiId".into(), json!(api));
    props.insert("StageName".into(), json!(name));
    put(
        &mut props,
        "DeploymentId",
        stage.deployment_id().map(Value::from),
    );
    put(
        &mut props,
        "Description",
        stage
            .description()
            .filter(|d| !d.is_empty())
            .map(Value::from),
    );
    if stage.cache_cluster_enabled() {
        props.insert("CacheClusterEnabled".into(), json!(true));
        put(
            &mut props,
            "CacheClusterSize",
            stage.cache_cluster_size().map(|s| json!(s.as_str())),
        );
    }
    put(
        &mut props,
        "ClientCertificateId",
        stage.client_certificate_id().map(Value::from),
    );
    put(
        &mut props,
        "DocumentationVersion",
        stage.documentation_version().map(Value::from),
    );
    props.insert("TracingEnabled".into(), json!(stage.tracing_enabled()));
    put(&mut props, "Variables", map_shape(stage.variables()));
    if let Some(log) = stage
        .access_log_settings()
        .filter(|l| l.destination_arn().is_some())
    {
        let mut shape = Map::new();
        put(
            &mut shape,
            "DestinationArn",
            log.destination_arn().map(Value::from),
        );
        put(&mut shape, "Format", log.format().map(Value::from));
        props.insert("AccessLogSetting".into(), Value::Object(shape));
    }
    if let Some(c) = stage.canary_settings() {
        let mut shape = Map::new();
        put(
            &mut shape,
            "DeploymentId",
            c.deployment_id().map(Value::from),
        );
        shape.insert("PercentTraffic".into(), json!(c.percent_traffic()));
        put(
            &mut shape,
            "StageVariableOverrides",
            map_shape(c.stage_variable_overrides()),
        );
        shape.insert("UseStageCache".into(), json!(c.use_stage_cache()));
        props.insert("CanarySetting".into(), Value::Object(shape));
    }
    let settings: BTreeMap<&String, &MethodSetting> =
        stage.method_settings().into_iter().flatten().collect();
    if !settings.is_empty() {
        props.insert(
            "MethodSettings".into(),
            Value::Array(
                settings
                    .into_iter()
                    .map(|(k, s)| method_setting_shape(k, s))
                    .collect(),
            ),
        );
    }
    put(&mut props, "Tags", tags_shape(stage.tags()));
    Ok(Some(props))
}

#[async_trait]
impl ResourceProvider for Stage {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "RestApiId",
                "StageName",
                "DeploymentId",
                "Description",
                "AccessLogSetting",
                "CacheClusterEnabled",
                "CacheClusterSize",
                "CanarySetting",
                "ClientCertificateId",
                "DocumentationVersion",
                "MethodSettings",
                "TracingEnabled",
                "Variables",
                "Tags",
            ])
            .create_only(&["RestApiId", "StageName"])
            .read_and_import()
            .composite_id(
                &["RestApiId", "StageName"],
                &[&["RestApiId"], &["StageName"]],
            )
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["RestApiId", "StageName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let api = require_str(props, "RestApiId", &what)?;
        // CloudFormation requires the name; CDK always gives one.
        let name = require_str(props, "StageName", &what)?;
        create_stage(&client(ctx).await?, &what, api, name, props).await?;
        Ok(CreateResult {
            physical_id: ChildId::join(api, name),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let ChildId {
            parent: api,
            id: name,
        } = ChildId::parse(&request.physical_id, after, "RestApiId", &what)?;
        let apigw = client(ctx).await?;
        let ops = stage_ops(before, after);
        if !ops.is_empty() {
            apigw
                .update_stage()
                .rest_api_id(api)
                .stage_name(name)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateStage {name} in {api}")))?;
        }
        retag(
            &apigw,
            &what,
            &stage_arn(ctx.region(), api, name),
            before,
            after,
        )
        .await?;
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
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
        let ChildId {
            parent: api,
            id: name,
        } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "RestApiId",
            &what,
        )?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_stage()
                .rest_api_id(api)
                .stage_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteStage {name} in {api}"))),
        )
    }
}

#[async_trait]
impl Readable for Stage {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId {
            parent: api,
            id: name,
        } = ChildId::parse(&request.physical_id, &request.properties, "RestApiId", what)?;
        read_stage(&client(ctx).await?, what, api, name).await
    }

    async fn created_id(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let api = text(request.properties.get("RestApiId"));
        let name = text(request.properties.get("StageName"));
        Ok(api.zip(name).map(|(api, name)| ChildId::join(&api, &name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn show(ops: &[PatchOperation]) -> Vec<String> {
        ops.iter()
            .map(|o| {
                format!(
                    "{} {} {}",
                    o.op().unwrap().as_str(),
                    o.path().unwrap(),
                    o.value().unwrap_or("-")
                )
            })
            .collect()
    }

    #[test]
    fn stage_changes_become_patch_operations() {
        let before = props(json!({
            "DeploymentId": "d1", "Variables": {"mode": "live", "old": "x"},
            "MethodSettings": [{"ResourcePath": "/items", "HttpMethod": "GET", "MetricsEnabled": true}],
            "AccessLogSetting": {"DestinationArn": "arn:l", "Format": "$context.requestId"},
        }));
        let after = props(json!({
            "DeploymentId": "d2", "TracingEnabled": true, "Variables": {"mode": "test"},
            "MethodSettings": [{"ResourcePath": "/*", "HttpMethod": "*", "ThrottlingRateLimit": 10, "LoggingLevel": "INFO"}],
        }));
        assert_eq!(
            show(&stage_ops(&before, &after)),
            [
                "replace /deploymentId d2",
                "replace /tracingEnabled true",
                "replace /variables/mode test",
                "remove /variables/old -",
                "remove /accessLogSettings -",
                "replace /*/*/logging/loglevel INFO",
                "replace /*/*/throttling/rateLimit 10",
                "remove /~1items/GET -",
            ]
        );
        assert!(stage_ops(&after, &after).is_empty());
    }

    #[test]
    fn method_settings_read_back_by_path_and_verb() {
        let setting = MethodSetting::builder()
            .metrics_enabled(true)
            .throttling_rate_limit(10.0)
            .throttling_burst_limit(5)
            .build();
        let shape = method_setting_shape("~1items/GET", &setting);
        assert_eq!(shape["ResourcePath"], "/items");
        assert_eq!(shape["HttpMethod"], "GET");
        assert_eq!(shape["MetricsEnabled"], true);
        assert_eq!(method_setting_shape("*/*", &setting)["ResourcePath"], "/*");
        assert_eq!(Stage.schema().find_scope, ["RestApiId", "StageName"]);
    }
}
