//! The stack lock: `lock.json` written with S3 conditional writes, renewed while held.
//!
//! - Acquire: `PutObject` with `If-None-Match: *`. A live foreign lock is retried (3 times,
//!   2 s apart) and then reported with its owner and deadline. An expired one (its own
//!   `expiresAt` has passed, or is not a finite number) is taken over by a conditional delete
//!   (`If-Match` its ETag), so of two reapers exactly one wins.
//! - Renew: every min(2 min, TTL/4), `PutObject` with `If-Match` the ETag this process last
//!   wrote. A 412 is re-read: if the stored body is byte-for-byte what this process wrote,
//!   the write had landed and the renewal is adopted; otherwise the lock is lost.
//! - Release: stops the renewer (letting a renewal in flight finish), then `DeleteObject`
//!   with `If-Match`. A 412 is re-read: a lock still of this acquisition (a renewal landed
//!   unheard) is deleted on its current ETag; anyone else's is left alone. Only 403/501 (the
//!   condition cannot be evaluated) fall back to an unconditional delete, after re-reading
//!   that the lock is still ours.
//!   A release never fails the command, and a second one is a no-op.
//!
//! Every call goes through [`ObjectStorage`], so the conformance suite holds these rules on S3
//! and in memory alike.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_sdk_s3::Client;
use tokio::task::JoinHandle;

use super::keys::StateKeys;
use super::purge::{
    log_report, purge_and_report_on, remove_versions, version_ids, PurgeFailure, PurgeLogLevel,
    PurgedObject, Versions,
};
use super::s3_error::S3Failure;
use super::schema::{now_millis, LockInfo};
use super::storage::{ObjectStorage, PutCondition, S3Storage};
use super::StateError;

/// Timing of acquisition and renewal.
#[derive(Debug, Clone, PartialEq)]
pub struct LockConfig {
    /// How long a lock lives without renewal.
    pub ttl: Duration,
    /// Retries when a live lock is held by someone else.
    pub retries: u32,
    /// The wait between retries.
    pub retry_delay: Duration,
    /// Overrides the renewal interval (tests); default min(2 min, TTL/4).
    pub renew_every: Option<Duration>,
}

impl Default for LockConfig {
    fn default() -> LockConfig {
        LockConfig {
            ttl: Duration::from_secs(30 * 60),
            retries: 3,
            retry_delay: Duration::from_secs(2),
            renew_every: None,
        }
    }
}

impl LockConfig {
    /// The default, with `CDKD_LOCK_TTL_SECONDS` applied when set (for tests and slow CI).
    pub fn from_env() -> LockConfig {
        let mut config = LockConfig::default();
        if let Some(ttl) = crate::seconds::from_env("CDKD_LOCK_TTL_SECONDS") {
            config.ttl = ttl;
        }
        config
    }

    /// How often a held lock is renewed.
    pub fn renew_interval(&self) -> Duration {
        self.renew_every
            .unwrap_or_else(|| (self.ttl / 4).min(Duration::from_secs(120)))
    }
}

/// `user@host:pid` for this process.
pub fn default_owner() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .ok()
        .filter(|user| !user.is_empty())
        .or_else(account_name)
        .unwrap_or_else(|| "unknown".into());
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    format!("{user}@{host}:{}", std::process::id())
}

/// The login name of this process's user, from the password database, when `$USER` is unset
/// (cron, containers, CI runners): the owner of `/proc/self` is the real user id.
fn account_name() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    name_of_uid(&passwd, uid)
}

/// The name of `uid` in a passwd(5) file.
fn name_of_uid(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let entry_uid: u32 = fields.nth(1)?.parse().ok()?;
        (entry_uid == uid && !name.is_empty()).then(|| name.to_string())
    })
}

/// Takes and clears stack locks in one state bucket.
#[derive(Debug, Clone)]
pub struct LockManager {
    storage: Arc<dyn ObjectStorage>,
    keys: StateKeys,
    config: LockConfig,
    owner: String,
}

/// What a release did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// The lock was deleted.
    Released,
    /// This handle had already released.
    AlreadyReleased,
    /// The lock present belongs to someone else; left in place.
    NotOwner,
    /// The delete failed; the lock lapses at its deadline.
    LeftInPlace(String),
}

