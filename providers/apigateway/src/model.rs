//! `AWS::ApiGateway::Model`: physical id `RestApiId|Name`, `Ref` the model's name. A model's
//! name is unique in its API: the template's, or one made from the logical id and the create
//! token (alphanumeric, as API Gateway requires), so the run after a crash looks it up there.

use cdkd_aws_common::{deleted_unless_failed, put, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::replace;
use crate::{alphanumeric_name, changed, client, document, document_shape, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::Model";

/// The longest generated model name.
const MAX_NAME: usize = 64;

/// The `AWS::ApiGateway::Model` provider.
#[derive(Default)]
pub struct Model;

/// The model's name: the template's, else one made from the logical id and token.
fn model_name(props: &Map<String, Value>, stack: &str, logical_id: &str, token: &str) -> String {
    text(props.get("Name")).unwrap_or_else(|| alphanumeric_name(stack, logical_id, token, MAX_NAME))
}

#[async_trait]
impl ResourceProvider for Model {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["RestApiId", "Name", "ContentType", "Description", "Schema"])
            .create_only(&["RestApiId", "Name", "ContentType"])
            .read_and_import()
            .composite_id(&["RestApiId", "Name"], &[&["RestApiId"], &["Name"]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["RestApiId", "Name"])
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
        let name = model_name(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
        );
        client(ctx)
            .await?
            .create_model()
            .rest_api_id(api)
            .name(&name)
            .content_type(
                text(props.get("ContentType")).unwrap_or_else(|| "application/json".into()),
            )
            .set_description(text(props.get("Description")))
            .set_schema(document(props.get("Schema")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateModel {name} in {api}")))?;
        Ok(CreateResult {
            physical_id: ChildId::join(api, &name),
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
        let mut ops = Vec::new();
        if changed(before, after, "Schema") {
            ops.push(replace("/schema", document(after.get("Schema"))));
        }
        if changed(before, after, "Description") {
            ops.push(replace("/description", text(after.get("Description"))));
        }
        if !ops.is_empty() {
            client(ctx)
                .await?
                .update_model()
                .rest_api_id(api)
                .model_name(name)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateModel {name} in {api}")))?;
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
        } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "RestApiId",
            &what,
        )?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_model()
                .rest_api_id(api)
                .model_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteModel {name} in {api}"))),
        )
    }
}

#[async_trait]
impl Readable for Model {
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
        let live = found(
            client(ctx)
                .await?
                .get_model()
                .rest_api_id(api)
                .model_name(name)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetModel {name} in {api}"))),
        )?;
        Ok(live.map(|m| {
            let mut props = Map::new();
            props.insert("RestApiId".into(), json!(api));
            props.insert("Name".into(), json!(name));
            put(&mut props, "ContentType", m.content_type().map(Value::from));
            put(
                &mut props,
                "Description",
                m.description().filter(|d| !d.is_empty()).map(Value::from),
            );
            put(&mut props, "Schema", m.schema().map(document_shape));
            props
        }))
    }

    /// The template's name, or the one the create made from its token.
    async fn created_id(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let props = &request.properties;
        let Some(api) = text(props.get("RestApiId")) else {
            return Ok(None);
        };
        if props.get("Name").is_none() && request.token.is_empty() {
            return Ok(None);
        }
        let name = model_name(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.token,
        );
        Ok(Some(ChildId::join(&api, &name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_without_a_name_gets_one_from_its_token() {
        let none = Map::new();
        let made = model_name(&none, "S", "ApiItemModel", "t1");
        assert_eq!(made, model_name(&none, "S", "ApiItemModel", "t1"));
        assert!(made.chars().all(|c| c.is_ascii_alphanumeric()));
        assert!(made.len() <= MAX_NAME);
        let given = json!({"Name": "Item"});
        assert_eq!(
            model_name(given.as_object().unwrap(), "S", "L", "t"),
            "Item"
        );
    }
}
