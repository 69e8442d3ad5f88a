//! The state file's shape (`state.json`, schema v9) and the lock record (`lock.json`).
//!
//! Field names are the spec's JSON names. Fields this binary does not model are kept in
//! `extra` and written back unchanged, so a read-modify-write never drops data.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The schema version every write emits.
pub const SCHEMA_VERSION_CURRENT: u32 = 9;

/// The oldest readable schema version (the legacy, non-region key layout).
pub const SCHEMA_VERSION_LEGACY: u32 = 1;

/// What stands in for a secret (a `NoEcho` value) in state, outputs and printed records.
pub const MASK: &str = "***";

/// One stack's state record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackState {
    /// The schema version (always [`SCHEMA_VERSION_CURRENT`] after a read's upgrade).
    pub version: u32,
    /// The stack name.
    pub stack_name: String,
    /// The region (required from v2; part of the key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Logical id → resource record.
    #[serde(default)]
    pub resources: BTreeMap<String, ResourceState>,
    /// Output name (and export alias) → resolved value, any JSON (never coerced to a string).
    #[serde(default)]
    pub outputs: Map<String, Value>,
    /// v4: `Fn::ImportValue` references resolved by the last deploy (omitted when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imports: Option<Vec<StateImportEntry>>,
    /// v8: `Fn::GetStackOutput` references served from cdkd state (omitted when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_reads: Option<Vec<StateOutputReadEntry>>,
    /// v9: which `outputs` keys are `Export.Name` aliases. `[]` is written (exports nothing);
    /// absent means unknown (every key importable, the pre-v9 rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub export_names: Option<Vec<String>>,
    /// v6: the parent stack of a nested-stack child record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_stack: Option<String>,
    /// v6: the child's `AWS::CloudFormation::Stack` logical id in the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_logical_id: Option<String>,
    /// v6: the parent's region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_region: Option<String>,
    /// `NoEcho` parameter name → a salted fingerprint of the value last deployed, never the
    /// value (cdkd's addition beside v9; omitted when the stack has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_echo_parameters: Option<BTreeMap<String, String>>,
    /// When the record was last written (Unix milliseconds).
    #[serde(default, deserialize_with = "millis")]
    pub last_modified: i64,
    /// Fields this binary does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StackState {
    /// An empty v9 record for a stack about to be deployed for the first time.
    pub fn new(stack_name: &str, region: &str) -> StackState {
        StackState {
            version: SCHEMA_VERSION_CURRENT,
            stack_name: stack_name.to_string(),
            region: Some(region.to_string()),
            resources: BTreeMap::new(),
            outputs: Map::new(),
            imports: None,
            output_reads: None,
            export_names: None,
            parent_stack: None,
            parent_logical_id: None,
            parent_region: None,
            no_echo_parameters: None,
            last_modified: 0,
            extra: Map::new(),
        }
    }

    /// The output keys an `Fn::ImportValue` may bind to: the export names when the record
    /// knows them (v9), otherwise every key (the pre-v9 rule).
    pub fn importable_output_keys(&self) -> Vec<&str> {
        match &self.export_names {
            Some(names) => names
                .iter()
                .map(String::as_str)
                .filter(|name| self.outputs.contains_key(*name))
                .collect(),
            None => self.outputs.keys().map(String::as_str).collect(),
        }
    }
}

/// One resource's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceState {
    /// The provider-defined physical id (composite ids as `a|b|c`).
    pub physical_id: String,
    /// The CloudFormation type.
    pub resource_type: String,
    /// The resolved template properties cdkd applied.
    #[serde(default)]
    pub properties: Map<String, Value>,
    /// v3: what AWS reported right after the last create/update (drift baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_properties: Option<Map<String, Value>>,
    /// `Fn::GetAtt` attributes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Map<String, Value>>,
    /// Logical ids this resource depends on (deletion order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Vec<String>>,
    /// Additional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// v5: the template's `DeletionPolicy` at the last create/update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<String>,
    /// v5: the template's `UpdateReplacePolicy` at the last create/update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_replace_policy: Option<String>,
    /// v7: which layer owns the resource; absent = legacy SDK default (not pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned_by: Option<ProvisionedBy>,
    /// Fields this binary does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The provisioning layer that owns a resource (schema v7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProvisionedBy {
    /// An SDK provider plugin (also custom resources).
    #[serde(rename = "sdk")]
    Sdk,
    /// The Cloud Control API; sticky.
    #[serde(rename = "cc-api")]
    CcApi,
}

impl ProvisionedBy {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProvisionedBy::Sdk => "sdk",
            ProvisionedBy::CcApi => "cc-api",
        }
    }
}

