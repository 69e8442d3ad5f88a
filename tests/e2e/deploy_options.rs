//! Deploy options users of the CDK CLI reach for, through `cdkd deploy` with a real CDK app
//! (tests/fixtures/apps/annotated.js): synthesis annotations (an error refuses the stack before
//! anything is deployed, `--ignore-errors` deploys anyway, `--strict` refuses warnings too) and
//! `--outputs-file` (the CDK CLI's `{stack: {output: value}}`).

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

/// Which of `urls` are live queues (the tests of this file run at once: each checks its own).
fn live(urls: &[String]) -> Vec<String> {
    let listed = Emulator::shared().boto("c('sqs').list_queues().get('QueueUrls', [])");
    urls.iter()
        .filter(|u| listed.as_array().unwrap().contains(&json!(u)))
        .cloned()
        .collect()
}

#[test]
fn synthesis_errors_refuse_a_stack_unless_ignored_and_strict_refuses_warnings() {
    let world = AppWorld::unedited("annotated", "annot");

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
    assert!(!refused.stdout.contains("created"), "{}", refused.stdout);
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

#[test]
fn rollback_all_undoes_every_stack_left_with_a_journal() {
    let world = AppWorld::unedited("annotated", "rball");
    // Each stack gains a FIFO queue whose name lacks `.fifo`: SQS refuses it after the stack's
    // other queue was made, and --no-rollback leaves that queue and a journal behind.
    for (stack, name) in [
        ("CheckedStack", "rball-checked"),
        ("WarnedStack", "rball-warned"),
    ] {
        let path = world.assembly.path().join(format!("{stack}.template.json"));
        let mut template: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let first = template["Resources"]
            .as_object()
            .unwrap()
            .keys()
            .find(|id| id.starts_with("Inbox") || id.starts_with("Outbox"))
            .unwrap()
            .clone();
        template["Resources"]["Broken"] = json!({
            "Type": "AWS::SQS::Queue",
            "DependsOn": first,
            "Properties": {"FifoQueue": true, "QueueName": name}
        });
        std::fs::write(&path, template.to_string()).unwrap();
    }
    let failed = world.deploy(&["--all", "--no-rollback", "--ignore-errors"]);
    assert_ne!(failed.code, Some(0), "{}\n{}", failed.stdout, failed.stderr);
    let made: Vec<String> = ["CheckedStack", "WarnedStack"]
        .iter()
        .flat_map(|stack| {
            let resources = world.resources(stack);
            resources
                .as_object()
                .unwrap()
                .values()
                .map(|r| r["physicalId"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(made.len(), 2, "{made:?}");
    assert_eq!(live(&made), made);

    let ambiguous = world.cdkd(&["rollback"]);
    assert_eq!(ambiguous.code, Some(1), "{}", ambiguous.stderr);
    assert!(ambiguous.stderr.contains("--all"), "{}", ambiguous.stderr);

    let rolled = world.cdkd(&["rollback", "--all"]).success();
    assert!(
        rolled.stdout.contains("Rolled back CheckedStack"),
        "{}",
        rolled.stdout
    );
    assert!(
        rolled.stdout.contains("Rolled back WarnedStack"),
        "{}",
        rolled.stdout
    );
    assert_eq!(live(&made), Vec::<String>::new(), "a queue was left");
    let history = world.cdkd(&["events", "--json"]).success().json();
    let rollbacks = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["operation"] == "rollback" && e["outcome"] == "succeeded")
        .count();
    assert_eq!(rollbacks, 2, "{history}");
    let nothing = world.cdkd(&["rollback", "--all"]);
    assert_eq!(nothing.code, Some(1), "{}", nothing.stderr);
    assert!(
        nothing.stderr.contains("nothing to roll back"),
        "{}",
        nothing.stderr
    );
}

#[test]
fn orphan_of_a_construct_path_forgets_its_resources_and_leaves_them_in_aws() {
    let world = AppWorld::unedited("annotated", "orphanpath");
    let app = world.assembly.path().display().to_string();
    world.deploy(&["WarnedStack"]).success();
    let url = world.resources("WarnedStack")["Outbox27BBF20A"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();

    let missing = world.cdkd(&["orphan", "-a", &app, "WarnedStack/Nothing", "-f"]);
    assert_eq!(missing.code, Some(1), "{}", missing.stderr);
    assert!(
        missing.stderr.contains(
            "no resource of stack WarnedStack is under the construct path WarnedStack/Nothing"
        ),
        "{}",
        missing.stderr
    );

    let forgot = world
        .cdkd(&["orphan", "-a", &app, "WarnedStack/Outbox", "-f"])
        .success();
    assert!(
        forgot
            .stdout
            .contains("Forgot Outbox27BBF20A of WarnedStack"),
        "{}",
        forgot.stdout
    );
    let record = world
        .cdkd(&["state", "show", "WarnedStack", "--json"])
        .success()
        .json();
    assert!(
        record["state"]["resources"].get("Outbox27BBF20A").is_none(),
        "{record}"
    );
    assert_eq!(
        live(std::slice::from_ref(&url)),
        std::slice::from_ref(&url),
        "the queue was deleted"
    );

    // The stack itself is still recorded; its destroy leaves the forgotten queue alone.
    world
        .cdkd(&["destroy", "-a", &app, "WarnedStack", "-f"])
        .success();
    assert_eq!(live(std::slice::from_ref(&url)), std::slice::from_ref(&url));
    Emulator::shared().boto(&format!("c('sqs').delete_queue(QueueUrl='{url}') and None"));
}

#[test]
fn role_arn_makes_the_resource_calls_and_leaves_the_state_bucket_to_the_caller() {
    let world = AppWorld::unedited("annotated", "rolearn");
    let app = world.assembly.path().display().to_string();
    let caller = "AKIAROLEARNCALLER1";
    let env = [
        ("AWS_ACCESS_KEY_ID", caller),
        ("CDKD_ROLE_ARN", "arn:aws:iam::123456789012:role/deployer"),
    ];
    let deployed = world.cdkd_with_env(&["deploy", "-a", &app, "WarnedStack"], &env);
    assert_eq!(
        deployed.code,
        Some(0),
        "{}\n{}",
        deployed.stdout,
        deployed.stderr
    );
    let by_caller = Emulator::shared().get(&format!("/_emulator/stats?accessKey={caller}"));
    let services: Vec<&str> = by_caller
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.split(':').next().unwrap())
        .collect();
    // The caller read and wrote the state (S3), assumed the role and asked who it is (STS);
    // the queue was made by someone else: the role.
    assert!(services.contains(&"s3"), "{by_caller}");
    assert!(by_caller.get("sts:AssumeRole").is_some(), "{by_caller}");
    assert!(
        !services.contains(&"sqs"),
        "the caller made the queue: {by_caller}"
    );
    let url = world.resources("WarnedStack")["Outbox27BBF20A"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(live(std::slice::from_ref(&url)), std::slice::from_ref(&url));
    world
        .cdkd_with_env(&["destroy", "-a", &app, "WarnedStack", "-f"], &env)
        .success();
    assert_eq!(live(std::slice::from_ref(&url)), Vec::<String>::new());
}
