//! Plugins that hand a principal made in the same deploy to a service wait for IAM to propagate
//! it (docs/deploy.md, IAM propagation), under the emulator's AWS timing profile, switched on
//! for this binary's own emulator: an ECR repository policy naming a new role, an access key of
//! a new user, an Auto Scaling group whose launch template names a new instance profile or
//! whose `ServiceLinkedRoleARN` is new, a Cognito user pool whose SMS role is new, and a state
//! machine, a queue policy, a topic policy, a bucket policy and a key policy of a new role. The
//! emulator refuses each call with the service's own error until the principal is old enough;
//! each deploy succeeds, through the plugin, having sent the refused call more than once.

use std::time::{Duration, Instant};

use cdkd_tests::{one_at_a_time, AppWorld, Emulator};
use serde_json::{json, Value};

/// The profile's time scale: calls take a hundredth of AWS's latency, so a deploy is quick.
const SCALE: f64 = 0.01;

/// How long a new principal is refused, in real milliseconds: long enough that the plugin's
/// first call is surely refused (it comes right after the principal's create), short enough to
/// keep each deploy to a few seconds.
const PROPAGATION_MS: u64 = 2_000;

/// The AWS timing profile on, with every IAM propagation taking [`PROPAGATION_MS`]; off again
/// when dropped (a failed test leaves no profile to the next).
struct Profile;

impl Profile {
    fn on() -> Profile {
        let aws_ms = (PROPAGATION_MS as f64 / SCALE) as u64;
        Emulator::shared().post(
            "/_emulator/config",
            &json!({"profile": "aws", "timeScale": SCALE, "timingOverrides": {
                "iam_role_propagation_ms": aws_ms,
                "iam_instance_profile_propagation_ms": aws_ms,
                "iam_user_read_after_write_ms": aws_ms}}),
        );
        Emulator::shared().delete("/_emulator/stats");
        Emulator::shared().delete("/_emulator/refusals");
        Profile
    }
}

impl Drop for Profile {
    fn drop(&mut self) {
        Emulator::shared().post(
            "/_emulator/config",
            &json!({"profile": "off", "timeScale": 1, "timingOverrides": {}}),
        );
    }
}

/// A world whose AppStack holds only `resources`.
fn world(prefix: &str, resources: Value) -> AppWorld {
    AppWorld::new(prefix, |t| {
        t["Resources"] = resources;
        t.as_object_mut().unwrap().remove("Outputs");
    })
}