struct Held {
    etag: String,
    /// The versions of the lock key this process wrote (its acquire and each renewal), oldest
    /// first: the release purges them, so a run leaves none of its heartbeats behind.
    written: Vec<String>,
    body: Vec<u8>,
    deadline: i64,
    lost: bool,
    released: bool,
    warned_deadline: bool,
    /// Why this run can no longer count on the lock (taken over, or not renewed before its
    /// deadline): set once, and the run's stop signal with it.
    lapsed: Option<String>,
}

struct Shared {
    storage: Arc<dyn ObjectStorage>,
    key: String,
    stack: String,
    region: String,
    info: LockInfo,
    ttl: Duration,
    held: Mutex<Held>,
    /// Wakes the renewer out of its sleep so a release can wait for it instead of aborting a
    /// renewal mid-write (an aborted write may still land and move the ETag on).
    stop: tokio::sync::Notify,
    /// The run's stop signal, set when the lock lapses: no operation starts after that.
    on_lapse: Mutex<Option<tokio::sync::watch::Sender<bool>>>,
}

impl Shared {
    /// Records that the lock no longer protects this run, and stops the run.
    fn lapse(&self, held: &mut Held, reason: String) {
        if held.lapsed.is_some() {
            return;
        }
        tracing::warn!("{reason}");
        held.lapsed = Some(reason);
        if let Some(stop) = &*self.on_lapse.lock().unwrap_or_else(|e| e.into_inner()) {
            stop.send_replace(true);
        }
    }

    /// Whether a stored lock body is this acquisition's (its renewals change only the deadline).
    fn acquired(&self, bytes: &[u8]) -> bool {
        serde_json::from_slice::<LockInfo>(bytes).is_ok_and(|info| {
            info.owner == self.info.owner && info.timestamp == self.info.timestamp
        })
    }
}

/// How long a release waits for a renewal in flight before cutting it off.
const RENEWAL_GRACE: Duration = Duration::from_secs(10);

/// The lock key's noncurrent versions, listed in the background while the command works.
type History = JoinHandle<Result<Vec<String>, PurgeFailure>>;

/// A held lock. Release it with [`LockHandle::release`]; dropping it only stops renewal.
pub struct LockHandle {
    shared: Arc<Shared>,
    renewer: Mutex<Option<JoinHandle<()>>>,
    /// Listed right after the acquire, so the release purges them in the same round trip as
    /// its delete instead of listing and purging after it (two round trips at the end of every
    /// command). What this run writes is purged by the next run's release.
    history: Mutex<Option<History>>,
}

impl Drop for LockHandle {
    fn drop(&mut self) {
        if let Some(renewer) = self
            .renewer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            renewer.abort();
        }
    }
}

#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
fn lock_body(info: &LockInfo) -> Vec<u8> {
    serde_json::to_vec_pretty(info).expect("lock info serialises")
}

fn format_deadline(info: &LockInfo) -> String {
    match info.expires_at_millis() {
        Some(ms) => chrono::DateTime::from_timestamp_millis(ms).map_or_else(
            || ms.to_string(),
            |at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        ),
        None => "an invalid deadline".into(),
    }
}

impl LockManager {
    /// A manager acting as this process.
    pub fn new(client: Client, bucket: &str, keys: StateKeys, config: LockConfig) -> LockManager {
        LockManager::with_owner(client, bucket, keys, config, default_owner())
    }

    /// A manager acting as `owner` (tests use several in one process).
    pub fn with_owner(
        client: Client,
        bucket: &str,
        keys: StateKeys,
        config: LockConfig,
        owner: String,
    ) -> LockManager {
        LockManager::on(
            Arc::new(S3Storage::new(client, bucket)),
            keys,
            config,
            owner,
        )
    }

    /// A manager acting as `owner` on any [`ObjectStorage`] (the conformance suite).
    pub fn on(
        storage: Arc<dyn ObjectStorage>,
        keys: StateKeys,
        config: LockConfig,
        owner: String,
    ) -> LockManager {
        LockManager {
            storage,
            keys,
            config,
            owner,
        }
    }

    fn bucket(&self) -> &str {
        self.storage.bucket()
    }

