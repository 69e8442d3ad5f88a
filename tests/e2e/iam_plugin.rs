//! The IAM plugin through `cdkd deploy`: the app fixture's role, its default (inline) policy and
//! its managed policy, which read the producer stack's topic (ImportValue) and queue
//! (GetStackOutput); checked in the emulator's IAM API.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

/// The app fixture with its own buckets, prepared for this test.
fn new_world() -> AppWorld {
    // Keep IAM: the Lambda functions wait for the Lambda plugin, the nested stack for
    // nested-stack support.
    AppWorld::new("iamplugin", |t| {
        t["Resources"].as_object_mut().unwrap().retain(|_, r| {
            !matches!(
                r["Type"].as_str(),
                Some("AWS::Lambda::Function" | "AWS::CloudFormation::Stack")
            )
        });
    })
}

fn iam(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

#[test]
fn the_app_role_and_its_policies_go_through_the_iam_plugin() {
    let world = new_world();
    let app = world.assembly.path().display().to_string();
    let deployed = world.cdkd(&["deploy", "-a", &app, "--all"]).success();
    assert!(
        deployed
            .stdout
            .contains("FnRoleDAF86AC1 (AWS::IAM::Role): created AppStack-FnRoleDAF86AC1-"),
        "{}",
        deployed.stdout
    );
    // The asset Lambda's folder was zipped and published to cdkd's asset bucket.
    let objects = iam(&format!(
        "[o['Key'] for o in c('s3').list_objects_v2(Bucket='{}').get('Contents', [])]",
        world.assets
    ));
    assert_eq!(
        objects,
        json!(["09d099f5e56edd144d75c0c41d8cbe701d466d4f9ad51d167e068f2437569926.zip"])
    );
    let entries = iam(&format!(
        "__import__('zipfile').ZipFile(__import__('io').BytesIO(c('s3').get_object(Bucket='{}', Key='09d099f5e56edd144d75c0c41d8cbe701d466d4f9ad51d167e068f2437569926.zip')['Body'].read())).namelist()",
        world.assets
    ));
    assert_eq!(entries, json!(["index.js"]));
    let resources = world.resources("AppStack");
    let role = resources["FnRoleDAF86AC1"].clone();
    assert_eq!(role["provisionedBy"], "sdk");
    let name = role["physicalId"].as_str().unwrap().to_string();
    assert!(role["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .ends_with(&format!(":role/{name}")));

    let trust = iam(&format!(
        "c('iam').get_role(RoleName='{name}')['Role']['AssumeRolePolicyDocument']"
    ));
    assert_eq!(
        trust["Statement"][0]["Principal"]["Service"],
        "lambda.amazonaws.com"
    );
    let attached = iam(&format!("sorted(p['PolicyArn'] for p in c('iam').list_attached_role_policies(RoleName='{name}')['AttachedPolicies'])"));
    let managed_arn = resources["ReadQueue917DFADA"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let attached: Vec<&str> = attached
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        attached.contains(&"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"),
        "{attached:?}"
    );
    assert!(attached.contains(&managed_arn.as_str()), "{attached:?}");

    // The inline (default) policy names the producer's topic, read through Fn::ImportValue.
    let policy_name = resources["FnRoleDefaultPolicy12B9B8A2"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let inline = iam(&format!(
        "c('iam').get_role_policy(RoleName='{name}', PolicyName='{policy_name}')['PolicyDocument']"
    ));
    let topic = world
        .resources("ProducerStack")
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["resourceType"] == "AWS::SNS::Topic")
        .unwrap()["physicalId"]
        .clone();
    assert_eq!(inline["Statement"][0]["Resource"], topic);
    // The managed policy names the producer's queue ARN, read through Fn::GetStackOutput.
    let version = iam(&format!("c('iam').get_policy_version(PolicyArn='{managed_arn}', VersionId=c('iam').get_policy(PolicyArn='{managed_arn}')['Policy']['DefaultVersionId'])['PolicyVersion']['Document']"));
    assert!(
        version["Statement"][0]["Resource"]
            .as_str()
            .unwrap()
            .starts_with("arn:aws:sqs:us-east-1:123456789012:"),
        "{version}"
    );

    // In place: another action in the inline policy; the managed policy gets a new version.
    world.edit(|t| {
        t["Resources"]["FnRoleDefaultPolicy12B9B8A2"]["Properties"]["PolicyDocument"]
            ["Statement"][0]["Action"] = json!(["sns:Publish", "sns:GetTopicAttributes"]);
        t["Resources"]["ReadQueue917DFADA"]["Properties"]["PolicyDocument"]["Statement"][0]
            ["Action"] = json!(["sqs:ReceiveMessage", "sqs:DeleteMessage"]);
    });
    world
        .cdkd(&["deploy", "-a", &app, "AppStack", "-e"])
        .success();
    let inline = iam(&format!(
        "c('iam').get_role_policy(RoleName='{name}', PolicyName='{policy_name}')['PolicyDocument']"
    ));
    assert_eq!(
        inline["Statement"][0]["Action"],
        json!(["sns:Publish", "sns:GetTopicAttributes"])
    );
    let versions = iam(&format!(
        "len(c('iam').list_policy_versions(PolicyArn='{managed_arn}')['Versions'])"
    ));
    assert_eq!(versions, json!(2));
    assert_eq!(
        world.resources("AppStack")["FnRoleDAF86AC1"]["physicalId"],
        json!(name),
        "the role was replaced"
    );

    // Create-only: a role name replaces the role; its inline and managed policies move to the
    // new role, and the old role is deleted (after its policies are detached).
    let renamed = Emulator::unique("renamed-role");
    world.edit(|t| {
        t["Resources"]["FnRoleDAF86AC1"]["Properties"]["RoleName"] = json!(renamed);
    });
    let replaced = world
        .cdkd(&["deploy", "-a", &app, "AppStack", "-e"])
        .success();
    assert!(
        replaced.stdout.contains(&format!("replaced by {renamed}")),
        "{}",
        replaced.stdout
    );
    let roles = iam("[r['RoleName'] for r in c('iam').list_roles()['Roles']]");
    assert!(roles.as_array().unwrap().contains(&json!(renamed)));
    assert!(
        !roles.as_array().unwrap().contains(&json!(name)),
        "the old role survived"
    );
    let inline = iam(&format!(
        "c('iam').get_role_policy(RoleName='{renamed}', PolicyName='{policy_name}')['PolicyDocument']['Statement'][0]['Action']"
    ));
    assert_eq!(inline, json!(["sns:Publish", "sns:GetTopicAttributes"]));
    let attached = iam(&format!("[p['PolicyArn'] for p in c('iam').list_attached_role_policies(RoleName='{renamed}')['AttachedPolicies']]"));
    assert!(
        attached.as_array().unwrap().contains(&json!(managed_arn)),
        "{attached}"
    );
    let name = renamed;

    world
        .cdkd(&["destroy", "-a", &app, "--all", "-f"])
        .success();
    let roles = iam("[r['RoleName'] for r in c('iam').list_roles()['Roles']]");
    assert!(
        !roles.as_array().unwrap().contains(&json!(name)),
        "the role survived the destroy"
    );
    let policies = iam("[p['Arn'] for p in c('iam').list_policies(Scope='Local')['Policies']]");
    assert!(
        !policies.as_array().unwrap().contains(&json!(managed_arn)),
        "the managed policy survived"
    );
}
