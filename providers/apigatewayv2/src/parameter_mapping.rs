//! An HTTP API integration's parameter mapping (`RequestParameters`, `ResponseParameters`) and
//! TLS setting, between the template's shapes and API Gateway's.
//!
//! UpdateIntegration merges the maps it is sent into the integration's, so an update sends only
//! what changed and removes what the template dropped: a request parameter by an empty value,
//! a status code's response mapping by an empty map, a changed status code whole (as Terraform
//! does). An unchanged entry is never sent, so a `remove:` mapping, whose value CDK writes as
//! empty, is not taken for a removal of itself; a `remove:` mapping added by an update is
//! sent empty too, which AWS reads as a removal (docs/providers.md).

use std::collections::HashMap;

use aws_sdk_apigatewayv2::types::{TlsConfig, TlsConfigInput};
use cdkd_aws_common::string;
use serde_json::{json, Map, Value};

/// A string map of the template (`RequestParameters`), `None` when absent.
pub(crate) fn request_parameters(value: Option<&Value>) -> Option<HashMap<String, String>> {
    let map = value.and_then(Value::as_object)?;
    Some(
        map.iter()
            .filter_map(|(k, v)| string(Some(v)).map(|v| (k.clone(), v)))
            .collect(),
    )
}

/// `ResponseParameters` as API Gateway's: status code → destination → source (the template
/// lists `{Destination, Source}` pairs under each status code's `ResponseParameters`).
pub(crate) fn response_parameters(
    value: Option<&Value>,
) -> Option<HashMap<String, HashMap<String, String>>> {
    let map = value.and_then(Value::as_object)?;
    Some(
        map.iter()
            .map(|(status, block)| {
                let pairs = block
                    .get("ResponseParameters")
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|item| {
                                Some((
                                    string(item.get("Destination"))?,
                                    string(item.get("Source"))?,
                                ))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                (status.clone(), pairs)
            })
            .collect(),
    )
}

/// What an update sends for `RequestParameters`: each entry of `after` that is new or changed,
/// and an empty value for each key `before` had that `after` dropped; `None` when nothing
/// changed.
pub(crate) fn request_update(
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<HashMap<String, String>> {
    let old = request_parameters(before).unwrap_or_default();
    let new = request_parameters(after).unwrap_or_default();
    let mut sent: HashMap<String, String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for key in old.keys().filter(|k| !new.contains_key(*k)) {
        sent.insert(key.clone(), String::new());
    }
    (!sent.is_empty()).then_some(sent)
}

/// What an update sends for `ResponseParameters`: each status code of `after` whose mapping is
/// new or changed, and an empty map for each status code `before` had that `after` dropped.
pub(crate) fn response_update(
    before: Option<&Value>,
    after: Option<&Value>,
) -> Option<HashMap<String, HashMap<String, String>>> {
    let old = response_parameters(before).unwrap_or_default();
    let new = response_parameters(after).unwrap_or_default();
    let mut sent: HashMap<String, HashMap<String, String>> = new
        .iter()
        .filter(|(status, pairs)| old.get(*status) != Some(*pairs))
        .map(|(status, pairs)| (status.clone(), pairs.clone()))
        .collect();
    for status in old.keys().filter(|s| !new.contains_key(*s)) {
        sent.insert(status.clone(), HashMap::new());
    }
    (!sent.is_empty()).then_some(sent)
}

/// Live `RequestParameters` in template shape; `None` when there are none.
pub(crate) fn request_shape(live: Option<&HashMap<String, String>>) -> Option<Value> {
    let live = live.filter(|m| !m.is_empty())?;
    Some(Value::Object(
        live.iter().map(|(k, v)| (k.clone(), json!(v))).collect(),
    ))
}

/// Live `ResponseParameters` in template shape: each status code's pairs in the order
/// `template` lists them (the rest after, by destination); a status code with no mapping left
/// is left out.
pub(crate) fn response_shape(
    live: Option<&HashMap<String, HashMap<String, String>>>,
    template: Option<&Value>,
) -> Option<Value> {
    let mut shape = Map::new();
    for (status, pairs) in live.into_iter().flatten() {
        if pairs.is_empty() {
            continue;
        }
        let written: Vec<String> = template
            .and_then(|t| t.get(status))
            .and_then(|b| b.get("ResponseParameters"))
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| string(i.get("Destination")))
                    .collect()
            })
            .unwrap_or_default();
        let mut sorted: Vec<(&String, &String)> = pairs.iter().collect();
        sorted.sort_by_key(|(destination, _)| {
            (
                written
                    .iter()
                    .position(|w| w == *destination)
                    .unwrap_or(usize::MAX),
                (*destination).clone(),
            )
        });
        let list: Vec<Value> = sorted
            .into_iter()
            .map(|(destination, source)| json!({"Destination": destination, "Source": source}))
            .collect();
        shape.insert(status.clone(), json!({"ResponseParameters": list}));
    }
    (!shape.is_empty()).then_some(Value::Object(shape))
}

