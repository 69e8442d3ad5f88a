//! Dynamic references (`{{resolve:ssm:…}}`, `{{resolve:ssm-secure:…}}`,
//! `{{resolve:secretsmanager:…}}`): resolved when a provider is called, as CloudFormation
//! resolves them when it calls the service, and never written down resolved.
//!
//! The engine records the properties it passes in, which still hold the expressions; the
//! [`Resolving`] wrapper resolves them just before the call and puts the expressions back into
//! whatever comes out (attributes, read-back properties, error messages), so neither state nor
//! output ever holds the plaintext. Diff compares expressions: a rotated secret is not a
//! template change, as in CloudFormation.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use cdkd_provider_api::protocol::{
    CreateResult, DeleteResult, FinalSnapshotRequest, FinalSnapshotResult, UpdateResult,
};
use cdkd_provider_api::{ErrorKind, ProviderError};
use serde_json::{Map, Value};

use super::operations::{
    AccountIds, CreateCall, DeleteCall, Found, Observation, ReadCall, ResourceOperations,
    UpdateCall,
};
use crate::aws_env::AwsEnvironment;

const OPEN: &str = "{{resolve:";
const CLOSE: &str = "}}";

/// Plaintexts shorter than this are only replaced where they are a whole value: replacing a
/// two-letter secret inside every longer string would mangle unrelated attributes.
const MIN_EMBEDDED_SECRET: usize = 4;

/// One dynamic reference, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DynamicReference {
    /// `ssm:name[:version]` (plain) or `ssm-secure:name[:version]` (decrypted).
    Parameter {
        /// The parameter's name (or ARN).
        name: String,
        /// A version selector, when pinned.
        version: Option<String>,
        /// Whether the reference is `ssm-secure`.
        secure: bool,
    },
    /// `secretsmanager:secret-id[:SecretString[:json-key[:version-stage[:version-id]]]]`.
    Secret {
        /// The secret's name or ARN.
        secret_id: String,
        /// The top-level key of a JSON secret string, if one is picked.
        json_key: Option<String>,
        /// `AWSCURRENT`, `AWSPREVIOUS` or a custom stage.
        version_stage: Option<String>,
        /// A specific version.
        version_id: Option<String>,
    },
}

/// Why a dynamic reference cannot be resolved as written; the text follows the expression
/// in the error (`the dynamic reference {{resolve:…}} names no secret`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// No `service:` prefix.
    #[error("names no service (write ssm:, ssm-secure: or secretsmanager:)")]
    NoService,
    /// A service other than SSM and Secrets Manager.
    #[error("uses the unknown service '{0}' (write ssm:, ssm-secure: or secretsmanager:)")]
    UnknownService(String),
    /// `ssm:` with nothing after it.
    #[error("names no parameter")]
    NoParameter,
    /// `secretsmanager:` with no secret id.
    #[error("names no secret")]
    NoSecret,
    /// A secret part other than `SecretString` (the one named).
    #[error("asks for '{0}'; only SecretString can be referenced")]
    NotSecretString(String),
    /// Both a version stage and a version id.
    #[error("names both a version stage and a version id; name one")]
    StageAndVersion,
    /// `{{resolve:` without its closing braces.
    #[error("is not closed with }}}}")]
    NotClosed,
    /// A JSON key picked from a secret string that is not JSON.
    #[error("picks the JSON key '{0}' but the secret string is not JSON")]
    NotJson(String),
    /// A JSON key the secret does not have.
    #[error("picks the JSON key '{0}', which the secret does not have")]
    NoSuchKey(String),
}

impl DynamicReference {
    /// Parses the text between `{{resolve:` and `}}`.
    pub fn parse(body: &str) -> Result<DynamicReference, ReferenceError> {
        let (service, rest) = body.split_once(':').ok_or(ReferenceError::NoService)?;
        match service {
            "ssm" | "ssm-secure" => {
                if rest.is_empty() {
                    return Err(ReferenceError::NoParameter);
                }
                // A trailing all-digit segment is the version; names and ARNs never end so.
                let (name, version) = match rest.rsplit_once(':') {
                    Some((name, version))
                        if !version.is_empty() && version.chars().all(|c| c.is_ascii_digit()) =>
                    {
                        (name, Some(version.to_string()))
                    }
                    _ => (rest, None),
                };
                Ok(DynamicReference::Parameter {
                    name: name.to_string(),
                    version,
                    secure: service == "ssm-secure",
                })
            }
            "secretsmanager" => {
                let parts: Vec<&str> = rest.split(':').collect();
                // A full ARN (arn:partition:secretsmanager:region:account:secret:name) spans
                // seven segments.
                let id_len = if parts[0] == "arn" {
                    7.min(parts.len())
                } else {
                    1
                };
                let secret_id = parts[..id_len].join(":");
                if secret_id.is_empty() {
                    return Err(ReferenceError::NoSecret);
                }
                let field = |i: usize| {
                    parts
                        .get(id_len + i)
                        .filter(|s| !s.is_empty())
                        .map(|s| s.to_string())
                };
                if let Some(kind) = field(0) {
                    if kind != "SecretString" {
                        return Err(ReferenceError::NotSecretString(kind));
                    }
                }
                let reference = DynamicReference::Secret {
                    secret_id,
                    json_key: field(1),
                    version_stage: field(2),
                    version_id: field(3),
                };
                if let DynamicReference::Secret {
                    version_stage: Some(_),
                    version_id: Some(_),
                    ..
                } = &reference
                {
                    return Err(ReferenceError::StageAndVersion);
                }
                Ok(reference)
            }
            other => Err(ReferenceError::UnknownService(other.to_string())),
        }
    }
}

