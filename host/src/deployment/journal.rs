//! The rollback journal (`rollback-journal.json`): what a deploy that ended without a completed
//! rollback had done, so `cdkd rollback` can undo it without synthesizing.
//!
//! One segment per failed attempt, each with the completed operations (popped as they are
//! replayed) and the operations that failed (`failedOperations[]`: pre-op record and attempted
//! properties). Reasons: `no-rollback-failure`, `interrupted`, `auto-rollback-started`,
//! `auto-rollback-clean`. Every writer holds the stack lock, so writes are plain puts. It is
//! deleted, with its noncurrent versions, by a successful deploy, a clean rollback or a destroy.
//!
//! It also carries the write-ahead intents of a running deploy (`pendingCreates`): every
//! create the plan holds, with its idempotency token and physical name, written before the
//! first create is sent. A run that ends normally clears them; after a crash the next run
//! that takes the lock reconciles them (deployment/reconcile.rs).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::state::schema::{now_millis, ProvisionedBy, ResourceState};

/// The journal format version.
pub const JOURNAL_VERSION: u32 = 1;

/// Why a segment was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// `--no-rollback` and a resource failed.
    NoRollbackFailure,
    /// Ctrl-C / SIGTERM.
    Interrupted,
    /// Written before an automatic rollback starts, so a rollback that dies is resumable.
    AutoRollbackStarted,
    /// The automatic rollback finished; only the failed operations remain.
    AutoRollbackClean,
}

/// What a completed operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OperationKind {
    /// A resource was created.
    Create,
    /// A resource was updated in place.
    Update,
    /// A resource was replaced (the old one still exists until the deploy succeeds).
    Replace,
    /// Only `DeletionPolicy` / `UpdateReplacePolicy` changed in the record.
    Policy,
}

/// One completed operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// The logical id.
    pub logical_id: String,
    /// What was done.
    pub action: OperationKind,
    /// The type.
    pub resource_type: String,
    /// The record before (none for a create).
    pub before: Option<ResourceState>,
    /// The record after.
    pub after: Option<ResourceState>,
}

/// One operation that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedOperation {
    /// The logical id.
    pub logical_id: String,
    /// What was attempted.
    pub action: OperationKind,
    /// The type.
    pub resource_type: String,
    /// The record before (none for a create).
    pub before: Option<ResourceState>,
    /// The properties the failed call sent.
    pub attempted_properties: Map<String, Value>,
    /// The error.
    pub error: String,
}

/// One failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Segment {
    /// Why it was written.
    pub reason: Reason,
    /// When (Unix milliseconds).
    pub created_at: i64,
    /// Completed operations, in the order they completed.
    pub operations: Vec<Operation>,
    /// Operations that failed.
    #[serde(default)]
    pub failed_operations: Vec<FailedOperation>,
}

/// A create a deploy is about to send: written before the first create of the run, so that
/// after a crash the next deploy, `rollback` or `destroy` can find what it may have made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateIntent {
    /// The logical id.
    pub logical_id: String,
    /// The type.
    pub resource_type: String,
    /// The idempotency token every attempt of this create sends.
    pub token: String,
    /// The physical name the create uses (the template's, or the one cdkd generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_name: Option<String>,
    /// The layer the create goes through.
    pub provisioned_by: ProvisionedBy,
    /// For a type found by its token within a parent (a log stream in its group): the
    /// template values of the properties its provider searches in (`Ref`s and `Fn::GetAtt`s
    /// unresolved; never a secret: the plugin names them), resolved from state after a crash.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub scope: Map<String, Value>,
    /// For a replacement: the record of the resource being replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<ResourceState>,
    /// When the intent was written (Unix milliseconds).
    pub created_at: i64,
}

/// The journal document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Journal {
    /// The format version.
    pub journal_version: u32,
    /// The stack.
    pub stack_name: String,
    /// The region.
    pub region: String,
    /// Failed attempts, oldest first.
    pub segments: Vec<Segment>,
    /// Creates of a run that has not finished; reconciled by the next run that takes the lock.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_creates: Vec<CreateIntent>,
}

impl Journal {
    /// An empty journal.
    pub fn new(stack: &str, region: &str) -> Journal {
        Journal {
            journal_version: JOURNAL_VERSION,
            stack_name: stack.to_string(),
            region: region.to_string(),
            segments: Vec::new(),
            pending_creates: Vec::new(),
        }
    }
}

impl Segment {
    /// A segment written now.
    pub fn new(
        reason: Reason,
        operations: Vec<Operation>,
        failed_operations: Vec<FailedOperation>,
    ) -> Segment {
        Segment {
            reason,
            created_at: now_millis(),
            operations,
            failed_operations,
        }
    }
}
