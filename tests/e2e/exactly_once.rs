//! Nothing duplicated, nothing leaked, nothing lost: exactly-once creates under throttled
//! status polls, recovery after kill -9 (deploy, rollback and destroy reconcile the journal's
//! write-ahead intents), state saves under S3 throttling and lost answers, a multi-step create
//! that fails half-way, secret attributes kept out of state. Each test reproduces a finding of
//! issue 11 through the real binary and plugins, on this binary's own emulator; fault rules and
//! latency are global to an emulator, so the tests take turns (`SERIAL`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cdkd_tests::{cdkd_binary, workspace_root, Emulator, Run};
use serde_json::{json, Value};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn faults(rules: Value) {
    Emulator::shared().faults(rules);
}

fn fault_hits() -> Vec<u64> {
    Emulator::shared().fault_hits()
}

fn latency(ms: u64) {
    Emulator::shared().post("/_emulator/config", &json!({ "latencyMs": ms }));
}

/// One stack of its own: a unique name, a state bucket, and an assembly written by the test.
struct World {
    stack: String,
    bucket: String,
    assembly: tempfile::TempDir,
}

impl World {
    fn new(prefix: &str, resources: Value, outputs: Value) -> World {
        World::named(Emulator::unique(prefix), resources, outputs)
    }

    fn named(stack: String, resources: Value, outputs: Value) -> World {
        let world = World {
            stack,
            bucket: Emulator::unique("once-state"),
            assembly: tempfile::tempdir().unwrap(),
        };
        world.write(resources, outputs);
        world.cdkd(&["bootstrap", "--no-assets"]).success();
        world
    }

    fn write(&self, resources: Value, outputs: Value) {
        let manifest = json!({
            "version": "55.0.0",
            "artifacts": { self.stack.clone(): {
                "type": "aws:cloudformation:stack",
                "environment": "aws://unknown-account/unknown-region",
                "properties": { "templateFile": format!("{}.template.json", self.stack) }
            }}
        });
        let template = json!({ "Resources": resources, "Outputs": outputs });
        let dir = self.assembly.path();
        std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
        std::fs::write(
            dir.join(format!("{}.template.json", self.stack)),
            template.to_string(),
        )
        .unwrap();
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(cdkd_binary());
        command
            .current_dir(workspace_root())
            .args(["--state-bucket", &self.bucket])
            .args(args)
            // Queues, topics and parameters stay on Cloud Control: its client token is this
            // suite's subject (the soak crashes the service plugins' creates).
            .env("CDKD_PLUGINS", cdkd_tests::cloud_control_plugins_file())
            .env_remove("USER")
            .env_remove("USERNAME");
        for (key, value) in Emulator::shared().env() {
            command.env(key, value);
        }
        command
    }

    fn cdkd(&self, args: &[&str]) -> Run {
        self.command(args).output().unwrap().into()
    }

    fn app(&self) -> String {
        self.assembly.path().display().to_string()
    }

    fn deploy(&self) -> Run {
        self.cdkd(&["deploy", "-a", &self.app()])
    }

