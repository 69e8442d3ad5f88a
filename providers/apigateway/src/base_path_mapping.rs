//! `AWS::ApiGateway::BasePathMapping`: a path of a custom domain name mapped to an API's
//! stage. Physical id (and `Ref`) `DomainName|BasePath`, `(none)` for the empty path as API
//! Gateway writes it; the template names both, so the run after a crash looks the mapping up.

use cdkd_aws_common::{deleted_unless_failed, put, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::replace;
use crate::{changed, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::BasePathMapping";

/// How API Gateway names the empty base path.
const NONE: &str = "(none)";

/// The `AWS::ApiGateway::BasePathMapping` provider.
#[derive(Default)]
pub struct BasePathMapping;

/// The template's base path as API Gateway names it.
fn base_path(props: &Map<String, Value>) -> String {
    text(props.get("BasePath"))
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| NONE.into())
}

#[async_trait]
impl ResourceProvider for BasePathMapping {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["DomainName", "BasePath", "RestApiId", "Stage"])
            .create_only(&["DomainName", "BasePath"])
            .read_and_import()
            .finds_created_in(&["DomainName", "BasePath"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let domain = require_str(props, "DomainName", &what)?;
        let api = require_str(props, "RestApiId", &what)?;
        let path = base_path(props);
        client(ctx)
            .await?
            .create_base_path_mapping()
            .domain_name(domain)
            .set_base_path(text(props.get("BasePath")).filter(|p| !p.is_empty()))
            .rest_api_id(api)
            .set_stage(text(props.get("Stage")))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateBasePathMapping {path} on {domain}"
            )))?;
        Ok(CreateResult {
            physical_id: ChildId::join(domain, &path),
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
            parent: domain,
            id: path,
        } = ChildId::parse(&request.physical_id, after, "DomainName", &what)?;
        let mut ops = Vec::new();
        if changed(before, after, "RestApiId") {
            ops.push(replace("/restapiId", text(after.get("RestApiId"))));
        }
        if changed(before, after, "Stage") {
            ops.push(replace("/stage", text(after.get("Stage"))));
        }
        if !ops.is_empty() {
            client(ctx)
                .await?
                .update_base_path_mapping()
                .domain_name(domain)
                .base_path(path)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: UpdateBasePathMapping {path} on {domain}"
                )))?;
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
            parent: domain,
            id: path,
        } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "DomainName",
            &what,
        )?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_base_path_mapping()
                .domain_name(domain)
                .base_path(path)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteBasePathMapping {path} on {domain}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for BasePathMapping {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId {
            parent: domain,
            id: path,
        } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "DomainName",
            what,
        )?;
        let live = found(
            client(ctx)
                .await?
                .get_base_path_mapping()
                .domain_name(domain)
                .base_path(path)
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: GetBasePathMapping {path} on {domain}"
                ))),
        )?;
        Ok(live.map(|m| {
            let mut props = Map::new();
            props.insert("DomainName".into(), json!(domain));
            if path != NONE {
                props.insert("BasePath".into(), json!(path));
            }
            put(&mut props, "RestApiId", m.rest_api_id().map(Value::from));
            put(&mut props, "Stage", m.stage().map(Value::from));
            props
        }))
    }

    async fn created_id(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        Ok(text(request.properties.get("DomainName"))
            .map(|domain| ChildId::join(&domain, &base_path(&request.properties))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_base_path_is_none_as_api_gateway_names_it() {
        assert_eq!(base_path(&Map::new()), "(none)");
        let props = json!({"BasePath": "v1"});
        assert_eq!(base_path(props.as_object().unwrap()), "v1");
        assert_eq!(
            BasePathMapping.schema().find_scope,
            ["DomainName", "BasePath"]
        );
    }
}
