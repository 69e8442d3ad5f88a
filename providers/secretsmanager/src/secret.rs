//! `AWS::SecretsManager::Secret`: physical id (and `Ref`) is the secret's ARN; attribute `Id`
//! (the ARN again, the schema's one read-only property).
//!
//! The value comes from `SecretString`, or from `GenerateSecretString` through
//! GetRandomPassword (with `SecretStringTemplate` and `GenerateStringKey`, the template's JSON
//! with that key set to the password, as CloudFormation builds it); without either the secret
//! is created empty. Both are write-only: never read back, never reported, never logged.
//!
//! Delete is CloudFormation's: `ForceDeleteWithoutRecovery` (no recovery window), so a
//! re-deploy can take the name again at once; a secret worth keeping takes
//! `DeletionPolicy: Retain`. Replicas are removed first, as Secrets Manager requires. A secret
//! already scheduled for deletion (by hand) counts as deleted.
//!
//! `Type` (managed external secrets) is not handled.

use std::collections::BTreeMap;

use aws_sdk_secretsmanager::operation::describe_secret::DescribeSecretOutput;
use aws_sdk_secretsmanager::types::{ReplicaRegionType, Tag};
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, flag, given_or_generated_name, int, put,
    stable_hash, string, text, Readable, TypeSchema,
};
use cdkd_aws_common::{tag_map, template_tag_changes as tag_changes};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, id_attribute, live_secret, marked_for_deletion, with_secrets_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::SecretsManager::Secret";

/// The longest secret name.
const MAX_NAME: usize = 512;

/// The key Secrets Manager encrypts with when none is named.
const DEFAULT_KEY: &str = "alias/aws/secretsmanager";

/// The `AWS::SecretsManager::Secret` provider.
#[derive(Default)]
pub struct Secret;

/// GetRandomPassword's options, from `GenerateSecretString`.
#[derive(Debug, Clone, PartialEq, Default)]
struct PasswordOptions {
    /// `ExcludeCharacters`.
    exclude_characters: Option<String>,
    /// `ExcludeLowercase`.
    exclude_lowercase: Option<bool>,
    /// `ExcludeNumbers`.
    exclude_numbers: Option<bool>,
    /// `ExcludePunctuation`.
    exclude_punctuation: Option<bool>,
    /// `ExcludeUppercase`.
    exclude_uppercase: Option<bool>,
    /// `IncludeSpace`.
    include_space: Option<bool>,
    /// `PasswordLength`; Secrets Manager's default is 32.
    password_length: Option<i64>,
    /// `RequireEachIncludedType`.
    require_each_included_type: Option<bool>,
}

/// A `GenerateSecretString`: the password's options and where the password goes.
#[derive(Debug, Clone, PartialEq, Default)]
struct Generate {
    /// The password's options.
    options: PasswordOptions,
    /// `SecretStringTemplate`: a JSON object the password is added to.
    template: Option<String>,
    /// `GenerateStringKey`: the key the password is set under in the template.
    key: Option<String>,
}

/// Where a secret value comes from.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    /// `SecretString`, as written.
    Given(String),
    /// `GenerateSecretString`.
    Generated(Generate),
}

/// A template string property, an empty one counted as absent.
fn setting(properties: &Map<String, Value>, name: &str) -> Option<String> {
    text(properties.get(name)).filter(|s| !s.is_empty())
}

/// A property as set (`null` counted as absent), for comparing two versions of a template.
fn present<'a>(properties: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    properties.get(name).filter(|v| !v.is_null())
}

