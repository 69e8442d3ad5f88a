//! `AWS::KMS::Key`: physical id (and `Ref`) is the key id, a UUID; attributes `Arn` and
//! `KeyId`. The key has no name, so a create tags it with [`CREATE_TOKEN_TAG`] (cdkd's own:
//! reads and drift leave it out, updates never remove it), by which `find_created` finds it
//! again after a crash. `KeySpec`, `KeyUsage`, `Origin` and `MultiRegion` cannot change on an
//! existing key: an update changing one is refused, as CloudFormation refuses it (a replacement would schedule the old key, and
//! so whatever it encrypted, for deletion). A delete schedules the key's deletion after
//! `PendingWindowInDays`.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_kms::types::{KeyMetadata, KeySpec, KeyState, KeyUsageType, OriginType, Tag};
use cdkd_aws_common::{
    aws_error, does_not_exist, flag, int, tag_pairs, text, Readable, TypeSchema,
};
use cdkd_aws_common::{parsed, policy_principals, while_iam_propagates};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    FindCreatedResult, ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
    CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, found, has_code, retrying, with_kms_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::KMS::Key";

/// The only key policy name KMS has.
const POLICY_NAME: &str = "default";

/// CloudFormation's waiting period before a removed key is deleted, when the template names none.
const DEFAULT_PENDING_WINDOW: i32 = 30;

/// KMS's rotation period when rotation is on and none is given.
const DEFAULT_ROTATION_PERIOD: i32 = 365;

/// How long a new key is waited for to be visible to the calls (and dependents) after it.
const VISIBILITY: Duration = Duration::from_secs(600);

/// Properties fixed at creation, with the value KMS gives a key that names none; CloudFormation
/// fails an update changing one rather than replacing the key.
const IMMUTABLE: &[(&str, &str)] = &[
    ("KeySpec", "SYMMETRIC_DEFAULT"),
    ("KeyUsage", "ENCRYPT_DECRYPT"),
    ("Origin", "AWS_KMS"),
    ("MultiRegion", "false"),
];

/// The `AWS::KMS::Key` provider.
#[derive(Default)]
pub struct Key;

/// One create's calls: CreateKey's input, then the rotation and the enabled state it cannot set.
#[derive(Debug, Clone, PartialEq, Default)]
struct KeyCreate {
    /// `Description`.
    description: Option<String>,
    /// `KeyPolicy` as JSON text; left out, KMS applies its default key policy.
    policy: Option<String>,
    /// `KeySpec`.
    key_spec: Option<String>,
    /// `KeyUsage`.
    key_usage: Option<String>,
    /// `Origin`.
    origin: Option<String>,
    /// `MultiRegion`.
    multi_region: Option<bool>,
    /// `BypassPolicyLockoutSafetyCheck`.
    bypass_lockout_check: Option<bool>,
    /// The template's tags, then cdkd's create-token tag.
    tags: Vec<(String, String)>,
    /// `EnableKeyRotation`, with `RotationPeriodInDays` when given.
    rotation: Option<Option<i32>>,
    /// `Enabled` (default true): false disables the key after creating it.
    enabled: bool,
}

impl KeyCreate {
    /// The create of the template's `properties`, tagged with the create's `token`.
    fn from_template(properties: &Map<String, Value>, token: &str) -> KeyCreate {
        let mut tags = tag_pairs(properties.get("Tags")).unwrap_or_default();
        tags.retain(|(key, _)| key != CREATE_TOKEN_TAG);
        if !token.is_empty() {
            tags.push((CREATE_TOKEN_TAG.to_string(), token.to_string()));
        }
        KeyCreate {
            description: text(properties.get("Description")),
            policy: policy_text(properties),
            key_spec: text(properties.get("KeySpec")),
            key_usage: text(properties.get("KeyUsage")),
            origin: text(properties.get("Origin")),
            multi_region: flag(properties.get("MultiRegion")),
            bypass_lockout_check: flag(properties.get("BypassPolicyLockoutSafetyCheck")),
            tags,
            rotation: flag(properties.get("EnableKeyRotation"))
                .unwrap_or(false)
                .then(|| int(properties.get("RotationPeriodInDays"))),
            enabled: flag(properties.get("Enabled")).unwrap_or(true),
        }
    }
}

