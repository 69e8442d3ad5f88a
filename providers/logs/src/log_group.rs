//! `AWS::Logs::LogGroup`: physical id (and `Ref`) is the log group name; attribute `Arn`, the
//! ARN ending in `:*` as CloudFormation reports it. Tagging calls take the ARN without `:*`.

use std::collections::HashMap;

use aws_sdk_cloudwatchlogs::types::{
    DataProtectionStatus, IndexSource, LogGroupClass, PolicyScope,
};
use cdkd_aws_common::tag_map;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, flag, given_or_generated_name, int, string, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, document_like, found, json_text, key_value_list, wait_for, with_logs_kind, MAX_NAME,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Logs::LogGroup";

/// The `AWS::Logs::LogGroup` provider.
#[derive(Default)]
pub struct LogGroup;

/// One setting an update (or a create, after CreateLogGroup) applies with its own call; `None`
/// and `false` are what a removed property resets to, as CloudFormation resets it.
#[derive(Debug, Clone, PartialEq)]
enum Change {
    /// PutRetentionPolicy, or DeleteRetentionPolicy (never expire).
    Retention(Option<i32>),
    /// AssociateKmsKey, or DisassociateKmsKey.
    KmsKey(Option<String>),
    /// PutDataProtectionPolicy, or DeleteDataProtectionPolicy.
    DataProtection(Option<String>),
    /// PutIndexPolicy, or DeleteIndexPolicy.
    IndexPolicy(Option<String>),
    /// PutResourcePolicy scoped to the group, or DeleteResourcePolicy.
    ResourcePolicy(Option<String>),
    /// PutLogGroupDeletionProtection.
    DeletionProtection(bool),
    /// PutBearerTokenAuthentication.
    BearerToken(bool),
}

/// A property's template value, `null` taken as absent.
fn value<'a>(properties: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    properties.get(name).filter(|v| !v.is_null())
}

/// A JSON document property as the text CloudWatch Logs takes.
fn document(properties: &Map<String, Value>, name: &str) -> Option<String> {
    value(properties, name).map(json_text)
}

/// The template's field index policy as text: CloudWatch Logs keeps one per log group, so the
/// list may hold one at most.
fn index_policy(properties: &Map<String, Value>) -> Result<Option<String>, String> {
    match value(properties, "FieldIndexPolicies") {
        None => Ok(None),
        Some(Value::Array(items)) if items.len() > 1 => Err(format!(
            "FieldIndexPolicies holds {} policies; a log group takes one",
            items.len()
        )),
        Some(Value::Array(items)) => Ok(items.first().map(json_text)),
        Some(_) => Err("FieldIndexPolicies must be a list of policy documents".into()),
    }
}

/// The settings that differ from `before` to `after`, each as the call that brings it there.
fn changes(before: &Map<String, Value>, after: &Map<String, Value>) -> Result<Vec<Change>, String> {
    let differs = |name: &str| value(before, name) != value(after, name);
    let mut changes = Vec::new();
    if differs("RetentionInDays") {
        changes.push(Change::Retention(int(value(after, "RetentionInDays"))));
    }
    if differs("KmsKeyId") {
        changes.push(Change::KmsKey(string(value(after, "KmsKeyId"))));
    }
    if differs("DataProtectionPolicy") {
        changes.push(Change::DataProtection(document(
            after,
            "DataProtectionPolicy",
        )));
    }
    if differs("FieldIndexPolicies") {
        changes.push(Change::IndexPolicy(index_policy(after)?));
    }
    if differs("ResourcePolicyDocument") {
        changes.push(Change::ResourcePolicy(document(
            after,
            "ResourcePolicyDocument",
        )));
    }
    let enabled = |map: &Map<String, Value>, name: &str| flag(value(map, name)).unwrap_or(false);
    // Deletion protection last: a create that fails after it could not delete its group.
    for (name, change) in [
        (
            "BearerTokenAuthenticationEnabled",
            Change::BearerToken as fn(bool) -> Change,
        ),
        ("DeletionProtectionEnabled", Change::DeletionProtection),
    ] {
        if enabled(before, name) != enabled(after, name) {
            changes.push(change(enabled(after, name)));
        }
    }
    Ok(changes)
}

