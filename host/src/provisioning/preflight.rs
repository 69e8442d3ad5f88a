//! Pre-flight: every resource of a stack gets a provider before anything changes, or the
//! deploy is refused with every reason at once. `--recreate-via-…` overrides the sticky
//! `provisionedBy` of the records it names.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::registry::{Registry, Route};
use super::router::{decide, AllowedDrops, Decision};
use super::type_schemas::RegistrySchema;
use crate::state::schema::{ProvisionedBy, StackState};

pub use crate::cloudformation::NESTED_STACK;

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

/// The resources bound for Cloud Control whose type it cannot provision (its registry schema
/// has no read handler, or is `NON_PROVISIONABLE`), each named with what to do; `to_call` are
/// `(logical id, type)` of the resources a deploy will create or update there.
pub fn refuse_unprovisionable<'a>(
    to_call: impl IntoIterator<Item = (&'a str, &'a str)>,
    schemas: &BTreeMap<String, RegistrySchema>,
) -> Vec<String> {
    to_call
        .into_iter()
        .filter(|(_, resource_type)| {
            schemas
                .get(*resource_type)
                .is_some_and(|schema| !schema.cloud_control_provisionable())
        })
        .map(|(logical_id, resource_type)| {
            format!(
                "{logical_id} ({resource_type}): no loaded plugin handles this type (or this resource's properties), and Cloud Control cannot provision it (its registry schema has no read handler); load a plugin for {resource_type} (`cdkd providers list`), or remove the properties the plugin does not handle (cdkd warned about them above)"
            )
        })
        .collect()
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(type_name: &str, handlers: &[&str], provisioning: &str) -> RegistrySchema {
        let handlers: Map<String, Value> = handlers
            .iter()
            .map(|h| (h.to_string(), json!({})))
            .collect();
        let mut schema = RegistrySchema::parse(
            type_name,
            "v1",
            &json!({"handlers": handlers, "primaryIdentifier": ["/properties/Id"]}),
        );
        schema.provisioning_type = Some(provisioning.into());
        schema
    }

    #[test]
    fn a_type_cloud_control_cannot_provision_is_refused_by_resource() {
        let schemas: BTreeMap<String, RegistrySchema> = [
            schema(
                "AWS::SQS::QueuePolicy",
                &["create", "update", "delete"],
                "NON_PROVISIONABLE",
            ),
            schema(
                "AWS::SQS::Queue",
                &["create", "read", "update", "delete", "list"],
                "FULLY_MUTABLE",
            ),
            // The registry's word alone is enough, as is a schema without `read` alone.
            schema("AWS::X::Flagged", &["create", "read"], "NON_PROVISIONABLE"),
            schema("AWS::X::Unread", &["create"], "FULLY_MUTABLE"),
        ]
        .into_iter()
        .map(|s| (s.type_name.clone(), s))
        .collect();
        let refused = refuse_unprovisionable(
            [
                ("Policy", "AWS::SQS::QueuePolicy"),
                ("Queue", "AWS::SQS::Queue"),
                ("Flagged", "AWS::X::Flagged"),
                ("Unread", "AWS::X::Unread"),
                ("Unknown", "AWS::X::NotInTheRegistry"),
            ],
            &schemas,
        );
        assert_eq!(refused.len(), 3, "{refused:?}");
        assert!(refused[0].starts_with("Policy (AWS::SQS::QueuePolicy): no loaded plugin"));
        assert!(refused[0].contains("load a plugin for AWS::SQS::QueuePolicy"));
        assert!(refused[1].starts_with("Flagged (AWS::X::Flagged)"));
        assert!(refused[2].starts_with("Unread (AWS::X::Unread)"));
    }
}
