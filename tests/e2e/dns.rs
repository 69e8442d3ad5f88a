//! The route53 and acm plugins through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! dns.js): a public zone, an A record, an alias to it, a CNAME, a record set group (which Cloud
//! Control cannot provision) and a certificate validated from DNS in the zone; checked in the
//! emulator's Route 53 and ACM APIs, through a no-change deploy, an in-place update, a
//! replacement, drift, import and destroy.

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "DnsStack";
const ZONE: &str = "ZoneA5DE4B68";
const WWW: &str = "Www4AF92A2E";
const APEX: &str = "Apex7EB71B37";
const DOCS: &str = "DocsA50029D5";
const MAIL: &str = "Mail";
const CERT: &str = "Cert5C9FAEC1";

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

/// The zone's records as `[name, type, ttl, values, alias dns name]`, NS and SOA left out.
fn records(zone: &str) -> Value {
    aws(&format!(
        "sorted([[r['Name'], r['Type'], r.get('TTL'), sorted(v['Value'] for v in r.get('ResourceRecords', [])), r.get('AliasTarget', {{}}).get('DNSName')] for r in c('route53').list_resource_record_sets(HostedZoneId='{zone}')['ResourceRecordSets'] if r['Type'] not in ('NS', 'SOA')])"
    ))
}

