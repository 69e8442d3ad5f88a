//! `AWS::KMS::Alias`: physical id (and `Ref`) is the alias name, `alias/...`; no attributes.
//! `AliasName` is create-only; `TargetKeyId` moves the alias to another key in place.

use aws_sdk_kms::types::AliasListEntry;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, require_str, string, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, with_kms_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::KMS::Alias";

/// Every alias name starts with this.
const PREFIX: &str = "alias/";

/// The prefix of the aliases AWS manages, which no template may create.
const RESERVED_PREFIX: &str = "alias/aws/";

/// The `AWS::KMS::Alias` provider.
#[derive(Default)]
pub struct Alias;

/// The template's `AliasName`, refused unless it is one KMS takes: `alias/` followed by
/// letters, digits, `:/_-`, not in AWS's reserved `alias/aws/`, at most 256 characters.
fn alias_name<'a>(
    properties: &'a Map<String, Value>,
    what: &str,
) -> Result<&'a str, ProviderError> {
    let name = require_str(properties, "AliasName", what)?;
    let refuse = |why: &str| {
        Err(ProviderError::validation(format!(
            "{what}: AliasName {name:?} {why}"
        )))
    };
    let Some(rest) = name.strip_prefix(PREFIX) else {
        return refuse("must start with alias/");
    };
    if rest.is_empty() {
        return refuse("needs a name after alias/");
    }
    if name.starts_with(RESERVED_PREFIX) {
        return refuse("is in alias/aws/, which AWS reserves for its own keys");
    }
    if name.len() > 256 {
        return refuse("is longer than 256 characters");
    }
    if !rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '/' | '_' | '-'))
    {
        return refuse("may only contain letters, digits, ':', '/', '_' and '-'");
    }
    Ok(name)
}

/// The template's `TargetKeyId`, required.
fn target_key<'a>(
    properties: &'a Map<String, Value>,
    what: &str,
) -> Result<&'a str, ProviderError> {
    require_str(properties, "TargetKeyId", what)
}

/// The live alias in template shape. KMS answers the target as a key id; a template naming the
/// same key by ARN gets its own spelling back, so the two do not read as drift.
fn template_shape(entry: &AliasListEntry, template: &Map<String, Value>) -> Map<String, Value> {
    let mut props = Map::new();
    if let Some(name) = entry.alias_name() {
        props.insert("AliasName".into(), json!(name));
    }
    if let Some(live) = entry.target_key_id() {
        let target = match string(template.get("TargetKeyId")) {
            Some(given) if given == live || given.ends_with(&format!("/{live}")) => given,
            _ => live.to_string(),
        };
        props.insert("TargetKeyId".into(), json!(target));
    }
    props
}

/// The alias named `name`; `None` when there is none.
async fn find_alias(
    kms: &aws_sdk_kms::Client,
    what: &str,
    name: &str,
) -> Result<Option<AliasListEntry>, ProviderError> {
    let mut marker: Option<String> = None;
    loop {
        let page = kms
            .list_aliases()
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| with_kms_kind(aws_error(&format!("{what}: ListAliases"), e)))?;
        if let Some(entry) = page.aliases().iter().find(|a| a.alias_name() == Some(name)) {
            return Ok(Some(entry.clone()));
        }
        match page.next_marker() {
            Some(next) if page.truncated() => marker = Some(next.to_string()),
            _ => return Ok(None),
        }
    }
}

#[async_trait]
impl ResourceProvider for Alias {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["AliasName", "TargetKeyId"])
            .create_only(&["AliasName"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = alias_name(&request.properties, &what)?;
        let target = target_key(&request.properties, &what)?;
        let kms = client(ctx).await?;
        kms.create_alias()
            .alias_name(name)
            .target_key_id(target)
            .send()
            .await
            .map_err(|e| with_kms_kind(aws_error(&format!("{what}: CreateAlias {name}"), e)))?;
        Ok(CreateResult {
            physical_id: name.to_string(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let target = target_key(&request.properties, &what)?;
        if string(request.previous_properties.get("TargetKeyId")).as_deref() != Some(target) {
            let kms = client(ctx).await?;
            kms.update_alias()
                .alias_name(name)
                .target_key_id(target)
                .send()
                .await
                .map_err(|e| with_kms_kind(aws_error(&format!("{what}: UpdateAlias {name}"), e)))?;
        }
        Ok(UpdateResult {
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
        let name = request.physical_id.as_str();
        let kms = client(ctx).await?;
        deleted_unless_failed(
            kms.delete_alias()
                .alias_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| with_kms_kind(aws_error(&format!("{what}: DeleteAlias {name}"), e))),
        )
    }
}

#[async_trait]
impl Readable for Alias {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let kms = client(ctx).await?;
        Ok(find_alias(&kms, what, &request.physical_id)
            .await?
            .map(|entry| template_shape(&entry, &request.properties)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::ErrorKind;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn alias_names_must_start_with_alias_slash() {
        let good = props(json!({"AliasName": "alias/app/data-key_1:v2"}));
        assert_eq!(alias_name(&good, "T L").unwrap(), "alias/app/data-key_1:v2");
        for bad in [
            "app-key",
            "alias/",
            "Alias/app",
            "alias/aws/s3",
            "alias/has space",
        ] {
            let template = props(json!({ "AliasName": bad }));
            let err = alias_name(&template, "AWS::KMS::Alias A").unwrap_err();
            assert_eq!(err.kind, ErrorKind::VALIDATION, "{bad}");
            assert!(err.message.contains("AWS::KMS::Alias A"), "{}", err.message);
            assert!(err.message.contains(bad), "{}", err.message);
        }
        let long = props(json!({ "AliasName": format!("alias/{}", "a".repeat(251)) }));
        assert!(alias_name(&long, "T L").is_err());
        let missing = alias_name(&Map::new(), "T L").unwrap_err();
        assert!(missing.message.contains("AliasName"), "{}", missing.message);
        let no_target = target_key(&good, "T L").unwrap_err();
        assert!(
            no_target.message.contains("TargetKeyId"),
            "{}",
            no_target.message
        );
    }

    #[test]
    fn the_live_alias_reads_back_in_the_templates_spelling() {
        let entry = AliasListEntry::builder()
            .alias_name("alias/app")
            .alias_arn("arn:aws:kms:us-east-1:123456789012:alias/app")
            .target_key_id("1234abcd-12ab-34cd-56ef-1234567890ab")
            .build();
        let by_arn = props(json!({
            "TargetKeyId": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
        }));
        assert_eq!(
            Value::Object(template_shape(&entry, &by_arn)),
            json!({
                "AliasName": "alias/app",
                "TargetKeyId": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            })
        );
        let other = props(json!({"TargetKeyId": "ffffffff-12ab-34cd-56ef-1234567890ab"}));
        assert_eq!(
            Value::Object(template_shape(&entry, &other)),
            json!({
                "AliasName": "alias/app",
                "TargetKeyId": "1234abcd-12ab-34cd-56ef-1234567890ab",
            })
        );
    }
}
