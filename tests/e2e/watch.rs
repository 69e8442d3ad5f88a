//! `cdkd watch`: the first deploy, then a deploy of each change to the app's files, until
//! Ctrl-C. The app is a copy of tests/fixtures/cdk.out/data given with `-a DIR`, so editing its
//! template is the change.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "DataStack";
const PARAMETER: &str = "/watch/greeting";

fn greeting() -> Value {
    Emulator::shared().boto(&format!(
        "c('ssm').get_parameter(Name='{PARAMETER}')['Parameter']['Value']"
    ))
}

/// Waits for a stderr line holding `text`; returns the lines read meanwhile.
fn wait_for_line(lines: &mpsc::Receiver<String>, text: &str, seen: &mut Vec<String>) {
    loop {
        match lines.recv_timeout(Duration::from_secs(180)) {
            Ok(line) => {
                let found = line.contains(text);
                seen.push(line);
                if found {
                    return;
                }
            }
            Err(err) => panic!(
                "no line with {text:?} ({err}); cdkd said:\n{}",
                seen.join("\n")
            ),
        }
    }
}

#[test]
fn each_change_to_the_app_is_deployed_until_ctrl_c() {
    let world = AppWorld::of("data", STACK, "watch", |t| {
        t["Resources"]["Setting2E7FC5C3"]["Properties"]["Name"] = json!(PARAMETER);
    });
    let app = world.assembly.path().display().to_string();
    let mut child = world
        .command(&[
            "watch",
            "-a",
            &app,
            "--progress",
            "events",
            "--poll-interval",
            "100",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (sender, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    wait_for_line(&lines, "for changes (Ctrl-C to stop)", &mut seen);
    assert_eq!(greeting(), json!("hello"));

    world.edit(|t| {
        t["Resources"]["Setting2E7FC5C3"]["Properties"]["Value"] = json!("changed by watch");
    });
    wait_for_line(
        &lines,
        "DataStack.template.json changed; deploying",
        &mut seen,
    );
    wait_for_line(&lines, "for changes (Ctrl-C to stop)", &mut seen);
    assert_eq!(greeting(), json!("changed by watch"), "{}", seen.join("\n"));

    // Ctrl-C while it waits ends the watch cleanly.
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "watch did not stop on Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(0), "{}", seen.join("\n"));
    world.cdkd(&["destroy", STACK, "-a", &app, "-f"]).success();
}
