//! `AWS::ApiGateway::Resource`: physical id `RestApiId|ResourceId`, `Ref` and attribute
//! `ResourceId` the resource's id. Every property is create-only. A path part is unique under
//! its parent, so the run after a crash finds the resource by its parent and path part.

use cdkd_aws_common::{deleted_unless_failed, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{attributes, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::Resource";

/// The `AWS::ApiGateway::Resource` provider.
#[derive(Default)]
pub struct Resource;

#[async_trait]
impl ResourceProvider for Resource {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["RestApiId", "ParentId", "PathPart"])
            .all_create_only()
            .read_and_import()
            .composite_id(&["RestApiId", "ResourceId"], &[&["RestApiId"], &[]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["RestApiId", "ParentId", "PathPart"])
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
        let parent = require_str(props, "ParentId", &what)?;
        let part = require_str(props, "PathPart", &what)?;
        let created = client(ctx)
            .await?
            .create_resource()
            .rest_api_id(api)
            .parent_id(parent)
            .path_part(part)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateResource {part} under {parent} in {api}"
            )))?;
        let id = created.id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateResource returned no id"))
        })?;
        Ok(CreateResult {
            physical_id: ChildId::join(api, id),
            attributes: attributes(&[("ResourceId", id)]),
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
        let ChildId { parent: _, id } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "RestApiId",
            &what,
        )?;
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes: attributes(&[("ResourceId", id)]),
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
        // A parent's delete takes its children with it: theirs then find nothing, as they may.
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_resource()
                .rest_api_id(api)
                .resource_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteResource {id} in {api}"))),
        )
    }
}

#[async_trait]
impl Readable for Resource {
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
                .get_resource()
                .rest_api_id(api)
                .resource_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetResource {id} in {api}"))),
        )?;
        Ok(live.map(|r| {
            let mut props = Map::new();
            props.insert("RestApiId".into(), json!(api));
            cdkd_aws_common::put(&mut props, "ParentId", r.parent_id().map(Value::from));
            cdkd_aws_common::put(&mut props, "PathPart", r.path_part().map(Value::from));
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
        Ok(attributes(&[("ResourceId", id)]))
    }

    /// The resource of the template's path part under its parent.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let props = &request.properties;
        let (Some(api), Some(parent), Some(part)) = (
            text(props.get("RestApiId")),
            text(props.get("ParentId")),
            text(props.get("PathPart")),
        ) else {
            return Ok(None);
        };
        let apigw = client(ctx).await?;
        let mut ids = Vec::new();
        let mut position: Option<String> = None;
        loop {
            let Some(page) = found(
                apigw
                    .get_resources()
                    .rest_api_id(&api)
                    .limit(500)
                    .set_position(position.take())
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: GetResources in {api}"))),
            )?
            else {
                return Ok(None);
            };
            ids.extend(
                page.items()
                    .iter()
                    .filter(|r| {
                        r.parent_id() == Some(parent.as_str())
                            && r.path_part() == Some(part.as_str())
                    })
                    .filter_map(|r| r.id().map(ToString::to_string)),
            );
            match page.position() {
                Some(p) if !p.is_empty() => position = Some(p.to_string()),
                _ => break,
            }
        }
        ChildId::only(
            what,
            &api,
            &format!("resources of path part {part} under {parent}"),
            &ids,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_is_found_by_its_path_part_under_its_parent() {
        let schema = Resource.schema();
        assert_eq!(schema.find_scope, ["RestApiId", "ParentId", "PathPart"]);
        assert_eq!(schema.create_only_properties.len(), 3);
        assert_eq!(schema.composite_id.unwrap().ref_value, RefValue::Segment(1));
    }
}
