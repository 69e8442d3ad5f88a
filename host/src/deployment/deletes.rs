//! Deleting recorded resources, shared by deploy (removed resources, replaced halves) and
//! destroy: the order (dependents first), the retain policies, the final snapshot a `Snapshot`
//! policy asks for, one delete call.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use cdkd_provider_api::protocol::{FinalSnapshotRequest, FinalSnapshotResult};
use cdkd_provider_api::{ErrorKind, ProviderError};

use super::executor::Task;
use super::report::Reporter;
use crate::provisioning::concurrency::service_of;
use crate::provisioning::operations::{DeleteCall, ProviderSet};
use crate::state::schema::ResourceState;

/// Why a deploy deletes a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteKind {
    /// The resource left the template: deleted (or kept, by its `DeletionPolicy`) and
    /// removed from the record.
    Removed,
    /// The old half of a replacement: deleted; the record already holds its successor.
    Superseded,
}

/// Whether a `DeletionPolicy` (or `UpdateReplacePolicy`) keeps the AWS resource.
pub fn is_retained(policy: Option<&str>) -> bool {
    matches!(policy, Some("Retain" | "RetainExceptOnCreate"))
}

/// Whether a `DeletionPolicy` (or `UpdateReplacePolicy`) asks for a final snapshot.
pub fn is_snapshot(policy: Option<&str>) -> bool {
    policy == Some("Snapshot")
}

/// Where a delete's final snapshot is due: the record's stack and region.
#[derive(Debug, Clone, Copy)]
pub struct SnapshotDue<'a> {
    /// The stack (its name starts the snapshot's).
    pub stack: &'a str,
    /// The region.
    pub region: &'a str,
}

/// Why a resource whose policy asks for a snapshot cannot be deleted here.
pub fn no_snapshot_path(logical_id: &str, resource_type: &str, destroy: bool) -> String {
    let escape = if destroy {
        ", or pass --skip-final-snapshot to delete it without one"
    } else {
        ""
    };
    format!(
        "{logical_id} ({resource_type}) asks for a final snapshot (Snapshot policy) and no loaded plugin can snapshot {resource_type}; cdkd does not delete it without one. Set its DeletionPolicy/UpdateReplacePolicy to Retain or Delete{escape}"
    )
}

/// Why deleting a recorded resource (or the final snapshot before it) failed.
#[derive(Debug, thiserror::Error)]
pub enum DeleteError {
    /// Its policy asks for a final snapshot and no loaded plugin can take one.
    #[error("{}", no_snapshot_path(.logical_id, .resource_type, false))]
    NoSnapshotPath {
        /// The resource.
        logical_id: String,
        /// Its type.
        resource_type: String,
    },
    /// The final snapshot failed, so the delete was not attempted.
    #[error("taking the final snapshot failed, so the resource was not deleted: {0}")]
    Snapshot(ProviderError),
    /// The provider's delete failed.
    #[error(transparent)]
    Provider(ProviderError),
}

/// A snapshot identifier services accept (letters, digits and single hyphens, starting with
/// a letter, at most 63 characters), unique to the stack, resource and second.
pub fn snapshot_name(stack: &str, logical_id: &str, stamp: &str) -> String {
    let mut name = String::new();
    for c in format!("{stack}-{logical_id}").chars() {
        let c = if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            '-'
        };
        if !(c == '-' && (name.is_empty() || name.ends_with('-'))) {
            name.push(c);
        }
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert_str(0, "s-");
    }
    let suffix = format!("-final-{stamp}");
    name.truncate(63 - suffix.len());
    let mut name = name.trim_end_matches('-').to_string();
    name.push_str(&suffix);
    name
}

