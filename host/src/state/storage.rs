//! The storage seam under the state layer: the few object operations the records, the lock,
//! the exports index, the history and the purges need, and nothing else.
//!
//! [`S3Storage`] is the state bucket; [`MemoryStorage`] is a versioned bucket in a map that
//! answers these operations as S3 does (412 on a failed condition, 404 on `If-Match` against a
//! missing key, a delete marker per delete, noncurrent versions until purged). One conformance
//! suite ([`super::conformance`]) runs against both, so a rule tested in memory holds on S3.
//! Bucket-level calls (create, versioning, policies) stay on the S3 client in `bootstrap`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use aws_sdk_s3::Client;
use sha2::{Digest, Sha256};

use super::s3_error::S3Failure;

/// An object as read: body and ETag (quotes kept, as S3 returns it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    /// The bytes.
    pub body: Vec<u8>,
    /// The ETag as returned.
    pub etag: String,
}

/// What a write left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The new ETag.
    pub etag: String,
    /// The new version's id (a versioned bucket).
    pub version_id: Option<String>,
}

/// The precondition of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutCondition {
    /// Unconditional (the caller holds the stack lock).
    Always,
    /// `If-None-Match: *`: only if the key holds no object.
    IfAbsent,
    /// `If-Match: <etag>`: only if the current object has this ETag.
    IfMatch(String),
}

/// One version or delete marker in a version listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion {
    /// The key.
    pub key: String,
    /// The version id.
    pub version_id: String,
    /// Whether it is the current one.
    pub is_latest: bool,
    /// Whether it is a delete marker rather than a body.
    pub delete_marker: bool,
}

/// The object operations the state layer uses, with S3's answers: a failed condition is a 412
/// [`S3Failure`], a missing key or version a 404 (`get` answers `None` instead).
#[async_trait]
pub trait ObjectStorage: Send + Sync + std::fmt::Debug {
    /// The bucket, for messages.
    fn bucket(&self) -> &str;

    /// The current object at `key`, `None` when there is none (or its current version is a
    /// delete marker). A missing bucket is an error, not `None`.
    async fn get(&self, key: &str) -> Result<Option<StoredObject>, S3Failure>;

    /// The body of one version of `key` (a delete marker or a missing version is an error).
    async fn get_version(&self, key: &str, version_id: &str) -> Result<Vec<u8>, S3Failure>;

    /// Writes a JSON object under `condition`.
    async fn put(
        &self,
        key: &str,
        body: Vec<u8>,
        condition: PutCondition,
    ) -> Result<Written, S3Failure>;

    /// Deletes `key` (a delete marker on a versioned bucket), only if its current ETag is
    /// `if_match` when given.
    async fn delete(&self, key: &str, if_match: Option<&str>) -> Result<(), S3Failure>;

    /// Every key under `prefix` whose current version is an object, in key order.
    async fn list_keys(&self, prefix: &str) -> Result<Vec<String>, S3Failure>;

    /// Every version and delete marker under `prefix` (callers filter the exact key).
    async fn list_versions(&self, prefix: &str) -> Result<Vec<ObjectVersion>, S3Failure>;

    /// Removes up to 1000 versions of `key` in one call; answers the error code of each version
    /// refused (S3's `DeleteObjects` succeeds overall and reports refusals per key).
    async fn delete_versions(
        &self,
        key: &str,
        version_ids: &[String],
    ) -> Result<Vec<String>, S3Failure>;
}

/// The state bucket on S3.
#[derive(Debug, Clone)]
pub struct S3Storage {
    client: Client,
    bucket: String,
}

impl S3Storage {
    /// `bucket` through `client` (aimed at the bucket's region).
    pub fn new(client: Client, bucket: &str) -> S3Storage {
        S3Storage {
            client,
            bucket: bucket.to_string(),
        }
    }

    /// The S3 client.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// A body that could not be collected: no status, the transport's words.
fn body_failure(err: impl std::fmt::Display) -> S3Failure {
    S3Failure {
        status: None,
        code: None,
        message: err.to_string(),
    }
}

#[async_trait]
impl ObjectStorage for S3Storage {
    fn bucket(&self) -> &str {
        &self.bucket
    }

    async fn get(&self, key: &str) -> Result<Option<StoredObject>, S3Failure> {
        match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(output) => {
                let etag = output.e_tag().unwrap_or_default().to_string();
                let body = output
                    .body
                    .collect()
                    .await
                    .map_err(body_failure)?
                    .into_bytes()
                    .to_vec();
                Ok(Some(StoredObject { body, etag }))
            }
            Err(err) => {
                let failure = S3Failure::from_sdk(&err);
                if failure.is_not_found() && !failure.is_no_such_bucket() {
                    Ok(None)
                } else {
                    Err(failure)
                }
            }
        }
    }

    async fn get_version(&self, key: &str, version_id: &str) -> Result<Vec<u8>, S3Failure> {
        let output = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .version_id(version_id)
            .send()
            .await
            .map_err(|err| S3Failure::from_sdk(&err))?;
        Ok(output.body.collect().await.map_err(body_failure)?.to_vec())
    }

