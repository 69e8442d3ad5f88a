//! Reading a state blob of any schema version v1..v9: one named upgrade step per version.
//!
//! Every step after v1→v2 only raises the version number, because each later version added
//! optional fields whose absence already means what the older record meant (no observed
//! baseline, no recorded imports, not pinned to Cloud Control, export set unknown, ...).
//! They stay separate steps so each version's rule is written down and tested on its own,
//! and so a future version that does need a data change has its place. A blob newer than
//! this binary fails closed.

use serde_json::Value;

use super::schema::{StackState, SCHEMA_VERSION_CURRENT, SCHEMA_VERSION_LEGACY};

/// Why a state blob could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SchemaError {
    /// The blob was written by a newer cdkd.
    #[error("Unsupported state schema version {0}. Upgrade cdkd.")]
    Unsupported(u64),
    /// The blob is not a state record.
    #[error("{0}")]
    Malformed(String),
}

type Step = fn(&mut serde_json::Map<String, Value>) -> Result<(), SchemaError>;

/// The upgrade from version `n` to `n + 1` is `STEPS[n - 1]`.
const STEPS: [(u32, Step); 8] = [
    (1, v1_to_v2),
    (2, v2_to_v3),
    (3, v3_to_v4),
    (4, v4_to_v5),
    (5, v5_to_v6),
    (6, v6_to_v7),
    (7, v7_to_v8),
    (8, v8_to_v9),
];

/// Parses a state blob, upgrading it in memory to the current version.
pub fn read_state(bytes: &[u8]) -> Result<StackState, SchemaError> {
    let mut value: Value = serde_json::from_slice(bytes)
        .map_err(|err| SchemaError::Malformed(format!("not JSON: {err}")))?;
    let object = value
        .as_object_mut()
        .ok_or_else(|| SchemaError::Malformed("not a JSON object".into()))?;
    let version = match object.get("version") {
        None => u64::from(SCHEMA_VERSION_LEGACY),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| SchemaError::Malformed(format!("version {v} is not a whole number")))?,
    };
    if version > u64::from(SCHEMA_VERSION_CURRENT) {
        return Err(SchemaError::Unsupported(version));
    }
    if version < u64::from(SCHEMA_VERSION_LEGACY) {
        return Err(SchemaError::Malformed(format!(
            "version {version} does not exist"
        )));
    }
    for (from, step) in STEPS.iter().filter(|(from, _)| u64::from(*from) >= version) {
        step(object)?;
        object.insert("version".into(), Value::from(from + 1));
    }
    serde_json::from_value(value).map_err(|err| SchemaError::Malformed(err.to_string()))
}

/// v2 moved the key under the region, so the region became required.
fn v1_to_v2(state: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    match state.get("region").and_then(Value::as_str) {
        Some(region) if !region.is_empty() => Ok(()),
        _ => Err(SchemaError::Malformed(
            "a version 1 state record without a region cannot be placed under a region; \
             add \"region\" to it or re-deploy the stack"
                .into(),
        )),
    }
}

/// v3 added `observedProperties`; absent means "no AWS-side baseline yet".
fn v2_to_v3(_: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    Ok(())
}

/// v4 added `imports`; absent means "no consumers known", so destroys proceed.
fn v3_to_v4(_: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    Ok(())
}

/// v5 added `deletionPolicy` / `updateReplacePolicy`; absent means "not recorded".
fn v4_to_v5(_: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    Ok(())
}

/// v6 added `parentStack` / `parentLogicalId` / `parentRegion`; absent means top-level.
fn v5_to_v6(_: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    Ok(())
}

/// v7 added `provisionedBy`; absent means the legacy SDK default and is NOT filled in, because
/// only a recorded `cc-api` pins routing.
fn v6_to_v7(_: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    Ok(())
}

/// v8 added `outputReads`; absent means "no `Fn::GetStackOutput` consumers known".
fn v7_to_v8(_: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    Ok(())
}

/// v9 added `exportNames`; absent means "unknown, every output key importable". cdkd never
/// invents `[]` for a record whose outputs it did not re-resolve.
fn v8_to_v9(_: &mut serde_json::Map<String, Value>) -> Result<(), SchemaError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `testdata/roundtrip/vN.in.json` read and written back must equal `vN.out.json`.
    #[test]
    fn every_version_round_trips_to_v9() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/state/testdata/roundtrip");
        for version in 1..=9 {
            let input = std::fs::read(dir.join(format!("v{version}.in.json"))).unwrap();
            let expected: Value = serde_json::from_slice(
                &std::fs::read(dir.join(format!("v{version}.out.json"))).unwrap(),
            )
            .unwrap();
            let state = read_state(&input).unwrap_or_else(|err| panic!("v{version}: {err}"));
            assert_eq!(state.version, SCHEMA_VERSION_CURRENT);
            assert_eq!(
                serde_json::to_value(&state).unwrap(),
                expected,
                "v{version}"
            );
        }
    }

    #[test]
    fn a_newer_blob_fails_closed() {
        let err = read_state(br#"{"version": 10, "stackName": "S", "region": "r"}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Unsupported state schema version 10. Upgrade cdkd."
        );
    }

    #[test]
    fn a_v1_blob_needs_its_region() {
        let err =
            read_state(br#"{"version": 1, "stackName": "S", "resources": {}, "outputs": {}}"#)
                .unwrap_err();
        assert!(err.to_string().contains("without a region"), "{err}");
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        for blob in [
            &b"not json"[..],
            b"[]",
            br#"{"version": "nine"}"#,
            br#"{"version": 0}"#,
            br#"{"version": 9}"#,
        ] {
            assert!(
                matches!(read_state(blob), Err(SchemaError::Malformed(_))),
                "{}",
                String::from_utf8_lossy(blob)
            );
        }
    }

    #[test]
    fn each_step_only_raises_the_version() {
        for (from, step) in STEPS.iter().skip(1) {
            let mut object = serde_json::json!({"version": from, "stackName": "S", "region": "r"})
                .as_object()
                .cloned()
                .unwrap();
            let before = object.clone();
            step(&mut object).unwrap();
            assert_eq!(object, before, "step from v{from} changed data");
        }
    }
}
