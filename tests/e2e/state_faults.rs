//! State-layer behaviour under injected faults, on this binary's own emulator. Fault rules are
//! global to an emulator, so these tests take turns (`SERIAL`).

use std::process::{Command, Stdio};
use std::time::Duration;

use cdkd::state::bucket;
use cdkd::state::keys::StateKeys;
use cdkd::state::lock::{LockConfig, LockManager, ReleaseOutcome};
use cdkd::state::schema::now_millis;
use cdkd::state::StateError;
use cdkd_tests::state_world::{fresh_bucket, lock_config, lock_manager, state_fixture};
use cdkd_tests::{cdkd_on, cdkd_on_with_env, wait_for_async, Emulator};
use serde_json::json;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn faults(rules: serde_json::Value) {
    Emulator::shared().faults(rules);
}

fn fault_hits() -> Vec<u64> {
    Emulator::shared().fault_hits()
}

async fn client_and_bucket() -> (aws_sdk_s3::Client, String) {
    fresh_bucket("faults", false).await
}

fn manager(client: &aws_sdk_s3::Client, bucket: &str, owner: &str) -> LockManager {
    let config = lock_config(Duration::from_secs(60), Some(Duration::from_secs(3600)));
    lock_manager(client, bucket, owner, config)
}

/// Acquires, injects `rules`, releases, and returns the outcome and whether the lock is gone.
async fn release_under(rules: serde_json::Value) -> (ReleaseOutcome, bool, Vec<u64>) {
    let (client, name) = client_and_bucket().await;
    let locks = manager(&client, &name, "releaser@test:1");
    let held = locks
        .acquire("Release", "us-east-1", "deploy")
        .await
        .unwrap();
    let rules = serde_json::from_str(&rules.to_string().replace("BUCKET", &name)).unwrap();
    faults(rules);
    let outcome = held.release().await;
    let hits = fault_hits();
    faults(json!([]));
    let gone = locks.read("Release", "us-east-1").await.unwrap().is_none();
    (outcome, gone, hits)
}

#[tokio::test]
async fn release_409_and_503_never_drop_the_condition() {
    let _turn = SERIAL.lock().await;
    for (status, code) in [(409, "OperationAborted"), (503, "SlowDown")] {
        // Enough failures to outlast the SDK's own retries of a 503.
        let (outcome, gone, hits) = release_under(json!([{
            "service": "s3", "method": "DELETE", "pathContains": "BUCKET/cdkd/Release/us-east-1/lock.json",
            "status": status, "code": code, "count": 10
        }]))
        .await;
        assert!(
            matches!(outcome, ReleaseOutcome::LeftInPlace(_)),
            "{status}: {outcome:?}"
        );
        assert!(
            !gone,
            "{status}: the lock was deleted without its condition"
        );
        assert!(hits[0] >= 1, "{status}: the fault never fired");
    }
}

#[tokio::test]
async fn release_403_and_501_fall_back_after_checking_ownership() {
    let _turn = SERIAL.lock().await;
    for (status, code) in [(403, "AccessDenied"), (501, "NotImplemented")] {
        // Only the conditional delete fails; the unconditional retry must go through.
        let (outcome, gone, hits) = release_under(json!([{
            "service": "s3", "method": "DELETE", "pathContains": "BUCKET/cdkd/Release/us-east-1/lock.json",
            "header": "If-Match", "status": status, "code": code, "count": 10
        }]))
        .await;
        assert_eq!(outcome, ReleaseOutcome::Released, "{status}");
        assert!(gone, "{status}: the lock stayed");
        assert!(hits[0] >= 1, "{status}: the fault never fired");
    }
}

#[tokio::test]
async fn release_403_refuses_when_ownership_cannot_be_read() {
    let _turn = SERIAL.lock().await;
    let (outcome, gone, hits) = release_under(json!([
        {"service": "s3", "method": "DELETE", "pathContains": "BUCKET/cdkd/Release/us-east-1/lock.json",
         "status": 403, "code": "AccessDenied", "count": 10},
        {"service": "s3", "method": "GET", "pathContains": "BUCKET/cdkd/Release/us-east-1/lock.json",
         "status": 403, "code": "AccessDenied", "count": 10}
    ]))
    .await;
    assert!(
        matches!(outcome, ReleaseOutcome::LeftInPlace(_)),
        "{outcome:?}"
    );
    assert!(!gone);
    assert!(hits[0] >= 1 && hits[1] >= 1, "{hits:?}");
}