    async fn put(
        &self,
        key: &str,
        body: Vec<u8>,
        condition: PutCondition,
    ) -> Result<Written, S3Failure> {
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/json")
            .body(ByteStream::from(body));
        let request = match condition {
            PutCondition::Always => request,
            PutCondition::IfAbsent => request.if_none_match("*"),
            PutCondition::IfMatch(etag) => request.if_match(etag),
        };
        let output = request
            .send()
            .await
            .map_err(|err| S3Failure::from_sdk(&err))?;
        Ok(Written {
            etag: output.e_tag().unwrap_or_default().to_string(),
            version_id: output.version_id().map(ToString::to_string),
        })
    }

    async fn delete(&self, key: &str, if_match: Option<&str>) -> Result<(), S3Failure> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .set_if_match(if_match.map(ToString::to_string))
            .send()
            .await
            .map_err(|err| S3Failure::from_sdk(&err))?;
        Ok(())
    }

    async fn list_keys(&self, prefix: &str) -> Result<Vec<String>, S3Failure> {
        let mut keys = Vec::new();
        let mut pages = self
            .client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|err| S3Failure::from_sdk(&err))?;
            keys.extend(
                page.contents()
                    .iter()
                    .filter_map(|o| o.key().map(ToString::to_string)),
            );
        }
        Ok(keys)
    }

    async fn list_versions(&self, prefix: &str) -> Result<Vec<ObjectVersion>, S3Failure> {
        let mut listed = Vec::new();
        let (mut key_marker, mut version_marker): (Option<String>, Option<String>) = (None, None);
        loop {
            let page = self
                .client
                .list_object_versions()
                .bucket(&self.bucket)
                .prefix(prefix)
                .set_key_marker(key_marker.take())
                .set_version_id_marker(version_marker.take())
                .send()
                .await
                .map_err(|err| S3Failure::from_sdk(&err))?;
            let entry = |key: Option<&str>, id: Option<&str>, latest, marker| {
                Some(ObjectVersion {
                    key: key?.to_string(),
                    version_id: id?.to_string(),
                    is_latest: latest == Some(true),
                    delete_marker: marker,
                })
            };
            listed.extend(
                page.versions()
                    .iter()
                    .filter_map(|v| entry(v.key(), v.version_id(), v.is_latest(), false)),
            );
            listed.extend(
                page.delete_markers()
                    .iter()
                    .filter_map(|m| entry(m.key(), m.version_id(), m.is_latest(), true)),
            );
            if page.is_truncated() != Some(true) {
                break;
            }
            key_marker = page.next_key_marker().map(ToString::to_string);
            version_marker = page.next_version_id_marker().map(ToString::to_string);
            if key_marker.is_none() && version_marker.is_none() {
                break;
            }
        }
        Ok(listed)
    }

    #[allow(
        clippy::expect_used,
        reason = "an invariant: the builder's required fields are set just above"
    )]
    async fn delete_versions(
        &self,
        key: &str,
        version_ids: &[String],
    ) -> Result<Vec<String>, S3Failure> {
        let objects = version_ids
            .iter()
            .map(|id| {
                ObjectIdentifier::builder()
                    .key(key)
                    .version_id(id)
                    .build()
                    .expect("key and version id are set")
            })
            .collect();
        let delete = Delete::builder()
            .set_objects(Some(objects))
            .quiet(true)
            .build()
            .expect("objects are set");
        let answer = self
            .client
            .delete_objects()
            .bucket(&self.bucket)
            .delete(delete)
            .send()
            .await
            .map_err(|err| S3Failure::from_sdk(&err))?;
        Ok(answer
            .errors()
            .iter()
            .map(|e| e.code().unwrap_or("Error").to_string())
            .collect())
    }
}

/// One version of a key in [`MemoryStorage`]; `body: None` is a delete marker.
#[derive(Debug, Clone)]
struct MemoryVersion {
    id: String,
    body: Option<Vec<u8>>,
    etag: String,
}

#[derive(Debug, Default)]
struct MemoryBucket {
    /// Key → versions, oldest first (the last is current).
    objects: BTreeMap<String, Vec<MemoryVersion>>,
    next_version: u64,
}

impl MemoryBucket {
    fn current(&self, key: &str) -> Option<&MemoryVersion> {
        self.objects
            .get(key)
            .and_then(|versions| versions.last())
            .filter(|v| v.body.is_some())
    }

    fn push(&mut self, key: &str, body: Option<Vec<u8>>) -> Written {
        self.next_version += 1;
        let id = format!("v{:08}", self.next_version);
        let etag = body.as_deref().map(etag_of).unwrap_or_default();
        self.objects
            .entry(key.to_string())
            .or_default()
            .push(MemoryVersion {
                id: id.clone(),
                body,
                etag: etag.clone(),
            });
        Written {
            etag,
            version_id: Some(id),
        }
    }

