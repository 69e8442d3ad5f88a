//! What an export will do with each resource, decided from the template, cdkd's state record
//! and the registry schemas alone: no AWS write, and no lock yet, so a stack that cannot be
//! exported says so without holding up other commands.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::identifiers::{self, IdentifierError};
use crate::provisioning::preflight::NESTED_STACK;
use crate::provisioning::type_schemas::RegistrySchema;
use crate::state::schema::{ResourceState, StackState};

/// Types CloudFormation cannot import but creates: cdkd deletes the resource between the
/// phases and CloudFormation creates it again in phase 2.
pub const RECREATED: &[&str] = &["AWS::IAM::Policy", "AWS::ApiGatewayV2::Stage"];

/// The template resources of the CDK's own that CloudFormation creates itself.
const CLOUDFORMATION_ONLY: &[&str] = &["AWS::CDK::Metadata"];

/// What an export may do beyond importing.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    /// Let CloudFormation create custom resources in phase 2 (their handlers run again).
    pub include_non_importable: bool,
    /// Block IMPORT-unsupported types instead of deleting and re-creating them.
    pub no_recreate_import_unsupported: bool,
    /// Submit types the registry says CloudFormation cannot import.
    pub skip_import_support_preflight: bool,
    /// The schemas are only those cached (a dry run asks CloudFormation nothing): a type
    /// with none is left unchecked, not refused.
    pub cached_schemas_only: bool,
}

/// One resource CloudFormation imports.
#[derive(Debug, Clone, PartialEq)]
pub struct Import {
    /// The logical id.
    pub logical_id: String,
    /// The type.
    pub resource_type: String,
    /// cdkd's physical id.
    pub physical_id: String,
    /// CloudFormation's `ResourceIdentifier`.
    pub identifier: Map<String, Value>,
}

/// One resource cdkd deletes between the phases so that CloudFormation creates it again.
#[derive(Debug, Clone, PartialEq)]
pub struct Recreated {
    /// The logical id.
    pub logical_id: String,
    /// The type.
    pub resource_type: String,
    /// Its state row (what the delete needs).
    pub state: ResourceState,
}

/// A resource that stops the export, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The logical id.
    pub logical_id: String,
    /// The type.
    pub resource_type: String,
    /// What is wrong and what to do.
    pub reason: String,
}

/// The plan of one stack's export.
#[derive(Debug, Clone, Default)]
pub struct ExportPlan {
    /// Resources phase 1 imports.
    pub imports: Vec<Import>,
    /// Resources whose identifier is read from AWS before importing (a security group rule
    /// recorded without its `sgr-` id): logical id and type.
    pub looked_up: Vec<(String, ResourceState)>,
    /// Resources deleted between the phases and created again by phase 2.
    pub recreated: Vec<Recreated>,
    /// Resources only phase 2 creates (custom resources, the CDK's metadata, resources whose
    /// condition kept them out of cdkd's state): logical id, type, why.
    pub created: Vec<(String, String, String)>,
    /// Resources that stop the export.
    pub blocked: Vec<Blocked>,
    /// Resources of types CloudFormation cannot import at all: logical id and type.
    pub unimportable: Vec<(String, String)>,
    /// Resources a dry run could not check (no cached registry schema): logical ids.
    pub unchecked: Vec<String>,
    /// Nested stacks, exported as their own CloudFormation stacks and then nested into this
    /// one: logical ids.
    pub nested: Vec<String>,
    /// Things the user should know that do not stop the export.
    pub warnings: Vec<String>,
}

impl ExportPlan {
    /// Whether anything stops the export.
    pub fn refused(&self) -> bool {
        !self.blocked.is_empty() || !self.unimportable.is_empty()
    }

    /// Every reason the export is refused, one line each, naming every offender.
    pub fn refusal(&self, stack: &str) -> String {
        let mut lines = vec![format!("cdkd export {stack}: nothing was changed")];
        lines.extend(self.reasons().iter().map(|r| format!("  {r}")));
        lines.join("\n")
    }

    /// The refusal's lines, without the heading or indent.
    pub fn reasons(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for b in &self.blocked {
            lines.push(format!(
                "{} ({}): {}",
                b.logical_id, b.resource_type, b.reason
            ));
        }
        if !self.unimportable.is_empty() {
            let named: Vec<String> = self
                .unimportable
                .iter()
                .map(|(id, t)| format!("{id} ({t})"))
                .collect();
            lines.push(format!(
                "CloudFormation cannot import {}: its registry schema has no read handler and the type is NON_PROVISIONABLE. Remove each from the stack before exporting (it stays in AWS and can be declared in CloudFormation afterwards), or destroy it first and let CloudFormation create it; --skip-import-support-preflight submits the change set anyway if AWS has since made the type importable",
                named.join(", ")
            ));
        }
        lines
    }
}

