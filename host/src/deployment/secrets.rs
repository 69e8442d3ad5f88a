//! Secret attribute values (a plugin's `sensitiveAttributes`, such as an access key's
//! `SecretAccessKey`) within one run: AWS and the resources that read them get the real value,
//! everything cdkd writes down gets the mask.
//!
//! This follows the state spec's `NoEcho` rules: the mask replaces whole stored values (in the
//! producer's attributes, in consumers' recorded properties, in outputs); a later run that has
//! to send such a value to AWS again is refused rather than sending the mask.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::analyzer::no_echo::NoEcho;
pub use crate::state::schema::MASK;

/// Puts the mask into `observed` wherever `recorded` holds it: a value a resource consumed
/// from a `NoEcho` response reads back in plaintext, and must be written down masked there too.
pub fn mask_as_recorded(recorded: &Value, observed: &mut Value) {
    match (recorded, observed) {
        (Value::String(mask), observed) if mask == MASK && !observed.is_null() => {
            *observed = Value::String(MASK.into());
        }
        (Value::Object(recorded), Value::Object(observed)) => {
            for (key, value) in recorded {
                if let Some(live) = observed.get_mut(key) {
                    mask_as_recorded(value, live);
                }
            }
        }
        (Value::Array(recorded), Value::Array(observed)) => {
            for (value, live) in recorded.iter().zip(observed.iter_mut()) {
                mask_as_recorded(value, live);
            }
        }
        _ => {}
    }
}

/// The first JSON path in `properties` whose whole value is the mask, if any.
pub fn mask_path(properties: &Map<String, Value>) -> Option<String> {
    fn walk(value: &Value, path: String) -> Option<String> {
        match value {
            Value::String(text) if text.contains(MASK) => Some(path),
            Value::Array(items) => (items.iter().enumerate())
                .find_map(|(at, item)| walk(item, format!("{path}[{at}]"))),
            Value::Object(object) => {
                (object.iter()).find_map(|(key, item)| walk(item, format!("{path}.{key}")))
            }
            _ => None,
        }
    }
    (properties.iter()).find_map(|(key, value)| walk(value, key.clone()))
}

/// Why a recorded baseline that holds the mask cannot be replayed (`cdkd rollback`, its
/// `--revert-failed`), or `None` when it holds none.
pub fn replay_refusal(logical_id: &str, properties: &Map<String, Value>) -> Option<String> {
    mask_path(properties).map(|path| {
        format!(
            "{logical_id}'s recorded previous properties hold the NoEcho mask ({MASK}) at {path}, and cdkd does not send the mask to AWS; force the custom resource that produced it to update (change one of its properties) and re-deploy to restore {path}: a plain re-deploy leaves it unchanged, so its handler does not run and the mask stays"
        )
    })
}

/// `live` with the mask wherever `record` holds it (in its properties or its baseline).
pub fn masked_like(
    record: &crate::state::schema::ResourceState,
    live: Map<String, Value>,
) -> Map<String, Value> {
    let mut observed = Value::Object(live);
    mask_as_recorded(&Value::Object(record.properties.clone()), &mut observed);
    if let Some(baseline) = &record.observed_properties {
        mask_as_recorded(&Value::Object(baseline.clone()), &mut observed);
    }
    match observed {
        Value::Object(observed) => observed,
        _ => unreachable!("masking keeps the shape"),
    }
}

/// The secrets of this run: those produced, by `(logical id, attribute)`, and the stack's
/// `NoEcho` parameter values.
#[derive(Debug, Default)]
pub struct RunSecrets {
    values: Mutex<BTreeMap<(String, String), Value>>,
    no_echo: NoEcho,
}

impl RunSecrets {
    /// The secrets of a run whose stack has these `NoEcho` parameter values.
    pub fn with_no_echo(no_echo: NoEcho) -> RunSecrets {
        RunSecrets {
            values: Mutex::default(),
            no_echo,
        }
    }

    /// `text` (an error message, an event line) with every `NoEcho` parameter value masked.
    pub fn mask_text(&self, text: &str) -> String {
        self.no_echo.mask_text(text)
    }

