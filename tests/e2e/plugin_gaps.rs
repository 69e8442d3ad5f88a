//! Properties that used to send a whole resource to Cloud Control and are now handled by their
//! plugins (issue 27's "existing plugins' gaps"): each is created, read back in template shape,
//! updated (changed and removed) and deleted through `cdkd providers call` against the emulator.

use cdkd_tests::{cdkd_on, Emulator};
use serde_json::{json, Value};

fn call(type_name: &str, operation: &str, args: &[&str]) -> Value {
    let mut all = vec![
        "providers",
        "call",
        type_name,
        operation,
        "--stack-name",
        "Gaps",
    ];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all).success().json()
}

fn create(type_name: &str, properties: &Value) -> Value {
    call(
        type_name,
        "create",
        &["--properties", &properties.to_string()],
    )
}

fn read(type_name: &str, physical_id: &str) -> Value {
    call(
        type_name,
        "read_current_state",
        &["--physical-id", physical_id],
    )["properties"]
        .clone()
}

fn update(type_name: &str, physical_id: &str, before: &Value, after: &Value) -> Value {
    call(
        type_name,
        "update",
        &[
            "--physical-id",
            physical_id,
            "--properties",
            &after.to_string(),
            "--previous-properties",
            &before.to_string(),
        ],
    )
}

fn delete(type_name: &str, physical_id: &str, properties: &Value) {
    call(
        type_name,
        "delete",
        &[
            "--physical-id",
            physical_id,
            "--properties",
            &properties.to_string(),
        ],
    );
}

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

/// Asserts every key of `expected` is in `actual` with the same value (recursively).
fn assert_contains(actual: &Value, expected: &Value, path: &str) {
    match expected {
        Value::Object(fields) => {
            for (key, value) in fields {
                assert_contains(&actual[key], value, &format!("{path}.{key}"));
            }
        }
        _ => assert_eq!(actual, expected, "at {path}"),
    }
}

fn role() -> String {
    let trust = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]});
    let name = Emulator::unique("gaps-role");
    aws(&format!(
        "c('iam').create_role(RoleName='{name}', AssumeRolePolicyDocument=__import__('json').dumps({trust}))['Role']['Arn']"
    ))
    .as_str()
    .unwrap()
    .to_string()
}

const SIGNING: &str =
    "arn:aws:lambda:us-east-1:123456789012:code-signing-config:csc-0123456789abcdef0";

#[test]
fn function_settings_are_created_read_updated_and_removed() {
    let properties = json!({
        "Runtime": "python3.12",
        "Handler": "index.handler",
        "Role": role(),
        "Code": {"ZipFile": "def handler(event, context):\n    return 1\n"},
        "RecursiveLoop": "Allow",
        "RuntimeManagementConfig": {"UpdateRuntimeOn": "FunctionUpdate"},
        "SnapStart": {"ApplyOn": "PublishedVersions"},
        "CodeSigningConfigArn": SIGNING,
    });
    let created = create("AWS::Lambda::Function", &properties);
    let name = created["physicalId"].as_str().unwrap().to_string();
    assert_eq!(
        created["attributes"]["SnapStartResponse"]["ApplyOn"], "PublishedVersions",
        "{created}"
    );
    let live = read("AWS::Lambda::Function", &name);
    let mut expected = properties.clone();
    expected.as_object_mut().unwrap().remove("Code");
    assert_contains(&live, &expected, "properties");
    assert_eq!(
        aws(&format!(
            "c('lambda').get_function_recursion_config(FunctionName='{name}')['RecursiveLoop']"
        )),
        "Allow"
    );

    // Changed and removed: back to Lambda's defaults, which read back as absent.
    let runtime = "arn:aws:lambda:us-east-1::runtime:0123456789abcdef";
    let mut changed = properties.clone();
    let fields = changed.as_object_mut().unwrap();
    for key in ["RecursiveLoop", "SnapStart", "CodeSigningConfigArn"] {
        fields.remove(key);
    }
    fields.insert(
        "RuntimeManagementConfig".into(),
        json!({"UpdateRuntimeOn": "Manual", "RuntimeVersionArn": runtime}),
    );
    update("AWS::Lambda::Function", &name, &properties, &changed);
    let live = read("AWS::Lambda::Function", &name);
    for key in ["RecursiveLoop", "SnapStart", "CodeSigningConfigArn"] {
        assert!(live.get(key).is_none(), "{key} is still set: {live}");
    }
    assert_eq!(
        live["RuntimeManagementConfig"],
        json!({"UpdateRuntimeOn": "Manual", "RuntimeVersionArn": runtime})
    );
    assert_eq!(
        aws(&format!(
            "c('lambda').get_function_configuration(FunctionName='{name}')['SnapStart']['ApplyOn']"
        )),
        "None"
    );
    delete("AWS::Lambda::Function", &name, &changed);
    assert_eq!(read("AWS::Lambda::Function", &name), Value::Null);
}

