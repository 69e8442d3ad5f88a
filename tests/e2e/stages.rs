//! Apps with CDK Stages (nested cloud assemblies) and stacks that read each other without a
//! manifest dependency: selection by `Stage/Stack` paths, and deploy / destroy in the order
//! the reads impose, checked in the state records and the emulator.

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{resource_of_type, Emulator};
use serde_json::{json, Value};

fn position(text: &str, needle: &str) -> usize {
    text.find(needle)
        .unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"))
}

fn record(world: &AppWorld, stack: &str, region: &str) -> Value {
    world
        .cdkd(&["state", "show", stack, "--stack-region", region, "--json"])
        .success()
        .json()["state"]
        .clone()
}

#[test]
fn stages_are_listed_by_path_and_deployed_in_the_order_their_imports_need() {
    let world = AppWorld::unedited("stages", "stages");
    let app = world.assembly.path().display().to_string();
    let listed = world.cdkd(&["list", "-a", &app]).success().stdout;
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        ["Shared/Network", "Prod/Service"]
    );
    // A pattern over stage paths; Prod alone cannot go first: it imports Shared's export.
    let alone = world.cdkd(&["deploy", "-a", &app, "Prod/*"]);
    assert_eq!(alone.code, Some(1), "{}", alone.stdout);
    assert!(
        alone.stderr.contains("CdkdSharedEventsArn"),
        "{}",
        alone.stderr
    );
    let deployed = world
        .cdkd(&["deploy", "-a", &app, "--all", "--stack-concurrency", "2"])
        .success()
        .stdout;
    assert!(
        position(&deployed, "Shared-Network: 1 created") < position(&deployed, "Prod-Service |"),
        "Prod started before Shared finished:\n{deployed}"
    );
    let shared = record(&world, "Shared-Network", "us-east-1");
    let prod = record(&world, "Prod-Service", "us-east-1");
    let events = resource_of_type(&shared, "AWS::SNS::Topic")["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let relay = resource_of_type(&prod, "AWS::SNS::Topic");
    // Fn::Select 5 of the ARN split on ':' is the topic's name.
    let name = events.rsplit(':').next().unwrap();
    assert_eq!(relay["properties"]["DisplayName"], json!(name));
    assert_eq!(prod["imports"][0]["sourceStack"], "Shared-Network");
    let display: Value = Emulator::shared().boto(&format!(
        "c('sns').get_topic_attributes(TopicArn='{}')['Attributes']['DisplayName']",
        relay["physicalId"].as_str().unwrap()
    ));
    assert_eq!(display, json!(name));

    // Destroy goes the other way round (Shared's export is imported until Prod is gone).
    let destroyed = world
        .cdkd(&["destroy", "-a", &app, "--all", "-f"])
        .success()
        .stdout;
    assert!(position(&destroyed, "Prod-Service") < position(&destroyed, "Shared-Network"));
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}

#[test]
fn stacks_that_read_each_other_by_name_run_in_order_across_regions() {
    let world = AppWorld::unedited("ordering", "ordering");
    let app = world.assembly.path().display().to_string();
    let deployed = world
        .cdkd(&["deploy", "-a", &app, "--all", "--stack-concurrency", "3"])
        .success()
        .stdout;
    let reader_starts = position(&deployed, "CdkdReaderStack |");
    assert!(position(&deployed, "CdkdExporterStack: 2 created") < reader_starts);
    assert!(position(&deployed, "CdkdWestStack: 1 created") < reader_starts);
    let exporter = record(&world, "CdkdExporterStack", "us-east-1");
    let west = record(&world, "CdkdWestStack", "us-west-2");
    let reader = record(&world, "CdkdReaderStack", "us-east-1");
    let log_names: Vec<&Value> = reader["resources"]
        .as_object()
        .unwrap()
        .values()
        .filter(|r| r["resourceType"] == "AWS::Logs::LogGroup")
        .map(|r| &r["properties"]["LogGroupName"])
        .collect();
    assert!(log_names.contains(&&exporter["outputs"]["NoticesName"]));
    assert!(log_names.contains(&&west["outputs"]["RemoteName"]));
    let reads: Vec<(&str, &str)> = reader["outputReads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["sourceStack"].as_str().unwrap(),
                r["sourceRegion"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(reads.contains(&("CdkdWestStack", "us-west-2")), "{reads:?}");
    assert_eq!(reader["imports"][0]["sourceStack"], "CdkdExporterStack");

    let destroyed = world
        .cdkd(&["destroy", "-a", &app, "--all", "-f"])
        .success()
        .stdout;
    let reader_gone = position(&destroyed, "CdkdReaderStack");
    assert!(reader_gone < position(&destroyed, "CdkdExporterStack"));
    assert!(reader_gone < position(&destroyed, "CdkdWestStack"));
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}
