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
        // A type whose plugin has no importer (the test plugin's `Fault`).
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
    assert_eq!(record["Queue"]["provisionedBy"], json!("sdk"));
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

#[test]
fn a_cloudformation_stack_is_migrated_and_retired_with_every_resource_kept() {
    let cfn_stack = format!("Cfn{}", Emulator::unique("mig").replace('-', ""));
    // A template over CloudFormation's inline limit: the Retain update goes through the state
    // bucket, and the upload is purged afterwards.
    let world = AppWorld::of("drift", STACK, "migrate", |t| {
        t["Metadata"] = json!({"Padding": "x".repeat(60_000)});
    });
    let template = world.assembly.path().join("DriftStack.template.json");
    let emulator = Emulator::shared();
    let made = emulator.boto(&format!(
        "(lambda s3, cfn: [c('ssm').put_parameter(Name='/cdk-bootstrap/hnb659fds/version', Value='30', Type='String', Overwrite=True), \
           s3.create_bucket(Bucket='{bucket}-cfn'), \
           s3.put_object(Bucket='{bucket}-cfn', Key='t.json', Body=open('{template}').read()), \
           cfn.create_stack(StackName='{cfn_stack}', TemplateURL='https://{bucket}-cfn.s3.us-east-1.amazonaws.com/t.json', Capabilities=['CAPABILITY_IAM']), \
           {{r['LogicalResourceId']: r.get('PhysicalResourceId') for r in cfn.describe_stack_resources(StackName='{cfn_stack}')['StackResources'] if r.get('LogicalResourceId')}}][-1])(c('s3'), c('cloudformation'))",
        bucket = world.bucket,
        template = template.display(),
    ));
    let physical = |logical_id: &str| made[logical_id].as_str().unwrap().to_string();

    let migrated = import(
        &world,
        &["--migrate-from-cloudformation", &cfn_stack, "--yes"],
    )
    .success();
    assert!(
        migrated
            .stdout
            .contains(&format!("CloudFormation stack {cfn_stack} retired")),
        "{}",
        migrated.stdout
    );

    // The CloudFormation stack is gone; every resource survived and is recorded.
    let stacks = emulator.boto(&format!(
        "[s['StackStatus'] for s in c('cloudformation').list_stacks()['StackSummaries'] if s['StackName'] == '{cfn_stack}']"
    ));
    assert_eq!(stacks, json!(["DELETE_COMPLETE"]));
    let survivors = emulator.boto(&format!(
        "[c('sqs').get_queue_attributes(QueueUrl='{queue}', AttributeNames=['VisibilityTimeout'])['Attributes']['VisibilityTimeout'], \
          c('s3').head_bucket(Bucket='{bucket}')['ResponseMetadata']['HTTPStatusCode'], \
          c('iam').get_role(RoleName='{role}')['Role']['RoleName'], \
          len(c('ec2').describe_security_groups(GroupIds=['{group}'])['SecurityGroups']), \
          len(c('ec2').describe_route_tables(RouteTableIds=['{routes}'])['RouteTables'][0]['Routes']), \
          c('lambda').get_function(FunctionName='{function}')['Configuration']['MemorySize']]",
        queue = physical("Queue"),
        bucket = physical("Bucket"),
        role = physical("Role"),
        group = physical("Group"),
        routes = physical("Routes"),
        function = physical("Fn"),
    ));
    assert_eq!(survivors, json!(["30", 200, physical("Role"), 1, 2, 128]));
    let record = world.resources(STACK);
    assert_eq!(record.as_object().unwrap().len(), 11, "{record}");
    let group = physical("Group");
    assert_eq!(
        record["Ingress"]["physicalId"],
        json!(format!("{group}|tcp|8080|8080"))
    );
    assert_eq!(
        record["Route"]["physicalId"],
        json!(format!("{}|10.9.0.0/16", physical("Routes")))
    );
    let leftovers = emulator.boto(&format!(
        "[v['Key'] for v in c('s3').list_object_versions(Bucket='{}', Prefix='cdkd-migrate-tmp/').get('Versions', [])]",
        world.bucket
    ));
    assert_eq!(
        leftovers,
        json!([]),
        "the transient template was not purged"
    );

    // cdkd now owns them: a deploy changes nothing, drift finds nothing.
    let app = world.assembly.path().display().to_string();
    let deployed = world.cdkd(&["deploy", "-a", &app]).success();
    assert!(
        deployed
            .stdout
            .contains("0 created, 0 updated, 0 replaced, 0 deleted, 11 unchanged"),
        "{}",
        deployed.stdout
    );
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(0), "{}", drift.stdout);
}

