//! The history of a stack's deploys, destroys and rollbacks (`cdkd events`): one small JSON
//! object per finished operation, written once and never rewritten, so two runs never contend
//! for it and no lock guards it.
//!
//! ```text
//! cdkd-events/{prefix}/{stack}/{region}/{startedAtMillis:013}-{operation}.json
//! ```
//! Outside `{prefix}/`, so listing the stacks' records never pages through the history.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::backend::StateBackend;
use super::StateError;

/// The root of every event key.
const ROOT: &str = "cdkd-events";

/// What kind of operation an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Operation {
    /// `cdkd deploy`.
    Deploy,
    /// `cdkd destroy`.
    Destroy,
    /// `cdkd rollback`.
    Rollback,
}

impl Operation {
    /// The name used in keys and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Deploy => "deploy",
            Operation::Destroy => "destroy",
            Operation::Rollback => "rollback",
        }
    }
}

/// One resource the operation changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangedResource {
    /// The logical id.
    pub logical_id: String,
    /// The type.
    pub resource_type: String,
    /// What happened, as the progress line said it (`created …`, `deleted …`, `failed: …`).
    pub action: String,
}

/// One finished operation on one stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEvent {
    /// The event format.
    pub version: u32,
    /// The stack (a nested child is `parent~logicalId`).
    pub stack_name: String,
    /// The region.
    pub region: String,
    /// Deploy, destroy or rollback.
    pub operation: Operation,
    /// `succeeded` or `failed`.
    pub outcome: String,
    /// Who ran it: the caller's IAM ARN (`unknown` when STS could not say).
    pub who: String,
    /// When it started (Unix milliseconds).
    pub started_at: i64,
    /// How long it took.
    pub duration_ms: u64,
    /// Counts: created, updated, replaced, deleted, unchanged, failed, skipped.
    pub summary: Value,
    /// What changed, in the order it happened.
    #[serde(default)]
    pub changes: Vec<ChangedResource>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The format [`HistoryEvent::version`] writes.
pub const EVENT_VERSION: u32 = 1;

/// Where the events of `stack` in `region` live (`None`: every stack or region).
fn scope(prefix: &str, stack: Option<&str>, region: Option<&str>) -> String {
    match (stack, region) {
        (Some(stack), Some(region)) => format!("{ROOT}/{prefix}/{stack}/{region}/"),
        (Some(stack), None) => format!("{ROOT}/{prefix}/{stack}/"),
        _ => format!("{ROOT}/{prefix}/"),
    }
}

/// The key of `event`.
fn key(prefix: &str, event: &HistoryEvent) -> String {
    format!(
        "{}{:013}-{}.json",
        scope(prefix, Some(&event.stack_name), Some(&event.region)),
        event.started_at,
        event.operation.as_str()
    )
}

/// The (stack, region, started) an event key names, for sorting without reading it.
fn parse_key<'k>(prefix: &str, key: &'k str) -> Option<(&'k str, &'k str, &'k str)> {
    let rest = key.strip_prefix(&scope(prefix, None, None))?;
    let (stack, rest) = rest.split_once('/')?;
    let (region, file) = rest.split_once('/')?;
    file.ends_with(".json").then_some((stack, region, file))
}

/// Keys of the events in scope, newest first (the file name starts with the start time).
async fn keys_newest_first(
    backend: &StateBackend,
    stack: Option<&str>,
    region: Option<&str>,
) -> Result<Vec<String>, StateError> {
    let prefix = backend.keys().prefix();
    let mut keys: Vec<String> = backend
        .list_keys(&scope(prefix, stack, region))
        .await?
        .into_iter()
        .filter(|k| parse_key(prefix, k).is_some_and(|(s, _, _)| stack.is_none_or(|x| x == s)))
        .collect();
    keys.sort_by(|a, b| {
        let file = |k: &str| parse_key(prefix, k).map(|(_, _, f)| f.to_string());
        file(b).cmp(&file(a))
    });
    Ok(keys)
}

