//! The plugin host end to end: the real `cdkd` binary loading real plugins from plugins files.

use std::path::{Path, PathBuf};
use std::process::Command;

use cdkd_tests::{
    build_plugin, cdkd, cdkd_with_env, fixture_plugin, plugin_library, snapshot, test_plugins_file,
    workspace_root, write_plugins_file, PluginEntry,
};
use serde_json::{json, Value};

const ECHO_LIB: &str = "cdkd_provider_example_echo";

fn echo() -> PathBuf {
    plugin_library(ECHO_LIB)
}

fn plugin<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["plugins"]
        .as_array()
        .expect("plugins is a list")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("plugin {name} not listed: {list:#}"))
}

fn type_names(plugin: &Value) -> Vec<&str> {
    plugin["resourceTypes"]
        .as_array()
        .expect("resourceTypes")
        .iter()
        .map(|t| t["typeName"].as_str().expect("typeName"))
        .collect()
}

#[test]
fn the_bundled_plugins_file_lists_every_bundled_plugin_pinned_and_loads_none_once_cached() {
    // Its own cache: the first run loads every library once to cache its manifest.
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().display().to_string();
    let list = || {
        cdkd_with_env(
            None,
            &["providers", "list", "--json"],
            &[("CDKD_CACHE_DIR", &cache_dir)],
        )
        .success()
        .json()
    };
    let first = list();
    let again = list();
    assert_eq!(again["pluginsFileSource"], "bundled", "{again:#}");
    assert_eq!(
        again["pluginsFile"],
        Value::from(
            cdkd_tests::debug_dir()
                .join("plugins.toml")
                .display()
                .to_string()
        )
    );
    assert_eq!(again["hostProviderApiVersion"], cdkd_provider_api::VERSION);
    let bundled: Vec<String> = std::fs::read_to_string(workspace_root().join("plugins.toml"))
        .unwrap()
        .lines()
        .filter_map(|l| Some(l.strip_prefix("name = \"")?.strip_suffix('"')?.to_string()))
        .collect();
    assert!(bundled.len() > 20, "{bundled:?}");
    assert!(
        !bundled.contains(&"example-echo".to_string()),
        "example-echo is bundled again"
    );
    assert_eq!(again["plugins"].as_array().unwrap().len(), bundled.len());
    for name in &bundled {
        let (cold, warm) = (plugin(&first, name), plugin(&again, name));
        assert_eq!(warm["status"], "ready", "{warm:#}");
        assert_eq!(cold["loaded"], true, "{cold:#}");
        assert_eq!(
            warm["loaded"], false,
            "listing loaded {name} again: {warm:#}"
        );
        assert_eq!(warm["providerApiVersion"], cdkd_provider_api::VERSION);
        let path = Path::new(warm["path"].as_str().unwrap());
        let actual = cdkd_provider_api::host::sha256_file(path).unwrap();
        assert_eq!(warm["sha256"], Value::from(actual), "{name}");
    }
    let s3 = plugin(&again, "s3");
    assert_eq!(type_names(s3), ["AWS::S3::Bucket", "AWS::S3::BucketPolicy"]);

    let table = cdkd(None, &["providers", "list"]).success().stdout;
    let row = table
        .lines()
        .find(|line| line.starts_with("s3 "))
        .unwrap_or_else(|| panic!("no s3 row:\n{table}"));
    for cell in [cdkd_provider_api::VERSION, "ready", "AWS::S3::Bucket"] {
        assert!(row.contains(cell), "{cell} missing from {row}");
    }
}

