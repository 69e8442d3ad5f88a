//! The state layer's conformance suite, after OpenTofu's `statemgr.TestFull`: every lock,
//! renewal, takeover, conditional-save and purge rule of the state-management spec, written
//! once over [`ObjectStorage`] and run against each implementation.
//!
//! [`crate::state_conformance_tests!`] turns the rules into one test each. The state layer's
//! unit tests run it on [`MemoryStorage`](super::storage::MemoryStorage); the e2e binary
//! `state_conformance` runs it on the emulator's S3. A rule that passes on one and fails on the
//! other is a difference between the in-memory store and S3, and the in-memory store is wrong.
//! Each rule takes a fresh, empty, versioned bucket and panics when the rule does not hold.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test suite run against each storage: a failed step is a failed test"
)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::backend::{StateBackend, StateLocation};
use super::exports_index;
use super::keys::StateKeys;
use super::lock::{LockConfig, LockHandle, LockManager, ReleaseOutcome};
use super::purge::{purge_noncurrent, version_ids, Versions};
use super::schema::{now_millis, LockInfo, StackState};
use super::storage::{ObjectStorage, PutCondition};
use super::StateError;

/// The region every rule works in.
const REGION: &str = "us-east-1";

/// A v1 record at the legacy key (`region: us-east-1` in its body).
const LEGACY_RECORD: &[u8] = include_bytes!("testdata/roundtrip/v1.in.json");

fn keys() -> StateKeys {
    StateKeys::new("cdkd")
}

fn backend(storage: &Arc<dyn ObjectStorage>) -> StateBackend {
    StateBackend::on(Arc::clone(storage), keys())
}

/// A lock that lives `ttl`, is never retried and renews only when the rule says so.
fn locks(storage: &Arc<dyn ObjectStorage>, owner: &str, ttl: Duration) -> LockManager {
    LockManager::on(
        Arc::clone(storage),
        keys(),
        LockConfig {
            ttl,
            retries: 0,
            retry_delay: Duration::from_millis(10),
            renew_every: Some(Duration::from_secs(3600)),
        },
        owner.to_string(),
    )
}

const LONG: Duration = Duration::from_secs(600);

/// `(noncurrent bodies, noncurrent delete markers)` of exactly `key`.
async fn noncurrent(storage: &Arc<dyn ObjectStorage>, key: &str) -> (usize, usize) {
    let listed = storage.list_versions(key).await.expect("list versions");
    let of = |marker: bool| {
        listed
            .iter()
            .filter(|v| v.key == key && !v.is_latest && v.delete_marker == marker)
            .count()
    };
    (of(false), of(true))
}

/// The deadline stored in `stack`'s lock.
async fn stored_deadline(locks: &LockManager, stack: &str) -> i64 {
    let (info, _) = locks.read(stack, REGION).await.unwrap().expect("locked");
    info.expires_at_millis().expect("a deadline")
}

/// Writes a lock body as another process would have left it.
async fn plant_lock(storage: &Arc<dyn ObjectStorage>, stack: &str, body: Vec<u8>) {
    storage
        .put(&keys().lock(stack, REGION), body, PutCondition::Always)
        .await
        .expect("plant a lock");
}

