//! The rules on top of CloudFormation's calls, on the in-memory fake (fake.rs), under paused
//! time: missing and unsettled stacks, IMPORT and UPDATE change sets and their failures, the
//! retire that keeps every resource, the nesting flip.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::fake::{FakeCloudFormation, FakeStaging};
use super::{Body, CloudFormation, Outcome, ToImport, FLIP_TAG, INLINE_LIMIT};

const REGION: &str = "us-east-1";

struct World {
    fake: Arc<FakeCloudFormation>,
    staging: Arc<FakeStaging>,
    cloudformation: CloudFormation,
}

fn world() -> World {
    let staging = Arc::new(FakeStaging::default());
    let fake = Arc::new(FakeCloudFormation::new(REGION, staging.clone()));
    World {
        cloudformation: CloudFormation::over(fake.clone(), REGION),
        fake,
        staging,
    }
}

fn body(template: &Value) -> Body {
    Body {
        text: template.to_string(),
        extension: "json",
    }
}

fn queue(url: &str) -> ToImport {
    ToImport {
        logical_id: "Queue".into(),
        resource_type: "AWS::SQS::Queue".into(),
        identifier: Map::from_iter([("QueueUrl".to_string(), json!(url))]),
    }
}

fn phase_one() -> Value {
    json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Delete"}}})
}

#[tokio::test(start_paused = true)]
async fn a_missing_stack_is_none_and_an_unsettled_one_is_not_migrated() {
    let w = world();
    assert_eq!(w.cloudformation.describe("Legacy").await.unwrap(), None);
    let missing = w.cloudformation.resources("Legacy").await.unwrap_err();
    assert_eq!(
        missing.to_string(),
        "there is no CloudFormation stack Legacy in us-east-1; name the stack to migrate with --migrate-from-cloudformation NAME"
    );
    w.fake
        .put_stack("Legacy", "UPDATE_ROLLBACK_FAILED", &phase_one(), &[], &[]);
    let unsettled = w.cloudformation.resources("Legacy").await.unwrap_err();
    assert!(
        unsettled
            .to_string()
            .starts_with("CloudFormation stack Legacy is UPDATE_ROLLBACK_FAILED; migrate it once it is one of CREATE_COMPLETE"),
        "{unsettled}"
    );
    // `values` reads a stack that must be there: its absence is CloudFormation's error.
    let values = w.cloudformation.values("Gone").await.unwrap_err();
    assert!(
        values
            .to_string()
            .contains("CloudFormation DescribeStacks Gone: ValidationError: Stack with id Gone does not exist"),
        "{values}"
    );
}

#[tokio::test(start_paused = true)]
async fn outputs_parameters_and_exports_are_read_as_cloudformation_reports_them() {
    let w = world();
    let template = json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Url": {"Value": {"Ref": "Queue"}, "Export": {"Name": "shared-url"}},
                    "Fixed": {"Value": "v"}}});
    w.fake.put_stack(
        "Legacy",
        "CREATE_COMPLETE",
        &template,
        &[("Queue", "https://q/1")],
        &[("Env", "prod")],
    );
    let (parameters, outputs) = w.cloudformation.values("Legacy").await.unwrap();
    assert_eq!(parameters, BTreeMap::from([("Env".into(), json!("prod"))]));
    assert_eq!(
        Value::Object(outputs),
        json!({"Url": "https://q/1", "Fixed": "v"})
    );
    let exports = w.cloudformation.exports().await.unwrap();
    assert_eq!(
        exports,
        BTreeMap::from([("shared-url".into(), "https://q/1".into())])
    );
    let held = w.cloudformation.held("Legacy").await.unwrap();
    assert_eq!(held["Queue"].as_deref(), Some("https://q/1"));
}

#[tokio::test(start_paused = true)]
async fn an_import_change_set_makes_the_stack_and_adopts_the_resources() {
    let w = world();
    w.fake.exists("https://q/1");
    (w.cloudformation)
        .import(
            "S",
            &body(&phase_one()),
            &BTreeMap::new(),
            &[queue("https://q/1")],
            w.staging.as_ref(),
        )
        .await
        .unwrap();
    let stack = w.fake.stack("S").expect("the new stack");
    assert_eq!(stack.status, "IMPORT_COMPLETE");
    assert_eq!(
        stack.resources["Queue"],
        ("AWS::SQS::Queue".to_string(), "https://q/1".to_string())
    );
    let calls = w.fake.calls();
    let at = |call: &str| calls.iter().position(|c| c == call).expect(call);
    assert!(at("CreateChangeSet IMPORT S") < at("ExecuteChangeSet S"));
    // Executed only once CloudFormation said the change set was created.
    let polls = calls.iter().filter(|c| *c == "DescribeChangeSet S").count();
    assert_eq!(polls, 2, "{calls:?}");
    assert!(w.staging.purged().is_empty(), "an inline template");
}

