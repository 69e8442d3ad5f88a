//! `cdkd deploy`, `destroy` and `rollback` of the demo stack (Cloud Control types and the
//! example plugin's type) through the binary, checked in the emulator's own service APIs and
//! in the state record.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cdkd_tests::{wait_for, workspace_root, AppWorld, Emulator, Run};
use serde_json::{json, Value};

/// One test's world: its own state bucket, echo folder and copy of the demo assembly.
fn demo_world() -> AppWorld {
    // The demo stack's queue, topic, table and log group are this suite's Cloud Control types.
    AppWorld::without_assets("demo", "DemoStack", "deploy").on_cloud_control()
}

/// Starts `cdkd deploy` of `world` with the Breaker sleeping `sleep_ms` and `env` set, and
/// returns once the five resources before it are saved: the Breaker is then in flight.
fn deploy_to_the_slow_resource(
    world: &AppWorld,
    sleep_ms: u64,
    env: &[(&str, &str)],
    stderr: Stdio,
) -> std::process::Child {
    add_fault(world, json!({"SleepMs": sleep_ms}));
    let app = world.assembly.path().display().to_string();
    let child = world
        .command(&["deploy", "-a", &app])
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    wait_for(
        "the deploy to reach the slow resource",
        Duration::from_secs(30),
        || {
            world.state()["resources"]
                .as_object()
                .is_some_and(|r| r.len() >= 5)
                .then_some(())
        },
    );
    child
}

/// Changes the world's assembly manifest in place.
fn edit_manifest(world: &AppWorld, change: impl FnOnce(&mut Value)) {
    let path = world.assembly.path().join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    change(&mut manifest);
    std::fs::write(&path, manifest.to_string()).unwrap();
}

fn queue_exists(url: &str) -> bool {
    let name = url.rsplit('/').next().unwrap();
    Emulator::shared()
        .boto(&format!(
            "[u for u in c('sqs').list_queues().get('QueueUrls', []) if u.endswith('/{name}')]"
        ))
        .as_array()
        .unwrap()
        .len()
        == 1
}

fn topic_exists(arn: &str) -> bool {
    Emulator::shared()
        .boto(&format!(
            "[t['TopicArn'] for t in c('sns').list_topics()['Topics'] if t['TopicArn'] == '{arn}']"
        ))
        .as_array()
        .unwrap()
        .len()
        == 1
}

fn table_exists(name: &str) -> bool {
    Emulator::shared().boto(&format!(
        "'{name}' in c('dynamodb').list_tables()['TableNames']"
    )) == json!(true)
}

fn log_group_exists(name: &str) -> bool {
    Emulator::shared().boto(&format!("[g for g in c('logs').describe_log_groups(logGroupNamePrefix='{name}')['logGroups'] if g['logGroupName'] == '{name}']")).as_array().unwrap().len() == 1
}

