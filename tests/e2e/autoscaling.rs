//! The autoscaling plugin through `cdkd deploy` with a real CDK app
//! (tests/fixtures/apps/asg.js): an AutoScalingGroup from a launch template in a VPC's private
//! subnets behind an application load balancer's listener, with a target-tracking scaling
//! policy and a lifecycle hook; checked in the emulator's Auto
//! Scaling and in the state file, through a no-change deploy, an in-place update, drift, a
//! replacement, import and destroy.

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "AsgStack";
const ASG: &str = "AsgASGD1D7B4E2";
const TEMPLATE: &str = "Template576A9730";
const GROUP: &str = "LBHttpAsgGroup22BDA1E2";
const POLICY: &str = "AsgScalingPolicyCpu89550E50";
const HOOK: &str = "AsgLifecycleHookDrainF37A0330";

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn physical(world: &AppWorld, id: &str) -> String {
    world.resources(STACK)[id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} is not recorded"))
        .to_string()
}

fn deploy(world: &AppWorld) -> cdkd_tests::Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, STACK]).success()
}

/// The live group named `name` (null when Auto Scaling does not describe it).
fn group(name: &str) -> Value {
    aws(&format!(
        "(c('autoscaling').describe_auto_scaling_groups(AutoScalingGroupNames=['{name}'])['AutoScalingGroups'] or [None])[0]"
    ))
}

/// The scaling policies of group `name`.
fn policies(name: &str) -> Value {
    aws(&format!(
        "c('autoscaling').describe_policies(AutoScalingGroupName='{name}')['ScalingPolicies']"
    ))
}

/// The emulator's Auto Scaling calls since its stats were last cleared.
fn autoscaling_calls() -> Vec<String> {
    let stats = Emulator::shared().get("/_emulator/stats");
    stats
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("autoscaling:"))
        .cloned()
        .collect()
}

