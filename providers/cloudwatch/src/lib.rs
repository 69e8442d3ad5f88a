//! cdkd's CloudWatch provider plugin: `AWS::CloudWatch::Alarm`, `AWS::CloudWatch::CompositeAlarm`
//! and `AWS::CloudWatch::Dashboard` through direct CloudWatch calls. Alarms and dashboards are
//! addressed by name, tags by ARN. CloudWatch's Put calls overwrite an existing resource of the
//! same name silently, so a create first looks for one and refuses it, as CloudFormation does;
//! each create tags its resource with the create token ([`CREATE_TOKEN_TAG`]) so that
//! `find_created` can find a generated name again after a crash.

mod alarm;
mod composite_alarm;
mod dashboard;

cdkd_provider_api::export_plugin!(description: "AWS::CloudWatch::Alarm, CompositeAlarm and Dashboard through the CloudWatch API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<alarm::Alarm>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<composite_alarm::CompositeAlarm>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<dashboard::Dashboard>);

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_cloudwatch::types::{ActionConfiguration, AlarmTagsPropagation, AlarmType, Tag};
pub(crate) use cdkd_aws_common::found;
use cdkd_aws_common::{flag, string, strings, Readable};
use cdkd_provider_api::protocol::{
    operation, FindCreatedRequest, FindCreatedResult, ReadCurrentStateRequest, CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// A CloudWatch client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_cloudwatch::Client, ProviderError> {
    let config =
        aws_sdk_cloudwatch::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-cloudwatch"))
            .build();
    Ok(aws_sdk_cloudwatch::Client::from_conf(config))
}

/// The kind CloudWatch's own error codes stand for, where the shared table has none or the
/// wrong one.
pub(crate) const CW_KINDS: &[(&str, ErrorKind)] = &[
    ("ResourceNotFound", ErrorKind::NOT_FOUND),
    ("ResourceNotFoundException", ErrorKind::NOT_FOUND),
    // Another change to the same resource is in flight, or CloudWatch failed inside: a
    // later try succeeds.
    ("ConcurrentModificationException", ErrorKind::THROTTLED),
    ("InternalServiceError", ErrorKind::SERVICE_ERROR),
    ("InternalServiceFault", ErrorKind::SERVICE_ERROR),
    ("ConflictException", ErrorKind::CONFLICT),
    ("ResourceConflict", ErrorKind::CONFLICT),
    ("InvalidParameterInput", ErrorKind::VALIDATION),
    ("InvalidFormat", ErrorKind::VALIDATION),
    ("LimitExceeded", ErrorKind::VALIDATION),
    ("LimitExceededFault", ErrorKind::VALIDATION),
];

/// A `map_err` closure turning an SDK error of the call `$call` into a provider error with
/// CloudWatch's kinds, naming `$what` and the call.
macro_rules! cw_error {
    ($what:expr, $call:expr) => {
        cdkd_aws_common::call_error!($crate::CW_KINDS, $what, $call)
    };
}
pub(crate) use cw_error;

/// A template number, as a JSON number or a string (templates carry both).
pub(crate) fn float(value: Option<&Value>) -> Option<f64> {
    let value = value?;
    value
        .as_f64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

/// A number CloudWatch answered as a template writes it: whole numbers without a fraction, so
/// `80` reads back as `80`, not `80.0`.
pub(crate) fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        json!(value as i64)
    } else {
        json!(value)
    }
}

/// A template list of action ARNs (`AlarmActions`, ...), `None` when absent.
pub(crate) fn actions(properties: &Map<String, Value>, name: &str) -> Option<Vec<String>> {
    strings(properties.get(name))
}

/// A live list of action ARNs in template shape; `None` when empty (no template writes `[]`
/// for "no actions").
pub(crate) fn action_list(live: &[String]) -> Option<Value> {
    (!live.is_empty()).then(|| json!(live))
}

