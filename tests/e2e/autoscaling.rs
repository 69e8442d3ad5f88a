//! The autoscaling plugin through `cdkd deploy` with real CDK apps: tests/fixtures/apps/asg.js
//! (an AutoScalingGroup from a launch template in a VPC's private subnets behind an application
//! load balancer's listener, with a target-tracking scaling policy and a lifecycle hook) and
//! tests/fixtures/apps/appscaling.js (a DynamoDB table's capacities under Application Auto
//! Scaling: scalable targets, target-tracking and step policies, a scheduled action); checked in
//! the emulator and in the state file, through a no-change deploy, an in-place update, drift, a
//! replacement, import and destroy.

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "AsgStack";
const ASG: &str = "AsgASGD1D7B4E2";
const TEMPLATE: &str = "Template576A9730";
const GROUP: &str = "LBHttpAsgGroup22BDA1E2";
const POLICY: &str = "AsgScalingPolicyCpu89550E50";
const HOOK: &str = "AsgLifecycleHookDrainF37A0330";
const SPOT: &str = "SpotASGB094C35E";
const EVENTS: &str = "ScalingEventsC82541C1";

/// The emulator's call counts are shared by the tests of this binary: a test counting calls
/// must not see another's, so the tests run one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    cdkd_tests::one_at_a_time()
}

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
    let _serial = serial();
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

    // The mixed group: its instance types, on-demand and spot split, and its SNS
    // notifications, all on the plugin (issue 48: such a group went to Cloud Control).
    assert_eq!(
        resources[SPOT]["provisionedBy"], "sdk",
        "{}",
        resources[SPOT]
    );
    let spot = physical(&world, SPOT);
    let topic = physical(&world, EVENTS);
    let mixed = group(&spot)["MixedInstancesPolicy"].clone();
    assert_eq!(
        mixed["LaunchTemplate"]["Overrides"],
        json!([{"InstanceType": "t3.micro"}, {"InstanceType": "t3a.micro", "WeightedCapacity": "1"}]),
        "{mixed}"
    );
    assert_eq!(
        mixed["InstancesDistribution"]["OnDemandPercentageAboveBaseCapacity"],
        json!(25),
        "{mixed}"
    );
    let notified = || {
        aws(&format!(
            "sorted((n['TopicARN'], n['NotificationType']) for n in c('autoscaling').describe_notification_configurations(AutoScalingGroupNames=['{spot}'])['NotificationConfigurations'])"
        ))
    };
    assert_eq!(
        notified(),
        json!([
            [topic, "autoscaling:EC2_INSTANCE_LAUNCH"],
            [topic, "autoscaling:EC2_INSTANCE_LAUNCH_ERROR"]
        ])
    );

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
        let spot = &mut t["Resources"][SPOT]["Properties"];
        spot["MixedInstancesPolicy"]["InstancesDistribution"]
            ["OnDemandPercentageAboveBaseCapacity"] = json!(50);
        spot["NotificationConfigurations"][0]["NotificationTypes"] =
            json!(["autoscaling:EC2_INSTANCE_TERMINATE"]);
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("3 updated, 0 replaced"),
        "{}\n{}",
        updated.stdout,
        updated.stderr
    );
    assert_eq!(physical(&world, ASG), name);
    assert_eq!(
        group(&spot)["MixedInstancesPolicy"]["InstancesDistribution"]
            ["OnDemandPercentageAboveBaseCapacity"],
        json!(50)
    );
    assert_eq!(
        notified(),
        json!([[topic, "autoscaling:EC2_INSTANCE_TERMINATE"]])
    );
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
    assert_eq!(group(&spot), Value::Null);
    assert_eq!(notified(), json!([]));
}