/// Whether `value` holds a dynamic reference anywhere.
pub fn contains_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains(OPEN),
        Value::Array(items) => items.iter().any(contains_reference),
        Value::Object(map) => map.values().any(contains_reference),
        _ => false,
    }
}

/// Every reference expression (`{{resolve:…}}`, braces included) in `text`, in order.
pub fn expressions(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let Some(len) = rest[start..].find(CLOSE) else {
            break;
        };
        let end = start + len + CLOSE.len();
        found.push(&rest[start..end]);
        rest = &rest[end..];
    }
    found
}

/// Why a [`SecretSource`] could not give a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The service refused the call (its error, in one line).
    #[error("{0}")]
    Call(String),
    /// The parameter was found without a value.
    #[error("the parameter has no value")]
    NoValue,
    /// The secret holds a binary value only.
    #[error("the secret has no SecretString (binary secrets cannot be referenced)")]
    NoSecretString,
}

/// Where the values behind references come from.
#[async_trait]
pub trait SecretSource: Send + Sync {
    /// An SSM parameter's value (`version` as a selector; `decrypt` for SecureString).
    async fn parameter(
        &self,
        name: &str,
        version: Option<&str>,
        decrypt: bool,
    ) -> Result<String, FetchError>;

    /// A Secrets Manager secret's string.
    async fn secret(
        &self,
        secret_id: &str,
        version_stage: Option<&str>,
        version_id: Option<&str>,
    ) -> Result<String, FetchError>;
}

/// SSM Parameter Store and Secrets Manager in one region.
pub struct AwsSecrets {
    ssm: aws_sdk_ssm::Client,
    secrets: aws_sdk_secretsmanager::Client,
}

impl AwsSecrets {
    /// Clients for `region`, with the host's credentials and endpoint.
    pub fn new(aws: &AwsEnvironment, region: &str) -> AwsSecrets {
        let ssm = aws_sdk_ssm::config::Builder::from(aws.sdk_config())
            .region(aws_sdk_ssm::config::Region::new(region.to_string()))
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-ssm"))
            .build();
        let secrets = aws_sdk_secretsmanager::config::Builder::from(aws.sdk_config())
            .region(aws_sdk_secretsmanager::config::Region::new(
                region.to_string(),
            ))
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-secretsmanager"))
            .build();
        AwsSecrets {
            ssm: aws_sdk_ssm::Client::from_conf(ssm),
            secrets: aws_sdk_secretsmanager::Client::from_conf(secrets),
        }
    }
}

#[async_trait]
impl SecretSource for AwsSecrets {
    async fn parameter(
        &self,
        name: &str,
        version: Option<&str>,
        decrypt: bool,
    ) -> Result<String, FetchError> {
        let selector = match version {
            Some(v) => format!("{name}:{v}"),
            None => name.to_string(),
        };
        let answer = self
            .ssm
            .get_parameter()
            .name(selector)
            .with_decryption(decrypt)
            .send()
            .await
            .map_err(|err| FetchError::Call(cdkd_aws_common::error_line(&err)))?;
        answer
            .parameter()
            .and_then(|p| p.value())
            .map(ToString::to_string)
            .ok_or(FetchError::NoValue)
    }

    async fn secret(
        &self,
        secret_id: &str,
        version_stage: Option<&str>,
        version_id: Option<&str>,
    ) -> Result<String, FetchError> {
        let answer = self
            .secrets
            .get_secret_value()
            .secret_id(secret_id)
            .set_version_stage(version_stage.map(str::to_string))
            .set_version_id(version_id.map(str::to_string))
            .send()
            .await
            .map_err(|err| FetchError::Call(cdkd_aws_common::error_line(&err)))?;
        answer
            .secret_string()
            .map(ToString::to_string)
            .ok_or(FetchError::NoSecretString)
    }
}

