//! Lambda-backed custom resources through the custom-resource plugin, against this binary's own
//! emulator, which runs the handler's real code: the request CloudFormation would send, the
//! response through the pre-signed URL in the state bucket, `Data` to consumers and outputs,
//! updates with the old properties, a new physical id replacing the resource, a failing
//! handler rolled back, deletes on destroy, and no response placeholder left behind.

use std::process::Command;

use cdkd_tests::{cdkd_binary, copy_dir, workspace_root, Emulator, Run};
use serde_json::{json, Value};

/// One test's world: a state bucket and a copy of the custom-resource fixture.
struct World {
    bucket: String,
    tag: String,
    assembly: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let world = World::of("custom", &["bootstrap", "--no-assets"]);
        let tag = world.tag.clone();
        world.edit(|t| t["Resources"]["Echo"]["Properties"]["Tag"] = json!(tag));
        world
    }

    /// A world over the `fixture` assembly, bootstrapped with `bootstrap`.
    fn of(fixture: &str, bootstrap: &[&str]) -> World {
        let world = World {
            bucket: Emulator::unique("custom"),
            tag: Emulator::unique("tag"),
            assembly: tempfile::tempdir().unwrap(),
        };
        copy_dir(
            &workspace_root()
                .join("tests/fixtures/cdk.out")
                .join(fixture),
            world.assembly.path(),
        );
        world.cdkd(bootstrap).success();
        world
    }

    fn cdkd(&self, args: &[&str]) -> Run {
        let mut command = Command::new(cdkd_binary());
        command
            .current_dir(workspace_root())
            .args(["--state-bucket", &self.bucket])
            .args(args)
            .env_remove("CDKD_PLUGINS");
        for (key, value) in Emulator::shared().env() {
            command.env(key, value);
        }
        command.output().unwrap().into()
    }

    fn app(&self) -> String {
        self.assembly.path().display().to_string()
    }

    fn deploy(&self) -> Run {
        self.cdkd(&["deploy", "-a", &self.app()])
    }

    fn edit(&self, change: impl FnOnce(&mut Value)) {
        let path = self.assembly.path().join("CustomStack.template.json");
        let mut template: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(&mut template);
        std::fs::write(&path, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
    }

    fn state(&self) -> Value {
        self.cdkd(&["state", "show", "CustomStack", "--json"])
            .json()["state"]
            .clone()
    }

    /// The requests the handler received, oldest first (it logs each to SSM).
    fn requests(&self) -> Vec<Value> {
        let prefix = format!("/custom/{}/log/", self.tag);
        let found = Emulator::shared().boto(&format!(
            "sorted([(p['Name'], c('ssm').get_parameter(Name=p['Name'])['Parameter']['Value']) for p in c('ssm').describe_parameters(ParameterFilters=[{{'Key': 'Name', 'Option': 'BeginsWith', 'Values': ['{prefix}']}}], MaxResults=50)['Parameters']])"
        ));
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|pair| serde_json::from_str(pair[1].as_str().unwrap()).unwrap())
            .collect()
    }

    fn parameter(&self, name: &str) -> Value {
        Emulator::shared().boto(&format!(
            "c('ssm').get_parameter(Name='{name}')['Parameter']['Value']"
        ))
    }

    /// Objects (and versions) left under the response prefix of the state bucket.
    /// Response placeholders and their versions left in the state bucket, delete receipts aside.
    fn placeholders(&self) -> Value {
        Emulator::shared().boto(&format!(
            "[v['Key'] for v in c('s3').list_object_versions(Bucket='{b}', Prefix='custom-resource-responses/').get('Versions', []) if b'receipt of a finished delete' not in c('s3').get_object(Bucket='{b}', Key=v['Key'], VersionId=v['VersionId'])['Body'].read()] + [m['Key'] for m in c('s3').list_object_versions(Bucket='{b}', Prefix='custom-resource-responses/').get('DeleteMarkers', [])]",
            b = self.bucket
        ))
    }

    /// The delete receipts in the state bucket (docs/custom-resources.md, "After a crash").
    fn receipts(&self) -> Value {
        Emulator::shared().boto(&format!(
            "[json.loads(c('s3').get_object(Bucket='{b}', Key=o['Key'])['Body'].read()) for o in c('s3').list_objects_v2(Bucket='{b}', Prefix='custom-resource-responses/').get('Contents', [])]",
            b = self.bucket
        ))
    }
}

