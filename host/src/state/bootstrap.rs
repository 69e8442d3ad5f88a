//! `cdkd bootstrap`: the state bucket, the region's asset bucket, and the marker written last.
//!
//! Every step is idempotent, so a re-run repairs a half-finished bootstrap. `--destroy` tears
//! down in reverse: the asset bucket and the container repository, then the marker (last, so a
//! teardown that stops part-way leaves the marker naming what is still there, and a re-run
//! finishes it), then (only when asked, and only when no stack record remains) the state
//! bucket.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketLocationConstraint, BucketVersioningStatus, CreateBucketConfiguration, Delete,
    ObjectIdentifier, PublicAccessBlockConfiguration, ServerSideEncryption,
    ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    VersioningConfiguration,
};
use aws_sdk_s3::Client;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::keys::{bootstrap_marker, StateKeys, BOOTSTRAP_MARKER_PREFIX};
use super::purge::{purge_and_report, PurgeLogLevel, PurgedObject};
use super::s3_error::S3Failure;
use super::StateError;

/// What `cdkd bootstrap` sets up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapPlan {
    /// The account (for names and the bucket policy).
    pub account: String,
    /// The region being bootstrapped.
    pub region: String,
    /// The state bucket's name.
    pub state_bucket: String,
    /// The region's asset storage; `None` with `--no-assets`.
    pub assets: Option<AssetStorage>,
}

/// A region's cdkd-owned asset storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetStorage {
    /// The asset bucket (default `cdkd-assets-{account}-{region}`).
    pub bucket: String,
    /// The container-asset repository name (default `cdkd-container-assets-{account}-{region}`).
    pub container_repo: String,
}

impl AssetStorage {
    /// The default names for `account` and `region`.
    pub fn defaults(account: &str, region: &str) -> AssetStorage {
        AssetStorage {
            bucket: format!("cdkd-assets-{account}-{region}"),
            container_repo: format!("cdkd-container-assets-{account}-{region}"),
        }
    }
}

/// The body of `cdkd-bootstrap/{region}.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapMarker {
    /// The marker format version.
    pub version: u32,
    /// The region it opts in.
    pub region: String,
    /// The asset bucket every consumer must use.
    pub asset_bucket: String,
    /// The container-asset repository every consumer must use.
    pub container_repo: String,
}

/// The policy every cdkd bucket gets: no principal outside the account, no plain HTTP.
pub fn deny_external_access_policy(bucket: &str, account: &str, region: &str) -> Value {
    let partition = crate::aws_env::partition(region);
    let resources = json!([
        format!("arn:{partition}:s3:::{bucket}"),
        format!("arn:{partition}:s3:::{bucket}/*"),
    ]);
    json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyExternalAccess",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": resources,
                "Condition": {"StringNotEquals": {"aws:PrincipalAccount": account}}
            },
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": resources,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}}
            }
        ]
    })
}

fn aws_error(what: &str, bucket: &str, failure: &S3Failure) -> StateError {
    StateError::Bucket {
        operation: what.to_string(),
        bucket: bucket.to_string(),
        detail: failure.to_string(),
    }
}

