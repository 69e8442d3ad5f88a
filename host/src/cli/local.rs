//! `cdkd local invoke | start-api`: a stack's functions and APIs run on this machine.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use clap::{Args, Subcommand};
use serde_json::Value;

use super::app::{load_assembly, AppArgs};
use super::CommandContext;
use crate::analyzer::intrinsics::unknown;
use crate::analyzer::plan::StackContext;
use crate::analyzer::ref_values::RefValues;
use crate::analyzer::template::Template;
use crate::deployment::external::StateSnapshot;
use crate::local::api::{self, ApiKind, Target};
use crate::local::container::{self, ContainerInvoker};
use crate::local::environment::{self, StackValues};
use crate::local::function;
use crate::local::invoke::{AwsVariables, LocalInvoker};
use crate::local::server::{self, Served};
use crate::local::{LocalError, Runner};
use crate::synthesis::assembly::{CloudAssembly, StackArtifact};
use crate::synthesis::selection::select;

/// `cdkd local …`.
#[derive(Debug, Subcommand)]
pub enum LocalCommand {
    /// Run one Lambda function of a stack on this machine, with an event.
    Invoke(InvokeArgs),
    /// Serve a stack's API Gateway REST and HTTP APIs on 127.0.0.1, running their functions here.
    StartApi(StartApiArgs),
}

/// What both commands take.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    app: AppArgs,
    /// Resolve Ref, Fn::GetAtt, Fn::ImportValue and Fn::GetStackOutput in the functions'
    /// environment from the deployed stack's state (without it they are left empty, by name).
    #[arg(long)]
    from_state: bool,
    /// Environment variables over the template's: a JSON file, `{"Parameters": {..},
    /// "<LogicalId or Stack/Path>": {..}}` (SAM's --env-vars) or `{"NAME": "value"}`.
    #[arg(long, value_name = "FILE")]
    env_override: Option<PathBuf>,
    /// Run functions in their runtime's Lambda image with Docker (the Runtime Interface
    /// Emulator) instead of the runtime on PATH.
    #[arg(long)]
    container: bool,
    /// The region of the stack's state record (default: the only region holding one).
    #[arg(long, value_name = "REGION")]
    stack_region: Option<String>,
}

