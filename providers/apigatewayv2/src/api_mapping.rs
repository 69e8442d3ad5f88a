//! `AWS::ApiGatewayV2::ApiMapping`: physical id `DomainName|ApiMappingId`, `Ref` the mapping
//! id. A mapping key is unique on its domain name, so the run after a crash finds the mapping by
//! its key there.

use cdkd_aws_common::{deleted_unless_failed, put, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changed, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGatewayV2::ApiMapping";

/// The `AWS::ApiGatewayV2::ApiMapping` provider.
#[derive(Default)]
pub struct ApiMapping;

fn attributes(id: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("ApiMappingId".into(), json!(id));
    attributes
}

#[async_trait]
impl ResourceProvider for ApiMapping {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["DomainName", "ApiId", "Stage", "ApiMappingKey"])
            .create_only(&["DomainName"])
            .read_and_import()
            .composite_id(&["DomainName", "ApiMappingId"], &[&["DomainName"], &[]])
            .ref_value(RefValue::Segment(1))
            .finds_created_in(&["DomainName", "ApiMappingKey"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let p = &request.properties;
        let domain = require_str(p, "DomainName", &what)?;
        let created = client(ctx)
            .await?
            .create_api_mapping()
            .domain_name(domain)
            .api_id(require_str(p, "ApiId", &what)?)
            .stage(require_str(p, "Stage", &what)?)
            .set_api_mapping_key(text(p.get("ApiMappingKey")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateApiMapping on {domain}")))?;
        let id = created.api_mapping_id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateApiMapping returned no ApiMappingId"))
        })?;
        Ok(CreateResult {
            physical_id: ChildId::join(domain, id),
            attributes: attributes(id),
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
        let ChildId { parent: domain, id } =
            ChildId::parse(&request.physical_id, after, "DomainName", &what)?;
        if ["ApiId", "Stage", "ApiMappingKey"]
            .iter()
            .any(|k| changed(before, after, k))
        {
            client(ctx)
                .await?
                .update_api_mapping()
                .domain_name(domain)
                .api_mapping_id(id)
                .api_id(require_str(after, "ApiId", &what)?)
                .set_stage(text(after.get("Stage")))
                .api_mapping_key(text(after.get("ApiMappingKey")).unwrap_or_default())
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: UpdateApiMapping {id} on {domain}"
                )))?;
        }
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes: attributes(id),
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
        let ChildId { parent: domain, id } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "DomainName",
            &what,
        )?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_api_mapping()
                .domain_name(domain)
                .api_mapping_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteApiMapping {id} on {domain}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for ApiMapping {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId { parent: domain, id } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "DomainName",
            what,
        )?;
        let Some(live) = found(
            client(ctx)
                .await?
                .get_api_mapping()
                .domain_name(domain)
                .api_mapping_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetApiMapping {id} on {domain}"))),
        )?
        else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert("DomainName".into(), json!(domain));
        put(&mut props, "ApiId", live.api_id().map(Value::from));
        put(&mut props, "Stage", live.stage().map(Value::from));
        put(
            &mut props,
            "ApiMappingKey",
            live.api_mapping_key()
                .filter(|k| !k.is_empty())
                .map(Value::from),
        );
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let empty = Map::new();
        let ChildId { id, .. } = ChildId::parse(physical_id, &empty, "DomainName", what)?;
        Ok(attributes(id))
    }

    /// The mapping of the template's key (none: the empty key) on its domain name.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(domain) = text(request.properties.get("DomainName")) else {
            return Ok(None);
        };
        let key = text(request.properties.get("ApiMappingKey")).unwrap_or_default();
        let Some(page) = found(
            client(ctx)
                .await?
                .get_api_mappings()
                .domain_name(&domain)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetApiMappings on {domain}"))),
        )?
        else {
            return Ok(None);
        };
        let ids: Vec<&str> = page
            .items()
            .iter()
            .filter(|m| m.api_mapping_key().unwrap_or_default() == key)
            .filter_map(|m| m.api_mapping_id())
            .collect();
        ChildId::only(what, &domain, &format!("mappings of key {key:?}"), &ids)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_and_the_schema_says_where_to_look() {
        let props = json!({"DomainName": "api.example.com"})
            .as_object()
            .cloned()
            .unwrap();
        let bare = ChildId::parse("m1", &props, "DomainName", "w").unwrap();
        assert_eq!(bare.parent, "api.example.com");
        let schema = ApiMapping.schema();
        assert_eq!(schema.find_scope, ["DomainName", "ApiMappingKey"]);
        assert_eq!(schema.composite_id.unwrap().ref_value, RefValue::Segment(1));
    }
}
