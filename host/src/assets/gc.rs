//! `cdkd gc`: reclaims cdkd-owned storage no state record references: objects in a region's
//! cdkd asset bucket and images in its cdkd container repository (the ones its bootstrap marker
//! names; CDK bootstrap storage is never touched), and stranded custom-resource response
//! placeholders in the state bucket.
//!
//! Assets are content-addressed and shared by every stack of the region, so an object is kept
//! while ANY record or journal in the state bucket (every prefix, stack and region, nested ones
//! included) mentions its key, and while it is younger than the age guard (a deploy that has published
//! but not yet recorded its assets must not lose them).

use std::time::{Duration, SystemTime};

use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use crate::aws_env::AwsEnvironment;
use crate::state::bootstrap::read_marker;
use crate::state::bucket;
use crate::state::purge::{self, PurgeLogLevel, PurgedObject};
use crate::state::store::StateStore;

/// The state bucket prefix of custom-resource response placeholders.
const RESPONSES: &str = "custom-resource-responses/";

/// A placeholder older than this belongs to no run: a handler has one hour to answer.
pub const PLACEHOLDER_GUARD: Duration = Duration::from_secs(2 * 60 * 60);

/// What one object is, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// `s3://bucket/key`.
    pub location: String,
    /// Its size in bytes.
    pub size: i64,
}

/// What `gc` did (or, on a dry run, would do) in one region.
#[derive(Debug, Default)]
pub struct GcReport {
    /// The region.
    pub region: String,
    /// The cdkd asset bucket, when the region has one.
    pub asset_bucket: Option<String>,
    /// Unreferenced asset objects past the age guard.
    pub assets: Vec<Collected>,
    /// Unreferenced asset objects kept because they are younger than the guard.
    pub too_young: usize,
    /// Asset objects some record references.
    pub referenced: usize,
    /// Unreferenced container images past the age guard (`repository:tag`).
    pub images: Vec<Collected>,
    /// Stranded response placeholders.
    pub placeholders: Vec<Collected>,
}

/// How `gc` runs.
#[derive(Debug, Clone, Copy)]
pub struct GcOptions {
    /// Objects younger than this are kept even when unreferenced.
    pub older_than: Duration,
    /// Report only.
    pub dry_run: bool,
}

/// Collects the garbage of `region`.
pub async fn collect(
    store: &StateStore,
    aws: &AwsEnvironment,
    region: &str,
    options: GcOptions,
) -> anyhow::Result<GcReport> {
    let mut report = GcReport {
        region: region.to_string(),
        ..GcReport::default()
    };
    let backend = &store.backend;
    let marker = read_marker(backend.client()?, backend.bucket(), region).await?;
    // Every record's and journal's text, under every state prefix of the bucket (stacks kept
    // with another --state-prefix publish to the same asset bucket), read as stored so that a
    // record this cdkd cannot parse still keeps its assets: an asset is referenced when its
    // key appears in any of them.
    let mut records = String::new();
    for key in backend.list_keys("").await? {
        if !(key.ends_with("/state.json") || key.ends_with("/rollback-journal.json")) {
            continue;
        }
        if let Some(object) = backend.get_object(&key).await? {
            records.push_str(&String::from_utf8_lossy(&object.body));
        }
    }
    let now = SystemTime::now();
    let age = |modified: Option<&aws_sdk_s3::primitives::DateTime>| {
        modified
            .and_then(|m| SystemTime::try_from(*m).ok())
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default()
    };
    if let Some(marker) = &marker {
        let assets = &marker.asset_bucket;
        report.asset_bucket = Some(assets.clone());
        let client = bucket::state_bucket_client(aws, assets).await?;
        let mut doomed = Vec::new();
        let mut pages = client
            .list_objects_v2()
            .bucket(assets)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|err| {
                anyhow::anyhow!(
                    "cannot list the asset bucket s3://{assets}: {}",
                    crate::state::s3_error::S3Failure::from_sdk(&err)
                )
            })?;
            for object in page.contents() {
                let Some(key) = object.key() else { continue };
                if records.contains(key) {
                    report.referenced += 1;
                } else if age(object.last_modified()) < options.older_than {
                    report.too_young += 1;
                } else {
                    report.assets.push(Collected {
                        location: format!("s3://{assets}/{key}"),
                        size: object.size().unwrap_or_default(),
                    });
                    doomed.push(key.to_string());
                }
            }
        }
        if !options.dry_run {
            delete_keys(&client, assets, &doomed).await?;
        }
        collect_images(
            aws,
            region,
            &marker.container_repo,
            &records,
            options,
            &mut report,
        )
        .await?;
    }
    let state_bucket = backend.bucket();
    for key in backend.list_keys(RESPONSES).await? {
        let head = backend
            .client()?
            .head_object()
            .bucket(state_bucket)
            .key(&key)
            .send()
            .await;
        let Ok(head) = head else { continue };
        if age(head.last_modified()) < PLACEHOLDER_GUARD {
            continue;
        }
        report.placeholders.push(Collected {
            location: format!("s3://{state_bucket}/{key}"),
            size: head.content_length().unwrap_or_default(),
        });
        if !options.dry_run {
            backend.delete_object(&key).await?;
            // The handler's full response, `Data` included: its history goes too.
            purge::purge_and_report(
                backend.client()?,
                state_bucket,
                &key,
                PurgedObject::CustomResourceResponse,
                PurgeLogLevel::Warn,
            )
            .await;
        }
    }
    Ok(report)
}