/// Compiles a real shared library that is not a cdkd plugin.
fn foreign_library(dir: &Path) -> PathBuf {
    let source = dir.join("foreign.c");
    std::fs::write(&source, "int answer(void) { return 42; }\n").unwrap();
    let library = dir.join("libforeign.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&source)
        .status()
        .expect("cc runs");
    assert!(status.success());
    library
}

#[test]
fn every_bad_plugin_is_refused_alone_with_a_one_line_reason() {
    let dir = tempfile::tempdir().unwrap();
    let text_file = dir.path().join("notes.so");
    std::fs::write(&text_file, "not a library").unwrap();
    let foreign = foreign_library(dir.path());
    let broken = snapshot(
        &fixture_plugin("cdkd-provider-broken-abi"),
        dir.path(),
        "libbroken.so",
    );
    let missing = dir.path().join("libmissing.so");
    let echo = echo();
    // A copy cut short: dlopen maps it and the first touch past the end was SIGBUS.
    let truncated = dir.path().join("libtruncated.so");
    let whole = std::fs::read(&echo).unwrap();
    std::fs::write(&truncated, &whole[..100_000]).unwrap();
    let plugins = write_plugins_file(
        dir.path(),
        &[
            PluginEntry {
                name: "missing",
                path: &missing,
                version: "*",
            },
            PluginEntry {
                name: "text",
                path: &text_file,
                version: "*",
            },
            PluginEntry {
                name: "foreign",
                path: &foreign,
                version: "*",
            },
            PluginEntry {
                name: "broken",
                path: &broken,
                version: "*",
            },
            PluginEntry {
                name: "too-old",
                path: &echo,
                version: "^3",
            },
            PluginEntry {
                name: "truncated",
                path: &truncated,
                version: "*",
            },
            PluginEntry {
                name: "example-echo",
                path: &echo,
                version: "^2",
            },
        ],
        "",
    );

    let list = cdkd(Some(&plugins), &["providers", "list", "--json"])
        .success()
        .json();
    let expectations = [
        ("missing", format!("file not found: {}", missing.display())),
        ("text", "not a shared library".to_string()),
        ("foreign", "no cdkd root module".to_string()),
        (
            "broken",
            format!(
                "ABI layout mismatch: built against provider-api 0.1.0, host has {}",
                cdkd_provider_api::VERSION
            ),
        ),
        (
            "too-old",
            "version 2.0.0 does not meet the requirement ^3".to_string(),
        ),
        ("truncated", "truncated or damaged".to_string()),
    ];
    for (name, fragment) in &expectations {
        let entry = plugin(&list, name);
        assert_eq!(entry["status"], "failed", "{entry:#}");
        let error = entry["error"].as_str().unwrap();
        assert!(error.contains(fragment.as_str()), "{name}: {error}");
        assert!(!error.contains('\n'), "{name}: more than one line: {error}");
    }
    let path_named = |name: &str, path: &Path| {
        let error = plugin(&list, name)["error"].as_str().unwrap().to_string();
        assert!(
            error.ends_with(&path.display().to_string()),
            "{name}: {error}"
        );
    };
    path_named("text", &text_file);
    path_named("foreign", &foreign);
    path_named("broken", &broken);
    path_named("truncated", &truncated);
    assert_eq!(plugin(&list, "example-echo")["status"], "ready");

    // The host keeps working with the plugins that did load, and says once per plugin why
    // the others did not.
    let store = dir.path().join("store");
    let properties = json!({"Directory": store, "Message": "still here"}).to_string();
    let run = cdkd(
        Some(&plugins),
        &[
            "providers",
            "call",
            "Acme::Echo::Thing",
            "create",
            "--properties",
            &properties,
        ],
    )
    .success();
    assert_eq!(run.json()["attributes"]["Greeting"], "hello, still here");
    for (name, _) in &expectations {
        let warnings: Vec<&str> = run
            .stderr
            .lines()
            .filter(|line| line.contains(&format!("plugin '{name}' not loaded")))
            .collect();
        assert_eq!(warnings.len(), 1, "{name}:\n{}", run.stderr);
    }
}

#[test]
fn a_plugin_built_against_an_older_provider_api_loads_and_works() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = snapshot(
        &fixture_plugin("cdkd-provider-legacy-echo"),
        dir.path(),
        "liblegacy.so",
    );
    let plugins = write_plugins_file(
        dir.path(),
        &[PluginEntry {
            name: "legacy-echo",
            path: &legacy,
            version: "^0.9",
        }],
        "",
    );
    let list = cdkd(Some(&plugins), &["providers", "list", "--json"])
        .success()
        .json();
    let entry = plugin(&list, "legacy-echo");
    assert_eq!(entry["status"], "ready", "{entry:#}");
    assert_eq!(entry["providerApiVersion"], "0.1.0");
    assert_ne!(list["hostProviderApiVersion"], "0.1.0");

    let store = dir.path().join("store");
    let properties = json!({"Directory": store, "Message": "from the past", "Name": "old-thing"});
    let created = cdkd(
        Some(&plugins),
        &[
            "providers",
            "call",
            "Acme::Echo::Thing",
            "create",
            "--properties",
            &properties.to_string(),
        ],
    )
    .success()
    .json();
    assert_eq!(created["physicalId"], "old-thing");
    assert_eq!(created["attributes"]["PluginVersion"], "0.9.0");
    assert!(store.join("old-thing.json").is_file());

    // The newer host sends a HostConfig with fields 0.1.0 never heard of; the plugin ignores them.
    let context = cdkd_with_env(
        Some(&plugins),
        &[
            "--s3-force-path-style",
            "providers",
            "call",
            "Acme::Echo::Thing",
            "host_context",
        ],
        &[("AWS_REGION", "ap-southeast-2")],
    )
    .success()
    .json();
    assert_eq!(context["region"], "ap-southeast-2");
}