#[test]
fn a_lambda_backed_custom_resource_lives_as_in_cloudformation() {
    let world = World::new();
    let shown = world
        .cdkd(&["providers", "show", "Custom::Anything", "--json"])
        .success();
    assert!(shown.stdout.contains("custom-resource"), "{}", shown.stdout);

    // Create: the handler ran, its Data reached the consumer and the outputs.
    let first = world.deploy().success();
    assert!(
        first.stdout.contains("created echo-hello"),
        "{}",
        first.stdout
    );
    let state = world.state();
    let echo = &state["resources"]["Echo"];
    assert_eq!(echo["physicalId"], json!("echo-hello"));
    assert_eq!(echo["resourceType"], json!("Custom::Echo"));
    assert_eq!(echo["provisionedBy"], json!("sdk"));
    assert_eq!(echo["attributes"]["Echo"], json!("hello!"));
    assert_eq!(state["outputs"]["EchoOut"], json!("hello!"));
    assert_eq!(state["outputs"]["EchoId"], json!("echo-hello"));
    let consumer = state["resources"]["Consumer8D6BE417"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(world.parameter(&consumer), json!("hello!"));
    let requests = world.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let create = &requests[0];
    assert_eq!(create["RequestType"], json!("Create"));
    assert_eq!(create["ResourceType"], json!("Custom::Echo"));
    assert_eq!(create["LogicalResourceId"], json!("Echo"));
    // As CloudFormation sends them: scalars as strings, ServiceToken included.
    assert_eq!(create["ResourceProperties"]["Count"], json!("3"));
    assert!(create["ResourceProperties"]["ServiceToken"]
        .as_str()
        .unwrap()
        .starts_with("arn:aws:lambda:us-east-1:"));
    assert_eq!(
        world.placeholders(),
        json!([]),
        "a response placeholder was left"
    );

    // Unchanged: the handler is not invoked.
    world.deploy().success();
    assert_eq!(world.requests().len(), 1);

    // A new Message: Update with the old properties; the new physical id replaces the
    // resource, so the old one gets a Delete after the deploy.
    world.edit(|t| t["Resources"]["Echo"]["Properties"]["Message"] = json!("bye"));
    world.deploy().success();
    let requests = world.requests();
    let kinds: Vec<&str> = requests
        .iter()
        .map(|r| r["RequestType"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["Create", "Update", "Delete"], "{requests:?}");
    assert_eq!(requests[1]["PhysicalResourceId"], json!("echo-hello"));
    assert_eq!(
        requests[1]["OldResourceProperties"]["Message"],
        json!("hello")
    );
    assert_eq!(requests[2]["PhysicalResourceId"], json!("echo-hello"));
    assert_eq!(requests[2]["ResourceProperties"]["Message"], json!("hello"));
    assert_eq!(
        world.state()["resources"]["Echo"]["physicalId"],
        json!("echo-bye")
    );
    assert_eq!(world.parameter(&consumer), json!("bye!"));

    // Destroy sends the Delete of the current resource.
    world.cdkd(&["destroy", "-a", &world.app(), "-f"]).success();
    let last = world.requests().pop().unwrap();
    assert_eq!(last["RequestType"], json!("Delete"));
    assert_eq!(last["PhysicalResourceId"], json!("echo-bye"));
    assert_eq!(world.placeholders(), json!([]));
    // Each finished Delete (the replaced resource's, the destroyed one's) leaves its receipt, so
    // a run killed before its save does not send it again; nothing of the answer is in it.
    let receipts = world.receipts();
    let mut ids: Vec<&str> = receipts
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["Status"], json!("SUCCESS"), "{r}");
            assert!(r.get("Data").is_none(), "{r}");
            r["PhysicalResourceId"].as_str().unwrap()
        })
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["echo-bye", "echo-hello"]);
}

