//! `cdkd diff` tells what `cdkd deploy` would do (issue 30, section 1): for every fixture app a
//! deploy can run against the emulator, `diff --all --fail` right after `deploy --all` reports no
//! change and exits 0; a real change is listed, makes `--fail` exit 1, and is exactly what the
//! next deploy makes; a change inside a nested stack is shown as the child's own resource
//! change.
//!
//! Fixture apps left out, and why:
//! - `widget`: its types come from the plugin `tests/e2e/authoring.rs` builds outside the
//!   workspace (not loaded here);
//! - `nestedmigrate`: a CloudFormation stack of the same name is its subject (`cdkd import
//!   --migrate-from-cloudformation`); a plain deploy of it is not what it is for;
//! - `export`'s `ReaderStack` reads `HandoverStack` through CloudFormation after an export: only
//!   `HandoverStack` and `NetStack` are deployed here;
//! - `annotated`: its subject is the refusal of a stack with an error annotation
//!   (tests/e2e/deploy_options.rs);
//! - the lookup apps (`lookup`, `lookups`) are synthesized by `tests/e2e/analysis.rs` at run time
//!   (they have no folder under tests/fixtures/cdk.out).

use std::path::Path;

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{workspace_root, Emulator, Run};
use serde_json::{json, Value};

const DIFF_TRUTH: &str = "DiffTruthStack";
const AMI_PARAMETER: &str = "/cdkd/difftruth/ami";
/// The start of the child template's asset hash in the parent's `TemplateURL`.
const CHILD_TEMPLATE_HASH: &str = "2063b81a";

/// The environment a fixture's deploy needs (the docker stand-in for image assets).
fn env_for(fixture: &str, scratch: &Path) -> Vec<(String, String)> {
    match fixture {
        "container" => vec![
            (
                "CDK_DOCKER".into(),
                workspace_root()
                    .join("tests/fixtures/docker-stand-in.sh")
                    .display()
                    .to_string(),
            ),
            (
                "CDKD_DOCKER_LOG".into(),
                scratch.join("docker.log").display().to_string(),
            ),
        ],
        _ => Vec::new(),
    }
}

/// What a fixture needs in AWS before its first deploy (what its own suite seeds, made only
/// when missing, so that suite's values stay).
fn set_up(fixture: &str) {
    if fixture == "secrets" {
        let value = json!({"username": "cdkd", "password": "diff-truth"}).to_string();
        Emulator::shared().boto(&format!(
            "(lambda sm: None if [s for s in sm.list_secrets()['SecretList'] if s['Name'] == 'cdkd/test/db'] \
             else sm.create_secret(Name='cdkd/test/db', SecretString={value:?}))(c('secretsmanager')) and None"
        ));
        Emulator::shared().boto(
            "[c('ssm').put_parameter(Name=n, Value='diff-truth', Type=t) \
              for n, t in [('/cdkd/test/greeting', 'String'), ('/cdkd/test/token', 'SecureString')] \
              if not [p for p in c('ssm').describe_parameters()['Parameters'] if p['Name'] == n]] and None",
        );
    }
    if fixture == "difftruth" {
        let emulator = Emulator::shared();
        let image = emulator.boto("c('ec2').describe_images()['Images'][0]['ImageId']");
        emulator.boto(&format!(
            "c('ssm').put_parameter(Name='{AMI_PARAMETER}', Value='{}', Type='String', Overwrite=True)['Version']",
            image.as_str().unwrap()
        ));
    }
}

/// What a fixture's copy needs before its deploy: `alb` names its listener certificates by
/// placeholder, replaced by certificates imported into the emulator's ACM (as tests/e2e/alb.rs).
fn prepare(fixture: &str, world: &AppWorld) {
    if fixture != "alb" {
        return;
    }
    let setup = workspace_root().join("tests/fixtures/apps/alb-certs.py");
    let arns = Emulator::shared().boto(&format!(
        "__import__('runpy').run_path('{}', init_globals={{'c': c}})['RESULT']",
        setup.display()
    ));
    let path = world.assembly.path().join("AlbStack.template.json");
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (placeholder, arn) in arns.as_object().unwrap() {
        text = text.replace(placeholder.as_str(), arn.as_str().unwrap());
    }
    std::fs::write(&path, text).unwrap();
}

fn run(world: &AppWorld, args: &[&str], env: &[(String, String)]) -> Run {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    world.cdkd_with_env(args, &env)
}

/// `cdkd diff --fail --json` of `stacks` (with `-a` the world's assembly).
fn diff(world: &AppWorld, stacks: &[&str], env: &[(String, String)]) -> Run {
    let app = world.assembly.path().display().to_string();
    let mut args = vec!["diff", "-a", &app, "--fail", "--json"];
    args.extend_from_slice(stacks);
    run(world, &args, env)
}

