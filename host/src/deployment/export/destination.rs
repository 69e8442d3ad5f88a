//! The CloudFormation stack each stack of an export goes to: whether it exists already, what
//! it holds, and whether it is an earlier, interrupted export's stack to take up where it
//! stopped. Read once, before the lock, and handed to the handover.

use std::collections::{BTreeMap, BTreeSet};

use super::tree::TreeStack;
use crate::deployment::migrate::{CloudFormation, Described, SETTLED};

/// A destination stack as the export found it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Destination {
    /// The stack, when one of that name exists.
    pub described: Option<Described>,
    /// The logical ids it holds.
    pub held: BTreeSet<String>,
}

/// Every stack's destination, and what reading them found.
#[derive(Debug, Default)]
pub struct Destinations {
    /// By cdkd stack name.
    pub by_stack: BTreeMap<String, Destination>,
    /// A line for each destination an earlier export made, taken up again.
    pub taken_up: Vec<String>,
    /// What stops the export: cdkd stack name, and why.
    pub problems: Vec<(String, String)>,
}

impl Destinations {
    /// Reads the destination of every stack of `tree`.
    pub async fn read(
        cloudformation: &CloudFormation,
        tree: &TreeStack,
        region: &str,
    ) -> anyhow::Result<Destinations> {
        let mut out = Destinations::default();
        for part in tree.all() {
            let described = cloudformation.describe(&part.cfn_name).await?;
            let held = match &described {
                Some(_) => cloudformation.held(&part.cfn_name).await?,
                None => BTreeSet::new(),
            };
            let destination = Destination { described, held };
            match verdict(part, &destination, region, &tree.name) {
                Ok(Some(line)) => out.taken_up.push(line),
                Ok(None) => {}
                Err(problem) => out.problems.push((part.name.clone(), problem)),
            }
            out.by_stack.insert(part.name.clone(), destination);
        }
        Ok(out)
    }
}

impl CloudFormation {
    /// The logical ids the stack holds.
    pub async fn held(&self, stack: &str) -> anyhow::Result<BTreeSet<String>> {
        let resources = self.stack_resources(stack).await?;
        Ok(resources.into_iter().map(|r| r.logical_id).collect())
    }
}

