//! `cdkd synth`, `list` and `diff` on the committed fixtures and on a freshly synthesized app.

use std::collections::BTreeMap;

use cdkd::analyzer::intrinsics::contains_unknown;
use cdkd::analyzer::intrinsics::Lookup;
use cdkd::analyzer::plan::{plan, CreateOnlyProperties, ExternalValues, StackContext};
use cdkd::analyzer::template::Template;
use cdkd::state::bucket;
use cdkd::state::schema::{ProvisionedBy, ResourceState, StackState};
use cdkd::synthesis::assembly::CloudAssembly;
use cdkd_tests::{cdkd, cdkd_on, workspace_root, Emulator};
use serde_json::{json, Map, Value};

fn fixture(name: &str) -> String {
    workspace_root()
        .join("tests/fixtures/cdk.out")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn list_and_synth_read_committed_assemblies() {
    let list = cdkd(None, &["list", "--app", &fixture("app"), "--json"])
        .success()
        .json();
    assert_eq!(list[0]["id"], "ProducerStack");
    assert_eq!(list[1]["dependencies"], json!(["ProducerStack"]));
    let plain = cdkd(None, &["ls", "-a", &fixture("app"), "-d"])
        .success()
        .stdout;
    assert_eq!(
        plain,
        "ProducerStack\nAppStack\n  depends on: ProducerStack\n"
    );

    let yaml = cdkd(None, &["synth", "-a", &fixture("demo")])
        .success()
        .stdout;
    assert!(
        yaml.starts_with("Resources:\n  OrdersA9B65338:\n    Type: AWS::SQS::Queue\n"),
        "{yaml}"
    );
    let json = cdkd(None, &["synth", "-a", &fixture("demo"), "--json"])
        .success()
        .json();
    let on_disk: Value = serde_json::from_slice(
        &std::fs::read(
            workspace_root().join("tests/fixtures/cdk.out/demo/DemoStack.template.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(json, on_disk);

    let several = cdkd(None, &["synth", "-a", &fixture("app")]).success();
    assert!(
        several
            .stderr
            .contains("Supply a stack id (ProducerStack, AppStack)"),
        "{}",
        several.stderr
    );
    let missing = cdkd(None, &["synth", "-a", &fixture("app"), "Nope"]);
    assert_eq!(missing.code, Some(1));
    assert!(
        missing.stderr.contains("no stack matches 'Nope'"),
        "{}",
        missing.stderr
    );
}

#[test]
fn synth_runs_a_real_cdk_app_like_the_cli() {
    let apps = workspace_root().join("tests/fixtures/apps");
    assert!(
        apps.join("node_modules/aws-cdk-lib").is_dir(),
        "aws-cdk-lib is not installed: run `npm ci` in tests/fixtures/apps (tests/run.sh does)"
    );
    let out = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(cdkd_tests::cdkd_binary())
        .current_dir(&apps)
        .args(["synth", "--app", "node storage.js", "--output"])
        .arg(out.path())
        .args(["--json", "-c", "fixture:note=from-the-flag"])
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "eu-west-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let template: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(template["Parameters"]["Env"]["Default"], "dev");
    let committed: Value = serde_json::from_slice(
        &std::fs::read(
            workspace_root().join("tests/fixtures/cdk.out/storage/StorageStack.template.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        template, committed,
        "cdkd's synth differs from the CLI-equivalent fixture"
    );
    let assembly = CloudAssembly::read(out.path()).unwrap();
    assert_eq!(assembly.stacks[0].stack_name, "StorageStack");

    let failing = std::process::Command::new(cdkd_tests::cdkd_binary())
        .current_dir(&apps)
        .args([
            "synth",
            "--app",
            "node -e 'console.log(\"about to fail\"); process.exit(3)'",
            "--output",
        ])
        .arg(out.path())
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&failing.stderr);
    assert_eq!(failing.status.code(), Some(1));
    assert!(
        stderr.contains("exited with code 3; its last lines:\nabout to fail"),
        "{stderr}"
    );
}

struct NoExternal;
impl ExternalValues for NoExternal {
    fn import_value(&self, _: &str) -> Lookup {
        Lookup::Unknown
    }
    fn stack_output(&self, _: &str, _: &str, _: &str) -> Lookup {
        Lookup::Unknown
    }
    fn availability_zones(&self, _: &str) -> Lookup {
        Lookup::Unknown
    }
}
struct Nothing;
impl CreateOnlyProperties for Nothing {
    fn create_only(&self, _: &str) -> Vec<String> {
        Vec::new()
    }
}

/// A state record "as if deployed": every resource recorded with a physical id, the attributes
/// its dependents read, and the properties the plan resolves once those are known.
fn deployed_record(template: &Template) -> StackState {
    let context = StackContext {
        stack_name: "DemoStack".into(),
        region: "us-east-1".into(),
        account: "123456789012".into(),
        ref_values: Default::default(),
        availability_zones: Default::default(),
    };
    let mut state = StackState::new("DemoStack", "us-east-1");
    for (id, resource) in &template.resources {
        let mut attributes = Map::new();
        for attribute in ["Arn", "QueueName", "QueueUrl", "TopicName", "Greeting"] {
            attributes.insert(attribute.into(), json!(format!("{id}-{attribute}")));
        }
        state.resources.insert(
            id.clone(),
            ResourceState {
                physical_id: format!("{id}-physical"),
                resource_type: resource.kind.clone(),
                properties: Map::new(),
                observed_properties: None,
                attributes: Some(attributes),
                dependencies: Some(vec![]),
                metadata: None,
                deletion_policy: resource.deletion_policy.clone(),
                update_replace_policy: resource.update_replace_policy.clone(),
                provisioned_by: Some(ProvisionedBy::CcApi),
                extra: Map::new(),
            },
        );
    }
    // Properties depend on other records' values; two passes reach the fixed point here.
    for _ in 0..3 {
        let planned = plan(
            template,
            Some(&state),
            &context,
            &BTreeMap::new(),
            &NoExternal,
            &Nothing,
        )
        .unwrap();
        for (id, properties) in planned.properties {
            assert!(
                !contains_unknown(&Value::Object(properties.clone())),
                "{id} still has unknowns"
            );
            state.resources.get_mut(&id).unwrap().properties = properties;
        }
    }
    state
}

#[tokio::test]
async fn diff_is_all_create_against_empty_state_and_no_change_against_its_own_record() {
    let emulator = Emulator::shared();
    let bucket_name = Emulator::unique("diff");
    cdkd_on(
        emulator,
        &["--state-bucket", &bucket_name, "bootstrap", "--no-assets"],
    )
    .success();
    let args = |extra: &[&str]| {
        let mut all = vec!["--state-bucket", bucket_name.as_str(), "diff", "-a"];
        let demo = Box::leak(fixture("demo").into_boxed_str());
        all.push(demo);
        all.extend_from_slice(extra);
        all.into_iter().map(String::from).collect::<Vec<String>>()
    };
    let run = |extra: &[&str]| {
        let owned = args(extra);
        let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
        cdkd_on(emulator, &refs)
    };

    let empty = run(&["--json"]).success().json();
    let stack = &empty["stacks"][0];
    assert_eq!(
        stack["summary"],
        json!({"create": 5, "update": 0, "delete": 0, "noChange": 0})
    );
    assert!(stack["changes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["action"] == "CREATE"));
    assert_eq!(run(&["--fail"]).code, Some(1));
    let human = run(&[]).success().stdout;
    assert!(
        human.contains("[+] AWS::SQS::Queue OrdersA9B65338"),
        "{human}"
    );

    let template = Template::parse(
        &serde_json::from_slice(
            &std::fs::read(
                workspace_root().join("tests/fixtures/cdk.out/demo/DemoStack.template.json"),
            )
            .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    let mut record = deployed_record(&template);
    let client = bucket::s3_client(&emulator.aws().await, "us-east-1");
    let backend = cdkd::state::backend::StateBackend::new(
        client,
        &bucket_name,
        cdkd::state::keys::StateKeys::new("cdkd"),
    );
    backend
        .save("DemoStack", "us-east-1", &mut record, None)
        .await
        .unwrap();

    let same = run(&["--json", "--fail"]).success().json();
    assert_eq!(
        same["stacks"][0]["summary"],
        json!({"create": 0, "update": 0, "delete": 0, "noChange": 5})
    );
    assert_eq!(same["hasChanges"], false);
    assert!(run(&[])
        .success()
        .stdout
        .contains("There were no differences"));

    // One in-place change, one removed resource.
    let mut changed = backend
        .load("DemoStack", "us-east-1")
        .await
        .unwrap()
        .unwrap();
    changed
        .state
        .resources
        .get_mut("OrdersA9B65338")
        .unwrap()
        .properties
        .insert("VisibilityTimeout".into(), json!(10));
    let mut gone = changed.state.resources["Sessions"].clone();
    gone.resource_type = "AWS::Logs::LogGroup".into();
    changed.state.resources.insert("Leftover".into(), gone);
    let previous = changed.clone();
    backend
        .save(
            "DemoStack",
            "us-east-1",
            &mut changed.state,
            Some(&previous),
        )
        .await
        .unwrap();
    let diff = run(&["--json"]).success().json();
    let summary = &diff["stacks"][0]["summary"];
    assert_eq!(summary["update"], 1);
    assert_eq!(summary["delete"], 1);
    let update = diff["stacks"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["action"] == "UPDATE")
        .unwrap();
    assert_eq!(
        update["properties"][0],
        json!({"name": "VisibilityTimeout", "before": 10, "after": 45, "createOnly": false})
    );
    let human = run(&[]).success().stdout;
    assert!(
        human.contains(" └─ [~] VisibilityTimeout\n     ├─ [-] 10\n     └─ [+] 45"),
        "{human}"
    );
    assert!(
        human.contains("[-] AWS::Logs::LogGroup Leftover (destroy)"),
        "{human}"
    );
}

/// `diff --critical-path` of the reference app's stacks (issue 29): the longest chain counts a
/// fresh instance profile's IAM propagation once, before the instance that uses it (not the
/// role's and then the profile's), a function's `Active` only before a version or a custom
/// resource, and the deploy's own calls (lock, state, the first deploy's CloudFormation
/// question, intents, read-back, save); the total is the sum of what it lists.
#[tokio::test]
async fn the_critical_path_waits_for_propagation_once_and_counts_the_deploys_own_calls() {
    let emulator = Emulator::shared();
    let bucket_name = Emulator::unique("critical");
    cdkd_on(
        emulator,
        &["--state-bucket", &bucket_name, "bootstrap", "--no-assets"],
    )
    .success();
    let reference = fixture("reference");
    let path_of = |stack: &str| {
        let args = [
            "--state-bucket",
            bucket_name.as_str(),
            "diff",
            "-a",
            reference.as_str(),
            stack,
            "--critical-path",
            "--json",
        ];
        let document = cdkd_on(emulator, &args).success().json();
        document["stacks"][0]["criticalPath"].clone()
    };
    let total = |path: &Value| {
        let steps: u64 = path["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["expectedMs"].as_u64().unwrap() + s["settleMs"].as_u64().unwrap_or(0))
            .sum();
        let own: u64 = path["ownCalls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["expectedMs"].as_u64().unwrap())
            .sum();
        steps + own
    };

    let ec2 = path_of("RefEc2Stack");
    assert_eq!(ec2["totalMs"].as_u64().unwrap(), total(&ec2), "{ec2:#}");
    let steps = ec2["steps"].as_array().unwrap();
    let types: Vec<&str> = steps
        .iter()
        .map(|s| s["resourceType"].as_str().unwrap())
        .collect();
    assert_eq!(types.last(), Some(&"AWS::EC2::Instance"), "{ec2:#}");
    let instance = steps.last().unwrap();
    assert_eq!(instance["settleMs"], json!(7900), "{ec2:#}");
    let settled: Vec<&Value> = steps.iter().filter(|s| s["settleMs"].is_u64()).collect();
    assert_eq!(
        settled.len(),
        1,
        "propagation counted more than once: {ec2:#}"
    );
    let own: Vec<&str> = ec2["ownCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["what"].as_str().unwrap())
        .collect();
    assert_eq!(
        own,
        [
            "take the lock",
            "read the state and journal",
            "ask CloudFormation about a first deploy",
            "record the intents",
            "read back the last resource",
            "save the state"
        ]
    );

    // A function's URL and event source mapping take it Pending: no 300 s VPC wait on the path.
    let vpc_lambda = path_of("RefVpcLambdaCfStack");
    assert_eq!(vpc_lambda["totalMs"].as_u64().unwrap(), total(&vpc_lambda));
    assert!(
        vpc_lambda["totalMs"].as_u64().unwrap() < 200_000,
        "{vpc_lambda:#}"
    );
}

#[test]
fn ssm_and_availability_zone_lookups_are_answered_saved_and_the_app_rerun() {
    let emulator = Emulator::shared();
    emulator.boto("c('ssm').put_parameter(Name='/cdkd/fixture/greeting', Value='hello from ssm', Type='String', Overwrite=True)['Version']");
    let dir = tempfile::tempdir().unwrap();
    let script = workspace_root().join("tests/fixtures/apps/lookup.js");
    let mut command = std::process::Command::new(cdkd_tests::cdkd_binary());
    command.current_dir(dir.path()).args([
        "synth",
        "--json",
        "--app",
        &format!("node {}", script.display()),
    ]);
    for (key, value) in emulator.env() {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let template: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(template["Outputs"]["Looked"]["Value"], "hello from ssm");
    // The zones are EC2's (the emulator's us-east-1a, …), not CDK's dummy placeholders.
    let zones = emulator.boto("sorted(z['ZoneName'] for z in c('ec2').describe_availability_zones()['AvailabilityZones'])");
    let value = &template["Outputs"]["Zones"]["Value"];
    // CDK folds a join of literals into one string.
    let listed: Vec<Value> = match value.as_str() {
        Some(joined) => joined.split(',').map(Value::from).collect(),
        None => value["Fn::Join"][1].as_array().cloned().unwrap_or_default(),
    };
    assert_eq!(Value::from(listed), zones, "{}", template["Outputs"]);
    let saved: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("cdk.context.json")).unwrap())
            .unwrap();
    assert!(
        saved
            .as_object()
            .unwrap()
            .values()
            .any(|v| v == "hello from ssm"),
        "{saved}"
    );
}

#[test]
fn ec2_route53_kms_and_elb_lookups_are_answered_through_plugins() {
    let emulator = Emulator::shared();
    let setup = workspace_root().join("tests/fixtures/apps/lookups-setup.py");
    let made = emulator.boto(&format!(
        "__import__('runpy').run_path('{}', init_globals={{'c': c}})['RESULT']",
        setup.display()
    ));
    let dir = tempfile::tempdir().unwrap();
    let script = workspace_root().join("tests/fixtures/apps/lookups.js");
    let mut command = std::process::Command::new(cdkd_tests::cdkd_binary());
    command.current_dir(dir.path()).args([
        "synth",
        "--json",
        "--app",
        &format!("node {}", script.display()),
    ]);
    for (key, value) in emulator.env() {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let template: Value = serde_json::from_slice(&output.stdout).unwrap();
    let out = |name: &str| template["Outputs"][name]["Value"].clone();
    assert_eq!(out("VpcId"), made["vpc"], "{}", template["Outputs"]);
    assert_eq!(out("PublicSubnets"), made["public"]);
    assert_eq!(out("IsolatedSubnets"), made["isolated"]);
    assert_eq!(out("GroupId"), made["group"]);
    assert_eq!(out("ImageId"), made["image"]);
    assert_eq!(out("ZoneId"), made["zone"]);
    assert_eq!(out("KeyId"), made["key"]);
    assert_eq!(out("BalancerArn"), made["balancer"]);
    assert_eq!(out("ListenerArn"), made["listener"]);
    // Saved as the CDK CLI saves them: the VPC answer with its subnet groups.
    let saved: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("cdk.context.json")).unwrap())
            .unwrap();
    let vpc = saved
        .as_object()
        .unwrap()
        .iter()
        .find(|(key, _)| key.starts_with("vpc-provider:"))
        .map(|(_, v)| v.clone())
        .expect("a saved vpc-provider answer");
    assert_eq!(vpc["vpcId"], made["vpc"]);
    assert_eq!(vpc["vpcCidrBlock"], "10.42.0.0/16");
    let groups: Vec<(Value, Value)> = vpc["subnetGroups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let ids: Vec<&str> = g["subnets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["subnetId"].as_str().unwrap())
                .collect();
            (g["type"].clone(), json!(ids.join(",")))
        })
        .collect();
    assert_eq!(
        groups,
        [
            (json!("Public"), made["public"].clone()),
            (json!("Isolated"), made["isolated"].clone())
        ]
    );

    // No match: the error names the lookup and says what was asked.
    let broken = dir.path().join("broken.js");
    std::fs::write(
        &broken,
        std::fs::read_to_string(&script)
            .unwrap()
            .replace(
                "require('aws-cdk-lib",
                &format!(
                    "require('{}/tests/fixtures/apps/node_modules/aws-cdk-lib",
                    workspace_root().display()
                ),
            )
            .replace("'cdkd-lookup': 'yes'", "'cdkd-lookup': 'no-such-vpc'"),
    )
    .unwrap();
    let mut command = std::process::Command::new(cdkd_tests::cdkd_binary());
    command
        .current_dir(dir.path())
        .args(["synth", "--app", &format!("node {}", broken.display())]);
    for (key, value) in emulator.env() {
        command.env(key, value);
    }
    let failed = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success());
    assert!(
        stderr.contains("provider vpc-provider")
            && stderr.contains("Could not find any VPCs matching"),
        "{stderr}"
    );
}
