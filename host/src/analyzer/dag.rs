//! The dependency graph of a stack's resources.
//!
//! Edges come from `Ref`, `Fn::GetAtt` and `Fn::Sub` references (in the branches conditions
//! select) and from `DependsOn`. Resources whose condition is false are not in the graph. A
//! cycle is an error naming it. Each node's priority is its number of transitive dependents,
//! so an executor can start the work that unblocks the most first.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::intrinsics::{ResolveError, Resolver};
use super::template::Template;

/// A graph that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// A resolution error while collecting references.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// Resources that depend on each other in a circle.
    #[error("dependency cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// An active resource refers to one whose condition removed it.
    #[error("Resources.{from} refers to {to}, whose condition is false, so it does not exist")]
    Inactive {
        /// The referring resource.
        from: String,
        /// The missing one.
        to: String,
    },
}

/// A node: one active resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The logical id.
    pub logical_id: String,
    /// Logical ids it waits for.
    pub dependencies: BTreeSet<String>,
    /// Logical ids that wait for it.
    pub dependents: BTreeSet<String>,
    /// How many resources wait for it, directly or not.
    pub priority: usize,
}

/// The graph of a stack's active resources.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Graph {
    nodes: BTreeMap<String, Node>,
    order: Vec<String>,
}

impl Graph {
    /// Builds the graph of `template`'s active resources.
    pub fn build(template: &Template, resolver: &Resolver<'_>) -> Result<Graph, GraphError> {
        let mut active = BTreeSet::new();
        for (logical_id, resource) in &template.resources {
            if resolver.is_active(resource.condition.as_deref())? {
                active.insert(logical_id.clone());
            }
        }
        let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
        for logical_id in &active {
            let resource = &template.resources[logical_id];
            let mut dependencies = BTreeSet::new();
            resolver.references(
                &Value::Object(resource.properties.clone()),
                &format!("Resources.{logical_id}.Properties"),
                &mut dependencies,
            )?;
            dependencies.extend(resource.depends_on.iter().cloned());
            if dependencies.contains(logical_id) {
                // CloudFormation refuses a resource that needs its own value as a circular
                // dependency; so does cdkd, rather than dispatch it and fail at resolution.
                return Err(GraphError::Cycle(vec![
                    logical_id.clone(),
                    logical_id.clone(),
                ]));
            }
            if let Some(missing) = dependencies.iter().find(|d| !active.contains(*d)) {
                // An explicit DependsOn on an inactive resource is dropped, as CloudFormation
                // does; a value reference to it cannot be satisfied.
                if !resource.depends_on.contains(missing) {
                    return Err(GraphError::Inactive {
                        from: logical_id.clone(),
                        to: missing.clone(),
                    });
                }
            }
            dependencies.retain(|d| active.contains(d));
            nodes.insert(
                logical_id.clone(),
                Node {
                    logical_id: logical_id.clone(),
                    dependencies,
                    dependents: BTreeSet::new(),
                    priority: 0,
                },
            );
        }
        Graph::from_nodes(nodes)
    }

