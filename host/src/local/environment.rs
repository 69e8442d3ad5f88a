//! A function's `Environment.Variables` resolved for a local run: literals as they are,
//! `Ref` / `Fn::GetAtt` / `Fn::ImportValue` / `Fn::GetStackOutput` from the deployed stack's
//! state with `--from-state` (what `Ref` returns by the same rules a deploy uses, exports by the
//! importable-keys rule of schema v9), and every value that cannot be resolved named and left
//! empty. `--env-override` (SAM's `--env-vars` shape) applies last.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::LocalError;
use crate::analyzer::intrinsics::{contains_unknown, Environment, Lookup, Resolver};
use crate::analyzer::plan::StackContext;
use crate::analyzer::template::Template;
use crate::deployment::external::{SnapshotLookups, StateSnapshot};

/// What the values resolve against: the stack's target, and with `--from-state` the state.
pub struct StackValues<'a> {
    /// The stack's name, region, account and `Ref` rules.
    pub context: &'a StackContext,
    /// Every stack record (`--from-state`), or none.
    pub snapshot: Option<&'a StateSnapshot>,
}

/// Reads `Endpoint.Address`-style attributes from nested models, as a deploy does.
fn attribute_of(attributes: &Map<String, Value>, name: &str) -> Option<Value> {
    if let Some(value) = attributes.get(name) {
        return Some(value.clone());
    }
    let mut parts = name.split('.');
    let mut current = attributes.get(parts.next()?)?;
    for part in parts {
        current = current.get(part)?;
    }
    Some(current.clone())
}

impl StackValues<'_> {
    fn record(&self) -> Option<&crate::state::schema::StackState> {
        self.snapshot?
            .record(&self.context.stack_name, &self.context.region)
    }

    fn not_deployed(&self, logical_id: &str) -> Lookup {
        match self.record() {
            Some(_) => Lookup::Missing(format!(
                "{logical_id} is not in the state of stack {}; deploy the stack (`cdkd deploy {}`)",
                self.context.stack_name, self.context.stack_name
            )),
            None => Lookup::Missing(format!(
                "stack {} has no state in {}; deploy it first (`cdkd deploy {}`)",
                self.context.stack_name, self.context.region, self.context.stack_name
            )),
        }
    }
}

impl Environment for StackValues<'_> {
    fn pseudo(&self, name: &str) -> Option<Value> {
        self.context.pseudo(name)
    }

    fn resource_ref(&self, logical_id: &str) -> Lookup {
        if self.snapshot.is_none() {
            return Lookup::Unknown;
        }
        match self.record().and_then(|s| s.resources.get(logical_id)) {
            Some(record) => Lookup::Known(self.context.ref_values.value(
                &record.resource_type,
                &record.physical_id,
                record.attributes.as_ref(),
            )),
            None => self.not_deployed(logical_id),
        }
    }

    fn resource_attribute(&self, logical_id: &str, attribute: &str) -> Lookup {
        if self.snapshot.is_none() {
            return Lookup::Unknown;
        }
        match self.record().and_then(|s| s.resources.get(logical_id)) {
            Some(record) => match record
                .attributes
                .as_ref()
                .and_then(|a| attribute_of(a, attribute))
            {
                Some(value) => Lookup::Known(value),
                None => Lookup::Missing(format!(
                    "{logical_id} ({}) has no attribute {attribute} in state",
                    record.resource_type
                )),
            },
            None => self.not_deployed(logical_id),
        }
    }

    fn import_value(&self, export_name: &str) -> Lookup {
        let Some(snapshot) = self.snapshot else {
            return Lookup::Unknown;
        };
        match snapshot.export(&self.context.region, export_name) {
            Some((_, value)) => Lookup::Known(value.clone()),
            None => Lookup::Missing(format!(
                "no deployed stack in {} exports {export_name}",
                self.context.region
            )),
        }
    }

    fn stack_output(&self, stack: &str, region: Option<&str>, output: &str) -> Lookup {
        let Some(snapshot) = self.snapshot else {
            return Lookup::Unknown;
        };
        let region = region.unwrap_or(&self.context.region);
        crate::analyzer::plan::ExternalValues::stack_output(
            &SnapshotLookups { snapshot, region },
            stack,
            region,
            output,
        )
    }

    fn availability_zones(&self, _region: &str) -> Lookup {
        Lookup::Missing("Fn::GetAZs is not resolved by cdkd local".into())
    }
}

