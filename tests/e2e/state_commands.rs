//! `cdkd bootstrap`, `cdkd state …` and `cdkd force-unlock` through the binary, against the
//! emulator, checked in S3 itself.

use aws_sdk_s3::Client;
use cdkd_tests::state_world::{s3_client, state_fixture};
use cdkd_tests::{cdkd_on, Emulator, Run};
use serde_json::{json, Value};

async fn s3() -> Client {
    s3_client().await
}

fn run(bucket: &str, args: &[&str]) -> Run {
    let mut full = vec!["--state-bucket", bucket];
    full.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &full)
}

/// A bootstrapped state bucket with an asset bucket of its own.
async fn bootstrapped() -> (Client, String, String) {
    let state = Emulator::unique("state");
    let assets = Emulator::unique("assets");
    run(&state, &["bootstrap", "--asset-bucket", &assets]).success();
    (s3().await, state, assets)
}

async fn put_json(client: &Client, bucket: &str, key: &str, body: &Value) {
    client
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(serde_json::to_vec_pretty(body).unwrap().into())
        .send()
        .await
        .unwrap();
}

fn fixture(version: u32) -> Value {
    serde_json::from_slice(&state_fixture(version)).unwrap()
}

async fn record(client: &Client, bucket: &str, stack: &str, region: &str, parent: Option<&str>) {
    let mut state = fixture(9);
    state["stackName"] = json!(stack);
    state["region"] = json!(region);
    match parent {
        Some(parent) => {
            state["parentStack"] = json!(parent);
            state["parentLogicalId"] = json!(stack.rsplit('~').next().unwrap());
            state["parentRegion"] = json!(region);
        }
        None => {
            let object = state.as_object_mut().unwrap();
            object.remove("parentStack");
            object.remove("parentLogicalId");
            object.remove("parentRegion");
        }
    }
    put_json(
        client,
        bucket,
        &format!("cdkd/{stack}/{region}/state.json"),
        &state,
    )
    .await;
}

