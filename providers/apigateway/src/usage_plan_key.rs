//! `AWS::ApiGateway::UsagePlanKey`: an API key in a usage plan. Physical id
//! `UsagePlanId|KeyId`; `Ref` and attribute `Id` the key's id. Every property is create-only.
//! The template names both, so the run after a crash looks the key up in the plan.

use cdkd_aws_common::{deleted_unless_failed, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{attributes, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::UsagePlanKey";

/// The `AWS::ApiGateway::UsagePlanKey` provider.
#[derive(Default)]
pub struct UsagePlanKey;

#[async_trait]
impl ResourceProvider for UsagePlanKey {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["UsagePlanId", "KeyId", "KeyType"])
            .all_create_only()
            .read_and_import()
            .composite_id(&["UsagePlanId", "KeyId"], &[&["UsagePlanId"], &["KeyId"]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["UsagePlanId", "KeyId"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let plan = require_str(props, "UsagePlanId", &what)?;
        let key = require_str(props, "KeyId", &what)?;
        client(ctx)
            .await?
            .create_usage_plan_key()
            .usage_plan_id(plan)
            .key_id(key)
            .key_type(text(props.get("KeyType")).unwrap_or_else(|| "API_KEY".into()))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateUsagePlanKey {key} in {plan}"
            )))?;
        Ok(CreateResult {
            physical_id: ChildId::join(plan, key),
            attributes: attributes(&[("Id", key)]),
            ..Default::default()
        })
    }

    /// Nothing to update: every property is create-only.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let ChildId { parent: _, id: key } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "UsagePlanId",
            &what,
        )?;
        Ok(UpdateResult {
            attributes: attributes(&[("Id", key)]),
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
            parent: plan,
            id: key,
        } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "UsagePlanId",
            &what,
        )?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_usage_plan_key()
                .usage_plan_id(plan)
                .key_id(key)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteUsagePlanKey {key} in {plan}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for UsagePlanKey {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId {
            parent: plan,
            id: key,
        } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "UsagePlanId",
            what,
        )?;
        let live = found(
            client(ctx)
                .await?
                .get_usage_plan_key()
                .usage_plan_id(plan)
                .key_id(key)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetUsagePlanKey {key} in {plan}"))),
        )?;
        Ok(live.map(|k| {
            let mut props = Map::new();
            props.insert("UsagePlanId".into(), json!(plan));
            props.insert("KeyId".into(), json!(key));
            cdkd_aws_common::put(&mut props, "KeyType", k.r#type().map(Value::from));
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
        let ChildId { parent: _, id: key } =
            ChildId::parse(physical_id, &empty, "UsagePlanId", what)?;
        Ok(attributes(&[("Id", key)]))
    }

    async fn created_id(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let plan = text(request.properties.get("UsagePlanId"));
        let key = text(request.properties.get("KeyId"));
        Ok(plan.zip(key).map(|(p, k)| ChildId::join(&p, &k)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_found_in_its_plan_and_refs_to_its_id() {
        let schema = UsagePlanKey.schema();
        assert_eq!(schema.find_scope, ["UsagePlanId", "KeyId"]);
        assert_eq!(schema.create_only_properties.len(), 3);
        assert_eq!(schema.composite_id.unwrap().ref_value, RefValue::Segment(1));
    }
}