fn record(zone: &str, name: &str, kind: &str) -> Value {
    records(zone)
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == name && r[1] == kind)
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_zone_its_records_and_a_dns_validated_certificate_deploy_through_the_plugins() {
    let world = AppWorld::of("dns", STACK, "dns", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("6 created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [ZONE, WWW, APEX, DOCS, MAIL, CERT] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let zone = physical(&world, ZONE);
    assert_eq!(resources[ZONE]["attributes"]["Id"], json!(zone));
    assert_eq!(
        resources[MAIL]["attributes"]["Id"],
        json!(physical(&world, MAIL))
    );
    assert!(physical(&world, MAIL).starts_with("DnsStack-Mail-"));
    assert!(resources[ZONE]["attributes"]["NameServers"]
        .as_array()
        .is_some_and(|s| !s.is_empty()));
    let live_zone = aws(&format!(
        "(lambda z: [z['Name'], z['Config'].get('Comment')])(c('route53').get_hosted_zone(Id='{zone}')['HostedZone'])"
    ));
    assert_eq!(live_zone, json!(["cdkd-dns.example.", "cdkd e2e zone"]));
    assert_eq!(
        physical(&world, WWW),
        format!("{zone}|www.cdkd-dns.example.|A|")
    );

    // Route 53's side: the records, the alias to www, the group's MX and TXT, the validation
    // CNAMEs the certificate wrote.
    assert_eq!(
        record(&zone, "www.cdkd-dns.example.", "A"),
        json!([
            "www.cdkd-dns.example.",
            "A",
            300,
            ["192.0.2.10", "192.0.2.11"],
            null
        ])
    );
    assert_eq!(
        record(&zone, "cdkd-dns.example.", "A")[4],
        json!("www.cdkd-dns.example.")
    );
    assert_eq!(
        record(&zone, "docs.cdkd-dns.example.", "CNAME")[3],
        json!(["www.cdkd-dns.example"])
    );
    assert_eq!(
        record(&zone, "cdkd-dns.example.", "MX")[3],
        json!(["10 mx1.cdkd-dns.example."])
    );
    assert_eq!(
        record(&zone, "cdkd-dns.example.", "TXT")[3],
        json!(["\"v=spf1 -all\""])
    );
    let cert = physical(&world, CERT);
    assert_eq!(resources[CERT]["attributes"]["CertificateArn"], json!(cert));
    let live_cert = aws(&format!(
        "(lambda d: [d['Status'], [o['ResourceRecord']['Name'] for o in d['DomainValidationOptions']]])(c('acm').describe_certificate(CertificateArn='{cert}')['Certificate'])"
    ));
    assert_eq!(live_cert[0], "ISSUED", "{live_cert}");
    for name in live_cert[1].as_array().unwrap() {
        let name = name.as_str().unwrap();
        assert_eq!(
            record(&zone, name, "CNAME")[1],
            "CNAME",
            "{name} not written"
        );
    }

    // A second deploy changes nothing.
    let again = deploy(&world);
    assert!(again.stdout.contains("6 unchanged"), "{}", again.stdout);

    // In place: a record's TTL and values.
    world.edit(|t| {
        t["Resources"][WWW]["Properties"]["TTL"] = json!("60");
        t["Resources"][WWW]["Properties"]["ResourceRecords"] = json!(["192.0.2.20"]);
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("1 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    assert_eq!(
        record(&zone, "www.cdkd-dns.example.", "A"),
        json!(["www.cdkd-dns.example.", "A", 60, ["192.0.2.20"], null])
    );

    // In place too: the certificate's tags (everything else about it is create-only).
    world.edit(|t| {
        t["Resources"][CERT]["Properties"]["Tags"] = json!([{"Key": "team", "Value": "web"}]);
    });
    let retagged = deploy(&world);
    assert!(
        retagged.stdout.contains("1 updated, 0 replaced"),
        "{}",
        retagged.stdout
    );
    assert_eq!(physical(&world, CERT), cert);
    let tags = aws(&format!(
        "sorted((t['Key'], t.get('Value')) for t in c('acm').list_tags_for_certificate(CertificateArn='{cert}')['Tags'])"
    ));
    assert_eq!(tags[1], json!(["team", "web"]), "{tags}");
    assert_eq!(tags.as_array().unwrap().len(), 2, "{tags}");
    assert_eq!(tags[0][0], "cdkd:create-token", "{tags}");

    // Drift: a record changed outside cdkd is found by the plugin's reader, and reverted.
    aws(&format!(
        "c('route53').change_resource_record_sets(HostedZoneId='{zone}', ChangeBatch={{'Changes': [{{'Action': 'UPSERT', 'ResourceRecordSet': {{'Name': 'docs.cdkd-dns.example.', 'Type': 'CNAME', 'TTL': 600, 'ResourceRecords': [{{'Value': 'elsewhere.example'}}]}}}}]}}) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(DOCS) && drift.stdout.contains("ResourceRecords"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    assert_eq!(
        record(&zone, "docs.cdkd-dns.example.", "CNAME")[3],
        json!(["www.cdkd-dns.example"])
    );

    // Replacement: a record's name is create-only; the new record is written, the old deleted.
    world.edit(|t| {
        t["Resources"][DOCS]["Properties"]["Name"] = json!("help.cdkd-dns.example.");
    });
    let replaced = deploy(&world);
    assert!(
        replaced.stdout.contains("1 replaced"),
        "{}",
        replaced.stdout
    );
    assert_eq!(
        record(&zone, "docs.cdkd-dns.example.", "CNAME"),
        Value::Null
    );
    assert_eq!(
        record(&zone, "help.cdkd-dns.example.", "CNAME")[3],
        json!(["www.cdkd-dns.example"])
    );

    // Destroy: no record of the stack, no zone, no certificate left.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    let left = aws(&format!(
        "([z['Id'] for z in c('route53').list_hosted_zones()['HostedZones'] if z['Id'].endswith('{zone}')], [a['CertificateArn'] for a in c('acm').list_certificates()['CertificateSummaryList'] if a['CertificateArn'] == '{cert}'])"
    ));
    assert_eq!(left, json!([[], []]));
}

#[test]
fn a_zone_made_outside_cdkd_is_imported_and_read() {
    let zone = aws(
        "c('route53').create_hosted_zone(Name='imported-dns.example', CallerReference='boto-import-1', HostedZoneConfig={'Comment': 'by hand'})['HostedZone']['Id'].split('/')[-1]",
    );
    let zone = zone.as_str().unwrap().to_string();
    aws(&format!(
        "c('route53').change_tags_for_resource(ResourceType='hostedzone', ResourceId='{zone}', AddTags=[{{'Key': 'team', 'Value': 'dns'}}]) and None"
    ));
    let imported = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::Route53::HostedZone",
            "import",
            "--physical-id",
            &zone,
        ],
    )
    .success()
    .json();
    assert_eq!(imported["physicalId"], json!(zone));
    assert_eq!(imported["attributes"]["Id"], json!(zone));
    let read = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::Route53::HostedZone",
            "read_current_state",
            "--physical-id",
            &zone,
        ],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"],
        json!({
            "Name": "imported-dns.example.",
            "HostedZoneConfig": {"Comment": "by hand"},
            "HostedZoneTags": [{"Key": "team", "Value": "dns"}],
        })
    );
    let missing = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::Route53::HostedZone",
            "import",
            "--physical-id",
            "ZNOSUCHZONE1",
        ],
    );
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    aws(&format!(
        "c('route53').delete_hosted_zone(Id='{zone}') and None"
    ));
}