/// Deploys `stacks` of `fixture` (`--all` when empty), then asserts that diff finds nothing.
fn deploy_then_no_difference(fixture: &str, stacks: &[&str]) {
    set_up(fixture);
    let world = AppWorld::unedited(fixture, &format!("dt-{fixture}"));
    prepare(fixture, &world);
    let scratch = tempfile::tempdir().unwrap();
    let env = env_for(fixture, scratch.path());
    let app = world.assembly.path().display().to_string();
    let selection: Vec<&str> = if stacks.is_empty() {
        vec!["--all"]
    } else {
        stacks.to_vec()
    };
    let mut args = vec!["deploy", "-a", &app, "--progress", "events"];
    args.extend_from_slice(&selection);
    run(&world, &args, &env).success();

    let found = diff(&world, &selection, &env);
    let document = found.json();
    assert_eq!(
        (found.code, &document["hasChanges"]),
        (Some(0), &json!(false)),
        "{fixture}: diff after deploy reports changes:\n{}\nstderr:\n{}",
        found.stdout,
        found.stderr
    );
    // The text form says so for every stack, nested ones included.
    let mut text = vec!["diff", "-a", &app, "--fail"];
    text.extend_from_slice(&selection);
    let text = run(&world, &text, &env);
    assert_eq!(text.code, Some(0), "{}\n{}", text.stdout, text.stderr);
    assert!(!text.stdout.contains("[~]"), "{}", text.stdout);
    assert!(!text.stdout.contains("[+]"), "{}", text.stdout);
    assert!(!text.stdout.contains("[-]"), "{}", text.stdout);

    run(&world, &["destroy", "-a", &app, "--all", "-f"], &env).success();
}

macro_rules! no_difference_after_deploy {
    ($($name:ident: $fixture:literal $([$($stack:literal),*])?;)*) => {$(
        #[test]
        fn $name() {
            deploy_then_no_difference($fixture, &[$($($stack),*)?]);
        }
    )*};
}

no_difference_after_deploy! {
    alb_diffs_clean: "alb";
    app_diffs_clean: "app";
    appscaling_diffs_clean: "appscaling";
    asg_diffs_clean: "asg";
    autodelete_diffs_clean: "autodelete";
    children_diffs_clean: "children";
    cognito_diffs_clean: "cognito";
    container_diffs_clean: "container";
    core_diffs_clean: "core";
    cross_diffs_clean: "cross";
    custom_diffs_clean: "custom";
    data_diffs_clean: "data";
    demo_diffs_clean: "demo";
    difftruth_diffs_clean: "difftruth";
    dns_diffs_clean: "dns";
    drift_diffs_clean: "drift";
    export_diffs_clean: "export" ["HandoverStack", "NetStack"];
    fargate_diffs_clean: "fargate";
    framework_diffs_clean: "framework";
    httpapi_diffs_clean: "httpapi";
    integration_diffs_clean: "integration";
    local_diffs_clean: "local";
    messaging_diffs_clean: "messaging";
    nested_diffs_clean: "nested";
    nested3_diffs_clean: "nested3";
    noecho_diffs_clean: "noecho";
    notifications_diffs_clean: "notifications";
    ordering_diffs_clean: "ordering";
    restapi_diffs_clean: "restapi";
    secrets_diffs_clean: "secrets";
    snapshots_diffs_clean: "snapshots";
    snsbacked_diffs_clean: "snsbacked";
    soak_diffs_clean: "soak";
    stages_diffs_clean: "stages";
    storage_diffs_clean: "storage";
    vpc_diffs_clean: "vpc";
    vpcsoak_diffs_clean: "vpcsoak";
    wafmap_diffs_clean: "wafmap";
    website_diffs_clean: "website";
    workflows_diffs_clean: "workflows";
}

/// The changes `diff --json` lists for `stack` (a top-level stack or a nested one, by name).
fn changes_of<'a>(document: &'a Value, stack: &str) -> Vec<&'a Value> {
    fn visit<'a>(stacks: &'a Value, stack: &str, found: &mut Vec<&'a Value>) {
        for entry in stacks.as_array().into_iter().flatten() {
            if entry["stackName"] == stack {
                found.extend(
                    (entry["changes"].as_array().into_iter().flatten())
                        .filter(|c| c["action"] != "NO_CHANGE"),
                );
            }
            visit(&entry["nested"], stack, found);
        }
    }
    let mut found = Vec::new();
    visit(&document["stacks"], stack, &mut found);
    found
}

