//! A real terminal for tests of what a person sees and answers: a command in a tmux pane
//! (tmux is installed by `.ci/run`), its screen captured, keys typed into it.

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::{cdkd_binary, Emulator};

/// A tmux server of this test's own (`-L`), so nothing else's sessions are touched.
pub struct Pane {
    socket: String,
}

impl Pane {
    /// Runs `command` in a new 160x50 pane; the shell stays afterwards showing `EXIT=<code>`.
    ///
    /// Each pane gets a server of its own: reusing one socket name raced with the previous
    /// server's shutdown. `-f /dev/null` keeps a user's tmux.conf out of the picture.
    pub fn run(command: &str) -> Pane {
        static PANES: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "cdkd-pane-{}-{}",
            std::process::id(),
            PANES.fetch_add(1, Ordering::Relaxed)
        );
        let shell = format!("{command}; echo EXIT=$?; sleep 600");
        let output = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", "160", "-y", "50"])
            .arg(shell)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs (install it: apt-get install tmux)");
        assert!(
            output.status.success(),
            "tmux new-session failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        Pane { socket }
    }

    /// What the pane shows now.
    pub fn screen(&self) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Every distinct screen until the command has exited (or the deadline).
    pub fn frames_until_exit(&self, deadline: Duration) -> Vec<String> {
        let started = Instant::now();
        let mut frames: Vec<String> = Vec::new();
        loop {
            let screen = self.screen();
            let done = screen.contains("EXIT=");
            if frames.last() != Some(&screen) {
                frames.push(screen);
            }
            if done {
                return frames;
            }
            assert!(
                started.elapsed() < deadline,
                "the command did not finish within {deadline:?}; last screen:\n{}",
                frames.last().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Pane {
    /// Waits until the pane shows `text` and returns the screen then.
    pub fn wait_for(&self, text: &str, deadline: Duration) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                started.elapsed() < deadline,
                "the pane did not show {text:?} within {deadline:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `keys` and Enter, as a person answering a question.
    pub fn answer(&self, keys: &str) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", keys, "Enter"])
            .status()
            .expect("tmux send-keys");
        assert!(status.success(), "tmux send-keys failed");
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// `cdkd args...` as a shell command line with the emulator's environment.
pub fn command_line(emulator: &Emulator, args: &[&str]) -> String {
    // `CI` (set by CI systems) would turn the live view off: these tests are a person's terminal.
    let mut line = String::from("env -u CDKD_PLUGINS -u CI");
    for (key, value) in emulator.env() {
        line.push_str(&format!(" {key}='{value}'"));
    }
    line.push_str(&format!(" '{}'", cdkd_binary().display()));
    for arg in args {
        line.push_str(&format!(" '{arg}'"));
    }
    line
}