/// Writes one event.
#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
pub async fn write(backend: &StateBackend, event: &HistoryEvent) -> Result<(), StateError> {
    let body = serde_json::to_vec_pretty(event).expect("an event serializes");
    backend
        .put_json(&key(backend.keys().prefix(), event), body)
        .await
}

/// The newest `limit` events of `stack` (every stack when `None`), newest first; an event that
/// cannot be read is skipped with a warning naming its key.
pub async fn list(
    backend: &StateBackend,
    stack: Option<&str>,
    region: Option<&str>,
    limit: usize,
) -> Result<Vec<HistoryEvent>, StateError> {
    let keys = keys_newest_first(backend, stack, region).await?;
    let reads = futures_util::future::join_all(
        keys.iter()
            .take(limit)
            .map(|key| async move { (key, backend.get_object(key).await) }),
    )
    .await;
    let mut events = Vec::new();
    for (key, read) in reads {
        match read? {
            Some(object) => match serde_json::from_slice::<HistoryEvent>(&object.body) {
                Ok(event) => events.push(event),
                Err(err) => tracing::warn!("skipping unreadable event {key}: {err}"),
            },
            None => continue,
        }
    }
    Ok(events)
}

/// Deletes all but the newest `keep` events of each (stack, region) in scope; answers how
/// many it deleted.
pub async fn prune(
    backend: &StateBackend,
    stack: Option<&str>,
    region: Option<&str>,
    keep: usize,
) -> Result<usize, StateError> {
    let prefix = backend.keys().prefix();
    let keys = keys_newest_first(backend, stack, region).await?;
    let mut seen: std::collections::BTreeMap<(String, String), usize> = Default::default();
    let mut doomed = Vec::new();
    for key in keys {
        let Some((stack, region, _)) = parse_key(prefix, &key) else {
            continue;
        };
        let count = seen.entry((stack.into(), region.into())).or_default();
        *count += 1;
        if *count > keep {
            doomed.push(key);
        }
    }
    for key in &doomed {
        backend.delete_object(key).await?;
    }
    Ok(doomed.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(stack: &str, started_at: i64, operation: Operation) -> HistoryEvent {
        HistoryEvent {
            version: EVENT_VERSION,
            stack_name: stack.into(),
            region: "us-east-1".into(),
            operation,
            outcome: "succeeded".into(),
            who: "arn:aws:iam::123456789012:user/dev".into(),
            started_at,
            duration_ms: 1200,
            summary: serde_json::json!({"created": 1}),
            changes: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn keys_sort_by_time_and_say_the_stack_and_region() {
        let early = key("cdkd", &event("App", 1_700_000_000_000, Operation::Deploy));
        let late = key("cdkd", &event("App", 1_800_000_000_000, Operation::Destroy));
        assert_eq!(
            early,
            "cdkd-events/cdkd/App/us-east-1/1700000000000-deploy.json"
        );
        assert!(late > early);
        assert_eq!(
            parse_key("cdkd", &late),
            Some(("App", "us-east-1", "1800000000000-destroy.json"))
        );
        // A child stack's key, and a key of another prefix, are told apart.
        let child = key("cdkd", &event("App~Db", 5, Operation::Rollback));
        assert_eq!(parse_key("cdkd", &child).map(|k| k.0), Some("App~Db"));
        assert_eq!(parse_key("other", &child), None);
    }

    #[test]
    fn an_event_round_trips_in_camel_case() {
        let written = serde_json::to_value(event("App", 7, Operation::Rollback)).unwrap();
        assert_eq!(written["operation"], "rollback");
        assert_eq!(written["stackName"], "App");
        assert_eq!(written["durationMs"], 1200);
        assert!(written.get("error").is_none());
        let read: HistoryEvent = serde_json::from_value(written).unwrap();
        assert_eq!(read, event("App", 7, Operation::Rollback));
    }
}
