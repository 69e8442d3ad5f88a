//! `cdkd import`: adopting existing AWS resources into a stack's record, as if a deploy had
//! created them. Synth-driven: logical ids, types and dependencies come from the template.
//!
//! Everything is checked before anything is written: every logical id is in the template, no
//! resource is already recorded (unless forced), every composite id has its shape, and every
//! resource exists (through its provider: a plugin's importer, or Cloud Control's
//! `GetResource`). Then one conditional save writes them all, under the stack lock.
//!
//! What is recorded is what a fresh deploy would have recorded: the physical id and attributes
//! the provider answered, the routing layer (`provisionedBy`), the template's policies and
//! dependencies, and `observedProperties` read right after. `properties` are the template's,
//! resolved against the record, except where AWS reports another value for a key the template
//! declares: there AWS's value is recorded, so `cdkd diff` shows what a deploy would change.

use std::collections::{BTreeMap, BTreeSet};

use cdkd_provider_api::ProviderError;
use futures_util::StreamExt;
use serde_json::{Map, Value};

use super::deploy::StackInput;
use super::engine::Engine;
use super::external::StateSnapshot;
use crate::analyzer::drift::without_sibling_rules;
use crate::analyzer::intrinsics::contains_unknown;
use crate::analyzer::no_echo::NoEcho;
use crate::analyzer::plan::StackPlan;
use crate::provisioning::names;
use crate::provisioning::operations::{Observation, ProviderSet, ReadCall};
use crate::provisioning::preflight::NESTED_STACK;
use crate::provisioning::router::{AllowedDrops, Decision};
use crate::state::schema::{ResourceState, StackState};

/// What to import.
#[derive(Debug, Clone, Default)]
pub struct ImportRequest {
    /// Logical id → physical id, as given (`--resource`, mapping files).
    pub resources: BTreeMap<String, String>,
    /// Also find every other resource by the physical name its template declares.
    pub auto: bool,
    /// Re-point resources that are already recorded.
    pub force: bool,
    /// Check everything, write nothing.
    pub dry_run: bool,
    /// A composite id given in another shape (CloudFormation's physical id of a route, a
    /// rule or an attachment) is built from the resolved template properties instead.
    pub derive_composites: bool,
    /// Nested stacks whose children were adopted already: logical id → the child's stable
    /// id and its `Outputs.X` attributes.
    pub nested: BTreeMap<String, (String, Map<String, Value>)>,
    /// The stack's outputs as its previous owner reported them (a migrated stack's).
    pub outputs: Option<Map<String, Value>>,
}

/// One resource's import.
#[derive(Debug, Clone, PartialEq)]
pub enum Imported {
    /// Adopted (or, on a dry run, would be).
    Adopted {
        /// The logical id.
        logical_id: String,
        /// Its type.
        resource_type: String,
        /// The physical id recorded.
        physical_id: String,
        /// The physical id it was recorded with before (`--force`).
        replaced: Option<String>,
    },
    /// Left out of `--auto` (the reason).
    Skipped(String, String),
}

/// Why an import was refused; nothing was written.
#[derive(Debug, thiserror::Error)]
#[error("cdkd import {stack}: nothing was imported:\n  - {}", .problems.join("\n  - "))]
pub struct ImportRefused {
    /// The stack.
    pub stack: String,
    /// Every problem found.
    pub problems: Vec<String>,
}

