//! The elbv2 plugin through `cdkd deploy` with a real CDK app (tests/fixtures/apps/alb.js): an
//! internet-facing ApplicationLoadBalancer in a public VPC, an HTTP listener with a fixed
//! response, a Lambda target group behind a path rule, a redirect rule, an HTTPS listener with an
//! imported certificate and a second one (ListenerCertificate); checked in the emulator's ELBv2
//! and in the state file, through a no-change deploy, an in-place update, a replacement, drift,
//! import and destroy.

use cdkd_tests::{cdkd_on, one_at_a_time, workspace_root, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "AlbStack";
const LB: &str = "LB8A12904C";
const HTTP: &str = "LBHttp4F52EE23";
const HTTPS: &str = "LBHttps1AF08C2E";
const GROUP: &str = "LBHttpFnGroup5EC3DAB8";
const FN_RULE: &str = "LBHttpFnRuleA5D38898";
const OLD_RULE: &str = "LBHttpOldRuleE62D62C8";
const EXTRA_CERT: &str = "LBHttpsExtra1548F9839";
const HANDLER: &str = "Handler886CB40B";

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn physical(world: &AppWorld, id: &str) -> String {
    world.resources(STACK)[id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} is not recorded"))
        .to_string()
}

fn deploy(world: &AppWorld) -> cdkd_tests::Run {
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, STACK]).success()
}

/// Imports the app's two certificates into the emulator's ACM and puts their ARNs in place of
/// the app's placeholders.
fn world_with_certificates() -> AppWorld {
    let setup = workspace_root().join("tests/fixtures/apps/alb-certs.py");
    let arns = aws(&format!(
        "__import__('runpy').run_path('{}', init_globals={{'c': c}})['RESULT']",
        setup.display()
    ));
    AppWorld::of("alb", STACK, "alb", |template| {
        let mut text = template.to_string();
        for (placeholder, arn) in arns.as_object().unwrap() {
            text = text.replace(placeholder.as_str(), arn.as_str().unwrap());
        }
        *template = serde_json::from_str(&text).unwrap();
    })
}

fn set_ready_after(ms: u64) {
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"timingOverrides": {"elbv2_load_balancer_ready_ms": ms}}),
    );
}

