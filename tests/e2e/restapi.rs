//! The apigateway plugin through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! restapi.js): a `LambdaRestApi` (root and `{proxy+}` ANY methods with a Lambda proxy
//! integration, a POST method with an API key, a request validator and a model), its deployment
//! and `prod` stage, the API Gateway account's CloudWatch role, a usage plan with an API key, and
//! a regional custom domain (an ACM certificate validated in a Route 53 zone of the same stack,
//! a base path mapping and an alias record to the domain's regional name). Checked in the
//! emulator's API Gateway and in the state file, through a no-change deploy, an in-place update,
//! a replacement (a new deployment, as CDK makes one, and a renamed model), drift, import and
//! destroy.

use cdkd_tests::{cdkd_on, AppWorld, Emulator, Run};
use serde_json::{json, Value};

const STACK: &str = "RestApiStack";
const API: &str = "ApiF70053CD";
const ACCOUNT: &str = "ApiAccountA18C9B29";
const DEPLOYMENT: &str = "ApiDeploymentB17BE62Dff25f56d703d8f4af6a0dc6ca9ebf2c6";
const STAGE: &str = "ApiDeploymentStageprod3EB9684E";
const DOMAIN: &str = "ApiCustomDomain249F3BF3";
const MAPPING: &str = "ApiCustomDomainMapRestApiStackApi81233D43F2685605";
const PROXY: &str = "Apiproxy05443892";
const PROXY_ANY: &str = "ApiproxyANY4946669B";
const ROOT_ANY: &str = "ApiANY40671C4F";
const ITEMS: &str = "Apiitems8F0ED6C4";
const ITEMS_POST: &str = "ApiitemsPOST55EC2F9D";
const MODEL: &str = "ApiItemModel55228A95";
const VALIDATOR: &str = "ApiBodyValidatorB3E71016";
const PLAN: &str = "ApiPlan25F8B52C";
const PLAN_KEY: &str = "ApiPlanUsagePlanKeyResourceRestApiStackApiKey8E58F229243C61FB";
const KEY: &str = "ApiKey679C99C7";
const ALIAS: &str = "Alias325C5727";
const ROLE: &str = "ApiCloudWatchRole73EC6FC4";
const NAME: &str = "api.restapi.example.com";

/// Every API Gateway resource of the fixture.
const REST_TYPES: &[&str] = &[
    API, ACCOUNT, DEPLOYMENT, STAGE, DOMAIN, MAPPING, PROXY, PROXY_ANY, ROOT_ANY, ITEMS,
    ITEMS_POST, MODEL, VALIDATOR, PLAN, PLAN_KEY, KEY,
];

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn physical(world: &AppWorld, id: &str) -> String {
    world.resources(STACK)[id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} is not recorded"))
        .to_string()
}

/// The child part of a `Parent|Child` physical id.
fn child(world: &AppWorld, id: &str) -> String {
    physical(world, id).rsplit('|').next().unwrap().to_string()
}

/// A deploy under its own access key, and the calls the emulator counted for it.
fn deploy_counted(world: &AppWorld, key: &str) -> (Run, Value) {
    let app = world.assembly.path().display().to_string();
    let run: Run = world
        .command(&["deploy", "-a", &app, STACK])
        .env("AWS_ACCESS_KEY_ID", key)
        .output()
        .unwrap()
        .into();
    let run = run.success();
    let calls = Emulator::shared().get(&format!("/_emulator/stats?accessKey={key}"));
    (run, calls)
}

fn call(type_name: &str, operation: &str, physical_id: &str) -> Run {
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
}

