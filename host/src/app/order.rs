//! The order of one run's stacks: what each waits for (its dependencies and the stacks whose
//! values it reads), with their templates parsed once for the whole run.

use std::collections::{BTreeMap, BTreeSet};

use crate::analyzer::template::{StackRead, Template};
use crate::synthesis::assembly::StackArtifact;
use crate::synthesis::order::{ordered, run_dependencies, Cycle, Placed};

/// The stacks of one run in the order they were selected, what each waits for, and their
/// templates.
#[derive(Debug, Clone)]
pub struct RunOrder {
    /// The stacks' artifact ids, in selection order (ties in [`RunOrder::deploy_order`]).
    pub ids: Vec<String>,
    /// The stacks each waits for, among the run's.
    pub waits: BTreeMap<String, BTreeSet<String>>,
    /// Each stack's parsed template.
    pub templates: BTreeMap<String, Template>,
    /// Each stack's region (its own, or the caller's for what the app left open).
    pub regions: BTreeMap<String, String>,
    /// Each stack's name (its record's), by artifact id.
    pub names: BTreeMap<String, String>,
}

impl RunOrder {
    /// Reads and parses the templates of `stacks`, whose open regions are `fallback_region`;
    /// fails when one cannot be read or the stacks wait for each other.
    pub fn read(stacks: &[&StackArtifact], fallback_region: &str) -> anyhow::Result<RunOrder> {
        let mut parsed = Vec::new();
        for stack in stacks {
            let template = Template::parse(&stack.template()?)
                .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
            parsed.push((*stack, template));
        }
        Ok(RunOrder::of(parsed, fallback_region)?)
    }

    /// The order of `stacks` with their parsed templates.
    pub fn of(
        stacks: Vec<(&StackArtifact, Template)>,
        fallback_region: &str,
    ) -> Result<RunOrder, Cycle> {
        let placed: Vec<Placed<'_>> = stacks
            .into_iter()
            .map(|(stack, template)| Placed {
                stack,
                region: (stack.environment.region.clone())
                    .unwrap_or_else(|| fallback_region.to_string()),
                template,
            })
            .collect();
        let waits = run_dependencies(&placed);
        let ids: Vec<String> = placed.iter().map(|p| p.stack.id.clone()).collect();
        ordered(&ids, &waits)?;
        let names = (placed.iter())
            .map(|p| (p.stack.id.clone(), p.stack.stack_name.clone()))
            .collect();
        let regions = (placed.iter())
            .map(|p| (p.stack.id.clone(), p.region.clone()))
            .collect();
        let templates = placed
            .into_iter()
            .map(|p| (p.stack.id.clone(), p.template))
            .collect();
        Ok(RunOrder {
            ids,
            waits,
            templates,
            regions,
            names,
        })
    }

    /// The ids in an order where each stack comes after the stacks it waits for.
    #[allow(
        clippy::expect_used,
        reason = "an invariant: every id the plan orders or names is a node of its graph"
    )]
    pub fn deploy_order(&self) -> Vec<String> {
        ordered(&self.ids, &self.waits).expect("checked when the order was made")
    }

    /// The ids in the order a destroy takes them: consumers before their producers.
    pub fn destroy_order(&self) -> Vec<String> {
        let mut order = self.deploy_order();
        order.reverse();
        order
    }

    /// Whether some template reads another stack's values.
    pub fn cross_stack(&self) -> bool {
        (self.templates.values()).any(|t| !t.stack_reads().is_empty())
    }

    /// What every stack reads from other stacks, each with the reading stack's region.
    pub fn stack_reads(&self) -> Vec<(StackRead, String)> {
        (self.ids.iter())
            .flat_map(|id| {
                let region = &self.regions[id];
                (self.templates[id].stack_reads().into_iter()).map(move |r| (r, region.clone()))
            })
            .collect()
    }

    /// Every stack's template with its region, in selection order.
    pub fn consumers(&self) -> Vec<(&Template, &str)> {
        (self.ids.iter())
            .map(|id| (&self.templates[id], self.regions[id].as_str()))
            .collect()
    }
}
