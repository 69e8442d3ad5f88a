//! Plugins a user did not trust never run: a project's `plugins.toml` is skipped until
//! `cdkd providers trust`, a library is checked against its pin before the dynamic loader maps
//! it, and a changed library or a wrong pin in the install's own file is refused by name.
//!
//! The hostile library is the test plugin (`tests/fixtures/plugins/test-faults`), whose
//! constructor appends to `CDKD_TEST_LOAD_MARKER` the moment it is mapped, before any check of
//! its ABI could refuse it.

use std::path::{Path, PathBuf};
use std::process::Command;

use cdkd_tests::{cdkd_binary, plugin_library, snapshot, Emulator, Run};
use serde_json::{json, Value};

/// A folder as a cloned repository would be: a plugins file naming its own copy of the test
/// plugin, and an assembly with one resource of the plugin's type.
struct Project {
    dir: tempfile::TempDir,
    config: PathBuf,
    cache: PathBuf,
    marker: PathBuf,
    library: PathBuf,
    bucket: String,
}

impl Project {
    fn new() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let library = snapshot(
            &plugin_library("cdkd_test_faults"),
            &dir.path().join("vendor"),
            "libacme_faults.so",
        );
        std::fs::write(
            dir.path().join("plugins.toml"),
            "[[plugin]]\nname = \"acme\"\npath = \"vendor/libacme_faults.so\"\n",
        )
        .unwrap();
        let app = dir.path().join("cdk.out");
        std::fs::create_dir_all(&app).unwrap();
        let template =
            json!({"Resources": {"Faulty": {"Type": "Acme::Echo::Fault", "Properties": {}}}});
        std::fs::write(app.join("Proj.template.json"), template.to_string()).unwrap();
        let manifest = json!({"version": "55.0.0", "artifacts": {"Proj": {
            "type": "aws:cloudformation:stack",
            "environment": "aws://unknown-account/unknown-region",
            "properties": {"templateFile": "Proj.template.json"}}}});
        std::fs::write(app.join("manifest.json"), manifest.to_string()).unwrap();
        let project = Project {
            config: dir.path().join("config"),
            cache: dir.path().join("cache"),
            marker: dir.path().join("loaded.marker"),
            library,
            bucket: Emulator::unique("trust"),
            dir,
        };
        project.cdkd(&["bootstrap", "--no-assets"]).success();
        project
    }

    /// `cdkd args...` run in the project's folder against the emulator, with the project's
    /// own configuration and cache folders (no trust given by anyone else).
    fn cdkd(&self, args: &[&str]) -> Run {
        let mut command = Command::new(cdkd_binary());
        command
            .current_dir(self.dir.path())
            .args(["--state-bucket", &self.bucket])
            .args(args)
            .env_remove("CDKD_PLUGINS")
            .env_remove("CI");
        for (key, value) in Emulator::shared().env() {
            command.env(key, value);
        }
        command
            .env("XDG_CONFIG_HOME", &self.config)
            .env("CDKD_CACHE_DIR", &self.cache)
            .env("CDKD_TEST_LOAD_MARKER", &self.marker);
        command.output().unwrap().into()
    }

    fn loads(&self) -> usize {
        std::fs::read_to_string(&self.marker)
            .map(|text| text.lines().count())
            .unwrap_or(0)
    }
}

fn acme(list: &Value) -> Option<&Value> {
    list["plugins"]
        .as_array()?
        .iter()
        .find(|p| p["name"] == "acme")
}