#[tokio::test]
async fn bootstrap_creates_hardened_buckets_and_the_marker_last_and_reruns_cleanly() {
    let state = Emulator::unique("state");
    let assets = Emulator::unique("assets");
    let first = run(
        &state,
        &[
            "bootstrap",
            "--asset-bucket",
            &assets,
            "--container-repo",
            "my-images",
        ],
    )
    .success();
    assert!(
        first
            .stdout
            .contains(&format!("Created state bucket {state}")),
        "{}",
        first.stdout
    );
    let client = s3().await;

    // Versioning, by its effect (moto's GetBucketVersioning answer does not parse in the Rust SDK).
    for body in ["one", "two"] {
        client
            .put_object()
            .bucket(&state)
            .key("probe")
            .body(body.as_bytes().to_vec().into())
            .send()
            .await
            .unwrap();
    }
    let versions = client
        .list_object_versions()
        .bucket(&state)
        .prefix("probe")
        .send()
        .await
        .unwrap();
    assert_eq!(
        versions.versions().len(),
        2,
        "the state bucket is not versioned"
    );
    client
        .delete_object()
        .bucket(&state)
        .key("probe")
        .send()
        .await
        .unwrap();
    let encryption = client
        .get_bucket_encryption()
        .bucket(&state)
        .send()
        .await
        .unwrap();
    let rule = &encryption
        .server_side_encryption_configuration()
        .unwrap()
        .rules()[0];
    assert_eq!(
        rule.apply_server_side_encryption_by_default()
            .unwrap()
            .sse_algorithm()
            .as_str(),
        "AES256"
    );
    let block = client
        .get_public_access_block()
        .bucket(&state)
        .send()
        .await
        .unwrap();
    let block = block.public_access_block_configuration().unwrap();
    assert_eq!(
        (
            block.block_public_acls(),
            block.ignore_public_acls(),
            block.block_public_policy(),
            block.restrict_public_buckets()
        ),
        (Some(true), Some(true), Some(true), Some(true))
    );
    let policy: Value = serde_json::from_str(
        client
            .get_bucket_policy()
            .bucket(&state)
            .send()
            .await
            .unwrap()
            .policy()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(policy["Statement"][0]["Sid"], "DenyExternalAccess");
    assert_eq!(
        policy["Statement"][0]["Condition"]["StringNotEquals"]["aws:PrincipalAccount"],
        "123456789012"
    );
    assert_eq!(policy["Statement"][1]["Sid"], "DenyInsecureTransport");
    assert!(
        client.head_bucket().bucket(&assets).send().await.is_ok(),
        "no asset bucket"
    );
    let marker = client
        .get_object()
        .bucket(&state)
        .key("cdkd-bootstrap/us-east-1.json")
        .send()
        .await
        .unwrap();
    let marker: Value =
        serde_json::from_slice(&marker.body.collect().await.unwrap().into_bytes()).unwrap();
    assert_eq!(marker["assetBucket"], json!(assets));
    assert_eq!(marker["containerRepo"], "my-images");
    assert_eq!(marker["region"], "us-east-1");

    // Objects still work on the policy-guarded bucket (the emulator skips conditional denies).
    let info = run(&state, &["state", "info", "--json"]).success().json();
    assert_eq!(info["assetRegions"], json!(["us-east-1"]));
    assert_eq!(info["source"], "cli-flag");
    assert_eq!(info["schemaVersion"], 9);

    let again = run(
        &state,
        &[
            "bootstrap",
            "--asset-bucket",
            &assets,
            "--container-repo",
            "my-images",
        ],
    )
    .success();
    assert!(
        again
            .stdout
            .contains(&format!("Updated state bucket {state}")),
        "{}",
        again.stdout
    );
}

#[tokio::test]
async fn bootstrap_destroy_refuses_while_stacks_remain_then_tears_down_in_reverse() {
    let (client, state, assets) = bootstrapped().await;
    record(&client, &state, "Remaining", "us-east-1", None).await;
    let refused = run(
        &state,
        &["bootstrap", "--destroy", "--include-state-bucket", "--yes"],
    );
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .contains("still holds 1 stack record(s): Remaining (us-east-1)"),
        "{}",
        refused.stderr
    );
    assert!(
        client.head_bucket().bucket(&assets).send().await.is_ok(),
        "a refused teardown deleted the asset bucket"
    );

    run(&state, &["state", "orphan", "Remaining", "--yes"]).success();
    let done = run(
        &state,
        &["bootstrap", "--destroy", "--include-state-bucket", "--yes"],
    )
    .success();
    assert!(
        done.stdout
            .contains(&format!("Deleted asset bucket {assets}")),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout.contains("Deleted the state bucket."),
        "{}",
        done.stdout
    );
    assert!(client.head_bucket().bucket(&assets).send().await.is_err());
    assert!(client.head_bucket().bucket(&state).send().await.is_err());
}

