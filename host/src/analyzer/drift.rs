//! Comparing a resource's live properties with its recorded baseline (the state spec's
//! `observedProperties` rules): which paths drifted, and the property bags `--accept` and
//! `--revert` write from them.
//!
//! The baseline is `observedProperties` when the record has it, else `properties`. Only the
//! baseline's top-level keys are compared (a top-level key only AWS reports is output, not
//! drift), except that an undeclared top-level key captured empty is skipped (a sibling
//! resource or AWS fills such keys after the capture), and that against `properties` a key the
//! reader does not report at all is skipped (a write-only property). Below the top level, an observed
//! baseline is compared over the keys of both sides (a key added in AWS is drift); a
//! `properties` baseline only over its own keys (it never held AWS's defaults). Arrays
//! compare whole; tag lists and lists of ids or ARNs compare in any order. A position that
//! holds the `NoEcho` mask or a `{{resolve:...}}` expression is never shown in plaintext.

use serde_json::{Map, Value};

use crate::state::schema::MASK;

/// One position where AWS differs from the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// The property path, key by key from the top level.
    pub path: Vec<String>,
    /// The baseline's value (`None`: the baseline has nothing there).
    pub recorded: Option<Value>,
    /// AWS's value (`None`: AWS has nothing there), masked where the baseline is a secret.
    pub live: Option<Value>,
}

impl Difference {
    /// The path as shown: keys joined by `.`.
    pub fn dotted(&self) -> String {
        self.path.join(".")
    }
}

/// The outcome of one comparison.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// Where AWS differs.
    pub differences: Vec<Difference>,
    /// Positions that could not be compared: the baseline holds the mask there.
    pub masked: Vec<Vec<String>>,
}

