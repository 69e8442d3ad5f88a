//! Drift: reading every recorded resource of a stack back from AWS and comparing it with its
//! baseline; accepting AWS's values into the record (`--accept`), pushing the recorded ones
//! back through the provider's normal update (`--revert`), and refreshing the baselines
//! without a deploy (`cdkd state refresh-observed`).
//!
//! Detection takes no lock (it only reads). Every writer takes the stack lock, reads AWS again
//! under it and saves conditionally on the record it read.

use std::collections::BTreeMap;

use futures_util::StreamExt;
use serde_json::{Map, Value};

use super::engine::Engine;
use super::secrets::masked_like;
use crate::analyzer::drift::{
    accepted, compare, reverted, without_sibling_rules, Difference, Refused,
};
use crate::provisioning::operations::{read_record, Observation, ProviderSet, UpdateCall};
use crate::provisioning::preflight::NESTED_STACK;
use crate::provisioning::read_budget::ReadPurpose;
use crate::provisioning::registry::is_custom_resource;
use crate::state::backend::StoredState;
use crate::state::schema::ResourceState;

/// What one resource's comparison found.
#[derive(Debug, Clone, PartialEq)]
pub enum DriftStatus {
    /// AWS matches the baseline.
    InSync,
    /// AWS differs at these paths.
    Drifted(Vec<Difference>),
    /// The resource no longer exists in AWS.
    Deleted,
    /// It could not be read: no reader for its type, or the read failed (the reason).
    NotComparable(String),
    /// Not compared by design: a custom resource (its handler owns what it made) or a nested
    /// stack (its resources are compared in its own record).
    Skipped,
}

/// One resource's drift.
#[derive(Debug, Clone)]
pub struct ResourceDrift {
    /// Its logical id.
    pub logical_id: String,
    /// Its type.
    pub resource_type: String,
    /// Its physical id.
    pub physical_id: String,
    /// What the comparison found.
    pub status: DriftStatus,
    /// Positions recorded masked (`NoEcho`), which cannot be compared.
    pub masked: usize,
    /// Whether the baseline was `observedProperties` (else `properties`).
    pub observed_baseline: bool,
}

/// One stack's drift, with what a writer needs.
#[derive(Debug, Clone)]
pub struct StackDrift {
    /// The record's name.
    pub stack: String,
    /// Its region.
    pub region: String,
    /// Every recorded resource, by logical id.
    pub resources: Vec<ResourceDrift>,
    /// The live properties read, by logical id.
    live: BTreeMap<String, Map<String, Value>>,
    /// The records as compared (a security group without its standalone rules' entries).
    compared: BTreeMap<String, ResourceState>,
    /// The record compared, for a conditional save.
    stored: Option<StoredState>,
}

impl StackDrift {
    /// Whether any resource drifted or was deleted.
    pub fn drifted(&self) -> bool {
        self.resources
            .iter()
            .any(|r| matches!(r.status, DriftStatus::Drifted(_) | DriftStatus::Deleted))
    }

    /// Whether any resource could not be compared.
    pub fn incomplete(&self) -> bool {
        (self.resources.iter()).any(|r| matches!(r.status, DriftStatus::NotComparable(_)))
    }
}

/// What `--accept` did to one resource.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The resource.
    pub logical_id: String,
    /// Paths written from AWS's values.
    pub paths: Vec<String>,
    /// Paths left as recorded, and why.
    pub refused: Vec<Refused>,
}

/// What `--revert` did to one resource.
#[derive(Debug, Clone)]
pub enum Reverted {
    /// Updated back to its baseline.
    Restored(String),
    /// Deleted out of band; its record was dropped so the next deploy creates it again.
    Forgotten(String),
    /// Deleted out of band and left as it is (without `--recreate-deleted`).
    LeftDeleted(String),
    /// The update failed or was refused (the reason).
    Failed(String, String),
}

/// What refreshing the baselines of one stack did.
#[derive(Debug, Clone, Default)]
pub struct Refreshed {
    /// Resources whose `observedProperties` were written.
    pub refreshed: Vec<String>,
    /// Resources with no reader (or skipped types).
    pub unsupported: Vec<String>,
    /// Resources deleted out of band.
    pub deleted: Vec<String>,
    /// Reads that failed: logical id and error.
    pub failed: Vec<(String, String)>,
}

