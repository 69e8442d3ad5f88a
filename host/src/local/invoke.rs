//! One function run on this machine: the interpreter on PATH runs the embedded bootstrap in a
//! fresh process per invocation (so an edit of the code folder is picked up by the next one),
//! with Lambda's variables, the function's resolved environment, the caller's AWS credentials
//! and the layers on the module path; its output is relayed as it comes, framed by Lambda's
//! START / END / REPORT lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};

use super::function::{Code, LocalFunction};
use super::runtime::Runtime;
use super::LocalError;

/// Lambda's init phase has its own limit; the handler's timeout starts after it.
const INIT_ALLOWANCE: Duration = Duration::from_secs(10);

/// Variables passed from cdkd's own environment to the function's (the rest of the machine's
/// environment stays out, as a function sees only its own on Lambda).
const PASSED_THROUGH: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "AWS_CA_BUNDLE",
    "AWS_EC2_METADATA_DISABLED",
    "NODE_EXTRA_CA_CERTS",
];

/// What every function of a run shares: the region, the credentials and the endpoint.
#[derive(Debug, Clone, Default)]
pub struct AwsVariables {
    /// `AWS_REGION`.
    pub region: String,
    /// The account (for ARNs).
    pub account: String,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (when resolved).
    pub credentials: Vec<(String, String)>,
}

/// The outcome of one invocation.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The request id.
    pub request_id: String,
    /// The payload (JSON text): the result, or Lambda's error object.
    pub payload: String,
    /// Whether the function failed (`X-Amz-Function-Error: Unhandled`).
    pub error: bool,
    /// How long the run took.
    pub duration: Duration,
}

/// A function ready to run, any number of times.
pub struct LocalInvoker {
    /// The function.
    pub function: LocalFunction,
    runtime: Runtime,
    interpreter: PathBuf,
    /// The variables the function gets (Lambda's, its own resolved, the overrides).
    pub variables: BTreeMap<String, String>,
    /// `AWS_LAMBDA_FUNCTION_NAME`.
    pub function_name: String,
    arn: String,
    task_root: PathBuf,
    workdir: tempfile::TempDir,
}

/// A request id shaped like Lambda's (a UUID v4).
pub fn request_id() -> String {
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

fn extract(zip_file: &Path, into: &Path) -> Result<(), LocalError> {
    let io = |err: std::io::Error| LocalError::Io(format!("{}: {err}", zip_file.display()));
    let file = std::fs::File::open(zip_file).map_err(io)?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|err| LocalError::Io(format!("{}: {err}", zip_file.display())))?;
    archive
        .extract(into)
        .map_err(|err| LocalError::Io(format!("{}: {err}", zip_file.display())))
}