#[test]
fn deploy_update_replace_destroy_the_demo_stack() {
    let world = demo_world();
    let first = world.deploy(&[]).success();
    assert!(
        first
            .stdout
            .contains("DemoStack: 5 created, 0 updated, 0 replaced, 0 deleted, 0 unchanged"),
        "{}",
        first.stdout
    );
    let state = world.state();
    assert_eq!(state["version"], 9);
    let queue = world.physical("OrdersA9B65338");
    let topic = world.physical("Alerts91F83244");
    let table = world.physical("Sessions");
    let logs = world.physical("AppLogsC5DF83A6");
    let greeter = world.physical("Greeter");
    assert!(
        queue_exists(&queue)
            && topic_exists(&topic)
            && table_exists(&table)
            && log_group_exists(&logs)
    );
    assert!(world.echo.path().join(format!("{greeter}.json")).is_file());
    assert_eq!(
        state["resources"]["OrdersA9B65338"]["provisionedBy"],
        "cc-api"
    );
    assert_eq!(state["resources"]["Greeter"]["provisionedBy"], "sdk");
    assert_eq!(state["outputs"]["QueueUrl"], json!(queue));
    assert_eq!(state["exportNames"], json!([]));
    let visibility = Emulator::shared().boto(&format!("c('sqs').get_queue_attributes(QueueUrl='{queue}', AttributeNames=['VisibilityTimeout'])['Attributes']['VisibilityTimeout']"));
    assert_eq!(visibility, json!("45"));

    // No change: no provider call at all (counted under this run's own access key).
    let key = format!("NOCHANGE{}", std::process::id());
    let app = world.assembly.path().display().to_string();
    let again: Run = world
        .command(&["deploy", "-a", &app])
        .env("AWS_ACCESS_KEY_ID", &key)
        .output()
        .unwrap()
        .into();
    let again = again.success();
    assert!(
        again
            .stdout
            .contains("0 created, 0 updated, 0 replaced, 0 deleted, 5 unchanged"),
        "{}",
        again.stdout
    );
    let calls = Emulator::shared().get(&format!("/_emulator/stats?accessKey={key}"));
    assert!(
        calls.get("s3:GET").is_some(),
        "the run was not counted under its key: {calls}"
    );
    // Nothing to change: no lock taken, nothing written.
    for write in ["s3:PUT", "s3:DELETE", "s3:POST"] {
        assert!(calls.get(write).is_none(), "{write} in {calls}");
    }
    let provider_calls: Vec<&String> = calls
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("cloudcontrolapi"))
        .collect();
    assert!(
        provider_calls.is_empty(),
        "a no-change deploy called Cloud Control: {calls}"
    );

    // In place: the same queue, a new timeout.
    world.edit(|t| t["Resources"]["OrdersA9B65338"]["Properties"]["VisibilityTimeout"] = json!(60));
    let key = format!("INPLACE{}", std::process::id());
    let updated: Run = world
        .command(&["deploy", "-a", &app])
        .env("AWS_ACCESS_KEY_ID", &key)
        .output()
        .unwrap()
        .into();
    updated.success();
    // A stack with a record is not looked up in CloudFormation (only a first deploy is).
    let calls = Emulator::shared().get(&format!("/_emulator/stats?accessKey={key}"));
    assert!(
        calls.get("cloudcontrolapi:UpdateResource").is_some(),
        "the update was not counted under its key: {calls}"
    );
    assert!(
        calls.get("cloudformation:DescribeStacks").is_none(),
        "a deploy of a recorded stack asked CloudFormation: {calls}"
    );
    assert_eq!(
        world.physical("OrdersA9B65338"),
        queue,
        "an in-place update replaced the queue"
    );
    let visibility = Emulator::shared().boto(&format!("c('sqs').get_queue_attributes(QueueUrl='{queue}', AttributeNames=['VisibilityTimeout'])['Attributes']['VisibilityTimeout']"));
    assert_eq!(visibility, json!("60"));

    // A create-only change: a new topic, the old one gone.
    let name = Emulator::unique("renamed-topic");
    world.edit(|t| t["Resources"]["Alerts91F83244"]["Properties"]["TopicName"] = json!(name));
    let replaced = world.deploy(&[]).success();
    assert!(
        replaced
            .stdout
            .contains("Alerts91F83244 (AWS::SNS::Topic): replaced by "),
        "{}",
        replaced.stdout
    );
    let new_topic = world.physical("Alerts91F83244");
    assert!(new_topic.ends_with(&name), "{new_topic}");
    assert!(topic_exists(&new_topic));
    assert!(!topic_exists(&topic), "the replaced topic is still there");

    let destroyed = world
        .cdkd(&[
            "destroy",
            "-a",
            &world.assembly.path().display().to_string(),
            "-f",
        ])
        .success();
    assert!(
        destroyed.stdout.contains("5 deleted"),
        "{}",
        destroyed.stdout
    );
    assert!(
        !queue_exists(&queue)
            && !topic_exists(&new_topic)
            && !table_exists(&table)
            && !log_group_exists(&logs)
    );
    assert!(!world.echo.path().join(format!("{greeter}.json")).exists());
    assert_eq!(
        world.state(),
        Value::Null,
        "the state record survived the destroy"
    );
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}

fn journal(world: &AppWorld) -> Value {
    Emulator::shared().boto(&format!(
        "[json.loads(c('s3').get_object(Bucket='{b}', Key=k['Key'])['Body'].read()) for k in c('s3').list_objects_v2(Bucket='{b}', Prefix='cdkd/DemoStack/us-east-1/rollback-journal.json').get('Contents', [])]",
        b = world.bucket
    ))
    .as_array()
    .unwrap()
    .first()
    .cloned()
    .unwrap_or(Value::Null)
}

