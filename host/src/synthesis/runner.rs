//! Running a CDK app the way the CDK CLI does, or reading a pre-synthesized assembly.
//!
//! The app runs as a shell subprocess with `CDK_OUTDIR`, `CDK_CONTEXT_JSON` (or, when large, a
//! temporary file named by `CONTEXT_OVERFLOW_LOCATION_ENV`), `CDK_DEFAULT_ACCOUNT`,
//! `CDK_DEFAULT_REGION`, `CDK_CLI_ASM_VERSION` and `CDK_CLI_VERSION`. Its output is streamed to
//! stderr (stdout belongs to cdkd's own payload); on failure the exit code and last lines are
//! reported.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::assembly::{AssemblyError, CloudAssembly};

/// The cloud-assembly schema version cdkd announces as its "CLI".
pub const CLI_ASM_VERSION: &str = "55.6.0";
/// The CDK CLI version cdkd announces to apps.
pub const CLI_VERSION: &str = "2.1000.0";
/// Contexts larger than this go through a temporary file, as the CDK CLI does.
pub const CONTEXT_ENV_LIMIT: usize = 32 * 1024;

/// Where the assembly comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppSource {
    /// A folder holding `manifest.json`.
    Assembly(PathBuf),
    /// A command that synthesizes into `output`.
    Command {
        /// The shell command.
        command: String,
        /// The assembly folder it writes.
        output: PathBuf,
    },
}

/// A synthesis failure.
#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// No app was given anywhere.
    #[error("no CDK app: pass --app \"node app.js\" (or a cdk.out folder), set CDKD_APP, or add \"app\" to cdk.json")]
    NoApp,
    /// cdk.json could not be read.
    #[error("cannot read cdk.json: {0}")]
    CdkJson(String),
    /// The app could not be started.
    #[error("cannot start the CDK app `{command}`: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The app failed.
    #[error("the CDK app `{command}` exited with code {code}; its last lines:\n{tail}")]
    AppFailed {
        /// The command.
        command: String,
        /// The exit code (-1 when killed).
        code: i32,
        /// The last lines it printed.
        tail: String,
    },
    /// The assembly could not be read.
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
    /// A context value is needed that cdkd cannot look up.
    #[error("{0}")]
    MissingContext(String),
}

/// What the user said about the app.
#[derive(Debug, Clone, Default)]
pub struct AppOptions {
    /// `-a/--app`.
    pub app: Option<String>,
    /// `-o/--output`.
    pub output: Option<PathBuf>,
    /// `-c key=value`.
    pub context: Vec<(String, String)>,
}

fn read_cdk_json(dir: &Path) -> Result<Option<Value>, SynthError> {
    let path = dir.join("cdk.json");
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|err| SynthError::CdkJson(format!("{}: {err}", path.display()))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(SynthError::CdkJson(format!("{}: {err}", path.display()))),
    }
}