#[test]
fn nested_cloudformation_stacks_are_migrated_each_into_its_own_record() {
    const PARENT: &str = "NestedMigrateStack";
    const NESTED: &str = "WorkersNestedStackWorkersNestedStackResourceCEAEF017";
    let cfn_stack = format!("Nm{}", Emulator::unique("nm").replace('-', ""));
    let world = AppWorld::of("nestedmigrate", PARENT, "nmigrate", |_| {});
    let assembly = world.assembly.path();
    let emulator = Emulator::shared();
    // What `cdk deploy` would have published: the nested template where the parent's
    // TemplateURL points.
    let assets: Value = serde_json::from_slice(
        &std::fs::read(assembly.join(format!("{PARENT}.assets.json"))).unwrap(),
    )
    .unwrap();
    for file in assets["files"].as_object().unwrap().values() {
        let source = assembly.join(file["source"]["path"].as_str().unwrap());
        for destination in file["destinations"].as_object().unwrap().values() {
            let bucket = destination["bucketName"]
                .as_str()
                .unwrap()
                .replace("${AWS::AccountId}", "123456789012")
                .replace("${AWS::Region}", "us-east-1");
            let key = destination["objectKey"].as_str().unwrap();
            emulator.boto(&format!(
                "[c('s3').create_bucket(Bucket='{bucket}') if '{bucket}' not in [b['Name'] for b in c('s3').list_buckets()['Buckets']] else None, \
                  c('s3').put_object(Bucket='{bucket}', Key='{key}', Body=open('{}').read())] and None",
                source.display()
            ));
        }
    }
    let made = emulator.boto(&format!(
        "(lambda cfn: [c('ssm').put_parameter(Name='/cdk-bootstrap/hnb659fds/version', Value='30', Type='String', Overwrite=True), \
           cfn.create_stack(StackName='{cfn_stack}', TemplateBody=open('{}').read(), Capabilities=['CAPABILITY_IAM']), \
           (lambda rows: {{'rows': rows, 'child': [r['PhysicalResourceId'] for r in rows if r['LogicalResourceId'] == '{NESTED}'][0]}})({{}} or [{{'LogicalResourceId': r.get('LogicalResourceId'), 'PhysicalResourceId': r.get('PhysicalResourceId')}} for r in cfn.describe_stack_resources(StackName='{cfn_stack}')['StackResources']])][-1])(c('cloudformation'))",
        assembly.join(format!("{PARENT}.template.json")).display()
    ));
    let child_stack = made["child"].as_str().unwrap().to_string();
    let children = emulator.boto(&format!(
        "{{r['LogicalResourceId']: r.get('PhysicalResourceId') for r in c('cloudformation').describe_stack_resources(StackName='{child_stack}')['StackResources'] if r.get('LogicalResourceId')}}"
    ));
    let parents: serde_json::Map<String, Value> = made["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            Some((
                r["LogicalResourceId"].as_str()?.to_string(),
                r["PhysicalResourceId"].clone(),
            ))
        })
        .collect();

    let migrated = import(
        &world,
        &["--migrate-from-cloudformation", &cfn_stack, "--yes"],
    )
    .success();
    assert!(
        migrated
            .stdout
            .contains(&format!("nested stack {PARENT}~{NESTED}:")),
        "{}",
        migrated.stdout
    );

    // Both CloudFormation stacks are gone; every resource survived.
    let statuses = emulator.boto(&format!(
        "sorted(s['StackStatus'] for s in c('cloudformation').list_stacks()['StackSummaries'] if s['StackName'] in ('{cfn_stack}', '{child_stack}'))"
    ));
    assert_eq!(statuses, json!(["DELETE_COMPLETE", "DELETE_COMPLETE"]));
    let queue = children["Queue"].as_str().unwrap();
    let topic = children["Topic"].as_str().unwrap();
    let bucket = parents["Bucket"].as_str().unwrap();
    let parameter = parents["QueueArnParam"].as_str().unwrap();
    let survivors = emulator.boto(&format!(
        "[c('sqs').get_queue_attributes(QueueUrl='{queue}', AttributeNames=['QueueArn'])['Attributes']['QueueArn'], \
          c('sns').get_topic_attributes(TopicArn='{topic}')['Attributes']['DisplayName'], \
          c('s3').head_bucket(Bucket='{bucket}')['ResponseMetadata']['HTTPStatusCode'], \
          c('ssm').get_parameter(Name='{parameter}')['Parameter']['Value']]"
    ));
    let queue_arn = survivors[0].clone();
    assert_eq!(survivors, json!([queue_arn, bucket, 200, queue_arn]));

    // One record per stack, the child's linked to its parent, the parent holding the
    // child's stable id and outputs.
    let parent = world
        .cdkd(&["state", "show", PARENT, "--json"])
        .success()
        .json()["state"]
        .clone();
    let row = &parent["resources"][NESTED];
    assert_eq!(
        row["physicalId"],
        json!(format!(
            "arn:aws:cloudformation:us-east-1:123456789012:stack/{PARENT}~{NESTED}/cdkd"
        ))
    );
    assert_eq!(
        row["attributes"]["Outputs.NestedMigrateStackWorkersQueue16F049CEArn"],
        queue_arn
    );
    let child_record = format!("{PARENT}~{NESTED}");
    let child = world
        .cdkd(&["state", "show", &child_record, "--json"])
        .success()
        .json()["state"]
        .clone();
    assert_eq!(child["parentStack"], json!(PARENT));
    assert_eq!(child["parentLogicalId"], json!(NESTED));
    assert_eq!(
        child["resources"]["Queue"]["physicalId"].as_str(),
        Some(queue)
    );
    assert_eq!(
        child["outputs"]["NestedMigrateStackWorkersQueue16F049CEArn"],
        queue_arn
    );

    // cdkd owns the tree now: a deploy changes nothing and drift finds nothing in either record.
    let deployed = world
        .cdkd(&["deploy", "-a", &assembly.display().to_string()])
        .success();
    assert!(
        deployed
            .stdout
            .contains("0 created, 0 updated, 0 replaced, 0 deleted, 3 unchanged"),
        "{}",
        deployed.stdout
    );
    let drift = world.cdkd(&["drift", PARENT]);
    assert_eq!(drift.code, Some(0), "{}", drift.stdout);
    assert!(drift.stdout.contains(&child_record), "{}", drift.stdout);
}
