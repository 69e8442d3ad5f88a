//! The wafv2 plugin through `cdkd deploy` with a real CDK app (tests/fixtures/apps/wafmap.js): a
//! regional web ACL with a rate-based rule and a managed rule group, associated with the prod
//! stage of a LambdaRestApi of the same app; checked in the emulator's WAF and in the state
//! file, through a no-change deploy, an in-place update, drift, a replacement, import and
//! destroy. The same app's Cloud Map namespaces and services (a DNS service in a private DNS
//! namespace, an HTTP service in an HTTP namespace) go through the servicediscovery plugin and
//! are checked the same way.

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "WafMapStack";
const ACL: &str = "Acl";
const ASSOCIATION: &str = "AclAssociation";
const PRIVATE_NAMESPACE: &str = "PrivateNamespace147795D2";
const HTTP_NAMESPACE: &str = "HttpNamespace623B659A";
const API_SERVICE: &str = "PrivateNamespaceApiService060B6405";
const WORKER_SERVICE: &str = "HttpNamespaceWorkerService5A61F714";

/// The emulator's call counts are shared by the tests of this binary: the one counting WAF
/// calls must not see another test's, so the tests run one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    cdkd_tests::one_at_a_time()
}

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

/// The emulator's WAF calls since its stats were last cleared.
fn waf_calls() -> Vec<String> {
    Emulator::shared().calls("wafv2:")
}

/// The live web ACL of a `Name|Id|Scope` physical id.
fn live_acl(id: &str) -> Value {
    let parts: Vec<&str> = id.split('|').collect();
    aws(&format!(
        "c('wafv2').get_web_acl(Name='{}', Id='{}', Scope='{}')['WebACL']",
        parts[0], parts[1], parts[2]
    ))
}

/// The ARN of the web ACL protecting `resource`, `null` when none does.
fn acl_protecting(resource: &str) -> Value {
    aws(&format!(
        "c('wafv2').get_web_acl_for_resource(ResourceArn='{resource}').get('WebACL', {{}}).get('ARN')"
    ))
}

