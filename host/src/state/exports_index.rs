//! The exports index `{prefix}/_index/{region}/exports.json`: which stack exports each
//! `Export.Name` in a region, so `Fn::ImportValue` reads one small object and the producer's
//! record instead of every record in the bucket.
//!
//! It is a derived view of the records' `exportNames`, never the authority: a deploy writes its
//! stack's exports into it, a clean destroy (or a forgotten stack) takes them out, and a reader
//! that finds it missing, stale or unreadable scans the records and rebuilds it. Two stacks
//! that export one name: the latest writer wins, and its deploy warns (CloudFormation refuses
//! a second producer). Writes are conditional on the ETag read, retried on a conflict, since
//! every stack of the region shares the object; a failed write is logged and never fails the
//! command that made it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::backend::StateBackend;
use super::schema::{now_millis, StackState};
use super::storage::PutCondition;
use super::StateError;

/// The index body's format version.
pub const INDEX_VERSION: u32 = 1;

/// How often a conditional write is retried after another writer's.
const WRITE_ATTEMPTS: usize = 5;

/// One region's exports index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportsIndex {
    /// [`INDEX_VERSION`].
    pub version: u32,
    /// The region it covers.
    pub region: String,
    /// Export name → its producer.
    pub exports: BTreeMap<String, IndexedExport>,
}

/// The producer of one export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexedExport {
    /// The producing stack.
    pub stack: String,
    /// When its deploy wrote the entry (Unix milliseconds): the latest writer wins.
    pub updated_at: i64,
}

/// The index key of `region` under the backend's prefix.
pub fn index_key(backend: &StateBackend, region: &str) -> String {
    format!("{}/_index/{region}/exports.json", backend.keys().prefix())
}

impl ExportsIndex {
    /// An empty index of `region`.
    pub fn empty(region: &str) -> ExportsIndex {
        ExportsIndex {
            version: INDEX_VERSION,
            region: region.to_string(),
            exports: BTreeMap::new(),
        }
    }

    /// Sets `stack`'s exports to `names` (entries it no longer exports go); returns a warning
    /// for each name another stack exported until now.
    pub fn publish(&mut self, stack: &str, names: &[&str], now: i64) -> Vec<String> {
        self.exports.retain(|_, entry| entry.stack != stack);
        let mut warnings = Vec::new();
        for name in names {
            let previous = self.exports.insert(
                name.to_string(),
                IndexedExport {
                    stack: stack.to_string(),
                    updated_at: now,
                },
            );
            if let Some(previous) = previous.filter(|p| p.stack != stack) {
                warnings.push(shadowing_warning(
                    name,
                    &self.region,
                    stack,
                    &previous.stack,
                ));
            }
        }
        warnings
    }

    /// Takes every entry of `stack` out.
    pub fn withdraw(&mut self, stack: &str) {
        self.exports.retain(|_, entry| entry.stack != stack);
    }

    /// The index the records of `region` imply (each record's importable outputs); two
    /// producers of a name: the latest written record wins, with a warning.
    pub fn rebuild<'s>(
        region: &str,
        records: impl IntoIterator<Item = &'s StackState>,
    ) -> (ExportsIndex, Vec<String>) {
        let mut records: Vec<&StackState> = records
            .into_iter()
            .filter(|s| s.region.as_deref() == Some(region))
            .collect();
        // Oldest first, so each later writer takes the name over.
        records.sort_by(|a, b| {
            (a.last_modified, &a.stack_name).cmp(&(b.last_modified, &b.stack_name))
        });
        let mut index = ExportsIndex::empty(region);
        let mut warnings = Vec::new();
        for state in records {
            for name in state.importable_output_keys() {
                let previous = index.exports.insert(
                    name.to_string(),
                    IndexedExport {
                        stack: state.stack_name.clone(),
                        updated_at: state.last_modified,
                    },
                );
                if let Some(previous) = previous.filter(|p| p.stack != state.stack_name) {
                    warnings.push(shadowing_warning(
                        name,
                        region,
                        &state.stack_name,
                        &previous.stack,
                    ));
                }
            }
        }
        (index, warnings)
    }
}

/// The warning for a second producer of one export name.
fn shadowing_warning(name: &str, region: &str, winner: &str, previous: &str) -> String {
    format!(
        "export {name} ({region}) is also exported by stack {previous}; the latest writer wins, so Fn::ImportValue {name} now reads {winner}'s value. CloudFormation refuses a second producer of one export name: rename the export in one of the two stacks"
    )
}

/// The index of `region` and its ETag; `None` when there is none or it cannot be read (a
/// reader then scans the records).
pub async fn read(
    backend: &StateBackend,
    region: &str,
) -> Result<Option<(ExportsIndex, String)>, StateError> {
    let key = index_key(backend, region);
    let Some(object) = backend.get_object(&key).await? else {
        return Ok(None);
    };
    match serde_json::from_slice::<ExportsIndex>(&object.body) {
        Ok(index) if index.version == INDEX_VERSION => Ok(Some((index, object.etag))),
        Ok(index) => {
            tracing::debug!(
                "exports index {key} has version {}; rebuilding it from the records",
                index.version
            );
            Ok(None)
        }
        Err(err) => {
            tracing::debug!("exports index {key} is unreadable ({err}); rebuilding it");
            Ok(None)
        }
    }
}