/// `TlsConfig` as API Gateway's.
pub(crate) fn tls(value: Option<&Value>) -> Option<TlsConfigInput> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        TlsConfigInput::builder()
            .set_server_name_to_verify(string(value.get("ServerNameToVerify")))
            .build(),
    )
}

/// A live `TlsConfig` in template shape.
pub(crate) fn tls_shape(live: &TlsConfig) -> Value {
    let mut shape = Map::new();
    if let Some(name) = live.server_name_to_verify() {
        shape.insert("ServerNameToVerify".into(), json!(name));
    }
    Value::Object(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mappings_convert_both_ways_and_an_update_removes_what_was_dropped() {
        let request = json!({"overwrite:header.x-tenant": "$context.authorizer.tenant",
            "append:querystring.v": "2"});
        assert_eq!(
            request_shape(request_parameters(Some(&request)).as_ref()),
            Some(request.clone())
        );
        let response = json!({"200": {"ResponseParameters": [
            {"Destination": "overwrite:header.a", "Source": "1"},
            {"Destination": "append:header.b", "Source": "$response.header.b"}]}});
        let converted = response_parameters(Some(&response)).unwrap();
        assert_eq!(converted["200"]["overwrite:header.a"], "1");
        let back = response_shape(Some(&converted), None).unwrap();
        assert_eq!(
            back["200"]["ResponseParameters"][0],
            json!({"Destination": "append:header.b", "Source": "$response.header.b"}),
            "without a template: by destination"
        );
        assert_eq!(
            response_shape(Some(&converted), Some(&response)),
            Some(response.clone()),
            "the template's order"
        );

        let later = json!({"overwrite:header.x-tenant": "fixed", "remove:querystring.debug": ""});
        let sent = request_update(Some(&request), Some(&later)).unwrap();
        assert_eq!(sent["overwrite:header.x-tenant"], "fixed");
        assert_eq!(sent["append:querystring.v"], "", "dropped: removed");
        assert_eq!(sent["remove:querystring.debug"], "", "new: sent");
        let again = request_update(Some(&later), Some(&later));
        assert_eq!(again, None, "an unchanged map sends nothing");
        let all_gone = request_update(Some(&request), None).unwrap();
        assert!(all_gone.values().all(String::is_empty), "{all_gone:?}");
        assert_eq!(all_gone.len(), 2);
        assert_eq!(request_update(None, None), None, "nothing to send");

        let fewer = json!({"200": {"ResponseParameters": [
            {"Destination": "overwrite:header.a", "Source": "1"},
            {"Destination": "append:header.b", "Source": "$response.header.b"}]},
            "404": {"ResponseParameters": [{"Destination": "overwrite:statuscode", "Source": "200"}]}});
        let sent = response_update(Some(&fewer), Some(&response)).unwrap();
        assert_eq!(sent.len(), 1, "the unchanged 200 is not sent: {sent:?}");
        assert!(sent["404"].is_empty());
        let mut live = response_parameters(Some(&response)).unwrap();
        live.insert("404".into(), HashMap::new());
        assert_eq!(
            response_shape(Some(&live), Some(&response)),
            Some(response.clone())
        );

        let tls_block = json!({"ServerNameToVerify": "internal.example.com"});
        let built = tls(Some(&tls_block)).unwrap();
        assert_eq!(built.server_name_to_verify(), Some("internal.example.com"));
    }
}
