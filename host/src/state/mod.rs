//! The state layer: stack records, locks and bootstrap in the S3 state bucket.
//!
//! Follows the project's state-management specification (kept outside this repository;
//! docs/state.md is the user's summary): schema v9 with in-memory upgrades from v1 (`upgrade`),
//! the region-scoped key layout (`keys`), optimistic writes (`backend`), the renewed stack lock
//! (`lock`), noncurrent-version purges (`purge`), bucket resolution (`bucket`), the exports
//! index (`exports_index`) and `cdkd bootstrap` (`bootstrap`). It knows nothing of templates or providers.

pub mod backend;
pub mod bootstrap;
pub mod bucket;
pub mod exports_index;
pub mod history;
pub mod keys;
pub mod lock;
pub mod purge;
pub mod s3_error;
pub mod schema;
pub mod store;
pub mod upgrade;

use s3_error::S3Failure;

/// A state-layer failure, worded for the user.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// A conditional write found someone else's write.
    #[error("State was modified by another process (stack {stack}, region {region}). Re-run the command; if this repeats, another cdkd is working on the stack.")]
    ConcurrentModification {
        /// The stack.
        stack: String,
        /// The region.
        region: String,
    },
    /// The stack is locked by a live process.
    #[error("stack {stack} ({region}) is locked by {owner} (operation {operation}) until {expires}. Wait for it to finish, or, if that process is gone, run `cdkd force-unlock {stack} --stack-region {region}`")]
    Locked {
        /// The stack.
        stack: String,
        /// The region.
        region: String,
        /// The holder.
        owner: String,
        /// What the holder is doing.
        operation: String,
        /// Its deadline.
        expires: String,
    },
    /// A record could not be read.
    #[error("state record {key}: {source}")]
    Schema {
        /// The object key.
        key: String,
        /// Why.
        source: upgrade::SchemaError,
    },
    /// No state bucket exists.
    #[error("no cdkd state bucket: {name} does not exist. Run `cdkd bootstrap` to create it, or name one with --state-bucket")]
    NoBucket {
        /// The default name that was looked for.
        name: String,
    },
    /// An S3 call failed.
    #[error("cannot {operation} {key}: {detail}")]
    S3 {
        /// What was being done.
        operation: String,
        /// The key.
        key: String,
        /// The S3 answer.
        detail: String,
    },
    /// Another AWS call failed.
    #[error("{0}")]
    Aws(String),
    /// The user asked for something that cannot be done.
    #[error("{0}")]
    Usage(String),
}

impl StateError {
    /// An S3 failure on `key`.
    pub fn s3(operation: &str, key: &str, detail: String) -> StateError {
        StateError::S3 {
            operation: operation.to_string(),
            key: key.to_string(),
            detail,
        }
    }

    /// An S3 failure, turning a missing bucket into the bootstrap hint.
    pub fn from_failure(
        operation: &str,
        key: &str,
        bucket: &str,
        failure: S3Failure,
    ) -> StateError {
        if failure.is_no_such_bucket() {
            StateError::NoBucket {
                name: bucket.to_string(),
            }
        } else if failure.status == Some(301) {
            // The region remembered for the bucket is no longer true; the next run asks again.
            crate::aws_facts::FactsFile::in_cache_dir().forget_bucket_regions();
            StateError::s3(
                operation,
                key,
                format!("{failure} (bucket {bucket} is in another region than cdkd remembered; it forgot the region: run the command again)"),
            )
        } else {
            StateError::s3(operation, key, failure.to_string())
        }
    }
}
