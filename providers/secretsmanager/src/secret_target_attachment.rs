//! `AWS::SecretsManager::SecretTargetAttachment`: physical id (and `Ref`) is the ARN of the
//! secret `SecretId` names; attribute `Id` (the same ARN).
//!
//! CloudFormation fills the secret's JSON with the target's connection details (`host`,
//! `port`, `engine`, ...) read from RDS, Redshift or DocumentDB. This plugin has no client of
//! those services, so it only records the attachment: it sets `dbInstanceIdentifier` (DB
//! instances) or `dbClusterIdentifier` (DB clusters, Redshift clusters) to `TargetId` in the
//! secret's JSON. `host`, `port` and `engine` are NOT filled; an `AWS::RDS::DBProxy` target,
//! which no identifier key names, records nothing. Delete undoes nothing: CloudFormation leaves
//! the secret's value as it is. The secret's value is read and written here, never reported
//! or logged.

use cdkd_aws_common::{aws_error, does_not_exist, put, require_str, string, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{client, found, id_attribute, live_secret, with_secrets_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::SecretsManager::SecretTargetAttachment";

/// The target types CloudFormation takes.
const TARGET_TYPES: &[&str] = &[
    "AWS::RDS::DBInstance",
    "AWS::RDS::DBCluster",
    "AWS::Redshift::Cluster",
    "AWS::DocDB::DBInstance",
    "AWS::DocDB::DBCluster",
    "AWS::RDS::DBProxy",
];

/// The `AWS::SecretsManager::SecretTargetAttachment` provider.
#[derive(Default)]
pub struct SecretTargetAttachment;

/// The secret JSON key that names a target of `target_type`; `None` for a DB proxy (no key
/// names one). Unknown types are refused.
fn identifier_key(target_type: &str, what: &str) -> Result<Option<&'static str>, ProviderError> {
    match target_type {
        "AWS::RDS::DBInstance" | "AWS::DocDB::DBInstance" => Ok(Some("dbInstanceIdentifier")),
        "AWS::RDS::DBCluster" | "AWS::DocDB::DBCluster" | "AWS::Redshift::Cluster" => {
            Ok(Some("dbClusterIdentifier"))
        }
        "AWS::RDS::DBProxy" => Ok(None),
        other => Err(ProviderError::validation(format!(
            "{what}: TargetType {other:?} is not one of {}",
            TARGET_TYPES.join(", ")
        ))),
    }
}

/// The secret's new JSON text with `key` set to `target_id` (and `stale`, a key of the previous
/// target type, removed); `None` when the value already says so. An absent value starts as
/// `{}`; a value that is not a JSON object is refused (its content never in the message).
fn attached_value(
    current: Option<&str>,
    key: &str,
    stale: Option<&str>,
    target_id: &str,
    what: &str,
) -> Result<Option<String>, ProviderError> {
    let before = match current.filter(|c| !c.trim().is_empty()) {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => object,
            _ => {
                return Err(ProviderError::validation(format!(
                    "{what}: the secret's value is not a JSON object, so the target cannot be \
                     recorded in it"
                )))
            }
        },
    };
    let mut after = before.clone();
    if let Some(stale) = stale.filter(|s| *s != key) {
        after.remove(stale);
    }
    after.insert(key.to_string(), Value::String(target_id.to_string()));
    Ok((after != before).then(|| Value::Object(after).to_string()))
}

/// Records the target in the secret `arn`'s value (a new version only when it changes).
async fn attach(
    sm: &aws_sdk_secretsmanager::Client,
    what: &str,
    arn: &str,
    properties: &Map<String, Value>,
    stale: Option<&str>,
) -> Result<(), ProviderError> {
    let target_id = require_str(properties, "TargetId", what)?;
    let target_type = require_str(properties, "TargetType", what)?;
    let Some(key) = identifier_key(target_type, what)? else {
        return Ok(());
    };
    // A secret without a current version (created empty) answers "not found" here.
    let current = found(
        sm.get_secret_value()
            .secret_id(arn)
            .send()
            .await
            .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: GetSecretValue"), e))),
    )?;
    let current_text = current.as_ref().and_then(|c| c.secret_string());
    let Some(value) = attached_value(current_text, key, stale, target_id, what)? else {
        return Ok(());
    };
    sm.put_secret_value()
        .secret_id(arn)
        .secret_string(value)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: PutSecretValue"), e)))
}

/// The template properties a read answers while the secret exists: the attachment is what
/// the template says (its connection details are not read back).
fn read_answer(template: &Map<String, Value>) -> Map<String, Value> {
    let mut props = Map::new();
    for name in ["SecretId", "TargetId", "TargetType"] {
        put(
            &mut props,
            name,
            string(template.get(name)).map(Value::String),
        );
    }
    props
}

