//! `dist.sh` then `install.sh ARCHIVE PREFIX`: an archive installs without compiling, the
//! installed `cdkd` finds its pinned (and, on Linux, gzip-compressed) plugins by itself from any
//! folder and deploys through them, and a user plugins file that replaces one of them is
//! announced on every run.
//!
//! The archive holds the debug build of four plugins (`dist.sh --profile debug --plugins`):
//! the layout, the pins and the lookup are a release archive's, and the suite has already built
//! them; all 31 debug plugins would take ~1.4 GB of disk three times over.

use std::path::Path;
use std::process::Command;

use cdkd_tests::{copy_dir, workspace_root, Emulator, Run};
use serde_json::Value;

const PLUGINS: [&str; 4] = ["sqs", "sns", "ssm", "iam"];

/// `bash script args...` from the workspace, failing the test with its output.
fn script(script: &str, args: &[&str]) -> String {
    let output = Command::new("bash")
        .arg(workspace_root().join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{script} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The installed binary, run in `cwd` with the emulator's settings and `home` as its user's
/// configuration and cache folders.
fn installed(prefix: &Path, cwd: &Path, home: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(prefix.join("bin/cdkd"));
    command
        .current_dir(cwd)
        .args(args)
        .env_remove("CDKD_PLUGINS");
    for (key, value) in Emulator::shared().env() {
        command.env(key, value);
    }
    command
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("CDKD_CACHE_DIR", home.join("cache"));
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
fn an_archive_installs_without_compiling_and_its_cdkd_deploys_through_its_plugins() {
    // Inside the target folder, not /tmp: a CI machine's /tmp may be small.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = dir.path().join("dist").display().to_string();
    let archive = script(
        "dist.sh",
        &[
            "--profile",
            "debug",
            "--out",
            &out,
            "--plugins",
            &PLUGINS.join(","),
        ],
    );
    let archive = archive.lines().last().unwrap().to_string();
    let name = Path::new(&archive).file_name().unwrap().to_string_lossy();
    assert!(
        name.starts_with("cdkd-") && name.ends_with(".tar.gz"),
        "{archive}"
    );

    let prefix = dir.path().join("prefix");
    let said = script("install.sh", &[&archive, &prefix.display().to_string()]);
    assert!(said.contains("and 4 plugins"), "{said}");
    for file in [
        "bin/cdkd",
        "lib/cdkd/plugins.toml",
        "share/bash-completion/completions/cdkd",
        "share/zsh/site-functions/_cdkd",
        "share/fish/vendor_completions.d/cdkd.fish",
        "share/man/man1/cdkd.1",
        "share/man/man1/cdkd-deploy.1",
    ] {
        assert!(prefix.join(file).is_file(), "{file} was not installed");
    }
    let pinned = std::fs::read_to_string(prefix.join("lib/cdkd/plugins.toml")).unwrap();
    assert_eq!(pinned.matches("sha256 = \"").count(), 4, "{pinned}");
    assert!(!pinned.contains("locked_from"), "{pinned}");

    // From a folder with no plugins.toml: the install's own file, every plugin ready.
    let home = dir.path().join("home");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let list = installed(&prefix, &elsewhere, &home, &["providers", "list", "--json"])
        .success()
        .json();
    assert_eq!(list["pluginsFileSource"], "bundled", "{list:#}");
    assert_eq!(
        list["pluginsFile"],
        Value::from(prefix.join("lib/cdkd/plugins.toml").display().to_string())
    );
    assert_eq!(list["plugins"].as_array().unwrap().len(), 4, "{list:#}");
    for name in PLUGINS {
        let entry = plugin(&list, name);
        assert_eq!(entry["status"], "ready", "{entry:#}");
        let path = entry["path"].as_str().unwrap();
        assert!(
            path.starts_with(&prefix.join("lib/cdkd/plugins").display().to_string()),
            "{entry:#}"
        );
        // Stored compressed on Linux, inflated into memory when loaded.
        if cfg!(target_os = "linux") {
            assert!(path.ends_with(".so.gz"), "{path}");
        }
    }
    installed(
        &prefix,
        &elsewhere,
        &home,
        &["providers", "list", "--verify"],
    )
    .success();

    // The synthetic stack of queues, topics, parameters and roles deploys through them.
    let app = dir.path().join("soak");
    std::fs::create_dir_all(&app).unwrap();
    copy_dir(&workspace_root().join("tests/fixtures/cdk.out/soak"), &app);
    let app = app.display().to_string();
    let bucket = Emulator::unique("install");
    let with_bucket = |args: &[&str]| {
        let mut all = vec!["--state-bucket", bucket.as_str()];
        all.extend_from_slice(args);
        installed(&prefix, &elsewhere, &home, &all)
    };
    with_bucket(&["bootstrap", "--no-assets"]).success();
    with_bucket(&["deploy", "-a", &app]).success();
    let state = with_bucket(&["state", "show", "SoakStack", "--json"])
        .success()
        .json();
    let resources = state["state"]["resources"].as_object().unwrap();
    assert!(resources.len() >= 40, "{state:#}");
    for (id, resource) in resources {
        assert_eq!(resource["provisionedBy"], "sdk", "{id}: {resource:#}");
    }
    with_bucket(&["destroy", "-a", &app, "--force"]).success();

    // A user's file that replaces an installed plugin by name says so on every run.
    let user_file = home.join("config/cdkd/plugins.toml");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(
        &user_file,
        "[[plugin]]\nname = \"sqs\"\npath = \"/nowhere/libsqs.so\"\nenabled = false\n",
    )
    .unwrap();
    for _ in 0..2 {
        let run = installed(&prefix, &elsewhere, &home, &["providers", "list"]).success();
        assert!(
            run.stderr.contains(&format!(
                "plugin 'sqs' of {} disables the bundled one",
                user_file.display()
            )),
            "{}",
            run.stderr
        );
    }

    // A damaged download is refused before anything is copied.
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&unpacked)
        .arg("-xzf")
        .arg(&archive)
        .status()
        .unwrap();
    assert!(tar.success());
    let folder = unpacked.join(name.trim_end_matches(".tar.gz"));
    let library = std::fs::read_dir(folder.join("lib/cdkd/plugins"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&library).unwrap();
    bytes[1000] ^= 1;
    std::fs::write(&library, bytes).unwrap();
    let other = dir.path().join("other-prefix");
    let refused = Command::new("bash")
        .arg(folder.join("install.sh"))
        .arg(&folder)
        .arg(&other)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("does not match its SHA256SUMS"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!other.join("bin/cdkd").exists());
}
