//! The live progress view as a person sees it: `cdkd deploy` runs in a tmux pane (a real
//! terminal) against the emulator answering every request after 250 ms, and the pane is
//! captured while it works. Needs tmux (`.ci/run` installs it).

use std::path::Path;
use std::time::Duration;

use cdkd_tests::terminal::{command_line, Pane};
use cdkd_tests::{cdkd_on, workspace_root, Emulator};

fn app() -> String {
    let dir = workspace_root().join("tests/fixtures/cdk.out/soak");
    assert!(Path::new(&dir).is_dir());
    dir.display().to_string()
}

#[test]
fn a_terminal_shows_resources_in_flight_with_counts_then_the_summary() {
    let emulator = Emulator::shared();
    let bucket = Emulator::unique("progress");
    cdkd_on(
        emulator,
        &["--state-bucket", &bucket, "bootstrap", "--no-assets"],
    )
    .success();
    emulator.post("/_emulator/config", &serde_json::json!({"latencyMs": 250}));
    let app = app();
    let pane = Pane::run(&command_line(
        emulator,
        &["--state-bucket", &bucket, "deploy", "-a", &app],
    ));
    let frames = pane.frames_until_exit(Duration::from_secs(180));
    drop(pane);

    // While it works: the stack's counts, and resources in flight under them with what they
    // wait for.
    let live: Vec<&String> = frames
        .iter()
        .filter(|f| f.contains("SoakStack ") && f.contains(" in flight, "))
        .collect();
    assert!(
        !live.is_empty(),
        "no frame showed the live view; frames:\n{}",
        frames.join("\n----\n")
    );
    let busy = live.iter().find(|frame| {
        frame.lines().any(|l| {
            l.trim_start().starts_with(|c: char| !c.is_ascii())
                && l.contains("(AWS::")
                && (l.contains("Cloud Control") || l.contains("plugin iam"))
        })
    });
    assert!(
        busy.is_some(),
        "no frame showed a resource in flight with what it waits for; frames:\n{}",
        live.iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n----\n")
    );
    let counts = |frame: &str| -> (usize, usize) {
        let line = frame
            .lines()
            .find(|l| l.contains(" in flight, "))
            .expect("a counts line");
        let number = |label: &str| -> usize {
            let before = &line[..line.find(label).expect(label)];
            before
                .split_whitespace()
                .last()
                .and_then(|n| n.parse().ok())
                .expect("a count")
        };
        (number(" done"), number(" remaining"))
    };
    let (first_done, first_remaining) = counts(live.first().unwrap());
    let (last_done, last_remaining) = counts(live.last().unwrap());
    assert!(
        last_done > first_done || last_remaining < first_remaining,
        "the counts did not move: {:?} then {:?}",
        (first_done, first_remaining),
        (last_done, last_remaining)
    );

    // At the end: the view is gone, the event lines and the summary stay.
    let last = frames.last().unwrap();
    assert!(last.contains("EXIT=0"), "the deploy failed:\n{last}");
    assert!(
        last.contains("SoakStack: 50 created, 0 updated"),
        "no summary:\n{last}"
    );
    assert!(!last.contains(" in flight, "), "the view stayed:\n{last}");
    assert!(last.contains("SoakStack.HubParamName = /soak/hub-arn"));

    // `--progress events` on the same terminal: event lines only.
    let pane = Pane::run(&command_line(
        emulator,
        &[
            "--state-bucket",
            &bucket,
            "destroy",
            "-a",
            &app,
            "-f",
            "--progress",
            "events",
        ],
    ));
    let frames = pane.frames_until_exit(Duration::from_secs(180));
    drop(pane);
    emulator.post("/_emulator/config", &serde_json::json!({"latencyMs": 0}));
    assert!(
        frames.iter().all(|f| !f.contains(" in flight, ")),
        "--progress events drew the view"
    );
    let last = frames.last().unwrap();
    assert!(last.contains("EXIT=0"), "the destroy failed:\n{last}");
    assert!(last.contains("50 deleted"), "no summary:\n{last}");

    // `--ci` on the same terminal, slow enough for the view to show without it: event lines
    // only, and a destroy without --force is refused at once instead of asked.
    emulator.post("/_emulator/config", &serde_json::json!({"latencyMs": 120}));
    let pane = Pane::run(&command_line(
        emulator,
        &[
            "--ci",
            "--no-color",
            "--state-bucket",
            &bucket,
            "deploy",
            "-a",
            &app,
        ],
    ));
    let frames = pane.frames_until_exit(Duration::from_secs(180));
    drop(pane);
    emulator.post("/_emulator/config", &serde_json::json!({"latencyMs": 0}));
    let last = frames.last().unwrap();
    assert!(last.contains("EXIT=0"), "the --ci deploy failed:\n{last}");
    assert!(
        frames.iter().all(|f| !f.contains(" in flight, ")),
        "--ci drew the live view"
    );
    let pane = Pane::run(&command_line(
        emulator,
        &["--ci", "--state-bucket", &bucket, "destroy", "-a", &app],
    ));
    let frames = pane.frames_until_exit(Duration::from_secs(60));
    drop(pane);
    let last = frames.last().unwrap();
    assert!(last.contains("EXIT=1"), "--ci asked or went ahead:\n{last}");
    assert!(last.contains("cdkd runs as in CI"), "{last}");
    cdkd_on(
        emulator,
        &["--state-bucket", &bucket, "destroy", "-a", &app, "-f"],
    )
    .success();
}
