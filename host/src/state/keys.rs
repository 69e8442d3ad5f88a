//! Where each object lives in the state bucket.
//!
//! ```text
//! {prefix}/{stack}/{region}/state.json            the record (v2+)
//! {prefix}/{stack}/{region}/lock.json             the lock
//! {prefix}/{stack}/{region}/rollback-journal.json the rollback journal
//! {prefix}/{stack}/state.json                     legacy v1 record (read only)
//! cdkd-bootstrap/{region}.json                    the asset-storage bootstrap marker
//! ```
//! A nested child stack is named `{parent}~{logicalId}`.

/// The default `--state-prefix`.
pub const DEFAULT_PREFIX: &str = "cdkd";

const STATE_FILE: &str = "state.json";
const LOCK_FILE: &str = "lock.json";
const JOURNAL_FILE: &str = "rollback-journal.json";

/// Key builder for one state prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateKeys {
    prefix: String,
}

/// A (stack, region) found in the bucket.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StackRef {
    /// The stack name (a child is `parent~logicalId`).
    pub stack: String,
    /// The region; `None` for a legacy v1 key, whose region is inside the body.
    pub region: Option<String>,
}

impl StateKeys {
    /// Keys under `prefix` (surrounding slashes are ignored).
    pub fn new(prefix: &str) -> StateKeys {
        StateKeys {
            prefix: prefix.trim_matches('/').to_string(),
        }
    }

    /// The prefix, without slashes.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `{prefix}/` — everything cdkd stores about stacks.
    pub fn root(&self) -> String {
        format!("{}/", self.prefix)
    }

    /// The stack's state record.
    pub fn state(&self, stack: &str, region: &str) -> String {
        format!("{}/{stack}/{region}/{STATE_FILE}", self.prefix)
    }

    /// The stack's lock.
    pub fn lock(&self, stack: &str, region: &str) -> String {
        format!("{}/{stack}/{region}/{LOCK_FILE}", self.prefix)
    }

    /// The stack's rollback journal.
    pub fn journal(&self, stack: &str, region: &str) -> String {
        format!("{}/{stack}/{region}/{JOURNAL_FILE}", self.prefix)
    }

    /// The legacy (schema v1) record, not region-scoped.
    pub fn legacy_state(&self, stack: &str) -> String {
        format!("{}/{stack}/{STATE_FILE}", self.prefix)
    }

    /// Recognises a state-record key: `{prefix}/{stack}/{region}/state.json` or the legacy
    /// `{prefix}/{stack}/state.json`.
    pub fn parse_state_key(&self, key: &str) -> Option<StackRef> {
        let rest = key.strip_prefix(&self.root())?;
        let parts: Vec<&str> = rest.split('/').collect();
        match parts.as_slice() {
            [stack, region, STATE_FILE] if !stack.is_empty() && !region.is_empty() => {
                Some(StackRef {
                    stack: (*stack).to_string(),
                    region: Some((*region).to_string()),
                })
            }
            [stack, STATE_FILE] if !stack.is_empty() => Some(StackRef {
                stack: (*stack).to_string(),
                region: None,
            }),
            _ => None,
        }
    }

    /// Whether `key` is some stack's lock.
    pub fn is_lock_key(&self, key: &str) -> bool {
        key.starts_with(&self.root()) && key.ends_with(&format!("/{LOCK_FILE}"))
    }
}

/// The state name of a nested child stack.
pub fn child_stack_name(parent: &str, logical_id: &str) -> String {
    format!("{parent}~{logical_id}")
}

/// The asset-storage bootstrap marker of a region (outside the stack prefix on purpose).
pub fn bootstrap_marker(region: &str) -> String {
    format!("cdkd-bootstrap/{region}.json")
}

/// The folder holding every bootstrap marker.
pub const BOOTSTRAP_MARKER_PREFIX: &str = "cdkd-bootstrap/";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_spec_layout() {
        let keys = StateKeys::new("/cdkd/");
        assert_eq!(
            keys.state("App", "us-east-1"),
            "cdkd/App/us-east-1/state.json"
        );
        assert_eq!(
            keys.lock("App", "us-east-1"),
            "cdkd/App/us-east-1/lock.json"
        );
        assert_eq!(
            keys.journal("App", "eu-west-1"),
            "cdkd/App/eu-west-1/rollback-journal.json"
        );
        assert_eq!(keys.legacy_state("App"), "cdkd/App/state.json");
        assert_eq!(child_stack_name("App", "Nested"), "App~Nested");
        assert_eq!(
            bootstrap_marker("ap-northeast-1"),
            "cdkd-bootstrap/ap-northeast-1.json"
        );
    }

    #[test]
    fn state_keys_are_recognised_and_others_are_not() {
        let keys = StateKeys::new("cdkd");
        assert_eq!(
            keys.parse_state_key("cdkd/App~Nested/us-east-1/state.json"),
            Some(StackRef {
                stack: "App~Nested".into(),
                region: Some("us-east-1".into())
            })
        );
        assert_eq!(
            keys.parse_state_key("cdkd/Old/state.json"),
            Some(StackRef {
                stack: "Old".into(),
                region: None
            })
        );
        for other in [
            "cdkd/App/us-east-1/lock.json",
            "cdkd/App/us-east-1/rollback-journal.json",
            "cdkd/App/us-east-1/deployments/x/state.json",
            "other/App/us-east-1/state.json",
            "cdkd-bootstrap/us-east-1.json",
        ] {
            assert_eq!(keys.parse_state_key(other), None, "{other}");
        }
        assert!(keys.is_lock_key("cdkd/App/us-east-1/lock.json"));
        assert!(!keys.is_lock_key("cdkd/App/us-east-1/state.json"));
    }
}
