//! Expected AWS completion times, per resource type, operation and route (an SDK plugin or
//! Cloud Control), as data (`expected_times.json` beside this file, from the emulator's AWS
//! timing profile), overridable with a JSON file named by `CDKD_EXPECTED_TIMES`. They order
//! the executor's ready work (longest pole first: a slow wait starts before quick work that
//! nothing waits on) and give a plan's critical path, the floor of its wall time on AWS.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::analyzer::diff::Action;
use crate::analyzer::plan::StackPlan;
use crate::analyzer::template::Template;
use crate::provisioning::preflight::{route_all, Candidate};
use crate::provisioning::registry::Registry;
use crate::provisioning::router::{AllowedDrops, Decision};
use crate::state::schema::{ProvisionedBy, StackState};

/// The environment variable naming a JSON file of expected times that replace the built-in ones.
pub const OVERRIDE_VARIABLE: &str = "CDKD_EXPECTED_TIMES";
/// The environment variable that, set to `dependents`, orders ready work by its number of
/// transitive dependents alone, as before expected times were used (for before/after benches).
pub const ORDER_VARIABLE: &str = "CDKD_DISPATCH_ORDER";

const BUILTIN: &str = include_str!("expected_times.json");

/// Which way a resource goes to AWS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Route {
    /// A provider plugin calling the service's API.
    Sdk,
    /// Cloud Control.
    CloudControl,
}

impl Route {
    /// The route a routing decision takes (a nested stack counts as cdkd's own, the SDK's).
    pub fn of(decision: &Decision) -> Route {
        match decision {
            Decision::CloudControl(_) => Route::CloudControl,
            _ => Route::Sdk,
        }
    }

    /// The route a state record says its resource took.
    pub fn recorded(provisioned_by: Option<ProvisionedBy>) -> Route {
        match provisioned_by {
            Some(ProvisionedBy::CcApi) => Route::CloudControl,
            _ => Route::Sdk,
        }
    }
}

/// A resource operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Operation {
    /// A create (or the new resource of a replacement).
    Create,
    /// An update in place.
    Update,
    /// A delete.
    Delete,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Operations {
    create: u64,
    update: u64,
    delete: u64,
}

impl Operations {
    fn get(&self, operation: Operation) -> u64 {
        match operation {
            Operation::Create => self.create,
            Operation::Update => self.update,
            Operation::Delete => self.delete,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Routes {
    sdk: Operations,
    cloud_control: Operations,
    /// How long after its create the resource is refused by consumers outside IAM (a role's or
    /// instance profile's propagation): their create waits it out, IAM's own do not.
    #[serde(default)]
    propagation: u64,
    /// How long after its create it becomes ready for the consumer types in `ready_for` (a
    /// function `Active` for a version or a custom resource's invoke): those wait for it, other
    /// dependents take it as its create answered.
    #[serde(default)]
    ready: u64,
    /// The consumer types (a name, or a pattern ending in `*`) that wait `ready`.
    #[serde(default)]
    ready_for: Vec<String>,
}

impl Routes {
    fn get(&self, route: Route, operation: Operation) -> u64 {
        match route {
            Route::Sdk => self.sdk.get(operation),
            Route::CloudControl => self.cloud_control.get(operation),
        }
    }
}

/// Why the expected-times overrides cannot be used. Details are kept as text so the error
/// read once can be handed to every caller.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ExpectedTimesError {
    /// The overrides file cannot be read.
    #[error("expected times {origin} ({OVERRIDE_VARIABLE}): cannot be read ({detail}); fix the path or unset it")]
    Unreadable {
        /// Where the overrides were to come from.
        origin: String,
        /// The read error.
        detail: String,
    },
    /// The overrides are not JSON.
    #[error(
        "expected times {origin}: not JSON ({detail}); fix the file or unset {OVERRIDE_VARIABLE}"
    )]
    NotJson {
        /// Where the overrides came from.
        origin: String,
        /// The parse error.
        detail: String,
    },
    /// The overrides are JSON but not an object.
    #[error("expected times {origin}: not a JSON object like {{\"types\": {{\"AWS::EC2::NatGateway\": {{\"sdk\": {{\"create\": 120000}}}}}}}}; fix the file or unset {OVERRIDE_VARIABLE}")]
    NotObject {
        /// Where the overrides came from.
        origin: String,
    },
    /// The table with the overrides laid over it does not have the table's shape.
    #[error("expected times {origin}: {detail} (each type has \"sdk\" and \"cloudControl\", each with \"create\", \"update\", \"delete\" in milliseconds); fix the file or unset {OVERRIDE_VARIABLE}")]
    BadShape {
        /// Where the overrides came from.
        origin: String,
        /// The deserializer's complaint.
        detail: String,
    },
}