/// `GenerateSecretString` read from the template, refused when the template and key do not
/// come together or the template is no JSON object (checked before a password is drawn).
fn generate_spec(value: &Value, what: &str) -> Result<Generate, ProviderError> {
    let get = |name: &str| value.get(name);
    let generate = Generate {
        options: PasswordOptions {
            exclude_characters: text(get("ExcludeCharacters")).filter(|s| !s.is_empty()),
            exclude_lowercase: flag(get("ExcludeLowercase")),
            exclude_numbers: flag(get("ExcludeNumbers")),
            exclude_punctuation: flag(get("ExcludePunctuation")),
            exclude_uppercase: flag(get("ExcludeUppercase")),
            include_space: flag(get("IncludeSpace")),
            password_length: int(get("PasswordLength")).map(i64::from),
            require_each_included_type: flag(get("RequireEachIncludedType")),
        },
        template: text(get("SecretStringTemplate")).filter(|s| !s.is_empty()),
        key: text(get("GenerateStringKey")).filter(|s| !s.is_empty()),
    };
    match (&generate.template, &generate.key) {
        (Some(template), Some(_)) => {
            if !matches!(
                serde_json::from_str::<Value>(template),
                Ok(Value::Object(_))
            ) {
                return Err(ProviderError::validation(format!(
                    "{what}: GenerateSecretString.SecretStringTemplate must be a JSON object"
                )));
            }
        }
        (None, None) => {}
        _ => {
            return Err(ProviderError::validation(format!(
                "{what}: GenerateSecretString.SecretStringTemplate and GenerateStringKey must be \
                 given together"
            )))
        }
    }
    Ok(generate)
}

/// The secret value a generated `password` makes: the template's JSON with the key set to the
/// password (a key the template already has is overwritten), or the password alone. Errors
/// never carry the password.
fn secret_string_from(
    generate: &Generate,
    password: String,
    what: &str,
) -> Result<String, ProviderError> {
    let (Some(template), Some(key)) = (&generate.template, &generate.key) else {
        return Ok(password);
    };
    let Ok(Value::Object(mut object)) = serde_json::from_str::<Value>(template) else {
        return Err(ProviderError::validation(format!(
            "{what}: GenerateSecretString.SecretStringTemplate must be a JSON object"
        )));
    };
    object.insert(key.clone(), Value::String(password));
    Ok(Value::Object(object).to_string())
}

/// Where the template's value comes from; `None` for an empty secret. Both properties at once
/// are refused, as CloudFormation refuses them.
fn value_source(
    properties: &Map<String, Value>,
    what: &str,
) -> Result<Option<Source>, ProviderError> {
    match (
        present(properties, "SecretString"),
        present(properties, "GenerateSecretString"),
    ) {
        (Some(_), Some(_)) => Err(ProviderError::validation(format!(
            "{what}: SecretString and GenerateSecretString cannot both be set"
        ))),
        (Some(given), None) => Ok(text(Some(given)).map(Source::Given)),
        (None, Some(generate)) => Ok(Some(Source::Generated(generate_spec(generate, what)?))),
        (None, None) => Ok(None),
    }
}

/// The secret value of `source`, drawing a password from Secrets Manager for a generated one.
async fn secret_value(
    sm: &aws_sdk_secretsmanager::Client,
    what: &str,
    source: &Source,
) -> Result<String, ProviderError> {
    let generate = match source {
        Source::Given(value) => return Ok(value.clone()),
        Source::Generated(generate) => generate,
    };
    let o = &generate.options;
    let answer = sm
        .get_random_password()
        .set_password_length(o.password_length)
        .set_exclude_characters(o.exclude_characters.clone())
        .set_exclude_numbers(o.exclude_numbers)
        .set_exclude_punctuation(o.exclude_punctuation)
        .set_exclude_uppercase(o.exclude_uppercase)
        .set_exclude_lowercase(o.exclude_lowercase)
        .set_include_space(o.include_space)
        .set_require_each_included_type(o.require_each_included_type)
        .send()
        .await
        .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: GetRandomPassword"), e)))?;
    let password = answer.random_password.ok_or_else(|| {
        ProviderError::other(format!("{what}: GetRandomPassword answered no password"))
    })?;
    secret_string_from(generate, password, what)
}

/// CreateSecret's `ClientRequestToken` for the create whose idempotency token is
/// `client_token`: the same on every attempt (so a retried create is recognised as this one),
/// and within the 32 to 64 characters Secrets Manager requires; `None` without a token (the
/// SDK then draws one per call).
fn request_token(client_token: &str) -> Option<String> {
    if client_token.is_empty() {
        return None;
    }
    Some(format!(
        "cdkd-{:016x}{:016x}",
        stable_hash(&[client_token]),
        stable_hash(&[client_token, "secret-version"])
    ))
}

/// Tags as Secrets Manager takes them.
fn sdk_tags(tags: &BTreeMap<String, String>) -> Vec<Tag> {
    tags.iter()
        .map(|(key, value)| Tag::builder().key(key).value(value).build())
        .collect()
}