/// A variable that could not be resolved: its name and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// The variable.
    pub name: String,
    /// Why (a deployed value and no `--from-state`, or what the state lacks).
    pub reason: String,
}

/// What a raw value reads from the deployed stack: `Queue`, `Queue.Arn`, `export X`, `output
/// S.O`, in the order written.
fn deployed_reads(template: &Template, raw: &Value, found: &mut Vec<String>) {
    match raw {
        Value::Object(object) => {
            for (key, argument) in object {
                let read = match (key.as_str(), argument) {
                    ("Ref", Value::String(id)) if template.resources.contains_key(id) => {
                        Some(id.clone())
                    }
                    ("Fn::GetAtt", Value::Array(items)) => match (items.first(), items.get(1)) {
                        (Some(Value::String(id)), Some(Value::String(attribute))) => {
                            Some(format!("{id}.{attribute}"))
                        }
                        _ => None,
                    },
                    ("Fn::GetAtt", Value::String(dotted)) => Some(dotted.clone()),
                    ("Fn::ImportValue", Value::String(name)) => Some(format!("export {name}")),
                    ("Fn::GetStackOutput", _) => Some("another stack's output".into()),
                    ("Fn::Sub", _) => {
                        let text = match argument {
                            Value::Array(items) => items.first().and_then(Value::as_str),
                            other => other.as_str(),
                        };
                        for name in text
                            .unwrap_or_default()
                            .split("${")
                            .skip(1)
                            .filter_map(|rest| rest.split_once('}').map(|(n, _)| n))
                        {
                            let id = name.split('.').next().unwrap_or_default();
                            if template.resources.contains_key(id)
                                && !found.iter().any(|f| f == name)
                            {
                                found.push(name.to_string());
                            }
                        }
                        None
                    }
                    _ => None,
                };
                match read {
                    Some(read) if !found.contains(&read) => found.push(read),
                    Some(_) => {}
                    None => deployed_reads(template, argument, found),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                deployed_reads(template, item, found);
            }
        }
        _ => {}
    }
}

/// The text Lambda would get for a resolved value.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// Resolves `variables` (a function's raw `Environment.Variables`); every value that cannot be
/// resolved is left empty and named in the second list.
pub fn resolve(
    template: &Template,
    values: &StackValues<'_>,
    parameters: &BTreeMap<String, Value>,
    logical_id: &str,
    variables: &Map<String, Value>,
) -> Result<(BTreeMap<String, String>, Vec<Unresolved>), LocalError> {
    let resolver = Resolver::new(template, values, parameters)
        .map_err(|err| LocalError::Environment(err.to_string()))?;
    let mut resolved = BTreeMap::new();
    let mut unresolved = Vec::new();
    for (name, raw) in variables {
        let path = format!("Resources.{logical_id}.Properties.Environment.Variables.{name}");
        let outcome = resolver.resolve(raw, &path);
        let value = match outcome {
            Ok(value) if contains_unknown(&value) => {
                let mut reads = Vec::new();
                deployed_reads(template, raw, &mut reads);
                let what = if reads.is_empty() {
                    "a value known only after deploy".to_string()
                } else {
                    reads.join(", ")
                };
                unresolved.push(Unresolved {
                    name: name.clone(),
                    reason: format!("reads the deployed {what}; pass --from-state to read it from the stack's state"),
                });
                String::new()
            }
            Ok(value) => text_of(&value),
            Err(err) => {
                unresolved.push(Unresolved {
                    name: name.clone(),
                    reason: err.message,
                });
                String::new()
            }
        };
        resolved.insert(name.clone(), value);
    }
    Ok((resolved, unresolved))
}

/// The variables an `--env-override` file sets for one function: SAM's `--env-vars` shape,
/// `{"Parameters": {..every function..}, "<LogicalId or construct path>": {..}}`, or a flat
/// `{"NAME": "value"}` for every function. A function's own entry wins over `Parameters`.
pub fn overrides(
    file: &Value,
    logical_id: &str,
    path: &str,
) -> Result<BTreeMap<String, String>, LocalError> {
    let object = file
        .as_object()
        .ok_or_else(|| LocalError::EnvOverride("the file must hold a JSON object".into()))?;
    let text = |key: &str, value: &Value| -> Result<String, LocalError> {
        match value {
            Value::String(text) => Ok(text.clone()),
            Value::Number(_) | Value::Bool(_) => Ok(value.to_string()),
            _ => Err(LocalError::EnvOverride(format!(
                "{key} must be a string, number or boolean"
            ))),
        }
    };
    let mut out = BTreeMap::new();
    let flat = object.values().all(|v| !v.is_object());
    if flat {
        for (key, value) in object {
            out.insert(key.clone(), text(key, value)?);
        }
        return Ok(out);
    }
    let short_path = path.split_once('/').map(|(_, rest)| rest);
    for section in ["Parameters", path, logical_id]
        .into_iter()
        .chain(short_path)
    {
        if let Some(entries) = object.get(section) {
            let entries = entries.as_object().ok_or_else(|| {
                LocalError::EnvOverride(format!("{section} must be an object of variables"))
            })?;
            for (key, value) in entries {
                out.insert(key.clone(), text(&format!("{section}.{key}"), value)?);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::analyzer::ref_values::RefValues;
    use crate::state::schema::{ResourceState, StackState};

    fn context() -> StackContext {
        StackContext {
            stack_name: "S".into(),
            region: "us-east-1".into(),
            account: "123456789012".into(),
            ref_values: Arc::new(RefValues::builtin()),
            availability_zones: BTreeMap::new(),
        }
    }

    fn template() -> Template {
        Template::parse(&json!({
            "Resources": {
                "Queue": {"Type": "AWS::SQS::Queue"},
                "Table": {"Type": "AWS::DynamoDB::Table"},
                "Fn": {"Type": "AWS::Lambda::Function", "Properties": {}}
            }
        }))
        .unwrap()
    }

    fn variables() -> Map<String, Value> {
        json!({
            "PLAIN": "x",
            "NUMBER": 5,
            "URL": {"Ref": "Queue"},
            "ARN": {"Fn::GetAtt": ["Queue", "Arn"]},
            "JOINED": {"Fn::Join": ["", ["table=", {"Ref": "Table"}]]},
            "REGION": {"Ref": "AWS::Region"},
            "SHARED": {"Fn::ImportValue": "SharedBus"},
            "PLAIN_OUTPUT": {"Fn::ImportValue": "NotExported"}
        })
        .as_object()
        .unwrap()
        .clone()
    }

    fn snapshot() -> StateSnapshot {
        let mut own = StackState::new("S", "us-east-1");
        let record = |id: &str, kind: &str, attributes: Value| ResourceState {
            physical_id: id.into(),
            resource_type: kind.into(),
            properties: Map::new(),
            observed_properties: None,
            attributes: attributes.as_object().cloned(),
            dependencies: None,
            metadata: None,
            deletion_policy: None,
            update_replace_policy: None,
            provisioned_by: None,
            extra: Map::new(),
        };
        own.resources.insert(
            "Queue".into(),
            record(
                "http://127.0.0.1/123456789012/q",
                "AWS::SQS::Queue",
                json!({"Arn": "arn:aws:sqs:us-east-1:123456789012:q"}),
            ),
        );
        let mut producer = StackState::new("P", "us-east-1");
        producer.outputs.insert("SharedBus".into(), json!("bus-1"));
        producer
            .outputs
            .insert("NotExported".into(), json!("plain"));
        producer.export_names = Some(vec!["SharedBus".into()]);
        let mut snapshot = StateSnapshot::default();
        snapshot.update(own);
        snapshot.update(producer);
        snapshot
    }

    #[test]
    fn without_state_deployed_values_are_named_and_left_empty() {
        let context = context();
        let values = StackValues {
            context: &context,
            snapshot: None,
        };
        let (resolved, unresolved) =
            resolve(&template(), &values, &BTreeMap::new(), "Fn", &variables()).unwrap();
        assert_eq!(resolved["PLAIN"], "x");
        assert_eq!(resolved["NUMBER"], "5");
        assert_eq!(resolved["REGION"], "us-east-1");
        assert_eq!(resolved["URL"], "");
        let mut names: Vec<&str> = unresolved.iter().map(|u| u.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["ARN", "JOINED", "PLAIN_OUTPUT", "SHARED", "URL"]);
        let reason = |name: &str| {
            unresolved
                .iter()
                .find(|u| u.name == name)
                .map(|u| u.reason.clone())
                .unwrap()
        };
        let arn = reason("ARN");
        assert!(
            arn.contains("deployed Queue.Arn;") && arn.contains("--from-state"),
            "{arn}"
        );
        assert!(
            reason("JOINED").contains("deployed Table;"),
            "{}",
            reason("JOINED")
        );
        assert!(
            reason("SHARED").contains("export SharedBus"),
            "{}",
            reason("SHARED")
        );
    }

    #[test]
    fn with_state_refs_attributes_and_exports_resolve_by_the_state_rules() {
        let context = context();
        let snapshot = snapshot();
        let values = StackValues {
            context: &context,
            snapshot: Some(&snapshot),
        };
        let (resolved, unresolved) =
            resolve(&template(), &values, &BTreeMap::new(), "Fn", &variables()).unwrap();
        assert_eq!(resolved["URL"], "http://127.0.0.1/123456789012/q");
        assert_eq!(resolved["ARN"], "arn:aws:sqs:us-east-1:123456789012:q");
        assert_eq!(resolved["SHARED"], "bus-1");
        // A plain output of a v9 record is not an export.
        assert_eq!(resolved["PLAIN_OUTPUT"], "");
        // The table was never deployed: named, with what to do.
        assert_eq!(resolved["JOINED"], "");
        let joined = unresolved.iter().find(|u| u.name == "JOINED").unwrap();
        assert!(
            joined.reason.contains("Table") && joined.reason.contains("cdkd deploy S"),
            "{}",
            joined.reason
        );
        assert!(unresolved
            .iter()
            .any(|u| u.name == "PLAIN_OUTPUT" && u.reason.contains("NotExported")));
    }

    #[test]
    fn env_override_files_take_sam_shape_or_flat_variables() {
        let file = json!({
            "Parameters": {"STAGE": "dev", "LEVEL": "info"},
            "NodeFn1": {"LEVEL": "debug"},
            "S/Other": {"LEVEL": "warn"}
        });
        let mine = overrides(&file, "NodeFn1", "S/NodeFn").unwrap();
        assert_eq!(mine["STAGE"], "dev");
        assert_eq!(mine["LEVEL"], "debug");
        let other = overrides(&file, "Other1", "S/Other").unwrap();
        assert_eq!(other["LEVEL"], "warn");
        let flat = overrides(&json!({"A": "1", "B": 2}), "X", "S/X").unwrap();
        assert_eq!((flat["A"].as_str(), flat["B"].as_str()), ("1", "2"));
        assert!(overrides(&json!([1]), "X", "S/X").is_err());
        let bad = overrides(&json!({"Parameters": {"A": [1]}}), "X", "S/X")
            .unwrap_err()
            .to_string();
        assert!(bad.contains("Parameters.A"), "{bad}");
    }
}
