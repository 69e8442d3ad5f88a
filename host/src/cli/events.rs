//! `cdkd events [stack]`: the history of past deploys, destroys and rollbacks, and the
//! [`History`] recorder the deploy, destroy and rollback commands write it with.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use serde_json::json;
use tokio::sync::OnceCell;

use super::table;
use super::CommandContext;
use crate::deployment::report::Reporter;
use crate::state::backend::StateBackend;
use crate::state::history::{self, ChangedResource, HistoryEvent, Operation, EVENT_VERSION};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EventsArgs {
    /// The stack (default: every stack).
    stack: Option<String>,
    /// Only this region's events.
    #[arg(long, value_name = "REGION")]
    stack_region: Option<String>,
    /// The newest N events.
    #[arg(long, default_value_t = 20)]
    limit: usize,
    /// Print JSON on stdout.
    #[arg(long)]
    json: bool,
    #[command(subcommand)]
    action: Option<EventsAction>,
}

#[derive(Debug, Subcommand)]
pub enum EventsAction {
    /// Delete all but the newest N events of each stack.
    Prune {
        /// The stack (default: every stack).
        stack: Option<String>,
        /// How many events to keep per stack and region.
        #[arg(long)]
        keep: usize,
        /// Only this region's events.
        #[arg(long, value_name = "REGION")]
        stack_region: Option<String>,
    },
}

pub async fn run(context: &CommandContext, args: EventsArgs) -> anyhow::Result<ExitCode> {
    let store = context.state().await?;
    if let Some(EventsAction::Prune {
        stack,
        keep,
        stack_region,
    }) = args.action
    {
        let deleted = history::prune(
            &store.backend,
            stack.as_deref(),
            stack_region.as_deref(),
            keep,
        )
        .await?;
        println!("Deleted {deleted} event(s); kept the newest {keep} of each stack.");
        return Ok(ExitCode::SUCCESS);
    }
    let events = history::list(
        &store.backend,
        args.stack.as_deref(),
        args.stack_region.as_deref(),
        args.limit,
    )
    .await?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "events": events }))?
        );
        return Ok(ExitCode::SUCCESS);
    }
    if events.is_empty() {
        println!("No events.");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = events.iter().map(row).collect();
    print!(
        "{}",
        table::render(
            &[
                "STARTED",
                "STACK",
                "REGION",
                "OPERATION",
                "OUTCOME",
                "DURATION",
                "CHANGES",
                "WHO"
            ],
            &rows
        )
    );
    Ok(ExitCode::SUCCESS)
}

/// One table row: when, what, how it ended, how long, the counts that are not zero, who.
fn row(event: &HistoryEvent) -> Vec<String> {
    let started = chrono::DateTime::from_timestamp_millis(event.started_at).map_or_else(
        || "-".into(),
        |at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    );
    let counts: Vec<String> = ["created", "updated", "replaced", "deleted", "failed"]
        .iter()
        .filter_map(|kind| {
            let n = event.summary.get(*kind)?.as_u64()?;
            (n > 0).then(|| format!("{n} {kind}"))
        })
        .collect();
    vec![
        started,
        event.stack_name.clone(),
        event.region.clone(),
        event.operation.as_str().into(),
        event.outcome.clone(),
        format!("{:.1}s", event.duration_ms as f64 / 1000.0),
        if counts.is_empty() {
            "-".into()
        } else {
            counts.join(", ")
        },
        event.who.clone(),
    ]
}

/// Writes one history event per stack operation a command runs, from what its reporter said.
pub struct History {
    backend: StateBackend,
    reporter: Reporter,
    sts: aws_sdk_sts::Client,
    who: OnceCell<String>,
}

impl History {
    /// Starts recording for a command whose engine reports through `reporter` (a
    /// [`Reporter::recording`] one).
    pub async fn start(
        context: &CommandContext,
        backend: &StateBackend,
        reporter: &Reporter,
    ) -> History {
        // Who ran it is the caller, not the role it deploys with.
        let aws = context.caller_aws().await;
        let sts = aws_sdk_sts::Client::from_conf(
            aws_sdk_sts::config::Builder::from(aws.sdk_config())
                .retry_partition(cdkd_aws_common::retry_partition("cdkd-sts"))
                .build(),
        );
        History {
            backend: backend.clone(),
            reporter: reporter.clone(),
            sts,
            who: OnceCell::new(),
        }
    }

    /// The caller's ARN, asked of STS once and only when an event is written: a deploy that
    /// changes nothing records nothing and so makes no call.
    async fn who(&self) -> String {
        self.who
            .get_or_init(|| async {
                self.sts
                    .get_caller_identity()
                    .send()
                    .await
                    .ok()
                    .and_then(|identity| identity.arn().map(str::to_string))
                    .unwrap_or_else(|| "unknown".into())
            })
            .await
            .clone()
    }

    /// Records that `operation` on `stack` in `region`, started at `started`, ended (`error`:
    /// how it failed). A deploy that changed nothing is not recorded; a history that cannot be
    /// written is a warning, never the operation's failure.
    pub async fn record(
        &self,
        operation: Operation,
        stack: &str,
        region: &str,
        started: Instant,
        error: Option<&str>,
    ) {
        let log = self.reporter.take_log(stack);
        if operation == Operation::Deploy && error.is_none() && log.resources.is_empty() {
            return;
        }
        let elapsed = log.elapsed.unwrap_or_else(|| started.elapsed());
        let summary = log.summary.unwrap_or_default();
        let event = HistoryEvent {
            version: EVENT_VERSION,
            stack_name: stack.to_string(),
            region: region.to_string(),
            operation,
            outcome: if error.is_some() {
                "failed"
            } else {
                "succeeded"
            }
            .into(),
            who: self.who().await,
            started_at: chrono::Utc::now().timestamp_millis()
                - i64::try_from(started.elapsed().as_millis()).unwrap_or(0),
            duration_ms: u64::try_from(elapsed.max(Duration::ZERO).as_millis()).unwrap_or(0),
            summary: json!({
                "created": summary.created, "updated": summary.updated,
                "replaced": summary.replaced, "deleted": summary.deleted,
                "unchanged": summary.unchanged, "failed": summary.failed,
                "skipped": summary.skipped,
            }),
            changes: log
                .resources
                .into_iter()
                .map(|(logical_id, resource_type, action)| ChangedResource {
                    logical_id,
                    resource_type,
                    action,
                })
                .collect(),
            error: error.map(str::to_string),
        };
        if let Err(err) = history::write(&self.backend, &event).await {
            tracing::warn!(
                "stack {stack}: the {} was not added to its history (cdkd events): {err}",
                operation.as_str()
            );
        }
    }
}