#[test]
fn an_application_load_balancer_with_a_lambda_target_deploys_through_the_plugin() {
    // The tests count the emulator's ELBv2 calls, which every test in this binary makes.
    let _serial = one_at_a_time();
    let world = world_with_certificates();
    // The load balancer stays `provisioning` for the whole deploy: the deploy must not wait for
    // `active` (a listener and a target group can use a provisioning load balancer).
    set_ready_after(600_000);
    let first = deploy(&world);
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [LB, HTTP, HTTPS, GROUP, FN_RULE, OLD_RULE, EXTRA_CERT] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let lb = physical(&world, LB);
    let live = aws(&format!(
        "c('elbv2').describe_load_balancers(LoadBalancerArns=['{lb}'])['LoadBalancers'][0]"
    ));
    assert_eq!(live["State"]["Code"], "provisioning", "{live}");
    set_ready_after(0);
    assert_eq!(
        aws(&format!(
            "c('elbv2').describe_load_balancers(LoadBalancerArns=['{lb}'])['LoadBalancers'][0]['State']['Code']"
        )),
        "active"
    );

    // The load balancer: a name generated as CloudFormation does (32 characters at most), its
    // scheme, two subnets, its security group, the template's attribute; its attributes
    // recorded for GetAtt.
    let name = live["LoadBalancerName"].as_str().unwrap().to_string();
    assert!(name.starts_with("AlbStack-LB8A12904C-"), "{name}");
    assert!(name.len() <= 32, "{name}");
    assert_eq!(live["Scheme"], "internet-facing");
    assert_eq!(live["Type"], "application");
    assert_eq!(live["AvailabilityZones"].as_array().unwrap().len(), 2);
    let attributes = &resources[LB]["attributes"];
    assert_eq!(attributes["LoadBalancerArn"], json!(lb));
    assert_eq!(attributes["LoadBalancerName"], json!(name));
    assert_eq!(attributes["DNSName"], live["DNSName"]);
    assert_eq!(
        attributes["CanonicalHostedZoneID"],
        live["CanonicalHostedZoneId"]
    );
    assert!(attributes["LoadBalancerFullName"]
        .as_str()
        .unwrap()
        .starts_with(&format!("app/{name}/")));
    assert_eq!(attributes["SecurityGroups"], live["SecurityGroups"]);
    let idle = aws(&format!(
        "{{a['Key']: a['Value'] for a in c('elbv2').describe_load_balancer_attributes(LoadBalancerArn='{lb}')['Attributes']}}['idle_timeout.timeout_seconds']"
    ));
    assert_eq!(idle, "120");

    // The listeners: HTTP with its fixed response and two rules, HTTPS with its certificate and
    // the extra one the ListenerCertificate added.
    let http = physical(&world, HTTP);
    let listeners = aws(&format!(
        "sorted([(l['Port'], l['Protocol'], l['ListenerArn']) for l in c('elbv2').describe_listeners(LoadBalancerArn='{lb}')['Listeners']])"
    ));
    let https = physical(&world, HTTPS);
    assert_eq!(
        listeners,
        json!([[80, "HTTP", http], [443, "HTTPS", https]])
    );
    let default = aws(&format!(
        "c('elbv2').describe_listeners(ListenerArns=['{http}'])['Listeners'][0]['DefaultActions'][0]['FixedResponseConfig']"
    ));
    assert_eq!(default["MessageBody"], "nothing here");
    assert_eq!(default["StatusCode"], "404");
    let group = physical(&world, GROUP);
    let rules = aws(&format!(
        "sorted([(r['Priority'], r['Conditions'][0]['PathPatternConfig']['Values'], r['Actions'][0]['Type'], r['Actions'][0].get('TargetGroupArn')) for r in c('elbv2').describe_rules(ListenerArn='{http}')['Rules'] if not r['IsDefault']])"
    ));
    assert_eq!(
        rules,
        json!([
            ["10", ["/api/*"], "forward", group],
            ["20", ["/old/*"], "redirect", null]
        ])
    );
    assert_eq!(
        resources[FN_RULE]["attributes"],
        json!({"RuleArn": physical(&world, FN_RULE), "IsDefault": false})
    );
    let certificates = aws(&format!(
        "sorted([(x['CertificateArn'], x['IsDefault']) for x in c('elbv2').describe_listener_certificates(ListenerArn='{https}')['Certificates']])"
    ));
    assert_eq!(certificates.as_array().unwrap().len(), 2, "{certificates}");
    assert!(physical(&world, EXTRA_CERT).starts_with(&format!("{https}|arn:aws:acm:")));

    // The Lambda target group holds the function (registered once its permission existed).
    let function = resources[HANDLER]["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .to_string();
    let targets = aws(&format!(
        "[h['Target']['Id'] for h in c('elbv2').describe_target_health(TargetGroupArn='{group}')['TargetHealthDescriptions']]"
    ));
    assert_eq!(targets, json!([function]));
    let live_group = aws(&format!(
        "c('elbv2').describe_target_groups(TargetGroupArns=['{group}'])['TargetGroups'][0]"
    ));
    assert_eq!(live_group["TargetType"], "lambda");
    let group_name = live_group["TargetGroupName"].as_str().unwrap();
    assert!(
        group_name.len() <= 32 && group_name.starts_with("AlbStack-"),
        "{group_name}"
    );
    assert_eq!(
        resources[GROUP]["attributes"]["TargetGroupFullName"],
        json!(format!(
            "targetgroup/{group_name}/{}",
            group.rsplit('/').next().unwrap()
        ))
    );

    // A second deploy changes nothing and makes no ELBv2 call.
    Emulator::shared().delete("/_emulator/stats");
    let again = deploy(&world);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert_eq!(
        Emulator::shared().calls("elasticloadbalancing:"),
        Vec::<String>::new()
    );

    // In place: the HTTP listener's message, the redirect rule's priority and path, the load
    // balancer's idle timeout and tags.
    world.edit(|t| {
        t["Resources"][HTTP]["Properties"]["DefaultActions"][0]["FixedResponseConfig"]
            ["MessageBody"] = json!("still nothing");
        t["Resources"][OLD_RULE]["Properties"]["Priority"] = json!(30);
        t["Resources"][OLD_RULE]["Properties"]["Conditions"][0]["PathPatternConfig"]["Values"] =
            json!(["/legacy/*"]);
        t["Resources"][LB]["Properties"]["LoadBalancerAttributes"][1]["Value"] = json!("60");
        t["Resources"][LB]["Properties"]["Tags"] = json!([{"Key": "team", "Value": "web"}]);
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("3 updated, 0 replaced"),
        "{}\n{}",
        updated.stdout,
        updated.stderr
    );
    assert_eq!(physical(&world, LB), lb);
    assert_eq!(
        aws(&format!(
            "c('elbv2').describe_listeners(ListenerArns=['{http}'])['Listeners'][0]['DefaultActions'][0]['FixedResponseConfig']['MessageBody']"
        )),
        "still nothing"
    );
    let old_rule = physical(&world, OLD_RULE);
    let rule = aws(&format!(
        "c('elbv2').describe_rules(RuleArns=['{old_rule}'])['Rules'][0]"
    ));
    assert_eq!(rule["Priority"], "30");
    assert_eq!(
        rule["Conditions"][0]["PathPatternConfig"]["Values"],
        json!(["/legacy/*"])
    );
    assert_eq!(
        aws(&format!(
            "{{a['Key']: a['Value'] for a in c('elbv2').describe_load_balancer_attributes(LoadBalancerArn='{lb}')['Attributes']}}['idle_timeout.timeout_seconds']"
        )),
        "60"
    );
    assert_eq!(
        aws(&format!(
            "c('elbv2').describe_tags(ResourceArns=['{lb}'])['TagDescriptions'][0]['Tags']"
        )),
        json!([{"Key": "team", "Value": "web"}])
    );

    // Drift: the listener's default action changed outside cdkd is found by the plugin's reader,
    // and reverted.
    aws(&format!(
        "c('elbv2').modify_listener(ListenerArn='{http}', DefaultActions=[{{'Type': 'fixed-response', 'FixedResponseConfig': {{'StatusCode': '503'}}}}]) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(HTTP) && drift.stdout.contains("DefaultActions"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(
        aws(&format!(
            "c('elbv2').describe_listeners(ListenerArns=['{http}'])['Listeners'][0]['DefaultActions'][0]['FixedResponseConfig']['MessageBody']"
        )),
        "still nothing"
    );

    // Create-only: a name for the target group replaces it. The rule follows the new group in
    // place, and the old group is deleted once nothing forwards to it (ELBv2 refuses before).
    world.edit(|t| {
        t["Resources"][GROUP]["Properties"]["Name"] = json!("alb-handler-v2");
    });
    let replaced = deploy(&world);
    assert!(
        replaced.stdout.contains("replaced"),
        "{}\n{}",
        replaced.stdout,
        replaced.stderr
    );
    let new_group = physical(&world, GROUP);
    assert_ne!(new_group, group);
    assert!(
        new_group.contains(":targetgroup/alb-handler-v2/"),
        "{new_group}"
    );
    let fn_rule = physical(&world, FN_RULE);
    assert_eq!(
        aws(&format!(
            "c('elbv2').describe_rules(RuleArns=['{fn_rule}'])['Rules'][0]['Actions'][0]['TargetGroupArn']"
        )),
        json!(new_group)
    );
    assert_eq!(
        aws(&format!(
            "[g['TargetGroupArn'] for g in c('elbv2').describe_target_groups()['TargetGroups'] if g['TargetGroupArn'] == '{group}']"
        )),
        json!([])
    );

    // Destroy leaves no load balancer, listener, rule or target group of the stack.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(
        aws(&format!(
            "[b['LoadBalancerArn'] for b in c('elbv2').describe_load_balancers()['LoadBalancers'] if b['LoadBalancerArn'] == '{lb}']"
        )),
        json!([])
    );
    assert_eq!(
        aws(&format!(
            "[g['TargetGroupArn'] for g in c('elbv2').describe_target_groups()['TargetGroups'] if g['TargetGroupArn'] in ('{group}', '{new_group}')]"
        )),
        json!([])
    );
}

fn call_with(type_name: &str, operation: &str, args: &[&str]) -> cdkd_tests::Run {
    let mut all = vec!["providers", "call", type_name, operation];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

/// A VPC with two subnets in two zones, made outside cdkd: (vpc, subnet, subnet).
fn network() -> (String, String, String) {
    let made = aws(
        "(lambda e, v: (v, [e.create_subnet(VpcId=v, CidrBlock=f'10.9.{i}.0/24', AvailabilityZone=f'us-east-1{z}')['Subnet']['SubnetId'] for i, z in ((1, 'a'), (2, 'b'))]))(c('ec2'), c('ec2').create_vpc(CidrBlock='10.9.0.0/16')['Vpc']['VpcId'])",
    );
    (
        made[0].as_str().unwrap().to_string(),
        made[1][0].as_str().unwrap().to_string(),
        made[1][1].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_load_balancer_and_target_group_made_outside_cdkd_are_imported_and_read() {
    let _serial = one_at_a_time();
    let (vpc, a, b) = network();
    let lb = aws(&format!(
        "c('elbv2').create_load_balancer(Name='handmade-lb', Subnets=['{a}', '{b}'], Tags=[{{'Key': 'team', 'Value': 'ops'}}])['LoadBalancers'][0]['LoadBalancerArn']"
    ));
    let lb = lb.as_str().unwrap();
    let imported = call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "import",
        &["--physical-id", lb],
    )
    .success()
    .json();
    assert_eq!(imported["physicalId"], json!(lb));
    assert_eq!(imported["attributes"]["LoadBalancerName"], "handmade-lb");
    assert!(imported["attributes"]["DNSName"].is_string(), "{imported}");
    let read = call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "read_current_state",
        &["--physical-id", lb],
    )
    .success()
    .json();
    let mut subnets = vec![a.clone(), b.clone()];
    subnets.sort();
    assert_eq!(read["properties"]["Name"], "handmade-lb");
    assert_eq!(read["properties"]["Subnets"], json!(subnets));
    assert_eq!(
        read["properties"]["Tags"],
        json!([{"Key": "team", "Value": "ops"}])
    );

    let group = aws(&format!(
        "c('elbv2').create_target_group(Name='handmade-tg', Protocol='HTTP', Port=8080, VpcId='{vpc}', TargetType='ip', HealthCheckPath='/health')['TargetGroups'][0]['TargetGroupArn']"
    ));
    let group = group.as_str().unwrap();
    let read = call_with(
        "AWS::ElasticLoadBalancingV2::TargetGroup",
        "read_current_state",
        &["--physical-id", group],
    )
    .success()
    .json();
    assert_eq!(read["properties"]["TargetType"], "ip");
    assert_eq!(read["properties"]["Port"], json!(8080));
    assert_eq!(read["properties"]["HealthCheckPath"], "/health");

    // What does not exist is refused by name.
    let missing = call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "import",
        &[
            "--physical-id",
            "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/nosuch/0123456789abcdef",
        ],
    );
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    aws(&format!(
        "c('elbv2').delete_load_balancer(LoadBalancerArn='{lb}') and c('elbv2').delete_target_group(TargetGroupArn='{group}') and None"
    ));
}

#[test]
fn what_an_interrupted_create_made_is_found_by_its_name_or_in_its_parent() {
    let _serial = one_at_a_time();
    let (vpc, a, b) = network();
    // A load balancer whose name the create generated from its token is found by that name;
    // another token finds nothing.
    let props = json!({"Subnets": [a, b], "Type": "application"}).to_string();
    let create_args = [
        "--logical-id",
        "Web",
        "--stack-name",
        "Crashy",
        "--token",
        "tok-alb-1",
        "--properties",
        &props,
    ];
    let created = call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "create",
        &create_args,
    )
    .success()
    .json();
    let lb = created["physicalId"].as_str().unwrap().to_string();
    let found = call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "find_created",
        &create_args,
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(lb), "{found}");
    let other = call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "find_created",
        &[
            "--logical-id",
            "Web",
            "--stack-name",
            "Crashy",
            "--token",
            "tok-alb-other",
        ],
    )
    .success()
    .json();
    assert!(other["physicalId"].is_null(), "{other}");
    // The same create again (a retry whose first answer was lost) answers the same balancer.
    let again = call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "create",
        &create_args,
    )
    .success()
    .json();
    assert_eq!(again["physicalId"], json!(lb));

    // A listener is found by its port on its load balancer, a rule by its priority in its
    // listener; a second rule at one priority is refused (PriorityInUse).
    let listener_props = json!({
        "LoadBalancerArn": lb, "Port": 8080, "Protocol": "HTTP",
        "DefaultActions": [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404"}}]
    })
    .to_string();
    let listener = call_with(
        "AWS::ElasticLoadBalancingV2::Listener",
        "create",
        &["--properties", &listener_props],
    )
    .success()
    .json();
    let found = call_with(
        "AWS::ElasticLoadBalancingV2::Listener",
        "find_created",
        &["--token", "t", "--properties", &listener_props],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], listener["physicalId"], "{found}");
    assert_eq!(found["properties"]["Port"], json!(8080));
    let rule_props = json!({
        "ListenerArn": listener["physicalId"], "Priority": 5,
        "Conditions": [{"Field": "host-header", "HostHeaderConfig": {"Values": ["a.example.com"]}}],
        "Actions": [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "200"}}]
    });
    let rule = call_with(
        "AWS::ElasticLoadBalancingV2::ListenerRule",
        "create",
        &["--properties", &rule_props.to_string()],
    )
    .success()
    .json();
    let found = call_with(
        "AWS::ElasticLoadBalancingV2::ListenerRule",
        "find_created",
        &["--token", "t", "--properties", &rule_props.to_string()],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], rule["physicalId"], "{found}");
    // The same rule again is this create's own (adopted); another at its priority is refused.
    let same = call_with(
        "AWS::ElasticLoadBalancingV2::ListenerRule",
        "create",
        &["--properties", &rule_props.to_string()],
    )
    .success()
    .json();
    assert_eq!(same["physicalId"], rule["physicalId"]);
    let mut clash = rule_props.clone();
    clash["Conditions"][0]["HostHeaderConfig"]["Values"] = json!(["b.example.com"]);
    let refused = call_with(
        "AWS::ElasticLoadBalancingV2::ListenerRule",
        "create",
        &["--properties", &clash.to_string()],
    );
    assert_ne!(refused.code, Some(0), "{}", refused.stdout);
    assert!(
        refused.stderr.contains("PriorityInUse") || refused.stdout.contains("PriorityInUse"),
        "{}\n{}",
        refused.stdout,
        refused.stderr
    );

    // A target group named from its token is found by that name; the delete of a load
    // balancer waits until ELBv2 no longer describes it.
    let group_args = [
        "--logical-id",
        "Group",
        "--stack-name",
        "Crashy",
        "--token",
        "tok-alb-2",
        "--properties",
        &json!({"VpcId": vpc, "Port": 80, "Protocol": "HTTP", "TargetType": "ip"}).to_string(),
    ];
    let group = call_with(
        "AWS::ElasticLoadBalancingV2::TargetGroup",
        "create",
        &group_args,
    )
    .success()
    .json();
    let found = call_with(
        "AWS::ElasticLoadBalancingV2::TargetGroup",
        "find_created",
        &group_args,
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], group["physicalId"], "{found}");
    call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "delete",
        &["--physical-id", &lb],
    )
    .success();
    assert_eq!(
        aws(&format!(
            "[b for b in c('elbv2').describe_load_balancers()['LoadBalancers'] if b['LoadBalancerArn'] == '{lb}']"
        )),
        json!([])
    );
    // Deleting what is already gone succeeds, as CloudFormation's delete does.
    call_with(
        "AWS::ElasticLoadBalancingV2::LoadBalancer",
        "delete",
        &["--physical-id", &lb],
    )
    .success();
    let group = group["physicalId"].as_str().unwrap().to_string();
    for _ in 0..2 {
        call_with(
            "AWS::ElasticLoadBalancingV2::TargetGroup",
            "delete",
            &["--physical-id", &group],
        )
        .success();
    }
}