/// Takes the final snapshot of `record` and says what was taken; a resource already gone
/// needs none.
pub async fn take_final_snapshot(
    providers: &dyn ProviderSet,
    due: SnapshotDue<'_>,
    logical_id: &str,
    record: &ResourceState,
) -> Result<String, DeleteError> {
    let Some(taker) = providers.for_snapshot(&record.resource_type) else {
        return Err(DeleteError::NoSnapshotPath {
            logical_id: logical_id.to_string(),
            resource_type: record.resource_type.clone(),
        });
    };
    let stamp = chrono::Utc::now().format("%Y%m%d%H%M%S").to_string();
    let request = FinalSnapshotRequest {
        region: due.region.to_string(),
        logical_id: logical_id.to_string(),
        physical_id: record.physical_id.clone(),
        properties: record.properties.clone(),
        snapshot_id: snapshot_name(due.stack, logical_id, &stamp),
    };
    match taker.final_snapshot(&record.resource_type, &request).await {
        Ok(FinalSnapshotResult {
            snapshot_id: Some(id),
            ..
        }) => Ok(format!("final snapshot {id}")),
        Ok(FinalSnapshotResult { note, .. }) => Ok(format!(
            "no final snapshot: {}",
            note.unwrap_or_else(|| "none was due".into())
        )),
        Err(err) if err.kind == ErrorKind::NOT_FOUND => Ok("already gone".into()),
        Err(err) => Err(DeleteError::Snapshot(err)),
    }
}

/// Delete tasks: a resource waits for every doomed resource that depends on it.
#[allow(
    clippy::expect_used,
    reason = "an invariant: every id the plan orders or names is a node of its graph"
)]
pub fn deletion_tasks<'r>(
    doomed: impl IntoIterator<Item = (&'r String, &'r ResourceState)>,
) -> Vec<Task> {
    let doomed: BTreeMap<&String, &ResourceState> = doomed.into_iter().collect();
    let mut waits: BTreeMap<String, BTreeSet<String>> = doomed
        .keys()
        .map(|k| ((*k).clone(), BTreeSet::new()))
        .collect();
    for (key, record) in &doomed {
        for dependency in record.dependencies.iter().flatten() {
            if doomed.contains_key(dependency) && dependency != *key {
                waits
                    .get_mut(dependency)
                    .expect("present")
                    .insert((*key).clone());
            }
        }
    }
    waits
        .into_iter()
        .map(|(id, dependencies)| Task {
            lane: Some(service_of(&doomed[&id].resource_type)),
            expected: expected_delete(doomed[&id]),
            id,
            dependencies,
            priority: 0,
        })
        .collect()
}

/// A delete's expected AWS time, to order ready deletes longest pole first (zero when that is
/// off or the expected-times file is unreadable: the deploy's pre-flight reports the file).
fn expected_delete(record: &ResourceState) -> std::time::Duration {
    use super::expected_time::{longest_pole_first, ExpectedTimes, Operation, Route};
    match ExpectedTimes::current() {
        Ok(table) if longest_pole_first() => table.expected(
            &record.resource_type,
            Some(&record.properties),
            Route::recorded(record.provisioned_by),
            Operation::Delete,
        ),
        _ => std::time::Duration::ZERO,
    }
}

/// Deletes one recorded resource through the provider that owns it.
pub async fn delete_record(
    providers: &dyn ProviderSet,
    logical_id: &str,
    record: &ResourceState,
) -> Result<(), DeleteError> {
    providers
        .for_record(record)
        .delete(DeleteCall::of(logical_id, record))
        .await
        .map(|_| ())
        .map_err(DeleteError::Provider)
}

/// Deletes one recorded resource through its provider (after its final snapshot when one is
/// `due`), reporting a failure; returns what the snapshot step said.
pub async fn delete_one(
    reporter: &Reporter,
    stack: &str,
    providers: &dyn ProviderSet,
    logical_id: &str,
    record: &ResourceState,
    began: Instant,
    due: Option<SnapshotDue<'_>>,
) -> Result<Option<String>, DeleteError> {
    let result = async {
        let snapshot = match due {
            Some(due) => Some(take_final_snapshot(providers, due, logical_id, record).await?),
            None => None,
        };
        delete_record(providers, logical_id, record).await?;
        Ok(snapshot)
    }
    .await;
    result.inspect_err(|err| {
        reporter.resource(
            stack,
            logical_id,
            &record.resource_type,
            &format!("delete failed: {err}"),
            Some(began.elapsed()),
        );
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_names_are_valid_identifiers() {
        assert_eq!(
            snapshot_name("SnapshotStack", "Database", "20261130193000"),
            "snapshotstack-database-final-20261130193000"
        );
        let long = snapshot_name(&"Nested~Stack".repeat(10), "--Db--", "20261130193000");
        assert!(long.len() <= 63, "{long}");
        assert!(!long.contains("--"), "{long}");
        assert!(long.ends_with("-final-20261130193000"), "{long}");
        assert!(snapshot_name("1st", "Db", "1").starts_with("s-1st-db"));
    }
}
