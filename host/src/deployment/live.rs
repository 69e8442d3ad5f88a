//! The live progress view on a terminal: per stack a line of counts (done, failed, in flight,
//! remaining) with the elapsed time, below it the resources in flight with their own elapsed
//! time and what they wait for; event lines scroll above the view. It is drawn with indicatif,
//! which redraws in place and hides itself when the terminal is not one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::provisioning::activity::Sink;

#[derive(Default)]
struct Counts {
    total: usize,
    done: usize,
    failed: usize,
    in_flight: usize,
}

struct StackView {
    header: ProgressBar,
    counts: Counts,
}

/// The view of one run (every stack it works on).
pub struct LiveView {
    multi: MultiProgress,
    stacks: Mutex<BTreeMap<String, StackView>>,
}

#[allow(
    clippy::expect_used,
    reason = "an invariant: the JSON and templates are constants compiled into cdkd"
)]
fn header_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix:.bold} {msg} [{elapsed}]").expect("a valid template")
}

#[allow(
    clippy::expect_used,
    reason = "an invariant: the JSON and templates are constants compiled into cdkd"
)]
fn resource_style() -> ProgressStyle {
    ProgressStyle::with_template("  {spinner} {prefix} {elapsed:>4} {wide_msg:.dim}")
        .expect("a valid template")
        .tick_chars("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏ ")
}

impl StackView {
    fn show(&self) {
        let c = &self.counts;
        let remaining = c.total.saturating_sub(c.done + c.failed + c.in_flight);
        self.header.set_message(format!(
            "{} done, {} failed, {} in flight, {} remaining",
            c.done, c.failed, c.in_flight, remaining
        ));
    }
}

impl LiveView {
    /// A view drawn on stdout (10 redraws a second at most).
    pub fn on_stdout() -> Arc<LiveView> {
        Arc::new(LiveView {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::stdout_with_hz(10)),
            stacks: Mutex::new(BTreeMap::new()),
        })
    }

    fn with_stack<T>(&self, stack: &str, f: impl FnOnce(&mut StackView) -> T) -> T {
        let mut stacks = self.stacks.lock().unwrap_or_else(|e| e.into_inner());
        let view = stacks.entry(stack.to_string()).or_insert_with(|| {
            let header = self.multi.add(ProgressBar::new_spinner());
            header.set_style(header_style());
            header.set_prefix(stack.to_string());
            header.enable_steady_tick(Duration::from_millis(200));
            StackView {
                header,
                counts: Counts::default(),
            }
        });
        let result = f(view);
        view.show();
        result
    }

    /// `count` more resources for `stack` to work on.
    pub fn expect(&self, stack: &str, count: usize) {
        self.with_stack(stack, |view| view.counts.total += count);
    }

    /// A line above the view.
    pub fn println(&self, line: &str) {
        // Printing fails only when stdout is gone; the line then has nowhere to go either.
        let _ = self.multi.println(line);
    }

    /// A resource operation begins; it shows until the returned value is dropped.
    pub fn begin(self: &Arc<LiveView>, stack: &str, logical_id: &str, kind: &str) -> InFlight {
        let bar = self.with_stack(stack, |view| {
            view.counts.in_flight += 1;
            let bar = self
                .multi
                .insert_after(&view.header, ProgressBar::new_spinner());
            bar.set_style(resource_style());
            bar.set_prefix(format!("{logical_id} ({kind})"));
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        InFlight {
            view: Arc::clone(self),
            stack: stack.to_string(),
            bar,
            failed: Arc::default(),
        }
    }

    /// The stack is finished: its lines leave the view.
    pub fn end(&self, stack: &str) {
        let removed = self
            .stacks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(stack);
        if let Some(view) = removed {
            view.header.finish_and_clear();
            self.multi.remove(&view.header);
        }
    }
}

/// One resource in flight on the view.
pub struct InFlight {
    view: Arc<LiveView>,
    stack: String,
    bar: ProgressBar,
    failed: Arc<std::sync::atomic::AtomicBool>,
}

impl InFlight {
    /// Where the operation tells what it waits for.
    pub fn sink(&self) -> Sink {
        let bar = self.bar.clone();
        Arc::new(move |what: &str| bar.set_message(what.to_string()))
    }

    /// The operation failed (counted as failed, not done).
    pub fn failed(&self) {
        self.failed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
        self.view.multi.remove(&self.bar);
        let failed = self.failed.load(std::sync::atomic::Ordering::Relaxed);
        let known = self.view.stacks.lock().map(|s| s.contains_key(&self.stack));
        if known.unwrap_or(false) {
            self.view.with_stack(&self.stack, |view| {
                view.counts.in_flight = view.counts.in_flight.saturating_sub(1);
                if failed {
                    view.counts.failed += 1;
                } else {
                    view.counts.done += 1;
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden() -> Arc<LiveView> {
        Arc::new(LiveView {
            multi: MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
            stacks: Mutex::new(BTreeMap::new()),
        })
    }

    fn header(view: &LiveView, stack: &str) -> String {
        view.stacks.lock().unwrap()[stack].header.message()
    }

    #[test]
    fn counts_follow_resources_in_flight_done_and_failed() {
        let view = hidden();
        view.expect("S", 3);
        assert_eq!(
            header(&view, "S"),
            "0 done, 0 failed, 0 in flight, 3 remaining"
        );
        let a = view.begin("S", "A", "AWS::SQS::Queue");
        let b = view.begin("S", "B", "AWS::SNS::Topic");
        assert_eq!(
            header(&view, "S"),
            "0 done, 0 failed, 2 in flight, 1 remaining"
        );
        (a.sink())("Cloud Control polling");
        assert_eq!(a.bar.message(), "Cloud Control polling");
        drop(a);
        b.failed();
        drop(b);
        assert_eq!(
            header(&view, "S"),
            "1 done, 1 failed, 0 in flight, 1 remaining"
        );
        view.end("S");
        assert!(view.stacks.lock().unwrap().is_empty());
    }
}
