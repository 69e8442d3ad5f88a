//! `cdkd force-unlock <stack> [--stack-region R]`: removes a stack's lock unconditionally.

use std::process::ExitCode;

use clap::Args;

use super::CommandContext;

#[derive(Debug, Args)]
pub struct ForceUnlockArgs {
    /// The stack whose lock to remove.
    stack: String,
    /// The stack's region (default: the only region with a record, else the current region).
    #[arg(long, value_name = "REGION")]
    stack_region: Option<String>,
}

pub async fn run(context: &CommandContext, args: ForceUnlockArgs) -> anyhow::Result<ExitCode> {
    let store = context.state().await?;
    let fallback = context.aws().await.region();
    let region = store
        .stack_region(&args.stack, args.stack_region.as_deref(), &fallback)
        .await?;
    match store.locks.force_unlock(&args.stack, &region).await? {
        Some(info) => println!(
            "Removed the lock on {} ({region}) held by {} (operation {}).",
            args.stack,
            info.owner,
            info.operation.as_deref().unwrap_or("unknown")
        ),
        None => println!("No lock on {} ({region}).", args.stack),
    }
    Ok(ExitCode::SUCCESS)
}
