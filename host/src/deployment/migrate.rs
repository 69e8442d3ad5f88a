//! `cdkd import --migrate-from-cloudformation`: adopting a CloudFormation stack's resources
//! into cdkd's records through the engine's import, the whole tree checked first; the stack is
//! then retired ([`CloudFormation::retire`]). Reading and retiring the stack is
//! [`crate::cloudformation`]'s.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::cloudformation::{CloudFormation, StackResource};
use crate::deployment::deploy::StackInput;
use crate::deployment::engine::Engine;
use crate::deployment::external::StateSnapshot;
use crate::deployment::import::{ImportRequest, Imported};
use crate::deployment::nested::stack_id;
use crate::provisioning::preflight::NESTED_STACK;

/// Adopting a CloudFormation stack's resources, its nested stacks' first (each into its own
/// record, leaf first), so a parent records its children's ids and outputs.
pub struct Migration<'a> {
    /// The engine that writes the records.
    pub engine: &'a Engine<'a>,
    /// CloudFormation in the stack's region.
    pub cloudformation: &'a CloudFormation,
    /// Other stacks' values, for the template's cross-stack reads.
    pub snapshot: &'a StateSnapshot,
    /// Re-point resources already in a record.
    pub force: bool,
    /// Check and read the whole tree, write nothing.
    pub dry_run: bool,
}

/// Each record's import lines, children before their parents.
pub type Adopted = Vec<(String, Vec<Imported>)>;

impl Migration<'_> {
    /// Imports `input`'s stack from CloudFormation stack `source` (with `given` ids winning),
    /// and answers the stack's outputs as CloudFormation reports them.
    pub async fn adopt(
        &self,
        input: &StackInput,
        source: &str,
        given: BTreeMap<String, String>,
    ) -> anyhow::Result<(Adopted, Map<String, Value>)> {
        let template = &input.template;
        let registry = self.engine.registry;
        let mut mapping = BTreeMap::new();
        let mut children = BTreeMap::new();
        let mut problems = Vec::new();
        for resource in self.cloudformation.resources(source).await? {
            let StackResource {
                logical_id,
                resource_type,
                physical_id,
            } = resource;
            if resource_type == "AWS::CDK::Metadata" {
                continue;
            }
            match template.resources.get(&logical_id) {
                None => problems.push(format!(
                    "{logical_id} ({resource_type}) is in CloudFormation stack {source} but not in the app's template: is this the app that made the stack?"
                )),
                Some(declared) if declared.kind != resource_type => problems.push(format!(
                    "{logical_id} is a {resource_type} in CloudFormation stack {source} and a {} in the template",
                    declared.kind
                )),
                Some(_) if resource_type == NESTED_STACK => {
                    match (physical_id, input.children.get(&logical_id)) {
                        (Some(child_source), Some(child)) => {
                            children.insert(logical_id, (child_source, child));
                        }
                        (None, _) => problems.push(format!(
                            "{logical_id}: CloudFormation reports no stack for this nested stack"
                        )),
                        (_, None) => problems.push(format!(
                            "{logical_id}: the nested stack's template is not in the cloud assembly"
                        )),
                    }
                }
                Some(_) => {
                    let composite = registry
                        .schema(&resource_type)
                        .is_some_and(|schema| schema.composite_id.is_some());
                    match physical_id {
                        Some(id) => {
                            mapping.insert(logical_id, id);
                        }
                        // Built from the template's properties by the import.
                        None if composite => {
                            mapping.insert(logical_id, String::new());
                        }
                        None => problems.push(format!(
                            "{logical_id}: CloudFormation reports no physical id for it; pass --resource {logical_id}=<id>"
                        )),
                    }
                }
            }
        }
        if !problems.is_empty() {
            anyhow::bail!(
                "cdkd import --migrate-from-cloudformation {source}: nothing was imported:\n  - {}",
                problems.join("\n  - ")
            );
        }
        // `--resource` entries win over what CloudFormation reports.
        mapping.extend(given);

        let mut adopted = Vec::new();
        let mut nested = BTreeMap::new();
        for (logical_id, (child_source, child)) in children {
            // The values the parent passed down, as CloudFormation holds them (the parent's
            // own resources are adopted after their children).
            let mut child = child.clone();
            child.parameters = self.cloudformation.values(&child_source).await?.0;
            let (lines, outputs) =
                Box::pin(self.adopt(&child, &child_source, BTreeMap::new())).await?;
            adopted.extend(lines);
            let context = &child.context;
            let id = stack_id(
                crate::aws_env::partition(&context.region),
                &context.region,
                &context.account,
                &context.stack_name,
            );
            let attributes = outputs
                .iter()
                .map(|(name, value)| (format!("Outputs.{name}"), value.clone()))
                .collect();
            nested.insert(logical_id, (id, attributes));
        }
        let (_, outputs) = self.cloudformation.values(source).await?;
        let request = ImportRequest {
            resources: mapping,
            force: self.force,
            dry_run: self.dry_run,
            derive_composites: true,
            nested,
            outputs: Some(outputs.clone()),
            ..ImportRequest::default()
        };
        let lines = self.engine.import(input, self.snapshot, &request).await?;
        adopted.push((input.context.stack_name.clone(), lines));
        Ok((adopted, outputs))
    }
}

