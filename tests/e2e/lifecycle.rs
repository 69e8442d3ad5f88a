//! The lifecycle the service plugins owe every type, on the real CDK apps of messaging,
//! core_services, integration and workflows: a no-change deploy that calls no service, a
//! replacement through a create-only property (the new resource live under its new name, the
//! old one gone), drift found after an out-of-band change, import of a resource made outside
//! cdkd (recorded as a deploy records it; the next deploy leaves it alone), destroy with nothing
//! left. One table row per plugin type says how each step is done and checked in the emulator.

use std::collections::BTreeMap;

use cdkd_tests::{AppWorld, Emulator, Run};
use serde_json::{json, Value};

/// One fixture app and the template edits its tests need.
struct Fixture {
    /// The folder under tests/fixtures/cdk.out.
    name: &'static str,
    stack: &'static str,
    /// Edits made before the first deploy (`u`: a suffix unique in this process).
    prepare: fn(&mut Value, &str),
    /// Edits that let the imported resources stand alone: references to resources that are
    /// not imported become the literal values the resources made with boto3 hold.
    import_prepare: fn(&mut Value, &str),
}

/// What a row takes part in.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    /// Every step: replacement (when it has a name property), drift, import.
    Main,
    /// Only imported, because a main row's resource reads it.
    ImportOnly,
}

/// One plugin type's steps. In the Python snippets `c(service)` is a boto3 client, `{id}` the
/// physical id, `{name}` the row's name and `{made:X}` the physical id made for row `X`.
struct Case {
    fixture: &'static str,
    id: &'static str,
    kind: &'static str,
    role: Role,
    /// The create-only property that names the resource ("" when it has none).
    name_property: &'static str,
    /// The name given through it (`{u}` the unique suffix).
    name: &'static str,
    /// True while the resource `{id}` exists.
    live: &'static str,
    /// The out-of-band change of `{id}`, and the property drift must report.
    tamper: Option<(&'static str, &'static str)>,
    /// Makes the resource `{name}` outside cdkd, answering its physical id.
    make: &'static str,
    /// An attribute the import must record.
    attribute: Option<&'static str>,
}

const FIXTURES: &[Fixture] = &[
    Fixture {
        name: "messaging",
        stack: "MessagingStack",
        prepare: |_, _| {},
        import_prepare: |_, _| {},
    },
    Fixture {
        name: "data",
        stack: "DataStack",
        prepare: |t, u| {
            // The fixture's literal parameter name would collide with the import test's.
            t["Resources"]["Setting2E7FC5C3"]["Properties"]["Name"] = json!(format!("/lc/{u}"));
        },
        import_prepare: |_, _| {},
    },
    Fixture {
        name: "integration",
        stack: "IntegrationStack",
        prepare: |t, u| {
            // A description to drift, and an alias name of this test's own.
            t["Resources"]["DbPassword10268EB9"]["Properties"]["Description"] =
                json!("db password");
            t["Resources"]["DataKeyAliasF989EB84"]["Properties"]["AliasName"] =
                json!(format!("alias/lc-{u}"));
        },
        import_prepare: |t, _| {
            // The rule's targets are the stack's queue and function, which are not imported.
            t["Resources"]["OrderPlacedDB034628"]["Properties"]
                .as_object_mut()
                .unwrap()
                .remove("Targets");
        },
    },
    Fixture {
        name: "workflows",
        stack: "WorkflowsStack",
        prepare: |t, u| {
            // The stream is retained by default; here destroy must leave nothing.
            for policy in ["DeletionPolicy", "UpdateReplacePolicy"] {
                t["Resources"]["Clicks81B5095A"][policy] = json!("Delete");
            }
            // The group's literal name would collide with the import test's.
            let group = json!(format!("lc-jobs-{u}"));
            t["Resources"]["JobsDF1CC2D4"]["Properties"]["Name"] = group.clone();
            t["Resources"]["HourlyF36A3822"]["Properties"]["GroupName"] = group;
        },
        import_prepare: |t, u| {
            for policy in ["DeletionPolicy", "UpdateReplacePolicy"] {
                t["Resources"]["Clicks81B5095A"][policy] = json!("Delete");
            }
            let machine = &mut t["Resources"]["FlowA74D6E88"]["Properties"];
            machine["DefinitionString"] = json!(MACHINE_DEFINITION);
            machine["RoleArn"] = json!(FLOW_ROLE);
            let schedule = &mut t["Resources"]["HourlyF36A3822"]["Properties"];
            schedule["GroupName"] = json!(format!("imp-jobs-{u}"));
            schedule["Target"]["Arn"] = json!(WORKER_ARN);
            schedule["Target"]["RoleArn"] = json!(SCHEDULER_ROLE);
        },
    },
];