/// The template's `ReplicaRegions` as (region, KMS key) in template order.
fn replicas(properties: &Map<String, Value>) -> Vec<(String, Option<String>)> {
    properties
        .get("ReplicaRegions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let region = string(r.get("Region"))?;
            Some((region, text(r.get("KmsKeyId")).filter(|k| !k.is_empty())))
        })
        .collect()
}

/// Replicas as Secrets Manager takes them.
fn sdk_replicas(replicas: &[(String, Option<String>)]) -> Vec<ReplicaRegionType> {
    replicas
        .iter()
        .map(|(region, key)| {
            ReplicaRegionType::builder()
                .region(region)
                .set_kms_key_id(key.clone())
                .build()
        })
        .collect()
}

/// The replicas to add and the regions to remove, from `before` to `after`; a replica whose
/// key changes is removed and added again (a replica's key cannot be changed in place).
fn replica_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> (Vec<(String, Option<String>)>, Vec<String>) {
    let old: BTreeMap<String, Option<String>> = replicas(before).into_iter().collect();
    let new = replicas(after);
    let added: Vec<(String, Option<String>)> = new
        .iter()
        .filter(|(region, key)| old.get(region) != Some(key))
        .cloned()
        .collect();
    let removed = old
        .iter()
        .filter(|(region, key)| !new.iter().any(|(r, k)| r == *region && k == *key))
        .map(|(region, _)| region.clone())
        .collect();
    (added, removed)
}

/// What an update's UpdateSecret sets; all `None` when it has nothing to do.
#[derive(Debug, Clone, PartialEq, Default)]
struct Change {
    /// The new description (`""` clears it).
    description: Option<String>,
    /// The new key (`""` goes back to `aws/secretsmanager`).
    kms_key_id: Option<String>,
    /// A new value.
    value: Option<Source>,
}

impl Change {
    /// Whether there is anything for UpdateSecret to do.
    fn is_empty(&self) -> bool {
        self.description.is_none() && self.kms_key_id.is_none() && self.value.is_none()
    }
}

/// The UpdateSecret of an update from `before` to `after`: changed settings, a removed one
/// back at Secrets Manager's default as CloudFormation resets it, and a new value when
/// `SecretString` changed or (a new password drawn) `GenerateSecretString` did. A value whose
/// property is removed stays as it is: a secret keeps its last version.
fn change(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    what: &str,
) -> Result<Change, ProviderError> {
    let changed = |name: &str| present(before, name) != present(after, name);
    let reset = |name: &str| changed(name).then(|| setting(after, name).unwrap_or_default());
    let value = match value_source(after, what)? {
        Some(source @ Source::Given(_)) if changed("SecretString") => Some(source),
        Some(source @ Source::Generated(_)) if changed("GenerateSecretString") => Some(source),
        _ => None,
    };
    Ok(Change {
        description: reset("Description"),
        kms_key_id: reset("KmsKeyId"),
        value,
    })
}

/// Whether a template's key (id, ARN, alias or alias ARN) and the one Secrets Manager reports
/// name the same key in the same spelling family.
fn same_key(template: &str, live: &str) -> bool {
    template == live
        || live.ends_with(&format!("/{template}"))
        || live.ends_with(&format!(":{template}"))
        || template.ends_with(&format!("/{live}"))
        || template.ends_with(&format!(":{live}"))
}

/// The key to report: the template's spelling when it names the live key, nothing when the
/// template names none and the live one is the default.
fn key_like(template: Option<&str>, live: Option<&str>) -> Option<String> {
    let live = live.filter(|k| !k.is_empty())?;
    match template {
        Some(t) if same_key(t, live) => Some(t.to_string()),
        None if live == DEFAULT_KEY => None,
        _ => Some(live.to_string()),
    }
}