#[async_trait]
impl ResourceProvider for SecretTargetAttachment {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["SecretId", "TargetId", "TargetType"])
            .create_only(&["SecretId"])
            .read_and_import()
            // Its create is an upsert: repeated after a crash it makes nothing twice.
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let secret_id = require_str(props, "SecretId", &what)?;
        identifier_key(require_str(props, "TargetType", &what)?, &what)?;
        let sm = client(ctx).await?;
        let Some(secret) = live_secret(&sm, &what, secret_id).await? else {
            return Err(does_not_exist(&what, secret_id, "Secrets Manager"));
        };
        let arn = secret.arn().unwrap_or(secret_id).to_string();
        attach(&sm, &what, &arn, props, None).await?;
        Ok(CreateResult {
            attributes: id_attribute(&arn),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let stale = string(request.previous_properties.get("TargetType"))
            .and_then(|t| identifier_key(&t, &what).ok().flatten());
        let sm = client(ctx).await?;
        attach(&sm, &what, arn, &request.properties, stale).await?;
        Ok(UpdateResult {
            attributes: id_attribute(arn),
            physical_id: arn.to_string(),
            replaced: false,
            ..Default::default()
        })
    }

    /// Nothing to undo: CloudFormation leaves the secret's value as the attachment left it.
    async fn delete(
        &self,
        _ctx: &PluginContext,
        _request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for SecretTargetAttachment {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sm = client(ctx).await?;
        Ok(live_secret(&sm, what, &request.physical_id)
            .await?
            .map(|_| read_answer(&request.properties)))
    }

    /// `Id`, the secret's ARN.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let sm = client(ctx).await?;
        match live_secret(&sm, what, physical_id).await? {
            Some(secret) => Ok(id_attribute(secret.arn().unwrap_or(physical_id))),
            None => Err(does_not_exist(what, physical_id, "Secrets Manager")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::ErrorKind;
    use serde_json::json;

    #[test]
    fn each_target_type_has_its_identifier_key() {
        assert_eq!(
            identifier_key("AWS::RDS::DBInstance", "T L").unwrap(),
            Some("dbInstanceIdentifier")
        );
        assert_eq!(
            identifier_key("AWS::DocDB::DBCluster", "T L").unwrap(),
            Some("dbClusterIdentifier")
        );
        assert_eq!(
            identifier_key("AWS::Redshift::Cluster", "T L").unwrap(),
            Some("dbClusterIdentifier")
        );
        assert_eq!(identifier_key("AWS::RDS::DBProxy", "T L").unwrap(), None);
        let err = identifier_key("AWS::S3::Bucket", "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(err.message.contains("AWS::S3::Bucket"), "{}", err.message);
    }

    #[test]
    fn the_target_is_merged_into_the_secrets_json() {
        let current = "{\"username\":\"admin\",\"password\":\"pw\"}";
        let merged =
            attached_value(Some(current), "dbClusterIdentifier", None, "db-1", "T L").unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&merged.unwrap()).unwrap(),
            json!({"username": "admin", "password": "pw", "dbClusterIdentifier": "db-1"})
        );
        // Already recorded: no new version.
        let recorded = "{\"password\":\"pw\",\"dbInstanceIdentifier\":\"db-1\"}";
        assert_eq!(
            attached_value(Some(recorded), "dbInstanceIdentifier", None, "db-1", "T L").unwrap(),
            None
        );
        // A changed target type drops the previous key.
        let moved = attached_value(
            Some(recorded),
            "dbClusterIdentifier",
            Some("dbInstanceIdentifier"),
            "cluster-1",
            "T L",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&moved).unwrap(),
            json!({"password": "pw", "dbClusterIdentifier": "cluster-1"})
        );
        // An empty secret starts from an empty object.
        assert_eq!(
            attached_value(None, "dbInstanceIdentifier", None, "db-1", "T L").unwrap(),
            Some("{\"dbInstanceIdentifier\":\"db-1\"}".to_string())
        );
        let err = attached_value(Some("plain-secret-text"), "k", None, "t", "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(
            !err.message.contains("plain-secret-text"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_read_answers_the_templates_attachment() {
        let template = json!({
            "SecretId": "db-secret",
            "TargetId": "db-1",
            "TargetType": "AWS::RDS::DBInstance",
        });
        assert_eq!(
            Value::Object(read_answer(template.as_object().unwrap())),
            template
        );
    }
}
