//! The core services through their plugins, with real CDK apps: `core` (48 resources, 8 each of
//! a bucket, a table, a queue, a topic, a parameter and a log group: every one on an SDK
//! plugin, none on Cloud Control) and `data` (a DynamoDB table with an index, TTL, PITR and a
//! stream feeding a function; a log group with metric and subscription filters; a parameter),
//! checked in the emulator and in the state file through an update, a replacement, drift and
//! destroy.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn deploy(world: &AppWorld, stack: &str) -> cdkd_tests::Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, stack]).success()
}

#[test]
fn forty_eight_resources_of_six_services_go_through_plugins_only() {
    let world = AppWorld::of("core", "CoreStack", "core", |_| {});
    let run = deploy(&world, "CoreStack");
    assert!(run.stdout.contains("48 created"), "{}", run.stdout);
    let resources = world.resources("CoreStack");
    let resources = resources.as_object().unwrap();
    assert_eq!(resources.len(), 48);
    let on_cloud_control = world.off_plugins("CoreStack");
    assert!(on_cloud_control.is_empty(), "{on_cloud_control:?}");
    let again = deploy(&world, "CoreStack");
    assert!(again.stdout.contains("48 unchanged"), "{}", again.stdout);
    let app = world.assembly.path().display().to_string();
    world
        .cdkd(&["destroy", "-a", &app, "CoreStack", "-f"])
        .success();
    let left = aws(
        "([u for u in c('sqs').list_queues().get('QueueUrls', []) if '/CoreStack-' in u], [t for t in c('sns').list_topics()['Topics'] if ':CoreStack-' in t['TopicArn']], [n for n in c('dynamodb').list_tables()['TableNames'] if n.startswith('CoreStack-')], [g['logGroupName'] for g in c('logs').describe_log_groups(logGroupNamePrefix='CoreStack-')['logGroups']], [p['Name'] for p in c('ssm').describe_parameters(MaxResults=50)['Parameters'] if p['Name'].startswith('CoreStack-')])",
    );
    assert_eq!(left, json!([[], [], [], [], []]));
}

const DATA: &str = "DataStack";
const TABLE: &str = "OrdersA9B65338";
const GROUP: &str = "AppLogsC5DF83A6";
const PARAMETER: &str = "Setting2E7FC5C3";