    /// The owner string this manager writes.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Reads a stack's lock, `None` when there is none.
    pub async fn read(
        &self,
        stack: &str,
        region: &str,
    ) -> Result<Option<(LockInfo, String)>, StateError> {
        read_lock(self.storage.as_ref(), &self.keys.lock(stack, region)).await
    }

    /// Acquires the stack's lock, retrying a live foreign lock, taking over an expired one.
    pub async fn acquire(
        &self,
        stack: &str,
        region: &str,
        operation: &str,
    ) -> Result<LockHandle, StateError> {
        let key = self.keys.lock(stack, region);
        let mut attempt = 0;
        loop {
            let now = now_millis();
            let info = LockInfo {
                owner: self.owner.clone(),
                timestamp: now,
                expires_at: serde_json::Value::from(now + self.config.ttl.as_millis() as i64),
                operation: Some(operation.to_string()),
            };
            if let Some(handle) = self.try_put(&key, stack, region, &info).await? {
                return Ok(handle);
            }
            match self.read(stack, region).await? {
                // Released between our put and our read: try again straight away.
                None => continue,
                Some((current, etag)) if current.is_expired(now_millis()) => {
                    if self.take_over(&key, &current, &etag).await? {
                        continue;
                    }
                    // Another process reaped it first; what is there now is live.
                }
                Some((current, _)) => {
                    if attempt >= self.config.retries {
                        return Err(StateError::Locked {
                            stack: stack.to_string(),
                            region: region.to_string(),
                            owner: current.owner.clone(),
                            operation: current
                                .operation
                                .clone()
                                .unwrap_or_else(|| "unknown".into()),
                            expires: format_deadline(&current),
                        });
                    }
                    tracing::info!(
                        "stack {stack} ({region}) is locked by {} until {}; retrying in {:?}",
                        current.owner,
                        format_deadline(&current),
                        self.config.retry_delay
                    );
                }
            }
            attempt += 1;
            tokio::time::sleep(self.config.retry_delay).await;
        }
    }

    /// The lock object's body and ETag, if it can be read.
    async fn stored_body(&self, key: &str) -> Option<(Vec<u8>, String)> {
        let object = self.storage.get(key).await.ok()??;
        Some((object.body, object.etag))
    }

    /// The handle of a lock this process wrote (`body`, stored under `etag`).
    fn hold(
        &self,
        key: &str,
        stack: &str,
        region: &str,
        info: &LockInfo,
        body: Vec<u8>,
        etag: String,
    ) -> LockHandle {
        let shared = Arc::new(Shared {
            storage: Arc::clone(&self.storage),
            key: key.to_string(),
            stack: stack.to_string(),
            region: region.to_string(),
            info: info.clone(),
            ttl: self.config.ttl,
            held: Mutex::new(Held {
                etag,
                written: Vec::new(),
                body,
                deadline: info.expires_at_millis().unwrap_or_default(),
                lost: false,
                released: false,
                warned_deadline: false,
                lapsed: None,
            }),
            stop: tokio::sync::Notify::new(),
            on_lapse: Mutex::new(None),
        });
        let renewer = tokio::spawn(renew_forever(
            Arc::clone(&shared),
            self.config.renew_interval(),
        ));
        let history = {
            let (storage, key) = (Arc::clone(&self.storage), key.to_string());
            tokio::spawn(
                async move { version_ids(storage.as_ref(), &key, Versions::Noncurrent).await },
            )
        };
        LockHandle {
            shared,
            renewer: Mutex::new(Some(renewer)),
            history: Mutex::new(Some(history)),
        }
    }