    /// A graph from explicit edges (logical id → dependencies), e.g. a state record's.
    pub fn from_edges(edges: &BTreeMap<String, BTreeSet<String>>) -> Result<Graph, GraphError> {
        let nodes = edges
            .iter()
            .map(|(id, deps)| {
                (
                    id.clone(),
                    Node {
                        logical_id: id.clone(),
                        dependencies: deps
                            .iter()
                            .filter(|d| edges.contains_key(*d) && *d != id)
                            .cloned()
                            .collect(),
                        dependents: BTreeSet::new(),
                        priority: 0,
                    },
                )
            })
            .collect();
        Graph::from_nodes(nodes)
    }

    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    fn from_nodes(mut nodes: BTreeMap<String, Node>) -> Result<Graph, GraphError> {
        let edges: Vec<(String, String)> = nodes
            .values()
            .flat_map(|n| {
                n.dependencies
                    .iter()
                    .map(move |d| (d.clone(), n.logical_id.clone()))
            })
            .collect();
        for (dependency, dependent) in edges {
            if let Some(node) = nodes.get_mut(&dependency) {
                node.dependents.insert(dependent);
            }
        }
        // Kahn's algorithm: what is left over sits on a cycle.
        let mut waiting: BTreeMap<&str, usize> = nodes
            .values()
            .map(|n| (n.logical_id.as_str(), n.dependencies.len()))
            .collect();
        let mut ready: Vec<&str> = waiting
            .iter()
            .filter(|(_, c)| **c == 0)
            .map(|(id, _)| *id)
            .collect();
        ready.reverse();
        let mut order = Vec::with_capacity(nodes.len());
        while let Some(id) = ready.pop() {
            order.push(id.to_string());
            for dependent in &nodes[id].dependents {
                let count = waiting
                    .get_mut(dependent.as_str())
                    .expect("dependents are nodes");
                *count -= 1;
                if *count == 0 {
                    ready.push(dependent.as_str());
                }
            }
        }
        if order.len() < nodes.len() {
            let stuck: BTreeSet<&str> = waiting
                .iter()
                .filter(|(_, c)| **c > 0)
                .map(|(id, _)| *id)
                .collect();
            return Err(GraphError::Cycle(find_cycle(&nodes, &stuck)));
        }
        // Transitive dependents, in reverse topological order, as bit sets.
        let index: BTreeMap<&str, usize> = order
            .iter()
            .enumerate()
            .map(|(i, id)| (id.as_str(), i))
            .collect();
        let words = order.len().div_ceil(64);
        let mut reach: Vec<Vec<u64>> = vec![vec![0; words]; order.len()];
        for position in (0..order.len()).rev() {
            let id = &order[position];
            let mut bits = vec![0u64; words];
            for dependent in &nodes[id].dependents {
                let d = index[dependent.as_str()];
                bits[d / 64] |= 1 << (d % 64);
                for (word, theirs) in bits.iter_mut().zip(&reach[d]) {
                    *word |= theirs;
                }
            }
            reach[position] = bits;
        }
        for (position, id) in order.iter().enumerate() {
            nodes.get_mut(id).expect("ordered ids are nodes").priority = reach[position]
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum();
        }
        Ok(Graph { nodes, order })
    }

    /// The nodes by logical id.
    pub fn nodes(&self) -> &BTreeMap<String, Node> {
        &self.nodes
    }

    /// One node.
    pub fn node(&self, logical_id: &str) -> Option<&Node> {
        self.nodes.get(logical_id)
    }

    /// A topological order (dependencies first).
    pub fn order(&self) -> &[String] {
        &self.order
    }

    /// The length (in nodes) of the longest dependency chain.
    pub fn longest_chain(&self) -> usize {
        let mut depth: BTreeMap<&str, usize> = BTreeMap::new();
        for id in &self.order {
            let own = 1 + self.nodes[id]
                .dependencies
                .iter()
                .map(|d| depth[d.as_str()])
                .max()
                .unwrap_or(0);
            depth.insert(id.as_str(), own);
        }
        depth.values().copied().max().unwrap_or(0)
    }
}

