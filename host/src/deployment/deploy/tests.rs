//! The engine's rules on in-memory fakes (deployment/fakes.rs), under paused time.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{DeployOptions, Deployed, StackInput};
use crate::analyzer::plan::StackContext;
use crate::analyzer::template::Template;
use crate::deployment::engine::Engine;
use crate::deployment::external::StateSnapshot;
use crate::deployment::fakes::{FakeCloud, MemoryLocks, MemoryStore};
use crate::deployment::journal::{OperationKind, Reason};
use crate::deployment::report::Reporter;
use crate::deployment::store::StackLocks;
use crate::provisioning::plugins_file::PluginsFile;
use crate::provisioning::registry::Registry;
use crate::state::schema::StackState;

const STACK: &str = "App";
const REGION: &str = "us-east-1";

struct World {
    cloud: FakeCloud,
    store: Arc<MemoryStore>,
    locks: MemoryLocks,
    registry: Registry,
    stop: tokio::sync::watch::Sender<bool>,
}

impl World {
    fn new() -> World {
        World {
            cloud: FakeCloud::default(),
            store: Arc::new(MemoryStore::default()),
            locks: MemoryLocks::default(),
            registry: Registry::load(PluginsFile::empty()),
            stop: tokio::sync::watch::channel(false).0,
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

    async fn deploy_with(
        &self,
        template: &Value,
        snapshot: &StateSnapshot,
        options: &DeployOptions,
    ) -> anyhow::Result<Deployed> {
        let input = StackInput {
            context: StackContext {
                stack_name: STACK.into(),
                region: REGION.into(),
                account: "123456789012".into(),
                ref_values: Default::default(),
                availability_zones: Default::default(),
            },
            template: Template::parse(template).expect("a valid template"),
            parameters: Default::default(),
            children: Default::default(),
            parent: None,
        };
        self.engine().deploy(&input, snapshot, options).await
    }

    async fn deploy(&self, template: &Value, options: &DeployOptions) -> anyhow::Result<Deployed> {
        self.deploy_with(template, &StateSnapshot::default(), options)
            .await
    }

    fn record(&self) -> StackState {
        self.store.record(STACK, REGION).expect("a saved record")
    }

    fn calls_of(&self, verb: &str) -> Vec<String> {
        let prefix = format!("{verb} ");
        let calls = self.cloud.calls();
        calls
            .iter()
            .filter_map(|c| c.strip_prefix(&prefix).map(str::to_string))
            .collect()
    }
}

/// A queue, a topic that reads the queue's ARN, and an independent log group.
fn app() -> Value {
    json!({
        "Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 30}},
            "Topic": {"Type": "AWS::SNS::Topic",
                      "Properties": {"DisplayName": {"Fn::GetAtt": ["Queue", "Arn"]}}},
            "Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {"RetentionInDays": 7}}
        },
        "Outputs": {"QueueArn": {"Value": {"Fn::GetAtt": ["Queue", "Arn"]}}}
    })
}

fn position(calls: &[String], call: &str) -> usize {
    calls
        .iter()
        .position(|c| c == call)
        .unwrap_or_else(|| panic!("no call {call:?} in {calls:?}"))
}

#[tokio::test(start_paused = true)]
async fn creates_follow_dependencies_and_a_second_deploy_calls_nothing() {
    let world = World::new();
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    let calls = world.cloud.calls();
    assert!(position(&calls, "create Queue") < position(&calls, "create Topic"));
    let record = world.record();
    assert_eq!(record.resources.len(), 3);
    let queue = &record.resources["Queue"];
    let arn = format!("arn:aws:fake:::{}", queue.physical_id);
    assert_eq!(
        record.resources["Topic"].properties["DisplayName"],
        json!(arn)
    );
    assert_eq!(
        record.resources["Topic"].dependencies,
        Some(vec!["Queue".to_string()])
    );
    assert_eq!(record.outputs["QueueArn"], json!(arn));
    assert!(world.store.journal(STACK, REGION).is_none());
    assert!(!world.locks.is_held(STACK, REGION));

    world.cloud.clear_calls();
    let written = world.store.etag(STACK, REGION);
    let locks = world.locks.taken();
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    assert_eq!(world.cloud.calls(), Vec::<String>::new());
    let again = world.record();
    assert_eq!(again.resources, record.resources);
    assert_eq!(again.outputs, record.outputs);
    // Nothing changed: nothing was written, and the lock was not even taken.
    assert_eq!(world.store.etag(STACK, REGION), written);
    assert_eq!(world.locks.taken(), locks);

    // A record missing a baseline takes the normal path, which fills it in.
    world.store.edit(STACK, REGION, |s| {
        s.resources.get_mut("Queue").unwrap().observed_properties = None;
    });
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    assert_eq!(world.locks.taken(), locks + 1);
    assert!(world.record().resources["Queue"]
        .observed_properties
        .is_some());
    // A lock left behind also takes the normal path (which waits for it or reports it).
    let held = world.locks.acquire(STACK, REGION, "other").await.unwrap();
    assert!(world
        .deploy(&app(), &DeployOptions::default())
        .await
        .is_err());
    held.release().await;
}

#[tokio::test(start_paused = true)]
async fn a_failure_rolls_back_newest_first_and_journals_a_clean_rollback() {
    let world = World::new();
    world.cloud.fail("Topic", "DisplayName is not allowed");
    let err = world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("failed and was rolled back"), "{err}");
    assert!(err.contains("Topic: DisplayName is not allowed"), "{err}");
    let created = world.calls_of("create");
    let mut deleted = world.calls_of("delete");
    deleted.reverse();
    // Every completed create is undone, in the reverse order of completion.
    let completed: Vec<String> = created.into_iter().filter(|id| id != "Topic").collect();
    assert_eq!(deleted, completed);
    assert!(world.cloud.live().is_empty());
    assert!(world.record().resources.is_empty());
    let journal = world.store.journal(STACK, REGION).expect("a journal");
    let last = journal.segments.last().expect("a segment");
    assert_eq!(last.reason, Reason::AutoRollbackClean);
    assert!(last.operations.is_empty());
    assert_eq!(last.failed_operations.len(), 1);
    assert_eq!(last.failed_operations[0].logical_id, "Topic");
    assert!(journal.pending_creates.is_empty());
    assert!(!world.locks.is_held(STACK, REGION));
}