/// Creates a hardened bucket (or confirms it is already ours) in `client`'s region.
#[allow(
    clippy::expect_used,
    reason = "an invariant: the builder's required fields are set just above"
)]
async fn ensure_bucket(
    client: &Client,
    bucket: &str,
    region: &str,
    account: &str,
    versioned: bool,
) -> Result<bool, StateError> {
    // us-east-1 answers CreateBucket on a bucket we own with success, so ask first.
    let exists = client.head_bucket().bucket(bucket).send().await.is_ok();
    let mut create = client.create_bucket().bucket(bucket);
    if region != "us-east-1" {
        create = create.create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from(region))
                .build(),
        );
    }
    let created = if exists {
        false
    } else {
        match create.send().await {
            Ok(_) => true,
            Err(err) => {
                let failure = S3Failure::from_sdk(&err);
                match failure.code.as_deref() {
                    Some("BucketAlreadyOwnedByYou") => false,
                    Some("BucketAlreadyExists") => {
                        return Err(StateError::BucketTaken {
                            bucket: bucket.to_string(),
                        })
                    }
                    _ => return Err(aws_error("create the bucket", bucket, &failure)),
                }
            }
        }
    };
    if versioned {
        client
            .put_bucket_versioning()
            .bucket(bucket)
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .map_err(|err| aws_error("enable versioning", bucket, &S3Failure::from_sdk(&err)))?;
    }
    // An existing bucket keeps what its owner chose: its encryption (a customer KMS key stays)
    // and its policy statements (ours are added beside them, by Sid).
    let encrypted = if created {
        false
    } else {
        match client.get_bucket_encryption().bucket(bucket).send().await {
            Ok(found) => found
                .server_side_encryption_configuration()
                .is_some_and(|config| !config.rules().is_empty()),
            Err(err) => {
                // Only "none configured" means none: any other failure must not lead to
                // replacing a key the owner chose.
                let failure = S3Failure::from_sdk(&err);
                if failure.code.as_deref() == Some("ServerSideEncryptionConfigurationNotFoundError")
                {
                    false
                } else {
                    return Err(aws_error("read the bucket encryption", bucket, &failure));
                }
            }
        }
    };
    if !encrypted {
        let rule = ServerSideEncryptionRule::builder()
            .apply_server_side_encryption_by_default(
                ServerSideEncryptionByDefault::builder()
                    .sse_algorithm(ServerSideEncryption::Aes256)
                    .build()
                    .expect("algorithm is set"),
            )
            .build();
        client
            .put_bucket_encryption()
            .bucket(bucket)
            .server_side_encryption_configuration(
                ServerSideEncryptionConfiguration::builder()
                    .rules(rule)
                    .build()
                    .expect("rules are set"),
            )
            .send()
            .await
            .map_err(|err| aws_error("enable encryption", bucket, &S3Failure::from_sdk(&err)))?;
    }
    client
        .put_public_access_block()
        .bucket(bucket)
        .public_access_block_configuration(
            PublicAccessBlockConfiguration::builder()
                .block_public_acls(true)
                .ignore_public_acls(true)
                .block_public_policy(true)
                .restrict_public_buckets(true)
                .build(),
        )
        .send()
        .await
        .map_err(|err| aws_error("block public access", bucket, &S3Failure::from_sdk(&err)))?;
    let existing = if created {
        None
    } else {
        match client.get_bucket_policy().bucket(bucket).send().await {
            Ok(found) => found.policy().map(str::to_string),
            Err(err) => {
                let failure = S3Failure::from_sdk(&err);
                if failure.code.as_deref() == Some("NoSuchBucketPolicy") {
                    None
                } else {
                    return Err(aws_error("read the bucket policy", bucket, &failure));
                }
            }
        }
    };
    let ours = deny_external_access_policy(bucket, account, region);
    let policy = match existing {
        None => Some(ours),
        Some(text) => merged_policy(&text, &ours).map_err(|detail| StateError::Bucket {
            operation: "keep its bucket policy".into(),
            bucket: bucket.to_string(),
            detail,
        })?,
    };
    if let Some(policy) = policy {
        client
            .put_bucket_policy()
            .bucket(bucket)
            .policy(policy.to_string())
            .send()
            .await
            .map_err(|err| {
                aws_error("set the bucket policy", bucket, &S3Failure::from_sdk(&err))
            })?;
    }
    Ok(created)
}