/// One `Fn::ImportValue` a consumer resolved (schema v4): a strong reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateImportEntry {
    /// The producer stack.
    pub source_stack: String,
    /// The producer's region.
    pub source_region: String,
    /// The imported `Export.Name`.
    pub export_name: String,
    /// Fields this binary does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One `Fn::GetStackOutput` served from cdkd state (schema v8): informational only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateOutputReadEntry {
    /// The producer stack.
    pub source_stack: String,
    /// The producer's region.
    pub source_region: String,
    /// The output name read.
    pub output_name: String,
    /// Fields this binary does not model.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The lock record (`lock.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockInfo {
    /// `user@host:pid` of the holder.
    pub owner: String,
    /// When the holder acquired the lock (Unix milliseconds).
    #[serde(default, deserialize_with = "millis")]
    pub timestamp: i64,
    /// The deadline by which the holder must renew (Unix milliseconds). Kept as raw JSON:
    /// it arrives unvalidated, and anything not a finite number counts as expired.
    #[serde(default)]
    pub expires_at: Value,
    /// What the holder is doing (`deploy`, `destroy`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
}

impl LockInfo {
    /// The deadline, when it is a finite number.
    pub fn expires_at_millis(&self) -> Option<i64> {
        self.expires_at
            .as_f64()
            .filter(|value| value.is_finite())
            .map(|value| value as i64)
    }

    /// Whether the lock's deadline has passed at `now` (a non-finite deadline has).
    pub fn is_expired(&self, now_millis: i64) -> bool {
        self.expires_at_millis()
            .is_none_or(|deadline| deadline <= now_millis)
    }
}

/// Milliseconds may be written as integers or floats; both read as whole milliseconds.
fn millis<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let value = Value::deserialize(deserializer)?;
    Ok(value
        .as_f64()
        .filter(|v| v.is_finite())
        .map_or(0, |v| v as i64))
}

/// The current time in Unix milliseconds.
pub fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let input = json!({
            "version": 9, "stackName": "S", "region": "us-east-1",
            "resources": {"R": {"physicalId": "p", "resourceType": "T", "properties": {},
                                "futureResourceField": [1, 2]}},
            "outputs": {"List": ["a", "b"], "Obj": {"k": 1}},
            "exportNames": [],
            "lastModified": 1710835200000u64,
            "futureStackField": {"x": true}
        });
        let state: StackState = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(state.extra["futureStackField"], json!({"x": true}));
        assert_eq!(serde_json::to_value(&state).unwrap(), input);
    }

    #[test]
    fn outputs_keep_their_json_types() {
        let state: StackState = serde_json::from_value(json!({
            "version": 9, "stackName": "S", "region": "r", "resources": {},
            "outputs": {"NameServers": ["ns-1", "ns-2"], "Port": 443, "Flag": true},
            "lastModified": 1
        }))
        .unwrap();
        assert_eq!(state.outputs["NameServers"], json!(["ns-1", "ns-2"]));
        assert_eq!(state.outputs["Port"], json!(443));
    }

    #[test]
    fn importable_keys_follow_export_names() {
        let mut state = StackState::new("S", "r");
        state.outputs.insert("VpcId".into(), json!("vpc-1"));
        state.outputs.insert("Shared-VpcId".into(), json!("vpc-1"));
        assert_eq!(
            state.importable_output_keys(),
            ["VpcId", "Shared-VpcId"],
            "template order"
        );
        state.export_names = Some(vec!["Shared-VpcId".into()]);
        assert_eq!(state.importable_output_keys(), ["Shared-VpcId"]);
        state.export_names = Some(vec![]);
        assert!(state.importable_output_keys().is_empty());
    }

    #[test]
    fn a_non_finite_or_missing_deadline_counts_as_expired() {
        let now = 1_000;
        for raw in [json!(null), json!("soon"), json!({}), json!(500)] {
            let lock: LockInfo =
                serde_json::from_value(json!({"owner": "o", "timestamp": 1, "expiresAt": raw}))
                    .unwrap();
            assert!(lock.is_expired(now), "{:?}", lock.expires_at);
        }
        let missing: LockInfo =
            serde_json::from_value(json!({"owner": "o", "timestamp": 1})).unwrap();
        assert!(missing.is_expired(now));
        let live: LockInfo =
            serde_json::from_value(json!({"owner": "o", "timestamp": 1, "expiresAt": 2_000}))
                .unwrap();
        assert!(!live.is_expired(now));
    }

    #[test]
    fn provisioned_by_uses_the_spec_spelling() {
        assert_eq!(
            serde_json::to_value(ProvisionedBy::CcApi).unwrap(),
            json!("cc-api")
        );
        assert_eq!(
            serde_json::from_value::<ProvisionedBy>(json!("sdk")).unwrap(),
            ProvisionedBy::Sdk
        );
    }
}