/// The expected times of every type, in milliseconds of AWS time.
#[derive(Debug, Clone, Deserialize)]
pub struct ExpectedTimes {
    default: Routes,
    /// By type, or `Type?Property` for a resource of that type that has the property.
    types: BTreeMap<String, Routes>,
    /// The deploy's own calls around the resources.
    #[serde(default)]
    deploy: DeployCalls,
}

/// The expected times of a deploy's own calls, in milliseconds: the state bucket's lock, reads
/// and writes and the first deploy's CloudFormation question, each one call that the resources'
/// operations wait for or that waits for them.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeployCalls {
    lock: u64,
    read: u64,
    first_deploy_check: u64,
    intent: u64,
    read_back: u64,
    save: u64,
}

impl ExpectedTimes {
    /// The built-in table.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: the JSON and templates are constants compiled into cdkd"
    )]
    pub fn builtin() -> ExpectedTimes {
        serde_json::from_str(BUILTIN).expect("expected_times.json is valid")
    }

    /// The built-in table with `overrides` (the same shape; any subset of types, routes and
    /// operations) laid over it. `source` names where they came from, for the error.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: the JSON and templates are constants compiled into cdkd"
    )]
    pub fn overridden(overrides: &str, source: &str) -> Result<ExpectedTimes, ExpectedTimesError> {
        let mut table: Value = serde_json::from_str(BUILTIN).expect("expected_times.json is JSON");
        let origin = || source.to_string();
        let overrides: Value =
            serde_json::from_str(overrides).map_err(|err| ExpectedTimesError::NotJson {
                origin: origin(),
                detail: err.to_string(),
            })?;
        if !overrides.is_object() {
            return Err(ExpectedTimesError::NotObject { origin: origin() });
        }
        merge(&mut table, overrides);
        serde_json::from_value(table).map_err(|err| ExpectedTimesError::BadShape {
            origin: origin(),
            detail: err.to_string(),
        })
    }

    /// The table this process uses: the built-in one, overridden by the file
    /// `CDKD_EXPECTED_TIMES` names (read once).
    pub fn current() -> Result<&'static ExpectedTimes, ExpectedTimesError> {
        static CURRENT: OnceLock<Result<ExpectedTimes, ExpectedTimesError>> = OnceLock::new();
        CURRENT
            .get_or_init(|| match std::env::var_os(OVERRIDE_VARIABLE) {
                None => Ok(ExpectedTimes::builtin()),
                Some(path) => {
                    let shown = format!("file {}", path.to_string_lossy());
                    let text = std::fs::read_to_string(&path).map_err(|err| {
                        ExpectedTimesError::Unreadable {
                            origin: shown.clone(),
                            detail: err.to_string(),
                        }
                    })?;
                    ExpectedTimes::overridden(&text, &shown)
                }
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// How long `operation` on a resource of `resource_type` with `properties` is expected to
    /// take on AWS through `route`.
    pub fn expected(
        &self,
        resource_type: &str,
        properties: Option<&Map<String, Value>>,
        route: Route,
        operation: Operation,
    ) -> Duration {
        let routes = self.routes(resource_type, properties);
        Duration::from_millis(routes.get(route, operation))
    }

    /// The entry of `resource_type`: its `Type?Property` variant when it has the property.
    fn routes(&self, resource_type: &str, properties: Option<&Map<String, Value>>) -> &Routes {
        let variant = properties.and_then(|properties| {
            properties
                .keys()
                .find_map(|key| self.types.get(&format!("{resource_type}?{key}")))
        });
        variant
            .or_else(|| self.types.get(resource_type))
            .unwrap_or(&self.default)
    }

    /// How long after a create of `resource_type` its consumers outside IAM wait for it to
    /// propagate (zero for most types).
    pub fn propagation(&self, resource_type: &str) -> Duration {
        Duration::from_millis(self.types.get(resource_type).map_or(0, |r| r.propagation))
    }

    /// How long a `consumer` type waits, after a create of `resource_type` answered, before it
    /// can use it: IAM propagation for any consumer outside IAM, readiness for the types that
    /// need it (`readyFor`).
    pub fn settling(
        &self,
        resource_type: &str,
        properties: Option<&Map<String, Value>>,
        consumer: &str,
    ) -> Duration {
        let routes = self.routes(resource_type, properties);
        let propagation = if waits_out_propagation(consumer) {
            routes.propagation
        } else {
            0
        };
        let ready = if routes
            .ready_for
            .iter()
            .any(|declared| cdkd_provider_api::protocol::type_matches(declared, consumer))
        {
            routes.ready
        } else {
            0
        };
        Duration::from_millis(propagation.max(ready))
    }
}

/// Whether a resource of `consumer` type waits for a fresh IAM principal to propagate: every
/// service outside IAM checks the principal (Lambda, EC2, Step Functions, KMS, SNS, ...), while
/// IAM takes a fresh role into an instance profile or a policy at once.
fn waits_out_propagation(consumer: &str) -> bool {
    !consumer.starts_with("AWS::IAM::")
}

/// Whether ready work goes longest pole first (`CDKD_DISPATCH_ORDER=dependents` turns it off).
pub fn longest_pole_first() -> bool {
    std::env::var(ORDER_VARIABLE).map_or(true, |order| order != "dependents")
}

fn merge(base: &mut Value, overrides: Value) {
    match (base, overrides) {
        (Value::Object(base), Value::Object(overrides)) => {
            for (key, value) in overrides {
                match base.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

/// One operation on a critical path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// The resource's logical id.
    pub logical_id: String,
    /// Its type.
    pub resource_type: String,
    /// The route it takes.
    pub route: Route,
    /// What is done to it.
    pub operation: Operation,
    /// Its expected AWS time, in milliseconds.
    pub expected_ms: u64,
    /// Before it, how long it waits for what it uses to settle after that was created (a role
    /// or instance profile to propagate, a function to be `Active`).
    #[serde(skip_serializing_if = "is_zero")]
    pub settle_ms: u64,
}

fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

/// The longest chain of dependent operations of a deploy plan, by expected AWS time: creates
/// and updates in dependency order, then the deletes (which start once those are done) in
/// reverse dependency order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CriticalPath {
    /// The chain's expected time, in milliseconds.
    pub total_ms: u64,
    /// Its operations, first to last.
    pub steps: Vec<Step>,
    /// The deploy's own calls on the chain (the lock, the state's reads and writes, ...), in
    /// the order they are made; their times are in `total_ms`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub own_calls: Vec<OwnCall>,
}

/// One of a deploy's own calls on its critical path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnCall {
    /// What it is, e.g. "take the lock".
    pub what: &'static str,
    /// Its expected AWS time, in milliseconds.
    pub expected_ms: u64,
    /// Whether it comes after the resources' operations (else before them).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub after: bool,
}

/// The expected time of each create or update in `plan` on its route (`decisions`; a resource
/// without one goes through Cloud Control), by logical id; no-change resources take none.
pub fn plan_durations(
    plan: &StackPlan,
    template: &Template,
    decisions: &BTreeMap<String, Decision>,
    table: &ExpectedTimes,
) -> BTreeMap<String, (Route, Operation, Duration)> {
    plan.changes
        .iter()
        .filter(|c| matches!(c.action, Action::Create | Action::Update))
        .filter_map(|change| {
            let resource = template.resources.get(&change.logical_id)?;
            let route = decisions
                .get(&change.logical_id)
                .map_or(Route::CloudControl, Route::of);
            let operation = if change.action == Action::Create || change.replacement {
                Operation::Create
            } else {
                Operation::Update
            };
            let properties = plan.properties.get(&change.logical_id);
            let expected = table.expected(&resource.kind, properties, route, operation);
            Some((change.logical_id.clone(), (route, operation, expected)))
        })
        .collect()
}

/// The critical path of deploying `plan` (see [`CriticalPath`]): its resources' longest chain
/// with the deploy's own calls before and after it (the lock and the state read, the first
/// deploy's CloudFormation question, the intents written before the first create; the last
/// resource read back for its drift baseline and the state saved). A plan that changes nothing
/// has none. `recorded` gives the deletes' types, routes and dependencies.
pub fn critical_path(
    plan: &StackPlan,
    template: &Template,
    decisions: &BTreeMap<String, Decision>,
    recorded: Option<&StackState>,
    table: &ExpectedTimes,
) -> CriticalPath {
    let mut path = resource_path(plan, template, decisions, recorded, table);
    if path.steps.is_empty() {
        return path;
    }
    let calls = table.deploy;
    let writes = path.steps.iter().any(|s| s.operation != Operation::Delete);
    let first_deploy_check = match recorded {
        None => calls.first_deploy_check,
        Some(_) => 0,
    };
    let read_back = if writes { calls.read_back } else { 0 };
    let own = [
        ("take the lock", calls.lock, false),
        ("read the state and journal", calls.read, false),
        (
            "ask CloudFormation about a first deploy",
            first_deploy_check,
            false,
        ),
        ("record the intents", calls.intent, false),
        ("read back the last resource", read_back, true),
        ("save the state", calls.save, true),
    ];
    path.own_calls = own
        .into_iter()
        .filter(|(_, ms, _)| *ms > 0)
        .map(|(what, expected_ms, after)| OwnCall {
            what,
            expected_ms,
            after,
        })
        .collect();
    path.total_ms += path.own_calls.iter().map(|c| c.expected_ms).sum::<u64>();
    path
}

/// The longest chain of the resources' operations alone.
#[allow(
    clippy::expect_used,
    reason = "an invariant: every id the plan orders or names is a node of its graph"
)]
fn resource_path(
    plan: &StackPlan,
    template: &Template,
    decisions: &BTreeMap<String, Decision>,
    recorded: Option<&StackState>,
    table: &ExpectedTimes,
) -> CriticalPath {
    let durations = plan_durations(plan, template, decisions, table);
    let nodes: Vec<Node> = plan
        .graph
        .order()
        .iter()
        .map(|id| {
            let node = plan.graph.node(id).expect("ordered ids are nodes");
            let step = durations.get(id).map(|(route, operation, expected)| Step {
                logical_id: id.clone(),
                resource_type: template.resources[id].kind.clone(),
                route: *route,
                operation: *operation,
                expected_ms: expected.as_millis() as u64,
                settle_ms: 0,
            });
            let consumer = &template.resources[id].kind;
            // What a fresh dependency needs before this resource can use it.
            let settle = node
                .dependencies
                .iter()
                .filter(|d| {
                    durations
                        .get(*d)
                        .is_some_and(|(_, operation, _)| *operation == Operation::Create)
                })
                .filter_map(|d| {
                    let kind = &template.resources.get(d)?.kind;
                    let ms = table.settling(kind, plan.properties.get(d), consumer);
                    (!ms.is_zero()).then(|| (d.clone(), ms.as_millis() as u64))
                })
                .collect();
            Node {
                id: id.clone(),
                waits_for: node.dependencies.clone(),
                step,
                settle,
            }
        })
        .collect();
    let mut path = longest_chain(&nodes);

    // Deletes: the old resource of a replacement, and what the template no longer has; a
    // resource is deleted after every deleted resource that depends on it.
    let Some(recorded) = recorded else {
        return path;
    };
    let doomed: BTreeSet<&String> = plan
        .changes
        .iter()
        .filter(|c| c.action == Action::Delete || (c.action == Action::Update && c.replacement))
        .map(|c| &c.logical_id)
        .filter(|id| recorded.resources.contains_key(*id))
        .collect();
    let mut deletes: Vec<Node> = Vec::new();
    for id in doomed.iter().copied() {
        let record = &recorded.resources[id];
        let route = Route::recorded(record.provisioned_by);
        let expected = table.expected(
            &record.resource_type,
            Some(&record.properties),
            route,
            Operation::Delete,
        );
        let waits_for = doomed
            .iter()
            .filter(|other| {
                recorded.resources[**other]
                    .dependencies
                    .iter()
                    .flatten()
                    .any(|d| d == id)
            })
            .map(|other| (*other).clone())
            .collect();
        deletes.push(Node {
            id: id.clone(),
            waits_for,
            step: Some(Step {
                logical_id: id.clone(),
                resource_type: record.resource_type.clone(),
                route,
                operation: Operation::Delete,
                expected_ms: expected.as_millis() as u64,
                settle_ms: 0,
            }),
            settle: BTreeMap::new(),
        });
    }
    let deleted = longest_chain_any_order(&deletes);
    path.total_ms += deleted.total_ms;
    path.steps.extend(deleted.steps);
    path
}

