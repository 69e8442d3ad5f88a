//! S3 notifications to SQS through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! notifications.js): CDK's `Custom::S3BucketNotifications` handler (run by the custom-resource
//! plugin) configures the bucket, the sqs plugin makes the queue and the policy letting S3 send;
//! an object put under the prefix arrives in the queue, one outside it does not; destroy leaves
//! nothing.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "NotificationsStack";
const QUEUE: &str = "Uploads4F6EB0FD";
const POLICY: &str = "UploadsPolicy148F8199";
const BUCKET: &str = "InboxA8E05DC3";
const NOTIFICATIONS: &str = "InboxNotificationsAC048E36";

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

#[test]
fn an_object_created_in_the_bucket_reaches_the_queue() {
    let world = AppWorld::of("notifications", STACK, "notifications", |_| {});
    let app = world.assembly.path().display().to_string();
    let first = world.cdkd(&["deploy", "-a", &app, STACK]).success();
    assert!(
        first.stdout.contains("7 created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [QUEUE, POLICY, BUCKET] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    assert_eq!(
        resources[NOTIFICATIONS]["resourceType"],
        "Custom::S3BucketNotifications"
    );
    let bucket = resources[BUCKET]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let url = resources[QUEUE]["physicalId"].as_str().unwrap().to_string();
    let queue_arn = resources[QUEUE]["attributes"]["Arn"].clone();

    // The handler put the configuration; the queue lets the bucket send.
    let configured = aws(&format!(
        "c('s3').get_bucket_notification_configuration(Bucket='{bucket}').get('QueueConfigurations', [])"
    ));
    assert_eq!(configured[0]["QueueArn"], queue_arn, "{configured}");
    assert_eq!(configured[0]["Events"], json!(["s3:ObjectCreated:*"]));
    let policy: Value = serde_json::from_str(
        aws(&format!(
            "c('sqs').get_queue_attributes(QueueUrl='{url}', AttributeNames=['Policy'])['Attributes']['Policy']"
        ))
        .as_str()
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        policy["Statement"][0]["Principal"]["Service"],
        "s3.amazonaws.com"
    );
    assert_eq!(
        policy["Statement"][0]["Condition"]["ArnLike"]["aws:SourceArn"],
        resources[BUCKET]["attributes"]["Arn"]
    );

    // An object under the prefix is announced in the queue; one outside it is not.
    let keys = aws(&format!(
        "(c('s3').put_object(Bucket='{bucket}', Key='other/skipped.txt', Body=b'no'), \
          c('s3').put_object(Bucket='{bucket}', Key='in/report.csv', Body=b'a,b'), \
          [r['s3']['object']['key'] for m in c('sqs').receive_message(QueueUrl='{url}', MaxNumberOfMessages=10, WaitTimeSeconds=1).get('Messages', []) \
            for r in json.loads(m['Body']).get('Records', [])])[2]"
    ));
    assert_eq!(keys, json!(["in/report.csv"]));

    // Destroy: the bucket (emptied first) and the queue are gone, the handler too.
    aws(&format!(
        "[c('s3').delete_object(Bucket='{bucket}', Key=k) for k in ('in/report.csv', 'other/skipped.txt')] and None"
    ));
    let handler = resources["BucketNotificationsHandler050a0587b7544547bf325f094a3db8347ECC3691"]
        ["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    let left = aws(&format!(
        "([b['Name'] for b in c('s3').list_buckets()['Buckets'] if b['Name'] == '{bucket}'], \
          [u for u in c('sqs').list_queues().get('QueueUrls', []) if u == '{url}'], \
          [f['FunctionName'] for f in c('lambda').list_functions()['Functions'] if f['FunctionName'] == '{handler}'])"
    ));
    assert_eq!(left, json!([[], [], []]));
    assert_eq!(world.state(), Value::Null, "the record is left");
}