async fn wait_for_history_listing(held: &LockHandle) {
    for _ in 0..1000 {
        if held.history_listed() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the lock history listing never finished");
}

fn refused_by(err: Result<LockHandle, StateError>, owner: &str) {
    match err {
        Err(StateError::Locked { owner: holder, .. }) => assert_eq!(holder, owner),
        Err(other) => panic!("expected Locked by {owner}, got {other}"),
        Ok(_) => panic!("a second owner acquired a held lock"),
    }
}

/// The seam itself answers as S3: `If-None-Match: *` refuses an existing key with 412,
/// `If-Match` refuses another ETag with 412 and a missing key with 404, a delete leaves a
/// delete marker (absent to readers, present in the history), equal bodies have equal ETags.
pub async fn storage_answers_conditions_as_s3(storage: Arc<dyn ObjectStorage>) {
    let key = "cdkd/Seam/us-east-1/object.json";
    let first = storage
        .put(key, b"{\"n\":1}".to_vec(), PutCondition::IfAbsent)
        .await
        .expect("a first write");
    assert!(
        first.etag.starts_with('"') && first.etag.ends_with('"'),
        "ETag kept with quotes: {}",
        first.etag
    );
    let again = storage
        .put(key, b"{\"n\":2}".to_vec(), PutCondition::IfAbsent)
        .await
        .unwrap_err();
    assert!(again.is_precondition_failed(), "{again}");
    let stale = storage
        .put(
            key,
            b"{\"n\":2}".to_vec(),
            PutCondition::IfMatch("\"0123456789abcdef0123456789abcdef\"".into()),
        )
        .await
        .unwrap_err();
    assert!(stale.is_precondition_failed(), "{stale}");
    let missing = storage
        .put(
            "cdkd/Seam/us-east-1/missing.json",
            b"{}".to_vec(),
            PutCondition::IfMatch(first.etag.clone()),
        )
        .await
        .unwrap_err();
    assert!(
        missing.is_not_found() && !missing.is_precondition_failed(),
        "{missing}"
    );
    let second = storage
        .put(
            key,
            b"{\"n\":2}".to_vec(),
            PutCondition::IfMatch(first.etag.clone()),
        )
        .await
        .expect("a write on the current ETag");
    assert_ne!(second.etag, first.etag);
    let read = storage.get(key).await.unwrap().expect("the object");
    assert_eq!(
        (read.body.as_slice(), &read.etag),
        (&b"{\"n\":2}"[..], &second.etag)
    );
    // Equal bodies, equal ETags (the layer's lost-answer checks compare bodies, not ETags,
    // but a conditional write on a rewritten equal body must still match).
    let other = storage
        .put(
            "cdkd/Seam/us-east-1/twin.json",
            b"{\"n\":2}".to_vec(),
            PutCondition::Always,
        )
        .await
        .unwrap();
    assert_eq!(other.etag, second.etag);

    let refused = storage.delete(key, Some(&first.etag)).await.unwrap_err();
    assert!(refused.is_precondition_failed(), "{refused}");
    storage
        .delete(key, Some(&second.etag))
        .await
        .expect("a delete on the current ETag");
    assert!(storage.get(key).await.unwrap().is_none());
    let gone = storage.delete(key, Some(&second.etag)).await.unwrap_err();
    assert!(gone.is_not_found(), "{gone}");
    assert_eq!(
        storage.list_keys("cdkd/Seam/").await.unwrap(),
        vec!["cdkd/Seam/us-east-1/twin.json".to_string()]
    );
    // Two bodies and the delete marker stay in the history; the first body is still readable.
    assert_eq!(noncurrent(&storage, key).await, (2, 0));
    let history = storage.list_versions(key).await.unwrap();
    let latest: Vec<_> = history.iter().filter(|v| v.is_latest).collect();
    assert_eq!(latest.len(), 1);
    assert!(latest[0].delete_marker);
    let first_id = first.version_id.expect("a versioned bucket names versions");
    assert_eq!(
        storage.get_version(key, &first_id).await.unwrap(),
        b"{\"n\":1}"
    );
    assert!(storage
        .get_version(key, &latest[0].version_id)
        .await
        .is_err());
    // A key whose current version is a delete marker is absent to `If-None-Match`.
    storage
        .put(key, b"{\"n\":3}".to_vec(), PutCondition::IfAbsent)
        .await
        .expect("a first write after a delete");
    let refusals = storage
        .delete_versions(key, std::slice::from_ref(&first_id))
        .await
        .unwrap();
    assert!(refusals.is_empty(), "{refusals:?}");
    assert!(storage.get_version(key, &first_id).await.is_err());
}

/// Acquire writes `lock.json` naming the owner and operation; a second owner is refused with
/// the holder's name while it is held, and acquires once it is released.
pub async fn a_held_lock_refuses_a_second_owner(storage: Arc<dyn ObjectStorage>) {
    let a = locks(&storage, "a@test:1", LONG);
    let b = locks(&storage, "b@test:2", LONG);
    let held = a.acquire("Held", REGION, "deploy").await.expect("acquire");
    let (info, etag) = a.read("Held", REGION).await.unwrap().expect("locked");
    assert_eq!(info.owner, "a@test:1");
    assert_eq!(info.operation.as_deref(), Some("deploy"));
    assert_eq!(etag, held.etag());
    assert!(info.expires_at_millis().unwrap() > now_millis());
    refused_by(b.acquire("Held", REGION, "destroy").await, "a@test:1");
    // The refusal names the holder and the way out.
    let text = b
        .acquire("Held", REGION, "destroy")
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        text.starts_with("stack Held (us-east-1) is locked by a@test:1 (operation deploy) until ")
            && text.ends_with("run `cdkd force-unlock Held --stack-region us-east-1`"),
        "{text}"
    );
    assert_eq!(held.release().await, ReleaseOutcome::Released);
    assert!(a.read("Held", REGION).await.unwrap().is_none());
    let taken = b
        .acquire("Held", REGION, "destroy")
        .await
        .expect("free now");
    assert_eq!(taken.release().await, ReleaseOutcome::Released);
}

