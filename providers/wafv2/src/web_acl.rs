//! `AWS::WAFv2::WebACL`: physical id (and `Ref`) `Name|Id|Scope` as CloudFormation's;
//! attributes `Arn`, `Id`, `Capacity`, `LabelNamespace`. Every JSON setting (rules, default
//! action, visibility, custom response bodies ...) goes to WAF as written (see `body`). An
//! update or delete carries the lock token of a GetWebACL just before it, and is tried again
//! with a fresh one when another writer got in between (`WAFOptimisticLockException`).

use std::time::Duration;

use aws_sdk_wafv2::types::{Scope, Tag};
use cdkd_aws_common::{
    created_name, deleted_unless_failed, does_not_exist, given_or_generated_name, put, require_str,
    retry_while, string, tag_changes, tag_map, template_tags, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::body::{from_api, to_api, Capture, Splice};
use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::WAFv2::WebACL";

/// The longest web ACL name WAF takes.
const MAX_NAME: usize = 128;

/// The settings WAF takes as JSON, in the same shape as the template's.
const JSON_MEMBERS: &[&str] = &[
    "DefaultAction",
    "Rules",
    "VisibilityConfig",
    "CustomResponseBodies",
    "CaptchaConfig",
    "ChallengeConfig",
    "TokenDomains",
    "AssociationConfig",
    "DataProtectionConfig",
    "OnSourceDDoSProtectionConfig",
    "ApplicationConfig",
    "MonetizationConfig",
];

/// How long a write waits out other writers holding the lock token.
const LOCK_PATIENCE: Duration = Duration::from_secs(60);

/// The `AWS::WAFv2::WebACL` provider.
#[derive(Default)]
pub struct WebAcl;

/// A web ACL's `Name|Id|Scope`.
#[derive(Debug, PartialEq)]
pub(crate) struct AclId<'a> {
    pub name: &'a str,
    pub id: &'a str,
    pub scope: &'a str,
}

impl<'a> AclId<'a> {
    /// Splits a physical id.
    pub fn parse(physical_id: &'a str, what: &str) -> Result<Self, ProviderError> {
        let mut parts = physical_id.splitn(3, '|');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(name), Some(id), Some(scope)) if !name.is_empty() && !id.is_empty() => {
                Ok(AclId { name, id, scope })
            }
            _ => Err(ProviderError::validation(format!(
                "{what}: physical id {physical_id} is not Name|Id|Scope (as CloudFormation's Ref of a web ACL)"
            ))),
        }
    }

    /// The physical id.
    pub fn join(name: &str, id: &str, scope: &str) -> String {
        format!("{name}|{id}|{scope}")
    }
}

/// The template's scope; `CLOUDFRONT` only in us-east-1, as WAF requires.
fn scope_of(
    properties: &Map<String, Value>,
    region: &str,
    what: &str,
) -> Result<String, ProviderError> {
    let scope = require_str(properties, "Scope", what)?;
    match scope {
        "REGIONAL" => Ok(scope.into()),
        "CLOUDFRONT" if region == "us-east-1" => Ok(scope.into()),
        "CLOUDFRONT" => Err(ProviderError::validation(format!(
            "{what}: a CLOUDFRONT web ACL exists only in us-east-1, and this stack deploys to {region}: deploy the web ACL in a us-east-1 stack, or set Scope: REGIONAL"
        ))),
        other => Err(ProviderError::validation(format!(
            "{what}: Scope {other} is neither REGIONAL nor CLOUDFRONT"
        ))),
    }
}

/// The JSON members of a request from the template: its JSON settings (in WAF's spelling),
/// `Description`, and with `tags`, the tags.
fn members(properties: &Map<String, Value>, tags: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for key in JSON_MEMBERS {
        if let Some(value) = properties.get(*key).filter(|v| !v.is_null()) {
            out.insert((*key).into(), to_api(value));
        }
    }
    if let Some(description) = string(properties.get("Description")) {
        out.insert("Description".into(), json!(description));
    }
    if tags {
        let tags: Vec<Value> = tag_map(properties)
            .into_iter()
            .map(|(k, v)| json!({"Key": k, "Value": v}))
            .collect();
        if !tags.is_empty() {
            out.insert("Tags".into(), Value::Array(tags));
        }
    }
    out
}