    /// S3's answer to `If-Match` on `key`: 404 when there is no object, 412 on another ETag.
    fn check_match(&self, key: &str, etag: &str) -> Result<(), S3Failure> {
        match self.current(key) {
            None => Err(failure(
                404,
                "NoSuchKey",
                "The specified key does not exist.",
            )),
            Some(current) if unquoted(&current.etag) != unquoted(etag) => Err(failure(
                412,
                "PreconditionFailed",
                "At least one of the pre-conditions you specified did not hold",
            )),
            Some(_) => Ok(()),
        }
    }
}

/// A versioned bucket in memory that answers the seam's operations as S3 does.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    name: String,
    bucket: Mutex<MemoryBucket>,
}

impl MemoryStorage {
    /// An empty versioned bucket called `name`.
    pub fn new(name: &str) -> MemoryStorage {
        MemoryStorage {
            name: name.to_string(),
            bucket: Mutex::default(),
        }
    }

    fn bucket_guard(&self) -> std::sync::MutexGuard<'_, MemoryBucket> {
        self.bucket.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// S3's ETag of a single-part upload: the body's digest, quoted. (S3 uses MD5; any digest of
/// the body keeps the property the layer relies on, that equal bodies have equal ETags.)
fn etag_of(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// S3 compares ETags with or without their quotes.
fn unquoted(etag: &str) -> &str {
    etag.trim_matches('"')
}

fn failure(status: u16, code: &str, message: &str) -> S3Failure {
    S3Failure {
        status: Some(status),
        code: Some(code.to_string()),
        message: format!("{code}: {message}"),
    }
}

#[async_trait]
impl ObjectStorage for MemoryStorage {
    fn bucket(&self) -> &str {
        &self.name
    }

    async fn get(&self, key: &str) -> Result<Option<StoredObject>, S3Failure> {
        Ok(self.bucket_guard().current(key).map(|v| StoredObject {
            body: v.body.clone().unwrap_or_default(),
            etag: v.etag.clone(),
        }))
    }

    async fn get_version(&self, key: &str, version_id: &str) -> Result<Vec<u8>, S3Failure> {
        let bucket = self.bucket_guard();
        let version = bucket
            .objects
            .get(key)
            .and_then(|versions| versions.iter().find(|v| v.id == version_id))
            .ok_or_else(|| {
                failure(
                    404,
                    "NoSuchVersion",
                    "The specified version does not exist.",
                )
            })?;
        version.body.clone().ok_or_else(|| {
            failure(
                405,
                "MethodNotAllowed",
                "The specified method is not allowed against this resource.",
            )
        })
    }

    async fn put(
        &self,
        key: &str,
        body: Vec<u8>,
        condition: PutCondition,
    ) -> Result<Written, S3Failure> {
        let mut bucket = self.bucket_guard();
        match &condition {
            PutCondition::Always => {}
            PutCondition::IfAbsent => {
                if bucket.current(key).is_some() {
                    return Err(failure(
                        412,
                        "PreconditionFailed",
                        "At least one of the pre-conditions you specified did not hold",
                    ));
                }
            }
            PutCondition::IfMatch(etag) => bucket.check_match(key, etag)?,
        }
        Ok(bucket.push(key, Some(body)))
    }

    async fn delete(&self, key: &str, if_match: Option<&str>) -> Result<(), S3Failure> {
        let mut bucket = self.bucket_guard();
        if let Some(etag) = if_match {
            bucket.check_match(key, etag)?;
        }
        bucket.push(key, None);
        Ok(())
    }

    async fn list_keys(&self, prefix: &str) -> Result<Vec<String>, S3Failure> {
        let bucket = self.bucket_guard();
        Ok(bucket
            .objects
            .keys()
            .filter(|key| key.starts_with(prefix) && bucket.current(key).is_some())
            .cloned()
            .collect())
    }

    async fn list_versions(&self, prefix: &str) -> Result<Vec<ObjectVersion>, S3Failure> {
        let bucket = self.bucket_guard();
        let mut listed = Vec::new();
        for (key, versions) in bucket.objects.range(prefix.to_string()..) {
            if !key.starts_with(prefix) {
                break;
            }
            // Newest first within a key, as S3 lists them.
            for (position, version) in versions.iter().enumerate().rev() {
                listed.push(ObjectVersion {
                    key: key.clone(),
                    version_id: version.id.clone(),
                    is_latest: position + 1 == versions.len(),
                    delete_marker: version.body.is_none(),
                });
            }
        }
        Ok(listed)
    }

    async fn delete_versions(
        &self,
        key: &str,
        version_ids: &[String],
    ) -> Result<Vec<String>, S3Failure> {
        let mut bucket = self.bucket_guard();
        if let Some(versions) = bucket.objects.get_mut(key) {
            // Removing the current version makes the one before it current, as on S3.
            versions.retain(|v| !version_ids.contains(&v.id));
            if versions.is_empty() {
                bucket.objects.remove(key);
            }
        }
        Ok(Vec::new())
    }
}
