//! `AWS::ApiGatewayV2::Stage`: physical id `ApiId|StageName`, `Ref` the stage name. A stage
//! name is unique in its API, so the run after a crash finds the stage by its name there.

use aws_sdk_apigatewayv2::types::{AccessLogSettings, LoggingLevel, RouteSettings};
use cdkd_aws_common::{
    deleted_unless_failed, flag, int, put, require_str, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use std::collections::{BTreeMap, HashMap};

use cdkd_aws_common::tag_changes;

use crate::{api_id, changed, client, failed, found, partition, string_map, ChildId};

/// The template's `Tags` (a map for this type).
fn stage_tags(props: &Map<String, Value>) -> BTreeMap<String, String> {
    string_map(props.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGatewayV2::Stage";

/// The `AWS::ApiGatewayV2::Stage` provider.
#[derive(Default)]
pub struct Stage;

fn access_log(value: &Value) -> AccessLogSettings {
    AccessLogSettings::builder()
        .set_destination_arn(text(value.get("DestinationArn")))
        .set_format(text(value.get("Format")))
        .build()
}

fn route_settings(value: &Value) -> RouteSettings {
    RouteSettings::builder()
        .set_data_trace_enabled(flag(value.get("DataTraceEnabled")))
        .set_detailed_metrics_enabled(flag(value.get("DetailedMetricsEnabled")))
        .set_logging_level(text(value.get("LoggingLevel")).map(|l| LoggingLevel::from(l.as_str())))
        .set_throttling_burst_limit(int(value.get("ThrottlingBurstLimit")))
        .set_throttling_rate_limit(value.get("ThrottlingRateLimit").and_then(|v| {
            v.as_f64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        }))
        .build()
}

fn route_settings_shape(settings: &RouteSettings) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "DataTraceEnabled",
        settings.data_trace_enabled().map(Value::from),
    );
    put(
        &mut shape,
        "DetailedMetricsEnabled",
        settings.detailed_metrics_enabled().map(Value::from),
    );
    put(
        &mut shape,
        "LoggingLevel",
        settings.logging_level().map(|l| json!(l.as_str())),
    );
    put(
        &mut shape,
        "ThrottlingBurstLimit",
        settings.throttling_burst_limit().map(Value::from),
    );
    put(
        &mut shape,
        "ThrottlingRateLimit",
        settings.throttling_rate_limit().map(Value::from),
    );
    Value::Object(shape)
}

#[async_trait]
impl ResourceProvider for Stage {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "ApiId",
                "StageName",
                "AutoDeploy",
                "Description",
                "StageVariables",
                "AccessLogSettings",
                "DefaultRouteSettings",
                "ClientCertificateId",
                "Tags",
            ])
            .create_only(&["ApiId", "StageName"])
            .read_and_import()
            .composite_id(&["ApiId", "StageName"], &[&["ApiId"], &["StageName"]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["ApiId", "StageName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let api = api_id(props, &what)?;
        let name = require_str(props, "StageName", &what)?;
        client(ctx)
            .await?
            .create_stage()
            .api_id(api)
            .stage_name(name)
            .set_auto_deploy(flag(props.get("AutoDeploy")))
            .set_description(text(props.get("Description")))
            .set_stage_variables(string_map(props.get("StageVariables")))
            .set_tags(string_map(props.get("Tags")).filter(|t| !t.is_empty()))
            .set_access_log_settings(
                props
                    .get("AccessLogSettings")
                    .filter(|v| v.is_object())
                    .map(access_log),
            )
            .set_default_route_settings(
                props
                    .get("DefaultRouteSettings")
                    .filter(|v| v.is_object())
                    .map(route_settings),
            )
            .set_client_certificate_id(text(props.get("ClientCertificateId")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateStage {name} in {api}")))?;
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
        } = ChildId::parse(&request.physical_id, after, "ApiId", &what)?;
        let keys = [
            "AutoDeploy",
            "Description",
            "StageVariables",
            "AccessLogSettings",
            "DefaultRouteSettings",
            "ClientCertificateId",
        ];
        let apigw = client(ctx).await?;
        if keys.iter().any(|k| changed(before, after, k)) {
            apigw
                .update_stage()
                .api_id(api)
                .stage_name(name)
                .auto_deploy(flag(after.get("AutoDeploy")).unwrap_or(false))
                .description(text(after.get("Description")).unwrap_or_default())
                .set_stage_variables(Some(
                    string_map(after.get("StageVariables")).unwrap_or_default(),
                ))
                .set_access_log_settings(
                    after
                        .get("AccessLogSettings")
                        .filter(|v| v.is_object())
                        .map(access_log),
                )
                .set_default_route_settings(Some(
                    after
                        .get("DefaultRouteSettings")
                        .map(route_settings)
                        .unwrap_or_else(|| RouteSettings::builder().build()),
                ))
                .set_client_certificate_id(text(after.get("ClientCertificateId")))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateStage {name} in {api}")))?;
        }
        // Dropped access logging is turned off with its own call: UpdateStage keeps what it is
        // not sent.
        let dropped_logs = before
            .get("AccessLogSettings")
            .is_some_and(|v| v.is_object())
            && !after
                .get("AccessLogSettings")
                .is_some_and(|v| v.is_object());
        if dropped_logs {
            found(
                apigw
                    .delete_access_log_settings()
                    .api_id(api)
                    .stage_name(name)
                    .send()
                    .await
                    .map_err(failed!(format!(
                        "{what}: DeleteAccessLogSettings of {name} in {api}"
                    ))),
            )?;
        }
        let (set, removed): (HashMap<String, String>, Vec<String>) =
            tag_changes(&stage_tags(before), &stage_tags(after));
        if !set.is_empty() || !removed.is_empty() {
            let region = ctx.region();
            let arn = format!(
                "arn:{}:apigateway:{region}::/apis/{api}/stages/{name}",
                partition(region)
            );
            if !removed.is_empty() {
                apigw
                    .untag_resource()
                    .resource_arn(&arn)
                    .set_tag_keys(Some(removed))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
            }
            if !set.is_empty() {
                apigw
                    .tag_resource()
                    .resource_arn(&arn)
                    .set_tags(Some(set))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: TagResource {arn}")))?;
            }
        }
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
        } = ChildId::parse(&request.physical_id, &request.properties, "ApiId", &what)?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_stage()
                .api_id(api)
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
        } = ChildId::parse(&request.physical_id, &request.properties, "ApiId", what)?;
        let Some(stage) = found(
            client(ctx)
                .await?
                .get_stage()
                .api_id(api)
                .stage_name(name)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetStage {name} in {api}"))),
        )?
        else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert("ApiId".into(), json!(api));
        props.insert("StageName".into(), json!(name));
        put(
            &mut props,
            "AutoDeploy",
            stage.auto_deploy().map(Value::from),
        );
        put(
            &mut props,
            "Description",
            stage
                .description()
                .filter(|d| !d.is_empty())
                .map(Value::from),
        );
        put(
            &mut props,
            "ClientCertificateId",
            stage.client_certificate_id().map(Value::from),
        );
        let tags: BTreeMap<&str, &str> = stage
            .tags()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !k.starts_with("aws:"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if !tags.is_empty() {
            props.insert("Tags".into(), json!(tags));
        }
        if let Some(vars) = stage.stage_variables().filter(|v| !v.is_empty()) {
            let sorted: std::collections::BTreeMap<_, _> = vars.iter().collect();
            props.insert("StageVariables".into(), json!(sorted));
        }
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
            props.insert("AccessLogSettings".into(), Value::Object(shape));
        }
        put(
            &mut props,
            "DefaultRouteSettings",
            stage.default_route_settings().map(route_settings_shape),
        );
        Ok(Some(props))
    }

    async fn created_id(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let api = text(request.properties.get("ApiId"));
        let name = text(request.properties.get("StageName"));
        Ok(api.zip(name).map(|(api, name)| format!("{api}|{name}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_travel_in_template_shape() {
        let settings = route_settings(&json!({
            "DetailedMetricsEnabled": "true",
            "ThrottlingBurstLimit": 10,
            "ThrottlingRateLimit": "5.5",
        }));
        assert_eq!(
            route_settings_shape(&settings),
            json!({"DetailedMetricsEnabled": true, "ThrottlingBurstLimit": 10, "ThrottlingRateLimit": 5.5})
        );
        let log = access_log(&json!({"DestinationArn": "arn:l", "Format": "$context.requestId"}));
        assert_eq!(log.destination_arn(), Some("arn:l"));
    }

    #[test]
    fn the_stage_is_found_by_its_name_in_its_api() {
        let schema = Stage.schema();
        assert_eq!(schema.find_scope, ["ApiId", "StageName"]);
        assert_eq!(schema.composite_id.unwrap().ref_value, RefValue::Segment(1));
    }
}
