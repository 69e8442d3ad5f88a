//! Planning one stack: resolve every active resource at plan time in dependency order, build
//! the graph, and diff against the state record.
//!
//! A reference to a resource that is being created or replaced is "known after deploy"; a
//! reference to one that stays uses its recorded physical id and attributes.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use super::dag::{Graph, GraphError};
use super::diff::{deletion, diff_resource, Action, Desired, PropertyChange, ResourceChange};
use super::intrinsics::{Environment, Lookup, ResolveError, Resolver};
use super::no_echo::NoEcho;
use super::ref_values::RefValues;
use super::template::Template;
use crate::aws_env::{partition as partition_of, url_suffix as url_suffix_of};
use crate::state::schema::{ResourceState, StackState};

/// Values from outside the stack: other stacks' outputs and AWS lookups.
pub trait ExternalValues {
    /// `Fn::ImportValue`.
    fn import_value(&self, export_name: &str) -> Lookup;
    /// `Fn::GetStackOutput` (`region` defaults to the consumer's).
    fn stack_output(&self, stack: &str, region: &str, output: &str) -> Lookup;
    /// `Fn::GetStackOutput` with `RoleArn` (another account's stack).
    fn stack_output_as(&self, role_arn: &str, stack: &str, region: &str, output: &str) -> Lookup {
        let _ = (stack, region, output);
        Lookup::Missing(format!(
            "cross-account Fn::GetStackOutput (RoleArn {role_arn}) is not read here"
        ))
    }
    /// `Fn::GetAZs`.
    fn availability_zones(&self, region: &str) -> Lookup;
}

/// Which properties of a type force a replacement when they change.
pub trait CreateOnlyProperties {
    /// The create-only properties of `resource_type` (empty: every change is in place).
    fn create_only(&self, resource_type: &str) -> Vec<String>;
}

/// What a stack is and where it goes.
#[derive(Debug, Clone, PartialEq)]
pub struct StackContext {
    /// The stack (and state record) name.
    pub stack_name: String,
    /// The target region.
    pub region: String,
    /// The target account.
    pub account: String,
    /// What `Ref` returns per type.
    pub ref_values: std::sync::Arc<RefValues>,
    /// `Fn::GetAZs` answers fetched before the deploy, by region (empty: known after deploy).
    pub availability_zones: BTreeMap<String, Vec<String>>,
}

impl StackContext {
    /// The value of a pseudo parameter for this stack.
    pub fn pseudo(&self, name: &str) -> Option<Value> {
        let partition = partition_of(&self.region);
        Some(match name {
            "AWS::Region" => json!(self.region),
            "AWS::AccountId" => json!(self.account),
            "AWS::Partition" => json!(partition),
            "AWS::URLSuffix" => json!(url_suffix_of(&self.region)),
            "AWS::StackName" => json!(self.stack_name),
            // cdkd has no CloudFormation stack; this stable, well-formed ARN stands in for it.
            "AWS::StackId" => json!(format!(
                "arn:{partition}:cloudformation:{}:{}:stack/{}/cdkd",
                self.region, self.account, self.stack_name
            )),
            "AWS::NotificationARNs" => json!([]),
            _ => return None,
        })
    }
}

/// A plan that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Resolution failed.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The graph is broken.
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// One stack's plan.
#[derive(Debug, Clone)]
pub struct StackPlan {
    /// The dependency graph of the active resources.
    pub graph: Graph,
    /// Resolved (plan-time) properties of every active resource.
    pub properties: BTreeMap<String, Map<String, Value>>,
    /// Every change, in dependency order, deletions last.
    pub changes: Vec<ResourceChange>,
    /// The stack's `NoEcho` parameter values: what shows `properties` (IAM statements in an
    /// approval prompt) masks with.
    pub no_echo: NoEcho,
}

impl StackPlan {
    /// Whether anything would change.
    pub fn has_changes(&self) -> bool {
        self.changes.iter().any(|c| c.action != Action::NoChange)
    }

    /// Counts per action: create, update, delete, no-change.
    pub fn summary(&self) -> (usize, usize, usize, usize) {
        let count = |action| self.changes.iter().filter(|c| c.action == action).count();
        (
            count(Action::Create),
            count(Action::Update),
            count(Action::Delete),
            count(Action::NoChange),
        )
    }
}

