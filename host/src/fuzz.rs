//! Fuzzing of every parser that reads input cdkd did not write: templates (and the plan and
//! intrinsic resolution over them), cloud assembly manifests, state records of every schema
//! version, plugins files, and `local start-api` requests.
//!
//! Each target mutates seeds taken from the repository's own fixtures (byte flips, inserted
//! tokens, deleted and repeated ranges, splices) for `CDKD_FUZZ_SECONDS` seconds (default 2)
//! and fails on the first panic, writing the input to `target/fuzz-crashes/`. They are
//! `#[ignore]`d: CI runs them with `cargo test --workspace --lib -- --ignored fuzz::`, and a
//! stack overflow (an abort, which no test can catch) fails that run too. A crash found here
//! becomes a unit test next to the code it broke.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::Rng;
use serde_json::Value;

use crate::analyzer::intrinsics::Lookup;
use crate::analyzer::plan::{plan, CreateOnlyProperties, ExternalValues, StackContext};
use crate::analyzer::ref_values::RefValues;
use crate::analyzer::template::Template;

/// Tokens worth inserting: structure that nests, intrinsic names, numbers at the edges, and
/// the HTTP framing the request parser reads.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ",",
    ":",
    "{\"Ref\":\"",
    "{\"Fn::If\":[",
    "{\"Fn::Sub\":\"${",
    "{\"Fn::GetAtt\":[",
    "{\"Fn::Join\":[\"\",[",
    "{\"Condition\":\"",
    "{\"Fn::Equals\":[",
    "{\"Fn::Select\":[",
    "{\"Fn::Split\":[",
    "\"Fn::ImportValue\"",
    "\"Fn::GetStackOutput\"",
    "\"DependsOn\"",
    "\"Conditions\"",
    "\"Parameters\"",
    "\"Outputs\"",
    "\"Transform\"",
    "\"version\":",
    "\"expiresAt\":",
    "-1",
    "0",
    "1e309",
    "18446744073709551616",
    "9007199254740993",
    "\\u0000",
    "\\u001b",
    "\\ud800",
    "null",
    "true",
    "[[[[[[[[",
    "{\"a\":{\"a\":{\"a\":",
    "\r\n",
    "\r\n\r\n",
    "Transfer-Encoding: chunked\r\n",
    "Content-Length: 99999999999\r\n",
    "FFFFFFFFFFFFFFFF\r\n",
    "0\r\n\r\n",
    "Host: localhost\r\n",
    "Expect: 100-continue\r\n",
    "[[plugins]]\n",
    "sha256 = \"",
    "version = \"",
    "path = \"",
    "=",
    "\n",
    "~",
    "/",
    "..",
    "\u{1b}]0;",
    "\u{10ffff}",
];

/// The most any mutated input may grow to (the parsers' own limits are what is fuzzed, not
/// the allocator).
const MAX_INPUT: usize = 1 << 20;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn budget() -> Duration {
    let seconds = std::env::var("CDKD_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0 && *s < 3600.0)
        .unwrap_or(2.0);
    Duration::from_secs_f64(seconds)
}

/// Files under `dir` (one level, or the folders below it too) whose name ends with `suffix`,
/// at most `max_bytes` each.
fn seeds_in(dir: &Path, suffix: &str, deep: bool, max_bytes: u64) -> Vec<Vec<u8>> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() && deep {
            found.extend(seeds_in(&path, suffix, false, max_bytes));
        } else if path.to_string_lossy().ends_with(suffix)
            && path.metadata().is_ok_and(|m| m.len() <= max_bytes)
        {
            found.extend(std::fs::read(&path).ok());
        }
    }
    found
}

/// One mutated input: a seed with one to four mutations.
fn mutate(rng: &mut impl Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut input = seeds[rng.random_range(0..seeds.len())].clone();
    for _ in 0..rng.random_range(1..=4) {
        let len = input.len();
        let at = if len == 0 {
            0
        } else {
            rng.random_range(0..=len)
        };
        match rng.random_range(0..6) {
            0 if len > 0 => {
                let at = at.min(len - 1);
                input[at] = rng.random();
            }
            1 => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                input.splice(at..at, token.iter().copied());
            }
            2 if len > 0 => {
                let end = (at + rng.random_range(1..=64)).min(len);
                input.drain(at.min(end)..end);
            }
            3 if len > 0 => {
                // A repeated range builds the deep nesting recursion trips on.
                let end = (at + rng.random_range(1..=16)).min(len);
                let piece = input[at.min(end)..end].to_vec();
                let times = rng.random_range(1..=200);
                let repeated: Vec<u8> = piece
                    .iter()
                    .copied()
                    .cycle()
                    .take(piece.len() * times)
                    .collect();
                input.splice(at..at, repeated);
            }
            4 => {
                let other = &seeds[rng.random_range(0..seeds.len())];
                if !other.is_empty() {
                    let from = rng.random_range(0..other.len());
                    let end = (from + rng.random_range(1..=256)).min(other.len());
                    input.splice(at..at, other[from..end].iter().copied());
                }
            }
            _ => {
                let token = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                input.extend_from_slice(token);
            }
        }
        input.truncate(MAX_INPUT);
    }
    input
}

