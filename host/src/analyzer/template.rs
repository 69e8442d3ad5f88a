//! The CloudFormation template as cdkd reads it: parameters, mappings, conditions, rules,
//! resources and outputs, with property values kept as JSON for the resolver.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The CDK bootstrap-version parameter, recognised and skipped (no SSM call).
pub const BOOTSTRAP_VERSION_PARAMETER: &str = "BootstrapVersion";
/// The CDK rule that checks it, skipped with it.
pub const CHECK_BOOTSTRAP_VERSION_RULE: &str = "CheckBootstrapVersion";
/// Metadata resources CloudFormation ignores and cdkd never provisions.
pub const CDK_METADATA_TYPE: &str = "AWS::CDK::Metadata";

/// A template that cannot be used, naming the place.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TemplateError {
    /// Not a JSON object, or a section of the wrong shape.
    #[error("template {path}: {message}")]
    Shape {
        /// JSON path, e.g. `Resources.MyBucket.Type`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A transform (macro) is present; cdkd does not expand them yet.
    #[error("template uses Transform {0}: macros are not supported yet; deploy this stack with the CDK CLI")]
    Transform(String),
}

fn shape(path: impl Into<String>, message: impl Into<String>) -> TemplateError {
    TemplateError::Shape {
        path: path.into(),
        message: message.into(),
    }
}

/// One template parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// `String`, `Number`, `CommaDelimitedList`, `List<Number>`, `AWS::SSM::Parameter::Value<…>`, …
    pub kind: String,
    /// The default, if any.
    pub default: Option<Value>,
    /// `NoEcho`.
    pub no_echo: bool,
}

impl Parameter {
    /// Whether the value is a list (split on commas).
    pub fn is_list(&self) -> bool {
        self.kind == "CommaDelimitedList"
            || self.kind.starts_with("List<")
            || self.kind.starts_with("AWS::SSM::Parameter::Value<List<")
            || self.kind == "AWS::SSM::Parameter::Value<CommaDelimitedList>"
    }

    /// Whether the value is the name of an SSM parameter to read at deploy time.
    pub fn is_ssm(&self) -> bool {
        self.kind.starts_with("AWS::SSM::Parameter::Value<")
    }
}

/// One resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// The CloudFormation type.
    pub kind: String,
    /// The raw properties (intrinsics unresolved).
    pub properties: Map<String, Value>,
    /// Explicit `DependsOn`.
    pub depends_on: Vec<String>,
    /// The `Condition` gating it.
    pub condition: Option<String>,
    /// `DeletionPolicy`.
    pub deletion_policy: Option<String>,
    /// `UpdateReplacePolicy`.
    pub update_replace_policy: Option<String>,
    /// `Metadata`.
    pub metadata: Option<Map<String, Value>>,
}

/// One output.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The raw value.
    pub value: Value,
    /// `Export.Name` (raw: may be an intrinsic).
    pub export_name: Option<Value>,
    /// The `Condition` gating it.
    pub condition: Option<String>,
}

/// A value one template reads from another stack.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum StackRead {
    /// `Fn::GetStackOutput`: the stack, its region if the template names one literally
    /// (else this stack's), and the output.
    Output {
        /// The producer's stack name.
        stack: String,
        /// The producer's region, when literal.
        region: Option<String>,
        /// The output name.
        output: String,
    },
    /// `Fn::ImportValue` of a literal export name.
    Export(String),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    /// Parameters, minus CDK's bootstrap-version parameter.
    pub parameters: BTreeMap<String, Parameter>,
    /// `Mappings`.
    pub mappings: Map<String, Value>,
    /// `Conditions` (raw expressions).
    pub conditions: Map<String, Value>,
    /// `Rules`, minus CDK's bootstrap-version check (kept for completeness; not evaluated).
    pub rules: Map<String, Value>,
    /// Resources, minus `AWS::CDK::Metadata`.
    pub resources: BTreeMap<String, Resource>,
    /// Outputs.
    pub outputs: BTreeMap<String, Output>,
}

fn as_object<'a>(value: &'a Value, path: &str) -> Result<&'a Map<String, Value>, TemplateError> {
    value
        .as_object()
        .ok_or_else(|| shape(path, "must be an object"))
}

