//! The ecs and ecr plugins through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! fargate.js): an ApplicationLoadBalancedFargateService (VPC, cluster, task definition, service
//! behind an ALB's target group and listener) whose image comes from an ECR repository in the
//! same stack; checked in the emulator's ECS and ECR and in the state file, through a no-change
//! deploy, an in-place update (a new task definition revision and desired count), a replacement
//! (the cluster, and with it the service), drift, import and destroy; the task also runs on an
//! EventBridge rule and a Scheduler schedule (their targets' `EcsParameters`). The emulator's services
//! roll out and drain over time (tests/emulator/ecs_service.py), so the waits are exercised.

use cdkd_tests::{cdkd_on, AppWorld, Emulator, Run};
use serde_json::{json, Value};

const STACK: &str = "FargateStack";
const REPO: &str = "Repo02AC86CF";
const CLUSTER: &str = "ClusterEB0386A7";
const TASK: &str = "WebTaskDef1C8E6ED7";
const SERVICE: &str = "WebServiceD04B5F3E";
const TARGET_GROUP: &str = "WebLBPublicListenerECSGroupB52EA5B2";
const NIGHTLY_RULE: &str = "NightlyScheduledEventRuleAFFCD8B7";
const HOURLY_SCHEDULE: &str = "HourlyF36A3822";
const PRIVATE_SUBNETS: [&str; 2] = [
    "VpcPrivateSubnet1Subnet536B997A",
    "VpcPrivateSubnet2Subnet3788AAA1",
];

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn physical(world: &AppWorld, id: &str) -> String {
    world.resources(STACK)[id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} is not recorded"))
        .to_string()
}

/// A deploy under its own access key, so the emulator's stats count its calls alone.
fn deploy_as(world: &AppWorld, key: &str) -> Run {
    let app = world.assembly.path().display().to_string();
    let run: Run = world
        .command(&["deploy", "-a", &app, STACK])
        .env("AWS_ACCESS_KEY_ID", key)
        .output()
        .unwrap()
        .into();
    run.success()
}

fn service(cluster: &str, arn: &str) -> Value {
    aws(&format!(
        "c('ecs').describe_services(cluster='{cluster}', services=['{arn}'], include=['TAGS'])['services'][0]"
    ))
}

