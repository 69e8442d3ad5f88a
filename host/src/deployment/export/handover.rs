//! Handing a planned tree of stacks over to CloudFormation, leaf first, under the stacks'
//! locks. Each stack: phase 1A imports its own resources (creating its CloudFormation stack);
//! for a parent, phase 1B nests its already handed-over children by their stack ids (AWS's
//! "nest an existing stack"), together with the resources that read them; IMPORT-unsupported
//! resources are deleted; phase 2 updates it to its whole template. cdkd's records go only
//! when every stack is in CloudFormation, so a failure part way leaves each resource owned,
//! and a second run takes each stack up where it stopped (what its CloudFormation stack
//! already holds is not imported again).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::destination::{Destination, Destinations};
use super::nesting::{point_children, Nest};
use super::plan::ExportPlan;
use super::template;
use super::tree::TreeStack;
use crate::cloudformation::staging::stage;
use crate::cloudformation::{
    Body, CloudFormation, Outcome, TemplateStaging, ToImport, INLINE_LIMIT,
};
use crate::deployment::store::RecordStore;
use crate::provisioning::operations::{DeleteCall, ProviderSource};
use crate::provisioning::preflight::NESTED_STACK;
use crate::synthesis::template_file::TemplateFormat;

/// What handing stacks over needs.
pub struct Handover<'a> {
    /// CloudFormation in the stacks' region.
    pub cloudformation: &'a CloudFormation,
    /// The stacks' records, deleted at the end.
    pub records: &'a dyn RecordStore,
    /// Where transient templates go (the state bucket).
    pub staging: &'a dyn TemplateStaging,
    /// Providers, for the resources deleted between the phases.
    pub live: &'a dyn ProviderSource,
    /// The stacks' region.
    pub region: &'a str,
}

/// The two templates of one stack: the whole one with the identifier overlay, and phase 1's.
pub struct Templates {
    /// The whole template, identifiers overlaid (phase 2's, and the base of phase 1B's).
    pub full: Value,
    /// Phase 1's: the imported resources only.
    pub phase_one: Value,
}

/// Why a stack's phase templates cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplatesError {
    /// Identifier properties an overlay cannot rewrite: each one's reason.
    #[error("the template's identifier properties cannot be matched: {}", .0.join("; "))]
    Unrepresentable(Vec<String>),
    /// Imported resources read what only phase 2 creates: `reader reads read` pairs.
    #[error("these resources read a resource CloudFormation only creates in phase 2, so they cannot be imported first: {}. Remove the reference, or keep the stack on cdkd", .0.join(", "))]
    ReadsPhaseTwo(Vec<String>),
}

/// The identifier overlay on the whole template, and the phase-1 template narrowed to
/// `imported`; refuses naming every property an overlay cannot rewrite and every resource
/// that reads one left out.
pub fn templates(
    template: &Value,
    plan: &ExportPlan,
    imported: &BTreeSet<String>,
) -> Result<Templates, TemplatesError> {
    let mut full = template.clone();
    let mut unrepresentable = Vec::new();
    for import in &plan.imports {
        if let Some(resource) = full
            .get_mut("Resources")
            .and_then(|r| r.get_mut(&import.logical_id))
        {
            if let Err(err) = template::overlay(&import.logical_id, resource, &import.identifier) {
                unrepresentable.push(err.to_string());
            }
        }
    }
    if !unrepresentable.is_empty() {
        return Err(TemplatesError::Unrepresentable(unrepresentable));
    }
    let phase_one = template::phase_one(&full, imported).map_err(|reads| {
        let pairs: Vec<String> = reads
            .iter()
            .map(|(reader, read)| format!("{reader} reads {read}"))
            .collect();
        TemplatesError::ReadsPhaseTwo(pairs)
    })?;
    Ok(Templates { full, phase_one })
}

/// How a stack's resources split over the phases.
pub struct Phases {
    /// Phase 1A: imports that read no nested stack.
    pub own: BTreeSet<String>,
    /// Phase 1B: the nested stacks and the imports that read them.
    pub nesting: BTreeSet<String>,
}

impl Phases {
    /// The split of `stack`'s imports.
    pub fn of(stack: &TreeStack) -> Phases {
        let children: BTreeSet<String> = stack.plan.nested.iter().cloned().collect();
        let readers = template::readers(&stack.file.body, &children);
        // A dry run's unchecked resources are imports as far as it can tell.
        let imports: BTreeSet<String> = (stack.plan.imports.iter())
            .map(|i| i.logical_id.clone())
            .chain(stack.plan.unchecked.iter().cloned())
            .collect();
        let mut nesting: BTreeSet<String> = imports.intersection(&readers).cloned().collect();
        nesting.extend(children);
        Phases {
            own: imports.difference(&readers).cloned().collect(),
            nesting,
        }
    }

