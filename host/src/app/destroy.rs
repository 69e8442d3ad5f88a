//! Destroying several stacks: one after another, consumers before their producers, each
//! checking its consumers against the records the stacks before it left; the first failure
//! stops the run.

use std::collections::BTreeMap;
use std::time::Instant;

use super::deploy::RunLog;
use crate::deployment::deploy::RememberedDeploys;
use crate::deployment::destroy::DestroyOptions;
use crate::deployment::engine::Engine;
use crate::deployment::external::StateSnapshot;
use crate::state::backend::StateBackend;
use crate::state::history::Operation;

/// One stack to destroy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestroyTarget {
    /// Its name.
    pub stack: String,
    /// Its region.
    pub region: String,
    /// Its template's `DeletionPolicy` values by logical id (empty without a template).
    pub policies: BTreeMap<String, String>,
}

/// Destroys `targets` in order with `engine`; `remembered` forgets each destroyed stack.
pub async fn destroy_stacks(
    engine: &Engine<'_>,
    backend: &StateBackend,
    targets: Vec<DestroyTarget>,
    options: DestroyOptions,
    remembered: Option<&RememberedDeploys>,
    log: &dyn RunLog,
) -> anyhow::Result<()> {
    let mut snapshot = StateSnapshot::load(backend).await?;
    let count = targets.len();
    for (at, target) in targets.into_iter().enumerate() {
        let started = Instant::now();
        let result = engine
            .destroy(
                &target.stack,
                &target.region,
                &target.policies,
                &snapshot,
                options.clone(),
            )
            .await;
        let failure = result.as_ref().err().map(|err| format!("{err:#}"));
        log.finished(
            Operation::Destroy,
            &target.stack,
            &target.region,
            started,
            failure.as_deref(),
        )
        .await;
        if result? {
            if let Some(remembered) = remembered {
                remembered.forget(&target.stack, &target.region);
            }
            // The stacks still to go check their consumers against the records left.
            if at + 1 < count {
                snapshot = StateSnapshot::load(backend).await?;
            }
        }
    }
    Ok(())
}

/// Deletes the event history (`cdkd events`) of each destroyed `(stack, region)`, the destroy's
/// own event included (`destroy --purge-events`); answers how many events went.
pub async fn purge_events(
    backend: &StateBackend,
    destroyed: &[(String, String)],
) -> anyhow::Result<usize> {
    let mut purged = 0;
    for (stack, region) in destroyed {
        purged += crate::state::history::prune(backend, Some(stack), Some(region), 0).await?;
    }
    Ok(purged)
}

/// Every recorded stack with its region, consumers first: a stack importing from another goes
/// before it (the most imports first, then by name).
pub fn recorded_destroy_order(snapshot: &StateSnapshot) -> Vec<(String, String)> {
    let mut all: Vec<(String, String, usize)> = snapshot
        .iter()
        .map(|(stack, region, state)| {
            (
                stack.to_string(),
                region.to_string(),
                state.imports.as_ref().map_or(0, |i| i.len()),
            )
        })
        .collect();
    all.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    all.into_iter().map(|(s, r, _)| (s, r)).collect()
}

/// The stacks (with their regions) that have a rollback journal, in `region` only when given.
pub async fn journaled_stacks(
    backend: &StateBackend,
    region: Option<&str>,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut journaled = Vec::new();
    for found in backend.list_stacks().await? {
        let found_region = found.region.unwrap_or_default();
        if region.is_some_and(|r| r != found_region) {
            continue;
        }
        if backend
            .get_object(&backend.keys().journal(&found.stack, &found_region))
            .await?
            .is_some()
        {
            journaled.push((found.stack, found_region));
        }
    }
    Ok(journaled)
}