/// The live secret in template shape: `Name`, `Description`, `KmsKeyId`, `ReplicaRegions` and
/// `Tags`; never `SecretString` or `GenerateSecretString` (write-only, and secret).
fn template_shape(
    secret: &DescribeSecretOutput,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", secret.name().map(|n| json!(n)));
    put(
        &mut props,
        "Description",
        secret
            .description()
            .filter(|d| !d.is_empty())
            .map(|d| json!(d)),
    );
    let template_key = setting(template, "KmsKeyId");
    put(
        &mut props,
        "KmsKeyId",
        key_like(template_key.as_deref(), secret.kms_key_id()).map(Value::String),
    );
    let wanted = replicas(template);
    let mut live: Vec<(usize, String, Value)> = secret
        .replication_status()
        .iter()
        .filter_map(|r| {
            let region = r.region()?.to_string();
            let position = wanted.iter().position(|(w, _)| *w == region);
            let template_key = position.and_then(|p| wanted[p].1.as_deref());
            let mut entry = Map::new();
            entry.insert("Region".into(), json!(region));
            put(
                &mut entry,
                "KmsKeyId",
                key_like(template_key, r.kms_key_id()).map(Value::String),
            );
            Some((
                position.unwrap_or(wanted.len()),
                region,
                Value::Object(entry),
            ))
        })
        .collect();
    live.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    if !live.is_empty() {
        props.insert(
            "ReplicaRegions".into(),
            Value::Array(live.into_iter().map(|(_, _, entry)| entry).collect()),
        );
    }
    let tags: BTreeMap<&str, &str> = secret
        .tags()
        .iter()
        .filter_map(|t| Some((t.key()?, t.value().unwrap_or_default())))
        .filter(|(key, _)| !key.starts_with("aws:"))
        .collect();
    if !tags.is_empty() {
        props.insert(
            "Tags".into(),
            Value::Array(
                tags.into_iter()
                    .map(|(key, value)| json!({"Key": key, "Value": value}))
                    .collect(),
            ),
        );
    }
    props
}

/// The ARN of the secret `name` when an earlier attempt of this create made it: its versions
/// include the version this create's `token` names. `None` when the secret is someone else's.
async fn earlier_attempt(
    sm: &aws_sdk_secretsmanager::Client,
    what: &str,
    name: &str,
    token: Option<&str>,
) -> Result<Option<String>, ProviderError> {
    let Some(token) = token else {
        return Ok(None);
    };
    let Some(secret) = live_secret(sm, what, name).await? else {
        return Ok(None);
    };
    let ours = secret
        .version_ids_to_stages()
        .is_some_and(|versions| versions.contains_key(token));
    Ok(ours
        .then(|| secret.arn().map(ToString::to_string))
        .flatten())
}

/// Removes the secret's replicas in `regions`; already-gone ones are fine.
async fn remove_replicas(
    sm: &aws_sdk_secretsmanager::Client,
    what: &str,
    arn: &str,
    regions: Vec<String>,
) -> Result<(), ProviderError> {
    if regions.is_empty() {
        return Ok(());
    }
    let result = sm
        .remove_regions_from_replication()
        .secret_id(arn)
        .set_remove_replica_regions(Some(regions))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            with_secrets_kind(aws_error(
                &format!("{what}: RemoveRegionsFromReplication"),
                e,
            ))
        });
    match result {
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(()),
        other => other,
    }
}

