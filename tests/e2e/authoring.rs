//! docs/provider-authoring.md, followed as a team in its own repository would: copy
//! providers/example-echo outside the workspace, rename its types, give it the standalone
//! `Cargo.toml` printed in the page, build it, register it in a plugins file and deploy a real
//! CDK app's stack of the new types through `cdkd`. A page that no longer builds fails here.
//! Then the way a team ships it: a provider archive each release, `cdkd providers install`,
//! a second version installed over the first, and `cdkd providers remove`.

use std::path::{Path, PathBuf};
use std::process::Command;

use cdkd_tests::{build_plugin, library_file, snapshot, workspace_root, AppWorld, Run};
use serde_json::Value;

/// The first fenced block of `language` after `heading` in the authoring page.
fn block_after(page: &str, heading: &str, language: &str) -> String {
    let section = &page[page
        .find(heading)
        .unwrap_or_else(|| panic!("docs/provider-authoring.md lost its heading {heading:?}"))..];
    let fence = format!("```{language}\n");
    let start = section
        .find(&fence)
        .unwrap_or_else(|| panic!("no ```{language} block after {heading:?}"))
        + fence.len();
    let length = section[start..].find("```").expect("the block is closed");
    section[start..start + length].to_string()
}

/// Step 1 of the page, into `dir`: the copy, the renamed types and the standalone manifest.
fn copy_the_example(dir: &Path) -> std::path::PathBuf {
    let root = workspace_root();
    let page = std::fs::read_to_string(root.join("docs/provider-authoring.md")).unwrap();
    let crate_dir = dir.join("acme-widget-provider");
    std::fs::create_dir_all(crate_dir.join("src")).unwrap();

    let commands = block_after(&page, "## 1. Start from the example", "sh");
    assert!(
        commands.contains("cp -r cdkd/providers/example-echo acme-widget-provider")
            && commands.contains("s/Acme::Echo::/Acme::Widget::/g"),
        "the page's copy steps changed; update this test:\n{commands}"
    );
    for entry in std::fs::read_dir(root.join("providers/example-echo/src")).unwrap() {
        let path = entry.unwrap().path();
        let source = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            crate_dir.join("src").join(path.file_name().unwrap()),
            source.replace("Acme::Echo::", "Acme::Widget::"),
        )
        .unwrap();
    }

    // The page's manifest, with its provider-api path pointing at this checkout.
    let manifest = block_after(&page, "## 1. Start from the example", "toml");
    assert!(manifest.contains("../cdkd/provider-api"), "{manifest}");
    let manifest = manifest.replace(
        "../cdkd/provider-api",
        &root.join("provider-api").display().to_string(),
    );
    // Test-only additions: the workspace's profiles and lock file, so the shared target folder's
    // compiled dependencies are reused instead of rebuilt.
    let workspace_toml = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let profiles = &workspace_toml[workspace_toml.find("[profile.dev]").expect("profiles")..];
    std::fs::write(
        crate_dir.join("Cargo.toml"),
        format!("{manifest}\n[workspace]\n\n{profiles}"),
    )
    .unwrap();
    std::fs::copy(root.join("Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();
    crate_dir
}

#[test]
fn the_authoring_walkthrough_builds_a_copy_that_deploys_through_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let crate_dir = copy_the_example(dir.path());
    let library = build_plugin(&crate_dir.join("Cargo.toml"), "acme-widget-provider");

    // Step 3: a plugins file layered over the bundled plugins (the queue still needs them).
    let plugins = dir.path().join("plugins.toml");
    std::fs::write(
        &plugins,
        format!(
            "[[plugin]]\nname = \"acme-widget\"\npath = \"{}\"\nversion = \"^1.0\"\nenabled = true\n",
            library.display()
        ),
    )
    .unwrap();
    // A project's file: cdkd loads it once the user trusts it.
    let plugins = cdkd_tests::trusted(plugins).display().to_string();
    let world = AppWorld::without_assets("widget", "WidgetStack", "authoring");

    let shown = world
        .cdkd(&[
            "providers",
            "show",
            "Acme::Widget::Thing",
            "--json",
            "--plugins",
            &plugins,
        ])
        .success()
        .json();
    assert_eq!(shown["plugin"]["name"], "acme-widget", "{shown:#}");
    assert_eq!(shown["plugin"]["version"], "1.0.0");

    let app = world.assembly.path().display().to_string();
    let deployed = world
        .cdkd(&["deploy", "-a", &app, "--json", "--plugins", &plugins])
        .success();
    let resources = world.resources("WidgetStack");
    let widget = &resources["Widget"];
    assert_eq!(
        widget["resourceType"], "Acme::Widget::Thing",
        "{resources:#}"
    );
    assert_eq!(widget["provisionedBy"], "sdk", "{widget:#}");
    let widget_id = widget["physicalId"].as_str().unwrap();
    // The resource exists where the copied plugin keeps it, with the queue's name resolved.
    let file = world.echo.path().join(format!("{widget_id}.json"));
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let queue = resources["InboxA8E05DC3"]["physicalId"].as_str().unwrap();
    let queue_name = queue.rsplit('/').next().unwrap();
    assert_eq!(kept["Message"], format!("widgets read {queue_name}"));
    // The composite type: state keeps `left|right`, `Ref` gives the first segment.
    assert_eq!(
        resources["Pair"]["physicalId"],
        format!("left-side|{widget_id}")
    );
    let outputs = world.state()["outputs"].clone();
    assert_eq!(outputs["PairRef"], "left-side", "{}", deployed.stdout);
    assert_eq!(
        outputs["Greeting"],
        format!("hello, widgets read {queue_name}")
    );

    world
        .cdkd(&["destroy", "-a", &app, "--force", "--plugins", &plugins])
        .success();
    assert!(
        !file.exists(),
        "the copied plugin's resource survived destroy"
    );
    assert_eq!(world.state(), serde_json::Value::Null);
}

