//! The no-change fast path: a deploy that would call nothing and write nothing ends without
//! taking the stack lock.
//!
//! It is tried when this machine last deployed exactly this template and these parameters to
//! the stack ([`RememberedDeploys`]), or when nothing is remembered at all (library callers): a
//! template that changed since goes straight to the lock, one round trip sooner.
//!
//! The record, its journal and its lock are read at once. When nobody holds (or left) the lock,
//! no interrupted run left intents, the plan changes nothing, and the record already says
//! everything a deploy would write (each resource's layer and dependencies, its baseline when
//! it has a reader, the attributes the template reads, the outputs and what they read), the run
//! ends there, reported as the normal path reports it. Anything else takes the normal path,
//! which reads everything again under the lock.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use super::environment::LiveEnvironment;
use super::finish::OutputsRecord;
use super::run::RunRecord;
use super::{DeployOptions, Deployed, StackInput};
use crate::analyzer::no_echo::NoEcho;
use crate::deployment::engine::Engine;
use crate::deployment::external::StateSnapshot;
use crate::deployment::ledger::Ledger;
use crate::deployment::report::Summary;
use crate::deployment::secrets::RunSecrets;
use crate::provisioning::cloud_control::has_attribute;
use crate::state::backend::StateLocation;
use crate::state::schema::{ProvisionedBy, ResourceState};

impl Engine<'_> {
    /// The finished deploy when nothing would change, else `None` (take the normal path).
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    pub(super) async fn unchanged(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        options: &DeployOptions,
        started: Instant,
    ) -> anyhow::Result<Option<Deployed>> {
        let context = &input.context;
        let (stack, region) = (context.stack_name.as_str(), context.region.as_str());
        if !input.children.is_empty() || !options.recreate.is_empty() {
            return Ok(None);
        }
        let (stored, journal, locked) = tokio::join!(
            self.store.load(stack, region),
            self.store.read_journal(stack, region),
            self.locks.is_locked(stack, region)
        );
        let (Some(stored), None, false) = (stored?, journal?, locked?) else {
            return Ok(None);
        };
        if stored.location != StateLocation::Current {
            return Ok(None);
        }
        let recorded = &stored.state;
        // A plan or routing that fails is reported by the normal path, with its context.
        let Ok(planned) = self.plan_against(input, snapshot, Some(recorded)).await else {
            return Ok(None);
        };
        if planned.has_changes() {
            return Ok(None);
        }
        let Ok(decisions) = self.route(
            input,
            &planned,
            Some(recorded),
            &options.allowed,
            &options.recreate,
        ) else {
            return Ok(None);
        };
        let needed = input.template.referenced_attributes(&input.parameters);
        for logical_id in planned.graph.order() {
            let Some(record) = recorded.resources.get(logical_id) else {
                return Ok(None);
            };
            let node = planned
                .graph
                .node(logical_id)
                .expect("ordered ids are nodes");
            let dependencies: Vec<String> = node.dependencies.iter().cloned().collect();
            let attributes = record.attributes.clone().unwrap_or_default();
            let stale = record.provisioned_by != decisions[logical_id].provisioned_by()
                || record.dependencies.as_ref() != Some(&dependencies)
                || (options.capture_observed
                    && record.observed_properties.is_none()
                    && self.has_reader(record))
                || (record.provisioned_by == Some(ProvisionedBy::CcApi)
                    && needed.get(logical_id).is_some_and(|names| {
                        names.iter().any(|name| !has_attribute(&attributes, name))
                    }));
            if stale {
                return Ok(None);
            }
        }
        let ledger = Ledger::new(self.store.clone(), stack, region, Some(stored.clone()));
        let run = Mutex::new(RunRecord::default());
        let secrets = RunSecrets::with_no_echo(NoEcho::of(&input.template, &input.parameters));
        let env = LiveEnvironment {
            context,
            ledger: &ledger,
            snapshot,
            run: &run,
            secrets: &secrets,
            for_outputs: true,
        };
        let Ok(outputs) = OutputsRecord::resolve(input, &env, &secrets, &run) else {
            return Ok(None);
        };
        let mut updated = recorded.clone();
        outputs.apply(&mut updated);
        if updated != *recorded {
            return Ok(None);
        }
        let summary = Summary {
            unchanged: planned.graph.order().len(),
            ..Summary::default()
        };
        (self.reporter).finish(stack, &summary, started.elapsed(), &recorded.outputs);
        Ok(Some(Deployed {
            state: recorded.clone(),
            secret_outputs: outputs.secret_outputs,
        }))
    }

    /// Whether a deploy would read `record` back as its baseline (Cloud Control reads every
    /// type; a plugin only the types it declares a reader for).
    fn has_reader(&self, record: &ResourceState) -> bool {
        if record.resource_type == crate::provisioning::preflight::NESTED_STACK {
            return false;
        }
        record.provisioned_by == Some(ProvisionedBy::CcApi)
            || self
                .registry
                .schema(&record.resource_type)
                .is_some_and(|schema| {
                    schema.supports(cdkd_provider_api::protocol::operation::READ_CURRENT_STATE)
                })
    }
}