    async fn try_put(
        &self,
        key: &str,
        stack: &str,
        region: &str,
        info: &LockInfo,
    ) -> Result<Option<LockHandle>, StateError> {
        let body = lock_body(info);
        let put = self
            .storage
            .put(key, body.clone(), PutCondition::IfAbsent)
            .await;
        match put {
            Ok(written) => {
                let handle = self.hold(key, stack, region, info, body, written.etag);
                handle.wrote(written.version_id.as_deref());
                Ok(Some(handle))
            }
            Err(failure) => {
                if failure.is_precondition_failed() {
                    // A retried put whose first attempt landed with its answer lost meets its
                    // own lock: the stored body is byte for byte ours (owner with pid, and
                    // the acquisition time in milliseconds), so the lock is held, not taken.
                    match self.stored_body(key).await {
                        Some((stored, etag)) if stored == body => {
                            Ok(Some(self.hold(key, stack, region, info, body, etag)))
                        }
                        _ => Ok(None),
                    }
                } else {
                    Err(StateError::from_failure(
                        "acquire lock",
                        key,
                        self.bucket(),
                        failure,
                    ))
                }
            }
        }
    }

    /// Deletes an expired lock only if it is still the one we judged expired. `false` when
    /// another process got there first.
    async fn take_over(
        &self,
        key: &str,
        expired: &LockInfo,
        etag: &str,
    ) -> Result<bool, StateError> {
        let deleted = self.storage.delete(key, Some(etag)).await;
        match deleted {
            Ok(_) => {
                tracing::warn!(
                    "taking over the expired lock on {key} held by {} (operation {}, deadline {}); if that process is still running, two writers now share this stack",
                    expired.owner,
                    expired.operation.as_deref().unwrap_or("unknown"),
                    format_deadline(expired)
                );
                purge_and_report_on(
                    self.storage.as_ref(),
                    key,
                    PurgedObject::Lock,
                    PurgeLogLevel::Warn,
                )
                .await;
                Ok(true)
            }
            Err(failure) => {
                if failure.is_precondition_failed() || failure.is_not_found() {
                    Ok(false)
                } else {
                    Err(StateError::from_failure(
                        "take over lock",
                        key,
                        self.bucket(),
                        failure,
                    ))
                }
            }
        }
    }

    /// Deletes the stack's lock whoever holds it (`cdkd force-unlock`). `false` when none.
    pub async fn force_unlock(
        &self,
        stack: &str,
        region: &str,
    ) -> Result<Option<LockInfo>, StateError> {
        let key = self.keys.lock(stack, region);
        let existing = self.read(stack, region).await?;
        if let Err(failure) = self.storage.delete(&key, None).await {
            if !failure.is_not_found() {
                return Err(StateError::from_failure(
                    "delete lock",
                    &key,
                    self.bucket(),
                    failure,
                ));
            }
        }
        purge_and_report_on(
            self.storage.as_ref(),
            &key,
            PurgedObject::Lock,
            PurgeLogLevel::Warn,
        )
        .await;
        Ok(existing.map(|(info, _)| info))
    }
}

async fn read_lock(
    storage: &dyn ObjectStorage,
    key: &str,
) -> Result<Option<(LockInfo, String)>, StateError> {
    match storage.get(key).await {
        Ok(Some(object)) => {
            // An unreadable lock counts as expired rather than pinning the stack forever.
            let info = serde_json::from_slice::<LockInfo>(&object.body).unwrap_or(LockInfo {
                owner: "(unreadable lock)".into(),
                timestamp: 0,
                expires_at: serde_json::Value::Null,
                operation: None,
            });
            Ok(Some((info, object.etag)))
        }
        Ok(None) => Ok(None),
        Err(failure) => Err(StateError::from_failure(
            "read lock",
            key,
            storage.bucket(),
            failure,
        )),
    }
}

async fn read_raw(
    storage: &dyn ObjectStorage,
    key: &str,
) -> Result<Option<(Vec<u8>, String)>, S3Failure> {
    Ok(storage
        .get(key)
        .await?
        .map(|object| (object.body, object.etag)))
}

async fn renew_forever(shared: Arc<Shared>, every: Duration) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = shared.stop.notified() => return,
        }
        if !renew_once(&shared).await {
            return;
        }
    }
}

