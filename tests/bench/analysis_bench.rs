//! Host time of the analysis half on generated assemblies: parse every stack's template,
//! resolve and build its graph, and diff it, against empty state and against a state record
//! holding every resource. Prints milliseconds per 1000 resources. Run through tests/bench.sh.
//!
//! Usage: analysis-bench <cdk.out folder>...

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cdkd::analyzer::intrinsics::Lookup;
use cdkd::analyzer::plan::{plan, CreateOnlyProperties, ExternalValues, StackContext};
use cdkd::analyzer::template::Template;
use cdkd::state::schema::{ResourceState, StackState};
use cdkd::synthesis::assembly::CloudAssembly;
use serde_json::{json, Map};

struct NoExternal;
impl ExternalValues for NoExternal {
    fn import_value(&self, _: &str) -> Lookup {
        Lookup::Unknown
    }
    fn stack_output(&self, _: &str, _: &str, _: &str) -> Lookup {
        Lookup::Unknown
    }
    fn availability_zones(&self, _: &str) -> Lookup {
        Lookup::Unknown
    }
}
struct TopicNames;
impl CreateOnlyProperties for TopicNames {
    fn create_only(&self, _: &str) -> Vec<String> {
        vec!["TopicName".into()]
    }
}

fn deployed(template: &Template, name: &str) -> StackState {
    let mut state = StackState::new(name, "us-east-1");
    for (id, resource) in &template.resources {
        let record: ResourceState = serde_json::from_value(json!({
            "physicalId": format!("arn:aws:sns:us-east-1:123456789012:{id}"),
            "resourceType": resource.kind,
            "properties": {},
            "attributes": {"TopicName": id, "TopicArn": format!("arn:{id}")},
        }))
        .unwrap();
        state.resources.insert(id.clone(), record);
    }
    state
}

fn main() {
    for dir in std::env::args().skip(1) {
        let started = Instant::now();
        let assembly = CloudAssembly::read(std::path::Path::new(&dir)).expect("an assembly");
        let read = started.elapsed();
        let mut resources = 0usize;
        let mut empty = Duration::ZERO;
        let mut against_state = Duration::ZERO;
        for stack in &assembly.stacks {
            let context = StackContext {
                stack_name: stack.stack_name.clone(),
                region: "us-east-1".into(),
                account: "123456789012".into(),
                ref_values: std::sync::Arc::new(cdkd::analyzer::ref_values::RefValues::builtin()),
                availability_zones: Default::default(),
            };
            let started = Instant::now();
            let template = Template::parse(&stack.template().unwrap()).unwrap();
            let first = plan(
                &template,
                None,
                &context,
                &BTreeMap::new(),
                &NoExternal,
                &TopicNames,
            )
            .unwrap();
            empty += started.elapsed();
            resources += template.resources.len();
            let mut state = deployed(&template, &stack.stack_name);
            for (id, properties) in first.properties {
                state.resources.get_mut(&id).unwrap().properties =
                    properties.into_iter().collect::<Map<_, _>>();
            }
            let started = Instant::now();
            let template = Template::parse(&stack.template().unwrap()).unwrap();
            let second = plan(
                &template,
                Some(&state),
                &context,
                &BTreeMap::new(),
                &NoExternal,
                &TopicNames,
            )
            .unwrap();
            against_state += started.elapsed();
            assert!(second.changes.len() == template.resources.len());
        }
        let per_thousand = |d: Duration| d.as_secs_f64() * 1e3 * 1000.0 / resources.max(1) as f64;
        println!(
            "{dir}: {resources} resources in {} stacks (manifest read {:.1} ms)",
            assembly.stacks.len(),
            read.as_secs_f64() * 1e3
        );
        println!("  parse + resolve + DAG + diff, empty state:  {:.1} ms total, {:.1} ms per 1000 resources", empty.as_secs_f64() * 1e3, per_thousand(empty));
        println!("  parse + resolve + DAG + diff, full state:   {:.1} ms total, {:.1} ms per 1000 resources", against_state.as_secs_f64() * 1e3, per_thousand(against_state));
    }
}