/// What a create applies after CreateLogGroup: the settings a fresh group does not have yet
/// (its KMS key goes with CreateLogGroup itself).
fn create_changes(properties: &Map<String, Value>) -> Result<Vec<Change>, String> {
    Ok(changes(&Map::new(), properties)?
        .into_iter()
        .filter(|c| !matches!(c, Change::KmsKey(_)))
        .collect())
}

/// The ARN CloudFormation reports (ending in `:*`) of a described group.
fn arn_of(group: &aws_sdk_cloudwatchlogs::types::LogGroup) -> Option<String> {
    group
        .arn()
        .map(ToString::to_string)
        .or_else(|| group.log_group_arn().map(|arn| format!("{arn}:*")))
}

/// The ARN tagging and resource-policy calls take: without the trailing `:*`.
fn bare_arn(arn: &str) -> &str {
    arn.strip_suffix(":*").unwrap_or(arn)
}

/// The group named exactly `name`; `None` when there is none (DescribeLogGroups matches a
/// prefix, so other groups may come first).
async fn find_group(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    name: &str,
) -> Result<Option<aws_sdk_cloudwatchlogs::types::LogGroup>, ProviderError> {
    let mut token: Option<String> = None;
    loop {
        let page = logs
            .describe_log_groups()
            .log_group_name_prefix(name)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| {
                with_logs_kind(aws_error(&format!("{what}: DescribeLogGroups {name}"), e))
            })?;
        if let Some(group) = page
            .log_groups()
            .iter()
            .find(|g| g.log_group_name() == Some(name))
        {
            return Ok(Some(group.clone()));
        }
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => return Ok(None),
        }
    }
}

/// The ARN of the group `name`, which must exist.
async fn group_arn(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    name: &str,
) -> Result<String, ProviderError> {
    let group = find_group(logs, what, name).await?.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::NOT_FOUND,
            format!("{what}: log group {name} does not exist"),
        )
    })?;
    arn_of(&group).ok_or_else(|| {
        ProviderError::other(format!(
            "{what}: DescribeLogGroups returned no ARN for {name}"
        ))
    })
}

/// The resource policy scoped to the group whose ARN is `arn`; `None` when it has none.
async fn group_policy(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    arn: &str,
) -> Result<Option<aws_sdk_cloudwatchlogs::types::ResourcePolicy>, ProviderError> {
    let answer = logs
        .describe_resource_policies()
        .resource_arn(bare_arn(arn))
        .policy_scope(PolicyScope::Resource)
        .send()
        .await
        .map_err(|e| with_logs_kind(aws_error(&format!("{what}: DescribeResourcePolicies"), e)));
    Ok(found(answer)?.and_then(|a| a.resource_policies().first().cloned()))
}

/// The attributes of a group whose ARN is `arn`.
fn attributes(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes
}

