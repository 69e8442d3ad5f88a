//! The stacks one export hands over: the named stack and, recursively, its nested stacks
//! (records `{parent}~{logicalId}`, templates from the cloud assembly). Each becomes its own
//! CloudFormation stack, named `{parent}-{logicalId}` unless `--cfn-child-stack-name` says
//! otherwise, and gets its own plan; a child's parameter values are resolved root first from
//! its parent's `AWS::CloudFormation::Stack` properties.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::plan::{plan, ExportPlan, PlanOptions};
use super::template;
use crate::cloudformation::nested_stacks;
use crate::provisioning::type_schemas::RegistrySchema;
use crate::state::keys::child_stack_name;
use crate::state::schema::StackState;
use crate::state::store::StateStore;
use crate::synthesis::assembly::read_json;
use crate::synthesis::template_file::{TemplateFile, TemplateFormat};

/// One stack of the export and its nested stacks.
#[derive(Debug, Clone)]
pub struct TreeStack {
    /// cdkd's name of it (`Parent~Child` for a nested stack).
    pub name: String,
    /// The CloudFormation stack it becomes.
    pub cfn_name: String,
    /// Its template, in the format it is sent in.
    pub file: TemplateFile,
    /// Its record.
    pub state: StackState,
    /// The change sets' parameter values.
    pub parameters: BTreeMap<String, String>,
    /// What happens to each of its resources.
    pub plan: ExportPlan,
    /// Its nested stacks, by the logical id of their resource.
    pub children: Vec<(String, TreeStack)>,
    /// Why a nested stack resource of it cannot be exported, by logical id.
    nested_problems: BTreeMap<String, String>,
    /// What stops this stack as a whole (its parameters).
    pub problems: Vec<String>,
}

/// The largest CloudFormation stack name.
const MAX_STACK_NAME: usize = 128;

/// Reads the records and templates of a stack's nested stacks, recursively.
pub struct Loader<'a> {
    /// The state bucket.
    pub store: &'a StateStore,
    /// The stacks' region.
    pub region: &'a str,
    /// Where the nested templates are (`aws:asset:path` is relative to it): the cloud
    /// assembly, or the folder of a `--template` file.
    pub folder: &'a Path,
    /// `--cfn-child-stack-name` overrides, by cdkd name.
    pub child_names: &'a BTreeMap<String, String>,
}

