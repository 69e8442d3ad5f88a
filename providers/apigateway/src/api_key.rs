//! `AWS::ApiGateway::ApiKey`: physical id (and `Ref`, attribute `APIKeyId`) is the key's id.
//! The key's value is never read back or recorded. The create tags the key
//! `cdkd:create-token` so the run after a crash finds it by that tag.

use aws_sdk_apigateway::types::StageKey;
use cdkd_aws_common::{
    all_pages, carries_token, deleted_unless_failed, find_created_answer, find_created_request,
    flag, one_tagged, put, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::{replace, set_ops_in_value};
use crate::{arn, attributes, changed, client, create_tags, failed, found, retag, tags_shape};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::ApiKey";

/// The `AWS::ApiGateway::ApiKey` provider.
#[derive(Default)]
pub struct ApiKey;

/// The template's `StageKeys` as API Gateway writes them (`restApiId/stageName`).
fn stage_keys(props: &Map<String, Value>) -> Vec<String> {
    props
        .get("StageKeys")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|k| {
            Some(format!(
                "{}/{}",
                text(k.get("RestApiId"))?,
                text(k.get("StageName"))?
            ))
        })
        .collect()
}

/// The live key in template shape (never its value).
fn template_shape(
    name: Option<&str>,
    description: Option<&str>,
    customer: Option<&str>,
    enabled: bool,
    stages: &[String],
    tags: Option<&std::collections::HashMap<String, String>>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", name.map(Value::from));
    put(
        &mut props,
        "Description",
        description.filter(|d| !d.is_empty()).map(Value::from),
    );
    put(
        &mut props,
        "CustomerId",
        customer.filter(|d| !d.is_empty()).map(Value::from),
    );
    props.insert("Enabled".into(), json!(enabled));
    let mut keys: Vec<Value> = stages
        .iter()
        .filter_map(|k| k.split_once('/'))
        .map(|(api, stage)| json!({"RestApiId": api, "StageName": stage}))
        .collect();
    keys.sort_by_key(Value::to_string);
    if !keys.is_empty() {
        props.insert("StageKeys".into(), Value::Array(keys));
    }
    put(&mut props, "Tags", tags_shape(tags));
    props
}

async fn read_key(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let live = found(
        apigw
            .get_api_key()
            .api_key(id)
            .include_value(false)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetApiKey {id}"))),
    )?;
    Ok(live.map(|k| {
        template_shape(
            k.name(),
            k.description(),
            k.customer_id(),
            k.enabled(),
            k.stage_keys(),
            k.tags(),
        )
    }))
}

/// The ids of the API keys tagged with the create's `token`.
async fn tagged(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    token: &str,
) -> Result<Vec<String>, ProviderError> {
    all_pages(|next| async move {
        let page = apigw
            .get_api_keys()
            .limit(500)
            .include_values(false)
            .set_position(next)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetApiKeys")))?;
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
impl ResourceProvider for ApiKey {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "Description",
                "CustomerId",
                "Enabled",
                "GenerateDistinctId",
                "StageKeys",
                "Value",
                "Tags",
            ])
            .create_only(&["Name", "GenerateDistinctId", "Value"])
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
        let name = text(props.get("Name")).unwrap_or_else(|| {
            cdkd_aws_common::generated_name(
                &request.stack_name,
                &request.logical_id,
                &request.client_token,
                128,
                false,
                "",
            )
        });
        let stages: Vec<StageKey> = props
            .get("StageKeys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|k| {
                StageKey::builder()
                    .set_rest_api_id(text(k.get("RestApiId")))
                    .set_stage_name(text(k.get("StageName")))
                    .build()
            })
            .collect();
        let created = client(ctx)
            .await?
            .create_api_key()
            .name(&name)
            .set_description(text(props.get("Description")))
            .set_customer_id(text(props.get("CustomerId")))
            .set_enabled(flag(props.get("Enabled")))
            .set_generate_distinct_id(flag(props.get("GenerateDistinctId")))
            .set_value(text(props.get("Value")))
            .set_stage_keys((!stages.is_empty()).then_some(stages))
            .set_tags(create_tags(props, Some(&request.client_token)))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateApiKey {name}")))?;
        let id = created
            .id()
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateApiKey returned no id")))?;
        Ok(CreateResult {
            physical_id: id.to_string(),
            attributes: attributes(&[("APIKeyId", id)]),
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
        let mut ops = Vec::new();
        if changed(before, after, "Description") {
            ops.push(replace("/description", text(after.get("Description"))));
        }
        if changed(before, after, "CustomerId") {
            ops.push(replace("/customerId", text(after.get("CustomerId"))));
        }
        if changed(before, after, "Enabled") {
            ops.push(replace(
                "/enabled",
                Some(flag(after.get("Enabled")).unwrap_or(false).to_string()),
            ));
        }
        if changed(before, after, "StageKeys") {
            ops.extend(set_ops_in_value(
                "/stages",
                &stage_keys(before),
                &stage_keys(after),
            ));
        }
        let apigw = client(ctx).await?;
        if !ops.is_empty() {
            apigw
                .update_api_key()
                .api_key(id)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateApiKey {id}")))?;
        }
        retag(
            &apigw,
            &what,
            &arn(ctx.region(), &format!("/apikeys/{id}")),
            before,
            after,
        )
        .await?;
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes: attributes(&[("APIKeyId", id)]),
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
                .delete_api_key()
                .api_key(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteApiKey {id}"))),
        )
    }

    /// [`operation::FIND_CREATED`]: the key carrying the create's token tag.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        let (request, what) = find_created_request(TYPE, name, request, false)?;
        let apigw = client(ctx).await?;
        let ids = tagged(&apigw, &what, &request.token).await?;
        let found = match one_tagged(&what, "API keys", &request.token, ids)? {
            Some(id) => read_key(&apigw, &what, &id)
                .await?
                .map(|properties| (id, properties)),
            None => None,
        };
        find_created_answer(found)
    }
}

#[async_trait]
impl Readable for ApiKey {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        read_key(&client(ctx).await?, what, &request.physical_id).await
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(attributes(&[("APIKeyId", physical_id)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_keys_travel_as_api_slash_stage_and_the_value_never_reads_back() {
        let props = json!({"StageKeys": [{"RestApiId": "a", "StageName": "prod"}]});
        assert_eq!(stage_keys(props.as_object().unwrap()), ["a/prod"]);
        let shape = template_shape(Some("k"), None, None, true, &["a/prod".into()], None);
        assert_eq!(
            Value::Object(shape),
            json!({"Name": "k", "Enabled": true, "StageKeys": [{"RestApiId": "a", "StageName": "prod"}]})
        );
    }
}
