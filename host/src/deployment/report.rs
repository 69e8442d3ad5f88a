//! What a person (or CI) sees while cdkd works: one line per resource event with its elapsed
//! time, a final summary and the `Outputs:` block; `--json` prints one JSON object per event.
//! On a terminal the lines scroll above a live view of what is in flight ([`LiveView`]).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::live::{InFlight, LiveView};
use crate::provisioning::activity;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Progress {
    /// A live view when stdout is a terminal (and not `--json`), else event lines.
    #[default]
    Auto,
    /// Event lines only.
    Events,
}

/// Prints events to stdout, as text or JSON lines, under a live view on a terminal.
#[derive(Clone, Default)]
pub struct Reporter {
    /// JSON lines instead of text.
    pub json: bool,
    live: Option<Arc<LiveView>>,
    /// What it reported, per stack, when asked to keep it ([`Reporter::recording`]).
    log: Option<Arc<Mutex<BTreeMap<String, StackLog>>>>,
}

/// What a reporter said about one stack: its resource events and its summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackLog {
    /// `(logical id, type, action)` of each resource event, in order.
    pub resources: Vec<(String, String, String)>,
    /// The final counts, once reported.
    pub summary: Option<Summary>,
    /// How long the operation took, once reported.
    pub elapsed: Option<Duration>,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter")
            .field("json", &self.json)
            .field("live", &self.live.is_some())
            .finish()
    }
}

/// Counts for the final summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Created.
    pub created: usize,
    /// Updated in place (including policy-only).
    pub updated: usize,
    /// Replaced.
    pub replaced: usize,
    /// Deleted.
    pub deleted: usize,
    /// Unchanged.
    pub unchanged: usize,
    /// Failed.
    pub failed: usize,
    /// Skipped because something failed.
    pub skipped: usize,
}

fn seconds(elapsed: Duration) -> String {
    format!("{:.2}s", elapsed.as_secs_f64())
}

impl Reporter {
    /// Event lines (text or JSON), no live view.
    pub fn events(json: bool) -> Reporter {
        Reporter {
            json,
            live: None,
            log: None,
        }
    }

    /// As `progress` asks: a live view only for text on a terminal.
    pub fn new(json: bool, progress: Progress) -> Reporter {
        let live = (progress == Progress::Auto && !json && std::io::stdout().is_terminal())
            .then(LiveView::on_stdout);
        Reporter {
            json,
            live,
            log: None,
        }
    }

    /// The same reporter, keeping what it reports per stack (for the history).
    pub fn recording(mut self) -> Reporter {
        self.log = Some(Arc::default());
        self
    }

    /// What was reported about `stack` since the last call (taken: the next operation on the
    /// same stack starts empty).
    pub fn take_log(&self, stack: &str) -> StackLog {
        self.log
            .as_ref()
            .and_then(|log| log.lock().unwrap_or_else(|e| e.into_inner()).remove(stack))
            .unwrap_or_default()
    }

    fn keep(&self, stack: &str, change: impl FnOnce(&mut StackLog)) {
        if let Some(log) = &self.log {
            change(
                log.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(stack.to_string())
                    .or_default(),
            );
        }
    }

    fn line(&self, text: &str) {
        let text = crate::printable::printable(text);
        match &self.live {
            Some(view) => view.println(&text),
            None => println!("{text}"),
        }
    }

    /// `count` more resources for `stack` to work on (the live view's "remaining").
    pub fn expect(&self, stack: &str, count: usize) {
        if let Some(view) = &self.live {
            view.expect(stack, count);
        }
    }

    /// Runs one resource's operation, shown on the live view while it runs (with what it
    /// waits for) and counted done or failed when it ends.
    pub async fn track<T, E>(
        &self,
        stack: &str,
        logical_id: &str,
        resource_type: &str,
        operation: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let Some(view) = &self.live else {
            return operation.await;
        };
        let flight: InFlight = view.begin(stack, logical_id, resource_type);
        let result = activity::scope(flight.sink(), operation).await;
        if result.is_err() {
            flight.failed();
        }
        result
    }

    /// One resource event (`created`, `updated`, `deleted`, `failed: …`, `skipped`, …).
    pub fn resource(
        &self,
        stack: &str,
        logical_id: &str,
        resource_type: &str,
        action: &str,
        elapsed: Option<Duration>,
    ) {
        self.keep(stack, |log| {
            log.resources.push((
                logical_id.to_string(),
                resource_type.to_string(),
                action.to_string(),
            ))
        });
        if self.json {
            println!(
                "{}",
                json!({"event": "resource", "stack": stack, "logicalId": logical_id, "resourceType": resource_type, "action": action, "elapsedMs": elapsed.map(|e| e.as_millis() as u64)})
            );
        } else {
            match elapsed {
                Some(elapsed) => self.line(&format!(
                    "  {stack} | {logical_id} ({resource_type}): {action} in {}",
                    seconds(elapsed)
                )),
                None => self.line(&format!(
                    "  {stack} | {logical_id} ({resource_type}): {action}"
                )),
            }
        }
    }

    /// A stack-level message.
    pub fn stack(&self, stack: &str, message: &str) {
        if self.json {
            println!(
                "{}",
                json!({"event": "stack", "stack": stack, "message": message})
            );
        } else {
            self.line(&format!("{stack}: {message}"));
        }
    }

    /// The summary and outputs of one stack.
    pub fn finish(
        &self,
        stack: &str,
        summary: &Summary,
        elapsed: Duration,
        outputs: &Map<String, Value>,
    ) {
        self.keep(stack, |log| {
            log.summary = Some(summary.clone());
            log.elapsed = Some(elapsed);
        });
        if self.json {
            println!(
                "{}",
                json!({"event": "summary", "stack": stack, "created": summary.created, "updated": summary.updated, "replaced": summary.replaced,
                       "deleted": summary.deleted, "unchanged": summary.unchanged, "failed": summary.failed, "skipped": summary.skipped,
                       "elapsedMs": elapsed.as_millis() as u64, "outputs": outputs})
            );
            return;
        }
        if let Some(view) = &self.live {
            view.end(stack);
        }
        self.line(&format!(
            "{stack}: {} created, {} updated, {} replaced, {} deleted, {} unchanged{} in {}",
            summary.created,
            summary.updated,
            summary.replaced,
            summary.deleted,
            summary.unchanged,
            if summary.failed + summary.skipped > 0 {
                format!(", {} failed, {} skipped", summary.failed, summary.skipped)
            } else {
                String::new()
            },
            seconds(elapsed)
        ));
        if !outputs.is_empty() {
            self.line("");
            self.line("Outputs:");
            for (name, value) in outputs {
                let shown = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                self.line(&format!("{stack}.{name} = {shown}"));
            }
            self.line("");
        }
    }
}