/// The critical path of a planned stack, each resource on the route a deploy would give it
/// (its plugin, else Cloud Control; the recorded route sticks). A resource the deploy would
/// refuse counts as Cloud Control.
pub fn routed_critical_path(
    registry: &Registry,
    stack: &str,
    plan: &StackPlan,
    template: &Template,
    nested: &BTreeSet<String>,
    recorded: Option<&StackState>,
    table: &ExpectedTimes,
) -> CriticalPath {
    let decisions: BTreeMap<String, Decision> = plan
        .graph
        .order()
        .iter()
        .filter_map(|id| {
            let candidate = Candidate {
                logical_id: id,
                resource_type: &template.resources.get(id)?.kind,
                properties: plan.properties.get(id)?,
            };
            let decided = route_all(
                registry,
                stack,
                [candidate],
                nested,
                recorded,
                &AllowedDrops::default(),
                &BTreeMap::new(),
            );
            let decision = decided.ok()?.remove(id)?;
            Some((id.clone(), decision))
        })
        .collect();
    critical_path(plan, template, &decisions, recorded, table)
}

struct Node {
    id: String,
    waits_for: BTreeSet<String>,
    step: Option<Step>,
    /// Of what it waits for, how long it waits after each create for it to settle
    /// ([`ExpectedTimes::settling`]).
    settle: BTreeMap<String, u64>,
}

