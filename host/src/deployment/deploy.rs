//! Deploying one stack: lock → load state → plan → pre-flight → execute (creates and updates
//! in dependency order, event-driven) → deletes (reverse order) → outputs → final save →
//! unlock. A failure rolls back what this deploy did (unless `--no-rollback`), and either way
//! the rollback journal records what `cdkd rollback` needs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cdkd_provider_api::host::PluginLibrary;
use cdkd_provider_api::ErrorKind;
use serde_json::{Map, Value};

use super::executor::{Executor, Outcome, Task};
use super::external::{SnapshotLookups, StateSnapshot};
use super::journal::{
    self, CreateIntent, FailedOperation, Operation, OperationKind, Reason, Segment,
};
use super::ledger::Ledger;
use super::reconcile;
use super::report::{Reporter, Summary};
use super::secrets::{RunSecrets, MASK};
use crate::analyzer::diff::Action;
use crate::analyzer::intrinsics::{Environment, Lookup, Resolver};
use crate::analyzer::plan::{plan, CreateOnlyProperties, StackContext};
use crate::analyzer::template::Template;
use crate::aws_env::AwsEnvironment;
use crate::provisioning::cloud_control::{has_attribute, CloudControlProvider, PollSchedule};
use crate::provisioning::create_only::KnownCreateOnly;
use crate::provisioning::names;
use crate::provisioning::provider::{AccountIds, CreateSpec, Provider};
use crate::provisioning::registry::{Registry, Route};
use crate::provisioning::router::{decide, AllowedDrops, Decision};
use crate::state::backend::StateBackend;
use crate::state::lock::LockManager;
use crate::state::schema::{
    ProvisionedBy, ResourceState, StackState, StateImportEntry, StateOutputReadEntry,
};

/// How to deploy.
#[derive(Debug, Clone)]
pub struct DeployOptions {
    /// Resources in flight at once.
    pub concurrency: usize,
    /// Undo what this deploy did when it fails.
    pub rollback: bool,
    /// Properties plugins may drop.
    pub allowed: AllowedDrops,
    /// Delete a replaced resource before creating its successor (for names that collide).
    pub replace_first: bool,
    /// The longest one resource operation may take.
    pub resource_timeout: Duration,
    /// Resources to destroy and re-create on the given layer (`--recreate-via-…`).
    pub recreate: BTreeMap<String, ProvisionedBy>,
}

impl Default for DeployOptions {
    fn default() -> DeployOptions {
        DeployOptions {
            concurrency: 10,
            rollback: true,
            allowed: AllowedDrops::default(),
            replace_first: false,
            resource_timeout: Duration::from_secs(30 * 60),
            recreate: BTreeMap::new(),
        }
    }
}

/// What the engine works with.
pub struct Engine<'a> {
    /// Loaded plugins.
    pub registry: &'a Registry,
    /// AWS settings.
    pub aws: &'a AwsEnvironment,
    /// Stack records.
    pub backend: &'a StateBackend,
    /// Stack locks.
    pub locks: &'a LockManager,
    /// Output.
    pub reporter: Reporter,
    /// Set on the first Ctrl-C / SIGTERM.
    pub stop: tokio::sync::watch::Receiver<bool>,
}

/// One stack to deploy.
pub struct StackInput {
    /// The stack's name and target.
    pub context: StackContext,
    /// Its template.
    pub template: Template,
    /// Parameter values beyond defaults.
    pub parameters: BTreeMap<String, Value>,
}

/// The providers of one stack's resources, initialised before any change.
pub struct Providers<'a> {
    plugins: BTreeMap<String, (&'a PluginLibrary, String)>,
    cloud_control: CloudControlProvider,
    registry: &'a Registry,
}

impl<'a> Providers<'a> {
    /// Cloud Control for `region`, plugins initialised for `plugin_types` (type → plugin).
    pub async fn prepare(
        registry: &'a Registry,
        aws: &AwsEnvironment,
        region: &str,
        plugin_types: &BTreeSet<String>,
        timeout: Duration,
    ) -> anyhow::Result<Providers<'a>> {
        let mut plugins = BTreeMap::new();
        for resource_type in plugin_types {
            let library = registry.plugin_for(resource_type, aws).await?;
            let name = match registry.route(resource_type) {
                Route::Plugin { name, .. } => name,
                _ => String::new(),
            };
            plugins.insert(resource_type.clone(), (library, name));
        }
        Ok(Providers {
            plugins,
            cloud_control: CloudControlProvider::new(
                aws,
                region,
                PollSchedule {
                    timeout,
                    ..PollSchedule::default()
                },
            ),
            registry,
        })
    }

    fn for_decision(&self, resource_type: &str, decision: &Decision) -> Provider<'_> {
        match decision {
            Decision::Plugin(_) => match self.plugins.get(resource_type) {
                Some((library, name)) => Provider::Plugin(library, name),
                None => Provider::CloudControl(&self.cloud_control),
            },
            _ => Provider::CloudControl(&self.cloud_control),
        }
    }

    /// The provider for `resource_type` on a given layer (for write-ahead intents).
    pub fn for_layer(&self, resource_type: &str, layer: ProvisionedBy) -> Provider<'_> {
        match (layer, self.plugins.get(resource_type)) {
            (ProvisionedBy::Sdk, Some((library, name))) => Provider::Plugin(library, name),
            _ => Provider::CloudControl(&self.cloud_control),
        }
    }

    /// Initialises the plugins of the types the intents name.
    pub async fn add_intent_owners(
        &mut self,
        aws: &AwsEnvironment,
        intents: &[CreateIntent],
    ) -> anyhow::Result<()> {
        for intent in intents {
            if intent.provisioned_by != ProvisionedBy::Sdk
                || self.plugins.contains_key(&intent.resource_type)
            {
                continue;
            }
            if let Route::Plugin { name, .. } = self.registry.route(&intent.resource_type) {
                let library = self.registry.plugin_for(&intent.resource_type, aws).await?;
                self.plugins
                    .insert(intent.resource_type.clone(), (library, name));
            }
        }
        Ok(())
    }

    /// The provider that owns a recorded resource (for deletes and reverts).
    pub fn for_record(&self, record: &ResourceState) -> Provider<'_> {
        if record.provisioned_by == Some(ProvisionedBy::CcApi) {
            return Provider::CloudControl(&self.cloud_control);
        }
        match self.plugins.get(&record.resource_type) {
            Some((library, name)) => Provider::Plugin(library, name),
            None => Provider::CloudControl(&self.cloud_control),
        }
    }

    /// Initialises the plugins that own `records` (deletes need them too).
    pub async fn add_owners(
        &mut self,
        aws: &AwsEnvironment,
        records: &[&ResourceState],
    ) -> anyhow::Result<()> {
        for record in records {
            if record.provisioned_by == Some(ProvisionedBy::CcApi)
                || self.plugins.contains_key(&record.resource_type)
            {
                continue;
            }
            if let Route::Plugin { name, .. } = self.registry.route(&record.resource_type) {
                let library = self.registry.plugin_for(&record.resource_type, aws).await?;
                self.plugins
                    .insert(record.resource_type.clone(), (library, name));
            }
        }
        Ok(())
    }
}