impl LocalInvoker {
    /// Prepares a function: its runtime (or the refusal), interpreter, task root and variables.
    /// `variables` are the function's resolved ones with the overrides applied.
    pub fn new(
        function: LocalFunction,
        variables: BTreeMap<String, String>,
        function_name: String,
        aws: &AwsVariables,
    ) -> Result<LocalInvoker, LocalError> {
        let label = function.label();
        let runtime = Runtime::of(&function.runtime, function.image, &label)?;
        let path = std::env::var("PATH").unwrap_or_default();
        let interpreter = runtime.interpreter(&path, &label)?;
        let workdir = tempfile::Builder::new()
            .prefix("cdkd-local-")
            .tempdir()
            .map_err(|err| LocalError::Io(err.to_string()))?;
        let (bootstrap_name, bootstrap) = runtime.bootstrap();
        std::fs::write(workdir.path().join(bootstrap_name), bootstrap)
            .map_err(|err| LocalError::Io(err.to_string()))?;
        let task_root = match &function.code {
            Code::Folder(folder) => folder.clone(),
            Code::Zip(zip_file) => {
                let root = workdir.path().join("task");
                extract(zip_file, &root)?;
                root
            }
            Code::Inline(source) => {
                let root = workdir.path().join("task");
                std::fs::create_dir_all(&root).map_err(|err| LocalError::Io(err.to_string()))?;
                let file = match runtime {
                    Runtime::Node(_) => "index.js",
                    Runtime::Python(_) => "index.py",
                };
                std::fs::write(root.join(file), source)
                    .map_err(|err| LocalError::Io(err.to_string()))?;
                root
            }
        };
        if !task_root.is_dir() {
            return Err(LocalError::NoCode(format!(
                "{label}: its code folder {} is missing; synthesize the app again",
                task_root.display()
            )));
        }
        for layer in &function.layers {
            if !layer.is_dir() {
                return Err(LocalError::NoCode(format!(
                    "{label}: its layer folder {} is missing; synthesize the app again",
                    layer.display()
                )));
            }
        }
        let arn = format!(
            "arn:{}:lambda:{}:{}:function:{function_name}",
            crate::aws_env::partition(&aws.region),
            aws.region,
            aws.account
        );
        let mut all = BTreeMap::new();
        for name in PASSED_THROUGH {
            if let Ok(value) = std::env::var(name) {
                all.insert(name.to_string(), value);
            }
        }
        // The endpoint the SDK in the function uses: the real one, or AWS_ENDPOINT_URL's.
        for (name, value) in std::env::vars() {
            if name.starts_with("AWS_ENDPOINT_URL")
                || name.starts_with("AWS_USE_")
                || name.starts_with("AWS_SDK_")
            {
                all.insert(name, value);
            }
        }
        let (module_var, module_path) = runtime.module_path(
            &task_root,
            &function.layers,
            std::env::var(match runtime {
                Runtime::Node(_) => "NODE_PATH",
                Runtime::Python(_) => "PYTHONPATH",
            })
            .ok()
            .as_deref(),
        );
        let stream = format!(
            "{}/[$LATEST]{}",
            chrono::Utc::now().format("%Y/%m/%d"),
            request_id().replace('-', "")
        );
        let lambda = [
            ("AWS_REGION", aws.region.clone()),
            ("AWS_DEFAULT_REGION", aws.region.clone()),
            (
                "AWS_EXECUTION_ENV",
                format!("AWS_Lambda_{}", function.runtime),
            ),
            ("AWS_LAMBDA_FUNCTION_NAME", function_name.clone()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
            (
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
                function.memory.to_string(),
            ),
            (
                "AWS_LAMBDA_LOG_GROUP_NAME",
                format!("/aws/lambda/{function_name}"),
            ),
            ("AWS_LAMBDA_LOG_STREAM_NAME", stream),
            ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".into()),
            ("LAMBDA_TASK_ROOT", task_root.display().to_string()),
            ("LAMBDA_RUNTIME_DIR", workdir.path().display().to_string()),
            ("_HANDLER", function.handler.clone()),
            ("TZ", ":UTC".into()),
            (module_var, module_path),
        ];
        for (name, value) in lambda {
            all.insert(name.to_string(), value);
        }
        if matches!(runtime, Runtime::Python(_)) {
            all.insert("PYTHONUNBUFFERED".into(), "1".into());
            all.insert("PYTHONDONTWRITEBYTECODE".into(), "1".into());
        }
        for (name, value) in &aws.credentials {
            all.insert(name.clone(), value.clone());
        }
        all.extend(variables);
        Ok(LocalInvoker {
            function,
            runtime,
            interpreter,
            variables: all,
            function_name,
            arn,
            task_root,
            workdir,
        })
    }

    /// The folder the handler is loaded from.
    pub fn task_root(&self) -> &Path {
        &self.task_root
    }

    /// Runs the handler once with `event`; its output goes to stderr as it comes, each line
    /// after `prefix`.
    pub async fn invoke(
        &self,
        event: &serde_json::Value,
        prefix: &str,
    ) -> Result<Invocation, LocalError> {
        let io = |err: std::io::Error| LocalError::Io(err.to_string());
        let request_id = request_id();
        let event_file = self.workdir.path().join(format!("event-{request_id}.json"));
        let result_file = self
            .workdir
            .path()
            .join(format!("result-{request_id}.json"));
        std::fs::write(&event_file, event.to_string()).map_err(io)?;
        let (bootstrap_name, _) = self.runtime.bootstrap();
        let timeout_ms = self.function.timeout * 1000;
        let mut command = tokio::process::Command::new(&self.interpreter);
        command
            .arg(self.workdir.path().join(bootstrap_name))
            .current_dir(&self.task_root)
            .env_clear()
            .envs(&self.variables)
            .env("_CDKD_LOCAL_EVENT", &event_file)
            .env("_CDKD_LOCAL_RESULT", &result_file)
            .env("_CDKD_LOCAL_REQUEST_ID", &request_id)
            .env("_CDKD_LOCAL_ARN", &self.arn)
            .env("_CDKD_LOCAL_TIMEOUT_MS", timeout_ms.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        eprintln!("{prefix}START RequestId: {request_id} Version: $LATEST");
        let started = Instant::now();
        let mut child = command.spawn().map_err(|err| {
            LocalError::Io(format!(
                "{}: cannot start {}: {err}",
                self.function.label(),
                self.interpreter.display()
            ))
        })?;
        let relays: Vec<_> = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        .map(|stream| {
            let prefix = prefix.to_string();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stream).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    eprintln!("{prefix}{line}");
                }
            })
        })
        .collect();
        let limit = Duration::from_millis(timeout_ms) + INIT_ALLOWANCE;
        let status = tokio::time::timeout(limit, child.wait()).await;
        if status.is_err() {
            // The bootstrap enforces the handler's timeout; this is the backstop for a stuck init.
            if let Some(pid) = child.id() {
                let _ = tokio::process::Command::new("kill")
                    .args(["-KILL", "--", &format!("-{pid}")])
                    .status()
                    .await;
            }
            let _ = child.kill().await;
        }
        for relay in relays {
            let _ = tokio::time::timeout(Duration::from_secs(2), relay).await;
        }
        let duration = started.elapsed();
        let result = std::fs::read_to_string(&result_file).ok();
        let _ = std::fs::remove_file(&event_file);
        let _ = std::fs::remove_file(&result_file);
        let (error, payload) = match result
            .as_deref()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        {
            Some(found) => (
                found["error"].as_bool().unwrap_or(false),
                found["payload"].as_str().unwrap_or("null").to_string(),
            ),
            None => {
                let reason = match status {
                    Err(_) => format!(
                        "the function did not finish initialising within {} s",
                        limit.as_secs()
                    ),
                    Ok(Ok(code)) => format!("the runtime exited ({code}) without a result"),
                    Ok(Err(err)) => format!("the runtime could not be waited for: {err}"),
                };
                (
                    true,
                    serde_json::json!({
                        "errorType": "Runtime.ExitError",
                        "errorMessage": format!("RequestId: {request_id} Error: {reason}"),
                    })
                    .to_string(),
                )
            }
        };
        let millis = duration.as_secs_f64() * 1000.0;
        eprintln!("{prefix}END RequestId: {request_id}");
        eprintln!(
            "{prefix}REPORT RequestId: {request_id}\tDuration: {millis:.2} ms\tBilled Duration: {} ms\tMemory Size: {} MB",
            millis.ceil() as u64,
            self.function.memory
        );
        Ok(Invocation {
            request_id,
            payload,
            error,
            duration,
        })
    }
}

