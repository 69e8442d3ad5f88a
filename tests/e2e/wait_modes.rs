//! `cdkd deploy --wait` under the emulator's AWS timing profile (issue 29), switched on for
//! this binary's own emulator: a Lambda function's create answers while the function is still
//! `Pending` (its dependents take it so), a version published from it waits for it itself,
//! `--wait full` waits for `Active`, and `--no-wait` leaves a table `CREATING`. With the real
//! website and Fargate apps (tests/fixtures/cdk.out), a default deploy ends while the
//! CloudFront distribution is `InProgress`, the load balancer `provisioning` and the ECS
//! service's deployment rolling out, and `--wait full` ends with them `Deployed`, `active` and
//! steady. The tests take turns: the profile's settings are the emulator's, one for all.

use std::time::{Duration, Instant};

use cdkd_tests::{one_at_a_time, AppWorld, Emulator};
use serde_json::{json, Value};

/// The profile's time scale: every call takes AWS's latency in a twentieth of the time, so a
/// deploy of the Fargate app's 40 resources takes a few seconds. The durations below are the
/// real ones (their AWS values, sent as overrides, are these divided by the scale).
const SCALE: f64 = 0.05;

/// How long whatever a test means to see unsettled when a deploy ends takes (a function
/// `Pending`, a table `CREATING`, a distribution `InProgress`, a load balancer `provisioning`, a
/// service rolling out), in real milliseconds: several times a default deploy of the Fargate
/// app (2.3 s alone on 2 cores) with its check after it, so it is still so under load (CI runs
/// 3 test binaries on 2 cores), yet short enough that the deploys waiting it out keep this
/// binary near a minute.
const UNSETTLED_MS: u64 = 12_000;

/// `ms` real milliseconds as the AWS milliseconds the emulator's overrides take.
fn aws_ms(ms: u64) -> u64 {
    (ms as f64 / SCALE) as u64
}

/// Sets how long new functions stay `Pending` and new tables `CREATING`, in real milliseconds
/// (each resource takes the value in force when it is created).
fn readiness(function_ms: u64, table_ms: u64) {
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"profile": "aws", "timeScale": SCALE, "timingOverrides": {
            "lambda_function_ready_ms": aws_ms(function_ms),
            "dynamodb_table_ready_ms": aws_ms(table_ms), "iam_role_propagation_ms": 0}}),
    );
}

