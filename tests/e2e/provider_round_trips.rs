//! Each SDK plugin's `read_current_state` and `import` through `cdkd providers call` against the
//! emulator: what a create wrote reads back in template shape, a resource made outside cdkd is
//! adopted with its attributes, and a delete leaves nothing.

use cdkd_tests::{cdkd_on, Emulator};
use serde_json::{json, Value};

fn call(type_name: &str, operation: &str, args: &[&str]) -> Value {
    let mut all = vec![
        "providers",
        "call",
        type_name,
        operation,
        "--stack-name",
        "Rt",
    ];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all).success().json()
}

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

/// Asserts every key of `expected` is in `actual` with the same value (recursively for
/// objects), so AWS defaults the template left out do not matter.
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

#[test]
fn a_bucket_reads_back_is_imported_and_deleted() {
    let properties = json!({
        "VersioningConfiguration": {"Status": "Enabled"},
        "BucketEncryption": {"ServerSideEncryptionConfiguration": [
            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
        "PublicAccessBlockConfiguration": {"BlockPublicAcls": true, "BlockPublicPolicy": true,
            "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
        "Tags": [{"Key": "team", "Value": "storage"}],
    });
    let created = call(
        "AWS::S3::Bucket",
        "create",
        &["--properties", &properties.to_string()],
    );
    let bucket = created["physicalId"].as_str().unwrap().to_string();
    let read = call(
        "AWS::S3::Bucket",
        "read_current_state",
        &["--physical-id", &bucket],
    );
    assert_contains(&read["properties"], &properties, "properties");
    assert_eq!(read["properties"]["BucketName"], json!(bucket));
    assert!(
        read["properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
            ["ServerSideEncryptionByDefault"]
            .get("KMSMasterKeyID")
            .is_none(),
        "an absent key id is left out: {read}"
    );

    // Made outside cdkd, adopted by name.
    let outside = Emulator::unique("adopted");
    aws(&format!(
        "c('s3').create_bucket(Bucket='{outside}') and None"
    ));
    let imported = call("AWS::S3::Bucket", "import", &["--physical-id", &outside]);
    assert_eq!(imported["physicalId"], json!(outside));
    assert_eq!(
        imported["attributes"]["Arn"],
        json!(format!("arn:aws:s3:::{outside}"))
    );
    let plain = call(
        "AWS::S3::Bucket",
        "read_current_state",
        &["--physical-id", &outside],
    );
    assert_eq!(plain["properties"], json!({"BucketName": outside}));

    for name in [&bucket, &outside] {
        call("AWS::S3::Bucket", "delete", &["--physical-id", name]);
        let gone = call(
            "AWS::S3::Bucket",
            "read_current_state",
            &["--physical-id", name],
        );
        assert_eq!(gone["properties"], Value::Null, "{name} is still there");
    }
}

#[test]
fn a_bucket_takes_notifications_and_object_lock() {
    let queue = aws(&format!(
        "c('sqs').get_queue_attributes(QueueUrl=c('sqs').create_queue(QueueName='{}')['QueueUrl'], AttributeNames=['QueueArn'])['Attributes']['QueueArn']",
        Emulator::unique("uploads")
    ));
    let properties = json!({
        "ObjectLockEnabled": true,
        "ObjectLockConfiguration": {"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 3}}},
        "NotificationConfiguration": {"QueueConfigurations": [{"Event": "s3:ObjectCreated:*",
            "Queue": queue, "Filter": {"S3Key": {"Rules": [{"Name": "prefix", "Value": "in/"}]}}}]},
    });
    let created = call(
        "AWS::S3::Bucket",
        "create",
        &["--properties", &properties.to_string()],
    );
    let bucket = created["physicalId"].as_str().unwrap().to_string();
    let notifications = aws(&format!(
        "c('s3').get_bucket_notification_configuration(Bucket='{bucket}')['QueueConfigurations']"
    ));
    assert_eq!(notifications[0]["QueueArn"], queue);
    assert_eq!(notifications[0]["Events"], json!(["s3:ObjectCreated:*"]));
    assert_eq!(
        notifications[0]["Filter"]["Key"]["FilterRules"][0]["Value"],
        "in/"
    );
    let lock = aws(&format!(
        "c('s3').get_object_lock_configuration(Bucket='{bucket}')['ObjectLockConfiguration']"
    ));
    assert_eq!(lock["ObjectLockEnabled"], "Enabled");
    // (moto also answers "Years": 0, which S3 leaves out.)
    assert_eq!(lock["Rule"]["DefaultRetention"]["Mode"], "GOVERNANCE");
    assert_eq!(lock["Rule"]["DefaultRetention"]["Days"], 3);

    // Removing the notifications in an update clears them.
    let mut without = properties.clone();
    without
        .as_object_mut()
        .unwrap()
        .remove("NotificationConfiguration");
    call(
        "AWS::S3::Bucket",
        "update",
        &[
            "--physical-id",
            &bucket,
            "--properties",
            &without.to_string(),
            "--previous-properties",
            &properties.to_string(),
        ],
    );
    let left = aws(&format!(
        "c('s3').get_bucket_notification_configuration(Bucket='{bucket}').get('QueueConfigurations', [])"
    ));
    assert_eq!(left, json!([]));
    call("AWS::S3::Bucket", "delete", &["--physical-id", &bucket]);
}

#[test]
fn a_role_reads_back_is_imported_and_deleted() {
    let trust = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]});
    let properties = json!({
        "AssumeRolePolicyDocument": trust,
        "Description": "round trip",
        "MaxSessionDuration": 7200,
        "Path": "/rt/",
        "Tags": [{"Key": "team", "Value": "iam"}],
    });
    let created = call(
        "AWS::IAM::Role",
        "create",
        &["--properties", &properties.to_string()],
    );
    let role = created["physicalId"].as_str().unwrap().to_string();
    assert!(role.starts_with("Rt-Resource-"), "{role}");
    let read = call(
        "AWS::IAM::Role",
        "read_current_state",
        &["--physical-id", &role],
    );
    assert_contains(&read["properties"], &properties, "properties");

    let outside = Emulator::unique("adopted-role");
    aws(&format!(
        "c('iam').create_role(RoleName='{outside}', AssumeRolePolicyDocument=__import__('json').dumps({trust})) and None"
    ));
    let imported = call("AWS::IAM::Role", "import", &["--physical-id", &outside]);
    assert_eq!(imported["physicalId"], json!(outside));
    assert!(imported["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .ends_with(&format!(":role/{outside}")));
    assert!(imported["attributes"]["RoleId"].is_string());

    for name in [&role, &outside] {
        call("AWS::IAM::Role", "delete", &["--physical-id", name]);
        let gone = call(
            "AWS::IAM::Role",
            "read_current_state",
            &["--physical-id", name],
        );
        assert_eq!(gone["properties"], Value::Null, "{name} is still there");
    }
}

#[test]
fn a_function_reads_back_is_imported_and_deleted() {
    let trust = json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]});
    let role = Emulator::unique("fn-role");
    let role_arn = aws(&format!(
        "c('iam').create_role(RoleName='{role}', AssumeRolePolicyDocument=__import__('json').dumps({trust}))['Role']['Arn']"
    ));
    let properties = json!({
        "Runtime": "python3.12",
        "Handler": "index.handler",
        "Role": role_arn,
        "Code": {"ZipFile": "def handler(event, context):\n    return 1\n"},
        "Timeout": 15,
        "MemorySize": 256,
        "Environment": {"Variables": {"MODE": "rt"}},
    });
    let created = call(
        "AWS::Lambda::Function",
        "create",
        &["--properties", &properties.to_string()],
    );
    let name = created["physicalId"].as_str().unwrap().to_string();
    // The inline code arrived (its file name for the runtime is checked by the plugin's unit
    // tests: moto's code download URL does not resolve here).
    let size = aws(&format!(
        "c('lambda').get_function(FunctionName='{name}')['Configuration']['CodeSize']"
    ));
    assert!(size.as_u64().unwrap() > 0, "{size}");
    let read = call(
        "AWS::Lambda::Function",
        "read_current_state",
        &["--physical-id", &name],
    );
    let mut expected = properties.clone();
    expected.as_object_mut().unwrap().remove("Code");
    assert_contains(&read["properties"], &expected, "properties");

    let imported = call("AWS::Lambda::Function", "import", &["--physical-id", &name]);
    assert_eq!(imported["physicalId"], json!(name));
    assert!(imported["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .ends_with(&format!(":function:{name}")));

    call("AWS::Lambda::Function", "delete", &["--physical-id", &name]);
    let gone = call(
        "AWS::Lambda::Function",
        "read_current_state",
        &["--physical-id", &name],
    );
    assert_eq!(gone["properties"], Value::Null);
    // Deleting again: already gone counts as deleted.
    call("AWS::Lambda::Function", "delete", &["--physical-id", &name]);
}