/// Applies one setting to the group `name` (`arn` its ARN with `:*`).
async fn apply(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    name: &str,
    arn: &str,
    change: Change,
) -> Result<(), ProviderError> {
    // A macro, not a closure: each call's error is its own SDK type.
    macro_rules! fail {
        ($call:literal) => {
            |e| with_logs_kind(aws_error(&format!("{what}: {} on {name}", $call), e))
        };
    }
    match change {
        Change::Retention(Some(days)) => logs
            .put_retention_policy()
            .log_group_name(name)
            .retention_in_days(days)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("PutRetentionPolicy")),
        Change::Retention(None) => logs
            .delete_retention_policy()
            .log_group_name(name)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("DeleteRetentionPolicy")),
        Change::KmsKey(Some(key)) => logs
            .associate_kms_key()
            .log_group_name(name)
            .kms_key_id(key)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("AssociateKmsKey")),
        Change::KmsKey(None) => logs
            .disassociate_kms_key()
            .log_group_name(name)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("DisassociateKmsKey")),
        Change::DataProtection(Some(policy)) => logs
            .put_data_protection_policy()
            .log_group_identifier(name)
            .policy_document(policy)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("PutDataProtectionPolicy")),
        Change::DataProtection(None) => not_found_is_none(
            logs.delete_data_protection_policy()
                .log_group_identifier(name)
                .send()
                .await
                .map(|_| ())
                .map_err(fail!("DeleteDataProtectionPolicy")),
        ),
        Change::IndexPolicy(Some(policy)) => logs
            .put_index_policy()
            .log_group_identifier(name)
            .policy_document(policy)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("PutIndexPolicy")),
        Change::IndexPolicy(None) => not_found_is_none(
            logs.delete_index_policy()
                .log_group_identifier(name)
                .send()
                .await
                .map(|_| ())
                .map_err(fail!("DeleteIndexPolicy")),
        ),
        // A group's policy is changed against its current revision (none for a first one).
        Change::ResourcePolicy(Some(policy)) => {
            let revision = group_policy(logs, what, arn)
                .await?
                .and_then(|p| p.revision_id().map(ToString::to_string));
            logs.put_resource_policy()
                .resource_arn(bare_arn(arn))
                .policy_document(policy)
                .set_expected_revision_id(revision)
                .send()
                .await
                .map(|_| ())
                .map_err(fail!("PutResourcePolicy"))
        }
        Change::ResourcePolicy(None) => {
            let Some(current) = group_policy(logs, what, arn).await? else {
                return Ok(());
            };
            not_found_is_none(
                logs.delete_resource_policy()
                    .resource_arn(bare_arn(arn))
                    .set_expected_revision_id(current.revision_id().map(ToString::to_string))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(fail!("DeleteResourcePolicy")),
            )
        }
        Change::DeletionProtection(enabled) => logs
            .put_log_group_deletion_protection()
            .log_group_identifier(name)
            .deletion_protection_enabled(enabled)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("PutLogGroupDeletionProtection")),
        Change::BearerToken(enabled) => logs
            .put_bearer_token_authentication()
            .log_group_identifier(name)
            .bearer_token_authentication_enabled(enabled)
            .send()
            .await
            .map(|_| ())
            .map_err(fail!("PutBearerTokenAuthentication")),
    }
}

/// A removal whose policy is already gone has nothing left to remove.
fn not_found_is_none(result: Result<(), ProviderError>) -> Result<(), ProviderError> {
    found(result).map(|_| ())
}

/// The live group in template shape: its description, tags and the policies read for it.
fn template_shape(
    group: &aws_sdk_cloudwatchlogs::types::LogGroup,
    tags: &HashMap<String, String>,
    policies: &Policies,
) -> Map<String, Value> {
    let mut props = Map::new();
    if let Some(name) = group.log_group_name() {
        props.insert("LogGroupName".into(), json!(name));
    }
    if let Some(days) = group.retention_in_days() {
        props.insert("RetentionInDays".into(), json!(days));
    }
    if let Some(key) = group.kms_key_id().filter(|k| !k.is_empty()) {
        props.insert("KmsKeyId".into(), json!(key));
    }
    if let Some(class) = group.log_group_class() {
        props.insert("LogGroupClass".into(), json!(class.as_str()));
    }
    if let Some(policy) = &policies.data_protection {
        props.insert("DataProtectionPolicy".into(), policy.clone());
    }
    if !policies.index.is_empty() {
        props.insert(
            "FieldIndexPolicies".into(),
            Value::Array(policies.index.clone()),
        );
    }
    if let Some(policy) = &policies.resource {
        props.insert("ResourcePolicyDocument".into(), policy.clone());
    }
    if group.deletion_protection_enabled() == Some(true) {
        props.insert("DeletionProtectionEnabled".into(), json!(true));
    }
    if group.bearer_token_authentication_enabled() == Some(true) {
        props.insert("BearerTokenAuthenticationEnabled".into(), json!(true));
    }
    if let Some(tags) = key_value_list(tags) {
        props.insert("Tags".into(), tags);
    }
    props
}