impl Engine<'_> {
    /// Compares every recorded resource of `stack` with AWS (no lock: nothing is written).
    pub async fn detect_drift(
        &self,
        stack: &str,
        region: &str,
        concurrency: usize,
    ) -> anyhow::Result<StackDrift> {
        let stored = self.store.load(stack, region).await?;
        let records: Vec<(String, ResourceState)> = stored
            .as_ref()
            .map(|s| s.state.resources.clone().into_iter().collect())
            .unwrap_or_default();
        let reads = self.read_records(region, &records, concurrency).await?;
        let mut drift = StackDrift {
            stack: stack.to_string(),
            region: region.to_string(),
            resources: Vec::new(),
            live: BTreeMap::new(),
            compared: BTreeMap::new(),
            stored,
        };
        for ((logical_id, record), read) in records.iter().zip(reads) {
            let mut record = record.clone();
            let read = read.map(|(provider, read)| {
                let read = read.map(|observed| match observed {
                    Observation::Live(mut live) => {
                        own_rules_only(&mut record, &mut live, &records);
                        Observation::Live(live)
                    }
                    other => other,
                });
                (provider, read)
            });
            let mut entry = ResourceDrift {
                logical_id: logical_id.clone(),
                resource_type: record.resource_type.clone(),
                physical_id: record.physical_id.clone(),
                status: DriftStatus::Skipped,
                masked: 0,
                observed_baseline: record.observed_properties.is_some(),
            };
            entry.status = match read {
                None => DriftStatus::Skipped,
                Some((_, Ok(Observation::Live(live)))) => {
                    let comparison = compare(
                        &record.properties,
                        record.observed_properties.as_ref(),
                        &live,
                    );
                    entry.masked = comparison.masked.len();
                    drift.live.insert(logical_id.clone(), live);
                    drift.compared.insert(logical_id.clone(), record.clone());
                    if comparison.differences.is_empty() {
                        DriftStatus::InSync
                    } else {
                        DriftStatus::Drifted(comparison.differences)
                    }
                }
                Some((_, Ok(Observation::Gone))) => DriftStatus::Deleted,
                Some((provider, Ok(Observation::NoReader))) => DriftStatus::NotComparable(format!(
                    "{provider} has no reader for {}",
                    record.resource_type
                )),
                Some((_, Err(err))) => {
                    DriftStatus::NotComparable(format!("reading it failed: {err}"))
                }
            };
            drift.resources.push(entry);
        }
        Ok(drift)
    }

    /// `--accept`: writes AWS's values into each drifted resource's baseline (and into its
    /// `properties` where the template declared the key, so `cdkd diff` shows what the
    /// template would change back). Runs under the stack lock, on a fresh comparison.
    pub async fn accept_drift(
        &self,
        stack: &str,
        region: &str,
        concurrency: usize,
    ) -> anyhow::Result<(StackDrift, Vec<Accepted>)> {
        let work = self.accept_locked(stack, region, concurrency);
        self.locked(stack, region, "drift-accept", work).await
    }

    async fn accept_locked(
        &self,
        stack: &str,
        region: &str,
        concurrency: usize,
    ) -> anyhow::Result<(StackDrift, Vec<Accepted>)> {
        let drift = self.detect_drift(stack, region, concurrency).await?;
        let Some(stored) = drift.stored.clone() else {
            return Ok((drift, Vec::new()));
        };
        let mut state = stored.state.clone();
        let mut report = Vec::new();
        for entry in &drift.resources {
            let DriftStatus::Drifted(differences) = &entry.status else {
                continue;
            };
            let (Some(record), Some(compared)) = (
                state.resources.get_mut(&entry.logical_id),
                drift.compared.get(&entry.logical_id),
            ) else {
                continue;
            };
            let baseline = compared
                .observed_properties
                .clone()
                .unwrap_or_else(|| compared.properties.clone());
            let (new_baseline, refused) = accepted(&baseline, differences);
            let taken: Vec<&Difference> = differences
                .iter()
                .filter(|d| !refused.iter().any(|r| r.path == d.dotted()))
                .collect();
            if record.observed_properties.is_some() {
                record.observed_properties = Some(new_baseline);
                // The template's own keys: what is deployed is now AWS's value.
                let declared: Vec<Difference> = taken
                    .iter()
                    .filter(|d| record.properties.contains_key(&d.path[0]))
                    .map(|d| (*d).clone())
                    .collect();
                let (properties, _) = accepted(&record.properties, &declared);
                record.properties = properties;
            } else {
                record.properties = new_baseline;
            }
            report.push(Accepted {
                logical_id: entry.logical_id.clone(),
                paths: taken.iter().map(|d| d.dotted()).collect(),
                refused,
            });
        }
        if report.iter().any(|a| !a.paths.is_empty()) {
            self.store
                .save(stack, region, &mut state, Some(&stored))
                .await?;
        }
        Ok((drift, report))
    }

    /// `--revert`: updates each drifted resource back to its baseline through its provider,
    /// then records what AWS holds afterwards as the new baseline. A resource deleted out of
    /// band is reported; with `recreate_deleted` its record is dropped, so that the next
    /// `cdkd deploy` creates it again through the normal (write-ahead, idempotent) create.
    pub async fn revert_drift(
        &self,
        stack: &str,
        region: &str,
        concurrency: usize,
        recreate_deleted: bool,
    ) -> anyhow::Result<(StackDrift, Vec<Reverted>)> {
        let work = self.revert_locked(stack, region, concurrency, recreate_deleted);
        self.locked(stack, region, "drift-revert", work).await
    }

    async fn revert_locked(
        &self,
        stack: &str,
        region: &str,
        concurrency: usize,
        recreate_deleted: bool,
    ) -> anyhow::Result<(StackDrift, Vec<Reverted>)> {
        let drift = self.detect_drift(stack, region, concurrency).await?;
        let Some(stored) = drift.stored.clone() else {
            return Ok((drift, Vec::new()));
        };
        let records = &stored.state.resources;
        let owned: Vec<&ResourceState> = records.values().collect();
        let providers = self.owners_of(region, &owned, &[]).await?;
        let providers = providers.as_ref();
        let work = drift.resources.iter().filter_map(|entry| {
            let record = match &entry.status {
                DriftStatus::Drifted(_) => drift.compared.get(&entry.logical_id)?,
                _ => records.get(&entry.logical_id)?,
            };
            match &entry.status {
                DriftStatus::Drifted(differences) => Some(Work::Restore(
                    entry.logical_id.clone(),
                    record,
                    differences,
                    drift.live.get(&entry.logical_id)?,
                )),
                DriftStatus::Deleted => Some(Work::Deleted(entry.logical_id.clone())),
                _ => None,
            }
        });
        let outcomes: Vec<(Reverted, Option<Map<String, Value>>)> =
            futures_util::stream::iter(work)
                .map(|work| async move {
                    match work {
                        Work::Restore(logical_id, record, differences, live) => {
                            restore(providers, stack, &logical_id, record, differences, live).await
                        }
                        Work::Deleted(logical_id) if recreate_deleted => {
                            (Reverted::Forgotten(logical_id), None)
                        }
                        Work::Deleted(logical_id) => (Reverted::LeftDeleted(logical_id), None),
                    }
                })
                .buffer_unordered(concurrency.max(1))
                .collect()
                .await;
        let mut state = stored.state.clone();
        let mut changed = false;
        for (outcome, observed) in &outcomes {
            match (outcome, observed) {
                (Reverted::Restored(id), Some(observed)) => {
                    if let Some(record) = state.resources.get_mut(id) {
                        record.observed_properties = Some(observed.clone());
                        changed = true;
                    }
                }
                (Reverted::Forgotten(id), _) => {
                    state.resources.remove(id);
                    changed = true;
                }
                _ => {}
            }
        }
        if changed {
            self.store
                .save(stack, region, &mut state, Some(&stored))
                .await?;
        }
        let mut outcomes: Vec<Reverted> = outcomes.into_iter().map(|(o, _)| o).collect();
        outcomes.sort_by_key(|o| match o {
            Reverted::Restored(id)
            | Reverted::Forgotten(id)
            | Reverted::LeftDeleted(id)
            | Reverted::Failed(id, _) => id.clone(),
        });
        Ok((drift, outcomes))
    }

    /// `cdkd state refresh-observed`: reads every recorded resource and writes what AWS holds
    /// as its `observedProperties`, under the stack lock.
    pub async fn refresh_observed(
        &self,
        stack: &str,
        region: &str,
        concurrency: usize,
    ) -> anyhow::Result<Option<Refreshed>> {
        let work = self.refresh_locked(stack, region, concurrency);
        self.locked(stack, region, "state-refresh-observed", work)
            .await
    }

    async fn refresh_locked(
        &self,
        stack: &str,
        region: &str,
        concurrency: usize,
    ) -> anyhow::Result<Option<Refreshed>> {
        let Some(stored) = self.store.load(stack, region).await? else {
            return Ok(None);
        };
        let records: Vec<(String, ResourceState)> =
            stored.state.resources.clone().into_iter().collect();
        let reads = self.read_records(region, &records, concurrency).await?;
        let mut state = stored.state.clone();
        let mut report = Refreshed::default();
        for ((logical_id, record), read) in records.iter().zip(reads) {
            match read.map(|(_, read)| read) {
                Some(Ok(Observation::Live(live))) => {
                    if let Some(current) = state.resources.get_mut(logical_id) {
                        current.observed_properties = Some(masked_like(record, live));
                    }
                    report.refreshed.push(logical_id.clone());
                }
                Some(Ok(Observation::Gone)) => report.deleted.push(logical_id.clone()),
                None | Some(Ok(Observation::NoReader)) => {
                    report.unsupported.push(logical_id.clone())
                }
                Some(Err(err)) => report.failed.push((logical_id.clone(), err.to_string())),
            }
        }
        if !report.refreshed.is_empty() {
            self.store
                .save(stack, region, &mut state, Some(&stored))
                .await?;
        }
        Ok(Some(report))
    }
}