/// The template's `KeyPolicy` as KMS takes it: JSON text (a template may write the object or
/// the string).
fn policy_text(properties: &Map<String, Value>) -> Option<String> {
    match properties.get("KeyPolicy")? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The template's `KeyPolicy` as a JSON value, so an object and its text compare alike.
fn policy_value(properties: &Map<String, Value>) -> Option<Value> {
    policy_text(properties).map(|text| parsed(&text))
}

/// The policy KMS gives a key created without one (full access for the account, through IAM),
/// which CloudFormation puts back when the template drops its `KeyPolicy`. Partition and
/// account come from the key's ARN.
fn default_policy(key_arn: &str) -> String {
    let parts: Vec<&str> = key_arn.split(':').collect();
    let partition = parts.get(1).copied().unwrap_or("aws");
    let account = parts.get(4).copied().unwrap_or_default();
    json!({
        "Version": "2012-10-17",
        "Id": "key-default",
        "Statement": [{
            "Sid": "Enable IAM User Permissions",
            "Effect": "Allow",
            "Principal": {"AWS": format!("arn:{partition}:iam::{account}:root")},
            "Action": "kms:*",
            "Resource": "*",
        }],
    })
    .to_string()
}

/// The waiting period of a delete: the template's `PendingWindowInDays`, else CloudFormation's 30.
fn pending_window(properties: &Map<String, Value>) -> i32 {
    int(properties.get("PendingWindowInDays")).unwrap_or(DEFAULT_PENDING_WINDOW)
}

/// The value of an immutable property in `properties`, KMS's default when absent.
fn immutable_value(properties: &Map<String, Value>, name: &str, default: &str) -> String {
    text(properties.get(name)).unwrap_or_else(|| default.to_string())
}

/// Refuses an update changing a property fixed at creation.
fn refuse_immutable_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    what: &str,
) -> Result<(), ProviderError> {
    for (name, default) in IMMUTABLE {
        let (old, new) = (
            immutable_value(before, name, default),
            immutable_value(after, name, default),
        );
        if old != new {
            return Err(ProviderError::validation(format!(
                "{what}: {name} cannot change on an existing key ({old} -> {new}); as in \
                 CloudFormation, give the new key its own logical id instead"
            )));
        }
    }
    Ok(())
}

/// What an update's rotation setting asks of KMS.
#[derive(Debug, Clone, PartialEq)]
enum Rotation {
    /// EnableKeyRotation with this period.
    Enable(i32),
    /// DisableKeyRotation.
    Disable,
}

/// One update's calls, in the order they are made.
#[derive(Debug, Clone, PartialEq, Default)]
struct KeyUpdate {
    /// EnableKey first: the other calls may need an enabled key.
    enable: bool,
    /// UpdateKeyDescription (`""` clears it).
    description: Option<String>,
    /// PutKeyPolicy; `Some(None)` puts the default policy back.
    policy: Option<Option<String>>,
    /// Enable or DisableKeyRotation.
    rotation: Option<Rotation>,
    /// TagResource of new or changed tags.
    tags_set: Vec<(String, String)>,
    /// UntagResource of removed keys.
    tags_removed: Vec<String>,
    /// DisableKey last, once everything else is applied.
    disable: bool,
}

impl KeyUpdate {
    /// The calls taking the key from `before` to `after`; a removed property goes back to
    /// KMS's default, as CloudFormation resets it.
    fn between(before: &Map<String, Value>, after: &Map<String, Value>) -> KeyUpdate {
        let enabled = |p: &Map<String, Value>| flag(p.get("Enabled")).unwrap_or(true);
        let rotates = |p: &Map<String, Value>| flag(p.get("EnableKeyRotation")).unwrap_or(false);
        let period = |p: &Map<String, Value>| int(p.get("RotationPeriodInDays"));
        let description = |p: &Map<String, Value>| text(p.get("Description"));
        let rotation = match (rotates(before), rotates(after)) {
            (was, true) if !was || period(before) != period(after) => Some(Rotation::Enable(
                period(after).unwrap_or(DEFAULT_ROTATION_PERIOD),
            )),
            (true, false) => Some(Rotation::Disable),
            _ => None,
        };
        let (tags_set, tags_removed) = tag_changes(before, after);
        KeyUpdate {
            enable: enabled(after) && !enabled(before),
            description: (description(before) != description(after))
                .then(|| description(after).unwrap_or_default()),
            policy: (policy_value(before) != policy_value(after)).then(|| policy_text(after)),
            rotation,
            tags_set,
            tags_removed,
            disable: !enabled(after) && enabled(before),
        }
    }
}

/// The template's tags by key, cdkd's own left out.
fn tag_map(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    cdkd_aws_common::tag_map_without_token(properties)
}

/// The tags to set (new or changed values) and the keys to remove, from `before` to `after`.
fn tag_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> (Vec<(String, String)>, Vec<String>) {
    cdkd_aws_common::tag_changes(&tag_map(before), &tag_map(after))
}

/// Tags as KMS takes them.
fn sdk_tags(tags: &[(String, String)], what: &str) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(key, value)| {
            Tag::builder()
                .tag_key(key)
                .tag_value(value)
                .build()
                .map_err(|e| ProviderError::validation(format!("{what}: tag {key}: {e}")))
        })
        .collect()
}