#[test]
fn an_auto_scaling_group_behind_a_load_balancer_deploys_through_the_plugin() {
    let world = AppWorld::of("asg", STACK, "asg", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    assert_eq!(resources[ASG]["provisionedBy"], "sdk", "{ASG}: {resources}");

    // The group: a name generated as CloudFormation does, its sizes, the launch template's
    // latest version, the two private subnets, the listener's target group, one instance.
    let name = physical(&world, ASG);
    assert!(name.starts_with("AsgStack-AsgASGD1D7B4E2-"), "{name}");
    let live = group(&name);
    assert_eq!(
        (live["MinSize"].clone(), live["MaxSize"].clone()),
        (json!(1), json!(3)),
        "{live}"
    );
    let template = physical(&world, TEMPLATE);
    assert_eq!(
        live["LaunchTemplate"]["LaunchTemplateId"],
        json!(template),
        "{live}"
    );
    let subnets: Vec<String> = [
        "VpcPrivateSubnet1Subnet536B997A",
        "VpcPrivateSubnet2Subnet3788AAA1",
    ]
    .iter()
    .map(|id| physical(&world, id))
    .collect();
    assert_eq!(
        live["VPCZoneIdentifier"],
        json!(subnets.join(",")),
        "{live}"
    );
    assert_eq!(live["TargetGroupARNs"], json!([physical(&world, GROUP)]));
    assert_eq!(live["Instances"].as_array().unwrap().len(), 1, "{live}");

    // The target-tracking policy: its ARN the physical id, its generated name and ARN recorded
    // for GetAtt, CPU at 50 % in the group.
    let policy = physical(&world, POLICY);
    let live_policy = policies(&name);
    assert_eq!(live_policy.as_array().unwrap().len(), 1, "{live_policy}");
    let live_policy = &live_policy[0];
    assert_eq!(live_policy["PolicyARN"], json!(policy));
    assert_eq!(live_policy["PolicyType"], "TargetTrackingScaling");
    assert_eq!(
        live_policy["TargetTrackingConfiguration"]["TargetValue"],
        json!(50.0)
    );
    let policy_name = live_policy["PolicyName"].as_str().unwrap();
    assert!(
        policy_name.starts_with("AsgStack-AsgScalingPolicyCpu89550E50-"),
        "{policy_name}"
    );
    let attributes = &resources[POLICY]["attributes"];
    assert_eq!(attributes["Arn"], json!(policy));
    assert_eq!(attributes["PolicyName"], json!(policy_name));

    // The termination hook: its generated name the physical id, found in the group.
    let hook = physical(&world, HOOK);
    assert!(
        hook.starts_with("AsgStack-AsgLifecycleHookDrainF37A0330-"),
        "{hook}"
    );
    let hooks = aws(&format!(
        "c('autoscaling').describe_lifecycle_hooks(AutoScalingGroupName='{name}')['LifecycleHooks']"
    ));
    assert_eq!(hooks.as_array().unwrap().len(), 1, "{hooks}");
    assert_eq!(hooks[0]["LifecycleHookName"], json!(hook));
    assert_eq!(
        hooks[0]["LifecycleTransition"],
        "autoscaling:EC2_INSTANCE_TERMINATING"
    );
    assert_eq!(hooks[0]["DefaultResult"], "CONTINUE");
    assert_eq!(hooks[0]["HeartbeatTimeout"], json!(300));

    // A second deploy changes nothing and makes no Auto Scaling call.
    Emulator::shared().delete("/_emulator/stats");
    let again = deploy(&world);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert_eq!(autoscaling_calls(), Vec::<String>::new());

    // In place: the maximum size and a tag propagated to instances; the policy's target.
    world.edit(|t| {
        t["Resources"][POLICY]["Properties"]["TargetTrackingConfiguration"]["TargetValue"] =
            json!(60);
        t["Resources"][ASG]["Properties"]["MaxSize"] = json!("4");
        t["Resources"][ASG]["Properties"]["Tags"] =
            json!([{"Key": "team", "Value": "web", "PropagateAtLaunch": true}]);
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}\n{}",
        updated.stdout,
        updated.stderr
    );
    assert_eq!(physical(&world, ASG), name);
    let live = group(&name);
    assert_eq!(live["MaxSize"], json!(4), "{live}");
    assert_eq!(live["Tags"][0]["Key"], "team", "{live}");
    assert_eq!(live["Tags"][0]["PropagateAtLaunch"], true, "{live}");
    assert_eq!(physical(&world, POLICY), policy);
    assert_eq!(
        policies(&name)[0]["TargetTrackingConfiguration"]["TargetValue"],
        json!(60.0)
    );

    // Drift: the maximum size changed outside cdkd is found by the plugin's reader, and
    // reverted.
    aws(&format!(
        "c('autoscaling').update_auto_scaling_group(AutoScalingGroupName='{name}', MaxSize=6) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(ASG) && drift.stdout.contains("MaxSize"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(group(&name)["MaxSize"], json!(4));

    // Create-only: a name replaces the group, and its policy (whose group is create-only) with
    // it; the old group is deleted with its instance.
    world.edit(|t| {
        t["Resources"][ASG]["Properties"]["AutoScalingGroupName"] = json!("asg-web-v2");
    });
    let replaced = deploy(&world);
    assert!(
        replaced.stdout.contains("replaced"),
        "{}\n{}",
        replaced.stdout,
        replaced.stderr
    );
    assert_eq!(physical(&world, ASG), "asg-web-v2");
    assert_eq!(group("asg-web-v2")["MaxSize"], json!(4));
    assert_eq!(group(&name), Value::Null);
    let new_policy = physical(&world, POLICY);
    assert_ne!(new_policy, policy);
    assert_eq!(policies("asg-web-v2")[0]["PolicyARN"], json!(new_policy));

    // Destroy leaves no group of the stack (the forced delete took its instance).
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(group("asg-web-v2"), Value::Null);
    assert_eq!(policies("asg-web-v2"), json!([]));
}

fn call_with(type_name: &str, operation: &str, args: &[&str]) -> cdkd_tests::Run {
    let mut all = vec!["providers", "call", type_name, operation];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

#[test]
fn a_group_made_outside_cdkd_is_imported_and_read() {
    let made = aws(
        "(lambda e: (lambda v: (lambda s: e.create_launch_template(LaunchTemplateName='handmade-lt', LaunchTemplateData={'ImageId': e.describe_images()['Images'][0]['ImageId'], 'InstanceType': 't3.micro'})['LaunchTemplate']['LaunchTemplateId'] + ' ' + s)(e.create_subnet(VpcId=v, CidrBlock='10.8.1.0/24')['Subnet']['SubnetId']))(e.create_vpc(CidrBlock='10.8.0.0/16')['Vpc']['VpcId']))(c('ec2'))",
    );
    let made = made.as_str().unwrap().to_string();
    let (template, subnet) = made.split_once(' ').unwrap();
    aws(&format!(
        "c('autoscaling').create_auto_scaling_group(AutoScalingGroupName='handmade-asg', MinSize=0, MaxSize=2, LaunchTemplate={{'LaunchTemplateId': '{template}', 'Version': '1'}}, VPCZoneIdentifier='{subnet}', Tags=[{{'Key': 'team', 'Value': 'ops', 'PropagateAtLaunch': False}}]) and None"
    ));
    let imported = call_with(
        "AWS::AutoScaling::AutoScalingGroup",
        "import",
        &["--physical-id", "handmade-asg"],
    )
    .success()
    .json();
    assert_eq!(imported["physicalId"], json!("handmade-asg"), "{imported}");
    let read = call_with(
        "AWS::AutoScaling::AutoScalingGroup",
        "read_current_state",
        &["--physical-id", "handmade-asg"],
    )
    .success()
    .json();
    let properties = &read["properties"];
    assert_eq!(properties["MaxSize"], "2", "{read}");
    assert_eq!(properties["MinSize"], "0", "{read}");
    assert_eq!(properties["VPCZoneIdentifier"], json!([subnet]), "{read}");
    assert_eq!(
        properties["Tags"],
        json!([{"Key": "team", "Value": "ops", "PropagateAtLaunch": false}]),
        "{read}"
    );
    let missing = call_with(
        "AWS::AutoScaling::AutoScalingGroup",
        "import",
        &["--physical-id", "no-such-asg"],
    );
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    aws("c('autoscaling').delete_auto_scaling_group(AutoScalingGroupName='handmade-asg', ForceDelete=True) and None");
}

#[test]
fn a_launch_configuration_made_outside_cdkd_is_imported_and_read() {
    aws("c('autoscaling').create_launch_configuration(LaunchConfigurationName='handmade-lc', ImageId=c('ec2').describe_images()['Images'][0]['ImageId'], InstanceType='t3.micro', InstanceMonitoring={'Enabled': False}) and None");
    let imported = call_with(
        "AWS::AutoScaling::LaunchConfiguration",
        "import",
        &["--physical-id", "handmade-lc"],
    )
    .success()
    .json();
    assert_eq!(imported["physicalId"], json!("handmade-lc"), "{imported}");
    let read = call_with(
        "AWS::AutoScaling::LaunchConfiguration",
        "read_current_state",
        &["--physical-id", "handmade-lc"],
    )
    .success()
    .json();
    assert_eq!(read["properties"]["InstanceType"], "t3.micro", "{read}");
    assert_eq!(read["properties"]["InstanceMonitoring"], false, "{read}");
    let missing = call_with(
        "AWS::AutoScaling::LaunchConfiguration",
        "import",
        &["--physical-id", "no-such-lc"],
    );
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    aws("c('autoscaling').delete_launch_configuration(LaunchConfigurationName='handmade-lc') and None");
}
