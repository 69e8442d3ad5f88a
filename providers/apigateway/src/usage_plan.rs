//! `AWS::ApiGateway::UsagePlan`: physical id (and `Ref`, attribute `Id`) is the plan's id. The
//! create tags the plan `cdkd:create-token` so the run after a crash finds it by that tag.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_apigateway::types::{ApiStage, Op, PatchOperation, QuotaSettings, ThrottleSettings};
use cdkd_aws_common::{
    all_pages, carries_token, deleted_unless_failed, find_created_answer, find_created_request,
    int, one_tagged, put, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::{escape, op, replace, set_ops_in_value};
use crate::{arn, attributes, changed, client, create_tags, failed, found, retag, tags_shape};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::UsagePlan";

/// The `AWS::ApiGateway::UsagePlan` provider.
#[derive(Default)]
pub struct UsagePlan;

fn number(value: Option<&Value>) -> Option<f64> {
    let v = value?;
    v.as_f64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

fn throttle(value: &Value) -> ThrottleSettings {
    ThrottleSettings::builder()
        .set_burst_limit(int(value.get("BurstLimit")))
        .set_rate_limit(number(value.get("RateLimit")))
        .build()
}

fn throttle_shape(t: &ThrottleSettings) -> Value {
    json!({"BurstLimit": t.burst_limit(), "RateLimit": t.rate_limit()})
}

/// The template's `ApiStages` as the SDK's.
fn api_stages(props: &Map<String, Value>) -> Option<Vec<ApiStage>> {
    let list = props.get("ApiStages")?.as_array()?;
    Some(
        list.iter()
            .map(|s| {
                let methods: HashMap<String, ThrottleSettings> = s
                    .get("Throttle")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), throttle(v)))
                    .collect();
                ApiStage::builder()
                    .set_api_id(text(s.get("ApiId")))
                    .set_stage(text(s.get("Stage")))
                    .set_throttle((!methods.is_empty()).then_some(methods))
                    .build()
            })
            .collect(),
    )
}

/// The template's stages as `apiId:stage` with their method throttles.
fn stage_keys(props: &Map<String, Value>) -> BTreeMap<String, Map<String, Value>> {
    props
        .get("ApiStages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let key = format!("{}:{}", text(s.get("ApiId"))?, text(s.get("Stage"))?);
            let methods = s.get("Throttle").and_then(Value::as_object).cloned();
            Some((key, methods.unwrap_or_default()))
        })
        .collect()
}

/// A method throttle's patch path below its stage (`/items/GET` -> `~1items/GET`).
fn method_path(key: &str) -> String {
    let (path, method) = key.rsplit_once('/').unwrap_or((key, "*"));
    format!(
        "{}/{method}",
        escape(if path.is_empty() { "/" } else { path })
    )
}

/// The patch operations that turn the plan of `before` into the one of `after`.
fn update_ops(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    if changed(before, after, "UsagePlanName") {
        ops.push(replace("/name", text(after.get("UsagePlanName"))));
    }
    if changed(before, after, "Description") {
        ops.push(replace("/description", text(after.get("Description"))));
    }
    for (key, path, fields) in [
        (
            "Throttle",
            "/throttle",
            &[("BurstLimit", "burstLimit"), ("RateLimit", "rateLimit")][..],
        ),
        (
            "Quota",
            "/quota",
            &[
                ("Limit", "limit"),
                ("Offset", "offset"),
                ("Period", "period"),
            ][..],
        ),
    ] {
        if !changed(before, after, key) {
            continue;
        }
        match after.get(key).filter(|v| v.is_object()) {
            Some(value) => {
                for (field, name) in fields {
                    if let Some(v) = text(value.get(*field)) {
                        ops.push(replace(&format!("{path}/{name}"), Some(v)));
                    }
                }
            }
            None => ops.push(op(Op::Remove, path, None)),
        }
    }
    if changed(before, after, "ApiStages") {
        let (old, new) = (stage_keys(before), stage_keys(after));
        let old_keys: Vec<String> = old.keys().cloned().collect();
        let new_keys: Vec<String> = new.keys().cloned().collect();
        ops.extend(set_ops_in_value("/apiStages", &old_keys, &new_keys));
        for (stage, methods) in &new {
            let was = old.get(stage).cloned().unwrap_or_default();
            for (method, limits) in methods {
                if was.get(method) == Some(limits) {
                    continue;
                }
                for (field, name) in [("BurstLimit", "burstLimit"), ("RateLimit", "rateLimit")] {
                    if let Some(v) = text(limits.get(field)) {
                        ops.push(replace(
                            &format!("/apiStages/{stage}/throttle/{}/{name}", method_path(method)),
                            Some(v),
                        ));
                    }
                }
            }
            if old.contains_key(stage) {
                for method in was.keys().filter(|m| !methods.contains_key(*m)) {
                    ops.push(op(
                        Op::Remove,
                        &format!("/apiStages/{stage}/throttle/{}", method_path(method)),
                        None,
                    ));
                }
            }
        }
    }
    ops
}

