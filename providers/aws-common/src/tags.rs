//! Template tags (`Tags: [{Key, Value}]`) by key, their change from one template to the next,
//! and live tags back in template shape. Each plugin converts to and from its SDK's tag type.

use std::collections::BTreeMap;

use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;
use serde_json::{json, Map, Value};

use crate::tag_pairs;

/// The template's `Tags` by key (a later duplicate wins, as AWS keeps one value per key).
pub fn tag_map(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    tag_pairs(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// The template's `Tags` by key, cdkd's create-token tag ([`CREATE_TOKEN_TAG`]) left out: a
/// template never sets it, it is the plugin's.
pub fn tag_map_without_token(properties: &Map<String, Value>) -> BTreeMap<String, String> {
    tag_pairs(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .filter(|(key, _)| key != CREATE_TOKEN_TAG)
        .collect()
}

/// The tags to set (new or changed values, in key order) and the keys to remove, from `old`
/// to `new`.
pub fn tag_changes<S>(
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> (S, Vec<String>)
where
    S: FromIterator<(String, String)>,
{
    let set = new
        .iter()
        .filter(|(key, value)| old.get(*key) != Some(*value))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let removed = old
        .keys()
        .filter(|key| !new.contains_key(*key))
        .cloned()
        .collect();
    (set, removed)
}

/// [`tag_changes`] of the templates' `Tags` (see [`tag_map`]), from `before` to `after`.
pub fn template_tag_changes(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> (BTreeMap<String, String>, Vec<String>) {
    tag_changes(&tag_map(before), &tag_map(after))
}

/// Live tags as a template writes them: `[{Key, Value}]` sorted by key (a later duplicate
/// wins), AWS's own (`aws:`) left out; `None` when there are none.
pub fn template_tags<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<Value> {
    let sorted: BTreeMap<&str, &str> = pairs
        .into_iter()
        .filter(|(key, _)| !key.starts_with("aws:"))
        .collect();
    if sorted.is_empty() {
        return None;
    }
    Some(Value::Array(
        sorted
            .into_iter()
            .map(|(key, value)| json!({"Key": key, "Value": value}))
            .collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn tags_are_set_when_new_or_changed_and_removed_by_key() {
        let before = props(json!({"Tags": [
            {"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}, {"Key": "c", "Value": "3"}
        ]}));
        let after = props(json!({"Tags": [
            {"Key": "a", "Value": "1"}, {"Key": "b", "Value": "20"}, {"Key": "d", "Value": "4"}
        ]}));
        let (set, removed) = template_tag_changes(&before, &after);
        let set: Vec<(&str, &str)> = set.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(set, [("b", "20"), ("d", "4")]);
        assert_eq!(removed, ["c"]);
        let (set, all_gone): (Vec<(String, String)>, _) =
            tag_changes(&tag_map(&before), &BTreeMap::new());
        assert!(set.is_empty());
        assert_eq!(all_gone, ["a", "b", "c"]);
    }

    #[test]
    fn the_create_token_tag_is_left_out_where_asked() {
        let template = props(json!({"Tags": [
            {"Key": "team", "Value": "a"},
            {"Key": CREATE_TOKEN_TAG, "Value": "forged"},
            {"Key": "team", "Value": "b"}
        ]}));
        assert_eq!(tag_map(&template).len(), 2);
        assert_eq!(tag_map(&template)["team"], "b");
        let own = tag_map_without_token(&template);
        assert_eq!(own.keys().collect::<Vec<_>>(), ["team"]);
    }

    #[test]
    fn live_tags_read_back_sorted_without_aws_ones() {
        let tags = [
            ("z", "26"),
            ("a", "1"),
            ("aws:cloudformation:stack-name", "S"),
        ];
        assert_eq!(
            template_tags(tags),
            Some(json!([{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}]))
        );
        assert_eq!(template_tags(tags[2..].iter().copied()), None);
    }
}