#[test]
fn a_lambda_rest_api_with_a_custom_domain_and_a_usage_plan_deploys_through_the_plugin() {
    let world = AppWorld::of("restapi", STACK, "restapi", |_| {});
    let pid = std::process::id();
    let (first, calls) = deploy_counted(&world, &format!("RESTFIRST{pid}"));
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    assert!(
        calls.get("apigateway:CreateRestApi").is_some()
            || calls
                .as_object()
                .unwrap()
                .keys()
                .any(|k| k.starts_with("apigateway")),
        "the deploy was not counted under its key: {calls}"
    );
    assert!(
        !calls
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("cloudcontrolapi")),
        "a type went to Cloud Control: {calls}"
    );
    let resources = world.resources(STACK);
    for id in REST_TYPES {
        assert_eq!(
            resources[*id]["provisionedBy"], "sdk",
            "{id}: {}",
            resources[*id]
        );
    }
    let api = physical(&world, API);
    let root = resources[API]["attributes"]["RootResourceId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(resources[API]["attributes"]["RestApiId"], json!(api));

    // The API as CDK asked for it, tagged with the create's token.
    let live = aws(&format!("c('apigateway').get_rest_api(restApiId='{api}')"));
    assert_eq!(live["name"], "Api");
    assert_eq!(live["description"], "items REST API");
    assert_eq!(live["binaryMediaTypes"], json!(["image/png"]));
    assert_eq!(live["endpointConfiguration"]["types"], json!(["REGIONAL"]));
    assert_eq!(live["rootResourceId"], json!(root));
    assert!(live["tags"]["cdkd:create-token"].is_string(), "{live}");

    // Resources under the root (Ref of a resource is its id), methods and their integrations.
    let paths = aws(&format!(
        "sorted((r['path'], r.get('parentId')) for r in c('apigateway').get_resources(restApiId='{api}')['items'])"
    ));
    assert_eq!(
        paths,
        json!([["/", null], ["/items", root], ["/{proxy+}", root]])
    );
    assert_eq!(
        physical(&world, ITEMS),
        format!("{api}|{}", child(&world, ITEMS))
    );
    assert_eq!(physical(&world, ROOT_ANY), format!("{api}|{root}|ANY"));
    let any = aws(&format!(
        "c('apigateway').get_method(restApiId='{api}', resourceId='{root}', httpMethod='ANY')"
    ));
    assert_eq!(any["authorizationType"], "NONE");
    assert_eq!(any["methodIntegration"]["type"], "AWS_PROXY");
    assert_eq!(any["methodIntegration"]["httpMethod"], "POST");
    let uri = any["methodIntegration"]["uri"].as_str().unwrap();
    assert!(
        uri.starts_with("arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/arn:aws:lambda:us-east-1:123456789012:function:")
            && uri.ends_with("/invocations"),
        "{uri}"
    );
    let items = child(&world, ITEMS);
    let post = aws(&format!(
        "c('apigateway').get_method(restApiId='{api}', resourceId='{items}', httpMethod='POST')"
    ));
    assert_eq!(post["apiKeyRequired"], json!(true));
    assert_eq!(post["requestValidatorId"], json!(child(&world, VALIDATOR)));
    assert_eq!(post["requestModels"], json!({"application/json": "Item"}));
    assert_eq!(physical(&world, MODEL), format!("{api}|Item"));
    let validator = aws(&format!(
        "c('apigateway').get_request_validator(restApiId='{api}', requestValidatorId='{}')",
        child(&world, VALIDATOR)
    ));
    assert_eq!(validator["validateRequestBody"], json!(true));
    assert!(
        validator["name"]
            .as_str()
            .unwrap()
            .contains("ApiBodyValidator"),
        "{validator}"
    );

    // The deployment and the stage pointing at it (Ref of the deployment is its id).
    let deployment = child(&world, DEPLOYMENT);
    assert_eq!(
        resources[DEPLOYMENT]["attributes"]["DeploymentId"],
        json!(deployment)
    );
    assert_eq!(physical(&world, STAGE), format!("{api}|prod"));
    let stage = aws(&format!(
        "c('apigateway').get_stage(restApiId='{api}', stageName='prod')"
    ));
    assert_eq!(stage["deploymentId"], json!(deployment));
    assert_eq!(stage["variables"], json!({"mode": "live"}));

    // The account's CloudWatch role is the stack's role.
    let role_arn = resources[ROLE]["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        aws("c('apigateway').get_account().get('cloudwatchRoleArn')"),
        json!(role_arn)
    );
    assert_eq!(physical(&world, ACCOUNT), "123456789012");

    // The usage plan on the stage, the key in it.
    let plan = physical(&world, PLAN);
    let live_plan = aws(&format!(
        "c('apigateway').get_usage_plan(usagePlanId='{plan}')"
    ));
    assert_eq!(live_plan["name"], "items-plan");
    assert_eq!(
        live_plan["throttle"],
        json!({"burstLimit": 2, "rateLimit": 10.0})
    );
    assert_eq!(live_plan["quota"]["limit"], json!(1000));
    assert_eq!(
        live_plan["apiStages"],
        json!([{"apiId": api, "stage": "prod"}])
    );
    let key = physical(&world, KEY);
    assert_eq!(resources[KEY]["attributes"]["APIKeyId"], json!(key));
    let live_key = aws(&format!("c('apigateway').get_api_key(apiKey='{key}')"));
    assert_eq!(live_key["name"], "items-key");
    assert_eq!(live_key["enabled"], json!(true));
    assert_eq!(live_key["stageKeys"], json!([format!("{api}/prod")]));
    let value = aws(&format!(
        "c('apigateway').get_api_key(apiKey='{key}', includeValue=True)['value']"
    ));
    let value = value.as_str().unwrap();
    assert!(value.len() >= 20, "{value}");
    assert!(
        !world.state().to_string().contains(value),
        "the key's value reached state"
    );
    assert_eq!(physical(&world, PLAN_KEY), format!("{plan}|{key}"));
    assert_eq!(
        aws(&format!(
            "[k['id'] for k in c('apigateway').get_usage_plan_keys(usagePlanId='{plan}')['items']]"
        )),
        json!([key])
    );

    // The custom domain: its regional name recorded, the alias record pointing at it, the
    // mapping to the stage.
    assert_eq!(physical(&world, DOMAIN), NAME);
    let domain = &resources[DOMAIN]["attributes"];
    let regional = domain["RegionalDomainName"].as_str().unwrap().to_string();
    assert!(
        regional.ends_with(".execute-api.us-east-1.amazonaws.com"),
        "{domain}"
    );
    assert_eq!(domain["RegionalHostedZoneId"], "Z1UJRXOUMOOFQ8");
    let live_domain = aws(&format!(
        "c('apigateway').get_domain_name(domainName='{NAME}')"
    ));
    assert_eq!(
        live_domain["endpointConfiguration"]["types"],
        json!(["REGIONAL"])
    );
    assert!(live_domain["regionalCertificateArn"]
        .as_str()
        .unwrap()
        .starts_with("arn:aws:acm:us-east-1:123456789012:certificate/"));
    let zone = physical(&world, "ZoneA5DE4B68");
    let alias = aws(&format!(
        "[r['AliasTarget'] for r in c('route53').list_resource_record_sets(HostedZoneId='{zone}')['ResourceRecordSets'] if r['Type'] == 'A']"
    ));
    assert_eq!(
        alias[0]["DNSName"].as_str().unwrap().trim_end_matches('.'),
        regional,
        "{alias}"
    );
    assert_eq!(alias[0]["HostedZoneId"], "Z1UJRXOUMOOFQ8");
    assert_eq!(resources[ALIAS]["provisionedBy"], "sdk");
    assert_eq!(physical(&world, MAPPING), format!("{NAME}|(none)"));
    assert_eq!(
        aws(&format!(
            "[(m['basePath'], m['restApiId'], m['stage']) for m in c('apigateway').get_base_path_mappings(domainName='{NAME}')['items']]"
        )),
        json!([["(none)", api, "prod"]])
    );

    // A second deploy changes nothing and calls no service but the state bucket.
    let (again, calls) = deploy_counted(&world, &format!("RESTNOCHANGE{pid}"));
    assert!(
        again
            .stdout
            .contains("0 created, 0 updated, 0 replaced, 0 deleted"),
        "{}",
        again.stdout
    );
    let services: Vec<&String> = calls
        .as_object()
        .unwrap()
        .keys()
        // The host asks a new access key's account once (remembered per key).
        .filter(|k| !k.starts_with("s3:") && k.as_str() != "sts:GetCallerIdentity")
        .collect();
    assert!(
        services.is_empty(),
        "a no-change deploy called {services:?}: {calls}"
    );

    // The API answers: the emulator serves the deployed stage (apigateway_rest.py), the
    // `{proxy+}` method runs the function through its Lambda proxy integration, and the POST
    // needs the usage plan's key.
    let base = format!(
        "{}/apigateway_us-east-1/restapis/{api}/prod/_user_request_",
        Emulator::shared().endpoint()
    );
    assert_eq!(
        aws(&format!(
            "(lambda r: [r.status_code, r.json()])(__import__('requests').get('{base}/shop/7'))"
        )),
        json!([200, {"path": "/shop/7", "method": "GET"}])
    );
    assert_eq!(
        aws(&format!(
            "__import__('requests').post('{base}/items', data='{{}}').status_code"
        )),
        json!(403)
    );
    assert_eq!(
        aws(&format!(
            "(lambda r: [r.status_code, r.json()])(__import__('requests').post('{base}/items', data='{{}}', headers={{'x-api-key': '{value}'}}))"
        )),
        json!([200, {"path": "/items", "method": "POST"}])
    );

    // In place: the API's description and binary media types, the plan's throttle.
    world.edit(|t| {
        t["Resources"][API]["Properties"]["Description"] = json!("items REST API v2");
        t["Resources"][API]["Properties"]["BinaryMediaTypes"] =
            json!(["image/png", "application/pdf"]);
        t["Resources"][PLAN]["Properties"]["Throttle"] = json!({"BurstLimit": 4, "RateLimit": 20});
    });
    let updated = world.deploy(&[STACK]).success();
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    assert_eq!(physical(&world, API), api);
    let live = aws(&format!("c('apigateway').get_rest_api(restApiId='{api}')"));
    assert_eq!(live["description"], "items REST API v2");
    assert_eq!(
        live["binaryMediaTypes"],
        json!(["image/png", "application/pdf"])
    );
    assert_eq!(
        aws(&format!(
            "c('apigateway').get_usage_plan(usagePlanId='{plan}')['throttle']"
        )),
        json!({"burstLimit": 4, "rateLimit": 20.0})
    );

    // Drift: a description changed outside cdkd is found by the plugin's reader; reverted,
    // nothing drifts.
    aws(&format!(
        "c('apigateway').update_rest_api(restApiId='{api}', patchOperations=[{{'op': 'replace', 'path': '/description', 'value': 'changed by hand'}}]) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(API) && drift.stdout.contains("Description"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(
        aws(&format!(
            "c('apigateway').get_rest_api(restApiId='{api}')['description']"
        )),
        "items REST API v2"
    );

    // A changed API gets a new deployment, as CDK names it anew: the new one is created, the
    // stage moves to it, the old one is deleted. The model's new name replaces it, and the
    // method naming it by Ref follows in place.
    const NEW_DEPLOYMENT: &str = "ApiDeploymentB17BE62D0000000000000000000000000000000000000000";
    world.edit(|t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        let old = resources.remove(DEPLOYMENT).unwrap();
        resources.insert(NEW_DEPLOYMENT.into(), old);
        t["Resources"][STAGE]["Properties"]["DeploymentId"] = json!({"Ref": NEW_DEPLOYMENT});
        t["Resources"][MODEL]["Properties"]["Name"] = json!("ItemV2");
    });
    let replaced = world.deploy(&[STACK]).success();
    assert!(
        replaced.stdout.contains("1 replaced"),
        "{}",
        replaced.stdout
    );
    let new_deployment = child(&world, NEW_DEPLOYMENT);
    assert_ne!(new_deployment, deployment);
    assert_eq!(
        aws(&format!(
            "c('apigateway').get_stage(restApiId='{api}', stageName='prod')['deploymentId']"
        )),
        json!(new_deployment)
    );
    assert_eq!(
        aws(&format!(
            "[d['id'] for d in c('apigateway').get_deployments(restApiId='{api}')['items']]"
        )),
        json!([new_deployment])
    );
    assert_eq!(physical(&world, MODEL), format!("{api}|ItemV2"));
    assert_eq!(
        aws(&format!(
            "sorted(m['name'] for m in c('apigateway').get_models(restApiId='{api}')['items'])"
        )),
        json!(["ItemV2"])
    );
    assert_eq!(
        aws(&format!(
            "c('apigateway').get_method(restApiId='{api}', resourceId='{items}', httpMethod='POST')['requestModels']"
        )),
        json!({"application/json": "ItemV2"})
    );

    // Destroy leaves nothing of the API, the plan, the key or the domain name (the account
    // setting stays, as CloudFormation leaves it).
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(
        aws(&format!(
            "[a['id'] for a in c('apigateway').get_rest_apis()['items'] if a['id'] == '{api}']"
        )),
        json!([])
    );
    assert_eq!(
        aws("[d['domainName'] for d in c('apigateway').get_domain_names()['items']]"),
        json!([])
    );
    assert_eq!(
        aws(&format!(
            "[p['id'] for p in c('apigateway').get_usage_plans()['items'] if p['id'] == '{plan}']"
        )),
        json!([])
    );
    assert_eq!(
        aws(&format!(
            "[k['id'] for k in c('apigateway').get_api_keys()['items'] if k['id'] == '{key}']"
        )),
        json!([])
    );
    assert_eq!(
        aws("c('apigateway').get_account().get('cloudwatchRoleArn')"),
        json!(role_arn)
    );
}

