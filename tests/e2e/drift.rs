//! `cdkd drift` and `cdkd state refresh-observed` on a real CDK app (tests/fixtures/apps/drift.js):
//! changes made with boto3 behind cdkd's back are found, reverted through the providers and
//! accepted into state; a resource deleted out of band and a type with no reader are reported
//! with their exit codes.

use std::collections::BTreeSet;

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{Emulator, Run};
use serde_json::{json, Value};

const STACK: &str = "DriftStack";

fn deploy(world: &AppWorld, extra: &[&str]) -> Run {
    let app = world.assembly.path().display().to_string();
    let mut args = vec!["deploy", "-a", &app];
    args.extend_from_slice(extra);
    world.cdkd(&args).success()
}

fn physical_id(world: &AppWorld, logical_id: &str) -> String {
    world.resources(STACK)[logical_id]["physicalId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The five out-of-band changes of the issue: a queue's visibility timeout, a tag on a bucket,
/// an inline policy added to a role, an ingress rule revoked, a function's memory.
fn tamper(world: &AppWorld) {
    let queue = physical_id(world, "Queue");
    let bucket = physical_id(world, "Bucket");
    let role = physical_id(world, "Role");
    let group = physical_id(world, "Group");
    let function = physical_id(world, "Fn");
    let sneaky = json!({"Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]})
    .to_string();
    Emulator::shared().boto(&format!(
        "[c('sqs').set_queue_attributes(QueueUrl='{queue}', Attributes={{'VisibilityTimeout': '77'}}), \
          c('s3').put_bucket_tagging(Bucket='{bucket}', Tagging={{'TagSet': [{{'Key': 'team', 'Value': 'platform'}}, {{'Key': 'extra', 'Value': '1'}}]}}), \
          c('iam').put_role_policy(RoleName='{role}', PolicyName='Sneaky', PolicyDocument={sneaky:?}), \
          c('ec2').revoke_security_group_ingress(GroupId='{group}', IpPermissions=[{{'IpProtocol': 'tcp', 'FromPort': 443, 'ToPort': 443, 'IpRanges': [{{'CidrIp': '10.0.0.0/16'}}]}}]), \
          c('lambda').update_function_configuration(FunctionName='{function}', MemorySize=512)] and None"
    ));
}

/// `cdkd drift --json`: the exit code and the one stack's report.
fn drift(world: &AppWorld) -> (Option<i32>, Value) {
    let run = world.cdkd(&["drift", STACK, "--json"]);
    let report = run.json();
    (run.code, report[0].clone())
}

fn ids(report: &Value, key: &str) -> BTreeSet<String> {
    report[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {report}"))
        .iter()
        .map(|r| r["logicalId"].as_str().unwrap().to_string())
        .collect()
}

fn change<'a>(report: &'a Value, logical_id: &str, path: &str) -> &'a Value {
    report["drifted"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["logicalId"] == logical_id)
        .and_then(|r| {
            r["changes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["path"] == path)
        })
        .unwrap_or_else(|| panic!("no change at {logical_id} {path} in {report}"))
}

/// What AWS holds for the five tampered settings.
fn aws_side(world: &AppWorld) -> Value {
    let queue = physical_id(world, "Queue");
    let bucket = physical_id(world, "Bucket");
    let role = physical_id(world, "Role");
    let group = physical_id(world, "Group");
    let function = physical_id(world, "Fn");
    Emulator::shared().boto(&format!(
        "{{'timeout': c('sqs').get_queue_attributes(QueueUrl='{queue}', AttributeNames=['VisibilityTimeout'])['Attributes']['VisibilityTimeout'], \
           'tags': sorted(t['Key'] for t in c('s3').get_bucket_tagging(Bucket='{bucket}')['TagSet']), \
           'policies': c('iam').list_role_policies(RoleName='{role}')['PolicyNames'], \
           'ports': sorted(p['FromPort'] for p in c('ec2').describe_security_groups(GroupIds=['{group}'])['SecurityGroups'][0]['IpPermissions']), \
           'memory': c('lambda').get_function_configuration(FunctionName='{function}')['MemorySize']}}"
    ))
}

#[test]
fn drift_is_found_reverted_and_accepted() {
    let world = AppWorld::of("drift", STACK, "drift", |_| {});
    deploy(&world, &[]);
    let (code, report) = drift(&world);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(ids(&report, "clean").len(), 11, "{report}");
    let untouched = aws_side(&world);

    tamper(&world);
    let (code, report) = drift(&world);
    assert_eq!(code, Some(1), "{report}");
    let drifted: Vec<&str> = vec!["Bucket", "Fn", "Group", "Queue", "Role"];
    assert_eq!(
        ids(&report, "drifted"),
        drifted.iter().map(|s| s.to_string()).collect()
    );
    let timeout = change(&report, "Queue", "VisibilityTimeout");
    assert_eq!(
        (&timeout["stateValue"], &timeout["awsValue"]),
        (&json!(30), &json!(77))
    );
    assert_eq!(change(&report, "Fn", "MemorySize")["awsValue"], json!(512));
    let policies = &change(&report, "Role", "Policies")["awsValue"];
    assert!(policies.to_string().contains("Sneaky"), "{policies}");
    // The standalone ingress rule on the same group is not the group's drift.
    let ingress = &change(&report, "Group", "SecurityGroupIngress")["awsValue"];
    assert_eq!(ingress, &json!([]), "{report}");
    let human = world.cdkd(&["drift", STACK]);
    assert_eq!(human.code, Some(1));
    assert!(
        human
            .stdout
            .contains("VisibilityTimeout: observed 30 -> live 77"),
        "{}",
        human.stdout
    );

    // --dry-run says what --revert would do and changes nothing (no confirmation asked).
    let rehearsed = world.cdkd(&["drift", STACK, "--revert", "--dry-run"]);
    assert_eq!(
        rehearsed.code,
        Some(1),
        "{}\n{}",
        rehearsed.stdout,
        rehearsed.stderr
    );
    assert!(
        rehearsed
            .stdout
            .contains(&format!("would revert {STACK}/Queue: VisibilityTimeout")),
        "{}",
        rehearsed.stdout
    );
    assert!(rehearsed.stdout.contains("(dry run: nothing changed)"));
    assert_eq!(drift(&world).0, Some(1), "the dry run reverted something");

    // --revert puts every setting back in AWS, and the next drift finds nothing.
    let reverted = world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    for id in &drifted {
        assert!(
            reverted.stdout.contains(&format!("reverted {STACK}/{id}")),
            "{}",
            reverted.stdout
        );
    }
    assert_eq!(aws_side(&world), untouched);
    assert_eq!(drift(&world).0, Some(0));

    // --accept takes AWS's values into state: drift is clean and diff would change them back.
    tamper(&world);
    world.cdkd(&["drift", STACK, "--accept", "--yes"]).success();
    let (code, report) = drift(&world);
    assert_eq!(code, Some(0), "{report}");
    assert_ne!(aws_side(&world), untouched, "accept changed AWS");
    let record = world.resources(STACK);
    assert_eq!(
        record["Queue"]["properties"]["VisibilityTimeout"],
        json!(77)
    );
    assert_eq!(
        record["Queue"]["observedProperties"]["VisibilityTimeout"],
        json!(77)
    );
    let app = world.assembly.path().display().to_string();
    let diff = world.cdkd(&["diff", "-a", &app]).success();
    assert!(diff.stdout.contains("5 to update"), "{}", diff.stdout);
    for id in &drifted {
        assert!(
            diff.stdout.contains(&format!(" {id}\n")),
            "{id}: {}",
            diff.stdout
        );
    }
}

#[test]
fn deleted_and_unreadable_resources_and_refresh_observed() {
    // An `Acme::Echo::Fault` (the test plugin) has no reader.
    let world = AppWorld::of("drift", STACK, "drift-gone", |t| {
        t["Resources"]["Opaque"] = json!({"Type": "Acme::Echo::Fault", "Properties": {}});
    });
    deploy(&world, &["--no-capture-observed-state"]);
    let record = world.resources(STACK);
    assert!(
        record["Queue"].get("observedProperties").is_none(),
        "{record}"
    );

    // Without a baseline drift compares with `properties`; nothing drifted, one unreadable.
    let (code, report) = drift(&world);
    assert_eq!(code, Some(2), "{report}");
    assert_eq!(
        ids(&report, "notSupported"),
        BTreeSet::from(["Opaque".to_string()])
    );

    let refreshed = world.cdkd(&["state", "refresh-observed", STACK]).success();
    assert!(
        refreshed
            .stdout
            .contains("11 refreshed, 1 without a reader"),
        "{}",
        refreshed.stdout
    );
    let record = world.resources(STACK);
    assert_eq!(
        record["Queue"]["observedProperties"]["VisibilityTimeout"],
        json!(30)
    );

    // Deleted outside cdkd: reported (exit 1), left alone by --revert unless asked.
    let bucket = physical_id(&world, "Bucket");
    Emulator::shared().boto(&format!(
        "c('s3').delete_bucket(Bucket='{bucket}') and None"
    ));
    let (code, report) = drift(&world);
    assert_eq!(code, Some(1), "{report}");
    assert_eq!(
        ids(&report, "deleted"),
        BTreeSet::from(["Bucket".to_string()])
    );
    let left = world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    assert!(left.stdout.contains("is left so"), "{}", left.stdout);
    assert!(world.resources(STACK).get("Bucket").is_some());
    let forgotten = world
        .cdkd(&["drift", STACK, "--revert", "--recreate-deleted", "--yes"])
        .success();
    assert!(
        forgotten
            .stdout
            .contains("run `cdkd deploy DriftStack` to create it again"),
        "{}",
        forgotten.stdout
    );
    assert!(world.resources(STACK).get("Bucket").is_none());
    let redeployed = deploy(&world, &[]);
    assert!(
        redeployed.stdout.contains("1 created"),
        "{}",
        redeployed.stdout
    );
    let bucket = physical_id(&world, "Bucket");
    let tags = Emulator::shared().boto(&format!(
        "c('s3').get_bucket_tagging(Bucket='{bucket}')['TagSet']"
    ));
    assert_eq!(tags, json!([{"Key": "team", "Value": "platform"}]));
    assert_eq!(drift(&world).0, Some(2));
}
