//! A crash while an ApplicationLoadBalancer is being made (tests/fixtures/cdk.out/alb): the load
//! balancer and target group are found after the crash by the names chosen before their
//! creates, the listeners by their port on the load balancer, the rules by their priority in
//! the listener, and the extra certificate is added again harmlessly. After `kill -9` at several
//! points, `force-unlock` and a second deploy converge with one of each and no warning that
//! something cannot be checked; destroy leaves none.
//! One test per binary: the counts are the emulator's, which no other test here touches.

use cdkd_tests::{workspace_root, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "AlbStack";

/// The ELBv2 resources in the emulator, by kind.
fn made() -> Value {
    Emulator::shared().boto(
        "(lambda e, lbs: {'balancers': len(lbs), 'listeners': sum(len(e.describe_listeners(LoadBalancerArn=b)['Listeners']) for b in lbs), 'rules': sum(len([r for r in e.describe_rules(ListenerArn=l['ListenerArn'])['Rules'] if not r['IsDefault']]) for b in lbs for l in e.describe_listeners(LoadBalancerArn=b)['Listeners']), 'extraCertificates': sum(len([x for x in e.describe_listener_certificates(ListenerArn=l['ListenerArn'])['Certificates'] if not x['IsDefault']]) for b in lbs for l in e.describe_listeners(LoadBalancerArn=b)['Listeners']), 'groups': len(e.describe_target_groups()['TargetGroups'])})(c('elbv2'), [b['LoadBalancerArn'] for b in c('elbv2').describe_load_balancers()['LoadBalancers']])",
    )
}

fn one_stack() -> Value {
    json!({"balancers": 1, "listeners": 2, "rules": 2, "extraCertificates": 1, "groups": 1})
}

/// ELBv2 creates the emulator has seen since the stats were cleared.
fn creates() -> u64 {
    let stats = Emulator::shared().get("/_emulator/stats");
    stats
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| {
            key.starts_with("elasticloadbalancing:Create")
                || *key == "elasticloadbalancing:AddListenerCertificates"
        })
        .filter_map(|(_, n)| n.as_u64())
        .sum()
}

#[test]
fn a_load_balancer_made_by_a_killed_deploy_is_found_by_its_name_and_its_children_in_it() {
    let setup = workspace_root().join("tests/fixtures/apps/alb-certs.py");
    let arns = Emulator::shared().boto(&format!(
        "__import__('runpy').run_path('{}', init_globals={{'c': c}})['RESULT']",
        setup.display()
    ));
    let zero = made();
    for (round, kill_after) in [1u64, 2, 4, 6].into_iter().enumerate() {
        let world = AppWorld::of("alb", STACK, &format!("alb{round}"), |template| {
            let mut text = template.to_string();
            for (placeholder, arn) in arns.as_object().unwrap() {
                text = text.replace(placeholder.as_str(), arn.as_str().unwrap());
            }
            *template = serde_json::from_str(&text).unwrap();
        });
        let app = world.assembly.path().display().to_string();
        world.kill_after(&["deploy", "-a", &app], kill_after, creates);

        world.cdkd(&["force-unlock", STACK]).success();
        let resumed = world.cdkd(&["deploy", "-a", &app]);
        let said = format!("{}\n{}", resumed.stdout, resumed.stderr);
        assert_eq!(
            resumed.code,
            Some(0),
            "round {round} (killed after {kill_after} creates):\n{said}"
        );
        assert!(
            !said.contains("cannot be checked"),
            "round {round}: a resource was left to a person:\n{said}"
        );
        assert_eq!(
            made(),
            one_stack(),
            "round {round} (killed after {kill_after} creates): duplicates or leaks:\n{said}"
        );
        let again = world.cdkd(&["deploy", "-a", &app]).success();
        assert!(again.stdout.contains(" unchanged"), "{}", again.stdout);

        world.cdkd(&["destroy", "-a", &app, "-f"]).success();
        assert_eq!(made(), zero, "round {round}: destroy left resources");
    }
}
