//! `NoEcho` template parameters: their values are secrets. AWS gets them; everything cdkd writes
//! down or prints (state, diff, outputs, events, error messages) gets the mask instead.
//!
//! CloudFormation keeps a `NoEcho` value to compare the next deploy's against. cdkd's state is
//! plain JSON the user reads, so it keeps a salted, slow fingerprint of each value instead
//! (`noEchoParameters` in the record): the next plan tells a changed value from the same one
//! and updates exactly the resources that receive it (docs/decisions.md, "NoEcho parameters").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, OnceLock};

use serde_json::{Map, Value};
use sha2::Sha256;

use super::template::Template;
use crate::state::schema::{StackState, MASK};

/// Secrets shorter than this are masked only where they are a whole value: masking a two-letter
/// value inside every longer string would mangle unrelated text.
const MIN_EMBEDDED: usize = 4;

/// PBKDF2-HMAC-SHA256 rounds of a fingerprint (OWASP's figure for this function, 2023).
const ROUNDS: u32 = 600_000;

/// The scheme tag that starts every fingerprint.
const SCHEME: &str = "pbkdf2-sha256";

/// The `NoEcho` parameters of one stack and the values they have in this run.
#[derive(Debug, Default, Clone)]
pub struct NoEcho {
    /// Parameter name → its value (given, or its default).
    values: BTreeMap<String, Value>,
    /// Every secret string, longest first (so a longer one is masked before its prefix).
    secrets: Vec<String>,
}

impl NoEcho {
    /// The `NoEcho` parameters of `template` with their values in `parameters` (else their
    /// defaults); parameters with no value, or an empty one, hold no secret.
    pub fn of(template: &Template, parameters: &BTreeMap<String, Value>) -> NoEcho {
        let mut values = BTreeMap::new();
        for (name, parameter) in template.parameters.iter().filter(|(_, p)| p.no_echo) {
            if let Some(value) = parameters.get(name).or(parameter.default.as_ref()) {
                // A list parameter reaches properties item by item, as the resolver splits it.
                let value = match (value, parameter.is_list()) {
                    (Value::String(text), true) => Value::Array(
                        (text
                            .split(',')
                            .map(|item| Value::String(item.trim().to_string())))
                        .collect(),
                    ),
                    _ => value.clone(),
                };
                values.insert(name.clone(), value);
            }
        }
        NoEcho::from_values(values)
    }

    fn from_values(values: BTreeMap<String, Value>) -> NoEcho {
        let mut secrets: Vec<String> = values.values().flat_map(strings).collect();
        secrets.retain(|s| !s.is_empty());
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        NoEcho { values, secrets }
    }

