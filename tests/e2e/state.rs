//! The state layer's library against the emulator: records, optimistic saves, the legacy key,
//! locks under contention, takeover, renewal, and noncurrent-version purges.

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use cdkd::state::backend::{StateBackend, StateLocation};
use cdkd::state::keys::StateKeys;
use cdkd::state::lock::{LockConfig, LockManager, ReleaseOutcome};
use cdkd::state::purge::purge_noncurrent_versions;
use cdkd::state::schema::{now_millis, LockInfo, StackState};
use cdkd::state::StateError;
use cdkd_tests::state_world::{fresh_bucket, lock_config, lock_manager, state_fixture};
use cdkd_tests::{wait_for_async, Emulator};
use serde_json::json;

/// A fresh versioned bucket and the client for it.
async fn bucket() -> (aws_sdk_s3::Client, String) {
    fresh_bucket("state", true).await
}

async fn put(client: &aws_sdk_s3::Client, bucket: &str, key: &str, body: &[u8]) {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.to_vec()))
        .send()
        .await
        .unwrap();
}

async fn get(client: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Option<Vec<u8>> {
    match client.get_object().bucket(bucket).key(key).send().await {
        Ok(out) => Some(out.body.collect().await.unwrap().into_bytes().to_vec()),
        Err(_) => None,
    }
}

fn fixture(version: u32) -> Vec<u8> {
    state_fixture(version)
}

#[tokio::test]
async fn every_schema_version_loads_from_the_bucket_and_saves_as_v9() {
    let (client, name) = bucket().await;
    let backend = StateBackend::new(client.clone(), &name, StateKeys::new("cdkd"));
    for version in 2..=9 {
        let stack = format!("Stack{version}");
        put(
            &client,
            &name,
            &format!("cdkd/{stack}/us-east-1/state.json"),
            &fixture(version),
        )
        .await;
        let mut stored = backend
            .load(&stack, "us-east-1")
            .await
            .unwrap()
            .expect("found");
        assert_eq!(stored.location, StateLocation::Current);
        assert_eq!(stored.state.version, 9);
        let before = stored.clone();
        backend
            .save(&stack, "us-east-1", &mut stored.state, Some(&before))
            .await
            .unwrap();
        let raw: serde_json::Value = serde_json::from_slice(
            &get(
                &client,
                &name,
                &format!("cdkd/{stack}/us-east-1/state.json"),
            )
            .await
            .unwrap(),
        )
        .unwrap();
        assert_eq!(raw["version"], 9, "v{version}");
        assert_eq!(
            raw["resources"]["MyEip"]["physicalId"],
            "52.1.2.3|eipalloc-0abc123def456789a"
        );
        assert_eq!(
            raw["outputs"]["NameServers"],
            json!(["ns-1.awsdns-00.com", "ns-2.awsdns-01.net"])
        );
    }
}

#[tokio::test]
async fn a_newer_record_fails_closed() {
    let (client, name) = bucket().await;
    let backend = StateBackend::new(client.clone(), &name, StateKeys::new("cdkd"));
    put(
        &client,
        &name,
        "cdkd/Future/us-east-1/state.json",
        br#"{"version":10,"stackName":"Future","region":"us-east-1"}"#,
    )
    .await;
    let err = backend.load("Future", "us-east-1").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("Unsupported state schema version 10. Upgrade cdkd."),
        "{err}"
    );
}

#[tokio::test]
async fn a_legacy_record_is_read_when_its_region_matches_and_moved_on_the_next_save() {
    let (client, name) = bucket().await;
    let backend = StateBackend::new(client.clone(), &name, StateKeys::new("cdkd"));
    put(&client, &name, "cdkd/MyAppStack/state.json", &fixture(1)).await;

    assert!(
        backend
            .load("MyAppStack", "eu-west-1")
            .await
            .unwrap()
            .is_none(),
        "another region's legacy record"
    );
    let mut stored = backend
        .load("MyAppStack", "us-east-1")
        .await
        .unwrap()
        .expect("legacy record");
    assert_eq!(stored.location, StateLocation::Legacy);
    let listed = backend.list_stacks().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].region.as_deref(), Some("us-east-1"));

    let previous = stored.clone();
    backend
        .save(
            "MyAppStack",
            "us-east-1",
            &mut stored.state,
            Some(&previous),
        )
        .await
        .unwrap();
    assert!(get(&client, &name, "cdkd/MyAppStack/us-east-1/state.json")
        .await
        .is_some());
    assert!(
        get(&client, &name, "cdkd/MyAppStack/state.json")
            .await
            .is_none(),
        "the legacy key stayed"
    );
    let reloaded = backend
        .load("MyAppStack", "us-east-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reloaded.location, StateLocation::Current);
    assert_eq!(reloaded.state.resources.len(), 3);
}

