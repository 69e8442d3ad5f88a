//! Values from other stacks' state records: `Fn::ImportValue` (through `exportNames`) and
//! `Fn::GetStackOutput`, for planning and deploying.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::analyzer::intrinsics::Lookup;
use crate::analyzer::plan::ExternalValues;
use crate::state::backend::StateBackend;
use crate::state::schema::StackState;
use crate::state::StateError;

/// Every stack record of the bucket, read once, answering cross-stack lookups.
#[derive(Debug, Clone, Default)]
pub struct StateSnapshot {
    records: BTreeMap<(String, String), StackState>,
    /// Stacks being deployed in this run that may not exist yet: their outputs are pending.
    pub pending: BTreeSet<String>,
    /// The plaintext of outputs that a stack deployed earlier in this run recorded masked
    /// (`NoEcho` data): handed to consumers of the same run, as the state spec says.
    secret_outputs: BTreeMap<(String, String), serde_json::Map<String, Value>>,
}

impl StateSnapshot {
    /// Reads every record, all at once (cross-stack lookups are rare enough that one scan per
    /// run is fine).
    pub async fn load(backend: &StateBackend) -> Result<StateSnapshot, StateError> {
        let mut records = BTreeMap::new();
        let reads = backend
            .list_stacks()
            .await?
            .into_iter()
            .filter_map(|found| {
                let region = found.region?;
                Some(async move {
                    let loaded = backend.load(&found.stack, &region).await;
                    (found.stack, region, loaded)
                })
            });
        for (stack, region, loaded) in futures_util::future::join_all(reads).await {
            // Another stack's unreadable record must not stop this one: it is reported, and a
            // reference to that stack then fails by name.
            match loaded {
                Ok(Some(stored)) => {
                    records.insert((stack, region), stored.state);
                }
                Ok(None) => {}
                Err(err @ StateError::Schema { .. }) => {
                    tracing::warn!("skipping the record of stack {stack} ({region}): {err}")
                }
                Err(err) => return Err(err),
            }
        }
        Ok(StateSnapshot {
            records,
            pending: BTreeSet::new(),
            secret_outputs: BTreeMap::new(),
        })
    }

    /// Replaces (or adds) one record, e.g. a producer deployed earlier in the same run.
    pub fn update(&mut self, state: StackState) {
        let region = state.region.clone().unwrap_or_default();
        self.records
            .insert((state.stack_name.clone(), region), state);
    }

    /// Keeps, for this run only, the plaintext of a stack's masked outputs.
    pub fn keep_secret_outputs(
        &mut self,
        stack: &str,
        region: &str,
        outputs: serde_json::Map<String, Value>,
    ) {
        if !outputs.is_empty() {
            self.secret_outputs
                .insert((stack.to_string(), region.to_string()), outputs);
        }
    }

    /// The plaintext of a masked output of a stack deployed earlier in this run.
    pub fn secret_output(&self, stack: &str, region: &str, output: &str) -> Option<&Value> {
        self.secret_outputs
            .get(&(stack.to_string(), region.to_string()))?
            .get(output)
    }

    /// The producer of an export in `region`, and its value.
    pub fn export(&self, region: &str, name: &str) -> Option<(&str, &Value)> {
        self.records
            .iter()
            .filter(|((_, r), _)| r == region)
            .find_map(|((stack, _), state)| {
                state
                    .importable_output_keys()
                    .contains(&name)
                    .then(|| (stack.as_str(), &state.outputs[name]))
            })
    }

    /// Every record: (stack, region, record).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &StackState)> {
        self.records
            .iter()
            .map(|((stack, region), state)| (stack.as_str(), region.as_str(), state))
    }

    /// A stack's record.
    pub fn record(&self, stack: &str, region: &str) -> Option<&StackState> {
        self.records.get(&(stack.to_string(), region.to_string()))
    }
}

/// The lookups of one consumer stack (its region) over a snapshot.
pub struct SnapshotLookups<'a> {
    /// The snapshot.
    pub snapshot: &'a StateSnapshot,
    /// The consumer's region.
    pub region: &'a str,
}

impl ExternalValues for SnapshotLookups<'_> {
    fn import_value(&self, export_name: &str) -> Lookup {
        match self.snapshot.export(self.region, export_name) {
            Some((_, value)) => Lookup::Known(value.clone()),
            None if !self.snapshot.pending.is_empty() => Lookup::Unknown,
            None => Lookup::Missing(format!(
                "no deployed stack in {} exports {export_name}; deploy the producer first",
                self.region
            )),
        }
    }

    fn stack_output(&self, stack: &str, region: &str, output: &str) -> Lookup {
        match self.snapshot.record(stack, region) {
            Some(state) => match state.outputs.get(output) {
                Some(value) => Lookup::Known(value.clone()),
                None if self.snapshot.pending.contains(stack) => Lookup::Unknown,
                None => Lookup::Missing(format!("stack {stack} ({region}) has no output {output}")),
            },
            None if self.snapshot.pending.contains(stack) => Lookup::Unknown,
            None => Lookup::Missing(format!(
                "stack {stack} has no state in {region}; deploy it first"
            )),
        }
    }

    fn availability_zones(&self, _region: &str) -> Lookup {
        // Answered by AWS at deploy time; a plan shows the zones as known after deploy.
        Lookup::Unknown
    }
}