fn call_with(type_name: &str, operation: &str, args: &[&str]) -> cdkd_tests::Run {
    let mut all = vec!["providers", "call", type_name, operation];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

#[test]
fn a_group_made_outside_cdkd_is_imported_and_read() {
    let _serial = serial();
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
    let _serial = serial();
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

    // The plugin's own create sends the volumes and IMDS options CDK sets (issue 48: such a
    // launch configuration went to Cloud Control), and reads them back as written.
    let image = aws("c('ec2').describe_images()['Images'][0]['ImageId']");
    let properties = json!({
        "LaunchConfigurationName": "plugin-lc",
        "ImageId": image,
        "InstanceType": "t3.micro",
        "BlockDeviceMappings": [{"DeviceName": "/dev/xvda",
            "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": true}}],
        "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 2},
    });
    call_with(
        "AWS::AutoScaling::LaunchConfiguration",
        "create",
        &["--properties", &properties.to_string()],
    )
    .success();
    let live = aws("c('autoscaling').describe_launch_configurations(LaunchConfigurationNames=['plugin-lc'])['LaunchConfigurations'][0]");
    assert_eq!(live["MetadataOptions"]["HttpTokens"], "required", "{live}");
    assert_eq!(
        live["BlockDeviceMappings"][0]["Ebs"]["VolumeSize"],
        json!(20),
        "{live}"
    );
    let read = call_with(
        "AWS::AutoScaling::LaunchConfiguration",
        "read_current_state",
        &["--physical-id", "plugin-lc"],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"]["BlockDeviceMappings"], properties["BlockDeviceMappings"],
        "{read}"
    );
    assert_eq!(
        read["properties"]["MetadataOptions"], properties["MetadataOptions"],
        "{read}"
    );
    aws("c('autoscaling').delete_launch_configuration(LaunchConfigurationName='plugin-lc') and None");
}

const APP_STACK: &str = "AppScalingStack";
const TABLE: &str = "OrdersA9B65338";
const READ_TARGET: &str = "OrdersReadScalingTarget32EBA317";
const READ_POLICY: &str = "OrdersReadScalingTargetTracking6B8F4E06";
const WRITE_TARGET: &str = "OrdersWriteScalingTarget2A2748FC";
const WRITE_POLICY: &str = "OrdersWriteScalingTargetTrackingB551FBE5";
const INDEX_TARGET: &str = "IndexWrites0BB41F43";
const LOWER_POLICY: &str = "IndexWritesIndexWriteStepsLowerPolicy99BFF696";
const UPPER_POLICY: &str = "IndexWritesIndexWriteStepsUpperPolicyBFD9B4C1";
const READS: &str = "dynamodb:table:ReadCapacityUnits";
const WRITES: &str = "dynamodb:table:WriteCapacityUnits";

fn app_physical(world: &AppWorld, id: &str) -> String {
    world.resources(APP_STACK)[id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} is not recorded"))
        .to_string()
}

fn deploy_app(world: &AppWorld) -> cdkd_tests::Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, APP_STACK]).success()
}

/// The live scalable target of `resource` and `dimension` (null when none is registered).
fn scalable_target(resource: &str, dimension: &str) -> Value {
    aws(&format!(
        "([t for t in c('application-autoscaling').describe_scalable_targets(ServiceNamespace='dynamodb', ResourceIds=['{resource}'])['ScalableTargets'] if t['ScalableDimension'] == '{dimension}'] or [None])[0]"
    ))
}

/// The live Application Auto Scaling policy of ARN `arn` (null when there is none).
fn app_policy(arn: &str) -> Value {
    aws(&format!(
        "([p for p in c('application-autoscaling').describe_scaling_policies(ServiceNamespace='dynamodb')['ScalingPolicies'] if p['PolicyARN'] == '{arn}'] or [None])[0]"
    ))
}

