//! `Acme::Echo::Pair`: how a type declares a composite (`a|b`) physical id and what `Ref`
//! returns for it. A pair joins two names (`Left`, `Right`); it keeps nothing on disk, so its
//! id is the whole resource. `Ref` returns the left name, the way `Ref` of an `AWS::EC2::EIP`
//! returns the first segment of `<publicIp>|<allocationId>`.

use cdkd_provider_api::protocol::{
    CompositeId, CreateRequest, CreateResult, DeleteRequest, DeleteResult, RefValue,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

/// The composite-id example type.
pub const PAIR_TYPE: &str = "Acme::Echo::Pair";

/// The provider.
#[derive(Default)]
pub struct EchoPair;

/// One segment of the id: present, and without the separator (it is not escaped).
fn segment<'a>(
    properties: &'a Map<String, Value>,
    key: &str,
    logical_id: &str,
) -> Result<&'a str, ProviderError> {
    let value = properties.get(key).and_then(Value::as_str).ok_or_else(|| {
        ProviderError::validation(format!(
            "{PAIR_TYPE} {logical_id}: property {key} is required"
        ))
    })?;
    if value.contains('|') {
        return Err(ProviderError::validation(format!(
            "{PAIR_TYPE} {logical_id}: property {key} ({value}) contains '|', the composite id's separator"
        )));
    }
    Ok(value)
}

#[async_trait]
impl ResourceProvider for EchoPair {
    fn schema(&self) -> ResourceTypeSchema {
        ResourceTypeSchema {
            type_name: PAIR_TYPE.into(),
            handled_properties: vec!["Left".into(), "Right".into()],
            create_only_properties: vec!["Left".into(), "Right".into()],
            composite_id: Some(CompositeId {
                segments: vec!["left".into(), "right".into()],
                ref_value: RefValue::Segment(0),
                segment_sources: vec![vec!["Left".into()], vec!["Right".into()]],
            }),
            ..ResourceTypeSchema::default()
        }
    }

    async fn create(
        &self,
        _ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let left = segment(&request.properties, "Left", &request.logical_id)?;
        let right = segment(&request.properties, "Right", &request.logical_id)?;
        Ok(CreateResult {
            physical_id: format!("{left}|{right}"),
            attributes: Map::new(),
            ..Default::default()
        })
    }

    /// Both properties are create-only, so an update changes nothing.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        _ctx: &PluginContext,
        _request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        Ok(DeleteResult::Deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_with_the_separator_is_refused() {
        let props: Map<String, Value> =
            serde_json::from_value(serde_json::json!({"Left": "a|b", "Right": "c"})).unwrap();
        let err = segment(&props, "Left", "P").unwrap_err();
        assert!(err.message.contains("contains '|'"), "{}", err.message);
        assert_eq!(segment(&props, "Right", "P").unwrap(), "c");
    }
}
