//! The harness cdkd's end-to-end tests share: where the binary and plugins are, how to build
//! the fixture plugins, and how to run `cdkd` with a plugins file.
//!
//! Most tests drive the real `cdkd` binary built by `cargo build --workspace`; the state-layer
//! suites (`state`, `state_faults`, `state_commands`, `analysis`) and the plugin-boundary suite
//! call the host library and the provider API in-process.

pub mod app_world;
pub mod emulator;
pub mod state_world;
pub mod terminal;

pub use app_world::{copy_dir, AppWorld};
pub use emulator::Emulator;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Holds the tests of one binary to one at a time while the guard lives: a test that counts the
/// emulator's calls ([`Emulator::calls`]) must not see another test's. Each e2e binary links its
/// own harness, so the binaries still run side by side.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Polls `probe` until it answers, at most `timeout`; fails the test naming `what` otherwise.
/// Waits grow from 10 ms to 200 ms, so a quick condition is seen at once and a slow one does
/// not hammer what it polls.
pub fn wait_for<T>(what: &str, timeout: Duration, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(10);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// [`wait_for`] for async probes.
pub async fn wait_for_async<T, F, Fut>(what: &str, timeout: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(10);
    loop {
        if let Some(found) = probe().await {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

/// The workspace root (the folder holding `Cargo.lock`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// The cargo target folder the workspace builds into.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The debug build output folder.
pub fn debug_dir() -> PathBuf {
    target_dir().join("debug")
}

/// The `cdkd` binary; the tests need `cargo build --workspace` to have run. Its bundled
/// plugins file (`target/debug/plugins.toml`) is locked from the workspace's `plugins.toml`
/// first when it is missing or older than a library or the workspace's file.
pub fn cdkd_binary() -> PathBuf {
    let path = debug_dir().join("cdkd");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` before the end-to-end tests",
        path.display()
    );
    static LOCKED: std::sync::Once = std::sync::Once::new();
    LOCKED.call_once(|| lock_bundled_plugins(&path));
    path
}

/// Writes `target/debug/plugins.toml` with `cdkd providers lock` unless it is newer than the
/// workspace's file and every library it pins.
fn lock_bundled_plugins(cdkd: &Path) {
    let bundled = debug_dir().join("plugins.toml");
    let source = workspace_root().join("plugins.toml");
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let fresh = modified(&bundled).is_some_and(|locked| {
        let text = std::fs::read_to_string(&bundled).unwrap_or_default();
        let libraries = text.lines().filter_map(|line| {
            let path = line.strip_prefix("path = \"")?.strip_suffix('"')?;
            Some(debug_dir().join(path))
        });
        modified(&source).is_some_and(|m| m <= locked)
            && libraries
                .into_iter()
                .all(|library| modified(&library).is_some_and(|m| m <= locked))
    });
    if fresh {
        return;
    }
    let output = Command::new(cdkd)
        .args(["providers", "lock"])
        .arg(&source)
        .arg("--output")
        .arg(&bundled)
        .output()
        .expect("cdkd runs");
    assert!(
        output.status.success(),
        "cdkd providers lock failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Trusts `file` for the tests' `XDG_CONFIG_HOME` (`target/test-config`), as a user would
/// with `cdkd providers trust`, and returns it.
pub fn trusted(file: PathBuf) -> PathBuf {
    trust_in(&file, &target_dir().join("test-config"));
    file
}

/// `cdkd providers trust file` with `config` as `XDG_CONFIG_HOME`.
pub fn trust_in(file: &Path, config: &Path) {
    let output = Command::new(cdkd_binary())
        .args(["providers", "trust"])
        .arg(file)
        .env("XDG_CONFIG_HOME", config)
        .output()
        .expect("cdkd runs");
    assert!(
        output.status.success(),
        "cdkd providers trust {} failed:\n{}",
        file.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The file a cdylib crate builds to on this platform (`libNAME.so` on Linux).
pub fn library_file(lib_name: &str) -> String {
    cdkd_provider_api::host::library_file_name(lib_name, std::env::consts::OS)
}

/// A workspace plugin's shared library, e.g. `plugin_library("cdkd_provider_example_echo")`.
pub fn plugin_library(lib_name: &str) -> PathBuf {
    let path = debug_dir().join(library_file(lib_name));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --workspace` before the end-to-end tests",
        path.display()
    );
    path
}

static CARGO: Mutex<()> = Mutex::new(());

/// Builds `package` of the cargo workspace at `manifest` into the shared target folder, so its
/// dependencies are the ones already compiled, and returns the path of its `.so`.
pub fn build_plugin(manifest: &Path, package: &str) -> PathBuf {
    let _one_at_a_time = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--quiet", "--manifest-path"])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir())
        .args(["-p", package])
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "building {package} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lib = debug_dir().join(library_file(package));
    assert!(lib.is_file(), "{} was not produced", lib.display());
    lib
}

/// Builds a plugin of the compatibility fixtures (tests/fixtures/plugins).
pub fn fixture_plugin(package: &str) -> PathBuf {
    build_plugin(
        &workspace_root().join("tests/fixtures/plugins/Cargo.toml"),
        package,
    )
}

/// Copies `library` into `dir` under `name`, so later rebuilds cannot change what a test loads.
pub fn snapshot(library: &Path, dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("snapshot folder");
    let copy = dir.join(name);
    std::fs::copy(library, &copy).expect("copy the plugin");
    copy
}

/// One `[[plugin]]` entry of a plugins file written by a test.
pub struct PluginEntry<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its `.so`.
    pub path: &'a Path,
    /// Its version requirement.
    pub version: &'a str,
}

/// Writes a plugins file into `dir`, trusts it ([`trusted`]) and returns its path.
pub fn write_plugins_file(dir: &Path, entries: &[PluginEntry<'_>], extra: &str) -> PathBuf {
    // Exactly these plugins: the bundled file (and a user's) are not layered under it.
    let mut text = String::from("inherit = false\n\n");
    for entry in entries {
        text.push_str(&format!(
            "[[plugin]]\nname = \"{}\"\npath = \"{}\"\nversion = \"{}\"\n\n",
            entry.name,
            entry.path.display(),
            entry.version
        ));
    }
    text.push_str(extra);
    let path = dir.join("plugins.toml");
    std::fs::write(&path, text).expect("write plugins.toml");
    trusted(path)
}

/// A plugins file that layers the example plugin (`Acme::Echo::Thing`, `Acme::Echo::Pair`) and
/// the test plugin (`tests/fixtures/plugins/test-faults`, type `Acme::Echo::Fault`) over the
/// bundled plugins, as a team's own plugins would be; trusted ([`trusted`]).
pub fn test_plugins_file() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let path = target_dir().join("test-plugins.toml");
        let text = format!(
            "# Written by cdkd's test harness.\n\
             [[plugin]]\nname = \"example-echo\"\npath = \"{}\"\nversion = \"^2\"\n\n\
             [[plugin]]\nname = \"test-faults\"\npath = \"{}\"\nversion = \"^1\"\n",
            plugin_library("cdkd_provider_example_echo").display(),
            plugin_library("cdkd_test_faults").display()
        );
        place(&path, &text);
        trusted(path)
    })
    .clone()
}