/// A role `service` may assume.
fn role(service: &str) -> Value {
    json!({"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}]}}})
}

/// Deploys the world, checks that `ids` went through their plugins and that `call` was sent
/// more than once (refused while the principal propagated), and that the deploy waited.
fn deploys_after_a_refusal(world: &AppWorld, ids: &[&str], call: &str) -> Value {
    let started = Instant::now();
    let run = world.deploy(&["AppStack"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let took = started.elapsed();
    let resources = world.resources("AppStack");
    for id in ids {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let tries = Emulator::shared().get("/_emulator/stats")[call]
        .as_u64()
        .unwrap_or(0);
    assert!(tries >= 2, "{call} was sent {tries} time(s)");
    assert!(
        took >= Duration::from_millis(PROPAGATION_MS),
        "the deploy took {took:?}, less than the propagation"
    );
    resources
}

#[test]
fn an_ecr_repository_policy_naming_a_new_role_waits_for_it() {
    let _serial = one_at_a_time();
    let world = world(
        "iamprop-ecr",
        json!({
            "Puller": role("ec2.amazonaws.com"),
            "Repo": {"Type": "AWS::ECR::Repository", "Properties": {"RepositoryPolicyText": {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": ["ecr:BatchGetImage"],
                    "Principal": {"AWS": {"Fn::GetAtt": ["Puller", "Arn"]}}}]}}},
        }),
    );
    let _profile = Profile::on();
    let resources = deploys_after_a_refusal(&world, &["Repo"], "ecr:SetRepositoryPolicy");
    let repo = resources["Repo"]["physicalId"].as_str().unwrap();
    let role = resources["Puller"]["attributes"]["Arn"].as_str().unwrap();
    let policy = Emulator::shared().boto(&format!(
        "c('ecr').get_repository_policy(repositoryName='{repo}')['policyText']"
    ));
    assert!(policy.as_str().unwrap().contains(role), "{policy}");
}

#[test]
fn an_access_key_of_a_new_user_waits_for_iam_to_know_the_user() {
    let _serial = one_at_a_time();
    let world = world(
        "iamprop-key",
        json!({
            "Deployer": {"Type": "AWS::IAM::User", "Properties": {}},
            "Key": {"Type": "AWS::IAM::AccessKey", "Properties": {"UserName": {"Ref": "Deployer"}}},
        }),
    );
    let _profile = Profile::on();
    let resources = deploys_after_a_refusal(&world, &["Key"], "iam:CreateAccessKey");
    let user = resources["Deployer"]["physicalId"].as_str().unwrap();
    let keys = Emulator::shared().boto(&format!(
        "[k['AccessKeyId'] for k in c('iam').list_access_keys(UserName='{user}')['AccessKeyMetadata']]"
    ));
    assert_eq!(keys, json!([resources["Key"]["physicalId"]]));
}

/// An Auto Scaling group of one launch template (naming `profile` when given) in us-east-1a.
fn group_world(prefix: &str, mut resources: Value, profile: Option<Value>) -> AppWorld {
    let mut data = json!({"ImageId": "ami-03cf127a", "InstanceType": "t3.micro"});
    if let Some(profile) = profile {
        data["IamInstanceProfile"] = json!({"Arn": profile});
    }
    resources["Template"] = json!({"Type": "AWS::EC2::LaunchTemplate",
        "Properties": {"LaunchTemplateData": data}});
    resources["Group"]["Type"] = json!("AWS::AutoScaling::AutoScalingGroup");
    let props = &mut resources["Group"]["Properties"];
    props["MinSize"] = json!("0");
    props["MaxSize"] = json!("1");
    props["AvailabilityZones"] = json!(["us-east-1a"]);
    props["LaunchTemplate"] = json!({"LaunchTemplateId": {"Ref": "Template"},
        "Version": {"Fn::GetAtt": ["Template", "LatestVersionNumber"]}});
    world(prefix, resources)
}

#[test]
fn an_auto_scaling_group_waits_for_its_new_instance_profile_and_service_linked_role() {
    let _serial = one_at_a_time();
    // The CDK shape: a role, its instance profile, a launch template naming the profile.
    let with_profile = group_world(
        "iamprop-asg",
        json!({
            "InstanceRole": role("ec2.amazonaws.com"),
            "Profile": {"Type": "AWS::IAM::InstanceProfile",
                "Properties": {"Roles": [{"Ref": "InstanceRole"}]}},
            "Group": {"Properties": {}},
        }),
        Some(json!({"Fn::GetAtt": ["Profile", "Arn"]})),
    );
    // A group given its own service-linked role (the emulator checks only the role's age).
    let with_role = group_world(
        "iamprop-slr",
        json!({
            "LinkedRole": role("autoscaling.amazonaws.com"),
            "Group": {"Properties": {"ServiceLinkedRoleARN": {"Fn::GetAtt": ["LinkedRole", "Arn"]}}},
        }),
        None,
    );
    let _profile = Profile::on();
    deploys_after_a_refusal(
        &with_profile,
        &["Group"],
        "autoscaling:CreateAutoScalingGroup",
    );
    Emulator::shared().delete("/_emulator/stats");
    let resources =
        deploys_after_a_refusal(&with_role, &["Group"], "autoscaling:CreateAutoScalingGroup");
    let group = resources["Group"]["physicalId"].as_str().unwrap();
    let live = Emulator::shared().boto(&format!(
        "c('autoscaling').describe_auto_scaling_groups(AutoScalingGroupNames=['{group}'])['AutoScalingGroups'][0]['AutoScalingGroupName']"
    ));
    assert_eq!(live, json!(group));
}

#[test]
fn a_user_pool_waits_for_its_new_sms_role() {
    let _serial = one_at_a_time();
    let world = world(
        "iamprop-sms",
        json!({
            "SmsRole": role("cognito-idp.amazonaws.com"),
            "Pool": {"Type": "AWS::Cognito::UserPool", "Properties": {"SmsConfiguration": {
                "SnsCallerArn": {"Fn::GetAtt": ["SmsRole", "Arn"]}, "ExternalId": "cdkd-e2e"}}},
        }),
    );
    let _profile = Profile::on();
    let resources = deploys_after_a_refusal(&world, &["Pool"], "cognito-idp:CreateUserPool");
    let pool = resources["Pool"]["physicalId"].as_str().unwrap();
    let sms = Emulator::shared().boto(&format!(
        "c('cognito-idp').describe_user_pool(UserPoolId='{pool}')['UserPool']['SmsConfiguration']"
    ));
    assert_eq!(
        sms,
        json!({"SnsCallerArn": resources["SmsRole"]["attributes"]["Arn"], "ExternalId": "cdkd-e2e"})
    );
}

/// `Principal.AWS` `principal` allowed `action` on `resource`.
fn policy_naming(principal: Value, action: &str, resource: Value) -> Value {
    json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action,
        "Principal": {"AWS": principal}, "Resource": resource}]})
}

