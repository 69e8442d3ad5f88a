//! What a person (or CI) sees while cdkd works: one line per resource event with its elapsed
//! time, a final summary and the `Outputs:` block; `--json` prints one JSON object per event.

use std::time::Duration;

use serde_json::{json, Map, Value};

/// Prints events to stdout, as text or JSON lines.
#[derive(Debug, Clone, Copy)]
pub struct Reporter {
    /// JSON lines instead of text.
    pub json: bool,
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
    /// One resource event (`created`, `updated`, `deleted`, `failed: …`, `skipped`, …).
    pub fn resource(
        &self,
        stack: &str,
        logical_id: &str,
        resource_type: &str,
        action: &str,
        elapsed: Option<Duration>,
    ) {
        if self.json {
            println!(
                "{}",
                json!({"event": "resource", "stack": stack, "logicalId": logical_id, "resourceType": resource_type, "action": action, "elapsedMs": elapsed.map(|e| e.as_millis() as u64)})
            );
        } else {
            match elapsed {
                Some(elapsed) => println!(
                    "  {stack} | {logical_id} ({resource_type}): {action} in {}",
                    seconds(elapsed)
                ),
                None => println!("  {stack} | {logical_id} ({resource_type}): {action}"),
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
            println!("{stack}: {message}");
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
        if self.json {
            println!(
                "{}",
                json!({"event": "summary", "stack": stack, "created": summary.created, "updated": summary.updated, "replaced": summary.replaced,
                       "deleted": summary.deleted, "unchanged": summary.unchanged, "failed": summary.failed, "skipped": summary.skipped,
                       "elapsedMs": elapsed.as_millis() as u64, "outputs": outputs})
            );
            return;
        }
        println!(
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
        );
        if !outputs.is_empty() {
            println!();
            println!("Outputs:");
            for (name, value) in outputs {
                let shown = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                println!("{stack}.{name} = {shown}");
            }
            println!();
        }
    }
}
