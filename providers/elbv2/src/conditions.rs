//! A listener rule's `Conditions` (host-header, path-pattern, http-header,
//! http-request-method, query-string, source-ip), from template shape to the SDK's and back.

use aws_sdk_elasticloadbalancingv2::types::{
    HostHeaderConditionConfig, HttpHeaderConditionConfig, HttpRequestMethodConditionConfig,
    PathPatternConditionConfig, QueryStringConditionConfig, QueryStringKeyValuePair, RuleCondition,
    SourceIpConditionConfig,
};
use cdkd_aws_common::{put, strings, text};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::only_keys;

const CONDITION_KEYS: &[&str] = &[
    "Field",
    "Values",
    "HostHeaderConfig",
    "PathPatternConfig",
    "HttpHeaderConfig",
    "HttpRequestMethodConfig",
    "QueryStringConfig",
    "SourceIpConfig",
];

fn values(config: &Value, what: &str, keys: &[&str]) -> Result<Vec<String>, ProviderError> {
    only_keys(config, keys, what)?;
    Ok(strings(config.get("Values")).unwrap_or_default())
}

/// One template condition as the SDK's; a key the plugin does not apply is refused.
pub(crate) fn condition(value: &Value, what: &str) -> Result<RuleCondition, ProviderError> {
    only_keys(value, CONDITION_KEYS, what)?;
    let mut condition = RuleCondition::builder()
        .set_field(text(value.get("Field")))
        .set_values(strings(value.get("Values")));
    if let Some(c) = value.get("HostHeaderConfig") {
        condition = condition.host_header_config(
            HostHeaderConditionConfig::builder()
                .set_values(Some(values(c, what, &["Values"])?))
                .build(),
        );
    }
    if let Some(c) = value.get("PathPatternConfig") {
        condition = condition.path_pattern_config(
            PathPatternConditionConfig::builder()
                .set_values(Some(values(c, what, &["Values"])?))
                .build(),
        );
    }
    if let Some(c) = value.get("HttpHeaderConfig") {
        condition = condition.http_header_config(
            HttpHeaderConditionConfig::builder()
                .set_http_header_name(text(c.get("HttpHeaderName")))
                .set_values(Some(values(c, what, &["HttpHeaderName", "Values"])?))
                .build(),
        );
    }
    if let Some(c) = value.get("HttpRequestMethodConfig") {
        condition = condition.http_request_method_config(
            HttpRequestMethodConditionConfig::builder()
                .set_values(Some(values(c, what, &["Values"])?))
                .build(),
        );
    }
    if let Some(c) = value.get("SourceIpConfig") {
        condition = condition.source_ip_config(
            SourceIpConditionConfig::builder()
                .set_values(Some(values(c, what, &["Values"])?))
                .build(),
        );
    }
    if let Some(c) = value.get("QueryStringConfig") {
        only_keys(c, &["Values"], what)?;
        let pairs = c
            .get("Values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| {
                QueryStringKeyValuePair::builder()
                    .set_key(text(p.get("Key")))
                    .set_value(text(p.get("Value")))
                    .build()
            })
            .collect();
        condition = condition.query_string_config(
            QueryStringConditionConfig::builder()
                .set_values(Some(pairs))
                .build(),
        );
    }
    Ok(condition.build())
}

/// A template list of conditions as the SDK's.
pub(crate) fn conditions(
    value: Option<&Value>,
    what: &str,
) -> Result<Vec<RuleCondition>, ProviderError> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| condition(c, what))
        .collect()
}

fn values_shape(values: &[String]) -> Value {
    json!({ "Values": values })
}