#[test]
fn a_tables_application_auto_scaling_deploys_through_the_plugin() {
    let _serial = serial();
    let world = AppWorld::of("appscaling", APP_STACK, "appscaling", |_| {});
    let first = deploy_app(&world);
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(APP_STACK);
    for id in [
        READ_TARGET,
        READ_POLICY,
        WRITE_TARGET,
        WRITE_POLICY,
        INDEX_TARGET,
        LOWER_POLICY,
        UPPER_POLICY,
    ] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }

    // The targets: CloudFormation's resourceId|scalableDimension|serviceNamespace, recorded as
    // their Id too; capacities and the write target's scheduled action as written.
    let table = app_physical(&world, TABLE);
    let resource = format!("table/{table}");
    let read_target = app_physical(&world, READ_TARGET);
    assert_eq!(read_target, format!("{resource}|{READS}|dynamodb"));
    assert_eq!(
        resources[READ_TARGET]["attributes"]["Id"],
        json!(read_target)
    );
    let live = scalable_target(&resource, READS);
    assert_eq!(
        (live["MinCapacity"].clone(), live["MaxCapacity"].clone()),
        (json!(2), json!(20)),
        "{live}"
    );
    let writes = scalable_target(&resource, WRITES);
    assert_eq!(
        (writes["MinCapacity"].clone(), writes["MaxCapacity"].clone()),
        (json!(2), json!(10)),
        "{writes}"
    );
    assert_eq!(
        app_physical(&world, INDEX_TARGET),
        format!("{resource}/index/byOwner|dynamodb:index:WriteCapacityUnits|dynamodb")
    );
    let actions = aws(&format!(
        "[(a['ScheduledActionName'], a['Schedule'], a['ScalableTargetAction']) for a in c('application-autoscaling').describe_scheduled_actions(ServiceNamespace='dynamodb', ResourceId='{resource}')['ScheduledActions']]"
    ));
    assert_eq!(
        actions,
        json!([["MorningRush", "cron(0 8 * * ? *)", {"MinCapacity": 5}]])
    );

    // The policies: their ARNs, target tracking on each table target, two step policies on the
    // index's.
    let read_policy = app_physical(&world, READ_POLICY);
    assert_eq!(
        resources[READ_POLICY]["attributes"]["Arn"],
        json!(read_policy)
    );
    let live = app_policy(&read_policy);
    assert_eq!(
        live["TargetTrackingScalingPolicyConfiguration"],
        json!({"TargetValue": 70.0, "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"}})
    );
    assert_eq!(
        app_policy(&app_physical(&world, WRITE_POLICY))["TargetTrackingScalingPolicyConfiguration"]
            ["ScaleInCooldown"],
        120
    );
    let upper = app_policy(&app_physical(&world, UPPER_POLICY));
    assert_eq!(upper["PolicyType"], "StepScaling");
    assert_eq!(
        upper["StepScalingPolicyConfiguration"]["StepAdjustments"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{upper}"
    );

    // No drift right after the deploy, and a second deploy changes nothing and makes no
    // Application Auto Scaling call.
    let clean = world.cdkd(&["drift", APP_STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    Emulator::shared().delete("/_emulator/stats");
    let again = deploy_app(&world);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert_eq!(
        Emulator::shared().calls("application-autoscaling:"),
        Vec::<String>::new()
    );

    // In place: the read target's maximum, the read policy's target value (its ARN kept), the
    // scheduled action's capacity.
    world.edit(|t| {
        t["Resources"][READ_TARGET]["Properties"]["MaxCapacity"] = json!(40);
        t["Resources"][READ_POLICY]["Properties"]["TargetTrackingScalingPolicyConfiguration"]
            ["TargetValue"] = json!(50);
        t["Resources"][WRITE_TARGET]["Properties"]["ScheduledActions"][0]["ScalableTargetAction"]
            ["MinCapacity"] = json!(6);
    });
    let updated = deploy_app(&world);
    assert!(
        updated.stdout.contains("3 updated, 0 replaced"),
        "{}\n{}",
        updated.stdout,
        updated.stderr
    );
    assert_eq!(app_physical(&world, READ_TARGET), read_target);
    assert_eq!(app_physical(&world, READ_POLICY), read_policy);
    assert_eq!(scalable_target(&resource, READS)["MaxCapacity"], 40);
    assert_eq!(
        app_policy(&read_policy)["TargetTrackingScalingPolicyConfiguration"]["TargetValue"],
        50.0
    );
    assert_eq!(
        aws(&format!(
            "[a['ScalableTargetAction'] for a in c('application-autoscaling').describe_scheduled_actions(ServiceNamespace='dynamodb', ResourceId='{resource}')['ScheduledActions']]"
        )),
        json!([{"MinCapacity": 6}])
    );

    // Drift: the read target's maximum and the read policy's target value changed outside cdkd
    // are found by the plugin's readers, and reverted.
    aws(&format!(
        "(lambda a: a.register_scalable_target(ServiceNamespace='dynamodb', ResourceId='{resource}', ScalableDimension='{READS}', MaxCapacity=99) and a.put_scaling_policy(PolicyName=[p for p in a.describe_scaling_policies(ServiceNamespace='dynamodb')['ScalingPolicies'] if p['PolicyARN'] == '{read_policy}'][0]['PolicyName'], ServiceNamespace='dynamodb', ResourceId='{resource}', ScalableDimension='{READS}', PolicyType='TargetTrackingScaling', TargetTrackingScalingPolicyConfiguration={{'TargetValue': 90.0, 'PredefinedMetricSpecification': {{'PredefinedMetricType': 'DynamoDBReadCapacityUtilization'}}}}) and None)(c('application-autoscaling'))"
    ));
    let drift = world.cdkd(&["drift", APP_STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    for expected in [READ_TARGET, "MaxCapacity", READ_POLICY, "TargetValue"] {
        assert!(
            drift.stdout.contains(expected),
            "{expected}: {}",
            drift.stdout
        );
    }
    world
        .cdkd(&["drift", APP_STACK, "--revert", "--yes"])
        .success();
    let clean = world.cdkd(&["drift", APP_STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(scalable_target(&resource, READS)["MaxCapacity"], 40);

    // Create-only: a new policy name replaces the policy (a new ARN), the old one is gone.
    world.edit(|t| {
        t["Resources"][READ_POLICY]["Properties"]["PolicyName"] = json!("orders-reads-v2");
    });
    let replaced = deploy_app(&world);
    assert!(
        replaced.stdout.contains("replaced"),
        "{}\n{}",
        replaced.stdout,
        replaced.stderr
    );
    let new_policy = app_physical(&world, READ_POLICY);
    assert!(
        new_policy.ends_with(":policyName/orders-reads-v2"),
        "{new_policy}"
    );
    assert_eq!(app_policy(&new_policy)["PolicyName"], "orders-reads-v2");
    assert_eq!(app_policy(&read_policy), Value::Null);

    // Destroy leaves no scalable target and no policy.
    let app = world.assembly.path().display().to_string();
    world
        .cdkd(&["destroy", "-a", &app, APP_STACK, "-f"])
        .success();
    assert_eq!(
        aws(&format!(
            "[t['ResourceId'] for t in c('application-autoscaling').describe_scalable_targets(ServiceNamespace='dynamodb')['ScalableTargets'] if t['ResourceId'].startswith('{resource}')]"
        )),
        json!([])
    );
    assert_eq!(
        aws(&format!(
            "[p['PolicyName'] for p in c('application-autoscaling').describe_scaling_policies(ServiceNamespace='dynamodb')['ScalingPolicies'] if p['ResourceId'].startswith('{resource}')]"
        )),
        json!([])
    );
}

#[test]
fn a_scalable_target_and_policy_made_outside_cdkd_are_imported_read_and_created_once() {
    let _serial = serial();
    aws("c('dynamodb').create_table(TableName='handmade-orders', KeySchema=[{'AttributeName': 'pk', 'KeyType': 'HASH'}], AttributeDefinitions=[{'AttributeName': 'pk', 'AttributeType': 'S'}], ProvisionedThroughput={'ReadCapacityUnits': 1, 'WriteCapacityUnits': 1}) and None");
    aws(&format!("c('application-autoscaling').register_scalable_target(ServiceNamespace='dynamodb', ResourceId='table/handmade-orders', ScalableDimension='{READS}', MinCapacity=1, MaxCapacity=4, Tags={{'team': 'ops'}}) and None"));
    let arn = aws(&format!("c('application-autoscaling').put_scaling_policy(PolicyName='handmade-steps', ServiceNamespace='dynamodb', ResourceId='table/handmade-orders', ScalableDimension='{READS}', PolicyType='StepScaling', StepScalingPolicyConfiguration={{'AdjustmentType': 'ChangeInCapacity', 'StepAdjustments': [{{'MetricIntervalLowerBound': 0.0, 'ScalingAdjustment': 1}}]}})['PolicyARN']"));
    let arn = arn.as_str().unwrap().to_string();
    let target_id = format!("table/handmade-orders|{READS}|dynamodb");

    // Import and read: the target in template shape with its tags, the policy with its target
    // named by the three properties (it was made without a ScalingTargetId).
    let imported = call_with(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "import",
        &["--physical-id", &target_id],
    )
    .success()
    .json();
    assert_eq!(imported["attributes"]["Id"], json!(target_id), "{imported}");
    let read = call_with(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "read_current_state",
        &["--physical-id", &target_id],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"],
        json!({
            "ResourceId": "table/handmade-orders",
            "ScalableDimension": READS,
            "ServiceNamespace": "dynamodb",
            "MinCapacity": 1,
            "MaxCapacity": 4,
            "Tags": [{"Key": "team", "Value": "ops"}],
        })
    );
    let imported = call_with(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "import",
        &["--physical-id", &arn],
    )
    .success()
    .json();
    assert_eq!(imported["attributes"]["Arn"], json!(arn), "{imported}");
    let read = call_with(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "read_current_state",
        &["--physical-id", &arn],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"],
        json!({
            "PolicyName": "handmade-steps",
            "PolicyType": "StepScaling",
            "ResourceId": "table/handmade-orders",
            "ScalableDimension": READS,
            "ServiceNamespace": "dynamodb",
            "StepScalingPolicyConfiguration": {"AdjustmentType": "ChangeInCapacity", "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]},
        })
    );
    for (kind, id) in [
        (
            "AWS::ApplicationAutoScaling::ScalableTarget",
            "table/nosuch|dynamodb:table:ReadCapacityUnits|dynamodb",
        ),
        (
            "AWS::ApplicationAutoScaling::ScalingPolicy",
            "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:0:resource/dynamodb/table/nosuch:policyName/nope",
        ),
    ] {
        let missing = call_with(kind, "import", &["--physical-id", id]);
        assert_ne!(missing.code, Some(0), "{kind}: {}", missing.stdout);
    }

    // A policy created twice (the create repeated after a crash) is one policy with one ARN.
    let props = json!({
        "PolicyName": "handmade-tracking",
        "PolicyType": "TargetTrackingScaling",
        "ScalingTargetId": target_id,
        "TargetTrackingScalingPolicyConfiguration": {"TargetValue": 65, "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"}},
    })
    .to_string();
    let first = call_with(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "create",
        &["--properties", &props],
    )
    .success()
    .json();
    let second = call_with(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "create",
        &["--properties", &props],
    )
    .success()
    .json();
    assert_eq!(first["physicalId"], second["physicalId"]);
    assert_eq!(
        aws("len([p for p in c('application-autoscaling').describe_scaling_policies(ServiceNamespace='dynamodb', ResourceId='table/handmade-orders')['ScalingPolicies'] if p['PolicyName'] == 'handmade-tracking'])"),
        json!(1)
    );

    // Deletes: the policy twice (the second finds nothing, which is success), then the target,
    // which takes the hand-made policy with it, twice.
    let policy = first["physicalId"].as_str().unwrap().to_string();
    for _ in 0..2 {
        call_with(
            "AWS::ApplicationAutoScaling::ScalingPolicy",
            "delete",
            &["--physical-id", &policy],
        )
        .success();
    }
    for _ in 0..2 {
        call_with(
            "AWS::ApplicationAutoScaling::ScalableTarget",
            "delete",
            &["--physical-id", &target_id],
        )
        .success();
    }
    assert_eq!(app_policy(&arn), Value::Null);
    assert_eq!(scalable_target("table/handmade-orders", READS), Value::Null);
    aws("c('dynamodb').delete_table(TableName='handmade-orders') and None");
}

/// Reads that only refresh the drift baseline have a budget of their own (issue 47): a service
/// answering 5xx to them must not hold the deploy. Before, a no-change deploy of this stack
/// waited out the SDK's eight attempts of each target's ListTagsForResource, each retried six
/// more times by the host as if it were throttling: 79 s.
#[test]
fn a_failing_baseline_read_never_holds_a_deploy() {
    let _serial = serial();
    let world = AppWorld::of("appscaling", APP_STACK, "appscaling-budget", |template| {
        template["Resources"][TABLE]["Properties"]["TableName"] = json!("budget-orders");
    });
    let app = world.assembly.path().display().to_string();
    let broken = json!({"rules": [{"service": "application-autoscaling",
        "action": "ListTagsForResource", "status": 500, "code": "InternalFailure",
        "message": "We encountered an internal error. Please try again."}]});
    Emulator::shared().post("/_emulator/faults", &broken);
    let first = world.cdkd(&["deploy", "-a", &app, APP_STACK]).success();
    assert!(
        first.stderr.contains("observed state failed"),
        "{}",
        first.stderr
    );
    let targets = [READ_TARGET, WRITE_TARGET, INDEX_TARGET];
    let resources = world.resources(APP_STACK);
    for id in targets {
        assert!(resources[id]["observedProperties"].is_null(), "{id}");
    }

    // The no-change deploy reads the missing baselines while it works and gives up on them
    // when it is done: far fewer calls than the 3 x 8 x 7 the old retries made.
    Emulator::shared().post("/_emulator/faults", &broken);
    let started = std::time::Instant::now();
    let again = world.cdkd(&["deploy", "-a", &app, APP_STACK]).success();
    let took = started.elapsed();
    let hits = Emulator::shared().get("/_emulator/faults")["rules"][0]["hits"]
        .as_u64()
        .unwrap_or_default();
    Emulator::shared().post("/_emulator/faults", &json!({"rules": []}));
    println!(
        "no-change deploy with a failing baseline read: {took:?}, {hits} ListTagsForResource calls"
    );
    assert!(hits <= 3 * 8, "{hits} calls in {took:?}");
    assert!(
        again
            .stderr
            .contains("drift baseline was not read before the deploy finished")
            || again.stderr.contains("observed state failed"),
        "{}",
        again.stderr
    );
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);

    // With the service healthy again, the next no-change deploy fills the baselines in.
    world.cdkd(&["deploy", "-a", &app, APP_STACK]).success();
    let resources = world.resources(APP_STACK);
    for id in targets {
        assert!(
            resources[id]["observedProperties"].is_object(),
            "{id}: {}",
            resources[id]
        );
    }
    world
        .cdkd(&["destroy", "-a", &app, APP_STACK, "-f"])
        .success();
}
