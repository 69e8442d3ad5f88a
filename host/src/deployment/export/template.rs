//! The templates of an export's two change sets. Phase 1 (IMPORT) holds only the resources
//! being imported, with no Outputs, a `DeletionPolicy` on each, and the identifier overlay;
//! phase 2 (UPDATE) is the whole template again, overlay kept, so CloudFormation restores the
//! Outputs and creates what phase 1 left out.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// A template value CloudFormation resolves itself: `{"Ref": ..}` or `{"Fn::..": ..}`.
fn is_intrinsic(value: &Value) -> bool {
    value.as_object().is_some_and(|map| {
        map.len() == 1
            && map
                .keys()
                .next()
                .is_some_and(|key| key == "Ref" || key == "Condition" || key.starts_with("Fn::"))
    })
}

/// A template property an identifier overlay cannot rewrite; the message names what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrepresentable {
    /// The resource.
    pub logical_id: String,
    /// The property.
    pub property: String,
    /// The scalar the template should declare instead.
    pub identifier: String,
    /// Why the value cannot simply be overwritten.
    pub reason: &'static str,
}

impl std::fmt::Display for Unrepresentable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: property {} {}; declare it as the scalar {:?} (the resource's identifier) and export again",
            self.logical_id, self.property, self.reason, self.identifier
        )
    }
}

/// Puts each identifier value into the resource's properties where the template carries a
/// different literal; leaves absent properties and intrinsics alone (CloudFormation matches
/// those through `ResourceIdentifier`). Answers the properties it rewrote.
pub fn overlay(
    logical_id: &str,
    resource: &mut Value,
    identifier: &Map<String, Value>,
) -> Result<Vec<String>, Unrepresentable> {
    let mut rewritten = Vec::new();
    for (property, wanted) in identifier {
        let Some(current) = resource.get("Properties").and_then(|p| p.get(property)) else {
            continue;
        };
        if is_intrinsic(current) || current == wanted {
            continue;
        }
        let refuse = |reason: &'static str| Unrepresentable {
            logical_id: logical_id.to_string(),
            property: property.clone(),
            identifier: wanted
                .as_str()
                .map_or_else(|| wanted.to_string(), str::to_string),
            reason,
        };
        match current {
            Value::Array(items) if items.is_empty() => {
                return Err(refuse("is an empty list, which names no resource"))
            }
            Value::Array(items) if items.iter().any(Value::is_object) => {
                return Err(refuse(
                    "is a list carrying an intrinsic, which an overlay would discard",
                ))
            }
            Value::Array(items) if items.iter().any(Value::is_array) => {
                return Err(refuse("is a nested list"))
            }
            Value::Object(_) => return Err(refuse("is an object, not a name")),
            _ => {}
        }
        resource["Properties"][property] = wanted.clone();
        rewritten.push(property.clone());
    }
    Ok(rewritten)
}

/// The phase-1 template: `imported` resources only (overlays applied by the caller), no
/// Outputs, `DeletionPolicy: Delete` where the template sets none, and no `DependsOn` on a
/// resource left for phase 2. A kept resource that reads a left-out one cannot be imported
/// first: those pairs are answered as errors `(reader, read)`.
pub fn phase_one(
    template: &Value,
    imported: &BTreeSet<String>,
) -> Result<Value, Vec<(String, String)>> {
    let mut out = template.clone();
    let Some(object) = out.as_object_mut() else {
        return Ok(out);
    };
    object.remove("Outputs");
    let mut resources: Map<String, Value> = object
        .get("Resources")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let left_out: BTreeSet<String> = resources
        .keys()
        .filter(|id| !imported.contains(*id))
        .cloned()
        .collect();
    resources.retain(|id, _| imported.contains(id));
    let mut reads = Vec::new();
    for (logical_id, resource) in resources.iter_mut() {
        let Some(body) = resource.as_object_mut() else {
            continue;
        };
        body.entry("DeletionPolicy")
            .or_insert_with(|| Value::String("Delete".into()));
        match body.get_mut("DependsOn") {
            Some(Value::Array(list)) => {
                list.retain(|d| d.as_str().is_none_or(|d| !left_out.contains(d)));
                if list.is_empty() {
                    body.remove("DependsOn");
                }
            }
            Some(Value::String(one)) if left_out.contains(one.as_str()) => {
                body.remove("DependsOn");
            }
            _ => {}
        }
        let mut referenced = BTreeSet::new();
        references(
            body.get("Properties").unwrap_or(&Value::Null),
            &mut referenced,
        );
        for read in referenced.intersection(&left_out) {
            reads.push((logical_id.clone(), read.clone()));
        }
    }
    if !reads.is_empty() {
        return Err(reads);
    }
    object.insert("Resources".into(), Value::Object(resources));
    Ok(out)
}

