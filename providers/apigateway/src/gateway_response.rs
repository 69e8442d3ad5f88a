//! `AWS::ApiGateway::GatewayResponse`: an API's own answer for one of API Gateway's response
//! types. Physical id (and `Ref`, attribute `Id`) `RestApiId|ResponseType`. PutGatewayResponse
//! replaces the whole response, so create and update are the same call and a create repeated
//! after a crash is harmless; a delete restores API Gateway's default response.

use cdkd_aws_common::{deleted_unless_failed, put, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{attributes, client, failed, found, map_shape, string_map, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::GatewayResponse";

/// The `AWS::ApiGateway::GatewayResponse` provider.
#[derive(Default)]
pub struct GatewayResponse;

/// Puts the template's response.
async fn put_response(
    ctx: &PluginContext,
    what: &str,
    props: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let api = require_str(props, "RestApiId", what)?;
    let kind = require_str(props, "ResponseType", what)?;
    client(ctx)
        .await?
        .put_gateway_response()
        .rest_api_id(api)
        .response_type(kind.into())
        .set_status_code(text(props.get("StatusCode")))
        .set_response_parameters(string_map(props.get("ResponseParameters")))
        .set_response_templates(string_map(props.get("ResponseTemplates")))
        .send()
        .await
        .map_err(failed!(format!(
            "{what}: PutGatewayResponse {kind} in {api}"
        )))?;
    Ok(ChildId::join(api, kind))
}

#[async_trait]
impl ResourceProvider for GatewayResponse {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "RestApiId",
                "ResponseType",
                "StatusCode",
                "ResponseParameters",
                "ResponseTemplates",
            ])
            .create_only(&["RestApiId", "ResponseType"])
            .read_and_import()
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let id = put_response(ctx, &what, &request.properties).await?;
        Ok(CreateResult {
            attributes: attributes(&[("Id", &id)]),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let id = put_response(ctx, &what, &request.properties).await?;
        Ok(UpdateResult {
            attributes: attributes(&[("Id", &id)]),
            physical_id: id,
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
            id: kind,
        } = ChildId::parse(
            &request.physical_id,
            &request.properties,
            "RestApiId",
            &what,
        )?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_gateway_response()
                .rest_api_id(api)
                .response_type(kind.into())
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteGatewayResponse {kind} in {api}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for GatewayResponse {
    /// The API's own response; API Gateway's default one counts as none.
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ChildId {
            parent: api,
            id: kind,
        } = ChildId::parse(&request.physical_id, &request.properties, "RestApiId", what)?;
        let live = found(
            client(ctx)
                .await?
                .get_gateway_response()
                .rest_api_id(api)
                .response_type(kind.into())
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: GetGatewayResponse {kind} in {api}"
                ))),
        )?;
        Ok(live.filter(|r| !r.default_response()).map(|r| {
            let mut props = Map::new();
            props.insert("RestApiId".into(), json!(api));
            props.insert("ResponseType".into(), json!(kind));
            put(&mut props, "StatusCode", r.status_code().map(Value::from));
            put(
                &mut props,
                "ResponseParameters",
                map_shape(r.response_parameters()),
            );
            put(
                &mut props,
                "ResponseTemplates",
                map_shape(r.response_templates()),
            );
            props
        }))
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

    #[test]
    fn a_gateway_response_is_an_upsert_named_by_its_api_and_type() {
        let schema = GatewayResponse.schema();
        assert!(schema
            .operations
            .iter()
            .any(|o| o == operation::IDEMPOTENT_CREATE));
        assert_eq!(schema.create_only_properties, ["RestApiId", "ResponseType"]);
    }
}