/// Read-modify-write of `region`'s index with `change` (which returns warnings), conditional
/// on the ETag read and retried after another writer's. An index left empty is deleted.
#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
pub async fn update(
    backend: &StateBackend,
    region: &str,
    mut change: impl FnMut(&mut ExportsIndex) -> Vec<String>,
) -> Result<Vec<String>, StateError> {
    let key = index_key(backend, region);
    for _ in 0..WRITE_ATTEMPTS {
        let (mut index, etag) = match read(backend, region).await? {
            Some((index, etag)) => (index, Some(etag)),
            None => (ExportsIndex::empty(region), None),
        };
        let before = index.clone();
        let warnings = change(&mut index);
        if index == before && etag.is_some() {
            return Ok(warnings);
        }
        if index.exports.is_empty() {
            if etag.is_some() {
                backend.delete_object(&key).await?;
            }
            return Ok(warnings);
        }
        let body = serde_json::to_vec_pretty(&index).expect("an index serialises");
        let condition = match &etag {
            Some(etag) => PutCondition::IfMatch(etag.clone()),
            None => PutCondition::IfAbsent,
        };
        match backend.storage().put(&key, body, condition).await {
            Ok(_) => return Ok(warnings),
            Err(failure) => {
                // Another stack's deploy wrote in between (or created it): read it again.
                if failure.is_precondition_failed() || failure.status == Some(409) {
                    continue;
                }
                return Err(StateError::from_failure(
                    "write",
                    &key,
                    backend.bucket(),
                    failure,
                ));
            }
        }
    }
    Err(StateError::s3(
        "write",
        &key,
        format!("other writers changed it {WRITE_ATTEMPTS} times in a row"),
    ))
}

/// Publishes a deployed record's exports; returns the shadowing warnings.
pub async fn publish(
    backend: &StateBackend,
    state: &StackState,
) -> Result<Vec<String>, StateError> {
    let region = state.region.clone().unwrap_or_default();
    let names: Vec<String> = state
        .importable_output_keys()
        .into_iter()
        .map(str::to_string)
        .collect();
    let stack = state.stack_name.clone();
    let now = now_millis();
    update(backend, &region, |index| {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        index.publish(&stack, &names, now)
    })
    .await
}

/// Takes a stack's exports out of its region's index (a destroyed or forgotten stack).
pub async fn withdraw(backend: &StateBackend, stack: &str, region: &str) -> Result<(), StateError> {
    update(backend, region, |index| {
        index.withdraw(stack);
        Vec::new()
    })
    .await
    .map(|_| ())
}

/// Writes `index` as the region's index (a rebuild), unconditionally: it was derived from
/// every record just read.
#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
pub async fn write(backend: &StateBackend, index: &ExportsIndex) -> Result<(), StateError> {
    let key = index_key(backend, &index.region);
    if index.exports.is_empty() {
        return backend.delete_object(&key).await;
    }
    backend
        .put_json(
            &key,
            serde_json::to_vec_pretty(index).expect("an index serialises"),
        )
        .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn record(stack: &str, written: i64, outputs: &[&str], exports: Option<&[&str]>) -> StackState {
        let mut state = StackState::new(stack, "us-east-1");
        for name in outputs {
            state
                .outputs
                .insert(name.to_string(), json!(format!("{stack}-{name}")));
        }
        state.export_names = exports.map(|e| e.iter().map(|n| n.to_string()).collect());
        state.last_modified = written;
        state
    }

    #[test]
    fn publishing_replaces_the_stacks_entries_and_warns_about_a_second_producer() {
        let mut index = ExportsIndex::empty("us-east-1");
        assert!(index.publish("A", &["Shared", "OnlyA"], 1).is_empty());
        let warnings = index.publish("B", &["Shared"], 2);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].starts_with("export Shared (us-east-1) is also exported by stack A; the latest writer wins, so Fn::ImportValue Shared now reads B's value"),
            "{}",
            warnings[0]
        );
        assert_eq!(index.exports["Shared"].stack, "B");
        // A re-publish of the same names does not warn about itself.
        assert!(index.publish("B", &["Shared"], 3).is_empty());
        // A stops exporting OnlyA: its entry goes; B's Shared stays.
        index.publish("A", &[], 4);
        assert!(!index.exports.contains_key("OnlyA"));
        assert_eq!(index.exports["Shared"].stack, "B");
        index.withdraw("B");
        assert!(index.exports.is_empty());
    }

    #[test]
    fn a_rebuild_takes_export_names_only_and_the_latest_record_wins() {
        let a = record("A", 10, &["VpcId", "Shared", "Plain"], Some(&["Shared"]));
        let b = record("B", 20, &["Shared"], Some(&["Shared"]));
        // A pre-v9 record: every output key counts.
        let legacy = record("Legacy", 5, &["Old"], None);
        let mut elsewhere = record("Far", 30, &["Shared"], Some(&["Shared"]));
        elsewhere.region = Some("eu-west-1".into());
        let (index, warnings) = ExportsIndex::rebuild("us-east-1", [&b, &a, &legacy, &elsewhere]);
        assert_eq!(index.exports["Shared"].stack, "B");
        assert_eq!(index.exports["Old"].stack, "Legacy");
        assert!(!index.exports.contains_key("VpcId"));
        assert!(!index.exports.contains_key("Plain"));
        assert_eq!(index.exports.len(), 2);
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("also exported by stack A"),
            "{}",
            warnings[0]
        );
    }

    #[test]
    fn the_index_body_has_the_documented_shape() {
        let mut index = ExportsIndex::empty("us-east-1");
        index.publish("Producer", &["SharedName"], 1_700_000_000_000);
        assert_eq!(
            serde_json::to_value(&index).unwrap(),
            json!({"version": 1, "region": "us-east-1", "exports": {
                "SharedName": {"stack": "Producer", "updatedAt": 1_700_000_000_000_i64}}})
        );
    }
}