fn call(type_name: &str, operation: &str, extra: &[&str]) -> Value {
    let mut args = vec![
        "providers",
        "call",
        type_name,
        operation,
        "--stack-name",
        "DnsCrash",
    ];
    args.extend_from_slice(extra);
    cdkd_on(Emulator::shared(), &args).success().json()
}

#[test]
fn a_create_repeated_after_a_crash_makes_nothing_twice_and_is_found_by_its_token() {
    // The zone: its CallerReference is the token, so a repeated create adopts the zone and
    // find_created names it.
    let props = r#"{"Name": "crash-dns.example.", "HostedZoneConfig": {"Comment": "crash"}}"#;
    let token = "tok-dns-crash-zone-1";
    let first = call(
        "AWS::Route53::HostedZone",
        "create",
        &["--properties", props, "--token", token],
    );
    let zone = first["physicalId"].as_str().unwrap().to_string();
    let again = call(
        "AWS::Route53::HostedZone",
        "create",
        &["--properties", props, "--token", token],
    );
    assert_eq!(again["physicalId"], json!(zone));
    let found = call(
        "AWS::Route53::HostedZone",
        "find_created",
        &["--properties", props, "--token", token],
    );
    assert_eq!(found["physicalId"], json!(zone));
    assert_eq!(found["properties"]["HostedZoneConfig"]["Comment"], "crash");
    let zones = aws(
        "[z['Id'] for z in c('route53').list_hosted_zones()['HostedZones'] if z['Name'] == 'crash-dns.example.']",
    );
    assert_eq!(zones.as_array().unwrap().len(), 1, "{zones}");

    // A record: UPSERT, so the repeated create writes the same record once.
    let record = format!(
        r#"{{"HostedZoneId": "{zone}", "Name": "a.crash-dns.example", "Type": "A", "TTL": "60", "ResourceRecords": ["192.0.2.1"]}}"#
    );
    let made = call(
        "AWS::Route53::RecordSet",
        "create",
        &["--properties", &record],
    );
    // A record addressed by its zone's name lands in the same zone.
    let by_name = call(
        "AWS::Route53::RecordSet",
        "create",
        &[
            "--properties",
            r#"{"HostedZoneName": "crash-dns.example.", "Name": "b.crash-dns.example.", "Type": "TXT", "TTL": 60, "ResourceRecords": ["\"hi\""]}"#,
        ],
    );
    assert_eq!(
        by_name["physicalId"],
        json!(format!("{zone}|b.crash-dns.example.|TXT|"))
    );
    call(
        "AWS::Route53::RecordSet",
        "delete",
        &["--physical-id", by_name["physicalId"].as_str().unwrap()],
    );
    let remade = call(
        "AWS::Route53::RecordSet",
        "create",
        &["--properties", &record],
    );
    assert_eq!(made["physicalId"], remade["physicalId"]);
    assert_eq!(
        record_count(&zone, "a.crash-dns.example."),
        1,
        "{}",
        records(&zone)
    );

    // The certificate: validated in the zone, tagged with the token, which ACM also gets
    // (hashed) as its IdempotencyToken: the repeated request answers the same certificate.
    let cert_props = format!(
        r#"{{"DomainName": "crash-dns.example", "ValidationMethod": "DNS", "DomainValidationOptions": [{{"DomainName": "crash-dns.example", "HostedZoneId": "{zone}"}}]}}"#
    );
    let cert_token = "tok-dns-crash-cert-1";
    let cert = call(
        "AWS::CertificateManager::Certificate",
        "create",
        &["--properties", &cert_props, "--token", cert_token],
    );
    let arn = cert["physicalId"].as_str().unwrap().to_string();
    let cert_again = call(
        "AWS::CertificateManager::Certificate",
        "create",
        &["--properties", &cert_props, "--token", cert_token],
    );
    assert_eq!(cert_again["physicalId"], json!(arn));
    let found = call(
        "AWS::CertificateManager::Certificate",
        "find_created",
        &["--properties", &cert_props, "--token", cert_token],
    );
    assert_eq!(found["physicalId"], json!(arn));
    assert_eq!(found["properties"]["DomainName"], "crash-dns.example");
    assert!(found["properties"].get("Tags").is_none(), "{found}");
    let nothing = call(
        "AWS::CertificateManager::Certificate",
        "find_created",
        &["--token", "tok-never-used"],
    );
    assert_eq!(nothing["physicalId"], Value::Null);

    // Clean up through the plugins: the certificate, the record, then the zone (its
    // validation CNAME cleared with it).
    call(
        "AWS::CertificateManager::Certificate",
        "delete",
        &["--physical-id", &arn],
    );
    let record_id = made["physicalId"].as_str().unwrap().to_string();
    call(
        "AWS::Route53::RecordSet",
        "delete",
        &["--physical-id", &record_id, "--properties", &record],
    );
    call(
        "AWS::Route53::HostedZone",
        "delete",
        &["--physical-id", &zone],
    );
    let left = aws(
        "[z['Id'] for z in c('route53').list_hosted_zones()['HostedZones'] if z['Name'] == 'crash-dns.example.']",
    );
    assert_eq!(left, json!([]));
}