    /// What stops `stack`'s phase-1 templates, checked before anything is written: phase 1A's
    /// and, for a parent, phase 1B's (its own resources, children and their readers).
    pub fn problems(&self, stack: &TreeStack) -> Vec<String> {
        let mut problems = Vec::new();
        if self.own.is_empty() && self.nesting.is_empty() {
            problems.push("it holds nothing CloudFormation can import (an IMPORT change set needs one resource at least): only resources phase 2 would create. Deploy it with CloudFormation instead, or keep it on cdkd".to_string());
            return problems;
        }
        let mut imported = self.own.clone();
        let mut sets = vec![imported.clone()];
        if !self.nesting.is_empty() {
            imported.extend(self.nesting.iter().cloned());
            sets.push(imported);
        }
        for set in sets {
            if let Err(problem) = templates(&stack.file.body, &stack.plan, &set) {
                let problem = problem.to_string();
                if !problems.contains(&problem) {
                    problems.push(problem);
                }
            }
        }
        problems
    }
}

impl Handover<'_> {
    /// Hands `root` and every stack under it over, leaf first, to the `destinations` read
    /// while planning, then deletes their records. On a failure, the error names the stacks
    /// already in CloudFormation and those not.
    pub async fn run(&self, root: &TreeStack, destinations: &Destinations) -> anyhow::Result<()> {
        let order = root.leaf_first();
        let finish = if order.len() == 1 {
            format!(
                "`cdkd state orphan {}` so cdkd forgets the stack",
                root.name
            )
        } else {
            format!(
                "`cdkd export {}` again to hand over the rest (what CloudFormation holds is taken up, nothing is imported twice)",
                root.name
            )
        };
        for (done, stack) in order.iter().enumerate() {
            let Some(destination) = destinations.by_stack.get(&stack.name).cloned() else {
                anyhow::bail!(
                    "{}: its CloudFormation stack was not read before the handover (a bug)",
                    stack.name
                );
            };
            if let Err(err) = self.stack(stack, destination, &finish).await {
                if order.len() == 1 {
                    return Err(err);
                }
                let moved: Vec<String> = order[..done]
                    .iter()
                    .map(|s| format!("{} (as {})", s.name, s.cfn_name))
                    .collect();
                let left: Vec<&str> = order[done..].iter().map(|s| s.name.as_str()).collect();
                anyhow::bail!(
                    "nested stack export stopped at {} ({}): {err:#}\nIn CloudFormation already: {}. Not yet: {}.\ncdkd's state of every stack is kept. Fix the cause and run `cdkd export {}` again: stacks already in CloudFormation are taken up where they stopped, and nothing is imported twice",
                    stack.name,
                    stack.cfn_name,
                    if moved.is_empty() { "none".to_string() } else { moved.join(", ") },
                    left.join(", "),
                    root.name,
                );
            }
        }
        // Root first: once its record is gone, `cdkd deploy` of it finds the CloudFormation
        // stack and refuses; a child's record left behind is reached only through the root.
        // Removed the other way round, a stopped run would leave a root record whose deploy
        // creates the forgotten children again.
        let all = root.all();
        for (done, stack) in all.iter().enumerate() {
            if let Err(err) = self.records.forget(&stack.name, self.region).await {
                let left: Vec<String> = all[done..]
                    .iter()
                    .map(|s| format!("`cdkd state orphan {}`", s.name))
                    .collect();
                anyhow::bail!(
                    "every stack is in CloudFormation, but deleting cdkd's record of {} failed: {err}\nFinish with {}",
                    stack.name,
                    left.join(", ")
                );
            }
        }
        Ok(())
    }

    /// One stack: its phases, skipping what its CloudFormation stack already holds.
    #[allow(
        clippy::expect_used,
        reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
    )]
    async fn stack(
        &self,
        stack: &TreeStack,
        destination: Destination,
        finish: &str,
    ) -> anyhow::Result<()> {
        let cfn = &stack.cfn_name;
        let Destination {
            described: existing,
            held,
        } = destination;
        let held: BTreeSet<String> = held.into_keys().collect();
        if existing.as_ref().is_some_and(|d| d.parent_id.is_some()) {
            println!(
                "{} is CloudFormation stack {cfn}, already nested in its parent.",
                stack.name
            );
            return Ok(());
        }
        let phases = Phases::of(stack);
        let format = stack.file.format;
        let extension = match format {
            TemplateFormat::Json => "json",
            TemplateFormat::Yaml => "yaml",
        };
        let body = |template: &Value| Body {
            text: match format {
                TemplateFormat::Json => {
                    serde_json::to_string(template).expect("a template serialises")
                }
                TemplateFormat::Yaml => stack.file.render(template),
            },
            extension,
        };
        let to_import = |ids: &BTreeSet<String>, nests: &BTreeMap<String, Nest>| -> Vec<ToImport> {
            let mut out: Vec<ToImport> = stack
                .plan
                .imports
                .iter()
                .filter(|i| ids.contains(&i.logical_id) && !held.contains(&i.logical_id))
                .map(|i| ToImport {
                    logical_id: i.logical_id.clone(),
                    resource_type: i.resource_type.clone(),
                    identifier: i.identifier.clone(),
                })
                .collect();
            for (logical_id, nest) in nests {
                if ids.contains(logical_id) && !held.contains(logical_id) {
                    out.push(ToImport {
                        logical_id: logical_id.clone(),
                        resource_type: NESTED_STACK.into(),
                        identifier: serde_json::Map::from_iter([(
                            "StackId".to_string(),
                            Value::String(nest.stack_id.clone()),
                        )]),
                    });
                }
            }
            out
        };
        let staging = self.staging;
        // Checked with the plan (`Phases::problems`): a failure here is a bug, not input.
        let unexpected = |problem: String| anyhow::anyhow!("{}: {problem}", stack.name);

        // Phase 1A: the stack's own resources (all of them when it has no nested stack).
        let mut imported: BTreeSet<String> = held.clone();
        imported.extend(phases.own.iter().cloned());
        let templates = templates(&stack.file.body, &stack.plan, &imported)
            .map_err(|err| unexpected(err.to_string()))?;
        let own = to_import(&phases.own, &BTreeMap::new());
        if !own.is_empty() || (existing.is_none() && phases.nesting.is_empty()) {
            let count = own.len();
            self.cloudformation
                .import(cfn, &body(&templates.phase_one), &stack.parameters, &own, staging)
                .await
                .map_err(|err| {
                    anyhow::anyhow!(
                        "phase 1 (IMPORT) failed; CloudFormation stack {cfn} {} and cdkd's state of {} is unchanged: {err:#}",
                        if existing.is_some() { "keeps what it held" } else { "was not created" },
                        stack.name
                    )
                })?;
            println!("Phase 1: CloudFormation stack {cfn} imported {count} resource(s).");
        }

        // Phase 1B: the nested stacks, as they are in CloudFormation now, and their readers.
        let mut uploads = Vec::new();
        let mut keep_uploads = false;
        let result = async {
            let nests = self.nests(stack, &mut uploads).await?;
            let nesting = to_import(&phases.nesting, &nests);
            if !nesting.is_empty() {
                imported.extend(phases.nesting.iter().cloned());
                let mut template =
                    template::phase_one(&templates.full, &imported).map_err(|reads| {
                        unexpected(format!("resources read what phase 2 creates: {reads:?}"))
                    })?;
                point_children(&mut template, &nests, true);
                let children = nesting
                    .iter()
                    .filter(|n| n.resource_type == NESTED_STACK)
                    .count();
                let readers = nesting.len() - children;
                self.cloudformation
                    .import(cfn, &body(&template), &stack.parameters, &nesting, staging)
                    .await
                    .map_err(|err| anyhow::anyhow!("phase 1 (IMPORT of the nested stacks) failed; CloudFormation stack {cfn} keeps what it held and cdkd's state of {} is unchanged: {err:#}", stack.name))?;
                println!("Phase 1: CloudFormation stack {cfn} nested {children} stack(s) and imported {readers} resource(s) reading them.");
            }

            // Phase 2: the whole template.
            // One the stack already holds was made by CloudFormation in an earlier run's phase
            // 2: deleting "cdkd's" would delete CloudFormation's (same name, same role).
            delete_recreated(self.live, self.region, &stack.plan, &held).await?;
            let mut full = templates.full.clone();
            point_children(&mut full, &nests, false);
            let full = body(&full);
            match self
                .cloudformation
                .update_to(cfn, &full, &stack.parameters, staging)
                .await
            {
                Ok(Outcome::Done) => {
                    println!("Phase 2: CloudFormation stack {cfn} holds the whole template (Outputs and {} resource(s) it created).", stack.plan.recreated.len() + stack.plan.created.len());
                    Ok(())
                }
                Ok(Outcome::NoChanges) => Ok(()),
                Err(err) => {
                    // The saved template's nested stacks point at the uploads: they stay.
                    keep_uploads = true;
                    let by_hand = self.finish_by_hand(stack, &full, &uploads);
                    anyhow::bail!(
                        "phase 2 (UPDATE) failed after CloudFormation stack {cfn} imported the resources: {err:#}\ncdkd's state of {} is kept. Fix the cause and run the same `cdkd export` again: it takes the stack up where it stopped. Or finish by hand: {by_hand}, execute that change set, then run {finish}",
                        stack.name,
                    );
                }
            }
        }
        .await;
        if !keep_uploads {
            for key in &uploads {
                staging.purge(key).await;
            }
        }
        result
    }

    /// The manual end of a failed phase 2: the template written beside the user, and the
    /// change set to create from it.
    fn finish_by_hand(&self, stack: &TreeStack, full: &Body, uploads: &[String]) -> String {
        let saved = std::env::current_dir().unwrap_or_default().join(format!(
            "{}.export-phase2.{}",
            stack.cfn_name, full.extension
        ));
        let written = std::fs::write(&saved, &full.text);
        let kept: Vec<String> = (uploads.iter())
            .map(|key| self.staging.location(key))
            .collect();
        manual_finish(&ManualFinish {
            cfn: &stack.cfn_name,
            region: self.region,
            parameters: stack.parameters.keys().map(String::as_str).collect(),
            inline: full.text.len() <= INLINE_LIMIT,
            saved: &saved,
            written,
            kept,
        })
    }

    /// For each nested stack of `stack`, already in CloudFormation: out of `IMPORT_COMPLETE`,
    /// its id and tags, and its current template uploaded for the parent to point at.
    async fn nests(
        &self,
        stack: &TreeStack,
        uploads: &mut Vec<String>,
    ) -> anyhow::Result<BTreeMap<String, Nest>> {
        let mut nests = BTreeMap::new();
        for (logical_id, child) in &stack.children {
            let cfn = &child.cfn_name;
            let Some(described) = self.cloudformation.describe(cfn).await? else {
                anyhow::bail!(
                    "nested stack {}: CloudFormation stack {cfn} is missing",
                    child.name
                );
            };
            let described = if described.parent_id.is_some() {
                described
            } else {
                self.cloudformation.flip(cfn, &described).await?
            };
            let body = self.cloudformation.processed_template(cfn).await?;
            let template_url = stage(
                self.staging,
                &stack.cfn_name,
                &format!("nested-{logical_id}.json"),
                body.into_bytes(),
                uploads,
            )
            .await?;
            let passed: BTreeSet<String> = stack
                .file
                .body
                .get("Resources")
                .and_then(|r| r.get(logical_id))
                .and_then(|r| r.get("Properties"))
                .and_then(|p| p.get("Parameters"))
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            nests.insert(
                logical_id.clone(),
                Nest {
                    stack_id: described.stack_id,
                    template_url,
                    tags: described.tags,
                    parameters: child
                        .parameters
                        .iter()
                        .filter(|(key, _)| passed.contains(*key))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                },
            );
        }
        Ok(nests)
    }
}