/// The live plan in template shape.
fn template_shape(plan: &aws_sdk_apigateway::types::UsagePlan) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "UsagePlanName", plan.name().map(Value::from));
    put(
        &mut props,
        "Description",
        plan.description()
            .filter(|d| !d.is_empty())
            .map(Value::from),
    );
    put(&mut props, "Throttle", plan.throttle().map(throttle_shape));
    put(
        &mut props,
        "Quota",
        plan.quota().map(|q| {
            let mut shape = Map::new();
            shape.insert("Limit".into(), json!(q.limit()));
            if q.offset() != 0 {
                shape.insert("Offset".into(), json!(q.offset()));
            }
            put(&mut shape, "Period", q.period().map(|p| json!(p.as_str())));
            Value::Object(shape)
        }),
    );
    let mut stages: Vec<Value> = plan
        .api_stages()
        .iter()
        .map(|s| {
            let methods: BTreeMap<&String, Value> = s
                .throttle()
                .into_iter()
                .flatten()
                .map(|(k, t)| (k, throttle_shape(t)))
                .collect();
            let mut shape = Map::new();
            put(&mut shape, "ApiId", s.api_id().map(Value::from));
            put(&mut shape, "Stage", s.stage().map(Value::from));
            if !methods.is_empty() {
                shape.insert("Throttle".into(), json!(methods));
            }
            Value::Object(shape)
        })
        .collect();
    stages.sort_by_key(Value::to_string);
    if !stages.is_empty() {
        props.insert("ApiStages".into(), Value::Array(stages));
    }
    put(&mut props, "Tags", tags_shape(plan.tags()));
    props
}