/// The longest chain through `nodes`, given in dependency order.
fn longest_chain(nodes: &[Node]) -> CriticalPath {
    let by_id: BTreeMap<&str, &Node> = nodes.iter().map(|n| (n.id.as_str(), n)).collect();
    // Per node: the chain's total up to its end, what came before, and the propagation it
    // waited out after that.
    let mut best: BTreeMap<&str, (u64, Option<&str>, u64)> = BTreeMap::new();
    for node in nodes {
        let own = node.step.as_ref().map_or(0, |s| s.expected_ms);
        let before = node
            .waits_for
            .iter()
            .filter_map(|d| {
                let (total, _, _) = best.get(d.as_str())?;
                let waited = node.settle.get(d).copied().unwrap_or(0);
                Some((total + waited, d.as_str(), waited))
            })
            .max_by_key(|(total, id, _)| (*total, std::cmp::Reverse(*id)));
        let entry = before.map_or((own, None, 0), |(t, id, waited)| {
            (t + own, Some(id), waited)
        });
        best.insert(node.id.as_str(), entry);
    }
    let Some((end, (total, _, _))) = best
        .iter()
        .max_by_key(|(id, (total, _, _))| (*total, std::cmp::Reverse(**id)))
    else {
        return CriticalPath::default();
    };
    let mut steps = Vec::new();
    let mut at = Some(*end);
    while let Some(id) = at {
        if let Some(step) = &by_id[id].step {
            let mut step = step.clone();
            step.settle_ms = best[id].2;
            steps.push(step);
        }
        at = best[id].1;
    }
    steps.reverse();
    CriticalPath {
        total_ms: *total,
        steps,
        own_calls: Vec::new(),
    }
}