#[tokio::test]
async fn state_list_prints_one_parseable_reference_per_line_and_logs_to_stderr() {
    let (client, state, _) = bootstrapped().await;
    record(&client, &state, "Alpha", "us-east-1", None).await;
    record(&client, &state, "Alpha", "eu-west-1", None).await;
    record(&client, &state, "Beta", "us-east-1", None).await;
    let plain = run(&state, &["state", "list"]).success();
    let verbose = run(&state, &["-v", "state", "ls"]).success();
    assert_eq!(plain.stdout, verbose.stdout, "logs leaked into stdout");
    assert!(verbose.stderr.contains("DEBUG"), "no debug log on stderr");
    let refs: Vec<(String, String)> = plain
        .stdout
        .lines()
        .map(|line| {
            let (stack, region) = line
                .split_once(" (")
                .unwrap_or_else(|| panic!("unparseable line {line:?}"));
            (
                stack.to_string(),
                region.strip_suffix(')').unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        refs,
        [
            ("Alpha".into(), "eu-west-1".into()),
            ("Alpha".into(), "us-east-1".into()),
            ("Beta".into(), "us-east-1".into())
        ]
    );
    // Routine output does not name the bucket (it carries the account id).
    assert!(!plain.stdout.contains(&state) && !plain.stderr.contains(&state));

    let long = run(&state, &["state", "list", "--long", "--json"])
        .success()
        .json();
    assert_eq!(long[0]["resourceCount"], 3);
    assert_eq!(long[0]["locked"], false);
}

#[tokio::test]
async fn state_list_tree_nests_children_under_parents() {
    let (client, state, _) = bootstrapped().await;
    record(&client, &state, "Deep", "us-east-1", None).await;
    record(&client, &state, "Deep~Child", "us-east-1", Some("Deep")).await;
    record(
        &client,
        &state,
        "Deep~Child~Grandchild",
        "us-east-1",
        Some("Deep~Child"),
    )
    .await;
    record(
        &client,
        &state,
        "Orphaned~Kid",
        "us-east-1",
        Some("Orphaned"),
    )
    .await;
    let tree = run(&state, &["state", "list", "--tree"]).success();
    assert_eq!(
        tree.stdout,
        "Deep (us-east-1)\n└── Deep~Child (us-east-1)\n    └── Deep~Child~Grandchild (us-east-1)\nOrphaned~Kid (us-east-1)\n"
    );
    let json = run(&state, &["state", "list", "--tree", "--json"])
        .success()
        .json();
    assert_eq!(
        json[0]["children"][0]["children"][0]["stackName"],
        "Deep~Child~Grandchild"
    );
    assert_eq!(json[1]["stackName"], "Orphaned~Kid");
}

#[tokio::test]
async fn state_show_resources_and_force_unlock() {
    let (client, state, _) = bootstrapped().await;
    record(&client, &state, "Shown", "us-east-1", None).await;
    put_json(
        &client,
        &state,
        "cdkd/Shown/us-east-1/lock.json",
        &json!({"owner": "someone@laptop:42", "timestamp": 1, "expiresAt": 99999999999999u64, "operation": "deploy"}),
    )
    .await;

    let shown = run(&state, &["state", "show", "Shown"]).success().stdout;
    for expected in [
        "Stack:         Shown",
        "Lock:          locked by someone@laptop:42 (deploy)",
        "  NameServers = [\"ns-1.awsdns-00.com\",\"ns-2.awsdns-01.net\"]",
        "    PhysicalId:    52.1.2.3|eipalloc-0abc123def456789a",
        "    ProvisionedBy: cc-api",
        "    DeletionPolicy: Retain",
    ] {
        assert!(shown.contains(expected), "missing {expected:?} in\n{shown}");
    }
    let doc = run(&state, &["state", "show", "Shown", "--json"])
        .success()
        .json();
    assert_eq!(
        doc.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["state", "lock"]
    );
    assert_eq!(doc["state"]["outputs"]["Port"], 443);
    assert_eq!(doc["lock"]["owner"], "someone@laptop:42");

    let resources = run(&state, &["state", "resources", "Shown", "--long", "--json"])
        .success()
        .json();
    let eip = resources
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["logicalId"] == "MyEip")
        .unwrap();
    assert_eq!(eip["physicalId"], "52.1.2.3|eipalloc-0abc123def456789a");
    assert_eq!(eip["provisionedBy"], "cc-api");
    let table = run(&state, &["state", "resources", "Shown"])
        .success()
        .stdout;
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("MyEip") && l.ends_with("52.1.2.3|eipalloc-0abc123def456789a")),
        "{table}"
    );

    let unlocked = run(&state, &["force-unlock", "Shown"]).success();
    assert!(unlocked.stdout.contains(
        "Removed the lock on Shown (us-east-1) held by someone@laptop:42 (operation deploy)"
    ));
    let after = run(&state, &["state", "show", "Shown", "--json"])
        .success()
        .json();
    assert_eq!(after["lock"], Value::Null);
}

