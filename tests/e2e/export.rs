//! `cdkd export` against the emulator's CloudFormation, on a real CDK app
//! (tests/fixtures/apps/export.js): a stack deployed by cdkd is handed over with every resource
//! keeping its id; every refusal exits 1 naming its offenders with nothing changed; a stack
//! that reads the exported one by `Fn::GetStackOutput` keeps deploying through the
//! CloudFormation fallback.

use serde_json::{json, Value};

use cdkd_tests::{AppWorld, Emulator, Run};

/// A CDK-bootstrapped account has this parameter; the templates' `BootstrapVersion` reads it.
fn bootstrapped() {
    Emulator::shared().boto(
        "c('ssm').put_parameter(Name='/cdk-bootstrap/hnb659fds/version', Value='30', Type='String', Overwrite=True) and None",
    );
}

fn export(world: &AppWorld, stack: &str, extra: &[&str]) -> Run {
    let app = world.assembly.path().display().to_string();
    let mut args = vec!["export", stack, "-a", &app];
    args.extend_from_slice(extra);
    world.cdkd(&args)
}

fn failed(run: &Run) -> &str {
    assert_eq!(
        run.code,
        Some(1),
        "expected a refusal:\n{}\n{}",
        run.stdout,
        run.stderr
    );
    &run.stderr
}

/// The CloudFormation stack `name`: `null` when there is none.
fn cfn_stack(name: &str) -> Value {
    Emulator::shared().boto(&format!(
        "(lambda s: s[0] if s else None)([s for s in c('cloudformation').list_stacks()['StackSummaries'] if s['StackName'] == '{name}' and s['StackStatus'] != 'DELETE_COMPLETE'])"
    ))
}

/// Logical id → physical id of a CloudFormation stack's resources.
fn cfn_resources(name: &str) -> Value {
    Emulator::shared().boto(&format!(
        "{{r['LogicalResourceId']: r.get('PhysicalResourceId') for r in c('cloudformation').describe_stack_resources(StackName='{name}')['StackResources'] if 'LogicalResourceId' in r}}"
    ))
}

/// What AWS holds of the kinds HandoverStack makes (its names only: other tests of this file
/// run beside it), to see nothing was made twice.
fn inventory() -> Value {
    Emulator::shared().boto(
        "(lambda mine: {'queues': mine(c('sqs').list_queues().get('QueueUrls', [])), \
          'topics': mine(t['TopicArn'] for t in c('sns').list_topics()['Topics']), \
          'roles': mine(r['RoleName'] for r in c('iam').list_roles()['Roles']), \
          'functions': mine(f['FunctionName'] for f in c('lambda').list_functions()['Functions'])})\
         (lambda names: sorted(n for n in names if 'andover' in n))",
    )
}

