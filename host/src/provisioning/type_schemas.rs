//! The CloudFormation registry schemas of Cloud Control types (`cloudformation:DescribeType`):
//! which properties force a replacement, for every type, not only the ones cdkd knows by heart.
//!
//! A schema is read once and kept on disk per type (with its version) for a day, so repeated
//! deploys pay nothing; a type the registry cannot describe (or a caller without
//! `cloudformation:DescribeType`) falls back to the built-in table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::aws_env::AwsEnvironment;

/// How long a schema read from the registry is trusted without asking again.
const CACHE_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// What cdkd uses of one type's registry schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrySchema {
    /// The type.
    pub type_name: String,
    /// The schema's version (the registry's default version id).
    pub version: String,
    /// Top-level properties whose change needs a replacement.
    pub create_only: Vec<String>,
    /// Top-level properties the type's handler may refuse to change in place
    /// (`conditionalCreateOnlyProperties`): replaced when it does, as CloudFormation does.
    #[serde(default)]
    pub conditional_create_only: Vec<String>,
    /// Top-level properties AWS sets (never sent).
    pub read_only: Vec<String>,
    /// The properties that identify a resource.
    pub primary_identifier: Vec<String>,
    /// The handlers the type declares (`create`, `read`, ...); `None` when not known (a schema
    /// cached before cdkd kept them).
    #[serde(default)]
    pub handlers: Option<Vec<String>>,
    /// `DescribeType`'s `ProvisioningType` (`FULLY_MUTABLE`, `IMMUTABLE`, `NON_PROVISIONABLE`).
    #[serde(default)]
    pub provisioning_type: Option<String>,
}

impl RegistrySchema {
    /// Reads the parts cdkd uses from a registry schema document.
    pub fn parse(type_name: &str, version: &str, schema: &Value) -> RegistrySchema {
        RegistrySchema {
            type_name: type_name.to_string(),
            version: version.to_string(),
            create_only: top_level(schema.get("createOnlyProperties")),
            conditional_create_only: top_level(schema.get("conditionalCreateOnlyProperties")),
            read_only: top_level(schema.get("readOnlyProperties")),
            primary_identifier: top_level(schema.get("primaryIdentifier")),
            // An object of handlers; `[]` (as custom resources' schema has) declares none.
            handlers: match schema.get("handlers") {
                Some(Value::Object(handlers)) => Some(handlers.keys().cloned().collect()),
                Some(Value::Array(_)) => Some(Vec::new()),
                _ => None,
            },
            provisioning_type: None,
        }
    }

    /// Whether Cloud Control can create the type: it refuses a type whose schema has no `read`
    /// handler (`AWS::SQS::QueuePolicy`, `AWS::SNS::TopicPolicy`) or that the registry calls
    /// `NON_PROVISIONABLE`; an unknown answer lets AWS decide.
    pub fn cloud_control_provisionable(&self) -> bool {
        let lacks = |handler: &str| {
            self.handlers
                .as_ref()
                .is_some_and(|h| !h.iter().any(|name| name == handler))
        };
        !(lacks("read")
            || lacks("create")
            || self.provisioning_type.as_deref() == Some("NON_PROVISIONABLE"))
    }

    /// Whether CloudFormation can import the type: both signals of an unimportable type must
    /// agree (no `read` handler, and `NON_PROVISIONABLE`), so a partial answer lets AWS decide.
    pub fn importable(&self) -> bool {
        let no_read = self
            .handlers
            .as_ref()
            .is_some_and(|h| !h.iter().any(|name| name == "read"));
        let non_provisionable = self.provisioning_type.as_deref() == Some("NON_PROVISIONABLE");
        !(no_read && non_provisionable)
    }
}

/// `/properties/Name` pointers, as property names. A pointer into a property
/// (`/properties/A/B`) is left out: treating all of `A` as create-only would replace the
/// resource (and lose its data) for changes AWS makes in place.
fn top_level(pointers: Option<&Value>) -> Vec<String> {
    pointers
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|p| p.strip_prefix("/properties/"))
        .filter(|p| !p.contains('/'))
        .map(str::to_string)
        .collect()
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CachedSchema {
    fetched_at_secs: u64,
    schema: RegistrySchema,
}

/// The schemas of a run: from the disk cache, else from the registry.
pub struct TypeSchemas {
    aws: AwsEnvironment,
    cache_dir: Option<PathBuf>,
}

impl TypeSchemas {
    /// Schemas read with the host's credentials, cached under the environment's cache folder.
    pub fn new(aws: &AwsEnvironment) -> TypeSchemas {
        TypeSchemas {
            aws: aws.clone(),
            cache_dir: aws.cache_dir(),
        }
    }

    /// The schemas of `types` in `region` (types the registry cannot describe are absent).
    pub async fn get(
        &self,
        region: &str,
        types: impl IntoIterator<Item = String>,
    ) -> BTreeMap<String, RegistrySchema> {
        let mut found = BTreeMap::new();
        let mut missing = Vec::new();
        for type_name in types {
            match self.cached(region, &type_name) {
                Some(schema) => {
                    found.insert(type_name, schema);
                }
                None => missing.push(type_name),
            }
        }
        if missing.is_empty() {
            return found;
        }
        let config = aws_sdk_cloudformation::config::Builder::from(self.aws.sdk_config())
            .region(aws_sdk_cloudformation::config::Region::new(
                region.to_string(),
            ))
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-cloudformation"))
            .build();
        let client = aws_sdk_cloudformation::Client::from_conf(config);
        let reads = missing.iter().map(|type_name| describe(&client, type_name));
        for (type_name, read) in missing
            .iter()
            .zip(futures_util::future::join_all(reads).await)
        {
            match read {
                Ok(schema) => {
                    self.store(region, &schema);
                    found.insert(type_name.clone(), schema);
                }
                Err(why) => tracing::debug!(
                    type_name,
                    "no registry schema ({why}); using cdkd's built-in create-only table"
                ),
            }
        }
        found
    }