/// What this machine deployed last, per stack: a digest of its template and parameters, kept in
/// the facts file next to the state bucket's name and endpoint.
#[derive(Debug, Clone)]
pub struct RememberedDeploys {
    facts: crate::aws_facts::FactsFile,
    endpoint: String,
    bucket: String,
}

impl RememberedDeploys {
    /// Deploys to the state `bucket` of `aws`, remembered in its facts file.
    pub fn for_bucket(aws: &crate::aws_env::AwsEnvironment, bucket: &str) -> RememberedDeploys {
        RememberedDeploys::new(
            crate::aws_facts::FactsFile::of(aws),
            aws.endpoint_url(),
            bucket,
        )
    }

    /// Deploys to `bucket` at `endpoint` (the AWS default when none), remembered in `facts`.
    pub fn new(
        facts: crate::aws_facts::FactsFile,
        endpoint: Option<String>,
        bucket: &str,
    ) -> RememberedDeploys {
        RememberedDeploys {
            facts,
            endpoint: endpoint.unwrap_or_default(),
            bucket: bucket.to_string(),
        }
    }

    fn scope<'a>(&'a self, stack: &'a str, region: &'a str) -> [&'a str; 4] {
        [&self.endpoint, &self.bucket, stack, region]
    }

    /// Whether `input` is what was deployed last from here.
    pub fn is_last(&self, input: &StackInput) -> bool {
        let scope = self.scope(&input.context.stack_name, &input.context.region);
        self.facts.deployed(&scope).as_deref() == Some(digest(input).as_str())
    }

    /// `input` was just deployed.
    pub fn remember(&self, input: &StackInput) {
        let scope = self.scope(&input.context.stack_name, &input.context.region);
        self.facts.remember_deployed(&scope, &digest(input));
    }

    /// The stack was destroyed: its next deploy changes everything.
    pub fn forget(&self, stack: &str, region: &str) {
        self.facts.remember_deployed(&self.scope(stack, region), "");
    }
}

/// A digest of what a stack's plan depends on from the app: its template, parameters and
/// nested stacks. Built from their `Debug` text, which is deterministic for one cdkd build
/// (ordered maps, templates in file order); another build may differ, which only costs one
/// deploy its fast-path attempt. `NoEcho` values are masked: the digest is kept on disk, and a
/// changed one still shows in the fast path's plan (its fingerprint).
fn digest(input: &StackInput) -> String {
    use sha2::{Digest, Sha256};
    fn feed(hasher: &mut Sha256, input: &StackInput) {
        let no_echo = NoEcho::of(&input.template, &input.parameters);
        let parameters: BTreeMap<&String, Value> = (input.parameters.iter())
            .map(|(name, value)| (name, no_echo.mask(value)))
            .collect();
        hasher.update(format!("{:?}\n{:?}", input.template, parameters).as_bytes());
        for (id, child) in &input.children {
            hasher.update(id.as_bytes());
            feed(hasher, child);
        }
    }
    let mut hasher = Sha256::new();
    feed(&mut hasher, input);
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
