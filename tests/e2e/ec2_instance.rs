//! `AWS::EC2::Instance` through the ec2 plugin, with the reference benchmark's EC2 stack
//! (tests/fixtures/cdk.out/reference, RefEc2Stack: a VPC, a security group, a role and three
//! instances, each with its own instance profile). Under the emulator's AWS timing profile a
//! fresh instance profile is refused by RunInstances while IAM propagates it: the deploy waits
//! that out and every instance comes up `running` with its profile and tags; destroy
//! terminates them. A RunInstances whose answer is lost is sent again with the same client
//! token and makes no second instance; tags, SourceDestCheck and the shutdown behaviour change
//! in place and an InstanceType change is refused by name; `--no-wait` answers while the
//! instance is `pending`. An instance AWS launched without the profile it asked for (the
//! emulator's `freshInstanceProfile: launch-without`) is terminated and never recorded, and the
//! next deploy makes it again with its profile. The tests take turns: the profile is the
//! emulator's.

use cdkd_tests::{one_at_a_time, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "RefEc2Stack";
const SUBNET: &str = "VpcPublicSubnet1Subnet5C2D37C4";
const INSTANCES: [(&str, &str, &str); 3] = [
    (
        "Instance14BC3991D",
        "Instance1InstanceProfileC04770B7",
        "RefEc2Stack/Instance1",
    ),
    (
        "Instance255F35265",
        "Instance2InstanceProfile582F915C",
        "RefEc2Stack/Instance2",
    ),
    (
        "Instance3565E6AE1",
        "Instance3InstanceProfile7402A21B",
        "RefEc2Stack/Instance3",
    ),
];

fn describe(id: &str) -> Value {
    Emulator::shared().boto(&format!(
        "c('ec2').describe_instances(InstanceIds=['{id}'])['Reservations'][0]['Instances'][0]"
    ))
}

/// The instances in `subnet` not terminated or terminating.
fn live_in(subnet: &str) -> Vec<String> {
    instance_ids(
        &format!("Filters=[{{'Name': 'subnet-id', 'Values': ['{subnet}']}}]"),
        "i['State']['Name'] not in ('terminated', 'shutting-down')",
    )
}

/// Every instance id the emulator describes, whatever its state.
fn all_instances() -> Vec<String> {
    instance_ids("", "True")
}

/// The ids of the instances `describe_instances({args})` answers for which `keep`, a Python
/// condition on the instance `i`, holds.
fn instance_ids(args: &str, keep: &str) -> Vec<String> {
    let ids = Emulator::shared().boto(&format!(
        "[i['InstanceId'] for r in c('ec2').describe_instances({args})['Reservations'] for i in r['Instances'] if {keep}]"
    ));
    ids.as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_str().unwrap().to_string())
        .collect()
}

fn state(world: &AppWorld) -> Value {
    world
        .cdkd(&["state", "show", STACK, "--json"])
        .success()
        .json()["state"]
        .clone()
}