/// A lock whose own `expiresAt` has passed is taken over; one whose deadline is not a finite
/// number, or whose body is not a lock at all, counts as expired too.
pub async fn an_expired_lock_is_taken_over(storage: Arc<dyn ObjectStorage>) {
    let expired = |expires_at: serde_json::Value| {
        serde_json::to_vec(&LockInfo {
            owner: "crashed@host:1".into(),
            timestamp: 1,
            expires_at,
            operation: Some("deploy".into()),
        })
        .unwrap()
    };
    let bodies = [
        expired(json!(now_millis() - 1_000)),
        expired(json!("Infinity")),
        expired(serde_json::Value::Null),
        b"not a lock".to_vec(),
    ];
    let reaper = locks(&storage, "reaper@test:1", LONG);
    for (case, body) in bodies.into_iter().enumerate() {
        plant_lock(&storage, "Expired", body).await;
        let held = reaper
            .acquire("Expired", REGION, "deploy")
            .await
            .unwrap_or_else(|err| panic!("case {case}: {err}"));
        let (info, _) = reaper.read("Expired", REGION).await.unwrap().unwrap();
        assert_eq!(info.owner, "reaper@test:1", "case {case}");
        assert_eq!(held.release().await, ReleaseOutcome::Released);
    }
    // A live deadline is not expired, however old the lock.
    plant_lock(
        &storage,
        "Expired",
        serde_json::to_vec(&LockInfo {
            owner: "alive@host:2".into(),
            timestamp: 1,
            expires_at: json!(now_millis() + 600_000),
            operation: None,
        })
        .unwrap(),
    )
    .await;
    refused_by(
        reaper.acquire("Expired", REGION, "deploy").await,
        "alive@host:2",
    );
}

/// Two processes that both judge a lock expired race to delete it on its ETag: exactly one
/// wins, the other is refused by the winner's lock.
pub async fn of_two_reapers_exactly_one_wins(storage: Arc<dyn ObjectStorage>) {
    for round in 0..10 {
        plant_lock(
            &storage,
            "Reaped",
            serde_json::to_vec(&LockInfo {
                owner: "crashed@host:1".into(),
                timestamp: 1,
                expires_at: json!(now_millis() - 1_000),
                operation: Some("deploy".into()),
            })
            .unwrap(),
        )
        .await;
        let a = locks(&storage, "reaper-a@test:1", LONG);
        let b = locks(&storage, "reaper-b@test:2", LONG);
        let (ra, rb) = tokio::join!(
            a.acquire("Reaped", REGION, "deploy"),
            b.acquire("Reaped", REGION, "deploy")
        );
        let winners: Vec<_> = [ra, rb].into_iter().filter_map(Result::ok).collect();
        assert_eq!(winners.len(), 1, "round {round}");
        assert_eq!(winners[0].release().await, ReleaseOutcome::Released);
    }
}