fn add_fault(world: &AppWorld, fault: Value) {
    world.edit(|t| {
        t["Resources"]["Breaker"] = json!({"Type": "Acme::Echo::Fault", "Properties": fault, "DependsOn": ["OrdersA9B65338", "Greeter"]});
    });
}

#[test]
fn a_failed_deploy_rolls_back_what_it_created() {
    let world = demo_world();
    add_fault(&world, json!({"FailWith": "validation"}));
    let run = world.deploy(&[]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("failed and was rolled back"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout
            .contains("OrdersA9B65338 (AWS::SQS::Queue): rolled back"),
        "{}",
        run.stdout
    );
    let state = world.state();
    assert_eq!(
        state["resources"],
        json!({}),
        "the rollback left records behind"
    );
    let created = run
        .stdout
        .lines()
        .find_map(|l| l.split("OrdersA9B65338 (AWS::SQS::Queue): created ").nth(1))
        .and_then(|rest| rest.split(" in ").next())
        .unwrap_or_else(|| panic!("the queue was never created:\n{}", run.stdout))
        .to_string();
    assert!(
        created.starts_with("https://sqs."),
        "no queue URL in the event: {created:?}"
    );
    assert!(
        !queue_exists(&created),
        "the rollback left the queue {created}"
    );
    assert_eq!(
        std::fs::read_dir(world.echo.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0,
        "the echo thing was not rolled back"
    );
    // A clean automatic rollback settles the journal to the failed operation only.
    let journal = journal(&world);
    assert_eq!(
        journal["segments"].as_array().unwrap().len(),
        1,
        "{journal}"
    );
    assert_eq!(journal["segments"][0]["reason"], "auto-rollback-clean");
    assert_eq!(journal["segments"][0]["operations"], json!([]));
    assert_eq!(
        journal["segments"][0]["failedOperations"][0]["logicalId"],
        "Breaker"
    );
}

#[test]
fn no_rollback_keeps_the_work_and_cdkd_rollback_undoes_it() {
    let world = demo_world();
    add_fault(&world, json!({"FailWith": "conflict"}));
    let run = world.deploy(&["--no-rollback"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("run `cdkd rollback DemoStack`"),
        "{}",
        run.stderr
    );
    let queue = world.physical("OrdersA9B65338");
    assert!(queue_exists(&queue), "--no-rollback did not keep the queue");
    assert_eq!(world.state()["resources"].as_object().unwrap().len(), 5);
    let recorded = journal(&world);
    assert_eq!(recorded["journalVersion"], 1);
    assert_eq!(recorded["segments"][0]["reason"], "no-rollback-failure");
    assert_eq!(
        recorded["segments"][0]["operations"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    assert_eq!(
        recorded["segments"][0]["failedOperations"][0]["logicalId"],
        "Breaker"
    );
    assert_eq!(
        recorded["segments"][0]["failedOperations"][0]["attemptedProperties"],
        json!({"FailWith": "conflict"})
    );

    let rolled = world.cdkd(&["rollback", "DemoStack"]);
    assert_eq!(rolled.code, Some(0), "{}\n{}", rolled.stdout, rolled.stderr);
    assert!(!queue_exists(&queue));
    assert_eq!(world.state()["resources"], json!({}));
    assert_eq!(
        journal(&world),
        Value::Null,
        "a clean rollback left the journal"
    );
    let nothing = world.cdkd(&["rollback", "DemoStack"]).success();
    assert!(
        nothing.stdout.contains("nothing to roll back"),
        "{}",
        nothing.stdout
    );

    // The failure fixed, the same deploy succeeds.
    add_fault(&world, json!({}));
    world.deploy(&[]).success();
    assert_eq!(world.state()["resources"].as_object().unwrap().len(), 6);
}

#[test]
fn a_killed_deploy_resumes_without_duplicates() {
    let world = demo_world();
    let mut child = deploy_to_the_slow_resource(
        &world,
        4000,
        &[("CDKD_LOCK_TTL_SECONDS", "2")],
        Stdio::null(),
    );
    child.kill().unwrap(); // SIGKILL mid-deploy: the lock stays, the Breaker never finished
    child.wait().unwrap();
    let queue = world.physical("OrdersA9B65338");
    // The killed holder's lock is left behind; the resumed deploy waits for it to expire
    // (retrying as a second deploy would), then takes it over.
    add_fault(&world, json!({}));
    let resumed = world.deploy(&[]).success();
    assert!(resumed.stdout.contains("1 created"), "{}", resumed.stdout);
    assert_eq!(
        world.physical("OrdersA9B65338"),
        queue,
        "the queue was created twice"
    );
    let name = queue.rsplit('/').next().unwrap().to_string();
    let queues = Emulator::shared().boto(&format!(
        "[u for u in c('sqs').list_queues().get('QueueUrls', []) if u.endswith('/{name}')]"
    ));
    assert_eq!(queues.as_array().unwrap().len(), 1);
}

#[test]
fn sigint_stops_cleanly_releases_the_lock_and_resumes() {
    let world = demo_world();
    let child = deploy_to_the_slow_resource(&world, 3000, &[], Stdio::piped());
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0));
    assert!(stderr.contains("Stopping the deploy"), "{stderr}");
    assert!(stderr.contains("was interrupted"), "{stderr}");
    // The lock is gone: an immediate deploy takes it without waiting, and finishes the job.
    let state = world.state();
    assert!(
        state["resources"]["Breaker"].is_object(),
        "the in-flight resource was not saved"
    );
    add_fault(&world, json!({"SleepMs": 3000}));
    let started = Instant::now();
    let resumed = world.deploy(&[]).success();
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(resumed.stdout.contains("6 unchanged"), "{}", resumed.stdout);
}

#[test]
fn a_custom_resource_is_refused_before_any_change_when_no_plugin_handles_it() {
    let world = demo_world();
    world.edit(|t| {
        t["Resources"]["Cleaner"] = json!({"Type": "Custom::S3AutoDeleteObjects", "Properties": {"ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:x"}});
    });
    // Only the example plugin: no custom-resource plugin is loaded.
    let plugins = world.echo.path().join("plugins.toml");
    std::fs::write(
        &plugins,
        format!(
            "inherit = false\n[[plugin]]\nname = \"example-echo\"\npath = \"{}\"\nversion = \"^2\"\n",
            cdkd_tests::plugin_library("cdkd_provider_example_echo").display()
        ),
    )
    .unwrap();
    let plugins = cdkd_tests::trusted(plugins);
    let run = world.deploy(&["--plugins", &plugins.display().to_string()]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("cannot be deployed; nothing was changed"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("Cleaner (Custom::S3AutoDeleteObjects) is a custom resource and no loaded plugin handles custom resources"),
        "{}",
        run.stderr
    );
    assert_eq!(world.state(), Value::Null);
}

#[test]
fn ssm_typed_parameters_are_read_from_parameter_store() {
    let world = demo_world();
    let name = format!("/cdkd/{}/timeout", world.bucket);
    Emulator::shared().boto(&format!(
        "c('ssm').put_parameter(Name='{name}', Value='75', Type='String')['Version']"
    ));
    world.edit(|t| {
        t["Parameters"]["QueueTimeout"] =
            json!({"Type": "AWS::SSM::Parameter::Value<String>", "Default": name});
        t["Resources"]["OrdersA9B65338"]["Properties"]["VisibilityTimeout"] =
            json!({"Ref": "QueueTimeout"});
    });
    world.deploy(&[]).success();
    let queue = world.physical("OrdersA9B65338");
    let visibility = Emulator::shared().boto(&format!("c('sqs').get_queue_attributes(QueueUrl='{queue}', AttributeNames=['VisibilityTimeout'])['Attributes']['VisibilityTimeout']"));
    assert_eq!(visibility, json!("75"));
    // CDK's own BootstrapVersion parameter is never read from SSM (it does not exist here).
    let template: Value = serde_json::from_slice(
        &std::fs::read(world.assembly.path().join("DemoStack.template.json")).unwrap(),
    )
    .unwrap();
    assert!(template["Parameters"]["BootstrapVersion"].is_object());
}

#[test]
fn cross_stack_references_in_both_styles_and_strong_ones_block_the_producers_destroy() {
    let world = demo_world();
    let app = workspace_root()
        .join("tests/fixtures/cdk.out/cross")
        .display()
        .to_string();
    let deployed = world
        .cdkd(&["deploy", "-a", &app, "--all", "--stack-concurrency", "2"])
        .success();
    let position = |needle: &str| {
        deployed
            .stdout
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} missing:\n{}", deployed.stdout))
    };
    assert!(
        position("ProducerStack: 2 created") < position("ConsumerStack |"),
        "the consumer started before its producer finished"
    );
    let show = |stack: &str| {
        world
            .cdkd(&["state", "show", stack, "--json"])
            .success()
            .json()["state"]
            .clone()
    };
    let producer = show("ProducerStack");
    let consumer = show("ConsumerStack");
    let export = "ProducerStack:ExportsOutputFnGetAttSharedDACC02AAQueueName1410B751";
    assert_eq!(producer["exportNames"], json!([export]));
    let queue_name = producer["outputs"][export].as_str().unwrap().to_string();
    assert_eq!(
        consumer["imports"],
        json!([{"sourceStack": "ProducerStack", "sourceRegion": "us-east-1", "exportName": export}])
    );
    assert_eq!(consumer["outputReads"][0]["sourceStack"], "ProducerStack");
    // The strong reference reached the consumer's topic, the weak one its log group.
    let reads = consumer["resources"]
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["resourceType"] == "AWS::SNS::Topic")
        .unwrap();
    assert_eq!(reads["properties"]["DisplayName"], json!(queue_name));
    let follows = consumer["resources"]
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["resourceType"] == "AWS::Logs::LogGroup")
        .unwrap();
    let weak_topic = producer["resources"]
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["resourceType"] == "AWS::SNS::Topic")
        .unwrap();
    assert_eq!(
        follows["properties"]["LogGroupName"],
        weak_topic["attributes"]["TopicName"]
    );

    let refused = world.cdkd(&["state", "destroy", "ProducerStack", "-f"]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .contains("ConsumerStack (us-east-1) still import"),
        "{}",
        refused.stderr
    );
    world
        .cdkd(&["destroy", "-a", &app, "--all", "-f"])
        .success();
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}