/// `existing` (a bucket policy's text) with the statements of `ours` it lacks added, or `None`
/// when it has them all. A statement of the same Sid that differs is the owner's choice: it is
/// kept, with a warning naming it. An unreadable policy is an error: it is never replaced.
#[allow(
    clippy::expect_used,
    reason = "an invariant: the builder's required fields are set just above"
)]
fn merged_policy(existing: &str, ours: &Value) -> Result<Option<Value>, String> {
    let mut policy: Value = serde_json::from_str(existing).map_err(|err| {
        format!("its policy is not JSON ({err}); fix it, cdkd will not replace it")
    })?;
    let statements = match policy.get_mut("Statement") {
        Some(Value::Array(statements)) => statements,
        Some(single @ Value::Object(_)) => {
            *single = Value::Array(vec![single.take()]);
            single.as_array_mut().expect("just made an array")
        }
        _ => {
            return Err("its policy has no Statement list; fix it, cdkd will not replace it".into())
        }
    };
    let mut added = false;
    for statement in ours["Statement"].as_array().into_iter().flatten() {
        let sid = &statement["Sid"];
        match statements.iter().find(|s| &s["Sid"] == sid) {
            None => {
                statements.push(statement.clone());
                added = true;
            }
            Some(theirs) if theirs != statement => tracing::warn!(
                "the bucket policy's statement {sid} differs from cdkd's; it is kept as it is"
            ),
            Some(_) => {}
        }
    }
    Ok(added.then_some(policy))
}

/// What a bootstrap did, for the command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BootstrapReport {
    /// Whether the state bucket was new.
    pub state_bucket_created: bool,
    /// Whether the asset bucket was new (`None` with `--no-assets`).
    pub asset_bucket_created: Option<bool>,
}

/// Runs a bootstrap. `state_client` and `asset_client` are aimed at the plan's region.
#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
pub async fn bootstrap(
    client: &Client,
    plan: &BootstrapPlan,
) -> Result<BootstrapReport, StateError> {
    let state_bucket_created = ensure_bucket(
        client,
        &plan.state_bucket,
        &plan.region,
        &plan.account,
        true,
    )
    .await?;
    let mut asset_bucket_created = None;
    if let Some(assets) = &plan.assets {
        asset_bucket_created =
            Some(ensure_bucket(client, &assets.bucket, &plan.region, &plan.account, false).await?);
        // The marker is written last, so a deploy that finds it can trust the storage exists.
        let marker = BootstrapMarker {
            version: 1,
            region: plan.region.clone(),
            asset_bucket: assets.bucket.clone(),
            container_repo: assets.container_repo.clone(),
        };
        let key = bootstrap_marker(&plan.region);
        client
            .put_object()
            .bucket(&plan.state_bucket)
            .key(&key)
            .content_type("application/json")
            .body(ByteStream::from(
                serde_json::to_vec_pretty(&marker).expect("marker serialises"),
            ))
            .send()
            .await
            .map_err(|err| {
                aws_error(
                    "write the bootstrap marker",
                    &plan.state_bucket,
                    &S3Failure::from_sdk(&err),
                )
            })?;
    }
    Ok(BootstrapReport {
        state_bucket_created,
        asset_bucket_created,
    })
}

/// Reads a region's marker, `None` when the region has not opted in.
pub async fn read_marker(
    client: &Client,
    state_bucket: &str,
    region: &str,
) -> Result<Option<BootstrapMarker>, StateError> {
    let key = bootstrap_marker(region);
    match client
        .get_object()
        .bucket(state_bucket)
        .key(&key)
        .send()
        .await
    {
        Ok(output) => {
            let bytes = output
                .body
                .collect()
                .await
                .map_err(|err| StateError::s3("read", &key, err.to_string()))?
                .into_bytes();
            serde_json::from_slice(&bytes).map(Some).map_err(|err| {
                StateError::s3("read", &key, format!("not a bootstrap marker: {err}"))
            })
        }
        Err(err) => {
            let failure = S3Failure::from_sdk(&err);
            if failure.is_not_found() && !failure.is_no_such_bucket() {
                Ok(None)
            } else {
                Err(StateError::from_failure(
                    "read",
                    &key,
                    state_bucket,
                    failure,
                ))
            }
        }
    }
}