#[test]
fn an_api_and_its_children_made_outside_cdkd_are_imported_and_read() {
    let api = aws(
        "c('apigateway').create_rest_api(name='handmade', description='by boto', binaryMediaTypes=['image/gif'], tags={'team': 'web'})['id']",
    );
    let api = api.as_str().unwrap();
    let imported = call("AWS::ApiGateway::RestApi", "import", api)
        .success()
        .json();
    assert_eq!(imported["physicalId"], json!(api));
    assert_eq!(imported["attributes"]["RestApiId"], json!(api));
    let root = imported["attributes"]["RootResourceId"]
        .as_str()
        .unwrap()
        .to_string();
    let read = call("AWS::ApiGateway::RestApi", "read_current_state", api)
        .success()
        .json();
    assert_eq!(read["properties"]["Name"], "handmade");
    assert_eq!(read["properties"]["Description"], "by boto");
    assert_eq!(read["properties"]["BinaryMediaTypes"], json!(["image/gif"]));
    assert_eq!(
        read["properties"]["Tags"],
        json!([{"Key": "team", "Value": "web"}])
    );

    let resource = aws(&format!(
        "c('apigateway').create_resource(restApiId='{api}', parentId='{root}', pathPart='hand')['id']"
    ));
    let composite = format!("{api}|{}", resource.as_str().unwrap());
    let imported = call("AWS::ApiGateway::Resource", "import", &composite)
        .success()
        .json();
    assert_eq!(imported["attributes"]["ResourceId"], resource);
    let read = call(
        "AWS::ApiGateway::Resource",
        "read_current_state",
        &composite,
    )
    .success()
    .json();
    assert_eq!(read["properties"]["PathPart"], "hand");
    assert_eq!(read["properties"]["ParentId"], json!(root));

    let plan = aws("c('apigateway').create_usage_plan(name='hand-plan', quota={'limit': 5, 'period': 'WEEK'})['id']");
    let read = call(
        "AWS::ApiGateway::UsagePlan",
        "read_current_state",
        plan.as_str().unwrap(),
    )
    .success()
    .json();
    assert_eq!(read["properties"]["UsagePlanName"], "hand-plan");
    assert_eq!(
        read["properties"]["Quota"],
        json!({"Limit": 5, "Period": "WEEK"})
    );

    // What does not exist is refused by name.
    let missing = call("AWS::ApiGateway::RestApi", "import", "nosuchapi");
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    aws(&format!(
        "c('apigateway').delete_rest_api(restApiId='{api}') and c('apigateway').delete_usage_plan(usagePlanId='{}') and None",
        plan.as_str().unwrap()
    ));
}