#[test]
fn a_placeholder_purge_that_cannot_list_versions_warns_naming_the_two_grants() {
    let world = World::new();
    // The state bucket refuses version listings (an older four-action policy); the deploy
    // still succeeds, and says what survives and which grants are missing.
    Emulator::shared().faults(json!([{"service": "s3", "method": "GET",
        "queryContains": "versions", "pathContains": world.bucket,
        "status": 403, "code": "AccessDenied", "message": "Access Denied"}]));
    let deployed = world.deploy();
    Emulator::shared().faults(json!([]));
    let deployed = deployed.success();
    let warning = deployed
        .stderr
        .lines()
        .find(|l| l.contains("custom-resource-responses/"))
        .unwrap_or_else(|| panic!("no purge warning:\n{}", deployed.stderr));
    assert!(
        warning
            .contains("Grant s3:ListBucketVersions and s3:DeleteObjectVersion on the state bucket"),
        "{warning}"
    );
    assert!(warning.contains("a custom-resource response"), "{warning}");
    world.cdkd(&["destroy", "-a", &world.app(), "-f"]).success();
}

#[test]
fn a_failing_handler_fails_the_deploy_with_its_reason_and_is_rolled_back() {
    let world = World::new();
    world.edit(|t| t["Resources"]["Echo"]["Properties"]["Fail"] = json!("true"));
    let run = world.deploy();
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("answered FAILED: asked to fail"), "{all}");
    assert!(all.contains("rolled back"), "{all}");
    // What was created before it (the handler's role and function) was rolled back.
    let state = world.state();
    assert!(
        state["resources"].as_object().is_none_or(|r| r.is_empty()),
        "{state}"
    );
    assert_eq!(world.placeholders(), json!([]));
}