impl Engine<'_> {
    /// Imports `request`'s resources into `input`'s stack record, under its lock.
    pub async fn import(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        request: &ImportRequest,
    ) -> anyhow::Result<Vec<Imported>> {
        let context = &input.context;
        let work = self.import_locked(input, snapshot, request);
        (self.locked(&context.stack_name, &context.region, "import", work)).await
    }

    async fn import_locked(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        request: &ImportRequest,
    ) -> anyhow::Result<Vec<Imported>> {
        let context = &input.context;
        let (stack, region) = (context.stack_name.as_str(), context.region.as_str());
        let stored = self.store.load(stack, region).await?;
        let recorded = stored.as_ref().map(|s| s.state.clone());
        let planned = self
            .plan_against(input, snapshot, recorded.as_ref())
            .await?;
        refuse_any(stack, unknown_ids(request, &planned))?;

        // Routing, exactly as a deploy would decide it.
        let decisions = self
            .route(
                input,
                &planned,
                recorded.as_ref(),
                &AllowedDrops::default(),
                &BTreeMap::new(),
            )
            .map_err(|problems| refused(stack, problems))?;
        let plugin_types: BTreeSet<String> = decisions
            .iter()
            .filter(|(_, d)| matches!(d, Decision::Plugin(_)))
            .map(|(id, _)| input.template.resources[id].kind.clone())
            .collect();
        let timeout = std::time::Duration::from_secs(30 * 60);
        let providers = self
            .providers
            .prepare(region, &plugin_types, timeout)
            .await?;
        let scope = Adoption {
            input,
            snapshot,
            request,
            planned: &planned,
            decisions: &decisions,
            providers: providers.as_ref(),
            recorded: recorded.as_ref(),
        };

        // What to import: the resources named, then (`--auto`) the others by their names.
        let mut wanted: BTreeMap<String, String> = request.resources.clone();
        let mut outcomes = Vec::new();
        if request.auto {
            outcomes = scope.find_by_name(self, &mut wanted).await;
        }
        let (derived, problems) = self.check_wanted(&scope, &mut wanted);
        refuse_any(stack, problems)?;

        // Every resource must exist and have an importer; all are read before anything is
        // written. Composite ids built from properties come second, once the resources their
        // properties name have ids.
        for logical_id in &derived {
            wanted.remove(logical_id);
        }
        let mut state = initial_state(input, scope.recorded, request);
        let mut records = scope.nested_records();
        let adopted = adopt_all(
            scope.providers,
            &planned,
            &input.template,
            &decisions,
            &wanted,
        )
        .await;
        refuse_any(stack, settle(adopted, &mut records))?;
        let mut resolved = self
            .resolve_adopted(input, snapshot, &mut state, &records)
            .await?;
        if !derived.is_empty() {
            resolved = self
                .adopt_derived(&scope, &derived, &resolved, &mut state, &mut records)
                .await?;
        }
        scope.reread_stale(&wanted, &resolved, &mut records).await;
        scope.record_all(&resolved, &mut records, &mut state);
        outcomes.extend(adopted_outcomes(scope.recorded, &records));
        if !request.dry_run && (!records.is_empty() || request.outputs.is_some()) {
            NoEcho::of(&input.template, &input.parameters).mask_record(&mut state);
            self.store
                .save(stack, region, &mut state, stored.as_ref())
                .await?;
        }
        Ok(outcomes)
    }

    /// Puts each id given in a looser form the spec accepts into the provider's form, and
    /// checks every wanted resource: not a nested stack, not recorded already (unless forced),
    /// a composite id of its type's shape. Returns the resources whose composite id is to be
    /// built from their properties (`--derive-composites`), and the problems.
    fn check_wanted(
        &self,
        scope: &Adoption<'_>,
        wanted: &mut BTreeMap<String, String>,
    ) -> (Vec<String>, Vec<String>) {
        let template = &scope.input.template;
        for (logical_id, physical_id) in wanted.iter_mut() {
            if let Some(id) = accepted_id(&template.resources[logical_id].kind, physical_id) {
                *physical_id = id;
            }
        }
        let (mut derived, mut problems) = (Vec::new(), Vec::new());
        for (logical_id, physical_id) in wanted.iter() {
            let kind = &template.resources[logical_id].kind;
            if kind == NESTED_STACK {
                problems.push(format!(
                    "{logical_id}: a nested stack is adopted with its parent by --migrate-from-cloudformation, not on its own"
                ));
            }
            if let Some(existing) = scope.recorded.and_then(|s| s.resources.get(logical_id)) {
                if !scope.request.force {
                    problems.push(format!(
                        "{logical_id} is already in state as {} ({}); pass --force to re-point it to {physical_id}",
                        existing.physical_id, existing.resource_type
                    ));
                }
            }
            if let Some(composite) = self
                .registry
                .schema(kind)
                .and_then(|schema| schema.composite_id.clone())
            {
                let found = physical_id.split('|').count();
                let misshapen =
                    found != composite.segments.len() || physical_id.split('|').any(str::is_empty);
                if misshapen && scope.request.derive_composites {
                    derived.push(logical_id.clone());
                } else if misshapen {
                    problems.push(format!(
                        "{logical_id}: {kind} ids have the shape {} ({} segments joined by '|'), and {physical_id:?} has {found}",
                        composite
                            .segments
                            .iter()
                            .map(|s| format!("<{s}>"))
                            .collect::<Vec<_>>()
                            .join("|"),
                        composite.segments.len()
                    ));
                }
            }
        }
        (derived, problems)
    }

    /// Adopts the resources whose composite ids are built from their resolved properties,
    /// and resolves the template again against them.
    async fn adopt_derived(
        &self,
        scope: &Adoption<'_>,
        derived: &[String],
        resolved: &StackPlan,
        state: &mut StackState,
        records: &mut BTreeMap<String, Adopted>,
    ) -> anyhow::Result<StackPlan> {
        let template = &scope.input.template;
        let mut problems = Vec::new();
        let mut built = BTreeMap::new();
        for logical_id in derived {
            let kind = &template.resources[logical_id].kind;
            match composite_from_properties(self.registry, kind, &resolved.properties[logical_id]) {
                Ok(id) => {
                    built.insert(logical_id.clone(), id);
                }
                Err(problem) => problems.push(format!("{logical_id}: {problem}")),
            }
        }
        let adopted = adopt_all(scope.providers, resolved, template, scope.decisions, &built).await;
        problems.extend(settle(adopted, records));
        refuse_any(&scope.input.context.stack_name, problems)?;
        self.resolve_adopted(scope.input, scope.snapshot, state, records)
            .await
    }

    /// Puts the adopted records into `state` and resolves the template against them.
    ///
    /// A reference between two resources adopted together resolves once the one it names is
    /// planned unchanged, which takes one round per link of the chain (a route names its
    /// table, which names its VPC): plan again until nothing more resolves.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    async fn resolve_adopted(
        &self,
        input: &StackInput,
        snapshot: &StateSnapshot,
        state: &mut StackState,
        records: &BTreeMap<String, Adopted>,
    ) -> anyhow::Result<StackPlan> {
        for (logical_id, (record, _)) in records {
            state
                .resources
                .entry(logical_id.clone())
                .or_insert_with(|| record.clone());
        }
        let mut resolved = self.plan_against(input, snapshot, Some(state)).await?;
        for _ in 0..=records.len() {
            let mut progressed = false;
            for logical_id in records.keys() {
                let now = &resolved.properties[logical_id];
                let record = state.resources.get_mut(logical_id).expect("inserted above");
                if &record.properties != now {
                    record.properties = now.clone();
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
            resolved = self.plan_against(input, snapshot, Some(state)).await?;
        }
        Ok(resolved)
    }
}

/// An import's refusal, with every problem found.
fn refused(stack: &str, problems: Vec<String>) -> ImportRefused {
    ImportRefused {
        stack: stack.to_string(),
        problems,
    }
}

/// Refuses the import when there is any problem.
fn refuse_any(stack: &str, problems: Vec<String>) -> anyhow::Result<()> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(refused(stack, problems).into())
    }
}

