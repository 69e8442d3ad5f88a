//! Removing the noncurrent versions of one key in the (versioned) state bucket.
//!
//! A `DeleteObject` on a versioned bucket only writes a delete marker; every earlier body stays
//! readable by `VersionId`. For transient objects (the lock, the rollback journal, the
//! bootstrap marker, custom-resource responses) cdkd also removes those versions. It never
//! touches the current version, never another key, and never `state.json` (whose history is
//! the recovery capability versioning exists for) except the versions `cdkd scrub` finds holding
//! a secret. It fails soft: the caller logs the
//! report's warning and carries on. Each operation takes any [`ObjectStorage`]; the functions
//! taking an S3 client are the same operations on the state bucket, for callers outside the
//! state layer.

use aws_sdk_s3::types::ObjectIdentifier;
use aws_sdk_s3::Client;

use super::s3_error::S3Failure;
use super::storage::{ObjectStorage, ObjectVersion, S3Storage};

/// The kinds of object cdkd purges, each naming itself in the warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgedObject {
    /// `lock.json`.
    Lock,
    /// `rollback-journal.json`.
    RollbackJournal,
    /// `cdkd-bootstrap/{region}.json`.
    BootstrapMarker,
    /// `custom-resource-responses/{requestId}.json`.
    CustomResourceResponse,
    /// A transient CloudFormation template upload.
    TransientTemplate,
    /// `state.json`, only the versions that held a resolved dynamic reference (`cdkd scrub`).
    ScrubbedState,
}

impl PurgedObject {
    /// The warning's parenthetical: what the surviving versions hold.
    pub fn description(self) -> &'static str {
        match self {
            PurgedObject::Lock => "the stack lock's heartbeat record: owner, timestamp, expiresAt and operation; no secret",
            PurgedObject::RollbackJournal => "the rollback journal, whose `failedOperations[].attemptedProperties` records the properties of the failed write verbatim",
            PurgedObject::BootstrapMarker => "the asset-storage bootstrap marker, which names the region's asset bucket and container repository; no secret",
            PurgedObject::CustomResourceResponse => "a custom-resource response, whose `Data` holds whatever the handler returned, secrets included",
            PurgedObject::TransientTemplate => "a transient CloudFormation template, which carries a secret only if the template does",
            PurgedObject::ScrubbedState => "earlier state records that hold the resolved value of a dynamic reference in plaintext",
        }
    }
}

/// One key that could not be purged, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PurgeFailure {
    /// The key.
    pub key: String,
    /// `Code: detail`, naming the S3 action that was refused.
    pub reason: String,
}

/// What a purge did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Versions and delete markers removed (including ones already gone).
    pub removed: usize,
    /// Keys left with noncurrent versions.
    pub failures: Vec<PurgeFailure>,
}

/// How loudly a failed purge is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeLogLevel {
    /// A warning (secret-bearing objects, rare reap paths).
    Warn,
    /// Debug only (the lock release that ends every mutating command).
    Debug,
}

/// Which versions of a key a listing returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    /// Noncurrent versions and delete markers (the history).
    Noncurrent,
    /// Every version and delete marker, the current one included.
    Every,
}

/// Lists and removes the noncurrent versions and delete markers of exactly `key`.
pub async fn purge_noncurrent_versions(client: &Client, bucket: &str, key: &str) -> PurgeReport {
    purge_noncurrent(&S3Storage::new(client.clone(), bucket), key).await
}

/// [`purge_noncurrent_versions`] on any storage.
pub async fn purge_noncurrent(storage: &dyn ObjectStorage, key: &str) -> PurgeReport {
    match version_ids(storage, key, Versions::Noncurrent).await {
        Ok(doomed) => remove_versions(storage, key, &doomed).await,
        Err(failure) => PurgeReport {
            removed: 0,
            failures: vec![failure],
        },
    }
}

/// The noncurrent versions and delete markers of exactly `key`, as they are now.
pub async fn list_noncurrent_versions(
    client: &Client,
    bucket: &str,
    key: &str,
) -> Result<Vec<ObjectIdentifier>, PurgeFailure> {
    list_versions(client, bucket, key, Versions::Noncurrent).await
}