/// The deploy-time environment: live records, other stacks' state, and what was read.
struct LiveEnvironment<'a> {
    context: &'a StackContext,
    ledger: &'a Ledger,
    snapshot: &'a StateSnapshot,
    imports: &'a Mutex<BTreeSet<(String, String, String)>>,
    output_reads: &'a Mutex<BTreeSet<(String, String, String)>>,
    /// Secret attribute values produced in this run (state holds only their mask).
    secrets: &'a RunSecrets,
    /// Resolving outputs, which record a masked secret as the mask.
    for_outputs: bool,
}

impl LiveEnvironment<'_> {
    /// Another stack's output as this stack may send it: a masked (`NoEcho`) value is bridged
    /// from a producer deployed earlier in this run, and becomes this run's secret (masked in
    /// this stack's own record); otherwise it cannot be sent and the write is refused.
    fn unmasked(&self, stack: &str, region: &str, output: &str, value: Value) -> Lookup {
        if self.for_outputs || value.as_str() != Some(MASK) {
            return Lookup::Known(value);
        }
        match self.snapshot.secret_output(stack, region, output) {
            Some(plain) => {
                self.secrets.remember(plain.clone());
                Lookup::Known(plain.clone())
            }
            None => Lookup::Missing(format!(
                "output {output} of stack {stack} ({region}) is a NoEcho secret that state keeps only as its mask; deploy {stack} and this stack in one `cdkd deploy` run with its custom resource actually running (change one of its properties), or stop marking that response NoEcho"
            )),
        }
    }
}

/// Reads `Endpoint.Address`-style attributes from nested models.
fn attribute_of(attributes: &Map<String, Value>, name: &str) -> Option<Value> {
    if let Some(value) = attributes.get(name) {
        return Some(value.clone());
    }
    let mut parts = name.split('.');
    let mut current = attributes.get(parts.next()?)?;
    for part in parts {
        current = current.get(part)?;
    }
    Some(current.clone())
}

impl Environment for LiveEnvironment<'_> {
    fn pseudo(&self, name: &str) -> Option<Value> {
        self.context.pseudo(name)
    }

    fn resource_ref(&self, logical_id: &str) -> Lookup {
        self.ledger
            .read(|state| match state.resources.get(logical_id) {
                Some(record) => Lookup::Known(self.context.ref_values.value(
                    &record.resource_type,
                    &record.physical_id,
                    record.attributes.as_ref(),
                )),
                None => Lookup::Missing(format!("{logical_id} has not been created")),
            })
    }

    fn resource_attribute(&self, logical_id: &str, attribute: &str) -> Lookup {
        if let Some(secret) = self.secrets.get(logical_id, attribute) {
            return Lookup::Known(secret);
        }
        self.ledger.read(|state| match state.resources.get(logical_id) {
            Some(record) => match record.attributes.as_ref().and_then(|a| attribute_of(a, attribute)) {
                Some(value) if value.as_str() == Some(MASK) && !self.for_outputs => Lookup::Missing(format!(
                    "{logical_id}.{attribute} is a secret and state keeps only its mask, so cdkd cannot send it again; make {logical_id} produce it anew in this deploy (change one of its properties, e.g. a nonce for a custom resource, or an access key's Serial)"
                )),
                Some(value) => Lookup::Known(value),
                None => Lookup::Missing(format!(
                    "{logical_id} ({}) has no attribute {attribute}; its provider did not report one",
                    record.resource_type
                )),
            },
            None => Lookup::Missing(format!("{logical_id} has not been created")),
        })
    }

    fn import_value(&self, export_name: &str) -> Lookup {
        match self.snapshot.export(&self.context.region, export_name) {
            Some((producer, value)) => {
                self.imports
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((
                        producer.to_string(),
                        self.context.region.clone(),
                        export_name.to_string(),
                    ));
                let producer = producer.to_string();
                self.unmasked(&producer, &self.context.region, export_name, value.clone())
            }
            None => Lookup::Missing(format!(
                "no deployed stack in {} exports {export_name}; deploy the producer first",
                self.context.region
            )),
        }
    }

    fn stack_output(&self, stack: &str, region: Option<&str>, output: &str) -> Lookup {
        let region = region.unwrap_or(&self.context.region);
        let lookups = SnapshotLookups {
            snapshot: self.snapshot,
            region,
        };
        let found =
            crate::analyzer::plan::ExternalValues::stack_output(&lookups, stack, region, output);
        if matches!(found, Lookup::Known(_)) {
            self.output_reads
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((stack.to_string(), region.to_string(), output.to_string()));
        }
        match found {
            Lookup::Unknown => Lookup::Missing(format!(
                "stack {stack} has no output {output} in {region}; deploy it first"
            )),
            Lookup::Known(value) => self.unmasked(stack, region, output, value),
            other => other,
        }
    }

    fn availability_zones(&self, region: &str) -> Lookup {
        match self.context.availability_zones.get(region) {
            Some(zones) => Lookup::Known(serde_json::json!(zones)),
            None => Lookup::Missing(format!(
                "Fn::GetAZs ({region}): the zones were not fetched before the deploy"
            )),
        }
    }
}

/// A finished deploy: the record as saved, and, for consumers in the same run only, the
/// plaintext of the outputs it recorded masked.
#[derive(Debug, Clone)]
pub struct Deployed {
    /// The saved record.
    pub state: StackState,
    /// Output name → plaintext, for outputs whose recorded value is the mask.
    pub secret_outputs: Map<String, Value>,
}

/// A deploy that did not finish.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DeployFailed(pub String);