/// A security group's record and live state without the entries of the rules its stack's
/// standalone `SecurityGroupIngress` / `Egress` resources own.
fn own_rules_only(
    record: &mut ResourceState,
    live: &mut Map<String, Value>,
    records: &[(String, ResourceState)],
) {
    if record.resource_type != "AWS::EC2::SecurityGroup" {
        return;
    }
    let siblings = || {
        records
            .iter()
            .map(|(_, r)| (r.resource_type.as_str(), &r.properties))
    };
    without_sibling_rules(&record.physical_id, live, siblings());
    if let Some(observed) = record.observed_properties.as_mut() {
        without_sibling_rules(&record.physical_id.clone(), observed, siblings());
    }
}

enum Work<'a> {
    Restore(
        String,
        &'a ResourceState,
        &'a [Difference],
        &'a Map<String, Value>,
    ),
    Deleted(String),
}

/// Updates one resource back to its baseline, then reads it again as the new baseline.
async fn restore(
    providers: &dyn ProviderSet,
    stack: &str,
    logical_id: &str,
    record: &ResourceState,
    differences: &[Difference],
    live: &Map<String, Value>,
) -> (Reverted, Option<Map<String, Value>>) {
    let baseline = record
        .observed_properties
        .as_ref()
        .unwrap_or(&record.properties);
    let desired = match reverted(baseline, live, differences) {
        Ok(desired) => desired,
        Err(reason) => {
            return (
                Reverted::Failed(logical_id.to_string(), reason.to_string()),
                None,
            )
        }
    };
    let provider = providers.for_record(record);
    let naming_stack = crate::provisioning::names::stack_for_names(stack);
    let updated = provider
        .update(UpdateCall {
            resource_type: &record.resource_type,
            logical_id,
            stack: &naming_stack,
            physical_id: &record.physical_id,
            previous: live,
            desired: &desired,
            needed: &[],
        })
        .await;
    if let Err(err) = updated {
        return (
            Reverted::Failed(logical_id.to_string(), err.to_string()),
            None,
        );
    }
    let observed = match read_record(provider, logical_id, record, ReadPurpose::Baseline).await {
        Ok(Observation::Live(now)) => Some(masked_like(record, now)),
        _ => None,
    };
    (Reverted::Restored(logical_id.to_string()), observed)
}