#[test]
fn a_state_machine_and_policies_naming_a_new_role_wait_for_it() {
    let _serial = one_at_a_time();
    let arn = || json!({"Fn::GetAtt": ["Worker", "Arn"]});
    let root = json!({"Fn::Join": ["", ["arn:aws:iam::", {"Ref": "AWS::AccountId"}, ":root"]]});
    let world = world(
        "iamprop-pol",
        json!({
            "Worker": role("states.amazonaws.com"),
            "Machine": {"Type": "AWS::StepFunctions::StateMachine", "Properties": {
                "RoleArn": arn(),
                "Definition": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": true}}}}},
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "QueuePolicy": {"Type": "AWS::SQS::QueuePolicy", "Properties": {
                "Queues": [{"Ref": "Queue"}],
                "PolicyDocument": policy_naming(arn(), "sqs:SendMessage",
                    json!({"Fn::GetAtt": ["Queue", "Arn"]}))}},
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {}},
            "TopicPolicy": {"Type": "AWS::SNS::TopicPolicy", "Properties": {
                "Topics": [{"Ref": "Topic"}],
                "PolicyDocument": policy_naming(arn(), "sns:Publish", json!({"Ref": "Topic"}))}},
            "Bucket": {"Type": "AWS::S3::Bucket", "Properties": {}},
            "BucketPolicy": {"Type": "AWS::S3::BucketPolicy", "Properties": {
                "Bucket": {"Ref": "Bucket"},
                "PolicyDocument": policy_naming(arn(), "s3:GetObject",
                    json!({"Fn::Join": ["", [{"Fn::GetAtt": ["Bucket", "Arn"]}, "/*"]]}))}},
            "Key": {"Type": "AWS::KMS::Key", "Properties": {"KeyPolicy": {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Action": "kms:*", "Resource": "*", "Principal": {"AWS": root}},
                    {"Effect": "Allow", "Action": "kms:Decrypt", "Resource": "*", "Principal": {"AWS": arn()}}]}}},
        }),
    );
    let _profile = Profile::on();
    let resources = deploys_after_a_refusal(
        &world,
        &[
            "Machine",
            "Queue",
            "QueuePolicy",
            "Topic",
            "TopicPolicy",
            "Bucket",
            "BucketPolicy",
            "Key",
        ],
        "states:CreateStateMachine",
    );
    // Each refused at least once, then accepted: sent more than once. /_emulator/stats counts
    // S3's PutBucketPolicy only as one of the s3:PUT, so the refusals are counted by name too.
    let stats = Emulator::shared().get("/_emulator/stats");
    let refusals = Emulator::shared().get("/_emulator/refusals");
    for call in [
        "states:CreateStateMachine",
        "sqs:SetQueueAttributes",
        "sns:SetTopicAttributes",
        "s3:PutBucketPolicy",
        "kms:CreateKey",
    ] {
        let refused = refusals[call].as_u64().unwrap_or(0);
        assert!(refused >= 1, "{call} was never refused: {refusals}");
        if !call.starts_with("s3:") {
            let sent = stats[call].as_u64().unwrap_or(0);
            assert!(
                sent > refused,
                "{call} was sent {sent} time(s), refused {refused}"
            );
        }
    }
    // Each in place on the emulator, with the role.
    let role = resources["Worker"]["attributes"]["Arn"].as_str().unwrap();
    let id = |logical: &str| {
        resources[logical]["physicalId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let live = Emulator::shared().boto(&format!(
        "[c('stepfunctions').describe_state_machine(stateMachineArn='{machine}')['roleArn'], \
          c('sqs').get_queue_attributes(QueueUrl='{queue}', AttributeNames=['Policy'])['Attributes']['Policy'], \
          c('sns').get_topic_attributes(TopicArn='{topic}')['Attributes']['Policy'], \
          c('s3').get_bucket_policy(Bucket='{bucket}')['Policy'], \
          c('kms').get_key_policy(KeyId='{key}', PolicyName='default')['Policy']]",
        machine = id("Machine"),
        queue = id("Queue"),
        topic = id("Topic"),
        bucket = id("Bucket"),
        key = id("Key"),
    ));
    assert_eq!(live[0], json!(role));
    for (what, policy) in ["queue", "topic", "bucket", "key"]
        .iter()
        .zip(&live.as_array().unwrap()[1..])
    {
        assert!(
            policy.as_str().unwrap().contains(role),
            "{what}'s policy: {policy}"
        );
    }
    let app = world.assembly.path().display().to_string();
    world
        .cdkd(&["destroy", "AppStack", "-a", &app, "-f"])
        .success();
    let queue = id("Queue");
    let gone = Emulator::shared().boto(&format!(
        "['{machine}' in [m['stateMachineArn'] for m in c('stepfunctions').list_state_machines()['stateMachines']], \
          any(u.endswith('/{queue}') for u in c('sqs').list_queues().get('QueueUrls', [])), \
          '{topic}' in [t['TopicArn'] for t in c('sns').list_topics()['Topics']], \
          '{bucket}' in [b['Name'] for b in c('s3').list_buckets()['Buckets']], \
          c('kms').describe_key(KeyId='{key}')['KeyMetadata']['KeyState']]",
        machine = id("Machine"),
        queue = queue.rsplit('/').next().unwrap(),
        topic = id("Topic"),
        bucket = id("Bucket"),
        key = id("Key"),
    ));
    assert_eq!(gone, json!([false, false, false, false, "PendingDeletion"]));
}
