//! The CloudFormation stack each stack of an export goes to: whether it exists already, what
//! it holds, and whether it is an earlier, interrupted export's stack to take up where it
//! stopped. Read once, before the lock, and handed to the handover.

use std::collections::{BTreeMap, BTreeSet};

use super::tree::TreeStack;
use crate::cloudformation::{CloudFormation, Described};

/// A destination stack as the export found it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Destination {
    /// The stack, when one of that name exists.
    pub described: Option<Described>,
    /// The logical ids it holds, with CloudFormation's physical id of each.
    pub held: BTreeMap<String, Option<String>>,
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
                None => BTreeMap::new(),
            };
            let destination = Destination { described, held };
            match verdict(part, &destination, region, &tree.name) {
                Ok(Some(line)) => out.taken_up.push(line),
                Ok(None) => {}
                Err(problem) => out.problems.push((part.name.clone(), problem.to_string())),
            }
            out.by_stack.insert(part.name.clone(), destination);
        }
        Ok(out)
    }
}

/// Why a stack cannot go to the CloudFormation stack of its name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Refusal {
    /// The stack exists and holds nothing: it may be deleted.
    #[error("a CloudFormation stack named {cfn} already exists in {region} ({status}) and holds no resource; delete it (`aws cloudformation delete-stack --stack-name {cfn} --region {region}`) or {rename}, then run cdkd export again")]
    Empty {
        cfn: String,
        region: String,
        status: String,
        /// How to name the export otherwise.
        rename: String,
    },
    /// The stack holds resources that are not the part's.
    #[error("a CloudFormation stack named {cfn} already exists in {region} ({status}) holding resources that are not {stack}'s ({}); {rename}", .foreign.join(", "))]
    Foreign {
        cfn: String,
        region: String,
        status: String,
        stack: String,
        foreign: Vec<String>,
        /// How to name the export otherwise.
        rename: String,
    },
    /// An earlier export's stack that is not settled.
    #[error("CloudFormation stack {cfn} holds {held} of {stack}'s resources from an earlier `cdkd export {root}` but is {status}, not settled: {settle}. Never delete it without --retain-resources: that deletes those resources")]
    Unsettled {
        cfn: String,
        held: usize,
        stack: String,
        root: String,
        status: String,
        /// How to settle it.
        settle: String,
    },
}

/// Whether `part` can go to `destination`: `None` when there is no stack yet, a line when an
/// earlier export of this tree made it (settled, holding nothing but `part`'s resources, the
/// imported ones under their own ids) and it is taken up again, and a refusal naming what to
/// do otherwise. A stack that holds the resources is never to be deleted with them (phase 1
/// gave them `DeletionPolicy: Delete`), so only an empty one is offered for deletion.
fn verdict(
    part: &TreeStack,
    destination: &Destination,
    region: &str,
    root: &str,
) -> Result<Option<String>, Box<Refusal>> {
    let Some(described) = &destination.described else {
        return Ok(None);
    };
    let cfn = &part.cfn_name;
    let status = &described.status;
    let foreign: Vec<&str> = (destination.held.iter())
        .filter(|(id, physical)| !ours(part, id, physical.as_deref()))
        .map(|(id, _)| id.as_str())
        .collect();
    let rename = if part.name == root {
        "name the export otherwise with --cfn-stack-name".to_string()
    } else {
        format!(
            "name nested stack {} otherwise with --cfn-child-stack-name '{}=<name>'",
            part.name, part.name
        )
    };
    if destination.held.is_empty() {
        return Err(Box::new(Refusal::Empty {
            cfn: cfn.clone(),
            region: region.to_string(),
            status: status.clone(),
            rename,
        }));
    }
    if !foreign.is_empty() {
        return Err(Box::new(Refusal::Foreign {
            cfn: cfn.clone(),
            region: region.to_string(),
            status: status.clone(),
            stack: part.name.clone(),
            foreign: foreign.iter().map(ToString::to_string).collect(),
            rename,
        }));
    }
    let held = destination.held.len();
    if described.settled() {
        return Ok(Some(format!(
            "CloudFormation stack {cfn} ({status}) already holds {held} of {}'s resources from an earlier `cdkd export {root}`: it is taken up where it stopped",
            part.name
        )));
    }
    let keep: Vec<&str> = destination.held.keys().map(String::as_str).collect();
    let settle = match status.as_str() {
        s if s.ends_with("_IN_PROGRESS") => "wait until it is, then run cdkd export again".to_string(),
        "UPDATE_ROLLBACK_FAILED" => format!("continue its rollback (`aws cloudformation continue-update-rollback --stack-name {cfn} --region {region}`), then run cdkd export again"),
        // A stack in these can only be deleted: keeping every resource it holds, cdkd's
        // record is again their only owner, and the export starts afresh.
        _ => format!("it can only be deleted: `aws cloudformation delete-stack --stack-name {cfn} --region {region} --retain-resources {}` removes it and keeps every resource, then run cdkd export again", keep.join(" ")),
    };
    Err(Box::new(Refusal::Unsettled {
        cfn: cfn.clone(),
        held,
        stack: part.name.clone(),
        root: root.to_string(),
        status: status.clone(),
        settle,
    }))
}