/// One renewal; `false` when renewing must stop (lost or released).
async fn renew_once(shared: &Shared) -> bool {
    let (etag, info) = {
        let held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.lost || held.released {
            return false;
        }
        let mut info = shared.info.clone();
        info.expires_at = serde_json::Value::from(now_millis() + shared.ttl.as_millis() as i64);
        (held.etag.clone(), info)
    };
    let body = lock_body(&info);
    let put = shared
        .storage
        .put(&shared.key, body.clone(), PutCondition::IfMatch(etag))
        .await;
    let deadline = info.expires_at_millis().unwrap_or_default();
    match put {
        Ok(written) => {
            let mut held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
            held.etag = written.etag;
            held.written.extend(written.version_id);
            held.body = body;
            held.deadline = deadline;
            true
        }
        Err(failure) => {
            if failure.is_precondition_failed() {
                // The write may have landed with its answer lost: adopt it if the stored body is
                // exactly what we sent.
                match read_raw(shared.storage.as_ref(), &shared.key).await {
                    Ok(Some((stored, stored_etag))) if stored == body => {
                        let mut held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
                        held.etag = stored_etag;
                        held.body = body;
                        held.deadline = deadline;
                        return true;
                    }
                    Ok(found) => {
                        let holder = found
                            .and_then(|(bytes, _)| serde_json::from_slice::<LockInfo>(&bytes).ok())
                            .map_or_else(|| "nobody".to_string(), |info| info.owner);
                        let mut held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
                        held.lost = true;
                        shared.lapse(
                            &mut held,
                            format!(
                                "lost the lock on stack {} ({}): it is now held by {holder}, and another process may be changing this stack",
                                shared.stack, shared.region
                            ),
                        );
                        return false;
                    }
                    Err(read_failure) => {
                        tracing::debug!("lock renewal check failed: {read_failure}");
                    }
                }
            } else {
                tracing::debug!("lock renewal failed, retrying next time: {failure}");
            }
            let mut held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
            if now_millis() > held.deadline && !held.warned_deadline {
                held.warned_deadline = true;
                shared.lapse(
                    &mut held,
                    format!(
                        "could not renew the lock on stack {} ({}) before its deadline; another process may now take it over",
                        shared.stack, shared.region
                    ),
                );
            }
            true
        }
    }
}

impl LockHandle {
    /// Notes a version of the lock key this process wrote.
    fn wrote(&self, version: Option<&str>) {
        if let Some(version) = version {
            (self.shared.held.lock().unwrap_or_else(|e| e.into_inner()))
                .written
                .push(version.to_string());
        }
    }

    /// The lock's key.
    pub fn key(&self) -> &str {
        &self.shared.key
    }

    /// Whether another process took the lock over.
    pub fn is_lost(&self) -> bool {
        self.shared
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lost
    }

    /// Sets `stop` when the lock lapses (at once if it already has), so the run holding it
    /// starts no new operation once another process may be writing.
    pub fn stop_when_lapsed(&self, stop: tokio::sync::watch::Sender<bool>) {
        let held = self.shared.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.lapsed.is_some() {
            stop.send_replace(true);
        }
        *self
            .shared
            .on_lapse
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(stop);
    }

    /// Why the lock no longer protects this run, if it does not.
    pub fn lapsed(&self) -> Option<String> {
        self.shared
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lapsed
            .clone()
    }

    /// The ETag last written.
    pub fn etag(&self) -> String {
        self.shared
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .etag
            .clone()
    }

    /// Renews once now (tests; the background task does this on its own).
    pub async fn renew_now(&self) -> bool {
        renew_once(&self.shared).await
    }

    /// Whether the listing of the lock's earlier versions, started at acquire and purged at
    /// release, has finished (tests wait for it instead of sleeping).
    pub fn history_listed(&self) -> bool {
        self.history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_none_or(|listing| listing.is_finished())
    }

