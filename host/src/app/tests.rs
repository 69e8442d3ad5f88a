//! The multi-stack rules on the engine's in-memory fakes, under paused time: the order, a
//! failed producer's consumers, `--stack-concurrency`, the shared snapshot and the
//! CloudFormation fallback.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::deploy::{RunLog, StackInputs, StackRun};
use super::fallback::{read_cloudformation, Consumer};
use super::order::RunOrder;
use crate::analyzer::plan::StackContext;
use crate::analyzer::template::Template;
use crate::cloudformation::fake::{FakeCloudFormation, FakeStaging};
use crate::cloudformation::CloudFormation;
use crate::deployment::deploy::{DeployOptions, StackInput};
use crate::deployment::engine::Engine;
use crate::deployment::external::StateSnapshot;
use crate::deployment::fakes::{FakeCloud, MemoryLocks, MemoryStore};
use crate::deployment::report::Reporter;
use crate::provisioning::plugins_file::PluginsFile;
use crate::provisioning::registry::Registry;
use crate::state::history::Operation;
use crate::synthesis::assembly::{StackArtifact, StackEnvironment};

const REGION: &str = "us-east-1";

/// A stack artifact named `name` (its id too), depending on `dependencies`.
fn artifact(name: &str, dependencies: &[&str]) -> StackArtifact {
    StackArtifact {
        id: name.to_string(),
        stack_name: name.to_string(),
        display_name: name.to_string(),
        template_file: format!("{name}.template.json").into(),
        environment: StackEnvironment {
            account: Some("123456789012".into()),
            region: Some(REGION.into()),
        },
        dependencies: dependencies.iter().map(|d| d.to_string()).collect(),
        termination_protection: false,
        asset_manifest: None,
        annotations: Vec::new(),
    }
}

/// A stack with one queue, `{name}Queue`, exporting its ARN as `{name}Arn`.
fn producer(name: &str) -> Value {
    json!({
        "Resources": {format!("{name}Queue"): {"Type": "AWS::SQS::Queue", "Properties": {}}},
        "Outputs": {"Arn": {"Value": {"Fn::GetAtt": [format!("{name}Queue"), "Arn"]},
                            "Export": {"Name": format!("{name}Arn")}}}
    })
}

/// A stack with one topic, `{name}Topic`, whose display name is `value`.
fn consumer(name: &str, value: Value) -> Value {
    json!({"Resources": {format!("{name}Topic"): {"Type": "AWS::SNS::Topic",
        "Properties": {"DisplayName": value}}}})
}

/// The engine's fakes, and what the run's hooks saw.
struct World {
    cloud: FakeCloud,
    store: Arc<MemoryStore>,
    locks: MemoryLocks,
    registry: Registry,
    stop: tokio::sync::watch::Sender<bool>,
    /// Stacks being deployed now, and the most at once.
    running: Cell<(usize, usize)>,
    /// The stacks in the order their deploys ended, with their failures.
    finished: RefCell<Vec<(String, Option<String>)>>,
}