#[allow(
    clippy::expect_used,
    reason = "an invariant: every id the plan orders or names is a node of its graph"
)]
fn find_cycle(nodes: &BTreeMap<String, Node>, stuck: &BTreeSet<&str>) -> Vec<String> {
    // Walk dependencies inside the stuck set until a node repeats.
    let Some(start) = stuck.iter().next() else {
        return Vec::new();
    };
    let mut path: Vec<&str> = vec![start];
    loop {
        let current = *path.last().expect("path starts non-empty");
        let next = nodes[current]
            .dependencies
            .iter()
            .map(String::as_str)
            .find(|d| stuck.contains(d))
            .expect("a stuck node waits for another stuck node");
        if let Some(at) = path.iter().position(|p| *p == next) {
            let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            cycle.push(next.to_string());
            return cycle;
        }
        path.push(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::intrinsics::{Environment, Lookup};
    use serde_json::json;

    struct NoEnv;
    impl Environment for NoEnv {
        fn pseudo(&self, _: &str) -> Option<Value> {
            Some(json!("x"))
        }
        fn resource_ref(&self, _: &str) -> Lookup {
            Lookup::Unknown
        }
        fn resource_attribute(&self, _: &str, _: &str) -> Lookup {
            Lookup::Unknown
        }
        fn import_value(&self, _: &str) -> Lookup {
            Lookup::Unknown
        }
        fn stack_output(&self, _: &str, _: Option<&str>, _: &str) -> Lookup {
            Lookup::Unknown
        }
        fn availability_zones(&self, _: &str) -> Lookup {
            Lookup::Unknown
        }
    }

    fn graph(template: serde_json::Value) -> Result<Graph, GraphError> {
        let template = Template::parse(&template).unwrap();
        let resolver = Resolver::new(&template, &NoEnv, &Default::default()).unwrap();
        Graph::build(&template, &resolver)
    }

    #[test]
    fn edges_from_refs_getatts_subs_and_depends_on_with_priorities() {
        let g = graph(json!({"Resources": {
            "Role": {"Type": "T"},
            "Bucket": {"Type": "T"},
            "Fn": {"Type": "T", "Properties": {"Role": {"Fn::GetAtt": ["Role", "Arn"]}, "Env": {"Fn::Sub": "${Bucket}"}}},
            "Perm": {"Type": "T", "Properties": {"FunctionName": {"Ref": "Fn"}}},
            "Alarm": {"Type": "T", "DependsOn": "Perm"}
        }}))
        .unwrap();
        assert_eq!(
            g.node("Fn").unwrap().dependencies,
            ["Bucket", "Role"].into_iter().map(String::from).collect()
        );
        assert_eq!(g.node("Role").unwrap().priority, 3);
        assert_eq!(g.node("Alarm").unwrap().priority, 0);
        let order = g.order();
        let at = |id: &str| order.iter().position(|o| o == id).unwrap();
        assert!(at("Role") < at("Fn") && at("Fn") < at("Perm") && at("Perm") < at("Alarm"));
        assert_eq!(g.longest_chain(), 4);
    }

    #[test]
    fn a_cycle_is_named() {
        let err = graph(json!({"Resources": {
            "A": {"Type": "T", "Properties": {"X": {"Ref": "B"}}},
            "B": {"Type": "T", "Properties": {"X": {"Fn::GetAtt": "C.Arn"}}},
            "C": {"Type": "T", "DependsOn": ["A"]},
            "D": {"Type": "T"}
        }}))
        .unwrap_err();
        assert_eq!(err.to_string(), "dependency cycle: A -> B -> C -> A");
    }

    #[test]
    fn a_resource_reading_its_own_attribute_is_a_cycle() {
        let err = graph(json!({"Resources": {
            "Queue": {"Type": "T", "Properties": {"Name": {"Fn::GetAtt": ["Queue", "Arn"]}}}
        }}))
        .unwrap_err();
        assert_eq!(err.to_string(), "dependency cycle: Queue -> Queue");
    }

    #[test]
    fn inactive_resources_leave_the_graph() {
        let template = json!({
            "Parameters": {"Env": {"Type": "String", "Default": "dev"}},
            "Conditions": {"IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]}},
            "Resources": {
                "ProdOnly": {"Type": "T", "Condition": "IsProd"},
                "Uses": {"Type": "T", "Properties": {"X": {"Fn::If": ["IsProd", {"Ref": "ProdOnly"}, "none"]}}, "DependsOn": "ProdOnly"}
            }
        });
        let g = graph(template).unwrap();
        assert!(g.node("ProdOnly").is_none());
        assert!(g.node("Uses").unwrap().dependencies.is_empty());
        let err = graph(json!({
            "Parameters": {"Env": {"Type": "String", "Default": "dev"}},
            "Conditions": {"IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]}},
            "Resources": {"ProdOnly": {"Type": "T", "Condition": "IsProd"}, "Uses": {"Type": "T", "Properties": {"X": {"Ref": "ProdOnly"}}}}
        }))
        .unwrap_err();
        assert!(matches!(err, GraphError::Inactive { .. }));
    }

    #[test]
    fn a_long_chain_is_fine() {
        let mut resources = serde_json::Map::new();
        for i in 0..3000 {
            let properties = if i == 0 {
                json!({})
            } else {
                json!({"Prev": {"Ref": format!("R{}", i - 1)}})
            };
            resources.insert(
                format!("R{i}"),
                json!({"Type": "T", "Properties": properties}),
            );
        }
        let g = graph(json!({ "Resources": resources })).unwrap();
        assert_eq!(g.longest_chain(), 3000);
        assert_eq!(g.node("R0").unwrap().priority, 2999);
    }
}
