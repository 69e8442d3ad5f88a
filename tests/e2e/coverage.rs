//! Every property of every bundled plugin type is handled, or listed with a reason in
//! tests/fixtures/plugin-coverage.json: the plugins' declared `handledProperties` against the
//! registry schemas cfn-lint ships (installed with the emulator). A property a plugin does not
//! handle sends the whole resource to Cloud Control, so a new schema property shows up here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use cdkd_tests::workspace_root;
use serde_json::Value;

fn schemas_dir() -> PathBuf {
    let output = std::process::Command::new(workspace_root().join(".venv/bin/python"))
        .args([
            "-c",
            "import importlib.util, os; s = importlib.util.find_spec('cfnlint'); print(os.path.join(list(s.submodule_search_locations)[0], 'data', 'schemas'))",
        ])
        .output()
        .expect("the emulator's python runs (tests/emulator/setup.sh)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

fn read(path: PathBuf) -> Value {
    serde_json::from_slice(
        &std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .unwrap()
}

/// The writable top-level properties of `type_name`'s registry schema.
fn schema_properties(
    dir: &std::path::Path,
    providers: &Value,
    type_name: &str,
) -> Option<BTreeSet<String>> {
    let digest = providers.get(type_name)?.as_str()?;
    let schema = read(dir.join("resources").join(format!("{digest}.json")));
    let read_only: BTreeSet<String> = schema["readOnlyProperties"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(|p| p.strip_prefix("/properties/"))
        .filter(|p| !p.contains('/'))
        .map(str::to_string)
        .collect();
    Some(
        schema["properties"]
            .as_object()?
            .keys()
            .filter(|k| !read_only.contains(*k))
            .cloned()
            .collect(),
    )
}

#[test]
fn every_schema_property_of_a_plugin_type_is_handled_or_listed_with_a_reason() {
    let dir = schemas_dir();
    let providers = read(dir.join("providers").join("us-east-1.json"));
    let listed = read(workspace_root().join("tests/fixtures/plugin-coverage.json"));
    let run = cdkd_tests::cdkd(None, &["providers", "list", "--json"]).success();
    let plugins = run.json();
    let mut problems = Vec::new();
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for plugin in plugins["plugins"].as_array().unwrap() {
        let name = plugin["name"].as_str().unwrap();
        for declared in plugin["resourceTypes"].as_array().into_iter().flatten() {
            let type_name = declared["typeName"].as_str().unwrap();
            let handled: BTreeSet<String> = declared["handledProperties"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            // Operations-only declarations and pattern types (`Custom::*`) provision nothing.
            if handled.is_empty() || handled.contains("*") {
                continue;
            }
            let Some(properties) = schema_properties(&dir, &providers, type_name) else {
                continue;
            };
            let reasons = listed.get(type_name).and_then(Value::as_object);
            for property in properties.difference(&handled) {
                let reason = reasons
                    .and_then(|r| r.get(property))
                    .and_then(Value::as_str);
                if reason.is_none_or(str::is_empty) {
                    problems.push(format!("{type_name}.{property}: plugin {name} does not handle it and plugin-coverage.json gives no reason"));
                }
                seen.entry(type_name.to_string())
                    .or_default()
                    .insert(property.clone());
            }
            for (property, _) in reasons.into_iter().flatten() {
                if handled.contains(property) {
                    problems.push(format!("{type_name}.{property}: plugin {name} handles it now; remove it from plugin-coverage.json"));
                } else if !properties.contains(property) {
                    problems.push(format!("{type_name}.{property}: not a writable property of the type's schema; remove it from plugin-coverage.json"));
                }
            }
        }
    }
    for (type_name, reasons) in listed.as_object().unwrap() {
        if !seen.contains_key(type_name) && !reasons.as_object().unwrap().is_empty() {
            problems.push(format!(
                "{type_name}: listed in plugin-coverage.json but no plugin declares it"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// How the run after a crash finds what a create of `type_name` made, from the plugin's
/// declared operations and cdkd's name table (docs/deploy.md's categories).
fn found_by(type_name: &str, operations: &BTreeSet<String>, scoped: bool) -> &'static str {
    if cdkd::provisioning::names::rule_for(type_name).is_some() {
        "name"
    } else if operations.contains("find_created") && scoped {
        "name in its parent"
    } else if operations.contains("find_created") {
        "create token"
    } else if operations.contains("idempotent_create") {
        "idempotent create"
    } else {
        "not found"
    }
}

#[test]
fn every_plugin_type_says_in_deploy_md_how_it_is_found_after_a_crash() {
    let doc = std::fs::read_to_string(workspace_root().join("docs/deploy.md")).unwrap();
    let documented: BTreeMap<String, String> = doc
        .lines()
        .skip_while(|l| !l.starts_with("### How each plugin type is found after a crash"))
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_string(), cells[2].to_string())
        })
        .collect();
    assert!(!documented.is_empty(), "no table in docs/deploy.md");
    // The bundled plugins and the example plugin (not bundled, but in deploy.md's table).
    let echo =
        cdkd_tests::trusted(cdkd_tests::workspace_root().join("tests/fixtures/echo-plugins.toml"));
    let plugins = cdkd_tests::cdkd(Some(&echo), &["providers", "list", "--json"])
        .success()
        .json();
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for plugin in plugins["plugins"].as_array().unwrap() {
        for declared in plugin["resourceTypes"].as_array().into_iter().flatten() {
            let type_name = declared["typeName"].as_str().unwrap();
            let provisions = declared["handledProperties"]
                .as_array()
                .is_some_and(|h| !h.is_empty());
            // Operations-only declarations and custom resources provision nothing of their own.
            if !provisions || type_name.contains('*') || type_name.contains("CustomResource") {
                continue;
            }
            seen.insert(type_name.to_string());
            let operations: BTreeSet<String> = declared["operations"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            let scoped = declared["findScope"]
                .as_array()
                .is_some_and(|s| !s.is_empty());
            let expected = found_by(type_name, &operations, scoped);
            match documented.get(type_name) {
                None => problems.push(format!("{type_name}: missing from the table ({expected})")),
                Some(found) if found != expected => problems.push(format!(
                    "{type_name}: the table says {found:?}, the plugin and the name table say {expected:?}"
                )),
                Some(_) => {}
            }
        }
    }
    for type_name in documented.keys().filter(|t| !seen.contains(*t)) {
        problems.push(format!(
            "{type_name}: in the table but no plugin provisions it"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
