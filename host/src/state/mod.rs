//! The state layer: stack records, locks and bootstrap in the S3 state bucket.
//!
//! Follows the project's state-management specification (kept outside this repository;
//! docs/state.md is the user's summary): schema v9 with in-memory upgrades from v1 (`upgrade`),
//! the region-scoped key layout (`keys`), optimistic writes (`backend`), the renewed stack lock
//! (`lock`), noncurrent-version purges (`purge`), bucket resolution (`bucket`), the exports
//! index (`exports_index`) and `cdkd bootstrap` (`bootstrap`). It knows nothing of templates or providers.
//!
//! Every object operation goes through the storage seam ([`storage::ObjectStorage`]): S3 in
//! production, a versioned bucket in memory in tests, both held to one conformance suite
//! ([`conformance`]). Failures are [`StateError`] variants; callers match the variant, users
//! read its text.

pub mod backend;
pub mod bootstrap;
pub mod bucket;
pub mod conformance;
pub mod exports_index;
pub mod history;
pub mod keys;
pub mod lock;
pub mod purge;
pub mod s3_error;
pub mod schema;
pub mod storage;
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
    /// A stack has records in several regions and none was named.
    #[error("stack {stack} has state in several regions ({}); pick one with --stack-region", .regions.join(", "))]
    SeveralRegions {
        /// The stack.
        stack: String,
        /// The regions holding a record, sorted.
        regions: Vec<String>,
    },
    /// `bootstrap --destroy --include-state-bucket` on a bucket that still holds records.
    #[error("the state bucket still holds {} stack record(s): {}. Destroy them (cdkd destroy / cdkd state destroy) or forget them (cdkd state orphan) first", .stacks.len(), .stacks.join(", "))]
    StacksRemain {
        /// `Stack (region)` of each record left.
        stacks: Vec<String>,
    },
    /// A bucket name is taken by another account.
    #[error("bucket {bucket} already exists and belongs to another account; choose another name")]
    BucketTaken {
        /// The bucket.
        bucket: String,
    },
    /// A bucket-level S3 call of `cdkd bootstrap` failed (create, configure, empty, delete).
    #[error("cannot {operation} for bucket {bucket}: {detail}")]
    Bucket {
        /// What was being done.
        operation: String,
        /// The bucket.
        bucket: String,
        /// The S3 answer.
        detail: String,
    },
    /// S3 refused a bucket when asked with the caller's account as its expected owner.
    #[error("bucket {bucket} is not proven to be your account's ({account}): S3 refused it (403) with ExpectedBucketOwner={account}. Another account may own it (its name is predictable), or your credentials cannot read it; cdkd does not use a bucket it cannot prove is yours. Name a bucket your account owns with --state-bucket (`cdkd bootstrap --state-bucket NAME` creates one)")]
    NotOwned {
        /// The bucket.
        bucket: String,
        /// The caller's account.
        account: String,
    },
    /// Whether a bucket exists could not be told.
    #[error("cannot check bucket {bucket}: {detail}")]
    BucketCheck {
        /// The bucket.
        bucket: String,
        /// The S3 answer.
        detail: String,
    },
    /// STS could not say which account the caller is in.
    #[error("cannot find the AWS account (sts:GetCallerIdentity): {detail}")]
    NoAccount {
        /// The STS answer.
        detail: String,
    },
    /// STS answered without an account.
    #[error("sts:GetCallerIdentity returned no account")]
    NoAccountInAnswer,
    /// Another AWS call failed.
    #[error("{0}")]
    Aws(String),
    /// A call outside the storage seam (bootstrap markers, gc, scrub) on a backend that is not
    /// on S3.
    #[error("bucket {bucket} is not on S3 (in-memory state), and this needs S3 itself")]
    NotOnS3 {
        /// The bucket.
        bucket: String,
    },
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_errors_keep_the_text_users_read() {
        let remain = StateError::StacksRemain {
            stacks: vec!["Remaining (us-east-1)".into(), "Other (eu-west-1)".into()],
        };
        assert_eq!(
            remain.to_string(),
            "the state bucket still holds 2 stack record(s): Remaining (us-east-1), Other (eu-west-1). Destroy them (cdkd destroy / cdkd state destroy) or forget them (cdkd state orphan) first"
        );
        let taken = StateError::BucketTaken {
            bucket: "cdkd-state-1".into(),
        };
        assert_eq!(
            taken.to_string(),
            "bucket cdkd-state-1 already exists and belongs to another account; choose another name"
        );
        let bucket = StateError::Bucket {
            operation: "enable versioning".into(),
            bucket: "b".into(),
            detail: "AccessDenied: no (HTTP 403)".into(),
        };
        assert_eq!(
            bucket.to_string(),
            "cannot enable versioning for bucket b: AccessDenied: no (HTTP 403)"
        );
        let check = StateError::BucketCheck {
            bucket: "b".into(),
            detail: "SlowDown (HTTP 503)".into(),
        };
        assert_eq!(
            check.to_string(),
            "cannot check bucket b: SlowDown (HTTP 503)"
        );
        let account = StateError::NoAccount {
            detail: "expired token".into(),
        };
        assert_eq!(
            account.to_string(),
            "cannot find the AWS account (sts:GetCallerIdentity): expired token"
        );
        assert_eq!(
            StateError::NoAccountInAnswer.to_string(),
            "sts:GetCallerIdentity returned no account"
        );
    }

    #[test]
    fn a_missing_bucket_reads_as_the_bootstrap_hint_and_other_failures_name_the_key() {
        let missing = S3Failure {
            status: Some(404),
            code: Some("NoSuchBucket".into()),
            message: "NoSuchBucket: gone".into(),
        };
        let err = StateError::from_failure("read", "cdkd/A/us-east-1/state.json", "b", missing);
        assert!(
            matches!(&err, StateError::NoBucket { name } if name == "b"),
            "{err}"
        );
        let denied = S3Failure {
            status: Some(403),
            code: Some("AccessDenied".into()),
            message: "AccessDenied: no".into(),
        };
        let err = StateError::from_failure("write", "k", "b", denied);
        assert!(
            matches!(&err, StateError::S3 { operation, key, .. } if operation == "write" && key == "k"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "cannot write k: AccessDenied: no (HTTP 403)"
        );
    }
}