/// The template's `ActionConfiguration.AlarmTagsPropagation` as CloudWatch takes it.
pub(crate) fn action_configuration(properties: &Map<String, Value>) -> Option<ActionConfiguration> {
    let propagation = properties
        .get("ActionConfiguration")?
        .get("AlarmTagsPropagation")?;
    Some(
        ActionConfiguration::builder()
            .alarm_tags_propagation(
                AlarmTagsPropagation::builder()
                    .set_enabled(flag(propagation.get("Enabled")))
                    .set_included_tag_keys(strings(propagation.get("IncludedTagKeys")))
                    .set_excluded_tag_keys(strings(propagation.get("ExcludedTagKeys")))
                    .build(),
            )
            .build(),
    )
}

/// A live `ActionConfiguration` in template shape.
pub(crate) fn action_configuration_shape(live: &ActionConfiguration) -> Option<Value> {
    let propagation = live.alarm_tags_propagation()?;
    let mut block = Map::new();
    cdkd_aws_common::put(
        &mut block,
        "Enabled",
        propagation.enabled().map(Value::Bool),
    );
    if !propagation.included_tag_keys().is_empty() {
        block.insert(
            "IncludedTagKeys".into(),
            json!(propagation.included_tag_keys()),
        );
    }
    if !propagation.excluded_tag_keys().is_empty() {
        block.insert(
            "ExcludedTagKeys".into(),
            json!(propagation.excluded_tag_keys()),
        );
    }
    Some(json!({"AlarmTagsPropagation": block}))
}

/// The template's tags by key, cdkd's create-token tag left out (a template never sets it; it
/// is the plugin's).
pub(crate) fn tag_map(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    cdkd_aws_common::tag_map_without_token(properties)
}

/// The tags a create puts: the template's, then the create `token` under [`CREATE_TOKEN_TAG`]
/// (none without a token).
pub(crate) fn create_tags(properties: &Map<String, Value>, token: &str) -> Vec<Tag> {
    let mut tags = sdk_tags(&tag_map(properties));
    if !token.is_empty() {
        tags.push(Tag::builder().key(CREATE_TOKEN_TAG).value(token).build());
    }
    tags
}

/// Tags as CloudWatch takes them.
pub(crate) fn sdk_tags(tags: &BTreeMap<String, String>) -> Vec<Tag> {
    tags.iter()
        .map(|(key, value)| Tag::builder().key(key).value(value).build())
        .collect()
}

/// The tags to set (new or changed values) and the keys to remove, from `before` to `after`;
/// the create-token tag is in neither, so an update never removes it.
pub(crate) fn tag_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> (BTreeMap<String, String>, Vec<String>) {
    cdkd_aws_common::tag_changes(&tag_map(before), &tag_map(after))
}

/// Applies a template's tag change to the resource `arn`: untag removed keys, tag new and
/// changed ones.
pub(crate) async fn update_tags(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed) = tag_changes(before, after);
    if !removed.is_empty() {
        cw.untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(cw_error!(what, "UntagResource"))?;
    }
    if !set.is_empty() {
        cw.tag_resource()
            .resource_arn(arn)
            .set_tags(Some(sdk_tags(&set)))
            .send()
            .await
            .map_err(cw_error!(what, "TagResource"))?;
    }
    Ok(())
}