/// Compares `live` with the record's baseline (`observed`, else `properties`).
pub fn compare(
    properties: &Map<String, Value>,
    observed: Option<&Map<String, Value>>,
    live: &Map<String, Value>,
) -> Comparison {
    let mut comparison = Comparison::default();
    let baseline = observed.unwrap_or(properties);
    let union = observed.is_some();
    for (key, recorded) in baseline {
        if union && !properties.contains_key(key) && is_empty(recorded) {
            continue;
        }
        // Against `properties`, a key the reader never reports (write-only, such as a
        // function's `Code`) cannot be compared; an observed baseline came from the same
        // reader, so a key missing there is a real change.
        if !union && !live.contains_key(key) {
            continue;
        }
        walk(
            vec![key.clone()],
            Some(recorded),
            live.get(key),
            union,
            &mut comparison,
        );
    }
    comparison
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

fn is_secret(value: &Value) -> bool {
    matches!(value, Value::String(s) if s.contains(MASK) || s.contains("{{resolve:"))
}

fn walk(
    path: Vec<String>,
    recorded: Option<&Value>,
    live: Option<&Value>,
    union: bool,
    out: &mut Comparison,
) {
    match (recorded, live) {
        (Some(Value::String(mask)), _) if mask.contains(MASK) => out.masked.push(path),
        (Some(secret), Some(live)) if is_secret(secret) => {
            // Reads put the expression back where AWS holds the value it resolves to.
            if live != secret {
                out.differences.push(Difference {
                    path,
                    recorded: Some(secret.clone()),
                    live: Some(Value::String(MASK.into())),
                });
            }
        }
        (Some(Value::Object(recorded)), Some(Value::Object(live))) => {
            let mut keys: Vec<&String> = recorded.keys().collect();
            if union {
                keys.extend(live.keys().filter(|k| !recorded.contains_key(*k)));
            }
            for key in keys {
                let mut inner = path.clone();
                inner.push(key.clone());
                walk(inner, recorded.get(key), live.get(key), union, out);
            }
        }
        (recorded, live) => {
            let same = match (recorded, live) {
                (Some(a), Some(b)) => normalized(a) == normalized(b),
                (None, None) => true,
                _ => false,
            };
            if !same {
                out.differences.push(Difference {
                    path,
                    recorded: recorded.cloned(),
                    live: live.cloned(),
                });
            }
        }
    }
}

/// `value` with its order-free lists sorted: tag lists (by `Key`) and lists of ids or ARNs.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(normalized).collect();
            let tags = !items.is_empty()
                && items
                    .iter()
                    .all(|item| item.get("Key").is_some_and(Value::is_string));
            let ids = items.len() > 1 && items.iter().all(is_id);
            if tags || ids {
                items.sort_by_key(|item| item.to_string());
            }
            Value::Array(items)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), normalized(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// An ARN or an AWS id such as `subnet-0abc12`.
fn is_id(value: &Value) -> bool {
    let Value::String(text) = value else {
        return false;
    };
    if text.starts_with("arn:") {
        return true;
    }
    match text.split_once('-') {
        Some((prefix, suffix)) => {
            !prefix.is_empty()
                && prefix
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
                && prefix.starts_with(|c: char| c.is_ascii_lowercase())
                && suffix.len() >= 6
                && suffix.chars().all(|c| c.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// The keys that say which traffic a security group rule is about.
const RULE_KEYS: &[&str] = &[
    "IpProtocol",
    "FromPort",
    "ToPort",
    "CidrIp",
    "CidrIpv6",
    "SourceSecurityGroupId",
    "SourcePrefixListId",
    "DestinationSecurityGroupId",
    "DestinationPrefixListId",
];

/// Removes from a security group's rule lists the rules that a standalone
/// `AWS::EC2::SecurityGroupIngress` / `Egress` of the same stack (`siblings`: type and
/// properties) makes on it: they are that resource's, not the group's drift, and they may or
/// may not be in the group's captured baseline depending on which was read first.
pub fn without_sibling_rules<'a>(
    group_id: &str,
    properties: &mut Map<String, Value>,
    siblings: impl IntoIterator<Item = (&'a str, &'a Map<String, Value>)>,
) {
    let siblings: Vec<(&str, &Map<String, Value>)> = siblings
        .into_iter()
        .filter(|(_, p)| p.get("GroupId").and_then(Value::as_str) == Some(group_id))
        .collect();
    for (list, kind) in [
        ("SecurityGroupIngress", "AWS::EC2::SecurityGroupIngress"),
        ("SecurityGroupEgress", "AWS::EC2::SecurityGroupEgress"),
    ] {
        let Some(Value::Array(rules)) = properties.get_mut(list) else {
            continue;
        };
        rules.retain(|rule| {
            !siblings
                .iter()
                .any(|(t, sibling)| *t == kind && same_rule(rule, sibling))
        });
    }
}

fn same_rule(rule: &Value, sibling: &Map<String, Value>) -> bool {
    let text = |value: Option<&Value>| match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.to_ascii_lowercase()),
        Some(other) => Some(other.to_string()),
    };
    RULE_KEYS
        .iter()
        .all(|key| text(rule.get(*key)) == text(sibling.get(*key)))
}

/// Why a position cannot be written from AWS's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The path.
    pub path: String,
    /// Why.
    pub reason: String,
}

/// `baseline` with each difference's path set to AWS's value (`--accept`); positions where
/// the baseline holds a secret are refused: accepting them would write the plaintext down.
pub fn accepted(
    baseline: &Map<String, Value>,
    differences: &[Difference],
) -> (Map<String, Value>, Vec<Refused>) {
    let mut result = Value::Object(baseline.clone());
    let mut refused = Vec::new();
    for difference in differences {
        if difference.recorded.as_ref().is_some_and(is_secret) {
            refused.push(Refused {
                path: difference.dotted(),
                reason: "the record holds a secret there (the NoEcho mask or a {{resolve:...}} expression); accepting would write AWS's plaintext into state".into(),
            });
            continue;
        }
        set_path(&mut result, &difference.path, difference.live.clone());
    }
    let Value::Object(result) = result else {
        unreachable!("an object stays an object")
    };
    (result, refused)
}

#[allow(
    clippy::expect_used,
    reason = "an invariant: the value was built just above in this function"
)]
fn set_path(target: &mut Value, path: &[String], value: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = target;
    for key in parents {
        if !at.get(key).is_some_and(Value::is_object) {
            if let Value::Object(map) = at {
                map.insert(key.clone(), Value::Object(Map::new()));
            }
        }
        at = at.get_mut(key).expect("just made sure it is there");
    }
    if let Value::Object(map) = at {
        match value {
            Some(value) => {
                map.insert(last.clone(), value);
            }
            None => {
                map.remove(last);
            }
        }
    }
}