/// What the manual finish of a failed phase 2 is made of.
struct ManualFinish<'a> {
    cfn: &'a str,
    region: &'a str,
    /// The template's parameter keys.
    parameters: Vec<&'a str>,
    /// Whether the template fits CloudFormation's inline limit.
    inline: bool,
    /// Where the template was written, or why it could not be.
    saved: &'a std::path::Path,
    written: std::io::Result<()>,
    /// The children's template uploads kept for it to point at.
    kept: Vec<String>,
}

/// The `create-change-set` that finishes a failed phase 2 by hand, and what it needs.
fn manual_finish(finish: &ManualFinish) -> String {
    let ManualFinish { cfn, region, .. } = finish;
    let saved = finish.saved.display();
    let mut notes = Vec::new();
    if let Err(err) = &finish.written {
        notes.push(format!("cdkd could not write the template to {saved} ({err}): write the stack's whole template there yourself"));
    }
    let source = if finish.inline {
        format!("--template-body file://{saved}")
    } else {
        notes.push(format!("{saved} is over CloudFormation's {INLINE_LIMIT}-byte inline limit: upload it to an S3 bucket and give its URL"));
        "--template-url <its URL>".to_string()
    };
    if !finish.kept.is_empty() {
        notes.push(format!(
            "its nested stacks' templates stay in the state bucket for it, at {}; delete them afterwards",
            finish.kept.join(", ")
        ));
    }
    // Phase 1 passed every parameter: the previous values are the ones to keep, and no
    // secret is written out.
    let parameters: String = (finish.parameters.iter())
        .map(|key| format!(" ParameterKey={key},UsePreviousValue=true"))
        .collect();
    let parameters = if parameters.is_empty() {
        String::new()
    } else {
        format!(" --parameters{parameters}")
    };
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    };
    format!("`aws cloudformation create-change-set --region {region} --stack-name {cfn} --change-set-type UPDATE --change-set-name cdkd-export-finish {source}{parameters} --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM CAPABILITY_AUTO_EXPAND`{notes}")
}

