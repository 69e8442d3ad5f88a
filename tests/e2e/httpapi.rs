//! The apigatewayv2 plugin through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! httpapi.js): an HttpApi with a Lambda integration on two routes, a JWT authorizer on one,
//! CORS and the `$default` stage; checked in the emulator's API Gateway v2 and in the state file,
//! through a no-change deploy, an in-place update, a replacement, drift, import and destroy.

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "HttpApiStack";
const API: &str = "ApiF70053CD";
const STAGE: &str = "ApiDefaultStage189A7074";
const INTEGRATION: &str = "ApiGETitemsidItemsIntegrationAC680BD4";
const UPSTREAM: &str = "ApiGETupstreamUpstreamD9F5864C";
const GET_ROUTE: &str = "ApiGETitemsid0354A0F7";
const POST_ROUTE: &str = "ApiPOSTitems1297276D";
const AUTHORIZER: &str = "ApiJwt046D4791";
const DOMAIN: &str = "Domain66AC69E0";
const MAPPING: &str = "ApiDefaultStageHttpApiStackDomainundefined58684205";

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

fn call(type_name: &str, operation: &str, physical_id: &str) -> Value {
    cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            type_name,
            operation,
            "--physical-id",
            physical_id,
        ],
    )
    .success()
    .json()
}