/// Runs `target` on mutated seeds for the budget; panics (naming the saved input) on the first
/// input that makes it panic.
fn fuzz(name: &str, seeds: Vec<Vec<u8>>, mut target: impl FnMut(&[u8])) {
    assert!(!seeds.is_empty(), "fuzz target {name} found no seeds");
    let mut rng = rand::rng();
    let started = Instant::now();
    let budget = budget();
    let mut executions = 0u64;
    // The seeds themselves first: they must all pass.
    let mut queue: Vec<Vec<u8>> = seeds.clone();
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut crashed = None;
    while started.elapsed() < budget || !queue.is_empty() {
        let input = queue.pop().unwrap_or_else(|| mutate(&mut rng, &seeds));
        executions += 1;
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| target(&input))) {
            let message = (panic.downcast_ref::<String>().cloned())
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            crashed = Some((input, message));
            break;
        }
    }
    std::panic::set_hook(previous_hook);
    if let Some((input, message)) = crashed {
        let dir = repository().join("target/fuzz-crashes");
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::write(&path, &input);
        panic!(
            "fuzz target {name} panicked after {executions} executions: {message}; input saved to {}",
            path.display()
        );
    }
    println!(
        "fuzz {name}: {executions} executions of inputs mutated from {} seeds in {:.1} s, no panic",
        seeds.len(),
        started.elapsed().as_secs_f64()
    );
}

struct NoExternal;

impl ExternalValues for NoExternal {
    fn import_value(&self, name: &str) -> Lookup {
        Lookup::Missing(format!("no export {name}"))
    }
    fn stack_output(&self, _: &str, _: &str, _: &str) -> Lookup {
        Lookup::Unknown
    }
    fn availability_zones(&self, _: &str) -> Lookup {
        Lookup::Known(serde_json::json!(["us-east-1a", "us-east-1b"]))
    }
}

impl CreateOnlyProperties for NoExternal {
    fn create_only(&self, _: &str) -> Vec<String> {
        Vec::new()
    }
}

fn template_seeds() -> Vec<Vec<u8>> {
    seeds_in(
        &repository().join("tests/fixtures/cdk.out"),
        ".template.json",
        true,
        64 * 1024,
    )
}

#[test]
#[ignore = "fuzzing: run by CI with --ignored"]
fn templates_plans_and_intrinsics() {
    let context = StackContext {
        stack_name: "Fuzz".into(),
        region: "us-east-1".into(),
        account: "123456789012".into(),
        ref_values: std::sync::Arc::new(RefValues::builtin()),
        availability_zones: BTreeMap::new(),
    };
    let parameters = BTreeMap::from([("Env".to_string(), Value::String("dev".into()))]);
    fuzz("templates", template_seeds(), |input| {
        let Ok(document) = serde_json::from_slice::<Value>(input) else {
            return;
        };
        let Ok(template) = Template::parse(&document) else {
            return;
        };
        let _ = template.referenced_attributes(&parameters);
        let _ = plan(
            &template,
            None,
            &context,
            &parameters,
            &NoExternal,
            &NoExternal,
        );
    });
}

#[test]
#[ignore = "fuzzing: run by CI with --ignored"]
fn state_records_of_every_version() {
    let seeds = seeds_in(
        &repository().join("host/src/state/testdata/roundtrip"),
        ".json",
        false,
        1 << 20,
    );
    fuzz("state", seeds, |input| {
        let _ = crate::state::upgrade::read_state(input);
        let _ = serde_json::from_slice::<crate::state::schema::LockInfo>(input);
    });
}

#[test]
#[ignore = "fuzzing: run by CI with --ignored"]
fn plugins_files() {
    let mut seeds = seeds_in(&repository(), "plugins.toml", false, 1 << 20);
    seeds.extend(seeds_in(
        &repository().join("tests/fixtures"),
        "plugins.toml",
        false,
        1 << 20,
    ));
    let path = repository().join("plugins.toml");
    fuzz("plugins-files", seeds, |input| {
        let text = String::from_utf8_lossy(input);
        let _ = crate::provisioning::plugins_file::PluginsFile::parse(
            &text,
            &path,
            crate::provisioning::plugins_file::PluginsFileSource::Flag,
        );
    });
}

#[test]
#[ignore = "fuzzing: run by CI with --ignored"]
fn cloud_assembly_manifests() {
    let seeds = seeds_in(
        &repository().join("tests/fixtures/cdk.out"),
        "manifest.json",
        true,
        64 * 1024,
    );
    let dir = tempfile::tempdir().expect("a temporary folder");
    fuzz("assembly-manifests", seeds, |input| {
        if std::fs::write(dir.path().join("manifest.json"), input).is_ok() {
            let _ = crate::synthesis::assembly::CloudAssembly::read(dir.path());
        }
    });
}

#[test]
#[ignore = "fuzzing: run by CI with --ignored"]
fn start_api_requests() {
    let seeds: Vec<Vec<u8>> = [
        "GET /items?id=1 HTTP/1.1\r\nHost: localhost:3000\r\n\r\n",
        "POST /items HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello",
        "PUT /a HTTP/1.1\r\nHost: [::1]:8080\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    fuzz("start-api-requests", seeds, |input| {
        runtime.block_on(async {
            let (mut client, server) = tokio::io::duplex(MAX_INPUT + 1024);
            use tokio::io::AsyncWriteExt;
            let _ = client.write_all(input).await;
            drop(client);
            let mut server = tokio::io::BufReader::new(server);
            let _ = crate::local::server::read_message(
                &mut server,
                Some(b"HTTP/1.1 100 Continue\r\n\r\n"),
            )
            .await;
        });
    });
}

#[test]
fn the_harness_reports_the_input_that_panics() {
    let seeds = vec![b"{\"Resources\": {}}".to_vec()];
    let found = catch_unwind(|| {
        fuzz("harness-check", seeds, |input| {
            let text = String::from_utf8_lossy(input);
            assert!(!text.contains("Fn::If"), "an input with Fn::If");
        })
    });
    let message = found.expect_err("the planted panic is found");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("harness-check panicked after")
            && message.contains("an input with Fn::If"),
        "{message}"
    );
}