impl Migration<'_> {
    /// Imports `input`'s stack tree from CloudFormation stack `source` (`given` ids winning):
    /// a dry run of the whole tree first, so a nested stack's record is written only when
    /// every stack of the tree can be imported; then the import. Answers each record's lines.
    pub async fn run(
        &mut self,
        input: &StackInput,
        source: &str,
        given: BTreeMap<String, String>,
    ) -> anyhow::Result<Adopted> {
        let writes = !self.dry_run;
        self.dry_run = true;
        let checked = self.adopt(input, source, given.clone()).await?.0;
        if !writes {
            return Ok(checked);
        }
        self.dry_run = false;
        Ok(self.adopt(input, source, given).await?.0)
    }
}

#[cfg(test)]
mod tests {
    //! The migration on the fakes: CloudFormation (cloudformation/fake.rs), the cloud, the
    //! record store and the locks (deployment/fakes.rs).

    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::analyzer::plan::StackContext;
    use crate::analyzer::template::Template;
    use crate::cloudformation::fake::{FakeCloudFormation, FakeStaging};
    use crate::deployment::deploy::DeployOptions;
    use crate::deployment::fakes::{FakeCloud, MemoryLocks, MemoryStore};
    use crate::deployment::report::Reporter;
    use crate::deployment::store::RecordStore;
    use crate::provisioning::plugins_file::PluginsFile;
    use crate::provisioning::registry::Registry;

    const REGION: &str = "us-east-1";

    struct World {
        cloud: FakeCloud,
        store: Arc<MemoryStore>,
        locks: MemoryLocks,
        registry: Registry,
        stop: tokio::sync::watch::Sender<bool>,
        fake: Arc<FakeCloudFormation>,
        staging: Arc<FakeStaging>,
        cloudformation: CloudFormation,
    }

    impl World {
        fn new() -> World {
            let staging = Arc::new(FakeStaging::default());
            let fake = Arc::new(FakeCloudFormation::new(REGION, staging.clone()));
            World {
                cloud: FakeCloud::default(),
                store: Arc::new(MemoryStore::default()),
                locks: MemoryLocks::default(),
                registry: Registry::load(PluginsFile::empty()),
                stop: tokio::sync::watch::channel(false).0,
                cloudformation: CloudFormation::over(fake.clone(), REGION),
                fake,
                staging,
            }
        }

        fn engine(&self) -> Engine<'_> {
            Engine {
                registry: &self.registry,
                providers: &self.cloud,
                store: self.store.clone(),
                locks: &self.locks,
                reporter: Reporter::events(true),
                stop: self.stop.clone(),
            }
        }

        /// Makes the template's resources in the fake cloud (as a stack cdkd then forgets):
        /// what CloudFormation made, in the cloud; answers their physical ids.
        async fn made_elsewhere(&self, template: &Value) -> BTreeMap<String, String> {
            let made = input("Elsewhere", template);
            let deployed = self.engine();
            deployed
                .deploy(&made, &StateSnapshot::default(), &DeployOptions::default())
                .await
                .unwrap();
            let record = self.store.record("Elsewhere", REGION).unwrap();
            self.store.delete("Elsewhere", REGION).await.unwrap();
            (record.resources.into_iter())
                .map(|(id, row)| (id, row.physical_id))
                .collect()
        }