/// The live web ACL (WAF's raw JSON `WebACL` object) in template shape.
fn template_shape(acl: &Value, scope: &str) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("Scope".into(), json!(scope));
    put(&mut props, "Name", acl.get("Name").cloned());
    // WAF answers "" for no description; the template leaves it out.
    put(
        &mut props,
        "Description",
        acl.get("Description")
            .filter(|d| d.as_str() != Some(""))
            .cloned(),
    );
    for key in JSON_MEMBERS {
        let value = acl.get(*key).filter(|v| match v {
            Value::Null => false,
            Value::Array(items) => !items.is_empty() || *key == "Rules",
            _ => true,
        });
        put(&mut props, key, value.map(from_api));
    }
    props
}

/// `Arn`, `Id`, `Capacity` and `LabelNamespace` of the raw `WebACL` object.
fn attributes_of(acl: &Value) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "Arn", acl.get("ARN").cloned());
    put(&mut attributes, "Id", acl.get("Id").cloned());
    put(&mut attributes, "Capacity", acl.get("Capacity").cloned());
    put(
        &mut attributes,
        "LabelNamespace",
        acl.get("LabelNamespace").cloned(),
    );
    attributes
}

/// The web ACL (raw JSON `WebACL` object) and its lock token; `None` when it does not exist.
async fn get(
    waf: &aws_sdk_wafv2::Client,
    what: &str,
    acl: &AclId<'_>,
) -> Result<Option<(Value, String)>, ProviderError> {
    let capture = Capture::default();
    let answer = cdkd_aws_common::found(
        waf.get_web_acl()
            .name(acl.name)
            .id(acl.id)
            .scope(Scope::from(acl.scope))
            .customize()
            .interceptor(capture.clone())
            .send()
            .await
            .map_err(failed!(format!("{what}: GetWebACL {}", acl.name))),
    )?;
    let Some(answer) = answer else {
        return Ok(None);
    };
    let raw = capture
        .json()
        .and_then(|body| body.get("WebACL").cloned())
        .ok_or_else(|| {
            ProviderError::other(format!("{what}: GetWebACL {} answered no WebACL", acl.name))
        })?;
    Ok(Some((raw, answer.lock_token().unwrap_or_default().into())))
}

/// Whether `err` is WAF refusing a stale lock token.
fn lock_lost(err: &ProviderError, _: Duration) -> bool {
    err.aws_code() == Some("WAFOptimisticLockException")
}

/// The id of the web ACL named `name` in `scope`; `None` when there is none.
async fn id_named(
    waf: &aws_sdk_wafv2::Client,
    what: &str,
    name: &str,
    scope: &str,
) -> Result<Option<String>, ProviderError> {
    let mut marker: Option<String> = None;
    loop {
        let page = waf
            .list_web_acls()
            .scope(Scope::from(scope))
            .limit(100)
            .set_next_marker(marker.take())
            .send()
            .await
            .map_err(failed!(format!("{what}: ListWebACLs {scope}")))?;
        if let Some(found) = page.web_acls().iter().find(|s| s.name() == Some(name)) {
            return Ok(found.id().map(ToString::to_string));
        }
        match page.next_marker() {
            Some(next) if !next.is_empty() && !page.web_acls().is_empty() => {
                marker = Some(next.to_string())
            }
            _ => return Ok(None),
        }
    }
}

fn waf_tags(tags: &std::collections::BTreeMap<String, String>) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(k, v)| {
            Tag::builder()
                .key(k)
                .value(v)
                .build()
                .map_err(|e| ProviderError::validation(format!("{TYPE}: Tags: {e}")))
        })
        .collect()
}