#[async_trait]
impl ResourceProvider for Secret {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "Description",
                "KmsKeyId",
                "SecretString",
                "GenerateSecretString",
                "ReplicaRegions",
                "Tags",
            ])
            .create_only(&["Name"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let source = value_source(props, &what)?;
        let sm = client(ctx).await?;
        let value = match &source {
            Some(source) => Some(secret_value(&sm, &what, source).await?),
            None => None,
        };
        let token = request_token(&request.client_token);
        let tags = sdk_tags(&tag_map(props));
        let replica_regions = sdk_replicas(&replicas(props));
        let created = sm
            .create_secret()
            .name(&name)
            .set_client_request_token(token.clone())
            .set_description(setting(props, "Description"))
            .set_kms_key_id(setting(props, "KmsKeyId"))
            .set_secret_string(value)
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .set_add_replica_regions(Some(replica_regions).filter(|r| !r.is_empty()))
            .send()
            .await
            .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: CreateSecret {name}"), e)));
        let arn = match created {
            Ok(answer) => answer.arn.ok_or_else(|| {
                ProviderError::other(format!("{what}: CreateSecret {name} answered no ARN"))
            })?,
            // A retried create whose first attempt went through (its answer lost): the secret
            // carries this create's version, so it is this resource.
            Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => {
                match earlier_attempt(&sm, &what, &name, token.as_deref()).await? {
                    Some(arn) => {
                        tracing::info!(
                            "{what}: {arn} was made by an earlier attempt of this create; taking it"
                        );
                        arn
                    }
                    None => return Err(err),
                }
            }
            Err(err) if marked_for_deletion(&err) => {
                return Err(ProviderError::new(
                    ErrorKind::ALREADY_EXISTS,
                    format!(
                        "{}; a secret named {name} is scheduled for deletion: restore it \
                         (RestoreSecret) or delete it for good (DeleteSecret with \
                         ForceDeleteWithoutRecovery) first, or give this one another name",
                        err.message
                    ),
                )
                .with_aws_code("InvalidRequestException"));
            }
            Err(err) => return Err(err),
        };
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
        let (before, after, arn) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let change = change(before, after, &what)?;
        let sm = client(ctx).await?;
        if !change.is_empty() {
            let value = match &change.value {
                Some(source) => Some(secret_value(&sm, &what, source).await?),
                None => None,
            };
            sm.update_secret()
                .secret_id(arn)
                .set_description(change.description.clone())
                .set_kms_key_id(change.kms_key_id.clone())
                .set_secret_string(value)
                .send()
                .await
                .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: UpdateSecret"), e)))?;
        }
        let (set, removed) = tag_changes(before, after);
        if !removed.is_empty() {
            sm.untag_resource()
                .secret_id(arn)
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: UntagResource"), e)))?;
        }
        if !set.is_empty() {
            sm.tag_resource()
                .secret_id(arn)
                .set_tags(Some(sdk_tags(&set)))
                .send()
                .await
                .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: TagResource"), e)))?;
        }
        let (added, dropped) = replica_changes(before, after);
        remove_replicas(&sm, &what, arn, dropped).await?;
        if !added.is_empty() {
            sm.replicate_secret_to_regions()
                .secret_id(arn)
                .set_add_replica_regions(Some(sdk_replicas(&added)))
                .send()
                .await
                .map_err(|e| {
                    with_secrets_kind(aws_error(&format!("{what}: ReplicateSecretToRegions"), e))
                })?;
        }
        Ok(UpdateResult {
            attributes: id_attribute(arn),
            physical_id: arn.to_string(),
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
        let arn = request.physical_id.as_str();
        let sm = client(ctx).await?;
        let Some(secret) = live_secret(&sm, &what, arn).await? else {
            return Ok(DeleteResult::Deleted);
        };
        let regions = secret
            .replication_status()
            .iter()
            .filter_map(|r| r.region().map(ToString::to_string))
            .collect();
        remove_replicas(&sm, &what, arn, regions).await?;
        let result = sm
            .delete_secret()
            .secret_id(arn)
            .force_delete_without_recovery(true)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: DeleteSecret {arn}"), e)));
        match result {
            Err(err) if marked_for_deletion(&err) => Ok(DeleteResult::Deleted),
            other => deleted_unless_failed(other),
        }
    }
}

#[async_trait]
impl Readable for Secret {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sm = client(ctx).await?;
        Ok(live_secret(&sm, what, &request.physical_id)
            .await?
            .map(|secret| template_shape(&secret, &request.properties)))
    }

    /// `Id`, the ARN.
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
    use aws_sdk_secretsmanager::types::ReplicationStatusType;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_generated_password_is_set_under_its_key_in_the_template() {
        let spec = generate_spec(
            &json!({
                "SecretStringTemplate": "{\"username\":\"admin\",\"password\":\"old\"}",
                "GenerateStringKey": "password",
                "PasswordLength": "30",
                "ExcludeCharacters": "\"@/\\",
                "ExcludePunctuation": true,
                "IncludeSpace": "false",
            }),
            "T L",
        )
        .unwrap();
        assert_eq!(
            spec.options,
            PasswordOptions {
                exclude_characters: Some("\"@/\\".into()),
                exclude_punctuation: Some(true),
                include_space: Some(false),
                password_length: Some(30),
                ..PasswordOptions::default()
            }
        );
        let value = secret_string_from(&spec, "s3cr3t".into(), "T L").unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&value).unwrap(),
            json!({"username": "admin", "password": "s3cr3t"})
        );
        // The template's keys keep their order; a new key comes last.
        let spec = generate_spec(
            &json!({"SecretStringTemplate": "{\"b\":1,\"a\":2}", "GenerateStringKey": "pw"}),
            "T L",
        )
        .unwrap();
        assert_eq!(
            secret_string_from(&spec, "x".into(), "T L").unwrap(),
            "{\"b\":1,\"a\":2,\"pw\":\"x\"}"
        );
        // Without a template the password is the whole value.
        let bare = generate_spec(&json!({"PasswordLength": 16}), "T L").unwrap();
        assert_eq!(
            secret_string_from(&bare, "only".into(), "T L").unwrap(),
            "only"
        );
    }

    #[test]
    fn a_template_without_its_key_or_not_an_object_is_refused_without_the_password() {
        let lone = generate_spec(&json!({"SecretStringTemplate": "{}"}), "T L").unwrap_err();
        assert_eq!(lone.kind, ErrorKind::VALIDATION);
        assert!(
            lone.message.contains("GenerateStringKey"),
            "{}",
            lone.message
        );
        let key_only = generate_spec(&json!({"GenerateStringKey": "pw"}), "T L").unwrap_err();
        assert_eq!(key_only.kind, ErrorKind::VALIDATION);
        let list = generate_spec(
            &json!({"SecretStringTemplate": "[1]", "GenerateStringKey": "pw"}),
            "T L",
        )
        .unwrap_err();
        assert!(list.message.contains("JSON object"), "{}", list.message);
        let spec = Generate {
            template: Some("not json".into()),
            key: Some("pw".into()),
            ..Generate::default()
        };
        let err = secret_string_from(&spec, "hunter2-secret".into(), "T L").unwrap_err();
        assert!(!err.message.contains("hunter2-secret"), "{}", err.message);
    }

    #[test]
    fn the_value_comes_from_one_property_only() {
        let given = props(json!({"SecretString": "v"}));
        assert_eq!(
            value_source(&given, "T L").unwrap(),
            Some(Source::Given("v".into()))
        );
        let both = props(json!({"SecretString": "v", "GenerateSecretString": {}}));
        assert_eq!(
            value_source(&both, "T L").unwrap_err().kind,
            ErrorKind::VALIDATION
        );
        assert_eq!(value_source(&Map::new(), "T L").unwrap(), None);
        let generated = props(json!({"GenerateSecretString": {"ExcludeNumbers": true}}));
        let Some(Source::Generated(spec)) = value_source(&generated, "T L").unwrap() else {
            panic!("a generated value");
        };
        assert_eq!(spec.options.exclude_numbers, Some(true));
    }

    #[test]
    fn the_request_token_is_deterministic_and_of_the_length_aws_takes() {
        let token = request_token("deploy-1/Secret/create").unwrap();
        assert_eq!(request_token("deploy-1/Secret/create").unwrap(), token);
        assert!((32..=64).contains(&token.len()), "{token}");
        assert!(token.starts_with("cdkd-"), "{token}");
        let short = request_token("a").unwrap();
        assert!((32..=64).contains(&short.len()), "{short}");
        let long = request_token(&"x".repeat(500)).unwrap();
        assert!((32..=64).contains(&long.len()), "{long}");
        assert_ne!(short, token);
        assert_eq!(request_token(""), None);
    }

    #[test]
    fn an_update_resets_removed_settings_and_redraws_a_changed_generator() {
        let before = props(json!({
            "Description": "d",
            "KmsKeyId": "alias/mine",
            "GenerateSecretString": {"PasswordLength": 20},
            "Tags": [{"Key": "a", "Value": "1"}],
        }));
        let after = props(json!({"GenerateSecretString": {"PasswordLength": 40}}));
        let change = change(&before, &after, "T L").unwrap();
        assert_eq!(change.description.as_deref(), Some(""));
        assert_eq!(change.kms_key_id.as_deref(), Some(""));
        let Some(Source::Generated(spec)) = change.value else {
            panic!("a new password");
        };
        assert_eq!(spec.options.password_length, Some(40));
        // A tags-only change leaves the value and settings alone.
        let retagged = props(json!({
            "Description": "d",
            "KmsKeyId": "alias/mine",
            "GenerateSecretString": {"PasswordLength": 20},
            "Tags": [{"Key": "a", "Value": "2"}],
        }));
        assert!(super::change(&before, &retagged, "T L").unwrap().is_empty());
        // A changed string is the new value; a removed one leaves the secret's value alone.
        let set = props(json!({"SecretString": "new"}));
        let change = super::change(&props(json!({"SecretString": "old"})), &set, "T L").unwrap();
        assert_eq!(change.value, Some(Source::Given("new".into())));
        assert!(super::change(&set, &Map::new(), "T L").unwrap().is_empty());
        let (tags_set, tags_removed) = tag_changes(&before, &retagged);
        assert_eq!(
            tags_set.into_iter().collect::<Vec<_>>(),
            [("a".to_string(), "2".to_string())]
        );
        assert!(tags_removed.is_empty());
        assert_eq!(tag_changes(&before, &after).1, ["a"]);
    }

    #[test]
    fn replicas_are_added_removed_and_rekeyed() {
        let before = props(json!({"ReplicaRegions": [
            {"Region": "eu-west-1"},
            {"Region": "us-west-2", "KmsKeyId": "alias/a"},
            {"Region": "ap-south-1"},
        ]}));
        let after = props(json!({"ReplicaRegions": [
            {"Region": "eu-west-1"},
            {"Region": "us-west-2", "KmsKeyId": "alias/b"},
            {"Region": "ca-central-1"},
        ]}));
        let (added, removed) = replica_changes(&before, &after);
        assert_eq!(
            added,
            [
                ("us-west-2".to_string(), Some("alias/b".to_string())),
                ("ca-central-1".to_string(), None),
            ]
        );
        assert_eq!(removed, ["ap-south-1", "us-west-2"]);
        let (none_added, none_removed) = replica_changes(&after, &after);
        assert!(none_added.is_empty() && none_removed.is_empty());
    }

    #[test]
    fn the_live_secret_reads_back_without_its_value() {
        let secret = DescribeSecretOutput::builder()
            .arn("arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf")
            .name("db")
            .description("database login")
            .kms_key_id("arn:aws:kms:us-east-1:123456789012:alias/mine")
            .tags(Tag::builder().key("z").value("26").build())
            .tags(Tag::builder().key("a").value("1").build())
            .tags(
                Tag::builder()
                    .key("aws:cloudformation:stack-name")
                    .value("S")
                    .build(),
            )
            .replication_status(
                ReplicationStatusType::builder()
                    .region("us-west-2")
                    .kms_key_id(DEFAULT_KEY)
                    .build(),
            )
            .replication_status(
                ReplicationStatusType::builder()
                    .region("eu-west-1")
                    .kms_key_id("arn:aws:kms:eu-west-1:123456789012:key/1234")
                    .build(),
            )
            .build();
        let template = props(json!({
            "Name": "db",
            "KmsKeyId": "alias/mine",
            "SecretString": "{\"password\":\"never-read-back\"}",
            "GenerateSecretString": {"PasswordLength": 12},
            "ReplicaRegions": [{"Region": "eu-west-1", "KmsKeyId": "1234"}, {"Region": "us-west-2"}],
        }));
        let shape = template_shape(&secret, &template);
        assert_eq!(
            Value::Object(shape.clone()),
            json!({
                "Name": "db",
                "Description": "database login",
                "KmsKeyId": "alias/mine",
                "ReplicaRegions": [
                    {"Region": "eu-west-1", "KmsKeyId": "1234"},
                    {"Region": "us-west-2"},
                ],
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}],
            })
        );
        assert!(!shape.contains_key("SecretString"));
        assert!(!shape.contains_key("GenerateSecretString"));
        assert!(!Value::Object(shape).to_string().contains("never-read-back"));
        // Without a template, AWS's spellings; the default key is left out.
        let bare = template_shape(&secret, &Map::new());
        assert_eq!(
            bare["KmsKeyId"],
            "arn:aws:kms:us-east-1:123456789012:alias/mine"
        );
        assert_eq!(
            bare["ReplicaRegions"],
            json!([
                {"Region": "eu-west-1", "KmsKeyId": "arn:aws:kms:eu-west-1:123456789012:key/1234"},
                {"Region": "us-west-2"},
            ])
        );
        let empty = template_shape(
            &DescribeSecretOutput::builder().name("n").build(),
            &Map::new(),
        );
        assert_eq!(Value::Object(empty), json!({"Name": "n"}));
    }

    #[test]
    fn the_schema_handles_everything_but_type() {
        let schema = Secret.schema();
        assert_eq!(schema.create_only_properties, ["Name"]);
        assert!(schema
            .handled_properties
            .iter()
            .any(|p| p == "GenerateSecretString"));
        assert!(!schema.handled_properties.iter().any(|p| p == "Type"));
        assert!(schema.sensitive_attributes.is_empty());
    }
}