/// The regions with a bootstrap marker.
pub async fn opted_in_regions(
    client: &Client,
    state_bucket: &str,
) -> Result<Vec<String>, StateError> {
    let listed = client
        .list_objects_v2()
        .bucket(state_bucket)
        .prefix(BOOTSTRAP_MARKER_PREFIX)
        .send()
        .await
        .map_err(|err| {
            StateError::from_failure(
                "list",
                BOOTSTRAP_MARKER_PREFIX,
                state_bucket,
                S3Failure::from_sdk(&err),
            )
        })?;
    let mut regions: Vec<String> = listed
        .contents()
        .iter()
        .filter_map(|o| o.key())
        .filter_map(|key| {
            key.strip_prefix(BOOTSTRAP_MARKER_PREFIX)?
                .strip_suffix(".json")
        })
        .map(ToString::to_string)
        .collect();
    regions.sort();
    Ok(regions)
}

/// Deletes every version and delete marker in a bucket, then the bucket; a missing bucket is
/// already gone.
#[allow(
    clippy::expect_used,
    reason = "an invariant: the builder's required fields are set just above"
)]
pub async fn delete_bucket_completely(client: &Client, bucket: &str) -> Result<bool, StateError> {
    loop {
        let page = match client.list_object_versions().bucket(bucket).send().await {
            Ok(page) => page,
            Err(err) => {
                let failure = S3Failure::from_sdk(&err);
                if failure.is_no_such_bucket() || failure.status == Some(404) {
                    return Ok(false);
                }
                return Err(aws_error("list the versions", bucket, &failure));
            }
        };
        let mut doomed: Vec<ObjectIdentifier> = Vec::new();
        for (key, version) in page
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id()))
            .chain(
                page.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id())),
            )
        {
            if let Some(key) = key {
                let mut id = ObjectIdentifier::builder().key(key);
                if let Some(version) = version.filter(|v| *v != "null") {
                    id = id.version_id(version);
                }
                doomed.push(id.build().expect("key is set"));
            }
        }
        if doomed.is_empty() {
            break;
        }
        for batch in doomed.chunks(1000) {
            client
                .delete_objects()
                .bucket(bucket)
                .delete(
                    Delete::builder()
                        .set_objects(Some(batch.to_vec()))
                        .quiet(true)
                        .build()
                        .expect("objects are set"),
                )
                .send()
                .await
                .map_err(|err| aws_error("empty", bucket, &S3Failure::from_sdk(&err)))?;
        }
    }
    client
        .delete_bucket()
        .bucket(bucket)
        .send()
        .await
        .map_err(|err| aws_error("delete", bucket, &S3Failure::from_sdk(&err)))?;
    Ok(true)
}

/// What `bootstrap --destroy` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeardownReport {
    /// The asset bucket, when it existed.
    pub asset_bucket: Option<String>,
    /// The container repository deleted (`None` when it was already gone).
    pub container_repo: Option<String>,
    /// Whether a marker was removed.
    pub marker: bool,
    /// Whether the state bucket was removed.
    pub state_bucket: bool,
}

