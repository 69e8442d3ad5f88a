//! A crash while an HttpApi is being made (tests/fixtures/cdk.out/httpapi): the API is found
//! after the crash by its create-token tag, the domain name by its name, and the stage,
//! integration, routes, authorizer and mapping within their API or domain. After `kill -9` at
//! several points, `force-unlock` and a second deploy converge with one of each and no warning
//! that something cannot be checked; destroy leaves none.
//! One test per binary: the counts are the emulator's, which no other test here touches.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "HttpApiStack";

/// The stack's API Gateway v2 resources in the emulator, by kind.
fn made() -> Value {
    Emulator::shared().boto(
        "(lambda g, apis: {'apis': len(apis), 'stages': sum(len(g.get_stages(ApiId=a)['Items']) for a in apis), 'integrations': sum(len(g.get_integrations(ApiId=a)['Items']) for a in apis), 'routes': sum(len(g.get_routes(ApiId=a)['Items']) for a in apis), 'authorizers': sum(len(g.get_authorizers(ApiId=a)['Items']) for a in apis), 'domains': len(g.get_domain_names()['Items']), 'mappings': sum(len(g.get_api_mappings(DomainName=d['DomainName'])['Items']) for d in g.get_domain_names()['Items'])})(c('apigatewayv2'), [a['ApiId'] for a in c('apigatewayv2').get_apis()['Items'] if a['Name'] == 'Api'])",
    )
}

fn one_stack() -> Value {
    json!({"apis": 1, "stages": 1, "integrations": 2, "routes": 3, "authorizers": 1,
        "domains": 1, "mappings": 1})
}

/// API Gateway v2 creates (POST) the emulator has seen since the stats were cleared.
fn creates() -> u64 {
    let stats = Emulator::shared().get("/_emulator/stats");
    stats
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| key.starts_with("apigateway") && key.ends_with(":POST"))
        .filter_map(|(_, n)| n.as_u64())
        .sum()
}

#[test]
fn an_http_api_made_by_a_killed_deploy_is_found_by_its_tag_and_its_children_in_it() {
    let zero = made();
    for (round, kill_after) in [1u64, 2, 4, 6].into_iter().enumerate() {
        let world = AppWorld::of("httpapi", STACK, &format!("httpapi{round}"), |_| {});
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
