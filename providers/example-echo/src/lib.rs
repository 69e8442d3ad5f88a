//! An example cdkd provider plugin, small enough to copy.
//!
//! It handles two private types:
//! - `Acme::Echo::Thing`: a "resource" kept as a JSON file in a local folder (`Directory`
//!   property, else `$CDKD_ECHO_DIR`, else `<tmp>/cdkd-echo`), so creates and deletes can be
//!   checked from outside; its `Greeting` attribute shows which plugin build answered.
//! - `Acme::Echo::Pair`: a composite-id type (`<left>|<right>`) whose `Ref` is one segment
//!   (see `pair.rs`).
//!
//! Not for: anything in AWS. See docs/provider-authoring.md for how to build your own.

use std::path::PathBuf;

use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, GetAttributeRequest,
    GetAttributeResult, ImportRequest, ReadCurrentStateRequest, ReadCurrentStateResult,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

cdkd_provider_api::export_plugin!(description: "Example provider: Acme::Echo::Thing kept as local JSON files");

/// What this build says in its `Greeting` attribute; the version-swap test changes it.
const GREETING: &str = "hello";

/// The example resource type.
pub const THING_TYPE: &str = "Acme::Echo::Thing";

/// `Acme::Echo::Thing`: one JSON file per resource.
#[derive(Default)]
pub struct EchoThing;

cdkd_provider_api::register_provider!(EchoThing);
cdkd_provider_api::register_provider!(pair::EchoPair);

mod pair;

fn store_dir(properties: &Map<String, Value>) -> PathBuf {
    properties
        .get("Directory")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("CDKD_ECHO_DIR").map(PathBuf::from))
        .unwrap_or_else(|| std::env::temp_dir().join("cdkd-echo"))
}

fn io_error(logical_id: &str, what: &str, err: std::io::Error) -> ProviderError {
    ProviderError::other(format!("{THING_TYPE} {logical_id}: cannot {what}: {err}"))
}

/// A CloudFormation-style generated name: `{stack}-{logicalId}-{suffix}`.
fn generated_name(stack: &str, logical_id: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    let prefix = if stack.is_empty() { "echo" } else { stack };
    format!("{prefix}-{logical_id}-{nanos:08X}")
}

fn attributes(physical_id: &str, properties: &Map<String, Value>) -> Map<String, Value> {
    let message = properties
        .get("Message")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut attrs = Map::new();
    attrs.insert("Id".into(), json!(physical_id));
    attrs.insert("Greeting".into(), json!(format!("{GREETING}, {message}")));
    attrs.insert("PluginVersion".into(), json!(env!("CARGO_PKG_VERSION")));
    attrs
}

impl EchoThing {
    fn path(properties: &Map<String, Value>, physical_id: &str) -> Result<PathBuf, ProviderError> {
        if physical_id.is_empty()
            || physical_id.contains(['/', '\\'])
            || physical_id.starts_with('.')
        {
            return Err(ProviderError::validation(format!(
                "{THING_TYPE}: physical id '{physical_id}' is not a plain name"
            )));
        }
        Ok(store_dir(properties).join(format!("{physical_id}.json")))
    }

