//! `--container`: a function run in its runtime's Lambda base image with Docker, through the
//! image's Runtime Interface Emulator (`POST /2015-03-31/functions/function/invocations`). The
//! code folder is mounted on `/var/task`, the layers copied in order into one folder mounted on
//! `/opt`, as Lambda lays them out. A loopback `AWS_ENDPOINT_URL` is pointed at the host.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::function::{Code, LocalFunction};
use super::invoke::{request_id, AwsVariables, Invocation};
use super::runtime::{which, Runtime};
use super::LocalError;

/// The port the Runtime Interface Emulator listens on inside the image.
const RIE_PORT: &str = "8080/tcp";
/// How long the container may take to start answering.
const START_LIMIT: Duration = Duration::from_secs(30);

/// Docker's executable, once it is known to answer; the refusal otherwise.
pub async fn docker() -> Result<PathBuf, LocalError> {
    docker_on(&std::env::var("PATH").unwrap_or_default()).await
}

/// [`docker`] with the PATH to search.
async fn docker_on(path: &str) -> Result<PathBuf, LocalError> {
    let docker = which("docker", path)
        .ok_or_else(|| LocalError::NoDocker("there is no docker on PATH".into()))?;
    let answer = tokio::process::Command::new(&docker)
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .await
        .map_err(|err| LocalError::NoDocker(format!("{} cannot run: {err}", docker.display())))?;
    if !answer.status.success() {
        let said = String::from_utf8_lossy(&answer.stderr);
        return Err(LocalError::NoDocker(format!(
            "the Docker daemon does not answer ({})",
            said.lines().last().unwrap_or("no reason given").trim()
        )));
    }
    Ok(docker)
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// A loopback endpoint as the container reaches it.
fn from_container(value: &str) -> String {
    value
        .replace("://127.0.0.1", "://host.docker.internal")
        .replace("://localhost", "://host.docker.internal")
}

/// A function ready to run in its runtime's image.
pub struct ContainerInvoker {
    /// The function.
    pub function: LocalFunction,
    docker: PathBuf,
    image: String,
    task_root: PathBuf,
    variables: BTreeMap<String, String>,
    workdir: tempfile::TempDir,
}

impl ContainerInvoker {
    /// Prepares a function for the container path: its image, `/var/task` and `/opt`.
    pub fn new(
        docker: PathBuf,
        function: LocalFunction,
        variables: BTreeMap<String, String>,
        function_name: String,
        aws: &AwsVariables,
    ) -> Result<ContainerInvoker, LocalError> {
        let image =
            Runtime::image_of(&function.runtime).ok_or_else(|| LocalError::Unsupported {
                function: function.label(),
                runtime: format!(
                    "{} (no Lambda base image is known for it)",
                    function.runtime
                ),
                hint: "use a supported runtime".into(),
            })?;
        let io = |err: std::io::Error| LocalError::Io(format!("{}: {err}", function.label()));
        let workdir = tempfile::Builder::new()
            .prefix("cdkd-local-container-")
            .tempdir()
            .map_err(io)?;
        let task_root = match &function.code {
            Code::Folder(folder) => folder.clone(),
            Code::Zip(zip_file) => {
                let root = workdir.path().join("task");
                let file = std::fs::File::open(zip_file).map_err(io)?;
                zip::ZipArchive::new(file)
                    .and_then(|mut a| a.extract(&root))
                    .map_err(|err| LocalError::Io(format!("{}: {err}", zip_file.display())))?;
                root
            }
            Code::Inline(source) => {
                let root = workdir.path().join("task");
                std::fs::create_dir_all(&root).map_err(io)?;
                let file = if function.runtime.starts_with("python") {
                    "index.py"
                } else {
                    "index.js"
                };
                std::fs::write(root.join(file), source).map_err(io)?;
                root
            }
        };
        let opt = workdir.path().join("opt");
        std::fs::create_dir_all(&opt).map_err(io)?;
        // Extracted in order, a later layer overriding an earlier one, as Lambda does.
        for layer in &function.layers {
            copy_tree(layer, &opt).map_err(io)?;
        }
        let mut all = BTreeMap::new();
        for (name, value) in std::env::vars() {
            if name.starts_with("AWS_ENDPOINT_URL") {
                all.insert(name, from_container(&value));
            }
        }
        all.insert("AWS_REGION".into(), aws.region.clone());
        all.insert("AWS_DEFAULT_REGION".into(), aws.region.clone());
        all.insert("AWS_LAMBDA_FUNCTION_NAME".into(), function_name);
        all.insert(
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE".into(),
            function.memory.to_string(),
        );
        all.insert(
            "AWS_LAMBDA_FUNCTION_TIMEOUT".into(),
            function.timeout.to_string(),
        );
        for (name, value) in &aws.credentials {
            all.insert(name.clone(), value.clone());
        }
        all.extend(variables);
        Ok(ContainerInvoker {
            function,
            docker,
            image,
            task_root,
            variables: all,
            workdir,
        })
    }

    async fn docker_output(&self, args: &[&str]) -> Result<String, LocalError> {
        let output = tokio::process::Command::new(&self.docker)
            .args(args)
            .output()
            .await
            .map_err(|err| LocalError::Io(format!("docker {}: {err}", args[0])))?;
        if !output.status.success() {
            return Err(LocalError::Io(format!(
                "{}: docker {} failed: {}",
                self.function.label(),
                args[0],
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    }

    /// Runs the handler once in a fresh container.
    pub async fn invoke(
        &self,
        event: &serde_json::Value,
        prefix: &str,
    ) -> Result<Invocation, LocalError> {
        let request_id = request_id();
        let task = format!("{}:/var/task:ro", self.task_root.display());
        let opt = format!("{}:/opt:ro", self.workdir.path().join("opt").display());
        let mut args: Vec<String> = [
            "run",
            "-d",
            "--rm",
            "-p",
            "127.0.0.1::8080",
            "--add-host",
            "host.docker.internal:host-gateway",
            "-v",
            &task,
            "-v",
            &opt,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        // The variables (the caller's credentials among them) go through an env file only this
        // user can read, deleted once the container exists: not on docker's command line, which
        // `ps` shows to every user, and not in docker's own environment, where a template's
        // variable (DOCKER_HOST, LD_PRELOAD, a proxy) would steer the docker CLI itself.
        let env_file = self.write_env_file(&request_id)?;
        args.push("--env-file".into());
        args.push(env_file.display().to_string());
        args.push(self.image.clone());
        args.push(self.function.handler.clone());
        let borrowed: Vec<&str> = args.iter().map(String::as_str).collect();
        eprintln!(
            "{prefix}START RequestId: {request_id} Version: $LATEST ({})",
            self.image
        );
        let started = Instant::now();
        let created = self.docker_output(&borrowed).await;
        let _ = std::fs::remove_file(&env_file);
        let id = created?;
        let outcome = self.call(&id, event).await;
        if let Ok(logs) = self.docker_output(&["logs", &id]).await {
            for line in logs.lines() {
                eprintln!("{prefix}{line}");
            }
        }
        let _ = self.docker_output(&["rm", "-f", &id]).await;
        let (error, payload) = outcome?;
        eprintln!("{prefix}END RequestId: {request_id}");
        Ok(Invocation {
            request_id,
            payload,
            error,
            duration: started.elapsed(),
        })
    }

    /// Writes the container's variables as a docker env file (mode 0600) in the private work
    /// folder. Docker's env files hold one `NAME=VALUE` per line, so a value with a line break
    /// is refused by name.
    fn write_env_file(&self, request_id: &str) -> Result<PathBuf, LocalError> {
        let mut text = String::new();
        for (name, value) in &self.variables {
            if value.contains(['\n', '\r']) || name.contains(['\n', '\r', '=']) {
                return Err(LocalError::Io(format!(
                    "{}: the environment variable {name} has a line break or '=' where docker's env file cannot carry one; --container cannot pass it",
                    self.function.label()
                )));
            }
            text.push_str(&format!("{name}={value}\n"));
        }
        let path = self.workdir.path().join(format!("env-{request_id}"));
        let io = |err: std::io::Error| LocalError::Io(format!("{}: {err}", path.display()));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&path).map_err(io)?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(io)?;
        Ok(path)
    }

    async fn call(
        &self,
        id: &str,
        event: &serde_json::Value,
    ) -> Result<(bool, String), LocalError> {
        let port = self.docker_output(&["port", id, RIE_PORT]).await?;
        let address = port.lines().next().unwrap_or_default().to_string();
        let deadline = Instant::now() + START_LIMIT + Duration::from_secs(self.function.timeout);
        let body = event.to_string();
        loop {
            match super::server::post(
                &address,
                "/2015-03-31/functions/function/invocations",
                body.as_bytes(),
            )
            .await
            {
                Ok((_, headers, answer)) => {
                    let text = String::from_utf8_lossy(&answer).into_owned();
                    let error = headers
                        .iter()
                        .any(|(k, _)| k.eq_ignore_ascii_case("x-amz-function-error"))
                        || serde_json::from_str::<serde_json::Value>(&text).is_ok_and(|v| {
                            v.get("errorType").is_some() && v.get("errorMessage").is_some()
                        });
                    return Ok((error, text));
                }
                Err(err) if Instant::now() < deadline => {
                    tracing::debug!("the container is not answering yet: {err}");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(err) => {
                    return Err(LocalError::Io(format!(
                        "{}: the container at {address} did not answer: {err}",
                        self.function.label()
                    )))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn without_docker_on_path_the_container_path_is_refused() {
        let empty = tempfile::tempdir().unwrap();
        let refused = docker_on(&empty.path().display().to_string())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("--container") && refused.contains("no docker on PATH"),
            "{refused}"
        );
        assert!(refused.contains("without --container"), "{refused}");
    }

    #[test]
    fn a_loopback_endpoint_points_at_the_host() {
        assert_eq!(
            from_container("http://127.0.0.1:4566"),
            "http://host.docker.internal:4566"
        );
        assert_eq!(
            from_container("https://sqs.us-east-1.amazonaws.com"),
            "https://sqs.us-east-1.amazonaws.com"
        );
    }
}