#[test]
fn a_stack_is_handed_over_to_cloudformation_with_every_resource_kept() {
    bootstrapped();
    let world = AppWorld::without_assets("export", "HandoverStack", "export");
    // The default name: ReaderStack's Fn::GetStackOutput names the stack, and finds it in
    // CloudFormation after the export.
    let cfn_name = "HandoverStack".to_string();
    world
        .deploy(&["HandoverStack", "--progress", "events"])
        .success();
    let recorded = world.resources("HandoverStack");

    // `--dry-run`: the plan, and no CloudFormation call at all (counted under its own key).
    let dry = world.cdkd_with_env(
        &[
            "export",
            "HandoverStack",
            "-a",
            &world.assembly.path().display().to_string(),
            "--dry-run",
        ],
        &[("AWS_ACCESS_KEY_ID", "AKIDEXPORTDRYRUN")],
    );
    let dry = dry.success();
    assert!(
        dry.stdout
            .contains("import    InboxA8E05DC3 (AWS::SQS::Queue) QueueUrl="),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout
            .contains("recreate  WorkerDefaultPolicyD9676315 (AWS::IAM::Policy)"),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout
            .contains("HandlerFromTopicAF22FBB1 (AWS::Lambda::Permission) FunctionName="),
        "{}",
        dry.stdout
    );
    let calls = Emulator::shared().get("/_emulator/stats?accessKey=AKIDEXPORTDRYRUN");
    let cloudformation: Vec<&String> = calls
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.to_lowercase().contains("cloudformation"))
        .collect();
    assert!(
        cloudformation.is_empty(),
        "a dry run called CloudFormation: {calls:#}"
    );
    assert_eq!(cfn_stack(&cfn_name), Value::Null);

    // `-c` is refused unless accepted: it would not be there for the next `cdk deploy`.
    let context = failed(&export(
        &world,
        "HandoverStack",
        &["-c", "env=prod", "--yes"],
    ))
    .to_string();
    assert!(
        context.contains("-c env=prod") && context.contains("--accept-transient-context"),
        "{context}"
    );

    // A template resource cdkd never made is named, and nothing changes.
    world.edit(|t| {
        t["Resources"]["Extra"] = json!({"Type": "AWS::SQS::Queue", "Properties": {}});
    });
    let missing = failed(&export(&world, "HandoverStack", &["--yes"])).to_string();
    assert!(
        missing.contains("Extra (AWS::SQS::Queue): not in cdkd's state"),
        "{missing}"
    );
    world.edit(|t| {
        t["Resources"].as_object_mut().unwrap().remove("Extra");
    });

    // A CloudFormation stack of that name already there is refused.
    let taken = Emulator::unique("Taken");
    Emulator::shared().boto(&format!(
        "c('cloudformation').create_stack(StackName='{taken}', TemplateBody='{{\"Resources\": {{\"T\": {{\"Type\": \"AWS::SNS::Topic\"}}}}}}') and None"
    ));
    let exists = failed(&export(
        &world,
        "HandoverStack",
        &["--cfn-stack-name", &taken, "--yes"],
    ))
    .to_string();
    assert!(
        exists.contains(&format!(
            "a CloudFormation stack named {taken} already exists"
        )) && exists.contains("not HandoverStack's (T)"),
        "{exists}"
    );
    assert!(
        !exists.contains("delete-stack"),
        "a stack holding resources is not offered for deletion: {exists}"
    );
    // Under another name, ReaderStack's Fn::GetStackOutput (which names HandoverStack) would
    // find nothing: the warning says so, and --strict-cross-stack refuses.
    assert!(
        exists.contains(&format!(
            "which names stack HandoverStack: exported as CloudFormation stack {taken}"
        )),
        "{exists}"
    );
    let strict = failed(&export(
        &world,
        "HandoverStack",
        &[
            "--dry-run",
            "--strict-cross-stack",
            "--cfn-stack-name",
            &taken,
        ],
    ))
    .to_string();
    assert!(
        strict.contains("ReaderStack")
            && strict.contains("which names stack HandoverStack")
            && strict.contains("refusing because of --strict-cross-stack"),
        "{strict}"
    );
    assert_eq!(world.resources("HandoverStack"), recorded);

    // A change set CloudFormation rejects (a resource deleted behind cdkd's back) names the
    // resource and CloudFormation's reason, leaves no stack behind and state as it was.
    let unnamed = recorded["Unnamed056898D7"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    Emulator::shared().boto(&format!(
        "c('ssm').delete_parameter(Name='{unnamed}') and None"
    ));
    let rejected = failed(&export(&world, "HandoverStack", &["--yes"])).to_string();
    assert!(
        rejected.contains("phase 1 (IMPORT) failed") && rejected.contains(&unnamed),
        "{rejected}"
    );
    assert_eq!(
        cfn_stack(&cfn_name),
        Value::Null,
        "a rejected import left a stack"
    );
    assert_eq!(world.resources("HandoverStack"), recorded);
    let queue = recorded["InboxA8E05DC3"]["physicalId"].as_str().unwrap();
    let name = queue.rsplit('/').next().unwrap();
    Emulator::shared().boto(&format!(
        "c('ssm').put_parameter(Name='{unnamed}', Value='{name}', Type='String') and None"
    ));

    // The export.
    let before = inventory();
    let run = export(&world, "HandoverStack", &["--yes"]).success();
    assert!(
        run.stdout.contains("Phase 1: CloudFormation stack"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("Deleted WorkerDefaultPolicyD9676315 (AWS::IAM::Policy)"),
        "{}",
        run.stdout
    );

    // cdkd forgot the stack; CloudFormation holds every resource under the same id.
    assert_eq!(
        world.state(),
        Value::Null,
        "the state record is still there"
    );
    let status = cfn_stack(&cfn_name);
    assert_eq!(status["StackStatus"], "UPDATE_COMPLETE", "{status:#}");
    let held = cfn_resources(&cfn_name);
    for (logical_id, row) in recorded.as_object().unwrap() {
        let physical = row["physicalId"].as_str().unwrap();
        match row["resourceType"].as_str().unwrap() {
            // CloudFormation made this one again in phase 2.
            "AWS::IAM::Policy" => assert!(held.get(logical_id).is_some(), "{held:#}"),
            // Its CloudFormation physical id is `<function arn>|<statement id>`.
            "AWS::Lambda::Permission" => assert!(
                held[logical_id]
                    .as_str()
                    .is_some_and(|id| id.ends_with(&format!("|{physical}"))),
                "{logical_id}: {held:#}"
            ),
            _ => assert_eq!(held[logical_id], physical, "{logical_id}: {held:#}"),
        }
    }
    let events = Emulator::shared().boto(&format!(
        "sorted({{e['LogicalResourceId'] for e in c('cloudformation').describe_stack_events(StackName='{cfn_name}')['StackEvents'] if e['ResourceStatus'] == 'IMPORT_COMPLETE'}})"
    ));
    // Every resource but the one phase 2 made again was imported.
    for (logical_id, row) in recorded.as_object().unwrap() {
        if row["resourceType"] == "AWS::IAM::Policy" {
            continue;
        }
        assert!(
            events.as_array().unwrap().iter().any(|e| e == logical_id),
            "{logical_id} was not imported: {events}"
        );
    }
    // Nothing was made twice, and the role has its inline policy again.
    assert_eq!(inventory(), before);
    let role = recorded["Worker11F36D0F"]["physicalId"].as_str().unwrap();
    let policies = Emulator::shared().boto(&format!(
        "c('iam').list_role_policies(RoleName='{role}')['PolicyNames']"
    ));
    assert_eq!(policies.as_array().unwrap().len(), 1, "{policies}");
    // Phase 2 restored the Outputs.
    let outputs = Emulator::shared().boto(&format!(
        "{{o['OutputKey']: o['OutputValue'] for o in c('cloudformation').describe_stacks(StackName='{cfn_name}')['Stacks'][0].get('Outputs', [])}}"
    ));
    assert_eq!(
        outputs["InboxUrl"], recorded["InboxA8E05DC3"]["physicalId"],
        "{outputs:#}"
    );
    let template = Emulator::shared().boto(&format!(
        "(lambda b: b if isinstance(b, dict) else json.loads(b))(c('cloudformation').get_template(StackName='{cfn_name}', TemplateStage='Original')['TemplateBody'])"
    ));
    assert!(
        template["Outputs"].get("InboxUrl").is_some(),
        "GetTemplate has no Outputs: {template:#}"
    );

    // A stack reading the exported one's outputs by Fn::GetStackOutput now finds them in
    // CloudFormation; with the fallback off it fails naming the producer.
    let app = world.assembly.path().display().to_string();
    // Deploying the reader with its dependencies would deploy HandoverStack again: refused,
    // since CloudFormation holds it now, and nothing is made twice.
    let again = world.cdkd(&["deploy", "ReaderStack", "-a", &app]);
    let again = failed(&again).to_string();
    assert!(
        again.contains("CloudFormation stack HandoverStack exists")
            && again.contains("--exclusively"),
        "{again}"
    );
    assert_eq!(inventory(), before);
    let strict = world.cdkd(&[
        "deploy",
        "ReaderStack",
        "-e",
        "-a",
        &app,
        "--no-cfn-fallback",
    ]);
    let strict = failed(&strict).to_string();
    assert!(strict.contains("HandoverStack"), "{strict}");
    world
        .cdkd(&["deploy", "ReaderStack", "-e", "-a", &app])
        .success();
    let copy = world.resources("ReaderStack")["AlertsCopy92F80746"]["physicalId"].clone();
    let value = Emulator::shared().boto(&format!(
        "c('ssm').get_parameter(Name={copy})['Parameter']['Value']"
    ));
    assert_eq!(
        value, recorded["Alerts91F83244"]["physicalId"],
        "outputs {outputs:#}, resources {held:#}"
    );
}

#[test]
fn a_yaml_template_over_the_inline_limit_goes_through_the_state_bucket_with_its_short_forms() {
    bootstrapped();
    let world = AppWorld::without_assets("export", "NetStack", "exportnet");
    let app = world.assembly.path().display().to_string();
    world
        .cdkd(&["deploy", "NetStack", "-e", "-a", &app])
        .success();
    let recorded = world.resources("NetStack");
    let rule_id = recorded["Https"]["attributes"]["Id"].clone();
    assert!(
        rule_id.as_str().is_some_and(|id| id.starts_with("sgr-")),
        "{recorded:#}"
    );

    // The template as a team keeps it: YAML with short forms, and big enough (a long
    // description in Metadata) that CloudFormation only takes it by URL.
    let mut template: Value = serde_json::from_slice(
        &std::fs::read(world.assembly.path().join("NetStack.template.json")).unwrap(),
    )
    .unwrap();
    template["Resources"]["Vpc"]["Metadata"] = json!({"Notes": "n".repeat(60_000)});
    let yaml = cdkd::synthesis::template_file::TemplateFormat::Yaml.render(&template);
    assert!(yaml.contains("!Ref Vpc"), "the YAML keeps short forms");
    let file = world.echo.path().join("net.yaml");
    std::fs::write(&file, &yaml).unwrap();
    // A record written before cdkd recorded a rule's sgr- id: the export reads it from AWS
    // (the one ingress rule of that protocol and port range on the group).
    let key = "cdkd/NetStack/us-east-1/state.json";
    Emulator::shared().boto(&format!(
        "(lambda s3, r: s3.put_object(Bucket='{bucket}', Key='{key}', Body=json.dumps((lambda d: [d['resources']['Https'].__setitem__('attributes', {{}}), d][1])(json.loads(r['Body'].read())))))(c('s3'), c('s3').get_object(Bucket='{bucket}', Key='{key}')) and None",
        bucket = world.bucket
    ));
    assert_eq!(
        world.resources("NetStack")["Https"]["attributes"],
        json!({})
    );
    let cfn_name = Emulator::unique("NetCfn");
    world
        .cdkd(&[
            "export",
            "NetStack",
            "--template",
            &file.display().to_string(),
            "--cfn-stack-name",
            &cfn_name,
            "--yes",
        ])
        .success();

    let held = cfn_resources(&cfn_name);
    for logical_id in ["Vpc", "Subnet", "Gateway", "Group"] {
        assert_eq!(
            held[logical_id], recorded[logical_id]["physicalId"],
            "{logical_id}: {held:#}"
        );
    }
    assert!(held.get("Attachment").is_some(), "{held:#}");
    assert_eq!(
        held["Https"], rule_id,
        "the rule under the id read back from AWS"
    );
    let events = Emulator::shared().boto(&format!(
        "sorted({{e['LogicalResourceId'] for e in c('cloudformation').describe_stack_events(StackName='{cfn_name}')['StackEvents'] if e['ResourceStatus'] == 'IMPORT_COMPLETE'}})"
    ));
    for logical_id in recorded.as_object().unwrap().keys() {
        assert!(
            events.as_array().unwrap().iter().any(|e| e == logical_id),
            "{logical_id} was not imported: {events}"
        );
    }
    // CloudFormation was sent YAML, short forms and all.
    let body = Emulator::shared().boto(&format!(
        "c('cloudformation').get_template(StackName='{cfn_name}', TemplateStage='Original')['TemplateBody']"
    ));
    let body = body.as_str().expect("a YAML template comes back as text");
    assert!(
        body.contains("!Ref Vpc") && body.contains("!GetAtt"),
        "{}",
        &body[..500.min(body.len())]
    );
    // The transient upload is gone, every version of it.
    let left = Emulator::shared().boto(&format!(
        "[v['Key'] for v in c('s3').list_object_versions(Bucket='{}').get('Versions', []) if 'tmp' in v['Key']]",
        world.bucket
    ));
    assert_eq!(
        left,
        json!([]),
        "transient templates left in the state bucket"
    );
    assert_eq!(world.state(), Value::Null);
}

#[test]
fn resources_cloudformation_cannot_take_are_refused_by_name_before_any_change() {
    bootstrapped();
    // A NoEcho value cdkd recorded masked: the export cannot write it back.
    let world = AppWorld::unedited("noecho", "exportnoecho");
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "--all", "-a", &app]).success();
    let consumer = world.cdkd(&["export", "NoEchoConsumer", "-a", &app, "--yes"]);
    let consumer = failed(&consumer).to_string();
    assert!(
        consumer.contains(
            "Copy1ED8A51E (AWS::SSM::Parameter): its recorded properties hold the NoEcho mask"
        ),
        "{consumer}"
    );
    // A custom resource needs --include-non-importable.
    let producer = world.cdkd(&["export", "NoEchoProducer", "-a", &app, "--yes"]);
    let producer = failed(&producer).to_string();
    assert!(producer.contains("--include-non-importable"), "{producer}");
    for stack in ["NoEchoConsumer", "NoEchoProducer"] {
        assert_eq!(cfn_stack(stack), Value::Null);
        assert!(world
            .resources(stack)
            .as_object()
            .is_some_and(|r| !r.is_empty()));
    }

    // Types CloudFormation cannot import at all, every one named in one message.
    let vpc = AppWorld::unedited("vpc", "exportvpc");
    let app = vpc.assembly.path().display().to_string();
    vpc.cdkd(&["deploy", "VpcStack", "-a", &app]).success();
    let refused = vpc.cdkd(&["export", "VpcStack", "-a", &app, "--yes"]);
    let refused = failed(&refused).to_string();
    let line = refused
        .lines()
        .find(|l| l.contains("CloudFormation cannot import"))
        .unwrap_or_else(|| panic!("no unimportable line:\n{refused}"));
    let entries: Vec<String> = vpc
        .resources("VpcStack")
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["resourceType"] == "AWS::EC2::NetworkAclEntry")
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(entries.len(), 2);
    for id in &entries {
        assert!(
            line.contains(&format!("{id} (AWS::EC2::NetworkAclEntry)")),
            "{line}"
        );
    }
    assert_eq!(cfn_stack("VpcStack"), Value::Null);
}