/// A problem for each logical id of the request that is not a resource of the template.
fn unknown_ids(request: &ImportRequest, planned: &StackPlan) -> Vec<String> {
    let mut problems = Vec::new();
    for logical_id in request.resources.keys().chain(request.nested.keys()) {
        if !planned.properties.contains_key(logical_id) {
            let mut available: Vec<&String> = planned.properties.keys().collect();
            available.sort();
            problems.push(format!(
                "{logical_id} is not a resource of the template (its resources: {})",
                available
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    problems
}

/// The record the adopted resources go into: the stack's, or a new one (placed under its
/// parent for a nested stack), with the outputs the previous owner reported.
fn initial_state(
    input: &StackInput,
    recorded: Option<&StackState>,
    request: &ImportRequest,
) -> StackState {
    let context = &input.context;
    let mut state = recorded.cloned().unwrap_or_else(|| {
        let mut state = StackState::new(&context.stack_name, &context.region);
        if let Some(parent) = &input.parent {
            state.parent_stack = Some(parent.stack.clone());
            state.parent_logical_id = Some(parent.logical_id.clone());
            state.parent_region = Some(parent.region.clone());
        }
        state
    });
    if let Some(outputs) = &request.outputs {
        state.outputs = outputs.clone();
    }
    state
}

/// What the import reports for each adopted record (with the physical id it replaced).
fn adopted_outcomes(
    recorded: Option<&StackState>,
    records: &BTreeMap<String, Adopted>,
) -> Vec<Imported> {
    records
        .iter()
        .map(|(logical_id, (record, _))| Imported::Adopted {
            logical_id: logical_id.clone(),
            resource_type: record.resource_type.clone(),
            physical_id: record.physical_id.clone(),
            replaced: recorded
                .and_then(|s| s.resources.get(logical_id))
                .map(|r| r.physical_id.clone()),
        })
        .collect()
}

/// One import's fixed inputs: the stack, the request, the template planned against the record
/// before the import, its routing and the providers prepared for it.
struct Adoption<'a> {
    input: &'a StackInput,
    snapshot: &'a StateSnapshot,
    request: &'a ImportRequest,
    planned: &'a StackPlan,
    decisions: &'a BTreeMap<String, Decision>,
    providers: &'a dyn ProviderSet,
    recorded: Option<&'a StackState>,
}

impl Adoption<'_> {
    /// `--auto`: finds each resource not named by the physical name its template declares,
    /// adding what is found to `wanted`; returns the resources left out, with why.
    async fn find_by_name(
        &self,
        engine: &Engine<'_>,
        wanted: &mut BTreeMap<String, String>,
    ) -> Vec<Imported> {
        let ids = engine
            .providers
            .account_ids(&self.input.context.region)
            .await;
        let mut outcomes = Vec::new();
        for logical_id in self.planned.graph.order() {
            if wanted.contains_key(logical_id) {
                continue;
            }
            let kind = &self.input.template.resources[logical_id].kind;
            let recorded_already = self
                .recorded
                .is_some_and(|s| s.resources.contains_key(logical_id));
            let skip = |reason: &str| Imported::Skipped(logical_id.clone(), reason.into());
            if recorded_already && !self.request.force {
                outcomes.push(skip("already in state"));
                continue;
            }
            let name = names::rule_for(kind).and_then(|rule| {
                self.planned.properties[logical_id]
                    .get(rule.property)
                    .and_then(Value::as_str)
                    .map(|name| (rule.property, name.to_string()))
            });
            let Some((property, name)) = name else {
                outcomes.push(skip(
                    "the template gives it no physical name; pass --resource LogicalId=physicalId",
                ));
                continue;
            };
            let provider = self
                .providers
                .for_decision(kind, &self.decisions[logical_id]);
            match provider.find_named(kind, logical_id, &name, &ids).await {
                Ok(Some(found)) => {
                    wanted.insert(logical_id.clone(), found.physical_id);
                }
                Ok(None) => {
                    outcomes.push(skip(&format!("no {kind} named {name} ({property}) exists")))
                }
                Err(err) => outcomes.push(skip(&format!("cannot look it up by name: {err}"))),
            }
        }
        outcomes
    }

    /// The records of the nested stacks whose children were adopted already.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    fn nested_records(&self) -> BTreeMap<String, Adopted> {
        let mut records = BTreeMap::new();
        for (logical_id, (physical_id, attributes)) in &self.request.nested {
            let resource = &self.input.template.resources[logical_id];
            let node = self
                .planned
                .graph
                .node(logical_id)
                .expect("planned ids are nodes");
            let record = ResourceState {
                physical_id: physical_id.clone(),
                resource_type: resource.kind.clone(),
                properties: self.planned.properties[logical_id].clone(),
                observed_properties: None,
                attributes: Some(attributes.clone()),
                dependencies: Some(node.dependencies.iter().cloned().collect()),
                metadata: None,
                deletion_policy: resource.deletion_policy.clone(),
                update_replace_policy: resource.update_replace_policy.clone(),
                provisioned_by: self.decisions[logical_id].provisioned_by(),
                extra: Map::new(),
            };
            records.insert(logical_id.clone(), (record, None));
        }
        records
    }

    /// A resource read while a property still named another adopted resource was read
    /// without the template's spelling of it (an alias's target key by ARN, where KMS
    /// answers the key id): reads it again with the resolved properties, so the same value in
    /// another spelling is not recorded as a change the next deploy would make.
    async fn reread_stale(
        &self,
        wanted: &BTreeMap<String, String>,
        resolved: &StackPlan,
        records: &mut BTreeMap<String, Adopted>,
    ) {
        let stale: Vec<&String> = wanted
            .keys()
            .filter(|id| needs_reread(&self.planned.properties[*id], &resolved.properties[*id]))
            .collect();
        let template = &self.input.template;
        let live = reread(
            self.providers,
            resolved,
            template,
            self.decisions,
            records,
            stale,
        );
        for (logical_id, live) in live.await {
            // A read that fails now keeps what the first one found.
            if let (Some(live), Some((record, observed))) = (live, records.get_mut(&logical_id)) {
                record.observed_properties = Some(live.clone());
                *observed = Some(live);
            }
        }
    }

    /// Writes each adopted record into `state` as a deploy would have recorded it: the
    /// resolved properties with AWS's values, a group without the rules its sibling ingress
    /// and egress resources own, and the attributes it keeps.
    fn record_all(
        &self,
        resolved: &StackPlan,
        records: &mut BTreeMap<String, Adopted>,
        state: &mut StackState,
    ) {
        let template = &self.input.template;
        let siblings: Vec<(&str, &Map<String, Value>)> = resolved
            .properties
            .iter()
            .map(|(id, properties)| (template.resources[id].kind.as_str(), properties))
            .collect();
        for (logical_id, (record, live)) in records.iter_mut() {
            // A group's rules that the stack's standalone ingress / egress resources own are
            // theirs, as in a deploy's record.
            if record.resource_type == "AWS::EC2::SecurityGroup" {
                for properties in live.iter_mut().chain(record.observed_properties.iter_mut()) {
                    without_sibling_rules(
                        &record.physical_id,
                        properties,
                        siblings.iter().copied(),
                    );
                }
            }
            record.properties =
                recorded_properties(&resolved.properties[logical_id], live.as_ref());
            inherit_attributes(
                record,
                self.recorded.and_then(|s| s.resources.get(logical_id)),
            );
            state.resources.insert(logical_id.clone(), record.clone());
        }
    }
}

/// The stored form of an id `--resource` may give in another shape (the spec's composite-id
/// table): an `AWS::ECS::Service` as `<clusterArn>|<serviceName>` is its service ARN,
/// `arn:<partition>:ecs:<region>:<account>:service/<cluster>/<service>`. `None`: keep it.
pub fn accepted_id(kind: &str, physical_id: &str) -> Option<String> {
    if kind != "AWS::ECS::Service" {
        return None;
    }
    let (cluster_arn, service) = physical_id.split_once('|')?;
    let (prefix, cluster) = cluster_arn.split_once(":cluster/")?;
    let valid = prefix.starts_with("arn:")
        && prefix.split(':').nth(2) == Some("ecs")
        && !cluster.is_empty()
        && !cluster.contains('/')
        && !service.is_empty()
        && !service.contains(['|', '/']);
    valid.then(|| format!("{prefix}:service/{cluster}/{service}"))
}

/// A provider's import that reports no attributes (none, or `{}`) keeps the map already in
/// state, but only when the resource is re-imported at the same physical id: a logical id
/// repointed at another resource never inherits the old one's attributes.
fn inherit_attributes(record: &mut ResourceState, previous: Option<&ResourceState>) {
    if record.attributes.as_ref().is_some_and(|a| !a.is_empty()) {
        return;
    }
    record.attributes = Some(
        previous
            .filter(|p| p.physical_id == record.physical_id)
            .and_then(|p| p.attributes.clone())
            .unwrap_or_default(),
    );
}

/// An adopted resource's record and what AWS reports of it.
type Adopted = (ResourceState, Option<Map<String, Value>>);

/// Moves the successful adoptions into `records`; returns the problems.
fn settle(
    adopted: Vec<(String, Result<Adopted, ProviderError>)>,
    records: &mut BTreeMap<String, Adopted>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (logical_id, result) in adopted {
        match result {
            Ok(record) => {
                records.insert(logical_id, record);
            }
            Err(problem) => problems.push(format!("{logical_id}: {problem}")),
        }
    }
    problems
}

/// Why a composite id cannot be built from a resource's template properties.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum CompositeError {
    /// The type's schema declares no composite id.
    #[error("{kind} has no composite id")]
    NoComposite { kind: String },
    /// A segment that is not a port has no value in the template.
    #[error("its {kind} id needs <{segment}>, which the template's {} does not give; pass --resource with the id", .sources.join(" / "))]
    MissingSegment {
        kind: String,
        segment: String,
        /// The properties the segment is copied from.
        sources: Vec<String>,
    },
    /// The schema's segments and their sources do not pair up.
    #[error("cdkd cannot build a {kind} id from its properties; pass --resource with the id")]
    Incomplete { kind: String },
}

