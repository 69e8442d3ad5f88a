//! Lock latency against the emulator: 20 acquire/release cycles of one stack lock, printing
//! the median acquire and release (the release includes purging the lock's earlier versions).
//! Starts its own emulator. Run through tests/bench.sh.

use std::time::{Duration, Instant};

use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
use cdkd::state::bucket;
use cdkd::state::keys::StateKeys;
use cdkd::state::lock::{LockConfig, LockManager, ReleaseOutcome};
use cdkd_tests::Emulator;

#[tokio::main]
async fn main() {
    let emulator = Emulator::shared();
    let aws = emulator.aws().await;
    let client = bucket::s3_client(&aws, "us-east-1");
    let name = Emulator::unique("lock-bench");
    client.create_bucket().bucket(&name).send().await.unwrap();
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
    let locks = LockManager::with_owner(
        client,
        &name,
        StateKeys::new("cdkd"),
        LockConfig {
            ttl: Duration::from_secs(60),
            retries: 0,
            retry_delay: Duration::from_millis(50),
            renew_every: None,
        },
        "bench@lock:1".into(),
    );
    let mut acquire = Vec::new();
    let mut release = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let held = locks
            .acquire("Figures", "us-east-1", "deploy")
            .await
            .unwrap();
        acquire.push(started.elapsed());
        let started = Instant::now();
        assert_eq!(held.release().await, ReleaseOutcome::Released);
        release.push(started.elapsed());
    }
    acquire.sort();
    release.sort();
    println!(
        "lock acquire median {:?}, release (incl. purge) median {:?} (20 cycles, no added latency)",
        acquire[10], release[10]
    );
}
