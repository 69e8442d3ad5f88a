//! `cdkd scrub`: puts the `{{resolve:...}}` expressions back into a stack's records where a
//! writer (an older tool, a hand edit) stored the resolved plaintext, and removes the earlier
//! versions of those objects that hold it.
//!
//! `state.json`'s history is otherwise never purged (it is the recovery capability versioning
//! exists for), so only the versions that hold one of the known plaintexts go; the rest stay.

use serde_json::Value;

use crate::provisioning::dynamic_references::Resolution;
use crate::state::purge::{self, PurgeFailure, PurgedObject};
use crate::state::schema::StackState;
use crate::state::store::StateStore;

/// What scrubbing one stack's record did (or, on a dry run, would do).
#[derive(Debug, Default)]
pub struct ScrubReport {
    /// The record's name.
    pub stack: String,
    /// Its region.
    pub region: String,
    /// Whether a record exists.
    pub recorded: bool,
    /// Logical ids whose record held a resolved value.
    pub resources: Vec<String>,
    /// Whether the stack's outputs held one.
    pub outputs: bool,
    /// Whether the rollback journal held one.
    pub journal: bool,
    /// Earlier versions of the record and journal that hold one.
    pub versions: usize,
    /// Versions that could not be removed.
    pub failures: Vec<PurgeFailure>,
}

impl ScrubReport {
    /// Whether anything held a resolved value.
    pub fn found_anything(&self) -> bool {
        !self.resources.is_empty() || self.outputs || self.journal || self.versions > 0
    }
}

/// Scrubs one record with the plaintexts `known` knows of.
pub async fn scrub_stack(
    store: &StateStore,
    stack: &str,
    region: &str,
    known: &Resolution,
    dry_run: bool,
) -> anyhow::Result<ScrubReport> {
    let mut report = ScrubReport {
        stack: stack.to_string(),
        region: region.to_string(),
        ..ScrubReport::default()
    };
    let backend = &store.backend;
    let Some(stored) = backend.load(stack, region).await? else {
        return Ok(report);
    };
    report.recorded = true;
    let (_, resources, outputs) = scrubbed(&stored.state, known);
    report.resources = resources;
    report.outputs = outputs;
    let journal_key = backend.keys().journal(stack, region);
    let journal = backend.get_object(&journal_key).await?;
    report.journal = journal.as_ref().is_some_and(|j| known.found_in(&j.body));
    let state_key = backend.keys().state(stack, region);
    let client = backend.client()?;
    let bucket = backend.bucket();
    let holds = |body: &[u8]| known.found_in(body);
    let mut doomed = Vec::new();
    for key in [&state_key, &journal_key] {
        match purge::noncurrent_versions_holding(client, bucket, key, holds).await {
            Ok(versions) => doomed.push((key.clone(), versions)),
            Err(failure) => report.failures.push(failure),
        }
    }
    // The current versions are rewritten first, so they join the versions removed below.
    let rewrite = !report.resources.is_empty() || report.outputs || report.journal;
    report.versions = doomed.iter().map(|(_, v)| v.len()).sum::<usize>()
        + usize::from(!report.resources.is_empty() || report.outputs)
        + usize::from(report.journal);
    if dry_run || !report.found_anything() {
        return Ok(report);
    }
    if rewrite {
        let lock = store.locks.acquire(stack, region, "scrub").await?;
        let result = async {
            // Re-read under the lock: the record may have moved on since the plan.
            let Some(mut stored) = backend.load(stack, region).await? else {
                return anyhow::Ok(());
            };
            let (clean, _, _) = scrubbed(&stored.state, known);
            let previous = stored.clone();
            stored.state = clean;
            backend
                .save(stack, region, &mut stored.state, Some(&previous))
                .await?;
            if let Some(journal) = backend.get_object(&journal_key).await? {
                if known.found_in(&journal.body) {
                    let mut document: Value = serde_json::from_slice(&journal.body)?;
                    known.scrub(&mut document);
                    backend
                        .put_json(&journal_key, serde_json::to_vec_pretty(&document)?)
                        .await?;
                }
            }
            Ok(())
        }
        .await;
        lock.release().await;
        result?;
        // The versions just replaced.
        for (key, versions) in &mut doomed {
            if let Ok(now) = purge::noncurrent_versions_holding(client, bucket, key, holds).await {
                *versions = now;
            }
        }
    }
    for (key, versions) in &doomed {
        let removed = purge::delete_versions(client, bucket, key, versions).await;
        purge::log_report(
            bucket,
            key,
            PurgedObject::ScrubbedState,
            purge::PurgeLogLevel::Warn,
            &removed,
        );
        report.failures.extend(removed.failures);
    }
    Ok(report)
}

/// The record with the expressions back, the logical ids that changed, and whether the
/// outputs did.
#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
fn scrubbed(state: &StackState, known: &Resolution) -> (StackState, Vec<String>, bool) {
    let mut clean = state.clone();
    let mut changed = Vec::new();
    for (logical_id, record) in &mut clean.resources {
        let before = serde_json::to_value(&*record).expect("a record serialises");
        let mut after = before.clone();
        known.scrub(&mut after);
        if after != before {
            *record = serde_json::from_value(after).expect("scrubbing keeps the record's shape");
            changed.push(logical_id.clone());
        }
    }
    let before = serde_json::to_value(&clean.outputs).expect("outputs serialise");
    let mut after = before.clone();
    known.scrub(&mut after);
    let outputs = after != before;
    if outputs {
        clean.outputs = serde_json::from_value(after).expect("scrubbing keeps the outputs' shape");
    }
    (clean, changed, outputs)
}
