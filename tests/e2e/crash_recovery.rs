//! A crash in the middle of a VPC deploy (tests/fixtures/cdk.out/vpc: a CDK `Vpc` with public
//! and private subnets, an internet gateway, a NAT gateway and its EIP, route tables, routes,
//! security groups with ingress rules, a network ACL) must not leave a stack that can never
//! deploy again: after `kill -9` at several points, `force-unlock` and a second deploy
//! converge with no EC2 resource made twice, and destroy leaves none. Unnamed EC2 resources are
//! found by the create-token tag the EC2 plugin puts on them; pairs (attachments,
//! associations, routes, rules) adopt an "already exists" for exactly the pair asked for. A
//! `DependencyViolation` nothing in the run can clear fails at once, naming what is in the way.
//! Every other round also kills the destroy part-way; the next destroy finishes it.
//! One test per binary: the counts are the emulator's, which no other test here touches.

use std::time::{Duration, Instant};

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "VpcStack";

/// Live EC2 resources by kind (NAT gateways that are not `deleted`; every VPC's main route
/// table, default security group and default ACL included).
fn counts() -> Value {
    Emulator::shared().boto(
        "{'vpcs': len([v for v in c('ec2').describe_vpcs()['Vpcs'] if not v.get('IsDefault')]), \
          'subnets': len([s for s in c('ec2').describe_subnets()['Subnets'] if not s.get('DefaultForAz')]), \
          'gateways': len(c('ec2').describe_internet_gateways()['InternetGateways']), \
          'tables': len(c('ec2').describe_route_tables()['RouteTables']), \
          'nats': len([n for n in c('ec2').describe_nat_gateways()['NatGateways'] if n['State'] != 'deleted']), \
          'addresses': len(c('ec2').describe_addresses()['Addresses']), \
          'groups': len(c('ec2').describe_security_groups()['SecurityGroups']), \
          'acls': len(c('ec2').describe_network_acls()['NetworkAcls'])}",
    )
}

/// `after - before`, kind by kind.
fn delta(before: &Value, after: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for (kind, count) in after.as_object().unwrap() {
        out.insert(
            kind.clone(),
            json!(count.as_i64().unwrap() - before[kind].as_i64().unwrap()),
        );
    }
    Value::Object(out)
}

/// What one deploy of the fixture adds: every template resource once, plus what AWS makes with
/// a VPC (its main route table, default security group and default ACL).
fn one_stack() -> Value {
    json!({"vpcs": 1, "subnets": 4, "gateways": 1, "tables": 5, "nats": 1, "addresses": 1, "groups": 3, "acls": 2})
}

/// EC2 create calls the emulator has seen since the stats were cleared.
fn ec2_creates() -> u64 {
    let stats = Emulator::shared().get("/_emulator/stats");
    stats
        .as_object()
        .unwrap()
        .iter()
        .filter(|(key, _)| {
            key.starts_with("ec2:Create")
                || *key == "ec2:AllocateAddress"
                || key.starts_with("ec2:Associate")
                || key.starts_with("ec2:Attach")
                || key.starts_with("ec2:Authorize")
        })
        .map(|(_, count)| count.as_u64().unwrap_or(0))
        .sum()
}

/// EC2 delete calls the emulator has seen since the stats were cleared.
fn ec2_deletes() -> u64 {
    let stats = Emulator::shared().get("/_emulator/stats");
    stats
        .as_object()
        .unwrap()
        .iter()
        .filter(|(key, _)| {
            key.starts_with("ec2:Delete")
                || key.starts_with("ec2:Disassociate")
                || key.starts_with("ec2:Detach")
                || key.starts_with("ec2:Revoke")
                || *key == "ec2:ReleaseAddress"
        })
        .map(|(_, count)| count.as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn a_vpc_deploy_killed_part_way_converges_and_a_stuck_delete_names_its_dependants() {
    let before = counts();
    for (round, kill_after) in [2u64, 4, 7, 11, 15, 20].into_iter().enumerate() {
        let world = AppWorld::of("vpc", STACK, &format!("crash{round}"), |_| {});
        let app = world.assembly.path().display().to_string();
        world.kill_after(&["deploy", "-a", &app], kill_after, ec2_creates);

        world.cdkd(&["force-unlock", STACK]).success();
        let resumed = world.cdkd(&["deploy", "-a", &app]);
        assert_eq!(
            resumed.code,
            Some(0),
            "round {round} (killed after {kill_after} EC2 creates):\n{}\n{}",
            resumed.stdout,
            resumed.stderr
        );
        assert_eq!(
            delta(&before, &counts()),
            one_stack(),
            "round {round}: duplicates or leaks after the resumed deploy:\n{}\n{}",
            resumed.stdout,
            resumed.stderr
        );
        let again = world.cdkd(&["deploy", "-a", &app]).success();
        assert!(again.stdout.contains("30 unchanged"), "{}", again.stdout);

        if round == 0 {
            // A subnet made outside cdkd keeps the VPC from being deleted; nothing the run
            // deletes can release it, so destroy fails at once and names it.
            let vpc = world.resources(STACK)["Vpc8378EB38"]["physicalId"]
                .as_str()
                .unwrap()
                .to_string();
            let stray = Emulator::shared().boto(&format!(
                "c('ec2').create_subnet(VpcId='{vpc}', CidrBlock='10.0.200.0/24')['Subnet']['SubnetId']"
            ));
            let stray = stray.as_str().unwrap().to_string();
            let started = Instant::now();
            let refused = world.cdkd(&["destroy", "-a", &app, "-f"]);
            assert_ne!(refused.code, Some(0));
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "DependencyViolation was retried for {:?}",
                started.elapsed()
            );
            assert!(
                refused.stderr.contains(&stray) || refused.stdout.contains(&stray),
                "the dependant is not named:\n{}\n{}",
                refused.stdout,
                refused.stderr
            );
            Emulator::shared().boto(&format!(
                "c('ec2').delete_subnet(SubnetId='{stray}') and None"
            ));
        }
        if round % 2 == 1 {
            // A destroy killed part-way: the next one, after force-unlock, finishes it.
            world.kill_after(
                &["destroy", "-a", &app, "-f"],
                kill_after.min(12),
                ec2_deletes,
            );
            world.cdkd(&["force-unlock", STACK]).success();
        }
        world.cdkd(&["destroy", "-a", &app, "-f"]).success();
        assert_eq!(
            delta(&before, &counts()),
            json!({"vpcs": 0, "subnets": 0, "gateways": 0, "tables": 0, "nats": 0, "addresses": 0, "groups": 0, "acls": 0}),
            "round {round}: destroy left resources behind"
        );
    }
}