#[test]
fn a_real_change_fails_diff_and_is_exactly_what_the_next_deploy_makes() {
    set_up("difftruth");
    let world = AppWorld::of("difftruth", DIFF_TRUTH, "dt-change", |_| {});
    let app = world.assembly.path().display().to_string();
    world.deploy(&["--progress", "events"]).success();
    let before = world.state();

    world.edit(|t| {
        t["Resources"]["Handler886CB40B"]["Properties"]["Description"] = json!("changed");
    });
    let found = diff(&world, &[], &[]);
    assert_eq!(found.code, Some(1), "{}\n{}", found.stdout, found.stderr);
    let document = found.json();
    assert_eq!(document["hasChanges"], json!(true));
    let changes = changes_of(&document, DIFF_TRUTH);
    assert_eq!(changes.len(), 1, "{}", found.stdout);
    assert_eq!(changes[0]["logicalId"], "Handler886CB40B");
    assert_eq!(changes[0]["action"], "UPDATE");
    let properties: Vec<&Value> = (changes[0]["properties"].as_array().unwrap().iter())
        .map(|p| &p["name"])
        .collect();
    assert_eq!(properties, [&json!("Description")], "{}", found.stdout);
    let text = world.cdkd(&["diff", "-a", &app]).success().stdout;
    assert!(
        text.contains("[~] AWS::Lambda::Function Handler886CB40B"),
        "{text}"
    );
    assert!(text.contains("changed"), "{text}");

    // The deploy makes that change and nothing else.
    let deployed = world.deploy(&["--progress", "events"]).success().stdout;
    assert!(
        deployed.contains(&format!(
            "{DIFF_TRUTH}: 0 created, 1 updated, 0 replaced, 0 deleted"
        )),
        "{deployed}"
    );
    let after = world.state();
    for (id, was) in before["resources"].as_object().unwrap() {
        let now = &after["resources"][id];
        if id == "Handler886CB40B" {
            assert_eq!(now["properties"]["Description"], "changed");
            assert_eq!(now["physicalId"], was["physicalId"]);
        } else {
            assert_eq!(now["properties"], was["properties"], "{id} changed");
        }
    }
    let clean = diff(&world, &[], &[]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    world.cdkd(&["destroy", "-a", &app, "-f"]).success();
}

#[test]
fn a_change_inside_a_nested_stack_is_shown_as_the_childs_resource_change() {
    set_up("difftruth");
    let world = AppWorld::of("difftruth", DIFF_TRUTH, "dt-nested", |_| {});
    let app = world.assembly.path().display().to_string();
    world.deploy(&["--progress", "events"]).success();
    let child = format!("{DIFF_TRUTH}~ChildNestedStackChildNestedStackResourceC40294CA");

    // As a new synth makes it: the child's template changes, and with it its asset hash.
    let folder = world.assembly.path();
    let file = folder.join("DiffTruthStackChildFC187A6F.nested.template.json");
    let mut template: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let queue = (template["Resources"].as_object().unwrap().iter())
        .find(|(_, r)| r["Type"] == "AWS::SQS::Queue")
        .map(|(id, _)| id.clone())
        .unwrap();
    template["Resources"][&queue]["Properties"]["VisibilityTimeout"] = json!(45);
    std::fs::write(&file, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
    world.edit(|t| {
        let text = serde_json::to_string(t)
            .unwrap()
            .replace(CHILD_TEMPLATE_HASH, "f063b81a");
        *t = serde_json::from_str(&text).unwrap();
    });

    let found = diff(&world, &[], &[]);
    assert_eq!(found.code, Some(1), "{}\n{}", found.stdout, found.stderr);
    let document = found.json();
    let changes = changes_of(&document, &child);
    assert_eq!(changes.len(), 1, "{}", found.stdout);
    assert_eq!(changes[0]["logicalId"], json!(queue));
    let properties: Vec<&Value> = (changes[0]["properties"].as_array().unwrap().iter())
        .map(|p| &p["name"])
        .collect();
    assert_eq!(
        properties,
        [&json!("VisibilityTimeout")],
        "{}",
        found.stdout
    );
    let text = world.cdkd(&["diff", "-a", &app]).success().stdout;
    assert!(
        text.contains(&format!("[~] AWS::SQS::Queue {queue}")),
        "{text}"
    );
    assert!(text.contains("VisibilityTimeout"), "{text}");

    let deployed = world.deploy(&["--progress", "events"]).success().stdout;
    assert!(
        deployed.contains(&format!(
            "{child}: 0 created, 1 updated, 0 replaced, 0 deleted"
        )),
        "{deployed}"
    );
    let clean = diff(&world, &[], &[]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    world.cdkd(&["destroy", "-a", &app, "-f"]).success();
}
