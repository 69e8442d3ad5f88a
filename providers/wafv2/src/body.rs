//! The web ACL's JSON settings go to WAF as the template writes them: WAF's JSON API uses the
//! same member names as CloudFormation, and a rule is a deep tree of dozens of statement kinds
//! that converting member by member to the SDK's types (and back for drift) would duplicate.
//! So the SDK builds the request with its scalar members only and [`Splice`] adds the
//! template's JSON to the serialized body before it is signed; [`Capture`] keeps a response's
//! raw JSON so a read returns it in template shape. The one member spelled differently is a
//! byte match's `SearchString`: WAF takes base64, CloudFormation the text (or
//! `SearchStringBase64`); [`to_api`] and [`from_api`] convert it.

use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    AfterDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextMut,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::base64;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::ConfigBag;
use serde_json::{Map, Value};

/// Adds `members` to a JSON request body (replacing members of the same name) before the retry
/// loop, so every attempt sends them.
#[derive(Debug, Clone)]
pub(crate) struct Splice(pub Map<String, Value>);

impl Intercept for Splice {
    fn name(&self) -> &'static str {
        "cdkd-wafv2-splice"
    }

    fn modify_before_retry_loop(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let request = context.request_mut();
        let bytes = request
            .body()
            .bytes()
            .ok_or("the WAF request body is not in memory")?;
        let spliced = spliced(bytes, &self.0)?;
        request
            .headers_mut()
            .insert("Content-Length", spliced.len().to_string());
        *request.body_mut() = SdkBody::from(spliced);
        Ok(())
    }
}

/// `body` (a JSON object) with `members` added.
pub(crate) fn spliced(body: &[u8], members: &Map<String, Value>) -> Result<Vec<u8>, BoxError> {
    let mut object: Map<String, Value> = if body.is_empty() {
        Map::new()
    } else {
        serde_json::from_slice(body)?
    };
    for (key, value) in members {
        object.insert(key.clone(), value.clone());
    }
    Ok(serde_json::to_vec(&Value::Object(object))?)
}

/// Keeps the raw body of the last response that deserialized.
#[derive(Debug, Clone, Default)]
pub(crate) struct Capture(pub Arc<Mutex<Option<Vec<u8>>>>);

impl Capture {
    /// The captured body as JSON; `None` when nothing (or no JSON) was captured.
    pub fn json(&self) -> Option<Value> {
        let body = self.0.lock().ok()?.clone()?;
        serde_json::from_slice(&body).ok()
    }
}

impl Intercept for Capture {
    fn name(&self) -> &'static str {
        "cdkd-wafv2-capture"
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(bytes) = context.response().body().bytes() {
            if let Ok(mut slot) = self.0.lock() {
                *slot = Some(bytes.to_vec());
            }
        }
        Ok(())
    }
}

/// A template value in WAF's JSON: every `SearchString` base64-encoded, every
/// `SearchStringBase64` sent as `SearchString` as it is.
pub(crate) fn to_api(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map {
                match (key.as_str(), item) {
                    ("SearchString", Value::String(text)) => {
                        out.insert(key.clone(), Value::String(base64::encode(text)));
                    }
                    ("SearchStringBase64", _) => {
                        out.insert("SearchString".into(), item.clone());
                    }
                    _ => {
                        out.insert(key.clone(), to_api(item));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(to_api).collect()),
        other => other.clone(),
    }
}

/// WAF's JSON in template shape: a `SearchString` decoded to its text when it is UTF-8, else
/// kept as `SearchStringBase64`; a member WAF answers as `null` (an unset option) left out, as
/// the template leaves it out.
pub(crate) fn from_api(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, item) in map.iter().filter(|(_, v)| !v.is_null()) {
                match (key.as_str(), item) {
                    ("SearchString", Value::String(encoded)) => {
                        match base64::decode(encoded)
                            .ok()
                            .and_then(|b| String::from_utf8(b).ok())
                        {
                            Some(text) => out.insert(key.clone(), Value::String(text)),
                            None => out.insert("SearchStringBase64".into(), item.clone()),
                        };
                    }
                    _ => {
                        out.insert(key.clone(), from_api(item));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(from_api).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_join_the_serialized_body_and_replace_their_namesakes() {
        let members = json!({"Rules": [{"Name": "r"}], "Name": "new"});
        let body = spliced(
            br#"{"Name":"old","Scope":"REGIONAL"}"#,
            members.as_object().unwrap(),
        )
        .unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body,
            json!({"Name": "new", "Scope": "REGIONAL", "Rules": [{"Name": "r"}]})
        );
        assert!(spliced(b"", &Map::new()).is_ok());
        assert!(spliced(b"not json", &Map::new()).is_err());
    }

    #[test]
    fn a_search_string_goes_as_base64_and_comes_back_as_text() {
        let template = json!({"Statement": {"ByteMatchStatement": {"SearchString": "admin", "PositionalConstraint": "CONTAINS"}}});
        let api = to_api(&template);
        assert_eq!(
            api["Statement"]["ByteMatchStatement"]["SearchString"],
            json!("YWRtaW4=")
        );
        assert_eq!(from_api(&api), template);
        let raw = json!([{"SearchStringBase64": "/w=="}]);
        assert_eq!(to_api(&raw), json!([{"SearchString": "/w=="}]));
        assert_eq!(from_api(&to_api(&raw)), raw);
        assert_eq!(
            from_api(&json!({"Name": "r", "RuleLabels": null, "Action": {"Block": {}}})),
            json!({"Name": "r", "Action": {"Block": {}}})
        );
    }
}
