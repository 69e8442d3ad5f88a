//! `AWS::SSM::Parameter`: physical id (and `Ref`) is the parameter name; attributes `Type`,
//! `Value` and `Arn`. `Tags` is a JSON object `{key: value}` in this type's schema, not the usual
//! list, and reads back as one. `SecureString` is refused, as CloudFormation refuses it.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_ssm::types::{
    ParameterInlinePolicy, ParameterMetadata, ParameterStringFilter, ParameterTier, ParameterType,
    ResourceTypeForTagging, Tag,
};
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, does_not_exist, given_or_generated_name, string, tag_pairs,
    text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, GetAttributeRequest,
    GetAttributeResult, ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, found, with_ssm_kind};

/// The CloudFormation type name.
const TYPE: &str = "AWS::SSM::Parameter";

/// The longest parameter name a template may give (SSM counts the ARN's prefix in it).
const MAX_NAME: usize = 1011;

/// The properties PutParameter takes besides the name and tags; a change to any of them puts a
/// new version of the parameter.
const SETTINGS: &[&str] = &[
    "Type",
    "Value",
    "Description",
    "AllowedPattern",
    "Tier",
    "Policies",
    "DataType",
];

/// The data type SSM gives a parameter that names none.
const DEFAULT_DATA_TYPE: &str = "text";

/// The `AWS::SSM::Parameter` provider.
#[derive(Default)]
pub struct Parameter;

/// One PutParameter call's settings (tags go only with a create: SSM refuses them with
/// `Overwrite`).
#[derive(Debug, Clone, PartialEq, Default)]
struct Put {
    /// The parameter name.
    name: String,
    /// `String` or `StringList`.
    kind: String,
    /// The value.
    value: String,
    /// `Description` (`""` clears it).
    description: Option<String>,
    /// `AllowedPattern` (`""` clears it).
    allowed_pattern: Option<String>,
    /// `Tier`; left out, SSM applies the account's default tier.
    tier: Option<String>,
    /// `Policies` as a JSON array (`"[]"` removes them all).
    policies: Option<String>,
    /// `DataType`.
    data_type: Option<String>,
}

/// A template string property, an empty one counted as absent.
fn setting(properties: &Map<String, Value>, name: &str) -> Option<String> {
    text(properties.get(name)).filter(|s| !s.is_empty())
}

/// `Policies` as SSM takes it: a JSON string, which a template may also write as the array.
fn policies(properties: &Map<String, Value>) -> Option<String> {
    match properties.get("Policies")? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The template's `Type`, refused unless CloudFormation takes it.
fn parameter_type(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    match string(properties.get("Type")).as_deref() {
        Some(kind @ ("String" | "StringList")) => Ok(kind.to_string()),
        Some("SecureString") => Err(ProviderError::validation(format!(
            "{what}: Type SecureString is not supported by CloudFormation's AWS::SSM::Parameter; \
             use String or StringList (or AWS::SecretsManager::Secret for secrets)"
        ))),
        Some(other) => Err(ProviderError::validation(format!(
            "{what}: Type {other:?} is not one of String, StringList"
        ))),
        None => Err(ProviderError::validation(format!(
            "{what}: property Type is required (String or StringList)"
        ))),
    }
}

/// The template's `Value`, required (numbers and booleans taken as written).
fn parameter_value(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    text(properties.get("Value")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: property Value is required and must be a string"
        ))
    })
}

/// The PutParameter of a create of `name` from `properties`.
fn create_put(
    name: &str,
    properties: &Map<String, Value>,
    what: &str,
) -> Result<Put, ProviderError> {
    Ok(Put {
        name: name.to_string(),
        kind: parameter_type(properties, what)?,
        value: parameter_value(properties, what)?,
        description: setting(properties, "Description"),
        allowed_pattern: setting(properties, "AllowedPattern"),
        tier: setting(properties, "Tier"),
        policies: policies(properties),
        data_type: setting(properties, "DataType"),
    })
}