/// Every tag of the resource `arn`; `None` when the resource is gone.
pub(crate) async fn live_tags(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Vec<Tag>>, ProviderError> {
    let answer = cw
        .list_tags_for_resource()
        .resource_arn(arn)
        .send()
        .await
        .map_err(cw_error!(what, "ListTagsForResource"));
    Ok(found(answer)?.map(|a| a.tags.unwrap_or_default()))
}

/// Tags as a template writes them: `[{Key, Value}]` sorted by key, AWS's own and cdkd's
/// create-token tag left out; `None` when there are none.
pub(crate) fn template_tags(tags: &[Tag]) -> Option<Value> {
    cdkd_aws_common::template_tags(
        tags.iter()
            .filter_map(|t| Some((t.key()?, t.value().unwrap_or_default())))
            .filter(|(key, _)| *key != CREATE_TOKEN_TAG),
    )
}

/// Whether tags carry the create `token`.
pub(crate) fn carries_token(tags: &[Tag], token: &str) -> bool {
    !token.is_empty()
        && tags
            .iter()
            .any(|t| t.key() == Some(CREATE_TOKEN_TAG) && t.value() == Some(token))
}

/// The ARN of the alarm named `name`, of either type; `None` when there is none.
async fn any_alarm(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
) -> Result<Option<String>, ProviderError> {
    let answer = cw
        .describe_alarms()
        .alarm_names(name)
        .alarm_types(AlarmType::MetricAlarm)
        .alarm_types(AlarmType::CompositeAlarm)
        .send()
        .await
        .map_err(cw_error!(what, format!("DescribeAlarms {name}")))?;
    let metric = answer
        .metric_alarms()
        .iter()
        .filter(|a| a.alarm_name() == Some(name))
        .map(|a| a.alarm_arn().unwrap_or_default().to_string());
    let composite = answer
        .composite_alarms()
        .iter()
        .filter(|a| a.alarm_name() == Some(name))
        .map(|a| a.alarm_arn().unwrap_or_default().to_string());
    Ok(metric.chain(composite).next())
}

/// Refuses a create whose name an existing resource already has (CloudWatch's Put calls would
/// overwrite it silently), unless that resource carries this create's `token`: then it is the
/// one an earlier attempt of the same create made, and putting it again is the retry.
pub(crate) async fn refuse_existing(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
    arn: Option<String>,
    token: &str,
) -> Result<(), ProviderError> {
    let Some(arn) = arn else {
        return Ok(());
    };
    let tags = if arn.is_empty() {
        None
    } else {
        live_tags(cw, what, &arn).await?
    };
    if tags.is_some_and(|tags| carries_token(&tags, token)) {
        return Ok(());
    }
    Err(ProviderError::new(
        ErrorKind::ALREADY_EXISTS,
        format!("{what}: {name} already exists"),
    ))
}

/// Refuses a create of the alarm `name` when an alarm of that name (either type) exists and is
/// not this create's (see [`refuse_existing`]).
pub(crate) async fn refuse_existing_alarm(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
    token: &str,
) -> Result<(), ProviderError> {
    let arn = any_alarm(cw, what, name).await?;
    refuse_existing(cw, what, name, arn, token).await
}

/// One page of DescribeAlarms for alarms of `kind`, `names` only when given.
async fn describe_page(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    kind: AlarmType,
    names: Option<Vec<String>>,
    token: Option<String>,
) -> Result<aws_sdk_cloudwatch::operation::describe_alarms::DescribeAlarmsOutput, ProviderError> {
    cw.describe_alarms()
        .set_alarm_names(names)
        .alarm_types(kind)
        .set_next_token(token)
        .send()
        .await
        .map_err(cw_error!(what, "DescribeAlarms"))
}

/// The ARN of the alarm `name` of `kind`, waited for until DescribeAlarms shows it (the Put
/// calls answer nothing, and a dependent needs the ARN).
pub(crate) async fn alarm_arn(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
    kind: AlarmType,
) -> Result<String, ProviderError> {
    let arn = cdkd_aws_common::poll(Duration::from_secs(600), || {
        let kind = kind.clone();
        async move {
            let page = describe_page(cw, what, kind, Some(vec![name.into()]), None).await?;
            let arn = page
                .metric_alarms()
                .iter()
                .filter(|a| a.alarm_name() == Some(name))
                .filter_map(|a| a.alarm_arn())
                .chain(
                    page.composite_alarms()
                        .iter()
                        .filter(|a| a.alarm_name() == Some(name))
                        .filter_map(|a| a.alarm_arn()),
                )
                .next()
                .map(ToString::to_string);
            Ok(arn)
        }
    })
    .await?;
    arn.ok_or_else(|| {
        ProviderError::other(format!(
            "{what}: alarm {name} did not appear within 10 minutes of its Put call"
        ))
    })
}

/// What a type's resources are listed with when looking for the one a create made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Listing {
    /// DescribeAlarms of this alarm type.
    Alarms(AlarmType),
    /// ListDashboards.
    Dashboards,
}

/// The part of the logical id every generated name holds in full: [`generated_name`] keeps at
/// least half its budget for the logical id, 121 characters of 255.
///
/// [`generated_name`]: cdkd_aws_common::generated_name
const LOGICAL_PART: usize = 120;

