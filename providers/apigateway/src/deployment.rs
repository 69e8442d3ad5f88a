//! `AWS::ApiGateway::Deployment`: physical id `RestApiId|DeploymentId`, `Ref` and attribute
//! `DeploymentId` the deployment's id. CDK gives a deployment a new logical id whenever the
//! API changes, so a changed API is a new deployment (a create), the stage moves to it, and the
//! old one is deleted after. A deployment has no name and no tags: a create repeated after a
//! crash makes one more snapshot, which no stage points to (and which goes with the API).
//! `StageName` with `StageDescription` creates that stage along (CreateDeployment, then what
//! CreateDeployment cannot take as in [`crate::stage`]); its delete deletes the stage too when
//! the stage still points to this deployment.

use cdkd_aws_common::{deleted_unless_failed, flag, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest, RefValue,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use aws_sdk_apigateway::types::DeploymentCanarySettings;

use crate::patch::replace;
use crate::stage::{stage_arn, stage_ops};
use crate::{attributes, changed, client, failed, found, retag, string_map, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::Deployment";

/// `StageDescription`'s method-wide settings, which a stage keeps as its `*/*` method setting.
const METHOD_WIDE: &[&str] = &[
    "CacheDataEncrypted",
    "CacheTtlInSeconds",
    "CachingEnabled",
    "DataTraceEnabled",
    "LoggingLevel",
    "MetricsEnabled",
    "ThrottlingBurstLimit",
    "ThrottlingRateLimit",
];

/// The `AWS::ApiGateway::Deployment` provider.
#[derive(Default)]
pub struct Deployment;

/// The template's `StageDescription` as a stage's properties (`MethodSettings` gaining a
/// `*/*` entry from the method-wide settings).
fn stage_properties(props: &Map<String, Value>) -> Map<String, Value> {
    let Some(description) = props.get("StageDescription").and_then(Value::as_object) else {
        return Map::new();
    };
    let mut stage: Map<String, Value> = description
        .iter()
        .filter(|(k, _)| !METHOD_WIDE.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut wide = Map::new();
    for key in METHOD_WIDE {
        if let Some(value) = description.get(*key) {
            wide.insert((*key).into(), value.clone());
        }
    }
    if !wide.is_empty() {
        wide.insert("ResourcePath".into(), json!("/*"));
        wide.insert("HttpMethod".into(), json!("*"));
        let mut settings = stage
            .get("MethodSettings")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        settings.push(Value::Object(wide));
        stage.insert("MethodSettings".into(), Value::Array(settings));
    }
    stage
}

#[async_trait]
impl ResourceProvider for Deployment {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "RestApiId",
                "Description",
                "StageName",
                "StageDescription",
                "DeploymentCanarySettings",
            ])
            .create_only(&["RestApiId", "DeploymentCanarySettings", "StageName"])
            .read_and_import()
            .composite_id(&["RestApiId", "DeploymentId"], &[&["RestApiId"], &[]])
            .ref_value(RefValue::Segment(1))
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
        let stage_name = text(props.get("StageName"));
        let stage = stage_properties(props);
        let canary = props
            .get("DeploymentCanarySettings")
            .filter(|v| v.is_object())
            .map(|c| {
                DeploymentCanarySettings::builder()
                    .set_percent_traffic(c.get("PercentTraffic").and_then(|v| {
                        v.as_f64()
                            .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
                    }))
                    .set_stage_variable_overrides(string_map(c.get("StageVariableOverrides")))
                    .set_use_stage_cache(flag(c.get("UseStageCache")))
                    .build()
            });
        let apigw = client(ctx).await?;
        let created = apigw
            .create_deployment()
            .rest_api_id(api)
            .set_description(text(props.get("Description")))
            .set_stage_name(stage_name.clone())
            .set_stage_description(text(stage.get("Description")))
            .set_cache_cluster_enabled(flag(stage.get("CacheClusterEnabled")))
            .set_cache_cluster_size(text(stage.get("CacheClusterSize")).map(|s| s.as_str().into()))
            .set_variables(string_map(stage.get("Variables")))
            .set_tracing_enabled(flag(stage.get("TracingEnabled")))
            .set_canary_settings(canary)
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateDeployment in {api}")))?;
        let id = created.id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateDeployment returned no id"))
        })?;
        if let Some(name) = &stage_name {
            // What CreateDeployment took is left out; the rest follows as the stage's update.
            let taken: Map<String, Value> = stage
                .iter()
                .filter(|(k, _)| {
                    matches!(
                        k.as_str(),
                        "Description"
                            | "CacheClusterEnabled"
                            | "CacheClusterSize"
                            | "Variables"
                            | "TracingEnabled"
                    )
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let ops = stage_ops(&taken, &stage);
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
                &Map::new(),
                &stage,
            )
            .await?;
        }
        Ok(CreateResult {
            physical_id: ChildId::join(api, id),
            attributes: attributes(&[("DeploymentId", id)]),
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
        let ChildId { parent: api, id } =
            ChildId::parse(&request.physical_id, after, "RestApiId", &what)?;
        let apigw = client(ctx).await?;
        if changed(before, after, "Description") {
            apigw
                .update_deployment()
                .rest_api_id(api)
                .deployment_id(id)
                .patch_operations(replace("/description", text(after.get("Description"))))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateDeployment {id} in {api}")))?;
        }
        if let Some(name) = text(after.get("StageName")) {
            if changed(before, after, "StageDescription") {
                let (old, new) = (stage_properties(before), stage_properties(after));
                let ops = stage_ops(&old, &new);
                if !ops.is_empty() {
                    apigw
                        .update_stage()
                        .rest_api_id(api)
                        .stage_name(&name)
                        .set_patch_operations(Some(ops))
                        .send()
                        .await
                        .map_err(failed!(format!("{what}: UpdateStage {name} in {api}")))?;
                }
                retag(
                    &apigw,
                    &what,
                    &stage_arn(ctx.region(), api, &name),
                    &old,
                    &new,
                )
                .await?;
            }
        }
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes: attributes(&[("DeploymentId", id)]),
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
        let ChildId { parent: api, id } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "RestApiId",
            &what,
        )?;
        let apigw = client(ctx).await?;
        // The stage this deployment made goes with it while it still points here (API Gateway
        // refuses to delete a deployment a stage points to).
        if let Some(name) = text(request.properties.get("StageName")) {
            let stage = found(
                apigw
                    .get_stage()
                    .rest_api_id(api)
                    .stage_name(&name)
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: GetStage {name} in {api}"))),
            )?;
            if stage.is_some_and(|s| s.deployment_id() == Some(id)) {
                found(
                    apigw
                        .delete_stage()
                        .rest_api_id(api)
                        .stage_name(&name)
                        .send()
                        .await
                        .map_err(failed!(format!("{what}: DeleteStage {name} in {api}"))),
                )?;
            }
        }
        deleted_unless_failed(
            apigw
                .delete_deployment()
                .rest_api_id(api)
                .deployment_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteDeployment {id} in {api}"))),
        )
    }
}