impl World {
    fn new() -> World {
        World {
            cloud: FakeCloud::default(),
            store: Arc::new(MemoryStore::default()),
            locks: MemoryLocks::default(),
            registry: Registry::load(PluginsFile::empty()),
            stop: tokio::sync::watch::channel(false).0,
            running: Cell::new((0, 0)),
            finished: RefCell::new(Vec::new()),
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

    /// Deploys `stacks` (artifact, template) at most `concurrency` at once from `snapshot`.
    async fn deploy(
        &self,
        stacks: &[(StackArtifact, Value)],
        concurrency: usize,
        snapshot: StateSnapshot,
    ) -> super::RunResult {
        let order = RunOrder::of(
            (stacks.iter())
                .map(|(a, t)| (a, Template::parse(t).expect("a valid template")))
                .collect(),
            REGION,
        )
        .expect("an order");
        let engine = self.engine();
        let options = DeployOptions::default();
        StackRun {
            engine: &engine,
            options: &options,
            stack_concurrency: concurrency,
            inputs: self,
            log: self,
        }
        .deploy(&order, snapshot)
        .await
    }

    /// The stacks whose deploys ended, in order.
    fn finished(&self) -> Vec<String> {
        self.finished
            .borrow()
            .iter()
            .map(|(s, _)| s.clone())
            .collect()
    }

    fn created(&self) -> Vec<String> {
        (self.cloud.calls().iter())
            .filter_map(|c| c.strip_prefix("create ").map(str::to_string))
            .collect()
    }
}

#[async_trait(?Send)]
impl StackInputs for World {
    async fn input(&self, id: &str, template: Template) -> anyhow::Result<StackInput> {
        let (now, most) = self.running.get();
        self.running.set((now + 1, most.max(now + 1)));
        Ok(StackInput {
            context: StackContext {
                stack_name: id.to_string(),
                region: REGION.into(),
                account: "123456789012".into(),
                ref_values: Default::default(),
                availability_zones: Default::default(),
            },
            template,
            parameters: Default::default(),
            children: Default::default(),
            parent: None,
        })
    }
}

#[async_trait(?Send)]
impl RunLog for World {
    async fn finished(
        &self,
        operation: Operation,
        stack: &str,
        region: &str,
        _: Instant,
        failure: Option<&str>,
    ) {
        assert_eq!(region, REGION);
        if operation == Operation::Deploy {
            let (now, most) = self.running.get();
            self.running.set((now - 1, most));
        }
        (self.finished.borrow_mut()).push((stack.to_string(), failure.map(str::to_string)));
    }
}

#[tokio::test(start_paused = true)]
async fn consumers_wait_for_their_producers_and_read_what_they_recorded() {
    let world = World::new();
    // Listed consumers first: the order comes from the reads and dependencies, not the list.
    let stacks = [
        (
            artifact("Reader", &[]),
            consumer("Reader", json!({"Fn::ImportValue": "SourceArn"})),
        ),
        (
            artifact("Follower", &["Reader"]),
            consumer("Follower", json!("plain")),
        ),
        (artifact("Source", &[]), producer("Source")),
    ];
    // The producer is slow: a consumer that did not wait would start before it ends.
    world.cloud.delay("SourceQueue", Duration::from_secs(30));
    let result = world.deploy(&stacks, 4, StateSnapshot::default()).await;
    assert_eq!(result.failures, Vec::<String>::new());
    assert_eq!(world.finished(), ["Source", "Reader", "Follower"]);
    assert_eq!(
        world.created(),
        ["SourceQueue", "ReaderTopic", "FollowerTopic"]
    );
    // The consumer read the value the producer recorded earlier in the same run.
    let source = world.store.record("Source", REGION).expect("a record");
    let arn = format!(
        "arn:aws:fake:::{}",
        source.resources["SourceQueue"].physical_id
    );
    let reader = world.store.record("Reader", REGION).expect("a record");
    assert_eq!(
        reader.resources["ReaderTopic"].properties["DisplayName"],
        json!(arn)
    );
    assert_eq!(result.outputs["Source"], json!({"Arn": arn}));
    assert_eq!(result.outputs["Reader"], json!({}));
}

#[tokio::test(start_paused = true)]
async fn a_failed_producer_cancels_its_consumers_but_not_the_other_stacks() {
    let world = World::new();
    world.cloud.fail("SourceQueue", "queue quota exceeded");
    let stacks = [
        (artifact("Source", &[]), producer("Source")),
        (
            artifact("Reader", &[]),
            consumer("Reader", json!({"Fn::ImportValue": "SourceArn"})),
        ),
        (
            artifact("Follower", &["Reader"]),
            consumer("Follower", json!("x")),
        ),
        (artifact("Apart", &[]), consumer("Apart", json!("alone"))),
    ];
    let result = world.deploy(&stacks, 4, StateSnapshot::default()).await;
    assert_eq!(result.failures.len(), 3, "{:?}", result.failures);
    let failed: BTreeMap<&str, &str> = ["Follower", "Reader", "Source"]
        .into_iter()
        .zip(result.failures.iter().map(String::as_str))
        .collect();
    assert!(
        failed["Source"].contains("queue quota exceeded"),
        "{failed:?}"
    );
    assert!(
        failed["Reader"].starts_with("Reader was not deployed ("),
        "{failed:?}"
    );
    assert!(
        failed["Follower"].starts_with("Follower was not deployed ("),
        "{failed:?}"
    );
    // Neither consumer made a call; the independent stack deployed.
    let created = world.created();
    assert!(
        !created
            .iter()
            .any(|c| c == "ReaderTopic" || c == "FollowerTopic"),
        "{created:?}"
    );
    assert!(world.store.record("Reader", REGION).is_none());
    assert!(world.store.record("Apart", REGION).is_some());
    assert_eq!(world.finished(), ["Apart", "Source"]);
    assert!(result.outputs.contains_key("Apart"));
    assert!(!result.outputs.contains_key("Source"));
}

#[tokio::test(start_paused = true)]
async fn stack_concurrency_bounds_the_stacks_in_flight() {
    for (concurrency, waves) in [(2, 3), (4, 2), (1, 5)] {
        let world = World::new();
        let stacks: Vec<(StackArtifact, Value)> = (0..5)
            .map(|n| {
                let name = format!("S{n}");
                world
                    .cloud
                    .delay(&format!("{name}Queue"), Duration::from_secs(10));
                (artifact(&name, &[]), producer(&name))
            })
            .collect();
        let started = tokio::time::Instant::now();
        let result = world
            .deploy(&stacks, concurrency, StateSnapshot::default())
            .await;
        assert_eq!(result.failures, Vec::<String>::new());
        assert_eq!(
            world.running.get(),
            (0, concurrency),
            "at most {concurrency} at once"
        );
        // Each wave of stacks takes one 10 s create.
        let took = started.elapsed().as_secs();
        assert!(
            (waves * 10..waves * 10 + 5).contains(&took),
            "{concurrency} at once took {took} s"
        );
    }
}

/// The fake CloudFormation as the fallback reaches it, in the one region of these tests.
fn in_region(fake: &Arc<FakeCloudFormation>) -> impl Fn(&str) -> CloudFormation + '_ {
    move |region: &str| {
        assert_eq!(region, REGION);
        CloudFormation::over(fake.clone(), region)
    }
}

#[tokio::test(start_paused = true)]
async fn producers_without_a_record_are_read_from_cloudformation_before_the_run() {
    let world = World::new();
    let cloudformation = Arc::new(FakeCloudFormation::new(
        REGION,
        Arc::new(FakeStaging::default()),
    ));
    cloudformation.put_stack(
        "Legacy",
        "UPDATE_COMPLETE",
        &json!({"Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}},
                "Outputs": {"Name": {"Value": {"Ref": "Bucket"}},
                            "Shared": {"Value": "exported-value", "Export": {"Name": "LegacyShared"}}}}),
        &[("Bucket", "legacy-bucket")],
        &[],
    );
    let stacks = [
        (artifact("Source", &[]), producer("Source")),
        (
            artifact("Reader", &[]),
            consumer(
                "Reader",
                json!({"Fn::Join": ["/", [
                    {"Fn::GetStackOutput": {"StackName": "Legacy", "OutputName": "Name"}},
                    {"Fn::ImportValue": "LegacyShared"},
                    // In the run: never asked of CloudFormation.
                    {"Fn::GetStackOutput": {"StackName": "Source", "OutputName": "Arn"}}]]}),
            ),
        ),
    ];
    let templates: Vec<Template> = (stacks.iter())
        .map(|(_, t)| Template::parse(t).unwrap())
        .collect();
    let consumers: Vec<Consumer<'_>> = (stacks.iter().zip(&templates))
        .map(|((a, _), template)| Consumer {
            stack: &a.stack_name,
            template,
            region: REGION,
        })
        .collect();
    let in_run: BTreeSet<String> = ["Source".to_string(), "Reader".to_string()].into();
    let mut snapshot = StateSnapshot::default();
    read_cloudformation(
        &mut snapshot,
        in_region(&cloudformation),
        &consumers,
        &in_run,
    )
    .await
    .unwrap();
    assert_eq!(
        cloudformation.calls(),
        ["ListExports", "DescribeStacks Legacy"]
    );
    // A second read asks nothing again.
    read_cloudformation(
        &mut snapshot,
        in_region(&cloudformation),
        &consumers,
        &in_run,
    )
    .await
    .unwrap();
    assert_eq!(cloudformation.calls().len(), 2);

    let result = world.deploy(&stacks, 4, snapshot).await;
    assert_eq!(result.failures, Vec::<String>::new());
    let source = world.store.record("Source", REGION).expect("a record");
    let arn = format!(
        "arn:aws:fake:::{}",
        source.resources["SourceQueue"].physical_id
    );
    let reader = world.store.record("Reader", REGION).expect("a record");
    assert_eq!(
        reader.resources["ReaderTopic"].properties["DisplayName"],
        json!(format!("legacy-bucket/exported-value/{arn}"))
    );
}

#[tokio::test(start_paused = true)]
async fn a_producer_neither_cdkd_nor_cloudformation_knows_fails_its_consumer_by_name() {
    let world = World::new();
    let cloudformation = Arc::new(FakeCloudFormation::new(
        REGION,
        Arc::new(FakeStaging::default()),
    ));
    let stacks = [(
        artifact("Reader", &[]),
        consumer(
            "Reader",
            json!({"Fn::GetStackOutput": {"StackName": "Gone", "OutputName": "Name"}}),
        ),
    )];
    let template = Template::parse(&stacks[0].1).unwrap();
    let consumers = [Consumer {
        stack: "Reader",
        template: &template,
        region: REGION,
    }];
    let mut snapshot = StateSnapshot::default();
    read_cloudformation(
        &mut snapshot,
        in_region(&cloudformation),
        &consumers,
        &["Reader".to_string()].into(),
    )
    .await
    .unwrap();
    assert_eq!(
        snapshot.cloudformation("Gone", REGION),
        Some(&crate::deployment::external::CloudFormationStack::Absent(
            None
        ))
    );
    let result = world.deploy(&stacks, 4, snapshot).await;
    assert_eq!(result.failures.len(), 1);
    assert!(result.failures[0].contains("Gone"), "{:?}", result.failures);
    assert!(world.created().is_empty());
}

#[test]
fn stacks_that_wait_for_each_other_are_refused() {
    let a = artifact("A", &["B"]);
    let b = artifact("B", &[]);
    let reads_a = Template::parse(&consumer("B", json!({"Fn::ImportValue": "AArn"}))).unwrap();
    let err = RunOrder::of(
        vec![
            (&a, Template::parse(&producer("A")).unwrap()),
            (&b, reads_a),
        ],
        REGION,
    )
    .unwrap_err();
    assert_eq!(err.0, "A, B");
}

#[test]
fn destroy_takes_consumers_before_their_producers() {
    let (source, reader, apart) = (
        artifact("Source", &[]),
        artifact("Reader", &[]),
        artifact("Apart", &[]),
    );
    let order = RunOrder::of(
        vec![
            (
                &reader,
                Template::parse(&consumer("Reader", json!({"Fn::ImportValue": "SourceArn"})))
                    .unwrap(),
            ),
            (
                &apart,
                Template::parse(&consumer("Apart", json!("x"))).unwrap(),
            ),
            (&source, Template::parse(&producer("Source")).unwrap()),
        ],
        REGION,
    )
    .unwrap();
    assert_eq!(order.deploy_order(), ["Apart", "Source", "Reader"]);
    assert_eq!(order.destroy_order(), ["Reader", "Source", "Apart"]);
    assert!(order.cross_stack());
}

#[test]
fn state_destroy_all_takes_the_stacks_that_import_most_first() {
    use crate::state::schema::{StackState, StateImportEntry};
    let importing = |name: &str, from: &[&str]| {
        let mut state = StackState::new(name, REGION);
        state.imports = Some(
            (from.iter())
                .map(|source| StateImportEntry {
                    source_stack: source.to_string(),
                    source_region: REGION.into(),
                    export_name: format!("{source}Arn"),
                    extra: Default::default(),
                })
                .collect(),
        );
        state
    };
    let mut snapshot = StateSnapshot::default();
    for state in [
        importing("Base", &[]),
        importing("Top", &["Middle", "Base"]),
        importing("Middle", &["Base"]),
        importing("Alone", &[]),
    ] {
        snapshot.update(state);
    }
    let order: Vec<String> = (super::destroy::recorded_destroy_order(&snapshot).into_iter())
        .map(|(stack, region)| {
            assert_eq!(region, REGION);
            stack
        })
        .collect();
    assert_eq!(order, ["Top", "Middle", "Alone", "Base"]);
}

#[tokio::test(start_paused = true)]
async fn destroy_takes_consumers_first_and_reads_the_records_again_between_stacks() {
    use super::destroy::{destroy_stacks, DestroyTarget};
    use crate::deployment::destroy::DestroyOptions;
    use crate::state::backend::StateBackend;
    use crate::state::keys::{StateKeys, DEFAULT_PREFIX};
    use crate::state::storage::MemoryStorage;
    let world = World::new();
    // The real record store over in-memory storage: destroy reads the records through it.
    let backend = StateBackend::on(
        Arc::new(MemoryStorage::new("state")),
        StateKeys::new(DEFAULT_PREFIX),
    );
    let engine = Engine {
        store: Arc::new(backend.clone()),
        ..world.engine()
    };
    let stacks = [
        (artifact("Source", &[]), producer("Source")),
        (
            artifact("Reader", &[]),
            consumer("Reader", json!({"Fn::ImportValue": "SourceArn"})),
        ),
    ];
    let order = RunOrder::of(
        (stacks.iter())
            .map(|(a, t)| (a, Template::parse(t).unwrap()))
            .collect(),
        REGION,
    )
    .unwrap();
    let options = DeployOptions::default();
    let run = StackRun {
        engine: &engine,
        options: &options,
        stack_concurrency: 4,
        inputs: &world,
        log: &world,
    };
    let result = run.deploy(&order, StateSnapshot::default()).await;
    assert_eq!(result.failures, Vec::<String>::new());
    assert_eq!(world.cloud.live().len(), 2);
    world.finished.borrow_mut().clear();

    let targets = (order.destroy_order().into_iter())
        .map(|stack| DestroyTarget {
            stack,
            region: REGION.into(),
            policies: BTreeMap::new(),
        })
        .collect();
    // The producer's destroy checks its consumers against the records: it succeeds only if
    // the records were read again after the consumer went.
    destroy_stacks(
        &engine,
        &backend,
        targets,
        DestroyOptions::default(),
        None,
        &world,
    )
    .await
    .unwrap();
    assert_eq!(world.finished(), ["Reader", "Source"]);
    assert!(world.cloud.live().is_empty());
    assert!(StateSnapshot::load(&backend)
        .await
        .unwrap()
        .iter()
        .next()
        .is_none());
}

#[tokio::test(start_paused = true)]
async fn a_producer_whose_consumer_stays_is_not_destroyed() {
    use super::destroy::{destroy_stacks, DestroyTarget};
    use crate::deployment::destroy::DestroyOptions;
    use crate::state::backend::StateBackend;
    use crate::state::keys::{StateKeys, DEFAULT_PREFIX};
    use crate::state::storage::MemoryStorage;
    let world = World::new();
    let backend = StateBackend::on(
        Arc::new(MemoryStorage::new("state")),
        StateKeys::new(DEFAULT_PREFIX),
    );
    let engine = Engine {
        store: Arc::new(backend.clone()),
        ..world.engine()
    };
    let stacks = [
        (artifact("Source", &[]), producer("Source")),
        (
            artifact("Reader", &[]),
            consumer("Reader", json!({"Fn::ImportValue": "SourceArn"})),
        ),
    ];
    let order = RunOrder::of(
        (stacks.iter())
            .map(|(a, t)| (a, Template::parse(t).unwrap()))
            .collect(),
        REGION,
    )
    .unwrap();
    let options = DeployOptions::default();
    let run = StackRun {
        engine: &engine,
        options: &options,
        stack_concurrency: 4,
        inputs: &world,
        log: &world,
    };
    assert!(run
        .deploy(&order, StateSnapshot::default())
        .await
        .failures
        .is_empty());
    world.finished.borrow_mut().clear();
    let only_source = vec![DestroyTarget {
        stack: "Source".into(),
        region: REGION.into(),
        policies: BTreeMap::new(),
    }];
    let err = destroy_stacks(
        &engine,
        &backend,
        only_source,
        DestroyOptions::default(),
        None,
        &world,
    )
    .await
    .unwrap_err();
    assert!(format!("{err:#}").contains("Reader"), "{err:#}");
    assert_eq!(world.cloud.live().len(), 2);
    assert_eq!(world.finished(), ["Source"]);
}