/// Contenders for a free lock: exactly one holds it per round.
pub async fn of_many_acquirers_exactly_one_holds_the_lock(storage: Arc<dyn ObjectStorage>) {
    for round in 0..5 {
        let attempts: Vec<_> = (0..8)
            .map(|contender| {
                let manager = locks(&storage, &format!("c{contender}@test:{round}"), LONG);
                tokio::spawn(async move { manager.acquire("Contended", REGION, "deploy").await })
            })
            .collect();
        let mut winners = Vec::new();
        for attempt in attempts {
            match attempt.await.unwrap() {
                Ok(handle) => winners.push(handle),
                Err(StateError::Locked { .. }) => {}
                Err(other) => panic!("round {round}: {other}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}");
        assert_eq!(winners[0].release().await, ReleaseOutcome::Released);
    }
}

/// A renewal rewrites the lock on the ETag this process last wrote: the stored deadline moves
/// on, the ETag changes, and the lock stays this process's.
pub async fn renewal_moves_the_deadline_and_keeps_the_lock(storage: Arc<dyn ObjectStorage>) {
    let holder = locks(&storage, "holder@test:1", LONG);
    let held = holder.acquire("Renewed", REGION, "deploy").await.unwrap();
    let (etag, deadline) = (held.etag(), stored_deadline(&holder, "Renewed").await);
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(held.renew_now().await, "the renewal was declared lost");
    assert!(!held.is_lost());
    assert_ne!(held.etag(), etag, "the lock was not rewritten");
    assert!(stored_deadline(&holder, "Renewed").await > deadline);
    let (_, stored_etag) = holder.read("Renewed", REGION).await.unwrap().unwrap();
    assert_eq!(stored_etag, held.etag());
    refused_by(
        locks(&storage, "other@test:2", LONG)
            .acquire("Renewed", REGION, "deploy")
            .await,
        "holder@test:1",
    );
    assert_eq!(held.release().await, ReleaseOutcome::Released);
}

/// A renewal after another process took the lock (here by `force-unlock` and a new acquire)
/// does not resurrect the old lock: it declares the lock lost, stops the run holding it, and the
/// release leaves the new owner's lock in place.
pub async fn a_renewal_after_a_takeover_declares_the_lock_lost(storage: Arc<dyn ObjectStorage>) {
    let holder = locks(&storage, "holder@test:1", LONG);
    let held = holder.acquire("Lost", REGION, "deploy").await.unwrap();
    let admin = locks(&storage, "admin@test:2", LONG);
    let removed = admin.force_unlock("Lost", REGION).await.unwrap();
    assert_eq!(
        removed.map(|info| info.owner).as_deref(),
        Some("holder@test:1")
    );
    let thief = admin.acquire("Lost", REGION, "deploy").await.unwrap();
    // The run holding it is stopped: no new operation starts once another process may write.
    let stop = tokio::sync::watch::Sender::new(false);
    held.stop_when_lapsed(stop.clone());
    assert!(!*stop.borrow() && held.lapsed().is_none());
    assert!(!held.renew_now().await);
    assert!(held.is_lost());
    assert!(*stop.borrow(), "losing the lock did not stop the run");
    let reason = held.lapsed().unwrap();
    assert!(reason.contains("admin@test:2"), "{reason}");
    assert_eq!(held.release().await, ReleaseOutcome::NotOwner);
    let (info, _) = admin.read("Lost", REGION).await.unwrap().unwrap();
    assert_eq!(info.owner, "admin@test:2");
    assert_eq!(thief.release().await, ReleaseOutcome::Released);
}

/// A holder that stopped renewing past its deadline is taken over; its late release is
/// conditional on its own ETag, so it leaves the new owner's lock alone. The new owner's
/// release deletes it, and a second release is a no-op.
pub async fn only_the_holder_releases_the_lock(storage: Arc<dyn ObjectStorage>) {
    let old = locks(&storage, "old@test:1", Duration::from_millis(50));
    let stalled = old.acquire("TakenOver", REGION, "deploy").await.unwrap();
    stalled.stop_renewing();
    let deadline = stored_deadline(&old, "TakenOver").await;
    while now_millis() <= deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let new = locks(&storage, "new@test:2", LONG);
    let current = new
        .acquire("TakenOver", REGION, "deploy")
        .await
        .expect("the takeover of an expired lock");
    assert_eq!(stalled.release().await, ReleaseOutcome::NotOwner);
    let (info, _) = new
        .read("TakenOver", REGION)
        .await
        .unwrap()
        .expect("locked");
    assert_eq!(info.owner, "new@test:2");
    assert_eq!(current.release().await, ReleaseOutcome::Released);
    assert_eq!(current.release().await, ReleaseOutcome::AlreadyReleased);
    assert!(new.read("TakenOver", REGION).await.unwrap().is_none());
}

/// A renewal that landed without this process hearing of it (its answer lost, or the write
/// cut off by the release) moved the ETag on: the release re-reads, finds the lock still this
/// acquisition's, and deletes it on its current ETag instead of leaving it to lapse.
pub async fn a_renewal_landed_unheard_is_still_released(storage: Arc<dyn ObjectStorage>) {
    let holder = locks(&storage, "holder@test:1", LONG);
    let held = holder.acquire("Unheard", REGION, "deploy").await.unwrap();
    let (mut info, etag) = holder.read("Unheard", REGION).await.unwrap().unwrap();
    assert_eq!(etag, held.etag());
    info.expires_at = serde_json::Value::from(now_millis() + LONG.as_millis() as i64 + 1_000);
    storage
        .put(
            &keys().lock("Unheard", REGION),
            serde_json::to_vec_pretty(&info).unwrap(),
            PutCondition::IfMatch(etag.clone()),
        )
        .await
        .expect("the unheard renewal");
    assert_ne!(
        holder.read("Unheard", REGION).await.unwrap().unwrap().1,
        etag
    );
    assert_eq!(held.release().await, ReleaseOutcome::Released);
    assert!(holder.read("Unheard", REGION).await.unwrap().is_none());
}

/// `force-unlock` deletes whoever's lock is there and purges its history; with no lock it
/// answers `None`.
pub async fn force_unlock_removes_any_lock_and_its_history(storage: Arc<dyn ObjectStorage>) {
    let holder = locks(&storage, "holder@test:1", LONG);
    let held = holder.acquire("Forced", REGION, "deploy").await.unwrap();
    assert!(held.renew_now().await);
    held.stop_renewing();
    let admin = locks(&storage, "admin@test:2", LONG);
    let removed = admin
        .force_unlock("Forced", REGION)
        .await
        .unwrap()
        .expect("there was a lock");
    assert_eq!(removed.owner, "holder@test:1");
    assert!(admin.read("Forced", REGION).await.unwrap().is_none());
    assert_eq!(
        noncurrent(&storage, &keys().lock("Forced", REGION)).await,
        (0, 0),
        "force-unlock left noncurrent versions"
    );
    assert!(admin
        .force_unlock("Forced", REGION)
        .await
        .unwrap()
        .is_none());
}

/// A release purges what this run wrote (its acquire and renewals) and the history listed at
/// acquire: cycle after cycle, only the current delete marker is left.
pub async fn a_release_leaves_no_lock_history(storage: Arc<dyn ObjectStorage>) {
    let locks = locks(&storage, "cycler@test:1", LONG);
    let key = keys().lock("Cycled", REGION);
    for cycle in 1..=3 {
        let held = locks.acquire("Cycled", REGION, "deploy").await.unwrap();
        wait_for_history_listing(&held).await;
        for _ in 0..cycle {
            assert!(held.renew_now().await);
        }
        assert_eq!(held.release().await, ReleaseOutcome::Released);
        assert_eq!(noncurrent(&storage, &key).await, (0, 0), "cycle {cycle}");
    }
}

/// A first save refuses an existing record; a save conditional on a stale ETag is refused with
/// the user's message, and the record another process wrote stays.
pub async fn saves_are_conditional_on_what_was_read(storage: Arc<dyn ObjectStorage>) {
    let backend = backend(&storage);
    let mut first = StackState::new("Race", REGION);
    backend
        .save("Race", REGION, &mut first, None)
        .await
        .unwrap();
    // Another process's first write (a body of its own: an identical body in the same
    // millisecond is indistinguishable from this process's retried write, which is adopted).
    let mut again = StackState::new("Race", REGION);
    again.outputs.insert("Other".into(), json!("b"));
    let err = backend
        .save("Race", REGION, &mut again, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, StateError::ConcurrentModification { .. }),
        "{err}"
    );

    let a = backend.load("Race", REGION).await.unwrap().unwrap();
    let b = backend.load("Race", REGION).await.unwrap().unwrap();
    assert_eq!(a.location, StateLocation::Current);
    assert!(
        a.etag.starts_with('"') && a.etag.ends_with('"'),
        "{}",
        a.etag
    );
    let mut winner = a.state.clone();
    winner.outputs.insert("Winner".into(), json!("a"));
    let written = backend
        .save("Race", REGION, &mut winner, Some(&a))
        .await
        .unwrap();
    let err = backend
        .save("Race", REGION, &mut b.state.clone(), Some(&b))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StateError::ConcurrentModification { stack, region } if stack == "Race" && region == REGION),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "State was modified by another process (stack Race, region us-east-1). Re-run the command; if this repeats, another cdkd is working on the stack."
    );
    let stored = backend.load("Race", REGION).await.unwrap().unwrap();
    assert_eq!(stored.etag, written);
    assert_eq!(stored.state.outputs["Winner"], json!("a"));
}