#[tokio::test]
async fn state_show_nested_walks_children_and_reports_a_torn_tree() {
    let (client, state, _) = bootstrapped().await;
    let mut parent = fixture(9);
    for key in ["parentStack", "parentLogicalId", "parentRegion"] {
        parent.as_object_mut().unwrap().remove(key);
    }
    parent["stackName"] = json!("Parent");
    parent["resources"]["Nested"] = json!({"physicalId": "Parent~Nested", "resourceType": "AWS::CloudFormation::Stack", "properties": {}});
    put_json(&client, &state, "cdkd/Parent/us-east-1/state.json", &parent).await;
    let torn = run(&state, &["state", "show", "Parent", "--show-nested"]);
    assert_eq!(torn.code, Some(1));
    assert!(
        torn.stderr.contains("lists nested stack Nested"),
        "{}",
        torn.stderr
    );

    record(
        &client,
        &state,
        "Parent~Nested",
        "us-east-1",
        Some("Parent"),
    )
    .await;
    let doc = run(
        &state,
        &["state", "show", "Parent", "--show-nested", "--json"],
    )
    .success()
    .json();
    assert_eq!(doc["children"][0]["state"]["stackName"], "Parent~Nested");
    assert_eq!(doc["children"][0]["children"], json!([]));
    let text = run(&state, &["state", "show", "Parent", "--show-nested"])
        .success()
        .stdout;
    assert!(text.contains("\nNested stack: Parent~Nested\n"), "{text}");
}

#[tokio::test]
async fn a_record_from_a_newer_cdkd_is_refused_by_every_reader() {
    let (client, state, _) = bootstrapped().await;
    put_json(
        &client,
        &state,
        "cdkd/Future/us-east-1/state.json",
        &json!({"version": 10, "stackName": "Future", "region": "us-east-1"}),
    )
    .await;
    for args in [
        &["state", "show", "Future"][..],
        &["state", "resources", "Future"],
    ] {
        let refused = run(&state, args);
        assert_eq!(refused.code, Some(1));
        assert!(
            refused
                .stderr
                .contains("Unsupported state schema version 10. Upgrade cdkd."),
            "{}",
            refused.stderr
        );
    }
}

#[tokio::test]
async fn state_orphan_forgets_the_record_and_asks_first() {
    let (client, state, _) = bootstrapped().await;
    record(&client, &state, "Forgotten", "us-east-1", None).await;
    put_json(
        &client,
        &state,
        "cdkd/Forgotten/us-east-1/rollback-journal.json",
        &json!({"journalVersion": 1}),
    )
    .await;
    let refused = run(&state, &["state", "orphan", "Forgotten"]);
    assert_eq!(refused.code, Some(1), "orphaned without confirmation");
    assert!(refused.stderr.contains("pass --yes"), "{}", refused.stderr);

    let done = run(&state, &["state", "orphan", "Forgotten", "-f"]).success();
    assert!(done.stdout.contains(
        "Forgot stack Forgotten (us-east-1); its 3 resource(s) are left in AWS untouched."
    ));
    let keys: Vec<String> = client
        .list_objects_v2()
        .bucket(&state)
        .prefix("cdkd/Forgotten/")
        .send()
        .await
        .unwrap()
        .contents()
        .iter()
        .filter_map(|o| o.key().map(ToString::to_string))
        .collect();
    assert!(keys.is_empty(), "left behind: {keys:?}");
}