/// The versions and delete markers of exactly `key` that `which` names, as they are now.
pub async fn list_versions(
    client: &Client,
    bucket: &str,
    key: &str,
    which: Versions,
) -> Result<Vec<ObjectIdentifier>, PurgeFailure> {
    let ids = version_ids(&S3Storage::new(client.clone(), bucket), key, which).await?;
    Ok(ids.iter().map(|id| identifier(key, id)).collect())
}

#[allow(
    clippy::expect_used,
    reason = "an invariant: the builder's required fields are set just above"
)]
fn identifier(key: &str, version_id: &str) -> ObjectIdentifier {
    ObjectIdentifier::builder()
        .key(key)
        .version_id(version_id)
        .build()
        .expect("key and version id are set")
}

/// The ids of the versions and delete markers of exactly `key` that `which` names.
pub async fn version_ids(
    storage: &dyn ObjectStorage,
    key: &str,
    which: Versions,
) -> Result<Vec<String>, PurgeFailure> {
    let listed = storage
        .list_versions(key)
        .await
        .map_err(|failure| PurgeFailure {
            key: key.to_string(),
            reason: refused("s3:ListBucketVersions", &failure),
        })?;
    // The listing is by prefix; `lock.json.bak` must not go with `lock.json`. Bodies first,
    // then delete markers, as S3's listing returns them.
    let wanted = |v: &&ObjectVersion| v.key == key && (which == Versions::Every || !v.is_latest);
    let bodies = listed.iter().filter(|v| !v.delete_marker).filter(wanted);
    let markers = listed.iter().filter(|v| v.delete_marker).filter(wanted);
    Ok(bodies
        .chain(markers)
        .map(|v| v.version_id.clone())
        .collect())
}

/// The noncurrent versions of `key` whose body `holds` (delete markers have none): the
/// versions `cdkd scrub` removes from a record's history, leaving the others as history.
pub async fn noncurrent_versions_holding(
    client: &Client,
    bucket: &str,
    key: &str,
    holds: impl Fn(&[u8]) -> bool,
) -> Result<Vec<ObjectIdentifier>, PurgeFailure> {
    let storage = S3Storage::new(client.clone(), bucket);
    let mut holding = Vec::new();
    for version_id in version_ids(&storage, key, Versions::Noncurrent).await? {
        // A delete marker has no body to hold anything.
        let body = storage.get_version(key, &version_id).await.ok();
        if body.as_deref().is_some_and(&holds) {
            holding.push(identifier(key, &version_id));
        }
    }
    Ok(holding)
}

/// Removes listed versions of `key` (a version already gone counts as removed).
pub async fn delete_versions(
    client: &Client,
    bucket: &str,
    key: &str,
    doomed: &[ObjectIdentifier],
) -> PurgeReport {
    let ids: Vec<String> = doomed
        .iter()
        .filter_map(|o| o.version_id().map(ToString::to_string))
        .collect();
    remove_versions(&S3Storage::new(client.clone(), bucket), key, &ids).await
}

/// [`delete_versions`] on any storage, by version id.
pub async fn remove_versions(
    storage: &dyn ObjectStorage,
    key: &str,
    doomed: &[String],
) -> PurgeReport {
    let mut report = PurgeReport::default();
    for batch in doomed.chunks(1000) {
        match storage.delete_versions(key, batch).await {
            Ok(codes) => {
                // DeleteObjects succeeds overall and reports refusals per key; a version that is
                // already gone is what the purge wanted.
                let refusals: Vec<_> = codes.iter().filter(|c| *c != "NoSuchVersion").collect();
                report.removed += batch.len() - refusals.len();
                if let Some(first) = refusals.first() {
                    report.failures.push(PurgeFailure {
                        key: key.to_string(),
                        reason: format!(
                            "{first}: s3:DeleteObjectVersion, {} of {} versions refused",
                            refusals.len(),
                            batch.len()
                        ),
                    });
                }
            }
            Err(failure) => report.failures.push(PurgeFailure {
                key: key.to_string(),
                reason: refused("s3:DeleteObjectVersion", &failure),
            }),
        }
    }
    report
}