        async fn migrate(&self, template: &Value, source: &str) -> anyhow::Result<Adopted> {
            let engine = self.engine();
            let mut migration = Migration {
                engine: &engine,
                cloudformation: &self.cloudformation,
                snapshot: &StateSnapshot::default(),
                force: false,
                dry_run: false,
            };
            migration
                .run(&input("App", template), source, BTreeMap::new())
                .await
        }
    }

    fn input(stack: &str, template: &Value) -> StackInput {
        StackInput {
            context: StackContext {
                stack_name: stack.into(),
                region: REGION.into(),
                account: "123456789012".into(),
                ref_values: Default::default(),
                availability_zones: Default::default(),
            },
            template: Template::parse(template).expect("a valid template"),
            parameters: Default::default(),
            children: Default::default(),
            parent: None,
        }
    }

    fn app() -> Value {
        json!({"Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 30}},
            "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"RetentionInDays": 7}}},
            "Outputs": {"Url": {"Value": {"Ref": "Queue"}}}})
    }

    #[tokio::test(start_paused = true)]
    async fn a_stack_s_resources_are_adopted_and_the_stack_retired_keeping_them() {
        let w = World::new();
        let ids = w.made_elsewhere(&app()).await;
        let mut legacy = app();
        legacy["Resources"]["CDKMetadata"] = json!({"Type": "AWS::CDK::Metadata"});
        let physical: Vec<(&str, &str)> =
            ids.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        w.fake
            .put_stack("Legacy", "UPDATE_COMPLETE", &legacy, &physical, &[]);

        let adopted = w.migrate(&app(), "Legacy").await.unwrap();
        let [(record, lines)] = adopted.as_slice() else {
            panic!("one record: {adopted:?}");
        };
        assert_eq!(record, "App");
        assert_eq!(lines.len(), 2, "the metadata is left out: {lines:?}");
        let state = w.store.record("App", REGION).expect("the record");
        assert_eq!(state.resources["Queue"].physical_id, ids["Queue"]);
        assert_eq!(state.resources["Logs"].physical_id, ids["Logs"]);
        assert_eq!(state.outputs["Url"], json!(ids["Queue"]));

        w.cloudformation
            .retire("Legacy", w.staging.as_ref())
            .await
            .unwrap();
        assert!(w.fake.stack("Legacy").is_none());
        assert!(w.fake.deleted().is_empty(), "{:?}", w.fake.deleted());
    }

    #[tokio::test(start_paused = true)]
    async fn a_missing_or_unsettled_stack_is_refused_and_nothing_is_recorded() {
        let w = World::new();
        let missing = w.migrate(&app(), "Legacy").await.unwrap_err();
        assert!(
            missing
                .to_string()
                .starts_with("there is no CloudFormation stack Legacy in us-east-1"),
            "{missing}"
        );
        w.fake
            .put_stack("Legacy", "UPDATE_ROLLBACK_IN_PROGRESS", &app(), &[], &[]);
        let busy = w.migrate(&app(), "Legacy").await.unwrap_err();
        assert!(
            busy.to_string().starts_with(
                "CloudFormation stack Legacy is UPDATE_ROLLBACK_IN_PROGRESS; migrate it once"
            ),
            "{busy}"
        );
        assert!(w.store.record("App", REGION).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stack_that_is_not_the_app_s_is_refused_naming_every_difference() {
        let w = World::new();
        let other = json!({"Resources": {
            "Queue": {"Type": "AWS::SNS::Topic"},
            "Stray": {"Type": "AWS::S3::Bucket"}}});
        w.fake
            .put_stack("Legacy", "CREATE_COMPLETE", &other, &[], &[]);
        let err = w.migrate(&app(), "Legacy").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "cdkd import --migrate-from-cloudformation Legacy: nothing was imported:\n  - Queue is a AWS::SNS::Topic in CloudFormation stack Legacy and a AWS::SQS::Queue in the template\n  - Stray (AWS::S3::Bucket) is in CloudFormation stack Legacy but not in the app's template: is this the app that made the stack?"
        );
        assert!(w.store.record("App", REGION).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_resource_that_is_gone_stops_the_migration_before_a_record_is_written() {
        let w = World::new();
        let ids = w.made_elsewhere(&app()).await;
        w.fake.put_stack(
            "Legacy",
            "CREATE_COMPLETE",
            &app(),
            &[
                ("Queue", ids["Queue"].as_str()),
                ("Logs", "no-such-log-group"),
            ],
            &[],
        );
        let err = w.migrate(&app(), "Legacy").await.unwrap_err();
        assert!(
            err.to_string().contains("no-such-log-group does not exist"),
            "{err}"
        );
        assert!(w.store.record("App", REGION).is_none());
    }
}