/// A legacy (v1) record is read only for the region its body names; the next save writes the
/// region-scoped key and deletes the legacy one.
pub async fn a_legacy_record_moves_on_its_next_save(storage: Arc<dyn ObjectStorage>) {
    let backend = backend(&storage);
    storage
        .put(
            "cdkd/MyAppStack/state.json",
            LEGACY_RECORD.to_vec(),
            PutCondition::Always,
        )
        .await
        .unwrap();
    assert!(backend
        .load("MyAppStack", "eu-west-1")
        .await
        .unwrap()
        .is_none());
    let mut stored = backend
        .load("MyAppStack", REGION)
        .await
        .unwrap()
        .expect("the legacy record");
    assert_eq!(stored.location, StateLocation::Legacy);
    let previous = stored.clone();
    backend
        .save("MyAppStack", REGION, &mut stored.state, Some(&previous))
        .await
        .unwrap();
    assert!(storage
        .get("cdkd/MyAppStack/state.json")
        .await
        .unwrap()
        .is_none());
    let reloaded = backend.load("MyAppStack", REGION).await.unwrap().unwrap();
    assert_eq!(reloaded.location, StateLocation::Current);
    assert_eq!(reloaded.state.resources.len(), 3);
}

/// Records are listed per (stack, region) and a deleted record is gone from the listing.
pub async fn records_are_listed_and_deleted(storage: Arc<dyn ObjectStorage>) {
    let backend = backend(&storage);
    for (stack, region) in [("A", REGION), ("A", "eu-west-1"), ("B", REGION)] {
        let mut state = StackState::new(stack, region);
        backend.save(stack, region, &mut state, None).await.unwrap();
    }
    let listed: Vec<_> = backend
        .list_stacks()
        .await
        .unwrap()
        .into_iter()
        .map(|found| (found.stack, found.region.unwrap_or_default()))
        .collect();
    assert_eq!(
        listed,
        [("A", "eu-west-1"), ("A", REGION), ("B", REGION)]
            .map(|(s, r)| (s.to_string(), r.to_string()))
    );
    assert_eq!(
        backend.regions_of("A").await.unwrap(),
        vec!["eu-west-1".to_string(), REGION.to_string()]
    );
    backend.delete("A", REGION).await.unwrap();
    backend
        .delete("A", REGION)
        .await
        .expect("a second delete is a no-op");
    assert!(backend.load("A", REGION).await.unwrap().is_none());
    assert_eq!(
        backend.regions_of("A").await.unwrap(),
        vec!["eu-west-1".to_string()]
    );
}