fn refused(action: &str, failure: &S3Failure) -> String {
    format!("{}: {action}", failure.code.as_deref().unwrap_or("Error"))
}

/// The one-line warning for keys left unpurged, as the spec words it.
pub fn warning_text(bucket: &str, object: PurgedObject, failures: &[PurgeFailure]) -> String {
    let mut keys: Vec<&str> = failures.iter().map(|f| f.key.as_str()).collect();
    keys.dedup();
    let named: Vec<String> = failures
        .iter()
        .take(5)
        .map(|f| format!("{} ({})", f.key, f.reason))
        .collect();
    let more = if failures.len() > 5 {
        format!(" (and {} more)", failures.len() - 5)
    } else {
        String::new()
    };
    format!(
        "Could not purge noncurrent versions of {} key(s) in s3://{bucket}. Their previous versions survive and remain readable via GetObject with a VersionId ({}). Grant s3:ListBucketVersions and s3:DeleteObjectVersion on the state bucket, or purge the key(s) by hand. Failures: {}{more}",
        keys.len(),
        object.description(),
        named.join(", "),
    )
}

/// Purges `key` and reports a failure at `level`; never fails.
pub async fn purge_and_report(
    client: &Client,
    bucket: &str,
    key: &str,
    object: PurgedObject,
    level: PurgeLogLevel,
) -> PurgeReport {
    purge_and_report_on(&S3Storage::new(client.clone(), bucket), key, object, level).await
}

/// [`purge_and_report`] on any storage.
pub async fn purge_and_report_on(
    storage: &dyn ObjectStorage,
    key: &str,
    object: PurgedObject,
    level: PurgeLogLevel,
) -> PurgeReport {
    let report = purge_noncurrent(storage, key).await;
    log_report(storage.bucket(), key, object, level, &report);
    report
}

/// Logs what a purge did: removals at debug, failures at `level`.
pub fn log_report(
    bucket: &str,
    key: &str,
    object: PurgedObject,
    level: PurgeLogLevel,
    report: &PurgeReport,
) {
    if report.failures.is_empty() {
        tracing::debug!(key, removed = report.removed, "purged noncurrent versions");
    } else {
        let text = warning_text(bucket, object, &report.failures);
        match level {
            PurgeLogLevel::Warn => tracing::warn!("{text}"),
            PurgeLogLevel::Debug => tracing::debug!("{text}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(key: &str) -> PurgeFailure {
        PurgeFailure {
            key: key.into(),
            reason: "AccessDenied: s3:ListBucketVersions".into(),
        }
    }

    #[test]
    fn the_warning_matches_the_spec() {
        let text = warning_text(
            "cdkd-state-bucket",
            PurgedObject::RollbackJournal,
            &[failure("cdkd/MyStack/us-east-1/rollback-journal.json")],
        );
        assert_eq!(
            text,
            "Could not purge noncurrent versions of 1 key(s) in s3://cdkd-state-bucket. Their previous versions survive and remain readable via GetObject with a VersionId (the rollback journal, whose `failedOperations[].attemptedProperties` records the properties of the failed write verbatim). Grant s3:ListBucketVersions and s3:DeleteObjectVersion on the state bucket, or purge the key(s) by hand. Failures: cdkd/MyStack/us-east-1/rollback-journal.json (AccessDenied: s3:ListBucketVersions)"
        );
    }

    #[test]
    fn the_warning_names_five_keys_then_counts_the_rest() {
        let failures: Vec<PurgeFailure> = (0..7).map(|i| failure(&format!("k{i}"))).collect();
        let text = warning_text("b", PurgedObject::Lock, &failures);
        assert!(text.contains("of 7 key(s)"), "{text}");
        assert!(text.contains("k4 (AccessDenied"), "{text}");
        assert!(!text.contains("k5 ("), "{text}");
        assert!(text.ends_with(" (and 2 more)"), "{text}");
        let five: Vec<PurgeFailure> = (0..5).map(|i| failure(&format!("k{i}"))).collect();
        assert!(!warning_text("b", PurgedObject::Lock, &five).contains("more"));
    }
}