/// `cdkd local invoke`.
#[derive(Debug, Args)]
pub struct InvokeArgs {
    /// The function: `Stack/Path/To/Function` (its construct path) or `Stack/LogicalId`.
    function: String,
    /// The event: a JSON file, or `-` for stdin (default: `{}`).
    #[arg(long, short = 'e', value_name = "FILE|-")]
    event: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// `cdkd local start-api`.
#[derive(Debug, Args)]
pub struct StartApiArgs {
    /// The stack (default: the app's only stack).
    stack: Option<String>,
    /// The port of the first API; further APIs take the next ports (0: any free port each).
    #[arg(long, short = 'p', default_value_t = 3000)]
    port: u16,
    #[command(flatten)]
    run: RunArgs,
}

/// Runs `cdkd local …`.
pub async fn run(context: &CommandContext, command: LocalCommand) -> anyhow::Result<ExitCode> {
    match command {
        LocalCommand::Invoke(args) => invoke(context, args).await,
        LocalCommand::StartApi(args) => start_api(context, args).await,
    }
}

/// Everything the functions of one stack resolve and run with.
struct Prepared {
    stack: String,
    template: Template,
    assembly_dir: PathBuf,
    stack_context: StackContext,
    snapshot: Option<StateSnapshot>,
    parameters: BTreeMap<String, Value>,
    aws: AwsVariables,
    overrides: Option<Value>,
    docker: Option<PathBuf>,
}

/// The stack a `Stack/Path` names: the longest display path (or stack name) it starts with.
fn owner<'a>(assembly: &'a CloudAssembly, name: &str) -> anyhow::Result<&'a StackArtifact> {
    assembly
        .stacks
        .iter()
        .filter(|s| {
            [&s.display_name, &s.stack_name]
                .iter()
                .any(|n| name.starts_with(&format!("{n}/")))
        })
        .max_by_key(|s| s.display_name.len())
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{name} names no stack of the app; give Stack/Path/To/Function (stacks: {})",
                assembly
                    .stacks
                    .iter()
                    .map(|s| s.display_name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

async fn prepare(
    context: &CommandContext,
    run: &RunArgs,
    assembly: &CloudAssembly,
    stack: &StackArtifact,
) -> anyhow::Result<Prepared> {
    let template = Template::parse(&stack.template()?)
        .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
    let docker = if run.container {
        Some(container::docker().await?)
    } else {
        None
    };
    let overrides = match &run.env_override {
        Some(file) => {
            let text = std::fs::read_to_string(file)
                .map_err(|err| anyhow::anyhow!("--env-override {}: {err}", file.display()))?;
            Some(serde_json::from_str(&text).map_err(|err| {
                anyhow::anyhow!("--env-override {}: not JSON: {err}", file.display())
            })?)
        }
        None => None,
    };
    let aws_env = context.aws().await;
    let mut region = stack
        .environment
        .region
        .clone()
        .unwrap_or_else(|| aws_env.region());
    let account = match &stack.environment.account {
        Some(account) => account.clone(),
        None => {
            let probe = context.account();
            match tokio::time::timeout(std::time::Duration::from_secs(10), probe).await {
                Ok(Ok(account)) => account,
                Ok(Err(err)) => {
                    tracing::warn!("the account is unknown ({err:#}); ARNs and AWS::AccountId use 000000000000");
                    "000000000000".into()
                }
                Err(_) => {
                    tracing::warn!("the account is unknown (STS did not answer); ARNs and AWS::AccountId use 000000000000");
                    "000000000000".into()
                }
            }
        }
    };
    let mut snapshot = None;
    let mut ref_values = RefValues::builtin();
    let mut parameters = BTreeMap::new();
    if run.from_state {
        let store = context.state().await?;
        region = store
            .stack_region(&stack.stack_name, run.stack_region.as_deref(), &region)
            .await?;
        let loaded = StateSnapshot::load(&store.backend).await?;
        if loaded.record(&stack.stack_name, &region).is_none() {
            tracing::warn!(
                "stack {} has no state in {region}; deploy it first (`cdkd deploy {}`): the values it would give are left empty",
                stack.stack_name,
                stack.display_name
            );
        }
        snapshot = Some(loaded);
        match context.registry() {
            Ok(registry) => ref_values = registry.ref_values(),
            Err(err) => tracing::debug!("no plugin Ref rules ({err:#}); the built-in ones apply"),
        }
        parameters =
            crate::deployment::parameters::resolve(&template, &BTreeMap::new(), aws_env, &region)
                .await?;
    } else {
        for (name, parameter) in &template.parameters {
            if parameter.is_ssm() {
                parameters.insert(name.clone(), unknown(format!("parameter {name} (SSM)")));
            }
        }
    }
    for (name, parameter) in &template.parameters {
        if parameter.default.is_none() && !parameters.contains_key(name) {
            parameters.insert(name.clone(), unknown(format!("parameter {name}")));
        }
    }
    let mut credentials = Vec::new();
    match aws_env.credentials().await {
        Ok(found) => {
            credentials.push(("AWS_ACCESS_KEY_ID".to_string(), found.access_key_id));
            credentials.push(("AWS_SECRET_ACCESS_KEY".to_string(), found.secret_access_key));
            if let Some(token) = found.session_token {
                credentials.push(("AWS_SESSION_TOKEN".to_string(), token));
            }
        }
        Err(err) => tracing::warn!("the functions get no AWS credentials: {err}"),
    }
    Ok(Prepared {
        stack: stack.stack_name.clone(),
        template,
        // Absolute: the handler runs in its code folder, and its module paths must still hold.
        assembly_dir: std::fs::canonicalize(&assembly.dir).unwrap_or_else(|_| assembly.dir.clone()),
        stack_context: StackContext {
            stack_name: stack.stack_name.clone(),
            region: region.clone(),
            account: account.clone(),
            ref_values: Arc::new(ref_values),
            availability_zones: BTreeMap::new(),
        },
        snapshot,
        parameters,
        aws: AwsVariables {
            region,
            account,
            credentials,
        },
        overrides,
        docker,
    })
}

impl Prepared {
    /// A function of the stack, ready to run (or why it cannot).
    fn runner(&self, logical_id: &str) -> Result<Runner, LocalError> {
        let function = function::read(&self.template, &self.assembly_dir, logical_id)?;
        let values = StackValues {
            context: &self.stack_context,
            snapshot: self.snapshot.as_ref(),
        };
        let (mut variables, unresolved) = environment::resolve(
            &self.template,
            &values,
            &self.parameters,
            logical_id,
            &function.environment,
        )?;
        for missing in &unresolved {
            tracing::warn!(
                "{}: {} is left empty: {}",
                function.path,
                missing.name,
                missing.reason
            );
        }
        for layer in &function.external_layers {
            tracing::warn!(
                "{}: layer {layer} is not an asset of this stack; cdkd local cannot lay it out",
                function.path
            );
        }
        if let Some(file) = &self.overrides {
            variables.extend(environment::overrides(file, logical_id, &function.path)?);
        }
        let function_name = self.function_name(logical_id, &function);
        match &self.docker {
            Some(docker) => Ok(Runner::Container(ContainerInvoker::new(
                docker.clone(),
                function,
                variables,
                function_name,
                &self.aws,
            )?)),
            None => Ok(Runner::Process(LocalInvoker::new(
                function,
                variables,
                function_name,
                &self.aws,
            )?)),
        }
    }

    /// The deployed name (`Ref` of the function in state), else `FunctionName`, else one made
    /// up from the stack and logical id.
    fn function_name(&self, logical_id: &str, function: &function::LocalFunction) -> String {
        let deployed = self
            .snapshot
            .as_ref()
            .and_then(|s| s.record(&self.stack, &self.stack_context.region))
            .and_then(|r| r.resources.get(logical_id))
            .map(|r| r.physical_id.clone());
        deployed
            .or_else(|| {
                function
                    .function_name
                    .as_ref()
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("{}-{logical_id}", self.stack))
    }
}

fn read_event(source: Option<&str>) -> anyhow::Result<Value> {
    let text = match source {
        None => return Ok(Value::Object(Default::default())),
        Some("-") => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|err| anyhow::anyhow!("--event -: cannot read stdin: {err}"))?;
            text
        }
        Some(file) => {
            std::fs::read_to_string(file).map_err(|err| anyhow::anyhow!("--event {file}: {err}"))?
        }
    };
    serde_json::from_str(&text)
        .map_err(|err| anyhow::anyhow!("--event {}: not JSON: {err}", source.unwrap_or_default()))
}

