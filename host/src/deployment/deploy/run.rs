//! What one stack's deploy has done so far: one record behind one lock, written by every
//! resource step and read by the phases after execution.

use std::collections::BTreeSet;

use crate::deployment::journal::{FailedOperation, Operation};
use crate::deployment::report::Summary;
use crate::state::schema::ResourceState;

/// The run so far.
#[derive(Debug, Default)]
pub struct RunRecord {
    /// Operations that completed, in completion order (the rollback walks them backwards).
    pub completed: Vec<Operation>,
    /// Operations that failed (the journal's `failedOperations`).
    pub failed: Vec<FailedOperation>,
    /// Old halves of replacements, deleted once everything else succeeded.
    pub superseded: Vec<(String, ResourceState)>,
    /// Counts for the summary.
    pub summary: Summary,
    /// Exports read: (producer stack, region, export name).
    pub imports: BTreeSet<(String, String, String)>,
    /// Other stacks' outputs read: (stack, region, output name).
    pub output_reads: BTreeSet<(String, String, String)>,
    /// Creates refused because the name was taken: they made nothing to reconcile.
    pub made_nothing: BTreeSet<String>,
    /// Resources created or updated in this run (their dependents are resolved again).
    pub changed: BTreeSet<String>,
}