/// The resources of `template` that read any of `targets`, directly or through another
/// reader (what cannot be imported before the targets are).
pub fn readers(template: &Value, targets: &BTreeSet<String>) -> BTreeSet<String> {
    let resources = template
        .get("Resources")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut read = targets.clone();
    let mut found = BTreeSet::new();
    loop {
        let before = found.len();
        for (logical_id, resource) in &resources {
            if read.contains(logical_id) {
                continue;
            }
            let mut referenced = BTreeSet::new();
            references(
                resource.get("Properties").unwrap_or(&Value::Null),
                &mut referenced,
            );
            if !referenced.is_disjoint(&read) {
                found.insert(logical_id.clone());
            }
        }
        read.extend(found.iter().cloned());
        if found.len() == before {
            return found;
        }
    }
}

/// Logical ids a value reads through `Ref`, `Fn::GetAtt` or `Fn::Sub`.
fn references(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("Ref") {
                out.insert(target.clone());
            }
            match map.get("Fn::GetAtt") {
                Some(Value::Array(parts)) => {
                    if let Some(Value::String(target)) = parts.first() {
                        out.insert(target.clone());
                    }
                }
                Some(Value::String(dotted)) => {
                    if let Some((target, _)) = dotted.split_once('.') {
                        out.insert(target.to_string());
                    }
                }
                _ => {}
            }
            let sub = match map.get("Fn::Sub") {
                Some(Value::String(text)) => Some(text.as_str()),
                Some(Value::Array(parts)) => parts.first().and_then(Value::as_str),
                _ => None,
            };
            for name in sub.map(sub_names).unwrap_or_default() {
                out.insert(name.split('.').next().unwrap_or(&name).to_string());
            }
            for inner in map.values() {
                references(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| references(v, out)),
        _ => {}
    }
}

/// The `${Name}` placeholders of an `Fn::Sub` string (`${!Literal}` is not one).
fn sub_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find('}') else { break };
        let name = &rest[..end];
        if !name.starts_with('!') {
            names.push(name.to_string());
        }
        rest = &rest[end + 1..];
    }
    names
}

/// Why the parameters cannot be sent; names every key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParameterError {
    /// `--parameter` keys the template does not declare.
    Unknown(Vec<String>),
    /// Parameters with neither an override nor a default.
    Missing(Vec<String>),
}

impl std::fmt::Display for ParameterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParameterError::Unknown(keys) => write!(
                f,
                "--parameter names {} that the template does not declare (a typo?)",
                keys.join(", ")
            ),
            ParameterError::Missing(keys) => write!(
                f,
                "the template's parameter(s) {} have no default; give each with --parameter KEY=VALUE",
                keys.join(", ")
            ),
        }
    }
}