    fn values(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Value>> {
        self.values.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps the `sensitive` attributes of `logical_id` for this run and returns the
    /// attributes to record, those values masked.
    pub fn keep(
        &self,
        logical_id: &str,
        sensitive: &[String],
        mut attributes: Map<String, Value>,
    ) -> Map<String, Value> {
        for name in sensitive {
            if let Some(value) = attributes.get_mut(name) {
                if value.as_str() == Some(MASK) {
                    continue;
                }
                let secret = std::mem::replace(value, Value::String(MASK.into()));
                self.values()
                    .insert((logical_id.to_string(), name.clone()), secret);
            }
        }
        attributes
    }

    /// Treats `value` as a secret of this run (a masked output handed over from a producer
    /// deployed earlier in the run): masked wherever this stack writes it down.
    pub fn remember(&self, value: Value) {
        let mut values = self.values();
        let key = (String::new(), format!("bridged-{}", values.len()));
        values.insert(key, value);
    }

    /// The real value of a secret produced in this run.
    pub fn get(&self, logical_id: &str, attribute: &str) -> Option<Value> {
        self.values()
            .get(&(logical_id.to_string(), attribute.to_string()))
            .cloned()
    }

    /// `value` with every whole string equal to a secret of this run replaced by the mask, and
    /// every `NoEcho` parameter value masked wherever it shows.
    pub fn mask(&self, value: &Value) -> Value {
        let masked = self.mask_produced(value);
        self.no_echo.mask(&masked)
    }

    fn mask_produced(&self, value: &Value) -> Value {
        let values = self.values();
        if values.is_empty() {
            return value.clone();
        }
        fn walk(value: &Value, secrets: &BTreeMap<(String, String), Value>) -> Value {
            match value {
                Value::String(_) if secrets.values().any(|secret| secret == value) => {
                    Value::String(MASK.into())
                }
                Value::Array(items) => {
                    Value::Array(items.iter().map(|v| walk(v, secrets)).collect())
                }
                Value::Object(object) => Value::Object(
                    object
                        .iter()
                        .map(|(k, v)| (k.clone(), walk(v, secrets)))
                        .collect(),
                ),
                other => other.clone(),
            }
        }
        walk(value, &values)
    }

    /// The attributes of `logical_id` to record, masked; those that held a `NoEcho` value
    /// (whole or inside) are kept in plaintext for this run's references, as produced secrets
    /// are. A later run reads the mask and refuses to send it.
    pub fn mask_attributes(
        &self,
        logical_id: &str,
        attributes: &Map<String, Value>,
    ) -> Map<String, Value> {
        let masked = self.mask_map(attributes);
        for (name, value) in attributes {
            if masked.get(name) != Some(value) && !self.no_echo.is_empty() {
                self.values()
                    .entry((logical_id.to_string(), name.clone()))
                    .or_insert_with(|| value.clone());
            }
        }
        masked
    }

    /// [`RunSecrets::mask`] of a property or output map.
    pub fn mask_map(&self, map: &Map<String, Value>) -> Map<String, Value> {
        match self.mask(&Value::Object(map.clone())) {
            Value::Object(masked) => masked,
            _ => unreachable!("masking keeps the shape"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_secret_is_kept_for_the_run_and_masked_wherever_it_is_written_down() {
        let secrets = RunSecrets::default();
        let attributes = json!({"SecretAccessKey": "s3cr3t", "UserName": "u"})
            .as_object()
            .unwrap()
            .clone();
        let recorded = secrets.keep("Key", &["SecretAccessKey".into()], attributes);
        assert_eq!(recorded["SecretAccessKey"], json!(MASK));
        assert_eq!(recorded["UserName"], json!("u"));
        assert_eq!(secrets.get("Key", "SecretAccessKey"), Some(json!("s3cr3t")));
        let consumer =
            json!({"Value": "s3cr3t", "Nested": ["s3cr3t", "other"], "Embedded": "x-s3cr3t"});
        assert_eq!(
            secrets.mask(&consumer),
            json!({"Value": MASK, "Nested": [MASK, "other"], "Embedded": "x-s3cr3t"})
        );
    }

    #[test]
    fn a_baseline_holding_the_mask_is_not_replayed() {
        let clean = json!({"Name": "n", "Tags": [{"Key": "k", "Value": "v"}]});
        assert_eq!(replay_refusal("Db", clean.as_object().unwrap()), None);
        let masked = json!({"Name": "n", "Config": {"Tokens": ["a", MASK]}});
        let refusal = replay_refusal("Db", masked.as_object().unwrap()).unwrap();
        assert!(
            refusal.starts_with(
                "Db's recorded previous properties hold the NoEcho mask (***) at Config.Tokens[1]"
            ),
            "{refusal}"
        );
        assert!(refusal.contains("force the custom resource"), "{refusal}");
        // Embedded in a longer string (a NoEcho parameter inside a URL) it is refused too.
        let embedded = json!({"Name": "x-***"});
        assert_eq!(
            mask_path(embedded.as_object().unwrap()),
            Some("Name".into())
        );
    }

    #[test]
    fn an_already_masked_value_is_not_taken_for_a_secret() {
        let secrets = RunSecrets::default();
        let attributes = json!({"SecretAccessKey": MASK})
            .as_object()
            .unwrap()
            .clone();
        secrets.keep("Key", &["SecretAccessKey".into()], attributes);
        assert_eq!(secrets.get("Key", "SecretAccessKey"), None);
    }
}