#[test]
fn a_web_acl_protecting_a_rest_api_stage_deploys_through_the_plugin() {
    let _serial = serial();
    let world = AppWorld::of("wafmap", STACK, "wafmap", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [ACL, ASSOCIATION] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }

    // The web ACL: CloudFormation's Name|Id|Scope, a generated name, both rules as written (the
    // managed rule group by vendor and name, the rate rule's custom 429 response), its
    // attributes recorded for GetAtt.
    let acl_id = physical(&world, ACL);
    let parts: Vec<&str> = acl_id.split('|').collect();
    assert_eq!(parts.len(), 3, "{acl_id}");
    assert!(parts[0].starts_with("WafMapStack-Acl-"), "{acl_id}");
    assert_eq!(parts[2], "REGIONAL");
    let live = live_acl(&acl_id);
    assert_eq!(live["Description"], "protects the API");
    assert_eq!(live["DefaultAction"], json!({"Allow": {}}));
    assert_eq!(live["Rules"][0]["Name"], "RateLimit");
    assert_eq!(
        live["Rules"][0]["Statement"]["RateBasedStatement"],
        json!({"Limit": 1000, "AggregateKeyType": "IP"})
    );
    assert_eq!(
        live["Rules"][0]["Action"]["Block"]["CustomResponse"]["ResponseCode"],
        429
    );
    assert_eq!(
        live["Rules"][1]["Statement"]["ManagedRuleGroupStatement"],
        json!({"VendorName": "AWS", "Name": "AWSManagedRulesCommonRuleSet"})
    );
    assert_eq!(live["Rules"][1]["OverrideAction"], json!({"None": {}}));
    assert_eq!(
        live["CustomResponseBodies"]["slowDown"]["Content"],
        "slow down"
    );
    let arn = live["ARN"].as_str().unwrap().to_string();
    let attributes = &resources[ACL]["attributes"];
    assert_eq!(attributes["Arn"], json!(arn));
    assert_eq!(attributes["Id"], json!(parts[1]));
    assert!(attributes["Capacity"].is_number(), "{attributes}");
    assert!(attributes["LabelNamespace"].is_string(), "{attributes}");
    assert_eq!(
        aws(&format!(
            "c('wafv2').list_tags_for_resource(ResourceARN='{arn}')['TagInfoForResource']['TagList']"
        )),
        json!([{"Key": "team", "Value": "edge"}])
    );

    // The association: the stage of the app's API is protected by the web ACL.
    let association = physical(&world, ASSOCIATION);
    let (stage, acl_arn) = association.split_once('|').unwrap();
    assert!(stage.ends_with("/stages/prod"), "{association}");
    assert_eq!(acl_arn, arn);
    assert_eq!(acl_protecting(stage), json!(arn));

    // A second deploy changes nothing and makes no WAF call.
    Emulator::shared().delete("/_emulator/stats");
    let again = deploy(&world);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert_eq!(waf_calls(), Vec::<String>::new());

    // In place: the rate limit, no description any more, another tag. UpdateWebACL replaces
    // every setting, so the description left out is gone.
    world.edit(|t| {
        let props = &mut t["Resources"][ACL]["Properties"];
        props["Rules"][0]["Statement"]["RateBasedStatement"]["Limit"] = json!(2000);
        props.as_object_mut().unwrap().remove("Description");
        props["Tags"] = json!([{"Key": "team", "Value": "waf"}]);
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("1 updated, 0 replaced"),
        "{}\n{}",
        updated.stdout,
        updated.stderr
    );
    assert_eq!(physical(&world, ACL), acl_id);
    let live = live_acl(&acl_id);
    assert_eq!(
        live["Rules"][0]["Statement"]["RateBasedStatement"]["Limit"],
        2000
    );
    assert_eq!(live["Description"].as_str().unwrap_or(""), "");
    assert_eq!(live["Rules"].as_array().unwrap().len(), 2);
    assert_eq!(
        aws(&format!(
            "c('wafv2').list_tags_for_resource(ResourceARN='{arn}')['TagInfoForResource']['TagList']"
        )),
        json!([{"Key": "team", "Value": "waf"}])
    );

    // Drift: the default action changed outside cdkd (with the current lock token) is found by
    // the plugin's reader, and reverted.
    aws(&format!(
        "(lambda w, g: w.update_web_acl(Name='{}', Id='{}', Scope='REGIONAL', LockToken=g['LockToken'], DefaultAction={{'Block': {{}}}}, Rules=g['WebACL']['Rules'], VisibilityConfig=g['WebACL']['VisibilityConfig'], CustomResponseBodies=g['WebACL']['CustomResponseBodies']) and None)(c('wafv2'), c('wafv2').get_web_acl(Name='{}', Id='{}', Scope='REGIONAL'))",
        parts[0], parts[1], parts[0], parts[1]
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(ACL) && drift.stdout.contains("DefaultAction"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(live_acl(&acl_id)["DefaultAction"], json!({"Allow": {}}));

    // Create-only: a name replaces the web ACL, and so its association (WebACLArn changes).
    // The new association moves the stage to the new web ACL; the old association's delete
    // leaves it there, and the old web ACL, no longer associated, is deleted.
    world.edit(|t| {
        t["Resources"][ACL]["Properties"]["Name"] = json!("wafmap-acl-v2");
    });
    let replaced = deploy(&world);
    assert!(
        replaced.stdout.contains("replaced"),
        "{}\n{}",
        replaced.stdout,
        replaced.stderr
    );
    let new_id = physical(&world, ACL);
    assert!(new_id.starts_with("wafmap-acl-v2|"), "{new_id}");
    let new_arn = live_acl(&new_id)["ARN"].clone();
    assert_eq!(acl_protecting(stage), new_arn);
    assert_eq!(
        aws(&format!(
            "[a['Name'] for a in c('wafv2').list_web_acls(Scope='REGIONAL')['WebACLs'] if a['Id'] == '{}']",
            parts[1]
        )),
        json!([])
    );

    // Destroy leaves no web ACL of the stack and the stage unprotected.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(
        aws("[a['Name'] for a in c('wafv2').list_web_acls(Scope='REGIONAL')['WebACLs'] if a['Name'].startswith('WafMapStack-') or a['Name'] == 'wafmap-acl-v2']"),
        json!([])
    );
    assert_eq!(acl_protecting(stage), Value::Null);
}

fn call_with(type_name: &str, operation: &str, args: &[&str]) -> cdkd_tests::Run {
    let mut all = vec!["providers", "call", type_name, operation];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

#[test]
fn a_web_acl_and_association_made_outside_cdkd_are_imported_and_read() {
    let _serial = serial();
    let made = aws(
        "c('wafv2').create_web_acl(Name='handmade-acl', Scope='REGIONAL', DefaultAction={'Block': {}}, VisibilityConfig={'SampledRequestsEnabled': False, 'CloudWatchMetricsEnabled': False, 'MetricName': 'h'}, Rules=[{'Name': 'bad', 'Priority': 0, 'Action': {'Block': {}}, 'Statement': {'ByteMatchStatement': {'SearchString': b'admin', 'FieldToMatch': {'UriPath': {}}, 'PositionalConstraint': 'CONTAINS', 'TextTransformations': [{'Priority': 0, 'Type': 'NONE'}]}}, 'VisibilityConfig': {'SampledRequestsEnabled': False, 'CloudWatchMetricsEnabled': False, 'MetricName': 'bad'}}], Tags=[{'Key': 'team', 'Value': 'ops'}])['Summary']",
    );
    let id = format!("handmade-acl|{}|REGIONAL", made["Id"].as_str().unwrap());
    let imported = call_with("AWS::WAFv2::WebACL", "import", &["--physical-id", &id])
        .success()
        .json();
    assert_eq!(imported["physicalId"], json!(id));
    assert_eq!(imported["attributes"]["Arn"], made["ARN"]);
    let read = call_with(
        "AWS::WAFv2::WebACL",
        "read_current_state",
        &["--physical-id", &id],
    )
    .success()
    .json();
    let props = &read["properties"];
    assert_eq!(props["Name"], "handmade-acl");
    assert_eq!(props["Scope"], "REGIONAL");
    assert_eq!(props["DefaultAction"], json!({"Block": {}}));
    // WAF's base64 search string reads back as the template's text.
    assert_eq!(
        props["Rules"][0]["Statement"]["ByteMatchStatement"]["SearchString"],
        "admin"
    );
    assert_eq!(props["Tags"], json!([{"Key": "team", "Value": "ops"}]));

    let resource =
        "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/handmade/1";
    let arn = made["ARN"].as_str().unwrap();
    aws(&format!(
        "c('wafv2').associate_web_acl(WebACLArn='{arn}', ResourceArn='{resource}') and None"
    ));
    let association = format!("{resource}|{arn}");
    let read = call_with(
        "AWS::WAFv2::WebACLAssociation",
        "read_current_state",
        &["--physical-id", &association],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"],
        json!({"ResourceArn": resource, "WebACLArn": arn})
    );

    // What does not exist is refused by name.
    let missing = call_with(
        "AWS::WAFv2::WebACL",
        "import",
        &[
            "--physical-id",
            "nosuch|00000000-0000-0000-0000-000000000000|REGIONAL",
        ],
    );
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    aws(&format!(
        "c('wafv2').disassociate_web_acl(ResourceArn='{resource}') and None"
    ));
}

#[test]
fn what_an_interrupted_create_made_is_found_by_its_name_in_its_scope() {
    let _serial = serial();
    // A web ACL whose name the create generated from its token is found by that name among the
    // web ACLs of its scope; another token finds nothing.
    let props = json!({
        "Scope": "REGIONAL",
        "DefaultAction": {"Allow": {}},
        "VisibilityConfig": {"SampledRequestsEnabled": false, "CloudWatchMetricsEnabled": false, "MetricName": "crashy"},
    })
    .to_string();
    let create_args = [
        "--logical-id",
        "Guard",
        "--stack-name",
        "Crashy",
        "--token",
        "tok-waf-1",
        "--properties",
        &props,
    ];
    let created = call_with("AWS::WAFv2::WebACL", "create", &create_args)
        .success()
        .json();
    let id = created["physicalId"].as_str().unwrap().to_string();
    assert!(
        id.starts_with("Crashy-Guard-") && id.ends_with("|REGIONAL"),
        "{id}"
    );
    let found = call_with("AWS::WAFv2::WebACL", "find_created", &create_args)
        .success()
        .json();
    assert_eq!(found["physicalId"], json!(id), "{found}");
    let other = call_with(
        "AWS::WAFv2::WebACL",
        "find_created",
        &[
            "--logical-id",
            "Guard",
            "--stack-name",
            "Crashy",
            "--token",
            "tok-waf-other",
            "--properties",
            &props,
        ],
    )
    .success()
    .json();
    assert!(other["physicalId"].is_null(), "{other}");
    // The same create again makes no second web ACL: WAF refuses the taken name.
    let again = call_with("AWS::WAFv2::WebACL", "create", &create_args);
    assert_ne!(again.code, Some(0), "{}", again.stdout);
    let name = id.split('|').next().unwrap().to_string();
    assert_eq!(
        aws(&format!(
            "len([a for a in c('wafv2').list_web_acls(Scope='REGIONAL')['WebACLs'] if a['Name'] == '{name}'])"
        )),
        json!(1)
    );

    // An association created twice is one association with one id.
    let arn = aws("c('wafv2').list_web_acls(Scope='REGIONAL')['WebACLs']")
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["Name"] == json!(name))
        .unwrap()["ARN"]
        .clone();
    let resource = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/crashy/1";
    let association = json!({"ResourceArn": resource, "WebACLArn": arn}).to_string();
    let first = call_with(
        "AWS::WAFv2::WebACLAssociation",
        "create",
        &["--properties", &association],
    )
    .success()
    .json();
    let second = call_with(
        "AWS::WAFv2::WebACLAssociation",
        "create",
        &["--properties", &association],
    )
    .success()
    .json();
    assert_eq!(first["physicalId"], second["physicalId"]);
    assert_eq!(acl_protecting(resource), arn);
    // Deleting it twice: the second finds nothing to delete, which is success.
    let association_id = first["physicalId"].as_str().unwrap().to_string();
    for _ in 0..2 {
        call_with(
            "AWS::WAFv2::WebACLAssociation",
            "delete",
            &["--physical-id", &association_id],
        )
        .success();
    }
    assert_eq!(acl_protecting(resource), Value::Null);
    for _ in 0..2 {
        call_with("AWS::WAFv2::WebACL", "delete", &["--physical-id", &id]).success();
    }
}

#[test]
fn cloud_map_namespaces_wait_for_their_operations_and_are_created_once() {
    let _serial = serial();
    // An HTTP namespace: the create waits for its operation (the emulator answers SUBMITTED
    // first), carries a CreatorRequestId from the token, so the same create again answers the
    // same namespace, and the run after a crash finds it by that id.
    let props = json!({"Name": "wafmap-http", "Description": "first", "Tags": [{"Key": "team", "Value": "map"}]})
        .to_string();
    let create_args = [
        "--logical-id",
        "Http",
        "--stack-name",
        "Crashy",
        "--token",
        "tok-map-1",
        "--properties",
        &props,
    ];
    let created = call_with(
        "AWS::ServiceDiscovery::HttpNamespace",
        "create",
        &create_args,
    )
    .success()
    .json();
    let id = created["physicalId"].as_str().unwrap().to_string();
    assert!(id.starts_with("ns-"), "{created}");
    assert_eq!(created["attributes"]["Id"], json!(id));
    assert!(
        created["attributes"]["Arn"]
            .as_str()
            .unwrap()
            .ends_with(&id),
        "{created}"
    );
    assert_eq!(
        aws(&format!(
            "c('servicediscovery').get_namespace(Id='{id}')['Namespace']['Description']"
        )),
        "first"
    );
    let again = call_with(
        "AWS::ServiceDiscovery::HttpNamespace",
        "create",
        &create_args,
    )
    .success()
    .json();
    assert_eq!(again["physicalId"], json!(id));
    assert_eq!(
        aws("len([n for n in c('servicediscovery').list_namespaces()['Namespaces'] if n['Name'] == 'wafmap-http'])"),
        json!(1)
    );
    let found = call_with(
        "AWS::ServiceDiscovery::HttpNamespace",
        "find_created",
        &create_args,
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(id), "{found}");
    let other = call_with(
        "AWS::ServiceDiscovery::HttpNamespace",
        "find_created",
        &[
            "--logical-id",
            "Http",
            "--stack-name",
            "Crashy",
            "--token",
            "tok-map-other",
            "--properties",
            &props,
        ],
    )
    .success()
    .json();
    assert!(other["physicalId"].is_null(), "{other}");

    // Update in place: the description (an operation waited for) and the tags.
    let updated_props =
        json!({"Name": "wafmap-http", "Description": "second", "Tags": [{"Key": "team", "Value": "mesh"}]})
            .to_string();
    call_with(
        "AWS::ServiceDiscovery::HttpNamespace",
        "update",
        &[
            "--physical-id",
            &id,
            "--previous-properties",
            &props,
            "--properties",
            &updated_props,
        ],
    )
    .success();
    let read = call_with(
        "AWS::ServiceDiscovery::HttpNamespace",
        "read_current_state",
        &["--physical-id", &id],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"],
        json!({"Name": "wafmap-http", "Description": "second", "Tags": [{"Key": "team", "Value": "mesh"}]})
    );

    // A private DNS namespace in a VPC: its hosted zone id is an attribute, its SOA TTL read back.
    let vpc = aws("c('ec2').create_vpc(CidrBlock='10.7.0.0/16')['Vpc']['VpcId']");
    let private_props = json!({
        "Name": "wafmap.internal", "Vpc": vpc,
        "Properties": {"DnsProperties": {"SOA": {"TTL": 60}}}
    })
    .to_string();
    let private = call_with(
        "AWS::ServiceDiscovery::PrivateDnsNamespace",
        "create",
        &["--logical-id", "Private", "--properties", &private_props],
    )
    .success()
    .json();
    let private_id = private["physicalId"].as_str().unwrap().to_string();
    assert!(
        private["attributes"]["HostedZoneId"].is_string(),
        "{private}"
    );
    let read = call_with(
        "AWS::ServiceDiscovery::PrivateDnsNamespace",
        "read_current_state",
        &["--physical-id", &private_id, "--properties", &private_props],
    )
    .success()
    .json();
    assert_eq!(read["properties"]["Name"], "wafmap.internal");
    assert_eq!(read["properties"]["Vpc"], vpc);
    assert_eq!(
        read["properties"]["Properties"],
        json!({"DnsProperties": {"SOA": {"TTL": 60}}})
    );

    // Deleting twice: the second finds nothing, which is success; nothing is left.
    for (kind, ns) in [
        ("AWS::ServiceDiscovery::HttpNamespace", &id),
        ("AWS::ServiceDiscovery::PrivateDnsNamespace", &private_id),
    ] {
        for _ in 0..2 {
            call_with(kind, "delete", &["--physical-id", ns]).success();
        }
    }
    assert_eq!(
        aws("[n['Name'] for n in c('servicediscovery').list_namespaces()['Namespaces'] if n['Name'].startswith('wafmap')]"),
        json!([])
    );
}

/// The live Cloud Map service `id` (null when it does not exist).
fn live_service(id: &str) -> Value {
    aws(&format!(
        "(lambda sd: next(iter([s for s in sd.list_services()['Services'] if s['Id'] == '{id}']), None) and sd.get_service(Id='{id}')['Service'])(c('servicediscovery'))"
    ))
}

/// The names of the services in namespace `namespace`.
fn services_in(namespace: &str) -> Value {
    aws(&format!(
        "sorted(s['Name'] for s in c('servicediscovery').list_services(Filters=[{{'Name': 'NAMESPACE_ID', 'Values': ['{namespace}'], 'Condition': 'EQ'}}])['Services'])"
    ))
}

#[test]
fn the_apps_cloud_map_services_deploy_through_the_plugin() {
    let _serial = serial();
    let world = AppWorld::of("wafmap", STACK, "cloudmap", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [
        PRIVATE_NAMESPACE,
        HTTP_NAMESPACE,
        API_SERVICE,
        WORKER_SERVICE,
    ] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }

    // The DNS service in the private namespace: its A record's TTL, multivalue routing, the
    // custom health check; Id, Arn and Name recorded for GetAtt.
    let private = physical(&world, PRIVATE_NAMESPACE);
    let api = physical(&world, API_SERVICE);
    assert!(api.starts_with("srv-"), "{api}");
    let live = live_service(&api);
    assert_eq!(live["Name"], "api");
    assert_eq!(live["NamespaceId"], json!(private));
    assert_eq!(live["Description"], "the API tasks");
    assert_eq!(live["DnsConfig"]["RoutingPolicy"], "MULTIVALUE");
    assert_eq!(
        live["DnsConfig"]["DnsRecords"],
        json!([{"Type": "A", "TTL": 30}])
    );
    assert_eq!(
        live["HealthCheckCustomConfig"],
        json!({"FailureThreshold": 1})
    );
    let attributes = &resources[API_SERVICE]["attributes"];
    assert_eq!(attributes["Id"], json!(api));
    assert_eq!(attributes["Name"], "api");
    assert_eq!(attributes["Arn"], live["Arn"]);
    // The HTTP service in the HTTP namespace.
    let http = physical(&world, HTTP_NAMESPACE);
    let worker = physical(&world, WORKER_SERVICE);
    assert_eq!(services_in(&http), json!(["worker"]));
    assert_eq!(live_service(&worker)["Description"], "background workers");

    // No drift right after the deploy; a second deploy changes nothing and makes no Cloud Map
    // call.
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    Emulator::shared().delete("/_emulator/stats");
    let again = deploy(&world);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert_eq!(
        Emulator::shared().calls("servicediscovery:"),
        Vec::<String>::new()
    );

    // In place: the DNS record's TTL and the description (UpdateService, an operation waited
    // for); the worker's service attributes and tags.
    world.edit(|t| {
        let api = &mut t["Resources"][API_SERVICE]["Properties"];
        api["DnsConfig"]["DnsRecords"][0]["TTL"] = json!(60);
        api["Description"] = json!("the API tasks, v2");
        let worker = &mut t["Resources"][WORKER_SERVICE]["Properties"];
        worker["ServiceAttributes"] = json!({"tier": "batch"});
        worker["Tags"] = json!([{"Key": "team", "Value": "jobs"}]);
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}\n{}",
        updated.stdout,
        updated.stderr
    );
    assert_eq!(physical(&world, API_SERVICE), api);
    let live = live_service(&api);
    assert_eq!(live["DnsConfig"]["DnsRecords"][0]["TTL"], 60);
    assert_eq!(live["Description"], "the API tasks, v2");
    assert_eq!(
        aws(&format!(
            "c('servicediscovery').get_service_attributes(ServiceId='{worker}')['ServiceAttributes']['Attributes']"
        )),
        json!({"tier": "batch"})
    );
    let worker_arn = live_service(&worker)["Arn"].as_str().unwrap().to_string();
    assert_eq!(
        aws(&format!(
            "c('servicediscovery').list_tags_for_resource(ResourceARN='{worker_arn}')['Tags']"
        )),
        json!([{"Key": "team", "Value": "jobs"}])
    );

    // Drift: the worker's description changed outside cdkd is found by the plugin's reader,
    // and reverted.
    aws(&format!(
        "c('servicediscovery').update_service(Id='{worker}', Service={{'Description': 'changed by hand'}}) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(WORKER_SERVICE) && drift.stdout.contains("Description"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(live_service(&worker)["Description"], "background workers");

    // Create-only: a new name replaces the worker service; the old one is gone.
    world.edit(|t| {
        t["Resources"][WORKER_SERVICE]["Properties"]["Name"] = json!("worker-v2");
    });
    let replaced = deploy(&world);
    assert!(
        replaced.stdout.contains("replaced"),
        "{}\n{}",
        replaced.stdout,
        replaced.stderr
    );
    assert_ne!(physical(&world, WORKER_SERVICE), worker);
    assert_eq!(services_in(&http), json!(["worker-v2"]));
    assert_eq!(live_service(&worker), Value::Null);

    // Destroy leaves no service and no namespace of the app.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(
        aws("[s['Name'] for s in c('servicediscovery').list_services()['Services'] if s['Name'] in ('api', 'worker', 'worker-v2')]"),
        json!([])
    );
    assert_eq!(
        aws("[n['Name'] for n in c('servicediscovery').list_namespaces()['Namespaces'] if n['Name'].startswith('wafmap')]"),
        json!([])
    );
}

#[test]
fn a_cloud_map_service_is_created_once_found_by_its_token_and_imported() {
    let _serial = serial();
    let operation =
        aws("c('servicediscovery').create_http_namespace(Name='wafmap-crash')['OperationId']");
    let operation = operation.as_str().unwrap().to_string();
    let namespace = loop {
        let op = aws(&format!(
            "c('servicediscovery').get_operation(OperationId='{operation}')['Operation']"
        ));
        if op["Status"] == "SUCCESS" {
            break op["Targets"]["NAMESPACE"].as_str().unwrap().to_string();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };

    // A service with no Name: the create generates one from its token and carries a
    // CreatorRequestId from it, so the same create again answers the same service and the run
    // after a crash finds it by that name in its namespace; another token finds nothing.
    let props = json!({"NamespaceId": namespace, "Description": "unnamed"}).to_string();
    let create_args = [
        "--logical-id",
        "Jobs",
        "--stack-name",
        "Crashy",
        "--token",
        "tok-svc-1",
        "--properties",
        &props,
    ];
    let created = call_with("AWS::ServiceDiscovery::Service", "create", &create_args)
        .success()
        .json();
    let id = created["physicalId"].as_str().unwrap().to_string();
    let name = created["attributes"]["Name"].as_str().unwrap().to_string();
    assert!(name.starts_with("Crashy-Jobs-"), "{created}");
    let again = call_with("AWS::ServiceDiscovery::Service", "create", &create_args)
        .success()
        .json();
    assert_eq!(again["physicalId"], json!(id));
    assert_eq!(services_in(&namespace), json!([name]));
    let found = call_with(
        "AWS::ServiceDiscovery::Service",
        "find_created",
        &create_args,
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(id), "{found}");
    let other = call_with(
        "AWS::ServiceDiscovery::Service",
        "find_created",
        &[
            "--logical-id",
            "Jobs",
            "--stack-name",
            "Crashy",
            "--token",
            "tok-svc-other",
            "--properties",
            &props,
        ],
    )
    .success()
    .json();
    assert!(other["physicalId"].is_null(), "{other}");

    // A service made outside cdkd is imported and read in template shape.
    let made = aws(&format!(
        "c('servicediscovery').create_service(Name='handmade', NamespaceId='{namespace}', Description='by hand', Tags=[{{'Key': 'team', 'Value': 'ops'}}])['Service']"
    ));
    let made_id = made["Id"].as_str().unwrap().to_string();
    let imported = call_with(
        "AWS::ServiceDiscovery::Service",
        "import",
        &["--physical-id", &made_id],
    )
    .success()
    .json();
    assert_eq!(imported["attributes"]["Arn"], made["Arn"], "{imported}");
    assert_eq!(imported["attributes"]["Name"], "handmade");
    let read = call_with(
        "AWS::ServiceDiscovery::Service",
        "read_current_state",
        &["--physical-id", &made_id],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"],
        json!({"Name": "handmade", "NamespaceId": namespace, "Description": "by hand", "Tags": [{"Key": "team", "Value": "ops"}]})
    );
    let missing = call_with(
        "AWS::ServiceDiscovery::Service",
        "import",
        &["--physical-id", "srv-nosuch00"],
    );
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);

    // Deleting twice: the second finds nothing, which is success.
    for service in [&id, &made_id] {
        for _ in 0..2 {
            call_with(
                "AWS::ServiceDiscovery::Service",
                "delete",
                &["--physical-id", service],
            )
            .success();
        }
    }
    assert_eq!(services_in(&namespace), json!([]));
    call_with(
        "AWS::ServiceDiscovery::HttpNamespace",
        "delete",
        &["--physical-id", &namespace],
    )
    .success();
}