/// Whether a live tag belongs in the template shape: AWS's and cdkd's own do not.
fn template_tag(key: &str) -> bool {
    key != CREATE_TOKEN_TAG && !key.starts_with("aws:")
}

/// Whether `err` is KMS refusing a policy because a principal in it is unknown, which for a
/// role created just before means IAM has not propagated it yet.
fn principal_not_yet_known(err: &ProviderError) -> bool {
    has_code(err, "MalformedPolicyDocumentException")
        && err.message.to_lowercase().contains("principal")
}

/// The live key's properties in template shape.
fn template_shape(
    metadata: &KeyMetadata,
    policy: Option<&str>,
    rotation: Option<(bool, Option<i32>)>,
    tags: &[Tag],
) -> Map<String, Value> {
    let mut props = Map::new();
    if let Some(description) = metadata.description().filter(|d| !d.is_empty()) {
        props.insert("Description".into(), json!(description));
    }
    props.insert("Enabled".into(), json!(metadata.enabled()));
    if let Some(policy) = policy {
        props.insert("KeyPolicy".into(), parsed(policy));
    }
    let (rotates, period) = rotation.unwrap_or((false, None));
    props.insert("EnableKeyRotation".into(), json!(rotates));
    if let Some(period) = period.filter(|_| rotates) {
        props.insert("RotationPeriodInDays".into(), json!(period));
    }
    if let Some(spec) = metadata.key_spec() {
        props.insert("KeySpec".into(), json!(spec.as_str()));
    }
    if let Some(usage) = metadata.key_usage() {
        props.insert("KeyUsage".into(), json!(usage.as_str()));
    }
    if let Some(origin) = metadata.origin() {
        props.insert("Origin".into(), json!(origin.as_str()));
    }
    props.insert(
        "MultiRegion".into(),
        json!(metadata.multi_region().unwrap_or(false)),
    );
    let tags: BTreeMap<&str, &str> = tags
        .iter()
        .filter(|t| template_tag(t.tag_key()))
        .map(|t| (t.tag_key(), t.tag_value()))
        .collect();
    if !tags.is_empty() {
        let tags: Vec<Value> = tags
            .into_iter()
            .map(|(key, value)| json!({"Key": key, "Value": value}))
            .collect();
        props.insert("Tags".into(), Value::Array(tags));
    }
    props
}

/// The attributes of a key: `Arn` and `KeyId`.
fn key_attributes(metadata: &KeyMetadata) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let Some(arn) = metadata.arn() {
        attributes.insert("Arn".into(), json!(arn));
    }
    attributes.insert("KeyId".into(), json!(metadata.key_id()));
    attributes
}

/// Whether a key in `state` is on its way out: it reads as gone and needs no second delete.
fn deleting(state: Option<&KeyState>) -> bool {
    matches!(
        state,
        Some(KeyState::PendingDeletion | KeyState::PendingReplicaDeletion)
    )
}

/// The live key `key_id`'s metadata; `None` when there is none.
async fn describe(
    kms: &aws_sdk_kms::Client,
    what: &str,
    key_id: &str,
) -> Result<Option<KeyMetadata>, ProviderError> {
    let answer = kms
        .describe_key()
        .key_id(key_id)
        .send()
        .await
        .map_err(|e| with_kms_kind(aws_error(&format!("{what}: DescribeKey {key_id}"), e)));
    Ok(found(answer)?.and_then(|a| a.key_metadata))
}

/// The live key's metadata, refused when it is gone.
async fn existing(
    kms: &aws_sdk_kms::Client,
    what: &str,
    key_id: &str,
) -> Result<KeyMetadata, ProviderError> {
    describe(kms, what, key_id)
        .await?
        .ok_or_else(|| does_not_exist(what, key_id, "KMS"))
}

/// Sets the rotation of `key_id` as `rotation` asks.
async fn set_rotation(
    kms: &aws_sdk_kms::Client,
    what: &str,
    key_id: &str,
    rotation: &Rotation,
) -> Result<(), ProviderError> {
    match rotation {
        Rotation::Enable(period) => kms
            .enable_key_rotation()
            .key_id(key_id)
            .rotation_period_in_days(*period)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| with_kms_kind(aws_error(&format!("{what}: EnableKeyRotation"), e))),
        Rotation::Disable => kms
            .disable_key_rotation()
            .key_id(key_id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| with_kms_kind(aws_error(&format!("{what}: DisableKeyRotation"), e))),
    }
}