#[tokio::test]
async fn unknown_fields_survive_a_read_modify_write() {
    let (client, name) = bucket().await;
    let backend = StateBackend::new(client.clone(), &name, StateKeys::new("cdkd"));
    let key = "cdkd/Keep/us-east-1/state.json";
    put(
        &client,
        &name,
        key,
        br#"{"version":9,"stackName":"Keep","region":"us-east-1","outputs":{},"lastModified":1,
            "resources":{"R":{"physicalId":"p","resourceType":"T","properties":{},"futureField":{"a":1}}},
            "futureStackField":[1,2,3]}"#,
    )
    .await;
    let mut stored = backend.load("Keep", "us-east-1").await.unwrap().unwrap();
    stored.state.outputs.insert("Added".into(), json!(true));
    let previous = stored.clone();
    backend
        .save("Keep", "us-east-1", &mut stored.state, Some(&previous))
        .await
        .unwrap();
    let raw: serde_json::Value =
        serde_json::from_slice(&get(&client, &name, key).await.unwrap()).unwrap();
    assert_eq!(raw["futureStackField"], json!([1, 2, 3]));
    assert_eq!(raw["resources"]["R"]["futureField"], json!({"a": 1}));
    assert_eq!(raw["outputs"]["Added"], json!(true));
}

#[tokio::test]
async fn saves_are_conditional_on_what_was_read() {
    let (client, name) = bucket().await;
    let backend = StateBackend::new(client, &name, StateKeys::new("cdkd"));
    let mut first = StackState::new("Race", "us-east-1");
    backend
        .save("Race", "us-east-1", &mut first, None)
        .await
        .unwrap();
    // A second "first write" finds the key taken.
    let mut again = StackState::new("Race", "us-east-1");
    let err = backend
        .save("Race", "us-east-1", &mut again, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StateError::ConcurrentModification { .. }),
        "{err}"
    );

    let a = backend.load("Race", "us-east-1").await.unwrap().unwrap();
    let b = backend.load("Race", "us-east-1").await.unwrap().unwrap();
    assert!(
        a.etag.starts_with('"') && a.etag.ends_with('"'),
        "ETag kept with quotes: {}",
        a.etag
    );
    backend
        .save("Race", "us-east-1", &mut a.state.clone(), Some(&a))
        .await
        .unwrap();
    let err = backend
        .save("Race", "us-east-1", &mut b.state.clone(), Some(&b))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "State was modified by another process (stack Race, region us-east-1). Re-run the command; if this repeats, another cdkd is working on the stack."
    );
}

fn manager(
    client: &aws_sdk_s3::Client,
    bucket: &str,
    owner: &str,
    config: LockConfig,
) -> LockManager {
    lock_manager(client, bucket, owner, config)
}

