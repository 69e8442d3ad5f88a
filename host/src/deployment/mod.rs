//! The deployment layer: turning plans into provider calls (deploy, destroy, rollback), the
//! state ledger and rollback journal they keep, and the cross-stack values they read.

pub mod deletes;
pub mod deploy;
pub mod destroy;
pub mod drift;
pub mod engine;
pub mod executor;
pub mod expected_time;
pub mod export;
pub mod external;
#[cfg(test)]
pub(crate) mod fakes;
pub mod import;
pub mod journal;
pub mod ledger;
pub mod live;
pub mod migrate;
pub mod nested;
pub mod parameters;
pub mod planning;
pub mod prepare;
pub mod reconcile;
pub mod report;
pub mod revert;
pub mod scrub;
pub mod secrets;
pub mod store;
