//! Deploy options users of the CDK CLI reach for, through `cdkd deploy` with a real CDK app
//! (tests/fixtures/apps/annotated.js): synthesis annotations (an error refuses the stack before
//! anything is deployed, `--ignore-errors` deploys anyway, `--strict` refuses warnings too) and
//! `--outputs-file` (the CDK CLI's `{stack: {output: value}}`).

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

/// CheckedStack's queues (the other test deploys WarnedStack at the same time).
fn queues() -> Value {
    Emulator::shared().boto(
        "sorted(u for u in c('sqs').list_queues().get('QueueUrls', []) if '/CheckedStack-' in u)",
    )
}

#[test]
fn synthesis_errors_refuse_a_stack_unless_ignored_and_strict_refuses_warnings() {
    let world = AppWorld::unedited("annotated", "annot");
    let before = queues();

    let refused = world.deploy(&["CheckedStack"]);
    assert_eq!(
        refused.code,
        Some(1),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    for expected in [
        "[Error at /CheckedStack/Inbox] Inbox needs a dead-letter queue in production",
        "[Warning at /CheckedStack/Inbox] Inbox keeps messages for 4 days only",
        "stack CheckedStack has 1 synthesis message that stop a deploy",
        "nothing was deployed",
    ] {
        assert!(
            refused.stderr.contains(expected),
            "{expected:?} in:\n{}",
            refused.stderr
        );
    }
    assert_eq!(queues(), before, "a refused stack created something");
    let record = world.cdkd(&["state", "show", "CheckedStack", "--json"]);
    assert_ne!(
        record.code,
        Some(0),
        "a refused stack has a state record:\n{}",
        record.stdout
    );

    let strict = world.deploy(&["WarnedStack", "--strict"]);
    assert_eq!(strict.code, Some(1), "{}\n{}", strict.stdout, strict.stderr);
    assert!(
        strict
            .stderr
            .contains("[Warning at /WarnedStack/Outbox] Outbox has no name [ack: annotated:name]"),
        "{}",
        strict.stderr
    );
    let record = world.cdkd(&["state", "show", "WarnedStack", "--json"]);
    assert_ne!(
        record.code,
        Some(0),
        "a refused stack has a state record:\n{}",
        record.stdout
    );

    let ignored = world.deploy(&["CheckedStack", "--ignore-errors"]);
    assert_eq!(
        ignored.code,
        Some(0),
        "{}\n{}",
        ignored.stdout,
        ignored.stderr
    );
    assert!(
        ignored.stderr.contains("[Error at /CheckedStack/Inbox]"),
        "{}",
        ignored.stderr
    );
    assert_eq!(
        world.resources("CheckedStack")["InboxA8E05DC3"]["provisionedBy"],
        "sdk"
    );
    let app = world.assembly.path().display().to_string();
    world
        .cdkd(&["destroy", "-a", &app, "CheckedStack", "-f"])
        .success();
}

#[test]
fn the_outputs_file_holds_each_deployed_stacks_outputs() {
    let world = AppWorld::unedited("annotated", "outs");
    let file = world.assembly.path().join("outputs.json");
    let file_arg = file.display().to_string();
    let deployed = world.deploy(&["WarnedStack", "--outputs-file", &file_arg]);
    assert_eq!(
        deployed.code,
        Some(0),
        "{}\n{}",
        deployed.stdout,
        deployed.stderr
    );
    // Warnings are shown, not refused.
    assert!(
        deployed.stderr.contains("[Warning at /WarnedStack/Outbox]"),
        "{}",
        deployed.stderr
    );
    assert!(deployed
        .stderr
        .contains("[Info at /WarnedStack/Outbox] Outbox is encrypted by SQS"));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let url = world.resources("WarnedStack")["Outbox27BBF20A"]["physicalId"].clone();
    assert_eq!(
        written,
        json!({"WarnedStack": {"OutboxUrl": url, "Region": "us-east-1"}})
    );
    let app = world.assembly.path().display().to_string();
    world
        .cdkd(&["destroy", "-a", &app, "WarnedStack", "-f"])
        .success();
}