fn record_count(zone: &str, name: &str) -> usize {
    records(zone)
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r[0] == name)
        .count()
}

#[test]
fn a_private_zone_follows_its_vpcs_comment_and_tags() {
    let vpcs = aws(
        "[c('ec2').create_vpc(CidrBlock='10.%d.0.0/16' % i)['Vpc']['VpcId'] for i in (61, 62)]",
    );
    let (a, b) = (vpcs[0].as_str().unwrap(), vpcs[1].as_str().unwrap());
    let props = format!(
        r#"{{"Name": "private-dns.internal", "VPCs": [{{"VPCId": "{a}", "VPCRegion": "us-east-1"}}], "HostedZoneConfig": {{"Comment": "one"}}, "HostedZoneTags": [{{"Key": "k", "Value": "1"}}]}}"#
    );
    let created = call(
        "AWS::Route53::HostedZone",
        "create",
        &["--properties", &props, "--token", "tok-private-zone-1"],
    );
    let zone = created["physicalId"].as_str().unwrap().to_string();
    assert_eq!(created["attributes"]["Id"], json!(zone));
    let private = aws(&format!(
        "(lambda z: [z['HostedZone']['Config']['PrivateZone'], [v['VPCId'] for v in z['VPCs']]])(c('route53').get_hosted_zone(Id='{zone}'))"
    ));
    assert_eq!(private, json!([true, [a]]));
    let after = format!(
        r#"{{"Name": "private-dns.internal", "VPCs": [{{"VPCId": "{b}", "VPCRegion": "us-east-1"}}], "HostedZoneTags": [{{"Key": "k2", "Value": "2"}}]}}"#
    );
    call(
        "AWS::Route53::HostedZone",
        "update",
        &[
            "--physical-id",
            &zone,
            "--properties",
            &after,
            "--previous-properties",
            &props,
        ],
    );
    let read = call(
        "AWS::Route53::HostedZone",
        "read_current_state",
        &["--physical-id", &zone, "--properties", &after],
    );
    assert_eq!(
        read["properties"],
        json!({
            "Name": "private-dns.internal",
            "VPCs": [{"VPCId": b, "VPCRegion": "us-east-1"}],
            "HostedZoneTags": [{"Key": "k2", "Value": "2"}],
        })
    );
    call(
        "AWS::Route53::HostedZone",
        "delete",
        &["--physical-id", &zone],
    );
    let gone = call(
        "AWS::Route53::HostedZone",
        "read_current_state",
        &["--physical-id", &zone],
    );
    assert_eq!(gone["properties"], Value::Null);
}

#[test]
fn without_the_route53_plugin_the_record_set_group_is_refused_before_anything_is_created() {
    // Cloud Control cannot create an AWS::Route53::RecordSetGroup (its schema has no read
    // handler): pre-flight refuses the stack by name before any call.
    let world = AppWorld::of("dns", STACK, "nogroup", |_| {}).on_cloud_control();
    let app = world.assembly.path().display().to_string();
    let refused = world.cdkd(&["deploy", "-a", &app, STACK]);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert!(
        refused.stderr.contains(&format!(
            "{MAIL} (AWS::Route53::RecordSetGroup): no loaded plugin handles this type"
        )),
        "{}",
        refused.stderr
    );
    assert!(!refused.stdout.contains("created"), "{}", refused.stdout);
    assert_eq!(world.state(), Value::Null, "a record was written");
}