/// Creates (or updates) a CloudFormation stack in the emulator, outside cdkd, whose output
/// `Shared` is `value`.
fn cloudformation_producer(name: &str, value: &str, call: &str) {
    let template = json!({
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Shared": {"Value": value}},
    });
    Emulator::shared().boto(&format!(
        "c('cloudformation').{call}(StackName='{name}', TemplateBody=json.dumps({template}))['StackId']"
    ));
}

#[test]
fn get_stack_output_falls_back_to_a_cloudformation_stack_cdkd_has_no_state_for() {
    let producer = Emulator::unique("CfnProducer");
    cloudformation_producer(&producer, "from-cloudformation", "create_stack");
    let world = demo_world();
    let read = |stack: &str, output: &str| {
        let (stack, output) = (stack.to_string(), output.to_string());
        move |t: &mut Value| {
            t["Resources"]["Greeter"]["Properties"]["Message"] = json!({"Fn::Join": [" ", [
                "read",
                {"Fn::GetStackOutput": {"StackName": stack, "OutputName": output}},
            ]]});
        }
    };
    let message = |world: &AppWorld| -> Value {
        let greeter = world.physical("Greeter");
        let file: Value = serde_json::from_slice(
            &std::fs::read(world.echo.path().join(format!("{greeter}.json"))).unwrap(),
        )
        .unwrap();
        file["Message"].clone()
    };
    world.edit(read(&producer, "Shared"));

    // Without the fallback, the producer has no state: refused, naming it, nothing deployed.
    let refused = world.deploy(&["--no-cfn-fallback"]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused.stderr.contains(&format!(
            "stack {producer} has no state in us-east-1; deploy it first"
        )),
        "{}",
        refused.stderr
    );
    assert_eq!(world.state(), Value::Null);

    // With it, the CloudFormation stack's output is read.
    world.deploy(&[]).success();
    assert_eq!(message(&world), json!("read from-cloudformation"));
    // The reference is weak: the CloudFormation output changes, and a diff and deploy follow.
    cloudformation_producer(&producer, "changed", "update_stack");
    let app = world.assembly.path().display().to_string();
    let diff = world.cdkd(&["diff", "-a", &app]).success();
    assert!(diff.stdout.contains("read changed"), "{}", diff.stdout);
    world.deploy(&[]).success();
    assert_eq!(message(&world), json!("read changed"));

    // An output the CloudFormation stack lacks, and a stack neither cdkd nor CloudFormation has.
    world.edit(read(&producer, "Nope"));
    let refused = world.deploy(&[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused.stderr.contains(&format!(
            "stack {producer} (us-east-1) in CloudFormation has no output Nope"
        )),
        "{}",
        refused.stderr
    );
    world.edit(read("NoSuchStack", "Shared"));
    let refused = world.deploy(&[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            "stack NoSuchStack has no state in us-east-1 (and CloudFormation has no stack of that name); deploy it first"
        ),
        "{}",
        refused.stderr
    );
    // Any other CloudFormation error fails the deploy, naming the stack, region and error.
    world.edit(read(&producer, "Shared"));
    Emulator::shared().faults(
        json!([{"service": "cloudformation", "action": "DescribeStacks",
        "status": 403, "code": "AccessDenied", "message": "not allowed to describe stacks"}]),
    );
    let refused = world.deploy(&[]);
    Emulator::shared().faults(json!([]));
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused.stderr.contains(&format!(
            "reading the outputs of stack {producer} (us-east-1) from CloudFormation failed"
        )) && refused.stderr.contains("AccessDenied"),
        "{}",
        refused.stderr
    );
    assert_eq!(message(&world), json!("read changed"));
    world.cdkd(&["destroy", "-a", &app, "-f"]).success();
}