/// The references of one run: each expression fetched once, whichever resources use it.
pub struct DynamicReferences {
    source: Box<dyn SecretSource>,
    cache: Mutex<HashMap<String, String>>,
}

/// Properties with their references resolved, and how to put the expressions back.
#[derive(Debug, Default)]
pub struct Resolution {
    /// The properties to send.
    pub properties: Map<String, Value>,
    /// Each string that held a reference: (as sent, as written in the template).
    strings: Vec<(String, String)>,
    /// Each plaintext and the expression that stands for it, longest plaintext first.
    secrets: Vec<(String, String)>,
}

impl Resolution {
    /// Whether anything was resolved.
    pub fn is_empty(&self) -> bool {
        self.strings.is_empty() && self.secrets.is_empty()
    }

    /// Whether `bytes` (a stored JSON document) hold any resolved value.
    pub fn found_in(&self, bytes: &[u8]) -> bool {
        let text = String::from_utf8_lossy(bytes);
        self.secrets.iter().any(|(plain, _)| {
            // As stored: JSON-escaped; short values only as whole strings.
            let escaped = serde_json::to_string(plain).unwrap_or_default();
            if plain.len() >= MIN_EMBEDDED_SECRET {
                text.contains(&escaped[1..escaped.len() - 1])
            } else {
                text.contains(&escaped)
            }
        })
    }

    /// Puts the expressions back wherever a resolved value shows in `value`.
    pub fn scrub(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Some(clean) = self.scrub_text(s) {
                    *s = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub(v)),
            Value::Object(map) => self.scrub_map(map),
            _ => {}
        }
    }

    /// [`Resolution::scrub`] over every value of a map.
    pub fn scrub_map(&self, map: &mut Map<String, Value>) {
        map.values_mut().for_each(|v| self.scrub(v));
    }

    /// `text` with the expressions back, or `None` when it holds no resolved value.
    pub fn scrub_text(&self, text: &str) -> Option<String> {
        if let Some((_, original)) = self.strings.iter().find(|(sent, _)| sent == text) {
            return Some(original.clone());
        }
        if let Some((_, expression)) = self.secrets.iter().find(|(plain, _)| plain == text) {
            return Some(expression.clone());
        }
        let mut clean = text.to_string();
        for (plain, expression) in &self.secrets {
            if plain.len() >= MIN_EMBEDDED_SECRET && clean.contains(plain.as_str()) {
                clean = clean.replace(plain.as_str(), expression);
            }
        }
        (clean != text).then_some(clean)
    }

    fn scrub_error(&self, mut err: ProviderError) -> ProviderError {
        if let Some(clean) = self.scrub_text(err.message.as_str()) {
            err.message = clean.into();
        }
        err
    }
}

