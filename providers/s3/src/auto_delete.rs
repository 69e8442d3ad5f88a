//! CDK's `autoDeleteObjects`: a bucket tagged `aws-cdk:auto-delete-objects=true` is emptied by
//! its custom resource before the bucket's delete, but objects written after that (access
//! logs, load balancer logs) make `DeleteBucket` fail with `BucketNotEmpty`. Such a bucket is
//! emptied again here and its delete retried, as the reference cdkd does; a bucket without the
//! tag is refused, as CloudFormation refuses it.

use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use aws_sdk_s3::Client;
use cdkd_aws_common::aws_error;
use cdkd_provider_api::{ErrorKind, ProviderError};

/// The tag CDK puts on a bucket whose objects it deletes with the bucket.
pub const TAG: &str = "aws-cdk:auto-delete-objects";

/// Whether `bucket` carries [`TAG`] = `true`.
pub async fn marked(client: &Client, bucket: &str, what: &str) -> Result<bool, ProviderError> {
    match client.get_bucket_tagging().bucket(bucket).send().await {
        Ok(tagging) => Ok(tagging
            .tag_set()
            .iter()
            .any(|t| t.key() == TAG && t.value() == "true")),
        Err(err) => {
            let err = aws_error(&format!("{what}: GetBucketTagging {bucket}"), err);
            // A bucket without tags answers NoSuchTagSet.
            if err.aws_code() == Some("NoSuchTagSet") || err.kind == ErrorKind::NOT_FOUND {
                Ok(false)
            } else {
                Err(err)
            }
        }
    }
}

/// Deletes every object version and delete marker in `bucket`; returns how many.
pub async fn empty(client: &Client, bucket: &str, what: &str) -> Result<usize, ProviderError> {
    let mut deleted = 0;
    loop {
        let page = client
            .list_object_versions()
            .bucket(bucket)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: ListObjectVersions {bucket}"), e))?;
        let versions = page
            .versions()
            .iter()
            .map(|v| (v.key(), v.version_id()))
            .chain(
                page.delete_markers()
                    .iter()
                    .map(|m| (m.key(), m.version_id())),
            );
        let objects: Vec<ObjectIdentifier> = versions
            .filter_map(|(key, version)| {
                ObjectIdentifier::builder()
                    .set_key(key.map(str::to_string))
                    .set_version_id(version.filter(|v| *v != "null").map(str::to_string))
                    .build()
                    .ok()
            })
            .collect();
        if objects.is_empty() {
            return Ok(deleted);
        }
        // One page is at most 1,000 keys, DeleteObjects' limit.
        deleted += objects.len();
        let delete = Delete::builder()
            .set_objects(Some(objects))
            .quiet(true)
            .build()
            .map_err(|e| ProviderError::other(format!("{what}: {e}")))?;
        let answer = client
            .delete_objects()
            .bucket(bucket)
            .delete(delete)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: DeleteObjects in {bucket}"), e))?;
        if let Some(error) = answer.errors().first() {
            return Err(ProviderError::other(format!(
                "{what}: emptying {bucket}: {} could not be deleted ({}: {})",
                error.key().unwrap_or_default(),
                error.code().unwrap_or_default(),
                error.message().unwrap_or_default()
            )));
        }
    }
}
