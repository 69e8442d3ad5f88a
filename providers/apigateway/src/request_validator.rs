//! `AWS::ApiGateway::RequestValidator`: physical id `RestApiId|RequestValidatorId`, `Ref` and
//! attribute `RequestValidatorId` the validator's id. Its name is the template's, or one made
//! from the logical id and the create token (CDK gives none), so the run after a crash looks
//! the validator up by name in its API.

use cdkd_aws_common::{
    deleted_unless_failed, flag, generated_name, require_str, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::replace;
use crate::{attributes, changed, client, failed, found, ChildId};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::RequestValidator";

/// The `AWS::ApiGateway::RequestValidator` provider.
#[derive(Default)]
pub struct RequestValidator;

/// The validator's name: the template's, else one made from the logical id and token.
fn validator_name(
    props: &Map<String, Value>,
    stack: &str,
    logical_id: &str,
    token: &str,
) -> String {
    text(props.get("Name"))
        .unwrap_or_else(|| generated_name(stack, logical_id, token, 128, false, ""))
}

#[async_trait]
impl ResourceProvider for RequestValidator {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "RestApiId",
                "Name",
                "ValidateRequestBody",
                "ValidateRequestParameters",
            ])
            .create_only(&["RestApiId", "Name"])
            .read_and_import()
            .composite_id(&["RestApiId", "RequestValidatorId"], &[&["RestApiId"], &[]])
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
        let name = validator_name(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
        );
        let created = client(ctx)
            .await?
            .create_request_validator()
            .rest_api_id(api)
            .name(&name)
            .set_validate_request_body(flag(props.get("ValidateRequestBody")))
            .set_validate_request_parameters(flag(props.get("ValidateRequestParameters")))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateRequestValidator {name} in {api}"
            )))?;
        let id = created.id().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateRequestValidator returned no id"))
        })?;
        Ok(CreateResult {
            physical_id: ChildId::join(api, id),
            attributes: attributes(&[("RequestValidatorId", id)]),
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
        let mut ops = Vec::new();
        for (key, path) in [
            ("ValidateRequestBody", "/validateRequestBody"),
            ("ValidateRequestParameters", "/validateRequestParameters"),
        ] {
            if changed(before, after, key) {
                ops.push(replace(
                    path,
                    Some(flag(after.get(key)).unwrap_or(false).to_string()),
                ));
            }
        }
        if !ops.is_empty() {
            client(ctx)
                .await?
                .update_request_validator()
                .rest_api_id(api)
                .request_validator_id(id)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: UpdateRequestValidator {id} in {api}"
                )))?;
        }
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes: attributes(&[("RequestValidatorId", id)]),
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
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_request_validator()
                .rest_api_id(api)
                .request_validator_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteRequestValidator {id} in {api}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for RequestValidator {
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
                .get_request_validator()
                .rest_api_id(api)
                .request_validator_id(id)
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: GetRequestValidator {id} in {api}"
                ))),
        )?;
        Ok(live.map(|v| {
            let mut props = Map::new();
            props.insert("RestApiId".into(), json!(api));
            cdkd_aws_common::put(&mut props, "Name", v.name().map(Value::from));
            props.insert(
                "ValidateRequestBody".into(),
                json!(v.validate_request_body()),
            );
            props.insert(
                "ValidateRequestParameters".into(),
                json!(v.validate_request_parameters()),
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
        Ok(attributes(&[("RequestValidatorId", id)]))
    }

    /// The validator of the template's (or the token's) name in its API.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let props = &request.properties;
        let Some(api) = text(props.get("RestApiId")) else {
            return Ok(None);
        };
        if props.get("Name").is_none() && request.token.is_empty() {
            return Ok(None);
        }
        let name = validator_name(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.token,
        );
        let apigw = client(ctx).await?;
        let mut ids = Vec::new();
        let mut position: Option<String> = None;
        loop {
            let Some(page) = found(
                apigw
                    .get_request_validators()
                    .rest_api_id(&api)
                    .limit(500)
                    .set_position(position.take())
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: GetRequestValidators in {api}"))),
            )?
            else {
                return Ok(None);
            };
            ids.extend(
                page.items()
                    .iter()
                    .filter(|v| v.name() == Some(name.as_str()))
                    .filter_map(|v| v.id().map(ToString::to_string)),
            );
            match page.position() {
                Some(p) if !p.is_empty() => position = Some(p.to_string()),
                _ => break,
            }
        }
        ChildId::only(
            what,
            &api,
            &format!("request validators named {name}"),
            &ids,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_validator_without_a_name_gets_one_from_its_token() {
        let none = Map::new();
        let made = validator_name(&none, "S", "ApiBodyValidator", "t1");
        assert_eq!(made, validator_name(&none, "S", "ApiBodyValidator", "t1"));
        assert!(made.starts_with("S-ApiBodyValidator-"), "{made}");
        assert_eq!(RequestValidator.schema().find_scope, ["RestApiId", "Name"]);
    }
}