/// Whether a type is a custom resource (CloudFormation invokes its handler).
pub fn is_custom_resource(resource_type: &str) -> bool {
    resource_type.starts_with("Custom::") || resource_type == "AWS::CloudFormation::CustomResource"
}

/// Whether a recorded value holds the redaction mask of a `NoEcho` value.
fn holds_mask(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("***"),
        Value::Array(items) => items.iter().any(holds_mask),
        Value::Object(map) => map.values().any(holds_mask),
        _ => false,
    }
}

/// Plans the export of `state`'s stack with `template` (`schemas`: the registry's, by type;
/// `nested`: the stack's nested stacks by logical id, `None` when exportable, else why not).
pub fn plan(
    template: &Value,
    state: &StackState,
    schemas: &BTreeMap<String, RegistrySchema>,
    options: &PlanOptions,
    nested: &BTreeMap<String, Option<String>>,
) -> ExportPlan {
    let mut plan = ExportPlan::default();
    let mut unchecked = Vec::new();
    let resources = template
        .get("Resources")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let block = |plan: &mut ExportPlan, id: &str, t: &str, reason: String| {
        plan.blocked.push(Blocked {
            logical_id: id.to_string(),
            resource_type: t.to_string(),
            reason,
        })
    };
    for (logical_id, resource) in &resources {
        let resource_type = resource
            .get("Type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if CLOUDFORMATION_ONLY.contains(&resource_type) {
            plan.created.push((
                logical_id.clone(),
                resource_type.to_string(),
                "the CDK's metadata; CloudFormation records it".into(),
            ));
            continue;
        }
        if is_custom_resource(resource_type) {
            if options.include_non_importable {
                plan.created.push((
                    logical_id.clone(),
                    resource_type.to_string(),
                    "custom resource: CloudFormation invokes its handler to create it again (the handler must be idempotent and answer through the ResponseURL)".into(),
                ));
            } else {
                block(&mut plan, logical_id, resource_type, "a custom resource cannot be imported; pass --include-non-importable to let CloudFormation create it in phase 2 (its handler runs again, so it must be idempotent and answer through the ResponseURL)".into());
            }
            continue;
        }
        let Some(row) = state.resources.get(logical_id) else {
            if resource.get("Condition").is_some() {
                plan.created.push((
                    logical_id.clone(),
                    resource_type.to_string(),
                    "not in cdkd's state (its condition was false); CloudFormation evaluates it"
                        .into(),
                ));
            } else {
                block(&mut plan, logical_id, resource_type, "not in cdkd's state; run `cdkd deploy` first so every template resource exists, or remove it from the stack".into());
            }
            continue;
        };
        if resource_type == NESTED_STACK {
            match nested.get(logical_id) {
                Some(None) => plan.nested.push(logical_id.clone()),
                Some(Some(why)) => block(&mut plan, logical_id, resource_type, why.clone()),
                None => block(
                    &mut plan,
                    logical_id,
                    resource_type,
                    "its nested stack's record and template were not read".into(),
                ),
            }
            continue;
        }
        if holds_mask(&Value::Object(row.properties.clone())) {
            block(&mut plan, logical_id, resource_type, "its recorded properties hold the NoEcho mask ***, a value cdkd cannot re-derive (forcing an update does not help: cdkd masks it again). Stop setting NoEcho on the response that produces it and deploy again, or export the stack without this resource and adopt it by hand".into());
            continue;
        }
        if RECREATED.contains(&resource_type) {
            if options.no_recreate_import_unsupported {
                block(&mut plan, logical_id, resource_type, "CloudFormation cannot import this type; without --no-recreate-import-unsupported cdkd deletes it between the phases and CloudFormation creates it again".into());
            } else {
                plan.recreated.push(Recreated {
                    logical_id: logical_id.clone(),
                    resource_type: resource_type.to_string(),
                    state: row.clone(),
                });
            }
            continue;
        }
        let schema = schemas.get(resource_type);
        if !options.skip_import_support_preflight && schema.is_some_and(|s| !s.importable()) {
            plan.unimportable
                .push((logical_id.clone(), resource_type.to_string()));
            continue;
        }
        let names = schema
            .map(|s| s.primary_identifier.clone())
            .filter(|names| !names.is_empty())
            .or_else(|| identifiers::fallback(resource_type));
        let Some(names) = names else {
            if options.cached_schemas_only {
                unchecked.push(format!("{logical_id} ({resource_type})"));
                plan.unchecked.push(logical_id.clone());
            } else {
                block(&mut plan, logical_id, resource_type, "its CloudFormation identifier is unknown: the registry did not describe the type and it is not in cdkd's table".into());
            }
            continue;
        };
        match identifiers::identifier(row, &names) {
            Ok(identifier) => plan.imports.push(Import {
                logical_id: logical_id.clone(),
                resource_type: resource_type.to_string(),
                physical_id: row.physical_id.clone(),
                identifier,
            }),
            Err(IdentifierError::NotRecorded { .. })
                if resource_type == "AWS::EC2::SecurityGroupIngress" =>
            {
                plan.looked_up.push((logical_id.clone(), row.clone()));
            }
            Err(err) => block(&mut plan, logical_id, resource_type, err.to_string()),
        }
    }
    if !unchecked.is_empty() {
        plan.warnings.push(format!(
            "not checked: {}. A dry run reads only cached registry schemas and none is cached for these types; the real run reads them from CloudFormation and may refuse them",
            unchecked.join(", ")
        ));
    }
    for (logical_id, row) in &state.resources {
        if !resources.contains_key(logical_id) {
            block(&mut plan, logical_id, &row.resource_type, "in cdkd's state but not in the template; run `cdkd deploy` first so state matches the template (it deletes the resource), or put it back in the template".into());
        }
    }
    let unobserved: Vec<&str> = plan
        .imports
        .iter()
        .filter(|i| state.resources[&i.logical_id].observed_properties.is_none())
        .map(|i| i.logical_id.as_str())
        .collect();
    if !unobserved.is_empty() {
        plan.warnings.push(format!(
            "no drift baseline (observedProperties) for {}: run `cdkd state refresh-observed {}` (or deploy) and `cdkd drift` before exporting if drift matters",
            unobserved.join(", "),
            state.stack_name
        ));
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(resources: Value) -> StackState {
        serde_json::from_value(json!({
            "version": 9, "stackName": "S", "resources": resources, "outputs": {}, "lastModified": 0
        }))
        .unwrap()
    }

    fn schema(
        type_name: &str,
        identifier: &[&str],
        handlers: &[&str],
        provisioning: &str,
    ) -> RegistrySchema {
        let mut s = RegistrySchema::parse(
            type_name,
            "v1",
            &json!({
                "primaryIdentifier": identifier.iter().map(|p| format!("/properties/{p}")).collect::<Vec<_>>(),
                "handlers": handlers.iter().map(|h| (h.to_string(), json!({}))).collect::<Map<String, Value>>(),
            }),
        );
        s.provisioning_type = Some(provisioning.into());
        s
    }

    #[test]
    fn each_resource_gets_its_part_of_the_plan() {
        let template = json!({"Resources": {
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Policy": {"Type": "AWS::IAM::Policy"},
            "Meta": {"Type": "AWS::CDK::Metadata"},
            "Rule": {"Type": "AWS::EC2::SecurityGroupIngress"},
            "Maybe": {"Type": "AWS::SNS::Topic", "Condition": "IsProd"}
        }});
        let state = state(json!({
            "Queue": {"physicalId": "https://q", "resourceType": "AWS::SQS::Queue", "properties": {}, "observedProperties": {}},
            "Policy": {"physicalId": "Polic-1", "resourceType": "AWS::IAM::Policy", "properties": {"Roles": ["r"]}},
            "Rule": {"physicalId": "sg-1|tcp|1|1", "resourceType": "AWS::EC2::SecurityGroupIngress", "properties": {}}
        }));
        let schemas = BTreeMap::from([(
            "AWS::SQS::Queue".to_string(),
            schema("AWS::SQS::Queue", &["QueueUrl"], &["read"], "FULLY_MUTABLE"),
        )]);
        let plan = plan(
            &template,
            &state,
            &schemas,
            &PlanOptions::default(),
            &BTreeMap::new(),
        );
        assert!(!plan.refused(), "{}", plan.refusal("S"));
        assert_eq!(plan.imports.len(), 1);
        assert_eq!(plan.imports[0].identifier["QueueUrl"], "https://q");
        assert_eq!(plan.recreated[0].logical_id, "Policy");
        assert_eq!(plan.looked_up[0].0, "Rule");
        let created: Vec<&str> = plan.created.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(created, ["Meta", "Maybe"]);
        assert_eq!(plan.warnings.len(), 0, "the queue has a baseline");
    }

    #[test]
    fn every_blocked_resource_is_named_in_one_refusal() {
        let template = json!({"Resources": {
            "Missing": {"Type": "AWS::SQS::Queue"},
            "Secret": {"Type": "AWS::SSM::Parameter"},
            "Handler": {"Type": "Custom::Thing"},
            "Child": {"Type": "AWS::CloudFormation::Stack"},
            "TopicPolicy": {"Type": "AWS::SNS::TopicPolicy"},
            "QueuePolicy": {"Type": "AWS::SQS::QueuePolicy"},
            "Policy": {"Type": "AWS::IAM::Policy"}
        }});
        let state = state(json!({
            "Secret": {"physicalId": "p", "resourceType": "AWS::SSM::Parameter", "properties": {"Value": "***"}},
            "TopicPolicy": {"physicalId": "tp", "resourceType": "AWS::SNS::TopicPolicy", "properties": {}},
            "QueuePolicy": {"physicalId": "qp", "resourceType": "AWS::SQS::QueuePolicy", "properties": {}},
            "Policy": {"physicalId": "po", "resourceType": "AWS::IAM::Policy", "properties": {}},
            "Gone": {"physicalId": "g", "resourceType": "AWS::SNS::Topic", "properties": {}},
            "Child": {"physicalId": "arn:aws:cloudformation:r:a:stack/S~Child/cdkd", "resourceType": "AWS::CloudFormation::Stack", "properties": {}}
        }));
        let nested = BTreeMap::from([(
            "Child".to_string(),
            Some("cdkd's state has no record S~Child".to_string()),
        )]);
        let unimportable = |t: &str| {
            (
                t.to_string(),
                schema(
                    t,
                    &["Id"],
                    &["create", "update", "delete"],
                    "NON_PROVISIONABLE",
                ),
            )
        };
        let schemas = BTreeMap::from([
            unimportable("AWS::SNS::TopicPolicy"),
            unimportable("AWS::SQS::QueuePolicy"),
        ]);
        let options = PlanOptions {
            no_recreate_import_unsupported: true,
            ..PlanOptions::default()
        };
        let plan = plan(&template, &state, &schemas, &options, &nested);
        assert!(plan.refused());
        let refusal = plan.refusal("S");
        for needle in [
            "Missing (AWS::SQS::Queue): not in cdkd's state",
            "Secret (AWS::SSM::Parameter): its recorded properties hold the NoEcho mask",
            "Handler (Custom::Thing): a custom resource cannot be imported; pass --include-non-importable",
            "Child (AWS::CloudFormation::Stack): cdkd's state has no record S~Child",
            "Policy (AWS::IAM::Policy): CloudFormation cannot import this type",
            "Gone (AWS::SNS::Topic): in cdkd's state but not in the template",
            "CloudFormation cannot import TopicPolicy (AWS::SNS::TopicPolicy), QueuePolicy (AWS::SQS::QueuePolicy)",
        ] {
            assert!(refusal.contains(needle), "missing {needle:?} in:\n{refusal}");
        }
        let skipped = plan_with_preflight_skipped(&template, &state, &schemas);
        assert!(skipped.unimportable.is_empty());
    }

    fn plan_with_preflight_skipped(
        template: &Value,
        state: &StackState,
        schemas: &BTreeMap<String, RegistrySchema>,
    ) -> ExportPlan {
        let options = PlanOptions {
            skip_import_support_preflight: true,
            include_non_importable: true,
            ..PlanOptions::default()
        };
        plan(template, state, schemas, &options, &BTreeMap::new())
    }

    #[test]
    fn a_resource_without_a_drift_baseline_is_a_warning() {
        let template = json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}});
        let state = state(json!({
            "Queue": {"physicalId": "https://q", "resourceType": "AWS::SQS::Queue", "properties": {}}
        }));
        let plan = plan(
            &template,
            &state,
            &BTreeMap::new(),
            &PlanOptions::default(),
            &BTreeMap::new(),
        );
        assert!(!plan.refused());
        assert!(
            plan.warnings[0].contains("cdkd state refresh-observed S"),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn a_dry_run_leaves_a_type_without_a_cached_schema_unchecked() {
        let template = json!({"Resources": {"Widget": {"Type": "Acme::Unknown::Widget"}}});
        let state = state(json!({
            "Widget": {"physicalId": "w-1", "resourceType": "Acme::Unknown::Widget", "properties": {}, "observedProperties": {}}
        }));
        let run = |cached_schemas_only| {
            plan(
                &template,
                &state,
                &BTreeMap::new(),
                &PlanOptions {
                    cached_schemas_only,
                    ..PlanOptions::default()
                },
                &BTreeMap::new(),
            )
        };
        let real = run(false);
        assert!(real.refusal("S").contains("identifier is unknown"));
        let dry = run(true);
        assert!(!dry.refused(), "{}", dry.refusal("S"));
        assert!(
            dry.warnings[0].contains("not checked: Widget (Acme::Unknown::Widget)"),
            "{:?}",
            dry.warnings
        );
    }
}