/// The PutParameter (with `Overwrite`) of an update from `before` to `after`: the template's
/// settings, and a removed one back at SSM's default, as CloudFormation resets it. A removed
/// `Tier` is left out: SSM applies its default tier, and an advanced parameter never goes back
/// to standard.
fn update_put(
    name: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    what: &str,
) -> Result<Put, ProviderError> {
    let mut put = create_put(name, after, what)?;
    let removed = |property: &str| {
        before.get(property).is_some_and(|v| !v.is_null()) && setting(after, property).is_none()
    };
    if put.description.is_none() && removed("Description") {
        put.description = Some(String::new());
    }
    if put.allowed_pattern.is_none() && removed("AllowedPattern") {
        put.allowed_pattern = Some(String::new());
    }
    if put.policies.is_none() && policies(before).is_some() {
        put.policies = Some("[]".to_string());
    }
    if put.data_type.is_none() && removed("DataType") {
        put.data_type = Some(DEFAULT_DATA_TYPE.to_string());
    }
    Ok(put)
}

/// Whether an update changes anything PutParameter sets (a tags-only change puts no new
/// version).
fn settings_changed(before: &Map<String, Value>, after: &Map<String, Value>) -> bool {
    SETTINGS.iter().any(|name| {
        let value = |m: &Map<String, Value>| m.get(*name).filter(|v| !v.is_null()).cloned();
        value(before) != value(after)
    })
}

/// The template's tags by key: the schema's object `{key: value}`, or the usual
/// `[{Key, Value}]` list when a template writes that.
fn tag_map(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    let mut tags: BTreeMap<String, String> = match properties.get("Tags") {
        Some(Value::Object(tags)) => tags
            .iter()
            .filter_map(|(key, value)| Some((key.clone(), text(Some(value))?)))
            .collect(),
        other => tag_pairs(other).unwrap_or_default().into_iter().collect(),
    };
    // cdkd's own tag is never the template's to set or remove.
    tags.remove(CREATE_TOKEN_TAG);
    tags
}

/// The tags to set (new or changed values) and the keys to remove, from `before` to `after`.
fn tag_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> (BTreeMap<String, String>, Vec<String>) {
    cdkd_aws_common::tag_changes(&tag_map(before), &tag_map(after))
}

/// Whether the parameter `name` carries the create token `token` (`None` when its tags cannot be
/// read).
async fn created_by(ssm: &aws_sdk_ssm::Client, name: &str, token: &str) -> Option<bool> {
    let answer = ssm
        .list_tags_for_resource()
        .resource_type(ResourceTypeForTagging::Parameter)
        .resource_id(name)
        .send()
        .await
        .ok()?;
    Some(
        answer
            .tag_list()
            .iter()
            .any(|t| t.key() == CREATE_TOKEN_TAG && t.value() == token),
    )
}

/// Tags as SSM takes them.
fn sdk_tags(tags: &BTreeMap<String, String>, what: &str) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(key, value)| {
            Tag::builder()
                .key(key)
                .value(value)
                .build()
                .map_err(|e| ProviderError::validation(format!("{what}: tag {key}: {e}")))
        })
        .collect()
}

/// The PutParameter call of `put`; `tags` only on a create.
async fn send_put(
    ssm: &aws_sdk_ssm::Client,
    what: &str,
    put: &Put,
    overwrite: bool,
    tags: Vec<Tag>,
) -> Result<(), ProviderError> {
    ssm.put_parameter()
        .name(&put.name)
        .value(&put.value)
        .r#type(ParameterType::from(put.kind.as_str()))
        .overwrite(overwrite)
        .set_description(put.description.clone())
        .set_allowed_pattern(put.allowed_pattern.clone())
        .set_tier(put.tier.as_deref().map(ParameterTier::from))
        .set_policies(put.policies.clone())
        .set_data_type(put.data_type.clone())
        .set_tags(Some(tags).filter(|t| !t.is_empty()))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| with_ssm_kind(aws_error(&format!("{what}: PutParameter {}", put.name), e)))
}

