//! The command line: parsing, logging set-up and dispatch to one module per command group.

mod app;
mod approval;
mod assets;
mod bootstrap;
mod deploy;
mod diff;
mod drift;
mod events;
mod export;
mod force_unlock;
mod import;
mod local;
mod providers;
mod scrub;
mod stack_flag;
mod state;
mod synth;
mod table;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

use std::path::Path;

use crate::aws_env::{AwsEnvironment, AwsOptions};
use crate::provisioning::manifest_cache::ManifestCache;
use crate::provisioning::plugin_layers;
use crate::provisioning::plugins_file::PluginsFileSource;
use crate::provisioning::registry::Registry;
use crate::provisioning::trust::TrustStore;
use crate::state::backend::StateBackend;
use crate::state::bucket::{self, BucketChoice};
use crate::state::keys::StateKeys;
use crate::state::lock::{LockConfig, LockManager};
use crate::state::store::StateStore;

/// Deploy AWS CDK apps without CloudFormation.
#[derive(Debug, Parser)]
#[command(name = "cdkd", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// Flags every command accepts (listed under their own heading in each command's help).
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
struct GlobalArgs {
    /// A plugins file to add over the install's, the trusted ./plugins.toml, the user's and
    /// CDKD_PLUGINS (its entries replace theirs by name; `inherit = false` in it drops them).
    /// A project's file must be trusted first: `cdkd providers trust FILE`.
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
    /// The state bucket (default: CDKD_STATE_BUCKET, cdk.json context.cdkd.stateBucket,
    /// STATE_BUCKET, then cdkd-state-{accountId}).
    #[arg(long, global = true, value_name = "BUCKET")]
    state_bucket: Option<String>,
    /// The key prefix for stack records in the state bucket.
    #[arg(long, global = true, env = "STATE_PREFIX", default_value = crate::state::keys::DEFAULT_PREFIX, value_name = "PREFIX")]
    state_prefix: String,
    /// Answer yes to every confirmation.
    #[arg(long, short = 'y', global = true)]
    yes: bool,
    /// Run as in CI (default when CI is set): event lines only, never a live view, and a
    /// confirmation without --yes / --force is refused instead of asked.
    #[arg(long, global = true)]
    ci: bool,
    /// No colours in logs (also when NO_COLOR is set).
    #[arg(long, global = true)]
    no_color: bool,
    /// Make the AWS calls for resources, assets and lookups with this role (assumed with the
    /// caller's credentials); the state bucket is read and written with the caller's.
    #[arg(long, global = true, env = "CDKD_ROLE_ARN", value_name = "ARN")]
    role_arn: Option<String>,
}