/// The change sets' parameter values: each `--parameter` override, else the template's
/// default.
pub fn parameters(
    template: &Value,
    overrides: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, ParameterError> {
    let declared = template
        .get("Parameters")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let unknown: Vec<String> = overrides
        .keys()
        .filter(|k| !declared.contains_key(*k))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(ParameterError::Unknown(unknown));
    }
    let mut values = BTreeMap::new();
    let mut missing = Vec::new();
    for (key, declaration) in &declared {
        let default = declaration.get("Default").map(|d| match d {
            Value::String(s) => s.clone(),
            Value::Array(items) => items
                .iter()
                .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                .collect::<Vec<_>>()
                .join(","),
            other => other.to_string(),
        });
        match overrides.get(key).cloned().or(default) {
            Some(value) => {
                values.insert(key.clone(), value);
            }
            None => missing.push(key.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(ParameterError::Missing(missing));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn readers_of_a_nested_stack_are_found_through_other_readers() {
        let template = json!({"Resources": {
            "Child": {"Type": "AWS::CloudFormation::Stack"},
            "Logs": {"Properties": {"Name": {"Fn::GetAtt": ["Child", "Outputs.Name"]}}},
            "Alarm": {"Properties": {"Group": {"Ref": "Logs"}}},
            "Queue": {"Properties": {}}
        }});
        let found = readers(&template, &BTreeSet::from(["Child".to_string()]));
        assert_eq!(
            found,
            BTreeSet::from(["Alarm".to_string(), "Logs".to_string()])
        );
    }

    #[test]
    fn an_aws_generated_id_of_a_sub_resource_is_not_put_into_its_properties() {
        // CloudFormation refuses IntegrationId / RouteId / a permission's Id as properties
        // ("Encountered unsupported property"): the overlay writes only what the template has.
        let identifier = json!({"ApiId": "api-1", "IntegrationId": "int-2"})
            .as_object()
            .unwrap()
            .clone();
        let mut integration = json!({"Type": "AWS::ApiGatewayV2::Integration",
            "Properties": {"ApiId": {"Ref": "Api"}, "IntegrationType": "AWS_PROXY"}});
        let before = integration.clone();
        assert_eq!(
            overlay("Integration", &mut integration, &identifier).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(integration, before);
    }

    fn ids(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn the_overlay_keeps_absent_and_intrinsic_values_and_rewrites_other_literals() {
        let identifier = json!({"RoleName": "Stack-role"})
            .as_object()
            .unwrap()
            .clone();
        let mut absent = json!({"Type": "AWS::IAM::Role", "Properties": {}});
        assert!(overlay("R", &mut absent, &identifier).unwrap().is_empty());
        assert_eq!(absent["Properties"], json!({}));
        let mut intrinsic = json!({"Properties": {"RoleName": {"Fn::Join": ["", ["a"]]}}});
        assert!(overlay("R", &mut intrinsic, &identifier)
            .unwrap()
            .is_empty());
        let mut same = json!({"Properties": {"RoleName": "Stack-role"}});
        assert!(overlay("R", &mut same, &identifier).unwrap().is_empty());
        let mut legacy = json!({"Properties": {"RoleName": "role"}});
        assert_eq!(
            overlay("R", &mut legacy, &identifier).unwrap(),
            ["RoleName"]
        );
        assert_eq!(legacy["Properties"]["RoleName"], "Stack-role");
        let mut list = json!({"Properties": {"RoleName": ["role"]}});
        overlay("R", &mut list, &identifier).unwrap();
        assert_eq!(list["Properties"]["RoleName"], "Stack-role");
    }

    #[test]
    fn the_overlay_refuses_shapes_it_cannot_rewrite_saying_why() {
        let identifier = json!({"Namespace": "analytics"})
            .as_object()
            .unwrap()
            .clone();
        for (value, why) in [
            (json!([]), "empty list"),
            (json!([{"Ref": "X"}]), "carrying an intrinsic"),
            (json!([["a"]]), "nested list"),
        ] {
            let mut resource = json!({"Properties": {"Namespace": value}});
            let err = overlay("Ns", &mut resource, &identifier).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(why), "{text}");
            assert!(text.starts_with("Ns: property Namespace"), "{text}");
            assert!(text.contains("\"analytics\""), "{text}");
        }
    }

    #[test]
    fn phase_one_holds_only_imported_resources_with_a_deletion_policy_and_no_outputs() {
        let template = json!({
            "Parameters": {"BootstrapVersion": {"Type": "String", "Default": "6"}},
            "Resources": {
                "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
                "Kept": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain"},
                "Fn": {"Type": "AWS::Lambda::Function", "DependsOn": ["Policy", "Role"],
                       "Properties": {"Role": {"Fn::GetAtt": ["Role", "Arn"]}}},
                "Policy": {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "Role"}]}},
                "CDKMetadata": {"Type": "AWS::CDK::Metadata"}
            },
            "Outputs": {"Arn": {"Value": {"Fn::GetAtt": ["Role", "Arn"]}}}
        });
        let one = phase_one(&template, &ids(&["Role", "Kept", "Fn"])).unwrap();
        assert_eq!(one.get("Outputs"), None);
        assert_eq!(one["Parameters"], template["Parameters"]);
        let resources = one["Resources"].as_object().unwrap();
        assert_eq!(resources.keys().collect::<Vec<_>>(), ["Role", "Kept", "Fn"]);
        assert_eq!(one["Resources"]["Role"]["DeletionPolicy"], "Delete");
        assert_eq!(one["Resources"]["Kept"]["DeletionPolicy"], "Retain");
        assert_eq!(one["Resources"]["Fn"]["DependsOn"], json!(["Role"]));
    }

    #[test]
    fn phase_one_refuses_a_kept_resource_that_reads_a_left_out_one() {
        let template = json!({"Resources": {
            "Handler": {"Type": "Custom::X", "Properties": {}},
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {
                "DisplayName": {"Fn::Sub": "made by ${Handler.Value} in ${AWS::Region} ${!x}"}}}
        }});
        assert_eq!(
            phase_one(&template, &ids(&["Topic"])).unwrap_err(),
            [("Topic".to_string(), "Handler".to_string())]
        );
    }

    #[test]
    fn parameters_take_overrides_then_defaults_and_name_every_problem() {
        let template = json!({"Parameters": {
            "BootstrapVersion": {"Type": "AWS::SSM::Parameter::Value<String>", "Default": "/cdk-bootstrap/hnb659fds/version"},
            "Env": {"Type": "String"},
            "Zones": {"Type": "CommaDelimitedList", "Default": ["a", "b"]}
        }});
        let err = parameters(&template, &BTreeMap::new()).unwrap_err();
        assert_eq!(err, ParameterError::Missing(vec!["Env".into()]));
        assert!(err.to_string().contains("--parameter KEY=VALUE"));
        let typo = BTreeMap::from([("Evn".to_string(), "x".to_string())]);
        assert_eq!(
            parameters(&template, &typo).unwrap_err(),
            ParameterError::Unknown(vec!["Evn".into()])
        );
        let given = BTreeMap::from([("Env".to_string(), "prod".to_string())]);
        let values = parameters(&template, &given).unwrap();
        assert_eq!(values["Env"], "prod");
        assert_eq!(values["Zones"], "a,b");
        assert_eq!(
            values["BootstrapVersion"],
            "/cdk-bootstrap/hnb659fds/version"
        );
    }
}