#[test]
fn custom_resources_are_created_again_by_cloudformation_when_asked() {
    bootstrapped();
    let world = AppWorld::unedited("autodelete", "exportcr");
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "--all", "-a", &app]).success();
    let recorded = world.resources("AutoDeleteStack");
    let cfn_name = Emulator::unique("AutoDeleteCfn");
    let export = |extra: &[&str]| {
        let mut args = vec![
            "export",
            "AutoDeleteStack",
            "-a",
            &app,
            "--cfn-stack-name",
            &cfn_name,
            "--yes",
        ];
        args.extend_from_slice(extra);
        world.cdkd(&args)
    };
    let refused = export(&[]);
    assert!(failed(&refused).contains("pass --include-non-importable"));
    let run = export(&["--include-non-importable"]).success();
    assert!(
        run.stdout.contains("create    ScratchAutoDeleteObjectsCustomResourceDA7C4F2C (Custom::S3AutoDeleteObjects)"),
        "{}",
        run.stdout
    );
    // Phase 1 imported the bucket, its policy and the handler; phase 2 had CloudFormation
    // create the custom resource through its handler.
    let statuses = Emulator::shared().boto(&format!(
        "[[e['LogicalResourceId'], e['ResourceStatus']] for e in c('cloudformation').describe_stack_events(StackName='{cfn_name}')['StackEvents']]"
    ));
    let saw = |id: &str, status: &str| {
        statuses
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e[0] == id && e[1] == status)
    };
    for id in [
        "ScratchF72D2ED6",
        "ScratchPolicyCA501E36",
        "CustomS3AutoDeleteObjectsCustomResourceProviderHandler9D90184F",
    ] {
        assert!(saw(id, "IMPORT_COMPLETE"), "{id}: {statuses}");
    }
    assert!(
        saw(
            "ScratchAutoDeleteObjectsCustomResourceDA7C4F2C",
            "CREATE_COMPLETE"
        ),
        "{statuses}"
    );
    let held = cfn_resources(&cfn_name);
    assert_eq!(
        held["ScratchF72D2ED6"],
        recorded["ScratchF72D2ED6"]["physicalId"]
    );
    let show = world.cdkd(&["state", "show", "AutoDeleteStack", "--json"]);
    assert_eq!(
        show.code,
        Some(1),
        "the record is still there: {}",
        show.stdout
    );
}