#[tokio::test(start_paused = true)]
async fn without_rollback_what_succeeded_stays_and_the_next_deploy_resumes() {
    let world = World::new();
    world.cloud.fail("Topic", "throttled for good");
    let options = DeployOptions {
        rollback: false,
        ..DeployOptions::default()
    };
    let err = world
        .deploy(&app(), &options)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("cdkd rollback App"), "{err}");
    let record = world.record();
    let mut kept: Vec<&String> = record.resources.keys().collect();
    kept.sort();
    assert_eq!(kept, ["Logs", "Queue"]);
    let journal = world.store.journal(STACK, REGION).expect("a journal");
    let segment = &journal.segments[0];
    assert_eq!(segment.reason, Reason::NoRollbackFailure);
    assert_eq!(segment.operations.len(), 2);
    assert!(segment
        .operations
        .iter()
        .all(|op| op.action == OperationKind::Create));
    assert_eq!(segment.failed_operations[0].logical_id, "Topic");

    world.cloud.heal("Topic");
    world.cloud.clear_calls();
    world.deploy(&app(), &options).await.unwrap();
    assert_eq!(world.cloud.calls(), ["create Topic"]);
    assert_eq!(world.record().resources.len(), 3);
    assert!(world.store.journal(STACK, REGION).is_none());
}

/// `app()` with the queue renamed (a create-only property: a replacement).
fn renamed(policy: Option<&str>) -> Value {
    let mut template = app();
    template["Resources"]["Queue"]["Properties"]["QueueName"] = json!("renamed");
    if let Some(policy) = policy {
        template["Resources"]["Queue"]["UpdateReplacePolicy"] = json!(policy);
    }
    template
}

#[tokio::test(start_paused = true)]
async fn a_replacement_creates_the_successor_before_deleting_the_old_one() {
    let world = World::new();
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    let old = world.record().resources["Queue"].physical_id.clone();
    world.cloud.clear_calls();
    world
        .deploy(&renamed(None), &DeployOptions::default())
        .await
        .unwrap();
    let calls = world.cloud.calls();
    assert!(position(&calls, "create Queue") < position(&calls, "delete Queue"));
    // The topic reads the queue's new ARN: it is updated before the old queue goes.
    assert!(position(&calls, "update Topic") < position(&calls, "delete Queue"));
    let record = world.record();
    let new = &record.resources["Queue"].physical_id;
    assert_ne!(new, &old);
    let live = world.cloud.live();
    assert!(live.contains_key(new) && !live.contains_key(&old));
    assert_eq!(
        record.resources["Topic"].properties["DisplayName"],
        json!(format!("arn:aws:fake:::{new}"))
    );
}

