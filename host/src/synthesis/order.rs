//! The order stacks of one run go in: a stack waits for the stacks the manifest says it
//! depends on, and for the selected stacks whose values its template reads
//! (`Fn::GetStackOutput` naming one, or `Fn::ImportValue` of an export one declares), since
//! apps that read another stack by name carry no manifest dependency.

use std::collections::{BTreeMap, BTreeSet};

use super::assembly::StackArtifact;
use crate::analyzer::template::{StackRead, Template};

/// A selected stack as the ordering sees it.
#[derive(Debug, Clone)]
pub struct Placed<'a> {
    /// The stack.
    pub stack: &'a StackArtifact,
    /// The region it deploys to.
    pub region: String,
    /// Its parsed template.
    pub template: Template,
}

/// Why the stacks cannot be ordered.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("stacks {0} wait for each other (dependencies or cross-stack reads form a cycle); break the cycle in the app")]
pub struct Cycle(pub String);

/// The stacks (artifact ids) each placed stack waits for, among the placed ones.
pub fn run_dependencies(placed: &[Placed<'_>]) -> BTreeMap<String, BTreeSet<String>> {
    let ids: BTreeSet<&str> = placed.iter().map(|p| p.stack.id.as_str()).collect();
    let by_name: BTreeMap<(&str, &str), &str> = placed
        .iter()
        .map(|p| {
            (
                (p.stack.stack_name.as_str(), p.region.as_str()),
                p.stack.id.as_str(),
            )
        })
        .collect();
    let mut exporters: BTreeMap<(String, &str), &str> = BTreeMap::new();
    for p in placed {
        for name in p.template.literal_export_names() {
            exporters.insert((name, p.region.as_str()), p.stack.id.as_str());
        }
    }
    placed
        .iter()
        .map(|p| {
            let mut waits: BTreeSet<String> = p
                .stack
                .dependencies
                .iter()
                .filter(|d| ids.contains(d.as_str()))
                .cloned()
                .collect();
            for read in p.template.stack_reads() {
                let producer = match &read {
                    StackRead::Output { stack, region, .. } => {
                        let region = region.as_deref().unwrap_or(&p.region);
                        by_name.get(&(stack.as_str(), region)).copied()
                    }
                    StackRead::Export(name) => {
                        exporters.get(&(name.clone(), p.region.as_str())).copied()
                    }
                };
                if let Some(producer) = producer.filter(|id| *id != p.stack.id) {
                    waits.insert(producer.to_string());
                }
            }
            (p.stack.id.clone(), waits)
        })
        .collect()
}

/// The ids in an order where each comes after what it waits for (ties: `ids` order).
pub fn ordered(
    ids: &[String],
    waits: &BTreeMap<String, BTreeSet<String>>,
) -> Result<Vec<String>, Cycle> {
    let mut placed: Vec<String> = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    while placed.len() < ids.len() {
        let next = ids.iter().find(|id| {
            !done.contains(id.as_str())
                && waits
                    .get(*id)
                    .is_none_or(|w| w.iter().all(|d| done.contains(d.as_str())))
        });
        match next {
            Some(id) => {
                done.insert(id);
                placed.push(id.clone());
            }
            None => {
                let stuck: Vec<&str> = ids
                    .iter()
                    .filter(|id| !done.contains(id.as_str()))
                    .map(String::as_str)
                    .collect();
                return Err(Cycle(stuck.join(", ")));
            }
        }
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesis::assembly::CloudAssembly;

    fn fixture(name: &str) -> CloudAssembly {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/cdk.out")
            .join(name);
        CloudAssembly::read(&dir).expect("the fixture reads")
    }

    fn placed(assembly: &CloudAssembly) -> Vec<Placed<'_>> {
        assembly
            .stacks
            .iter()
            .map(|stack| Placed {
                stack,
                region: stack
                    .environment
                    .region
                    .clone()
                    .unwrap_or_else(|| "us-east-1".into()),
                template: Template::parse(&stack.template().unwrap()).unwrap(),
            })
            .collect()
    }

    #[test]
    fn a_reader_waits_for_the_stacks_it_reads_without_a_manifest_dependency() {
        let assembly = fixture("ordering");
        let placed = placed(&assembly);
        let waits = run_dependencies(&placed);
        let reader: Vec<&str> = waits["CdkdReaderStack"]
            .iter()
            .map(String::as_str)
            .collect();
        assert_eq!(reader, ["CdkdExporterStack", "CdkdWestStack"]);
        assert!(waits["CdkdExporterStack"].is_empty());
        let ids: Vec<String> = ["CdkdReaderStack", "CdkdExporterStack", "CdkdWestStack"]
            .map(String::from)
            .to_vec();
        let order = ordered(&ids, &waits).unwrap();
        assert_eq!(order.last().map(String::as_str), Some("CdkdReaderStack"));
    }

    #[test]
    fn an_import_across_stages_orders_the_stages() {
        let assembly = fixture("stages");
        let placed = placed(&assembly);
        let waits = run_dependencies(&placed);
        assert_eq!(
            waits["ProdServiceC810982D"],
            BTreeSet::from(["SharedNetworkE12EF091".to_string()])
        );
    }

    #[test]
    fn a_cycle_is_named() {
        let waits = BTreeMap::from([
            ("A".to_string(), BTreeSet::from(["B".to_string()])),
            ("B".to_string(), BTreeSet::from(["A".to_string()])),
        ]);
        let err = ordered(&["A".into(), "B".into()], &waits).unwrap_err();
        assert_eq!(err, Cycle("A, B".into()));
    }
}