fn physical_id(resources: &Value, logical_id: &str) -> String {
    resources[logical_id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{logical_id} is not recorded: {resources}"))
        .to_string()
}

/// The number of RunInstances calls the emulator has answered so far.
fn run_instances_calls() -> u64 {
    Emulator::shared().get("/_emulator/stats")["ec2:RunInstances"]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn instances_wait_out_their_profiles_propagation_and_come_up_running_with_them() {
    let _turn = one_at_a_time();
    // AWS's times at a quarter: a fresh profile refused for 2 s, an instance running 2 s after
    // its launch and terminated 2 s after its termination.
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"profile": "aws", "timeScale": 0.25, "timingOverrides": {
            "iam_role_propagation_ms": 0, "iam_instance_profile_propagation_ms": 8000,
            "ec2_instance_ready_ms": 8000, "ec2_instance_terminate_ms": 8000}}),
    );
    let world = AppWorld::of("reference", STACK, "ec2inst", |_| {});
    let app = world.assembly.path().display().to_string();
    let before = run_instances_calls();
    let deployed = world.cdkd(&["deploy", "-a", &app, STACK]);
    let calls = run_instances_calls() - before;
    Emulator::shared().post("/_emulator/config", &json!({"profile": "off"}));
    deployed.success();
    // Each instance was refused at least once while its profile propagated, then launched.
    assert!(
        calls > 3,
        "{calls} RunInstances calls: the profile was never refused"
    );

    let shown = world
        .cdkd(&["providers", "show", "AWS::EC2::Instance", "--json"])
        .success()
        .json();
    assert_eq!(shown["plugin"]["name"], "ec2", "{shown:#}");
    let recorded = state(&world);
    let resources = &recorded["resources"];
    let mut ids = Vec::new();
    for (logical_id, profile_id, name) in INSTANCES {
        let record = &resources[logical_id];
        assert_eq!(record["provisionedBy"], "sdk", "{logical_id}: {record:#}");
        let id = physical_id(resources, logical_id);
        assert!(id.starts_with("i-"), "{id}");
        assert_eq!(record["attributes"]["InstanceId"], json!(id), "{record:#}");
        assert!(record["attributes"]["PrivateIp"].is_string(), "{record:#}");
        let live = describe(&id);
        // The create waited for `running` (the default wait).
        assert_eq!(live["State"]["Name"], "running", "{live:#}");
        let profile = physical_id(resources, profile_id);
        let arn = live["IamInstanceProfile"]["Arn"]
            .as_str()
            .unwrap_or_default();
        assert!(
            arn.ends_with(&format!("/{profile}")),
            "{logical_id} lacks its profile {profile}: {live:#}"
        );
        let tags: Vec<(String, String)> = live["Tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["Key"].as_str().unwrap().to_string(),
                    t["Value"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert!(
            tags.contains(&("Name".into(), name.into())),
            "{logical_id}: {tags:?}"
        );
        assert!(
            tags.iter().any(|(k, _)| k == "cdkd:create-token"),
            "{logical_id}: {tags:?}"
        );
        ids.push(id);
    }
    let subnet = physical_id(resources, SUBNET);
    let mut live = live_in(&subnet);
    live.sort();
    ids.sort();
    assert_eq!(live, ids, "one instance per logical id");

    world.cdkd(&["destroy", STACK, "-a", &app, "-f"]).success();
    for id in &ids {
        assert_eq!(describe(id)["State"]["Name"], "terminated", "{id}");
    }
}

#[test]
fn a_run_instances_whose_answer_is_lost_makes_no_second_instance() {
    let _turn = one_at_a_time();
    let world = AppWorld::of("reference", STACK, "ec2lost", |t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.retain(|id, _| !id.starts_with("Instance2") && !id.starts_with("Instance3"));
    });
    let app = world.assembly.path().display().to_string();
    // The first RunInstances lands and its answer is lost (a 500 after the launch): the retry
    // carries the same client token, and EC2 answers the instance the first call made.
    Emulator::shared().faults(json!([{"action": "RunInstances", "status": 500,
        "code": "InternalFailure", "count": 1, "passThrough": true}]));
    let deployed = world.cdkd(&["deploy", "-a", &app, STACK]);
    let hits = Emulator::shared().fault_hits();
    Emulator::shared().faults(json!([]));
    deployed.success();
    assert_eq!(hits, vec![1], "the lost answer was seen");
    let recorded = state(&world);
    let resources = &recorded["resources"];
    let id = physical_id(resources, INSTANCES[0].0);
    let subnet = physical_id(resources, SUBNET);
    assert_eq!(
        live_in(&subnet),
        vec![id.clone()],
        "a second instance was launched"
    );

    // In place: a tag, SourceDestCheck and the shutdown behaviour change on the same instance.
    let instance = INSTANCES[0].0;
    world.edit(|t| {
        let props = &mut t["Resources"][instance]["Properties"];
        props["Tags"] = json!([{"Key": "Name", "Value": "renamed"}, {"Key": "team", "Value": "a"}]);
        props["SourceDestCheck"] = json!(false);
        props["InstanceInitiatedShutdownBehavior"] = json!("terminate");
    });
    world.cdkd(&["deploy", "-a", &app, STACK]).success();
    assert_eq!(world.physical(instance), id, "the instance was replaced");
    let live = describe(&id);
    assert_eq!(live["SourceDestCheck"], false, "{live:#}");
    let mut tags: Vec<String> = live["Tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{}={}",
                t["Key"].as_str().unwrap(),
                t["Value"].as_str().unwrap()
            )
        })
        .filter(|t| !t.starts_with("cdkd:"))
        .collect();
    tags.sort();
    assert_eq!(tags, ["Name=renamed", "team=a"]);
    let behavior = Emulator::shared().boto(&format!(
        "c('ec2').describe_instance_attribute(InstanceId='{id}', Attribute='instanceInitiatedShutdownBehavior')['InstanceInitiatedShutdownBehavior']['Value']"
    ));
    assert_eq!(behavior, "terminate");
    // A change CloudFormation makes by stopping the instance is refused, naming the property.
    world.edit(|t| t["Resources"][instance]["Properties"]["InstanceType"] = json!("t3.small"));
    let refused = world.cdkd(&["deploy", "-a", &app, STACK]);
    assert_ne!(refused.code, Some(0), "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("InstanceType needs the instance stopped")
            || refused
                .stdout
                .contains("InstanceType needs the instance stopped"),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    assert_eq!(live_in(&subnet), vec![id.clone()]);
    world.cdkd(&["destroy", STACK, "-a", &app, "-f"]).success();
    assert!(live_in(&subnet).is_empty());
    assert_eq!(describe(&id)["State"]["Name"], "terminated");
}