/// A composite id built from the template properties its segments are copied from (an
/// omitted port is `-1`, as cdkd records it).
fn composite_from_properties(
    registry: &crate::provisioning::registry::Registry,
    kind: &str,
    properties: &Map<String, Value>,
) -> Result<String, CompositeError> {
    let composite = registry
        .schema(kind)
        .and_then(|schema| schema.composite_id.clone())
        .ok_or_else(|| CompositeError::NoComposite { kind: kind.into() })?;
    let mut segments = Vec::new();
    for (segment, sources) in composite.segments.iter().zip(&composite.segment_sources) {
        let value = sources
            .iter()
            .find_map(|source| match properties.get(source) {
                Some(Value::String(text)) if !contains_unknown(&Value::String(text.clone())) => {
                    Some(text.clone())
                }
                Some(Value::Number(number)) => Some(number.to_string()),
                Some(Value::Bool(flag)) => Some(flag.to_string()),
                _ => None,
            });
        match value {
            Some(value) => segments.push(value),
            None if segment.ends_with("Port") => segments.push("-1".into()),
            None => {
                return Err(CompositeError::MissingSegment {
                    kind: kind.into(),
                    segment: segment.clone(),
                    sources: sources.clone(),
                })
            }
        }
    }
    if segments.len() != composite.segments.len() {
        return Err(CompositeError::Incomplete { kind: kind.into() });
    }
    Ok(segments.join("|"))
}