#[test]
fn recreate_moves_a_resource_between_layers_or_refuses_before_any_change() {
    let world = demo_world();
    world.deploy(&[]).success();
    let refused = world.deploy(&["--recreate-via-sdk-provider", "OrdersA9B65338"]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .contains("no loaded plugin handles AWS::SQS::Queue"),
        "{}",
        refused.stderr
    );
    let refused = world.deploy(&["--recreate-via-cc-api", "Nope"]);
    assert!(
        refused.stderr.contains("Nope cannot be re-created"),
        "{}",
        refused.stderr
    );

    let greeter = world.physical("Greeter");
    let moved = world
        .deploy(&["--recreate-via-sdk-provider", "Greeter"])
        .success();
    assert!(
        moved
            .stdout
            .contains("Greeter (Acme::Echo::Thing): replaced by "),
        "{}",
        moved.stdout
    );
    let recreated = world.physical("Greeter");
    assert_ne!(recreated, greeter);
    assert!(
        !world.echo.path().join(format!("{greeter}.json")).exists(),
        "the old resource was not destroyed"
    );
    assert!(world
        .echo
        .path()
        .join(format!("{recreated}.json"))
        .is_file());
    assert_eq!(
        world.state()["resources"]["Greeter"]["provisionedBy"],
        "sdk"
    );
}