    fn spawn_deploy(&self) -> Child {
        self.command(&["deploy", "-a", &self.app()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn state(&self) -> Value {
        let run = self.cdkd(&["state", "show", &self.stack, "--json"]);
        if run.code == Some(0) {
            run.json()["state"].clone()
        } else {
            Value::Null
        }
    }

    /// The physical ids state records, by type.
    fn recorded(&self, resource_type: &str) -> Vec<String> {
        let state = self.state();
        let mut ids: Vec<String> = state["resources"]
            .as_object()
            .map(|resources| {
                resources
                    .values()
                    .filter(|r| r["resourceType"] == resource_type)
                    .map(|r| r["physicalId"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default();
        ids.sort();
        ids
    }

    /// What lives in the emulator for this stack, by type, in the form state records it.
    fn live(&self, resource_type: &str) -> Vec<String> {
        let stack = &self.stack;
        let expression = match resource_type {
            "AWS::SQS::Queue" => format!(
                "sorted(u.replace(u.split('/')[2], 'sqs.us-east-1.amazonaws.com').replace('http://', 'https://') for u in c('sqs').list_queues().get('QueueUrls', []) if '/{stack}-' in u)"
            ),
            "AWS::SNS::Topic" => format!(
                "sorted(t['TopicArn'] for t in c('sns').list_topics()['Topics'] if ':{stack}-' in t['TopicArn'])"
            ),
            "AWS::SSM::Parameter" => format!(
                "sorted(p['Name'] for p in c('ssm').describe_parameters(MaxResults=50)['Parameters'] if p['Name'].startswith('{stack}-') or p['Name'].startswith('/{stack}/'))"
            ),
            other => panic!("no live listing for {other}"),
        };
        let mut ids: Vec<String> = Emulator::shared()
            .boto(&expression)
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    }

    /// Asserts that AWS holds exactly what state records: no duplicate, no leak, nothing lost.
    fn assert_converged(&self, types: &[&str]) {
        for resource_type in types {
            assert_eq!(
                self.live(resource_type),
                self.recorded(resource_type),
                "{resource_type}: what exists differs from what state records"
            );
        }
    }

    /// Waits until the emulator has received `count` CreateResource calls since the stats
    /// were cleared, then kills the deploy with SIGKILL.
    fn kill_after_creates(&self, mut child: Child, count: u64) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let creates = Emulator::shared().get("/_emulator/stats")
                ["cloudcontrolapi:CreateResource"]
                .as_u64()
                .unwrap_or(0);
            if creates >= count {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("the deploy ended ({status}) before it was killed");
            }
            assert!(Instant::now() < deadline, "no CreateResource within 60 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // A request the killed process had sent is still being answered (the emulator adds
        // latency first); the next run starts once it has landed, as a person's force-unlock
        // would, or its lookups could run before the resource exists.
        let seen = || -> u64 {
            let stats = Emulator::shared().get("/_emulator/stats");
            stats
                .as_object()
                .map(|s| s.values().filter_map(Value::as_u64).sum())
                .unwrap_or(0)
        };
        let (mut last, deadline) = (seen(), Instant::now() + Duration::from_secs(5));
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = seen();
            if now == last || Instant::now() > deadline {
                break;
            }
            last = now;
        }
    }
}

/// A stack of unnamed and template-named resources (under `/{stack}/`) in short chains.
fn mixed_stack(stack_tag: &str) -> Value {
    let mut resources = serde_json::Map::new();
    for i in 0..6 {
        resources.insert(format!("Queue{i}"), json!({"Type": "AWS::SQS::Queue"}));
    }
    for i in 0..3 {
        resources.insert(
            format!("Topic{i}"),
            json!({"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": {"Fn::GetAtt": [format!("Queue{i}"), "QueueName"]}}}),
        );
    }
    for i in 0..2 {
        resources.insert(
            format!("Named{i}"),
            json!({"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("/{stack_tag}/named-{i}"), "Type": "String",
                "Value": {"Fn::GetAtt": [format!("Queue{}", i + 3), "Arn"]}}}),
        );
    }
    resources.insert(
        "Unnamed".into(),
        json!({"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": {"Ref": "Topic0"}}}),
    );
    Value::Object(resources)
}

const MIXED_TYPES: &[&str] = &["AWS::SQS::Queue", "AWS::SNS::Topic", "AWS::SSM::Parameter"];

fn reset_stats() {
    Emulator::shared().delete("/_emulator/stats");
}

#[test]
fn throttled_status_polls_never_create_twice() {
    let _turn = serial();
    let stack_tag = Emulator::unique("polls");
    let world = World::new(
        "polls",
        json!({
            "Queue": {"Type": "AWS::SQS::Queue"},
            "Param": {"Type": "AWS::SSM::Parameter", "Properties": {
                "Name": format!("/{stack_tag}/arn"), "Type": "String",
                "Value": {"Fn::GetAtt": ["Queue", "Arn"]}}}
        }),
        json!({"QueueArn": {"Value": {"Fn::GetAtt": ["Queue", "Arn"]}}}),
    );
    // More throttled polls than the SDK's attempts of one call: before the fix the whole
    // create was sent again with a new token, leaving two queues.
    faults(
        json!([{"action": "GetResourceRequestStatus", "status": 400, "code": "ThrottlingException", "count": 10}]),
    );
    let run = world.deploy();
    let hits = fault_hits();
    faults(json!([]));
    run.success();
    assert_eq!(hits, vec![10], "every throttled answer was seen");
    let queues = world.live("AWS::SQS::Queue");
    assert_eq!(queues.len(), 1, "one queue for one logical id: {queues:?}");
    assert_eq!(world.recorded("AWS::SQS::Queue"), queues);
    // The queue's generated name was chosen before the call, CloudFormation-style.
    assert!(
        queues[0].contains(&format!("/{}-Queue-", world.stack)),
        "{queues:?}"
    );
    // The sparse final model lacked Arn: it was read back once and reached the consumer.
    let arn = Emulator::shared().boto(&format!(
        "c('sqs').get_queue_attributes(QueueUrl='{}'.replace('https://sqs.us-east-1.amazonaws.com', '{}'), AttributeNames=['QueueArn'])['Attributes']['QueueArn']",
        queues[0],
        Emulator::shared().endpoint()
    ));
    let param = Emulator::shared().boto(&format!(
        "c('ssm').get_parameter(Name='/{stack_tag}/arn')['Parameter']['Value']"
    ));
    assert_eq!(param, arn);
    assert_eq!(world.state()["outputs"]["QueueArn"], arn);
    world
        .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
        .success();
    assert!(world.live("AWS::SQS::Queue").is_empty());
}

#[test]
fn a_killed_deploy_leaks_nothing_and_the_next_deploy_converges() {
    let _turn = serial();
    let stack = Emulator::unique("kill");
    let world = World::named(stack.clone(), mixed_stack(&stack), json!({}));
    latency(120);
    reset_stats();
    let child = world.spawn_deploy();
    world.kill_after_creates(child, 4);
    latency(0);
    // The killed run created resources the state never recorded (the leak of finding 2).
    let created_before: usize = MIXED_TYPES.iter().map(|t| world.live(t).len()).sum();
    let recorded_before: usize = MIXED_TYPES.iter().map(|t| world.recorded(t).len()).sum();
    assert!(created_before >= recorded_before);
    let locked = world.cdkd(&["state", "show", &world.stack, "--json"]);
    if locked.code == Some(0) {
        let owner = locked.json()["lock"]["owner"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(!owner.starts_with("unknown@"), "lock owner {owner}");
    }
    world.cdkd(&["force-unlock", &world.stack]).success();
    world.deploy().success();
    world.assert_converged(MIXED_TYPES);
    assert_eq!(world.recorded("AWS::SQS::Queue").len(), 6);
    assert_eq!(world.recorded("AWS::SNS::Topic").len(), 3);
    assert_eq!(world.recorded("AWS::SSM::Parameter").len(), 3);
    // The journal's intents were reconciled and removed with it.
    let journal = Emulator::shared().boto(&format!(
        "[o['Key'] for o in c('s3').list_objects_v2(Bucket='{}').get('Contents', []) if 'rollback-journal' in o['Key']]",
        world.bucket
    ));
    assert_eq!(journal, json!([]));
    world
        .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
        .success();
    for resource_type in MIXED_TYPES {
        assert!(
            world.live(resource_type).is_empty(),
            "{resource_type} left after destroy"
        );
    }
}

#[test]
fn rollback_and_destroy_after_a_kill_remove_what_was_never_recorded() {
    let _turn = serial();
    for command in ["rollback", "destroy"] {
        let stack = Emulator::unique(command);
        let world = World::named(stack.clone(), mixed_stack(&stack), json!({}));
        latency(120);
        reset_stats();
        let child = world.spawn_deploy();
        world.kill_after_creates(child, 3);
        latency(0);
        world.cdkd(&["force-unlock", &world.stack]).success();
        match command {
            "rollback" => {
                world.cdkd(&["rollback", &world.stack]).success();
                world.assert_converged(MIXED_TYPES);
                world
                    .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
                    .success();
            }
            _ => {
                world
                    .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
                    .success();
            }
        }
        for resource_type in MIXED_TYPES {
            assert!(
                world.live(resource_type).is_empty(),
                "{command}: {resource_type} left: {:?}",
                world.live(resource_type)
            );
        }
    }
}

#[test]
fn state_saves_survive_throttling_and_a_lost_answer() {
    let _turn = serial();
    let world = World::new(
        "saves",
        json!({"Queue": {"Type": "AWS::SQS::Queue"}, "Topic": {"Type": "AWS::SNS::Topic"}}),
        json!({}),
    );
    // Three 503 SlowDown answers on the state PUT: before, the deploy ended with "saving
    // state failed" after the SDK's third attempt.
    faults(
        json!([{"service": "s3", "method": "PUT", "pathContains": "state.json", "status": 503, "code": "SlowDown", "count": 3}]),
    );
    let run = world.deploy();
    let hits = fault_hits();
    faults(json!([]));
    run.success();
    assert_eq!(hits, vec![3]);
    world.assert_converged(&["AWS::SQS::Queue", "AWS::SNS::Topic"]);

    // A save that landed with its answer lost: the retry meets its own write.
    world.write(
        json!({"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 45}}, "Topic": {"Type": "AWS::SNS::Topic"}}),
        json!({}),
    );
    faults(
        json!([{"service": "s3", "method": "PUT", "pathContains": "state.json", "status": 503, "code": "SlowDown", "count": 1, "passThrough": true}]),
    );
    let run = world.deploy();
    let hits = fault_hits();
    faults(json!([]));
    run.success();
    assert_eq!(hits, vec![1]);
    assert_eq!(
        world.state()["resources"]["Queue"]["properties"]["VisibilityTimeout"],
        json!(45)
    );

    // A state bucket that keeps failing: one readable line naming the object, each cause once.
    faults(
        json!([{"service": "s3", "method": "PUT", "pathContains": "state.json", "status": 503, "code": "SlowDown"}]),
    );
    world.write(
        json!({"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 50}}, "Topic": {"Type": "AWS::SNS::Topic"}}),
        json!({}),
    );
    let run = world.deploy();
    faults(json!([]));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let error = run
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{}", run.stderr))
        .to_string();
    assert!(error.contains("state.json"), "{error}");
    let parts: Vec<&str> = error.split(": ").collect();
    assert!(
        parts.windows(2).all(|w| w[0] != w[1]),
        "a cause printed twice: {error}"
    );
    assert!(
        !error.contains("SdkError") && !error.contains("DispatchFailure"),
        "{error}"
    );
    world
        .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
        .success();
}

#[test]
fn a_bucket_whose_configuration_fails_is_not_left_behind() {
    let _turn = serial();
    let name = Emulator::unique("cors");
    let world = World::new(
        "cors",
        json!({"Bucket": {"Type": "AWS::S3::Bucket", "Properties": {
            "BucketName": name, "CorsConfiguration": {"CorsRules": []}}}}),
        json!({}),
    );
    // No empty CORS rule list is sent (S3 answers MalformedXML).
    world.deploy().success();
    assert_eq!(
        world.state()["resources"]["Bucket"]["provisionedBy"],
        json!("sdk")
    );
    world
        .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
        .success();

    // A configuration refused after the bucket exists: the create undoes itself.
    let name = Emulator::unique("half");
    world.write(
        json!({"Bucket": {"Type": "AWS::S3::Bucket", "Properties": {
            "BucketName": name, "VersioningConfiguration": {"Status": "Enabled"}}}}),
        json!({}),
    );
    faults(
        json!([{"service": "s3", "method": "PUT", "queryContains": "versioning", "status": 400, "code": "MalformedXML", "count": 1}]),
    );
    let run = world.deploy();
    let hits = fault_hits();
    faults(json!([]));
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(hits, vec![1]);
    let exists = Emulator::shared().boto(&format!(
        "'{name}' in [b['Name'] for b in c('s3').list_buckets()['Buckets']]"
    ));
    assert_eq!(exists, json!(false), "the half-made bucket was left behind");
}

#[test]
fn a_secret_attribute_reaches_its_consumer_but_never_state() {
    let _turn = serial();
    let tag = Emulator::unique("secret");
    let resources = json!({
        "User": {"Type": "AWS::IAM::User"},
        "Key": {"Type": "AWS::IAM::AccessKey", "Properties": {"UserName": {"Ref": "User"}}},
        "Copy": {"Type": "AWS::SSM::Parameter", "Properties": {
            "Name": format!("/{tag}/secret"), "Type": "String",
            "Value": {"Fn::GetAtt": ["Key", "SecretAccessKey"]}}}
    });
    let world = World::new(
        "secret",
        resources.clone(),
        json!({"Secret": {"Value": {"Fn::GetAtt": ["Key", "SecretAccessKey"]}}}),
    );
    let run = world.deploy().success();
    let secret = Emulator::shared()
        .boto(&format!(
            "c('ssm').get_parameter(Name='/{tag}/secret')['Parameter']['Value']"
        ))
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        secret.len() >= 20 && secret != "***",
        "the consumer got {secret}"
    );
    assert!(!run.stdout.contains(&secret), "deploy printed the secret");
    let raw = Emulator::shared().boto(&format!(
        "c('s3').get_object(Bucket='{}', Key='cdkd/{}/us-east-1/state.json')['Body'].read().decode()",
        world.bucket, world.stack
    ));
    let raw = raw.as_str().unwrap();
    assert!(!raw.contains(&secret), "state holds the secret: {raw}");
    let state = world.state();
    assert_eq!(
        state["resources"]["Key"]["attributes"]["SecretAccessKey"],
        json!("***")
    );
    assert_eq!(
        state["resources"]["Copy"]["properties"]["Value"],
        json!("***")
    );
    assert_eq!(state["outputs"]["Secret"], json!("***"));
    let shown = world.cdkd(&["state", "show", &world.stack]).success();
    assert!(!shown.stdout.contains(&secret));
    // Unchanged: nothing needs the value again.
    world.deploy().success();
    // A consumer that must be written again cannot get the value back from state.
    let mut changed = resources.clone();
    changed["Copy"]["Properties"]["Description"] = json!("changed");
    world.write(
        changed,
        json!({"Secret": {"Value": {"Fn::GetAtt": ["Key", "SecretAccessKey"]}}}),
    );
    let refused = world.deploy();
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("Key.SecretAccessKey is a secret")
            || refused.stdout.contains("Key.SecretAccessKey is a secret"),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    world.write(resources, json!({}));
    world
        .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
        .success();
}

#[test]
fn state_list_long_reports_an_unreadable_record_and_lists_the_others() {
    let _turn = serial();
    let world = World::new(
        "listed",
        json!({"Topic": {"Type": "AWS::SNS::Topic"}}),
        json!({}),
    );
    world.deploy().success();
    Emulator::shared().boto(&format!(
        "c('s3').put_object(Bucket='{}', Key='cdkd/Corrupt/us-east-1/state.json', Body=b'{{not json')['ETag']",
        world.bucket
    ));
    let run = world.cdkd(&["state", "list", "--long"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stdout.contains(&world.stack), "{}", run.stdout);
    assert!(run.stdout.contains("Corrupt"), "{}", run.stdout);
    assert!(
        run.stderr.contains("stack Corrupt (us-east-1)"),
        "{}",
        run.stderr
    );
    world
        .cdkd(&["destroy", &world.stack, "-a", &world.app(), "-f"])
        .success();
}