#[async_trait]
impl ResourceProvider for WebAcl {
    fn schema(&self) -> ResourceTypeSchema {
        let mut handled = vec!["Name", "Scope", "Description", "Tags"];
        handled.extend_from_slice(JSON_MEMBERS);
        TypeSchema::builder(TYPE)
            .handles(&handled)
            .create_only(&["Name", "Scope"])
            .read_and_import()
            .composite_id(&["Name", "Id", "Scope"], &[&["Name"], &[], &["Scope"]])
            .finds_created_in(&["Name", "Scope"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let scope = scope_of(&request.properties, ctx.region(), &what)?;
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let waf = client(ctx).await?;
        let created = waf
            .create_web_acl()
            .name(&name)
            .scope(Scope::from(scope.as_str()))
            .customize()
            .interceptor(Splice(members(&request.properties, true)))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateWebACL {name}")))?;
        let id = created
            .summary()
            .and_then(|s| s.id())
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateWebACL returned no id")))?
            .to_string();
        let acl = AclId {
            name: &name,
            id: &id,
            scope: &scope,
        };
        // Capacity and LabelNamespace are only in GetWebACL's answer.
        let attributes = match get(&waf, &what, &acl).await? {
            Some((raw, _)) => attributes_of(&raw),
            None => return Err(does_not_exist(&what, &name, "WAF")),
        };
        Ok(CreateResult {
            physical_id: AclId::join(&name, &id, &scope),
            attributes,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let acl = AclId::parse(&request.physical_id, &what)?;
        let waf = client(ctx).await?;
        // UpdateWebACL replaces every setting: what the new template leaves out is removed.
        let settings = members(&request.properties, false);
        retry_while(
            Duration::from_millis(200),
            LOCK_PATIENCE,
            lock_lost,
            || async {
                let (_, token) = get(&waf, &what, &acl)
                    .await?
                    .ok_or_else(|| does_not_exist(&what, acl.name, "WAF"))?;
                waf.update_web_acl()
                    .name(acl.name)
                    .id(acl.id)
                    .scope(Scope::from(acl.scope))
                    .lock_token(token)
                    .customize()
                    .interceptor(Splice(settings.clone()))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(failed!(format!("{what}: UpdateWebACL {}", acl.name)))
            },
        )
        .await?;
        let (raw, _) = get(&waf, &what, &acl)
            .await?
            .ok_or_else(|| does_not_exist(&what, acl.name, "WAF"))?;
        let attributes = attributes_of(&raw);
        let arn = string(attributes.get("Arn")).unwrap_or_default();
        let (set, removed): (std::collections::BTreeMap<String, String>, Vec<String>) = tag_changes(
            &tag_map(&request.previous_properties),
            &tag_map(&request.properties),
        );
        if !removed.is_empty() {
            waf.untag_resource()
                .resource_arn(&arn)
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
        }
        if !set.is_empty() {
            waf.tag_resource()
                .resource_arn(&arn)
                .set_tags(Some(waf_tags(&set)?))
                .send()
                .await
                .map_err(failed!(format!("{what}: TagResource {arn}")))?;
        }
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes,
            ..Default::default()
        })
    }

    /// A web ACL still associated with a resource is refused (`WAFAssociatedItemException`),
    /// as under CloudFormation; the associations of the same stack are deleted first.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let acl = AclId::parse(&request.physical_id, &what)?;
        let waf = client(ctx).await?;
        let result = retry_while(
            Duration::from_millis(200),
            LOCK_PATIENCE,
            lock_lost,
            || async {
                let Some((_, token)) = get(&waf, &what, &acl).await? else {
                    return Ok(());
                };
                waf.delete_web_acl()
                    .name(acl.name)
                    .id(acl.id)
                    .scope(Scope::from(acl.scope))
                    .lock_token(token)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(failed!(format!("{what}: DeleteWebACL {}", acl.name)))
            },
        )
        .await;
        if let Err(err) = &result {
            if err.aws_code() == Some("WAFAssociatedItemException") {
                return Err(ProviderError::new(
                    ErrorKind::CONFLICT,
                    format!(
                        "{what}: the web ACL {} is still associated with a resource: remove the association (aws wafv2 list-resources-for-web-acl, disassociate-web-acl), then destroy again",
                        acl.name
                    ),
                )
                .with_aws_code("WAFAssociatedItemException"));
            }
        }
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl Readable for WebAcl {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let acl = AclId::parse(&request.physical_id, what)?;
        let waf = client(ctx).await?;
        let Some((raw, _)) = get(&waf, what, &acl).await? else {
            return Ok(None);
        };
        let mut props = template_shape(&raw, acl.scope);
        let arn = string(raw.get("ARN")).unwrap_or_default();
        let tags = waf
            .list_tags_for_resource()
            .resource_arn(&arn)
            .send()
            .await
            .map_err(failed!(format!("{what}: ListTagsForResource {arn}")))?;
        put(
            &mut props,
            "Tags",
            template_tags(
                tags.tag_info_for_resource()
                    .map(|t| t.tag_list())
                    .unwrap_or_default()
                    .iter()
                    .map(|t| (t.key(), t.value())),
            ),
        );
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let acl = AclId::parse(physical_id, what)?;
        let waf = client(ctx).await?;
        let (raw, _) = get(&waf, what, &acl)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "WAF"))?;
        Ok(attributes_of(&raw))
    }

    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(name) = created_name(request, Some("Name"), MAX_NAME, false) else {
            return Ok(None);
        };
        let Some(scope) = string(request.properties.get("Scope")) else {
            return Ok(None);
        };
        let waf = client(ctx).await?;
        Ok(id_named(&waf, what, &name, &scope)
            .await?
            .map(|id| AclId::join(&name, &id, &scope)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn ids_are_name_id_scope() {
        let id = AclId::parse("web|abc-123|REGIONAL", "w").unwrap();
        assert_eq!(
            id,
            AclId {
                name: "web",
                id: "abc-123",
                scope: "REGIONAL"
            }
        );
        assert_eq!(
            AclId::join("web", "abc-123", "REGIONAL"),
            "web|abc-123|REGIONAL"
        );
        assert!(AclId::parse("web", "w").is_err());
        assert!(AclId::parse("|x|REGIONAL", "w").is_err());
    }

    #[test]
    fn cloudfront_scope_is_refused_outside_us_east_1() {
        let cf = props(json!({"Scope": "CLOUDFRONT"}));
        assert_eq!(scope_of(&cf, "us-east-1", "w").unwrap(), "CLOUDFRONT");
        let err = scope_of(&cf, "eu-west-1", "w").unwrap_err();
        assert!(err.message.contains("us-east-1"), "{}", err.message);
        assert!(scope_of(&props(json!({"Scope": "GLOBAL"})), "us-east-1", "w").is_err());
        assert!(scope_of(&Map::new(), "us-east-1", "w").is_err());
    }

    #[test]
    fn the_template_settings_go_whole_and_come_back_in_template_shape() {
        let template = props(json!({
            "Name": "web", "Scope": "REGIONAL", "Description": "d",
            "DefaultAction": {"Allow": {}},
            "VisibilityConfig": {"SampledRequestsEnabled": true, "CloudWatchMetricsEnabled": true, "MetricName": "m"},
            "Rules": [
                {"Name": "rate", "Priority": 0, "Action": {"Block": {}},
                 "Statement": {"RateBasedStatement": {"Limit": 100, "AggregateKeyType": "IP"}},
                 "VisibilityConfig": {"SampledRequestsEnabled": true, "CloudWatchMetricsEnabled": true, "MetricName": "rate"}},
                {"Name": "bad", "Priority": 1, "Action": {"Block": {}},
                 "Statement": {"ByteMatchStatement": {"SearchString": "x", "FieldToMatch": {"UriPath": {}}, "PositionalConstraint": "CONTAINS", "TextTransformations": [{"Priority": 0, "Type": "NONE"}]}},
                 "VisibilityConfig": {"SampledRequestsEnabled": true, "CloudWatchMetricsEnabled": true, "MetricName": "bad"}}
            ],
            "CustomResponseBodies": {"blocked": {"ContentType": "TEXT_PLAIN", "Content": "no"}},
            "Tags": [{"Key": "team", "Value": "web"}]
        }));
        let sent = members(&template, true);
        assert_eq!(
            sent["Rules"][1]["Statement"]["ByteMatchStatement"]["SearchString"],
            json!("eA==")
        );
        assert_eq!(sent["Tags"], json!([{"Key": "team", "Value": "web"}]));
        assert!(!members(&template, false).contains_key("Tags"));
        assert!(!sent.contains_key("Name") && !sent.contains_key("Scope"));
        // WAF answers the same members plus its own (ARN, Id, Capacity ...).
        let mut live = sent.clone();
        live.remove("Tags");
        live.insert("Name".into(), json!("web"));
        live.insert("ARN".into(), json!("arn:waf"));
        live.insert("Id".into(), json!("abc"));
        live.insert("Capacity".into(), json!(3));
        live.insert("TokenDomains".into(), json!([]));
        let mut expected = template.clone();
        expected.remove("Tags");
        assert_eq!(
            Value::Object(template_shape(&Value::Object(live.clone()), "REGIONAL")),
            Value::Object(expected)
        );
        assert_eq!(
            Value::Object(attributes_of(&Value::Object(live))),
            json!({"Arn": "arn:waf", "Id": "abc", "Capacity": 3})
        );
    }

    #[test]
    fn the_schema_finds_a_created_acl_by_name_in_its_scope() {
        let schema = WebAcl.schema();
        assert_eq!(schema.find_scope, ["Name", "Scope"]);
        assert!(schema
            .handled_properties
            .contains(&"MonetizationConfig".to_string()));
        assert_eq!(schema.create_only_properties, ["Name", "Scope"]);
    }
}
