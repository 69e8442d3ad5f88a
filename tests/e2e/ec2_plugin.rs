//! The EC2 plugin through `cdkd deploy`: the VPC fixture (2 AZs, public and private subnets,
//! route tables and routes, an IGW attachment, a NAT gateway with its EIP, security groups whose
//! ingress rules reference each other, a network ACL with entries), checked in EC2's own
//! describe calls, with the composite ids in state exactly as specified; then an ingress port
//! change (revoke + authorize, new `Id`), an import by composite id, and a destroy that leaves
//! nothing.

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const VPC: &str = "Vpc8378EB38";
const IGW: &str = "VpcIGWD7BA715C";
const ATTACHMENT: &str = "VpcVPCGWBF912B6E";
const EIP: &str = "VpcpublicSubnet1EIP411541E6";
const NAT: &str = "VpcpublicSubnet1NATGatewayA036E8A6";
const PUBLIC_TABLE: &str = "VpcpublicSubnet1RouteTable15C15F8E";
const PUBLIC_ROUTE: &str = "VpcpublicSubnet1DefaultRouteB88F9E93";
const PRIVATE_TABLE: &str = "VpcprivateSubnet1RouteTable1979EACB";
const PRIVATE_ROUTE: &str = "VpcprivateSubnet1DefaultRouteB506891A";
const WEB: &str = "WebSg75AA54D5";
const DB: &str = "DbSg495F8305";
const WEB_FROM_DB: &str = "WebSgfromVpcStackDbSgCEF15B5C80008010D89992F7";
const DB_FROM_WEB: &str = "DbSgfromVpcStackWebSg012236805432EAB494E9";
const ACL: &str = "AclD68BE482";
const ACL_IN: &str = "AclAllowHttpsBB941BFC";
const ACL_OUT: &str = "AclAllowOut0F088AB9";

fn ec2(expression: &str) -> Value {
    Emulator::shared().boto(&expression.replace("EC2", "c('ec2')"))
}