fn record_for(
    logical_id: &str,
    physical_id: String,
    properties: Map<String, Value>,
    attributes: Map<String, Value>,
    dependencies: &BTreeSet<String>,
    template: &Template,
    provisioned_by: Option<ProvisionedBy>,
) -> ResourceState {
    let resource = &template.resources[logical_id];
    ResourceState {
        physical_id,
        resource_type: resource.kind.clone(),
        properties,
        observed_properties: None,
        attributes: Some(attributes),
        dependencies: Some(dependencies.iter().cloned().collect()),
        metadata: None,
        deletion_policy: resource.deletion_policy.clone(),
        update_replace_policy: resource.update_replace_policy.clone(),
        provisioned_by,
        extra: Map::new(),
    }
}

impl Engine<'_> {
    /// Deploys one stack and returns its final record.
    pub async fn deploy(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        options: &DeployOptions,
    ) -> anyhow::Result<Deployed> {
        let context = &input.context;
        let lock = self
            .locks
            .acquire(&context.stack_name, &context.region, "deploy")
            .await?;
        let result = self.deploy_locked(input, snapshot, options).await;
        lock.release().await;
        result
    }

    async fn deploy_locked(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        options: &DeployOptions,
    ) -> anyhow::Result<Deployed> {
        let started = Instant::now();
        let context = &input.context;
        let stack = context.stack_name.as_str();
        // The journal may hold an interrupted run's intents: read it alongside the record.
        let (stored, journal_found) = tokio::join!(
            self.backend.load(stack, &context.region),
            journal::read(self.backend, stack, &context.region)
        );
        let stored = stored?;
        let journal_found = journal_found?;
        let recorded = stored.as_ref().map(|s| s.state.clone());
        let lookups = SnapshotLookups {
            snapshot,
            region: &context.region,
        };
        let create_only = KnownCreateOnly::new(self.registry);
        let planned = plan(
            &input.template,
            recorded.as_ref(),
            context,
            &input.parameters,
            &lookups,
            &create_only,
        )
        .map_err(|err| anyhow::anyhow!("stack {stack}: {err}"))?;

        // Pre-flight: every resource must have somewhere to go, before anything changes.
        let mut decisions: BTreeMap<String, Decision> = BTreeMap::new();
        let mut refused = Vec::new();
        for logical_id in planned.graph.order() {
            let resource = &input.template.resources[logical_id];
            let previous = recorded.as_ref().and_then(|s| s.resources.get(logical_id));
            let decision = match options.recreate.get(logical_id) {
                // An explicit move between layers overrides the sticky record.
                Some(ProvisionedBy::CcApi) => Decision::CloudControl(None),
                Some(ProvisionedBy::Sdk) => match self.registry.route(&resource.kind) {
                    Route::Plugin { name, .. } => Decision::Plugin(name),
                    _ => Decision::Refuse(format!(
                        "--recreate-via-sdk-provider {logical_id}: no loaded plugin handles {}",
                        resource.kind
                    )),
                },
                None => decide(
                    self.registry,
                    logical_id,
                    &resource.kind,
                    &planned.properties[logical_id],
                    previous.and_then(|r| r.provisioned_by),
                    &options.allowed,
                ),
            };
            if let Decision::Plugin(_) = &decision {
                let conflict = self
                    .registry
                    .schema(&resource.kind)
                    .and_then(|schema| schema.composite_id.as_ref())
                    .and_then(|id| id.separator_conflict(&planned.properties[logical_id]));
                if let Some((segment, property, value)) = conflict {
                    refused.push(format!(
                        "{logical_id} ({}): property {property} = {value:?} contains '|', the separator of the type's composite physical id (segment {segment}); the separator is not escaped, so use a value without '|'",
                        resource.kind
                    ));
                }
            }
            match &decision {
                Decision::Refuse(reason) => refused.push(reason.clone()),
                Decision::CloudControl(Some(warning)) => tracing::warn!("{warning}"),
                _ => {}
            }
            decisions.insert(logical_id.clone(), decision);
        }
        for logical_id in options.recreate.keys() {
            if recorded
                .as_ref()
                .and_then(|s| s.resources.get(logical_id))
                .is_none()
            {
                refused.push(format!("{logical_id} cannot be re-created: stack {stack} has no deployed resource of that id"));
            }
        }
        if !refused.is_empty() {
            return Err(DeployFailed(format!(
                "stack {stack} cannot be deployed; nothing was changed:\n  - {}",
                refused.join("\n  - ")
            ))
            .into());
        }
        let plugin_types: BTreeSet<String> = decisions
            .iter()
            .filter(|(_, d)| matches!(d, Decision::Plugin(_)))
            .map(|(id, _)| input.template.resources[id].kind.clone())
            .collect();
        let mut providers = Providers::prepare(
            self.registry,
            self.aws,
            &context.region,
            &plugin_types,
            options.resource_timeout,
        )
        .await?;
        if let Some(state) = &recorded {
            let records: Vec<&ResourceState> = state.resources.values().collect();
            providers.add_owners(self.aws, &records).await?;
        }
        let ids = AccountIds {
            account: context.account.clone(),
            partition: context
                .pseudo("AWS::Partition")
                .and_then(|p| p.as_str().map(str::to_string))
                .unwrap_or_else(|| "aws".into()),
        };

        // Write-ahead: reconcile what an interrupted run left, then record this run's creates
        // (token and name) before the first one is sent.
        let pending = journal_found
            .as_ref()
            .map(|j| j.pending_creates.clone())
            .unwrap_or_default();
        providers.add_intent_owners(self.aws, &pending).await?;
        let (mut carried, unsettled) = reconcile::carry_into_deploy(
            self.reporter,
            stack,
            &providers,
            pending,
            recorded.as_ref(),
            &ids,
        )
        .await;
        let run_id = names::new_run_id();
        let mut intents: Vec<CreateIntent> = Vec::new();
        let mut tokens: BTreeMap<String, String> = BTreeMap::new();
        for change in &planned.changes {
            let logical_id = &change.logical_id;
            let previous = recorded.as_ref().and_then(|s| s.resources.get(logical_id));
            let creates = match change.action {
                Action::Create => true,
                Action::Update => {
                    (change.replacement && !change.policies_only)
                        || options.recreate.contains_key(logical_id)
                }
                _ => false,
            };
            let Some(resource) = input.template.resources.get(logical_id) else {
                continue;
            };
            let Some(layer) = decisions.get(logical_id).and_then(Decision::provisioned_by) else {
                continue;
            };
            if !creates {
                continue;
            }
            let reuse = carried.get(logical_id).filter(|c| {
                c.intent.resource_type == resource.kind
                    && c.intent.provisioned_by == layer
                    && previous.is_none()
                    && (c.intent.physical_name.is_some() || c.token_reusable())
            });
            let token = match reuse {
                Some(c) => c.intent.token.clone(),
                None => names::create_token(&run_id, stack, &context.region, logical_id),
            };
            let physical_name = names::choose(
                &resource.kind,
                stack,
                logical_id,
                &token,
                &planned.properties[logical_id],
            )
            .map(|chosen| chosen.name().to_string());
            intents.push(CreateIntent {
                logical_id: logical_id.clone(),
                resource_type: resource.kind.clone(),
                token: token.clone(),
                physical_name,
                provisioned_by: layer,
                replaces: previous.cloned(),
                created_at: crate::state::schema::now_millis(),
            });
            tokens.insert(logical_id.clone(), token);
        }
        // A carried create the plan no longer makes (or makes differently): what it left goes.
        let stale: Vec<String> = carried
            .keys()
            .filter(|id| {
                !intents
                    .iter()
                    .any(|i| &i.logical_id == *id && i.token == carried[*id].intent.token)
            })
            .cloned()
            .collect();
        let mut unsettled = unsettled;
        for id in stale {
            let leftover = carried.remove(&id).expect("listed");
            if let Some(found) = leftover.found {
                let decision = reconcile::Decision::Unrecorded(found);
                if !reconcile::settle_by_removal(
                    self.reporter,
                    stack,
                    &providers,
                    &leftover.intent,
                    decision,
                )
                .await
                {
                    unsettled.push(leftover.intent);
                }
            }
        }
        let mut journal_doc =
            journal_found.unwrap_or_else(|| journal::Journal::new(stack, &context.region));
        let had_pending = !journal_doc.pending_creates.is_empty();
        journal_doc.pending_creates = intents
            .into_iter()
            .chain(unsettled.iter().cloned())
            .collect();
        if had_pending || !journal_doc.pending_creates.is_empty() {
            if journal_doc.segments.is_empty() && journal_doc.pending_creates.is_empty() {
                journal::remove(self.backend, stack, &context.region).await?;
            } else {
                journal::write(self.backend, &journal_doc).await?;
            }
        }
        let needed_attributes = input.template.referenced_attributes();
        let no_attributes: Vec<String> = Vec::new();
        let made_nothing: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
        let changed_in_run: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
        let run_secrets = RunSecrets::default();

        let ledger = Ledger::new(self.backend.clone(), stack, &context.region, stored);
        let saver = ledger.start_saver();
        self.read_back_missing_attributes(&ledger, &providers, &needed_attributes)
            .await;
        let changes: BTreeMap<&str, &crate::analyzer::diff::ResourceChange> = planned
            .changes
            .iter()
            .map(|c| (c.logical_id.as_str(), c))
            .collect();
        let completed: Mutex<Vec<Operation>> = Mutex::new(Vec::new());
        let failed: Mutex<Vec<FailedOperation>> = Mutex::new(Vec::new());
        let superseded: Mutex<Vec<(String, ResourceState)>> = Mutex::new(Vec::new());
        let summary: Mutex<Summary> = Mutex::new(Summary::default());
        let imports = Mutex::new(BTreeSet::new());
        let output_reads = Mutex::new(BTreeSet::new());
        let tasks: Vec<Task> = planned
            .graph
            .order()
            .iter()
            .map(|id| {
                let node = planned.graph.node(id).expect("ordered ids are nodes");
                Task {
                    id: id.clone(),
                    dependencies: node.dependencies.clone(),
                    priority: node.priority,
                }
            })
            .collect();

        let work = |logical_id: String| {
            let change = changes[logical_id.as_str()];
            let decision = &decisions[&logical_id];
            let resource = &input.template.resources[&logical_id];
            let node = planned.graph.node(&logical_id).expect("tasks are nodes");
            let providers = &providers;
            let (ledger, completed, failed, superseded, summary) =
                (&ledger, &completed, &failed, &superseded, &summary);
            let (imports, output_reads) = (&imports, &output_reads);
            let needed = needed_attributes
                .get(&logical_id)
                .unwrap_or(&no_attributes)
                .as_slice();
            let token = tokens.get(&logical_id).cloned().unwrap_or_default();
            let adoption = carried.get(&logical_id).and_then(|c| c.found.clone());
            let (ids, made_nothing, run_secrets) = (&ids, &made_nothing, &run_secrets);
            let (changed_in_run, create_only) = (&changed_in_run, &create_only);
            let sensitive: Vec<String> = self
                .registry
                .schema(&input.template.resources[&logical_id].kind)
                .map(|schema| schema.sensitive_attributes.clone())
                .unwrap_or_default();
            async move {
                let began = Instant::now();
                let previous = ledger.read(|s| s.resources.get(&logical_id).cloned());
                let recreate = options.recreate.contains_key(&logical_id);
                // A dependency updated in this run may hand this resource new values (a custom
                // resource's Data, an attribute an update changed): such a resource is resolved
                // again and written only if what it would send changed, as CloudFormation does.
                let upstream_changed = change.action == Action::NoChange
                    && !recreate
                    && node
                        .dependencies
                        .iter()
                        .any(|d| changed_in_run.lock().unwrap().contains(d));
                if change.action == Action::NoChange && !recreate && !upstream_changed {
                    // No provider call; still persist what a newer cdkd records.
                    let wanted = decision.provisioned_by();
                    let dependencies: Vec<String> = node.dependencies.iter().cloned().collect();
                    if previous.as_ref().is_some_and(|p| {
                        p.provisioned_by != wanted || p.dependencies.as_ref() != Some(&dependencies)
                    }) {
                        ledger.change(|s| {
                            if let Some(record) = s.resources.get_mut(&logical_id) {
                                record.provisioned_by = wanted;
                                record.dependencies = Some(dependencies);
                            }
                        });
                    }
                    summary.lock().unwrap().unchanged += 1;
                    return Ok(());
                }
                let properties = {
                    let env = LiveEnvironment {
                        context,
                        ledger,
                        snapshot,
                        imports,
                        output_reads,
                        secrets: run_secrets,
                        for_outputs: false,
                    };
                    Resolver::new(&input.template, &env, &input.parameters).and_then(|resolver| {
                        resolver.resolve_properties(&logical_id, &resource.properties)
                    })
                };
                let properties = match properties {
                    Ok(p) => p,
                    Err(err) => {
                        self.reporter.resource(
                            stack,
                            &logical_id,
                            &resource.kind,
                            &format!("failed: {err}"),
                            Some(began.elapsed()),
                        );
                        summary.lock().unwrap().failed += 1;
                        return Err(err.to_string());
                    }
                };
                let mut replacement = change.replacement;
                let mut action = if recreate {
                    Action::Update
                } else {
                    change.action
                };
                if upstream_changed {
                    let before = previous.as_ref().map(|p| &p.properties);
                    if before == Some(&run_secrets.mask_map(&properties)) {
                        summary.lock().unwrap().unchanged += 1;
                        return Ok(());
                    }
                    action = Action::Update;
                    let create_only = create_only.create_only(&resource.kind);
                    replacement = create_only
                        .iter()
                        .any(|key| before.and_then(|b| b.get(key)) != properties.get(key));
                }
                let provider = providers.for_decision(&resource.kind, decision);
                let provisioned_by = decision.provisioned_by();
                let fail = |action: OperationKind, error: String| {
                    failed.lock().unwrap().push(FailedOperation {
                        logical_id: logical_id.clone(),
                        action,
                        resource_type: resource.kind.clone(),
                        before: previous.clone(),
                        attempted_properties: run_secrets.mask_map(&properties),
                        error: error.clone(),
                    });
                    summary.lock().unwrap().failed += 1;
                    self.reporter.resource(
                        stack,
                        &logical_id,
                        &resource.kind,
                        &format!("failed: {error}"),
                        Some(began.elapsed()),
                    );
                    Err(error)
                };
                // What is written down holds masks where AWS got secrets.
                // `secret`: attributes this result declares sensitive beyond the type's own.
                let make_record = |physical_id: String,
                                   props: Map<String, Value>,
                                   attributes: Map<String, Value>,
                                   secret: Vec<String>| {
                    let sensitive: Vec<String> = sensitive.iter().cloned().chain(secret).collect();
                    record_for(
                        &logical_id,
                        physical_id,
                        run_secrets.mask_map(&props),
                        // A consumer's read-back model can echo a secret it was given.
                        run_secrets.mask_map(&run_secrets.keep(
                            &logical_id,
                            &sensitive,
                            attributes,
                        )),
                        &node.dependencies,
                        &input.template,
                        provisioned_by,
                    )
                };
                if matches!(action, Action::Create | Action::Update) {
                    changed_in_run.lock().unwrap().insert(logical_id.clone());
                }
                match (action, previous.clone()) {
                    (Action::Update, Some(before)) if change.policies_only && !recreate => {
                        let mut after = before.clone();
                        after.deletion_policy = resource.deletion_policy.clone();
                        after.update_replace_policy = resource.update_replace_policy.clone();
                        ledger.change(|s| {
                            s.resources.insert(logical_id.clone(), after.clone());
                        });
                        completed.lock().unwrap().push(Operation {
                            logical_id: logical_id.clone(),
                            action: OperationKind::Policy,
                            resource_type: resource.kind.clone(),
                            before: Some(before),
                            after: Some(after),
                        });
                        summary.lock().unwrap().updated += 1;
                        self.reporter.resource(
                            stack,
                            &logical_id,
                            &resource.kind,
                            "updated (policy only, no AWS call)",
                            Some(began.elapsed()),
                        );
                        Ok(())
                    }
                    (Action::Update, Some(before)) if replacement || recreate => {
                        // A move between layers keeps the resource's name: the old one goes first.
                        let replace_first = options.replace_first || recreate;
                        if replace_first {
                            if let Err(err) = providers
                                .for_record(&before)
                                .delete(
                                    &before.resource_type,
                                    &logical_id,
                                    &before.physical_id,
                                    &before.properties,
                                )
                                .await
                            {
                                return fail(
                                    OperationKind::Replace,
                                    format!("deleting the resource being replaced failed: {err}"),
                                );
                            }
                        }
                        let chosen =
                            names::choose(&resource.kind, stack, &logical_id, &token, &properties);
                        let spec = CreateSpec {
                            token: &token,
                            name: chosen.as_ref(),
                            needed,
                            ids,
                        };
                        match provider.create(&resource.kind, &logical_id, stack, &properties, &spec).await {
                            Ok(created) => {
                                let shown = format!("replaced by {}", created.physical_id);
                                let after = make_record(created.physical_id, properties.clone(), created.attributes, created.sensitive_attributes);
                                ledger.change(|s| {
                                    s.resources.insert(logical_id.clone(), after.clone());
                                });
                                let retain = matches!(before.update_replace_policy.as_deref(), Some("Retain" | "RetainExceptOnCreate"));
                                if !replace_first && !retain {
                                    superseded.lock().unwrap().push((logical_id.clone(), before.clone()));
                                }
                                completed.lock().unwrap().push(Operation { logical_id: logical_id.clone(), action: OperationKind::Replace, resource_type: resource.kind.clone(), before: Some(before), after: Some(after) });
                                summary.lock().unwrap().replaced += 1;
                                self.reporter.resource(stack, &logical_id, &resource.kind, &shown, Some(began.elapsed()));
                                Ok(())
                            }
                            Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => fail(
                                OperationKind::Replace,
                                format!("{err}. Its replacement has the same name as the resource it replaces; rename it, or deploy with --replace to delete the old one first"),
                            ),
                            Err(err) => fail(OperationKind::Replace, err.to_string()),
                        }
                    }
                    (Action::Update, Some(before)) => {
                        match provider
                            .update(
                                &resource.kind,
                                &logical_id,
                                stack,
                                &before.physical_id,
                                &before.properties,
                                &properties,
                                needed,
                            )
                            .await
                        {
                            Ok(updated) => {
                                let after = make_record(
                                    updated.physical_id,
                                    properties.clone(),
                                    updated.attributes,
                                    updated.sensitive_attributes,
                                );
                                ledger.change(|s| {
                                    s.resources.insert(logical_id.clone(), after.clone());
                                });
                                let kind = if updated.replaced {
                                    OperationKind::Replace
                                } else {
                                    OperationKind::Update
                                };
                                // A provider that replaced the resource in its update (a
                                // custom resource's handler returned a new physical id): the
                                // old one is deleted after the deploy, as for a replacement.
                                if updated.replaced && after.physical_id != before.physical_id {
                                    superseded
                                        .lock()
                                        .unwrap()
                                        .push((logical_id.clone(), before.clone()));
                                }
                                completed.lock().unwrap().push(Operation {
                                    logical_id: logical_id.clone(),
                                    action: kind,
                                    resource_type: resource.kind.clone(),
                                    before: Some(before),
                                    after: Some(after),
                                });
                                summary.lock().unwrap().updated += 1;
                                self.reporter.resource(
                                    stack,
                                    &logical_id,
                                    &resource.kind,
                                    "updated",
                                    Some(began.elapsed()),
                                );
                                Ok(())
                            }
                            Err(err) => fail(OperationKind::Update, err.to_string()),
                        }
                    }
                    _ => match match adoption {
                        // An interrupted run made it: adopt it instead of making another.
                        Some(found) => {
                            provider
                                .adopt(
                                    &resource.kind,
                                    &logical_id,
                                    stack,
                                    found,
                                    &properties,
                                    needed,
                                )
                                .await
                        }
                        None => {
                            let chosen = names::choose(
                                &resource.kind,
                                stack,
                                &logical_id,
                                &token,
                                &properties,
                            );
                            let spec = CreateSpec {
                                token: &token,
                                name: chosen.as_ref(),
                                needed,
                                ids,
                            };
                            provider
                                .create(&resource.kind, &logical_id, stack, &properties, &spec)
                                .await
                        }
                    } {
                        Ok(created) => {
                            let shown = format!("created {}", created.physical_id);
                            let after = make_record(
                                created.physical_id,
                                properties.clone(),
                                created.attributes,
                                created.sensitive_attributes,
                            );
                            ledger.change(|s| {
                                s.resources.insert(logical_id.clone(), after.clone());
                            });
                            completed.lock().unwrap().push(Operation {
                                logical_id: logical_id.clone(),
                                action: OperationKind::Create,
                                resource_type: resource.kind.clone(),
                                before: None,
                                after: Some(after),
                            });
                            summary.lock().unwrap().created += 1;
                            self.reporter.resource(
                                stack,
                                &logical_id,
                                &resource.kind,
                                &shown,
                                Some(began.elapsed()),
                            );
                            Ok(())
                        }
                        Err(err) => {
                            if err.kind == ErrorKind::ALREADY_EXISTS {
                                // Someone else's resource holds the name: this create made nothing.
                                made_nothing.lock().unwrap().insert(logical_id.clone());
                            }
                            fail(OperationKind::Create, err.to_string())
                        }
                    },
                }
            }
        };
        let executor = Executor {
            concurrency: options.concurrency,
        };
        let outcomes = executor.run(&tasks, &self.stop, work).await;
        let interrupted = *self.stop.borrow();
        for (id, outcome) in &outcomes {
            if let Outcome::Skipped(reason) = outcome {
                summary.lock().unwrap().skipped += 1;
                self.reporter.resource(
                    stack,
                    id,
                    &input.template.resources[id].kind,
                    &format!("skipped ({reason})"),
                    None,
                );
            }
        }
        let first_failure = outcomes.iter().find_map(|(id, o)| match o {
            Outcome::Failed(message) => Some(format!("{id}: {message}")),
            _ => None,
        });

        if first_failure.is_none() && !interrupted {
            // Deletes: removed resources and the superseded halves of replacements, dependents first.
            let mut doomed: BTreeMap<String, ResourceState> = BTreeMap::new();
            for change in planned
                .changes
                .iter()
                .filter(|c| c.action == Action::Delete)
            {
                if let Some(record) = recorded
                    .as_ref()
                    .and_then(|s| s.resources.get(&change.logical_id))
                {
                    doomed.insert(change.logical_id.clone(), record.clone());
                }
            }
            let superseded = std::mem::take(&mut *superseded.lock().unwrap());
            for (id, record) in &superseded {
                doomed.insert(format!("{id}#superseded"), record.clone());
            }
            if let Err(message) = self
                .delete_records(stack, &ledger, &providers, &doomed, options.concurrency)
                .await
            {
                ledger.flush().await?;
                saver.abort();
                return Err(DeployFailed(format!(
                    "deploy of {stack} ({}) failed while deleting: {message}",
                    context.region
                ))
                .into());
            }
            // Outputs, export names and cross-stack reads, resolved against the live records.
            let env = LiveEnvironment {
                context,
                ledger: &ledger,
                snapshot,
                imports: &imports,
                output_reads: &output_reads,
                secrets: &run_secrets,
                for_outputs: true,
            };
            let (outputs, export_names) =
                resolve_outputs(&input.template, &env, &input.parameters)?;
            let plain_outputs = outputs;
            let outputs = run_secrets.mask_map(&plain_outputs);
            let secret_outputs: Map<String, Value> = plain_outputs
                .into_iter()
                .filter(|(name, value)| outputs.get(name) != Some(value))
                .collect();
            let imports: Vec<StateImportEntry> = imports
                .into_inner()
                .unwrap()
                .into_iter()
                .map(
                    |(source_stack, source_region, export_name)| StateImportEntry {
                        source_stack,
                        source_region,
                        export_name,
                        extra: Map::new(),
                    },
                )
                .collect();
            let output_reads: Vec<StateOutputReadEntry> = output_reads
                .into_inner()
                .unwrap()
                .into_iter()
                .map(
                    |(source_stack, source_region, output_name)| StateOutputReadEntry {
                        source_stack,
                        source_region,
                        output_name,
                        extra: Map::new(),
                    },
                )
                .collect();
            ledger.change(|s| {
                s.outputs = outputs.clone();
                s.export_names = Some(export_names.clone());
                s.imports = (!imports.is_empty()).then_some(imports);
                s.output_reads = (!output_reads.is_empty()).then_some(output_reads);
            });
            // The final save and the journal clean-up touch different keys: do both at once.
            // Intents this run could not settle (an interrupted run's) stay for the next one.
            let cleanup = async {
                if unsettled.is_empty() {
                    journal::remove(self.backend, stack, &context.region).await
                } else {
                    let mut left = journal::Journal::new(stack, &context.region);
                    left.pending_creates = unsettled.clone();
                    journal::write(self.backend, &left).await
                }
            };
            let (saved, cleaned) = tokio::join!(ledger.flush(), cleanup);
            saved?;
            cleaned?;
            saver.abort();
            self.reporter
                .finish(stack, &summary.lock().unwrap(), started.elapsed(), &outputs);
            return Ok(Deployed {
                state: ledger.snapshot(),
                secret_outputs,
            });
        }

        // Failure or interruption. A failed save must not stop the journal and the rollback:
        // it is reported with the deploy's own error at the end.
        let save_failure = ledger.flush().await.err();
        let save_note = save_failure
            .as_ref()
            .map(|err| format!(" (and saving state failed: {err})"))
            .unwrap_or_default();
        // Only creates that were sent and failed can have left something unrecorded: the
        // others finished (and are recorded) or never started. A create refused because the
        // name was taken made nothing.
        let made_nothing = made_nothing.into_inner().unwrap();
        if let Some(mut doc) = journal::read(self.backend, stack, &context.region).await? {
            let before = doc.pending_creates.len();
            doc.pending_creates.retain(|intent| {
                let failed = matches!(outcomes.get(&intent.logical_id), Some(Outcome::Failed(_)))
                    && !made_nothing.contains(&intent.logical_id);
                failed || unsettled.iter().any(|u| u.token == intent.token)
            });
            if doc.pending_creates.len() != before {
                journal::write(self.backend, &doc).await?;
            }
        }
        let operations = completed.into_inner().unwrap();
        let failures = failed.into_inner().unwrap();
        let reason = first_failure.unwrap_or_else(|| "interrupted".into());
        if interrupted || !options.rollback {
            let why = if interrupted {
                Reason::Interrupted
            } else {
                Reason::NoRollbackFailure
            };
            journal::append(
                self.backend,
                stack,
                &context.region,
                Segment::new(why, operations, failures),
            )
            .await?;
            saver.abort();
            self.reporter.finish(
                stack,
                &summary.lock().unwrap(),
                started.elapsed(),
                &Map::new(),
            );
            return Err(DeployFailed(format!(
                "deploy of {stack} ({}) {}: {reason}{save_note}. What succeeded is kept and recorded; run `cdkd rollback {stack}` to undo it, or fix the cause and deploy again",
                context.region,
                if interrupted { "was interrupted" } else { "failed" }
            ))
            .into());
        }
        // Automatic rollback: journal first, so a rollback that dies can be resumed.
        journal::append(
            self.backend,
            stack,
            &context.region,
            Segment::new(
                Reason::AutoRollbackStarted,
                operations.clone(),
                failures.clone(),
            ),
        )
        .await?;
        self.reporter.stack(
            stack,
            &format!(
                "deploy failed ({reason}); rolling back {} completed operation(s)",
                operations.len()
            ),
        );
        let remaining =
            revert_operations(self.reporter, stack, &ledger, &providers, operations).await;
        let save_failure = ledger.flush().await.err().or(save_failure);
        saver.abort();
        let mut journal = journal::read(self.backend, stack, &context.region)
            .await?
            .unwrap_or_else(|| journal::Journal::new(stack, &context.region));
        journal.segments.pop();
        // What a failed create left in AWS unrecorded goes with the rollback.
        let pending = std::mem::take(&mut journal.pending_creates);
        let recorded_now = ledger.snapshot();
        journal.pending_creates = reconcile::remove_unrecorded(
            self.reporter,
            stack,
            &providers,
            pending,
            Some(&recorded_now),
            &ids,
        )
        .await;
        let clean = remaining.is_empty();
        journal.segments.push(Segment::new(
            if clean {
                Reason::AutoRollbackClean
            } else {
                Reason::AutoRollbackStarted
            },
            remaining,
            failures,
        ));
        journal::write(self.backend, &journal).await?;
        self.reporter.finish(
            stack,
            &summary.lock().unwrap(),
            started.elapsed(),
            &Map::new(),
        );
        let save_note = save_failure
            .map(|err| format!(" (saving state failed: {err}; the journal has what `cdkd rollback {stack}` needs)"))
            .unwrap_or_default();
        Err(DeployFailed(if clean {
            format!("deploy of {stack} ({}) failed and was rolled back: {reason}{save_note}", context.region)
        } else {
            format!("deploy of {stack} ({}) failed and the rollback did not finish: {reason}{save_note}; run `cdkd rollback {stack}` to retry it", context.region)
        })
        .into())
    }

    /// Reads back, with one `GetResource` each and all at once, the Cloud Control records that
    /// lack an attribute the template now reads (a `Fn::GetAtt` added after they were made,
    /// or a record written from a sparse model by an older cdkd).
    async fn read_back_missing_attributes(
        &self,
        ledger: &Ledger,
        providers: &Providers<'_>,
        needed: &BTreeMap<String, Vec<String>>,
    ) {
        let stale: Vec<(String, ResourceState)> = ledger.read(|state| {
            state
                .resources
                .iter()
                .filter(|(id, record)| {
                    record.provisioned_by == Some(ProvisionedBy::CcApi)
                        && needed.get(*id).is_some_and(|names| {
                            let attributes = record.attributes.clone().unwrap_or_default();
                            names.iter().any(|name| !has_attribute(&attributes, name))
                        })
                })
                .map(|(id, record)| (id.clone(), record.clone()))
                .collect()
        });
        let reads = stale.iter().map(|(id, record)| async move {
            let model = providers
                .for_record(record)
                .read_current_state(&record.resource_type, id, &record.physical_id, &Map::new())
                .await;
            (id, model)
        });
        for (id, model) in futures_util::future::join_all(reads).await {
            let Some(model) = model else { continue };
            ledger.change(|state| {
                if let Some(record) = state.resources.get_mut(id) {
                    let attributes = record.attributes.get_or_insert_with(Map::new);
                    for (key, value) in model {
                        attributes.entry(key).or_insert(value);
                    }
                }
            });
        }
    }

    /// Deletes records (dependents first); `#superseded` keys are old halves of replacements.
    async fn delete_records(
        &self,
        stack: &str,
        ledger: &Ledger,
        providers: &Providers<'_>,
        doomed: &BTreeMap<String, ResourceState>,
        concurrency: usize,
    ) -> Result<(), String> {
        if doomed.is_empty() {
            return Ok(());
        }
        let tasks = deletion_tasks(doomed);
        let work = |key: String| {
            let record = doomed[&key].clone();
            async move {
                let began = Instant::now();
                let logical_id = key.trim_end_matches("#superseded").to_string();
                let superseded = key.ends_with("#superseded");
                let retained = !superseded && is_retained(record.deletion_policy.as_deref());
                if !retained {
                    self.delete_one(stack, providers, &logical_id, &record, began)
                        .await
                        .map_err(|err| format!("{logical_id}: {err}"))?;
                }
                if !superseded {
                    ledger.change(|s| {
                        s.resources.remove(&logical_id);
                    });
                }
                let action = match (superseded, retained) {
                    (true, _) => "old resource deleted after replacement",
                    (false, true) => "removed from state, kept in AWS (DeletionPolicy)",
                    (false, false) => "deleted",
                };
                self.reporter.resource(
                    stack,
                    &logical_id,
                    &record.resource_type,
                    action,
                    Some(began.elapsed()),
                );
                Ok(())
            }
        };
        let outcomes = Executor { concurrency }.run(&tasks, &self.stop, work).await;
        match outcomes.into_iter().find_map(|(_, o)| match o {
            Outcome::Failed(message) => Some(message),
            _ => None,
        }) {
            Some(message) => Err(message),
            None => Ok(()),
        }
    }
}