fn call(args: &[&str]) -> Run {
    let mut all = vec!["providers", "call"];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

#[test]
fn a_load_balanced_fargate_service_with_its_ecr_image_deploys_through_the_plugins() {
    let world = AppWorld::of("fargate", STACK, "fargate", |_| {});
    let key = format!("FARGATE{}", std::process::id());
    let first = deploy_as(&world, &key);
    assert!(first.stdout.contains("created"), "{}", first.stdout);
    let resources = world.resources(STACK);
    for id in [REPO, CLUSTER, TASK, SERVICE] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    // Every type of the app is on a plugin (the ALB, target group and listener on elbv2's):
    // none went to Cloud Control.
    let on_cloud_control = world.off_plugins(STACK);
    assert!(
        on_cloud_control.is_empty(),
        "not on a plugin: {on_cloud_control:?}"
    );
    let calls = Emulator::shared().get(&format!("/_emulator/stats?accessKey={key}"));
    assert!(
        calls.get("ecs:CreateService").is_some() && calls.get("ecr:CreateRepository").is_some(),
        "{calls}"
    );
    // ECR: the generated lowercase name, scanning and lifecycle policy; attributes recorded.
    let repo = physical(&world, REPO);
    assert!(repo.starts_with("fargatestack-repo02ac86cf-"), "{repo}");
    let live = aws(&format!(
        "c('ecr').describe_repositories(repositoryNames=['{repo}'])['repositories'][0]"
    ));
    assert_eq!(
        live["imageScanningConfiguration"]["scanOnPush"],
        json!(true)
    );
    assert_eq!(
        resources[REPO]["attributes"]["Arn"], live["repositoryArn"],
        "{resources}"
    );
    assert_eq!(
        resources[REPO]["attributes"]["RepositoryUri"],
        live["repositoryUri"]
    );
    let lifecycle = aws(&format!(
        "c('ecr').get_lifecycle_policy(repositoryName='{repo}')['lifecyclePolicyText']"
    ));
    assert!(
        lifecycle.as_str().unwrap().contains("imageCountMoreThan"),
        "{lifecycle}"
    );

    // ECS: the cluster with container insights, the revision with the repository's image, the
    // service behind the target group in the private subnets.
    let cluster = physical(&world, CLUSTER);
    assert!(
        cluster.starts_with("FargateStack-ClusterEB0386A7-"),
        "{cluster}"
    );
    let live_cluster = aws(&format!(
        "c('ecs').describe_clusters(clusters=['{cluster}'], include=['SETTINGS'])['clusters'][0]"
    ));
    assert_eq!(live_cluster["status"], "ACTIVE");
    assert_eq!(
        live_cluster["settings"],
        json!([{"name": "containerInsights", "value": "enabled"}])
    );
    assert_eq!(
        resources[CLUSTER]["attributes"]["Arn"],
        live_cluster["clusterArn"]
    );
    let task = physical(&world, TASK);
    assert_eq!(
        resources[TASK]["attributes"]["TaskDefinitionArn"],
        json!(task)
    );
    let definition = aws(&format!(
        "c('ecs').describe_task_definition(taskDefinition='{task}', include=['TAGS'])"
    ));
    let container = &definition["taskDefinition"]["containerDefinitions"][0];
    assert_eq!(
        container["image"],
        json!(format!(
            "{}:latest",
            live["repositoryUri"].as_str().unwrap()
        ))
    );
    assert_eq!(
        container["environment"],
        json!([{"name": "MODE", "value": "live"}])
    );
    assert_eq!(container["logConfiguration"]["logDriver"], "awslogs");
    assert_eq!(
        definition["taskDefinition"]["family"],
        "FargateStackWebTaskDefB0DD4BDD"
    );
    assert_eq!(definition["taskDefinition"]["cpu"], "256");
    assert!(
        definition["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["key"] == "cdkd:create-token"),
        "{definition}"
    );
    let arn = physical(&world, SERVICE);
    assert_eq!(resources[SERVICE]["attributes"]["ServiceArn"], json!(arn));
    let live_service = service(&cluster, &arn);
    assert_eq!(live_service["status"], "ACTIVE");
    assert_eq!(
        resources[SERVICE]["attributes"]["Name"],
        live_service["serviceName"]
    );
    assert_eq!(
        world.state()["outputs"]["ServiceName"],
        live_service["serviceName"]
    );
    assert_eq!(live_service["desiredCount"], json!(2));
    assert_eq!(live_service["launchType"], "FARGATE");
    assert_eq!(live_service["taskDefinition"], json!(task));
    assert_eq!(
        live_service["loadBalancers"][0]["targetGroupArn"],
        json!(physical(&world, TARGET_GROUP))
    );
    assert_eq!(
        live_service["loadBalancers"][0]["containerPort"],
        json!(8080)
    );
    assert_eq!(
        live_service["deploymentConfiguration"]["deploymentCircuitBreaker"],
        json!({"enable": true, "rollback": true})
    );
    assert_eq!(live_service["enableExecuteCommand"], json!(true));
    let subnets: Vec<String> = PRIVATE_SUBNETS
        .iter()
        .map(|s| physical(&world, s))
        .collect();
    assert_eq!(
        live_service["networkConfiguration"]["awsvpcConfiguration"]["subnets"],
        json!(subnets)
    );
    // The deploy waited for ACTIVE, not for the tasks: the rollout finishes on its own.
    cdkd_tests::wait_for("the rollout", std::time::Duration::from_secs(30), || {
        (service(&cluster, &arn)["runningCount"] == json!(2)).then_some(())
    });

    // The task on a schedule, both ways: the rule's target and the schedule's carry the task
    // definition, the private subnets and the tags as written (neither refused nor on Cloud
    // Control, issue 48).
    let revision = physical(&world, TASK);
    let subnets: Vec<String> = PRIVATE_SUBNETS
        .iter()
        .map(|id| physical(&world, id))
        .collect();
    let rule = resources[NIGHTLY_RULE]["attributes"]["RuleName"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", resources[NIGHTLY_RULE]))
        .to_string();
    let rule_target = aws(&format!(
        "c('events').list_targets_by_rule(Rule='{rule}')['Targets'][0]['EcsParameters']"
    ));
    assert_eq!(
        rule_target["TaskDefinitionArn"],
        json!(revision),
        "{rule_target}"
    );
    assert_eq!(rule_target["LaunchType"], "FARGATE");
    assert_eq!(
        rule_target["NetworkConfiguration"]["awsvpcConfiguration"]["Subnets"],
        json!(subnets),
        "{rule_target}"
    );
    assert_eq!(
        rule_target["Tags"],
        json!([{"Key": "team", "Value": "data"}])
    );
    let schedule = physical(&world, HOURLY_SCHEDULE);
    let hourly = aws(&format!(
        "c('scheduler').get_schedule(Name='{schedule}')['Target']['EcsParameters']"
    ));
    assert_eq!(
        (
            hourly["TaskDefinitionArn"].clone(),
            hourly["TaskCount"].clone()
        ),
        (json!(revision), json!(2)),
        "{hourly}"
    );
    assert_eq!(
        hourly["NetworkConfiguration"]["awsvpcConfiguration"]["Subnets"],
        json!(subnets)
    );
    assert_eq!(hourly["Tags"], json!([{"key": "team", "value": "data"}]));

    // A second deploy changes nothing and calls no provider.
    let key = format!("FARGATENOOP{}", std::process::id());
    let again = deploy_as(&world, &key);
    assert!(
        again
            .stdout
            .contains("0 created, 0 updated, 0 replaced, 0 deleted"),
        "{}",
        again.stdout
    );
    let calls = Emulator::shared().get(&format!("/_emulator/stats?accessKey={key}"));
    let provider_calls: Vec<&String> = calls
        .as_object()
        .unwrap()
        .keys()
        // The state (S3) and the template's `Fn::GetAZs` (answered before any diff) only.
        .filter(|k| {
            !k.starts_with("s3:")
                && !k.starts_with("sts:")
                && k.as_str() != "ec2:DescribeAvailabilityZones"
        })
        .collect();
    assert!(
        provider_calls.is_empty(),
        "a no-change deploy called {provider_calls:?}"
    );

    // In place: a new environment value is a new revision (the task definition's replacement),
    // and the service follows it in place with a new desired count.
    world.edit(|t| {
        t["Resources"][TASK]["Properties"]["ContainerDefinitions"][0]["Environment"][0]["Value"] =
            json!("canary");
        t["Resources"][SERVICE]["Properties"]["DesiredCount"] = json!(3);
    });
    let updated = deploy_as(&world, &format!("FARGATEUPD{}", std::process::id()));
    // The service, the rule's and the schedule's targets and the two roles' policies follow
    // the new revision in place.
    assert!(
        updated.stdout.contains("5 updated, 1 replaced"),
        "{}",
        updated.stdout
    );
    let revision = physical(&world, TASK);
    assert_ne!(revision, task);
    assert!(revision.ends_with(":2"), "{revision}");
    assert_eq!(
        aws(&format!(
            "c('scheduler').get_schedule(Name='{schedule}')['Target']['EcsParameters']['TaskDefinitionArn']"
        )),
        json!(revision)
    );
    assert_eq!(
        aws(&format!(
            "c('events').list_targets_by_rule(Rule='{rule}')['Targets'][0]['EcsParameters']['TaskDefinitionArn']"
        )),
        json!(revision)
    );
    assert_eq!(physical(&world, SERVICE), arn);
    let live_service = service(&cluster, &arn);
    assert_eq!(live_service["taskDefinition"], json!(revision));
    assert_eq!(live_service["desiredCount"], json!(3));
    // The replaced revision is deregistered and deleted: only the new one is ACTIVE.
    assert_eq!(
        aws("c('ecs').list_task_definitions(familyPrefix='FargateStackWebTaskDefB0DD4BDD', status='ACTIVE')['taskDefinitionArns']"),
        json!([revision])
    );
    let environment = aws(&format!(
        "c('ecs').describe_task_definition(taskDefinition='{revision}')['taskDefinition']['containerDefinitions'][0]['environment']"
    ));
    assert_eq!(environment, json!([{"name": "MODE", "value": "canary"}]));

    // Drift: a desired count changed outside cdkd is found, and reverted.
    aws(&format!(
        "c('ecs').update_service(cluster='{cluster}', service='{arn}', desiredCount=5) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(SERVICE) && drift.stdout.contains("DesiredCount"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    assert_eq!(service(&cluster, &arn)["desiredCount"], json!(3));
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);

    // Replacement: a named cluster is a new cluster, and the service (whose cluster is
    // create-only) a new service in it; the old service is drained and deleted before its
    // cluster.
    world.edit(|t| {
        t["Resources"][CLUSTER]["Properties"]["ClusterName"] = json!("fargate-live");
    });
    let replaced = deploy_as(&world, &format!("FARGATEREP{}", std::process::id()));
    assert!(
        replaced.stdout.contains("2 replaced"),
        "{}",
        replaced.stdout
    );
    assert_eq!(physical(&world, CLUSTER), "fargate-live");
    let new_arn = physical(&world, SERVICE);
    assert!(new_arn.contains(":service/fargate-live/"), "{new_arn}");
    assert_eq!(service("fargate-live", &new_arn)["status"], "ACTIVE");
    assert_eq!(service(&cluster, &arn)["status"], "INACTIVE");
    assert_eq!(
        aws(&format!(
            "c('ecs').describe_clusters(clusters=['{cluster}'])['clusters'][0]['status']"
        )),
        "INACTIVE"
    );

    // Destroy leaves no repository, no active cluster, service or revision.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(
        aws(&format!(
            "[r['repositoryName'] for r in c('ecr').describe_repositories()['repositories'] if r['repositoryName'] == '{repo}']"
        )),
        json!([])
    );
    assert_eq!(service("fargate-live", &new_arn)["status"], "INACTIVE");
    assert_eq!(
        aws("[c['clusterName'] for c in c('ecs').describe_clusters(clusters=['fargate-live'])['clusters'] if c['status'] != 'INACTIVE']"),
        json!([])
    );
    assert_eq!(
        aws("c('ecs').list_task_definitions(familyPrefix='FargateStackWebTaskDefB0DD4BDD', status='ACTIVE')['taskDefinitionArns']"),
        json!([])
    );
    assert!(
        world.state().is_null()
            || world
                .resources(STACK)
                .as_object()
                .is_none_or(|r| r.is_empty())
    );
}

#[test]
fn ecs_and_ecr_resources_made_outside_cdkd_are_imported_and_read() {
    let name = Emulator::unique("handmade");
    aws(&format!(
        "c('ecr').create_repository(repositoryName='{name}', imageTagMutability='IMMUTABLE', tags=[{{'Key': 'team', 'Value': 'web'}}]) and None"
    ));
    let imported = call(&["AWS::ECR::Repository", "import", "--physical-id", &name])
        .success()
        .json();
    assert!(imported["attributes"]["RepositoryUri"]
        .as_str()
        .unwrap()
        .ends_with(&name));
    let read = call(&[
        "AWS::ECR::Repository",
        "read_current_state",
        "--physical-id",
        &name,
    ])
    .success()
    .json();
    assert_eq!(read["properties"]["ImageTagMutability"], "IMMUTABLE");
    assert_eq!(
        read["properties"]["Tags"],
        json!([{"Key": "team", "Value": "web"}])
    );

    aws(&format!("c('ecs').create_cluster(clusterName='{name}', tags=[{{'key': 'team', 'value': 'web'}}]) and None"));
    let imported = call(&["AWS::ECS::Cluster", "import", "--physical-id", &name])
        .success()
        .json();
    assert!(imported["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .ends_with(&format!("cluster/{name}")));
    let read = call(&[
        "AWS::ECS::Cluster",
        "read_current_state",
        "--physical-id",
        &name,
    ])
    .success()
    .json();
    assert_eq!(
        read["properties"]["Tags"],
        json!([{"Key": "team", "Value": "web"}])
    );

    let task = aws(&format!(
        "c('ecs').register_task_definition(family='{name}', containerDefinitions=[{{'name': 'app', 'image': 'nginx', 'memory': 128, 'dockerLabels': {{'Tier': 'front'}}}}])['taskDefinition']['taskDefinitionArn']"
    ));
    let task = task.as_str().unwrap();
    let read = call(&[
        "AWS::ECS::TaskDefinition",
        "read_current_state",
        "--physical-id",
        task,
    ])
    .success()
    .json();
    let container = &read["properties"]["ContainerDefinitions"][0];
    assert_eq!(container["Name"], "app");
    assert_eq!(container["Memory"], json!(128));
    assert_eq!(container["DockerLabels"], json!({"Tier": "front"}));
    let service = aws(&format!(
        "c('ecs').create_service(cluster='{name}', serviceName='svc', taskDefinition='{task}', desiredCount=1)['service']['serviceArn']"
    ));
    let service = service.as_str().unwrap();
    let imported = call(&["AWS::ECS::Service", "import", "--physical-id", service])
        .success()
        .json();
    assert_eq!(imported["attributes"]["Name"], "svc");
    let read = call(&[
        "AWS::ECS::Service",
        "read_current_state",
        "--physical-id",
        service,
    ])
    .success()
    .json();
    assert_eq!(read["properties"]["Cluster"], json!(name));
    assert_eq!(read["properties"]["DesiredCount"], json!(1));

    // What does not exist is refused by name.
    let missing = call(&[
        "AWS::ECR::Repository",
        "import",
        "--physical-id",
        "no-such-repo",
    ]);
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    let missing = call(&[
        "AWS::ECS::Cluster",
        "import",
        "--physical-id",
        "no-such-cluster",
    ]);
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
}

#[test]
fn creates_are_exactly_once_and_a_repository_with_images_is_kept_unless_empty_on_delete() {
    let cluster = Emulator::unique("once");
    aws(&format!(
        "c('ecs').create_cluster(clusterName='{cluster}') and None"
    ));
    let family = Emulator::unique("oncefamily");
    let task_props = json!({"Family": family, "ContainerDefinitions": [{"Name": "app", "Image": "nginx", "Memory": 128}]}).to_string();
    let task = call(&[
        "AWS::ECS::TaskDefinition",
        "create",
        "--token",
        "tok-fargate-td",
        "--properties",
        &task_props,
    ])
    .success()
    .json();
    let found = call(&[
        "AWS::ECS::TaskDefinition",
        "find_created",
        "--token",
        "tok-fargate-td",
        "--properties",
        &task_props,
    ])
    .success()
    .json();
    assert_eq!(found["physicalId"], task["physicalId"], "{found}");
    let none = call(&[
        "AWS::ECS::TaskDefinition",
        "find_created",
        "--token",
        "tok-other",
        "--properties",
        &task_props,
    ])
    .success()
    .json();
    assert!(none["physicalId"].is_null(), "{none}");

    // The service's create carries ECS's clientToken: the same create again answers the same
    // service; found in its cluster by its name afterwards.
    let service_props = json!({"Cluster": cluster, "ServiceName": "once", "TaskDefinition": task["physicalId"], "DesiredCount": 1}).to_string();
    let first = call(&[
        "AWS::ECS::Service",
        "create",
        "--token",
        "tok-fargate-svc",
        "--properties",
        &service_props,
    ])
    .success()
    .json();
    let again = call(&[
        "AWS::ECS::Service",
        "create",
        "--token",
        "tok-fargate-svc",
        "--properties",
        &service_props,
    ])
    .success()
    .json();
    assert_eq!(again["physicalId"], first["physicalId"]);
    let found = call(&[
        "AWS::ECS::Service",
        "find_created",
        "--token",
        "tok-fargate-svc",
        "--properties",
        &service_props,
    ])
    .success()
    .json();
    assert_eq!(found["physicalId"], first["physicalId"], "{found}");
    let arn = first["physicalId"].as_str().unwrap();
    call(&[
        "AWS::ECS::Service",
        "delete",
        "--physical-id",
        arn,
        "--properties",
        &service_props,
    ])
    .success();
    assert_eq!(service(&cluster, arn)["status"], "INACTIVE");

    // A repository holding an image is refused without EmptyOnDelete, naming what to do, and
    // deleted with it.
    let repo = Emulator::unique("held");
    let repo_props = json!({"RepositoryName": repo}).to_string();
    call(&[
        "AWS::ECR::Repository",
        "create",
        "--properties",
        &repo_props,
    ])
    .success();
    aws(&format!(
        "c('ecr').put_image(repositoryName='{repo}', imageTag='latest', imageManifestMediaType='application/vnd.docker.distribution.manifest.v2+json', imageManifest='{{\"schemaVersion\": 2, \"mediaType\": \"application/vnd.docker.distribution.manifest.v2+json\", \"config\": {{\"digest\": \"sha256:{}\", \"size\": 1, \"mediaType\": \"application/vnd.docker.container.image.v1+json\"}}, \"layers\": []}}') and None",
        "b".repeat(64)
    ));
    let refused = call(&[
        "AWS::ECR::Repository",
        "delete",
        "--physical-id",
        &repo,
        "--properties",
        &repo_props,
    ]);
    assert_ne!(refused.code, Some(0), "{}", refused.stdout);
    assert!(
        format!("{}{}", refused.stdout, refused.stderr).contains("EmptyOnDelete"),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );
    let forced = json!({"RepositoryName": repo, "EmptyOnDelete": true}).to_string();
    call(&[
        "AWS::ECR::Repository",
        "delete",
        "--physical-id",
        &repo,
        "--properties",
        &forced,
    ])
    .success();
    assert_eq!(
        aws(&format!(
            "[r for r in c('ecr').describe_repositories()['repositories'] if r['repositoryName'] == '{repo}']"
        )),
        json!([])
    );
}
