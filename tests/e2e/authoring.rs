//! docs/provider-authoring.md, followed as a team in its own repository would: copy
//! providers/example-echo outside the workspace, rename its types, give it the standalone
//! `Cargo.toml` printed in the page, build it, register it in a plugins file and deploy a real
//! CDK app's stack of the new types through `cdkd`. A page that no longer builds fails here.

use std::path::Path;

use cdkd_tests::{build_plugin, workspace_root, AppWorld};

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
    let plugins = plugins.display().to_string();
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