/// A purge removes the noncurrent versions and delete markers of exactly one key: never its
/// current version, never a sibling key sharing its prefix, never `state.json`'s history.
pub async fn purge_removes_only_noncurrent_versions_of_the_one_key(
    storage: Arc<dyn ObjectStorage>,
) {
    let key = "cdkd/P/us-east-1/rollback-journal.json";
    let put = |key: String, body: &'static str| {
        let storage = Arc::clone(&storage);
        async move {
            storage
                .put(&key, body.as_bytes().to_vec(), PutCondition::Always)
                .await
                .unwrap();
        }
    };
    for body in ["1", "2", "3"] {
        put(key.to_string(), body).await;
    }
    storage.delete(key, None).await.unwrap();
    put(key.to_string(), "current").await;
    for body in ["a", "b"] {
        put(format!("{key}.bak"), body).await;
        put("cdkd/P/us-east-1/state.json".to_string(), body).await;
    }
    let report = purge_noncurrent(storage.as_ref(), key).await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.removed, 4, "three old bodies and one delete marker");
    assert_eq!(noncurrent(&storage, key).await, (0, 0));
    assert_eq!(
        version_ids(storage.as_ref(), key, Versions::Every)
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(storage.get(key).await.unwrap().unwrap().body, b"current");
    assert_eq!(
        noncurrent(&storage, &format!("{key}.bak")).await,
        (1, 0),
        "a sibling key was touched"
    );
    assert_eq!(
        noncurrent(&storage, "cdkd/P/us-east-1/state.json").await,
        (1, 0),
        "state history was touched"
    );
    // Nothing left to purge is a clean report, not a failure.
    let again = purge_noncurrent(storage.as_ref(), key).await;
    assert_eq!((again.removed, again.failures.len()), (0, 0));
}