#[tokio::test]
async fn a_failed_purge_warns_and_the_command_succeeds() {
    let _turn = SERIAL.lock().await;
    let (client, name) = client_and_bucket().await;
    client
        .put_bucket_versioning()
        .bucket(&name)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    for (rule, refused) in [
        (
            json!({"service": "s3", "method": "GET", "queryContains": "versions", "status": 403, "code": "AccessDenied"}),
            "AccessDenied: s3:ListBucketVersions",
        ),
        (
            json!({"service": "s3", "method": "POST", "queryContains": "delete", "status": 403, "code": "AccessDenied"}),
            "AccessDenied: s3:DeleteObjectVersion",
        ),
    ] {
        let locks = manager(&client, &name, "holder@test:1");
        let held = locks
            .acquire("Purged", "us-east-1", "deploy")
            .await
            .unwrap();
        held.renew_now().await; // a noncurrent version to purge
        held.stop_renewing();
        faults(json!([rule]));
        let run = cdkd_on(
            Emulator::shared(),
            &[
                "--state-bucket",
                &name,
                "force-unlock",
                "Purged",
                "--stack-region",
                "us-east-1",
            ],
        );
        let hits = fault_hits();
        faults(json!([]));
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(
            run.stdout
                .contains("Removed the lock on Purged (us-east-1) held by holder@test:1"),
            "{}",
            run.stdout
        );
        let warning = run
            .stderr
            .lines()
            .find(|l| l.contains("Could not purge noncurrent versions of 1 key(s)"))
            .unwrap_or_else(|| panic!("no purge warning:\n{}", run.stderr));
        assert!(
            warning.contains(&format!(
                "Failures: cdkd/Purged/us-east-1/lock.json ({refused})"
            )),
            "{warning}"
        );
        assert!(
            warning.contains("Grant s3:ListBucketVersions and s3:DeleteObjectVersion"),
            "{warning}"
        );
        assert!(
            warning.contains("the stack lock's heartbeat record"),
            "{warning}"
        );
        assert!(hits[0] >= 1);
    }
}

/// Not a test on its own: the process the kill -9 test starts and kills. It holds a lock with a
/// short TTL, renewing it, until it is killed.
#[tokio::test]
#[ignore = "helper process for a_killed_holders_lock_is_taken_over_after_its_deadline"]
async fn lock_holder_child() {
    let bucket_name = std::env::var("CDKD_TEST_LOCK_BUCKET").expect("run by the kill -9 test");
    let aws = Emulator::shared().aws().await;
    let client = bucket::s3_client(&aws, "us-east-1");
    let config = LockConfig {
        ttl: Duration::from_millis(2_000),
        retries: 0,
        retry_delay: Duration::from_millis(50),
        renew_every: None,
    };
    let locks = LockManager::with_owner(
        client,
        &bucket_name,
        StateKeys::new("cdkd"),
        config,
        "doomed@test:child".into(),
    );
    let _held = locks
        .acquire("Killed", "us-east-1", "deploy")
        .await
        .unwrap();
    println!("HELD");
    tokio::time::sleep(Duration::from_secs(600)).await;
}