const MACHINE_DEFINITION: &str = r#"{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}"#;
const FLOW_ROLE: &str = "arn:aws:iam::123456789012:role/imported-flow";
const WORKER_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:imported-worker";
const SCHEDULER_ROLE: &str = "arn:aws:iam::123456789012:role/imported-scheduler";

const CASES: &[Case] = &[
    Case {
        fixture: "messaging",
        id: "DeadLettersBBF8BAAB",
        kind: "AWS::SQS::Queue",
        role: Role::Main,
        name_property: "QueueName",
        name: "lc-dlq-{u}",
        live: "'{id}' in c('sqs').list_queues(MaxResults=1000).get('QueueUrls', [])",
        tamper: Some((
            "c('sqs').set_queue_attributes(QueueUrl='{id}', Attributes={'MessageRetentionPeriod': '3600'})",
            "MessageRetentionPeriod",
        )),
        make: "c('sqs').create_queue(QueueName='{name}', Attributes={'MessageRetentionPeriod': '1209600'})['QueueUrl']",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "messaging",
        id: "EventsD32975C2",
        kind: "AWS::SNS::Topic",
        role: Role::Main,
        name_property: "TopicName",
        name: "lc-events-{u}",
        live: "'{id}' in [t['TopicArn'] for p in c('sns').get_paginator('list_topics').paginate() for t in p['Topics']]",
        tamper: Some((
            "c('sns').set_topic_attributes(TopicArn='{id}', AttributeName='DisplayName', AttributeValue='changed')",
            "DisplayName",
        )),
        make: "c('sns').create_topic(Name='{name}', Attributes={'DisplayName': 'order events'})['TopicArn']",
        attribute: Some("TopicName"),
    },
    Case {
        fixture: "data",
        id: "OrdersA9B65338",
        kind: "AWS::DynamoDB::Table",
        role: Role::Main,
        name_property: "TableName",
        name: "lc-orders-{u}",
        live: "'{id}' in [n for p in c('dynamodb').get_paginator('list_tables').paginate() for n in p['TableNames']]",
        tamper: Some((
            "c('dynamodb').update_continuous_backups(TableName='{id}', PointInTimeRecoverySpecification={'PointInTimeRecoveryEnabled': False})",
            "PointInTimeRecoverySpecification",
        )),
        make: "[c('dynamodb').create_table(TableName='{name}', \
                 AttributeDefinitions=[{'AttributeName': n, 'AttributeType': 'S'} for n in ('pk', 'sk', 'customer')], \
                 KeySchema=[{'AttributeName': 'pk', 'KeyType': 'HASH'}, {'AttributeName': 'sk', 'KeyType': 'RANGE'}], \
                 GlobalSecondaryIndexes=[{'IndexName': 'byCustomer', 'KeySchema': [{'AttributeName': 'customer', 'KeyType': 'HASH'}], 'Projection': {'ProjectionType': 'ALL'}}], \
                 BillingMode='PAY_PER_REQUEST', StreamSpecification={'StreamEnabled': True, 'StreamViewType': 'NEW_AND_OLD_IMAGES'}), \
               c('dynamodb').update_time_to_live(TableName='{name}', TimeToLiveSpecification={'AttributeName': 'expires', 'Enabled': True}), \
               c('dynamodb').update_continuous_backups(TableName='{name}', PointInTimeRecoverySpecification={'PointInTimeRecoveryEnabled': True})] and '{name}'",
        attribute: Some("StreamArn"),
    },
    Case {
        fixture: "data",
        id: "AppLogsC5DF83A6",
        kind: "AWS::Logs::LogGroup",
        role: Role::Main,
        name_property: "LogGroupName",
        name: "lc-logs-{u}",
        live: "'{id}' in [g['logGroupName'] for g in c('logs').describe_log_groups(logGroupNamePrefix='{id}')['logGroups']]",
        tamper: Some((
            "c('logs').put_retention_policy(logGroupName='{id}', retentionInDays=30)",
            "RetentionInDays",
        )),
        make: "[c('logs').create_log_group(logGroupName='{name}'), c('logs').put_retention_policy(logGroupName='{name}', retentionInDays=14)] and '{name}'",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "data",
        id: "Setting2E7FC5C3",
        kind: "AWS::SSM::Parameter",
        role: Role::Main,
        name_property: "Name",
        name: "/lc/renamed-{u}",
        live: "len(c('ssm').get_parameters(Names=['{id}'])['Parameters']) == 1",
        tamper: Some((
            "c('ssm').put_parameter(Name='{id}', Value='changed', Overwrite=True)",
            "Value",
        )),
        make: "c('ssm').put_parameter(Name='{name}', Value='hello', Type='String', Description='read by the processor') and '{name}'",
        attribute: Some("Type"),
    },
    Case {
        fixture: "integration",
        id: "DataKey17AFBB84",
        kind: "AWS::KMS::Key",
        role: Role::Main,
        name_property: "",
        name: "",
        live: "c('kms').describe_key(KeyId='{id}')['KeyMetadata']['KeyState'] == 'Enabled'",
        tamper: Some((
            "c('kms').update_key_description(KeyId='{id}', Description='changed')",
            "Description",
        )),
        make: "(lambda k: [c('kms').enable_key_rotation(KeyId=k), k][1])(c('kms').create_key(Description='encrypts the queue and the table', \
                 Policy=json.dumps({'Statement': [{'Action': 'kms:*', 'Effect': 'Allow', 'Principal': {'AWS': 'arn:aws:iam::123456789012:root'}, 'Resource': '*'}, \
                   {'Action': ['kms:Decrypt', 'kms:Encrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*'], 'Effect': 'Allow', 'Principal': {'Service': 'events.amazonaws.com'}, 'Resource': '*'}], \
                   'Version': '2012-10-17'}))['KeyMetadata']['KeyId'])",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "integration",
        id: "DataKeyAliasF989EB84",
        kind: "AWS::KMS::Alias",
        role: Role::Main,
        name_property: "AliasName",
        name: "alias/lc-renamed-{u}",
        live: "'{id}' in [a['AliasName'] for a in c('kms').list_aliases()['Aliases']]",
        tamper: None,
        make: "c('kms').create_alias(AliasName='{name}', TargetKeyId='{made:DataKey17AFBB84}') and '{name}'",
        attribute: None,
    },
    Case {
        fixture: "integration",
        id: "DbPassword10268EB9",
        kind: "AWS::SecretsManager::Secret",
        role: Role::Main,
        name_property: "Name",
        name: "lc-secret-{u}",
        live: "'{id}' in [s['ARN'] for s in c('secretsmanager').list_secrets()['SecretList']]",
        tamper: Some((
            "c('secretsmanager').update_secret(SecretId='{id}', Description='changed')",
            "Description",
        )),
        make: "c('secretsmanager').create_secret(Name='{name}', Description='db password', SecretString=json.dumps({'username': 'app', 'password': 'made-outside'}))['ARN']",
        attribute: Some("Id"),
    },
    Case {
        fixture: "integration",
        id: "OrderPlacedDB034628",
        kind: "AWS::Events::Rule",
        role: Role::Main,
        name_property: "Name",
        name: "lc-rule-{u}",
        live: "'{id}'.split('/')[-1] in [r['Name'] for r in c('events').list_rules()['Rules']]",
        tamper: Some(("c('events').disable_rule(Name='{id}'.split('/')[-1])", "State")),
        make: "c('events').put_rule(Name='{name}', State='ENABLED', EventPattern=json.dumps({'source': ['integration.orders'], 'detail-type': ['OrderPlaced']}))['RuleArn']",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "workflows",
        id: "FlowA74D6E88",
        kind: "AWS::StepFunctions::StateMachine",
        role: Role::Main,
        name_property: "StateMachineName",
        name: "lc-flow-{u}",
        live: "'{id}' in [m['stateMachineArn'] for m in c('stepfunctions').list_state_machines()['stateMachines']]",
        tamper: Some((
            "c('stepfunctions').update_state_machine(stateMachineArn='{id}', tracingConfiguration={'enabled': False})",
            "TracingConfiguration",
        )),
        make: "c('stepfunctions').create_state_machine(name='{name}', definition='{\"StartAt\":\"Done\",\"States\":{\"Done\":{\"Type\":\"Succeed\"}}}', \
                 roleArn='arn:aws:iam::123456789012:role/imported-flow', tracingConfiguration={'enabled': True})['stateMachineArn']",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "workflows",
        id: "Clicks81B5095A",
        kind: "AWS::Kinesis::Stream",
        role: Role::Main,
        name_property: "Name",
        name: "lc-clicks-{u}",
        live: "'{id}' in c('kinesis').list_streams()['StreamNames']",
        tamper: Some((
            "c('kinesis').increase_stream_retention_period(StreamName='{id}', RetentionPeriodHours=72)",
            "RetentionPeriodHours",
        )),
        make: "[c('kinesis').create_stream(StreamName='{name}', ShardCount=1), \
               c('kinesis').increase_stream_retention_period(StreamName='{name}', RetentionPeriodHours=48), \
               c('kinesis').start_stream_encryption(StreamName='{name}', EncryptionType='KMS', KeyId='alias/aws/kinesis')] and '{name}'",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "workflows",
        id: "Backlog7AD37F26",
        kind: "AWS::SQS::Queue",
        role: Role::ImportOnly,
        name_property: "QueueName",
        name: "imp-backlog-{u}",
        live: "'{id}' in c('sqs').list_queues(MaxResults=1000).get('QueueUrls', [])",
        tamper: None,
        make: "c('sqs').create_queue(QueueName='{name}')['QueueUrl']",
        attribute: Some("QueueName"),
    },
    Case {
        fixture: "workflows",
        id: "BacklogAlarm1E83516A",
        kind: "AWS::CloudWatch::Alarm",
        role: Role::Main,
        name_property: "AlarmName",
        name: "lc-alarm-{u}",
        live: "len(c('cloudwatch').describe_alarms(AlarmNames=['{id}'])['MetricAlarms']) == 1",
        tamper: Some((
            "(lambda a: c('cloudwatch').put_metric_alarm(Threshold=7.0, **{k: v for k, v in a.items() if k in ('AlarmName', 'AlarmDescription', 'MetricName', 'Namespace', 'Statistic', 'Dimensions', 'Period', 'EvaluationPeriods', 'ComparisonOperator', 'TreatMissingData')}))(c('cloudwatch').describe_alarms(AlarmNames=['{id}'])['MetricAlarms'][0])",
            "Threshold",
        )),
        make: "c('cloudwatch').put_metric_alarm(AlarmName='{name}', AlarmDescription='the backlog grows', ComparisonOperator='GreaterThanOrEqualToThreshold', \
                 Dimensions=[{'Name': 'QueueName', 'Value': '{made:Backlog7AD37F26}'.rsplit('/', 1)[1]}], EvaluationPeriods=3, \
                 MetricName='ApproximateNumberOfMessagesVisible', Namespace='AWS/SQS', Period=60, Statistic='Maximum', Threshold=100.0, \
                 TreatMissingData='notBreaching') and '{name}'",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "workflows",
        id: "JobsDF1CC2D4",
        kind: "AWS::Scheduler::ScheduleGroup",
        role: Role::ImportOnly,
        name_property: "Name",
        name: "imp-jobs-{u}",
        live: "'{id}' in [g['Name'] for g in c('scheduler').list_schedule_groups()['ScheduleGroups']]",
        tamper: None,
        make: "c('scheduler').create_schedule_group(Name='{name}') and '{name}'",
        attribute: Some("Arn"),
    },
    Case {
        fixture: "workflows",
        id: "HourlyF36A3822",
        kind: "AWS::Scheduler::Schedule",
        role: Role::Main,
        name_property: "Name",
        name: "lc-hourly-{u}",
        live: "'{id}' in [s['Name'] for s in c('scheduler').list_schedules()['Schedules']]",
        tamper: Some((
            "(lambda s: c('scheduler').update_schedule(State='DISABLED', **{k: s[k] for k in ('Name', 'GroupName', 'ScheduleExpression', 'FlexibleTimeWindow', 'Target', 'Description', 'ScheduleExpressionTimezone') if k in s}))(c('scheduler').get_schedule(Name='{id}', GroupName=[s for s in c('scheduler').list_schedules()['Schedules'] if s['Name'] == '{id}'][0]['GroupName']))",
            "State",
        )),
        make: "c('scheduler').create_schedule(Name='{name}', GroupName='{made:JobsDF1CC2D4}', Description='runs the worker', FlexibleTimeWindow={'Mode': 'OFF'}, \
                 ScheduleExpression='rate(1 hour)', ScheduleExpressionTimezone='Etc/UTC', State='ENABLED', \
                 Target={'Arn': 'arn:aws:lambda:us-east-1:123456789012:function:imported-worker', 'Input': '{\"job\":\"hourly\"}', \
                   'RetryPolicy': {'MaximumEventAgeInSeconds': 86400, 'MaximumRetryAttempts': 185}, \
                   'RoleArn': 'arn:aws:iam::123456789012:role/imported-scheduler'}) and '{name}'",
        attribute: Some("Arn"),
    },
];