/// The copied example as the crate `acme-provider` at `version`, whose things greet with
/// `greeting`, built and packaged as the provider archive `acme-provider-VERSION.tar.gz` in
/// `dir` (docs/providers.md#trust-and-install).
fn release(dir: &Path, version: &str, greeting: &str) -> PathBuf {
    let work = dir.join(format!("src-{version}"));
    let crate_dir = copy_the_example(&work);
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml")).unwrap();
    let renamed = manifest
        .replacen(
            "name = \"acme-widget-provider\"",
            "name = \"acme-provider\"",
            1,
        )
        .replacen(
            "version = \"1.0.0\"",
            &format!("version = \"{version}\""),
            1,
        );
    assert_ne!(
        renamed, manifest,
        "the page's [package] changed; update this test"
    );
    std::fs::write(crate_dir.join("Cargo.toml"), renamed).unwrap();
    let lib = crate_dir.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib).unwrap();
    let constant = "const GREETING: &str = \"hello\";";
    assert!(
        source.contains(constant),
        "the GREETING constant moved; update this test"
    );
    std::fs::write(
        &lib,
        source.replace(constant, &format!("const GREETING: &str = \"{greeting}\";")),
    )
    .unwrap();
    let library = build_plugin(&crate_dir.join("Cargo.toml"), "acme-provider");
    let name = format!("acme-provider-{version}");
    let package = dir.join(&name);
    let file_name = library_file("acme-provider");
    snapshot(&library, &package, &file_name);
    std::fs::write(
        package.join("provider.toml"),
        format!("name = \"acme\"\nlibrary = \"{file_name}\"\nversion = \"{version}\"\n"),
    )
    .unwrap();
    let archive = dir.join(format!("{name}.tar.gz"));
    let tar = Command::new("tar")
        .arg("-C")
        .arg(dir)
        .arg("-czf")
        .arg(&archive)
        .arg(&name)
        .status()
        .unwrap();
    assert!(tar.success());
    archive
}