/// One record's read: its provider's label and what it found.
type Read = (
    String,
    Result<Observation, cdkd_provider_api::ProviderError>,
);

impl Engine<'_> {
    /// Reads each record through the provider that owns it (`None`: a type not compared by
    /// design), several at once, in order.
    async fn read_records(
        &self,
        region: &str,
        records: &[(String, ResourceState)],
        concurrency: usize,
    ) -> anyhow::Result<Vec<Option<Read>>> {
        let owned: Vec<&ResourceState> = records.iter().map(|(_, r)| r).collect();
        let providers = self.owners_of(region, &owned, &[]).await?;
        Ok(read_all(providers.as_ref(), records, concurrency).await)
    }
}

async fn read_all(
    providers: &dyn ProviderSet,
    records: &[(String, ResourceState)],
    concurrency: usize,
) -> Vec<Option<Read>> {
    futures_util::stream::iter(records.iter())
        .map(|(logical_id, record)| async move {
            if is_custom_resource(&record.resource_type) || record.resource_type == NESTED_STACK {
                return None;
            }
            let provider = providers.for_record(record);
            let read = read_record(provider, logical_id, record, ReadPurpose::Inspect).await;
            // Unmasked: `--revert` keeps AWS's own value at a masked position. Only paths
            // compared outside a mask are ever shown or written.
            Some((provider.label(), read))
        })
        .buffered(concurrency.max(1))
        .collect()
        .await
}