/// The live parameter named `name`; `None` when there is none.
async fn get_parameter(
    ssm: &aws_sdk_ssm::Client,
    what: &str,
    name: &str,
) -> Result<Option<aws_sdk_ssm::types::Parameter>, ProviderError> {
    let answer = ssm
        .get_parameter()
        .name(name)
        .send()
        .await
        .map_err(|e| with_ssm_kind(aws_error(&format!("{what}: GetParameter {name}"), e)));
    Ok(found(answer)?.and_then(|a| a.parameter))
}

/// The ARN of the parameter just put. A `text` parameter is waited for (Parameter Store may
/// answer a read before the write shows); an `aws:ec2:image` one appears only once AWS has
/// validated the image, which is not waited for: its ARN is then read when asked for.
async fn arn_after_put(
    ssm: &aws_sdk_ssm::Client,
    what: &str,
    put: &Put,
) -> Result<Option<String>, ProviderError> {
    let wait = put.data_type.as_deref().unwrap_or(DEFAULT_DATA_TYPE) == DEFAULT_DATA_TYPE;
    let arn = |parameter: aws_sdk_ssm::types::Parameter| parameter.arn().map(ToString::to_string);
    if !wait {
        return Ok(get_parameter(ssm, what, &put.name).await?.and_then(arn));
    }
    let parameter = cdkd_aws_common::poll(Duration::from_secs(600), || {
        get_parameter(ssm, what, &put.name)
    })
    .await?
    .ok_or_else(|| {
        ProviderError::other(format!(
            "{what}: parameter {} did not appear within 10 minutes of PutParameter",
            put.name
        ))
    })?;
    Ok(arn(parameter))
}

/// The attributes a create or update reports: `Type` and `Value` as put, and `Arn`.
fn put_attributes(put: &Put, arn: Option<String>) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Type".into(), json!(put.kind));
    attributes.insert("Value".into(), json!(put.value));
    if let Some(arn) = arn {
        attributes.insert("Arn".into(), json!(arn));
    }
    attributes
}

/// The attributes of a live parameter.
fn live_attributes(parameter: &aws_sdk_ssm::types::Parameter) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let Some(kind) = parameter.r#type() {
        attributes.insert("Type".into(), json!(kind.as_str()));
    }
    if let Some(value) = parameter.value() {
        attributes.insert("Value".into(), json!(value));
    }
    if let Some(arn) = parameter.arn() {
        attributes.insert("Arn".into(), json!(arn));
    }
    attributes
}

/// The DescribeParameters entry of `name` (its description, pattern, tier, policies); `None`
/// when it has none. A filtered DescribeParameters may answer empty pages that still carry a
/// token, so pages are followed until the entry or the end.
async fn metadata(
    ssm: &aws_sdk_ssm::Client,
    what: &str,
    name: &str,
) -> Result<Option<ParameterMetadata>, ProviderError> {
    let filter = ParameterStringFilter::builder()
        .key("Name")
        .option("Equals")
        .values(name)
        .build()
        .map_err(|e| ProviderError::other(format!("{what}: DescribeParameters filter: {e}")))?;
    let mut token: Option<String> = None;
    loop {
        let page = ssm
            .describe_parameters()
            .parameter_filters(filter.clone())
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| {
                with_ssm_kind(aws_error(&format!("{what}: DescribeParameters {name}"), e))
            })?;
        if let Some(entry) = page.parameters().iter().find(|p| p.name() == Some(name)) {
            return Ok(Some(entry.clone()));
        }
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => return Ok(None),
        }
    }
}

