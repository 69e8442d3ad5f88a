//! Deleting recorded resources, shared by deploy (removed resources, replaced halves) and
//! destroy: the order (dependents first), the retain policies, one delete call.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::executor::Task;
use super::report::Reporter;
use crate::provisioning::operations::ProviderSet;
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

/// Delete tasks: a resource waits for every doomed resource that depends on it.
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
            id,
            dependencies,
            priority: 0,
        })
        .collect()
}

/// Deletes one recorded resource through the provider that owns it.
pub async fn delete_record(
    providers: &dyn ProviderSet,
    logical_id: &str,
    record: &ResourceState,
) -> Result<(), String> {
    providers
        .for_record(record)
        .delete(
            &record.resource_type,
            logical_id,
            &record.physical_id,
            &record.properties,
        )
        .await
        .map(|_| ())
        .map_err(|err| err.to_string())
}

/// Deletes one recorded resource through its provider, reporting a failure.
pub async fn delete_one(
    reporter: Reporter,
    stack: &str,
    providers: &dyn ProviderSet,
    logical_id: &str,
    record: &ResourceState,
    began: Instant,
) -> Result<(), String> {
    delete_record(providers, logical_id, record)
        .await
        .inspect_err(|err| {
            reporter.resource(
                stack,
                logical_id,
                &record.resource_type,
                &format!("delete failed: {err}"),
                Some(began.elapsed()),
            );
        })
}