/// Adopts every wanted resource (several at once): its record without `properties`, and what
/// AWS reports of it.
#[allow(
    clippy::expect_used,
    reason = "an invariant: every id the plan orders or names is a node of its graph"
)]
async fn adopt_all(
    providers: &dyn ProviderSet,
    planned: &StackPlan,
    template: &crate::analyzer::template::Template,
    decisions: &BTreeMap<String, Decision>,
    wanted: &BTreeMap<String, String>,
) -> Vec<(String, Result<Adopted, ProviderError>)> {
    futures_util::stream::iter(wanted.iter())
        .map(|(logical_id, physical_id)| async move {
            let resource = &template.resources[logical_id];
            let decision = &decisions[logical_id];
            let provider = providers.for_decision(&resource.kind, decision);
            let properties = &planned.properties[logical_id];
            let adopted = provider
                .import(ReadCall {
                    resource_type: &resource.kind,
                    logical_id,
                    physical_id,
                    properties,
                })
                .await;
            let adopted = match adopted {
                Ok(adopted) => adopted,
                Err(problem) => return (logical_id.clone(), Err(problem)),
            };
            let live = match provider
                .read_current_state(ReadCall {
                    resource_type: &resource.kind,
                    logical_id,
                    physical_id: &adopted.physical_id,
                    properties,
                })
                .await
            {
                Ok(Observation::Live(live)) => Some(live),
                _ => None,
            };
            let node = planned
                .graph
                .node(logical_id)
                .expect("planned ids are nodes");
            let record = ResourceState {
                physical_id: adopted.physical_id,
                resource_type: resource.kind.clone(),
                // The plan-time values until the template is resolved against the adopted
                // ids: a plan then sees no replacement, so references to it resolve.
                properties: properties.clone(),
                observed_properties: live.clone(),
                attributes: Some(adopted.attributes),
                dependencies: Some(node.dependencies.iter().cloned().collect()),
                metadata: None,
                deletion_policy: resource.deletion_policy.clone(),
                update_replace_policy: resource.update_replace_policy.clone(),
                provisioned_by: decision.provisioned_by(),
                extra: Map::new(),
            };
            (logical_id.clone(), Ok((record, live)))
        })
        .buffer_unordered(8)
        .collect()
        .await
}