#[async_trait]
impl Readable for Deployment {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId { parent: api, id } =
            ChildId::parse(&request.physical_id, &request.properties, "RestApiId", what)?;
        let live = found(
            client(ctx)
                .await?
                .get_deployment()
                .rest_api_id(api)
                .deployment_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetDeployment {id} in {api}"))),
        )?;
        Ok(live.map(|d| {
            let mut props = Map::new();
            props.insert("RestApiId".into(), json!(api));
            cdkd_aws_common::put(
                &mut props,
                "Description",
                d.description().filter(|d| !d.is_empty()).map(Value::from),
            );
            props
        }))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let empty = Map::new();
        let ChildId { parent: _, id } = ChildId::parse(physical_id, &empty, "RestApiId", what)?;
        Ok(attributes(&[("DeploymentId", id)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_description_becomes_stage_properties() {
        let props = json!({"StageName": "prod", "StageDescription": {
            "Description": "live", "MetricsEnabled": true, "ThrottlingRateLimit": 10,
            "Variables": {"a": "b"},
        }});
        let stage = stage_properties(props.as_object().unwrap());
        assert_eq!(
            Value::Object(stage),
            json!({
                "Description": "live",
                "Variables": {"a": "b"},
                "MethodSettings": [{"MetricsEnabled": true, "ThrottlingRateLimit": 10, "ResourcePath": "/*", "HttpMethod": "*"}],
            })
        );
        assert!(stage_properties(&Map::new()).is_empty());
        assert!(!Deployment
            .schema()
            .operations
            .iter()
            .any(|o| o == "find_created"));
    }
}