/// Whether a `DeletionPolicy` keeps the AWS resource when cdkd deletes it.
pub fn is_retained(policy: Option<&str>) -> bool {
    matches!(policy, Some("Retain" | "RetainExceptOnCreate"))
}

impl Engine<'_> {
    /// Deletes one recorded resource through its provider, reporting a failure.
    pub async fn delete_one(
        &self,
        stack: &str,
        providers: &Providers<'_>,
        logical_id: &str,
        record: &ResourceState,
        began: Instant,
    ) -> Result<(), String> {
        let deleted = providers
            .for_record(record)
            .delete(
                &record.resource_type,
                logical_id,
                &record.physical_id,
                &record.properties,
            )
            .await;
        deleted.map(|_| ()).map_err(|err| {
            self.reporter.resource(
                stack,
                logical_id,
                &record.resource_type,
                &format!("delete failed: {err}"),
                Some(began.elapsed()),
            );
            err.to_string()
        })
    }
}

/// Delete tasks: a resource waits for every doomed resource that depends on it.
pub fn deletion_tasks(doomed: &BTreeMap<String, ResourceState>) -> Vec<Task> {
    let mut waits: BTreeMap<String, BTreeSet<String>> = doomed
        .keys()
        .map(|k| (k.clone(), BTreeSet::new()))
        .collect();
    for (key, record) in doomed {
        for dependency in record.dependencies.iter().flatten() {
            if doomed.contains_key(dependency) && dependency != key {
                waits
                    .get_mut(dependency)
                    .expect("present")
                    .insert(key.clone());
            }
        }
    }
    waits
        .into_iter()
        .map(|(id, dependencies)| Task {
            id,
            dependencies,
            priority: 0,
        })
        .collect()
}