impl Loader<'_> {
    /// The tree under `name` (record `state`, template `file`), planned later.
    pub async fn load(
        &self,
        name: String,
        cfn_name: String,
        file: TemplateFile,
        state: StackState,
    ) -> anyhow::Result<TreeStack> {
        let mut stack = TreeStack {
            name,
            cfn_name,
            file,
            state,
            parameters: BTreeMap::new(),
            plan: ExportPlan::default(),
            children: Vec::new(),
            nested_problems: BTreeMap::new(),
            problems: Vec::new(),
        };
        for logical_id in nested_stacks(&stack.file.body) {
            if !stack.state.resources.contains_key(&logical_id) {
                continue; // the plan refuses it as missing from state
            }
            let child = child_stack_name(&stack.name, &logical_id);
            let Some(record) = self.store.backend.load(&child, self.region).await? else {
                stack.nested_problems.insert(logical_id, format!("cdkd's state has no record {child} for this nested stack (an orphan row); run `cdkd deploy {}` so the nested stack is recorded, then export again", stack.name));
                continue;
            };
            let path = stack.file.body["Resources"][&logical_id]
                .get("Metadata")
                .and_then(|m| m.get("aws:asset:path"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let file = match path {
                Some(path) => read_json(&self.folder.join(path)).map_err(|err| format!("its template: {err}")),
                None => Err("its template is not in the cloud assembly (the resource has no aws:asset:path metadata)".to_string()),
            };
            let body = match file {
                Ok(body) => body,
                Err(reason) => {
                    stack.nested_problems.insert(logical_id, reason);
                    continue;
                }
            };
            let cfn_name = self
                .child_names
                .get(&child)
                .cloned()
                .unwrap_or_else(|| child.replace('~', "-"));
            let loaded = Box::pin(self.load(
                child,
                cfn_name,
                TemplateFile {
                    body,
                    format: TemplateFormat::Json,
                },
                record.state,
            ))
            .await?;
            stack.children.push((logical_id, loaded));
        }
        Ok(stack)
    }
}

impl TreeStack {
    /// This stack and every stack under it, parents before their children.
    pub fn all(&self) -> Vec<&TreeStack> {
        let mut out = vec![self];
        for (_, child) in &self.children {
            out.extend(child.all());
        }
        out
    }

    /// Every stack, children before their parents (the order they are handed over in).
    pub fn leaf_first(&self) -> Vec<&TreeStack> {
        let mut out = Vec::new();
        for (_, child) in &self.children {
            out.extend(child.leaf_first());
        }
        out.push(self);
        out
    }

    /// Every stack's plan, mutably.
    pub fn plans_mut(&mut self) -> Vec<&mut ExportPlan> {
        let mut out = vec![&mut self.plan];
        for (_, child) in &mut self.children {
            out.extend(child.plans_mut());
        }
        out
    }

    /// Every stack, mutably, parents first.
    fn for_each_mut(&mut self, f: &mut dyn FnMut(&mut TreeStack)) {
        f(self);
        for (_, child) in &mut self.children {
            child.for_each_mut(f);
        }
    }

    /// The resource types of every record in the tree.
    pub fn resource_types(&self) -> BTreeSet<String> {
        self.all()
            .iter()
            .flat_map(|s| s.state.resources.values().map(|r| r.resource_type.clone()))
            .collect()
    }

    /// Plans every stack of `region`; `parameters` are the top stack's values.
    pub fn plan(
        &mut self,
        region: &str,
        parameters: BTreeMap<String, String>,
        schemas: &BTreeMap<String, RegistrySchema>,
        options: &PlanOptions,
    ) {
        self.parameters = parameters;
        let root = self.name.clone();
        let mut destinations: BTreeMap<String, Vec<String>> = BTreeMap::new();
        self.for_each_mut(&mut |stack| {
            destinations
                .entry(stack.cfn_name.clone())
                .or_default()
                .push(stack.name.clone());
            let mut nested: BTreeMap<String, Option<String>> = stack
                .nested_problems
                .iter()
                .map(|(id, why)| (id.clone(), Some(why.clone())))
                .collect();
            for (logical_id, _) in &stack.children {
                nested.insert(logical_id.clone(), None);
            }
            stack.plan = plan(&stack.file.body, &stack.state, schemas, options, &nested);
            if stack.cfn_name.len() > MAX_STACK_NAME
                || !stack.cfn_name.starts_with(|c: char| c.is_ascii_alphabetic())
                || !stack
                    .cfn_name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
            {
                stack.problems.push(format!("{:?} is not a valid CloudFormation stack name (letters, digits and hyphens, starting with a letter, at most {MAX_STACK_NAME} characters); {}", stack.cfn_name, rename(&stack.name, &root)));
            }
            let values = stack.parameters.clone();
            let warnings = &mut stack.plan.warnings;
            let state = &stack.state;
            let body = &stack.file.body;
            let mut resolved = Vec::new();
            for (logical_id, child) in &stack.children {
                let given = body
                    .get("Resources")
                    .and_then(|r| r.get(logical_id))
                    .and_then(|r| r.get("Properties"))
                    .and_then(|p| p.get("Parameters"))
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let mut overrides = BTreeMap::new();
                for (key, value) in &given {
                    match resolve(value, &values, state, &stack.cfn_name, region) {
                        Some(text) => {
                            overrides.insert(key.clone(), text);
                        }
                        None => warnings.push(format!(
                            "nested stack {}: parameter {key} = {value} cannot be resolved from {}'s parameters and state; the child is imported with its template's default, and when {} passes another value in phase 2, CloudFormation updates the child to it",
                            child.name, stack.name, stack.name
                        )),
                    }
                }
                resolved.push(template::parameters(&child.file.body, &overrides).map_err(
                    |err| format!("its parameters as {} passes them: {err}", stack.name),
                ));
            }
            for ((_, child), values) in stack.children.iter_mut().zip(resolved) {
                match values {
                    Ok(values) => child.parameters = values,
                    Err(problem) => child.problems.push(problem),
                }
                if !child.children.is_empty() {
                    let grandchildren: Vec<&str> =
                        child.children.iter().map(|(_, c)| c.name.as_str()).collect();
                    child.problems.push(format!(
                        "it has nested stacks of its own ({}); CloudFormation nests an existing stack only one level deep (a stack that has child stacks cannot be imported into a parent), so this tree cannot be handed over. Keep it on cdkd, or move those nested stacks' resources into {} (or the root) and export again",
                        grandchildren.join(", "),
                        child.name
                    ));
                }
            }
        });
        for (cfn_name, stacks) in destinations {
            if stacks.len() > 1 {
                for name in &stacks {
                    let others: Vec<&str> = (stacks.iter())
                        .filter(|s| *s != name)
                        .map(String::as_str)
                        .collect();
                    let problem = format!(
                        "it would become CloudFormation stack {cfn_name}, as {} would; {}",
                        others.join(" and "),
                        rename(name, &root)
                    );
                    self.for_each_mut(&mut |stack| {
                        if stack.name == *name {
                            stack.problems.push(problem.clone());
                        }
                    });
                }
            }
        }
    }

    /// Adds a reason that stops the export to the stack named `name` of the tree.
    pub fn add_problem(&mut self, name: &str, problem: String) {
        let mut problem = Some(problem);
        self.for_each_mut(&mut |stack| {
            if stack.name == name {
                if let Some(problem) = problem.take() {
                    stack.problems.push(problem);
                }
            }
        });
    }

    /// Whether anything in the tree stops the export.
    pub fn refused(&self) -> bool {
        self.all()
            .iter()
            .any(|s| s.plan.refused() || !s.problems.is_empty())
    }

    /// Every reason the export is refused, naming every stack and offender.
    pub fn refusal(&self) -> String {
        let mut lines = vec![format!("cdkd export {}: nothing was changed", self.name)];
        for stack in self.all() {
            let mut reasons = stack.plan.reasons();
            reasons.extend(stack.problems.iter().cloned());
            if reasons.is_empty() {
                continue;
            }
            if stack.name != self.name {
                lines.push(format!("  nested stack {}:", stack.name));
                lines.extend(reasons.iter().map(|r| format!("    {r}")));
            } else {
                lines.extend(reasons.iter().map(|r| format!("  {r}")));
            }
        }
        lines.join("\n")
    }

    /// Every warning of the tree.
    pub fn warnings(&self) -> Vec<String> {
        self.all()
            .iter()
            .flat_map(|s| s.plan.warnings.iter().cloned())
            .collect()
    }
}

/// How to give stack `name` another CloudFormation name.
fn rename(name: &str, root: &str) -> String {
    if name == root {
        "name it with --cfn-stack-name".to_string()
    } else {
        format!("name it with --cfn-child-stack-name '{name}=<name>'")
    }
}

/// A child parameter's value as CloudFormation will pass it in `region`: a literal, a `Ref`
/// to a parameter or resource of the parent, or an attribute the parent's record holds.
fn resolve(
    value: &Value,
    parameters: &BTreeMap<String, String>,
    state: &StackState,
    cfn_name: &str,
    region: &str,
) -> Option<String> {
    let recorded = |value: &Value| match value {
        Value::String(s) if s == "***" => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Some(s.clone()),
                Value::Number(_) | Value::Bool(_) => Some(i.to_string()),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(|items| items.join(",")),
        _ => None,
    };
    match value {
        Value::Object(map) if map.len() == 1 => {
            if let Some(Value::String(target)) = map.get("Ref") {
                if let Some(given) = parameters.get(target) {
                    return Some(given.clone());
                }
                if let Some(row) = state.resources.get(target) {
                    return Some(row.physical_id.clone());
                }
                return match target.as_str() {
                    "AWS::Region" => Some(region.to_string()),
                    "AWS::Partition" => Some(crate::aws_env::partition(region).to_string()),
                    "AWS::URLSuffix" => Some(crate::aws_env::url_suffix(region).to_string()),
                    "AWS::StackName" => Some(cfn_name.to_string()),
                    _ => None,
                };
            }
            let (target, attribute) = match map.get("Fn::GetAtt")? {
                Value::Array(parts) => (parts.first()?.as_str()?, parts.get(1)?.as_str()?),
                Value::String(dotted) => dotted.split_once('.')?,
                _ => return None,
            };
            recorded(
                state
                    .resources
                    .get(target)?
                    .attributes
                    .as_ref()?
                    .get(attribute)?,
            )
        }
        Value::Object(_) => None,
        other => recorded(other),
    }
}

#[cfg(test)]
impl TreeStack {
    /// A stack without record or children, planned as `plan`.
    pub(crate) fn for_test(body: Value, plan: ExportPlan) -> TreeStack {
        TreeStack {
            name: "S".into(),
            cfn_name: "S".into(),
            file: TemplateFile {
                body,
                format: TemplateFormat::Json,
            },
            state: serde_json::from_value(serde_json::json!({
                "version": 9, "stackName": "S", "resources": {}, "outputs": {}, "lastModified": 0
            }))
            .expect("a record"),
            parameters: BTreeMap::new(),
            plan,
            children: Vec::new(),
            nested_problems: BTreeMap::new(),
            problems: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(resources: Value) -> StackState {
        serde_json::from_value(json!({
            "version": 9, "stackName": "P", "region": "eu-west-1", "resources": resources, "outputs": {}, "lastModified": 0
        }))
        .unwrap()
    }

    #[test]
    fn child_parameters_resolve_from_the_parent_s_parameters_and_record() {
        let parent = state(json!({
            "Data": {"physicalId": "bucket-1", "resourceType": "AWS::S3::Bucket", "properties": {},
                     "attributes": {"Arn": "arn:aws:s3:::bucket-1", "Secret": "***"}}
        }));
        let parameters = BTreeMap::from([("Env".to_string(), "prod".to_string())]);
        let r = |v: Value| resolve(&v, &parameters, &parent, "P-cfn", "cn-north-1");
        assert_eq!(r(json!("literal")), Some("literal".into()));
        assert_eq!(r(json!(3)), Some("3".into()));
        assert_eq!(r(json!({"Ref": "Env"})), Some("prod".into()));
        assert_eq!(r(json!({"Ref": "Data"})), Some("bucket-1".into()));
        assert_eq!(r(json!({"Ref": "AWS::Region"})), Some("cn-north-1".into()));
        assert_eq!(
            r(json!({"Ref": "AWS::URLSuffix"})),
            Some("amazonaws.com.cn".into())
        );
        assert_eq!(r(json!({"Ref": "AWS::Partition"})), Some("aws-cn".into()));
        assert_eq!(r(json!({"Ref": "AWS::StackName"})), Some("P-cfn".into()));
        assert_eq!(
            r(json!({"Fn::GetAtt": ["Data", "Arn"]})),
            Some("arn:aws:s3:::bucket-1".into())
        );
        assert_eq!(
            r(json!({"Fn::GetAtt": "Data.Arn"})),
            Some("arn:aws:s3:::bucket-1".into())
        );
        assert_eq!(
            r(json!({"Fn::GetAtt": ["Data", "Secret"]})),
            None,
            "a masked value is not a value"
        );
        assert_eq!(r(json!({"Fn::Join": ["", ["a"]]})), None);
        assert_eq!(r(json!({"Ref": "Nowhere"})), None);
    }

    fn tree() -> TreeStack {
        let leaf = TreeStack {
            name: "Root~Mid~Leaf".into(),
            cfn_name: "Root-Mid-Leaf".into(),
            file: TemplateFile {
                body: json!({"Parameters": {"Name": {"Type": "String"}, "Other": {"Type": "String", "Default": "d"}},
                             "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}),
                format: TemplateFormat::Json,
            },
            state: state(
                json!({"Topic": {"physicalId": "arn:topic", "resourceType": "AWS::SNS::Topic", "properties": {}, "observedProperties": {}}}),
            ),
            parameters: BTreeMap::new(),
            plan: ExportPlan::default(),
            children: Vec::new(),
            nested_problems: BTreeMap::new(),
            problems: Vec::new(),
        };
        let mid = TreeStack {
            name: "Root~Mid".into(),
            cfn_name: "Root-Mid".into(),
            file: TemplateFile {
                body: json!({"Parameters": {"QueueName": {"Type": "String"}},
                             "Resources": {"Leaf": {"Type": "AWS::CloudFormation::Stack",
                                "Properties": {"Parameters": {"Name": {"Ref": "QueueName"}, "Other": {"Fn::Join": ["", []]}}}}}}),
                format: TemplateFormat::Json,
            },
            state: state(
                json!({"Leaf": {"physicalId": "arn:aws:cloudformation:r:a:stack/Root~Mid~Leaf/cdkd", "resourceType": "AWS::CloudFormation::Stack", "properties": {}, "observedProperties": {}}}),
            ),
            parameters: BTreeMap::new(),
            plan: ExportPlan::default(),
            children: vec![("Leaf".into(), leaf)],
            nested_problems: BTreeMap::new(),
            problems: Vec::new(),
        };
        TreeStack {
            name: "Root".into(),
            cfn_name: "Root".into(),
            file: TemplateFile {
                body: json!({"Resources": {
                    "Queue": {"Type": "AWS::SQS::Queue"},
                    "Mid": {"Type": "AWS::CloudFormation::Stack", "Properties": {"Parameters": {"QueueName": {"Fn::GetAtt": ["Queue", "QueueName"]}}}},
                    "Gone": {"Type": "AWS::CloudFormation::Stack"}
                }}),
                format: TemplateFormat::Json,
            },
            state: state(json!({
                "Queue": {"physicalId": "https://q", "resourceType": "AWS::SQS::Queue", "properties": {}, "observedProperties": {}, "attributes": {"QueueName": "q-1"}},
                "Mid": {"physicalId": "arn:aws:cloudformation:r:a:stack/Root~Mid/cdkd", "resourceType": "AWS::CloudFormation::Stack", "properties": {}, "observedProperties": {}},
                "Gone": {"physicalId": "arn:aws:cloudformation:r:a:stack/Root~Gone/cdkd", "resourceType": "AWS::CloudFormation::Stack", "properties": {}, "observedProperties": {}}
            })),
            parameters: BTreeMap::new(),
            plan: ExportPlan::default(),
            children: vec![("Mid".into(), mid)],
            nested_problems: BTreeMap::from([(
                "Gone".to_string(),
                "cdkd's state has no record Root~Gone".to_string(),
            )]),
            problems: Vec::new(),
        }
    }

    #[test]
    fn a_tree_is_planned_root_first_and_handed_over_leaf_first() {
        let mut tree = tree();
        tree.plan(
            "eu-west-1",
            BTreeMap::new(),
            &BTreeMap::new(),
            &PlanOptions::default(),
        );
        let order: Vec<&str> = tree.leaf_first().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(order, ["Root~Mid~Leaf", "Root~Mid", "Root"]);
        let mid = &tree.children[0].1;
        assert_eq!(mid.parameters["QueueName"], "q-1");
        let leaf = &mid.children[0].1;
        assert_eq!(
            leaf.parameters["Name"], "q-1",
            "resolved through Mid's own parameter"
        );
        assert_eq!(leaf.parameters["Other"], "d", "unresolvable: the default");
        assert!(mid
            .plan
            .warnings
            .iter()
            .any(|w| w.contains("parameter Other")));
        assert_eq!(tree.plan.nested, ["Mid"]);
        assert_eq!(mid.plan.nested, ["Leaf"]);
        let refusal = tree.refusal();
        assert!(tree.refused());
        assert!(
            refusal.contains(
                "Gone (AWS::CloudFormation::Stack): cdkd's state has no record Root~Gone"
            ),
            "{refusal}"
        );
    }

    /// The refusal of `tree`, planned with no parameters or schemas.
    fn refusal_of(mut tree: TreeStack) -> String {
        tree.plan(
            "eu-west-1",
            BTreeMap::new(),
            &BTreeMap::new(),
            &PlanOptions::default(),
        );
        tree.refusal()
    }

    #[test]
    fn a_child_without_a_parameter_value_and_a_bad_name_are_refused_naming_the_child() {
        let mut tree = tree();
        tree.children[0].1.children[0].1.cfn_name = "Root_Mid_Leaf".into();
        if let Some(resources) =
            tree.children[0].1.file.body["Resources"]["Leaf"]["Properties"].as_object_mut()
        {
            resources.remove("Parameters");
        }
        let refusal = refusal_of(tree);
        assert!(
            refusal.contains("  nested stack Root~Mid~Leaf:\n"),
            "{refusal}"
        );
        assert!(
            refusal.contains("parameter(s) Name have no default"),
            "{refusal}"
        );
        assert!(
            refusal.contains("\"Root_Mid_Leaf\" is not a valid CloudFormation stack name"),
            "{refusal}"
        );
    }

    #[test]
    fn two_stacks_bound_for_one_cloudformation_name_are_both_refused() {
        let mut tree = tree();
        tree.children[0].1.cfn_name = "Root".into();
        let refusal = refusal_of(tree);
        assert!(
            refusal.contains("  it would become CloudFormation stack Root, as Root~Mid would; name it with --cfn-stack-name"),
            "{refusal}"
        );
        assert!(
            refusal.contains("it would become CloudFormation stack Root, as Root would; name it with --cfn-child-stack-name 'Root~Mid=<name>'"),
            "{refusal}"
        );
    }
}