fn fast(ttl_ms: u64) -> LockConfig {
    lock_config(Duration::from_millis(ttl_ms), None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_acquirers_one_winner_fifty_rounds() {
    let (client, name) = bucket().await;
    let started = std::time::Instant::now();
    for round in 0..50 {
        let mut attempts = Vec::new();
        for contender in 0..16 {
            let manager = manager(
                &client,
                &name,
                &format!("contender-{contender}@test:{round}"),
                fast(60_000),
            );
            attempts.push(tokio::spawn(async move {
                manager.acquire("Contended", "us-east-1", "deploy").await
            }));
        }
        let mut winners = Vec::new();
        for attempt in attempts {
            match attempt.await.unwrap() {
                Ok(handle) => winners.push(handle),
                Err(StateError::Locked { .. }) => {}
                Err(other) => panic!("round {round}: unexpected error {other}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: {} winners", winners.len());
        assert_eq!(winners[0].release().await, ReleaseOutcome::Released);
    }
    eprintln!(
        "contention: 50 rounds x 16 acquirers in {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_reapers_of_an_expired_lock_one_winner() {
    let (client, name) = bucket().await;
    for round in 0..20 {
        let stale = LockInfo {
            owner: "crashed@host:1".into(),
            timestamp: 1,
            expires_at: json!(now_millis() - 1_000),
            operation: Some("deploy".into()),
        };
        put(
            &client,
            &name,
            "cdkd/Reaped/us-east-1/lock.json",
            &serde_json::to_vec(&stale).unwrap(),
        )
        .await;
        let a = manager(&client, &name, "reaper-a@test:1", fast(60_000));
        let b = manager(&client, &name, "reaper-b@test:2", fast(60_000));
        let (ra, rb) = tokio::join!(
            a.acquire("Reaped", "us-east-1", "deploy"),
            b.acquire("Reaped", "us-east-1", "deploy")
        );
        let winners: Vec<_> = [ra, rb].into_iter().filter_map(Result::ok).collect();
        assert_eq!(winners.len(), 1, "round {round}");
        winners[0].release().await;
    }
}

#[tokio::test]
async fn a_process_whose_lock_was_taken_over_does_not_delete_the_new_owners_lock() {
    let (client, name) = bucket().await;
    let old = manager(&client, &name, "old@test:1", fast(800));
    let held = old
        .acquire("TakenOver", "us-east-1", "deploy")
        .await
        .unwrap();
    held.stop_renewing(); // a stalled holder: no heartbeat
    let deadline = held_deadline(&old, "TakenOver").await;
    wait_for_async(
        "the stalled lock to expire",
        Duration::from_secs(10),
        || async { (now_millis() > deadline).then_some(()) },
    )
    .await;
    let new = manager(&client, &name, "new@test:2", fast(60_000));
    let new_handle = new
        .acquire("TakenOver", "us-east-1", "deploy")
        .await
        .expect("takeover");
    assert_eq!(held.release().await, ReleaseOutcome::NotOwner);
    let (info, _) = new
        .read("TakenOver", "us-east-1")
        .await
        .unwrap()
        .expect("still locked");
    assert_eq!(info.owner, "new@test:2");
    assert_eq!(new_handle.release().await, ReleaseOutcome::Released);
    assert_eq!(
        new_handle.release().await,
        ReleaseOutcome::AlreadyReleased,
        "a second release is a no-op"
    );
    assert!(new.read("TakenOver", "us-east-1").await.unwrap().is_none());
}

#[tokio::test]
async fn renewal_keeps_a_lock_alive_past_several_ttls() {
    let (client, name) = bucket().await;
    let holder = manager(&client, &name, "holder@test:1", fast(1_200)); // renews every 300 ms
    let held = holder
        .acquire("Renewed", "us-east-1", "deploy")
        .await
        .unwrap();
    let first_etag = held.etag();
    // Past the first deadline by more than two TTLs, with the stored deadline moved on: only
    // renewals can keep it locked now.
    let first_deadline = held_deadline(&holder, "Renewed").await;
    wait_for_async(
        "renewals to carry the lock past two TTLs",
        Duration::from_secs(20),
        || async {
            let now = now_millis();
            let stored = held_deadline(&holder, "Renewed").await;
            (now > first_deadline + 2_400 && stored > now).then_some(())
        },
    )
    .await;
    let other = manager(&client, &name, "other@test:2", fast(60_000));
    match other.acquire("Renewed", "us-east-1", "deploy").await {
        Err(StateError::Locked { owner, .. }) => assert_eq!(owner, "holder@test:1"),
        Ok(_) => panic!("the renewed lock was taken over"),
        Err(err) => panic!("{err}"),
    }
    assert_ne!(held.etag(), first_etag, "the lock was never rewritten");
    assert!(!held.is_lost());
    assert_eq!(held.release().await, ReleaseOutcome::Released);
    other
        .acquire("Renewed", "us-east-1", "deploy")
        .await
        .expect("free after release")
        .release()
        .await;
}

#[tokio::test]
async fn a_renewal_whose_answer_was_lost_is_adopted_not_declared_lost() {
    let (client, name) = bucket().await;
    let holder = manager(
        &client,
        &name,
        "holder@test:1",
        LockConfig {
            renew_every: Some(Duration::from_secs(3600)),
            ..fast(60_000)
        },
    );
    let held = holder
        .acquire("Adopted", "us-east-1", "deploy")
        .await
        .unwrap();
    // The renewal lands, but its answer is a 503: the SDK retries with the same If-Match, which
    // now fails with 412 against our own write. The stored body is byte-for-byte ours.
    let rule_path = format!("{name}/cdkd/Adopted/us-east-1/lock.json");
    Emulator::shared().post(
        "/_emulator/faults",
        &json!({"rules": [{"service": "s3", "method": "PUT", "pathContains": rule_path, "status": 503,
                           "code": "SlowDown", "count": 1, "passThrough": true}]}),
    );
    let before = held.etag();
    assert!(held.renew_now().await, "the renewal was declared lost");
    assert!(!held.is_lost());
    assert_ne!(
        held.etag(),
        before,
        "the landed renewal's ETag was not adopted"
    );
    let hits = Emulator::shared().get("/_emulator/faults")["rules"][0]["hits"].clone();
    Emulator::shared().post("/_emulator/faults", &json!({"rules": []}));
    assert_eq!(
        hits,
        json!(1),
        "the fault never fired, so nothing was tested"
    );
    assert_eq!(held.release().await, ReleaseOutcome::Released);
}

#[tokio::test]
async fn a_renewal_after_a_takeover_declares_the_lock_lost() {
    let (client, name) = bucket().await;
    let holder = manager(
        &client,
        &name,
        "holder@test:1",
        LockConfig {
            renew_every: Some(Duration::from_secs(3600)),
            ..fast(60_000)
        },
    );
    let held = holder.acquire("Lost", "us-east-1", "deploy").await.unwrap();
    let admin = manager(&client, &name, "admin@test:2", fast(60_000));
    admin.force_unlock("Lost", "us-east-1").await.unwrap();
    let thief = admin.acquire("Lost", "us-east-1", "deploy").await.unwrap();
    assert!(!held.renew_now().await);
    assert!(held.is_lost());
    assert_eq!(held.release().await, ReleaseOutcome::NotOwner);
    assert_eq!(
        admin
            .read("Lost", "us-east-1")
            .await
            .unwrap()
            .unwrap()
            .0
            .owner,
        "admin@test:2"
    );
    thief.release().await;
}

#[tokio::test]
async fn force_unlock_removes_any_lock_and_its_history() {
    let (client, name) = bucket().await;
    let holder = manager(&client, &name, "holder@test:1", fast(60_000));
    let held = holder
        .acquire("Forced", "us-east-1", "deploy")
        .await
        .unwrap();
    held.renew_now().await;
    held.stop_renewing();
    let admin = manager(&client, &name, "admin@test:2", fast(60_000));
    let removed = admin
        .force_unlock("Forced", "us-east-1")
        .await
        .unwrap()
        .expect("there was a lock");
    assert_eq!(removed.owner, "holder@test:1");
    let versions = client
        .list_object_versions()
        .bucket(&name)
        .prefix("cdkd/Forced/us-east-1/lock.json")
        .send()
        .await
        .unwrap();
    let noncurrent = versions
        .versions()
        .iter()
        .filter(|v| v.is_latest() == Some(false))
        .count()
        + versions
            .delete_markers()
            .iter()
            .filter(|m| m.is_latest() == Some(false))
            .count();
    assert_eq!(noncurrent, 0, "force-unlock left noncurrent versions");
    assert!(admin
        .force_unlock("Forced", "us-east-1")
        .await
        .unwrap()
        .is_none());
}

/// `(noncurrent versions, noncurrent delete markers)` of one key.
async fn noncurrent(client: &aws_sdk_s3::Client, bucket: &str, key: &str) -> (usize, usize) {
    let versions = client
        .list_object_versions()
        .bucket(bucket)
        .prefix(key)
        .send()
        .await
        .unwrap();
    (
        versions
            .versions()
            .iter()
            .filter(|v| v.is_latest() == Some(false))
            .count(),
        versions
            .delete_markers()
            .iter()
            .filter(|m| m.is_latest() == Some(false))
            .count(),
    )
}

#[tokio::test]
async fn a_release_purges_the_lock_history_and_it_never_grows() {
    let (client, name) = bucket().await;
    let locks = manager(&client, &name, "cycler@test:1", fast(60_000));
    let key = "cdkd/Cycled/us-east-1/lock.json";
    for cycle in 1..=4 {
        let held = locks
            .acquire("Cycled", "us-east-1", "deploy")
            .await
            .unwrap();
        // A command works between the two; the history listing finishes meanwhile.
        wait_for_async(
            "the lock history listing",
            Duration::from_secs(10),
            || async { held.history_listed().then_some(()) },
        )
        .await;
        // Renewals write more versions of the key, all this cycle's own.
        for _ in 0..cycle {
            assert!(held.renew_now().await);
        }
        assert_eq!(held.release().await, ReleaseOutcome::Released);
        // What was history when this cycle acquired (the last delete marker) is gone, and so
        // is every body this cycle wrote (its acquire and renewals): only the current delete
        // marker is left. It never accumulates.
        let (bodies, markers) = noncurrent(&client, &name, key).await;
        assert_eq!(
            (bodies, markers),
            (0, 0),
            "after cycle {cycle}: {bodies} noncurrent bodies, {markers} noncurrent markers"
        );
    }
}

#[tokio::test]
async fn purge_removes_only_noncurrent_versions_of_the_one_key() {
    let (client, name) = bucket().await;
    let key = "cdkd/P/us-east-1/rollback-journal.json";
    for body in ["1", "2", "3"] {
        put(&client, &name, key, body.as_bytes()).await;
    }
    client
        .delete_object()
        .bucket(&name)
        .key(key)
        .send()
        .await
        .unwrap(); // a delete marker
    put(&client, &name, key, b"current").await;
    for body in ["a", "b"] {
        put(&client, &name, &format!("{key}.bak"), body.as_bytes()).await;
        put(
            &client,
            &name,
            "cdkd/P/us-east-1/state.json",
            body.as_bytes(),
        )
        .await;
    }
    let report = purge_noncurrent_versions(&client, &name, key).await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.removed, 4, "three old bodies and one delete marker");

    let count = |prefix: &'static str| {
        let client = client.clone();
        let name = name.clone();
        async move {
            let listed = client
                .list_object_versions()
                .bucket(&name)
                .prefix(prefix)
                .send()
                .await
                .unwrap();
            let versions: Vec<_> = listed
                .versions()
                .iter()
                .filter(|v| v.key() == Some(prefix))
                .collect();
            let markers = listed
                .delete_markers()
                .iter()
                .filter(|m| m.key() == Some(prefix))
                .count();
            (
                versions.len(),
                markers,
                versions
                    .iter()
                    .filter(|v| v.is_latest() == Some(true))
                    .count(),
            )
        }
    };
    assert_eq!(
        count("cdkd/P/us-east-1/rollback-journal.json").await,
        (1, 0, 1)
    );
    assert_eq!(get(&client, &name, key).await.unwrap(), b"current");
    assert_eq!(
        count("cdkd/P/us-east-1/rollback-journal.json.bak").await.0,
        2,
        "a sibling key was touched"
    );
    assert_eq!(
        count("cdkd/P/us-east-1/state.json").await.0,
        2,
        "state history was touched"
    );
}

/// The deadline stored in `stack`'s lock.
async fn held_deadline(locks: &LockManager, stack: &str) -> i64 {
    let (info, _) = locks
        .read(stack, "us-east-1")
        .await
        .unwrap()
        .expect("locked");
    info.expires_at_millis().expect("a deadline")
}