struct PlanEnvironment<'a> {
    context: &'a StackContext,
    state: Option<&'a StackState>,
    external: &'a dyn ExternalValues,
    /// Resources whose identity is new in this deploy (created or replaced).
    renewed: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl Environment for PlanEnvironment<'_> {
    fn pseudo(&self, name: &str) -> Option<Value> {
        self.context.pseudo(name)
    }

    fn resource_ref(&self, logical_id: &str) -> Lookup {
        if self.renewed.borrow().contains(logical_id) {
            return Lookup::Unknown;
        }
        match self.state.and_then(|s| s.resources.get(logical_id)) {
            Some(record) => Lookup::Known(self.context.ref_values.value(
                &record.resource_type,
                &record.physical_id,
                record.attributes.as_ref(),
            )),
            None => Lookup::Unknown,
        }
    }

    fn resource_attribute(&self, logical_id: &str, attribute: &str) -> Lookup {
        if self.renewed.borrow().contains(logical_id) {
            return Lookup::Unknown;
        }
        match self
            .state
            .and_then(|s| s.resources.get(logical_id))
            .and_then(|record| record.attributes.as_ref())
            .and_then(|attributes| attributes.get(attribute))
        {
            Some(value) => Lookup::Known(value.clone()),
            None => Lookup::Unknown,
        }
    }

    fn import_value(&self, export_name: &str) -> Lookup {
        self.external.import_value(export_name)
    }

    fn stack_output(&self, stack: &str, region: Option<&str>, output: &str) -> Lookup {
        self.external
            .stack_output(stack, region.unwrap_or(&self.context.region), output)
    }

    fn stack_output_as(
        &self,
        role_arn: &str,
        stack: &str,
        region: Option<&str>,
        output: &str,
    ) -> Lookup {
        let region = region.unwrap_or(&self.context.region);
        self.external
            .stack_output_as(role_arn, stack, region, output)
    }

    fn availability_zones(&self, region: &str) -> Lookup {
        match self.context.availability_zones.get(region) {
            Some(zones) => Lookup::Known(json!(zones)),
            None => self.external.availability_zones(region),
        }
    }
}

/// The `NoEcho` parameters of a plan: desired values are compared masked (as state holds
/// them), and a value whose fingerprint changed updates every resource that receives it.
struct PlannedSecrets {
    no_echo: NoEcho,
    /// Values whose fingerprint differs: every receiving property changes.
    changed: BTreeSet<String>,
    /// Values with no fingerprint: receiving properties are updated in place (cheap, and it
    /// records them masked), never replaced on a guess.
    unknown: BTreeSet<String>,
}

impl PlannedSecrets {
    fn new(
        template: &Template,
        parameters: &BTreeMap<String, Value>,
        state: Option<&StackState>,
    ) -> PlannedSecrets {
        let no_echo = NoEcho::of(template, parameters);
        let recorded = state.and_then(|s| s.no_echo_parameters.as_ref());
        let (changed, unknown) = match no_echo.is_empty() {
            true => (BTreeSet::new(), BTreeSet::new()),
            false => (no_echo.changed(recorded), no_echo.unfingerprinted(recorded)),
        };
        PlannedSecrets {
            no_echo,
            changed,
            unknown,
        }
    }

    /// `recorded` as the plan compares it: masked, as a record written before masking (in
    /// plaintext) would otherwise differ from every masked desired value.
    fn masked_record(&self, recorded: &ResourceState) -> ResourceState {
        ResourceState {
            properties: self.no_echo.mask_map(&recorded.properties),
            ..recorded.clone()
        }
    }

    /// Masks what `change` shows of the record (a record written before masking holds the
    /// plaintext) and adds the properties that receive a changed `NoEcho` value.
    fn apply(
        &self,
        change: &mut ResourceChange,
        resolved: &Map<String, Value>,
        recorded: Option<&ResourceState>,
        create_only: &[String],
    ) {
        if self.no_echo.is_empty() {
            return;
        }
        for property in &mut change.properties {
            property.before = property.before.as_ref().map(|v| self.no_echo.mask(v));
        }
        let Some(recorded) = recorded else {
            return;
        };
        for (name, value) in resolved {
            let create_only = create_only.iter().any(|c| c == name);
            let holds =
                |names: &BTreeSet<String>| names.iter().any(|s| self.no_echo.holds(s, value));
            let receives = holds(&self.changed) || (!create_only && holds(&self.unknown));
            if !receives || change.properties.iter().any(|p| &p.name == name) {
                continue;
            }
            change.properties.push(PropertyChange {
                name: name.clone(),
                before: recorded.properties.get(name).map(|v| self.no_echo.mask(v)),
                after: Some(self.no_echo.mask(value)),
                create_only,
            });
            change.action = Action::Update;
            change.policies_only = false;
            change.replacement |= create_only;
        }
        change.properties.sort_by(|a, b| a.name.cmp(&b.name));
    }
}