#[tokio::test(start_paused = true)]
async fn replace_first_deletes_the_old_resource_before_creating_its_successor() {
    let world = World::new();
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    world.cloud.clear_calls();
    let options = DeployOptions {
        replace_first: true,
        ..DeployOptions::default()
    };
    world.deploy(&renamed(None), &options).await.unwrap();
    let calls = world.cloud.calls();
    assert!(position(&calls, "delete Queue") < position(&calls, "create Queue"));
    assert_eq!(world.calls_of("delete"), ["Queue"]);
}

#[tokio::test(start_paused = true)]
async fn retain_policies_keep_replaced_and_removed_resources_in_aws() {
    let world = World::new();
    let mut first = app();
    first["Resources"]["Logs"]["DeletionPolicy"] = json!("Retain");
    // The recorded policy of the replaced resource decides (it was deployed with it).
    first["Resources"]["Queue"]["UpdateReplacePolicy"] = json!("Retain");
    world
        .deploy(&first, &DeployOptions::default())
        .await
        .unwrap();
    let old_queue = world.record().resources["Queue"].physical_id.clone();
    let logs = world.record().resources["Logs"].physical_id.clone();
    world.cloud.clear_calls();
    let mut second = renamed(Some("Retain"));
    second["Resources"].as_object_mut().unwrap().remove("Logs");
    world
        .deploy(&second, &DeployOptions::default())
        .await
        .unwrap();
    assert_eq!(world.calls_of("delete"), Vec::<String>::new());
    let live = world.cloud.live();
    assert!(live.contains_key(&old_queue), "the replaced queue is kept");
    assert!(live.contains_key(&logs), "the removed log group is kept");
    let record = world.record();
    assert!(!record.resources.contains_key("Logs"));
    assert_ne!(record.resources["Queue"].physical_id, old_queue);
}

#[tokio::test(start_paused = true)]
async fn an_interruption_lets_calls_in_flight_finish_and_journals_them() {
    let world = World::new();
    world.cloud.delay("Queue", Duration::from_secs(10));
    let (template, options) = (app(), DeployOptions::default());
    let deploy = world.deploy(&template, &options);
    let interrupt = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        world.stop.send_replace(true);
    };
    let (result, ()) = tokio::join!(deploy, interrupt);
    let err = result.unwrap_err().to_string();
    assert!(err.contains("was interrupted"), "{err}");
    // The queue in flight finished; the topic that waits for it never started.
    assert!(!world.calls_of("create").contains(&"Topic".to_string()));
    let record = world.record();
    assert!(record.resources.contains_key("Queue"));
    assert!(!record.resources.contains_key("Topic"));
    let journal = world.store.journal(STACK, REGION).expect("a journal");
    assert_eq!(journal.segments[0].reason, Reason::Interrupted);
    assert_eq!(journal.segments[0].operations.len(), 2);
    assert!(!world.locks.is_held(STACK, REGION));
}

#[tokio::test(start_paused = true)]
async fn a_locked_stack_is_refused_without_a_call() {
    let world = World::new();
    let held = world.locks.acquire(STACK, REGION, "deploy").await.unwrap();
    let err = world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("is locked"), "{err}");
    assert!(world.cloud.calls().is_empty());
    held.release().await;
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn another_stacks_output_is_read_from_the_snapshot_and_recorded() {
    let world = World::new();
    let mut producer = StackState::new("Producer", REGION);
    producer.outputs.insert("Name".into(), json!("shared-name"));
    let mut snapshot = StateSnapshot::default();
    snapshot.update(producer);
    let template = json!({"Resources": {"Reader": {"Type": "AWS::SNS::Topic", "Properties": {
        "DisplayName": {"Fn::GetStackOutput": {"StackName": "Producer", "OutputName": "Name"}}}}}});
    world
        .deploy_with(&template, &snapshot, &DeployOptions::default())
        .await
        .unwrap();
    let record = world.record();
    assert_eq!(
        record.resources["Reader"].properties["DisplayName"],
        json!("shared-name")
    );
    let reads = record.output_reads.expect("output reads recorded");
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].source_stack, "Producer");
    assert_eq!(reads[0].output_name, "Name");
}

