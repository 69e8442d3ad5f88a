//! The command line: parsing, logging set-up and dispatch to one module per command group.

mod providers;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use crate::aws_env::AwsOptions;
use crate::provisioning::plugins_file::{PluginsFile, PluginsFileSource};
use crate::provisioning::registry::Registry;

/// Deploy AWS CDK apps without CloudFormation.
#[derive(Debug, Parser)]
#[command(name = "cdkd", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Args)]
struct GlobalArgs {
    /// The plugins file to load (default: CDKD_PLUGINS, ./plugins.toml, then the bundled one).
    #[arg(long, global = true, value_name = "FILE")]
    plugins: Option<PathBuf>,
    /// The AWS profile to use.
    #[arg(long, global = true)]
    profile: Option<String>,
    /// The AWS region to use (default: the SDK's region chain, then us-east-1).
    #[arg(long, global = true)]
    region: Option<String>,
    /// Address S3 path-style, for S3-compatible endpoints.
    #[arg(long, global = true, env = "CDKD_S3_FORCE_PATH_STYLE")]
    s3_force_path_style: bool,
    /// Print debug logs.
    #[arg(long, short = 'v', global = true)]
    verbose: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the provider plugins the host loads.
    #[command(subcommand)]
    Providers(providers::ProvidersCommand),
}

/// Runs the CLI and turns any error into a message on stderr and exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.global.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let context = CommandContext { global: cli.global };
    match cli.command {
        Command::Providers(command) => providers::run(&context, command).await,
    }
}

/// What every command gets: the global flags and ways to build shared services from them.
pub struct CommandContext {
    global: GlobalArgs,
}

impl CommandContext {
    /// The AWS options from the global flags.
    fn aws_options(&self) -> AwsOptions {
        AwsOptions {
            profile: self.global.profile.clone(),
            region: self.global.region.clone(),
            s3_force_path_style: self.global.s3_force_path_style,
        }
    }

    /// Loads the registry from the plugins file the flags and environment select.
    fn registry(&self) -> anyhow::Result<Registry> {
        let env = std::env::var_os("CDKD_PLUGINS")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        let file = match PluginsFile::locate(self.global.plugins.as_deref(), env.as_deref()) {
            (Some(path), source) => PluginsFile::read(&path, source)?,
            (None, _) => PluginsFile::empty(),
        };
        if file.source == PluginsFileSource::None {
            tracing::debug!("no plugins.toml found; every AWS type goes to Cloud Control");
        }
        Ok(Registry::load(file))
    }
}

fn init_logging(verbose: bool) {
    // aws-config warns on every failed IMDS probe; the fallback region makes those harmless.
    let default = if verbose {
        "cdkd=debug,info"
    } else {
        "cdkd=info,aws_config=error,warn"
    };
    let filter = EnvFilter::try_from_env("CDKD_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(verbose)
        .without_time()
        .init();
}