    fn path(&self, region: &str, type_name: &str) -> Option<PathBuf> {
        let file = format!("{}.json", type_name.replace("::", "-"));
        Some(
            self.cache_dir
                .as_ref()?
                .join("schemas")
                .join(region)
                .join(file),
        )
    }

    /// The schemas of `types` the disk cache holds, without asking the registry.
    pub fn cached_only(
        &self,
        region: &str,
        types: impl IntoIterator<Item = String>,
    ) -> BTreeMap<String, RegistrySchema> {
        types
            .into_iter()
            .filter_map(|t| Some((t.clone(), self.cached(region, &t)?)))
            .collect()
    }

    fn cached(&self, region: &str, type_name: &str) -> Option<RegistrySchema> {
        let bytes = std::fs::read(self.path(region, type_name)?).ok()?;
        let cached: CachedSchema = serde_json::from_slice(&bytes).ok()?;
        // A schema cached before cdkd kept the provisioning type is read again.
        cached.schema.provisioning_type.as_ref()?;
        let age = now_secs().saturating_sub(cached.fetched_at_secs);
        (age < CACHE_TTL.as_secs() && cached.schema.type_name == type_name).then_some(cached.schema)
    }

    /// Best effort: a cache that cannot be written only costs a lookup next time.
    fn store(&self, region: &str, schema: &RegistrySchema) {
        let Some(path) = self.path(region, &schema.type_name) else {
            return;
        };
        let cached = CachedSchema {
            fetched_at_secs: now_secs(),
            schema: schema.clone(),
        };
        let written = path
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|()| write_atomically(&path, &serde_json::to_vec(&cached)?));
        if let Err(err) = written {
            tracing::debug!(path = %path.display(), "cannot cache a registry schema: {err}");
        }
    }
}

/// Why the registry gave no schema for a type (logged; the built-in table answers instead).
#[derive(Debug, thiserror::Error)]
enum DescribeError {
    /// `DescribeType` failed (its error, in one line).
    #[error("{0}")]
    Call(String),
    /// The answer carries no schema.
    #[error("the answer has no schema")]
    NoSchema,
    /// The schema is not JSON.
    #[error("unreadable schema: {0}")]
    Unreadable(serde_json::Error),
}

async fn describe(
    client: &aws_sdk_cloudformation::Client,
    type_name: &str,
) -> Result<RegistrySchema, DescribeError> {
    let answer = client
        .describe_type()
        .r#type(aws_sdk_cloudformation::types::RegistryType::Resource)
        .type_name(type_name)
        .send()
        .await
        .map_err(|err| DescribeError::Call(cdkd_aws_common::error_line(&err)))?;
    let text = answer.schema().ok_or(DescribeError::NoSchema)?;
    let schema: Value = serde_json::from_str(text).map_err(DescribeError::Unreadable)?;
    let version = answer.default_version_id().unwrap_or("default");
    let mut parsed = RegistrySchema::parse(type_name, version, &schema);
    parsed.provisioning_type = answer.provisioning_type().map(|p| p.as_str().to_string());
    Ok(parsed)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let partial = path.with_extension(format!("json.{}", std::process::id()));
    std::fs::write(&partial, bytes)?;
    std::fs::rename(&partial, path)
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_top_level_pointers_count() {
        let schema = RegistrySchema::parse(
            "AWS::X::Y",
            "v1",
            &json!({
                "createOnlyProperties": ["/properties/Name", "/properties/Config/Inner"],
                "conditionalCreateOnlyProperties": ["/properties/KeySchema"],
                "readOnlyProperties": ["/properties/Arn"],
                "primaryIdentifier": ["/properties/Name"]
            }),
        );
        assert_eq!(schema.create_only, ["Name"]);
        assert_eq!(schema.conditional_create_only, ["KeySchema"]);
        assert_eq!(schema.read_only, ["Arn"]);
        assert_eq!(schema.primary_identifier, ["Name"]);
        assert_eq!(schema.handlers, None);
        assert!(schema.importable());
    }

    #[test]
    fn a_type_is_unimportable_only_when_both_signals_agree() {
        let mut policy = RegistrySchema::parse(
            "AWS::SNS::TopicPolicy",
            "v1",
            &json!({"handlers": {"create": {}, "update": {}, "delete": {}}}),
        );
        assert_eq!(
            policy.handlers.as_deref(),
            Some(&["create".to_string(), "update".into(), "delete".into()][..])
        );
        assert!(policy.importable(), "no provisioning type: AWS decides");
        policy.provisioning_type = Some("NON_PROVISIONABLE".into());
        assert!(!policy.importable());
        policy.handlers = Some(vec!["read".into()]);
        assert!(policy.importable());
    }
}
