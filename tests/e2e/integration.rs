//! The events, kms and secretsmanager plugins through `cdkd deploy` with a real CDK app
//! (tests/fixtures/apps/integration.js): an EventBridge rule with a queue target and a
//! transformed Lambda target, a KMS key with an alias encrypting the queue and a table, a
//! generated secret read by the function through a dynamic reference; checked in the emulator
//! and in the state file (where the secret never appears), through an update and destroy.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "IntegrationStack";
const KEY: &str = "DataKey17AFBB84";
const ALIAS: &str = "DataKeyAliasF989EB84";
const QUEUE: &str = "InboxA8E05DC3";
const TABLE: &str = "LedgerB7379752";
const SECRET: &str = "DbPassword10268EB9";
const RULE: &str = "OrderPlacedDB034628";
const FUNCTION: &str = "Handler886CB40B";

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn deploy(world: &AppWorld) -> cdkd_tests::Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, STACK]).success()
}

#[test]
fn a_rule_a_key_and_a_secret_deploy_through_the_plugins() {
    let world = AppWorld::of("integration", STACK, "integration", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("10 created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [KEY, ALIAS, QUEUE, TABLE, SECRET, RULE] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let key_id = resources[KEY]["physicalId"].as_str().unwrap().to_string();
    let key_arn = resources[KEY]["attributes"]["Arn"].clone();
    assert!(key_arn
        .as_str()
        .unwrap()
        .ends_with(&format!(":key/{key_id}")));

    // The key: rotation on, the alias pointing at it, the queue and the table encrypted with it.
    assert_eq!(
        aws(&format!(
            "c('kms').get_key_rotation_status(KeyId='{key_id}')['KeyRotationEnabled']"
        )),
        json!(true)
    );
    assert_eq!(
        aws("[a['TargetKeyId'] for a in c('kms').list_aliases()['Aliases'] if a['AliasName'] == 'alias/integration-data']"),
        json!([key_id])
    );
    let url = resources[QUEUE]["physicalId"].as_str().unwrap().to_string();
    assert_eq!(
        aws(&format!("c('sqs').get_queue_attributes(QueueUrl='{url}', AttributeNames=['KmsMasterKeyId'])['Attributes']['KmsMasterKeyId']")),
        key_arn
    );
    let table = resources[TABLE]["physicalId"].as_str().unwrap().to_string();
    assert_eq!(
        aws(&format!("c('dynamodb').describe_table(TableName='{table}')['Table']['SSEDescription']['KMSMasterKeyArn']")),
        key_arn
    );

    // The secret: generated from its template, handed to the function, never recorded.
    let secret_arn = resources[SECRET]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let value: Value = serde_json::from_str(
        aws(&format!(
            "c('secretsmanager').get_secret_value(SecretId='{secret_arn}')['SecretString']"
        ))
        .as_str()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(value["username"], "app");
    let password = value["password"].as_str().unwrap().to_string();
    assert_eq!(password.len(), 32, "{password}");
    assert!(password.chars().all(char::is_alphanumeric), "{password}");
    let function = resources[FUNCTION]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        aws(&format!("c('lambda').get_function_configuration(FunctionName='{function}')['Environment']['Variables']['PASSWORD']")),
        json!(password)
    );
    let recorded = world.state().to_string();
    assert!(!recorded.contains(&password), "the password reached state");

    // The rule: its pattern, a queue target and a transformed Lambda target with retries; an
    // event it matches reaches the queue.
    let rule_name = resources[RULE]["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let targets = aws(&format!(
        "sorted(c('events').list_targets_by_rule(Rule='{rule_name}')['Targets'], key=lambda t: t['Id'])"
    ));
    assert_eq!(targets[0]["Arn"], resources[QUEUE]["attributes"]["Arn"]);
    assert_eq!(
        targets[1]["InputTransformer"]["InputPathsMap"],
        json!({"detail-type": "$.detail-type", "detail-id": "$.detail.id"})
    );
    assert_eq!(targets[1]["RetryPolicy"]["MaximumRetryAttempts"], json!(2));
    let pattern: Value = serde_json::from_str(
        aws(&format!(
            "c('events').describe_rule(Name='{rule_name}')['EventPattern']"
        ))
        .as_str()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(pattern["source"], json!(["integration.orders"]));
    let delivered = aws(&format!(
        "(c('events').put_events(Entries=[{{'Source': 'integration.orders', 'DetailType': 'OrderPlaced', 'Detail': '{{\"id\": \"o-1\"}}'}}]), [json.loads(m['Body'])['detail'] for m in c('sqs').receive_message(QueueUrl='{url}', MaxNumberOfMessages=10, WaitTimeSeconds=1).get('Messages', [])])[1]"
    ));
    assert_eq!(delivered, json!([{"id": "o-1"}]));

    let again = deploy(&world);
    assert!(again.stdout.contains("10 unchanged"), "{}", again.stdout);

    // In place: the rule's pattern and the key's description.
    world.edit(|t| {
        t["Resources"][RULE]["Properties"]["EventPattern"]["source"] =
            json!(["integration.refunds"]);
        t["Resources"][KEY]["Properties"]["Description"] = json!("encrypts the ledger");
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    let pattern: Value = serde_json::from_str(
        aws(&format!(
            "c('events').describe_rule(Name='{rule_name}')['EventPattern']"
        ))
        .as_str()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(pattern["source"], json!(["integration.refunds"]));
    assert_eq!(
        aws(&format!(
            "c('kms').describe_key(KeyId='{key_id}')['KeyMetadata']['Description']"
        )),
        "encrypts the ledger"
    );

    // Destroy: the key waits out its 7-day window, the rest is gone.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    let left = aws(&format!(
        "(c('kms').describe_key(KeyId='{key_id}')['KeyMetadata']['KeyState'], [a for a in c('kms').list_aliases()['Aliases'] if a['AliasName'] == 'alias/integration-data'], [r['Name'] for r in c('events').list_rules()['Rules'] if r['Name'] == '{rule_name}'], [s['ARN'] for s in c('secretsmanager').list_secrets()['SecretList'] if s['ARN'] == '{secret_arn}'])"
    ));
    assert_eq!(left, json!(["PendingDeletion", [], [], []]));
}
