//! The deployment layer: turning plans into provider calls (deploy, destroy, rollback), the
//! state ledger and rollback journal they keep, and the cross-stack values they read.

pub mod deploy;
pub mod destroy;
pub mod executor;
pub mod external;
pub mod journal;
pub mod ledger;
pub mod parameters;
pub mod reconcile;
pub mod report;
pub mod secrets;