#[test]
fn orphan_forgets_the_stack_and_leaves_its_resources() {
    let world = demo_world();
    world.deploy(&[]).success();
    let queue = world.physical("OrdersA9B65338");
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["orphan", "-a", &app, "-f"]).success();
    assert_eq!(world.state(), Value::Null);
    assert!(queue_exists(&queue), "orphan deleted the queue");
}

#[test]
fn ref_of_a_composite_id_is_the_segment_its_plugin_declares() {
    let world = demo_world();
    world.edit(|t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.insert(
            "Link".into(),
            json!({"Type": "Acme::Echo::Pair", "Properties": {"Left": "alpha", "Right": "beta"}}),
        );
        resources.insert(
            "Reader".into(),
            json!({"Type": "Acme::Echo::Thing", "Properties": {
                "Message": {"Fn::Join": ["/", [{"Ref": "Link"}, "read"]]}}}),
        );
        t["Outputs"]["LinkRef"] = json!({"Value": {"Ref": "Link"}});
    });
    world.deploy(&[]).success();
    let state = world.state();
    // State keeps the composite; every reader of Ref gets the left segment.
    assert_eq!(state["resources"]["Link"]["physicalId"], "alpha|beta");
    assert_eq!(state["outputs"]["LinkRef"], "alpha");
    let reader = world.physical("Reader");
    let file: Value = serde_json::from_slice(
        &std::fs::read(world.echo.path().join(format!("{reader}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(file["Message"], "alpha/read", "{file}");
    // A segment holding the separator is refused at pre-flight, the property named, and
    // nothing changes (the replacement it would need never starts).
    world.edit(|t| {
        t["Resources"]["Link"]["Properties"]["Left"] = json!("al|pha");
    });
    let refused = world.deploy(&["--no-rollback"]);
    assert_ne!(refused.code, Some(0));
    assert!(
        refused.stderr.contains("nothing was changed")
            && refused
                .stderr
                .contains("Link (Acme::Echo::Pair): property Left = \"al|pha\" contains '|'"),
        "{}",
        refused.stderr
    );
    assert_eq!(world.physical("Link"), "alpha|beta");
    world
        .cdkd(&[
            "destroy",
            "-a",
            &world.assembly.path().display().to_string(),
            "-f",
        ])
        .success();
}

#[test]
fn a_deploy_that_loses_its_lock_stops_and_fails() {
    let world = demo_world();
    // A short lock (renewed every half second), so the takeover is seen while the slow
    // resource is in flight.
    let child = deploy_to_the_slow_resource(
        &world,
        4000,
        &[("CDKD_LOCK_TTL_SECONDS", "2")],
        Stdio::piped(),
    );
    // Another process takes the lock over (as a force-unlock and a new acquire would).
    let key = "cdkd/DemoStack/us-east-1/lock.json";
    let thief = r#"{"owner": "thief@elsewhere:1", "timestamp": 1, "expiresAt": 99999999999999, "operation": "deploy"}"#;
    Emulator::shared().boto(&format!(
        "c('s3').put_object(Bucket='{}', Key='{key}', Body={thief:?}.encode()) and None",
        world.bucket
    ));
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("lost the lock on stack DemoStack"),
        "{stderr}"
    );
    assert!(stderr.contains("thief@elsewhere:1"), "{stderr}");
    // The resource in flight was saved, and the thief's lock was left alone.
    let lock = Emulator::shared().boto(&format!(
        "json.loads(c('s3').get_object(Bucket='{}', Key='{key}')['Body'].read())",
        world.bucket
    ));
    assert_eq!(lock["owner"], "thief@elsewhere:1");
    let resources = world.state()["resources"].clone();
    assert!(resources["Breaker"].is_object(), "{resources:#}");
}

#[test]
fn a_duration_that_is_not_a_finite_number_of_seconds_is_refused_not_a_panic() {
    let world = demo_world();
    let app = world.assembly.path().display().to_string();
    for (flag, value) in [
        ("--resource-timeout", "99999999999999"),
        ("--resource-timeout", "0"),
    ] {
        let refused = world.cdkd(&["deploy", "-a", &app, flag, value]);
        assert_eq!(refused.code, Some(1), "{flag} {value}: {}", refused.stderr);
        assert!(refused.stderr.contains(value), "{}", refused.stderr);
    }
    for value in ["inf", "NaN", "-1"] {
        let refused = world.cdkd(&[
            "providers",
            "call",
            "AWS::SQS::Queue",
            "read",
            &format!("--timeout={value}"),
        ]);
        assert_eq!(
            refused.code,
            Some(1),
            "--timeout {value}: {}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("finite number above 0")
                || refused.stderr.contains("not a number"),
            "{}",
            refused.stderr
        );
    }
    // An environment variable out of range is named, ignored, and the default used.
    let deployed =
        world.cdkd_with_env(&["deploy", "-a", &app], &[("CDKD_LOCK_TTL_SECONDS", "inf")]);
    assert_eq!(deployed.code, Some(0), "{}", deployed.stderr);
    assert!(
        deployed
            .stderr
            .contains("ignoring CDKD_LOCK_TTL_SECONDS: `inf` seconds is out of range"),
        "{}",
        deployed.stderr
    );
    assert!(!deployed.stderr.contains("panicked"), "{}", deployed.stderr);
}

#[test]
fn input_that_recursed_without_end_is_refused_by_name_not_by_a_stack_overflow() {
    let refused = |world: &AppWorld, expected: &str| {
        let run = world.deploy(&[]);
        assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains(expected),
            "{expected:?} in:\n{}",
            run.stderr
        );
        assert!(!run.stderr.contains("overflow"), "{}", run.stderr);
    };

    // A chain of 1,000 conditions, each naming the next.
    let world = demo_world();
    world.edit(|t| {
        let mut conditions = serde_json::Map::new();
        for i in 0..1000 {
            let next = if i == 999 {
                json!({"Fn::Equals": ["a", "a"]})
            } else {
                json!({"Fn::Not": [{"Fn::Not": [{"Condition": format!("C{}", i + 1)}]}]})
            };
            conditions.insert(format!("C{i}"), next);
        }
        t["Conditions"] = Value::Object(conditions);
        let (_, first) = t["Resources"]
            .as_object_mut()
            .unwrap()
            .iter_mut()
            .next()
            .unwrap();
        first["Condition"] = json!("C0");
    });
    refused(&world, "chain of more than 32 conditions");

    // A nested stack whose template is its parent's own.
    let world = demo_world();
    world.edit(|t| {
        t["Resources"]["Myself"] = json!({
            "Type": "AWS::CloudFormation::Stack",
            "Properties": {"TemplateURL": "https://example.com/self.json"},
            "Metadata": {"aws:asset:path": "DemoStack.template.json"}
        });
    });
    refused(&world, "a stack cannot nest itself");

    // An assembly that is a Stage of itself.
    let world = demo_world();
    edit_manifest(&world, |manifest| {
        manifest["artifacts"]["Itself"] = json!({
            "type": "cdk:cloud-assembly",
            "properties": {"directoryName": ".", "displayName": "Itself"}
        });
    });
    refused(&world, "this assembly is a Stage of itself");
}

#[test]
fn diff_of_a_stack_whose_record_a_newer_cdkd_wrote_fails_instead_of_planning_creates() {
    let world = demo_world();
    let app = world.assembly.path().display().to_string();
    Emulator::shared().boto(&format!(
        "c('s3').put_object(Bucket='{}', Key='cdkd/DemoStack/us-east-1/state.json', Body=json.dumps({{'version': 10, 'stackName': 'DemoStack', 'region': 'us-east-1'}}).encode()) and None",
        world.bucket
    ));
    let diff = world.cdkd(&["diff", "-a", &app]);
    assert_eq!(diff.code, Some(1), "{}\n{}", diff.stdout, diff.stderr);
    assert!(
        diff.stderr
            .contains("stack DemoStack (us-east-1): its state record cannot be read")
            && diff.stderr.contains("Unsupported state schema version 10"),
        "{}",
        diff.stderr
    );
    assert!(!diff.stdout.contains("create"), "{}", diff.stdout);
}

#[test]
fn stack_names_and_logical_ids_follow_cloudformations_rules() {
    // A `/` in a stack name made a record that `state list` and `gc` never saw.
    let world = demo_world();
    edit_manifest(&world, |manifest| {
        manifest["artifacts"]["DemoStack"]["properties"]["stackName"] = json!("Team/Demo");
    });
    let refused = world.deploy(&[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("stack Team/Demo: is not a valid stack name"),
        "{}",
        refused.stderr
    );
    assert!(world.cdkd(&["state", "list"]).stdout.trim().is_empty());

    let world = demo_world();
    world.edit(|t| {
        t["Resources"]["Odd/Id"] = json!({"Type": "AWS::SQS::Queue"});
    });
    let refused = world.deploy(&[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("Resources.Odd/Id: is not a valid logical id"),
        "{}",
        refused.stderr
    );
}

#[test]
fn an_asset_never_uploads_what_lies_outside_the_assembly() {
    const NODE_ASSET: &str =
        "asset.9927a1cc4d701f747f9b5918562de981641208ce14631ff6d1e4cee0770ddcb8";
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("id_rsa");
    std::fs::write(&secret, "PRIVATE KEY").unwrap();

    // A link in an asset folder to a file outside it.
    let world = AppWorld::of("local", "LocalStack", "assetlink", |_| {});
    let link = world.assembly.path().join(NODE_ASSET).join("id_rsa");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let refused = world.deploy(&[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!(
            "the link {} points outside the asset folder",
            link.display()
        )),
        "{}",
        refused.stderr
    );
    let objects = Emulator::shared().boto(&format!(
        "[o['Key'] for o in c('s3').list_objects_v2(Bucket='{}').get('Contents', [])]",
        world.assets
    ));
    // The other assets may have gone up meanwhile; the refused one did not.
    assert!(
        !objects
            .as_array()
            .unwrap()
            .iter()
            .any(|key| key.as_str().unwrap().starts_with("9927a1cc")),
        "the asset with the link was uploaded: {objects}"
    );

    // A source path leading out of the assembly.
    let world = AppWorld::of("local", "LocalStack", "assetpath", |_| {});
    let manifest = world.assembly.path().join("LocalStack.assets.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace(
            &format!("\"path\": \"{NODE_ASSET}\""),
            &format!("\"path\": \"{}\"", outside.path().display()),
        ),
    )
    .unwrap();
    let refused = world.deploy(&[]);
    assert_eq!(refused.code, Some(1), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("is outside the assembly"),
        "{}",
        refused.stderr
    );
}
