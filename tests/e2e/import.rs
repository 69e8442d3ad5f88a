//! `cdkd import` on a real CDK app (tests/fixtures/apps/drift.js): resources made with boto3 are
//! adopted by explicit ids, a mapping file and `--auto`, composite ids included; bad requests
//! are refused with nothing written; a deploy afterwards changes nothing it adopted.

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{workspace_root, Emulator, Run};
use serde_json::{json, Value};

const STACK: &str = "DriftStack";

fn import(world: &AppWorld, args: &[&str]) -> Run {
    let app = world.assembly.path().display().to_string();
    let mut all = vec!["import", "-a", &app];
    all.extend_from_slice(args);
    world.cdkd(&all)
}

fn refused(run: &Run, expected: &str) {
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("nothing was imported") && run.stderr.contains(expected),
        "expected {expected:?} in:\n{}",
        run.stderr
    );
}

#[test]
fn resources_made_outside_cdkd_are_imported_and_a_deploy_changes_nothing() {
    let suffix = Emulator::unique("imp");
    let setup = workspace_root().join("tests/fixtures/apps/import-setup.py");
    let made = Emulator::shared().boto(&format!(
        "__import__('runpy').run_path('{}', init_globals={{'c': c, 'SUFFIX': '{suffix}'}})['RESULT']",
        setup.display()
    ));
    let world = AppWorld::of("drift", STACK, "import", |t| {
        let resources = &mut t["Resources"];
        resources["Bucket"]["Properties"]["BucketName"] = json!(format!("imp-bucket-{suffix}"));
        resources["Role"]["Properties"]["RoleName"] = json!(format!("imp-role-{suffix}"));
        resources["Fn"]["Properties"]["FunctionName"] = json!(format!("imp-fn-{suffix}"));
        resources["Group"]["Properties"]["GroupName"] = json!(format!("imp-sg-{suffix}"));
        // A type whose plugin has no importer (the example plugin's test double).
        resources["Opaque"] = json!({"Type": "Acme::Echo::Fault", "Properties": {}});
    });
    let id = |logical_id: &str| made[logical_id].as_str().unwrap().to_string();

    // Refused, each naming what is wrong; nothing is written.
    refused(
        &import(&world, &["--resource", "Nope=x"]),
        "Nope is not a resource of the template",
    );
    let group = id("Group");
    refused(
        &import(&world, &["--resource", &format!("Ingress={group}|tcp")]),
        "has 2",
    );
    refused(
        &import(&world, &["--resource", "Vpc=vpc-0000000000000dead"]),
        "does not exist",
    );
    refused(
        &import(&world, &["--resource", "Opaque=fault-Opaque"]),
        "no importer for Acme::Echo::Fault",
    );
    let none = world.cdkd(&["state", "show", STACK, "--json"]);
    assert_ne!(none.code, Some(0), "a refused import wrote state");

    // By explicit id, then by a mapping file (composite ids included), then by name.
    let queue = id("Queue");
    let first = import(&world, &["--resource", &format!("Queue={queue}")]).success();
    assert!(
        first.stdout.contains("1 resource(s) imported"),
        "{}",
        first.stdout
    );
    let mapping = tempfile::NamedTempFile::new().unwrap();
    let mut file: serde_json::Map<String, Value> = made.as_object().unwrap().clone();
    file.remove("Queue");
    std::fs::write(mapping.path(), Value::Object(file).to_string()).unwrap();
    let mapped = import(
        &world,
        &["--resource-mapping", &mapping.path().display().to_string()],
    )
    .success();
    assert!(
        mapped.stdout.contains("7 resource(s) imported"),
        "{}",
        mapped.stdout
    );
    refused(
        &import(&world, &["--resource", &format!("Queue={queue}")]),
        "Queue is already in state",
    );
    let auto = import(&world, &["--auto"]).success();
    for logical_id in ["Bucket", "Role", "Fn"] {
        assert!(
            auto.stdout.contains(&format!("imported {logical_id} (")),
            "{}",
            auto.stdout
        );
    }
    assert!(
        auto.stdout.contains("skipped Queue: already in state"),
        "{}",
        auto.stdout
    );
    assert!(
        auto.stdout
            .contains("skipped Opaque: the template gives it no physical name"),
        "{}",
        auto.stdout
    );
    let forced = import(
        &world,
        &["--resource", &format!("Queue={queue}"), "--force"],
    )
    .success();
    assert!(
        forced.stdout.contains("recorded again (--force)"),
        "{}",
        forced.stdout
    );

    // Recorded as a deploy records: ids, layer, baseline.
    let record = world.resources(STACK);
    assert_eq!(
        record["Ingress"]["physicalId"],
        json!(format!("{group}|tcp|8080|8080"))
    );
    assert_eq!(record["Route"]["physicalId"], made["Route"]);
    assert_eq!(record["Queue"]["provisionedBy"], json!("cc-api"));
    assert_eq!(record["Role"]["provisionedBy"], json!("sdk"));
    assert_eq!(record["Fn"]["observedProperties"]["MemorySize"], json!(128));
    assert!(
        record["Role"]["attributes"]["Arn"].is_string(),
        "{}",
        record["Role"]
    );

    // Nothing adopted is changed by the next deploy; only the type with no importer is made.
    let app = world.assembly.path().display().to_string();
    let diff = world.cdkd(&["diff", "-a", &app]).success();
    assert!(
        diff.stdout
            .contains("1 to create, 0 to update (0 replaced), 0 to delete, 11 unchanged"),
        "{}",
        diff.stdout
    );
    let deployed = world.cdkd(&["deploy", "-a", &app]).success();
    assert!(
        deployed
            .stdout
            .contains("1 created, 0 updated, 0 replaced, 0 deleted, 11 unchanged"),
        "{}",
        deployed.stdout
    );
    let rules = Emulator::shared().boto(&format!(
        "sorted(p['FromPort'] for p in c('ec2').describe_security_groups(GroupIds=['{group}'])['SecurityGroups'][0]['IpPermissions'])"
    ));
    assert_eq!(rules, json!([443, 8080]));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(2), "{}", drift.stdout);
    assert!(drift.stdout.contains("no drift found"), "{}", drift.stdout);
}
