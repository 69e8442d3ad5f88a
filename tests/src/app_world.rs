//! A fixture app (tests/fixtures/cdk.out/app by default) copied to a temporary assembly, with
//! its own state and asset buckets and echo folder in the shared emulator: the one world the
//! end-to-end tests deploy in.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::{cdkd_binary, workspace_root, Emulator, Run};

/// One test's copy of the app fixture and its buckets.
pub struct AppWorld {
    /// The state bucket.
    pub bucket: String,
    /// cdkd's asset bucket (bootstrapped).
    pub assets: String,
    /// The assembly, edited by the test.
    pub assembly: tempfile::TempDir,
    /// Where the example-echo plugin writes (`CDKD_ECHO_DIR`).
    pub echo: tempfile::TempDir,
    /// The stack whose template [`AppWorld::edit`] changes.
    stack: String,
    /// The plugins file layered over the bundled one (`CDKD_PLUGINS`).
    plugins: std::path::PathBuf,
}

/// How a world bootstraps its state bucket.
enum Bootstrap {
    WithAssetBucket,
    NoAssets,
}

impl AppWorld {
    /// Copies the fixture, lets `prepare` edit AppStack's template, and bootstraps with an
    /// asset bucket; bucket names start with `prefix`.
    pub fn new(prefix: &str, prepare: impl FnOnce(&mut Value)) -> AppWorld {
        AppWorld::of("app", "AppStack", prefix, prepare)
    }

    /// The same for the fixture `tests/fixtures/cdk.out/{fixture}`, editing `stack`.
    pub fn of(
        fixture: &str,
        stack: &str,
        prefix: &str,
        prepare: impl FnOnce(&mut Value),
    ) -> AppWorld {
        AppWorld::build(fixture, stack, prefix, prepare, Bootstrap::WithAssetBucket)
    }

    /// The fixture as synthesized, bootstrapped without an asset bucket (`--no-assets`).
    pub fn without_assets(fixture: &str, stack: &str, prefix: &str) -> AppWorld {
        AppWorld::build(fixture, stack, prefix, |_| {}, Bootstrap::NoAssets)
    }

    /// The fixture `tests/fixtures/cdk.out/{fixture}` as synthesized (several stacks, or
    /// stacks inside stages).
    pub fn unedited(fixture: &str, prefix: &str) -> AppWorld {
        AppWorld::build(fixture, "", prefix, |_| {}, Bootstrap::WithAssetBucket)
    }

    fn build(
        fixture: &str,
        stack: &str,
        prefix: &str,
        prepare: impl FnOnce(&mut Value),
        bootstrap: Bootstrap,
    ) -> AppWorld {
        let world = AppWorld {
            bucket: Emulator::unique(prefix),
            assets: Emulator::unique(&format!("{prefix}-assets")),
            assembly: tempfile::tempdir().unwrap(),
            echo: tempfile::tempdir().unwrap(),
            stack: stack.to_string(),
            plugins: crate::test_plugins_file(),
        };
        copy_dir(
            &workspace_root()
                .join("tests/fixtures/cdk.out")
                .join(fixture),
            world.assembly.path(),
        );
        if !stack.is_empty() {
            world.edit(prepare);
        }
        match bootstrap {
            Bootstrap::WithAssetBucket => world
                .cdkd(&["bootstrap", "--asset-bucket", &world.assets])
                .success(),
            Bootstrap::NoAssets => world.cdkd(&["bootstrap", "--no-assets"]).success(),
        };
        world
    }

    /// The same world with the service plugins off: its queues, topics, parameters, log groups
    /// and tables go to Cloud Control (for tests whose subject is the Cloud Control path).
    pub fn on_cloud_control(mut self) -> AppWorld {
        self.plugins = crate::cloud_control_plugins_file();
        self
    }

    /// The `cdkd` command against the emulator with this world's state bucket, echo folder, the
    /// bundled plugins and the test plugin (to spawn, kill or give more environment).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(cdkd_binary());
        command
            .current_dir(workspace_root())
            .args(["--state-bucket", &self.bucket])
            .args(args)
            // Runs as on a developer's machine whether or not the tests run in CI: a test that
            // wants CI's behaviour sets `CI` itself.
            .env_remove("CI")
            .env_remove("STATE_BUCKET")
            .env_remove("STATE_PREFIX")
            .env("CDKD_PLUGINS", &self.plugins)
            .env("CDKD_ECHO_DIR", self.echo.path());
        for (key, value) in Emulator::shared().env() {
            command.env(key, value);
        }
        command
    }

    /// Runs cdkd against the emulator with this world's state bucket, the bundled plugins and the
    /// test plugin.
    pub fn cdkd(&self, args: &[&str]) -> Run {
        self.cdkd_with_env(args, &[])
    }

    /// [`AppWorld::cdkd`] with more environment variables.
    pub fn cdkd_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = self.command(args);
        command.envs(env.iter().copied());
        command.output().unwrap().into()
    }

    /// Runs `cdkd <args>` and `kill -9`s it once `progress` (a count of the emulator's calls
    /// since its stats were cleared here) reaches `calls`, then waits until the emulator has
    /// answered what it had in flight. Panics if the command ends first or `progress` stalls.
    pub fn kill_after(&self, args: &[&str], calls: u64, progress: impl Fn() -> u64) {
        let emulator = Emulator::shared();
        emulator.delete("/_emulator/stats");
        let mut child = self
            .command(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
        while progress() < calls {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "cdkd {args:?} ended ({status}) before {calls} calls; stats {}",
                    emulator.get("/_emulator/stats")
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "cdkd {args:?}: fewer than {calls} calls in 90 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        emulator.settle();
    }

    /// `cdkd deploy -a <this world's assembly>` with `extra` arguments.
    pub fn deploy(&self, extra: &[&str]) -> Run {
        let app = self.assembly.path().display().to_string();
        let mut args = vec!["deploy", "-a", &app];
        args.extend_from_slice(extra);
        self.cdkd(&args)
    }

    /// Edits the stack's template in place.
    pub fn edit(&self, change: impl FnOnce(&mut Value)) {
        let path = self
            .assembly
            .path()
            .join(format!("{}.template.json", self.stack));
        let mut template: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(&mut template);
        std::fs::write(&path, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
    }

    /// The world's stack's state record (`null` when there is none).
    pub fn state(&self) -> Value {
        let run = self.cdkd(&["state", "show", &self.stack, "--json"]);
        if run.code == Some(0) {
            run.json()["state"].clone()
        } else {
            Value::Null
        }
    }

    /// The physical id recorded for `logical_id` in the world's stack (empty when none).
    pub fn physical(&self, logical_id: &str) -> String {
        self.state()["resources"][logical_id]["physicalId"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The state record's resources of `stack`.
    pub fn resources(&self, stack: &str) -> Value {
        self.cdkd(&["state", "show", stack, "--json"])
            .success()
            .json()["state"]["resources"]
            .clone()
    }

    /// The logical ids of `stack`'s recorded resources that no plugin provisioned (Cloud
    /// Control's), in record order.
    pub fn off_plugins(&self, stack: &str) -> Vec<String> {
        let resources = self.resources(stack);
        resources
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(_, r)| r["provisionedBy"] != "sdk")
            .map(|(id, _)| id.clone())
            .collect()
    }
}

/// Copies a folder tree.
pub fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