/// A live condition in template shape. AWS answers both the legacy `Values` and the typed
/// config for a host-header or path-pattern condition; the template's form (`typed`) decides
/// which one is kept.
pub(crate) fn condition_shape(condition: &RuleCondition, typed: bool) -> Value {
    let mut shape = Map::new();
    put(&mut shape, "Field", condition.field().map(Value::from));
    let mut any_config = false;
    if let Some(c) = condition.host_header_config() {
        shape.insert("HostHeaderConfig".into(), values_shape(c.values()));
        any_config = true;
    }
    if let Some(c) = condition.path_pattern_config() {
        shape.insert("PathPatternConfig".into(), values_shape(c.values()));
        any_config = true;
    }
    if let Some(c) = condition.http_header_config() {
        let mut config = Map::new();
        put(
            &mut config,
            "HttpHeaderName",
            c.http_header_name().map(Value::from),
        );
        config.insert("Values".into(), json!(c.values()));
        shape.insert("HttpHeaderConfig".into(), Value::Object(config));
        any_config = true;
    }
    if let Some(c) = condition.http_request_method_config() {
        shape.insert("HttpRequestMethodConfig".into(), values_shape(c.values()));
        any_config = true;
    }
    if let Some(c) = condition.source_ip_config() {
        shape.insert("SourceIpConfig".into(), values_shape(c.values()));
        any_config = true;
    }
    if let Some(c) = condition.query_string_config() {
        let pairs: Vec<Value> = c
            .values()
            .iter()
            .map(|p| {
                let mut pair = Map::new();
                put(&mut pair, "Key", p.key().map(Value::from));
                put(&mut pair, "Value", p.value().map(Value::from));
                Value::Object(pair)
            })
            .collect();
        shape.insert("QueryStringConfig".into(), json!({ "Values": pairs }));
        any_config = true;
    }
    if !condition.values().is_empty() && (!typed || !any_config) {
        shape.insert("Values".into(), json!(condition.values()));
        if !typed {
            shape.remove("HostHeaderConfig");
            shape.remove("PathPatternConfig");
        }
    }
    Value::Object(shape)
}

/// Live conditions in template shape; `template` (the conditions the template gave, when
/// known) decides per field between the legacy `Values` and the typed config.
pub(crate) fn conditions_shape(conditions: &[RuleCondition], template: Option<&Value>) -> Value {
    let legacy_fields: Vec<String> = template
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.get("Values").is_some())
        .filter_map(|c| text(c.get("Field")))
        .collect();
    Value::Array(
        conditions
            .iter()
            .map(|c| {
                let typed = !c
                    .field()
                    .is_some_and(|f| legacy_fields.iter().any(|l| l == f));
                condition_shape(c, typed)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_condition_type_travels_both_ways() {
        let template = json!([
            {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}},
            {"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example.com"]}},
            {"Field": "http-header", "HttpHeaderConfig": {"HttpHeaderName": "X-A", "Values": ["1"]}},
            {"Field": "http-request-method", "HttpRequestMethodConfig": {"Values": ["GET"]}},
            {"Field": "query-string", "QueryStringConfig": {"Values": [{"Key": "k", "Value": "v"}]}},
            {"Field": "source-ip", "SourceIpConfig": {"Values": ["10.0.0.0/8"]}},
        ]);
        let sdk = conditions(Some(&template), "w").unwrap();
        assert_eq!(conditions_shape(&sdk, Some(&template)), template);
    }

    #[test]
    fn the_legacy_values_form_reads_back_as_written() {
        let template = json!([{"Field": "path-pattern", "Values": ["/x"]}]);
        let live = RuleCondition::builder()
            .field("path-pattern")
            .values("/x")
            .path_pattern_config(PathPatternConditionConfig::builder().values("/x").build())
            .build();
        assert_eq!(
            conditions_shape(std::slice::from_ref(&live), Some(&template)),
            template
        );
        assert_eq!(
            conditions_shape(&[live], None),
            json!([{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/x"]}}])
        );
        let err = condition(&json!({"Field": "x", "RegexValues": ["a"]}), "R").unwrap_err();
        assert!(err.message.contains("RegexValues"));
    }
}
