//! The sqs and sns plugins through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! messaging.js): a topic fanning out to a queue (with the queue policy Cloud Control cannot
//! create on AWS) and to a Lambda function; checked in the emulator's SQS and SNS APIs and in
//! the state file, through an in-place update, a replacement, drift and destroy.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "MessagingStack";
const QUEUE: &str = "OrdersA9B65338";
const DLQ: &str = "DeadLettersBBF8BAAB";
const TOPIC: &str = "EventsD32975C2";
const POLICY: &str = "OrdersPolicy95F4027F";
const TO_QUEUE: &str = "OrdersMessagingStackEventsE22678A8180C06DE";
const TO_LAMBDA: &str = "AuditEvents9148872F";

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn physical(world: &AppWorld, id: &str) -> String {
    world.resources(STACK)[id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} is not recorded"))
        .to_string()
}

fn queue_attribute(url: &str, name: &str) -> Value {
    aws(&format!(
        "c('sqs').get_queue_attributes(QueueUrl='{url}', AttributeNames=['All'])['Attributes'].get('{name}')"
    ))
}

fn deploy(world: &AppWorld) -> cdkd_tests::Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, STACK]).success()
}

#[test]
fn a_topic_fanning_out_to_a_queue_and_a_function_deploys_through_the_plugins() {
    let world = AppWorld::of("messaging", STACK, "messaging", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("9 created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [QUEUE, DLQ, TOPIC, POLICY, TO_QUEUE, TO_LAMBDA] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let url = physical(&world, QUEUE);
    let topic = physical(&world, TOPIC);
    assert!(
        url.contains("/123456789012/MessagingStack-OrdersA9B65338-"),
        "{url}"
    );
    assert!(
        topic.starts_with("arn:aws:sns:us-east-1:123456789012:MessagingStack-EventsD32975C2-"),
        "{topic}"
    );
    // Every attribute the schema has is recorded, so no Fn::GetAtt needs a read-back.
    let queue = &resources[QUEUE]["attributes"];
    assert_eq!(queue["QueueUrl"], json!(url));
    assert!(queue["Arn"]
        .as_str()
        .unwrap()
        .starts_with("arn:aws:sqs:us-east-1:123456789012:"));
    assert_eq!(resources[TOPIC]["attributes"]["TopicArn"], json!(topic));

    // AWS's side: the queue's settings, its dead-letter queue, the policy letting the topic send.
    assert_eq!(queue_attribute(&url, "VisibilityTimeout"), json!("45"));
    let redrive: Value =
        serde_json::from_str(queue_attribute(&url, "RedrivePolicy").as_str().unwrap()).unwrap();
    assert_eq!(
        redrive["deadLetterTargetArn"],
        resources[DLQ]["attributes"]["Arn"]
    );
    assert_eq!(redrive["maxReceiveCount"], json!(3));
    let policy: Value =
        serde_json::from_str(queue_attribute(&url, "Policy").as_str().unwrap()).unwrap();
    assert_eq!(policy["Statement"][0]["Action"], "sqs:SendMessage");
    assert_eq!(
        policy["Statement"][0]["Condition"]["ArnEquals"]["aws:SourceArn"],
        json!(topic)
    );
    let subscription = physical(&world, TO_QUEUE);
    let attributes = aws(&format!(
        "c('sns').get_subscription_attributes(SubscriptionArn='{subscription}')['Attributes']"
    ));
    assert_eq!(attributes["RawMessageDelivery"], "true");
    assert_eq!(attributes["Endpoint"], queue["Arn"]);
    let filter: Value = serde_json::from_str(attributes["FilterPolicy"].as_str().unwrap()).unwrap();
    assert_eq!(filter, json!({"kind": ["order"]}));
    // A message the filter lets through reaches the queue raw; one it does not, does not.
    let received = aws(&format!(
        "(c('sns').publish(TopicArn='{topic}', Message='other', MessageAttributes={{'kind': {{'DataType': 'String', 'StringValue': 'other'}}}}), c('sns').publish(TopicArn='{topic}', Message='hello', MessageAttributes={{'kind': {{'DataType': 'String', 'StringValue': 'order'}}}}), [m['Body'] for m in c('sqs').receive_message(QueueUrl='{url}', MaxNumberOfMessages=10, WaitTimeSeconds=1).get('Messages', [])])[2]"
    ));
    assert_eq!(received, json!(["hello"]));

    // A second deploy changes nothing.
    let again = deploy(&world);
    assert!(again.stdout.contains("9 unchanged"), "{}", again.stdout);

    // In place: the queue's visibility timeout and the topic's display name.
    world.edit(|t| {
        t["Resources"][QUEUE]["Properties"]["VisibilityTimeout"] = json!(60);
        t["Resources"][TOPIC]["Properties"]["DisplayName"] = json!("orders");
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    assert_eq!(physical(&world, QUEUE), url);
    assert_eq!(queue_attribute(&url, "VisibilityTimeout"), json!("60"));
    assert_eq!(
        aws(&format!(
            "c('sns').get_topic_attributes(TopicArn='{topic}')['Attributes']['DisplayName']"
        )),
        "orders"
    );

    // Drift: a change made outside cdkd is found by the plugin's reader.
    aws(&format!(
        "c('sqs').set_queue_attributes(QueueUrl='{url}', Attributes={{'VisibilityTimeout': '99'}}) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(QUEUE) && drift.stdout.contains("VisibilityTimeout"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    assert_eq!(queue_attribute(&url, "VisibilityTimeout"), json!("60"));

    // Create-only: a queue name replaces the queue; the subscription (its endpoint is
    // create-only) follows, the policy moves to the new queue, and the old queue is deleted.
    let old_subscription = subscription;
    world.edit(|t| {
        t["Resources"][QUEUE]["Properties"]["QueueName"] = json!("messaging-orders-renamed");
    });
    let replaced = deploy(&world);
    assert!(replaced.stdout.contains("replaced"), "{}", replaced.stdout);
    let new_url = physical(&world, QUEUE);
    assert!(new_url.ends_with("/messaging-orders-renamed"), "{new_url}");
    assert_ne!(physical(&world, TO_QUEUE), old_subscription);
    let old_left = aws(&format!(
        "[u for u in c('sqs').list_queues().get('QueueUrls', []) if u == '{url}']"
    ));
    assert_eq!(old_left, json!([]), "the replaced queue was not deleted");
    assert!(queue_attribute(&new_url, "Policy")
        .as_str()
        .unwrap()
        .contains("sqs:SendMessage"));

    // Destroy leaves none of the stack's queues, topics or subscriptions.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    let left = aws(&format!(
        "([u for u in c('sqs').list_queues().get('QueueUrls', []) if 'MessagingStack-' in u or u == '{new_url}'], [t['TopicArn'] for t in c('sns').list_topics()['Topics'] if t['TopicArn'] == '{topic}'], [s['SubscriptionArn'] for s in c('sns').list_subscriptions()['Subscriptions'] if s['TopicArn'] == '{topic}'])"
    ));
    assert_eq!(left, json!([[], [], []]));
}

#[test]
fn without_the_sqs_plugin_the_queue_policy_is_refused_before_anything_is_created() {
    // Cloud Control cannot create an AWS::SQS::QueuePolicy (its schema has no read handler):
    // on AWS the deploy would fail part-way; pre-flight refuses it by name instead.
    let world = AppWorld::of("messaging", STACK, "nopolicy", |_| {}).on_cloud_control();
    let app = world.assembly.path().display().to_string();
    let refused = world.cdkd(&["deploy", "-a", &app, STACK]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("stack MessagingStack cannot be deployed; nothing was changed"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains(&format!(
            "{POLICY} (AWS::SQS::QueuePolicy): no loaded plugin handles this type"
        )),
        "{}",
        refused.stderr
    );
    // Nothing was sent: no resource event, no record (the other test's queues share the
    // stack's name, so the emulator's listing cannot tell).
    assert!(!refused.stdout.contains("created"), "{}", refused.stdout);
    assert_eq!(world.state(), Value::Null, "a record was written");
}