#[test]
fn a_bucket_with_auto_delete_objects_is_emptied_by_its_handler_on_destroy() {
    // aws-cdk-lib's own handler (an asset) empties the bucket; cdkd's S3 plugin never does.
    let world = World::of("autodelete", &["bootstrap"]);
    world.deploy().success();
    let state = world
        .cdkd(&["state", "show", "AutoDeleteStack", "--json"])
        .json()["state"]
        .clone();
    let bucket = state["resources"]["ScratchF72D2ED6"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let cleaner = &state["resources"]["ScratchAutoDeleteObjectsCustomResourceDA7C4F2C"];
    assert_eq!(cleaner["provisionedBy"], json!("sdk"), "{state}");
    // Several objects, several versions each.
    Emulator::shared().boto(&format!(
        "[c('s3').put_object(Bucket='{bucket}', Key=f'k{{i}}', Body=b'v{{j}}')['ETag'] for i in range(3) for j in range(2)]"
    ));
    let versions = Emulator::shared().boto(&format!(
        "len(c('s3').list_object_versions(Bucket='{bucket}').get('Versions', []))"
    ));
    assert_eq!(versions, json!(6));
    let destroyed = world.cdkd(&["destroy", "-a", &world.app(), "-f"]);
    assert_eq!(
        destroyed.code,
        Some(0),
        "{}\n{}",
        destroyed.stdout,
        destroyed.stderr
    );
    let exists = Emulator::shared().boto(&format!(
        "'{bucket}' in [b['Name'] for b in c('s3').list_buckets()['Buckets']]"
    ));
    assert_eq!(exists, json!(false), "the bucket survived its destroy");
    assert_eq!(world.placeholders(), json!([]));
}

#[test]
fn a_no_echo_response_reaches_its_consumer_but_never_state() {
    let world = World::new();
    world.edit(|t| t["Resources"]["Echo"]["Properties"]["NoEcho"] = json!("true"));
    world.deploy().success();
    let state = world.state();
    let consumer = state["resources"]["Consumer8D6BE417"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    // AWS got the real value; everything cdkd wrote down holds the mask.
    assert_eq!(world.parameter(&consumer), json!("hello!"));
    assert_eq!(
        state["resources"]["Echo"]["attributes"]["Echo"],
        json!("***")
    );
    assert_eq!(
        state["resources"]["Consumer8D6BE417"]["properties"]["Value"],
        json!("***")
    );
    assert_eq!(state["outputs"]["EchoOut"], json!("***"));
    let raw = Emulator::shared().boto(&format!(
        "c('s3').get_object(Bucket='{}', Key='cdkd/CustomStack/us-east-1/state.json')['Body'].read().decode()",
        world.bucket
    ));
    assert!(!raw.as_str().unwrap().contains("hello!"), "{raw}");
    // Unchanged: nothing needs the value again, the handler is not invoked.
    world.deploy().success();
    assert_eq!(world.requests().len(), 1);
    // The consumer must be written again but the custom resource is unchanged: refused with
    // the remedy rather than sending the mask.
    world.edit(|t| {
        t["Resources"]["Consumer8D6BE417"]["Properties"]["Description"] = json!("changed")
    });
    let refused = world.deploy();
    assert_eq!(refused.code, Some(1));
    let all = format!("{}{}", refused.stdout, refused.stderr);
    assert!(all.contains("Echo.Echo is a secret"), "{all}");
    // Changing the custom resource too makes its handler answer again in the same deploy.
    world.edit(|t| t["Resources"]["Echo"]["Properties"]["Nonce"] = json!("2"));
    world.deploy().success();
    assert_eq!(world.parameter(&consumer), json!("hello!"));
    world.cdkd(&["destroy", "-a", &world.app(), "-f"]).success();
}

#[test]
fn aws_cdk_libs_own_custom_resources_run_their_real_handlers() {
    let world = World::of("framework", &["bootstrap"]);
    let run = world.deploy();
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let state = world
        .cdkd(&["state", "show", "FrameworkStack", "--json"])
        .json()["state"]
        .clone();
    // The provider framework's onEvent (aws-cdk-lib's asset) called the user function and
    // answered with its Data.
    let greeter = &state["resources"]["Greeter"];
    assert_eq!(greeter["physicalId"], json!("greeter-cdkd"), "{state}");
    assert_eq!(greeter["attributes"]["Greeting"], json!("hi cdkd"));
    assert_eq!(state["outputs"]["Greeting"], json!("hi cdkd"));
    let param = state["resources"]["GreetingParam3E268858"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(world.parameter(&param), json!("hi cdkd"));
    // The VPC's default security group lost its rules to the handler.
    let vpc = state["resources"]["NetDBED6B57"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let rules = Emulator::shared().boto(&format!(
        "[(len(g['IpPermissions']), len(g['IpPermissionsEgress'])) for g in c('ec2').describe_security_groups(Filters=[{{'Name': 'vpc-id', 'Values': ['{vpc}']}}, {{'Name': 'group-name', 'Values': ['default']}}])['SecurityGroups']]"
    ));
    assert_eq!(rules, json!([[0, 0]]), "the default group still has rules");
    // AwsCustomResource (Custom::AWS) made its SDK call and exposed the response field.
    assert_eq!(state["outputs"]["Looked"], json!("from ssm"), "{state}");
    // logRetention (Custom::LogRetention) set the function's log group retention.
    let function = state["resources"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(id, _)| {
            id.starts_with("Retained") && !id.contains("Role") && !id.contains("LogRetention")
        })
        .map(|(_, r)| r["physicalId"].as_str().unwrap().to_string())
        .unwrap();
    let retention = Emulator::shared().boto(&format!(
        "[g.get('retentionInDays') for g in c('logs').describe_log_groups(logGroupNamePrefix='/aws/lambda/{function}')['logGroups']]"
    ));
    assert_eq!(retention, json!([7]), "log group of {function}");
    assert_eq!(world.placeholders(), json!([]));
    let destroyed = world.cdkd(&["destroy", "-a", &world.app(), "-f"]);
    assert_eq!(
        destroyed.code,
        Some(0),
        "{}\n{}",
        destroyed.stdout,
        destroyed.stderr
    );
    let left = Emulator::shared().boto(&format!(
        "[v['VpcId'] for v in c('ec2').describe_vpcs()['Vpcs'] if v['VpcId'] == '{vpc}']"
    ));
    assert_eq!(left, json!([]));
}

#[test]
fn an_sns_backed_custom_resource_is_answered_by_its_topics_subscriber() {
    let world = World::of("snsbacked", &["bootstrap", "--no-assets"]);
    let run = world.deploy();
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let state = world
        .cdkd(&["state", "show", "SnsBackedStack", "--json"])
        .json()["state"]
        .clone();
    assert_eq!(
        state["resources"]["ViaTopic"]["physicalId"],
        json!("topic-sns")
    );
    assert_eq!(state["outputs"]["Echo"], json!("Create sns"), "{state}");
    assert_eq!(world.placeholders(), json!([]));
    let destroyed = world.cdkd(&["destroy", "-a", &world.app(), "-f"]);
    assert_eq!(
        destroyed.code,
        Some(0),
        "{}\n{}",
        destroyed.stdout,
        destroyed.stderr
    );
    assert_eq!(world.placeholders(), json!([]));
}

#[test]
fn a_no_echo_value_crosses_stacks_only_within_one_run() {
    let world = World::of("noecho", &["bootstrap", "--no-assets"]);
    let run = world.cdkd(&["deploy", "-a", &world.app(), "--all"]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let consumer = world
        .cdkd(&["state", "show", "NoEchoConsumer", "--json"])
        .json()["state"]
        .clone();
    let copy = consumer["resources"]["Copy1ED8A51E"].clone();
    // The consumer got the plaintext from the producer deployed earlier in the same run...
    let name = copy["physicalId"].as_str().unwrap().to_string();
    assert_eq!(world.parameter(&name), json!("classified!"));
    // ...and masks it in its own record; the producer's export is the mask too.
    assert_eq!(copy["properties"]["Value"], json!("***"), "{consumer}");
    let producer = world
        .cdkd(&["state", "show", "NoEchoProducer", "--json"])
        .json()["state"]
        .clone();
    assert_eq!(
        producer["outputs"]["ExportsOutputFnGetAttSecretEchoC9389C67"],
        json!("***")
    );
    // The consumer alone, needing to write the value again, is refused with the remedy.
    let path = world.assembly.path().join("NoEchoConsumer.template.json");
    let mut template: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    template["Resources"]["Copy1ED8A51E"]["Properties"]["Description"] = json!("changed");
    std::fs::write(&path, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
    let refused = world.cdkd(&["deploy", "-a", &world.app(), "NoEchoConsumer"]);
    assert_eq!(refused.code, Some(1));
    let all = format!("{}{}", refused.stdout, refused.stderr);
    assert!(all.contains("is a NoEcho secret"), "{all}");
    world
        .cdkd(&["destroy", "-a", &world.app(), "--all", "-f"])
        .success();
}

#[test]
fn a_handler_that_never_answers_times_out_and_is_rolled_back() {
    let world = World::new();
    world.edit(|t| t["Resources"]["Echo"]["Properties"]["Silent"] = json!("true"));
    let run = world.cdkd(&["deploy", "-a", &world.app(), "--resource-timeout", "3"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(all.contains("did not answer within 3 s"), "{all}");
    assert!(all.contains("rolled back"), "{all}");
    assert_eq!(world.placeholders(), json!([]));
}
