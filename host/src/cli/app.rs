//! What the app-driven commands (`synth`, `list`, `diff`, `deploy`, …) share: the app flags,
//! synthesis, and each stack's target account and region.

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use super::CommandContext;
use crate::synthesis::assembly::{CloudAssembly, StackArtifact};
use crate::synthesis::runner::{self, AppEnvironment, AppOptions, ContextLookups, LookupError};

/// Flags naming the app and its context.
#[derive(Debug, Args, Clone, Default)]
pub struct AppArgs {
    /// The CDK app: a command (`node app.js`) or a synthesized cloud assembly folder
    /// (default: CDKD_APP, then cdk.json "app").
    #[arg(long, short = 'a', value_name = "APP")]
    pub app: Option<String>,
    /// Where the app writes its cloud assembly (default: cdk.json "output", then cdk.out).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// A context value for the app, `key=value` (repeatable).
    #[arg(long = "context", short = 'c', value_name = "KEY=VALUE", value_parser = parse_context)]
    pub context: Vec<(String, String)>,
}

fn parse_context(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .ok_or_else(|| format!("context '{text}' is not key=value"))
}

/// Context lookups cdkd can answer (`ssm`; `availability-zones` and the rest through the
/// plugins that list `context_lookup`); others fail with the pre-fill hint.
struct Lookups<'a> {
    context: &'a CommandContext,
    aws: crate::aws_env::AwsEnvironment,
    /// Loaded at the first lookup that needs a plugin, once for the whole synthesis.
    registry: std::sync::OnceLock<
        Result<std::sync::Arc<crate::provisioning::registry::Registry>, String>,
    >,
}

#[async_trait::async_trait]
impl ContextLookups for Lookups<'_> {
    async fn lookup(&self, provider: &str, props: &Value) -> Result<Value, LookupError> {
        match provider {
            "ssm" => {
                let name = props
                    .get("parameterName")
                    .and_then(Value::as_str)
                    .ok_or(LookupError::MissingProp("parameterName"))?;
                let region = props
                    .get("region")
                    .and_then(Value::as_str)
                    .map_or_else(|| self.aws.region(), ToString::to_string);
                crate::deployment::parameters::ssm_parameter(&self.aws, &region, name)
                    .await
                    .map(Value::String)
                    .map_err(|err| LookupError::Failed(Box::new(err)))
            }
            "availability-zones" => {
                let region = props
                    .get("region")
                    .and_then(Value::as_str)
                    .map_or_else(|| self.aws.region(), ToString::to_string);
                // Plugins are loaded only for this lookup: a plain synth never needs them.
                let registry = self
                    .registry
                    .get_or_init(|| self.context.registry().map_err(|e| e.to_string()))
                    .as_ref()
                    .map_err(|err| LookupError::Failed(err.clone().into()))?;
                crate::provisioning::zones::availability_zones(registry, &self.aws, &region)
                    .await
                    .map(Value::from)
                    .map_err(|err| LookupError::Failed(Box::new(err)))
            }
            other => {
                let registry = self
                    .registry
                    .get_or_init(|| self.context.registry().map_err(|e| e.to_string()))
                    .as_ref()
                    .map_err(|err| LookupError::Failed(err.clone().into()))?;
                crate::provisioning::context_lookups::context_lookup(
                    registry, &self.aws, other, props,
                )
                .await
                .map_err(|err| LookupError::Failed(Box::new(err)))
            }
        }
    }
}

/// Synthesizes the app (or reads the assembly) for a command.
pub async fn load_assembly(
    context: &CommandContext,
    args: &AppArgs,
) -> anyhow::Result<CloudAssembly> {
    let dir = Path::new(".");
    let options = AppOptions {
        app: args.app.clone(),
        output: args.output.clone(),
        context: args.context.clone(),
    };
    let source = runner::app_source(&options, dir)?;
    let environment = match &source {
        runner::AppSource::Assembly(_) => AppEnvironment::default(),
        runner::AppSource::Command { .. } => {
            let aws = context.aws().await;
            // The account is announced when credentials reach STS quickly; an app runs without it.
            let probe = crate::state::bucket::account_id(aws);
            let account = tokio::time::timeout(std::time::Duration::from_secs(3), probe)
                .await
                .ok()
                .and_then(Result::ok);
            AppEnvironment {
                account,
                region: aws.region(),
            }
        }
    };
    let lookups = Lookups {
        context,
        aws: context.aws().await.clone(),
        registry: std::sync::OnceLock::new(),
    };
    Ok(runner::synthesize(&source, &options, &environment, dir, &lookups).await?)
}

/// Where a stack deploys: its own environment, or the caller's for what the app left open.
pub async fn stack_target(
    context: &CommandContext,
    stack: &StackArtifact,
) -> anyhow::Result<(String, String)> {
    let aws = context.aws().await;
    let region = stack
        .environment
        .region
        .clone()
        .unwrap_or_else(|| aws.region());
    let account = match &stack.environment.account {
        Some(account) => account.clone(),
        None => context.account().await?,
    };
    Ok((account, region))
}