#[test]
fn a_function_whose_setting_is_refused_is_not_left_behind() {
    let name = Emulator::unique("gaps-refused");
    let properties = json!({
        "FunctionName": name,
        "Runtime": "python3.12",
        "Handler": "index.handler",
        "Role": role(),
        "Code": {"ZipFile": "def handler(event, context):\n    return 1\n"},
        // Manual needs a RuntimeVersionArn: Lambda refuses the put after the function exists.
        "RuntimeManagementConfig": {"UpdateRuntimeOn": "Manual"},
    });
    let run = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::Lambda::Function",
            "create",
            "--stack-name",
            "Gaps",
            "--properties",
            &properties.to_string(),
        ],
    );
    assert_ne!(run.code, Some(0), "{}", run.stdout);
    let output = format!("{}{}", run.stdout, run.stderr);
    assert!(
        output.contains("RuntimeManagementConfig") && output.contains("deleted again"),
        "{output}"
    );
    assert_eq!(read("AWS::Lambda::Function", &name), Value::Null);
}

#[test]
fn a_container_image_function_takes_its_image_config() {
    let repository = Emulator::unique("gaps-image");
    let manifest = json!({"schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1469,
            "digest": format!("sha256:{}", "a".repeat(64))},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip", "size": 2048,
            "digest": format!("sha256:{}", "b".repeat(64))}]});
    let uri = aws(&format!(
        "(c('ecr').create_repository(repositoryName='{repository}')['repository']['repositoryUri'], \
         c('ecr').put_image(repositoryName='{repository}', imageTag='v1', imageManifest=__import__('json').dumps({manifest})))[0]"
    ));
    let image = format!("{}:v1", uri.as_str().unwrap());
    let properties = json!({
        "PackageType": "Image",
        "Role": role(),
        "Code": {"ImageUri": image},
        "ImageConfig": {"Command": ["app.handler"], "EntryPoint": ["/lambda-entrypoint.sh"],
            "WorkingDirectory": "/var/task"},
    });
    let created = create("AWS::Lambda::Function", &properties);
    let name = created["physicalId"].as_str().unwrap().to_string();
    let live = read("AWS::Lambda::Function", &name);
    assert_eq!(live["PackageType"], "Image", "{live}");
    assert_eq!(live["ImageConfig"], properties["ImageConfig"]);

    let mut changed = properties.clone();
    changed["ImageConfig"] = json!({"Command": ["app.other"]});
    update("AWS::Lambda::Function", &name, &properties, &changed);
    assert_eq!(
        read("AWS::Lambda::Function", &name)["ImageConfig"],
        json!({"Command": ["app.other"]})
    );
    delete("AWS::Lambda::Function", &name, &changed);
    assert_eq!(read("AWS::Lambda::Function", &name), Value::Null);
}

#[test]
fn an_alias_takes_routing_and_provisioned_concurrency() {
    let function = Emulator::unique("gaps-alias-fn");
    let role = role();
    aws(&format!(
        "c('lambda').create_function(FunctionName='{function}', Runtime='python3.12', Role='{role}', \
         Handler='index.handler', Code={{'ZipFile': b'x'}})['FunctionName']"
    ));
    // Two published versions (a version needs a change since the last one).
    for description in ["one", "two"] {
        aws(&format!(
            "(c('lambda').update_function_configuration(FunctionName='{function}', Description='{description}'), \
              c('lambda').publish_version(FunctionName='{function}'))[1]['Version']"
        ));
    }
    let properties = json!({
        "FunctionName": function,
        "Name": "live",
        "FunctionVersion": "1",
        "RoutingConfig": {"AdditionalVersionWeights": [{"FunctionVersion": "2", "FunctionWeight": 0.25}]},
        "ProvisionedConcurrencyConfig": {"ProvisionedConcurrentExecutions": 3},
    });
    let created = create("AWS::Lambda::Alias", &properties);
    let arn = created["physicalId"].as_str().unwrap().to_string();
    let live = read("AWS::Lambda::Alias", &arn);
    assert_contains(&live, &properties, "properties");
    assert_eq!(
        aws(&format!(
            "c('lambda').get_provisioned_concurrency_config(FunctionName='{function}', Qualifier='live')['Status']"
        )),
        "READY"
    );

    // Changed: more concurrency, no more shifting.
    let mut changed = properties.clone();
    changed.as_object_mut().unwrap().remove("RoutingConfig");
    changed["ProvisionedConcurrencyConfig"] = json!({"ProvisionedConcurrentExecutions": 5});
    update("AWS::Lambda::Alias", &arn, &properties, &changed);
    let live = read("AWS::Lambda::Alias", &arn);
    assert!(live.get("RoutingConfig").is_none(), "{live}");
    assert_eq!(
        live["ProvisionedConcurrencyConfig"],
        json!({"ProvisionedConcurrentExecutions": 5})
    );

    // Removed: the alias's provisioned concurrency is deleted.
    let mut without = changed.clone();
    without
        .as_object_mut()
        .unwrap()
        .remove("ProvisionedConcurrencyConfig");
    update("AWS::Lambda::Alias", &arn, &changed, &without);
    let live = read("AWS::Lambda::Alias", &arn);
    assert!(live.get("ProvisionedConcurrencyConfig").is_none(), "{live}");

    delete("AWS::Lambda::Alias", &arn, &without);
    assert_eq!(read("AWS::Lambda::Alias", &arn), Value::Null);
}

