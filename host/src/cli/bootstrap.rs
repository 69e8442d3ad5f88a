//! `cdkd bootstrap [--no-assets] [--asset-bucket N] [--container-repo N]` and
//! `cdkd bootstrap --destroy [--include-state-bucket]`.

use std::process::ExitCode;

use clap::Args;

use super::{confirm, CommandContext};
use crate::assets::images;
use crate::state::bootstrap::{self, AssetStorage, BootstrapPlan};
use crate::state::bucket::{self, BucketChoice};
use crate::state::keys::StateKeys;
use crate::state::StateError;

#[derive(Debug, Args)]
pub struct BootstrapArgs {
    /// Only the state bucket: no asset bucket, no marker (the region keeps CDK's asset
    /// destinations).
    #[arg(long, conflicts_with_all = ["asset_bucket", "container_repo"])]
    no_assets: bool,
    /// The asset bucket's name (default cdkd-assets-{account}-{region}).
    #[arg(long, value_name = "NAME")]
    asset_bucket: Option<String>,
    /// The container-asset repository's name (default cdkd-container-assets-{account}-{region}).
    #[arg(long, value_name = "NAME")]
    container_repo: Option<String>,
    /// Tear the region's bootstrap down instead: the asset bucket, the container-asset
    /// repository, then the marker.
    #[arg(long)]
    destroy: bool,
    /// With --destroy: also delete the state bucket (refused while it holds stack records).
    #[arg(long, requires = "destroy")]
    include_state_bucket: bool,
}

pub async fn run(context: &CommandContext, args: BootstrapArgs) -> anyhow::Result<ExitCode> {
    let aws = context.aws().await;
    let region = aws.region();
    let account = bucket::account_id(aws).await?;
    let choice = BucketChoice::from_environment(
        context.global.state_bucket.clone(),
        std::path::Path::new("cdk.json"),
    );
    let state_bucket = choice
        .explicit()
        .map_or_else(|| bucket::default_bucket_name(&account), |b| b.name);
    let client = bucket::owned_s3_client(aws, &region, &account);
    if args.destroy {
        let what = if args.include_state_bucket {
            format!("Delete the asset storage of {region} and the state bucket")
        } else {
            format!("Delete the asset storage of {region}")
        };
        if !confirm(&what, context.assume_yes())? {
            println!("Nothing deleted.");
            return Ok(ExitCode::SUCCESS);
        }
        let keys = StateKeys::new(&context.global.state_prefix);
        let client = bucket::state_bucket_client(aws, &state_bucket).await?;
        let ecr = images::ecr_client(aws, &region);
        // The repository goes after the asset bucket and before the marker, which is last.
        let report = bootstrap::teardown(
            &client,
            &state_bucket,
            &region,
            &keys,
            args.include_state_bucket,
            |repository| async move {
                images::delete_repository(&ecr, &repository)
                    .await
                    .map_err(|err| StateError::Aws(format!("{err:#}")))
            },
        )
        .await?;
        if let Some(repository) = &report.container_repo {
            println!("Deleted container repository {repository}.");
        }
        match &report.asset_bucket {
            Some(name) => println!("Deleted asset bucket {name}."),
            None if report.marker => println!("The asset bucket was already gone."),
            None => println!("{region} had no cdkd asset storage."),
        }
        if report.marker {
            println!("Removed the bootstrap marker of {region}.");
        }
        if args.include_state_bucket {
            if report.state_bucket {
                println!("Deleted the state bucket.");
            } else {
                println!("The state bucket was already gone.");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let assets = (!args.no_assets).then(|| {
        let defaults = AssetStorage::defaults(&account, &region);
        AssetStorage {
            bucket: args.asset_bucket.unwrap_or(defaults.bucket),
            container_repo: args.container_repo.unwrap_or(defaults.container_repo),
        }
    });
    let plan = BootstrapPlan {
        account,
        region: region.clone(),
        state_bucket: state_bucket.clone(),
        assets,
    };
    // The repository exists before the marker that names it is written.
    let repository_created = match &plan.assets {
        Some(assets) => Some(
            images::ensure_repository(&images::ecr_client(aws, &region), &assets.container_repo)
                .await?,
        ),
        None => None,
    };
    let report = bootstrap::bootstrap(&client, &plan).await?;
    let verb = |created: bool| if created { "Created" } else { "Updated" };
    // Bootstrap is the one command that names the bucket: the user asked for it.
    println!(
        "{} state bucket {state_bucket} (versioned, AES-256, external access denied).",
        verb(report.state_bucket_created)
    );
    if let (Some(assets), Some(created)) = (&plan.assets, report.asset_bucket_created) {
        println!(
            "{} asset bucket {} for {region}.",
            verb(created),
            assets.bucket
        );
        println!(
            "{} container repository {} for {region}.",
            verb(repository_created == Some(true)),
            assets.container_repo
        );
        println!("Wrote the bootstrap marker of {region}.");
    }
    Ok(ExitCode::SUCCESS)
}