/// Tears a region's bootstrap down: asset bucket, then the container repository (through
/// `delete_repository`, which says whether it deleted one), then the marker, then (when asked,
/// and only when it holds no stack record) the state bucket.
pub async fn teardown<F, Fut>(
    client: &Client,
    state_bucket: &str,
    region: &str,
    keys: &StateKeys,
    include_state_bucket: bool,
    delete_repository: F,
) -> Result<TeardownReport, StateError>
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = Result<bool, StateError>>,
{
    if include_state_bucket {
        // Refuse before touching anything, so a refused teardown leaves the region usable.
        let backend = super::backend::StateBackend::new(client.clone(), state_bucket, keys.clone());
        match backend.list_stacks().await {
            Ok(stacks) if !stacks.is_empty() => {
                let names: Vec<String> = stacks
                    .iter()
                    .map(|s| format!("{} ({})", s.stack, s.region.as_deref().unwrap_or("?")))
                    .collect();
                return Err(StateError::StacksRemain { stacks: names });
            }
            Ok(_) | Err(StateError::NoBucket { .. }) => {}
            Err(other) => return Err(other),
        }
    }
    let mut report = TeardownReport::default();
    let marker = read_marker(client, state_bucket, region)
        .await
        .or_else(|err| match err {
            StateError::NoBucket { .. } => Ok(None),
            other => Err(other),
        })?;
    if let Some(marker) = &marker {
        if delete_bucket_completely(client, &marker.asset_bucket).await? {
            report.asset_bucket = Some(marker.asset_bucket.clone());
        }
        if delete_repository(marker.container_repo.clone()).await? {
            report.container_repo = Some(marker.container_repo.clone());
        }
        let key = bootstrap_marker(region);
        client
            .delete_object()
            .bucket(state_bucket)
            .key(&key)
            .send()
            .await
            .map_err(|err| {
                aws_error(
                    "delete the bootstrap marker",
                    state_bucket,
                    &S3Failure::from_sdk(&err),
                )
            })?;
        purge_and_report(
            client,
            state_bucket,
            &key,
            PurgedObject::BootstrapMarker,
            PurgeLogLevel::Warn,
        )
        .await;
        report.marker = true;
    }
    if include_state_bucket {
        report.state_bucket = delete_bucket_completely(client, state_bucket).await?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_policy_keeps_its_statements_and_gains_ours() {
        let ours = deny_external_access_policy("b", "123456789012", "us-east-1");
        let theirs = json!({"Version": "2012-10-17", "Statement": {"Sid": "AllowReader", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:role/reader"}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}});
        let merged = merged_policy(&theirs.to_string(), &ours).unwrap().unwrap();
        let sids: Vec<&str> = merged["Statement"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["Sid"].as_str().unwrap())
            .collect();
        assert_eq!(
            sids,
            ["AllowReader", "DenyExternalAccess", "DenyInsecureTransport"]
        );
        // Run again: nothing to add, nothing written.
        assert_eq!(merged_policy(&merged.to_string(), &ours).unwrap(), None);
        assert!(merged_policy("not json", &ours)
            .unwrap_err()
            .contains("not JSON"));
    }

    #[test]
    fn the_policy_denies_other_accounts_and_plain_http() {
        let policy = deny_external_access_policy("cdkd-state-123", "123456789012", "cn-north-1");
        let statements = policy["Statement"].as_array().unwrap();
        assert_eq!(statements.len(), 2);
        assert_eq!(statements[0]["Effect"], "Deny");
        assert_eq!(
            statements[0]["Condition"]["StringNotEquals"]["aws:PrincipalAccount"],
            "123456789012"
        );
        assert_eq!(
            statements[1]["Condition"]["Bool"]["aws:SecureTransport"],
            "false"
        );
        assert_eq!(
            statements[0]["Resource"][1],
            "arn:aws-cn:s3:::cdkd-state-123/*"
        );
    }

    #[test]
    fn partitions_follow_the_region() {
        use crate::aws_env::partition;
        assert_eq!(partition("us-east-1"), "aws");
        assert_eq!(partition("cn-northwest-1"), "aws-cn");
        assert_eq!(partition("us-gov-west-1"), "aws-us-gov");
        assert_eq!(partition("us-iso-east-1"), "aws-iso");
        assert_eq!(partition("us-isob-east-1"), "aws-iso-b");
    }

    #[test]
    fn default_asset_names_carry_account_and_region() {
        let assets = AssetStorage::defaults("123456789012", "eu-west-1");
        assert_eq!(assets.bucket, "cdkd-assets-123456789012-eu-west-1");
        assert_eq!(
            assets.container_repo,
            "cdkd-container-assets-123456789012-eu-west-1"
        );
    }
}