/// Writes `text` to `path` beside and renames it: test processes may race to write it.
fn place(path: &Path, text: &str) {
    let draft = path.with_extension(format!("draft.{}", std::process::id()));
    std::fs::write(&draft, text).expect("write a plugins file");
    std::fs::rename(&draft, path).expect("place a plugins file");
}

/// The bundled plugins for the services whose types Cloud Control also provisions; a test whose
/// subject is the Cloud Control path turns them off ([`cloud_control_plugins_file`]).
pub const SERVICE_PLUGINS: &[&str] = &[
    "sqs",
    "sns",
    "ssm",
    "logs",
    "dynamodb",
    "events",
    "kms",
    "secretsmanager",
    "stepfunctions",
    "kinesis",
    "cloudwatch",
    "scheduler",
    "route53",
    "acm",
];

/// [`test_plugins_file`] with the bundled [`SERVICE_PLUGINS`] disabled, so queues, topics,
/// parameters, log groups and tables go to Cloud Control, as for a type no plugin handles.
pub fn cloud_control_plugins_file() -> PathBuf {
    static FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let bundled = std::fs::read_to_string(workspace_root().join("plugins.toml"))
            .expect("read the bundled plugins.toml");
        let mut text = std::fs::read_to_string(test_plugins_file()).expect("test plugins file");
        for name in SERVICE_PLUGINS {
            // Only the ones the bundled file loads: a disabled entry still names a library.
            if bundled.contains(&format!("name = \"{name}\"")) {
                let library = plugin_library(&format!("cdkd_provider_{name}"));
                text.push_str(&format!(
                    "[[plugin]]\nname = \"{name}\"\npath = \"{}\"\nenabled = false\n",
                    library.display()
                ));
            }
        }
        let path = target_dir().join("cloud-control-plugins.toml");
        place(&path, &text);
        trusted(path)
    })
    .clone()
}