#[tokio::test(start_paused = true)]
async fn a_read_answered_by_cloudformation_is_not_recorded() {
    use crate::deployment::external::CloudFormationStack;
    let world = World::new();
    let mut snapshot = StateSnapshot::default();
    snapshot.keep_cloudformation(
        "Exported",
        REGION,
        CloudFormationStack::Outputs([("Name".to_string(), json!("from-cfn"))].into()),
    );
    let template = json!({"Resources": {"Reader": {"Type": "AWS::SNS::Topic", "Properties": {
        "DisplayName": {"Fn::GetStackOutput": {"StackName": "Exported", "OutputName": "Name"}}}}}});
    world
        .deploy_with(&template, &snapshot, &DeployOptions::default())
        .await
        .unwrap();
    let record = world.record();
    assert_eq!(
        record.resources["Reader"].properties["DisplayName"],
        json!("from-cfn")
    );
    assert_eq!(record.output_reads, None);
}

#[tokio::test(start_paused = true)]
async fn a_missing_producer_fails_before_any_call() {
    let world = World::new();
    let template = json!({"Resources": {"Reader": {"Type": "AWS::SNS::Topic", "Properties": {
        "DisplayName": {"Fn::GetStackOutput": {"StackName": "Nobody", "OutputName": "Name"}}}}}});
    let err = world
        .deploy(&template, &DeployOptions::default())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("Nobody"), "{err}");
    assert!(world.cloud.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn snapshot_policies_take_a_snapshot_before_each_delete() {
    let world = World::new();
    let mut first = app();
    first["Resources"]["Logs"]["DeletionPolicy"] = json!("Snapshot");
    first["Resources"]["Queue"]["UpdateReplacePolicy"] = json!("Snapshot");
    world
        .deploy(&first, &DeployOptions::default())
        .await
        .unwrap();
    world.cloud.clear_calls();
    let mut second = renamed(Some("Snapshot"));
    second["Resources"].as_object_mut().unwrap().remove("Logs");
    world
        .deploy(&second, &DeployOptions::default())
        .await
        .unwrap();
    let calls = world.cloud.calls();
    assert!(position(&calls, "snapshot Queue") < position(&calls, "delete Queue"));
    assert!(position(&calls, "snapshot Logs") < position(&calls, "delete Logs"));
    assert_eq!(world.calls_of("snapshot").len(), 2, "{calls:?}");

    // --replace deletes first: the snapshot still comes before the delete.
    world.cloud.clear_calls();
    let mut third = second.clone();
    third["Resources"]["Queue"]["Properties"]["QueueName"] = json!("renamed-again");
    let options = DeployOptions {
        replace_first: true,
        ..DeployOptions::default()
    };
    world.deploy(&third, &options).await.unwrap();
    let calls = world.cloud.calls();
    assert!(position(&calls, "snapshot Queue") < position(&calls, "delete Queue"));
}

#[tokio::test(start_paused = true)]
async fn a_failed_snapshot_leaves_the_resource_in_aws_and_in_state() {
    let world = World::new();
    let mut first = app();
    first["Resources"]["Logs"]["DeletionPolicy"] = json!("Snapshot");
    world
        .deploy(&first, &DeployOptions::default())
        .await
        .unwrap();
    let logs = world.record().resources["Logs"].physical_id.clone();
    world.cloud.fail("Logs#snapshot", "SnapshotQuotaExceeded");
    let mut second = app();
    second["Resources"].as_object_mut().unwrap().remove("Logs");
    let err = world
        .deploy(&second, &DeployOptions::default())
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("SnapshotQuotaExceeded"),
        "{err:#}"
    );
    assert!(world.calls_of("delete").is_empty());
    assert!(world.cloud.live().contains_key(&logs));
    assert!(world.record().resources.contains_key("Logs"));
}

