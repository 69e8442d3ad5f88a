//! Pre-flight: every resource of a stack gets a provider before anything changes, or the
//! deploy is refused with every reason at once. `--recreate-via-…` overrides the sticky
//! `provisionedBy` of the records it names.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::registry::{Registry, Route};
use super::router::{decide, AllowedDrops, Decision};
use crate::state::schema::{ProvisionedBy, StackState};

/// One resource to route.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Its logical id.
    pub logical_id: &'a str,
    /// Its type.
    pub resource_type: &'a str,
    /// Its plan-time properties.
    pub properties: &'a Map<String, Value>,
}

/// The type of a nested stack.
pub const NESTED_STACK: &str = "AWS::CloudFormation::Stack";

/// The routing decision of every candidate, or every reason the stack cannot be deployed.
/// `nested` names the nested stacks whose templates the assembly holds.
#[allow(clippy::too_many_arguments)]
pub fn route_all<'a>(
    registry: &Registry,
    stack: &str,
    candidates: impl IntoIterator<Item = Candidate<'a>>,
    nested: &std::collections::BTreeSet<String>,
    recorded: Option<&StackState>,
    allowed: &AllowedDrops,
    recreate: &BTreeMap<String, ProvisionedBy>,
) -> Result<BTreeMap<String, Decision>, Vec<String>> {
    let mut decisions = BTreeMap::new();
    let mut refused = Vec::new();
    for candidate in candidates {
        let Candidate {
            logical_id,
            resource_type,
            properties,
        } = candidate;
        let previous = recorded.and_then(|s| s.resources.get(logical_id));
        let decision = match recreate.get(logical_id) {
            None if resource_type == NESTED_STACK && nested.contains(logical_id) => {
                Decision::NestedStack
            }
            // An explicit move between layers overrides the sticky record.
            Some(ProvisionedBy::CcApi) => Decision::CloudControl(None),
            Some(ProvisionedBy::Sdk) => match registry.route(resource_type) {
                Route::Plugin { name, .. } => Decision::Plugin(name),
                _ => Decision::Refuse(format!(
                    "--recreate-via-sdk-provider {logical_id}: no loaded plugin handles {resource_type}"
                )),
            },
            None => decide(
                registry,
                logical_id,
                resource_type,
                properties,
                previous.and_then(|r| r.provisioned_by),
                allowed,
            ),
        };
        if let Decision::Plugin(_) = &decision {
            let conflict = registry
                .schema(resource_type)
                .and_then(|schema| schema.composite_id.as_ref())
                .and_then(|id| id.separator_conflict(properties));
            if let Some((segment, property, value)) = conflict {
                refused.push(format!(
                    "{logical_id} ({resource_type}): property {property} = {value:?} contains '|', the separator of the type's composite physical id (segment {segment}); the separator is not escaped, so use a value without '|'"
                ));
            }
        }
        match &decision {
            Decision::Refuse(reason) => refused.push(reason.clone()),
            Decision::CloudControl(Some(warning)) => tracing::warn!("{warning}"),
            _ => {}
        }
        decisions.insert(logical_id.to_string(), decision);
    }
    for logical_id in recreate.keys() {
        if recorded.and_then(|s| s.resources.get(logical_id)).is_none() {
            refused.push(format!(
                "{logical_id} cannot be re-created: stack {stack} has no deployed resource of that id"
            ));
        }
    }
    if refused.is_empty() {
        Ok(decisions)
    } else {
        Err(refused)
    }
}
