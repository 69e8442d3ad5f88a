//! What the state-layer suites share: fresh buckets in the emulator, lock managers with a
//! chosen owner and timing, and the schema fixtures of host/src/state/testdata.

use std::time::Duration;

use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
use cdkd::state::bucket;
use cdkd::state::keys::StateKeys;
use cdkd::state::lock::{LockConfig, LockManager};

use crate::{workspace_root, Emulator};

/// An S3 client on the emulator.
pub async fn s3_client() -> aws_sdk_s3::Client {
    bucket::s3_client(&Emulator::shared().aws().await, "us-east-1")
}

/// A new bucket named from `prefix` (versioned when asked, as a bootstrapped state bucket
/// is) and the client for it.
pub async fn fresh_bucket(prefix: &str, versioned: bool) -> (aws_sdk_s3::Client, String) {
    let client = s3_client().await;
    let name = Emulator::unique(prefix);
    client.create_bucket().bucket(&name).send().await.unwrap();
    if versioned {
        client
            .put_bucket_versioning()
            .bucket(&name)
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .unwrap();
    }
    (client, name)
}

/// A lock manager on `bucket` (key prefix `cdkd`) acting as `owner`.
pub fn lock_manager(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    owner: &str,
    config: LockConfig,
) -> LockManager {
    LockManager::with_owner(
        client.clone(),
        bucket,
        StateKeys::new("cdkd"),
        config,
        owner.to_string(),
    )
}

/// A lock that lives `ttl`, is never retried, and renews as `renew_every` says.
pub fn lock_config(ttl: Duration, renew_every: Option<Duration>) -> LockConfig {
    LockConfig {
        ttl,
        retries: 0,
        retry_delay: Duration::from_millis(50),
        renew_every,
    }
}

/// The bytes of the schema-`version` round-trip fixture (`v{version}.in.json`).
pub fn state_fixture(version: u32) -> Vec<u8> {
    let path = workspace_root().join(format!(
        "host/src/state/testdata/roundtrip/v{version}.in.json"
    ));
    std::fs::read(path).unwrap()
}
