//! `install.sh PREFIX`: the installed `cdkd` finds its bundled plugins by itself, from any
//! directory, and deploys the demo app against the emulator; a user plugins file swaps one
//! plugin for another build without touching the install.
//!
//! The test installs the debug build (`CDKD_INSTALL_PROFILE=debug`): the layout and the lookup
//! are the same as a release install's, and the suite has already built it.

use std::path::Path;
use std::process::Command;

use cdkd_tests::{copy_dir, fixture_plugin, snapshot, workspace_root, Emulator, Run};
use serde_json::Value;

/// The installed binary, run in `cwd` with the emulator's settings and `config` as
/// `$XDG_CONFIG_HOME`.
fn installed(prefix: &Path, cwd: &Path, config: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(prefix.join("bin/cdkd"));
    command
        .current_dir(cwd)
        .args(args)
        .env_remove("CDKD_PLUGINS");
    for (key, value) in Emulator::shared().env() {
        command.env(key, value);
    }
    command.env("XDG_CONFIG_HOME", config);
    command.output().unwrap().into()
}

fn plugin<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no plugin {name} in {list:#}"))
}

#[test]
fn the_installed_cdkd_finds_its_plugins_and_a_user_file_swaps_one() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    let install = Command::new("bash")
        .arg(workspace_root().join("install.sh"))
        .arg(&prefix)
        .env("CDKD_INSTALL_PROFILE", "debug")
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let elsewhere = dir.path().join("elsewhere");
    let config = dir.path().join("config");
    std::fs::create_dir_all(&elsewhere).unwrap();

    // Every bundled plugin, loaded from the install, from a directory with no plugins.toml.
    let bundled: Vec<String> = std::fs::read_to_string(workspace_root().join("plugins.toml"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.strip_prefix("name = \"")?
                .strip_suffix('"')
                .map(str::to_string)
        })
        .collect();
    let list = installed(
        &prefix,
        &elsewhere,
        &config,
        &["providers", "list", "--json"],
    )
    .success()
    .json();
    let installed_file = prefix.join("lib/cdkd/plugins.toml");
    assert_eq!(list["pluginsFileSource"], "bundled", "{list:#}");
    assert_eq!(
        list["pluginsFile"],
        Value::from(installed_file.display().to_string())
    );
    assert_eq!(list["plugins"].as_array().unwrap().len(), bundled.len());
    for name in &bundled {
        let entry = plugin(&list, name);
        assert_eq!(entry["status"], "loaded", "{entry:#}");
        let path = entry["path"].as_str().unwrap();
        assert!(
            path.starts_with(&prefix.join("lib/cdkd/plugins").display().to_string()),
            "{path}"
        );
    }

    // The demo app deploys with the installed binary.
    let app = dir.path().join("demo");
    std::fs::create_dir_all(&app).unwrap();
    copy_dir(&workspace_root().join("tests/fixtures/cdk.out/demo"), &app);
    let bucket = Emulator::unique("install");
    let echo = dir.path().join("echo");
    let app_arg = app.display().to_string();
    let with_echo = |args: &[&str]| {
        let mut command = Command::new(prefix.join("bin/cdkd"));
        command
            .current_dir(&elsewhere)
            .args(["--state-bucket", &bucket])
            .args(args)
            .env_remove("CDKD_PLUGINS")
            .env("CDKD_ECHO_DIR", &echo);
        for (key, value) in Emulator::shared().env() {
            command.env(key, value);
        }
        command.env("XDG_CONFIG_HOME", &config);
        Run::from(command.output().unwrap())
    };
    with_echo(&["bootstrap", "--no-assets"]).success();
    let deployed = with_echo(&["deploy", "-a", &app_arg]).success();
    assert!(
        deployed.stdout.contains("DemoStack: 5 created"),
        "{}",
        deployed.stdout
    );
    with_echo(&["destroy", "-a", &app_arg, "--force"]).success();

    // A user plugins file swaps example-echo for another build; the install is untouched.
    let other = snapshot(
        &fixture_plugin("cdkd-provider-legacy-echo"),
        dir.path(),
        "libother-echo.so",
    );
    std::fs::create_dir_all(config.join("cdkd")).unwrap();
    let user_file = config.join("cdkd/plugins.toml");
    std::fs::write(
        &user_file,
        format!(
            "[[plugin]]\nname = \"example-echo\"\npath = \"{}\"\nversion = \"^0.9\"\n",
            other.display()
        ),
    )
    .unwrap();
    let before = std::fs::read(&installed_file).unwrap();
    let list = installed(
        &prefix,
        &elsewhere,
        &config,
        &["providers", "list", "--json"],
    )
    .success()
    .json();
    let echo_entry = plugin(&list, "example-echo");
    assert_eq!(echo_entry["status"], "loaded", "{echo_entry:#}");
    assert_eq!(echo_entry["version"], "0.9.0");
    assert_eq!(
        echo_entry["file"],
        Value::from(user_file.display().to_string())
    );
    assert_eq!(
        plugin(&list, "s3")["file"],
        Value::from(installed_file.display().to_string())
    );
    assert_eq!(
        list["pluginsFiles"].as_array().unwrap().len(),
        2,
        "{list:#}"
    );
    assert_eq!(std::fs::read(&installed_file).unwrap(), before);
}
