//! Nested stacks (`NestedStack` from aws-cdk-lib) deployed, updated and destroyed with their
//! parent: each child's record, the values passed down (parameters) and up (outputs), the
//! resources in the emulator, and a child's failure rolling back the whole tree.

use std::path::Path;
use std::time::Instant;

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{resource_of_type, Emulator};
use serde_json::{json, Value};

const CHILD: &str = "NestedParentStack~ChildNestedStackChildNestedStackResourceC40294CA";
const MID: &str = "TreeStack~MidNestedStackMidNestedStackResourceBD703753";
const LEAF: &str = "TreeStack~MidNestedStackMidNestedStackResourceBD703753~LeafNestedStackLeafNestedStackResource87FAD680";

fn record(world: &AppWorld, stack: &str) -> Value {
    let run = world.cdkd(&["state", "show", stack, "--json"]);
    if run.code == Some(0) {
        run.json()["state"].clone()
    } else {
        Value::Null
    }
}

fn edit(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut template: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    change(&mut template);
    std::fs::write(path, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
}

fn function_exists(name: &str) -> bool {
    Emulator::shared().boto(&format!(
        "any(f['FunctionName'] == '{name}' for f in c('lambda').list_functions()['Functions'])"
    )) == json!(true)
}

#[test]
fn a_nested_stack_deploys_updates_and_is_destroyed_with_its_parent() {
    let world = AppWorld::unedited("nested", "nested");
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app]).success();

    let parent = record(&world, "NestedParentStack");
    let child = record(&world, CHILD);
    assert_eq!(child["parentStack"], "NestedParentStack");
    assert_eq!(
        child["parentLogicalId"],
        "ChildNestedStackChildNestedStackResourceC40294CA"
    );
    assert_eq!(child["parentRegion"], "us-east-1");
    let nested = resource_of_type(&parent, "AWS::CloudFormation::Stack");
    // cdkd's own provider, not Cloud Control: recorded `sdk`, as every v7+ row is.
    assert_eq!(nested["provisionedBy"], "sdk");
    assert_eq!(
        nested["physicalId"],
        json!(format!(
            "arn:aws:cloudformation:us-east-1:123456789012:stack/{CHILD}/cdkd"
        ))
    );
    // Down: the parent's bucket reached the child's function; up: the function's name
    // reached the parent's log group and its ARN the parent's output.
    let bucket = resource_of_type(&parent, "AWS::S3::Bucket")["physicalId"].clone();
    let function = resource_of_type(&child, "AWS::Lambda::Function");
    assert_eq!(
        function["properties"]["Environment"]["Variables"]["BUCKET"],
        bucket
    );
    let name = function["physicalId"].as_str().unwrap().to_string();
    assert!(function_exists(&name));
    let logs = resource_of_type(&parent, "AWS::Logs::LogGroup");
    assert_eq!(
        logs["properties"]["LogGroupName"],
        json!(format!("/aws/lambda/{name}"))
    );
    assert_eq!(
        parent["outputs"]["HandlerArn"],
        function["attributes"]["Arn"]
    );
    let role = resource_of_type(&child, "AWS::IAM::Role")["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        Emulator::shared().boto(&format!(
            "c('iam').get_role(RoleName='{role}')['Role']['RoleName']"
        )),
        json!(role)
    );

    // Nothing changed: no call, in the parent or the child.
    let again = world.cdkd(&["deploy", "-a", &app]).success().stdout;
    assert!(
        again.contains("NestedParentStack: 0 created, 0 updated, 0 replaced, 0 deleted"),
        "{again}"
    );
    assert!(!again.contains(&format!("{CHILD}:")), "{again}");

    // A change inside the child only (as a new synth makes it: a new template asset hash).
    let folder = world.assembly.path();
    edit(
        &folder.join("NestedParentStackChild70DFBE38.nested.template.json"),
        |t| {
            t["Resources"]["Handler886CB40B"]["Properties"]["Environment"]["Variables"]["MODE"] =
                json!("updated");
        },
    );
    edit(&folder.join("NestedParentStack.template.json"), |t| {
        let text = serde_json::to_string(t)
            .unwrap()
            .replace("b9fc033d", "c9fc033d");
        *t = serde_json::from_str(&text).unwrap();
    });
    let updated = world.cdkd(&["deploy", "-a", &app]).success().stdout;
    assert!(
        updated.contains(&format!("{CHILD}: 0 created, 1 updated")),
        "{updated}"
    );
    let mode = Emulator::shared().boto(&format!(
        "c('lambda').get_function_configuration(FunctionName='{name}')['Environment']['Variables'].get('MODE')"
    ));
    assert_eq!(mode, json!("updated"));

    world.cdkd(&["destroy", "-a", &app, "-f"]).success();
    assert!(!function_exists(&name));
    assert_eq!(record(&world, CHILD), Value::Null);
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}