const MID: &str = "TreeStack~MidNestedStackMidNestedStackResourceBD703753";
const LEAF: &str = "TreeStack~MidNestedStackMidNestedStackResourceBD703753~LeafNestedStackLeafNestedStackResource87FAD680";
const CHILD: &str = "NestedParentStack~ChildNestedStackChildNestedStackResourceC40294CA";

/// DescribeStacks of a CloudFormation stack: its id, parent, root, status and outputs.
fn described(name: &str) -> Value {
    Emulator::shared().boto(&format!(
        "(lambda s: {{'id': s['StackId'], 'parent': s.get('ParentId'), 'root': s.get('RootId'), 'status': s['StackStatus'], 'tags': {{t['Key']: t['Value'] for t in s.get('Tags', [])}}, 'outputs': {{o['OutputKey']: o['OutputValue'] for o in s.get('Outputs', [])}}}})(c('cloudformation').describe_stacks(StackName='{name}')['Stacks'][0])"
    ))
}

/// The statuses of a CloudFormation stack's own events, oldest first.
fn stack_statuses(name: &str) -> Vec<String> {
    let statuses = Emulator::shared().boto(&format!(
        "[e['ResourceStatus'] for e in reversed(c('cloudformation').describe_stack_events(StackName='{name}')['StackEvents']) if e['ResourceType'] == 'AWS::CloudFormation::Stack' and e['LogicalResourceId'] == '{name}']"
    ));
    serde_json::from_value(statuses).unwrap()
}

