//! Undoing completed operations (an automatic rollback, or `cdkd rollback` replaying the
//! journal): newest first, each through the provider that owns its record.

use std::time::Instant;

use cdkd_provider_api::ProviderError;

use super::deletes::{delete_record, DeleteError};
use super::journal::{Operation, OperationKind};
use super::ledger::Ledger;
use super::report::Reporter;
use super::secrets::replay_refusal;
use crate::provisioning::operations::{ProviderSet, UpdateCall};

/// Undoes completed operations, newest first; returns those that could not be undone (the
/// first failure stops the walk, so the journal keeps them in order).
pub async fn revert_operations(
    reporter: &Reporter,
    stack: &str,
    ledger: &Ledger,
    providers: &dyn ProviderSet,
    operations: Vec<Operation>,
) -> Vec<Operation> {
    let mut remaining = operations;
    while let Some(operation) = remaining.pop() {
        let began = Instant::now();
        let id = operation.logical_id.clone();
        match revert_one(stack, ledger, providers, &operation).await {
            Ok(()) => reporter.resource(
                stack,
                &id,
                &operation.resource_type,
                "rolled back",
                Some(began.elapsed()),
            ),
            Err(message) => {
                reporter.resource(
                    stack,
                    &id,
                    &operation.resource_type,
                    &format!("rollback failed: {message}"),
                    Some(began.elapsed()),
                );
                remaining.push(operation);
                return remaining;
            }
        }
    }
    remaining
}

/// Why one operation could not be undone.
#[derive(Debug, thiserror::Error)]
pub enum RevertError {
    /// The journal lacks the record the undo needs.
    #[error("{0}")]
    Missing(&'static str),
    /// Replaying the previous properties is refused (they hold masked secrets).
    #[error("{0}")]
    Refused(String),
    /// Deleting the created resource failed.
    #[error(transparent)]
    Delete(#[from] DeleteError),
    /// Restoring the previous properties failed.
    #[error(transparent)]
    Update(ProviderError),
}

async fn revert_one(
    stack: &str,
    ledger: &Ledger,
    providers: &dyn ProviderSet,
    operation: &Operation,
) -> Result<(), RevertError> {
    let id = &operation.logical_id;
    match operation.action {
        OperationKind::Create => {
            let after = operation
                .after
                .as_ref()
                .ok_or(RevertError::Missing("no record of the created resource"))?;
            delete_record(providers, id, after).await?;
            ledger.change(|s| {
                s.resources.remove(id);
            });
        }
        OperationKind::Replace => {
            let after = operation
                .after
                .as_ref()
                .ok_or(RevertError::Missing("no record of the replacement"))?;
            let before = operation
                .before
                .clone()
                .ok_or(RevertError::Missing("no record of the replaced resource"))?;
            if after.physical_id != before.physical_id {
                delete_record(providers, id, after).await?;
            }
            ledger.change(|s| {
                s.resources.insert(id.clone(), before);
            });
        }
        OperationKind::Update => {
            let after = operation
                .after
                .as_ref()
                .ok_or(RevertError::Missing("no record of the update"))?;
            let mut before = operation
                .before
                .clone()
                .ok_or(RevertError::Missing("no record of the previous properties"))?;
            if let Some(refusal) = replay_refusal(id, &before.properties) {
                return Err(RevertError::Refused(refusal));
            }
            let restored = providers
                .for_record(after)
                .update(UpdateCall {
                    resource_type: &after.resource_type,
                    logical_id: id,
                    stack,
                    physical_id: &after.physical_id,
                    previous: &after.properties,
                    desired: &before.properties,
                    needed: &[],
                })
                .await
                .map_err(RevertError::Update)?;
            before.physical_id = restored.physical_id;
            before.attributes = Some(restored.attributes);
            ledger.change(|s| {
                s.resources.insert(id.clone(), before);
            });
        }
        OperationKind::Policy => {
            let before = operation
                .before
                .clone()
                .ok_or(RevertError::Missing("no previous record"))?;
            ledger.change(|s| {
                s.resources.insert(id.clone(), before);
            });
        }
    }
    Ok(())
}