fn resolve_outputs(
    template: &Template,
    env: &dyn Environment,
    parameters: &BTreeMap<String, Value>,
) -> anyhow::Result<(Map<String, Value>, Vec<String>)> {
    let resolver = Resolver::new(template, env, parameters)?;
    let mut outputs = Map::new();
    let mut export_names = Vec::new();
    for (name, output) in &template.outputs {
        if !resolver.is_active(output.condition.as_deref())? {
            continue;
        }
        let value = resolver.resolve(&output.value, &format!("Outputs.{name}.Value"))?;
        if let Some(export) = &output.export_name {
            let export = resolver.resolve(export, &format!("Outputs.{name}.Export.Name"))?;
            if let Some(export) = export.as_str() {
                outputs.insert(export.to_string(), value.clone());
                export_names.push(export.to_string());
            }
        }
        outputs.insert(name.clone(), value);
    }
    Ok((outputs, export_names))
}

/// Undoes completed operations, newest first; returns those that could not be undone.
pub async fn revert_operations(
    reporter: Reporter,
    stack: &str,
    ledger: &Ledger,
    providers: &Providers<'_>,
    operations: Vec<Operation>,
) -> Vec<Operation> {
    let mut remaining = operations;
    while let Some(operation) = remaining.pop() {
        let began = Instant::now();
        let id = operation.logical_id.clone();
        let result: Result<(), String> = async {
            match operation.action {
                OperationKind::Create => {
                    let after = operation
                        .after
                        .as_ref()
                        .ok_or("no record of the created resource")?;
                    providers
                        .for_record(after)
                        .delete(
                            &after.resource_type,
                            &id,
                            &after.physical_id,
                            &after.properties,
                        )
                        .await
                        .map_err(|e| e.to_string())?;
                    ledger.change(|s| {
                        s.resources.remove(&id);
                    });
                }
                OperationKind::Replace => {
                    let after = operation
                        .after
                        .as_ref()
                        .ok_or("no record of the replacement")?;
                    let before = operation
                        .before
                        .clone()
                        .ok_or("no record of the replaced resource")?;
                    if after.physical_id != before.physical_id {
                        providers
                            .for_record(after)
                            .delete(
                                &after.resource_type,
                                &id,
                                &after.physical_id,
                                &after.properties,
                            )
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    ledger.change(|s| {
                        s.resources.insert(id.clone(), before);
                    });
                }
                OperationKind::Update => {
                    let after = operation.after.as_ref().ok_or("no record of the update")?;
                    let mut before = operation
                        .before
                        .clone()
                        .ok_or("no record of the previous properties")?;
                    let restored = providers
                        .for_record(after)
                        .update(
                            &after.resource_type,
                            &id,
                            stack,
                            &after.physical_id,
                            &after.properties,
                            &before.properties,
                            &[],
                        )
                        .await
                        .map_err(|e| e.to_string())?;
                    before.physical_id = restored.physical_id;
                    before.attributes = Some(restored.attributes);
                    ledger.change(|s| {
                        s.resources.insert(id.clone(), before);
                    });
                }
                OperationKind::Policy => {
                    let before = operation.before.clone().ok_or("no previous record")?;
                    ledger.change(|s| {
                        s.resources.insert(id.clone(), before);
                    });
                }
            }
            Ok(())
        }
        .await;
        match result {
            Ok(()) => reporter.resource(
                stack,
                &id,
                &operation.resource_type,
                "rolled back",
                Some(began.elapsed()),
            ),
            Err(message) => {
                reporter.resource(
                    stack,
                    &id,
                    &operation.resource_type,
                    &format!("rollback failed: {message}"),
                    Some(began.elapsed()),
                );
                remaining.push(operation);
                return remaining;
            }
        }
    }
    remaining
}