#[test]
fn a_tree_deeper_than_one_level_is_refused_naming_the_stack_with_children() {
    bootstrapped();
    let world = AppWorld::unedited("nested3", "export-deep");
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app]).success();
    let before: Vec<Value> = ["TreeStack", MID, LEAF]
        .iter()
        .map(|s| world.resources(s))
        .collect();
    let typo = world.cdkd(&[
        "export",
        "TreeStack",
        "-a",
        &app,
        "--cfn-child-stack-name",
        "TreeStack~Nope=X",
    ]);
    assert!(
        failed(&typo).contains(&format!(
            "names TreeStack~Nope but TreeStack's nested stacks are: {MID}, {LEAF}"
        )),
        "{}",
        typo.stderr
    );
    // A mistyped flag is a failure like any other: exit 1 (clap's own code would be 2).
    let usage = world.cdkd(&["export", "TreeStack", "-a", &app, "--cfn-stack-nam", "X"]);
    assert!(
        failed(&usage).contains("--cfn-stack-nam"),
        "{}",
        usage.stderr
    );
    // AWS nests an existing stack one level deep only: Mid, which has Leaf, cannot be nested.
    let deep = world.cdkd(&["export", "TreeStack", "-a", &app, "-y"]);
    let message = failed(&deep);
    assert!(
        message.contains(&format!("  nested stack {MID}:\n    it has nested stacks of its own ({LEAF}); CloudFormation nests an existing stack only one level deep")),
        "{message}"
    );
    for name in ["TreeStack", &MID.replace('~', "-"), &LEAF.replace('~', "-")] {
        assert_eq!(cfn_stack(name), Value::Null, "nothing was made: {name}");
    }
    let after: Vec<Value> = ["TreeStack", MID, LEAF]
        .iter()
        .map(|s| world.resources(s))
        .collect();
    assert_eq!(before, after);
    world.cdkd(&["destroy", "-a", &app, "-f"]).success();
}