/// The app fixture's inline function and its role, and a table.
fn world(prefix: &str) -> AppWorld {
    AppWorld::new(prefix, |t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.retain(|id, _| id.starts_with("FnRole") || id == "Inline6CF80F9D");
        resources.insert(
            "Table".into(),
            json!({"Type": "AWS::DynamoDB::Table", "Properties": {
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST"}}),
        );
    })
}

fn table_status(table: &str) -> String {
    let answer = Emulator::shared().boto(&format!(
        "c('dynamodb').describe_table(TableName='{table}')['Table']['TableStatus']"
    ));
    answer.as_str().unwrap_or_default().to_string()
}

fn state_of(function: &str) -> String {
    let answer = Emulator::shared().boto(&format!(
        "c('lambda').get_function_configuration(FunctionName='{function}')['State']"
    ));
    answer.as_str().unwrap_or_default().to_string()
}

#[test]
fn a_function_is_left_pending_by_default_waited_for_by_its_version_and_by_wait_full() {
    let _serial = one_at_a_time();
    readiness(UNSETTLED_MS, 2_000);

    // The default: the deploy ends while the function is Pending.
    let dependents = world("waitdeps");
    let started = std::time::Instant::now();
    dependents.deploy(&["AppStack"]).success();
    let function = dependents.physical("Inline6CF80F9D");
    assert_eq!(
        state_of(&function),
        "Pending",
        "the deploy waited {:?} for a function nothing needed Active",
        started.elapsed()
    );
    // A table is waited ACTIVE by default (its settings and item writers need it).
    assert_eq!(table_status(&dependents.physical("Table")), "ACTIVE");

    // A version needs it Active: its PublishVersion is refused until then and tried again.
    dependents.edit(|t| {
        t["Resources"]["InlineVersion"] = json!({"Type": "AWS::Lambda::Version",
            "Properties": {"FunctionName": {"Ref": "Inline6CF80F9D"}}});
    });
    dependents.deploy(&["AppStack"]).success();
    assert_eq!(state_of(&function), "Active");
    let version = dependents.physical("InlineVersion");
    assert!(version.ends_with(":1"), "{version}");

    // --wait full: the deploy ends once the function is Active.
    readiness(5_000, 2_000);
    let full = world("waitfull");
    full.deploy(&["AppStack", "--wait", "full"]).success();
    assert_eq!(state_of(&full.physical("Inline6CF80F9D")), "Active");

    // --no-wait: the table is left CREATING too.
    readiness(UNSETTLED_MS, UNSETTLED_MS);
    let none = world("waitnone");
    none.deploy(&["AppStack", "--no-wait"]).success();
    assert_eq!(table_status(&none.physical("Table")), "CREATING");
    assert_eq!(state_of(&none.physical("Inline6CF80F9D")), "Pending");

    // --no-wait and --wait together are refused by the parser.
    let both = full.deploy(&["AppStack", "--wait", "full", "--no-wait"]);
    assert!(
        both.code != Some(0) && both.stderr.contains("cannot be used with '--no-wait'"),
        "{}",
        both.stderr
    );

    Emulator::shared().post("/_emulator/config", &json!({"profile": "off"}));
}

// -- CloudFront, ELBv2 and ECS, with the real website and Fargate apps ----------------------

/// The AWS profile with the three stabilisations taking [`UNSETTLED_MS`] (AWS's own figures,
/// 170 s, 150 s and 65 s, would take 8.5 s, 7.5 s and 3.3 s at [`SCALE`]: too close to a
/// default deploy under load), and the NAT gateway's `available`, which the default mode does
/// wait for, short. A load balancer reads its time at every describe, so this holds until the
/// test's end.
fn stabilisations() {
    Emulator::shared().post(
        "/_emulator/config",
        &json!({"profile": "aws", "timeScale": SCALE, "timingOverrides": {
            "cloudfront_distribution_deploy_ms": aws_ms(UNSETTLED_MS),
            "elbv2_load_balancer_ready_ms": aws_ms(UNSETTLED_MS),
            "ecs_service_steady_ms": aws_ms(UNSETTLED_MS),
            "nat_gateway_ready_ms": aws_ms(500), "iam_role_propagation_ms": 0}}),
    );
}

/// The website app's distribution's `Status`.
fn distribution_status(world: &AppWorld) -> String {
    let id = world.physical("Cdn9963B1AD");
    let answer = Emulator::shared().boto(&format!(
        "c('cloudfront').get_distribution(Id='{id}')['Distribution']['Status']"
    ));
    answer.as_str().unwrap_or_default().to_string()
}

/// The Fargate app's load balancer's state (`lb`) and its service's status, counts and
/// deployments (`service`), read by one Python.
fn fargate_status(world: &AppWorld) -> Value {
    let resources = world.resources("FargateStack");
    let id = |logical: &str| {
        resources[logical]["physicalId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (lb, cluster, service) = (
        id("WebLB720665E7"),
        id("ClusterEB0386A7"),
        id("WebServiceD04B5F3E"),
    );
    let keys = "('status', 'rolloutState', 'desiredCount', 'runningCount')";
    Emulator::shared().boto(&format!(
        "{{'lb': c('elbv2').describe_load_balancers(LoadBalancerArns=['{lb}'])['LoadBalancers'][0]['State']['Code'], \
          'service': (lambda s: {{'status': s['status'], 'desiredCount': s['desiredCount'], \
            'runningCount': s['runningCount'], \
            'deployments': [{{k: d.get(k) for k in {keys}}} for d in s['deployments']]}})( \
            c('ecs').describe_services(cluster='{cluster}', services=['{service}'])['services'][0])}}"
    ))
}

/// Steady as `--wait full` means it: one deployment, PRIMARY and rolled out, every task of it
/// running.
fn steady(service: &Value) -> bool {
    let deployments = service["deployments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    deployments.len() == 1
        && deployments[0]["status"] == "PRIMARY"
        && deployments[0]["rolloutState"] == "COMPLETED"
        && deployments[0]["runningCount"] == service["desiredCount"]
        && service["runningCount"] == service["desiredCount"]
        && service["desiredCount"].as_u64() > Some(0)
}

/// Deploys `world`'s `stack` with `extra` arguments; how long the deploy took.
fn timed_deploy(world: &AppWorld, stack: &str, extra: &[&str]) -> Duration {
    let started = Instant::now();
    let mut args = vec![stack];
    args.extend_from_slice(extra);
    world.deploy(&args).success();
    let took = started.elapsed();
    eprintln!("deploy {stack} {extra:?}: {took:?}");
    took
}

/// `--wait full` on the Fargate app: its load balancer `active` and its service steady when
/// the deploy ends (the longest of the deploys: the service is created once the load balancer's
/// create, which waits for `active`, has answered).
fn fargate_waited_in_full() {
    let fargate = AppWorld::of("fargate", "FargateStack", "waitecsfull", |_| {});
    let took = timed_deploy(&fargate, "FargateStack", &["--wait", "full"]);
    let seen = fargate_status(&fargate);
    assert_eq!(
        seen["lb"], "active",
        "a --wait full deploy ({took:?}) ended early: {seen}"
    );
    assert!(
        steady(&seen["service"]),
        "a --wait full deploy ({took:?}) ended before the service was steady: {seen}"
    );
}

#[test]
fn a_distribution_a_load_balancer_and_a_service_settle_after_a_default_deploy_and_within_wait_full()
{
    let _serial = one_at_a_time();
    stabilisations();
    let full = std::thread::spawn(fargate_waited_in_full);

    // The default: each answers as soon as AWS accepted it, and the deploy ends before they
    // are stable.
    let website = AppWorld::of("website", "WebsiteStack", "waitcdn", |_| {});
    let took = timed_deploy(&website, "WebsiteStack", &[]);
    assert_eq!(
        distribution_status(&website),
        "InProgress",
        "a default deploy ({took:?}) waited for the distribution"
    );
    let fargate = AppWorld::of("fargate", "FargateStack", "waitecs", |_| {});
    let took = timed_deploy(&fargate, "FargateStack", &[]);
    let seen = fargate_status(&fargate);
    assert_eq!(
        seen["lb"], "provisioning",
        "a default deploy ({took:?}) waited: {seen}"
    );
    assert!(
        !steady(&seen["service"]) && seen["service"]["status"] == "ACTIVE",
        "a default deploy ({took:?}) waited for the service's steady state: {seen}"
    );

    // --wait full: the deploy ends once they are.
    let website = AppWorld::of("website", "WebsiteStack", "waitcdnfull", |_| {});
    let took = timed_deploy(&website, "WebsiteStack", &["--wait", "full"]);
    assert_eq!(
        distribution_status(&website),
        "Deployed",
        "a --wait full deploy ({took:?}) ended before the distribution was Deployed"
    );
    if let Err(panic) = full.join() {
        std::panic::resume_unwind(panic);
    }

    Emulator::shared().post("/_emulator/config", &json!({"profile": "off"}));
}
