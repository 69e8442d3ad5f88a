//! `--require-approval`: a deploy that widens IAM permissions asks on a terminal (a tmux pane)
//! with the CDK CLI's tables, goes ahead on `y` and changes nothing on `n`; without a terminal
//! (or in CI) it is refused by name, and `never` / `any-change` behave as the CDK CLI's.
//! Fixture: tests/fixtures/cdk.out/data (a function whose role's policy has four statements).

use std::time::Duration;

use cdkd_tests::terminal::{command_line, Pane};
use cdkd_tests::{AppWorld, Emulator};
use serde_json::Value;

const STACK: &str = "DataStack";
const POLICY: &str = "ProcessorServiceRoleDefaultPolicyDA9D4DBA";

/// The fixture with a parameter name of its own: the tests here share one emulator.
fn world(prefix: &str) -> AppWorld {
    AppWorld::of("data", STACK, prefix, |t| {
        t["Resources"]["Setting2E7FC5C3"]["Properties"]["Name"] =
            Value::String(format!("/{prefix}/greeting"));
    })
}

/// `cdkd deploy` of the world's app at `level`, in a terminal.
fn deploy_in_terminal(world: &AppWorld, level: &str) -> Pane {
    let app = world.assembly.path().display().to_string();
    Pane::run(&command_line(
        Emulator::shared(),
        &[
            "--state-bucket",
            &world.bucket,
            "deploy",
            "-a",
            &app,
            "--require-approval",
            level,
        ],
    ))
}

fn roles_named(world: &AppWorld) -> usize {
    let physical = world.resources(STACK);
    let role = physical
        .as_object()
        .and_then(|r| r.values().find(|v| v["resourceType"] == "AWS::IAM::Role"))
        .map(|r| r["physicalId"].as_str().unwrap_or_default().to_string());
    role.map_or(0, |name| {
        Emulator::shared()
            .boto(&format!(
                "len([r for r in c('iam').list_roles()['Roles'] if r['RoleName'] == '{name}'])"
            ))
            .as_u64()
            .unwrap() as usize
    })
}

#[test]
fn without_a_terminal_a_broadening_deploy_is_refused_and_changes_nothing() {
    let world = world("approve-none");
    // `cdkd diff` shows the same changes, before the resources, as `cdk diff` does.
    let app = world.assembly.path().display().to_string();
    let diff = world.cdkd(&["diff", "-a", &app]).success();
    let (tables, resources) = diff.stdout.split_once("Resources\n").unwrap();
    assert!(tables.contains("IAM Statement Changes"), "{}", diff.stdout);
    assert!(tables.contains("sts:AssumeRole"), "{}", diff.stdout);
    assert!(tables.contains("IAM Policy Changes"), "{}", diff.stdout);
    assert!(resources.contains("[+] AWS::IAM::Role"), "{}", diff.stdout);

    let refused = world.deploy(&["--require-approval", "broadening"]);
    assert_ne!(refused.code, Some(0), "{}", refused.stdout);
    for expected in [
        "stack DataStack has security-sensitive changes (",
        "IAM statement",
        "added",
        "--require-approval broadening",
        "there is no terminal to ask on",
        "nothing was changed",
        "--require-approval never",
    ] {
        assert!(
            refused.stderr.contains(expected),
            "{expected:?} missing:\n{}",
            refused.stderr
        );
    }
    assert_eq!(world.state(), Value::Null, "a refused deploy wrote state");

    // CI never asks, with its own reason.
    let in_ci = world.cdkd_with_env(
        &[
            "deploy",
            "-a",
            &world.assembly.path().display().to_string(),
            "--require-approval",
            "any-change",
        ],
        &[("CI", "true")],
    );
    assert_ne!(in_ci.code, Some(0));
    assert!(in_ci.stderr.contains("as in CI"), "{}", in_ci.stderr);

    // `never` deploys; the same template again has nothing to approve at any level.
    world.deploy(&["--require-approval", "never"]).success();
    assert_eq!(roles_named(&world), 1);
    world
        .deploy(&["--require-approval", "any-change"])
        .success();

    // Taking a statement away narrows: `broadening` goes ahead, `any-change` asks (refused
    // here, with no terminal).
    world.edit(|t| {
        let statements = t["Resources"][POLICY]["Properties"]["PolicyDocument"]["Statement"]
            .as_array_mut()
            .unwrap();
        assert!(statements.len() > 1);
        statements.pop();
    });
    let narrowing = world.deploy(&["--require-approval", "any-change"]);
    assert_ne!(narrowing.code, Some(0));
    assert!(
        narrowing.stderr.contains("1 IAM statement removed"),
        "{}",
        narrowing.stderr
    );
    world
        .deploy(&["--require-approval", "broadening"])
        .success();
    world
        .cdkd(&[
            "destroy",
            STACK,
            "-a",
            &world.assembly.path().display().to_string(),
            "-f",
        ])
        .success();
}

#[test]
fn on_a_terminal_the_changes_are_shown_and_the_answer_decides() {
    let world = world("approve-tty");
    let pane = deploy_in_terminal(&world, "broadening");
    let screen = pane.wait_for("(y/n)?", Duration::from_secs(120));
    for expected in [
        "Stack DataStack: this deployment will make potentially sensitive changes",
        "IAM Statement Changes",
        "sts:AssumeRole",
        "lambda.amazonaws.com",
        "IAM Policy Changes",
        "AWSLambdaBasicExecutionRole",
    ] {
        assert!(screen.contains(expected), "{expected:?} missing:\n{screen}");
    }
    pane.answer("n");
    let screen = pane.wait_for("EXIT=", Duration::from_secs(60));
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(screen.contains("were not approved"), "{screen}");
    drop(pane);
    assert_eq!(world.state(), Value::Null, "a declined deploy wrote state");

    let pane = deploy_in_terminal(&world, "broadening");
    pane.wait_for("(y/n)?", Duration::from_secs(120));
    pane.answer("y");
    let screen = pane.wait_for("EXIT=", Duration::from_secs(180));
    assert!(screen.contains("EXIT=0"), "{screen}");
    drop(pane);
    assert_eq!(roles_named(&world), 1);
    world
        .cdkd(&[
            "destroy",
            STACK,
            "-a",
            &world.assembly.path().display().to_string(),
            "-f",
        ])
        .success();
}