/// The policies a group carries besides its description, in template shape.
#[derive(Debug, Default)]
struct Policies {
    /// `DataProtectionPolicy`.
    data_protection: Option<Value>,
    /// `FieldIndexPolicies`: the group's own, not those it inherits from the account.
    index: Vec<Value>,
    /// `ResourcePolicyDocument`.
    resource: Option<Value>,
}

/// Reads the policies of the group `name`. The index and resource policies only when the
/// template names them: both are recent APIs that endpoints such as LocalStack do not answer,
/// and a read runs after every create and update.
async fn read_policies(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    group: &aws_sdk_cloudwatchlogs::types::LogGroup,
    template: &Map<String, Value>,
) -> Result<Option<Policies>, ProviderError> {
    let name = group.log_group_name().unwrap_or_default();
    let mut policies = Policies::default();
    if group.data_protection_status() == Some(&DataProtectionStatus::Activated) {
        let answer = logs
            .get_data_protection_policy()
            .log_group_identifier(name)
            .send()
            .await
            .map_err(|e| with_logs_kind(aws_error(&format!("{what}: GetDataProtectionPolicy"), e)));
        let Some(answer) = found(answer)? else {
            return Ok(None);
        };
        policies.data_protection = answer
            .policy_document()
            .filter(|d| !d.is_empty())
            .map(|d| document_like(d, value(template, "DataProtectionPolicy")));
    }
    if template.contains_key("FieldIndexPolicies") {
        let answer = logs
            .describe_index_policies()
            .log_group_identifiers(name)
            .send()
            .await
            .map_err(|e| with_logs_kind(aws_error(&format!("{what}: DescribeIndexPolicies"), e)));
        let Some(answer) = found(answer)? else {
            return Ok(None);
        };
        policies.index = answer
            .index_policies()
            .iter()
            .filter(|p| p.source() != Some(&IndexSource::Account))
            .filter_map(|p| p.policy_document())
            .map(crate::parsed)
            .collect();
    }
    if template.contains_key("ResourcePolicyDocument") {
        if let Some(arn) = arn_of(group) {
            policies.resource = group_policy(logs, what, &arn)
                .await?
                .and_then(|p| p.policy_document().map(crate::parsed));
        }
    }
    Ok(Some(policies))
}

#[async_trait]
impl ResourceProvider for LogGroup {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "LogGroupName",
                "RetentionInDays",
                "KmsKeyId",
                "DataProtectionPolicy",
                "LogGroupClass",
                "FieldIndexPolicies",
                "ResourcePolicyDocument",
                "DeletionProtectionEnabled",
                "BearerTokenAuthenticationEnabled",
                "Tags",
            ])
            // LogGroupClass is not create-only in the registry schema, but CloudWatch Logs has no
            // call that changes a group's class: only a new group can take another one.
            .create_only(&["LogGroupName", "LogGroupClass"])
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
        let name = given_or_generated_name(&request, "LogGroupName", MAX_NAME, false);
        let later =
            create_changes(props).map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        let tags: HashMap<String, String> = tag_map(props).into_iter().collect();
        let logs = client(ctx).await?;
        logs.create_log_group()
            .log_group_name(&name)
            .set_kms_key_id(string(value(props, "KmsKeyId")))
            .set_log_group_class(
                string(value(props, "LogGroupClass")).map(|c| LogGroupClass::from(c.as_str())),
            )
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(|e| with_logs_kind(aws_error(&format!("{what}: CreateLogGroup {name}"), e)))?;
        let settled = async {
            // The ARN comes from DescribeLogGroups, which may lag CreateLogGroup for a moment.
            let arn = wait_for(&what, "the new log group to be listed", || async {
                Ok(find_group(&logs, &what, &name)
                    .await?
                    .and_then(|g| arn_of(&g)))
            })
            .await?;
            for change in later {
                apply(&logs, &what, &name, &arn, change).await?;
            }
            Ok::<_, ProviderError>(arn)
        }
        .await;
        let arn = match settled {
            Ok(arn) => arn,
            Err(err) => {
                // A failed create returns no physical id, so nothing would ever delete the
                // half-configured group, and the next attempt would find its name taken.
                if let Err(cleanup) = logs.delete_log_group().log_group_name(&name).send().await {
                    tracing::warn!(
                        "{what}: could not delete the half-created log group {name}: {cleanup}"
                    );
                }
                return Err(err);
            }
        };
        Ok(CreateResult {
            attributes: attributes(&arn),
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, name) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let todo = changes(before, after)
            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        let logs = client(ctx).await?;
        let arn = group_arn(&logs, &what, name).await?;
        for change in todo {
            apply(&logs, &what, name, &arn, change).await?;
        }
        let (set, removed): (HashMap<_, _>, _) =
            cdkd_aws_common::tag_changes(&tag_map(before), &tag_map(after));
        if !removed.is_empty() {
            logs.untag_resource()
                .resource_arn(bare_arn(&arn))
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(|e| with_logs_kind(aws_error(&format!("{what}: UntagResource"), e)))?;
        }
        if !set.is_empty() {
            logs.tag_resource()
                .resource_arn(bare_arn(&arn))
                .set_tags(Some(set))
                .send()
                .await
                .map_err(|e| with_logs_kind(aws_error(&format!("{what}: TagResource"), e)))?;
        }
        Ok(UpdateResult {
            attributes: attributes(&arn),
            physical_id: name.to_string(),
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
        let name = &request.physical_id;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_log_group()
                .log_group_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    with_logs_kind(aws_error(&format!("{what}: DeleteLogGroup {name}"), e))
                }),
        )
    }
}

