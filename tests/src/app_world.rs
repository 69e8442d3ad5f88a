//! A fixture app (tests/fixtures/cdk.out/app by default) copied to a temporary assembly, with
//! its own state and asset buckets in the shared emulator: what the SDK plugin tests deploy.

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
    /// The stack whose template [`AppWorld::edit`] changes.
    stack: String,
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
        let world = AppWorld {
            bucket: Emulator::unique(prefix),
            assets: Emulator::unique(&format!("{prefix}-assets")),
            assembly: tempfile::tempdir().unwrap(),
            stack: stack.to_string(),
        };
        copy_dir(
            &workspace_root()
                .join("tests/fixtures/cdk.out")
                .join(fixture),
            world.assembly.path(),
        );
        world.edit(prepare);
        world
            .cdkd(&["bootstrap", "--asset-bucket", &world.assets])
            .success();
        world
    }

    /// The fixture `tests/fixtures/cdk.out/{fixture}` as synthesized (several stacks, or
    /// stacks inside stages).
    pub fn unedited(fixture: &str, prefix: &str) -> AppWorld {
        let world = AppWorld {
            bucket: Emulator::unique(prefix),
            assets: Emulator::unique(&format!("{prefix}-assets")),
            assembly: tempfile::tempdir().unwrap(),
            stack: String::new(),
        };
        copy_dir(
            &workspace_root()
                .join("tests/fixtures/cdk.out")
                .join(fixture),
            world.assembly.path(),
        );
        world
            .cdkd(&["bootstrap", "--asset-bucket", &world.assets])
            .success();
        world
    }

    /// Runs cdkd against the emulator with this world's state bucket and the bundled plugins.
    pub fn cdkd(&self, args: &[&str]) -> Run {
        self.cdkd_with_env(args, &[])
    }

    /// [`AppWorld::cdkd`] with more environment variables.
    pub fn cdkd_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(cdkd_binary());
        command
            .current_dir(workspace_root())
            .args(["--state-bucket", &self.bucket])
            .args(args)
            .env_remove("CDKD_PLUGINS");
        for (key, value) in Emulator::shared().env() {
            command.env(key, value);
        }
        command.envs(env.iter().copied());
        command.output().unwrap().into()
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

    /// The state record's resources of `stack`.
    pub fn resources(&self, stack: &str) -> Value {
        self.cdkd(&["state", "show", stack, "--json"])
            .success()
            .json()["state"]["resources"]
            .clone()
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