#[test]
fn a_three_level_tree_passes_values_both_ways_and_a_leaf_failure_rolls_back_the_tree() {
    let world = AppWorld::unedited("nested3", "nested3");
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app]).success();
    let tree = record(&world, "TreeStack");
    let mid = record(&world, MID);
    let leaf = record(&world, LEAF);
    assert_eq!(mid["parentStack"], "TreeStack");
    assert_eq!(leaf["parentStack"], MID);
    let queue_name = resource_of_type(&tree, "AWS::SQS::Queue")["attributes"]["QueueName"]
        .as_str()
        .unwrap()
        .to_string();
    let middle = resource_of_type(&mid, "AWS::SNS::Topic")["attributes"]["TopicName"]
        .as_str()
        .unwrap()
        .to_string();
    let bottom = resource_of_type(&leaf, "AWS::SNS::Topic");
    assert_eq!(
        bottom["properties"]["DisplayName"],
        json!(format!("{queue_name}-{middle}"))
    );
    // The leaf's topic ARN went up two levels.
    assert_eq!(tree["outputs"]["BottomArn"], bottom["physicalId"]);
    // The state commands show the tree cdkd wrote.
    let listed = world
        .cdkd(&["state", "list", "--tree", "--json"])
        .success()
        .json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        listed[0]["children"][0]["children"][0]["stackName"], LEAF,
        "{listed}"
    );
    let shown = world
        .cdkd(&["state", "show", "TreeStack", "--show-nested", "--json"])
        .success()
        .json();
    assert_eq!(
        shown["children"][0]["children"][0]["state"]["stackName"],
        LEAF
    );

    let started = Instant::now();
    let again = world.cdkd(&["deploy", "-a", &app]).success().stdout;
    println!(
        "no-change deploy of a 3-level tree: {:.2}s",
        started.elapsed().as_secs_f64()
    );
    assert!(!again.contains(&format!("{MID}:")), "{again}");

    world.cdkd(&["destroy", "-a", &app, "-f"]).success();
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");

    // The leaf gets a resource Cloud Control cannot make: the leaf, then Mid, then the root
    // roll back what they made, and nothing is left.
    edit(
        &world
            .assembly
            .path()
            .join("TreeStackMidLeaf925861BD.nested.template.json"),
        |t| {
            t["Resources"]["Broken"] = json!({"Type": "AWS::Cdkd::Missing", "DependsOn": "Bottom0C6687A5", "Properties": {}});
        },
    );
    let failed = world.cdkd(&["deploy", "-a", &app]);
    assert_eq!(failed.code, Some(1), "{}", failed.stdout);
    assert!(failed.stderr.contains("rolled back"), "{}", failed.stderr);
    for stack in ["TreeStack", MID, LEAF] {
        let left = record(&world, stack);
        let resources = left["resources"].as_object().map_or(0, |r| r.len());
        assert_eq!(resources, 0, "{stack} kept {left}");
    }
    let topics = Emulator::shared().boto(
        "[t['TopicArn'] for t in c('sns').list_topics()['Topics'] if 'TreeStack' in t['TopicArn']]",
    );
    assert_eq!(topics, json!([]));
}
