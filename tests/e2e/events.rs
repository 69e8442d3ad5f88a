//! `cdkd events`: every deploy that changed something, every destroy and rollback leaves one
//! event next to the state (who, when, what changed, outcome, duration), newest first, with
//! `--json`, `--limit`, `events prune --keep N` and `destroy --purge-events`; a deploy that
//! changed nothing adds none.
//! Driven through `cdkd` with a real CDK app (tests/fixtures/apps/annotated.js, WarnedStack).

use cdkd_tests::{AppWorld, Run};
use serde_json::{json, Value};

const STACK: &str = "WarnedStack";
const QUEUE: &str = "Outbox27BBF20A";

fn events(world: &AppWorld, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["events", STACK, "--json"];
    args.extend_from_slice(extra);
    world.cdkd(&args).success().json()["events"]
        .as_array()
        .unwrap()
        .clone()
}

fn deploy(world: &AppWorld) -> Run {
    world.deploy(&[STACK])
}

#[test]
fn deploys_destroys_and_failures_are_recorded_newest_first_and_pruned() {
    let world = AppWorld::of("annotated", STACK, "events", |_| {});
    deploy(&world).success();
    let first = events(&world, &[]);
    assert_eq!(first.len(), 1, "{first:?}");
    let created = &first[0];
    assert_eq!(created["operation"], "deploy");
    assert_eq!(created["outcome"], "succeeded");
    assert_eq!(created["stackName"], STACK);
    assert_eq!(created["region"], "us-east-1");
    assert_eq!(created["summary"]["created"], json!(1));
    assert!(
        created["who"].as_str().unwrap().starts_with("arn:aws:"),
        "{created}"
    );
    assert!(created["durationMs"].as_u64().is_some(), "{created}");
    assert_eq!(created["changes"][0]["logicalId"], QUEUE);
    assert!(
        created["changes"][0]["action"]
            .as_str()
            .unwrap()
            .starts_with("created"),
        "{created}"
    );

    // Nothing changed: nothing recorded.
    deploy(&world).success();
    assert_eq!(events(&world, &[]).len(), 1);

    // An update, then a deploy that fails (a FIFO queue whose name lacks `.fifo`).
    world.edit(|t| {
        t["Resources"][QUEUE]["Properties"]["VisibilityTimeout"] = json!(45);
    });
    deploy(&world).success();
    world.edit(|t| {
        let properties = &mut t["Resources"][QUEUE]["Properties"];
        properties["FifoQueue"] = json!(true);
        properties["QueueName"] = json!("events-not-fifo");
    });
    let failed = deploy(&world);
    assert_ne!(failed.code, Some(0), "{}\n{}", failed.stdout, failed.stderr);
    let app = world.assembly.path().display().to_string();
    // `-e` as the CDK CLI takes it: destroy only ever takes the named stacks.
    world
        .cdkd(&["destroy", "-a", &app, STACK, "-f", "-e"])
        .success();

    let all = events(&world, &[]);
    let operations: Vec<(&str, &str)> = all
        .iter()
        .map(|e| {
            (
                e["operation"].as_str().unwrap(),
                e["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        operations,
        [
            ("destroy", "succeeded"),
            ("deploy", "failed"),
            ("deploy", "succeeded"),
            ("deploy", "succeeded"),
        ],
        "{all:?}"
    );
    assert!(
        all[1]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{}",
        all[1]
    );
    assert_eq!(all[2]["summary"]["updated"], json!(1), "{}", all[2]);
    assert!(
        all[0]["summary"]["deleted"].as_u64().unwrap() >= 1,
        "{}",
        all[0]
    );
    let started: Vec<i64> = all
        .iter()
        .map(|e| e["startedAt"].as_i64().unwrap())
        .collect();
    assert!(started.windows(2).all(|w| w[0] >= w[1]), "{started:?}");

    assert_eq!(events(&world, &["--limit", "2"]).len(), 2);
    let table = world.cdkd(&["events", STACK]).success();
    assert!(table.stdout.contains("OPERATION"), "{}", table.stdout);
    assert!(table.stdout.contains("destroy"), "{}", table.stdout);

    let pruned = world
        .cdkd(&["events", "prune", STACK, "--keep", "1"])
        .success();
    assert!(
        pruned.stdout.contains("Deleted 3 event(s)"),
        "{}",
        pruned.stdout
    );
    let left = events(&world, &[]);
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["operation"], "destroy");

    // `destroy --purge-events` leaves no trace of the stack: its history goes once it is
    // destroyed, the destroy's own event included (issue 46).
    let fresh = AppWorld::of("annotated", STACK, "events-purge", |_| {});
    deploy(&fresh).success();
    assert_eq!(events(&fresh, &[]).len(), 1);
    let app = fresh.assembly.path().display().to_string();
    let purged = fresh
        .cdkd(&["destroy", "-a", &app, STACK, "-f", "--purge-events"])
        .success();
    assert!(
        purged.stdout.contains("Purged 2 event(s) of WarnedStack."),
        "{}",
        purged.stdout
    );
    assert_eq!(events(&fresh, &[]), Vec::<Value>::new());
}