#[test]
fn two_plugins_claiming_one_type_conflict_until_plugins_toml_picks_one() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = snapshot(
        &fixture_plugin("cdkd-provider-legacy-echo"),
        dir.path(),
        "liblegacy.so",
    );
    let (echo, faults) = (echo(), plugin_library("cdkd_test_faults"));
    let entries = [
        PluginEntry {
            name: "example-echo",
            path: &echo,
            version: "*",
        },
        PluginEntry {
            name: "legacy-echo",
            path: &legacy,
            version: "*",
        },
        PluginEntry {
            name: "test-faults",
            path: &faults,
            version: "*",
        },
    ];
    let plugins = write_plugins_file(dir.path(), &entries, "");
    let show = cdkd(Some(&plugins), &["providers", "show", "Acme::Echo::Thing"]);
    assert_eq!(show.code, Some(1));
    assert!(
        show.stderr
            .contains("Acme::Echo::Thing is claimed by plugins example-echo, legacy-echo"),
        "{}",
        show.stderr
    );
    let list = cdkd(Some(&plugins), &["providers", "list", "--json"])
        .success()
        .json();
    assert_eq!(
        list["conflicts"],
        json!([
            {"type": "Acme::Echo::Fault", "plugins": ["legacy-echo", "test-faults"]},
            {"type": "Acme::Echo::Thing", "plugins": ["example-echo", "legacy-echo"]},
        ])
    );

    let plugins = write_plugins_file(
        dir.path(),
        &entries,
        "[owners]\n\"Acme::Echo::Thing\" = \"legacy-echo\"\n",
    );
    let shown = cdkd(
        Some(&plugins),
        &["providers", "show", "Acme::Echo::Thing", "--json"],
    )
    .success()
    .json();
    assert_eq!(shown["provisionedBy"], "sdk");
    assert_eq!(
        shown["plugin"],
        json!({"name": "legacy-echo", "version": "0.9.0"})
    );
    // The other type is still contested.
    assert_eq!(
        cdkd(Some(&plugins), &["providers", "show", "Acme::Echo::Fault"]).code,
        Some(1)
    );
}

#[test]
fn providers_show_routes_aws_types_to_cloud_control_and_refuses_unknown_ones() {
    let shown = cdkd(
        None,
        &["providers", "show", "AWS::CodeBuild::Project", "--json"],
    )
    .success()
    .json();
    assert_eq!(shown["provisionedBy"], "cc-api");
    let queue = cdkd(None, &["providers", "show", "AWS::SQS::Queue", "--json"])
        .success()
        .json();
    assert_eq!(queue["provisionedBy"], "sdk");
    assert_eq!(queue["plugin"]["name"], "sqs");
    let custom = cdkd(
        None,
        &["providers", "show", "Custom::S3AutoDeleteObjects", "--json"],
    )
    .success()
    .json();
    // Custom resources go to the bundled custom-resource plugin through its `Custom::*` pattern.
    assert_eq!(custom["provisionedBy"], "sdk");
    assert_eq!(custom["plugin"]["name"], "custom-resource");
    assert_eq!(custom["schema"]["typeName"], "Custom::*");
    let unknown = cdkd(None, &["providers", "show", "Acme::Unknown::Thing"]);
    assert_eq!(unknown.code, Some(1));
    assert!(unknown
        .stderr
        .contains("no loaded plugin handles Acme::Unknown::Thing"));
}

#[test]
fn a_panicking_plugin_is_an_error_and_the_host_exits_cleanly() {
    let run = cdkd(
        Some(&test_plugins_file()),
        &[
            "providers",
            "call",
            "Acme::Echo::Fault",
            "create",
            "--properties",
            r#"{"Panic":"kaboom"}"#,
        ],
    );
    // Exit code 1, not a signal: the panic never crossed into the host.
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("panicked in create of Acme::Echo::Fault"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("kaboom (panic)"), "{}", run.stderr);
}