#[tokio::test]
async fn a_killed_holders_lock_is_taken_over_after_its_deadline() {
    let _turn = SERIAL.lock().await;
    let (client, name) = client_and_bucket().await;
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lock_holder_child", "--ignored", "--nocapture"])
        .env(
            cdkd_tests::emulator::ATTACH_ENV,
            Emulator::shared().endpoint(),
        )
        .env("CDKD_TEST_LOCK_BUCKET", &name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let waiter = manager(&client, &name, "successor@test:2");
    let first = wait_for_async(
        "the child to take the lock",
        Duration::from_secs(30),
        || async {
            waiter
                .read("Killed", "us-east-1")
                .await
                .unwrap()
                .map(|(_, etag)| etag)
        },
    )
    .await;
    wait_for_async(
        "the child to renew its lock",
        Duration::from_secs(30),
        || async {
            let now = waiter.read("Killed", "us-east-1").await.unwrap();
            now.filter(|(_, etag)| *etag != first).map(|_| ())
        },
    )
    .await;
    child.kill().unwrap(); // SIGKILL: no release, no cleanup
    child.wait().unwrap();

    match waiter.acquire("Killed", "us-east-1", "deploy").await {
        Err(StateError::Locked { owner, .. }) => assert_eq!(owner, "doomed@test:child"),
        other => panic!(
            "the dead holder's lock was not live right after the kill: {:?}",
            other.map(|_| ())
        ),
    }
    let (stale, _) = waiter.read("Killed", "us-east-1").await.unwrap().unwrap();
    let expires = stale.expires_at_millis().unwrap();
    let patient = LockManager::with_owner(
        client.clone(),
        &name,
        StateKeys::new("cdkd"),
        LockConfig {
            ttl: Duration::from_secs(60),
            retries: 20,
            retry_delay: Duration::from_millis(250),
            renew_every: Some(Duration::from_secs(3600)),
        },
        "successor@test:2".into(),
    );
    let held = patient
        .acquire("Killed", "us-east-1", "deploy")
        .await
        .expect("taken over after expiresAt");
    assert!(now_millis() >= expires, "taken over before the deadline");
    assert_eq!(
        patient
            .read("Killed", "us-east-1")
            .await
            .unwrap()
            .unwrap()
            .0
            .owner,
        "successor@test:2"
    );
    held.release().await;
}

#[tokio::test]
async fn bucket_resolution_default_legacy_and_migrate() {
    let _turn = SERIAL.lock().await;
    let emulator = Emulator::shared();
    // Nothing bootstrapped: the default name is looked for and the user is told what to do.
    let run = cdkd_on(emulator, &["state", "list"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains(
            "no cdkd state bucket: cdkd-state-123456789012 does not exist. Run `cdkd bootstrap`"
        ),
        "{}",
        run.stderr
    );

    // A legacy-named bucket is used, with the deprecation warning.
    let aws = emulator.aws().await;
    let client = bucket::s3_client(&aws, "us-east-1");
    let legacy = "cdkd-state-123456789012-us-east-1";
    client.create_bucket().bucket(legacy).send().await.unwrap();
    let record = state_fixture(9);
    client
        .put_object()
        .bucket(legacy)
        .key("cdkd/Old/us-east-1/state.json")
        .body(record.into())
        .send()
        .await
        .unwrap();
    let run = cdkd_on(emulator, &["state", "list"]).success();
    assert_eq!(run.stdout, "Old (us-east-1)\n");
    assert!(
        run.stderr
            .contains("Using legacy state bucket name 'cdkd-state-123456789012-us-east-1'."),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("cdkd state migrate --region us-east-1"),
        "{}",
        run.stderr
    );
    let info = cdkd_on(emulator, &["state", "info", "--json"])
        .success()
        .json();
    assert_eq!(info["source"], "legacy-default");

    // Migration refuses while a lock exists.
    client
        .put_object()
        .bucket(legacy)
        .key("cdkd/Old/us-east-1/lock.json")
        .body(
            br#"{"owner":"busy@host:1","timestamp":1,"expiresAt":99999999999999}"#
                .to_vec()
                .into(),
        )
        .send()
        .await
        .unwrap();
    let run = cdkd_on(emulator, &["state", "migrate", "--region", "us-east-1"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("refusing to migrate while 1 lock(s) exist"),
        "{}",
        run.stderr
    );
    client
        .delete_object()
        .bucket(legacy)
        .key("cdkd/Old/us-east-1/lock.json")
        .send()
        .await
        .unwrap();

    let dry = cdkd_on(
        emulator,
        &["state", "migrate", "--region", "us-east-1", "--dry-run"],
    )
    .success();
    assert!(
        dry.stdout.contains("Would copy 1 object(s)"),
        "{}",
        dry.stdout
    );
    let migrated = cdkd_on(
        emulator,
        &[
            "state",
            "migrate",
            "--region",
            "us-east-1",
            "--remove-legacy",
        ],
    )
    .success();
    assert!(
        migrated.stdout.contains("Copied 1 object(s)"),
        "{}",
        migrated.stdout
    );
    assert!(
        client.head_bucket().bucket(legacy).send().await.is_err(),
        "the legacy bucket is still there"
    );

    let info = cdkd_on(emulator, &["state", "info", "--json"])
        .success()
        .json();
    assert_eq!(info["source"], "default");
    assert_eq!(info["stackCount"], 1);
    let run = cdkd_on_with_env(emulator, &["state", "list"], &[]).success();
    assert_eq!(run.stdout, "Old (us-east-1)\n");
    assert!(!run.stderr.contains("legacy"), "{}", run.stderr);
}

#[tokio::test]
async fn an_acquire_whose_answer_was_lost_holds_the_lock() {
    let _turn = SERIAL.lock().await;
    let (client, name) = client_and_bucket().await;
    let locks = manager(&client, &name, "lost@test:1");
    // The put lands, its answer is lost, the SDK's retry meets the lock with a 412: before,
    // the process took its own lock for someone else's and locked itself out for the TTL.
    faults(
        json!([{"service": "s3", "method": "PUT", "pathContains": "lock.json", "status": 503, "code": "SlowDown", "count": 1, "passThrough": true}]),
    );
    let held = locks.acquire("Lost", "us-east-1", "deploy").await;
    let hits = fault_hits();
    faults(json!([]));
    let held = held.expect("the lock this process wrote is its own");
    assert_eq!(hits, vec![1]);
    let (info, _) = locks.read("Lost", "us-east-1").await.unwrap().unwrap();
    assert_eq!(info.owner, "lost@test:1");
    assert_eq!(held.release().await, ReleaseOutcome::Released);
    assert!(locks.read("Lost", "us-east-1").await.unwrap().is_none());
}
