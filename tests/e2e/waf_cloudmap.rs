//! The wafv2 plugin through `cdkd deploy` with a real CDK app (tests/fixtures/apps/wafmap.js): a
//! regional web ACL with a rate-based rule and a managed rule group, associated with the prod
//! stage of a LambdaRestApi of the same app; checked in the emulator's WAF and in the state
//! file, through a no-change deploy, an in-place update, drift, a replacement, import and
//! destroy. (The Cloud Map half of issue 28 joins this file with the servicediscovery plugin.)

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "WafMapStack";
const ACL: &str = "Acl";
const ASSOCIATION: &str = "AclAssociation";

/// The emulator's call counts are shared by the tests of this binary: the one counting WAF
/// calls must not see another test's, so the tests run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    let stats = Emulator::shared().get("/_emulator/stats");
    stats
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("wafv2:"))
        .cloned()
        .collect()
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