#[test]
fn a_table_with_a_stream_log_filters_and_a_parameter_deploy_through_the_plugins() {
    let world = AppWorld::of("data", DATA, "data", |_| {});
    let first = deploy(&world, DATA);
    assert!(first.stdout.contains("10 created"), "{}", first.stdout);
    let resources = world.resources(DATA);
    for id in [
        TABLE,
        GROUP,
        PARAMETER,
        "ErrorsFA5270DE",
        "ToProcessorED9E8F64",
    ] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let table = resources[TABLE]["physicalId"].as_str().unwrap().to_string();
    let group = resources[GROUP]["physicalId"].as_str().unwrap().to_string();
    assert!(table.starts_with("DataStack-OrdersA9B65338-"), "{table}");

    // The table: its index, stream (whose ARN the event source mapping read), TTL and PITR.
    let described = aws(&format!(
        "c('dynamodb').describe_table(TableName='{table}')['Table']"
    ));
    assert_eq!(described["TableStatus"], "ACTIVE");
    assert_eq!(
        described["GlobalSecondaryIndexes"][0]["IndexName"],
        "byCustomer"
    );
    assert_eq!(
        described["StreamSpecification"]["StreamViewType"],
        "NEW_AND_OLD_IMAGES"
    );
    let stream = resources[TABLE]["attributes"]["StreamArn"].clone();
    assert_eq!(described["LatestStreamArn"], stream);
    assert_eq!(
        resources["ProcessorDynamoDBEventSourceDataStackOrders4FDE4D28839F96C4"]["properties"]
            ["EventSourceArn"],
        stream
    );
    assert_eq!(
        aws(&format!(
            "c('dynamodb').describe_time_to_live(TableName='{table}')['TimeToLiveDescription']"
        )),
        json!({"AttributeName": "expires", "TimeToLiveStatus": "ENABLED"})
    );
    assert_eq!(
        aws(&format!("c('dynamodb').describe_continuous_backups(TableName='{table}')['ContinuousBackupsDescription']['PointInTimeRecoveryDescription']['PointInTimeRecoveryStatus']")),
        "ENABLED"
    );
    // The log group, its filters, the parameter.
    assert_eq!(
        aws(&format!("[g.get('retentionInDays') for g in c('logs').describe_log_groups(logGroupNamePrefix='{group}')['logGroups']]")),
        json!([14])
    );
    assert_eq!(
        aws(&format!("[f['filterPattern'] for f in c('logs').describe_metric_filters(logGroupName='{group}')['metricFilters']]")),
        json!(["ERROR"])
    );
    let function_arn = resources["Processor60228016"]["attributes"]["Arn"].clone();
    assert_eq!(
        aws(&format!("[f['destinationArn'] for f in c('logs').describe_subscription_filters(logGroupName='{group}')['subscriptionFilters']]")),
        json!([function_arn])
    );
    let parameter =
        || aws("c('ssm').get_parameter(Name='/data-stack/greeting')['Parameter']['Value']");
    assert_eq!(parameter(), "hello");

    let again = deploy(&world, DATA);
    assert!(again.stdout.contains("10 unchanged"), "{}", again.stdout);

    // In place: the parameter's value, the log retention, a second index on the table.
    world.edit(|t| {
        t["Resources"][PARAMETER]["Properties"]["Value"] = json!("hi");
        t["Resources"][GROUP]["Properties"]["RetentionInDays"] = json!(30);
        let table = &mut t["Resources"][TABLE]["Properties"];
        table["AttributeDefinitions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"AttributeName": "status", "AttributeType": "S"}));
        table["GlobalSecondaryIndexes"]
            .as_array_mut()
            .unwrap()
            .push(json!({"IndexName": "byStatus", "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}], "Projection": {"ProjectionType": "KEYS_ONLY"}}));
    });
    let updated = deploy(&world, DATA);
    assert!(updated.stdout.contains("0 replaced"), "{}", updated.stdout);
    assert_eq!(world.resources(DATA)[TABLE]["physicalId"], json!(table));
    assert_eq!(parameter(), "hi");
    let indexes = aws(&format!("sorted(i['IndexName'] for i in c('dynamodb').describe_table(TableName='{table}')['Table']['GlobalSecondaryIndexes'])"));
    assert_eq!(indexes, json!(["byCustomer", "byStatus"]));
    assert_eq!(
        aws(&format!("[g.get('retentionInDays') for g in c('logs').describe_log_groups(logGroupNamePrefix='{group}')['logGroups']]")),
        json!([30])
    );

    // Drift: a value changed outside cdkd.
    aws("c('ssm').put_parameter(Name='/data-stack/greeting', Value='changed', Overwrite=True) and None");
    let drift = world.cdkd(&["drift", DATA]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(PARAMETER) && drift.stdout.contains("Value"),
        "{}",
        drift.stdout
    );

    // Create-only: a new parameter name replaces the parameter.
    world.edit(|t| {
        t["Resources"][PARAMETER]["Properties"]["Name"] = json!("/data-stack/renamed");
    });
    let replaced = deploy(&world, DATA);
    assert!(replaced.stdout.contains("replaced"), "{}", replaced.stdout);
    let names = aws("sorted(p['Name'] for p in c('ssm').describe_parameters(MaxResults=50)['Parameters'] if p['Name'].startswith('/data-stack/'))");
    assert_eq!(names, json!(["/data-stack/renamed"]));

    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, DATA, "-f"]).success();
    let left = aws(&format!(
        "('{table}' in c('dynamodb').list_tables()['TableNames'], c('logs').describe_log_groups(logGroupNamePrefix='{group}')['logGroups'], [p['Name'] for p in c('ssm').describe_parameters(MaxResults=50)['Parameters'] if p['Name'].startswith('/data-stack/')])"
    ));
    assert_eq!(left, json!([false, [], []]));
}