/// A finished `cdkd` run.
pub struct Run {
    /// The exit code (`None` when killed by a signal: a crash).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Parses stdout as JSON, failing the test with both streams when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|err| {
            panic!(
                "stdout is not JSON ({err}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts exit code 0.
    pub fn success(self) -> Run {
        assert_eq!(
            self.code,
            Some(0),
            "cdkd failed:\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Runs `cdkd args...` against `emulator` (plugins: the bundled file).
pub fn cdkd_on(emulator: &Emulator, args: &[&str]) -> Run {
    cdkd_on_with_env(emulator, args, &[])
}

/// Like [`cdkd_on`], with extra environment variables.
pub fn cdkd_on_with_env(emulator: &Emulator, args: &[&str], extra: &[(&str, &str)]) -> Run {
    let env = emulator.env();
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    cdkd_with_env(None, args, &all)
}

/// Runs `cdkd args...` with `plugins` as its plugins file (none: the bundled one, found from
/// the workspace root), fixed fake credentials and region, and no AWS endpoint of its own.
pub fn cdkd(plugins: Option<&Path>, args: &[&str]) -> Run {
    cdkd_with_env(plugins, args, &[])
}

/// Like [`cdkd`], with extra environment variables.
pub fn cdkd_with_env(plugins: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(cdkd_binary());
    command
        .current_dir(workspace_root())
        .args(args)
        .env_remove("CDKD_PLUGINS")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("CDKD_STATE_BUCKET")
        .env_remove("STATE_BUCKET")
        .env_remove("STATE_PREFIX")
        .env_remove("CDKD_S3_FORCE_PATH_STYLE")
        // As on a developer's machine, in CI too: a test that wants CI's behaviour sets `CI`.
        .env_remove("CI")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env("CDKD_REQUIRE_APPROVAL", "never")
        // No user plugins file of whoever runs the tests.
        .env("XDG_CONFIG_HOME", target_dir().join("test-config"))
        // Manifests and schemas cached per test process, inside the checkout.
        .env(
            "CDKD_CACHE_DIR",
            target_dir()
                .join("test-cache")
                .join(std::process::id().to_string()),
        );
    if let Some(plugins) = plugins {
        command.env("CDKD_PLUGINS", plugins);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().expect("cdkd runs").into()
}

/// The first resource of type `kind` in a state record (`state show --json`'s `state`).
pub fn resource_of_type<'a>(state: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
    state["resources"]
        .as_object()
        .unwrap_or_else(|| panic!("no resources in {state}"))
        .values()
        .find(|r| r["resourceType"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {state}"))
}