async fn get_plan(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_apigateway::types::UsagePlan>, ProviderError> {
    let answer = found(
        apigw
            .get_usage_plan()
            .usage_plan_id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetUsagePlan {id}"))),
    )?;
    Ok(answer.map(|p| {
        aws_sdk_apigateway::types::UsagePlan::builder()
            .set_id(p.id().map(ToString::to_string))
            .set_name(p.name().map(ToString::to_string))
            .set_description(p.description().map(ToString::to_string))
            .set_api_stages(Some(p.api_stages().to_vec()))
            .set_throttle(p.throttle().cloned())
            .set_quota(p.quota().cloned())
            .set_tags(p.tags().cloned())
            .build()
    }))
}

/// The ids of the usage plans tagged with the create's `token`.
async fn tagged(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    token: &str,
) -> Result<Vec<String>, ProviderError> {
    all_pages(|next| async move {
        let page = apigw
            .get_usage_plans()
            .limit(500)
            .set_position(next)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetUsagePlans")))?;
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
impl ResourceProvider for UsagePlan {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "UsagePlanName",
                "Description",
                "ApiStages",
                "Throttle",
                "Quota",
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
        // API Gateway requires a name; CloudFormation makes one from the logical id.
        let name = text(props.get("UsagePlanName")).unwrap_or_else(|| {
            cdkd_aws_common::generated_name(
                &request.stack_name,
                &request.logical_id,
                &request.client_token,
                128,
                false,
                "",
            )
        });
        let created = client(ctx)
            .await?
            .create_usage_plan()
            .name(&name)
            .set_description(text(props.get("Description")))
            .set_api_stages(api_stages(props))
            .set_throttle(
                props
                    .get("Throttle")
                    .filter(|v| v.is_object())
                    .map(throttle),
            )
            .set_quota(props.get("Quota").filter(|v| v.is_object()).map(|q| {
                QuotaSettings::builder()
                    .set_limit(int(q.get("Limit")))
                    .set_offset(int(q.get("Offset")))
                    .set_period(text(q.get("Period")).map(|p| p.as_str().into()))
                    .build()
            }))
            .set_tags(create_tags(props, Some(&request.client_token)))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateUsagePlan {name}")))?;
        let id = created.id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateUsagePlan returned no id"))
        })?;
        Ok(CreateResult {
            physical_id: id.to_string(),
            attributes: attributes(&[("Id", id)]),
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
        let ops = update_ops(before, after);
        if !ops.is_empty() {
            apigw
                .update_usage_plan()
                .usage_plan_id(id)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateUsagePlan {id}")))?;
        }
        retag(
            &apigw,
            &what,
            &arn(ctx.region(), &format!("/usageplans/{id}")),
            before,
            after,
        )
        .await?;
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes: attributes(&[("Id", id)]),
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
                .delete_usage_plan()
                .usage_plan_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteUsagePlan {id}"))),
        )
    }

    /// [`operation::FIND_CREATED`]: the plan carrying the create's token tag.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        let (request, what) = find_created_request(TYPE, name, request, false)?;
        let apigw = client(ctx).await?;
        let ids = tagged(&apigw, &what, &request.token).await?;
        let found = match one_tagged(&what, "usage plans", &request.token, ids)? {
            Some(id) => get_plan(&apigw, &what, &id)
                .await?
                .map(|plan| (id, template_shape(&plan))),
            None => None,
        };
        find_created_answer(found)
    }
}

#[async_trait]
impl Readable for UsagePlan {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        Ok(get_plan(&client(ctx).await?, what, &request.physical_id)
            .await?
            .map(|p| template_shape(&p)))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(attributes(&[("Id", physical_id)]))
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
    fn plan_changes_become_patch_operations() {
        let before = props(json!({
            "UsagePlanName": "p", "Throttle": {"BurstLimit": 2, "RateLimit": 10},
            "Quota": {"Limit": 1000, "Period": "DAY"},
            "ApiStages": [{"ApiId": "a", "Stage": "prod", "Throttle": {}}],
        }));
        let after = props(json!({
            "UsagePlanName": "p", "Throttle": {"BurstLimit": 4, "RateLimit": 10},
            "ApiStages": [{"ApiId": "a", "Stage": "live", "Throttle": {"/items/GET": {"RateLimit": 5}}}],
        }));
        let ops: Vec<String> = update_ops(&before, &after)
            .iter()
            .map(|o| {
                format!(
                    "{} {} {}",
                    o.op().unwrap().as_str(),
                    o.path().unwrap(),
                    o.value().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            ops,
            [
                "replace /throttle/burstLimit 4",
                "replace /throttle/rateLimit 10",
                "remove /quota -",
                "remove /apiStages a:prod",
                "add /apiStages a:live",
                "replace /apiStages/a:live/throttle/~1items/GET/rateLimit 5",
            ]
        );
    }

    #[test]
    fn a_plan_reads_back_in_template_shape() {
        let plan = aws_sdk_apigateway::types::UsagePlan::builder()
            .name("p")
            .throttle(
                ThrottleSettings::builder()
                    .burst_limit(2)
                    .rate_limit(10.0)
                    .build(),
            )
            .api_stages(ApiStage::builder().api_id("a").stage("prod").build())
            .tags(CREATE_TOKEN_TAG, "t")
            .build();
        assert_eq!(
            Value::Object(template_shape(&plan)),
            json!({
                "UsagePlanName": "p",
                "Throttle": {"BurstLimit": 2, "RateLimit": 10.0},
                "ApiStages": [{"ApiId": "a", "Stage": "prod"}],
            })
        );
    }
}