/// Images of the cdkd repository whose tag no record mentions, past the guard.
async fn collect_images(
    aws: &AwsEnvironment,
    region: &str,
    repository: &str,
    records: &str,
    options: GcOptions,
    report: &mut GcReport,
) -> anyhow::Result<()> {
    let ecr = super::images::ecr_client(aws, region);
    let now = SystemTime::now();
    let mut doomed = Vec::new();
    let mut pages = ecr
        .describe_images()
        .repository_name(repository)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = match page {
            Ok(page) => page,
            // A repository that is gone has nothing to collect.
            Err(err)
                if aws_sdk_ecr::error::ProvideErrorMetadata::code(&err)
                    == Some("RepositoryNotFoundException") =>
            {
                return Ok(());
            }
            Err(err) => anyhow::bail!(
                "cannot list the images of {repository}: {}",
                cdkd_aws_common::error_line(&err)
            ),
        };
        for image in page.image_details() {
            let tags = image.image_tags();
            if tags.iter().any(|tag| records.contains(tag.as_str())) {
                report.referenced += 1;
                continue;
            }
            let age = image
                .image_pushed_at()
                .and_then(|t| SystemTime::try_from(*t).ok())
                .and_then(|t| now.duration_since(t).ok())
                .unwrap_or_default();
            if age < options.older_than {
                report.too_young += 1;
                continue;
            }
            let name = tags
                .first()
                .cloned()
                .unwrap_or_else(|| image.image_digest().unwrap_or_default().to_string());
            report.images.push(Collected {
                location: format!("{repository}:{name}"),
                size: image.image_size_in_bytes().unwrap_or_default(),
            });
            if let Some(digest) = image.image_digest() {
                doomed.push(
                    aws_sdk_ecr::types::ImageIdentifier::builder()
                        .image_digest(digest)
                        .build(),
                );
            }
        }
    }
    if !options.dry_run {
        for batch in doomed.chunks(100) {
            ecr.batch_delete_image()
                .repository_name(repository)
                .set_image_ids(Some(batch.to_vec()))
                .send()
                .await
                .map_err(|err| {
                    anyhow::anyhow!(
                        "cannot delete images of {repository}: {}",
                        cdkd_aws_common::error_line(&err)
                    )
                })?;
        }
    }
    Ok(())
}

async fn delete_keys(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    keys: &[String],
) -> anyhow::Result<()> {
    for batch in keys.chunks(1000) {
        let objects = batch
            .iter()
            .map(|key| ObjectIdentifier::builder().key(key).build())
            .collect::<Result<Vec<_>, _>>()?;
        let answer = client
            .delete_objects()
            .bucket(bucket)
            .delete(
                Delete::builder()
                    .set_objects(Some(objects))
                    .quiet(true)
                    .build()?,
            )
            .send()
            .await
            .map_err(|err| {
                anyhow::anyhow!(
                    "cannot delete from s3://{bucket}: {}",
                    crate::state::s3_error::S3Failure::from_sdk(&err)
                )
            })?;
        if let Some(refused) = answer.errors().first() {
            anyhow::bail!(
                "s3://{bucket}: {} of {} deletes refused ({}: {})",
                answer.errors().len(),
                batch.len(),
                refused.code().unwrap_or("Error"),
                refused.key().unwrap_or("")
            );
        }
    }
    Ok(())
}