/// Resolves the app: `--app` > `CDKD_APP` > cdk.json `app`; a folder is an assembly.
pub fn app_source(options: &AppOptions, dir: &Path) -> Result<AppSource, SynthError> {
    let cdk_json = read_cdk_json(dir)?;
    let app = options
        .app
        .clone()
        .or_else(|| std::env::var("CDKD_APP").ok().filter(|v| !v.is_empty()))
        .or_else(|| {
            cdk_json
                .as_ref()
                .and_then(|doc| doc.get("app"))
                .and_then(Value::as_str)
                .map(ToString::to_string)
        })
        .ok_or(SynthError::NoApp)?;
    let as_path = dir.join(&app);
    if as_path.is_dir() {
        return Ok(AppSource::Assembly(as_path));
    }
    let output = options
        .output
        .clone()
        .or_else(|| {
            cdk_json
                .as_ref()
                .and_then(|doc| doc.get("output"))
                .and_then(Value::as_str)
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from("cdk.out"));
    Ok(AppSource::Command {
        command: app,
        output: dir.join(output),
    })
}

/// The context an app sees: the CLI's defaults < `cdk.context.json` < cdk.json `context` < `-c`.
pub fn context(options: &AppOptions, dir: &Path) -> Result<Map<String, Value>, SynthError> {
    let mut context = Map::new();
    context.insert("aws:cdk:enable-path-metadata".into(), Value::Bool(true));
    context.insert("aws:cdk:enable-asset-metadata".into(), Value::Bool(true));
    context.insert("aws:cdk:version-reporting".into(), Value::Bool(true));
    context.insert("aws:cdk:bundling-stacks".into(), serde_json::json!(["**"]));
    if let Ok(bytes) = std::fs::read(dir.join("cdk.context.json")) {
        let saved: Value = serde_json::from_slice(&bytes)
            .map_err(|err| SynthError::CdkJson(format!("cdk.context.json: {err}")))?;
        context.extend(saved.as_object().cloned().unwrap_or_default());
    }
    if let Some(project) =
        read_cdk_json(dir)?.and_then(|doc| doc.get("context").and_then(Value::as_object).cloned())
    {
        context.extend(project);
    }
    for (key, value) in &options.context {
        context.insert(key.clone(), Value::String(value.clone()));
    }
    Ok(context)
}

/// Where the app runs: account and region to announce.
#[derive(Debug, Clone, Default)]
pub struct AppEnvironment {
    /// `CDK_DEFAULT_ACCOUNT`, when known.
    pub account: Option<String>,
    /// `CDK_DEFAULT_REGION`.
    pub region: String,
}

/// Runs the app once into `output` and reads the result.
pub async fn run_app(
    command: &str,
    output: &Path,
    context: &Map<String, Value>,
    environment: &AppEnvironment,
    dir: &Path,
) -> Result<CloudAssembly, SynthError> {
    std::fs::create_dir_all(output).map_err(|source| SynthError::Spawn {
        command: command.to_string(),
        source,
    })?;
    let mut child = tokio::process::Command::new("sh");
    child
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env("CDK_OUTDIR", output)
        .env("CDK_CLI_ASM_VERSION", CLI_ASM_VERSION)
        .env("CDK_CLI_VERSION", CLI_VERSION)
        .env("CDK_DEFAULT_REGION", &environment.region)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(account) = &environment.account {
        child.env("CDK_DEFAULT_ACCOUNT", account);
    }
    let context_json = Value::Object(context.clone()).to_string();
    let _overflow = if context_json.len() > CONTEXT_ENV_LIMIT {
        let file = tempfile::NamedTempFile::new().map_err(|source| SynthError::Spawn {
            command: command.to_string(),
            source,
        })?;
        std::fs::write(file.path(), &context_json).map_err(|source| SynthError::Spawn {
            command: command.to_string(),
            source,
        })?;
        child.env("CONTEXT_OVERFLOW_LOCATION_ENV", file.path());
        Some(file)
    } else {
        child.env("CDK_CONTEXT_JSON", &context_json);
        None
    };
    let mut process = child.spawn().map_err(|source| SynthError::Spawn {
        command: command.to_string(),
        source,
    })?;
    let tail = std::sync::Arc::new(std::sync::Mutex::new(VecDeque::<String>::new()));
    let mut pumps = Vec::new();
    for stream in [
        process
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        process
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let tail = std::sync::Arc::clone(&tail);
        pumps.push(tokio::spawn(async move {
            let mut lines = BufReader::new(stream).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("{line}");
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == 20 {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
        }));
    }
    let status = process.wait().await.map_err(|source| SynthError::Spawn {
        command: command.to_string(),
        source,
    })?;
    for pump in pumps {
        let _ = pump.await;
    }
    if !status.success() {
        let tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        return Err(SynthError::AppFailed {
            command: command.to_string(),
            code: status.code().unwrap_or(-1),
            tail: if tail.is_empty() {
                "(no output)".into()
            } else {
                tail.iter().cloned().collect::<Vec<_>>().join("\n")
            },
        });
    }
    Ok(CloudAssembly::read(output)?)
}

/// Why a context lookup has no value; its text goes to the app as the lookup's error.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    /// The lookup's props lack a field it needs (the field).
    #[error("the lookup names no {0}")]
    MissingProp(&'static str),
    /// The read behind the lookup failed (its error, as it says what to do instead).
    #[error("{0}")]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// Answers a context lookup the app asked for (`availability-zones`, `ssm`, …).
#[async_trait::async_trait]
pub trait ContextLookups: Send + Sync {
    /// The value for one missing context entry; an error says what to do instead.
    async fn lookup(&self, provider: &str, props: &Value) -> Result<Value, LookupError>;
}

/// Synthesizes: runs the app (filling missing context through `lookups` and re-running while
/// that makes progress) or reads the assembly folder.
#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
pub async fn synthesize(
    source: &AppSource,
    options: &AppOptions,
    environment: &AppEnvironment,
    dir: &Path,
    lookups: &dyn ContextLookups,
) -> Result<CloudAssembly, SynthError> {
    let (command, output) = match source {
        AppSource::Assembly(path) => return Ok(CloudAssembly::read(path)?),
        AppSource::Command { command, output } => (command, output),
    };
    let mut previous_missing: Option<Vec<String>> = None;
    // Failed lookups, by key: handed to the app as the CDK CLI hands them (an error value it
    // turns into its dummy), never saved. A lookup that read another's dummy (a security
    // group in the VPC being looked up) fails once and succeeds on the next round.
    let mut failed: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let mut context = context(options, dir)?;
        for (key, reason) in &failed {
            context.insert(
                key.clone(),
                serde_json::json!({"$providerError": reason, "$dontSaveContext": true}),
            );
        }
        let assembly = run_app(command, output, &context, environment, dir).await?;
        if assembly.missing.is_empty() {
            return Ok(assembly);
        }
        let keys: Vec<String> = assembly.missing.iter().map(|m| m.key.clone()).collect();
        if previous_missing.as_ref() == Some(&keys) {
            let reasons: Vec<String> = assembly
                .missing
                .iter()
                .filter_map(|m| {
                    let reason = failed.get(&m.key)?;
                    Some(format!(
                        "the app needs context key {} (provider {}): {reason}. Pre-fill it in cdk.context.json (for example by running `cdk synth` once with access to the account)",
                        m.key, m.provider
                    ))
                })
                .collect();
            if !reasons.is_empty() {
                return Err(SynthError::MissingContext(reasons.join("; ")));
            }
            return Err(SynthError::MissingContext(format!(
                "the app still asks for the same context after a lookup: {}",
                keys.join(", ")
            )));
        }
        let path = dir.join("cdk.context.json");
        let mut saved: Map<String, Value> = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        for missing in &assembly.missing {
            match lookups.lookup(&missing.provider, &missing.props).await {
                Ok(value) => {
                    failed.remove(&missing.key);
                    saved.insert(missing.key.clone(), value);
                }
                Err(reason) => {
                    tracing::debug!(key = %missing.key, "lookup failed: {reason}");
                    failed.insert(missing.key.clone(), reason.to_string());
                }
            }
        }
        let mut text =
            serde_json::to_string_pretty(&Value::Object(saved)).expect("context serialises");
        text.push('\n');
        std::fs::write(&path, text).map_err(|err| {
            SynthError::CdkJson(format!("cannot write {}: {err}", path.display()))
        })?;
        tracing::info!(
            "looked up {} context value(s) and saved them to cdk.context.json",
            keys.len()
        );
        previous_missing = Some(keys);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lookup_error_reads_as_the_reason_the_app_is_given() {
        assert_eq!(
            LookupError::MissingProp("parameterName").to_string(),
            "the lookup names no parameterName"
        );
        let failed = LookupError::Failed("no loaded plugin answers 'x' lookups".into());
        assert_eq!(failed.to_string(), "no loaded plugin answers 'x' lookups");
    }

    #[test]
    fn the_app_comes_from_flag_then_cdk_json_and_a_folder_is_an_assembly() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cdk.json"),
            r#"{"app":"node app.js","output":"build/out","context":{"k":"json"}}"#,
        )
        .unwrap();
        let options = AppOptions::default();
        assert_eq!(
            app_source(&options, dir.path()).unwrap(),
            AppSource::Command {
                command: "node app.js".into(),
                output: dir.path().join("build/out")
            }
        );
        std::fs::create_dir(dir.path().join("prebuilt")).unwrap();
        let flagged = AppOptions {
            app: Some("prebuilt".into()),
            ..AppOptions::default()
        };
        assert_eq!(
            app_source(&flagged, dir.path()).unwrap(),
            AppSource::Assembly(dir.path().join("prebuilt"))
        );
    }

    #[test]
    fn context_layers_override_in_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("cdk.json"),
            r#"{"context":{"a":"json","aws:cdk:version-reporting":false}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("cdk.context.json"),
            r#"{"a":"saved","b":"saved"}"#,
        )
        .unwrap();
        let options = AppOptions {
            context: vec![("b".into(), "flag".into())],
            ..AppOptions::default()
        };
        let context = context(&options, dir.path()).unwrap();
        assert_eq!(context["a"], "json");
        assert_eq!(context["b"], "flag");
        assert_eq!(context["aws:cdk:version-reporting"], false);
        assert_eq!(
            context["aws:cdk:bundling-stacks"],
            serde_json::json!(["**"])
        );
    }
}
