//! Classifying a resource's change: template (resolved at plan time) against its state record.

use serde::Serialize;
use serde_json::{Map, Value};

use super::intrinsics::contains_unknown;
use crate::state::schema::ResourceState;

/// What happens to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// Not in state: create it.
    Create,
    /// In state with different properties or policies: update (or replace) it.
    Update,
    /// In state, not in the template: delete it.
    Delete,
    /// Nothing to do.
    NoChange,
}

/// One top-level property's change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PropertyChange {
    /// The property.
    pub name: String,
    /// The value in state (`None`: added).
    pub before: Option<Value>,
    /// The desired value (`None`: removed); may hold "known after deploy" markers.
    pub after: Option<Value>,
    /// Whether changing it replaces the resource.
    pub create_only: bool,
}

/// One resource's change.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceChange {
    /// The logical id.
    pub logical_id: String,
    /// The desired type (the recorded one for a delete).
    pub resource_type: String,
    /// The action.
    pub action: Action,
    /// Whether the update is a replacement (type change or create-only property change).
    pub replacement: bool,
    /// Property changes (updates and creates).
    pub properties: Vec<PropertyChange>,
    /// `DeletionPolicy` / `UpdateReplacePolicy` changes only: a state-only update.
    pub policies_only: bool,
}

/// The desired side of a resource, resolved at plan time.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired<'a> {
    /// The logical id.
    pub logical_id: &'a str,
    /// The type.
    pub resource_type: &'a str,
    /// Resolved properties.
    pub properties: &'a Map<String, Value>,
    /// `DeletionPolicy`.
    pub deletion_policy: Option<&'a str>,
    /// `UpdateReplacePolicy`.
    pub update_replace_policy: Option<&'a str>,
}

fn changed(before: Option<&Value>, after: Option<&Value>) -> bool {
    match (before, after) {
        (Some(b), Some(a)) => contains_unknown(a) || b != a,
        (None, None) => false,
        _ => true,
    }
}

/// Compares a desired resource with its record (`None`: not deployed yet).
pub fn diff_resource(
    desired: &Desired<'_>,
    recorded: Option<&ResourceState>,
    create_only: &[String],
) -> ResourceChange {
    let Some(recorded) = recorded else {
        return ResourceChange {
            logical_id: desired.logical_id.to_string(),
            resource_type: desired.resource_type.to_string(),
            action: Action::Create,
            replacement: false,
            properties: desired
                .properties
                .iter()
                .map(|(name, value)| PropertyChange {
                    name: name.clone(),
                    before: None,
                    after: Some(value.clone()),
                    create_only: false,
                })
                .collect(),
            policies_only: false,
        };
    };
    let mut names: Vec<&String> = desired
        .properties
        .keys()
        .chain(recorded.properties.keys())
        .collect();
    names.sort();
    names.dedup();
    let properties: Vec<PropertyChange> = names
        .into_iter()
        .filter(|name| {
            changed(
                recorded.properties.get(*name),
                desired.properties.get(*name),
            )
        })
        .map(|name| PropertyChange {
            name: name.clone(),
            before: recorded.properties.get(name).cloned(),
            after: desired.properties.get(name).cloned(),
            create_only: create_only.iter().any(|c| c == name),
        })
        .collect();
    let type_changed = recorded.resource_type != desired.resource_type;
    let policies_changed = recorded.deletion_policy.as_deref() != desired.deletion_policy
        || recorded.update_replace_policy.as_deref() != desired.update_replace_policy;
    let replacement = type_changed || properties.iter().any(|p| p.create_only);
    let action = if type_changed || !properties.is_empty() || policies_changed {
        Action::Update
    } else {
        Action::NoChange
    };
    ResourceChange {
        logical_id: desired.logical_id.to_string(),
        resource_type: desired.resource_type.to_string(),
        action,
        replacement,
        policies_only: action == Action::Update && !type_changed && properties.is_empty(),
        properties,
    }
}