    /// Stops the background renewal without releasing (tests simulate a stalled holder).
    pub fn stop_renewing(&self) {
        if let Some(renewer) = self
            .renewer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            renewer.abort();
        }
    }

    /// Releases the lock if it is still ours. Never fails; logs what it could not do.
    pub async fn release(&self) -> ReleaseOutcome {
        {
            let mut held = self.shared.held.lock().unwrap_or_else(|e| e.into_inner());
            if held.released {
                return ReleaseOutcome::AlreadyReleased;
            }
            held.released = true;
        }
        let renewer = self
            .renewer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut renewer) = renewer {
            // A renewal in flight is let finish, so its ETag is the one the delete names.
            self.shared.stop.notify_one();
            if tokio::time::timeout(RENEWAL_GRACE, &mut renewer)
                .await
                .is_err()
            {
                renewer.abort();
                let _ = renewer.await;
            }
        }
        let shared = &self.shared;
        let (etag, lost, mut written) = {
            let held = shared.held.lock().unwrap_or_else(|e| e.into_inner());
            (held.etag.clone(), held.lost, held.written.clone())
        };
        // The newest version this run wrote is the current one until the delete lands; the
        // older ones are noncurrent already and go alongside it.
        let newest = written.pop();
        if lost {
            tracing::warn!(
                "not releasing the lock on {}: it is held by another process now",
                shared.key
            );
            return ReleaseOutcome::NotOwner;
        }
        let history = self
            .history
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // The versions listed at acquire time were noncurrent then and stay so: removing them
        // alongside the delete is safe whoever holds the lock now.
        let purge = async {
            let listed = match history {
                Some(listing) => listing.await.unwrap_or_else(|e| {
                    Err(PurgeFailure {
                        key: shared.key.clone(),
                        reason: format!("listing interrupted: {e}"),
                    })
                }),
                None => Ok(Vec::new()),
            };
            let mut own = written.clone();
            let storage = shared.storage.as_ref();
            let report = match listed {
                Ok(mut doomed) => {
                    // A renewal before the listing ran makes the acquire's version one it lists.
                    own.retain(|o| !doomed.contains(o));
                    doomed.append(&mut own);
                    remove_versions(storage, &shared.key, &doomed).await
                }
                Err(failure) => {
                    let mut report = remove_versions(storage, &shared.key, &own).await;
                    report.failures.push(failure);
                    report
                }
            };
            log_report(
                shared.storage.bucket(),
                &shared.key,
                PurgedObject::Lock,
                PurgeLogLevel::Debug,
                &report,
            );
        };
        let delete = async {
            match shared.storage.delete(&shared.key, Some(&etag)).await {
                Ok(()) => ReleaseOutcome::Released,
                Err(failure) => release_after_failure(shared, &failure).await,
            }
        };
        let (outcome, ()) = tokio::join!(delete, purge);
        // Once the delete marker is current, the last heartbeat is noncurrent too. Only after
        // our own delete: deleting the current version would bring the one before it back.
        if let (ReleaseOutcome::Released, Some(newest)) = (&outcome, newest) {
            let report = remove_versions(shared.storage.as_ref(), &shared.key, &[newest]).await;
            log_report(
                shared.storage.bucket(),
                &shared.key,
                PurgedObject::Lock,
                PurgeLogLevel::Debug,
                &report,
            );
        }
        outcome
    }
}

/// Decides what a failed conditional release does. Only 403/501 mean "the condition could
/// not be evaluated" and may fall back to an unconditional delete, after re-reading that the
/// lock is still ours; 412 is someone else's lock; 409/503 and the rest never fall back.
async fn release_after_failure(shared: &Shared, failure: &S3Failure) -> ReleaseOutcome {
    if failure.is_precondition_failed() {
        return release_if_still_ours(shared).await;
    }
    if failure.is_not_found() {
        return ReleaseOutcome::Released;
    }
    match decide_fallback(failure.status_or_zero()) {
        Fallback::Never => {
            let reason = format!("could not release the lock on {}: {failure}; it will lapse at its deadline, or run `cdkd force-unlock {} --stack-region {}`", shared.key, shared.stack, shared.region);
            tracing::warn!("{reason}");
            ReleaseOutcome::LeftInPlace(reason)
        }
        Fallback::AfterOwnershipCheck => {
            match read_raw(shared.storage.as_ref(), &shared.key).await {
                Err(read_failure) => {
                    let reason = format!(
                    "could not release the lock on {} ({failure}) and could not re-read it to check ownership ({read_failure}); leaving it to lapse at its deadline",
                    shared.key
                );
                    tracing::warn!("{reason}");
                    ReleaseOutcome::LeftInPlace(reason)
                }
                Ok(None) => ReleaseOutcome::Released,
                Ok(Some((bytes, _))) => {
                    if !shared.acquired(&bytes) {
                        tracing::warn!(
                            "not releasing the lock on {}: it is held by another process now",
                            shared.key
                        );
                        return ReleaseOutcome::NotOwner;
                    }
                    match shared.storage.delete(&shared.key, None).await {
                        Ok(()) => ReleaseOutcome::Released,
                        Err(failure) => {
                            let reason =
                                format!("could not release the lock on {}: {failure}", shared.key);
                            tracing::warn!("{reason}");
                            ReleaseOutcome::LeftInPlace(reason)
                        }
                    }
                }
            }
        }
    }
}