#[test]
fn bucket_acceleration_metrics_tiering_and_canned_acl_round_trip() {
    let properties = json!({
        "OwnershipControls": {"Rules": [{"ObjectOwnership": "ObjectWriter"}]},
        "AccessControl": "LogDeliveryWrite",
        "AccelerateConfiguration": {"AccelerationStatus": "Enabled"},
        "MetricsConfigurations": [
            {"Id": "EntireBucket"},
            {"Id": "logs", "Prefix": "logs/", "TagFilters": [{"Key": "team", "Value": "ops"}]},
        ],
        "IntelligentTieringConfigurations": [
            {"Id": "archive", "Status": "Enabled", "Prefix": "old/",
             "Tierings": [{"AccessTier": "ARCHIVE_ACCESS", "Days": 90},
                          {"AccessTier": "DEEP_ARCHIVE_ACCESS", "Days": 180}]},
        ],
    });
    let created = create("AWS::S3::Bucket", &properties);
    let bucket = created["physicalId"].as_str().unwrap().to_string();
    let live = read("AWS::S3::Bucket", &bucket);
    for key in [
        "AccessControl",
        "AccelerateConfiguration",
        "MetricsConfigurations",
        "IntelligentTieringConfigurations",
    ] {
        assert_eq!(live[key], properties[key], "{key}: {live}");
    }
    let grants = aws(&format!(
        "sorted(g['Permission'] for g in c('s3').get_bucket_acl(Bucket='{bucket}')['Grants'] \
         if g['Grantee'].get('URI', '').endswith('/LogDelivery'))"
    ));
    assert_eq!(grants, json!(["READ_ACP", "WRITE"]));

    // Changed and removed: acceleration suspended, one metrics configuration left, tiering
    // and the ACL gone.
    let changed = json!({
        "OwnershipControls": {"Rules": [{"ObjectOwnership": "ObjectWriter"}]},
        "MetricsConfigurations": [{"Id": "EntireBucket"}],
    });
    update("AWS::S3::Bucket", &bucket, &properties, &changed);
    let live = read("AWS::S3::Bucket", &bucket);
    assert_eq!(
        live["AccelerateConfiguration"],
        json!({"AccelerationStatus": "Suspended"})
    );
    assert_eq!(
        live["MetricsConfigurations"],
        changed["MetricsConfigurations"]
    );
    assert!(
        live.get("IntelligentTieringConfigurations").is_none(),
        "{live}"
    );
    assert!(live.get("AccessControl").is_none(), "{live}");
    let missing = aws(&format!(
        "(lambda s3: [s3.delete_bucket_metrics_configuration(Bucket='{bucket}', Id='EntireBucket'), \
          s3.list_bucket_metrics_configurations(Bucket='{bucket}').get('MetricsConfigurationList', [])][1])(c('s3'))"
    ));
    assert_eq!(missing, json!([]));

    delete("AWS::S3::Bucket", &bucket, &changed);
    assert_eq!(read("AWS::S3::Bucket", &bucket), Value::Null);
}

#[test]
fn the_emulator_refuses_what_aws_refuses() {
    // SnapStart on a runtime that does not support it.
    let run = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::Lambda::Function",
            "create",
            "--stack-name",
            "Gaps",
            "--properties",
            &json!({"Runtime": "nodejs20.x", "Handler": "index.handler", "Role": role(),
                "Code": {"ZipFile": "exports.handler = async () => 1;"},
                "SnapStart": {"ApplyOn": "PublishedVersions"}})
            .to_string(),
        ],
    );
    assert_ne!(run.code, Some(0));
    assert!(
        format!("{}{}", run.stdout, run.stderr).contains("SnapStart"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    // A canned ACL on a bucket whose ACLs are disabled (BucketOwnerEnforced, S3's default).
    let run = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::S3::Bucket",
            "create",
            "--stack-name",
            "Gaps",
            "--properties",
            &json!({"AccessControl": "LogDeliveryWrite"}).to_string(),
        ],
    );
    assert_ne!(run.code, Some(0));
    let output = format!("{}{}", run.stdout, run.stderr);
    assert!(
        output.contains("AccessControlListNotSupported") && output.contains("deleted again"),
        "{output}"
    );
    // Intelligent tiering outside 90..730 days.
    let run = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::S3::Bucket",
            "create",
            "--stack-name",
            "Gaps",
            "--properties",
            &json!({"IntelligentTieringConfigurations": [{"Id": "x", "Status": "Enabled",
                "Tierings": [{"AccessTier": "ARCHIVE_ACCESS", "Days": 10}]}]})
            .to_string(),
        ],
    );
    assert_ne!(run.code, Some(0));
    assert!(
        format!("{}{}", run.stdout, run.stderr).contains("deleted again"),
        "{}{}",
        run.stdout,
        run.stderr
    );
}