#[async_trait]
impl Readable for LogGroup {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let logs = client(ctx).await?;
        let Some(group) = find_group(&logs, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let Some(arn) = arn_of(&group) else {
            return Err(ProviderError::other(format!(
                "{what}: DescribeLogGroups returned no ARN for {}",
                request.physical_id
            )));
        };
        let tagged = logs
            .list_tags_for_resource()
            .resource_arn(bare_arn(&arn))
            .send()
            .await
            .map_err(|e| with_logs_kind(aws_error(&format!("{what}: ListTagsForResource"), e)));
        let Some(tagged) = found(tagged)? else {
            return Ok(None);
        };
        let Some(policies) = read_policies(&logs, what, &group, &request.properties).await? else {
            return Ok(None);
        };
        let tags = tagged.tags().cloned().unwrap_or_default();
        Ok(Some(template_shape(&group, &tags, &policies)))
    }

    /// `Arn`, from DescribeLogGroups.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let logs = client(ctx).await?;
        Ok(attributes(&group_arn(&logs, what, physical_id).await?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_create_applies_every_setting_but_the_key_after_create_log_group() {
        let template = props(json!({
            "LogGroupName": "/app/api",
            "RetentionInDays": "30",
            "KmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k",
            "DataProtectionPolicy": {"Name": "p", "Version": "2021-06-01"},
            "FieldIndexPolicies": [{"Fields": ["requestId"]}],
            "ResourcePolicyDocument": "{\"Version\":\"2012-10-17\"}",
            "DeletionProtectionEnabled": "true",
            "BearerTokenAuthenticationEnabled": false,
            "Tags": [{"Key": "team", "Value": "a"}],
        }));
        assert_eq!(
            create_changes(&template).unwrap(),
            vec![
                Change::Retention(Some(30)),
                Change::DataProtection(Some("{\"Name\":\"p\",\"Version\":\"2021-06-01\"}".into())),
                Change::IndexPolicy(Some("{\"Fields\":[\"requestId\"]}".into())),
                Change::ResourcePolicy(Some("{\"Version\":\"2012-10-17\"}".into())),
                Change::DeletionProtection(true),
            ]
        );
        assert_eq!(
            create_changes(&props(json!({"LogGroupName": "g"}))).unwrap(),
            vec![]
        );
        let two = props(json!({"FieldIndexPolicies": [{"Fields": ["a"]}, {"Fields": ["b"]}]}));
        assert!(create_changes(&two)
            .unwrap_err()
            .contains("holds 2 policies"));
    }

    #[test]
    fn removed_settings_reset_as_cloudformation_resets_them() {
        let before = props(json!({
            "RetentionInDays": 7,
            "KmsKeyId": "arn:k1",
            "DataProtectionPolicy": {"Name": "p"},
            "FieldIndexPolicies": [{"Fields": ["a"]}],
            "ResourcePolicyDocument": {"Version": "2012-10-17"},
            "DeletionProtectionEnabled": true,
            "BearerTokenAuthenticationEnabled": true,
        }));
        assert_eq!(
            changes(&before, &Map::new()).unwrap(),
            vec![
                Change::Retention(None),
                Change::KmsKey(None),
                Change::DataProtection(None),
                Change::IndexPolicy(None),
                Change::ResourcePolicy(None),
                Change::BearerToken(false),
                Change::DeletionProtection(false),
            ]
        );
        let after = props(json!({
            "RetentionInDays": 14,
            "KmsKeyId": "arn:k2",
            "DataProtectionPolicy": {"Name": "p"},
            "FieldIndexPolicies": [],
            "ResourcePolicyDocument": {"Version": "2012-10-17"},
            "DeletionProtectionEnabled": true,
            "BearerTokenAuthenticationEnabled": "true",
        }));
        assert_eq!(
            changes(&before, &after).unwrap(),
            vec![
                Change::Retention(Some(14)),
                Change::KmsKey(Some("arn:k2".into())),
                Change::IndexPolicy(None),
            ]
        );
        assert!(changes(&after, &after).unwrap().is_empty());
    }

    #[test]
    fn arns_keep_the_star_for_the_attribute_and_drop_it_for_tagging() {
        let described = aws_sdk_cloudwatchlogs::types::LogGroup::builder()
            .log_group_name("/app/api")
            .arn("arn:aws:logs:us-east-1:123456789012:log-group:/app/api:*")
            .build();
        let arn = arn_of(&described).unwrap();
        assert_eq!(
            arn,
            "arn:aws:logs:us-east-1:123456789012:log-group:/app/api:*"
        );
        assert_eq!(
            bare_arn(&arn),
            "arn:aws:logs:us-east-1:123456789012:log-group:/app/api"
        );
        let bare_only = aws_sdk_cloudwatchlogs::types::LogGroup::builder()
            .log_group_arn("arn:aws:logs:us-east-1:1:log-group:g")
            .build();
        assert_eq!(
            arn_of(&bare_only).as_deref(),
            Some("arn:aws:logs:us-east-1:1:log-group:g:*")
        );
        assert_eq!(
            Value::Object(attributes(&arn)),
            json!({"Arn": "arn:aws:logs:us-east-1:123456789012:log-group:/app/api:*"})
        );
    }

    #[test]
    fn the_live_group_reads_back_in_template_shape() {
        let group = aws_sdk_cloudwatchlogs::types::LogGroup::builder()
            .log_group_name("/app/api")
            .retention_in_days(30)
            .kms_key_id("arn:aws:kms:us-east-1:1:key/k")
            .log_group_class(LogGroupClass::Standard)
            .data_protection_status(DataProtectionStatus::Activated)
            .deletion_protection_enabled(true)
            .stored_bytes(1024)
            .build();
        let tags: HashMap<String, String> = [("z", "26"), ("a", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let policies = Policies {
            data_protection: Some(json!({"Name": "p"})),
            index: vec![json!({"Fields": ["requestId"]})],
            resource: None,
        };
        assert_eq!(
            Value::Object(template_shape(&group, &tags, &policies)),
            json!({
                "LogGroupName": "/app/api",
                "RetentionInDays": 30,
                "KmsKeyId": "arn:aws:kms:us-east-1:1:key/k",
                "LogGroupClass": "STANDARD",
                "DataProtectionPolicy": {"Name": "p"},
                "FieldIndexPolicies": [{"Fields": ["requestId"]}],
                "DeletionProtectionEnabled": true,
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}],
            })
        );
        let bare = aws_sdk_cloudwatchlogs::types::LogGroup::builder()
            .log_group_name("g")
            .build();
        assert_eq!(
            Value::Object(template_shape(&bare, &HashMap::new(), &Policies::default())),
            json!({"LogGroupName": "g"})
        );
    }
}