#[tokio::test(start_paused = true)]
async fn a_refused_import_names_cloudformation_s_reason_and_leaves_no_empty_stack() {
    let w = world();
    let err = (w.cloudformation)
        .import(
            "S",
            &body(&phase_one()),
            &BTreeMap::new(),
            &[queue("https://q/none")],
            w.staging.as_ref(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("CloudFormation refused change set cdkd-export-import-"),
        "{err}"
    );
    assert!(
        err.ends_with("on stack S: Resource of type 'AWS::SQS::Queue' with identifier 'https://q/none' was not found."),
        "{err}"
    );
    assert!(
        w.fake.stack("S").is_none(),
        "the REVIEW_IN_PROGRESS stack is deleted"
    );
    assert!(w.fake.calls().contains(&"DeleteStack S".to_string()));
    assert!(!w.fake.calls().contains(&"ExecuteChangeSet S".to_string()));
}

#[tokio::test(start_paused = true)]
async fn a_resource_another_stack_holds_is_refused_and_that_stack_is_untouched() {
    let w = world();
    w.fake.put_stack(
        "Other",
        "CREATE_COMPLETE",
        &phase_one(),
        &[("Queue", "https://q/1")],
        &[],
    );
    let err = (w.cloudformation)
        .import(
            "S",
            &body(&phase_one()),
            &BTreeMap::new(),
            &[queue("https://q/1")],
            w.staging.as_ref(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("https://q/1 already exists in stack arn:aws:cloudformation:us-east-1:123456789012:stack/Other/"), "{err}");
    assert_eq!(w.fake.stack("Other").unwrap().resources.len(), 1);
    assert!(w.fake.deleted().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_failed_execution_names_each_failed_resource_from_the_events() {
    let w = world();
    w.fake.exists("https://q/1");
    w.fake
        .fail("Queue", "Queue https://q/1 does not exist any more");
    let err = (w.cloudformation)
        .import(
            "S",
            &body(&phase_one()),
            &BTreeMap::new(),
            &[queue("https://q/1")],
            w.staging.as_ref(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "CloudFormation stack S ended IMPORT_ROLLBACK_COMPLETE\n  Queue (AWS::SQS::Queue): IMPORT_FAILED: Queue https://q/1 does not exist any more"
    );
    assert!(w.fake.stack("S").is_none(), "it holds nothing: deleted");
}

#[tokio::test(start_paused = true)]
async fn a_rolled_back_stack_that_holds_resources_is_left_alone() {
    let w = world();
    w.fake.put_stack(
        "S",
        "IMPORT_COMPLETE",
        &phase_one(),
        &[("Queue", "https://q/1")],
        &[],
    );
    w.fake.exists("https://q/2");
    w.fake.fail("Other", "gone");
    let mut template = phase_one();
    template["Resources"]["Other"] = json!({"Type": "AWS::SQS::Queue", "DeletionPolicy": "Delete"});
    let other = ToImport {
        logical_id: "Other".into(),
        ..queue("https://q/2")
    };
    let err = (w.cloudformation)
        .import(
            "S",
            &body(&template),
            &BTreeMap::new(),
            &[other],
            w.staging.as_ref(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("IMPORT_FAILED: gone"), "{err}");
    let stack = w.fake.stack("S").expect("kept: it holds the queue");
    assert_eq!(stack.status, "IMPORT_ROLLBACK_COMPLETE");
    assert!(!w.fake.calls().contains(&"DeleteStack S".to_string()));
}

#[tokio::test(start_paused = true)]
async fn an_update_with_nothing_to_change_is_no_changes_and_one_with_changes_creates() {
    let w = world();
    w.fake.put_stack(
        "S",
        "IMPORT_COMPLETE",
        &phase_one(),
        &[("Queue", "https://q/1")],
        &[],
    );
    let same = (w.cloudformation)
        .update_to(
            "S",
            &body(&phase_one()),
            &BTreeMap::new(),
            w.staging.as_ref(),
        )
        .await
        .unwrap();
    assert_eq!(same, Outcome::NoChanges);
    let mut full = phase_one();
    full["Resources"]["Topic"] = json!({"Type": "AWS::SNS::Topic"});
    let done = (w.cloudformation)
        .update_to("S", &body(&full), &BTreeMap::new(), w.staging.as_ref())
        .await
        .unwrap();
    assert_eq!(done, Outcome::Done);
    let stack = w.fake.stack("S").unwrap();
    assert_eq!(stack.status, "UPDATE_COMPLETE");
    assert!(stack.resources.contains_key("Topic"));

    w.fake.fail("Made", "handler failed");
    full["Resources"]["Made"] = json!({"Type": "Custom::Thing"});
    let failed = (w.cloudformation)
        .update_to("S", &body(&full), &BTreeMap::new(), w.staging.as_ref())
        .await
        .unwrap_err();
    assert_eq!(
        failed.to_string(),
        "CloudFormation stack S ended UPDATE_ROLLBACK_COMPLETE\n  Made (Custom::Thing): CREATE_FAILED: handler failed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_template_over_the_inline_limit_goes_through_the_staging_and_is_purged() {
    let w = world();
    w.fake.exists("https://q/1");
    let mut big = phase_one();
    big["Description"] = json!("x".repeat(INLINE_LIMIT));
    (w.cloudformation)
        .import(
            "S",
            &body(&big),
            &BTreeMap::new(),
            &[queue("https://q/1")],
            w.staging.as_ref(),
        )
        .await
        .unwrap();
    assert_eq!(
        w.staging.purged(),
        ["cdkd-migrate-tmp/S/export-import.json"]
    );
    assert!(w.staging.kept().is_empty());
    assert_eq!(w.fake.stack("S").unwrap().status, "IMPORT_COMPLETE");
}

#[tokio::test(start_paused = true)]
async fn retiring_keeps_every_resource_nested_stacks_included() {
    let w = world();
    let child = w.fake.put_stack(
        "Legacy-Child",
        "CREATE_COMPLETE",
        &json!({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}),
        &[("Topic", "arn:topic")],
        &[],
    );
    let parent = w.fake.put_stack(
        "Legacy",
        "CREATE_COMPLETE",
        &json!({"Resources": {
            "Queue": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Delete"},
            "Child": {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": "https://x/child.json"}}}}),
        &[("Queue", "https://q/1"), ("Child", child.as_str())],
        &[("Env", "prod")],
    );
    w.fake
        .edit("Legacy-Child", |c| c.parent_id = Some(parent.clone()));
    w.cloudformation
        .retire("Legacy", w.staging.as_ref())
        .await
        .unwrap();
    assert!(w.fake.stack("Legacy").is_none());
    assert!(w.fake.stack("Legacy-Child").is_none());
    assert!(w.fake.deleted().is_empty(), "{:?}", w.fake.deleted());
    assert_eq!(w.staging.purged(), ["cdkd-migrate-tmp/Legacy/Child.json"]);
    let calls = w.fake.calls();
    let at = |call: &str| calls.iter().position(|c| c == call).expect(call);
    assert!(at("UpdateStack Legacy") < at("DeleteStack Legacy"));

    // Without the Retain update first, a delete takes the resources with it.
    let plain = world();
    plain.fake.put_stack(
        "Old",
        "CREATE_COMPLETE",
        &phase_one(),
        &[("Queue", "q")],
        &[],
    );
    use super::CloudFormationApi as _;
    plain.fake.delete_stack("Old").await.unwrap();
    assert_eq!(plain.fake.deleted(), ["q"]);
}

#[tokio::test(start_paused = true)]
async fn a_stack_already_retained_is_deleted_without_an_update() {
    let w = world();
    let retained = json!({"Resources": {"Queue": {"Type": "AWS::SQS::Queue",
        "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}}});
    w.fake.put_stack(
        "Legacy",
        "UPDATE_COMPLETE",
        &retained,
        &[("Queue", "q")],
        &[],
    );
    w.cloudformation
        .retire("Legacy", w.staging.as_ref())
        .await
        .unwrap();
    assert!(!w.fake.calls().contains(&"UpdateStack Legacy".to_string()));
    assert!(w.fake.deleted().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_flip_takes_a_child_out_of_import_complete_keeping_its_tags() {
    let w = world();
    w.fake.put_stack(
        "P-Child",
        "IMPORT_COMPLETE",
        &phase_one(),
        &[("Queue", "q")],
        &[],
    );
    w.fake
        .edit("P-Child", |c| c.tags = vec![("team".into(), "a".into())]);
    let described = w.cloudformation.describe("P-Child").await.unwrap().unwrap();
    let flipped = w.cloudformation.flip("P-Child", &described).await.unwrap();
    assert_eq!(flipped.status, "UPDATE_COMPLETE");
    assert_eq!(flipped.tags[0], ("team".to_string(), "a".to_string()));
    assert_eq!(flipped.tags[1].0, FLIP_TAG);
    // A stack in any other status is left as it is.
    let again = w.cloudformation.flip("P-Child", &flipped).await.unwrap();
    assert_eq!(again, flipped);
    let template = w
        .cloudformation
        .processed_template("P-Child")
        .await
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&template).unwrap(),
        phase_one()
    );
}