/// The exports index is read-modify-written on its ETag: two stacks publishing in turn both
/// stay in it, and withdrawing the last entry deletes it.
pub async fn the_exports_index_keeps_every_publisher(storage: Arc<dyn ObjectStorage>) {
    let backend = backend(&storage);
    for stack in ["Producer", "Other"] {
        let mut state = StackState::new(stack, REGION);
        state
            .outputs
            .insert(format!("{stack}Export"), json!("value"));
        state.export_names = Some(vec![format!("{stack}Export")]);
        let warnings = exports_index::publish(&backend, &state).await.unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    let (index, _) = exports_index::read(&backend, REGION)
        .await
        .unwrap()
        .expect("an index");
    assert_eq!(index.exports["ProducerExport"].stack, "Producer");
    assert_eq!(index.exports["OtherExport"].stack, "Other");
    exports_index::withdraw(&backend, "Producer", REGION)
        .await
        .unwrap();
    exports_index::withdraw(&backend, "Other", REGION)
        .await
        .unwrap();
    assert!(exports_index::read(&backend, REGION)
        .await
        .unwrap()
        .is_none());
    assert!(storage
        .get(&exports_index::index_key(&backend, REGION))
        .await
        .unwrap()
        .is_none());
}

/// One test per conformance rule, each on a fresh bucket from `$fresh` (an expression whose
/// value is a future of `Arc<dyn ObjectStorage>`).
#[macro_export]
macro_rules! state_conformance_tests {
    ($fresh:expr) => {
        $crate::state_conformance_tests!(@rules $fresh;
            storage_answers_conditions_as_s3,
            a_held_lock_refuses_a_second_owner,
            an_expired_lock_is_taken_over,
            of_two_reapers_exactly_one_wins,
            of_many_acquirers_exactly_one_holds_the_lock,
            renewal_moves_the_deadline_and_keeps_the_lock,
            a_renewal_after_a_takeover_declares_the_lock_lost,
            only_the_holder_releases_the_lock,
            a_renewal_landed_unheard_is_still_released,
            force_unlock_removes_any_lock_and_its_history,
            a_release_leaves_no_lock_history,
            saves_are_conditional_on_what_was_read,
            a_legacy_record_moves_on_its_next_save,
            records_are_listed_and_deleted,
            purge_removes_only_noncurrent_versions_of_the_one_key,
            the_exports_index_keeps_every_publisher,
        );
    };
    (@rules $fresh:expr; $($rule:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $rule() {
                $crate::state::conformance::$rule($fresh.await).await;
            }
        )*
    };
}

#[cfg(test)]
mod memory {
    use std::sync::Arc;

    use crate::state::storage::{MemoryStorage, ObjectStorage};

    async fn fresh() -> Arc<dyn ObjectStorage> {
        Arc::new(MemoryStorage::new("conformance"))
    }

    crate::state_conformance_tests!(fresh());
}