/// A recorded resource the template no longer has.
pub fn deletion(logical_id: &str, recorded: &ResourceState) -> ResourceChange {
    ResourceChange {
        logical_id: logical_id.to_string(),
        resource_type: recorded.resource_type.clone(),
        action: Action::Delete,
        replacement: false,
        properties: Vec::new(),
        policies_only: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::intrinsics::unknown;
    use serde_json::json;

    fn record(resource_type: &str, properties: Value) -> ResourceState {
        serde_json::from_value(
            json!({"physicalId": "p", "resourceType": resource_type, "properties": properties}),
        )
        .unwrap()
    }

    fn desired<'a>(properties: &'a Map<String, Value>, resource_type: &'a str) -> Desired<'a> {
        Desired {
            logical_id: "Q",
            resource_type,
            properties,
            deletion_policy: None,
            update_replace_policy: None,
        }
    }

    #[test]
    fn classification() {
        let props = json!({"QueueName": "a", "VisibilityTimeout": 30})
            .as_object()
            .unwrap()
            .clone();
        let create_only = vec!["QueueName".to_string()];
        assert_eq!(
            diff_resource(&desired(&props, "AWS::SQS::Queue"), None, &create_only).action,
            Action::Create
        );

        let same = record(
            "AWS::SQS::Queue",
            json!({"QueueName": "a", "VisibilityTimeout": 30}),
        );
        assert_eq!(
            diff_resource(
                &desired(&props, "AWS::SQS::Queue"),
                Some(&same),
                &create_only
            )
            .action,
            Action::NoChange
        );

        let in_place = record(
            "AWS::SQS::Queue",
            json!({"QueueName": "a", "VisibilityTimeout": 60}),
        );
        let change = diff_resource(
            &desired(&props, "AWS::SQS::Queue"),
            Some(&in_place),
            &create_only,
        );
        assert_eq!((change.action, change.replacement), (Action::Update, false));
        assert_eq!(change.properties[0].name, "VisibilityTimeout");
        assert_eq!(change.properties[0].before, Some(json!(60)));

        let renamed = record(
            "AWS::SQS::Queue",
            json!({"QueueName": "b", "VisibilityTimeout": 30}),
        );
        let change = diff_resource(
            &desired(&props, "AWS::SQS::Queue"),
            Some(&renamed),
            &create_only,
        );
        assert_eq!((change.action, change.replacement), (Action::Update, true));

        let retyped = record(
            "AWS::SNS::Topic",
            json!({"QueueName": "a", "VisibilityTimeout": 30}),
        );
        assert!(
            diff_resource(
                &desired(&props, "AWS::SQS::Queue"),
                Some(&retyped),
                &create_only
            )
            .replacement
        );

        let removed = record(
            "AWS::SQS::Queue",
            json!({"QueueName": "a", "VisibilityTimeout": 30, "DelaySeconds": 5}),
        );
        let change = diff_resource(
            &desired(&props, "AWS::SQS::Queue"),
            Some(&removed),
            &create_only,
        );
        assert_eq!(change.properties[0].after, None);
    }

    #[test]
    fn unknown_values_count_as_changes_and_policies_are_state_only_updates() {
        let props = json!({"QueueName": unknown("Other.Name")})
            .as_object()
            .unwrap()
            .clone();
        let recorded = record("AWS::SQS::Queue", json!({"QueueName": "x"}));
        let change = diff_resource(
            &desired(&props, "AWS::SQS::Queue"),
            Some(&recorded),
            &["QueueName".into()],
        );
        assert!(change.replacement);

        let props = json!({"QueueName": "x"}).as_object().unwrap().clone();
        let mut retained = desired(&props, "AWS::SQS::Queue");
        retained.deletion_policy = Some("Retain");
        let change = diff_resource(&retained, Some(&recorded), &[]);
        assert_eq!(
            (change.action, change.policies_only, change.replacement),
            (Action::Update, true, false)
        );
    }
}