/// The live policies as the template's JSON string: the template's own text when it says the
/// same (so formatting is no drift), else the policies' JSON array; `None` when there are none.
fn policies_text(live: &[ParameterInlinePolicy], template: Option<&Value>) -> Option<String> {
    let documents: Vec<Value> = live
        .iter()
        .filter_map(ParameterInlinePolicy::policy_text)
        .map(|text| serde_json::from_str(text).unwrap_or_else(|_| json!(text)))
        .collect();
    if documents.is_empty() {
        return None;
    }
    let documents = Value::Array(documents);
    if let Some(given) = template.and_then(Value::as_str) {
        if serde_json::from_str::<Value>(given).ok().as_ref() == Some(&documents) {
            return Some(given.to_string());
        }
    }
    Some(documents.to_string())
}

/// The live parameter in template shape, from GetParameter, its DescribeParameters entry and
/// its tags (AWS's own `aws:` tags left out: no template sets them).
fn template_shape(
    parameter: &aws_sdk_ssm::types::Parameter,
    metadata: Option<&ParameterMetadata>,
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    if let Some(name) = parameter.name() {
        props.insert("Name".into(), json!(name));
    }
    if let Some(kind) = parameter.r#type() {
        props.insert("Type".into(), json!(kind.as_str()));
    }
    if let Some(value) = parameter.value() {
        props.insert("Value".into(), json!(value));
    }
    let data_type = parameter
        .data_type()
        .or_else(|| metadata.and_then(ParameterMetadata::data_type));
    if let Some(data_type) = data_type.filter(|d| !d.is_empty()) {
        props.insert("DataType".into(), json!(data_type));
    }
    if let Some(metadata) = metadata {
        if let Some(description) = metadata.description().filter(|d| !d.is_empty()) {
            props.insert("Description".into(), json!(description));
        }
        if let Some(pattern) = metadata.allowed_pattern().filter(|p| !p.is_empty()) {
            props.insert("AllowedPattern".into(), json!(pattern));
        }
        if let Some(tier) = metadata.tier() {
            // Intelligent-Tiering is how a tier is chosen, never a parameter's tier: a
            // template asking for it is answered with its own word.
            let tier = match string(template.get("Tier")).as_deref() {
                Some("Intelligent-Tiering") => "Intelligent-Tiering",
                _ => tier.as_str(),
            };
            props.insert("Tier".into(), json!(tier));
        }
        if let Some(policies) = policies_text(metadata.policies(), template.get("Policies")) {
            props.insert("Policies".into(), json!(policies));
        }
    }
    let tags: Map<String, Value> = tags
        .iter()
        .filter(|t| !t.key().starts_with("aws:") && t.key() != CREATE_TOKEN_TAG)
        .map(|t| (t.key().to_string(), json!(t.value())))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect();
    if !tags.is_empty() {
        props.insert("Tags".into(), Value::Object(tags));
    }
    props
}