/// After a 412: a renewal whose answer never reached us (lost, or cut off by a release that
/// could not wait for it) may have moved the ETag on. If the stored lock is still this
/// acquisition's, the delete is made again on its current ETag; otherwise it is someone else's.
async fn release_if_still_ours(shared: &Shared) -> ReleaseOutcome {
    let not_owner = || {
        tracing::warn!(
            "not releasing the lock on {}: it is held by another process now",
            shared.key
        );
        ReleaseOutcome::NotOwner
    };
    match read_raw(shared.storage.as_ref(), &shared.key).await {
        Ok(None) => ReleaseOutcome::Released,
        Ok(Some((bytes, etag))) if shared.acquired(&bytes) => {
            match shared.storage.delete(&shared.key, Some(&etag)).await {
                Ok(()) => ReleaseOutcome::Released,
                Err(failure) if failure.is_not_found() => ReleaseOutcome::Released,
                Err(failure) if failure.is_precondition_failed() => not_owner(),
                Err(failure) => {
                    let reason = format!("could not release the lock on {}: {failure}; it will lapse at its deadline, or run `cdkd force-unlock {} --stack-region {}`", shared.key, shared.stack, shared.region);
                    tracing::warn!("{reason}");
                    ReleaseOutcome::LeftInPlace(reason)
                }
            }
        }
        Ok(Some(_)) => not_owner(),
        Err(read_failure) => {
            let reason = format!(
                "could not release the lock on {} (it changed since this process last wrote it, and re-reading it failed: {read_failure}); it will lapse at its deadline, or run `cdkd force-unlock {} --stack-region {}`",
                shared.key, shared.stack, shared.region
            );
            tracing::warn!("{reason}");
            ReleaseOutcome::LeftInPlace(reason)
        }
    }
}

/// Whether a failed conditional delete may be retried without its condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// 403 (a policy that cannot evaluate the condition) or 501 (an endpoint without it).
    AfterOwnershipCheck,
    /// Everything else, notably 409 (contended) and 503 (maybe already applied).
    Never,
}

/// The release fallback rule by HTTP status.
pub fn decide_fallback(status: u16) -> Fallback {
    match status {
        403 | 501 => Fallback::AfterOwnershipCheck,
        _ => Fallback::Never,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_names_the_account_when_user_is_unset() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nci:x:1001:1001::/home/ci:/bin/sh\nbroken\n";
        assert_eq!(name_of_uid(passwd, 1001).as_deref(), Some("ci"));
        assert_eq!(name_of_uid(passwd, 0).as_deref(), Some("root"));
        assert_eq!(name_of_uid(passwd, 7), None);
    }

    #[test]
    fn only_403_and_501_may_drop_the_condition() {
        assert_eq!(decide_fallback(403), Fallback::AfterOwnershipCheck);
        assert_eq!(decide_fallback(501), Fallback::AfterOwnershipCheck);
        for status in [409, 503, 500, 400, 0] {
            assert_eq!(decide_fallback(status), Fallback::Never, "{status}");
        }
    }

    #[test]
    fn renewal_interval_is_the_smaller_of_two_minutes_and_a_quarter_ttl() {
        let default = LockConfig::default();
        assert_eq!(default.renew_interval(), Duration::from_secs(120));
        let short = LockConfig {
            ttl: Duration::from_secs(4),
            ..LockConfig::default()
        };
        assert_eq!(short.renew_interval(), Duration::from_secs(1));
    }

    #[test]
    fn the_owner_is_user_at_host_colon_pid() {
        let owner = default_owner();
        let (user_host, pid) = owner.rsplit_once(':').unwrap();
        assert_eq!(pid, std::process::id().to_string());
        assert!(user_host.contains('@'), "{owner}");
    }
}