/// `--ci` (or a truthy `CI`), set once at start-up.
static CI: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// Whether cdkd runs as in CI: no live view, no questions.
pub(crate) fn in_ci() -> bool {
    *CI.get().unwrap_or(&false)
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect the provider plugins the host loads.
    #[command(subcommand)]
    Providers(providers::ProvidersCommand),
    /// Inspect and manage the state records in the state bucket.
    #[command(subcommand)]
    State(state::StateCommand),
    /// Create the state bucket and the region's asset storage (or tear them down).
    Bootstrap(bootstrap::BootstrapArgs),
    /// Remove a stack's lock, whoever holds it.
    ForceUnlock(force_unlock::ForceUnlockArgs),
    /// Synthesize the app and print a stack's template.
    Synth(synth::SynthArgs),
    /// List the app's stacks.
    #[command(alias = "ls")]
    List(synth::ListArgs),
    /// Compare the app's stacks with their deployed state.
    Diff(diff::DiffArgs),
    /// Deploy the app's stacks.
    Deploy(deploy::DeployArgs),
    /// Deploy, then deploy again whenever a file of the app changes.
    Watch(watch::WatchArgs),
    /// Compare what AWS holds with the recorded resources; accept or revert what drifted.
    Drift(drift::DriftArgs),
    /// Adopt existing AWS resources into a stack's state record.
    Import(import::ImportArgs),
    /// Hand a stack over to CloudFormation (an IMPORT change set); its resources stay as they are.
    Export(export::ExportArgs),
    /// Delete the app's stacks and their resources.
    Destroy(deploy::DestroyArgs),
    /// Undo the last failed deploy of a stack, from its rollback journal (no synthesis).
    Rollback(deploy::RollbackArgs),
    /// Show the history of past deploys, destroys and rollbacks (or prune it).
    Events(events::EventsArgs),
    /// Forget the app's stacks: delete their state records, leave their resources in AWS.
    Orphan(state::OrphanArgs),
    /// Put `{{resolve:...}}` expressions back where a record holds a resolved secret.
    Scrub(scrub::ScrubArgs),
    /// Publish the app's assets without deploying.
    PublishAssets(assets::PublishAssetsArgs),
    /// Delete cdkd asset objects and stranded response placeholders no record references.
    Gc(assets::GcArgs),
    /// Run a stack's Lambda functions and APIs on this machine (`invoke`, `start-api`).
    #[command(subcommand)]
    Local(local::LocalCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Write cdkd's man pages (one per command) into a folder.
    ManPages {
        /// The folder, e.g. PREFIX/share/man/man1.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
}

/// Runs the CLI and turns any error into a message on stderr and exit code 1.
pub fn main() -> ExitCode {
    // A closed stdout (`cdkd state list | head -1`) ends the command quietly, as for any
    // Unix tool, instead of a panic report.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") {
            std::process::exit(0);
        }
        default_hook(info);
    }));
    let cli = match Cli::try_parse_from(stack_flag::as_positional(std::env::args_os())) {
        Ok(cli) => cli,
        Err(err) => {
            // clap would exit 2 on a usage error, which `cdkd drift` answers for "drift
            // found": a mistyped flag must read as a failure (1), as every other error does.
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let truthy = |name: &str| {
        std::env::var(name)
            .is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
    };
    let _ = CI.set(cli.global.ci || truthy("CI"));
    init_logging(
        cli.global.verbose,
        !cli.global.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    );
    // Before any thread or plugin starts: each plugin's runtime threads would otherwise get
    // heaps of their own (provider-api explains the figure).
    cdkd_provider_api::host::limit_malloc_arenas(2);
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
            eprintln!("error: {}", error_line(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, each cause once: many errors already quote their
/// source in their own message, and `{:#}` would print it again (`X: X`).
pub fn error_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        let text = text.trim();
        if text.is_empty() || line.contains(text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text);
    }
    line
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let context = CommandContext {
        global: cli.global,
        aws: tokio::sync::OnceCell::new(),
        caller_aws: tokio::sync::OnceCell::new(),
        account: tokio::sync::OnceCell::new(),
        registry: std::sync::OnceLock::new(),
    };
    match cli.command {
        Command::Providers(command) => providers::run(&context, command).await,
        Command::State(command) => state::run(&context, command).await,
        Command::Bootstrap(args) => bootstrap::run(&context, args).await,
        Command::ForceUnlock(args) => force_unlock::run(&context, args).await,
        Command::Synth(args) => synth::run_synth(&context, args).await,
        Command::List(args) => synth::run_list(&context, args).await,
        Command::Diff(args) => diff::run(&context, args).await,
        Command::Deploy(args) => deploy::deploy(&context, args).await,
        Command::Watch(args) => watch::run(&context, args).await,
        Command::Drift(args) => drift::run(&context, args).await,
        Command::Import(args) => import::run(&context, args).await,
        Command::Export(args) => export::run(&context, args).await,
        Command::Destroy(args) => deploy::destroy(&context, args).await,
        Command::Rollback(args) => deploy::rollback(&context, args).await,
        Command::Events(args) => events::run(&context, args).await,
        Command::Orphan(args) => state::orphan_command(&context, args).await,
        Command::Scrub(args) => scrub::run(&context, args).await,
        Command::PublishAssets(args) => assets::publish(&context, args).await,
        Command::Gc(args) => assets::gc(&context, args).await,
        Command::Local(command) => local::run(&context, command).await,
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "cdkd", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::ManPages { dir } => {
            std::fs::create_dir_all(&dir)?;
            let command = <Cli as clap::CommandFactory>::command();
            clap_mangen::generate_to(command, &dir).map_err(|err| {
                anyhow::anyhow!("cannot write man pages into {}: {err}", dir.display())
            })?;
            println!("man pages written into {}", dir.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What every command gets: the global flags and ways to build shared services from them.
pub struct CommandContext {
    global: GlobalArgs,
    aws: tokio::sync::OnceCell<AwsEnvironment>,
    caller_aws: tokio::sync::OnceCell<AwsEnvironment>,
    account: tokio::sync::OnceCell<String>,
    registry: std::sync::OnceLock<Result<std::sync::Arc<Registry>, String>>,
}

impl CommandContext {
    /// The AWS options from the global flags.
    fn aws_options(&self) -> AwsOptions {
        AwsOptions {
            profile: self.global.profile.clone(),
            region: self.global.region.clone(),
            s3_force_path_style: self.global.s3_force_path_style,
            ..AwsOptions::default()
        }
    }

    /// The AWS environment for resources, assets and lookups (`--role-arn`'s role when
    /// given), resolved once per run.
    async fn aws(&self) -> &AwsEnvironment {
        if self.global.role_arn.is_none() {
            return self.caller_aws().await;
        }
        self.aws
            .get_or_init(|| async {
                AwsEnvironment::load(&AwsOptions {
                    role_arn: self.global.role_arn.clone(),
                    ..self.aws_options()
                })
                .await
            })
            .await
    }

    /// The caller's own AWS environment (the SDK's chain): the state bucket's.
    async fn caller_aws(&self) -> &AwsEnvironment {
        self.caller_aws
            .get_or_init(|| async { AwsEnvironment::load(&self.aws_options()).await })
            .await
    }

    /// The account resources go to (the role's with `--role-arn`), resolved once per run.
    async fn account(&self) -> anyhow::Result<String> {
        let aws = self.aws().await;
        Ok(self
            .account
            .get_or_try_init(|| async { bucket::account_id(aws).await })
            .await?
            .clone())
    }

    /// The state bucket, its client and the stack-record store: always with the caller's
    /// credentials, `--role-arn` or not.
    async fn state(&self) -> anyhow::Result<StateStore> {
        let aws = self.caller_aws().await;
        let choice =
            BucketChoice::from_environment(self.global.state_bucket.clone(), Path::new("cdk.json"));
        let bucket = bucket::resolve(aws, &choice).await?;
        let client = bucket::state_bucket_client(aws, &bucket.name).await?;
        // The name carries the account id: only --verbose shows it.
        tracing::debug!(bucket = %bucket.name, source = bucket.source.as_str(), "state bucket");
        let keys = StateKeys::new(&self.global.state_prefix);
        Ok(StateStore {
            backend: StateBackend::new(client.clone(), &bucket.name, keys.clone()),
            locks: LockManager::new(client, &bucket.name, keys, LockConfig::from_env()),
            bucket,
        })
    }

    /// Whether the user pre-answered confirmations.
    fn assume_yes(&self) -> bool {
        self.global.yes
    }

    /// The registry of the plugins file the flags and environment select, loaded once per
    /// process: a plugin library is initialised once, so `cdkd watch`'s deploys and a
    /// synthesis's lookups share it with the command.
    fn registry(&self) -> anyhow::Result<std::sync::Arc<Registry>> {
        let loaded = self.registry.get_or_init(|| {
            let env = std::env::var_os("CDKD_PLUGINS")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from);
            let trust = TrustStore::for_user();
            let file = plugin_layers::load(
                self.global.plugins.as_deref(),
                env.as_deref(),
                trust.as_ref(),
            )
            .map_err(|err| format!("{err:#}"))?;
            if file.source == PluginsFileSource::None {
                tracing::debug!("no plugins.toml found; every AWS type goes to Cloud Control");
            }
            let registry = Registry::load_cached(file, ManifestCache::for_user().as_ref());
            registry.print_notices();
            Ok(std::sync::Arc::new(registry))
        });
        loaded.clone().map_err(anyhow::Error::msg)
    }
}

/// Asks a yes/no question on the terminal; refuses when there is no terminal to ask on.
fn confirm(question: &str, assume_yes: bool) -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if assume_yes {
        return Ok(true);
    }
    if in_ci() {
        anyhow::bail!("{question} needs confirmation, and cdkd runs as in CI (--ci or CI set), where it never asks; pass --yes (or --force) to go ahead");
    }
    if !std::io::stdin().is_terminal() {
        anyhow::bail!("{question} needs confirmation, and there is no terminal to ask on; pass --yes to go ahead");
    }
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES"))
}

fn init_logging(verbose: bool, color: bool) {
    // aws-config warns on every failed IMDS probe; the fallback region makes those harmless.
    let default = if verbose {
        "cdkd=debug,info"
    } else {
        "cdkd=info,aws_config=error,warn"
    };
    let filter = EnvFilter::try_from_env("CDKD_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| crate::printable::PrintableWriter(std::io::stderr()))
        .with_ansi(color && std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(verbose)
        .without_time()
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("saving state failed: {0}")]
    struct Quoting(#[source] std::io::Error);

    #[test]
    fn a_cause_already_quoted_is_printed_once() {
        let inner = std::io::Error::other("SlowDown");
        let err = anyhow::Error::new(Quoting(inner)).context("deploy of Stack failed");
        assert_eq!(
            error_line(&err),
            "deploy of Stack failed: saving state failed: SlowDown"
        );
        let plain = anyhow::anyhow!("root cause").context("outer");
        assert_eq!(error_line(&plain), "outer: root cause");
    }
}
