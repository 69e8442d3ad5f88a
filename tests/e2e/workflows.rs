//! The stepfunctions, kinesis, cloudwatch and scheduler plugins through `cdkd deploy` with a
//! real CDK app (tests/fixtures/apps/workflows.js): a state machine invoking a function, a
//! stream feeding it, an alarm on a queue's depth, an hourly schedule in a schedule group;
//! checked in the emulator and the state file through an in-place update, drift and destroy.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "WorkflowsStack";
const MACHINE: &str = "FlowA74D6E88";
const STREAM: &str = "Clicks81B5095A";
const ALARM: &str = "BacklogAlarm1E83516A";
const GROUP: &str = "JobsDF1CC2D4";
const SCHEDULE: &str = "HourlyF36A3822";

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn deploy(world: &AppWorld) -> cdkd_tests::Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, STACK]).success()
}

#[test]
fn a_state_machine_a_stream_an_alarm_and_a_schedule_deploy_through_the_plugins() {
    let world = AppWorld::of("workflows", STACK, "workflows", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("14 created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [MACHINE, STREAM, ALARM, GROUP, SCHEDULE] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }

    // The state machine runs the function's task.
    let machine = resources[MACHINE]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(resources[MACHINE]["attributes"]["Arn"], json!(machine));
    let definition: Value = serde_json::from_str(
        aws(&format!(
            "c('stepfunctions').describe_state_machine(stateMachineArn='{machine}')['definition']"
        ))
        .as_str()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(definition["StartAt"], "Work");
    assert_eq!(
        definition["States"]["Work"]["Parameters"]["FunctionName"],
        resources["Worker11F36D0F"]["attributes"]["Arn"]
    );

    // The stream is active with its retention, and the mapping reads it.
    let stream = resources[STREAM]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let summary = aws(&format!(
        "c('kinesis').describe_stream_summary(StreamName='{stream}')['StreamDescriptionSummary']"
    ));
    assert_eq!(summary["StreamStatus"], "ACTIVE");
    assert_eq!(summary["RetentionPeriodHours"], json!(48));
    assert_eq!(
        resources["WorkerKinesisEventSourceWorkflowsStackClicks168D63B10C72A851"]["properties"]
            ["EventSourceArn"],
        resources[STREAM]["attributes"]["Arn"]
    );

    // The alarm watches the queue by its name.
    let alarm = resources[ALARM]["physicalId"].as_str().unwrap().to_string();
    let described = aws(&format!(
        "c('cloudwatch').describe_alarms(AlarmNames=['{alarm}'])['MetricAlarms'][0]"
    ));
    assert_eq!(described["Threshold"], json!(100.0));
    assert_eq!(described["TreatMissingData"], "notBreaching");
    assert_eq!(
        described["Dimensions"][0]["Value"],
        resources["Backlog7AD37F26"]["attributes"]["QueueName"]
    );

    // The schedule, in its group, invokes the function.
    let group = resources[GROUP]["physicalId"].as_str().unwrap().to_string();
    let schedule = resources[SCHEDULE]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let got = aws(&format!(
        "c('scheduler').get_schedule(Name='{schedule}', GroupName='{group}')"
    ));
    assert_eq!(got["ScheduleExpression"], "rate(1 hour)");
    assert_eq!(
        got["Target"]["Arn"],
        resources["Worker11F36D0F"]["attributes"]["Arn"]
    );
    assert_eq!(
        serde_json::from_str::<Value>(got["Target"]["Input"].as_str().unwrap()).unwrap(),
        json!({"job": "hourly"})
    );

    let again = deploy(&world);
    assert!(again.stdout.contains("14 unchanged"), "{}", again.stdout);

    // In place: the alarm's threshold and the schedule's rate.
    world.edit(|t| {
        t["Resources"][ALARM]["Properties"]["Threshold"] = json!(250);
        t["Resources"][SCHEDULE]["Properties"]["ScheduleExpression"] = json!("rate(2 hours)");
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    assert_eq!(
        aws(&format!(
            "c('cloudwatch').describe_alarms(AlarmNames=['{alarm}'])['MetricAlarms'][0]['Threshold']"
        )),
        json!(250.0)
    );
    assert_eq!(
        aws(&format!(
            "c('scheduler').get_schedule(Name='{schedule}', GroupName='{group}')['ScheduleExpression']"
        )),
        "rate(2 hours)"
    );

    // Drift: the stream's retention changed outside cdkd.
    aws(&format!(
        "c('kinesis').increase_stream_retention_period(StreamName='{stream}', RetentionPeriodHours=72) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(STREAM) && drift.stdout.contains("RetentionPeriodHours"),
        "{}",
        drift.stdout
    );

    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    let left = aws(&format!(
        "([m['stateMachineArn'] for m in c('stepfunctions').list_state_machines()['stateMachines'] if m['stateMachineArn'] == '{machine}'], [s for s in c('kinesis').list_streams()['StreamNames'] if s == '{stream}'], [a['AlarmName'] for a in c('cloudwatch').describe_alarms(AlarmNames=['{alarm}'])['MetricAlarms']], [g['Name'] for g in c('scheduler').list_schedule_groups()['ScheduleGroups'] if g['Name'] == '{group}'])"
    ));
    // CDK streams are retained by default (DeletionPolicy: Retain): kept in AWS, out of state.
    assert_eq!(left, json!([[], [stream], [], []]));
    aws(&format!(
        "c('kinesis').delete_stream(StreamName='{stream}') and None"
    ));
}