/// Whether `logical_id`, held by the destination under `physical`, is `part`'s: a nested
/// stack that is the child's CloudFormation stack, a resource CloudFormation made (phase 2
/// of an earlier run), or an import whose AWS resource it is. CloudFormation's physical id
/// is cdkd's, an identifier value, or a `|`-joined form of them (a permission's
/// `<function arn>|<statement id>`, a route's `<table>|<cidr>`); one it does not report
/// cannot be compared and counts as the same.
fn ours(part: &TreeStack, logical_id: &str, physical: Option<&str>) -> bool {
    let plan = &part.plan;
    if let Some((_, child)) = part.children.iter().find(|(id, _)| id == logical_id) {
        return physical.is_none_or(|arn| arn.contains(&format!(":stack/{}/", child.cfn_name)));
    }
    if plan.nested.iter().any(|id| id == logical_id)
        || plan.recreated.iter().any(|r| r.logical_id == logical_id)
        || plan.created.iter().any(|c| c.0 == logical_id)
    {
        return true;
    }
    let Some(import) = plan.imports.iter().find(|i| i.logical_id == logical_id) else {
        return false;
    };
    let Some(physical) = physical else {
        return true;
    };
    let values: BTreeSet<&str> = (import.identifier.values())
        .filter_map(|v| v.as_str())
        .chain([import.physical_id.as_str()])
        .collect();
    let segments: BTreeSet<&str> = physical.split('|').collect();
    let identifier: BTreeSet<&str> = (import.identifier.values())
        .filter_map(|v| v.as_str())
        .collect();
    values.contains(physical)
        || segments.contains(import.physical_id.as_str())
        || (identifier.len() > 1 && segments.is_superset(&identifier))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::export::plan::{ExportPlan, Import};
    use serde_json::{json, Value};

    fn part() -> TreeStack {
        let import = |id: &str| Import {
            logical_id: id.into(),
            resource_type: "AWS::SQS::Queue".into(),
            physical_id: format!("https://q/{}", id.to_lowercase()),
            identifier: serde_json::Map::from_iter([(
                "QueueUrl".to_string(),
                json!(format!("https://q/{}", id.to_lowercase())),
            )]),
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
            held: held
                .iter()
                .map(|h| {
                    (
                        h.to_string(),
                        Some(format!("https://q/{}", h.to_lowercase())),
                    )
                })
                .collect(),
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
    fn a_stack_holding_the_resources_is_never_offered_for_deletion_with_them() {
        let part = part();
        for (status, advice) in [
            ("IMPORT_IN_PROGRESS", "wait until it is"),
            (
                "UPDATE_ROLLBACK_FAILED",
                "continue-update-rollback --stack-name S",
            ),
        ] {
            let refusal =
                verdict(&part, &existing(status, &["Queue"]), "eu-west-1", "S").unwrap_err();
            assert!(
                matches!(*refusal, Refusal::Unsettled { held: 1, .. }),
                "{refusal}"
            );
            let refusal = refusal.to_string();
            assert!(refusal.contains(advice), "{refusal}");
            assert!(
                refusal.contains("Never delete it without --retain-resources"),
                "{refusal}"
            );
            assert!(!refusal.contains("delete-stack"), "{refusal}");
        }
        for status in ["ROLLBACK_FAILED", "DELETE_FAILED"] {
            let refusal = verdict(
                &part,
                &existing(status, &["Queue", "Other"]),
                "eu-west-1",
                "S",
            )
            .unwrap_err();
            assert!(
                matches!(*refusal, Refusal::Unsettled { held: 2, .. }),
                "{refusal}"
            );
            let refusal = refusal.to_string();
            assert!(
                refusal.contains(
                    "delete-stack --stack-name S --region eu-west-1 --retain-resources Other Queue"
                ),
                "{refusal}"
            );
        }
        let foreign = verdict(
            &part,
            &existing("CREATE_COMPLETE", &["Queue", "Else"]),
            "eu-west-1",
            "S",
        )
        .unwrap_err();
        assert!(
            matches!(&*foreign, Refusal::Foreign { foreign, .. } if foreign == &["Else"]),
            "{foreign}"
        );
        let foreign = foreign.to_string();
        assert!(foreign.contains("not S's (Else)"), "{foreign}");
        assert!(foreign.contains("--cfn-stack-name"), "{foreign}");
        assert!(!foreign.contains("delete"), "{foreign}");
    }

    #[test]
    fn a_resource_of_the_same_logical_id_but_another_physical_id_is_foreign() {
        // A stack `cdk deploy` made of the same app holds its own queue under that id: taking
        // it up would leave cdkd's queue imported by nobody.
        let mut destination = existing("CREATE_COMPLETE", &["Queue"]);
        destination
            .held
            .insert("Queue".into(), Some("https://q/someone-else".into()));
        let refusal = verdict(&part(), &destination, "eu-west-1", "S").unwrap_err();
        assert!(
            matches!(&*refusal, Refusal::Foreign { foreign, .. } if foreign == &["Queue"]),
            "{refusal}"
        );
        assert!(refusal.to_string().contains("not S's (Queue)"), "{refusal}");
    }

    #[test]
    fn cloudformation_s_forms_of_composite_ids_are_recognised() {
        let import = |id: &str, physical: &str, identifier: Value| Import {
            logical_id: id.into(),
            resource_type: "T".into(),
            physical_id: physical.into(),
            identifier: identifier.as_object().unwrap().clone(),
        };
        let part = TreeStack::for_test(
            json!({"Resources": {}}),
            ExportPlan {
                imports: vec![
                    import(
                        "Permission",
                        "stmt-1",
                        json!({"FunctionName": "fn", "Id": "stmt-1"}),
                    ),
                    import(
                        "Attachment",
                        "igw-1|vpc-2",
                        json!({"AttachmentType": "IGW", "VpcId": "vpc-2"}),
                    ),
                    import("Rule", "sg-1|tcp|443|443", json!({"Id": "sgr-9"})),
                ],
                ..ExportPlan::default()
            },
        );
        assert!(ours(
            &part,
            "Permission",
            Some("arn:aws:lambda:r:1:function:fn|stmt-1")
        ));
        assert!(ours(&part, "Attachment", Some("IGW|vpc-2")));
        assert!(!ours(&part, "Attachment", Some("IGW|vpc-3")));
        assert!(ours(&part, "Rule", Some("sgr-9")));
        assert!(!ours(&part, "Rule", Some("sgr-8")));
        assert!(!ours(&part, "Unplanned", Some("x")));
    }

    #[test]
    fn a_nested_stack_s_refusal_names_the_child_flag() {
        let mut child = part();
        child.name = "Root~Child".into();
        child.cfn_name = "Root-Child".into();
        let refusal = verdict(
            &child,
            &existing("CREATE_COMPLETE", &["Else"]),
            "eu-west-1",
            "Root",
        )
        .unwrap_err();
        assert!(matches!(*refusal, Refusal::Foreign { .. }), "{refusal}");
        assert!(
            refusal
                .to_string()
                .contains("--cfn-child-stack-name 'Root~Child=<name>'"),
            "{refusal}"
        );
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
        assert!(matches!(*refusal, Refusal::Empty { .. }), "{refusal}");
        let refusal = refusal.to_string();
        assert!(refusal.contains("holds no resource"), "{refusal}");
        assert!(
            refusal.contains("aws cloudformation delete-stack --stack-name S --region eu-west-1"),
            "{refusal}"
        );
    }
}