    async fn write(
        logical_id: &str,
        physical_id: &str,
        properties: &Map<String, Value>,
    ) -> Result<(), ProviderError> {
        let path = Self::path(properties, physical_id)?;
        let dir = store_dir(properties);
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|err| io_error(logical_id, "create the store folder", err))?;
        let body = serde_json::to_vec_pretty(properties).expect("a JSON map serialises");
        tokio::fs::write(&path, body)
            .await
            .map_err(|err| io_error(logical_id, "write the thing", err))
    }

    async fn read(
        properties: &Map<String, Value>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let path = Self::path(properties, physical_id)?;
        match tokio::fs::read(&path).await {
            Ok(body) => serde_json::from_slice(&body).map(Some).map_err(|err| {
                ProviderError::other(format!(
                    "{THING_TYPE} {physical_id}: corrupt file {}: {err}",
                    path.display()
                ))
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(io_error(physical_id, "read the thing", err)),
        }
    }
}

#[async_trait]
impl ResourceProvider for EchoThing {
    fn schema(&self) -> ResourceTypeSchema {
        ResourceTypeSchema {
            type_name: THING_TYPE.into(),
            handled_properties: vec!["Name".into(), "Message".into(), "Directory".into()],
            create_only_properties: vec!["Name".into(), "Directory".into()],
            operations: vec![
                operation::READ_CURRENT_STATE.into(),
                operation::IMPORT.into(),
                operation::GET_ATTRIBUTE.into(),
            ],
            ..ResourceTypeSchema::default()
        }
    }

    async fn create(
        &self,
        _ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let physical_id = match request.properties.get("Name").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => generated_name(&request.stack_name, &request.logical_id),
        };
        if Self::read(&request.properties, &physical_id)
            .await?
            .is_some()
        {
            return Err(ProviderError::new(
                ErrorKind::ALREADY_EXISTS,
                format!(
                    "{THING_TYPE} {}: a thing named '{physical_id}' already exists",
                    request.logical_id
                ),
            ));
        }
        Self::write(&request.logical_id, &physical_id, &request.properties).await?;
        tracing::info!(logical_id = %request.logical_id, "created {physical_id}");
        Ok(CreateResult {
            attributes: attributes(&physical_id, &request.properties),
            physical_id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        if Self::read(&request.properties, &request.physical_id)
            .await?
            .is_none()
        {
            return Err(ProviderError::new(
                ErrorKind::NOT_FOUND,
                format!(
                    "{THING_TYPE} {}: '{}' does not exist",
                    request.logical_id, request.physical_id
                ),
            ));
        }
        Self::write(
            &request.logical_id,
            &request.physical_id,
            &request.properties,
        )
        .await?;
        Ok(UpdateResult {
            attributes: attributes(&request.physical_id, &request.properties),
            physical_id: request.physical_id,
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        _ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let path = Self::path(&request.properties, &request.physical_id)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(DeleteResult::Deleted),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(DeleteResult::Deleted),
            Err(err) => Err(io_error(&request.logical_id, "delete the thing", err)),
        }
    }

    async fn read_current_state(
        &self,
        _ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        Ok(ReadCurrentStateResult {
            properties: Self::read(&request.properties, &request.physical_id).await?,
        })
    }

    async fn import(
        &self,
        _ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let found = Self::read(&request.properties, &request.physical_id)
            .await?
            .ok_or_else(|| {
                ProviderError::new(
                    ErrorKind::NOT_FOUND,
                    format!(
                        "{THING_TYPE} {}: nothing named '{}' to import",
                        request.logical_id, request.physical_id
                    ),
                )
            })?;
        Ok(CreateResult {
            attributes: attributes(&request.physical_id, &found),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    async fn get_attribute(
        &self,
        _ctx: &PluginContext,
        request: GetAttributeRequest,
    ) -> Result<GetAttributeResult, ProviderError> {
        let current = Self::read(&request.properties, &request.physical_id).await?;
        Ok(GetAttributeResult {
            value: current
                .map(|props| attributes(&request.physical_id, &props))
                .and_then(|mut attrs| attrs.remove(&request.attribute)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_follow_cloudformation_shape() {
        let name = generated_name("Demo", "Thing1");
        assert!(name.starts_with("Demo-Thing1-"), "{name}");
        assert_eq!(name.len(), "Demo-Thing1-".len() + 8);
    }

    #[test]
    fn physical_ids_cannot_escape_the_store() {
        let props = Map::new();
        for bad in ["", "../etc/passwd", ".hidden", "a/b"] {
            let err = EchoThing::path(&props, bad).unwrap_err();
            assert_eq!(err.kind, ErrorKind::VALIDATION, "{bad}");
        }
        assert!(EchoThing::path(&props, "ok-name").is_ok());
    }

    #[test]
    fn greeting_carries_the_message_and_version() {
        let mut props = Map::new();
        props.insert("Message".into(), json!("world"));
        let attrs = attributes("x", &props);
        assert_eq!(attrs["Greeting"], json!("hello, world"));
        assert_eq!(attrs["PluginVersion"], json!(env!("CARGO_PKG_VERSION")));
    }
}