/// Disables `key_id`.
async fn disable_key(
    kms: &aws_sdk_kms::Client,
    what: &str,
    key_id: &str,
) -> Result<(), ProviderError> {
    kms.disable_key()
        .key_id(key_id)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| with_kms_kind(aws_error(&format!("{what}: DisableKey"), e)))
}

/// The calls after CreateKey: wait until the key is visible (KMS is eventually consistent, and
/// a dependent's first call would otherwise find no key), then rotation and disabling.
async fn finish_create(
    kms: &aws_sdk_kms::Client,
    what: &str,
    key_id: &str,
    plan: &KeyCreate,
) -> Result<(), ProviderError> {
    retrying(
        VISIBILITY,
        |e| e.kind == ErrorKind::NOT_FOUND,
        || existing(kms, what, key_id),
    )
    .await?;
    if let Some(period) = plan.rotation {
        let rotation = Rotation::Enable(period.unwrap_or(DEFAULT_ROTATION_PERIOD));
        set_rotation(kms, what, key_id, &rotation).await?;
    }
    if !plan.enabled {
        disable_key(kms, what, key_id).await?;
    }
    Ok(())
}

/// Schedules the deletion of `key_id` after `window` days; a key gone or already scheduled
/// counts as deleted.
async fn schedule_deletion(
    kms: &aws_sdk_kms::Client,
    what: &str,
    key_id: &str,
    window: i32,
) -> Result<(), ProviderError> {
    let answer = kms
        .schedule_key_deletion()
        .key_id(key_id)
        .pending_window_in_days(window)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            with_kms_kind(aws_error(
                &format!("{what}: ScheduleKeyDeletion {key_id}"),
                e,
            ))
        });
    match answer {
        Err(err) if has_code(&err, "KMSInvalidStateException") => {
            // The state that refuses a second schedule is pending deletion; any other is an error.
            match describe(kms, what, key_id).await? {
                Some(metadata) if !deleting(metadata.key_state()) => Err(err),
                _ => Ok(()),
            }
        }
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok(()),
        other => other,
    }
}

/// Lists every tag of `key_id`.
async fn list_tags(
    kms: &aws_sdk_kms::Client,
    what: &str,
    key_id: &str,
) -> Result<Vec<Tag>, ProviderError> {
    let mut tags = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = kms
            .list_resource_tags()
            .key_id(key_id)
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| with_kms_kind(aws_error(&format!("{what}: ListResourceTags"), e)))?;
        tags.extend_from_slice(page.tags());
        match page.next_marker() {
            Some(next) if page.truncated() => marker = Some(next.to_string()),
            _ => return Ok(tags),
        }
    }
}

/// Whether a key's tags carry the create `token`.
fn carries_token(tags: &[Tag], token: &str) -> bool {
    tags.iter()
        .any(|t| t.tag_key() == CREATE_TOKEN_TAG && t.tag_value() == token)
}

/// The one key a token names, none, or an error naming every one found.
fn one_or_none(
    logical_id: &str,
    token: &str,
    mut ids: Vec<String>,
) -> Result<Option<String>, ProviderError> {
    ids.sort();
    ids.dedup();
    match ids.len() {
        0 => Ok(None),
        1 => Ok(ids.pop()),
        _ => Err(ProviderError::new(
            ErrorKind::CONFLICT,
            format!(
                "{TYPE} {logical_id}: {} keys carry the create token {CREATE_TOKEN_TAG}={token}: {}; cdkd cannot tell which one its create made (schedule the extra ones for deletion, or import the right one)",
                ids.len(),
                ids.join(", ")
            ),
        )),
    }
}

/// Every key id of the account and region (ListKeys, all pages).
async fn list_keys(kms: &aws_sdk_kms::Client, what: &str) -> Result<Vec<String>, ProviderError> {
    let mut keys = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = kms
            .list_keys()
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| with_kms_kind(aws_error(&format!("{what}: ListKeys"), e)))?;
        keys.extend(
            page.keys()
                .iter()
                .filter_map(|k| k.key_id().map(ToString::to_string)),
        );
        match page.next_marker() {
            Some(next) if page.truncated() => marker = Some(next.to_string()),
            _ => return Ok(keys),
        }
    }
}

/// The keys not pending deletion whose tags carry `token`. KMS has no search by tag: every
/// key's tags are read. A key whose tags cannot be read (another owner's policy, gone since the
/// listing) cannot be one this plugin's create tagged, and is passed over.
async fn keys_with_token(
    kms: &aws_sdk_kms::Client,
    what: &str,
    token: &str,
) -> Result<Vec<String>, ProviderError> {
    let mut found = Vec::new();
    for key_id in list_keys(kms, what).await? {
        let tags = match list_tags(kms, what, &key_id).await {
            Ok(tags) => tags,
            Err(err) if matches!(err.kind, ErrorKind::NOT_FOUND | ErrorKind::ACCESS_DENIED) => {
                tracing::debug!(key_id, error = %err.message, "{what}: passing over a key whose tags cannot be read");
                continue;
            }
            Err(err) => return Err(err),
        };
        if !carries_token(&tags, token) {
            continue;
        }
        match describe(kms, what, &key_id).await? {
            Some(metadata) if !deleting(metadata.key_state()) => found.push(key_id),
            _ => {}
        }
    }
    Ok(found)
}