/// Whether `part` can go to `destination`: `None` when there is no stack yet, a line when an
/// earlier export of this tree made it (settled, holding nothing but `part`'s resources) and
/// it is taken up again, and a refusal naming what to do otherwise. A stack that holds the
/// resources is never to be deleted (phase 1 gave them `DeletionPolicy: Delete`), so only an
/// empty one is offered for deletion.
fn verdict(
    part: &TreeStack,
    destination: &Destination,
    region: &str,
    root: &str,
) -> Result<Option<String>, String> {
    let Some(described) = &destination.described else {
        return Ok(None);
    };
    let cfn = &part.cfn_name;
    let status = &described.status;
    let plan = &part.plan;
    let ours: BTreeSet<&str> = (plan.imports.iter().map(|i| i.logical_id.as_str()))
        .chain(plan.looked_up.iter().map(|(id, _)| id.as_str()))
        .chain(plan.nested.iter().map(String::as_str))
        .chain(plan.recreated.iter().map(|r| r.logical_id.as_str()))
        .chain(plan.created.iter().map(|c| c.0.as_str()))
        .collect();
    let foreign: Vec<&str> = (destination.held.iter())
        .map(String::as_str)
        .filter(|id| !ours.contains(id))
        .collect();
    let rename = if part.name == root {
        "export under another name with --cfn-stack-name".to_string()
    } else {
        format!(
            "name nested stack {} otherwise with --cfn-child-stack-name '{}=<name>'",
            part.name, part.name
        )
    };
    if destination.held.is_empty() {
        return Err(format!(
            "a CloudFormation stack named {cfn} already exists in {region} ({status}) and holds no resource; delete it (`aws cloudformation delete-stack --stack-name {cfn} --region {region}`) or {rename}, then run cdkd export again"
        ));
    }
    if !foreign.is_empty() {
        return Err(format!(
            "a CloudFormation stack named {cfn} already exists in {region} ({status}) holding resources that are not {}'s ({}); {rename}",
            part.name,
            foreign.join(", ")
        ));
    }
    if described.settled() {
        return Ok(Some(format!(
            "CloudFormation stack {cfn} ({status}) already holds {} of {}'s resources from an earlier `cdkd export {root}`: it is taken up where it stopped",
            destination.held.len(),
            part.name
        )));
    }
    let settle = if status.ends_with("_IN_PROGRESS") {
        "wait until it is".to_string()
    } else if status == "UPDATE_ROLLBACK_FAILED" {
        format!("continue its rollback (`aws cloudformation continue-update-rollback --stack-name {cfn} --region {region}`)")
    } else {
        format!(
            "bring it to one of {} in CloudFormation",
            SETTLED.join(", ")
        )
    };
    Err(format!(
        "CloudFormation stack {cfn} holds {} of {}'s resources from an earlier `cdkd export {root}` but is {status}, not settled: {settle}, then run cdkd export again. Do not delete it: deleting it deletes those resources",
        destination.held.len(),
        part.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::export::plan::{ExportPlan, Import};
    use serde_json::json;

    fn part() -> TreeStack {
        let import = |id: &str| Import {
            logical_id: id.into(),
            resource_type: "AWS::SQS::Queue".into(),
            physical_id: id.to_lowercase(),
            identifier: serde_json::Map::new(),
        };
        TreeStack::for_test(
            json!({"Resources": {}}),
            ExportPlan {
                imports: vec![import("Queue"), import("Other")],
                ..ExportPlan::default()
            },
        )
    }

    fn existing(status: &str, held: &[&str]) -> Destination {
        Destination {
            described: Some(Described {
                stack_id: "arn:stack/S/1".into(),
                status: status.into(),
                status_reason: None,
                parent_id: None,
                tags: Vec::new(),
                parameters: Vec::new(),
            }),
            held: held.iter().map(|h| h.to_string()).collect(),
        }
    }

    #[test]
    fn an_earlier_export_s_settled_stack_is_taken_up_and_no_stack_is_new() {
        let part = part();
        assert_eq!(
            verdict(&part, &Destination::default(), "eu-west-1", "S"),
            Ok(None)
        );
        for status in ["IMPORT_COMPLETE", "UPDATE_ROLLBACK_COMPLETE"] {
            let line = verdict(&part, &existing(status, &["Queue"]), "eu-west-1", "S")
                .unwrap()
                .unwrap();
            assert!(line.contains("taken up where it stopped"), "{line}");
        }
    }

    #[test]
    fn a_stack_holding_the_resources_is_never_offered_for_deletion() {
        let part = part();
        for (status, advice) in [
            ("IMPORT_IN_PROGRESS", "wait until it is"),
            (
                "UPDATE_ROLLBACK_FAILED",
                "continue-update-rollback --stack-name S",
            ),
            ("ROLLBACK_FAILED", "bring it to one of CREATE_COMPLETE"),
        ] {
            let refusal =
                verdict(&part, &existing(status, &["Queue"]), "eu-west-1", "S").unwrap_err();
            assert!(refusal.contains(advice), "{refusal}");
            assert!(refusal.contains("Do not delete it"), "{refusal}");
            assert!(!refusal.contains("delete-stack"), "{refusal}");
        }
        let foreign = verdict(
            &part,
            &existing("CREATE_COMPLETE", &["Queue", "Else"]),
            "eu-west-1",
            "S",
        )
        .unwrap_err();
        assert!(foreign.contains("not S's (Else)"), "{foreign}");
        assert!(foreign.contains("--cfn-stack-name"), "{foreign}");
        assert!(!foreign.contains("delete"), "{foreign}");
    }

    #[test]
    fn only_an_empty_stack_is_offered_for_deletion() {
        let refusal = verdict(
            &part(),
            &existing("REVIEW_IN_PROGRESS", &[]),
            "eu-west-1",
            "S",
        )
        .unwrap_err();
        assert!(refusal.contains("holds no resource"), "{refusal}");
        assert!(
            refusal.contains("aws cloudformation delete-stack --stack-name S --region eu-west-1"),
            "{refusal}"
        );
    }
}