/// A masked (NoEcho) position AWS holds no value for: `--revert` cannot restore it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path} is recorded masked (NoEcho) and AWS holds no value there, so there is nothing to restore it to")]
pub struct MaskedWithoutValue {
    /// The position, dotted (`Config.Token`, `Items[0]`).
    pub path: String,
}

/// The properties `--revert` sends: `live` with every drifted top-level key put back to the
/// baseline's value. A masked position keeps AWS's value (the mask is never sent); `Err` names
/// a masked position AWS holds nothing for, which cannot be restored.
pub fn reverted(
    baseline: &Map<String, Value>,
    live: &Map<String, Value>,
    differences: &[Difference],
) -> Result<Map<String, Value>, MaskedWithoutValue> {
    let mut desired = live.clone();
    let mut keys: Vec<&String> = differences.iter().map(|d| &d.path[0]).collect();
    keys.dedup();
    for key in keys {
        match baseline.get(key) {
            Some(value) => {
                let restored = unmasked(value, live.get(key), key)?;
                desired.insert(key.clone(), restored);
            }
            None => {
                desired.remove(key);
            }
        }
    }
    Ok(desired)
}

/// `recorded` with AWS's value wherever it holds the mask.
fn unmasked(
    recorded: &Value,
    live: Option<&Value>,
    path: &str,
) -> Result<Value, MaskedWithoutValue> {
    match recorded {
        Value::String(mask) if mask.contains(MASK) => live
            .cloned()
            .ok_or_else(|| MaskedWithoutValue { path: path.into() }),
        Value::Object(map) => {
            let live = live.and_then(Value::as_object);
            let mut out = Map::new();
            for (key, value) in map {
                let inner = format!("{path}.{key}");
                out.insert(
                    key.clone(),
                    unmasked(value, live.and_then(|l| l.get(key)), &inner)?,
                );
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => {
            let live = live.and_then(Value::as_array);
            let restored: Result<Vec<Value>, MaskedWithoutValue> = items
                .iter()
                .enumerate()
                .map(|(at, value)| {
                    unmasked(
                        value,
                        live.and_then(|l| l.get(at)),
                        &format!("{path}[{at}]"),
                    )
                })
                .collect();
            Ok(Value::Array(restored?))
        }
        other => Ok(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn paths(comparison: &Comparison) -> Vec<String> {
        comparison
            .differences
            .iter()
            .map(Difference::dotted)
            .collect()
    }

    #[test]
    fn an_observed_baseline_shows_changes_below_the_top_level_in_both_directions() {
        let properties = map(json!({"MemorySize": 128, "Environment": {"Variables": {"A": "1"}}}));
        let observed = map(json!({"MemorySize": 128, "Timeout": 3,
            "Environment": {"Variables": {"A": "1"}}}));
        let live = map(json!({"MemorySize": 256, "Timeout": 3, "Arn": "arn:x",
            "Environment": {"Variables": {"A": "1", "EXTRA": "x"}}}));
        let found = compare(&properties, Some(&observed), &live);
        assert_eq!(paths(&found), ["MemorySize", "Environment.Variables.EXTRA"]);
        assert_eq!(found.differences[0].recorded, Some(json!(128)));
        assert_eq!(found.differences[0].live, Some(json!(256)));
        assert_eq!(found.differences[1].recorded, None);
    }

    #[test]
    fn a_properties_baseline_compares_only_what_the_template_declared() {
        let properties = map(json!({"Environment": {"Variables": {"A": "1"}}}));
        let live =
            map(json!({"MemorySize": 256, "Environment": {"Variables": {"A": "1", "EXTRA": "x"}}}));
        assert!(compare(&properties, None, &live).differences.is_empty());
        let write_only = map(json!({"Code": {"ZipFile": "x"}}));
        assert!(compare(&write_only, None, &live).differences.is_empty());
        let live = map(json!({"Environment": {"Variables": {"A": "2"}}}));
        assert_eq!(
            paths(&compare(&properties, None, &live)),
            ["Environment.Variables.A"]
        );
    }

    #[test]
    fn an_undeclared_key_captured_empty_is_skipped_and_one_with_a_value_is_not() {
        let properties = map(json!({"GroupDescription": "d"}));
        let observed = map(json!({"GroupDescription": "d", "SecurityGroupIngress": [],
            "Tags": [{"Key": "a", "Value": "1"}]}));
        let live = map(json!({"GroupDescription": "d",
            "SecurityGroupIngress": [{"IpProtocol": "tcp"}], "Tags": []}));
        assert_eq!(
            paths(&compare(&properties, Some(&observed), &live)),
            ["Tags"]
        );
    }

    #[test]
    fn tag_lists_and_id_lists_compare_in_any_order_and_other_lists_do_not() {
        let observed = map(json!({
            "Tags": [{"Key": "b", "Value": "2"}, {"Key": "a", "Value": "1"}],
            "SubnetIds": ["subnet-0abc123", "subnet-0def456"],
            "Layers": ["x", "y"]}));
        let live = map(json!({
            "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}],
            "SubnetIds": ["subnet-0def456", "subnet-0abc123"],
            "Layers": ["y", "x"]}));
        assert_eq!(
            paths(&compare(&observed, Some(&observed), &live)),
            ["Layers"]
        );
    }

    #[test]
    fn secrets_are_never_shown_nor_accepted_and_revert_keeps_aws_value_under_a_mask() {
        let observed = map(json!({"Password": "{{resolve:ssm-secure:/p}}",
            "Config": {"Token": "***", "Level": 1}}));
        let live =
            map(json!({"Password": "plain-new", "Config": {"Token": "real-token", "Level": 2}}));
        let found = compare(&observed, Some(&observed), &live);
        assert_eq!(paths(&found), ["Password", "Config.Level"]);
        assert_eq!(found.differences[0].live, Some(json!("***")));
        assert_eq!(
            found.masked,
            vec![vec!["Config".to_string(), "Token".to_string()]]
        );
        let text = format!("{found:?}");
        assert!(
            !text.contains("plain-new") && !text.contains("real-token"),
            "{text}"
        );

        let (accepted, refused) = accepted(&observed, &found.differences);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].path, "Password");
        assert_eq!(accepted["Password"], json!("{{resolve:ssm-secure:/p}}"));
        assert_eq!(accepted["Config"], json!({"Token": "***", "Level": 2}));

        let desired = reverted(&observed, &live, &found.differences).unwrap();
        assert_eq!(
            desired["Config"],
            json!({"Token": "real-token", "Level": 1})
        );
        assert_eq!(desired["Password"], json!("{{resolve:ssm-secure:/p}}"));
        let gone = map(json!({"Password": "x", "Config": {"Level": 2}}));
        let err = reverted(&observed, &gone, &found.differences).unwrap_err();
        assert_eq!(
            err,
            MaskedWithoutValue {
                path: "Config.Token".into()
            }
        );
    }

    #[test]
    fn a_standalone_rules_entry_is_not_the_groups_drift() {
        let mut live = map(json!({"SecurityGroupIngress": [
            {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/16"},
            {"IpProtocol": "tcp", "FromPort": 8080, "ToPort": 8080, "CidrIp": "10.1.0.0/16"}]}));
        let sibling = map(
            json!({"GroupId": "sg-1", "IpProtocol": "TCP", "FromPort": "8080",
            "ToPort": 8080, "CidrIp": "10.1.0.0/16"}),
        );
        let elsewhere = map(
            json!({"GroupId": "sg-2", "IpProtocol": "tcp", "FromPort": 443,
            "ToPort": 443, "CidrIp": "10.0.0.0/16"}),
        );
        without_sibling_rules(
            "sg-1",
            &mut live,
            [
                ("AWS::EC2::SecurityGroupIngress", &sibling),
                ("AWS::EC2::SecurityGroupIngress", &elsewhere),
            ],
        );
        assert_eq!(
            live["SecurityGroupIngress"],
            json!([{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/16"}])
        );
    }

    #[test]
    fn accepting_a_removed_key_removes_it_and_an_added_one_creates_its_parents() {
        let baseline = map(json!({"A": {"B": 1}, "C": 2}));
        let differences = vec![
            Difference {
                path: vec!["A".into(), "B".into()],
                recorded: Some(json!(1)),
                live: None,
            },
            Difference {
                path: vec!["D".into(), "E".into()],
                recorded: None,
                live: Some(json!(3)),
            },
        ];
        let (accepted, refused) = accepted(&baseline, &differences);
        assert!(refused.is_empty());
        assert_eq!(
            Value::Object(accepted),
            json!({"A": {}, "C": 2, "D": {"E": 3}})
        );
    }
}