/// Whether a resource read with `planned` properties must be read again with `resolved`: a
/// value that named a resource not adopted yet is known now.
fn needs_reread(planned: &Map<String, Value>, resolved: &Map<String, Value>) -> bool {
    planned.iter().any(|(key, value)| {
        contains_unknown(value) && resolved.get(key).is_some_and(|v| !contains_unknown(v))
    })
}

/// What AWS reports of each of `ids` (already adopted into `records`), read with its resolved
/// properties; `None` when the read failed or found nothing.
async fn reread(
    providers: &dyn ProviderSet,
    resolved: &StackPlan,
    template: &crate::analyzer::template::Template,
    decisions: &BTreeMap<String, Decision>,
    records: &BTreeMap<String, Adopted>,
    ids: Vec<&String>,
) -> Vec<(String, Option<Map<String, Value>>)> {
    futures_util::stream::iter(ids)
        .map(|logical_id| async move {
            let kind = &template.resources[logical_id].kind;
            let provider = providers.for_decision(kind, &decisions[logical_id]);
            let physical_id = &records[logical_id].0.physical_id;
            let live = match provider
                .read_current_state(ReadCall {
                    resource_type: kind,
                    logical_id,
                    physical_id,
                    properties: &resolved.properties[logical_id],
                })
                .await
            {
                Ok(Observation::Live(live)) => Some(live),
                _ => None,
            };
            (logical_id.clone(), live)
        })
        .buffer_unordered(8)
        .collect()
        .await
}