#[test]
fn provider_errors_keep_their_kind_and_aws_code() {
    let run = cdkd(
        Some(&test_plugins_file()),
        &[
            "providers",
            "call",
            "Acme::Echo::Fault",
            "create",
            "--properties",
            r#"{"FailWith":"throttled"}"#,
        ],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("(throttled, AWS code InjectedFault)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_host_timeout_cancels_the_plugin_call() {
    let started = std::time::Instant::now();
    let run = cdkd(
        Some(&test_plugins_file()),
        &[
            "providers",
            "call",
            "Acme::Echo::Fault",
            "create",
            "--properties",
            r#"{"SleepMs":20000}"#,
            "--timeout",
            "0.3",
        ],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("did not finish within 0.3 s"),
        "{}",
        run.stderr
    );
    assert!(
        started.elapsed().as_secs() < 10,
        "the host waited for the plugin"
    );
}

#[test]
fn the_example_thing_lives_and_dies_through_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let props = json!({"Directory": dir.path(), "Message": "hi"}).to_string();
    let call = |args: &[&str]| {
        let mut full = vec!["providers", "call", "Acme::Echo::Thing"];
        full.extend_from_slice(args);
        cdkd(Some(&test_plugins_file()), &full).success()
    };
    let created = call(&[
        "create",
        "--stack-name",
        "Demo",
        "--logical-id",
        "Thing1",
        "--properties",
        &props,
    ]);
    let physical_id = created.json()["physicalId"].as_str().unwrap().to_string();
    assert!(physical_id.starts_with("Demo-Thing1-"), "{physical_id}");
    assert!(dir.path().join(format!("{physical_id}.json")).is_file());
    // The plugin's tracing event reached the host's log, tagged with the plugin's name.
    let log_line = created
        .stderr
        .lines()
        .find(|line| line.contains(&format!("created {physical_id}")))
        .unwrap_or_else(|| panic!("no forwarded log line:\n{}", created.stderr));
    assert!(log_line.contains("example-echo"), "{log_line}");

    let current = call(&[
        "read_current_state",
        "--physical-id",
        &physical_id,
        "--properties",
        &props,
    ])
    .json();
    assert_eq!(current["properties"]["Message"], "hi");
    let attribute = call(&[
        "get_attribute",
        "--physical-id",
        &physical_id,
        "--attribute",
        "Greeting",
        "--properties",
        &props,
    ])
    .json();
    assert_eq!(attribute["value"], "hello, hi");

    let updated_props = json!({"Directory": dir.path(), "Message": "bye"}).to_string();
    let updated = call(&[
        "update",
        "--physical-id",
        &physical_id,
        "--properties",
        &updated_props,
    ])
    .json();
    assert_eq!(updated["replaced"], false);
    assert_eq!(updated["attributes"]["Greeting"], "hello, bye");

    let deleted = call(&[
        "delete",
        "--physical-id",
        &physical_id,
        "--properties",
        &props,
    ])
    .json();
    assert_eq!(deleted, json!({"outcome": "deleted"}));
    assert!(!dir.path().join(format!("{physical_id}.json")).exists());
    let gone = call(&[
        "read_current_state",
        "--physical-id",
        &physical_id,
        "--properties",
        &props,
    ])
    .json();
    assert_eq!(gone["properties"], Value::Null);
    // Deleting what is already gone counts as deleted.
    let again = call(&[
        "delete",
        "--physical-id",
        &physical_id,
        "--properties",
        &props,
    ])
    .json();
    assert_eq!(again, json!({"outcome": "deleted"}));
}

#[test]
fn init_hands_the_plugin_region_endpoint_and_credentials() {
    let context = cdkd_with_env(
        Some(&test_plugins_file()),
        &["providers", "call", "Acme::Echo::Fault", "host_context"],
        &[
            ("AWS_REGION", "eu-central-1"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
            ("AWS_ACCESS_KEY_ID", "AKIDHOSTRESOLVED"),
        ],
    )
    .success()
    .json();
    assert_eq!(context["plugin"], "test-faults");
    assert_eq!(context["region"], "eu-central-1");
    assert_eq!(context["endpointUrl"], "http://127.0.0.1:9");
    assert_eq!(context["accessKeyId"], "AKIDHOSTRESOLVED");
}

/// Copies providers/example-echo into `dir` as a standalone crate named `swap-echo`, at
/// `version`, saying `greeting`: what a team does when it releases a new plugin version.
fn release_echo(dir: &Path, version: &str, greeting: &str) -> PathBuf {
    let root = workspace_root();
    let crate_dir = dir.join(format!("swap-echo-{version}"));
    std::fs::create_dir_all(crate_dir.join("src")).unwrap();
    let source = std::fs::read_to_string(root.join("providers/example-echo/src/lib.rs")).unwrap();
    let constant = "const GREETING: &str = \"hello\";";
    assert!(
        source.contains(constant),
        "the GREETING constant moved; update this test"
    );
    let patched = source.replace(constant, &format!("const GREETING: &str = \"{greeting}\";"));
    std::fs::write(crate_dir.join("src/lib.rs"), patched).unwrap();
    std::fs::copy(
        root.join("providers/example-echo/src/pair.rs"),
        crate_dir.join("src/pair.rs"),
    )
    .unwrap();
    let workspace_toml = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let profiles = &workspace_toml[workspace_toml.find("[profile.dev]").expect("profiles")..];
    std::fs::write(
        crate_dir.join("Cargo.toml"),
        format!(
            r#"[package]
name = "swap-echo"
version = "{version}"
edition = "2021"

[lib]
crate-type = ["cdylib"]

[dependencies]
cdkd-provider-api = {{ path = "{api}" }}
abi_stable = {{ version = "0.11.3", default-features = false }}
async-trait = "0.1"
serde_json = "1"
tokio = {{ version = "1", features = ["rt-multi-thread", "macros", "time", "sync", "fs"] }}
tracing = "0.1"

[workspace]

{profiles}"#,
            api = root.join("provider-api").display(),
        ),
    )
    .unwrap();
    // The workspace's lock file pins the same dependency versions, so nothing recompiles.
    std::fs::copy(root.join("Cargo.lock"), crate_dir.join("Cargo.lock")).unwrap();
    build_plugin(&crate_dir.join("Cargo.toml"), "swap-echo")
}

#[test]
fn a_plugin_version_is_swapped_without_rebuilding_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let host_before = std::fs::read(cdkd_tests::cdkd_binary()).unwrap();
    let a = snapshot(
        &release_echo(dir.path(), "1.4.0", "hello"),
        &dir.path().join("a"),
        "libswap_echo.so",
    );
    let b = snapshot(
        &release_echo(dir.path(), "2.0.0", "bonjour"),
        &dir.path().join("b"),
        "libswap_echo.so",
    );

    let run_with = |library: &Path| {
        let plugins = write_plugins_file(
            dir.path(),
            &[PluginEntry {
                name: "echo",
                path: library,
                version: ">=1.0",
            }],
            "",
        );
        let list = cdkd(Some(&plugins), &["providers", "list", "--json"])
            .success()
            .json();
        let created = cdkd(
            Some(&plugins),
            &[
                "providers",
                "call",
                "Acme::Echo::Thing",
                "create",
                "--properties",
                &json!({"Directory": dir.path().join("store"), "Message": "swap"}).to_string(),
            ],
        )
        .success()
        .json();
        (
            plugin(&list, "echo")["version"].clone(),
            created["attributes"].clone(),
        )
    };
    let (version_a, attributes_a) = run_with(&a);
    let (version_b, attributes_b) = run_with(&b);
    assert_eq!(version_a, "1.4.0");
    assert_eq!(attributes_a["Greeting"], "hello, swap");
    assert_eq!(version_b, "2.0.0");
    assert_eq!(attributes_b["Greeting"], "bonjour, swap");
    assert_eq!(attributes_b["PluginVersion"], "2.0.0");
    assert_eq!(
        host_before,
        std::fs::read(cdkd_tests::cdkd_binary()).unwrap(),
        "the host was rebuilt"
    );
}

/// `providers show AWS::CloudFormation::Stack` names the host, which deploys nested stacks
/// itself, not the Cloud Control API the registry alone would route the type to (issue 46).
#[test]
fn nested_stacks_are_shown_as_the_hosts_own() {
    let shown = cdkd(
        None,
        &["providers", "show", "AWS::CloudFormation::Stack", "--json"],
    )
    .success()
    .json();
    assert_eq!(shown["provisionedBy"], "host", "{shown}");
    assert!(
        shown["handler"].as_str().unwrap().contains("parent~child"),
        "{shown}"
    );
}