/// A fingerprint of a folder's files (paths, sizes, modification times): a change means the
/// code changed.
pub fn fingerprint(folder: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let mut stack = vec![folder.to_path_buf()];
    let mut entries = Vec::new();
    while let Some(dir) = stack.pop() {
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in read.flatten() {
            let path = entry.path();
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => stack.push(path),
                Ok(meta) => entries.push((path, meta.len(), meta.modified().ok())),
                Err(_) => {}
            }
        }
    }
    entries.sort();
    entries.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_look_like_lambdas() {
        let id = request_id();
        assert_eq!(id.len(), 36);
        assert_eq!(id.matches('-').count(), 4);
        assert_eq!(&id[14..15], "4");
        assert_ne!(request_id(), id);
    }

    fn function(dir: &Path, runtime: &str, handler: &str, timeout: u64) -> LocalFunction {
        LocalFunction {
            logical_id: "Fn1".into(),
            path: "S/Fn".into(),
            runtime: runtime.into(),
            handler: handler.into(),
            code: Code::Folder(dir.to_path_buf()),
            timeout,
            memory: 256,
            layers: vec![],
            external_layers: vec![],
            environment: Default::default(),
            function_name: None,
            image: false,
        }
    }

    fn aws() -> AwsVariables {
        AwsVariables {
            region: "eu-west-1".into(),
            account: "123456789012".into(),
            credentials: vec![],
        }
    }

    fn run(dir: &Path, runtime: &str, handler: &str, timeout: u64) -> Invocation {
        let variables = BTreeMap::from([("GREETING".to_string(), "hi".to_string())]);
        let invoker = LocalInvoker::new(
            function(dir, runtime, handler, timeout),
            variables,
            "my-fn".into(),
            &aws(),
        )
        .unwrap();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(invoker.invoke(&serde_json::json!({"n": 2}), "  "))
            .unwrap()
    }

    #[test]
    fn a_node_handler_runs_with_its_event_context_and_environment() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("index.js"),
            r#"