fn call_with(type_name: &str, operation: &str, args: &[&str]) -> Run {
    let mut all = vec!["providers", "call", type_name, operation];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

#[test]
fn what_an_interrupted_create_made_is_found_by_its_token_or_within_its_parent() {
    // The API is tagged with the create's token and found by it; another token finds nothing.
    let created = call_with(
        "AWS::ApiGateway::RestApi",
        "create",
        &[
            "--token",
            "tok-restapi-1",
            "--properties",
            r#"{"Name": "crashy"}"#,
        ],
    )
    .success()
    .json();
    let api = created["physicalId"].as_str().unwrap().to_string();
    let root = created["attributes"]["RootResourceId"]
        .as_str()
        .unwrap()
        .to_string();
    let found = call_with(
        "AWS::ApiGateway::RestApi",
        "find_created",
        &["--token", "tok-restapi-1"],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(api), "{found}");
    assert!(found["properties"].get("Tags").is_none(), "{found}");
    let none = call_with(
        "AWS::ApiGateway::RestApi",
        "find_created",
        &["--token", "tok-other"],
    )
    .success()
    .json();
    assert!(none["physicalId"].is_null(), "{none}");

    // A resource is found by its path part under its parent; a second one is refused as AWS
    // refuses it.
    let props = json!({"RestApiId": api, "ParentId": root, "PathPart": "crash"}).to_string();
    let resource = call_with(
        "AWS::ApiGateway::Resource",
        "create",
        &["--properties", &props],
    )
    .success()
    .json();
    let found = call_with(
        "AWS::ApiGateway::Resource",
        "find_created",
        &["--token", "t", "--properties", &props],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], resource["physicalId"], "{found}");
    let again = call_with(
        "AWS::ApiGateway::Resource",
        "create",
        &["--properties", &props],
    );
    assert_ne!(again.code, Some(0), "{}", again.stdout);

    // A usage plan and an API key are found by their token tags.
    call_with(
        "AWS::ApiGateway::UsagePlan",
        "create",
        &[
            "--token",
            "tok-plan-1",
            "--properties",
            r#"{"UsagePlanName": "crash-plan"}"#,
        ],
    )
    .success();
    let found = call_with(
        "AWS::ApiGateway::UsagePlan",
        "find_created",
        &["--token", "tok-plan-1"],
    )
    .success()
    .json();
    assert_eq!(
        found["properties"]["UsagePlanName"], "crash-plan",
        "{found}"
    );
    let plan = found["physicalId"].as_str().unwrap().to_string();
    let key = call_with(
        "AWS::ApiGateway::ApiKey",
        "create",
        &[
            "--token",
            "tok-key-1",
            "--properties",
            r#"{"Enabled": true}"#,
        ],
    )
    .success()
    .json();
    let found = call_with(
        "AWS::ApiGateway::ApiKey",
        "find_created",
        &["--token", "tok-key-1"],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], key["physicalId"], "{found}");

    // A model without a name gets one from the token, and is found by it.
    let model =
        json!({"RestApiId": api, "ContentType": "application/json", "Schema": {"type": "object"}})
            .to_string();
    let made = call_with(
        "AWS::ApiGateway::Model",
        "create",
        &[
            "--token",
            "tok-model-1",
            "--logical-id",
            "CrashModel",
            "--properties",
            &model,
        ],
    )
    .success()
    .json();
    let found = call_with(
        "AWS::ApiGateway::Model",
        "find_created",
        &[
            "--token",
            "tok-model-1",
            "--logical-id",
            "CrashModel",
            "--properties",
            &model,
        ],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], made["physicalId"], "{found}");
    assert_eq!(found["properties"]["Schema"], json!({"type": "object"}));

    for (kind, id) in [
        ("AWS::ApiGateway::UsagePlan", plan.as_str()),
        (
            "AWS::ApiGateway::ApiKey",
            key["physicalId"].as_str().unwrap(),
        ),
        ("AWS::ApiGateway::RestApi", api.as_str()),
    ] {
        call_with(kind, "delete", &["--physical-id", id]).success();
        // Deleting what is gone succeeds, as CloudFormation's delete does.
        call_with(kind, "delete", &["--physical-id", id]).success();
    }
}