#[tokio::test]
async fn a_stack_in_several_regions_needs_stack_region() {
    let (client, state, _) = bootstrapped().await;
    record(&client, &state, "Twice", "us-east-1", None).await;
    record(&client, &state, "Twice", "eu-west-1", None).await;
    let ambiguous = run(&state, &["state", "show", "Twice"]);
    assert_eq!(ambiguous.code, Some(1));
    assert!(
        ambiguous.stderr.contains(
            "has state in several regions (eu-west-1, us-east-1); pick one with --stack-region"
        ),
        "{}",
        ambiguous.stderr
    );
    let picked = run(
        &state,
        &[
            "state",
            "show",
            "Twice",
            "--stack-region",
            "eu-west-1",
            "--json",
        ],
    )
    .success()
    .json();
    assert_eq!(picked["state"]["region"], "eu-west-1");
}

#[tokio::test]
async fn bootstrap_again_keeps_the_owners_encryption_key_and_policy_statements() {
    let (_, state, _) = bootstrapped().await;
    let key_arn = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555";
    let reader = "arn:aws:iam::123456789012:role/reader";
    Emulator::shared().boto(&format!(
        "[c('s3').put_bucket_encryption(Bucket='{state}', ServerSideEncryptionConfiguration={{'Rules': [{{'ApplyServerSideEncryptionByDefault': {{'SSEAlgorithm': 'aws:kms', 'KMSMasterKeyID': '{key_arn}'}}}}]}}), \
          c('s3').put_bucket_policy(Bucket='{state}', Policy=json.dumps({{'Version': '2012-10-17', 'Statement': [{{'Sid': 'AllowReader', 'Effect': 'Allow', 'Principal': {{'AWS': '{reader}'}}, 'Action': 's3:GetObject', 'Resource': 'arn:aws:s3:::{state}/*'}}]}}))] and None"
    ));
    run(&state, &["bootstrap", "--no-assets"]).success();
    let encryption = Emulator::shared().boto(&format!(
        "c('s3').get_bucket_encryption(Bucket='{state}')['ServerSideEncryptionConfiguration']['Rules'][0]['ApplyServerSideEncryptionByDefault']"
    ));
    assert_eq!(encryption["SSEAlgorithm"], "aws:kms", "{encryption}");
    assert_eq!(encryption["KMSMasterKeyID"], key_arn, "{encryption}");
    let policy = Emulator::shared().boto(&format!(
        "json.loads(c('s3').get_bucket_policy(Bucket='{state}')['Policy'])"
    ));
    let sids: Vec<&str> = policy["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["Sid"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        sids,
        ["AllowReader", "DenyExternalAccess", "DenyInsecureTransport"],
        "{policy}"
    );
}

/// Creates `bucket` as another account (111111111111) would, first.
fn sniped(bucket: &str) {
    Emulator::shared().boto(&format!(
        "boto3.client('s3', endpoint_url=c('s3').meta.endpoint_url, region_name='us-east-1', \
         aws_access_key_id='111111111111', aws_secret_access_key='x').create_bucket(Bucket='{bucket}') and None"
    ));
}