#[test]
fn a_project_plugins_file_runs_nothing_until_trusted_and_again_after_its_library_changes() {
    let project = Project::new();
    let app = project.dir.path().join("cdk.out").display().to_string();
    let file = project.dir.path().join("plugins.toml");
    let file = std::fs::canonicalize(file).unwrap();

    // Untrusted: skipped, one line saying how to trust it, and no byte of its library runs.
    let list = project.cdkd(&["providers", "list", "--json"]).success();
    assert!(acme(&list.json()).is_none(), "{}", list.stdout);
    let skipped: Vec<&str> = list
        .stderr
        .lines()
        .filter(|l| l.contains("skipped the project plugins file"))
        .collect();
    assert_eq!(skipped.len(), 1, "{}", list.stderr);
    assert!(
        skipped[0].contains(&format!("cdkd providers trust {}", file.display())),
        "{}",
        skipped[0]
    );
    let diff = project.cdkd(&["diff", "-a", &app]);
    let shown = project.cdkd(&["state", "show", "Proj"]);
    let deploy = project.cdkd(&["deploy", "-a", &app]);
    assert_ne!(deploy.code, Some(0), "{}", deploy.stdout);
    assert!(
        deploy
            .stderr
            .contains("no loaded plugin handles Acme::Echo::Fault"),
        "{}",
        deploy.stderr
    );
    // `state show` of a stack never deployed fails before it needs plugins; it loads none.
    assert_ne!(shown.code, None, "{}", shown.stderr);
    for run in [&diff, &deploy] {
        assert!(
            run.stderr.contains("skipped the project plugins file"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(
        project.loads(),
        0,
        "an untrusted library ran its constructor"
    );

    // Trusted: it loads and deploys.
    let trusted = project.cdkd(&["providers", "trust"]).success();
    assert!(
        trusted
            .stdout
            .contains(&project.library.display().to_string()),
        "{}",
        trusted.stdout
    );
    let list = project
        .cdkd(&["providers", "list", "--json"])
        .success()
        .json();
    assert_eq!(acme(&list).unwrap()["status"], "ready", "{list:#}");
    assert!(project.loads() >= 1, "a trusted library was not loaded");
    project.cdkd(&["deploy", "-a", &app]).success();

    // One byte more in the library: refused before the loader maps it, by name and hash.
    let mut bytes = std::fs::read(&project.library).unwrap();
    bytes.push(0);
    std::fs::write(&project.library, &bytes).unwrap();
    std::fs::remove_file(&project.marker).unwrap();
    let verify = project.cdkd(&["providers", "list", "--verify"]);
    assert_eq!(verify.code, Some(1), "{}", verify.stdout);
    assert!(
        verify.stdout.contains("MISMATCH: plugin 'acme'"),
        "{}",
        verify.stdout
    );
    let destroy = project.cdkd(&["destroy", "-a", &app, "--force"]);
    assert_ne!(destroy.code, Some(0), "{}", destroy.stdout);
    let refused = format!("refused: its SHA-256 is {}", sha256(&project.library));
    assert!(destroy.stderr.contains(&refused), "{}", destroy.stderr);
    assert!(
        destroy
            .stderr
            .contains(&project.library.display().to_string()),
        "{}",
        destroy.stderr
    );
    assert_eq!(project.loads(), 0, "a changed library ran its constructor");

    // Trusted again as it is now, the stack is destroyed through it.
    project.cdkd(&["providers", "trust"]).success();
    project.cdkd(&["destroy", "-a", &app, "--force"]).success();
    assert!(project.loads() >= 1);
}

#[test]
fn a_changed_project_file_and_an_untrusted_plugins_flag_are_refused() {
    let project = Project::new();
    project.cdkd(&["providers", "trust"]).success();
    let file = project.dir.path().join("plugins.toml");
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&file, text).unwrap();
    let list = project.cdkd(&["providers", "list", "--json"]).success();
    assert!(acme(&list.json()).is_none(), "{}", list.stdout);
    assert!(
        list.stderr.contains("(changed since you trusted it)"),
        "{}",
        list.stderr
    );

    // Named on the command line, an untrusted file is an error, not a silent skip.
    let other = project.dir.path().join("other.toml");
    std::fs::copy(&file, &other).unwrap();
    let flagged = project.cdkd(&[
        "--plugins",
        &other.display().to_string(),
        "providers",
        "list",
    ]);
    assert_eq!(flagged.code, Some(1), "{}", flagged.stdout);
    assert!(
        flagged.stderr.contains("is not trusted (never trusted)"),
        "{}",
        flagged.stderr
    );
    assert!(
        flagged.stderr.contains("cdkd providers trust"),
        "{}",
        flagged.stderr
    );
    assert_eq!(project.loads(), 0);
}

#[test]
fn a_wrong_pin_in_the_installs_own_file_refuses_that_plugin_alone() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    let plugins = prefix.join("lib/cdkd/plugins");
    let exe = prefix.join("bin/cdkd");
    // A hard link keeps the test light; the executable finds its bundled file from its own path.
    std::fs::hard_link(cdkd_binary(), &exe)
        .or_else(|_| std::fs::copy(cdkd_binary(), &exe).map(|_| ()))
        .unwrap();
    let sqs = snapshot(
        &plugin_library("cdkd_provider_sqs"),
        &plugins,
        "libcdkd_provider_sqs.so",
    );
    let sns = snapshot(
        &plugin_library("cdkd_provider_sns"),
        &plugins,
        "libcdkd_provider_sns.so",
    );
    let wrong = "0".repeat(64);
    std::fs::write(
        prefix.join("lib/cdkd/plugins.toml"),
        format!(
            "[[plugin]]\nname = \"sqs\"\npath = \"plugins/libcdkd_provider_sqs.so\"\nsha256 = \"{wrong}\"\n\n\
             [[plugin]]\nname = \"sns\"\npath = \"plugins/libcdkd_provider_sns.so\"\nsha256 = \"{}\"\n",
            sha256(&sns)
        ),
    )
    .unwrap();
    let run: Run = Command::new(&exe)
        .current_dir(dir.path())
        .args(["providers", "list", "--json"])
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("CDKD_CACHE_DIR", dir.path().join("cache"))
        .output()
        .unwrap()
        .into();
    let list = run.success().json();
    assert_eq!(list["pluginsFileSource"], "bundled", "{list:#}");
    let entry = |name: &str| {
        list["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(entry("sns")["status"], "ready");
    let sqs_entry = entry("sqs");
    assert_eq!(sqs_entry["status"], "failed", "{sqs_entry:#}");
    let error = sqs_entry["error"].as_str().unwrap();
    assert!(
        error.contains(&format!(
            "its SHA-256 is {}, but the plugins file pins {wrong}",
            sha256(&sqs)
        )),
        "{error}"
    );
    assert!(error.contains(&sqs.display().to_string()), "{error}");
    assert!(error.contains("cdkd providers lock"), "{error}");

    // The install's own file stays the install's when named again, or found from its folder.
    let bundled_file = prefix.join("lib/cdkd/plugins.toml");
    let run_in = |cwd: &Path, args: &[&str]| -> Run {
        Command::new(&exe)
            .current_dir(cwd)
            .args(args)
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("CDKD_CACHE_DIR", dir.path().join("cache"))
            .output()
            .unwrap()
            .into()
    };
    let named = run_in(
        dir.path(),
        &[
            "--plugins",
            &bundled_file.display().to_string(),
            "providers",
            "list",
            "--json",
        ],
    )
    .success();
    assert_eq!(
        named.json()["pluginsFileSource"],
        "bundled",
        "{}",
        named.stdout
    );
    let beside = run_in(&prefix.join("lib/cdkd"), &["providers", "list"]).success();
    assert!(!beside.stderr.contains("skipped"), "{}", beside.stderr);
    assert!(beside.stdout.contains("ready"), "{}", beside.stdout);

    // The user's own file: refused unpinned; `providers lock` pins it in place and keeps it as
    // the user wrote it.
    let user_file = dir.path().join("config/cdkd/plugins.toml");
    std::fs::create_dir_all(user_file.parent().unwrap()).unwrap();
    std::fs::write(
        &user_file,
        format!(
            "# my topics\n[[plugin]]\nname = \"sns\"\npath = \"{}\" # the install's copy\n",
            sns.display()
        ),
    )
    .unwrap();
    let unpinned = run_in(dir.path(), &["providers", "list"]).success();
    assert!(
        unpinned.stdout.contains("failed: plugin 'sns': not pinned"),
        "{}",
        unpinned.stdout
    );
    run_in(
        dir.path(),
        &["providers", "lock", &user_file.display().to_string()],
    )
    .success();
    let locked = std::fs::read_to_string(&user_file).unwrap();
    assert!(locked.starts_with("# my topics\n"), "{locked}");
    assert!(locked.contains("# the install's copy"), "{locked}");
    assert!(
        locked.contains(&format!("sha256 = \"{}\"", sha256(&sns))),
        "{locked}"
    );
    let pinned = run_in(dir.path(), &["providers", "list", "--json"])
        .success()
        .json();
    let sns_entry = pinned["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "sns")
        .unwrap();
    assert_eq!(sns_entry["status"], "ready", "{sns_entry:#}");
    assert_eq!(
        sns_entry["file"],
        Value::from(
            std::fs::canonicalize(&user_file)
                .unwrap()
                .display()
                .to_string()
        )
    );
}

fn sha256(path: &Path) -> String {
    cdkd_provider_api::host::sha256_file(path).unwrap()
}