impl DynamicReferences {
    /// References answered by `source`.
    pub fn new(source: Box<dyn SecretSource>) -> DynamicReferences {
        DynamicReferences {
            source,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// `properties` with every reference resolved. The error names the resource and the
    /// reference, never a value.
    pub async fn resolve(
        &self,
        logical_id: &str,
        properties: &Map<String, Value>,
    ) -> Result<Resolution, ProviderError> {
        let mut resolution = Resolution {
            properties: properties.clone(),
            ..Resolution::default()
        };
        if !properties.values().any(contains_reference) {
            return Ok(resolution);
        }
        let mut values = std::mem::take(&mut resolution.properties);
        for value in values.values_mut() {
            self.resolve_value(logical_id, value, &mut resolution)
                .await?;
        }
        resolution.properties = values;
        resolution
            .secrets
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        resolution.secrets.dedup();
        Ok(resolution)
    }

    async fn resolve_value(
        &self,
        logical_id: &str,
        value: &mut Value,
        resolution: &mut Resolution,
    ) -> Result<(), ProviderError> {
        match value {
            Value::String(text) if text.contains(OPEN) => {
                let original = text.clone();
                let mut sent = String::new();
                let mut rest = original.as_str();
                while let Some(start) = rest.find(OPEN) {
                    let Some(len) = rest[start..].find(CLOSE) else {
                        return Err(invalid(
                            logical_id,
                            &rest[start..],
                            &ReferenceError::NotClosed,
                        ));
                    };
                    let expression = &rest[start..start + len + CLOSE.len()];
                    let plain = self.value_of(logical_id, expression).await?;
                    sent.push_str(&rest[..start]);
                    sent.push_str(&plain);
                    resolution.secrets.push((plain, expression.to_string()));
                    rest = &rest[start + len + CLOSE.len()..];
                }
                sent.push_str(rest);
                resolution.strings.push((sent.clone(), original));
                *text = sent;
            }
            Value::Array(items) => {
                for item in items {
                    Box::pin(self.resolve_value(logical_id, item, resolution)).await?;
                }
            }
            Value::Object(map) => {
                for item in map.values_mut() {
                    Box::pin(self.resolve_value(logical_id, item, resolution)).await?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn value_of(&self, logical_id: &str, expression: &str) -> Result<String, ProviderError> {
        if let Some(value) = self.cache().get(expression) {
            return Ok(value.clone());
        }
        let body = &expression[OPEN.len()..expression.len() - CLOSE.len()];
        let reference =
            DynamicReference::parse(body).map_err(|why| invalid(logical_id, expression, &why))?;
        let value = match &reference {
            DynamicReference::Parameter {
                name,
                version,
                secure,
            } => self
                .source
                .parameter(name, version.as_deref(), *secure)
                .await
                .map_err(|why| {
                    unreadable(
                        logical_id,
                        expression,
                        &format!("cannot read the SSM parameter: {why}"),
                    )
                })?,
            DynamicReference::Secret {
                secret_id,
                json_key,
                version_stage,
                version_id,
            } => {
                let text = self
                    .source
                    .secret(secret_id, version_stage.as_deref(), version_id.as_deref())
                    .await
                    .map_err(|why| {
                        unreadable(
                            logical_id,
                            expression,
                            &format!("cannot read the secret: {why}"),
                        )
                    })?;
                match json_key {
                    None => text,
                    Some(key) => json_field(&text, key)
                        .map_err(|why| invalid(logical_id, expression, &why))?,
                }
            }
        };
        self.cache().insert(expression.to_string(), value.clone());
        Ok(value)
    }

    /// What each of `expressions` resolves to now, and for a secret that pins no version
    /// also its previous value (`AWSPREVIOUS`), so a record written before a rotation is
    /// recognised. References that cannot be read are skipped: their values are unknown.
    pub async fn known_values<'e>(
        &self,
        expressions: impl IntoIterator<Item = &'e str>,
    ) -> Resolution {
        let mut resolution = Resolution::default();
        for expression in expressions {
            let body = &expression[OPEN.len()..expression.len() - CLOSE.len()];
            let mut asked = vec![expression.to_string()];
            if let Ok(DynamicReference::Secret {
                secret_id,
                json_key,
                version_stage: None,
                version_id: None,
            }) = DynamicReference::parse(body)
            {
                asked.push(format!(
                    "{OPEN}secretsmanager:{secret_id}:SecretString:{}:AWSPREVIOUS:{CLOSE}",
                    json_key.unwrap_or_default()
                ));
            }
            for form in asked {
                if let Ok(plain) = self.value_of("scrub", &form).await {
                    resolution.secrets.push((plain, expression.to_string()));
                }
            }
        }
        resolution
            .secrets
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        resolution.secrets.dedup();
        resolution
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The top-level `key` of a JSON secret string, as text (CloudFormation's rule: strings as
/// they are, other JSON values in their JSON form).
fn json_field(text: &str, key: &str) -> Result<String, ReferenceError> {
    let document: Value =
        serde_json::from_str(text).map_err(|_| ReferenceError::NotJson(key.to_string()))?;
    match document.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Ok(other.to_string()),
        None => Err(ReferenceError::NoSuchKey(key.to_string())),
    }
}

fn invalid(logical_id: &str, expression: &str, why: &ReferenceError) -> ProviderError {
    ProviderError::new(
        ErrorKind::VALIDATION,
        format!("{logical_id}: the dynamic reference {expression} {why}"),
    )
}

fn unreadable(logical_id: &str, expression: &str, why: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::VALIDATION,
        format!("{logical_id}: the dynamic reference {expression}: {why}"),
    )
}

/// A provider whose calls get their references resolved and whose answers get them back.
pub struct Resolving<O> {
    inner: O,
    references: std::sync::Arc<DynamicReferences>,
}

impl<O> Resolving<O> {
    /// Wraps `inner`.
    pub fn new(inner: O, references: std::sync::Arc<DynamicReferences>) -> Resolving<O> {
        Resolving { inner, references }
    }
}

#[async_trait]
impl<O: ResourceOperations> ResourceOperations for Resolving<O> {
    fn label(&self) -> String {
        self.inner.label()
    }

    async fn create(&self, call: CreateCall<'_>) -> Result<CreateResult, ProviderError> {
        let resolved = self
            .references
            .resolve(call.logical_id, call.properties)
            .await?;
        let sent = CreateCall {
            properties: &resolved.properties,
            ..call
        };
        let mut result = self
            .inner
            .create(sent)
            .await
            .map_err(|e| resolved.scrub_error(e))?;
        resolved.scrub_map(&mut result.attributes);
        Ok(result)
    }

    async fn adopt(
        &self,
        resource_type: &str,
        logical_id: &str,
        stack: &str,
        found: Found,
        desired: &Map<String, Value>,
        needed: &[String],
    ) -> Result<CreateResult, ProviderError> {
        let resolved = self.references.resolve(logical_id, desired).await?;
        let mut result = self
            .inner
            .adopt(
                resource_type,
                logical_id,
                stack,
                found,
                &resolved.properties,
                needed,
            )
            .await
            .map_err(|e| resolved.scrub_error(e))?;
        resolved.scrub_map(&mut result.attributes);
        Ok(result)
    }

    async fn find_named(
        &self,
        resource_type: &str,
        logical_id: &str,
        name: &str,
        ids: &AccountIds,
    ) -> Result<Option<Found>, ProviderError> {
        self.inner
            .find_named(resource_type, logical_id, name, ids)
            .await
    }

    fn creates_idempotently(&self, resource_type: &str) -> bool {
        self.inner.creates_idempotently(resource_type)
    }

    fn find_scope(&self, resource_type: &str) -> Vec<String> {
        self.inner.find_scope(resource_type)
    }

    async fn find_created(
        &self,
        resource_type: &str,
        logical_id: &str,
        token: &str,
        stack: &str,
        scope: &Map<String, Value>,
    ) -> Result<Option<Found>, ProviderError> {
        self.inner
            .find_created(resource_type, logical_id, token, stack, scope)
            .await
    }

    async fn update(&self, call: UpdateCall<'_>) -> Result<UpdateResult, ProviderError> {
        let before = self
            .references
            .resolve(call.logical_id, call.previous)
            .await?;
        let after = self
            .references
            .resolve(call.logical_id, call.desired)
            .await?;
        let sent = UpdateCall {
            previous: &before.properties,
            desired: &after.properties,
            ..call
        };
        let mut result = self
            .inner
            .update(sent)
            .await
            .map_err(|e| before.scrub_error(after.scrub_error(e)))?;
        after.scrub_map(&mut result.attributes);
        before.scrub_map(&mut result.attributes);
        Ok(result)
    }

    async fn delete(&self, call: DeleteCall<'_>) -> Result<DeleteResult, ProviderError> {
        let DeleteCall {
            logical_id,
            properties,
            ..
        } = call;
        // A reference that no longer resolves (the secret was deleted first) must not block
        // the delete: the provider gets the expressions instead.
        let resolved = match self.references.resolve(logical_id, properties).await {
            Ok(resolved) => resolved,
            Err(_) => Resolution {
                properties: properties.clone(),
                ..Resolution::default()
            },
        };
        let sent = DeleteCall {
            properties: &resolved.properties,
            ..call
        };
        self.inner
            .delete(sent)
            .await
            .map_err(|e| resolved.scrub_error(e))
    }

    async fn read_current_state(&self, call: ReadCall<'_>) -> Result<Observation, ProviderError> {
        let resolved = self
            .references
            .resolve(call.logical_id, call.properties)
            .await?;
        let sent = ReadCall {
            properties: &resolved.properties,
            ..call
        };
        let observed = self
            .inner
            .read_current_state(sent)
            .await
            .map_err(|e| resolved.scrub_error(e))?;
        Ok(match observed {
            Observation::Live(mut live) => {
                resolved.scrub_map(&mut live);
                Observation::Live(live)
            }
            other => other,
        })
    }

    async fn import(&self, call: ReadCall<'_>) -> Result<CreateResult, ProviderError> {
        let resolved = self
            .references
            .resolve(call.logical_id, call.properties)
            .await?;
        let sent = ReadCall {
            properties: &resolved.properties,
            ..call
        };
        let mut result = self
            .inner
            .import(sent)
            .await
            .map_err(|e| resolved.scrub_error(e))?;
        resolved.scrub_map(&mut result.attributes);
        Ok(result)
    }

    async fn final_snapshot(
        &self,
        resource_type: &str,
        request: &FinalSnapshotRequest,
    ) -> Result<FinalSnapshotResult, ProviderError> {
        // The recorded properties keep their expressions: a snapshot needs only the id.
        self.inner.final_snapshot(resource_type, request).await
    }
}

#[cfg(test)]
mod tests;