/// Whether a resource named `name` may be the one a create of `logical_id` made: the template's
/// own name when it gave one, else a generated name, which contains the logical id.
pub(crate) fn name_matches(name: &str, given: Option<&str>, logical_id: &str) -> bool {
    match given {
        Some(given) => name == given,
        None => {
            let logical: String = logical_id.chars().take(LOGICAL_PART).collect();
            name.contains(&logical)
        }
    }
}

/// Every resource of `listing` as `(name, arn)`, all pages.
async fn list_all(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    listing: &Listing,
    given: Option<&str>,
) -> Result<Vec<(String, String)>, ProviderError> {
    let mut all = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let next = match listing {
            Listing::Alarms(kind) => {
                let names = given.map(|n| vec![n.to_string()]);
                let page = describe_page(cw, what, kind.clone(), names, token.take()).await?;
                let entries = page
                    .metric_alarms()
                    .iter()
                    .map(|a| (a.alarm_name(), a.alarm_arn()))
                    .chain(
                        page.composite_alarms()
                            .iter()
                            .map(|a| (a.alarm_name(), a.alarm_arn())),
                    );
                all.extend(entries.filter_map(|(n, a)| Some((n?.to_string(), a?.to_string()))));
                page.next_token().map(ToString::to_string)
            }
            Listing::Dashboards => {
                let page = cw
                    .list_dashboards()
                    .set_dashboard_name_prefix(given.map(ToString::to_string))
                    .set_next_token(token.take())
                    .send()
                    .await
                    .map_err(cw_error!(what, "ListDashboards"))?;
                all.extend(page.dashboard_entries().iter().filter_map(|d| {
                    Some((
                        d.dashboard_name()?.to_string(),
                        d.dashboard_arn()?.to_string(),
                    ))
                }));
                page.next_token().map(ToString::to_string)
            }
        };
        match next {
            Some(next) if !next.is_empty() => token = Some(next),
            _ => return Ok(all),
        }
    }
}

/// The one resource a token names, none, or an error naming every one found.
pub(crate) fn one_or_none(
    what: &str,
    token: &str,
    mut names: Vec<String>,
) -> Result<Option<String>, ProviderError> {
    names.sort();
    names.dedup();
    match names.len() {
        0 => Ok(None),
        1 => Ok(names.pop()),
        _ => Err(ProviderError::new(
            ErrorKind::CONFLICT,
            format!(
                "{what}: {} resources carry the create token {CREATE_TOKEN_TAG}={token}: {}; cdkd cannot tell which one its create made (delete the extra ones, or import the right one)",
                names.len(),
                names.join(", ")
            ),
        )),
    }
}

