//! `cdkd deploy --wait` under the emulator's AWS timing profile (issue 29), switched on for
//! this binary's own emulator: a Lambda function's create answers while the function is still
//! `Pending` (its dependents take it so), a version published from it waits for it itself,
//! `--wait full` waits for `Active`, and `--no-wait` leaves a table `CREATING`.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::json;

/// How long a new function (or table, where it is meant to be seen `CREATING`) takes: far
/// longer than a deploy of a few resources.
const PENDING_MS: u64 = 30_000;

/// Sets how long new functions stay `Pending` and new tables `CREATING`, in AWS milliseconds
/// at scale 1 (each resource takes the value in force when it is created).
fn readiness(function_ms: u64, table_ms: u64) {
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"profile": "aws", "timeScale": 1, "timingOverrides": {
            "lambda_function_ready_ms": function_ms, "dynamodb_table_ready_ms": table_ms,
            "iam_role_propagation_ms": 0}}),
    );
}

/// The app fixture's inline function and its role, and a table.
fn world(prefix: &str) -> AppWorld {
    AppWorld::new(prefix, |t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.retain(|id, _| id.starts_with("FnRole") || id == "Inline6CF80F9D");
        resources.insert(
            "Table".into(),
            json!({"Type": "AWS::DynamoDB::Table", "Properties": {
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST"}}),
        );
    })
}

fn table_status(table: &str) -> String {
    let answer = Emulator::shared().boto(&format!(
        "c('dynamodb').describe_table(TableName='{table}')['Table']['TableStatus']"
    ));
    answer.as_str().unwrap_or_default().to_string()
}

fn state_of(function: &str) -> String {
    let answer = Emulator::shared().boto(&format!(
        "c('lambda').get_function_configuration(FunctionName='{function}')['State']"
    ));
    answer.as_str().unwrap_or_default().to_string()
}

#[test]
fn a_function_is_left_pending_by_default_waited_for_by_its_version_and_by_wait_full() {
    readiness(PENDING_MS, 2_000);

    // The default: the deploy ends while the function is Pending.
    let dependents = world("waitdeps");
    let started = std::time::Instant::now();
    dependents.deploy(&["AppStack"]).success();
    let function = dependents.physical("Inline6CF80F9D");
    assert_eq!(
        state_of(&function),
        "Pending",
        "the deploy waited {:?} for a function nothing needed Active",
        started.elapsed()
    );
    // A table is waited ACTIVE by default (its settings and item writers need it).
    assert_eq!(table_status(&dependents.physical("Table")), "ACTIVE");

    // A version needs it Active: its PublishVersion is refused until then and tried again.
    dependents.edit(|t| {
        t["Resources"]["InlineVersion"] = json!({"Type": "AWS::Lambda::Version",
            "Properties": {"FunctionName": {"Ref": "Inline6CF80F9D"}}});
    });
    dependents.deploy(&["AppStack"]).success();
    assert_eq!(state_of(&function), "Active");
    let version = dependents.physical("InlineVersion");
    assert!(version.ends_with(":1"), "{version}");

    // --wait full: the deploy ends once the function is Active.
    readiness(5_000, 2_000);
    let full = world("waitfull");
    full.deploy(&["AppStack", "--wait", "full"]).success();
    assert_eq!(state_of(&full.physical("Inline6CF80F9D")), "Active");

    // --no-wait: the table is left CREATING too.
    readiness(PENDING_MS, PENDING_MS);
    let none = world("waitnone");
    none.deploy(&["AppStack", "--no-wait"]).success();
    assert_eq!(table_status(&none.physical("Table")), "CREATING");
    assert_eq!(state_of(&none.physical("Inline6CF80F9D")), "Pending");

    // --no-wait and --wait together are refused by the parser.
    let both = full.deploy(&["AppStack", "--wait", "full", "--no-wait"]);
    assert!(
        both.code != Some(0) && both.stderr.contains("cannot be used with '--no-wait'"),
        "{}",
        both.stderr
    );

    Emulator::shared().post("/_emulator/config", &json!({"profile": "off"}));
}
