//! Removing the noncurrent versions of one key in the (versioned) state bucket.
//!
//! A `DeleteObject` on a versioned bucket only writes a delete marker; every earlier body stays
//! readable by `VersionId`. For transient objects (the lock, the rollback journal, the
//! bootstrap marker, custom-resource responses) cdkd also removes those versions. It never
//! touches the current version, never another key, and never `state.json` (whose history is
//! the recovery capability versioning exists for) except the versions `cdkd scrub` finds holding
//! a secret. It fails soft: the caller logs the
//! report's warning and carries on.

use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use aws_sdk_s3::Client;

use super::s3_error::S3Failure;

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
    match list_noncurrent_versions(client, bucket, key).await {
        Ok(doomed) => delete_versions(client, bucket, key, &doomed).await,
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
    let wanted = |latest: Option<bool>| which == Versions::Every || latest == Some(false);
    let mut doomed: Vec<ObjectIdentifier> = Vec::new();
    let (mut key_marker, mut version_marker): (Option<String>, Option<String>) = (None, None);
    loop {
        let page = client
            .list_object_versions()
            .bucket(bucket)
            .prefix(key)
            .set_key_marker(key_marker.take())
            .set_version_id_marker(version_marker.take())
            .send()
            .await
            .map_err(|err| PurgeFailure {
                key: key.to_string(),
                reason: refused("s3:ListBucketVersions", &S3Failure::from_sdk(&err)),
            })?;
        // The listing is by prefix; `lock.json.bak` must not go with `lock.json`.
        let versions = page
            .versions()
            .iter()
            .filter(|v| v.key() == Some(key) && wanted(v.is_latest()))
            .filter_map(|v| v.version_id());
        let markers = page
            .delete_markers()
            .iter()
            .filter(|m| m.key() == Some(key) && wanted(m.is_latest()))
            .filter_map(|m| m.version_id());
        for version_id in versions.chain(markers) {
            doomed.push(
                ObjectIdentifier::builder()
                    .key(key)
                    .version_id(version_id)
                    .build()
                    .expect("key and version id are set"),
            );
        }
        if page.is_truncated() != Some(true) {
            break;
        }
        key_marker = page.next_key_marker().map(ToString::to_string);
        version_marker = page.next_version_id_marker().map(ToString::to_string);
        if key_marker.is_none() && version_marker.is_none() {
            break;
        }
    }
    Ok(doomed)
}

/// The noncurrent versions of `key` whose body `holds` (delete markers have none): the
/// versions `cdkd scrub` removes from a record's history, leaving the others as history.
pub async fn noncurrent_versions_holding(
    client: &Client,
    bucket: &str,
    key: &str,
    holds: impl Fn(&[u8]) -> bool,
) -> Result<Vec<ObjectIdentifier>, PurgeFailure> {
    let mut holding = Vec::new();
    for version in list_noncurrent_versions(client, bucket, key).await? {
        let Some(version_id) = version.version_id() else {
            continue;
        };
        let body = match client
            .get_object()
            .bucket(bucket)
            .key(key)
            .version_id(version_id)
            .send()
            .await
        {
            Ok(object) => object.body.collect().await.map(|b| b.to_vec()).ok(),
            // A delete marker has no body to hold anything.
            Err(_) => None,
        };
        if body.as_deref().is_some_and(&holds) {
            holding.push(version);
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
    let mut report = PurgeReport::default();
    for batch in doomed.chunks(1000) {
        let delete = Delete::builder()
            .set_objects(Some(batch.to_vec()))
            .quiet(true)
            .build()
            .expect("objects are set");
        match client
            .delete_objects()
            .bucket(bucket)
            .delete(delete)
            .send()
            .await
        {
            Ok(answer) => {
                // DeleteObjects succeeds overall and reports refusals per key; a version that is
                // already gone is what the purge wanted.
                let refusals: Vec<_> = answer
                    .errors()
                    .iter()
                    .filter(|e| e.code() != Some("NoSuchVersion"))
                    .collect();
                report.removed += batch.len() - refusals.len();
                if let Some(first) = refusals.first() {
                    report.failures.push(PurgeFailure {
                        key: key.to_string(),
                        reason: format!(
                            "{}: s3:DeleteObjectVersion, {} of {} versions refused",
                            first.code().unwrap_or("Error"),
                            refusals.len(),
                            batch.len()
                        ),
                    });
                }
            }
            Err(err) => report.failures.push(PurgeFailure {
                key: key.to_string(),
                reason: refused("s3:DeleteObjectVersion", &S3Failure::from_sdk(&err)),
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
    let report = purge_noncurrent_versions(client, bucket, key).await;
    log_report(bucket, key, object, level, &report);
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