#[test]
fn no_wait_answers_while_the_instance_is_pending() {
    let _turn = one_at_a_time();
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"profile": "aws", "timeScale": 0.25, "timingOverrides": {
            "iam_role_propagation_ms": 0, "iam_instance_profile_propagation_ms": 0,
            "ec2_instance_ready_ms": 40000, "ec2_instance_terminate_ms": 4000}}),
    );
    let world = AppWorld::of("reference", STACK, "ec2nowait", |t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.retain(|id, _| !id.starts_with("Instance2") && !id.starts_with("Instance3"));
    });
    let app = world.assembly.path().display().to_string();
    let deployed = world.cdkd(&["deploy", "-a", &app, STACK, "--no-wait"]);
    let state_after = deployed
        .code
        .filter(|c| *c == 0)
        .map(|_| describe(&world.physical(INSTANCES[0].0))["State"]["Name"].clone());
    Emulator::shared().post("/_emulator/config", &json!({"profile": "off"}));
    deployed.success();
    // AWS's 40 s at a quarter: still pending when the deploy has answered.
    assert_eq!(state_after, Some(json!("pending")));
    world.cdkd(&["destroy", STACK, "-a", &app, "-f"]).success();
}

#[test]
fn an_instance_launched_without_its_profile_is_terminated_and_never_recorded() {
    let _turn = one_at_a_time();
    // AWS sometimes launches an instance without a profile it has not propagated yet, where it
    // usually refuses it: the emulator does the former while the profile is 2 s old.
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"profile": "aws", "timeScale": 0.25, "freshInstanceProfile": "launch-without",
            "timingOverrides": {
            "iam_role_propagation_ms": 0, "iam_instance_profile_propagation_ms": 8000,
            "ec2_instance_ready_ms": 4000, "ec2_instance_terminate_ms": 4000}}),
    );
    Emulator::shared().delete("/_emulator/refusals");
    let world = AppWorld::of("reference", STACK, "ec2silent", |t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.retain(|id, _| !id.starts_with("Instance2") && !id.starts_with("Instance3"));
    });
    let app = world.assembly.path().display().to_string();
    let before = all_instances();
    let failed = world.cdkd(&["deploy", "-a", &app, STACK, "--no-rollback"]);
    let silent = Emulator::shared().get("/_emulator/refusals")
        ["ec2:RunInstances without its profile"]
        .as_u64()
        .unwrap_or(0);
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"freshInstanceProfile": "refuse"}),
    );
    let (logical_id, profile_id, _) = INSTANCES[0];
    assert_ne!(
        failed.code,
        Some(0),
        "the deploy succeeded: {}",
        failed.stderr
    );
    assert_eq!(silent, 1, "RunInstances never launched without the profile");
    for part in [
        logical_id,
        "came up without its instance profile",
        "terminated)",
    ] {
        assert!(
            failed.stderr.contains(part),
            "no {part:?} in: {}",
            failed.stderr
        );
    }
    // The instance EC2 launched is terminating, without a profile, and not in the state.
    let launched: Vec<String> = all_instances()
        .into_iter()
        .filter(|id| !before.contains(id))
        .collect();
    assert_eq!(launched.len(), 1, "{launched:?}");
    let silent_instance = describe(&launched[0]);
    assert!(
        ["shutting-down", "terminated"]
            .contains(&silent_instance["State"]["Name"].as_str().unwrap()),
        "{silent_instance:#}"
    );
    assert!(
        silent_instance.get("IamInstanceProfile").is_none(),
        "{silent_instance:#}"
    );
    let recorded = state(&world);
    assert!(
        recorded["resources"].get(logical_id).is_none(),
        "the instance launched without its profile was recorded: {recorded:#}"
    );
    let profile = physical_id(&recorded["resources"], profile_id);

    // The next deploy, the profile refused while it propagates as usual, launches it with it.
    let resumed = world.cdkd(&["deploy", "-a", &app, STACK]);
    Emulator::shared().post("/_emulator/config", &json!({"profile": "off"}));
    resumed.success();
    let id = world.physical(logical_id);
    assert_ne!(id, launched[0]);
    let live = describe(&id);
    assert_eq!(live["State"]["Name"], "running", "{live:#}");
    let arn = live["IamInstanceProfile"]["Arn"]
        .as_str()
        .unwrap_or_default();
    assert!(arn.ends_with(&format!("/{profile}")), "{live:#}");
    let subnet = world.physical(SUBNET);
    assert_eq!(
        live_in(&subnet),
        vec![id.clone()],
        "one instance per logical id"
    );
    world.cdkd(&["destroy", STACK, "-a", &app, "-f"]).success();
    assert!(live_in(&subnet).is_empty());
}
