//! Create-only properties of Cloud Control types outside cdkd's built-in table replace the
//! resource: `AWS::Events::Rule` `Name` (create-only in its registry schema) and
//! `AWS::DynamoDB::Table` `KeySchema` (conditionally create-only: the handler refuses it in
//! place, so it is replaced). Registry schemas are read with `cloudformation:DescribeType` once,
//! then served from the local cache.

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{resource_of_type, Emulator};
use serde_json::{json, Value};

fn table(key: &str) -> Value {
    json!({
        "Type": "AWS::DynamoDB::Table",
        "Properties": {
            "AttributeDefinitions": [{"AttributeName": key, "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": key, "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }
    })
}

fn rule(name: &str) -> Value {
    json!({
        "Type": "AWS::Events::Rule",
        "Properties": {"Name": name, "ScheduleExpression": "rate(1 day)", "State": "DISABLED"}
    })
}

fn rule_exists(name: &str) -> bool {
    Emulator::shared().boto(&format!(
        "any(r['Name'] == '{name}' for r in c('events').list_rules()['Rules'])"
    )) == json!(true)
}

fn describe_type_calls() -> u64 {
    Emulator::shared().get("/_emulator/stats")["cloudformation:DescribeType"]
        .as_u64()
        .unwrap_or(0)
}

fn table_exists(name: &str) -> bool {
    Emulator::shared().boto(&format!(
        "'{name}' in c('dynamodb').list_tables()['TableNames']"
    )) == json!(true)
}

#[test]
fn a_create_only_change_of_any_cloud_control_type_replaces_it() {
    let world = AppWorld::of("secrets", "SecretsStack", "replace", |template| {
        template["Resources"] = json!({"Table": table("id"), "Rule": rule("cdkd-replace-a")});
        template["Outputs"] = json!({});
    })
    .on_cloud_control();
    let app = world.assembly.path().display().to_string();
    let calls = describe_type_calls();
    world.cdkd(&["deploy", "-a", &app]).success();
    // A first deploy reads each Cloud Control type's schema once, for pre-flight (a type Cloud
    // Control cannot provision is refused before anything is created).
    assert_eq!(describe_type_calls(), calls + 2);
    let record = world
        .cdkd(&["state", "show", "SecretsStack", "--json"])
        .success()
        .json();
    let old = resource_of_type(&record["state"], "AWS::DynamoDB::Table")["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(table_exists(&old));

    assert!(rule_exists("cdkd-replace-a"));
    world.edit(|template| {
        template["Resources"]["Table"] = table("pk");
        template["Resources"]["Rule"] = rule("cdkd-replace-b");
    });
    let diff = world.cdkd(&["diff", "-a", &app, "--json"]).success().json();
    let changes = diff["stacks"][0]["changes"].as_array().unwrap().clone();
    let change = |id: &str| {
        changes
            .iter()
            .find(|c| c["logicalId"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(change("Rule")["replacement"], json!(true), "{diff}");
    // Only the handler can tell: the diff shows an update.
    assert_eq!(change("Table")["action"], json!("UPDATE"), "{diff}");
    assert_eq!(change("Table")["replacement"], json!(false), "{diff}");
    let after_diff = describe_type_calls();
    assert_eq!(
        after_diff,
        calls + 2,
        "diff read the schemas from the cache"
    );

    let deploy = world.cdkd(&["deploy", "-a", &app]).success();
    // The schema came from the cache: no second read.
    assert_eq!(describe_type_calls(), after_diff, "{}", deploy.stderr);
    let record = world
        .cdkd(&["state", "show", "SecretsStack", "--json"])
        .success()
        .json();
    let new = resource_of_type(&record["state"], "AWS::DynamoDB::Table")["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(new, old, "replaced, not patched");
    assert!(table_exists(&new) && !table_exists(&old));
    let key = Emulator::shared().boto(&format!(
        "c('dynamodb').describe_table(TableName='{new}')['Table']['KeySchema'][0]['AttributeName']"
    ));
    assert_eq!(key, json!("pk"));
    assert!(rule_exists("cdkd-replace-b") && !rule_exists("cdkd-replace-a"));
    world.cdkd(&["destroy", "-a", &app, "--force"]).success();
}