/// The key's rotation and its period; `None` for a key that has no rotation (asymmetric, HMAC,
/// custom key store, awaiting key material).
async fn rotation_status(
    kms: &aws_sdk_kms::Client,
    what: &str,
    metadata: &KeyMetadata,
) -> Result<Option<(bool, Option<i32>)>, ProviderError> {
    if metadata.key_spec() != Some(&KeySpec::SymmetricDefault) {
        return Ok(None);
    }
    let answer = kms
        .get_key_rotation_status()
        .key_id(metadata.key_id())
        .send()
        .await
        .map_err(|e| with_kms_kind(aws_error(&format!("{what}: GetKeyRotationStatus"), e)));
    match answer {
        Ok(status) => Ok(Some((
            status.key_rotation_enabled(),
            status.rotation_period_in_days(),
        ))),
        Err(err) if matches!(err.kind, ErrorKind::VALIDATION | ErrorKind::CONFLICT) => Ok(None),
        Err(err) => Err(err),
    }
}

#[async_trait]
impl ResourceProvider for Key {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Description",
                "Enabled",
                "EnableKeyRotation",
                "RotationPeriodInDays",
                "KeyPolicy",
                "KeySpec",
                "KeyUsage",
                "Origin",
                "MultiRegion",
                "PendingWindowInDays",
                "BypassPolicyLockoutSafetyCheck",
                "Tags",
            ])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    /// `find_created`: the key a create with the request's token made.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if name != operation::FIND_CREATED {
            return Err(ProviderError::unsupported(format!(
                "{TYPE} does not implement the '{name}' operation"
            )));
        }
        let request: FindCreatedRequest = serde_json::from_value(request)
            .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
        let what = format!("{TYPE} {}", request.logical_id);
        if request.token.is_empty() {
            return Err(ProviderError::validation(format!(
                "{what}: {name} needs the create's token"
            )));
        }
        let kms = client(ctx).await?;
        let ids = keys_with_token(&kms, &what, &request.token).await?;
        let physical_id = one_or_none(&request.logical_id, &request.token, ids)?;
        let properties = match &physical_id {
            Some(key_id) => self
                .read(
                    ctx,
                    &what,
                    &ReadCurrentStateRequest {
                        logical_id: request.logical_id.clone(),
                        physical_id: key_id.clone(),
                        properties: request.properties.clone(),
                    },
                )
                .await?
                .unwrap_or_default(),
            None => Map::new(),
        };
        serde_json::to_value(FindCreatedResult {
            physical_id,
            properties,
        })
        .map_err(|e| ProviderError::other(e.to_string()))
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let plan = KeyCreate::from_template(&request.properties, &request.client_token);
        let tags = sdk_tags(&plan.tags, &what)?;
        let kms = client(ctx).await?;
        let (kms, what_ref, plan_ref) = (&kms, what.as_str(), &plan);
        // CreateKey refused for an unknown principal creates nothing, so trying it again is safe.
        let principals = policy_principals(&Value::String(plan.policy.clone().unwrap_or_default()));
        let created = while_iam_propagates(&principals, principal_not_yet_known, || {
            let call = kms
                .create_key()
                .set_description(plan_ref.description.clone())
                .set_policy(plan_ref.policy.clone())
                .set_key_spec(plan_ref.key_spec.as_deref().map(KeySpec::from))
                .set_key_usage(plan_ref.key_usage.as_deref().map(KeyUsageType::from))
                .set_origin(plan_ref.origin.as_deref().map(OriginType::from))
                .set_multi_region(plan_ref.multi_region)
                .set_bypass_policy_lockout_safety_check(plan_ref.bypass_lockout_check)
                .set_tags(Some(tags.clone()).filter(|t| !t.is_empty()));
            async move {
                call.send()
                    .await
                    .map_err(|e| with_kms_kind(aws_error(&format!("{what_ref}: CreateKey"), e)))
            }
        })
        .await?;
        let metadata = created.key_metadata().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateKey answered no key metadata"))
        })?;
        let key_id = metadata.key_id().to_string();
        if let Err(err) = finish_create(kms, &what, &key_id, &plan).await {
            // The key is unusable as the template asked; schedule it away (the shortest window)
            // rather than leave a key no state records.
            if let Err(cleanup) = schedule_deletion(kms, &what, &key_id, 7).await {
                tracing::warn!(key_id, error = %cleanup.message, "{what}: could not schedule the deletion of the half-created key");
            }
            return Err(err);
        }
        Ok(CreateResult {
            attributes: key_attributes(metadata),
            physical_id: key_id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, key_id) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        refuse_immutable_changes(before, after, &what)?;
        let steps = KeyUpdate::between(before, after);
        let kms = client(ctx).await?;
        let metadata = existing(&kms, &what, key_id).await?;
        if steps.enable {
            kms.enable_key()
                .key_id(key_id)
                .send()
                .await
                .map_err(|e| with_kms_kind(aws_error(&format!("{what}: EnableKey"), e)))?;
        }
        if let Some(description) = &steps.description {
            kms.update_key_description()
                .key_id(key_id)
                .description(description)
                .send()
                .await
                .map_err(|e| {
                    with_kms_kind(aws_error(&format!("{what}: UpdateKeyDescription"), e))
                })?;
        }
        if let Some(policy) = &steps.policy {
            let document = policy
                .clone()
                .unwrap_or_else(|| default_policy(metadata.arn().unwrap_or_default()));
            let bypass = flag(after.get("BypassPolicyLockoutSafetyCheck"));
            let (kms, what) = (&kms, what.as_str());
            let principals = policy_principals(&Value::String(document.clone()));
            while_iam_propagates(&principals, principal_not_yet_known, || {
                let call = kms
                    .put_key_policy()
                    .key_id(key_id)
                    .policy_name(POLICY_NAME)
                    .policy(&document)
                    .set_bypass_policy_lockout_safety_check(bypass);
                async move {
                    call.send()
                        .await
                        .map(|_| ())
                        .map_err(|e| with_kms_kind(aws_error(&format!("{what}: PutKeyPolicy"), e)))
                }
            })
            .await?;
        }
        if let Some(rotation) = &steps.rotation {
            set_rotation(&kms, &what, key_id, rotation).await?;
        }
        if !steps.tags_removed.is_empty() {
            kms.untag_resource()
                .key_id(key_id)
                .set_tag_keys(Some(steps.tags_removed.clone()))
                .send()
                .await
                .map_err(|e| with_kms_kind(aws_error(&format!("{what}: UntagResource"), e)))?;
        }
        if !steps.tags_set.is_empty() {
            kms.tag_resource()
                .key_id(key_id)
                .set_tags(Some(sdk_tags(&steps.tags_set, &what)?))
                .send()
                .await
                .map_err(|e| with_kms_kind(aws_error(&format!("{what}: TagResource"), e)))?;
        }
        if steps.disable {
            disable_key(&kms, &what, key_id).await?;
        }
        Ok(UpdateResult {
            attributes: key_attributes(&metadata),
            physical_id: key_id.to_string(),
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
        let kms = client(ctx).await?;
        let window = pending_window(&request.properties);
        schedule_deletion(&kms, &what, &request.physical_id, window).await?;
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for Key {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let kms = client(ctx).await?;
        let key_id = request.physical_id.as_str();
        let Some(metadata) = describe(&kms, what, key_id).await? else {
            return Ok(None);
        };
        if deleting(metadata.key_state()) {
            return Ok(None);
        }
        // The three reads at once: the reader runs after every create and update.
        let (policy, rotation, tags) = tokio::join!(
            kms.get_key_policy()
                .key_id(key_id)
                .policy_name(POLICY_NAME)
                .send(),
            rotation_status(&kms, what, &metadata),
            list_tags(&kms, what, key_id),
        );
        let policy =
            policy.map_err(|e| with_kms_kind(aws_error(&format!("{what}: GetKeyPolicy"), e)))?;
        Ok(Some(template_shape(
            &metadata,
            policy.policy(),
            rotation?,
            &tags?,
        )))
    }

    /// `Arn` and `KeyId`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let kms = client(ctx).await?;
        Ok(key_attributes(&existing(&kms, what, physical_id).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn tag_keys(properties: &Map<String, Value>) -> Vec<String> {
        tag_map(properties).into_keys().collect()
    }

    #[test]
    fn a_create_takes_every_setting_and_adds_the_token_tag() {
        let template = props(json!({
            "Description": "app data",
            "KeyPolicy": {"Version": "2012-10-17", "Statement": []},
            "KeySpec": "RSA_2048",
            "KeyUsage": "SIGN_VERIFY",
            "Origin": "AWS_KMS",
            "MultiRegion": "true",
            "BypassPolicyLockoutSafetyCheck": false,
            "EnableKeyRotation": true,
            "RotationPeriodInDays": "180",
            "Enabled": false,
            "PendingWindowInDays": 7,
            "Tags": [{"Key": "team", "Value": "a"}, {"Key": "cdkd:create-token", "Value": "forged"}],
        }));
        let plan = KeyCreate::from_template(&template, "tok-1");
        assert_eq!(
            plan,
            KeyCreate {
                description: Some("app data".into()),
                policy: Some("{\"Version\":\"2012-10-17\",\"Statement\":[]}".into()),
                key_spec: Some("RSA_2048".into()),
                key_usage: Some("SIGN_VERIFY".into()),
                origin: Some("AWS_KMS".into()),
                multi_region: Some(true),
                bypass_lockout_check: Some(false),
                tags: vec![
                    ("team".into(), "a".into()),
                    ("cdkd:create-token".into(), "tok-1".into()),
                ],
                rotation: Some(Some(180)),
                enabled: false,
            }
        );
        let tags = sdk_tags(&plan.tags, "T L").unwrap();
        let pairs: Vec<(&str, &str)> = tags.iter().map(|t| (t.tag_key(), t.tag_value())).collect();
        assert_eq!(pairs, [("team", "a"), ("cdkd:create-token", "tok-1")]);
    }

    #[test]
    fn a_bare_create_leaves_the_policy_to_kms() {
        let plan = KeyCreate::from_template(&Map::new(), "");
        assert_eq!(
            plan,
            KeyCreate {
                enabled: true,
                ..KeyCreate::default()
            }
        );
        let text_policy = props(json!({"KeyPolicy": "{\"Version\":\"2012-10-17\"}"}));
        assert_eq!(
            KeyCreate::from_template(&text_policy, "t")
                .policy
                .as_deref(),
            Some("{\"Version\":\"2012-10-17\"}")
        );
        let rotating = props(json!({"EnableKeyRotation": true}));
        assert_eq!(
            KeyCreate::from_template(&rotating, "t").rotation,
            Some(None)
        );
    }

    #[test]
    fn the_pending_window_defaults_to_thirty_days() {
        assert_eq!(pending_window(&Map::new()), 30);
        assert_eq!(pending_window(&props(json!({"PendingWindowInDays": 7}))), 7);
        assert_eq!(
            pending_window(&props(json!({"PendingWindowInDays": "10"}))),
            10
        );
    }

    #[test]
    fn the_default_policy_names_the_keys_account() {
        let policy = parsed(&default_policy(
            "arn:aws-cn:kms:cn-north-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        ));
        assert_eq!(
            policy["Statement"][0]["Principal"]["AWS"],
            "arn:aws-cn:iam::123456789012:root"
        );
        assert_eq!(policy["Statement"][0]["Action"], "kms:*");
        assert_eq!(policy["Id"], "key-default");
    }

    #[test]
    fn immutable_properties_are_refused_and_defaults_count_as_unchanged() {
        let before = props(json!({"KeySpec": "SYMMETRIC_DEFAULT"}));
        assert!(refuse_immutable_changes(&before, &Map::new(), "T L").is_ok());
        let after = props(json!({"KeySpec": "RSA_2048"}));
        let err = refuse_immutable_changes(&before, &after, "AWS::KMS::Key K").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(err.message.contains("AWS::KMS::Key K"), "{}", err.message);
        assert!(err.message.contains("KeySpec"), "{}", err.message);
        let multi = props(json!({"MultiRegion": true}));
        let err = refuse_immutable_changes(&Map::new(), &multi, "T L").unwrap_err();
        assert!(err.message.contains("MultiRegion"), "{}", err.message);
    }

    #[test]
    fn an_update_resets_removed_settings_to_kms_defaults() {
        let before = props(json!({
            "Description": "d",
            "KeyPolicy": {"Version": "2012-10-17"},
            "EnableKeyRotation": true,
            "RotationPeriodInDays": 90,
            "Enabled": false,
            "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}],
        }));
        let steps = KeyUpdate::between(&before, &Map::new());
        assert_eq!(
            steps,
            KeyUpdate {
                enable: true,
                description: Some(String::new()),
                policy: Some(None),
                rotation: Some(Rotation::Disable),
                tags_set: vec![],
                tags_removed: vec!["a".into(), "b".into()],
                disable: false,
            }
        );
        // The same template is no call at all; a policy as text equals its object.
        let same = props(json!({"KeyPolicy": "{\"Version\": \"2012-10-17\"}"}));
        let as_object = props(json!({"KeyPolicy": {"Version": "2012-10-17"}}));
        assert_eq!(KeyUpdate::between(&same, &as_object), KeyUpdate::default());
        // A dropped period goes back to 365 days while rotation stays on.
        let rotating = props(json!({"EnableKeyRotation": true}));
        let steps = KeyUpdate::between(&before, &rotating);
        assert_eq!(steps.rotation, Some(Rotation::Enable(365)));
        let disabling = props(json!({"Enabled": "false", "Tags": [{"Key": "a", "Value": "9"}]}));
        let steps = KeyUpdate::between(&Map::new(), &disabling);
        assert!(steps.disable && !steps.enable);
        assert_eq!(steps.tags_set, [("a".to_string(), "9".to_string())]);
    }

    #[test]
    fn the_live_key_reads_back_in_template_shape_without_cdkds_tag() {
        let metadata = KeyMetadata::builder()
            .key_id("1234abcd-12ab-34cd-56ef-1234567890ab")
            .arn("arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab")
            .description("app data")
            .enabled(true)
            .key_spec(KeySpec::SymmetricDefault)
            .key_usage(KeyUsageType::EncryptDecrypt)
            .origin(OriginType::AwsKms)
            .multi_region(false)
            .key_state(KeyState::Enabled)
            .build()
            .unwrap();
        let tags = [
            Tag::builder().tag_key("z").tag_value("26").build().unwrap(),
            Tag::builder()
                .tag_key(CREATE_TOKEN_TAG)
                .tag_value("tok")
                .build()
                .unwrap(),
            Tag::builder().tag_key("a").tag_value("1").build().unwrap(),
        ];
        let policy = "{\"Version\":\"2012-10-17\",\"Statement\":[]}";
        let shape = template_shape(&metadata, Some(policy), Some((true, Some(180))), &tags);
        assert_eq!(
            Value::Object(shape),
            json!({
                "Description": "app data",
                "Enabled": true,
                "KeyPolicy": {"Version": "2012-10-17", "Statement": []},
                "EnableKeyRotation": true,
                "RotationPeriodInDays": 180,
                "KeySpec": "SYMMETRIC_DEFAULT",
                "KeyUsage": "ENCRYPT_DECRYPT",
                "Origin": "AWS_KMS",
                "MultiRegion": false,
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}],
            })
        );
        let bare = template_shape(&metadata, None, None, &tags[1..2]);
        assert_eq!(bare["EnableKeyRotation"], false);
        assert!(!bare.contains_key("Tags") && !bare.contains_key("RotationPeriodInDays"));
        assert_eq!(
            Value::Object(key_attributes(&metadata)),
            json!({
                "Arn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                "KeyId": "1234abcd-12ab-34cd-56ef-1234567890ab",
            })
        );
        assert!(deleting(Some(&KeyState::PendingDeletion)));
        assert!(!deleting(Some(&KeyState::Disabled)));
    }

    #[test]
    fn the_create_token_finds_one_key_or_none_and_refuses_several() {
        let tag = |k: &str, v: &str| Tag::builder().tag_key(k).tag_value(v).build().unwrap();
        assert!(carries_token(
            &[tag("team", "a"), tag(CREATE_TOKEN_TAG, "tok")],
            "tok"
        ));
        assert!(!carries_token(&[tag(CREATE_TOKEN_TAG, "other")], "tok"));
        assert!(!carries_token(&[tag("team", "tok")], "tok"));
        assert_eq!(one_or_none("K", "tok", vec![]).unwrap(), None);
        assert_eq!(
            one_or_none("K", "tok", vec!["k-1".into()]).unwrap(),
            Some("k-1".into())
        );
        let err = one_or_none("K", "tok", vec!["k-2".into(), "k-1".into()]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        for part in ["AWS::KMS::Key K", "cdkd:create-token=tok", "k-1, k-2"] {
            assert!(err.message.contains(part), "{part}: {}", err.message);
        }
        assert_eq!(CREATE_TOKEN_TAG, "cdkd:create-token");
    }

    #[test]
    fn only_unknown_principals_are_waited_for() {
        let unknown = ProviderError::new(
            ErrorKind::VALIDATION,
            "AWS::KMS::Key K: CreateKey: Policy contains a statement with one or more invalid principals.",
        )
        .with_aws_code("MalformedPolicyDocumentException");
        assert!(principal_not_yet_known(&unknown));
        let malformed = ProviderError::new(ErrorKind::VALIDATION, "bad JSON")
            .with_aws_code("MalformedPolicyDocumentException");
        assert!(!principal_not_yet_known(&malformed));
        assert!(template_tag("team") && !template_tag(CREATE_TOKEN_TAG));
        assert!(!template_tag("aws:cloudformation:stack-name"));
        let tagged = props(
            json!({"Tags": [{"Key": "cdkd:create-token", "Value": "x"}, {"Key": "k", "Value": "v"}]}),
        );
        assert_eq!(tag_keys(&tagged), ["k"]);
    }
}