fn id(resources: &Value, logical_id: &str) -> String {
    resources[logical_id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{logical_id} has no physical id: {resources}"))
        .to_string()
}

/// The ingress rules of a group as `(protocol, from, to, source, id)`.
fn ingress_rules(group: &str) -> Vec<(String, i64, i64, String, String)> {
    let rules = ec2(&format!(
        "[r for r in EC2.describe_security_group_rules(Filters=[{{'Name': 'group-id', 'Values': ['{group}']}}])['SecurityGroupRules'] if not r['IsEgress']]"
    ));
    rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let source = r["CidrIpv4"]
                .as_str()
                .or(r["ReferencedGroupInfo"]["GroupId"].as_str())
                .unwrap_or_default();
            (
                r["IpProtocol"].as_str().unwrap().to_string(),
                r["FromPort"].as_i64().unwrap_or(-1),
                r["ToPort"].as_i64().unwrap_or(-1),
                source.to_string(),
                r["SecurityGroupRuleId"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_vpc_fixture_goes_through_the_ec2_plugin() {
    let world = AppWorld::of("vpc", "VpcStack", "ec2plugin", |t| {
        // Ref of an EIP is its public IP, not the composite id state records.
        t["Outputs"]["NatIp"] = json!({"Value": {"Ref": EIP}});
        t["Outputs"]["Callbacks"] = json!({"Value": {"Ref": WEB_FROM_DB}});
        t["Outputs"]["DefaultSg"] = json!({"Value": {"Fn::GetAtt": [VPC, "DefaultSecurityGroup"]}});
    });
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, "VpcStack"]).success();

    let state = world
        .cdkd(&["state", "show", "VpcStack", "--json"])
        .success()
        .json()["state"]
        .clone();
    let resources = &state["resources"];
    for (logical_id, record) in resources.as_object().unwrap() {
        assert_eq!(
            record["provisionedBy"], "sdk",
            "{logical_id} did not go through the EC2 plugin: {record}"
        );
    }
    assert_eq!(resources.as_object().unwrap().len(), 30, "{resources}");

    // The composite ids, exactly as the state-management spec writes them.
    let vpc = id(resources, VPC);
    let igw = id(resources, IGW);
    assert_eq!(id(resources, ATTACHMENT), format!("{igw}|{vpc}"));
    let public_table = id(resources, PUBLIC_TABLE);
    assert_eq!(
        id(resources, PUBLIC_ROUTE),
        format!("{public_table}|0.0.0.0/0")
    );
    let eip = &resources[EIP];
    let (ip, allocation) = (
        eip["attributes"]["PublicIp"].as_str().unwrap(),
        eip["attributes"]["AllocationId"].as_str().unwrap(),
    );
    assert_eq!(id(resources, EIP), format!("{ip}|{allocation}"));
    let (web, db) = (id(resources, WEB), id(resources, DB));
    assert_eq!(id(resources, WEB_FROM_DB), format!("{web}|tcp|8000|8010"));
    assert_eq!(id(resources, DB_FROM_WEB), format!("{db}|tcp|5432|5432"));
    let acl = id(resources, ACL);
    assert_eq!(id(resources, ACL_IN), format!("{acl}|100|false"));
    assert_eq!(id(resources, ACL_OUT), format!("{acl}|100|true"));
    // Ref is translated for consumers; state show prints the composite.
    assert_eq!(state["outputs"]["NatIp"], json!(ip));
    assert_eq!(
        state["outputs"]["Callbacks"],
        json!(format!("{web}|tcp|8000|8010"))
    );
    assert!(state["outputs"]["DefaultSg"]
        .as_str()
        .unwrap()
        .starts_with("sg-"));
    let shown = world.cdkd(&["state", "resources", "VpcStack"]).success();
    assert!(
        shown.stdout.contains(&format!("{ip}|{allocation}")),
        "{}",
        shown.stdout
    );

    // EC2's own view.
    let described = ec2(&format!(
        "EC2.describe_vpcs(VpcIds=['{vpc}'])['Vpcs'][0]['CidrBlock']"
    ));
    assert_eq!(described, json!("10.0.0.0/16"));
    let hostnames = ec2(&format!(
        "EC2.describe_vpc_attribute(VpcId='{vpc}', Attribute='enableDnsHostnames')['EnableDnsHostnames']['Value']"
    ));
    assert_eq!(hostnames, json!(true));
    let subnets = ec2(&format!(
        "sorted((s['CidrBlock'], s['MapPublicIpOnLaunch']) for s in EC2.describe_subnets(Filters=[{{'Name': 'vpc-id', 'Values': ['{vpc}']}}])['Subnets'])"
    ));
    assert_eq!(
        subnets,
        json!([
            ["10.0.0.0/24", true],
            ["10.0.1.0/24", true],
            ["10.0.2.0/24", false],
            ["10.0.3.0/24", false]
        ])
    );
    let attached = ec2(&format!(
        "[a['VpcId'] for a in EC2.describe_internet_gateways(InternetGatewayIds=['{igw}'])['InternetGateways'][0]['Attachments']]"
    ));
    assert_eq!(attached, json!([vpc]));
    let nat = id(resources, NAT);
    let nat_state = ec2(&format!(
        "[(g['State'], g['NatGatewayAddresses'][0]['AllocationId']) for g in EC2.describe_nat_gateways(NatGatewayIds=['{nat}'])['NatGateways']]"
    ));
    assert_eq!(nat_state, json!([["available", allocation]]));
    let routes = |table: &str| {
        ec2(&format!(
            "[(r.get('GatewayId') or r.get('NatGatewayId')) for r in EC2.describe_route_tables(RouteTableIds=['{table}'])['RouteTables'][0]['Routes'] if r.get('DestinationCidrBlock') == '0.0.0.0/0']"
        ))
    };
    assert_eq!(routes(&public_table), json!([igw]));
    assert_eq!(routes(&id(resources, PRIVATE_TABLE)), json!([nat]));
    assert_eq!(
        id(resources, PRIVATE_ROUTE),
        format!("{}|0.0.0.0/0", id(resources, PRIVATE_TABLE))
    );
    let web_rules = ingress_rules(&web);
    assert!(
        web_rules
            .iter()
            .any(|r| (r.0.as_str(), r.1, r.2, r.3.as_str()) == ("tcp", 443, 443, "0.0.0.0/0")),
        "{web_rules:?}"
    );
    let callbacks = web_rules
        .iter()
        .find(|r| (r.0.as_str(), r.1, r.2, r.3.as_str()) == ("tcp", 8000, 8010, db.as_str()))
        .unwrap_or_else(|| panic!("no 8000-8010 rule from the db group: {web_rules:?}"));
    // The rule has one source, so its sgr- id is recorded as Id.
    assert_eq!(
        resources[WEB_FROM_DB]["attributes"]["Id"],
        json!(callbacks.4)
    );
    // The db group declared its own egress, so the default allow-all rule is gone.
    let db_egress = ec2(&format!(
        "sorted((r['IpProtocol'], r.get('CidrIpv4')) for r in EC2.describe_security_group_rules(Filters=[{{'Name': 'group-id', 'Values': ['{db}']}}])['SecurityGroupRules'] if r['IsEgress'])"
    ));
    assert_eq!(db_egress, json!([["icmp", "255.255.255.255/32"]]));
    let entries = ec2(&format!(
        "sorted((e['RuleNumber'], e['Egress'], e['Protocol'], e['RuleAction']) for e in EC2.describe_network_acls(NetworkAclIds=['{acl}'])['NetworkAcls'][0]['Entries'] if e['RuleNumber'] == 100)"
    ));
    assert_eq!(
        entries,
        json!([[100, false, "6", "allow"], [100, true, "-1", "allow"]])
    );
    let associated = ec2(&format!(
        "sorted(a['SubnetId'] for a in EC2.describe_network_acls(NetworkAclIds=['{acl}'])['NetworkAcls'][0]['Associations'])"
    ));
    let mut public = vec![
        id(resources, "VpcpublicSubnet1Subnet2BB74ED7"),
        id(resources, "VpcpublicSubnet2SubnetE34B022A"),
    ];
    public.sort();
    assert_eq!(associated, json!(public));

    // An ingress port change revokes and re-authorizes: a new composite id and a new Id.
    world.edit(|t| {
        t["Resources"][WEB_FROM_DB]["Properties"]["ToPort"] = json!(8020);
    });
    let updated = world.cdkd(&["deploy", "-a", &app, "VpcStack"]).success();
    assert!(updated.stdout.contains("1 updated"), "{}", updated.stdout);
    let after = world.resources("VpcStack");
    assert_eq!(id(&after, WEB_FROM_DB), format!("{web}|tcp|8000|8020"));
    let new_rule = ingress_rules(&web)
        .into_iter()
        .find(|r| (r.1, r.2) == (8000, 8020))
        .expect("the 8000-8020 rule exists");
    assert_eq!(after[WEB_FROM_DB]["attributes"]["Id"], json!(new_rule.4));
    assert_ne!(new_rule.4, callbacks.4, "the rule id did not change");
    assert!(
        !ingress_rules(&web)
            .iter()
            .any(|r| (r.1, r.2) == (8000, 8010)),
        "the old 8000-8010 rule was not revoked"
    );

    // Import: a rule authorized outside cdkd is adopted by its composite id, with its Id.
    let minted = ec2(&format!(
        "EC2.authorize_security_group_ingress(GroupId='{db}', IpPermissions=[{{'IpProtocol': 'tcp', 'FromPort': 9000, 'ToPort': 9000, 'IpRanges': [{{'CidrIp': '10.9.0.0/16'}}]}}])['SecurityGroupRules'][0]['SecurityGroupRuleId']"
    ));
    let composite = format!("{db}|tcp|9000|9000");
    let imported = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::EC2::SecurityGroupIngress",
            "import",
            "--physical-id",
            &composite,
        ],
    )
    .success()
    .json();
    assert_eq!(imported["physicalId"], json!(composite));
    assert_eq!(imported["attributes"]["Id"], minted);
    let read = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::EC2::SecurityGroupIngress",
            "read_current_state",
            "--physical-id",
            &composite,
        ],
    )
    .success()
    .json();
    assert_eq!(
        read["properties"],
        json!({"GroupId": db, "IpProtocol": "tcp", "FromPort": 9000, "ToPort": 9000, "CidrIp": "10.9.0.0/16"})
    );
    cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::EC2::SecurityGroupIngress",
            "delete",
            "--physical-id",
            &composite,
            "--properties",
            &json!({"GroupId": db, "IpProtocol": "tcp", "FromPort": 9000, "ToPort": 9000, "CidrIp": "10.9.0.0/16"}).to_string(),
        ],
    )
    .success();
    assert!(!ingress_rules(&db).iter().any(|r| r.1 == 9000));

    // A destination holding the composite separator is refused before anything changes.
    world.edit(|t| {
        t["Resources"][PUBLIC_ROUTE]["Properties"]["DestinationCidrBlock"] = json!("0.0.0.0/0|x");
    });
    let refused = world.cdkd(&["deploy", "-a", &app, "VpcStack"]);
    assert_ne!(refused.code, Some(0));
    assert!(
        refused.stderr.contains("nothing was changed")
            && refused.stderr.contains(&format!(
                "{PUBLIC_ROUTE} (AWS::EC2::Route): property DestinationCidrBlock = \"0.0.0.0/0|x\" contains '|'"
            )),
        "{}",
        refused.stderr
    );
    assert_eq!(
        id(&world.resources("VpcStack"), PUBLIC_ROUTE),
        format!("{public_table}|0.0.0.0/0")
    );

    // EC2 refuses the groups' deletes while something still uses them (here: injected twice);
    // the destroy waits it out, saying what for.
    Emulator::shared().post(
        "/_emulator/faults",
        &json!({"rules": [{"service": "ec2", "action": "DeleteSecurityGroup", "status": 400,
                           "code": "DependencyViolation", "count": 2,
                           "message": "resource has a dependent object"}]}),
    );
    let destroyed = world
        .cdkd(&["destroy", "-a", &app, "VpcStack", "-f"])
        .success();
    let hits = Emulator::shared().get("/_emulator/faults")["rules"][0]["hits"].clone();
    Emulator::shared().post("/_emulator/faults", &json!({"rules": []}));
    assert_eq!(hits, json!(2));
    assert!(
        destroyed
            .stderr
            .contains("waiting for what EC2 has not released yet to go"),
        "{}",
        destroyed.stderr
    );
    let left = ec2(&format!(
        "dict(vpcs=len(EC2.describe_vpcs(Filters=[{{'Name': 'vpc-id', 'Values': ['{vpc}']}}])['Vpcs']), \
         igws=len(EC2.describe_internet_gateways(Filters=[{{'Name': 'internet-gateway-id', 'Values': ['{igw}']}}])['InternetGateways']), \
         addresses=len([a for a in EC2.describe_addresses()['Addresses'] if a.get('AllocationId') == '{allocation}']), \
         nats=[g['State'] for g in EC2.describe_nat_gateways(NatGatewayIds=['{nat}'])['NatGateways'] if g['State'] != 'deleted'], \
         groups=len(EC2.describe_security_groups(Filters=[{{'Name': 'group-id', 'Values': ['{web}', '{db}']}}])['SecurityGroups']))"
    ));
    assert_eq!(
        left,
        json!({"vpcs": 0, "igws": 0, "addresses": 0, "nats": [], "groups": 0})
    );
    assert_eq!(world.cdkd(&["state", "list"]).success().stdout, "");
}
