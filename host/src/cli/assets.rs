//! `cdkd publish-assets` (publish a stack's assets without deploying) and `cdkd gc` (reclaim
//! cdkd-owned storage no record references).

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::app::{load_assembly, stack_target, AppArgs};
use super::CommandContext;
use crate::analyzer::template::Template;
use crate::assets::gc::{collect, GcOptions, GcReport, PLACEHOLDER_GUARD};
use crate::synthesis::selection::select;

#[derive(Debug, Args)]
pub struct PublishAssetsArgs {
    /// Stacks whose assets to publish (names or display paths, `*` wildcards; `--stack NAME` also works).
    stacks: Vec<String>,
    #[command(flatten)]
    app: AppArgs,
    /// Every stack of the app.
    #[arg(long)]
    all: bool,
}

/// `cdkd publish-assets`.
pub async fn publish(
    context: &CommandContext,
    args: PublishAssetsArgs,
) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.app).await?;
    let stacks = select(&assembly, &args.stacks, args.all, true)?;
    let store = context.state().await?;
    let aws = context.aws().await;
    for stack in stacks {
        let (account, region) = stack_target(context, stack).await?;
        let template = Template::parse(&stack.template()?)
            .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
        let started = std::time::Instant::now();
        crate::assets::publish_for_stack(
            &assembly, stack, template, aws, &store, &account, &region,
        )
        .await?;
        println!(
            "{} ({region}): assets published in {:.2}s",
            stack.display_name,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Keep unreferenced objects younger than this many days.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(0..=36_500))]
    older_than: u64,
    /// Report what would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
}

/// `cdkd gc`.
pub async fn gc(context: &CommandContext, args: GcArgs) -> anyhow::Result<ExitCode> {
    let store = context.state().await?;
    let aws = context.aws().await;
    // `--region` (global) picks the region, as for every command.
    let region = aws.region();
    let options = GcOptions {
        older_than: Duration::from_secs(args.older_than * 24 * 60 * 60),
        dry_run: args.dry_run,
    };
    let report = collect(&store, aws, &region, options).await?;
    print_report(&report, &args);
    Ok(ExitCode::SUCCESS)
}

fn print_report(report: &GcReport, args: &GcArgs) {
    let verb = if args.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    let region = &report.region;
    match &report.asset_bucket {
        None => println!(
            "{region}: no cdkd asset storage (no bootstrap marker); CDK bootstrap storage is never collected."
        ),
        Some(bucket) => {
            let bytes: i64 = report.assets.iter().map(|c| c.size).sum();
            println!(
                "{region}: s3://{bucket}: {verb} {} unreferenced object(s) ({bytes} bytes); kept {} referenced and {} younger than {} day(s).",
                report.assets.len(),
                report.referenced,
                report.too_young,
                args.older_than
            );
            for object in &report.assets {
                println!("  {}", object.location);
            }
            println!(
                "{region}: {verb} {} unreferenced container image(s).",
                report.images.len()
            );
            for image in &report.images {
                println!("  {}", image.location);
            }
        }
    }
    println!(
        "{verb} {} custom-resource response placeholder(s) older than {} h.",
        report.placeholders.len(),
        PLACEHOLDER_GUARD.as_secs() / 3600
    );
    for object in &report.placeholders {
        println!("  {}", object.location);
    }
}