#[test]
fn a_nested_stack_is_exported_first_then_nested_and_an_interrupted_export_resumes() {
    bootstrapped();
    let world = AppWorld::unedited("nested", "export-nested");
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app]).success();
    let parent = world.resources("NestedParentStack");
    let child = world.resources(CHILD);
    let child_cfn = "HandedChild";
    let rename = format!("{CHILD}={child_cfn}");

    // The plan names both stacks and the CloudFormation stack each becomes.
    let dry = world
        .cdkd(&[
            "export",
            "NestedParentStack",
            "-a",
            &app,
            "--dry-run",
            "--cfn-child-stack-name",
            &rename,
        ])
        .success()
        .stdout;
    for line in [
        format!("Export {CHILD} (us-east-1) to CloudFormation stack {child_cfn}:"),
        format!("  nest      ChildNestedStackChildNestedStackResourceC40294CA (AWS::CloudFormation::Stack): nested stack {CHILD}, exported first as CloudFormation stack {child_cfn}"),
        "  recreate  ReaderDefaultPolicy151F3818 (AWS::IAM::Policy)".to_string(),
        "  import    HandlerLogs6FD01908 (AWS::Logs::LogGroup)".to_string(),
    ] {
        assert!(dry.contains(&line), "missing {line:?} in:\n{dry}");
    }
    assert_eq!(cfn_stack(child_cfn), Value::Null);

    // The parent's bucket goes behind cdkd's back: the child moves, the parent's IMPORT fails,
    // and both records stay.
    let bucket = parent["Data666C94C7"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    Emulator::shared().boto(&format!(
        "c('s3').delete_bucket(Bucket='{bucket}') and None"
    ));
    let stopped = world.cdkd(&[
        "export",
        "NestedParentStack",
        "-a",
        &app,
        "-y",
        "--cfn-child-stack-name",
        &rename,
    ]);
    let message = failed(&stopped);
    assert!(
        message.contains(&format!(
            "In CloudFormation already: {CHILD} (as {child_cfn}). Not yet: NestedParentStack."
        )),
        "{message}"
    );
    assert!(
        message.contains("phase 1 (IMPORT) failed") && message.contains("Bucket not found"),
        "CloudFormation's reason (S3's words, which name no resource): {message}"
    );
    assert_eq!(
        world.resources("NestedParentStack"),
        parent,
        "the parent's record is kept"
    );
    assert_eq!(world.resources(CHILD), child, "the child's record is kept");
    assert_eq!(
        cfn_stack("NestedParentStack"),
        Value::Null,
        "the rejected parent left no stack"
    );
    assert_eq!(described(child_cfn)["parent"], Value::Null);

    // The bucket is back: the second run takes the child up where it stopped.
    Emulator::shared().boto(&format!(
        "c('s3').create_bucket(Bucket='{bucket}') and None"
    ));
    let run = world.cdkd(&[
        "export",
        "NestedParentStack",
        "-a",
        &app,
        "-y",
        "--cfn-child-stack-name",
        &rename,
    ]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(&format!(
            "CloudFormation stack {child_cfn} (UPDATE_COMPLETE) already holds"
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Phase 1: CloudFormation stack NestedParentStack nested 1 stack(s) and imported 1 resource(s) reading them."),
        "the log group reads the child's output, so it comes with the child: {}",
        run.stdout
    );

    let top = described("NestedParentStack");
    let nested = described(child_cfn);
    assert_eq!(
        (&nested["parent"], &nested["root"]),
        (&top["id"], &top["id"])
    );
    let held = cfn_resources(child_cfn);
    for logical_id in ["ReaderF7BF189D", "Handler886CB40B"] {
        assert_eq!(
            held[logical_id], child[logical_id]["physicalId"],
            "{logical_id}"
        );
    }
    assert!(
        held["ReaderDefaultPolicy151F3818"].is_string(),
        "created again: {held}"
    );
    let held = cfn_resources("NestedParentStack");
    assert_eq!(held["Data666C94C7"], json!(bucket));
    assert_eq!(
        held["HandlerLogs6FD01908"],
        parent["HandlerLogs6FD01908"]["physicalId"]
    );
    assert_eq!(
        held["ChildNestedStackChildNestedStackResourceC40294CA"],
        nested["id"]
    );
    // Phase 2 restored the parent's output, read from the child.
    let function = child["Handler886CB40B"]["physicalId"].as_str().unwrap();
    let function_arn = Emulator::shared().boto(&format!(
        "c('lambda').get_function(FunctionName='{function}')['Configuration']['FunctionArn']"
    ));
    assert_eq!(top["outputs"]["HandlerArn"], function_arn);
    // Nothing twice: one function of that name, one policy on the role (CloudFormation's).
    let functions = Emulator::shared().boto(&format!(
        "[f['FunctionName'] for f in c('lambda').list_functions()['Functions'] if f['FunctionName'] == '{function}']"
    ));
    assert_eq!(functions.as_array().map(Vec::len), Some(1));
    let policies = Emulator::shared().boto(&format!(
        "c('iam').list_role_policies(RoleName='{}')['PolicyNames']",
        child["ReaderF7BF189D"]["physicalId"].as_str().unwrap()
    ));
    assert_eq!(policies.as_array().map(Vec::len), Some(1), "{policies}");
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}

#[test]
fn a_child_with_nothing_for_phase_two_is_flipped_out_of_import_complete_before_nesting() {
    bootstrapped();
    // nested3 cut to two levels, Mid passing nothing up and carrying no CDK metadata: its phase
    // 2 changes nothing, so it stays IMPORT_COMPLETE, which AWS refuses to nest.
    let world = AppWorld::unedited("nested3", "export-flip");
    let folder = world.assembly.path();
    let edit = |file: &str, change: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let path = folder.join(file);
        let mut template: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(template.as_object_mut().unwrap());
        std::fs::write(&path, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
    };
    edit("TreeStackMid565840C2.nested.template.json", &|t| {
        t.remove("Outputs");
        t.remove("Conditions");
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.remove("CDKMetadata");
        resources.remove("LeafNestedStackLeafNestedStackResource87FAD680");
    });
    edit("TreeStack.template.json", &|t| {
        t.remove("Outputs");
    });
    let app = folder.display().to_string();
    world.cdkd(&["deploy", "-a", &app]).success();
    let mid = world.resources(MID);
    let run = world.cdkd(&[
        "export",
        "TreeStack",
        "-a",
        &app,
        "-y",
        "--cfn-stack-name",
        "FlipTree",
        "--cfn-child-stack-name",
        &format!("{MID}=FlipMid"),
    ]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let statuses = stack_statuses("FlipMid");
    let imported = statuses
        .iter()
        .position(|s| s == "IMPORT_COMPLETE")
        .unwrap_or_else(|| panic!("{statuses:?}"));
    assert!(
        statuses[imported + 1..]
            .iter()
            .any(|s| s == "UPDATE_COMPLETE"),
        "the flip's update follows the import: {statuses:?}"
    );
    let nested = described("FlipMid");
    assert_eq!(nested["parent"], described("FlipTree")["id"]);
    assert_eq!(
        cfn_resources("FlipMid")["MiddleF34858F5"],
        mid["MiddleF34858F5"]["physicalId"]
    );
    assert!(
        nested["tags"].get("cdkd:nested-export-flip").is_none(),
        "the parent's phase 2 drops the transient tag: {nested}"
    );
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}

#[test]
fn stack_region_picks_the_record_of_a_stack_deployed_elsewhere() {
    bootstrapped();
    let world = AppWorld::without_assets("export", "HandoverStack", "export-region");
    let app = world.assembly.path().display().to_string();
    let in_ireland = [("AWS_REGION", "eu-west-1")];
    world
        .cdkd_with_env(&["deploy", "HandoverStack", "-a", &app], &in_ireland)
        .success();

    // The default region (us-east-1) has no record of it.
    let here = export(&world, "HandoverStack", &["--dry-run"]);
    assert_ne!(here.code, Some(0), "{}", here.stdout);
    assert!(here.stderr.contains("us-east-1"), "{}", here.stderr);

    let there = export(
        &world,
        "HandoverStack",
        &["--dry-run", "--stack-region", "eu-west-1"],
    )
    .success();
    assert!(
        there.stdout.contains("Export HandoverStack (eu-west-1)"),
        "{}",
        there.stdout
    );
    assert!(
        there.stdout.contains("InboxA8E05DC3 (AWS::SQS::Queue)"),
        "{}",
        there.stdout
    );
    world
        .cdkd_with_env(&["destroy", "HandoverStack", "-a", &app, "-f"], &in_ireland)
        .success();
}