    /// Whether the stack has no `NoEcho` value to hide.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `value` with each secret masked: a whole string that is one becomes the mask, and one
    /// embedded in a longer string is replaced by the mask inside it.
    pub fn mask(&self, value: &Value) -> Value {
        if self.is_empty() {
            return value.clone();
        }
        match value {
            Value::String(text) => Value::String(self.mask_text(text)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.mask(v)).collect()),
            Value::Object(map) => Value::Object(self.mask_map(map)),
            other => other.clone(),
        }
    }

    /// [`NoEcho::mask`] over every value of a map.
    pub fn mask_map(&self, map: &Map<String, Value>) -> Map<String, Value> {
        (map.iter())
            .map(|(key, value)| (key.clone(), self.mask(value)))
            .collect()
    }

    /// `state` with each secret masked in its resources and outputs (a record built from
    /// resolved properties, such as an import's).
    pub fn mask_record(&self, state: &mut StackState) {
        if self.is_empty() {
            return;
        }
        for record in state.resources.values_mut() {
            record.properties = self.mask_map(&record.properties);
            record.observed_properties =
                (record.observed_properties.as_ref()).map(|observed| self.mask_map(observed));
            record.attributes = record.attributes.as_ref().map(|a| self.mask_map(a));
        }
        state.outputs = self.mask_map(&state.outputs);
    }

    /// `text` with each secret masked (an AWS error message, an event line).
    pub fn mask_text(&self, text: &str) -> String {
        if self.secrets.iter().any(|secret| secret == text) {
            return MASK.to_string();
        }
        let mut masked = text.to_string();
        for secret in self.secrets.iter().filter(|s| s.len() >= MIN_EMBEDDED) {
            if masked.contains(secret.as_str()) {
                masked = masked.replace(secret.as_str(), MASK);
            }
        }
        masked
    }

    /// Whether `value` holds the value of parameter `name` (whole, or embedded).
    pub fn holds(&self, name: &str, value: &Value) -> bool {
        let Some(parameter) = self.values.get(name) else {
            return false;
        };
        let wanted: Vec<String> = strings(parameter).filter(|s| !s.is_empty()).collect();
        fn walk(value: &Value, wanted: &[String]) -> bool {
            match value {
                Value::String(text) => wanted.iter().any(|secret| {
                    text == secret || (secret.len() >= MIN_EMBEDDED && text.contains(secret))
                }),
                Value::Array(items) => items.iter().any(|v| walk(v, wanted)),
                Value::Object(map) => map.values().any(|v| walk(v, wanted)),
                _ => false,
            }
        }
        walk(value, &wanted)
    }

    /// The parameters whose value differs from the one `recorded` fingerprints (an unreadable
    /// fingerprint counts as a different value).
    pub fn changed(&self, recorded: Option<&BTreeMap<String, String>>) -> BTreeSet<String> {
        (self.values.iter())
            .filter(|(name, value)| {
                (recorded.and_then(|r| r.get(*name)))
                    .is_some_and(|fingerprint| !matches(fingerprint, value))
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The parameters `recorded` holds no fingerprint of (a first deploy that failed, an
    /// import, a record from before fingerprints): whether the value changed is not known.
    pub fn unfingerprinted(&self, recorded: Option<&BTreeMap<String, String>>) -> BTreeSet<String> {
        (self.values.keys())
            .filter(|name| !recorded.is_some_and(|r| r.contains_key(*name)))
            .cloned()
            .collect()
    }

    /// The fingerprints to record: `recorded`'s where it still matches, a new one elsewhere.
    pub fn fingerprints(
        &self,
        recorded: Option<&BTreeMap<String, String>>,
    ) -> BTreeMap<String, String> {
        (self.values.iter())
            .map(|(name, value)| {
                let kept = (recorded.and_then(|r| r.get(name)))
                    .filter(|fingerprint| matches(fingerprint, value));
                let fingerprint = kept.cloned().unwrap_or_else(|| fingerprint(value));
                (name.clone(), fingerprint)
            })
            .collect()
    }
}

/// The strings a parameter value holds (a list parameter's items each count).
fn strings(value: &Value) -> Box<dyn Iterator<Item = String> + '_> {
    match value {
        Value::String(text) => Box::new(std::iter::once(text.clone())),
        Value::Number(number) => Box::new(std::iter::once(number.to_string())),
        Value::Array(items) => Box::new(items.iter().flat_map(strings)),
        _ => Box::new(std::iter::empty()),
    }
}

/// What a fingerprint is taken of: the value as JSON, so a list and its joined text differ.
fn canonical(value: &Value) -> String {
    value.to_string()
}

fn derive(salt: &[u8], rounds: u32, value: &Value) -> [u8; 32] {
    let mut out = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<Sha256>(canonical(value).as_bytes(), salt, rounds, &mut out);
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

/// A new fingerprint of `value`: `pbkdf2-sha256$ROUNDS$SALT$HASH` (hex), with a random salt.
fn fingerprint(value: &Value) -> String {
    let salt: [u8; 16] = rand::random();
    let hash = derive(&salt, ROUNDS, value);
    format!("{SCHEME}${ROUNDS}${}${}", hex(&salt), hex(&hash))
}

/// Whether `fingerprint` is one of `value`. Unreadable fingerprints match nothing (the value
/// counts as changed). Answers are remembered for the process: one deploy asks more than once.
fn matches(fingerprint: &str, value: &Value) -> bool {
    static KNOWN: OnceLock<Mutex<HashMap<(String, String), bool>>> = OnceLock::new();
    let key = (fingerprint.to_string(), canonical(value));
    let known = KNOWN.get_or_init(Default::default);
    if let Some(&answer) = known.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return answer;
    }
    let answer = verify(fingerprint, value);
    known
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, answer);
    answer
}

fn verify(fingerprint: &str, value: &Value) -> bool {
    let mut parts = fingerprint.split('$');
    let (Some(SCHEME), Some(rounds), Some(salt), Some(hash), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return false;
    };
    // A fingerprint from state is input: its round count is bounded so that a crafted record
    // cannot make a plan spin, and too few rounds is not accepted as a proof.
    let Ok(rounds) = rounds.parse::<u32>() else {
        return false;
    };
    if !(ROUNDS..=10 * ROUNDS).contains(&rounds) {
        return false;
    }
    match (unhex(salt), unhex(hash)) {
        (Some(salt), Some(hash)) => derive(&salt, rounds, value).as_slice() == hash.as_slice(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_echo(values: Value) -> NoEcho {
        let values = serde_json::from_value(values).unwrap();
        NoEcho::from_values(values)
    }

    #[test]
    fn whole_and_embedded_values_are_masked_short_ones_only_whole() {
        let secrets = no_echo(json!({"DbPassword": "hunter22", "Pin": "42"}));
        let masked = secrets.mask(&json!({
            "Password": "hunter22",
            "Url": "postgres://admin:hunter22@db",
            "Count": "42",
            "Port": "5432",
            "List": ["x", "hunter22"],
        }));
        assert_eq!(
            masked,
            json!({
                "Password": MASK,
                "Url": "postgres://admin:***@db",
                "Count": MASK,
                "Port": "5432",
                "List": ["x", MASK],
            })
        );
        assert_eq!(
            secrets.mask_text("Invalid password hunter22 given"),
            "Invalid password *** given"
        );
    }

    #[test]
    fn list_parameters_are_masked_item_by_item() {
        let template = Template::parse(&json!({
            "Parameters": {"Keys": {"Type": "CommaDelimitedList", "NoEcho": true}},
            "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
        }))
        .unwrap();
        let given = BTreeMap::from([("Keys".to_string(), json!("key-one, key-two"))]);
        let secrets = NoEcho::of(&template, &given);
        assert_eq!(
            secrets.mask(&json!(["key-one", "key-two", "key-one, key-two"])),
            json!([MASK, MASK, "***, ***"])
        );
    }

    #[test]
    fn a_parameter_without_no_echo_or_value_hides_nothing() {
        let template = Template::parse(&json!({
            "Parameters": {
                "Plain": {"Type": "String"},
                "Secret": {"Type": "String", "NoEcho": true},
                "Unset": {"Type": "String", "NoEcho": "true"},
                "Defaulted": {"Type": "String", "NoEcho": true, "Default": "from-default"},
            },
            "Resources": {"Q": {"Type": "AWS::SQS::Queue"}},
        }))
        .unwrap();
        let given = BTreeMap::from([
            ("Plain".to_string(), json!("visible")),
            ("Secret".to_string(), json!("s3cret-value")),
        ]);
        let secrets = NoEcho::of(&template, &given);
        assert_eq!(
            secrets.unfingerprinted(None),
            BTreeSet::from(["Defaulted".to_string(), "Secret".to_string()])
        );
        assert_eq!(
            secrets.mask(&json!(["visible", "s3cret-value", "from-default"])),
            json!(["visible", MASK, MASK])
        );
    }

    #[test]
    fn a_fingerprint_tells_the_same_value_from_a_changed_one() {
        let secrets = no_echo(json!({"DbPassword": "hunter22"}));
        let recorded = secrets.fingerprints(None);
        let fingerprint = &recorded["DbPassword"];
        assert!(fingerprint.starts_with("pbkdf2-sha256$600000$"));
        assert!(!fingerprint.contains("hunter22"));
        assert!(secrets.changed(Some(&recorded)).is_empty());
        assert_eq!(secrets.fingerprints(Some(&recorded)), recorded);

        let changed = no_echo(json!({"DbPassword": "hunter23"}));
        assert_eq!(
            changed.changed(Some(&recorded)),
            BTreeSet::from(["DbPassword".to_string()])
        );
        assert_ne!(changed.fingerprints(Some(&recorded)), recorded);
        assert!(secrets.changed(None).is_empty());
        assert_eq!(
            secrets.unfingerprinted(None),
            BTreeSet::from(["DbPassword".to_string()])
        );
        assert!(secrets.unfingerprinted(Some(&recorded)).is_empty());
    }

    #[test]
    fn a_crafted_fingerprint_matches_nothing() {
        let value = json!("hunter22");
        for crafted in [
            "",
            "pbkdf2-sha256$1$00$00",
            "pbkdf2-sha256$4294967295$00$00",
            "md5$600000$00$00",
            "pbkdf2-sha256$600000$zz$00",
            "pbkdf2-sha256$600000$00$00$extra",
        ] {
            assert!(!verify(crafted, &value), "{crafted}");
        }
    }

    #[test]
    fn the_derivation_is_pbkdf2_hmac_sha256() {
        // RFC 7914 section 11's PBKDF2-HMAC-SHA-256 vector ("passwd", "salt", c = 1), whose
        // password is fed here as JSON text, so the vector is checked on the raw function.
        let mut out = [0u8; 64];
        pbkdf2::pbkdf2_hmac::<Sha256>(b"passwd", b"salt", 1, &mut out);
        assert_eq!(&hex(&out)[..32], "55ac046e56e3089fec1691c22544b605");
        assert_eq!(unhex(&hex(&[0, 1, 254, 255])), Some(vec![0, 1, 254, 255]));
    }
}