#[test]
fn an_http_api_with_a_lambda_integration_and_a_jwt_authorizer_deploys_through_the_plugin() {
    let world = AppWorld::of("httpapi", STACK, "httpapi", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [
        API,
        STAGE,
        INTEGRATION,
        UPSTREAM,
        GET_ROUTE,
        POST_ROUTE,
        AUTHORIZER,
        DOMAIN,
        MAPPING,
    ] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let api = physical(&world, API);
    // The URL integration's parameter mapping, on the plugin (issue 48: it went to Cloud
    // Control), a `remove:` mapping with CDK's empty value included.
    let upstream = physical(&world, UPSTREAM);
    let upstream_id = upstream
        .strip_prefix(&format!("{api}|"))
        .unwrap()
        .to_string();
    let mapping_of = || {
        aws(&format!(
            "c('apigatewayv2').get_integration(ApiId='{api}', IntegrationId='{upstream_id}').get('RequestParameters')"
        ))
    };
    assert_eq!(
        mapping_of(),
        json!({"append:header.x-source": "cdkd", "remove:querystring.debug": ""})
    );
    assert_eq!(resources[API]["attributes"]["ApiId"], json!(api));
    assert!(resources[API]["attributes"]["ApiEndpoint"]
        .as_str()
        .unwrap()
        .contains(&api));
    assert_eq!(
        resources[API]["attributes"]["ExecuteApiArn"],
        json!(format!("arn:aws:execute-api:us-east-1:123456789012:{api}"))
    );
    assert_eq!(physical(&world, STAGE), format!("{api}|$default"));
    let integration = physical(&world, INTEGRATION);
    let integration_id = integration.strip_prefix(&format!("{api}|")).unwrap();
    let authorizer = physical(&world, AUTHORIZER);
    let authorizer_id = authorizer.strip_prefix(&format!("{api}|")).unwrap();

    // AWS's side: the API with its CORS and the create-token tag, the stage, the integration,
    // the routes pointing at it (Ref of the integration is its id), the JWT authorizer.
    let live = aws(&format!("c('apigatewayv2').get_api(ApiId='{api}')"));
    assert_eq!(live["Name"], "Api");
    assert_eq!(live["Description"], "items API");
    assert_eq!(
        live["CorsConfiguration"]["AllowOrigins"],
        json!(["https://example.com"])
    );
    assert_eq!(live["CorsConfiguration"]["MaxAge"], json!(600));
    assert!(live["Tags"]["cdkd:create-token"].is_string(), "{live}");
    let stage = aws(&format!(
        "c('apigatewayv2').get_stage(ApiId='{api}', StageName='$default')"
    ));
    assert_eq!(stage["AutoDeploy"], json!(true));
    let live_integration = aws(&format!(
        "c('apigatewayv2').get_integration(ApiId='{api}', IntegrationId='{integration_id}')"
    ));
    assert_eq!(live_integration["IntegrationType"], "AWS_PROXY");
    assert_eq!(live_integration["PayloadFormatVersion"], "2.0");
    assert!(live_integration["IntegrationUri"]
        .as_str()
        .unwrap()
        .starts_with("arn:aws:lambda:us-east-1:123456789012:function:"));
    let routes = aws(&format!(
        "sorted([(r['RouteKey'], r.get('Target'), r.get('AuthorizationType'), r.get('AuthorizerId')) for r in c('apigatewayv2').get_routes(ApiId='{api}')['Items']])"
    ));
    let target = format!("integrations/{integration_id}");
    assert_eq!(
        routes,
        json!([
            ["GET /items/{id}", target, "NONE", null],
            [
                "GET /upstream",
                format!("integrations/{upstream_id}"),
                "NONE",
                null
            ],
            ["POST /items", target, "JWT", authorizer_id]
        ])
    );
    let jwt = aws(&format!(
        "c('apigatewayv2').get_authorizer(ApiId='{api}', AuthorizerId='{authorizer_id}')"
    ));
    assert_eq!(jwt["AuthorizerType"], "JWT");
    assert_eq!(
        jwt["JwtConfiguration"],
        json!({"Audience": ["items-client"], "Issuer": "https://issuer.example.com"})
    );

    // The custom domain: its regional endpoint recorded, the mapping to the API's stage.
    assert_eq!(physical(&world, DOMAIN), "api.example.com");
    let domain = &resources[DOMAIN]["attributes"];
    assert!(
        domain["RegionalDomainName"]
            .as_str()
            .unwrap()
            .ends_with(".execute-api.us-east-1.amazonaws.com"),
        "{domain}"
    );
    assert_eq!(domain["RegionalHostedZoneId"], "Z1UJRXOUMOOFQ8");
    assert!(domain["DomainNameArn"]
        .as_str()
        .unwrap()
        .ends_with("/domainnames/api.example.com"));
    let mapping = physical(&world, MAPPING);
    let mapping_id = mapping
        .strip_prefix("api.example.com|")
        .unwrap()
        .to_string();
    assert_eq!(
        resources[MAPPING]["attributes"]["ApiMappingId"],
        json!(mapping_id)
    );
    let mappings = aws(
        "[(m['ApiId'], m['Stage']) for m in c('apigatewayv2').get_api_mappings(DomainName='api.example.com')['Items']]",
    );
    assert_eq!(mappings, json!([[api, "$default"]]));

    // A second deploy changes nothing.
    let again = deploy(&world);
    assert!(
        !again.stdout.contains("updated") || again.stdout.contains("0 updated"),
        "{}",
        again.stdout
    );
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);

    // In place: the API's description and CORS origins, and the GET route's operation name.
    world.edit(|t| {
        t["Resources"][API]["Properties"]["Description"] = json!("items API v2");
        t["Resources"][API]["Properties"]["CorsConfiguration"]["AllowOrigins"] =
            json!(["https://shop.example.com"]);
        t["Resources"][GET_ROUTE]["Properties"]["OperationName"] = json!("getItem");
        t["Resources"][UPSTREAM]["Properties"]["RequestParameters"] =
            json!({"overwrite:header.x-team": "web", "remove:querystring.debug": ""});
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("3 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    // The dropped header mapping is gone, the new one is there, the unchanged one stays.
    assert_eq!(
        mapping_of(),
        json!({"overwrite:header.x-team": "web", "remove:querystring.debug": ""})
    );
    assert_eq!(physical(&world, API), api);
    let live = aws(&format!("c('apigatewayv2').get_api(ApiId='{api}')"));
    assert_eq!(live["Description"], "items API v2");
    assert_eq!(
        live["CorsConfiguration"]["AllowOrigins"],
        json!(["https://shop.example.com"])
    );
    let get_route = physical(&world, GET_ROUTE);
    let get_route_id = get_route.strip_prefix(&format!("{api}|")).unwrap();
    assert_eq!(
        aws(&format!(
            "c('apigatewayv2').get_route(ApiId='{api}', RouteId='{get_route_id}').get('OperationName')"
        )),
        "getItem"
    );

    // Drift: a description changed outside cdkd is found by the plugin's reader.
    aws(&format!(
        "c('apigatewayv2').update_api(ApiId='{api}', Description='changed by hand') and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(API) && drift.stdout.contains("Description"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    // Reverted, nothing drifts: what AWS fills in (selection expressions, default route
    // settings, a route's NONE authorization) is not reported as a change.
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(
        aws(&format!(
            "c('apigatewayv2').get_api(ApiId='{api}')['Description']"
        )),
        "items API v2"
    );

    // Create-only: a new stage name replaces the stage; the old one is deleted.
    // The mapping names the stage by Ref (the stage name, not the recorded ApiId|name) and
    // follows it in place.
    world.edit(|t| {
        t["Resources"][STAGE]["Properties"]["StageName"] = json!("live");
        t["Resources"][MAPPING]["Properties"]["Stage"] = json!({"Ref": STAGE});
    });
    let replaced = deploy(&world);
    assert!(replaced.stdout.contains("replaced"), "{}", replaced.stdout);
    assert_eq!(physical(&world, STAGE), format!("{api}|live"));
    assert_eq!(
        aws(&format!(
            "sorted(s['StageName'] for s in c('apigatewayv2').get_stages(ApiId='{api}')['Items'])"
        )),
        json!(["live"])
    );
    assert_eq!(physical(&world, MAPPING), mapping);
    assert_eq!(
        aws("[m['Stage'] for m in c('apigatewayv2').get_api_mappings(DomainName='api.example.com')['Items']]"),
        json!(["live"])
    );

    // Destroy leaves neither the API nor anything in it.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(
        aws(&format!(
            "[a['ApiId'] for a in c('apigatewayv2').get_apis()['Items'] if a['ApiId'] == '{api}']"
        )),
        json!([])
    );
    assert_eq!(
        aws("[d['DomainName'] for d in c('apigatewayv2').get_domain_names()['Items']]"),
        json!([])
    );
}

#[test]
fn an_api_and_a_route_made_outside_cdkd_are_imported_and_read() {
    let api = aws(
        "c('apigatewayv2').create_api(Name='handmade', ProtocolType='HTTP', Description='by boto', Tags={'team': 'web'})['ApiId']",
    );
    let api = api.as_str().unwrap();
    let imported = call("AWS::ApiGatewayV2::Api", "import", api);
    assert_eq!(imported["physicalId"], json!(api));
    assert_eq!(imported["attributes"]["ApiId"], json!(api));
    assert!(imported["attributes"]["ApiEndpoint"]
        .as_str()
        .unwrap()
        .contains(api));
    assert_eq!(
        imported["attributes"]["ExecuteApiArn"],
        json!(format!("arn:aws:execute-api:us-east-1:123456789012:{api}"))
    );
    let read = call("AWS::ApiGatewayV2::Api", "read_current_state", api);
    assert_eq!(read["properties"]["Name"], "handmade");
    assert_eq!(read["properties"]["Description"], "by boto");
    assert_eq!(read["properties"]["Tags"], json!({"team": "web"}));

    let route = aws(&format!(
        "c('apigatewayv2').create_route(ApiId='{api}', RouteKey='GET /hand')['RouteId']"
    ));
    let composite = format!("{api}|{}", route.as_str().unwrap());
    let imported = call("AWS::ApiGatewayV2::Route", "import", &composite);
    assert_eq!(imported["attributes"]["RouteId"], route);
    let read = call("AWS::ApiGatewayV2::Route", "read_current_state", &composite);
    assert_eq!(read["properties"]["RouteKey"], "GET /hand");
    assert_eq!(read["properties"]["ApiId"], json!(api));

    // What does not exist is refused by name.
    let missing = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::ApiGatewayV2::Api",
            "import",
            "--physical-id",
            "nosuchapi",
        ],
    );
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    aws(&format!(
        "c('apigatewayv2').delete_api(ApiId='{api}') and None"
    ));
}

fn call_with(type_name: &str, operation: &str, args: &[&str]) -> cdkd_tests::Run {
    let mut all = vec!["providers", "call", type_name, operation];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

#[test]
fn what_an_interrupted_create_made_is_found_by_its_token_or_within_its_api() {
    // The API is tagged with the create's token and found by it; another token finds nothing.
    let created = call_with(
        "AWS::ApiGatewayV2::Api",
        "create",
        &[
            "--token",
            "tok-httpapi-1",
            "--properties",
            r#"{"Name": "crashy", "ProtocolType": "HTTP"}"#,
        ],
    )
    .success()
    .json();
    let api = created["physicalId"].as_str().unwrap().to_string();
    let found = call_with(
        "AWS::ApiGatewayV2::Api",
        "find_created",
        &["--token", "tok-httpapi-1"],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(api), "{found}");
    assert_eq!(found["properties"]["Name"], "crashy");
    assert!(found["properties"].get("Tags").is_none(), "{found}");
    let none = call_with(
        "AWS::ApiGatewayV2::Api",
        "find_created",
        &["--token", "tok-httpapi-other"],
    )
    .success()
    .json();
    assert!(none["physicalId"].is_null(), "{none}");

    // A route is found by its key in its API, a stage by its name; a second stage of one name
    // is refused as AWS refuses it (the emulator's ConflictException).
    let route_props = json!({"ApiId": api, "RouteKey": "GET /crash"}).to_string();
    let route = call_with(
        "AWS::ApiGatewayV2::Route",
        "create",
        &["--properties", &route_props],
    )
    .success()
    .json();
    let found = call_with(
        "AWS::ApiGatewayV2::Route",
        "find_created",
        &["--token", "t", "--properties", &route_props],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], route["physicalId"], "{found}");
    let stage_props =
        json!({"ApiId": api, "StageName": "$default", "AutoDeploy": true}).to_string();
    call_with(
        "AWS::ApiGatewayV2::Stage",
        "create",
        &["--properties", &stage_props],
    )
    .success();
    let found = call_with(
        "AWS::ApiGatewayV2::Stage",
        "find_created",
        &["--token", "t", "--properties", &stage_props],
    )
    .success()
    .json();
    assert_eq!(
        found["physicalId"],
        json!(format!("{api}|$default")),
        "{found}"
    );
    assert_eq!(found["properties"]["AutoDeploy"], json!(true));
    let again = call_with(
        "AWS::ApiGatewayV2::Stage",
        "create",
        &["--properties", &stage_props],
    );
    assert_ne!(again.code, Some(0), "{}", again.stdout);
    assert!(
        again.stderr.contains("ConflictException") || again.stdout.contains("ConflictException"),
        "{}\n{}",
        again.stdout,
        again.stderr
    );

    // A stage's access logging is turned off when the template drops it (its own call on AWS).
    let logged = json!({"ApiId": api, "StageName": "logged", "StageVariables": {"v": "1"}, "Tags": {"team": "web"}, "AccessLogSettings": {"DestinationArn": "arn:aws:logs:us-east-1:123456789012:log-group:access", "Format": "$context.requestId"}});
    let stage = call_with(
        "AWS::ApiGatewayV2::Stage",
        "create",
        &["--properties", &logged.to_string()],
    )
    .success()
    .json();
    let stage = stage["physicalId"].as_str().unwrap().to_string();
    let read = call("AWS::ApiGatewayV2::Stage", "read_current_state", &stage);
    assert_eq!(
        read["properties"]["AccessLogSettings"]["Format"], "$context.requestId",
        "{read}"
    );
    assert_eq!(read["properties"]["Tags"], json!({"team": "web"}), "{read}");
    let plain = json!({"ApiId": api, "StageName": "logged"});
    call_with(
        "AWS::ApiGatewayV2::Stage",
        "update",
        &[
            "--physical-id",
            &stage,
            "--properties",
            &plain.to_string(),
            "--previous-properties",
            &logged.to_string(),
        ],
    )
    .success();
    let read = call("AWS::ApiGatewayV2::Stage", "read_current_state", &stage);
    assert!(
        read["properties"].get("AccessLogSettings").is_none(),
        "{read}"
    );
    assert!(read["properties"].get("StageVariables").is_none(), "{read}");
    assert!(read["properties"].get("Tags").is_none(), "{read}");

    // A domain name is found by its name; its tags change by its ARN.
    let tagged = json!({"DomainName": "crash.example.com", "DomainNameConfigurations": [{"CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/c", "EndpointType": "REGIONAL"}], "Tags": {"a": "1"}});
    call_with(
        "AWS::ApiGatewayV2::DomainName",
        "create",
        &["--properties", &tagged.to_string()],
    )
    .success();
    let found = call_with(
        "AWS::ApiGatewayV2::DomainName",
        "find_created",
        &["--token", "t", "--properties", &tagged.to_string()],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], "crash.example.com", "{found}");
    assert_eq!(found["properties"]["Tags"], json!({"a": "1"}));
    let retagged = json!({"DomainName": "crash.example.com", "DomainNameConfigurations": [{"CertificateArn": "arn:aws:acm:us-east-1:123456789012:certificate/c", "EndpointType": "REGIONAL"}], "Tags": {"b": "2"}});
    call_with(
        "AWS::ApiGatewayV2::DomainName",
        "update",
        &[
            "--physical-id",
            "crash.example.com",
            "--properties",
            &retagged.to_string(),
            "--previous-properties",
            &tagged.to_string(),
        ],
    )
    .success();
    let read = call(
        "AWS::ApiGatewayV2::DomainName",
        "read_current_state",
        "crash.example.com",
    );
    assert_eq!(read["properties"]["Tags"], json!({"b": "2"}), "{read}");
    call_with(
        "AWS::ApiGatewayV2::DomainName",
        "delete",
        &["--physical-id", "crash.example.com"],
    )
    .success();
    aws(&format!(
        "c('apigatewayv2').delete_api(ApiId='{api}') and None"
    ));
}