/// Deletes the IMPORT-unsupported resources between the phases (CloudFormation creates them
/// again in phase 2), but not those the CloudFormation stack already `held`. One already gone
/// counts as deleted, so a second run passes.
async fn delete_recreated(
    live: &dyn ProviderSource,
    region: &str,
    plan: &ExportPlan,
    held: &BTreeSet<String>,
) -> anyhow::Result<()> {
    let recreated: Vec<_> = (plan.recreated.iter())
        .filter(|r| !held.contains(&r.logical_id))
        .collect();
    if recreated.is_empty() {
        return Ok(());
    }
    let types: BTreeSet<String> = recreated.iter().map(|r| r.resource_type.clone()).collect();
    let providers = live
        .prepare(region, &types, std::time::Duration::from_secs(300))
        .await?;
    for recreated in recreated {
        providers
            .for_record(&recreated.state)
            .delete(DeleteCall {
                resource_type: &recreated.resource_type,
                logical_id: &recreated.logical_id,
                physical_id: &recreated.state.physical_id,
                properties: &recreated.state.properties,
            })
            .await
            .map_err(|err| {
                anyhow::anyhow!(
                    "deleting {} ({}) for CloudFormation to create it again: {}",
                    recreated.logical_id,
                    recreated.resource_type,
                    err.message
                )
            })?;
        println!(
            "Deleted {} ({}); CloudFormation creates it again in phase 2.",
            recreated.logical_id, recreated.resource_type
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::export::plan::Import;
    use serde_json::json;

    #[test]
    fn a_parent_imports_its_own_resources_first_and_the_readers_with_its_children() {
        let template = json!({"Resources": {
            "Data": {"Type": "AWS::S3::Bucket"},
            "Child": {"Type": "AWS::CloudFormation::Stack", "Properties": {"Parameters": {"B": {"Ref": "Data"}}}},
            "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": {"Fn::GetAtt": ["Child", "Outputs.Name"]}}}
        }});
        let import = |id: &str| Import {
            logical_id: id.into(),
            resource_type: "T".into(),
            physical_id: id.to_lowercase(),
            identifier: serde_json::Map::new(),
        };
        let stack = TreeStack::for_test(
            template,
            ExportPlan {
                imports: vec![import("Data"), import("Logs")],
                nested: vec!["Child".into()],
                ..ExportPlan::default()
            },
        );
        let phases = Phases::of(&stack);
        assert_eq!(phases.own, BTreeSet::from(["Data".to_string()]));
        assert_eq!(
            phases.nesting,
            BTreeSet::from(["Child".to_string(), "Logs".to_string()])
        );
        let t = templates(&stack.file.body, &stack.plan, &phases.own).unwrap();
        assert!(phases.problems(&stack).is_empty());
        assert_eq!(
            t.phase_one["Resources"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["Data"]
        );
    }

    #[test]
    fn a_reader_of_a_child_and_of_a_phase_two_resource_is_refused_before_anything_is_written() {
        let template = json!({"Resources": {
            "Child": {"Type": "AWS::CloudFormation::Stack"},
            "Made": {"Type": "Custom::Thing"},
            "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": {"Fn::Join": ["", [
                {"Fn::GetAtt": ["Child", "Outputs.Name"]}, {"Ref": "Made"}]]}}}
        }});
        let stack = TreeStack::for_test(
            template,
            ExportPlan {
                imports: vec![Import {
                    logical_id: "Logs".into(),
                    resource_type: "AWS::Logs::LogGroup".into(),
                    physical_id: "logs".into(),
                    identifier: serde_json::Map::new(),
                }],
                nested: vec!["Child".into()],
                created: vec![("Made".into(), "Custom::Thing".into(), "custom".into())],
                ..ExportPlan::default()
            },
        );
        let phases = Phases::of(&stack);
        assert!(phases.own.is_empty(), "Logs reads the child");
        let problems = phases.problems(&stack);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("Logs reads Made"), "{problems:?}");
        let Err(refused) = templates(&stack.file.body, &stack.plan, &phases.nesting) else {
            panic!("phase 1B reads what phase 2 creates");
        };
        assert!(
            matches!(&refused, TemplatesError::ReadsPhaseTwo(pairs) if pairs.iter().any(|p| p == "Logs reads Made")),
            "{refused}"
        );
    }

    #[test]
    fn the_manual_finish_keeps_previous_parameters_and_says_what_a_big_template_needs() {
        let saved = std::path::Path::new("/work/S.export-phase2.json");
        let small = manual_finish(&ManualFinish {
            cfn: "S",
            region: "eu-west-1",
            parameters: vec!["Env", "Secret"],
            inline: true,
            saved,
            written: Ok(()),
            kept: Vec::new(),
        });
        assert_eq!(
            small,
            "`aws cloudformation create-change-set --region eu-west-1 --stack-name S --change-set-type UPDATE --change-set-name cdkd-export-finish --template-body file:///work/S.export-phase2.json --parameters ParameterKey=Env,UsePreviousValue=true ParameterKey=Secret,UsePreviousValue=true --capabilities CAPABILITY_IAM CAPABILITY_NAMED_IAM CAPABILITY_AUTO_EXPAND`"
        );
        let big = manual_finish(&ManualFinish {
            cfn: "S",
            region: "eu-west-1",
            parameters: Vec::new(),
            inline: false,
            saved,
            written: Err(std::io::Error::other("read-only file system")),
            kept: vec!["s3://state/cdkd-migrate-tmp/S/1-nested-Child.json".into()],
        });
        assert!(
            big.contains("--template-url <its URL> --capabilities"),
            "{big}"
        );
        assert!(!big.contains("--parameters"), "{big}");
        assert!(big.contains("could not write the template to /work/S.export-phase2.json (read-only file system)"), "{big}");
        assert!(
            big.contains("over CloudFormation's 51200-byte inline limit"),
            "{big}"
        );
        assert!(
            big.contains(
                "at s3://state/cdkd-migrate-tmp/S/1-nested-Child.json; delete them afterwards"
            ),
            "{big}"
        );
    }

    /// Handing stacks over on the fakes: CloudFormation (cloudformation/fake.rs), the record
    /// store and the cloud (deployment/fakes.rs).
    mod on_fakes {
        use std::sync::Arc;

        use super::*;
        use crate::cloudformation::fake::{FakeCloudFormation, FakeStaging};
        use crate::deployment::fakes::{FakeCloud, MemoryStore};

        const REGION: &str = "us-east-1";

        struct World {
            fake: Arc<FakeCloudFormation>,
            staging: Arc<FakeStaging>,
            cloudformation: CloudFormation,
            records: MemoryStore,
            cloud: FakeCloud,
        }

        impl World {
            /// An account whose queues `https://q/<id>` exist, and cdkd's record of each stack.
            async fn new(stacks: &[&TreeStack]) -> World {
                let staging = Arc::new(FakeStaging::default());
                let fake = Arc::new(FakeCloudFormation::new(REGION, staging.clone()));
                let records = MemoryStore::default();
                for stack in stacks {
                    for import in &stack.plan.imports {
                        fake.exists(&import.physical_id);
                    }
                    let mut state = stack.state.clone();
                    records
                        .save(&stack.name, REGION, &mut state, None)
                        .await
                        .unwrap();
                }
                World {
                    cloudformation: CloudFormation::over(fake.clone(), REGION),
                    fake,
                    staging,
                    records,
                    cloud: FakeCloud::default(),
                }
            }

            async fn run(&self, root: &TreeStack) -> anyhow::Result<()> {
                let destinations = Destinations::read(&self.cloudformation, root, REGION).await?;
                assert!(
                    destinations.problems.is_empty(),
                    "{:?}",
                    destinations.problems
                );
                self.hand_over(root, &destinations).await
            }

            async fn hand_over(
                &self,
                root: &TreeStack,
                destinations: &Destinations,
            ) -> anyhow::Result<()> {
                Handover {
                    cloudformation: &self.cloudformation,
                    records: &self.records,
                    staging: self.staging.as_ref(),
                    live: &self.cloud,
                    region: REGION,
                }
                .run(root, destinations)
                .await
            }

            fn recorded(&self, stack: &str) -> bool {
                self.records.record(stack, REGION).is_some()
            }
        }

        fn queue(id: &str) -> Import {
            let url = format!("https://q/{}", id.to_lowercase());
            Import {
                logical_id: id.into(),
                resource_type: "AWS::SQS::Queue".into(),
                physical_id: url.clone(),
                identifier: serde_json::Map::from_iter([("QueueUrl".to_string(), json!(url))]),
            }
        }

        /// Stack `name` (CloudFormation `cfn`): a queue to import, a topic only phase 2
        /// creates, and an output.
        fn stack(name: &str, cfn: &str) -> TreeStack {
            let mut stack = TreeStack::for_test(
                json!({"Resources": {
                    "Queue": {"Type": "AWS::SQS::Queue"},
                    "Made": {"Type": "Custom::Thing"}},
                    "Outputs": {"Url": {"Value": {"Ref": "Queue"}}}}),
                ExportPlan {
                    imports: vec![queue("Queue")],
                    created: vec![("Made".into(), "Custom::Thing".into(), "custom".into())],
                    ..ExportPlan::default()
                },
            );
            stack.name = name.into();
            stack.cfn_name = cfn.into();
            stack
        }

        #[tokio::test(start_paused = true)]
        async fn a_stack_is_imported_then_completed_and_its_record_goes_last() {
            let root = stack("S", "S");
            let w = World::new(&[&root]).await;
            w.run(&root).await.unwrap();
            let handed = w.fake.stack("S").expect("the CloudFormation stack");
            assert_eq!(handed.status, "UPDATE_COMPLETE");
            assert_eq!(handed.resources["Queue"].1, "https://q/queue");
            assert!(handed.resources.contains_key("Made"), "phase 2 created it");
            let (_, outputs) = w.cloudformation.values("S").await.unwrap();
            assert_eq!(outputs["Url"], json!("https://q/queue"));
            assert!(!w.recorded("S"));
            let calls = w.fake.calls();
            let at = |call: &str| calls.iter().position(|c| c == call).expect(call);
            assert!(at("CreateChangeSet IMPORT S") < at("CreateChangeSet UPDATE S"));
            assert!(w.fake.deleted().is_empty());
        }

        #[tokio::test(start_paused = true)]
        async fn a_refused_import_keeps_the_record_and_makes_no_stack() {
            let root = stack("S", "S");
            let w = World::new(&[]).await;
            let mut state = root.state.clone();
            w.records.save("S", REGION, &mut state, None).await.unwrap();
            let err = w.run(&root).await.unwrap_err().to_string();
            assert!(
                err.starts_with("phase 1 (IMPORT) failed; CloudFormation stack S was not created and cdkd's state of S is unchanged: CloudFormation refused change set"),
                "{err}"
            );
            assert!(
                err.contains("identifier 'https://q/queue' was not found"),
                "{err}"
            );
            assert!(w.fake.stack("S").is_none());
            assert!(w.recorded("S"));
        }

        #[tokio::test(start_paused = true)]
        async fn a_destination_that_exists_is_refused_unless_an_earlier_export_made_it() {
            let root = stack("S", "S");
            let w = World::new(&[&root]).await;
            // Someone else's stack of that name.
            w.fake.put_stack(
                "S",
                "CREATE_COMPLETE",
                &json!({"Resources": {"Else": {"Type": "AWS::SNS::Topic"}}}),
                &[],
                &[],
            );
            let foreign = Destinations::read(&w.cloudformation, &root, REGION)
                .await
                .unwrap();
            let (stack, problem) = &foreign.problems[0];
            assert_eq!(stack, "S");
            assert!(problem.starts_with("a CloudFormation stack named S already exists in us-east-1 (CREATE_COMPLETE) holding resources that are not S's (Else)"), "{problem}");

            // An earlier run's phase 1 (its phase 2 failed): taken up, nothing imported twice.
            let w = World::new(&[&root]).await;
            w.fake.put_stack(
                "S",
                "IMPORT_COMPLETE",
                &json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Delete"}}}),
                &[("Queue", "https://q/queue")],
                &[],
            );
            let earlier = Destinations::read(&w.cloudformation, &root, REGION)
                .await
                .unwrap();
            assert!(earlier.problems.is_empty(), "{:?}", earlier.problems);
            assert!(earlier.taken_up[0].contains("taken up where it stopped"));
            w.hand_over(&root, &earlier).await.unwrap();
            assert!(!w
                .fake
                .calls()
                .iter()
                .any(|c| c.starts_with("CreateChangeSet IMPORT")));
            assert_eq!(w.fake.stack("S").unwrap().status, "UPDATE_COMPLETE");
            assert!(!w.recorded("S"));
        }

        /// Removes the manual finish's template, which a failed phase 2 writes into the
        /// working directory.
        struct Written(std::path::PathBuf);

        impl Drop for Written {
            fn drop(&mut self) {
                let _ = std::fs::remove_file(&self.0);
            }
        }

        #[tokio::test(start_paused = true)]
        async fn a_failed_phase_two_keeps_the_record_and_a_second_run_takes_it_up() {
            let root = stack("S", "HandoverPhaseTwo");
            let w = World::new(&[&root]).await;
            w.fake.fail("Made", "the handler answered FAILED");
            let written = Written(
                std::env::current_dir()
                    .unwrap()
                    .join("HandoverPhaseTwo.export-phase2.json"),
            );
            let err = w.run(&root).await.unwrap_err().to_string();
            assert!(err.starts_with("phase 2 (UPDATE) failed after CloudFormation stack HandoverPhaseTwo imported the resources: CloudFormation stack HandoverPhaseTwo ended UPDATE_ROLLBACK_COMPLETE\n  Made (Custom::Thing): CREATE_FAILED: the handler answered FAILED"), "{err}");
            assert!(
                err.contains("--stack-name HandoverPhaseTwo --change-set-type UPDATE"),
                "{err}"
            );
            assert!(written.0.exists(), "the manual finish's template");
            assert!(w.recorded("S"));

            w.fake.heal("Made");
            w.run(&root).await.unwrap();
            let calls = w.fake.calls();
            let imports = calls
                .iter()
                .filter(|c| c.starts_with("CreateChangeSet IMPORT"))
                .count();
            assert_eq!(imports, 1, "nothing is imported twice: {calls:?}");
            assert_eq!(
                w.fake.stack("HandoverPhaseTwo").unwrap().status,
                "UPDATE_COMPLETE"
            );
            assert!(!w.recorded("S"));
        }

        #[tokio::test(start_paused = true)]
        async fn nested_stacks_go_first_and_are_nested_into_their_parent_by_stack_id() {
            let mut child = stack("P~Child", "P-Child");
            // Phase 2 has nothing to add: the child stays IMPORT_COMPLETE and needs the flip.
            child.file.body = json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Delete"}}});
            child.plan.created.clear();
            let mut parent = TreeStack::for_test(
                json!({"Resources": {
                    "Data": {"Type": "AWS::SQS::Queue"},
                    "Child": {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": "https://assets/child.json"}}}}),
                ExportPlan {
                    imports: vec![queue("Data")],
                    nested: vec!["Child".into()],
                    ..ExportPlan::default()
                },
            );
            parent.name = "P".into();
            parent.cfn_name = "P".into();
            parent.children.push(("Child".into(), child));
            let w = World::new(&[&parent, &parent.children[0].1]).await;
            w.run(&parent).await.unwrap();

            let p = w.fake.stack("P").expect("the parent");
            let c = w.fake.stack("P-Child").expect("the child");
            assert_eq!(p.resources["Child"].1, c.stack_id);
            assert_eq!(c.parent_id.as_deref(), Some(p.stack_id.as_str()));
            assert!(c
                .tags
                .iter()
                .any(|(key, _)| key == crate::cloudformation::FLIP_TAG));
            assert_eq!(p.resources["Data"].1, "https://q/data");
            let calls = w.fake.calls();
            let at = |call: &str| calls.iter().position(|c| c == call).expect(call);
            assert!(at("CreateChangeSet IMPORT P-Child") < at("CreateChangeSet IMPORT P"));
            assert!(at("UpdateStack P-Child") < at("CreateChangeSet UPDATE P"));
            assert_eq!(w.staging.purged(), ["cdkd-migrate-tmp/P/nested-Child.json"]);
            assert!(w.staging.kept().is_empty());
            assert!(!w.recorded("P") && !w.recorded("P~Child"));
        }

        #[tokio::test(start_paused = true)]
        async fn a_failure_part_way_names_the_stacks_moved_and_those_not() {
            let mut parent = stack("P", "P");
            parent
                .children
                .push(("Child".into(), stack("P~Child", "P-Child")));
            let w = World::new(&[&parent.children[0].1]).await;
            // The parent's queue does not exist: its IMPORT is refused.
            let mut state = parent.state.clone();
            w.records.save("P", REGION, &mut state, None).await.unwrap();
            let mut gone = parent.plan.imports[0].clone();
            gone.physical_id = "https://q/gone".into();
            gone.identifier =
                serde_json::Map::from_iter([("QueueUrl".to_string(), json!("https://q/gone"))]);
            parent.plan.imports = vec![gone];
            let err = w.run(&parent).await.unwrap_err().to_string();
            assert!(
                err.starts_with("nested stack export stopped at P (P): phase 1 (IMPORT) failed"),
                "{err}"
            );
            assert!(
                err.contains("In CloudFormation already: P~Child (as P-Child). Not yet: P."),
                "{err}"
            );
            assert!(w.recorded("P") && w.recorded("P~Child"));
            assert!(w.fake.stack("P-Child").is_some());
        }
    }
}