#[test]
fn a_team_ships_its_provider_as_an_archive_and_a_new_version_takes_over() {
    let dir = tempfile::tempdir().unwrap();
    let first = release(dir.path(), "1.0.0", "hello");
    let second = release(dir.path(), "1.1.0", "howdy");
    let world = AppWorld::without_assets("widget", "WidgetStack", "archive");
    let (config, data) = (dir.path().join("config"), dir.path().join("data"));
    // The user's own folders; no project plugins file, only the bundled one and the user's.
    let cdkd = |args: &[&str]| -> Run {
        let mut command = world.command(args);
        command
            .env_remove("CDKD_PLUGINS")
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_DATA_HOME", &data);
        command.output().unwrap().into()
    };
    let app = world.assembly.path().display().to_string();
    let archive = |path: &Path| path.display().to_string();

    let installed = cdkd(&["providers", "install", &archive(&first)]).success();
    assert!(
        installed.stdout.starts_with("installed acme 1.0.0\n"),
        "{}",
        installed.stdout
    );
    let user_file = std::fs::read_to_string(config.join("cdkd/plugins.toml")).unwrap();
    assert!(user_file.contains("name = \"acme\""), "{user_file}");
    assert!(user_file.contains("sha256 = \""), "{user_file}");
    let list = cdkd(&["providers", "list", "--json"]).success().json();
    let acme = |list: &Value| -> Value {
        list["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "acme")
            .cloned()
            .unwrap_or_else(|| panic!("no acme in {list:#}"))
    };
    assert_eq!(acme(&list)["status"], "ready", "{list:#}");
    assert_eq!(acme(&list)["version"], "1.0.0");
    assert!(acme(&list)["path"]
        .as_str()
        .unwrap()
        .starts_with(&data.join("cdkd/plugins/acme/1.0.0").display().to_string()));

    cdkd(&["deploy", "-a", &app]).success();
    let resources = world.resources("WidgetStack");
    assert_eq!(resources["Widget"]["provisionedBy"], "sdk", "{resources:#}");
    let greeting = world.state()["outputs"]["Greeting"].clone();
    assert!(
        greeting
            .as_str()
            .unwrap()
            .starts_with("hello, widgets read "),
        "{greeting}"
    );

    // 1.1.0 over 1.0.0: the next deploy's update goes through it, routed by the record's type.
    let installed = cdkd(&["providers", "install", &archive(&second)]).success();
    assert!(
        installed
            .stdout
            .starts_with("installed acme 1.1.0 (was 1.0.0)\n"),
        "{}",
        installed.stdout
    );
    assert_eq!(
        acme(&cdkd(&["providers", "list", "--json"]).success().json())["version"],
        "1.1.0"
    );
    world.edit(|template| {
        template["Resources"]["Widget"]["Properties"]["Message"] = "widgets, version two".into();
    });
    cdkd(&["deploy", "-a", &app]).success();
    assert_eq!(
        world.state()["outputs"]["Greeting"],
        "howdy, widgets, version two",
        "the update did not go through 1.1.0"
    );
    assert_eq!(
        world.resources("WidgetStack")["Widget"]["provisionedBy"],
        "sdk"
    );

    // Not removed while the state records what it provisioned, unless forced.
    let refused = cdkd(&["providers", "remove", "acme"]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(refused.stderr.contains("WidgetStack"), "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    cdkd(&["providers", "remove", "acme", "--force"]).success();
    let user_file = std::fs::read_to_string(config.join("cdkd/plugins.toml")).unwrap();
    assert!(!user_file.contains("acme"), "{user_file}");
    assert!(!data.join("cdkd/plugins/acme").exists());

    cdkd(&["providers", "install", &archive(&second)]).success();
    cdkd(&["destroy", "-a", &app, "--force"]).success();
    assert_eq!(world.state(), Value::Null);
    let removed = cdkd(&["providers", "remove", "acme"]).success();
    assert!(
        removed.stdout.contains("removed plugin 'acme'"),
        "{}",
        removed.stdout
    );
}