#[tokio::test(start_paused = true)]
async fn a_type_without_a_snapshot_path_is_refused_before_any_change() {
    let world = World::new();
    let mut first = app();
    first["Resources"]["Cache"] = json!({
        "Type": "AWS::ElastiCache::CacheCluster",
        "DeletionPolicy": "Snapshot",
        "Properties": {"Engine": "redis", "NumCacheNodes": 1, "CacheNodeType": "cache.t3.micro"}
    });
    world
        .deploy(&first, &DeployOptions::default())
        .await
        .unwrap();
    world.cloud.clear_calls();
    let mut second = app();
    second["Resources"]["Logs"]["Properties"]["RetentionInDays"] = json!(14);
    let err = world
        .deploy(&second, &DeployOptions::default())
        .await
        .unwrap_err();
    let message = format!("{err:#}");
    assert!(
        message.contains("Cache (AWS::ElastiCache::CacheCluster) asks for a final snapshot"),
        "{message}"
    );
    assert!(world.cloud.calls().is_empty(), "{:?}", world.cloud.calls());

    // Destroy refuses too, unless told to skip the snapshot.
    let template_policies = Default::default();
    let engine = world.engine();
    let err = engine
        .destroy(
            STACK,
            REGION,
            &template_policies,
            &StateSnapshot::default(),
            Default::default(),
        )
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("--skip-final-snapshot"),
        "{err:#}"
    );
    assert!(world.cloud.calls().is_empty());
    let skip = crate::deployment::destroy::DestroyOptions {
        skip_final_snapshot: true,
        ..Default::default()
    };
    engine
        .destroy(
            STACK,
            REGION,
            &template_policies,
            &StateSnapshot::default(),
            skip,
        )
        .await
        .unwrap();
    assert!(world.calls_of("snapshot").is_empty());
    assert!(world.cloud.live().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_partial_destroy_keeps_retained_rows_until_the_record_goes() {
    let world = World::new();
    let mut first = app();
    first["Resources"]["Logs"]["DeletionPolicy"] = json!("Retain");
    world
        .deploy(&first, &DeployOptions::default())
        .await
        .unwrap();
    // The topic fails to delete: the queue it reads stays too, and the retained log group's
    // row stays in the preserved record although its turn came.
    world.cloud.fail("Topic", "Throttled");
    let engine = world.engine();
    engine
        .destroy(
            STACK,
            REGION,
            &Default::default(),
            &StateSnapshot::default(),
            Default::default(),
        )
        .await
        .unwrap_err();
    let kept = world.record();
    assert!(
        kept.resources.contains_key("Logs"),
        "{:?}",
        kept.resources.keys()
    );
    assert!(kept.resources.contains_key("Topic"));
    assert!(kept.outputs.is_empty());
    assert!(world.calls_of("delete").iter().all(|id| id != "Logs"));
    world.cloud.heal("Topic");
    engine
        .destroy(
            STACK,
            REGION,
            &Default::default(),
            &StateSnapshot::default(),
            Default::default(),
        )
        .await
        .unwrap();
    assert!(world.store.record(STACK, REGION).is_none());
    assert_eq!(world.cloud.live().len(), 1, "the log group stays in AWS");
}

#[tokio::test(start_paused = true)]
async fn destroy_snapshots_what_asks_for_it() {
    let world = World::new();
    let mut first = app();
    first["Resources"]["Logs"]["DeletionPolicy"] = json!("Snapshot");
    world
        .deploy(&first, &DeployOptions::default())
        .await
        .unwrap();
    world.cloud.clear_calls();
    world
        .engine()
        .destroy(
            STACK,
            REGION,
            &Default::default(),
            &StateSnapshot::default(),
            Default::default(),
        )
        .await
        .unwrap();
    let calls = world.cloud.calls();
    assert_eq!(world.calls_of("snapshot"), ["Logs"]);
    assert!(position(&calls, "snapshot Logs") < position(&calls, "delete Logs"));
    assert!(world.cloud.live().is_empty());
}

#[tokio::test(start_paused = true)]
async fn creates_and_updates_capture_observed_state_and_missing_baselines_are_filled_in() {
    let world = World::new();
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    let record = world.record();
    let live = world.cloud.live();
    for (id, resource) in &record.resources {
        assert_eq!(
            resource.observed_properties.as_ref(),
            Some(&live[&resource.physical_id].properties),
            "{id}"
        );
    }

    // An older cdkd's record has no baseline: a deploy with no change fills it in (reads only).
    world.store.edit(STACK, REGION, |state| {
        for resource in state.resources.values_mut() {
            resource.observed_properties = None;
        }
    });
    world.cloud.clear_calls();
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    assert!(world.cloud.calls().is_empty(), "{:?}", world.cloud.calls());
    let record = world.record();
    assert!(record
        .resources
        .values()
        .all(|r| r.observed_properties.is_some()));

    // An update is read back with its new value.
    let mut changed = app();
    changed["Resources"]["Logs"]["Properties"]["RetentionInDays"] = json!(14);
    world
        .deploy(&changed, &DeployOptions::default())
        .await
        .unwrap();
    let observed = world.record().resources["Logs"].observed_properties.clone();
    assert_eq!(observed.unwrap()["RetentionInDays"], json!(14));
}

#[tokio::test(start_paused = true)]
async fn no_capture_observed_state_leaves_records_without_a_baseline() {
    let world = World::new();
    let options = DeployOptions {
        capture_observed: false,
        ..DeployOptions::default()
    };
    world.deploy(&app(), &options).await.unwrap();
    assert!(world
        .record()
        .resources
        .values()
        .all(|r| r.observed_properties.is_none()));
}

#[tokio::test(start_paused = true)]
async fn drift_is_found_accepted_and_reverted() {
    use crate::deployment::drift::{DriftStatus, Reverted};
    let world = World::new();
    world
        .deploy(&app(), &DeployOptions::default())
        .await
        .unwrap();
    let record = world.record();
    let queue = record.resources["Queue"].physical_id.clone();
    let logs = record.resources["Logs"].physical_id.clone();
    let engine = world.engine();
    let drift = engine.detect_drift(STACK, REGION, 4).await.unwrap();
    assert!(!drift.drifted() && !drift.incomplete());

    world
        .cloud
        .tamper(&queue, Some(("VisibilityTimeout", json!(60))));
    world.cloud.tamper(&logs, None);
    let drift = engine.detect_drift(STACK, REGION, 4).await.unwrap();
    assert!(drift.drifted());
    let status = |id: &str| {
        drift
            .resources
            .iter()
            .find(|r| r.logical_id == id)
            .map(|r| r.status.clone())
            .unwrap()
    };
    let DriftStatus::Drifted(differences) = status("Queue") else {
        panic!("{:?}", status("Queue"));
    };
    assert_eq!(differences[0].dotted(), "VisibilityTimeout");
    assert_eq!(differences[0].live, Some(json!(60)));
    assert_eq!(status("Logs"), DriftStatus::Deleted);
    assert_eq!(status("Topic"), DriftStatus::InSync);

    // Revert: the queue goes back; the deleted log group is reported, then forgotten on ask.
    let (_, reverted) = engine.revert_drift(STACK, REGION, 4, false).await.unwrap();
    assert!(
        matches!(&reverted[..], [Reverted::LeftDeleted(l), Reverted::Restored(q)] if l == "Logs" && q == "Queue"),
        "{reverted:?}"
    );
    assert_eq!(
        world.cloud.live()[&queue].properties["VisibilityTimeout"],
        json!(30)
    );
    assert!(!world.locks.is_held(STACK, REGION));
    let (_, reverted) = engine.revert_drift(STACK, REGION, 4, true).await.unwrap();
    assert!(
        matches!(&reverted[..], [Reverted::Forgotten(l)] if l == "Logs"),
        "{reverted:?}"
    );
    assert!(!world.record().resources.contains_key("Logs"));

    // Accept: AWS's value becomes the baseline and the recorded property.
    world
        .cloud
        .tamper(&queue, Some(("VisibilityTimeout", json!(90))));
    let (_, accepted) = engine.accept_drift(STACK, REGION, 4).await.unwrap();
    assert_eq!(accepted[0].paths, ["VisibilityTimeout"]);
    let queue_record = world.record().resources["Queue"].clone();
    assert_eq!(queue_record.properties["VisibilityTimeout"], json!(90));
    assert_eq!(
        queue_record.observed_properties.unwrap()["VisibilityTimeout"],
        json!(90)
    );
    let drift = engine.detect_drift(STACK, REGION, 4).await.unwrap();
    assert!(!drift.drifted(), "{:?}", drift.resources);
}

#[tokio::test]
async fn the_fast_path_is_tried_only_for_the_template_deployed_last_from_here() {
    let world = World::new();
    let facts = tempfile::tempdir().unwrap();
    let options = DeployOptions {
        remembered: Some(super::RememberedDeploys::new(
            crate::aws_facts::FactsFile::at(facts.path().join("facts.json")),
            None,
            "state-bucket",
        )),
        ..DeployOptions::default()
    };
    // Nothing remembered: straight to the lock, no fast-path read.
    world.deploy(&app(), &options).await.unwrap();
    assert_eq!((world.locks.checked(), world.locks.taken()), (0, 1));
    // The same template again: the fast path reads, finds nothing to do, takes no lock.
    world.deploy(&app(), &options).await.unwrap();
    assert_eq!((world.locks.checked(), world.locks.taken()), (1, 1));
    // A changed template: straight to the lock again.
    let mut changed = app();
    changed["Resources"]["Topic"]["Properties"]["DisplayName"] = json!("changed");
    world.deploy(&changed, &options).await.unwrap();
    assert_eq!((world.locks.checked(), world.locks.taken()), (1, 2));
    assert_eq!(
        world.record().resources["Topic"].properties["DisplayName"],
        json!("changed")
    );
}