fn optional_string(
    object: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, TemplateError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(shape(format!("{path}.{key}"), "must be a string")),
    }
}

impl Template {
    /// The logical ids of the resources a construct path covers (`Stack/Queue` covers
    /// `Stack/Queue/Resource` and `Stack/Queue/Policy/Resource`), by their `aws:cdk:path`
    /// metadata, sorted.
    pub fn resources_under(&self, construct_path: &str) -> Vec<String> {
        let path = construct_path.trim_end_matches('/');
        let below = format!("{path}/");
        self.resources
            .iter()
            .filter(|(_, resource)| {
                resource
                    .metadata
                    .as_ref()
                    .and_then(|m| m.get("aws:cdk:path"))
                    .and_then(Value::as_str)
                    .is_some_and(|p| p == path || p.starts_with(&below))
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The attributes the template reads with `Fn::GetAtt` (or `${X.Attr}` in `Fn::Sub`),
    /// per logical id: what a provider's answer must hold after a create or update. An
    /// attribute named by `{"Ref": parameter}` is the parameter's value (`parameters`, else its
    /// default), so it is read back like a literal one.
    pub fn referenced_attributes(
        &self,
        parameters: &BTreeMap<String, Value>,
    ) -> BTreeMap<String, Vec<String>> {
        let parameter = |name: &str| -> Option<String> {
            let value = parameters
                .get(name)
                .or_else(|| self.parameters.get(name)?.default.as_ref())?;
            value.as_str().map(str::to_string)
        };
        let mut found: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
        let mut visit = |value: &Value| collect_attributes(value, &parameter, &mut found);
        for resource in self.resources.values() {
            visit(&Value::Object(resource.properties.clone()));
        }
        for output in self.outputs.values() {
            visit(&output.value);
        }
        found
            .into_iter()
            .filter(|(id, _)| self.resources.contains_key(id))
            .map(|(id, names)| (id, names.into_iter().collect()))
            .collect()
    }

    /// The regions whose zones `Fn::GetAZs` asks for (`""` or a non-literal: the stack's).
    pub fn availability_zone_regions(
        &self,
        stack_region: &str,
    ) -> std::collections::BTreeSet<String> {
        fn walk(value: &Value, stack_region: &str, found: &mut std::collections::BTreeSet<String>) {
            match value {
                Value::Object(map) => {
                    if let Some(region) = map.get("Fn::GetAZs") {
                        found.insert(match region.as_str() {
                            Some(r) if !r.is_empty() => r.to_string(),
                            _ => stack_region.to_string(),
                        });
                    }
                    map.values().for_each(|v| walk(v, stack_region, found));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, stack_region, found)),
                _ => {}
            }
        }
        let mut found = std::collections::BTreeSet::new();
        for resource in self.resources.values() {
            resource
                .properties
                .values()
                .for_each(|v| walk(v, stack_region, &mut found));
        }
        for output in self.outputs.values() {
            walk(&output.value, stack_region, &mut found);
        }
        self.conditions
            .values()
            .for_each(|v| walk(v, stack_region, &mut found));
        found
    }

    /// What this template reads from other stacks: `Fn::GetStackOutput` with a literal
    /// stack name, and `Fn::ImportValue` of a literal export name.
    pub fn stack_reads(&self) -> std::collections::BTreeSet<StackRead> {
        fn literal(value: Option<&Value>) -> Option<String> {
            value.and_then(Value::as_str).map(str::to_string)
        }
        fn walk(value: &Value, found: &mut std::collections::BTreeSet<StackRead>) {
            match value {
                Value::Object(map) => {
                    if let Some(read) = map.get("Fn::GetStackOutput") {
                        if let (Some(stack), Some(output)) = (
                            literal(read.get("StackName")),
                            literal(read.get("OutputName")),
                        ) {
                            let region = literal(read.get("Region"));
                            found.insert(StackRead::Output {
                                stack,
                                region,
                                output,
                            });
                        }
                    }
                    if let Some(name) = literal(map.get("Fn::ImportValue")) {
                        found.insert(StackRead::Export(name));
                    }
                    map.values().for_each(|v| walk(v, found));
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, found)),
                _ => {}
            }
        }
        let mut found = std::collections::BTreeSet::new();
        for resource in self.resources.values() {
            resource
                .properties
                .values()
                .for_each(|v| walk(v, &mut found));
        }
        for output in self.outputs.values() {
            walk(&output.value, &mut found);
        }
        self.conditions.values().for_each(|v| walk(v, &mut found));
        found
    }

    /// The export names this template declares as literals.
    pub fn literal_export_names(&self) -> std::collections::BTreeSet<String> {
        self.outputs
            .values()
            .filter_map(|output| output.export_name.as_ref()?.as_str().map(str::to_string))
            .collect()
    }

    /// Parses a template document.
    pub fn parse(document: &Value) -> Result<Template, TemplateError> {
        let root = as_object(document, "(root)")?;
        if let Some(transform) = root.get("Transform") {
            let names = match transform {
                Value::String(name) => name.clone(),
                Value::Array(names) => names
                    .iter()
                    .map(|n| n.as_str().unwrap_or("?"))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            return Err(TemplateError::Transform(names));
        }
        let section = |name: &str| -> Result<Map<String, Value>, TemplateError> {
            match root.get(name) {
                None | Some(Value::Null) => Ok(Map::new()),
                Some(value) => Ok(as_object(value, name)?.clone()),
            }
        };
        let mut template = Template {
            mappings: section("Mappings")?,
            conditions: section("Conditions")?,
            rules: section("Rules")?,
            ..Template::default()
        };
        template.rules.remove(CHECK_BOOTSTRAP_VERSION_RULE);
        for (name, raw) in section("Parameters")? {
            if name == BOOTSTRAP_VERSION_PARAMETER {
                continue;
            }
            let path = format!("Parameters.{name}");
            let object = as_object(&raw, &path)?;
            let kind = optional_string(object, "Type", &path)?
                .ok_or_else(|| shape(&path, "has no Type"))?;
            template.parameters.insert(
                name,
                Parameter {
                    kind,
                    default: object.get("Default").cloned(),
                    no_echo: matches!(object.get("NoEcho"), Some(Value::Bool(true)))
                        || object.get("NoEcho").and_then(Value::as_str) == Some("true"),
                },
            );
        }
        for (logical_id, raw) in section("Resources")? {
            let path = format!("Resources.{logical_id}");
            // CloudFormation's rule; the id becomes part of names, tags and records.
            if logical_id.is_empty()
                || logical_id.len() > 255
                || !logical_id.chars().all(|c| c.is_ascii_alphanumeric())
            {
                return Err(shape(
                    format!("Resources.{}", logical_id.escape_debug()),
                    "is not a valid logical id: 1 to 255 letters and digits (A-Z, a-z, 0-9)",
                ));
            }
            let object = as_object(&raw, &path)?;
            let kind = optional_string(object, "Type", &path)?
                .ok_or_else(|| shape(&path, "has no Type"))?;
            if kind == CDK_METADATA_TYPE {
                continue;
            }
            let properties = match object.get("Properties") {
                None | Some(Value::Null) => Map::new(),
                Some(value) => as_object(value, &format!("{path}.Properties"))?.clone(),
            };
            let depends_on = match object.get("DependsOn") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::String(one)) => vec![one.clone()],
                Some(Value::Array(many)) => many
                    .iter()
                    .map(|d| {
                        d.as_str().map(ToString::to_string).ok_or_else(|| {
                            shape(format!("{path}.DependsOn"), "must list logical ids")
                        })
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => {
                    return Err(shape(
                        format!("{path}.DependsOn"),
                        "must be a string or a list",
                    ))
                }
            };
            template.resources.insert(
                logical_id,
                Resource {
                    kind,
                    properties,
                    depends_on,
                    condition: optional_string(object, "Condition", &path)?,
                    deletion_policy: optional_string(object, "DeletionPolicy", &path)?,
                    update_replace_policy: optional_string(object, "UpdateReplacePolicy", &path)?,
                    metadata: object.get("Metadata").and_then(Value::as_object).cloned(),
                },
            );
        }
        for (name, raw) in section("Outputs")? {
            let path = format!("Outputs.{name}");
            let object = as_object(&raw, &path)?;
            let value = object
                .get("Value")
                .cloned()
                .ok_or_else(|| shape(&path, "has no Value"))?;
            let export_name = match object.get("Export") {
                None | Some(Value::Null) => None,
                Some(export) => Some(
                    as_object(export, &format!("{path}.Export"))?
                        .get("Name")
                        .cloned()
                        .ok_or_else(|| shape(format!("{path}.Export"), "has no Name"))?,
                ),
            };
            template.outputs.insert(
                name,
                Output {
                    value,
                    export_name,
                    condition: optional_string(object, "Condition", &path)?,
                },
            );
        }
        for (logical_id, resource) in &template.resources {
            for dependency in &resource.depends_on {
                if !template.resources.contains_key(dependency) {
                    return Err(shape(
                        format!("Resources.{logical_id}.DependsOn"),
                        format!("names {dependency}, which is not a resource of this template"),
                    ));
                }
            }
        }
        Ok(template)
    }
}

fn collect_attributes(
    value: &Value,
    parameter: &dyn Fn(&str) -> Option<String>,
    found: &mut BTreeMap<String, std::collections::BTreeSet<String>>,
) {
    match value {
        Value::Object(object) => {
            if let Some(target) = object.get("Fn::GetAtt") {
                let pair = match target {
                    Value::Array(parts) => match (parts.first(), parts.get(1)) {
                        (Some(Value::String(id)), Some(Value::String(name))) => {
                            Some((id.clone(), name.clone()))
                        }
                        (Some(Value::String(id)), Some(Value::Object(named))) => named
                            .get("Ref")
                            .and_then(Value::as_str)
                            .and_then(parameter)
                            .map(|name| (id.clone(), name)),
                        _ => None,
                    },
                    Value::String(joined) => joined
                        .split_once('.')
                        .map(|(id, name)| (id.to_string(), name.to_string())),
                    _ => None,
                };
                if let Some((id, name)) = pair {
                    found.entry(id).or_default().insert(name);
                }
            }
            if let Some(sub) = object.get("Fn::Sub") {
                let text = match sub {
                    Value::String(text) => Some(text.as_str()),
                    Value::Array(parts) => parts.first().and_then(Value::as_str),
                    _ => None,
                };
                for reference in text.into_iter().flat_map(sub_references) {
                    if let Some((id, name)) = reference.split_once('.') {
                        found
                            .entry(id.to_string())
                            .or_default()
                            .insert(name.to_string());
                    }
                }
            }
            for inner in object.values() {
                collect_attributes(inner, parameter, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_attributes(item, parameter, found);
            }
        }
        _ => {}
    }
}

/// The `${...}` references of an `Fn::Sub` string (`${!Literal}` is not one).
fn sub_references(text: &str) -> impl Iterator<Item = &str> {
    text.split("${").skip(1).filter_map(|rest| {
        let (inside, _) = rest.split_once('}')?;
        (!inside.starts_with('!')).then_some(inside)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_construct_path_covers_its_resources_and_no_sibling() {
        let template = Template::parse(&serde_json::json!({"Resources": {
            "Queue4A7E3555": {"Type": "AWS::SQS::Queue",
                "Metadata": {"aws:cdk:path": "App/Queue/Resource"}},
            "QueuePolicy25439813": {"Type": "AWS::SQS::QueuePolicy", "Properties": {"Queues": [], "PolicyDocument": {}},
                "Metadata": {"aws:cdk:path": "App/Queue/Policy/Resource"}},
            "QueueTwo": {"Type": "AWS::SQS::Queue",
                "Metadata": {"aws:cdk:path": "App/QueueTwo/Resource"}},
            "Bare": {"Type": "AWS::SQS::Queue"}
        }}))
        .unwrap();
        assert_eq!(
            template.resources_under("App/Queue"),
            ["Queue4A7E3555", "QueuePolicy25439813"]
        );
        assert_eq!(
            template.resources_under("App/Queue/Policy/"),
            ["QueuePolicy25439813"]
        );
        assert!(template.resources_under("App/Que").is_empty());
    }
    use serde_json::json;

    #[test]
    fn cdk_boilerplate_is_recognised_and_skipped() {
        let template = Template::parse(&json!({
            "Parameters": {
                "BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/cdk-bootstrap/hnb659fds/version"},
                "Env": {"Type": "String", "Default": "dev"},
                "Subnets": {"Type": "CommaDelimitedList", "Default": "a,b"}
            },
            "Rules": {"CheckBootstrapVersion": {"Assertions": []}},
            "Resources": {
                "CDKMetadata": {"Type": "AWS::CDK::Metadata", "Properties": {"Analytics": "v2:deflate64:..."}},
                "Queue": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
            },
            "Outputs": {"QueueUrl": {"Value": {"Ref": "Queue"}, "Export": {"Name": "Shared-QueueUrl"}}}
        }))
        .unwrap();
        assert_eq!(
            template.parameters.keys().collect::<Vec<_>>(),
            ["Env", "Subnets"]
        );
        assert!(template.parameters["Subnets"].is_list());
        assert!(template.rules.is_empty());
        assert_eq!(template.resources.keys().collect::<Vec<_>>(), ["Queue"]);
        assert_eq!(
            template.resources["Queue"].deletion_policy.as_deref(),
            Some("Retain")
        );
        assert_eq!(
            template.outputs["QueueUrl"].export_name,
            Some(json!("Shared-QueueUrl"))
        );
    }

    #[test]
    fn errors_name_the_path() {
        let err = Template::parse(&json!({"Resources": {"A": {"Properties": {}}}})).unwrap_err();
        assert_eq!(err.to_string(), "template Resources.A: has no Type");
        let err =
            Template::parse(&json!({"Resources": {"A": {"Type": "T", "DependsOn": "Ghost"}}}))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "template Resources.A.DependsOn: names Ghost, which is not a resource of this template"
        );
        let err =
            Template::parse(&json!({"Transform": "AWS::Serverless-2016-10-31", "Resources": {}}))
                .unwrap_err();
        assert!(matches!(err, TemplateError::Transform(_)));
        assert!(Template::parse(&json!([1])).is_err());
    }

    #[test]
    fn attributes_read_by_getatt_and_sub_are_collected() {
        let template = Template::parse(&serde_json::json!({"Resources": {
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Topic": {"Type": "AWS::SNS::Topic"},
            "Param": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Value": {"Fn::GetAtt": ["Queue", "Arn"]},
                "Description": {"Fn::Sub": "${Topic.TopicName} ${!Literal} ${AWS::Region}"}
            }}
        }, "Outputs": {"Url": {"Value": {"Fn::GetAtt": "Queue.QueueUrl"}}}}))
        .unwrap();
        let found = template.referenced_attributes(&BTreeMap::new());
        assert_eq!(
            found["Queue"],
            vec!["Arn".to_string(), "QueueUrl".to_string()]
        );
        assert_eq!(found["Topic"], vec!["TopicName".to_string()]);
        assert!(!found.contains_key("Param"));
    }

    #[test]
    fn an_attribute_named_by_a_parameter_is_collected_under_its_value() {
        let template = Template::parse(&serde_json::json!({
            "Parameters": {
                "Which": {"Type": "String", "Default": "Arn"},
                "Given": {"Type": "String", "Default": "QueueName"},
                "Unset": {"Type": "String"}
            },
            "Resources": {
                "Queue": {"Type": "AWS::SQS::Queue"},
                "Param": {"Type": "AWS::SSM::Parameter", "Properties": {
                    "Value": {"Fn::GetAtt": ["Queue", {"Ref": "Which"}]},
                    "Description": {"Fn::GetAtt": ["Queue", {"Ref": "Given"}]},
                    "Name": {"Fn::GetAtt": ["Queue", {"Ref": "Unset"}]}
                }}
            }
        }))
        .unwrap();
        let given = BTreeMap::from([("Given".to_string(), serde_json::json!("QueueUrl"))]);
        let found = template.referenced_attributes(&given);
        // The default, the value given over the default; a parameter with neither names none.
        assert_eq!(
            found["Queue"],
            vec!["Arn".to_string(), "QueueUrl".to_string()]
        );
    }
}