/// Answers `find_created` for a type whose name property is `name_property` and whose
/// resources `listing` lists: the resource whose name may be the create's (see
/// [`name_matches`]) and whose tags carry its token, read back in template shape.
pub(crate) async fn find_created<T: Readable>(
    provider: &T,
    ctx: &PluginContext,
    type_name: &str,
    name_property: &str,
    listing: Listing,
    name: &str,
    request: Value,
) -> Result<Value, ProviderError> {
    if name != operation::FIND_CREATED {
        return Err(ProviderError::unsupported(format!(
            "{type_name} does not implement the '{name}' operation"
        )));
    }
    let request: FindCreatedRequest = serde_json::from_value(request)
        .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
    let what = format!("{type_name} {}", request.logical_id);
    if request.token.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: {name} needs the create's token"
        )));
    }
    let cw = client(ctx).await?;
    let given = string(request.properties.get(name_property));
    let mut names = Vec::new();
    for (candidate, arn) in list_all(&cw, &what, &listing, given.as_deref()).await? {
        if !name_matches(&candidate, given.as_deref(), &request.logical_id) {
            continue;
        }
        let tags = match live_tags(&cw, &what, &arn).await {
            Ok(tags) => tags.unwrap_or_default(),
            // Tags that cannot be read are not tags this plugin's create put.
            Err(err) if err.kind == ErrorKind::ACCESS_DENIED => continue,
            Err(err) => return Err(err),
        };
        if carries_token(&tags, &request.token) {
            names.push(candidate);
        }
    }
    let physical_id = one_or_none(&what, &request.token, names)?;
    let properties = match &physical_id {
        Some(id) => provider
            .read(
                ctx,
                &what,
                &ReadCurrentStateRequest {
                    logical_id: request.logical_id.clone(),
                    physical_id: id.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn cloudwatch_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(CW_KINDS, "ResourceNotFound"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(CW_KINDS, "InvalidParameterInput"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(CW_KINDS, "LimitExceeded"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(CW_KINDS, "InternalServiceError"),
            Some(ErrorKind::SERVICE_ERROR)
        );
        assert_eq!(cdkd_aws_common::kind_in(CW_KINDS, "Throttling"), None);
        let err = cdkd_aws_common::reclassify(
            ProviderError::new(ErrorKind::OTHER, "busy").with_aws_code("ConflictException"),
            CW_KINDS,
        );
        assert_eq!(err.kind, ErrorKind::CONFLICT);
    }

    #[test]
    fn numbers_read_in_both_spellings_and_come_back_whole() {
        assert_eq!(float(Some(&json!("80.5"))), Some(80.5));
        assert_eq!(float(Some(&json!(3))), Some(3.0));
        assert_eq!(float(None), None);
        assert_eq!(number(80.0), json!(80));
        assert_eq!(number(0.25), json!(0.25));
    }

    #[test]
    fn the_create_token_is_put_at_creation_and_never_read_or_untagged() {
        let template = props(json!({"Tags": [
            {"Key": "team", "Value": "a"},
            {"Key": CREATE_TOKEN_TAG, "Value": "forged"}
        ]}));
        let tags = create_tags(&template, "tok-1");
        let pairs: Vec<(Option<&str>, Option<&str>)> =
            tags.iter().map(|t| (t.key(), t.value())).collect();
        assert_eq!(
            pairs,
            [
                (Some("team"), Some("a")),
                (Some(CREATE_TOKEN_TAG), Some("tok-1"))
            ]
        );
        assert!(carries_token(&tags, "tok-1"));
        assert!(!carries_token(&tags, "tok-2"));
        assert!(!carries_token(&tags, ""));
        assert_eq!(
            template_tags(&tags),
            Some(json!([{"Key": "team", "Value": "a"}]))
        );
        let (set, removed) = tag_changes(&template, &Map::new());
        assert!(set.is_empty());
        assert_eq!(removed, ["team"]);
        assert_eq!(create_tags(&Map::new(), "").len(), 0);
    }

    #[test]
    fn find_created_takes_one_or_none_and_names_every_match() {
        assert_eq!(one_or_none("T L", "tok", vec![]).unwrap(), None);
        assert_eq!(
            one_or_none("T L", "tok", vec!["a".into(), "a".into()]).unwrap(),
            Some("a".into())
        );
        let err = one_or_none("T L", "tok", vec!["b".into(), "a".into()]).unwrap_err();
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        assert!(err.message.contains("T L"), "{}", err.message);
        assert!(err.message.contains("2 resources"), "{}", err.message);
        assert!(err.message.contains("a, b"), "{}", err.message);
    }

    #[test]
    fn candidates_are_the_given_name_or_names_holding_the_logical_id() {
        assert!(name_matches("Stack-HighCpu-ABC", None, "HighCpu"));
        assert!(!name_matches("Stack-LowCpu-ABC", None, "HighCpu"));
        assert!(name_matches("exact", Some("exact"), "HighCpu"));
        assert!(!name_matches("Stack-HighCpu-ABC", Some("exact"), "HighCpu"));
        let long = "L".repeat(200);
        let name = cdkd_aws_common::generated_name(&"S".repeat(200), &long, "t", 255, false, "");
        assert!(name_matches(&name, None, &long), "{name}");
    }

    #[test]
    fn action_configuration_round_trips() {
        let template = props(json!({"ActionConfiguration": {"AlarmTagsPropagation": {
            "Enabled": true, "IncludedTagKeys": ["team"]
        }}}));
        let config = action_configuration(&template).unwrap();
        assert_eq!(
            action_configuration_shape(&config),
            Some(json!({"AlarmTagsPropagation": {"Enabled": true, "IncludedTagKeys": ["team"]}}))
        );
        assert!(action_configuration(&Map::new()).is_none());
        assert_eq!(action_list(&[]), None);
        assert_eq!(action_list(&["arn:a".into()]), Some(json!(["arn:a"])));
    }
}
