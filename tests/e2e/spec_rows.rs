//! The state spec's remaining rows through the `cdkd` binary against the emulator: the exports
//! index, `Fn::ImportValue` from CloudFormation's exports, cross-account `Fn::GetStackOutput`,
//! what `outputReads` records and the `--recreate-via-*` consumer warning, `Retain` rows kept
//! through a partial destroy, `cdkd rollback` refusing a masked baseline, `bootstrap --destroy`
//! deleting the marker last, and a re-import that keeps the attributes at the same id.
//!
//! Stacks are small hand-written assemblies of the example plugin's `Acme::Echo::Thing` (a file
//! per resource in the world's echo folder), so each deploy is quick.

use std::path::Path;

use cdkd_tests::{cdkd_binary, test_plugins_file, workspace_root, AppWorld, Emulator, Run};
use serde_json::{json, Value};

/// A world (state bucket, echo folder, plugins) whose own app is not used: each test deploys
/// assemblies written by [`assembly`].
fn world(prefix: &str) -> AppWorld {
    AppWorld::without_assets("demo", "DemoStack", prefix)
}

/// A cloud assembly with `stacks` (name, template), in environment-agnostic form.
fn assembly(stacks: &[(&str, Value)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut artifacts = serde_json::Map::new();
    for (name, template) in stacks {
        let file = format!("{name}.template.json");
        std::fs::write(
            dir.path().join(&file),
            serde_json::to_vec_pretty(template).unwrap(),
        )
        .unwrap();
        artifacts.insert(
            name.to_string(),
            json!({
                "type": "aws:cloudformation:stack",
                "environment": "aws://unknown-account/unknown-region",
                "properties": {"templateFile": file},
                "displayName": name,
            }),
        );
    }
    std::fs::write(
        dir.path().join("manifest.json"),
        serde_json::to_vec_pretty(&json!({"version": "55.0.0", "artifacts": artifacts})).unwrap(),
    )
    .unwrap();
    dir
}

fn path(dir: &tempfile::TempDir) -> String {
    dir.path().display().to_string()
}

/// A stack of one echo thing whose message is `message`, with `outputs`.
fn thing_stack(message: Value, outputs: Value) -> Value {
    json!({
        "Resources": {"Thing": {"Type": "Acme::Echo::Thing", "Properties": {"Message": message}}},
        "Outputs": outputs,
    })
}

/// A producer whose thing says `says`, exporting its greeting as `export`.
fn exporter(says: &str, export: &str) -> Value {
    thing_stack(
        json!(says),
        json!({"Greeting": {"Value": {"Fn::GetAtt": ["Thing", "Greeting"]},
            "Export": {"Name": export}}}),
    )
}

/// The message the echo thing of `stack` holds (its file in the echo folder).
fn message(world: &AppWorld, stack: &str) -> Value {
    let record = world.resources(stack);
    let physical = record["Thing"]["physicalId"].as_str().unwrap().to_string();
    let file: Value = serde_json::from_slice(
        &std::fs::read(world.echo.path().join(format!("{physical}.json"))).unwrap(),
    )
    .unwrap();
    file["Message"].clone()
}

fn record(world: &AppWorld, stack: &str) -> Value {
    world
        .cdkd(&["state", "show", stack, "--json"])
        .success()
        .json()["state"]
        .clone()
}

/// The body of `key` in `bucket`, `null` when there is none.
fn object(bucket: &str, key: &str) -> Value {
    Emulator::shared().boto(&format!(
        "(lambda b, k: json.loads(c('s3').get_object(Bucket=b, Key=k)['Body'].read()) if k in [o['Key'] for o in c('s3').list_objects_v2(Bucket=b, Prefix=k).get('Contents', [])] else None)('{bucket}', '{key}')"
    ))
}

fn put_object(bucket: &str, key: &str, body: &str) {
    let body = body.replace('\\', "\\\\").replace('\'', "\\'");
    Emulator::shared().boto(&format!(
        "c('s3').put_object(Bucket='{bucket}', Key='{key}', Body='{body}')['ETag']"
    ));
}

fn delete_object(bucket: &str, key: &str) {
    Emulator::shared().boto(&format!(
        "c('s3').delete_object(Bucket='{bucket}', Key='{key}')['ResponseMetadata']['HTTPStatusCode']"
    ));
}

const INDEX: &str = "cdkd/_index/us-east-1/exports.json";

fn assert_contains(run: &Run, stream: &str, needle: &str) {
    let text = if stream == "stdout" {
        &run.stdout
    } else {
        &run.stderr
    };
    assert!(
        text.contains(needle),
        "{stream} lacks {needle:?}:\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn the_exports_index_is_written_read_rebuilt_and_emptied() {
    let world = world("index");
    let name = Emulator::unique("Shared");
    let first = assembly(&[("FirstProducer", exporter("first", &name))]);
    let second = assembly(&[("SecondProducer", exporter("second", &name))]);
    let importer = |says: &str| {
        assembly(&[(
            "Importer",
            thing_stack(
                json!({"Fn::Join": [" ", [says, {"Fn::ImportValue": name}]]}),
                json!({}),
            ),
        )])
    };

    // Written on deploy: the export names its producer.
    world.cdkd(&["deploy", "-a", &path(&first)]).success();
    let index = object(&world.bucket, INDEX);
    assert_eq!(index["exports"][&name]["stack"], "FirstProducer", "{index}");
    assert_eq!(index["region"], "us-east-1");

    // Read instead of a scan: an unreadable record of an unrelated stack is never read.
    put_object(
        &world.bucket,
        "cdkd/Decoy/us-east-1/state.json",
        "not a record",
    );
    let consumer = importer("a");
    let deployed = world.cdkd(&["deploy", "-a", &path(&consumer)]).success();
    assert!(
        !deployed
            .stderr
            .contains("skipping the record of stack Decoy"),
        "the import scanned every record:\n{}",
        deployed.stderr
    );
    assert_eq!(message(&world, "Importer"), json!("a hello, first"));

    // A second producer of the name: its deploy warns, and the latest writer wins.
    let shadowing = world.cdkd(&["deploy", "-a", &path(&second)]).success();
    assert_contains(
        &shadowing,
        "stderr",
        &format!("export {name} (us-east-1) is also exported by stack FirstProducer; the latest writer wins, so Fn::ImportValue {name} now reads SecondProducer's value"),
    );
    assert_eq!(
        object(&world.bucket, INDEX)["exports"][&name]["stack"],
        "SecondProducer"
    );
    world
        .cdkd(&["deploy", "-a", &path(&importer("b"))])
        .success();
    assert_eq!(message(&world, "Importer"), json!("b hello, second"));

    // Rebuildable from the records: with the index gone, the records are scanned (the decoy
    // is met and skipped), the latest writer still wins, and the index is written again.
    delete_object(&world.bucket, INDEX);
    let rebuilt = world
        .cdkd(&["deploy", "-a", &path(&importer("c"))])
        .success();
    assert_contains(&rebuilt, "stderr", "skipping the record of stack Decoy");
    assert_eq!(message(&world, "Importer"), json!("c hello, second"));
    let index = object(&world.bucket, INDEX);
    assert_eq!(
        index["exports"][&name]["stack"], "SecondProducer",
        "{index}"
    );
    delete_object(&world.bucket, "cdkd/Decoy/us-east-1/state.json");

    // Removed on a clean destroy: the consumer, then each producer; the index ends empty.
    for stack in ["Importer", "SecondProducer"] {
        world.cdkd(&["state", "destroy", stack, "-f"]).success();
    }
    let index = object(&world.bucket, INDEX);
    assert!(
        !index.to_string().contains("SecondProducer"),
        "a destroyed stack is still indexed: {index}"
    );
    world
        .cdkd(&["state", "destroy", "FirstProducer", "-f"])
        .success();
    let index = object(&world.bucket, INDEX);
    assert!(
        index.is_null() || index["exports"] == json!({}),
        "the index outlived every producer: {index}"
    );
}

#[test]
fn an_import_of_an_export_cdkd_has_no_state_for_is_read_from_cloudformation() {
    let world = world("cfnexport");
    let name = Emulator::unique("CfnShared");
    let stack = Emulator::unique("CfnExporter");
    let template = json!({
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Shared": {"Value": "from-cloudformation", "Export": {"Name": name}}},
    });
    Emulator::shared().boto(&format!(
        "c('cloudformation').create_stack(StackName='{stack}', TemplateBody=json.dumps({template}))['StackId']"
    ));
    let consumer = assembly(&[(
        "CfnImporter",
        thing_stack(
            json!({"Fn::Join": [" ", ["got", {"Fn::ImportValue": name}]]}),
            json!({}),
        ),
    )]);
    // --no-cfn-fallback: cdkd state only, so no producer.
    let refused = world.cdkd(&["deploy", "-a", &path(&consumer), "--no-cfn-fallback"]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert_contains(
        &refused,
        "stderr",
        &format!("no deployed stack in us-east-1 exports {name}; deploy the producer first"),
    );
    // With the fallback: CloudFormation's ListExports answers, and the read is not recorded
    // as a strong reference (cdkd never destroys that producer).
    world.cdkd(&["deploy", "-a", &path(&consumer)]).success();
    assert_eq!(
        message(&world, "CfnImporter"),
        json!("got from-cloudformation")
    );
    assert_eq!(record(&world, "CfnImporter")["imports"], Value::Null);
    // An export neither has.
    let missing = assembly(&[(
        "CfnImporter",
        thing_stack(
            json!({"Fn::ImportValue": "NoSuchExportAnywhere"}),
            json!({}),
        ),
    )]);
    let refused = world.cdkd(&["deploy", "-a", &path(&missing)]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert_contains(
        &refused,
        "stderr",
        "no deployed stack in us-east-1 exports NoSuchExportAnywhere (neither in cdkd state nor in CloudFormation)",
    );
    world
        .cdkd(&["state", "destroy", "CfnImporter", "-f"])
        .success();
}

#[test]
fn output_reads_leave_out_cloudformation_and_recreate_names_the_consumers() {
    let world = world("reads");
    let cfn = Emulator::unique("CfnOutputs");
    let template = json!({
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {"Shared": {"Value": "cfn-value"}},
    });
    Emulator::shared().boto(&format!(
        "c('cloudformation').create_stack(StackName='{cfn}', TemplateBody=json.dumps({template}))['StackId']"
    ));
    let producer = assembly(&[(
        "ReadProducer",
        thing_stack(
            json!("produced"),
            json!({"Out": {"Value": {"Fn::GetAtt": ["Thing", "Greeting"]}}}),
        ),
    )]);
    world.cdkd(&["deploy", "-a", &path(&producer)]).success();
    let consumer = assembly(&[(
        "ReadConsumer",
        thing_stack(
            json!({"Fn::Join": [" ", [
                {"Fn::GetStackOutput": {"StackName": "ReadProducer", "OutputName": "Out"}},
                {"Fn::GetStackOutput": {"StackName": cfn, "OutputName": "Shared"}},
            ]]}),
            json!({}),
        ),
    )]);
    world.cdkd(&["deploy", "-a", &path(&consumer)]).success();
    assert_eq!(
        message(&world, "ReadConsumer"),
        json!("hello, produced cfn-value")
    );
    // Only the read served from cdkd state is recorded.
    assert_eq!(
        record(&world, "ReadConsumer")["outputReads"],
        json!([{"sourceStack": "ReadProducer", "sourceRegion": "us-east-1", "outputName": "Out"}])
    );
    // Re-creating the producer's thing warns with the consumer that reads it.
    let recreated = world
        .cdkd(&[
            "deploy",
            "-a",
            &path(&producer),
            "--recreate-via-sdk-provider",
            "Thing",
        ])
        .success();
    assert_contains(
        &recreated,
        "stderr",
        "re-creating Thing in ReadProducer (us-east-1) gives it a new physical id",
    );
    assert_contains(
        &recreated,
        "stderr",
        "ReadConsumer (us-east-1): Fn::GetStackOutput Out",
    );
    for stack in ["ReadConsumer", "ReadProducer"] {
        world.cdkd(&["state", "destroy", stack, "-f"]).success();
    }
}

#[test]
fn a_get_stack_output_with_role_arn_reads_the_other_accounts_state() {
    let world = world("crossaccount");
    let role = "arn:aws:iam::222222222222:role/CdkdStateReader";
    let assumed = Emulator::shared().boto(&format!(
        "c('sts').assume_role(RoleArn='{role}', RoleSessionName='producer')['Credentials']"
    ));
    let (key, secret, token) = (
        assumed["AccessKeyId"].as_str().unwrap().to_string(),
        assumed["SecretAccessKey"].as_str().unwrap().to_string(),
        assumed["SessionToken"].as_str().unwrap().to_string(),
    );
    // The producer's account: its own canonical state bucket, deployed with its credentials.
    let theirs = "cdkd-state-222222222222";
    let as_producer = |args: &[&str]| -> Run {
        let mut command = std::process::Command::new(cdkd_binary());
        command.current_dir(workspace_root());
        for (name, value) in Emulator::shared().env() {
            command.env(name, value);
        }
        command
            .env("CDKD_PLUGINS", test_plugins_file())
            .env("CDKD_ECHO_DIR", world.echo.path())
            .args(["--state-bucket", theirs])
            .args(args)
            .env("AWS_ACCESS_KEY_ID", &key)
            .env("AWS_SECRET_ACCESS_KEY", &secret)
            .env("AWS_SESSION_TOKEN", &token);
        command.output().unwrap().into()
    };
    as_producer(&["bootstrap", "--no-assets"]).success();
    let producer = assembly(&[(
        "OtherAccountProducer",
        thing_stack(
            json!("abroad"),
            json!({"Out": {"Value": {"Fn::GetAtt": ["Thing", "Greeting"]}}}),
        ),
    )]);
    as_producer(&["deploy", "-a", &path(&producer)]).success();
    let owner = Emulator::shared().boto(&format!(
        "c('sts').get_caller_identity()['Account'] != '222222222222' and '{theirs}' not in [b['Name'] for b in c('s3').list_buckets()['Buckets']]"
    ));
    assert_eq!(
        owner,
        json!(true),
        "the producer's bucket is in the caller's account"
    );

    let read = |stack: &str| {
        assembly(&[(
            "CrossAccountConsumer",
            thing_stack(
                json!({"Fn::Join": [" ", ["read", {"Fn::GetStackOutput": {
                    "StackName": stack, "OutputName": "Out", "RoleArn": role}}]]}),
                json!({}),
            ),
        )])
    };
    let consumer = read("OtherAccountProducer");
    world.cdkd(&["deploy", "-a", &path(&consumer)]).success();
    assert_eq!(
        message(&world, "CrossAccountConsumer"),
        json!("read hello, abroad")
    );
    // Not recorded in outputReads (the spec defers cross-account reads to a later schema).
    assert_eq!(
        record(&world, "CrossAccountConsumer")["outputReads"],
        Value::Null
    );
    // A stack the other account has no record of, named with the role.
    let refused = world.cdkd(&["deploy", "-a", &path(&read("NotThere"))]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert_contains(
        &refused,
        "stderr",
        &format!("stack NotThere has no state in us-east-1 in the account of {role}; deploy it there first"),
    );
    // An account with no state bucket: the read names the account, role and bucket.
    let nowhere = "arn:aws:iam::333333333333:role/CdkdStateReader";
    let elsewhere = assembly(&[(
        "CrossAccountConsumer",
        thing_stack(
            json!({"Fn::GetStackOutput": {"StackName": "OtherAccountProducer",
                "OutputName": "Out", "RoleArn": nowhere}}),
            json!({}),
        ),
    )]);
    let refused = world.cdkd(&["deploy", "-a", &path(&elsewhere)]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert_contains(
        &refused,
        "stderr",
        &format!(
            "in account 333333333333 through {nowhere} (bucket cdkd-state-333333333333) failed"
        ),
    );
    world
        .cdkd(&["state", "destroy", "CrossAccountConsumer", "-f"])
        .success();
}

#[test]
fn a_partial_destroy_keeps_retained_rows_until_the_record_is_deleted() {
    let world = world("retain");
    let stack = "RetainStack";
    let template = json!({"Resources": {
        "Kept": {"Type": "Acme::Echo::Thing", "Properties": {"Message": "kept"},
            "DeletionPolicy": "Retain"},
        "Doomed": {"Type": "AWS::SQS::Queue"},
    }, "Outputs": {"Said": {"Value": {"Fn::GetAtt": ["Kept", "Greeting"]}}}});
    let app = assembly(&[(stack, template)]);
    world.cdkd(&["deploy", "-a", &path(&app)]).success();
    let kept = world.resources(stack)["Kept"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let queue = world.resources(stack)["Doomed"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let queue_name = queue.rsplit('/').next().unwrap().to_string();
    Emulator::shared().faults(json!([{"service": "sqs", "action": "DeleteQueue",
        "bodyContains": queue_name, "status": 403, "code": "AccessDenied",
        "message": "not allowed to delete queues"}]));
    let failed = world.cdkd(&["state", "destroy", stack, "-f"]);
    Emulator::shared().faults(json!([]));
    assert_eq!(failed.code, Some(1), "{}", failed.stdout);
    // The retained row stays in the partial-failure snapshot, beside the one that failed;
    // the outputs are cleared.
    let left = record(&world, stack);
    assert_eq!(
        left["resources"]["Kept"]["physicalId"],
        json!(kept),
        "{left}"
    );
    assert!(left["resources"]["Doomed"].is_object(), "{left}");
    assert_eq!(left["outputs"], json!({}));
    // The next destroy finishes: the record goes, the retained thing stays in "AWS".
    world.cdkd(&["state", "destroy", stack, "-f"]).success();
    assert_eq!(
        world.cdkd(&["state", "show", stack, "--json"]).code,
        Some(1)
    );
    assert!(world.echo.path().join(format!("{kept}.json")).is_file());
}

#[test]
fn rollback_refuses_to_replay_a_baseline_that_holds_the_noecho_mask() {
    let world = world("maskreplay");
    let stack = "MaskStack";
    let app = assembly(&[(stack, thing_stack(json!("current"), json!({})))]);
    world.cdkd(&["deploy", "-a", &path(&app)]).success();
    let after = world.resources(stack)["Thing"].clone();
    let mut before = after.clone();
    before["properties"]["Message"] = json!("***");
    let journal_key = format!("cdkd/{stack}/us-east-1/rollback-journal.json");
    let journal = |operations: Value, failed: Value| {
        json!({"journalVersion": 1, "stackName": stack, "region": "us-east-1", "segments": [
            {"reason": "no-rollback-failure", "createdAt": 1, "operations": operations,
             "failedOperations": failed}]})
        .to_string()
    };
    // A completed update whose baseline holds the mask.
    put_object(
        &world.bucket,
        &journal_key,
        &journal(
            json!([{"logicalId": "Thing", "action": "update", "resourceType": "Acme::Echo::Thing",
                "before": before, "after": after}]),
            json!([]),
        ),
    );
    let refused = world.cdkd(&["rollback", stack]);
    assert_eq!(
        refused.code,
        Some(2),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    let shown = format!("{}{}", refused.stdout, refused.stderr);
    assert!(
        shown
            .contains("Thing's recorded previous properties hold the NoEcho mask (***) at Message"),
        "{shown}"
    );
    assert_eq!(
        message(&world, stack),
        json!("current"),
        "the mask was sent"
    );
    assert!(
        object(&world.bucket, &journal_key).is_object(),
        "the journal was dropped"
    );

    // --revert-failed refuses a failed operation's masked baseline too, and keeps it.
    put_object(
        &world.bucket,
        &journal_key,
        &journal(
            json!([]),
            json!([{"logicalId": "Thing", "action": "update", "resourceType": "Acme::Echo::Thing",
                "before": before, "attemptedProperties": {"Message": "attempted"},
                "error": "injected"}]),
        ),
    );
    let refused = world.cdkd(&["rollback", stack, "--revert-failed"]);
    assert_eq!(
        refused.code,
        Some(2),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    let shown = format!("{}{}", refused.stdout, refused.stderr);
    assert!(shown.contains("hold the NoEcho mask"), "{shown}");
    assert_eq!(message(&world, stack), json!("current"));
    let kept = object(&world.bucket, &journal_key);
    assert_eq!(
        kept["segments"][0]["failedOperations"][0]["logicalId"], "Thing",
        "{kept}"
    );
    delete_object(&world.bucket, &journal_key);
    world.cdkd(&["state", "destroy", stack, "-f"]).success();
}

#[test]
fn bootstrap_destroy_deletes_the_marker_after_the_container_repository() {
    let world = world("teardown");
    let assets = Emulator::unique("teardown-assets");
    let repo = Emulator::unique("teardown-images");
    world
        .cdkd(&[
            "bootstrap",
            "--asset-bucket",
            &assets,
            "--container-repo",
            &repo,
        ])
        .success();
    let marker_key = "cdkd-bootstrap/us-east-1.json";
    assert_eq!(
        object(&world.bucket, marker_key)["containerRepo"],
        json!(repo)
    );
    // The repository cannot be deleted: the teardown stops before the marker, which still
    // names what is left.
    Emulator::shared().faults(json!([{"service": "ecr", "action": "DeleteRepository",
        "bodyContains": repo, "status": 400, "code": "AccessDeniedException",
        "message": "not allowed to delete repositories"}]));
    let failed = world.cdkd(&["bootstrap", "--destroy", "--yes"]);
    Emulator::shared().faults(json!([]));
    assert_eq!(failed.code, Some(1), "{}", failed.stdout);
    assert_contains(
        &failed,
        "stderr",
        &format!("cannot delete the container repository {repo}"),
    );
    assert_eq!(
        object(&world.bucket, marker_key)["containerRepo"],
        json!(repo),
        "the marker went before the repository"
    );
    // A re-run finishes: repository, then marker.
    let done = world.cdkd(&["bootstrap", "--destroy", "--yes"]).success();
    assert_contains(
        &done,
        "stdout",
        &format!("Deleted container repository {repo}."),
    );
    assert_contains(
        &done,
        "stdout",
        "Removed the bootstrap marker of us-east-1.",
    );
    assert_eq!(object(&world.bucket, marker_key), Value::Null);
    let repos = Emulator::shared().boto(&format!(
        "[r['repositoryName'] for r in c('ecr').describe_repositories()['repositories'] if r['repositoryName'] == '{repo}']"
    ));
    assert_eq!(repos, json!([]));
}

#[test]
fn a_reimport_without_attributes_keeps_the_map_only_at_the_same_physical_id() {
    let world = world("reimport");
    let stack = "DashStack";
    let body = r#"{"widgets": []}"#;
    let app = assembly(&[(
        stack,
        json!({"Resources": {"Dash": {"Type": "AWS::CloudWatch::Dashboard",
            "Properties": {"DashboardBody": body}}}}),
    )]);
    let app_path = path(&app);
    world.cdkd(&["deploy", "-a", &app_path]).success();
    let name = world.resources(stack)["Dash"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    // The record carries an attribute (as an older provider's create recorded it).
    let key = format!("cdkd/{stack}/us-east-1/state.json");
    let mut stored = object(&world.bucket, &key);
    stored["resources"]["Dash"]["attributes"] = json!({"Marker": "kept"});
    put_object(&world.bucket, &key, &stored.to_string());
    let import = |physical: &str| {
        world
            .cdkd(&[
                "import",
                stack,
                "-a",
                &app_path,
                "--resource",
                &format!("Dash={physical}"),
                "--force",
                "--yes",
            ])
            .success()
    };
    // The dashboard provider's import reports no attributes: the map at the same id stays.
    import(&name);
    assert_eq!(
        world.resources(stack)["Dash"]["attributes"],
        json!({"Marker": "kept"})
    );
    // Repointed at another dashboard: nothing is inherited.
    let other = Emulator::unique("OtherDash");
    Emulator::shared().boto(&format!(
        "c('cloudwatch').put_dashboard(DashboardName='{other}', DashboardBody='{body}')['ResponseMetadata']['HTTPStatusCode']"
    ));
    import(&other);
    let row = world.resources(stack)["Dash"].clone();
    assert_eq!(row["physicalId"], json!(other));
    assert!(
        row["attributes"].is_null() || row["attributes"] == json!({}),
        "{row}"
    );
    world.cdkd(&["state", "orphan", stack, "--yes"]).success();
    let _ = Path::new(&app_path);
}
