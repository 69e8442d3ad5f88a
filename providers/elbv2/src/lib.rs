//! cdkd's elbv2 provider plugin: the Elastic Load Balancing v2 types CDK's
//! `ApplicationLoadBalancer`, `NetworkLoadBalancer` and their listeners synthesize
//! (`AWS::ElasticLoadBalancingV2::LoadBalancer`, `TargetGroup`, `Listener`, `ListenerRule`,
//! `ListenerCertificate`) through direct ELBv2 calls. Every physical id but the listener
//! certificate's is the resource's ARN, which is what CloudFormation's `Ref` returns.

mod actions;
mod conditions;
mod listener;
mod listener_certificate;
mod listener_rule;
mod load_balancer;
mod target_group;

cdkd_provider_api::export_plugin!(description: "AWS::ElasticLoadBalancingV2 LoadBalancer, TargetGroup, Listener, ListenerRule and ListenerCertificate through the ELBv2 API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<load_balancer::LoadBalancer>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<target_group::TargetGroup>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<listener::Listener>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<listener_rule::ListenerRule>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<listener_certificate::ListenerCertificate>
);

use std::collections::BTreeMap;
use std::future::Future;

use aws_sdk_elasticloadbalancingv2::types::Tag;
use cdkd_provider_api::protocol::FindCreatedRequest;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// An ELBv2 client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_elasticloadbalancingv2::Client, ProviderError> {
    let config = aws_sdk_elasticloadbalancingv2::config::Builder::from(
        &cdkd_aws_common::sdk_config(ctx).await?,
    )
    .retry_partition(cdkd_aws_common::retry_partition("cdkd-elbv2"))
    .build();
    Ok(aws_sdk_elasticloadbalancingv2::Client::from_conf(config))
}

/// ELBv2's own codes where the shared table has none or the wrong kind (its `…NotFound` codes
/// already read as "not found").
const KINDS: &[(&str, ErrorKind)] = &[
    ("DuplicateLoadBalancerName", ErrorKind::ALREADY_EXISTS),
    ("DuplicateTargetGroupName", ErrorKind::ALREADY_EXISTS),
    ("DuplicateListener", ErrorKind::ALREADY_EXISTS),
    ("PriorityInUse", ErrorKind::ALREADY_EXISTS),
    ("ResourceInUse", ErrorKind::CONFLICT),
    ("OperationNotPermitted", ErrorKind::VALIDATION),
    ("InvalidConfigurationRequest", ErrorKind::VALIDATION),
    ("InvalidSubnet", ErrorKind::VALIDATION),
    ("InvalidSecurityGroup", ErrorKind::VALIDATION),
    ("InvalidScheme", ErrorKind::VALIDATION),
    ("InvalidTarget", ErrorKind::VALIDATION),
    ("InvalidLoadBalancerAction", ErrorKind::VALIDATION),
    ("IncompatibleProtocols", ErrorKind::VALIDATION),
    ("UnsupportedProtocol", ErrorKind::VALIDATION),
    ("SSLPolicyNotFound", ErrorKind::VALIDATION),
    ("TooManyLoadBalancers", ErrorKind::VALIDATION),
    ("TooManyTargetGroups", ErrorKind::VALIDATION),
    ("TooManyListeners", ErrorKind::VALIDATION),
    ("TooManyRules", ErrorKind::VALIDATION),
    ("TooManyTargets", ErrorKind::VALIDATION),
    ("TooManyCertificates", ErrorKind::VALIDATION),
    ("TooManyTags", ErrorKind::VALIDATION),
];

/// `err` (from `aws_error`) with the kind ELBv2's code stands for.
pub(crate) fn kinds(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, KINDS)
}

/// A failed call's error, named by `context`, with ELBv2's kinds.
macro_rules! failed {
    ($context:expr) => {
        |e| $crate::kinds(cdkd_aws_common::aws_error(&$context, e))
    };
}
pub(crate) use failed;

/// Whether `key`'s value differs between two templates (a missing key and `null` alike).
pub(crate) fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    before.get(key).filter(|v| !v.is_null()) != after.get(key).filter(|v| !v.is_null())
}

/// The longest load balancer or target group name ELBv2 takes.
pub(crate) const MAX_NAME: usize = 32;

/// A load balancer or target group name as ELBv2 takes it, from CloudFormation's generated
/// shape: only letters, digits and single hyphens, none at either end (a stack part cut short
/// can end in one, and ELBv2 refuses `--`).
pub(crate) fn elb_safe(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if c == '-' && (out.is_empty() || out.ends_with('-')) {
            continue;
        }
        out.push(c);
    }
    out.trim_end_matches('-').to_string()
}

