//! The one planning path: what decides a stack's desired properties and its changes, shared by
//! `cdkd deploy` (its plan, its no-change fast path and its nested stacks), `cdkd import` and
//! `cdkd diff`, so that a diff shows what a deploy would do.
//!
//! Its input comes from [`super::prepare::Preparation`] (asset locations, parameter values with
//! SSM-typed ones read, nested templates, availability zones); [`plan_stack`] adds pseudo
//! parameters, other stacks' values (a [`StateSnapshot`]), dynamic references left for deploy
//! time, and the create-only properties of the plugins and of the registry schemas of the
//! recorded types. [`plan_tree`] follows a stack's nested stacks where its deploy would deploy
//! them (a nested stack resource to create or update), with the parameters the parent passes.

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};

use super::deploy::StackInput;
use super::external::{SnapshotLookups, StateSnapshot};
use crate::analyzer::diff::Action;
use crate::analyzer::plan::{plan, StackPlan};
use crate::analyzer::security::SecurityChanges;
use crate::provisioning::create_only::{registry_types, KnownCreateOnly};
use crate::provisioning::operations::ProviderSource;
use crate::provisioning::registry::Registry;
use crate::state::schema::StackState;

/// `input`'s plan against `recorded`, with the create-only rules it was planned with.
pub async fn plan_stack<'r>(
    registry: &'r Registry,
    providers: &dyn ProviderSource,
    input: &StackInput,
    snapshot: &StateSnapshot,
    recorded: Option<&StackState>,
) -> anyhow::Result<(StackPlan, KnownCreateOnly<'r>)> {
    let context = &input.context;
    let schemas = providers
        .registry_schemas(&context.region, registry_types(registry, recorded))
        .await;
    let create_only = KnownCreateOnly::new(registry, schemas);
    let lookups = SnapshotLookups {
        snapshot,
        region: &context.region,
    };
    let planned = plan(
        &input.template,
        recorded,
        context,
        &input.parameters,
        &lookups,
        &create_only,
    )
    .map_err(|err| anyhow::anyhow!("stack {}: {err}", context.stack_name))?;
    Ok((planned, create_only))
}

/// A nested stack's input as its parent deploys it: the parameters are the resolved
/// `Parameters` of its `AWS::CloudFormation::Stack` resource.
pub fn child_input(child: &StackInput, properties: &Map<String, Value>) -> StackInput {
    let mut input = child.clone();
    input.parameters = properties
        .get("Parameters")
        .and_then(Value::as_object)
        .map(|p| p.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    input
}

/// A stack's plan, with the plans of the nested stacks its deploy would deploy.
pub struct PlannedTree {
    /// The stack's name (`parent~logicalId` for a nested stack).
    pub stack_name: String,
    /// Its region.
    pub region: String,
    /// Its plan.
    pub plan: StackPlan,
    /// The nested stacks to create or update, by the logical id of their resource.
    pub nested: BTreeMap<String, PlannedTree>,
    /// The IAM and security-group changes of its plan (what `--require-approval` asks about).
    pub security: SecurityChanges,
}

impl PlannedTree {
    /// Whether anything in the tree would change.
    pub fn has_changes(&self) -> bool {
        self.plan.has_changes() || self.nested.values().any(PlannedTree::has_changes)
    }
}

/// `input`'s plan against its record in `snapshot`, and, for each nested stack resource the
/// plan creates or updates, the child's plan against its own record.
pub fn plan_tree<'a>(
    registry: &'a Registry,
    providers: &'a dyn ProviderSource,
    input: &'a StackInput,
    snapshot: &'a StateSnapshot,
) -> BoxFuture<'a, anyhow::Result<PlannedTree>> {
    Box::pin(async move {
        let context = &input.context;
        let recorded = snapshot.record(&context.stack_name, &context.region);
        let (planned, _) = plan_stack(registry, providers, input, snapshot, recorded).await?;
        let mut nested = BTreeMap::new();
        for change in &planned.changes {
            let Some(child) = input.children.get(&change.logical_id) else {
                continue;
            };
            if !matches!(change.action, Action::Create | Action::Update) {
                continue;
            }
            let properties = &planned.properties[&change.logical_id];
            let child = child_input(child, properties);
            let tree = plan_tree(registry, providers, &child, snapshot).await?;
            nested.insert(change.logical_id.clone(), tree);
        }
        Ok(PlannedTree {
            stack_name: context.stack_name.clone(),
            region: context.region.clone(),
            security: SecurityChanges::of(&planned, recorded),
            plan: planned,
            nested,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_child_gets_the_parameters_its_parent_resolved() {
        let child = StackInput {
            context: crate::analyzer::plan::StackContext {
                stack_name: "Parent~Child".into(),
                region: "us-east-1".into(),
                account: "123456789012".into(),
                ref_values: Default::default(),
                availability_zones: BTreeMap::new(),
            },
            template: crate::analyzer::template::Template::parse(&json!({"Resources": {}}))
                .unwrap(),
            parameters: BTreeMap::from([("Stale".to_string(), json!("x"))]),
            children: BTreeMap::new(),
            parent: None,
        };
        let properties = json!({"TemplateURL": "u", "Parameters": {"Bucket": "b-1"}});
        let input = child_input(&child, properties.as_object().unwrap());
        assert_eq!(
            input.parameters,
            BTreeMap::from([("Bucket".to_string(), json!("b-1"))])
        );
        let none = child_input(&child, &Map::new());
        assert!(none.parameters.is_empty());
    }
}