#[async_trait]
impl ResourceProvider for Parameter {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["Name", "Tags"])
            .handles(SETTINGS)
            .create_only(&["Name"])
            .read_and_import()
            .operations(&[operation::GET_ATTRIBUTE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let put = create_put(&name, &request.properties, &what)?;
        let mut tags = tag_map(&request.properties);
        let token = request.client_token.as_str();
        if !token.is_empty() {
            tags.insert(CREATE_TOKEN_TAG.to_string(), token.to_string());
        }
        let tags = sdk_tags(&tags, &what)?;
        let ssm = client(ctx).await?;
        // Overwrite=false: a parameter of that name already there is "already exists", never
        // silently taken over, unless it carries this create's token: then an earlier attempt
        // whose answer was lost made it (the SDK retried the put), and it is ours.
        if let Err(err) = send_put(&ssm, &what, &put, false, tags).await {
            if err.kind != ErrorKind::ALREADY_EXISTS
                || token.is_empty()
                || created_by(&ssm, &name, token).await != Some(true)
            {
                return Err(err);
            }
        }
        let arn = arn_after_put(&ssm, &what, &put).await?;
        Ok(CreateResult {
            attributes: put_attributes(&put, arn),
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
        let put = update_put(name, before, after, &what)?;
        let ssm = client(ctx).await?;
        if settings_changed(before, after) {
            send_put(&ssm, &what, &put, true, Vec::new()).await?;
        }
        let (set, removed) = tag_changes(before, after);
        if !removed.is_empty() {
            ssm.remove_tags_from_resource()
                .resource_type(ResourceTypeForTagging::Parameter)
                .resource_id(name)
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(|e| {
                    with_ssm_kind(aws_error(&format!("{what}: RemoveTagsFromResource"), e))
                })?;
        }
        if !set.is_empty() {
            ssm.add_tags_to_resource()
                .resource_type(ResourceTypeForTagging::Parameter)
                .resource_id(name)
                .set_tags(Some(sdk_tags(&set, &what)?))
                .send()
                .await
                .map_err(|e| with_ssm_kind(aws_error(&format!("{what}: AddTagsToResource"), e)))?;
        }
        let arn = arn_after_put(&ssm, &what, &put).await?;
        Ok(UpdateResult {
            attributes: put_attributes(&put, arn),
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
        let ssm = client(ctx).await?;
        deleted_unless_failed(
            ssm.delete_parameter()
                .name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    with_ssm_kind(aws_error(&format!("{what}: DeleteParameter {name}"), e))
                }),
        )
    }

    /// `Arn`, `Type` or `Value` of the live parameter (an `aws:ec2:image` parameter's ARN is
    /// only known once AWS has validated it).
    async fn get_attribute(
        &self,
        ctx: &PluginContext,
        request: GetAttributeRequest,
    ) -> Result<GetAttributeResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let ssm = client(ctx).await?;
        let Some(parameter) = get_parameter(&ssm, &what, &request.physical_id).await? else {
            return Err(does_not_exist(&what, &request.physical_id, "SSM"));
        };
        Ok(GetAttributeResult {
            value: live_attributes(&parameter).remove(&request.attribute),
        })
    }
}

#[async_trait]
impl Readable for Parameter {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ssm = client(ctx).await?;
        let name = request.physical_id.as_str();
        // The three reads at once: the reader runs after every create and update.
        let (parameter, metadata, tags) = tokio::join!(
            get_parameter(&ssm, what, name),
            metadata(&ssm, what, name),
            ssm.list_tags_for_resource()
                .resource_type(ResourceTypeForTagging::Parameter)
                .resource_id(name)
                .send(),
        );
        let Some(parameter) = parameter? else {
            return Ok(None);
        };
        let tags = tags.map_err(|e| {
            with_ssm_kind(aws_error(&format!("{what}: ListTagsForResource {name}"), e))
        });
        let Some(tags) = found(tags)? else {
            return Ok(None);
        };
        Ok(Some(template_shape(
            &parameter,
            metadata?.as_ref(),
            tags.tag_list(),
            &request.properties,
        )))
    }

    /// `Arn`, `Type` and `Value`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ssm = client(ctx).await?;
        match get_parameter(&ssm, what, physical_id).await? {
            Some(parameter) => Ok(live_attributes(&parameter)),
            None => Err(does_not_exist(what, physical_id, "SSM")),
        }
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
    fn the_create_token_tag_is_never_the_templates() {
        let props = json!({"Tags": {"team": "a", "cdkd:create-token": "forged"}});
        let tags = tag_map(props.as_object().unwrap());
        assert_eq!(tags.len(), 1);
        assert_eq!(tags["team"], "a");
    }

    #[test]
    fn tags_are_set_when_new_or_changed_and_removed_by_key() {
        let before = props(json!({"Tags": {"a": "1", "b": "2", "c": "3"}}));
        let after = props(json!({"Tags": {"a": "1", "b": "20", "d": "4"}}));
        let (set, removed) = tag_changes(&before, &after);
        let set: Vec<(&str, &str)> = set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(set, [("b", "20"), ("d", "4")]);
        assert_eq!(removed, ["c"]);
        let listed = props(json!({"Tags": [{"Key": "x", "Value": "y"}]}));
        assert_eq!(tag_map(&listed).get("x").map(String::as_str), Some("y"));
        let (_, all_gone) = tag_changes(&before, &props(json!({})));
        assert_eq!(all_gone, ["a", "b", "c"]);
    }

    #[test]
    fn a_create_puts_every_setting_of_the_template() {
        let template = props(json!({
            "Name": "/app/config",
            "Type": "StringList",
            "Value": "a,b",
            "Description": "settings",
            "AllowedPattern": "^[a-z,]+$",
            "Tier": "Advanced",
            "Policies": "[{\"Type\":\"Expiration\",\"Version\":\"1.0\",\"Attributes\":{\"Timestamp\":\"2030-01-01T00:00:00.000Z\"}}]",
            "DataType": "text",
            "Tags": {"team": "a", "env": "prod"},
        }));
        let put = create_put("/app/config", &template, "T L").unwrap();
        assert_eq!(
            put,
            Put {
                name: "/app/config".into(),
                kind: "StringList".into(),
                value: "a,b".into(),
                description: Some("settings".into()),
                allowed_pattern: Some("^[a-z,]+$".into()),
                tier: Some("Advanced".into()),
                policies: Some("[{\"Type\":\"Expiration\",\"Version\":\"1.0\",\"Attributes\":{\"Timestamp\":\"2030-01-01T00:00:00.000Z\"}}]".into()),
                data_type: Some("text".into()),
            }
        );
        let tags = sdk_tags(&tag_map(&template), "T L").unwrap();
        let pairs: Vec<(&str, &str)> = tags.iter().map(|t| (t.key(), t.value())).collect();
        assert_eq!(pairs, [("env", "prod"), ("team", "a")]);
        // A bare value of another JSON type is taken as written; policies may come as the array.
        let minimal = props(
            json!({"Type": "String", "Value": 42, "Policies": [{"Type": "NoChangeNotification"}]}),
        );
        let put = create_put("p", &minimal, "T L").unwrap();
        assert_eq!(put.value, "42");
        assert_eq!(
            put.policies.as_deref(),
            Some("[{\"Type\":\"NoChangeNotification\"}]")
        );
        assert_eq!(
            (put.description, put.tier, put.data_type),
            (None, None, None)
        );
    }

    #[test]
    fn secure_strings_and_missing_values_are_refused_by_name() {
        let secure = props(json!({"Type": "SecureString", "Value": "s"}));
        let err = create_put("p", &secure, "AWS::SSM::Parameter Secret").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(
            err.message.contains("AWS::SSM::Parameter Secret"),
            "{}",
            err.message
        );
        assert!(err.message.contains("SecureString"), "{}", err.message);
        let no_value = props(json!({"Type": "String"}));
        let err = create_put("p", &no_value, "T L").unwrap_err();
        assert!(err.message.contains("Value"), "{}", err.message);
        let no_type = props(json!({"Value": "v"}));
        assert_eq!(
            create_put("p", &no_type, "T L").unwrap_err().kind,
            ErrorKind::VALIDATION
        );
    }

    #[test]
    fn an_update_resets_removed_settings_to_ssm_defaults() {
        let before = props(json!({
            "Type": "String",
            "Value": "old",
            "Description": "d",
            "AllowedPattern": ".*",
            "Tier": "Advanced",
            "Policies": "[{\"Type\":\"Expiration\"}]",
            "DataType": "aws:ec2:image",
        }));
        let after = props(json!({"Type": "String", "Value": "new"}));
        let put = update_put("p", &before, &after, "T L").unwrap();
        assert_eq!(
            put,
            Put {
                name: "p".into(),
                kind: "String".into(),
                value: "new".into(),
                description: Some(String::new()),
                allowed_pattern: Some(String::new()),
                tier: None,
                policies: Some("[]".into()),
                data_type: Some("text".into()),
            }
        );
        // Nothing was set before, so nothing is reset.
        let plain = update_put("p", &after, &after, "T L").unwrap();
        assert_eq!(
            (plain.description, plain.policies, plain.data_type),
            (None, None, None)
        );
        assert!(settings_changed(&before, &after));
        assert!(!settings_changed(&after, &after));
        let retagged = props(json!({"Type": "String", "Value": "new", "Tags": {"a": "1"}}));
        assert!(!settings_changed(&after, &retagged));
    }

    #[test]
    fn the_live_parameter_reads_back_in_template_shape() {
        let parameter = aws_sdk_ssm::types::Parameter::builder()
            .name("/app/ami")
            .r#type(ParameterType::String)
            .value("ami-0123456789abcdef0")
            .arn("arn:aws:ssm:us-east-1:123456789012:parameter/app/ami")
            .data_type("aws:ec2:image")
            .build();
        // Keys in sorted order, so the compact array reads alike with or without serde_json's
        // preserve_order.
        let policy = "{\"Attributes\":{\"Timestamp\":\"2030-01-01T00:00:00.000Z\"},\"Type\":\"Expiration\",\"Version\":\"1.0\"}";
        let metadata = ParameterMetadata::builder()
            .name("/app/ami")
            .description("the image")
            .allowed_pattern("^ami-.*$")
            .tier(ParameterTier::Advanced)
            .policies(
                ParameterInlinePolicy::builder()
                    .policy_text(policy)
                    .policy_type("Expiration")
                    .policy_status("Pending")
                    .build(),
            )
            .build();
        let tags = [
            Tag::builder().key("z").value("26").build().unwrap(),
            Tag::builder().key("a").value("1").build().unwrap(),
            Tag::builder()
                .key("aws:cloudformation:stack-name")
                .value("S")
                .build()
                .unwrap(),
        ];
        let template = props(json!({
            "Tier": "Intelligent-Tiering",
            "Policies": format!("[ {policy} ]"),
        }));
        let shape = template_shape(&parameter, Some(&metadata), &tags, &template);
        assert_eq!(
            Value::Object(shape),
            json!({
                "Name": "/app/ami",
                "Type": "String",
                "Value": "ami-0123456789abcdef0",
                "DataType": "aws:ec2:image",
                "Description": "the image",
                "AllowedPattern": "^ami-.*$",
                "Tier": "Intelligent-Tiering",
                "Policies": format!("[ {policy} ]"),
                "Tags": {"a": "1", "z": "26"},
            })
        );
        // Without a template to echo, the tier is AWS's and the policies a compact array.
        let shape = template_shape(&parameter, Some(&metadata), &[], &Map::new());
        assert_eq!(shape["Tier"], "Advanced");
        assert_eq!(shape["Policies"], format!("[{policy}]"));
        assert!(!shape.contains_key("Tags"));
        let bare = template_shape(&parameter, None, &[], &Map::new());
        assert_eq!(bare.len(), 4);
        assert_eq!(
            Value::Object(live_attributes(&parameter)),
            json!({
                "Type": "String",
                "Value": "ami-0123456789abcdef0",
                "Arn": "arn:aws:ssm:us-east-1:123456789012:parameter/app/ami",
            })
        );
    }

    #[test]
    fn create_attributes_are_what_was_put() {
        let put = create_put("p", &props(json!({"Type": "String", "Value": "v"})), "T L").unwrap();
        assert_eq!(
            Value::Object(put_attributes(
                &put,
                Some("arn:aws:ssm:r:1:parameter/p".into())
            )),
            json!({"Type": "String", "Value": "v", "Arn": "arn:aws:ssm:r:1:parameter/p"})
        );
        assert_eq!(
            Value::Object(put_attributes(&put, None)),
            json!({"Type": "String", "Value": "v"})
        );
    }
}