/// The properties recorded for an adopted resource: the template's, with AWS's value where AWS
/// reports one for a declared key (a deploy then shows the difference as an update), and
/// without the keys still unknown (they name resources not adopted yet).
fn recorded_properties(
    template: &Map<String, Value>,
    live: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    template
        .iter()
        .filter_map(|(key, value)| match live.and_then(|l| l.get(key)) {
            Some(reported) => Some((key.clone(), reported.clone())),
            None if contains_unknown(value) => None,
            None => Some((key.clone(), value.clone())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_ecs_service_is_accepted_as_cluster_arn_and_service_name() {
        let kind = "AWS::ECS::Service";
        assert_eq!(
            accepted_id(kind, "arn:aws:ecs:us-east-1:123456789012:cluster/prod|web").as_deref(),
            Some("arn:aws:ecs:us-east-1:123456789012:service/prod/web")
        );
        assert_eq!(
            accepted_id(kind, "arn:aws-cn:ecs:cn-north-1:123456789012:cluster/c|s").as_deref(),
            Some("arn:aws-cn:ecs:cn-north-1:123456789012:service/c/s")
        );
        // The service ARN itself, and shapes that are not a cluster ARN and a name, stay.
        for kept in [
            "arn:aws:ecs:us-east-1:123456789012:service/prod/web",
            "prod|web",
            "arn:aws:ecs:us-east-1:123456789012:cluster/prod|",
            "arn:aws:ecs:us-east-1:123456789012:cluster/prod|a|b",
            "arn:aws:s3:::cluster/prod|web",
        ] {
            assert_eq!(accepted_id(kind, kept), None, "{kept}");
        }
        assert_eq!(
            accepted_id("AWS::Glue::Table", "arn:aws:ecs:r:a:cluster/c|s"),
            None
        );
    }

    #[test]
    fn an_import_without_attributes_keeps_the_map_only_at_the_same_physical_id() {
        let row = |id: &str, attributes: Option<Value>| ResourceState {
            physical_id: id.into(),
            resource_type: "AWS::SQS::Queue".into(),
            properties: Map::new(),
            observed_properties: None,
            attributes: attributes.map(|a| a.as_object().unwrap().clone()),
            dependencies: None,
            metadata: None,
            deletion_policy: None,
            update_replace_policy: None,
            provisioned_by: None,
            extra: Map::new(),
        };
        let previous = row("q1", Some(json!({"Arn": "arn:q1"})));
        for reported in [None, Some(json!({}))] {
            let mut same = row("q1", reported);
            inherit_attributes(&mut same, Some(&previous));
            assert_eq!(same.attributes.unwrap()["Arn"], json!("arn:q1"));
        }
        let mut repointed = row("q2", Some(json!({})));
        inherit_attributes(&mut repointed, Some(&previous));
        assert_eq!(repointed.attributes, Some(Map::new()));
        let mut fresh = row("q1", None);
        inherit_attributes(&mut fresh, None);
        assert_eq!(fresh.attributes, Some(Map::new()));
        // What the provider reports wins.
        let mut reported = row("q1", Some(json!({"Arn": "arn:new"})));
        inherit_attributes(&mut reported, Some(&previous));
        assert_eq!(reported.attributes.unwrap()["Arn"], json!("arn:new"));
    }

    #[test]
    fn aws_values_win_for_declared_keys_and_unknowns_are_left_out() {
        let template = json!({"A": 1, "B": "x", "Code": {"ZipFile": "z"},
            "Ref": crate::analyzer::intrinsics::unknown("Other.Arn")})
        .as_object()
        .unwrap()
        .clone();
        let live = json!({"A": 2, "B": "x", "Arn": "arn"})
            .as_object()
            .unwrap()
            .clone();
        let recorded = recorded_properties(&template, Some(&live));
        assert_eq!(
            Value::Object(recorded),
            json!({"A": 2, "B": "x", "Code": {"ZipFile": "z"}})
        );
    }

    #[test]
    fn a_composite_id_that_cannot_be_built_is_a_typed_problem_with_its_advice() {
        let registry = crate::provisioning::registry::Registry::load(
            crate::provisioning::plugins_file::PluginsFile::empty(),
        );
        let problem =
            composite_from_properties(&registry, "AWS::EC2::Route", &Map::new()).unwrap_err();
        assert_eq!(
            problem,
            CompositeError::NoComposite {
                kind: "AWS::EC2::Route".into()
            }
        );
        assert_eq!(problem.to_string(), "AWS::EC2::Route has no composite id");
        // The advice is what the user acts on.
        let missing = CompositeError::MissingSegment {
            kind: "AWS::EC2::Route".into(),
            segment: "RouteTableId".into(),
            sources: vec!["RouteTableId".into(), "TableId".into()],
        };
        assert_eq!(
            missing.to_string(),
            "its AWS::EC2::Route id needs <RouteTableId>, which the template's RouteTableId / TableId does not give; pass --resource with the id"
        );
    }

    #[test]
    fn a_failed_adoption_is_a_problem_named_by_its_logical_id() {
        let mut records = BTreeMap::new();
        let problems = settle(
            vec![(
                "Queue".into(),
                Err(ProviderError::validation("no queue q1")),
            )],
            &mut records,
        );
        assert!(records.is_empty());
        assert_eq!(
            problems,
            vec!["Queue: no queue q1 (validation)".to_string()]
        );
    }

    #[test]
    fn a_resource_read_before_its_references_were_known_is_read_again() {
        let planned = json!({"AliasName": "alias/a",
            "TargetKeyId": crate::analyzer::intrinsics::unknown("Key.Arn")});
        let resolved = json!({"AliasName": "alias/a", "TargetKeyId": "arn:aws:kms:r:1:key/k"});
        let still = json!({"AliasName": "alias/a",
            "TargetKeyId": crate::analyzer::intrinsics::unknown("Key.Arn")});
        let known = json!({"AliasName": "alias/a"});
        let map = |v: &Value| v.as_object().unwrap().clone();
        assert!(needs_reread(&map(&planned), &map(&resolved)));
        assert!(!needs_reread(&map(&planned), &map(&still)));
        assert!(!needs_reread(&map(&known), &map(&known)));
    }
}
