//! A crash while a stack's child resources are being made (tests/fixtures/cdk.out/children: a
//! log stream, metric and subscription filters in a log group; a function's version, alias,
//! URL and permissions; an SQS event source mapping; a Kinesis stream consumer; a schedule in
//! a schedule group). None has a name cdkd chooses: each is found after the crash by the name
//! it took within its parent, which the intent's recorded scope (`Ref`s to the parent,
//! resolved from state) lets its plugin search. After `kill -9` at several points,
//! `force-unlock` and a second deploy converge with one of each child and no warning that
//! something cannot be checked; destroy leaves none.
//! One test per binary: the counts are the emulator's, which no other test here touches.

use cdkd_tests::{workspace_root, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "ChildrenStack";

/// Every child resource in the emulator, by kind.
fn children() -> Value {
    let script = workspace_root().join("tests/fixtures/apps/children-count.py");
    Emulator::shared().boto(&format!(
        "__import__('runpy').run_path('{}', init_globals={{'c': c}})['RESULT']",
        script.display()
    ))
}

/// One deploy of the fixture: each child once (three permission statements: the log
/// subscription's on the function, the URL's two on the alias).
fn one_stack() -> Value {
    json!({"log streams": 1, "metric filters": 1, "subscription filters": 1, "aliases": 1,
        "versions": 1, "urls": 1, "permissions": 3, "mappings": 1, "consumers": 1, "schedules": 1})
}

/// Creates of the fixture's Lambda, Logs, Kinesis and Scheduler resources the emulator has
/// seen since the stats were cleared (Lambda and Scheduler are REST: counted by method).
fn creates() -> u64 {
    let stats = Emulator::shared().get("/_emulator/stats");
    [
        "logs:CreateLogStream",
        "logs:PutMetricFilter",
        "logs:PutSubscriptionFilter",
        "kinesis:RegisterStreamConsumer",
        "lambda:POST",
        "scheduler:POST",
    ]
    .iter()
    .map(|key| stats[*key].as_u64().unwrap_or(0))
    .sum()
}

#[test]
fn children_made_by_a_killed_deploy_are_found_in_their_parents() {
    let zero = children();
    for (round, kill_after) in [3u64, 6, 9, 12].into_iter().enumerate() {
        let world = AppWorld::of("children", STACK, &format!("children{round}"), |_| {});
        let app = world.assembly.path().display().to_string();
        world.kill_after(&["deploy", "-a", &app], kill_after, creates);

        world.cdkd(&["force-unlock", STACK]).success();
        let resumed = world.cdkd(&["deploy", "-a", &app]);
        let said = format!("{}\n{}", resumed.stdout, resumed.stderr);
        assert_eq!(
            resumed.code,
            Some(0),
            "round {round} (killed after {kill_after} creates):\n{said}"
        );
        assert!(
            !said.contains("cannot be checked"),
            "round {round}: a child was left to a person:\n{said}"
        );
        assert_eq!(
            children(),
            one_stack(),
            "round {round} (killed after {kill_after} creates): duplicates or leaks:\n{said}\nmetric filters: {}",
            Emulator::shared().boto("[(f['filterName'], f['logGroupName']) for f in c('logs').describe_metric_filters()['metricFilters']]")
        );
        let again = world.cdkd(&["deploy", "-a", &app]).success();
        assert!(again.stdout.contains(" unchanged"), "{}", again.stdout);
        assert!(
            !again.stdout.contains("created") || again.stdout.contains("0 created"),
            "{}",
            again.stdout
        );

        world.cdkd(&["destroy", "-a", &app, "-f"]).success();
        assert_eq!(children(), zero, "round {round}: destroy left children");
    }
}