async fn invoke(context: &CommandContext, args: InvokeArgs) -> anyhow::Result<ExitCode> {
    let event = read_event(args.event.as_deref())?;
    let assembly = load_assembly(context, &args.run.app).await?;
    let stack = owner(&assembly, &args.function)?;
    let short = args
        .function
        .strip_prefix(&format!("{}/", stack.display_name))
        .or_else(|| {
            args.function
                .strip_prefix(&format!("{}/", stack.stack_name))
        })
        .unwrap_or(&args.function);
    // The function is found before any AWS call: a typo is answered at once.
    let template = Template::parse(&stack.template()?)
        .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
    let logical_id = function::find(&template, &stack.display_name, short)?;
    if !args.run.container {
        let found = function::read(&template, &assembly.dir, &logical_id)?;
        crate::local::runtime::Runtime::of(&found.runtime, found.image, &found.label())?;
    }
    let prepared = prepare(context, &args.run, &assembly, stack).await?;
    let runner = prepared.runner(&logical_id)?;
    let outcome = runner.invoke(&event, "").await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", outcome.payload)?;
    stdout.flush()?;
    Ok(if outcome.error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

async fn start_api(context: &CommandContext, args: StartApiArgs) -> anyhow::Result<ExitCode> {
    let assembly = load_assembly(context, &args.run.app).await?;
    let patterns: Vec<String> = args.stack.iter().cloned().collect();
    let stacks = select(&assembly, &patterns, false, true)?;
    let [stack] = stacks.as_slice() else {
        anyhow::bail!(
            "start-api serves one stack; name one of: {}",
            stacks
                .iter()
                .map(|s| s.display_name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    };
    let prepared = prepare(context, &args.run, &assembly, stack).await?;
    let apis = api::apis(&prepared.template);
    if apis.is_empty() {
        return Err(LocalError::NoApis(stack.display_name.clone()).into());
    }
    let mut runners = BTreeMap::new();
    let mut refused = BTreeMap::new();
    for api in &apis {
        for route in &api.routes {
            if let Target::Lambda { function, .. } = &route.target {
                if runners.contains_key(function) || refused.contains_key(function) {
                    continue;
                }
                match prepared.runner(function) {
                    Ok(runner) => {
                        runners.insert(function.clone(), Arc::new(runner));
                    }
                    // A missing Docker is the whole command's refusal, not one route's.
                    Err(err @ LocalError::NoDocker(_)) => return Err(err.into()),
                    Err(err) => {
                        tracing::warn!("{err}; its routes answer 502");
                        refused.insert(function.clone(), err.to_string());
                    }
                }
            }
        }
    }
    let mut listeners = Vec::new();
    let mut out = std::io::stdout();
    for (index, api) in apis.into_iter().enumerate() {
        let port = if args.port == 0 {
            0
        } else {
            args.port.checked_add(index as u16).ok_or_else(|| {
                anyhow::anyhow!(
                    "port {} + {index} is past 65535; pick a lower --port",
                    args.port
                )
            })?
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|err| {
                anyhow::anyhow!(
                    "cannot listen on 127.0.0.1:{port} for {}: {err}; pick another --port",
                    api.path
                )
            })?;
        let bound = listener.local_addr()?.port();
        let kind = match api.kind {
            ApiKind::Rest => "REST API",
            ApiKind::Http => "HTTP API",
        };
        writeln!(
            out,
            "{} ({kind}, stage {}): http://127.0.0.1:{bound}{}/",
            api.path,
            api.stage,
            api.prefix()
        )?;
        for route in &api.routes {
            let target = match &route.target {
                Target::Lambda { function, .. } => match runners.get(function) {
                    Some(runner) => runner.function().path.clone(),
                    None => format!(
                        "{function} (cannot run: {})",
                        refused.get(function).map(String::as_str).unwrap_or("?")
                    ),
                },
                Target::Unsupported(what) => format!("{what} (not served)"),
            };
            writeln!(out, "  {} {} -> {target}", route.method, route.path)?;
        }
        listeners.push((api, listener));
    }
    out.flush()?;
    let served = Arc::new(Served {
        runners,
        account: prepared.aws.account.clone(),
        fingerprints: Mutex::new(BTreeMap::new()),
    });
    server::serve(served, listeners, async {
        let terminate = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut signal) => {
                    signal.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = terminate => {}
        }
    })
    .await;
    eprintln!("Stopped.");
    Ok(ExitCode::SUCCESS)
}