/// The name a create gives a load balancer or target group: the template's `Name`, else
/// `{stack}-{logicalId}-{SUFFIX}` (the suffix from the create's token) in 32 characters.
pub(crate) fn name_for(
    properties: &Map<String, Value>,
    stack: &str,
    logical_id: &str,
    token: &str,
) -> String {
    cdkd_aws_common::string(properties.get("Name")).unwrap_or_else(|| {
        elb_safe(&cdkd_aws_common::generated_name(
            stack, logical_id, token, MAX_NAME, false, "",
        ))
    })
}

/// The name a load balancer's or target group's create took, for the run after a crash to look
/// for; `None` when the template gives no `Name` and the request lacks the stack or token a
/// generated one is made from.
pub(crate) fn created_name(request: &FindCreatedRequest) -> Option<String> {
    if !request.properties.contains_key("Name")
        && (request.stack_name.is_empty() || request.token.is_empty())
    {
        return None;
    }
    Some(name_for(
        &request.properties,
        &request.stack_name,
        &request.logical_id,
        &request.token,
    ))
}

/// What a create made: the answer's resource (`missing` when the answer has none). On "already
/// exists" for a name generated from this create's token (the template gives no `Name`), the
/// resource of that name (`named`) is this create's own: an earlier attempt whose answer was
/// lost made it.
pub(crate) async fn created_or_own<T, Fut>(
    answer: Result<Option<T>, ProviderError>,
    properties: &Map<String, Value>,
    missing: impl FnOnce() -> ProviderError,
    named: impl FnOnce() -> Fut,
) -> Result<T, ProviderError>
where
    Fut: Future<Output = Result<Option<T>, ProviderError>>,
{
    match answer {
        Ok(answer) => answer.ok_or_else(missing),
        Err(err) if err.kind == ErrorKind::ALREADY_EXISTS && !properties.contains_key("Name") => {
            named().await?.ok_or(err)
        }
        Err(err) => Err(err),
    }
}

/// `configured` (the settings a create cannot send, applied to the `noun` `arn` it made); when
/// that failed, the new resource is deleted again (`undo`, true when it was) and the error says
/// whether it was, so nothing half-made is left unnamed.
pub(crate) async fn configured_or_undone<Fut>(
    configured: Result<(), ProviderError>,
    noun: &str,
    arn: &str,
    undo: impl FnOnce() -> Fut,
) -> Result<(), ProviderError>
where
    Fut: Future<Output = bool>,
{
    let Err(err) = configured else {
        return Ok(());
    };
    let fate = if undo().await {
        "deleted again"
    } else {
        "NOT deleted: delete it by hand"
    };
    Err(ProviderError::new(
        err.kind,
        format!(
            "{}; the {noun} {arn} it had created was {fate}",
            err.message
        ),
    ))
}

/// The template's `Tags` as ELBv2 tags.
pub(crate) fn sdk_tags(properties: &Map<String, Value>) -> Option<Vec<Tag>> {
    let tags = cdkd_aws_common::tag_map_without_token(properties);
    (!tags.is_empty()).then(|| {
        tags.into_iter()
            .map(|(k, v)| Tag::builder().key(k).value(v).build())
            .collect()
    })
}

/// The live tags of `arn` in template shape (`None` without any).
pub(crate) async fn read_tags(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Value>, ProviderError> {
    let answer = elb
        .describe_tags()
        .resource_arns(arn)
        .send()
        .await
        .map_err(failed!(format!("{what}: DescribeTags {arn}")))?;
    let pairs: Vec<(&str, &str)> = answer
        .tag_descriptions()
        .iter()
        .flat_map(|d| d.tags())
        .filter_map(|t| Some((t.key()?, t.value().unwrap_or_default())))
        .filter(|(k, _)| *k != cdkd_provider_api::protocol::CREATE_TOKEN_TAG)
        .collect();
    Ok(cdkd_aws_common::template_tags(pairs))
}

/// Brings the tags of `arn` from the `before` template's to the `after` one's.
pub(crate) async fn update_tags(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed): (BTreeMap<String, String>, Vec<String>) = cdkd_aws_common::tag_changes(
        &cdkd_aws_common::tag_map_without_token(before),
        &cdkd_aws_common::tag_map_without_token(after),
    );
    if !removed.is_empty() {
        elb.remove_tags()
            .resource_arns(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(failed!(format!("{what}: RemoveTags {arn}")))?;
    }
    if !set.is_empty() {
        elb.add_tags()
            .resource_arns(arn)
            .set_tags(Some(
                set.into_iter()
                    .map(|(k, v)| Tag::builder().key(k).value(v).build())
                    .collect(),
            ))
            .send()
            .await
            .map_err(failed!(format!("{what}: AddTags {arn}")))?;
    }
    Ok(())
}

/// A template's `[{Key, Value}]` attribute list (`LoadBalancerAttributes`,
/// `TargetGroupAttributes`, `ListenerAttributes`) by key, values as text.
pub(crate) fn key_values(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|item| {
            Some((
                cdkd_aws_common::string(item.get("Key"))?,
                cdkd_aws_common::text(item.get("Value"))?,
            ))
        })
        .collect()
}