/// A bucket another account created first (the state bucket's name is predictable) is never
/// used (issue 43): every command refuses it by name, naming the owner check, and nothing is
/// written to it; `bootstrap` refuses to take it over.
#[tokio::test]
async fn a_bucket_another_account_owns_is_never_used() {
    let bucket = Emulator::unique("sniped");
    sniped(&bucket);
    for args in [
        vec!["state", "list"],
        vec!["deploy", "--all", "-a", "tests/fixtures/cdk.out/app"],
    ] {
        let refused = run(&bucket, &args);
        assert_eq!(
            refused.code,
            Some(1),
            "{args:?}: {}{}",
            refused.stdout,
            refused.stderr
        );
        assert!(
            refused.stderr.contains(&bucket)
                && refused.stderr.contains("ExpectedBucketOwner=123456789012"),
            "{args:?}: {}",
            refused.stderr
        );
    }
    let bootstrap = run(&bucket, &["bootstrap", "--no-assets"]);
    assert_eq!(
        bootstrap.code,
        Some(1),
        "{}{}",
        bootstrap.stdout,
        bootstrap.stderr
    );
    assert!(
        bootstrap.stderr.contains(&bucket) && bootstrap.stderr.contains("another account"),
        "{}",
        bootstrap.stderr
    );
    // The other account sees nothing of ours in its bucket.
    let keys = Emulator::shared().boto(&format!(
        "[o['Key'] for o in boto3.client('s3', endpoint_url=c('s3').meta.endpoint_url, region_name='us-east-1', \
         aws_access_key_id='111111111111', aws_secret_access_key='x').list_objects_v2(Bucket='{bucket}').get('Contents', [])]"
    ));
    assert_eq!(keys, json!([]));

    // The default name, taken by the other account first: refused the same way.
    let account = "222222222222";
    sniped(&format!("cdkd-state-{account}"));
    let refused = cdkd_tests::cdkd_on_with_env(
        Emulator::shared(),
        &["state", "list"],
        &[("AWS_ACCESS_KEY_ID", account)],
    );
    assert_eq!(
        refused.code,
        Some(1),
        "{}{}",
        refused.stdout,
        refused.stderr
    );
    assert!(
        refused.stderr.contains(&format!("cdkd-state-{account}"))
            && refused
                .stderr
                .contains(&format!("ExpectedBucketOwner={account}")),
        "{}",
        refused.stderr
    );

    // Our own bucket passes the same check.
    let (_, state, _) = bootstrapped().await;
    run(&state, &["state", "list"]).success();
}

/// Spec 000's forms (issue 46): `STATE_BUCKET` / `STATE_PREFIX` name the bucket and prefix,
/// `--stack NAME` names a stack as the positional form does, and every command's help lists
/// the global options under their own heading.
#[tokio::test]
async fn spec_environment_variables_and_the_stack_flag_name_what_the_arguments_do() {
    let (client, state, _) = bootstrapped().await;
    let mut doc = fixture(9);
    doc["stackName"] = json!("Prefixed");
    doc["region"] = json!("us-east-1");
    for key in ["parentStack", "parentLogicalId", "parentRegion"] {
        doc.as_object_mut().unwrap().remove(key);
    }
    put_json(
        &client,
        &state,
        "team-a/Prefixed/us-east-1/state.json",
        &doc,
    )
    .await;
    let env = [("STATE_BUCKET", state.as_str()), ("STATE_PREFIX", "team-a")];
    let listed = cdkd_tests::cdkd_on_with_env(Emulator::shared(), &["state", "list"], &env)
        .success()
        .stdout;
    assert!(listed.contains("Prefixed"), "{listed}");
    // The prefixed name wins over spec 000's, and the flag over both.
    let other = [
        ("CDKD_STATE_BUCKET", state.as_str()),
        ("STATE_BUCKET", "no-such-bucket-anywhere"),
        ("STATE_PREFIX", "team-a"),
    ];
    let shown = cdkd_tests::cdkd_on_with_env(
        Emulator::shared(),
        &["state", "show", "--stack", "Prefixed"],
        &other,
    )
    .success()
    .stdout;
    assert!(shown.contains("Stack:         Prefixed"), "{shown}");
    let flagged = cdkd_tests::cdkd_on_with_env(
        Emulator::shared(),
        &[
            "state",
            "show",
            "--stack=Prefixed",
            "--state-prefix",
            "cdkd",
        ],
        &env,
    );
    assert!(
        flagged.code == Some(1) && flagged.stderr.contains("Prefixed"),
        "{}",
        flagged.stderr
    );

    let help = run(&state, &["deploy", "--help"]).success().stdout;
    let global = help.find("Global options:").expect("a heading");
    let own = help.find("--stack-concurrency").expect("deploy's own flag");
    let region = help.find("--region").expect("a global flag");
    assert!(own < global && global < region, "{help}");
}