/// [`longest_chain`] of nodes in any order (the delete phase's handful): sorted first.
fn longest_chain_any_order(nodes: &[Node]) -> CriticalPath {
    let mut placed: BTreeSet<&str> = BTreeSet::new();
    let mut sorted: Vec<Node> = Vec::new();
    let ids: BTreeSet<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
    while sorted.len() < nodes.len() {
        let before = sorted.len();
        for node in nodes {
            if !placed.contains(node.id.as_str())
                && node
                    .waits_for
                    .iter()
                    .all(|d| placed.contains(d.as_str()) || !ids.contains(d.as_str()))
            {
                placed.insert(node.id.as_str());
                sorted.push(Node {
                    id: node.id.clone(),
                    waits_for: node.waits_for.clone(),
                    step: node.step.clone(),
                    settle: node.settle.clone(),
                });
            }
        }
        if sorted.len() == before {
            // A recorded cycle: what is left counts on its own.
            for node in nodes.iter().filter(|n| !placed.contains(n.id.as_str())) {
                sorted.push(Node {
                    id: node.id.clone(),
                    waits_for: BTreeSet::new(),
                    step: node.step.clone(),
                    settle: node.settle.clone(),
                });
            }
            break;
        }
    }
    longest_chain(&sorted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_types_variants_and_the_default() {
        let table = ExpectedTimes::builtin();
        let nat = table.expected("AWS::EC2::NatGateway", None, Route::Sdk, Operation::Create);
        assert!(nat >= Duration::from_secs(90), "{nat:?}");
        let bucket = |route| table.expected("AWS::S3::Bucket", None, route, Operation::Create);
        assert!(bucket(Route::CloudControl) > bucket(Route::Sdk) * 5);
        let mut vpc = Map::new();
        vpc.insert("VpcConfig".into(), serde_json::json!({}));
        let function = |properties| {
            table.expected(
                "AWS::Lambda::Function",
                properties,
                Route::Sdk,
                Operation::Create,
            )
        };
        assert_eq!(function(Some(&vpc)), function(Some(&Map::new())));
        assert_eq!(
            table.expected(
                "Custom::Unknown",
                None,
                Route::CloudControl,
                Operation::Create
            ),
            Duration::from_millis(table.default.cloud_control.create)
        );
    }

    #[test]
    fn overrides_replace_only_what_they_name_and_errors_name_the_file() {
        let table = ExpectedTimes::overridden(
            r#"{"types": {"AWS::SQS::Queue": {"sdk": {"create": 4242}}, "My::New::Type": {"sdk": {"create": 1, "update": 2, "delete": 3}, "cloudControl": {"create": 4, "update": 5, "delete": 6}}}}"#,
            "file x.json",
        )
        .unwrap();
        let queue = |route, op| table.expected("AWS::SQS::Queue", None, route, op);
        assert_eq!(queue(Route::Sdk, Operation::Create).as_millis(), 4242);
        let builtin = ExpectedTimes::builtin();
        assert_eq!(
            queue(Route::CloudControl, Operation::Create),
            builtin.expected(
                "AWS::SQS::Queue",
                None,
                Route::CloudControl,
                Operation::Create
            )
        );
        assert_eq!(
            table
                .expected(
                    "My::New::Type",
                    None,
                    Route::CloudControl,
                    Operation::Delete
                )
                .as_millis(),
            6
        );
        let err = ExpectedTimes::overridden(
            r#"{"types": {"My::Half::Type": {"sdk": {"create": 1}}}}"#,
            "file y.json",
        )
        .unwrap_err();
        assert!(
            matches!(&err, ExpectedTimesError::BadShape { origin, .. } if origin == "file y.json"),
            "{err}"
        );
        let text = err.to_string();
        assert!(
            text.contains("file y.json") && text.contains(OVERRIDE_VARIABLE),
            "{text}"
        );
        let err = ExpectedTimes::overridden("[1]", "file z.json").unwrap_err();
        assert!(
            matches!(&err, ExpectedTimesError::NotObject { origin } if origin == "file z.json"),
            "{err}"
        );
        assert!(err.to_string().contains("file z.json"), "{err}");
    }

    fn node(id: &str, waits_for: &[&str], ms: Option<u64>) -> Node {
        Node {
            id: id.into(),
            waits_for: waits_for.iter().map(|s| s.to_string()).collect(),
            step: ms.map(|expected_ms| Step {
                logical_id: id.into(),
                resource_type: "T".into(),
                route: Route::Sdk,
                operation: Operation::Create,
                expected_ms,
                settle_ms: 0,
            }),
            settle: BTreeMap::new(),
        }
    }

    #[test]
    fn iam_propagation_is_waited_once_by_the_consumer_outside_iam() {
        // Role(0.4) -> Profile(0.6) -> Instance(41.5): the instance waits out the profile's
        // propagation (7.9), the profile (IAM) not the role's.
        let table = ExpectedTimes::builtin();
        let role = node("Role", &[], Some(400));
        let mut profile = node("Profile", &["Role"], Some(600));
        let settle = |kind, consumer| table.settling(kind, None, consumer).as_millis() as u64;
        let waited = settle("AWS::IAM::Role", "AWS::IAM::InstanceProfile");
        profile.settle.insert("Role".into(), waited);
        let mut instance = node("Instance", &["Profile"], Some(41500));
        let waited = settle("AWS::IAM::InstanceProfile", "AWS::EC2::Instance");
        instance.settle.insert("Profile".into(), waited);
        let path = longest_chain(&[role, profile, instance]);
        assert_eq!(path.total_ms, 400 + 600 + 7900 + 41500);
        let settled: Vec<u64> = path.steps.iter().map(|s| s.settle_ms).collect();
        assert_eq!(settled, [0, 0, 7900]);
        assert_eq!(settle("AWS::IAM::Role", "AWS::Lambda::Function"), 8000);
        assert_eq!(settle("AWS::SQS::Queue", "AWS::Lambda::Function"), 0);
    }

    #[test]
    fn a_function_is_waited_for_by_a_version_or_custom_resource_not_by_its_url() {
        let table = ExpectedTimes::builtin();
        let mut vpc = Map::new();
        vpc.insert("VpcConfig".into(), serde_json::json!({}));
        let settle = |properties, consumer| {
            table
                .settling("AWS::Lambda::Function", properties, consumer)
                .as_millis()
        };
        assert_eq!(settle(None, "AWS::Lambda::Url"), 0);
        assert_eq!(settle(None, "AWS::Lambda::Permission"), 0);
        assert!(settle(None, "AWS::Lambda::Version") >= 3000);
        assert!(settle(None, "Custom::Seed") >= 3000);
        assert!(settle(Some(&vpc), "AWS::Lambda::Version") > settle(None, "AWS::Lambda::Version"));
        let create = |properties| {
            table.expected(
                "AWS::Lambda::Function",
                properties,
                Route::Sdk,
                Operation::Create,
            )
        };
        assert_eq!(create(Some(&vpc)), create(None));
    }

    #[test]
    fn the_longest_chain_sums_expected_times_not_links() {
        // Vpc(1) -> Subnet(1) -> Nat(90) -> Route(1); Vpc -> Sg(2) -> A(1) -> B(1) -> C(1).
        let nodes = [
            node("Vpc", &[], Some(1)),
            node("Subnet", &["Vpc"], Some(1)),
            node("Sg", &["Vpc"], Some(2)),
            node("Nat", &["Subnet"], Some(90)),
            node("A", &["Sg"], Some(1)),
            node("Route", &["Nat"], Some(1)),
            node("B", &["A"], Some(1)),
            node("Same", &["B"], None),
            node("C", &["Same"], Some(1)),
        ];
        let path = longest_chain(&nodes);
        assert_eq!(path.total_ms, 93);
        let ids: Vec<&str> = path.steps.iter().map(|s| s.logical_id.as_str()).collect();
        assert_eq!(ids, ["Vpc", "Subnet", "Nat", "Route"]);
        let deletes = longest_chain_any_order(&[
            node("Subnet", &["Nat"], Some(5)),
            node("Vpc", &["Subnet"], Some(5)),
            node("Nat", &[], Some(60)),
        ]);
        assert_eq!(deletes.total_ms, 70);
    }
}