fn fixture(name: &str) -> &'static Fixture {
    FIXTURES.iter().find(|f| f.name == name).unwrap()
}

fn cases(fixture: &str) -> impl Iterator<Item = &'static Case> + '_ {
    CASES.iter().filter(move |c| c.fixture == fixture)
}

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

/// `snippet` with `{id}` replaced (and `{made:X}` from `made`).
fn fill(snippet: &str, id: &str, made: &BTreeMap<&str, String>) -> String {
    let mut text = snippet.replace("{id}", id);
    for (logical, physical) in made {
        text = text.replace(&format!("{{made:{logical}}}"), physical);
    }
    text
}

fn live(case: &Case, physical: &str) -> bool {
    aws(&fill(case.live, physical, &BTreeMap::new())) == json!(true)
}

fn deploy(world: &AppWorld, stack: &str) -> Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, stack]).success()
}

/// The number before `what` in a deploy's summary ("3 created, 0 updated, …").
fn count(run: &Run, what: &str) -> u64 {
    let summary = run
        .stdout
        .lines()
        .rev()
        .find(|l| l.contains(" unchanged"))
        .unwrap_or_else(|| panic!("no summary in:\n{}\n{}", run.stdout, run.stderr));
    summary
        .split(',')
        .find_map(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            let at = words.iter().position(|w| *w == what)?;
            words.get(at.checked_sub(1)?)?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no '{what}' in {summary}"))
}

/// Deploy, no-change deploy (no service call), drift of every main type, replacement of every
/// named type, destroy with nothing left.
fn lifecycle(name: &str) {
    let fixture = fixture(name);
    let stack = fixture.stack;
    let u = Emulator::unique("lc");
    let world = AppWorld::of(fixture.name, stack, "lifecycle", |t| {
        (fixture.prepare)(t, &u)
    });
    let first = deploy(&world, stack);
    assert_eq!(count(&first, "updated"), 0, "{}", first.stdout);
    let resources = world.resources(stack);
    let physical = |resources: &Value, id: &str| {
        resources[id]["physicalId"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} is not recorded: {resources}"))
            .to_string()
    };
    let mains: Vec<&Case> = cases(name).filter(|c| c.role == Role::Main).collect();
    for case in &mains {
        assert_eq!(resources[case.id]["resourceType"], case.kind);
        assert_eq!(resources[case.id]["provisionedBy"], "sdk", "{}", case.id);
        assert!(
            live(case, &physical(&resources, case.id)),
            "{} is not live",
            case.id
        );
    }

    // A no-change deploy sends nothing to any service: only the state bucket is read (S3, and
    // STS for the account), under an access key of its own so other tests' calls do not count.
    let key = format!("AKIA{}", u.replace('-', "").to_uppercase());
    let app = world.assembly.path().display().to_string();
    let again = world
        .cdkd_with_env(
            &["deploy", "-a", &app, stack],
            &[("AWS_ACCESS_KEY_ID", &key)],
        )
        .success();
    let total = resources.as_object().unwrap().len() as u64;
    assert_eq!(count(&again, "unchanged"), total, "{}", again.stdout);
    let calls = Emulator::shared().get(&format!("/_emulator/stats?accessKey={key}"));
    let calls = calls.as_object().expect("request counts");
    assert!(calls.contains_key("s3:GET"), "not counted: {calls:?}");
    let to_services: Vec<&String> = calls
        .keys()
        .filter(|k| !k.starts_with("s3:") && !k.starts_with("sts:"))
        .collect();
    assert!(
        to_services.is_empty(),
        "a no-change deploy called {to_services:?}"
    );

    // Drift: one out-of-band change per type, each reported at its property.
    for case in &mains {
        if let Some((tamper, _)) = case.tamper {
            aws(&format!(
                "{} and None",
                fill(tamper, &physical(&resources, case.id), &BTreeMap::new())
            ));
        }
    }
    let drift = world.cdkd(&["drift", stack, "--json"]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    let report = drift.json()[0].clone();
    for case in &mains {
        let Some((_, path)) = case.tamper else {
            continue;
        };
        let found = report["drifted"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["logicalId"] == case.id)
            .and_then(|r| {
                // A nested property is reported at its own path (`TracingConfiguration.Enabled`).
                r["changes"].as_array().unwrap().iter().find(|c| {
                    let at = c["path"].as_str().unwrap_or_default();
                    at == path || at.starts_with(&format!("{path}."))
                })
            });
        assert!(
            found.is_some(),
            "no drift of {} at {path} in {report}",
            case.id
        );
    }
    world.cdkd(&["drift", stack, "--revert", "--yes"]).success();

    // Replacement: a new name for every named type, in one deploy.
    let named: Vec<&Case> = mains
        .iter()
        .copied()
        .filter(|c| !c.name_property.is_empty())
        .collect();
    let names: BTreeMap<&str, String> = named
        .iter()
        .map(|c| (c.id, c.name.replace("{u}", &u)))
        .collect();
    world.edit(|t| {
        for case in &named {
            t["Resources"][case.id]["Properties"][case.name_property] = json!(names[case.id]);
        }
    });
    let replaced = deploy(&world, stack);
    assert!(
        count(&replaced, "replaced") >= named.len() as u64,
        "{}",
        replaced.stdout
    );
    let after = world.resources(stack);
    for case in &named {
        let (old, new) = (physical(&resources, case.id), physical(&after, case.id));
        assert_ne!(old, new, "{} was not replaced", case.id);
        assert!(new.contains(&names[case.id]), "{}: {new}", case.id);
        assert!(live(case, &new), "{} {new} is not live", case.id);
        assert!(
            !live(case, &old),
            "the replaced {} {old} is still there",
            case.id
        );
    }

    // Destroy leaves nothing of what either deploy made.
    world.cdkd(&["destroy", "-a", &app, stack, "-f"]).success();
    for case in &mains {
        for ids in [&resources, &after] {
            let id = physical(ids, case.id);
            assert!(!live(case, &id), "{} {id} is left after destroy", case.id);
        }
    }
}

/// Resources made with boto3 under the names the template gives them are imported by id,
/// recorded as a deploy records them, and the next deploy leaves them alone.
fn import(name: &str) {
    let fixture = fixture(name);
    let stack = fixture.stack;
    let u = Emulator::unique("imp");
    let rows: Vec<&Case> = cases(name).collect();
    let mut made: BTreeMap<&str, String> = BTreeMap::new();
    for case in &rows {
        let name = case.name.replace("{u}", &u).replace("lc-", "imp-");
        let made_id = aws(&fill(&case.make.replace("{name}", &name), "", &made));
        made.insert(case.id, made_id.as_str().unwrap().to_string());
    }
    let world = AppWorld::of(fixture.name, stack, "import-lc", |t| {
        (fixture.prepare)(t, &u);
        (fixture.import_prepare)(t, &u);
        for case in rows.iter().filter(|c| !c.name_property.is_empty()) {
            let name = case.name.replace("{u}", &u).replace("lc-", "imp-");
            t["Resources"][case.id]["Properties"][case.name_property] = json!(name);
        }
    });
    let app = world.assembly.path().display().to_string();
    let mut args = vec!["import".to_string(), "-a".into(), app.clone(), stack.into()];
    for (id, physical) in &made {
        args.extend(["--resource".to_string(), format!("{id}={physical}")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let imported = world.cdkd(&args).success();
    assert!(
        imported
            .stdout
            .contains(&format!("{} resource(s) imported", made.len())),
        "{}",
        imported.stdout
    );
    let record = world.resources(stack);
    for case in &rows {
        let entry = &record[case.id];
        assert_eq!(entry["physicalId"], json!(made[case.id]), "{entry}");
        assert_eq!(entry["resourceType"], case.kind);
        assert_eq!(entry["provisionedBy"], "sdk", "{}: {entry}", case.id);
        if let Some(attribute) = case.attribute {
            assert!(
                entry["attributes"][attribute].is_string(),
                "{} has no {attribute}: {entry}",
                case.id
            );
        }
        assert!(
            entry["observedProperties"].is_object(),
            "{}: {entry}",
            case.id
        );
    }

    // The deploy makes the rest and leaves every imported resource as it is.
    let deployed = deploy(&world, stack);
    assert_eq!(
        (
            count(&deployed, "unchanged"),
            count(&deployed, "updated"),
            count(&deployed, "replaced")
        ),
        (made.len() as u64, 0, 0),
        "{}",
        deployed.stdout
    );
    let after = world.resources(stack);
    for case in &rows {
        assert_eq!(after[case.id]["physicalId"], json!(made[case.id]));
        assert!(live(case, &made[case.id]), "{} is gone", case.id);
    }
    world.cdkd(&["destroy", "-a", &app, stack, "-f"]).success();
    for case in &rows {
        assert!(
            !live(case, &made[case.id]),
            "{} is left after destroy",
            case.id
        );
    }
}

#[test]
fn messaging_types_replace_drift_and_call_nothing_unchanged() {
    lifecycle("messaging");
}

#[test]
fn data_types_replace_drift_and_call_nothing_unchanged() {
    lifecycle("data");
}

#[test]
fn integration_types_replace_drift_and_call_nothing_unchanged() {
    lifecycle("integration");
}

#[test]
fn workflow_types_replace_drift_and_call_nothing_unchanged() {
    lifecycle("workflows");
}

#[test]
fn messaging_types_are_imported() {
    import("messaging");
}

#[test]
fn data_types_are_imported() {
    import("data");
}

#[test]
fn integration_types_are_imported() {
    import("integration");
}

#[test]
fn workflow_types_are_imported() {
    import("workflows");
}