exports.ok = async (event, context) => ({
  n: event.n * 2, name: context.functionName, arn: context.invokedFunctionArn,
  memory: context.memoryLimitInMB, greeting: process.env.GREETING, region: process.env.AWS_REGION,
  remaining: context.getRemainingTimeInMillis() > 0,
});
exports.callback = (event, context, done) => { setTimeout(() => done(null, 'later'), 10); };
exports.boom = async () => { throw new TypeError('bad input'); };
exports.slow = () => new Promise(() => setInterval(() => {}, 1000));
"#,
        )
        .unwrap();
        let ok = run(dir.path(), "nodejs20.x", "index.ok", 3);
        assert!(!ok.error, "{}", ok.payload);
        let result: serde_json::Value = serde_json::from_str(&ok.payload).unwrap();
        assert_eq!(
            result,
            serde_json::json!({
                "n": 4, "name": "my-fn", "arn": "arn:aws:lambda:eu-west-1:123456789012:function:my-fn",
                "memory": "256", "greeting": "hi", "region": "eu-west-1", "remaining": true,
            })
        );
        assert_eq!(
            run(dir.path(), "nodejs20.x", "index.callback", 3).payload,
            "\"later\""
        );
        let boom = run(dir.path(), "nodejs20.x", "index.boom", 3);
        assert!(boom.error);
        let error: serde_json::Value = serde_json::from_str(&boom.payload).unwrap();
        assert_eq!(error["errorType"], "TypeError");
        assert_eq!(error["errorMessage"], "bad input");
        let slow = run(dir.path(), "nodejs20.x", "index.slow", 1);
        assert!(slow.error);
        assert!(
            slow.payload.contains("Task timed out after 1.00 seconds"),
            "{}",
            slow.payload
        );
        let missing = run(dir.path(), "nodejs20.x", "index.nothing", 3);
        assert!(
            missing.payload.contains("Runtime.HandlerNotFound"),
            "{}",
            missing.payload
        );
    }

    #[test]
    fn a_python_handler_runs_and_its_errors_are_lambdas() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(
            dir.path().join("pkg/app.py"),
            "import os, time\n\
             def ok(event, context):\n    return {'n': event['n'] + 1, 'name': context.function_name, 'greeting': os.environ['GREETING']}\n\
             def boom(event, context):\n    raise ValueError('no')\n\
             def slow(event, context):\n    time.sleep(30)\n",
        )
        .unwrap();
        let ok = run(dir.path(), "python3.11", "pkg/app.ok", 3);
        assert!(!ok.error, "{}", ok.payload);
        let result: serde_json::Value = serde_json::from_str(&ok.payload).unwrap();
        assert_eq!(
            result,
            serde_json::json!({"n": 3, "name": "my-fn", "greeting": "hi"})
        );
        let boom = run(dir.path(), "python3.11", "pkg/app.boom", 3);
        let error: serde_json::Value = serde_json::from_str(&boom.payload).unwrap();
        assert!(boom.error);
        assert_eq!(
            (error["errorType"].as_str(), error["errorMessage"].as_str()),
            (Some("ValueError"), Some("no"))
        );
        let slow = run(dir.path(), "python3.11", "pkg/app.slow", 1);
        assert!(
            slow.payload.contains("Task timed out after 1.00 seconds"),
            "{}",
            slow.payload
        );
        let missing = run(dir.path(), "python3.11", "nomodule.x", 3);
        assert!(
            missing.payload.contains("Runtime.ImportModuleError"),
            "{}",
            missing.payload
        );
    }

    #[test]
    fn a_folder_fingerprint_changes_when_a_file_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.js"), "a").unwrap();
        let before = fingerprint(dir.path());
        assert_eq!(before, fingerprint(dir.path()));
        std::fs::write(dir.path().join("index.js"), "ab").unwrap();
        assert_ne!(before, fingerprint(dir.path()));
    }
}