/// Plans one stack.
pub fn plan(
    template: &Template,
    state: Option<&StackState>,
    context: &StackContext,
    parameters: &BTreeMap<String, Value>,
    external: &dyn ExternalValues,
    create_only: &dyn CreateOnlyProperties,
) -> Result<StackPlan, PlanError> {
    let env = PlanEnvironment {
        context,
        state,
        external,
        renewed: std::cell::RefCell::new(Default::default()),
    };
    let resolver = Resolver::new(template, &env, parameters)?;
    let graph = Graph::build(template, &resolver)?;
    let secrets = PlannedSecrets::new(template, parameters, state);
    let mut properties = BTreeMap::new();
    let mut changes = Vec::with_capacity(template.resources.len());
    for logical_id in graph.order() {
        let resource = &template.resources[logical_id];
        let resolved = resolver.resolve_properties(logical_id, &resource.properties)?;
        let recorded = state.and_then(|s| s.resources.get(logical_id));
        let masked = match secrets.no_echo.is_empty() {
            true => None,
            false => recorded.map(|r| secrets.masked_record(r)),
        };
        let create_only = create_only.create_only(&resource.kind);
        let mut change = diff_resource(
            &Desired {
                logical_id,
                resource_type: &resource.kind,
                properties: &secrets.no_echo.mask_map(&resolved),
                deletion_policy: resource.deletion_policy.as_deref(),
                update_replace_policy: resource.update_replace_policy.as_deref(),
            },
            masked.as_ref().or(recorded),
            &create_only,
        );
        secrets.apply(&mut change, &resolved, recorded, &create_only);
        if change.action == Action::Create || change.replacement {
            env.renewed.borrow_mut().insert(logical_id.clone());
        }
        properties.insert(logical_id.clone(), resolved);
        changes.push(change);
    }
    if let Some(state) = state {
        for (logical_id, recorded) in &state.resources {
            if graph.node(logical_id).is_none() {
                changes.push(deletion(logical_id, recorded));
            }
        }
    }
    Ok(StackPlan {
        graph,
        properties,
        changes,
        no_echo: secrets.no_echo,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::intrinsics::unknown;

    struct NoExternal;
    impl ExternalValues for NoExternal {
        fn import_value(&self, name: &str) -> Lookup {
            Lookup::Missing(format!("no export {name}"))
        }
        fn stack_output(&self, _: &str, _: &str, _: &str) -> Lookup {
            Lookup::Unknown
        }
        fn availability_zones(&self, _: &str) -> Lookup {
            Lookup::Unknown
        }
    }
    struct QueueNamesAreCreateOnly;
    impl CreateOnlyProperties for QueueNamesAreCreateOnly {
        fn create_only(&self, resource_type: &str) -> Vec<String> {
            if resource_type == "AWS::SQS::Queue" {
                vec!["QueueName".into()]
            } else {
                vec![]
            }
        }
    }

    fn context() -> StackContext {
        StackContext {
            stack_name: "Demo".into(),
            region: "us-east-1".into(),
            account: "123456789012".into(),
            ref_values: Default::default(),
            availability_zones: BTreeMap::new(),
        }
    }

    fn template() -> Template {
        Template::parse(&json!({"Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "jobs", "VisibilityTimeout": 30}},
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": {"Fn::GetAtt": ["Queue", "Arn"]}}}
        }}))
        .unwrap()
    }

    #[test]
    fn against_empty_state_everything_is_created_and_references_are_pending() {
        let plan = plan(
            &template(),
            None,
            &context(),
            &BTreeMap::new(),
            &NoExternal,
            &QueueNamesAreCreateOnly,
        )
        .unwrap();
        assert_eq!(plan.summary(), (2, 0, 0, 0));
        assert_eq!(
            plan.properties["Topic"]["DisplayName"],
            unknown("Queue.Arn")
        );
        assert_eq!(
            plan.changes
                .iter()
                .map(|c| c.logical_id.as_str())
                .collect::<Vec<_>>(),
            ["Queue", "Topic"]
        );
    }

    /// A queue whose create-only name and in-place policy both receive a NoEcho value.
    fn no_echo_plan(recorded: Value, value: &str) -> StackPlan {
        let template = Template::parse(&json!({
            "Parameters": {"Secret": {"Type": "String", "NoEcho": true}},
            "Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {
                "QueueName": {"Ref": "Secret"},
                "Policy": {"Fn::Sub": "allow-${Secret}-only"}}}}
        }))
        .unwrap();
        let state: StackState = serde_json::from_value(recorded).unwrap();
        let parameters = BTreeMap::from([("Secret".to_string(), json!(value))]);
        plan(
            &template,
            Some(&state),
            &context(),
            &parameters,
            &NoExternal,
            &QueueNamesAreCreateOnly,
        )
        .unwrap()
    }

    fn queue_record(properties: Value, fingerprints: Option<Value>) -> Value {
        let mut record = json!({
            "version": 9, "stackName": "Demo", "region": "us-east-1", "outputs": {}, "lastModified": 1,
            "resources": {"Queue": {"physicalId": "q", "resourceType": "AWS::SQS::Queue", "properties": properties}}
        });
        if let Some(fingerprints) = fingerprints {
            record["noEchoParameters"] = fingerprints;
        }
        record
    }

    #[test]
    fn a_no_echo_value_is_compared_masked_and_replaces_only_when_known_changed() {
        let masked = json!({"QueueName": "***", "Policy": "allow-***-only"});
        let secrets = NoEcho::of(
            &Template::parse(
                &json!({"Parameters": {"Secret": {"Type": "String", "NoEcho": true}},
                "Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}),
            )
            .unwrap(),
            &BTreeMap::from([("Secret".to_string(), json!("hunter22"))]),
        );
        let fingerprints = json!(secrets.fingerprints(None));

        // The same value: nothing to do.
        let same = no_echo_plan(
            queue_record(masked.clone(), Some(fingerprints.clone())),
            "hunter22",
        );
        assert_eq!(
            same.changes[0].action,
            Action::NoChange,
            "{:?}",
            same.changes
        );

        // Another value: the create-only name replaces the queue, both shown masked.
        let changed = no_echo_plan(queue_record(masked.clone(), Some(fingerprints)), "hunter23");
        let change = &changed.changes[0];
        assert_eq!((change.action, change.replacement), (Action::Update, true));
        assert!(
            !format!("{:?}", change.properties).contains("hunter2"),
            "{change:?}"
        );

        // A record written in plaintext before masking, or with no fingerprint: the in-place
        // property is rewritten (masked), the create-only one never replaced on a guess.
        let plaintext = json!({"QueueName": "hunter22", "Policy": "allow-hunter22-only"});
        for recorded in [plaintext, masked] {
            let legacy = no_echo_plan(queue_record(recorded, None), "hunter22");
            let change = &legacy.changes[0];
            assert_eq!(
                (change.action, change.replacement),
                (Action::Update, false),
                "{change:?}"
            );
            let names: Vec<&str> = change.properties.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names, ["Policy"]);
            assert!(!format!("{change:?}").contains("hunter22"), "{change:?}");
        }
    }

    fn deployed() -> StackState {
        serde_json::from_value(json!({
            "version": 9, "stackName": "Demo", "region": "us-east-1", "outputs": {}, "lastModified": 1,
            "resources": {
                "Queue": {"physicalId": "https://q/jobs", "resourceType": "AWS::SQS::Queue",
                          "properties": {"QueueName": "jobs", "VisibilityTimeout": 30},
                          "attributes": {"Arn": "arn:aws:sqs:us-east-1:123456789012:jobs"}},
                "Topic": {"physicalId": "arn:topic", "resourceType": "AWS::SNS::Topic",
                          "properties": {"DisplayName": "arn:aws:sqs:us-east-1:123456789012:jobs"}},
                "Gone": {"physicalId": "x", "resourceType": "AWS::Logs::LogGroup", "properties": {}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn against_its_own_state_nothing_changes_but_removed_resources_are_deleted() {
        let state = deployed();
        let plan = plan(
            &template(),
            Some(&state),
            &context(),
            &BTreeMap::new(),
            &NoExternal,
            &QueueNamesAreCreateOnly,
        )
        .unwrap();
        assert_eq!(plan.summary(), (0, 0, 1, 2));
        assert_eq!(plan.changes.last().unwrap().logical_id, "Gone");
    }

    #[test]
    fn a_replacement_makes_its_dependents_pending() {
        let mut template = template();
        template
            .resources
            .get_mut("Queue")
            .unwrap()
            .properties
            .insert("QueueName".into(), json!("jobs-v2"));
        let state = deployed();
        let plan = plan(
            &template,
            Some(&state),
            &context(),
            &BTreeMap::new(),
            &NoExternal,
            &QueueNamesAreCreateOnly,
        )
        .unwrap();
        let queue = plan
            .changes
            .iter()
            .find(|c| c.logical_id == "Queue")
            .unwrap();
        assert!(queue.replacement);
        let topic = plan
            .changes
            .iter()
            .find(|c| c.logical_id == "Topic")
            .unwrap();
        assert_eq!(topic.action, Action::Update);
        assert_eq!(topic.properties[0].after, Some(unknown("Queue.Arn")));
    }
}