/// The attributes to send for a change from `before` to `after`: new or changed values (a
/// dropped key keeps its live value, as CloudFormation leaves it).
pub(crate) fn changed_key_values(
    before: Option<&Value>,
    after: Option<&Value>,
) -> Vec<(String, String)> {
    let old = key_values(before);
    key_values(after)
        .into_iter()
        .filter(|(k, v)| old.get(k) != Some(v))
        .collect()
}

/// Live attributes back in template shape, sorted by key: only the keys `wanted` lists (the
/// template's own, as AWS reports every attribute with its default), or all when it is empty.
pub(crate) fn key_values_shape<'a>(
    live: impl IntoIterator<Item = (&'a str, &'a str)>,
    wanted: &BTreeMap<String, String>,
) -> Option<Value> {
    let sorted: BTreeMap<&str, &str> = live
        .into_iter()
        .filter(|(k, _)| wanted.is_empty() || wanted.contains_key(*k))
        .collect();
    (!sorted.is_empty()).then(|| {
        Value::Array(
            sorted
                .into_iter()
                .map(|(k, v)| json!({"Key": k, "Value": v}))
                .collect(),
        )
    })
}

/// The part of an ELBv2 ARN after `marker` (`app/name/id` of a load balancer's, after
/// `:loadbalancer/`): CloudFormation's `…FullName` attributes.
pub(crate) fn arn_suffix(arn: &str, marker: &str) -> Option<String> {
    arn.split_once(marker).map(|(_, rest)| rest.to_string())
}

/// Refuses keys of a template object that the plugin does not apply, so nothing is dropped
/// without a word (`what` names the resource and the property).
pub(crate) fn only_keys(value: &Value, known: &[&str], what: &str) -> Result<(), ProviderError> {
    if let Some(map) = value.as_object() {
        if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(ProviderError::validation(format!(
                "{what}: {key} is not supported by cdkd's elbv2 plugin (supported: {}); deploy this resource through Cloud Control by disabling the elbv2 plugin for it",
                known.join(", ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn generated_names_fit_elbv2s_rules() {
        let name = name_for(&Map::new(), "AlbStack", "LB8A12904C", "t1");
        assert!(name.len() <= MAX_NAME, "{name}");
        assert!(name.starts_with("AlbStack-LB8A12904C-"), "{name}");
        assert_eq!(name, name_for(&Map::new(), "AlbStack", "LB8A12904C", "t1"));
        let cut = name_for(&Map::new(), "my-long-stack-name", "Target", "t1");
        assert!(!cut.contains("--") && !cut.ends_with('-'), "{cut}");
        assert!(cut.len() <= MAX_NAME);
        assert_eq!(
            name_for(&props(json!({"Name": "given"})), "S", "L", "t"),
            "given"
        );
        assert_eq!(elb_safe("-a--b_c-"), "a-b-c");
    }

    #[test]
    fn attribute_lists_change_by_key_and_read_back_filtered() {
        let before = json!([{"Key": "a", "Value": "1"}, {"Key": "b", "Value": 2}]);
        let after = json!([{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "3"}, {"Key": "c", "Value": true}]);
        assert_eq!(
            changed_key_values(Some(&before), Some(&after)),
            [
                ("b".to_string(), "3".to_string()),
                ("c".into(), "true".into())
            ]
        );
        let wanted = key_values(Some(&before));
        assert_eq!(
            key_values_shape([("z", "9"), ("b", "2"), ("a", "1")], &wanted),
            Some(json!([{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]))
        );
        assert_eq!(
            key_values_shape([("z", "9")], &BTreeMap::new()),
            Some(json!([{"Key": "z", "Value": "9"}]))
        );
    }

    #[test]
    fn arns_give_full_names_and_unknown_keys_are_refused() {
        let arn =
            "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/app/my-lb/50dc6c495c0c9188";
        assert_eq!(
            arn_suffix(arn, ":loadbalancer/").as_deref(),
            Some("app/my-lb/50dc6c495c0c9188")
        );
        assert!(only_keys(&json!({"A": 1}), &["A"], "w").is_ok());
        let err = only_keys(&json!({"A": 1, "B": 2}), &["A"], "w").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(err.message.contains('B'));
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "PriorityInUse"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
    }
}
