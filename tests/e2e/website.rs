//! The cloudfront plugin through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! website.js): a website bucket behind a `cloudfront.Distribution` reading it through an origin
//! access control, a CloudFront Function on viewer-request, a cache policy and a response
//! headers policy; checked in the emulator's CloudFront (whose distributions stay `InProgress`
//! for a few seconds after each change and refuse a delete until disabled and `Deployed`, as
//! AWS's do) and in the state file, through a no-change deploy, an in-place update, a
//! replacement, drift, import and destroy.

use cdkd_tests::{cdkd_on, AppWorld, Emulator, Run};
use serde_json::{json, Value};

const STACK: &str = "WebsiteStack";
const DISTRIBUTION: &str = "Cdn9963B1AD";
const OAC: &str = "CdnOrigin1S3OriginAccessControl6AC0AEFC";
const FUNCTION: &str = "RewriteA2091284";
const CACHE: &str = "Cache18F6EE16";
const HEADERS: &str = "HeadersECA0794E";
const BUCKET: &str = "SiteE53D7754";
const POLICY: &str = "SitePolicyC4000D7D";

fn aws(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn physical(world: &AppWorld, id: &str) -> String {
    world.resources(STACK)[id]["physicalId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id} is not recorded"))
        .to_string()
}

/// `cdkd <args>` under its own access key, and the emulator's calls made with that key.
fn counted(world: &AppWorld, name: &str, args: &[&str]) -> (Run, Value) {
    let key = format!("{name}{}", std::process::id());
    let run: Run = world
        .command(args)
        .env("AWS_ACCESS_KEY_ID", &key)
        .output()
        .unwrap()
        .into();
    let calls = Emulator::shared().get(&format!("/_emulator/stats?accessKey={key}"));
    (run, calls)
}

fn cloudfront_calls(calls: &Value) -> Vec<String> {
    calls
        .as_object()
        .map(|c| {
            c.keys()
                .filter(|k| k.starts_with("cloudfront"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The emulator's InProgress time for distributions while it lives; the default 3 s after.
struct DeployTime;

impl DeployTime {
    fn set(seconds: u64) -> DeployTime {
        Emulator::shared().post("/moto-api/cloudfront", &json!({"deploySeconds": seconds}));
        DeployTime
    }
}

impl Drop for DeployTime {
    fn drop(&mut self) {
        Emulator::shared().post("/moto-api/cloudfront", &json!({"deploySeconds": 3}));
    }
}

fn call(args: &[&str]) -> Run {
    cdkd_on(Emulator::shared(), args)
}

#[test]
fn a_website_behind_a_distribution_deploys_through_the_plugin_and_is_destroyed_disabled_first() {
    let world = AppWorld::of("website", STACK, "website", |_| {});
    let app = world.assembly.path().display().to_string();
    // Distributions stay InProgress until told otherwise (minutes on AWS), so what the create
    // waited for shows; then a few seconds, as the other tests of this binary use.
    let slow = DeployTime::set(600);
    let first = world.deploy(&[STACK]).success();
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [DISTRIBUTION, OAC, FUNCTION, CACHE, HEADERS, BUCKET, POLICY] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let dist = physical(&world, DISTRIBUTION);
    let attributes = &resources[DISTRIBUTION]["attributes"];
    assert_eq!(attributes["Id"], json!(dist));
    let domain = attributes["DomainName"].as_str().unwrap().to_string();
    assert!(domain.ends_with(".cloudfront.net"), "{attributes}");

    // The create did not wait for Deployed: the distribution is still InProgress on the
    // emulator (a few seconds, as minutes on AWS), and the bucket policy naming it exists.
    assert_eq!(
        aws(&format!(
            "c('cloudfront').get_distribution(Id='{dist}')['Distribution']['Status']"
        )),
        "InProgress"
    );
    drop(slow);
    let bucket = physical(&world, BUCKET);
    let policy = aws(&format!(
        "c('s3').get_bucket_policy(Bucket='{bucket}')['Policy']"
    ));
    assert!(
        policy
            .as_str()
            .unwrap()
            .contains(&format!(":distribution/{dist}")),
        "{policy}"
    );

    // AWS's side: the whole configuration as the template gave it, ids resolved.
    let oac = physical(&world, OAC);
    let function_arn = physical(&world, FUNCTION);
    let cache = physical(&world, CACHE);
    let headers = physical(&world, HEADERS);
    assert_eq!(
        resources[FUNCTION]["attributes"]["FunctionARN"],
        json!(function_arn)
    );
    assert_eq!(resources[FUNCTION]["attributes"]["Stage"], "LIVE");
    assert_eq!(resources[CACHE]["attributes"]["Id"], json!(cache));
    assert!(
        resources[CACHE]["attributes"]["LastModifiedTime"].is_string(),
        "{resources}"
    );
    assert_eq!(resources[OAC]["attributes"]["Id"], json!(oac));
    let config = aws(&format!(
        "c('cloudfront').get_distribution_config(Id='{dist}')['DistributionConfig']"
    ));
    assert_eq!(config["Comment"], "website");
    assert_eq!(config["DefaultRootObject"], "index.html");
    assert_eq!(config["PriceClass"], "PriceClass_100");
    let origins = config["Origins"]["Items"].as_array().unwrap();
    assert_eq!(origins[0]["OriginAccessControlId"], json!(oac));
    assert!(origins[0]["DomainName"]
        .as_str()
        .unwrap()
        .starts_with(&bucket));
    assert_eq!(
        origins[1]["CustomOriginConfig"]["OriginProtocolPolicy"],
        "https-only"
    );
    let default = &config["DefaultCacheBehavior"];
    assert_eq!(default["CachePolicyId"], json!(cache));
    assert_eq!(default["ResponseHeadersPolicyId"], json!(headers));
    assert_eq!(
        default["FunctionAssociations"]["Items"],
        json!([{"FunctionARN": function_arn, "EventType": "viewer-request"}])
    );
    let api = &config["CacheBehaviors"]["Items"][0];
    assert_eq!(api["PathPattern"], "/api/*");
    assert_eq!(
        api["OriginRequestPolicyId"],
        "b689b0a8-53d0-40ab-baf2-68738e2966ac"
    );
    assert_eq!(api["AllowedMethods"]["Quantity"], json!(7));
    let arn = aws(&format!(
        "c('cloudfront').get_distribution(Id='{dist}')['Distribution']['ARN']"
    ));
    assert_eq!(
        aws(&format!(
            "c('cloudfront').list_tags_for_resource(Resource='{}')['Tags']['Items']",
            arn.as_str().unwrap()
        )),
        json!([{"Key": "site", "Value": "website"}])
    );
    let name = function_arn.rsplit('/').next().unwrap().to_string();
    let live = aws(&format!(
        "c('cloudfront').describe_function(Name='{name}', Stage='LIVE')['FunctionSummary']['FunctionConfig']"
    ));
    assert_eq!(live["Runtime"], "cloudfront-js-2.0");
    let cache_config = aws(&format!(
        "c('cloudfront').get_cache_policy(Id='{cache}')['CachePolicy']['CachePolicyConfig']"
    ));
    assert_eq!(cache_config["DefaultTTL"], json!(300));
    assert_eq!(
        cache_config["ParametersInCacheKeyAndForwardedToOrigin"]["QueryStringsConfig"]
            ["QueryStrings"]["Items"],
        json!(["v"])
    );
    let headers_config = aws(&format!(
        "c('cloudfront').get_response_headers_policy(Id='{headers}')['ResponseHeadersPolicy']['ResponseHeadersPolicyConfig']"
    ));
    assert_eq!(
        headers_config["SecurityHeadersConfig"]["FrameOptions"]["FrameOption"],
        "DENY"
    );

    // The drift baseline was read back through the plugin.
    let observed = &world.resources(STACK)[DISTRIBUTION]["observedProperties"];
    assert_eq!(
        observed["DistributionConfig"]["Comment"], "website",
        "{observed}"
    );

    // A second deploy changes nothing and makes no CloudFront call.
    let (again, calls) = counted(&world, "WEBNOCHANGE", &["deploy", "-a", &app, STACK]);
    let again = again.success();
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert!(
        cloudfront_calls(&calls).is_empty(),
        "a no-change deploy called CloudFront: {calls}"
    );

    // In place: the distribution's comment and the function's code (published again).
    world.edit(|t| {
        t["Resources"][DISTRIBUTION]["Properties"]["DistributionConfig"]["Comment"] =
            json!("website v2");
        t["Resources"][FUNCTION]["Properties"]["FunctionCode"] =
            json!("function handler(event) { return event.request; }");
    });
    let updated = world.deploy(&[STACK]).success();
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    assert_eq!(physical(&world, DISTRIBUTION), dist);
    assert_eq!(
        aws(&format!(
            "c('cloudfront').get_distribution_config(Id='{dist}')['DistributionConfig']['Comment']"
        )),
        "website v2"
    );
    assert_eq!(
        aws(&format!("c('cloudfront').get_function(Name='{name}', Stage='LIVE')['FunctionCode'].read().decode()")),
        "function handler(event) { return event.request; }"
    );

    // Drift: a comment changed outside cdkd (with the ETag CloudFront requires) is found by the
    // plugin's reader, and reverted.
    aws(&format!(
        "(lambda cf: (lambda r: cf.update_distribution(Id='{dist}', IfMatch=r['ETag'], DistributionConfig=dict(r['DistributionConfig'], Comment='changed by hand')))(cf.get_distribution_config(Id='{dist}')))(c('cloudfront')) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(DISTRIBUTION) && drift.stdout.contains("changed by hand"),
        "{}",
        drift.stdout
    );
    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(
        aws(&format!(
            "c('cloudfront').get_distribution_config(Id='{dist}')['DistributionConfig']['Comment']"
        )),
        "website v2"
    );

    // Create-only: a new function name replaces the function; the distribution follows the new
    // ARN in place, and the old function (no longer associated) is deleted.
    world.edit(|t| {
        t["Resources"][FUNCTION]["Properties"]["Name"] = json!("WebsiteRewriteRenamed");
    });
    let replaced = world.deploy(&[STACK]).success();
    assert!(
        replaced.stdout.contains("1 replaced"),
        "{}",
        replaced.stdout
    );
    let renamed = physical(&world, FUNCTION);
    assert!(
        renamed.ends_with(":function/WebsiteRewriteRenamed"),
        "{renamed}"
    );
    assert_eq!(physical(&world, DISTRIBUTION), dist);
    assert_eq!(
        aws(&format!("c('cloudfront').get_distribution_config(Id='{dist}')['DistributionConfig']['DefaultCacheBehavior']['FunctionAssociations']['Items'][0]['FunctionARN']")),
        json!(renamed)
    );
    assert_eq!(
        aws("sorted(f['Name'] for f in c('cloudfront').list_functions()['FunctionList'].get('Items', []))"),
        json!(["WebsiteRewriteRenamed"])
    );

    // Destroy disables the distribution, waits for Deployed, deletes it, then what it used.
    let (destroyed, calls) = counted(&world, "WEBDESTROY", &["destroy", "-a", &app, STACK, "-f"]);
    destroyed.success();
    assert!(
        calls.get("cloudfront:PUT").is_some(),
        "no disable before the delete: {calls}"
    );
    assert!(calls.get("cloudfront:DELETE").is_some(), "{calls}");
    // Nothing of the stack is left (other tests of this binary share the emulator: only the
    // stack's own names are counted).
    assert_eq!(
        aws(&format!("[d['Id'] for d in c('cloudfront').list_distributions()['DistributionList'].get('Items', []) if d['Id'] == '{dist}']")),
        json!([])
    );
    assert_eq!(
        aws("[f['Name'] for f in c('cloudfront').list_functions()['FunctionList'].get('Items', []) if 'Website' in f['Name']]"),
        json!([])
    );
    assert_eq!(
        aws("[p['CachePolicy']['Id'] for p in c('cloudfront').list_cache_policies(Type='custom')['CachePolicyList'].get('Items', []) if p['CachePolicy']['CachePolicyConfig']['Name'].startswith('WebsiteStack')]"),
        json!([])
    );
    assert_eq!(
        aws("[p['ResponseHeadersPolicy']['Id'] for p in c('cloudfront').list_response_headers_policies(Type='custom')['ResponseHeadersPolicyList'].get('Items', []) if p['ResponseHeadersPolicy']['ResponseHeadersPolicyConfig']['Name'].startswith('WebsiteStack')]"),
        json!([])
    );
    assert_eq!(
        aws("[o['Id'] for o in c('cloudfront').list_origin_access_controls()['OriginAccessControlList'].get('Items', []) if o['Name'].startswith('WebsiteStack')]"),
        json!([])
    );
    assert_eq!(
        aws(&format!(
            "[b['Name'] for b in c('s3').list_buckets()['Buckets'] if b['Name'] == '{bucket}']"
        )),
        json!([])
    );
}

#[test]
fn a_distribution_made_outside_cdkd_is_imported_and_read() {
    let created = aws(
        "c('cloudfront').create_distribution(DistributionConfig={'CallerReference': 'by-hand-1', 'Comment': 'by boto', 'Enabled': True, 'Origins': {'Quantity': 1, 'Items': [{'Id': 'o', 'DomainName': 'example.com', 'CustomOriginConfig': {'HTTPPort': 80, 'HTTPSPort': 443, 'OriginProtocolPolicy': 'https-only'}}]}, 'DefaultCacheBehavior': {'TargetOriginId': 'o', 'ViewerProtocolPolicy': 'allow-all', 'CachePolicyId': '658327ea-f89d-4fab-a63d-7e88639e58f6'}})['Distribution']",
    );
    let id = created["Id"].as_str().unwrap();
    let imported = call(&[
        "providers",
        "call",
        "AWS::CloudFront::Distribution",
        "import",
        "--physical-id",
        id,
    ])
    .success()
    .json();
    assert_eq!(imported["physicalId"], json!(id));
    assert_eq!(imported["attributes"]["DomainName"], created["DomainName"]);
    let read = call(&[
        "providers",
        "call",
        "AWS::CloudFront::Distribution",
        "read_current_state",
        "--physical-id",
        id,
    ])
    .success()
    .json();
    let config = &read["properties"]["DistributionConfig"];
    assert_eq!(config["Comment"], "by boto");
    assert_eq!(
        config["DefaultCacheBehavior"]["CachePolicyId"],
        "658327ea-f89d-4fab-a63d-7e88639e58f6"
    );
    assert_eq!(
        config["Origins"][0]["CustomOriginConfig"]["OriginProtocolPolicy"],
        "https-only"
    );
    // What does not exist is refused by name.
    let missing = call(&[
        "providers",
        "call",
        "AWS::CloudFront::Distribution",
        "import",
        "--physical-id",
        "ENOSUCH",
    ]);
    assert_ne!(missing.code, Some(0), "{}", missing.stdout);
    // The plugin's delete of an enabled distribution disables it and waits.
    call(&[
        "providers",
        "call",
        "AWS::CloudFront::Distribution",
        "delete",
        "--physical-id",
        id,
    ])
    .success();
    assert_eq!(
        aws(&format!("[d['Id'] for d in c('cloudfront').list_distributions()['DistributionList'].get('Items', []) if d['Id'] == '{id}']")),
        json!([])
    );
    // Already gone is deleted.
    call(&[
        "providers",
        "call",
        "AWS::CloudFront::Distribution",
        "delete",
        "--physical-id",
        id,
    ])
    .success();
}

#[test]
fn a_repeated_create_with_one_token_makes_one_identity_and_one_distribution() {
    let identity = json!({"CloudFrontOriginAccessIdentityConfig": {"Comment": "site"}}).to_string();
    let create = |token: &str| {
        call(&[
            "providers",
            "call",
            "AWS::CloudFront::CloudFrontOriginAccessIdentity",
            "create",
            "--token",
            token,
            "--properties",
            &identity,
        ])
        .success()
        .json()
    };
    let first = create("tok-oai-1");
    let again = create("tok-oai-1");
    assert_eq!(first["physicalId"], again["physicalId"], "{first}\n{again}");
    assert_eq!(
        first["attributes"]["S3CanonicalUserId"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    let id = first["physicalId"].as_str().unwrap().to_string();
    let found = call(&[
        "providers",
        "call",
        "AWS::CloudFront::CloudFrontOriginAccessIdentity",
        "find_created",
        "--token",
        "tok-oai-1",
    ])
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(id), "{found}");
    assert_eq!(
        found["properties"]["CloudFrontOriginAccessIdentityConfig"]["Comment"],
        "site"
    );
    let none = call(&[
        "providers",
        "call",
        "AWS::CloudFront::CloudFrontOriginAccessIdentity",
        "find_created",
        "--token",
        "tok-oai-other",
    ])
    .success()
    .json();
    assert!(none["physicalId"].is_null(), "{none}");

    // A distribution reading through the identity: one per token, the second create answered
    // with the first (CloudFront's CallerReference), found by it.
    let distribution = json!({"DistributionConfig": {
        "Enabled": true,
        "Origins": [{"Id": "s3", "DomainName": "site.s3.us-east-1.amazonaws.com",
                     "S3OriginConfig": {"OriginAccessIdentity": format!("origin-access-identity/cloudfront/{id}")}}],
        "DefaultCacheBehavior": {"TargetOriginId": "s3", "ViewerProtocolPolicy": "https-only",
                                 "ForwardedValues": {"QueryString": false}},
        "Logging": {"Bucket": "logs.s3.amazonaws.com", "Prefix": "cdn/"}
    }})
    .to_string();
    let make = || {
        call(&[
            "providers",
            "call",
            "AWS::CloudFront::Distribution",
            "create",
            "--token",
            "tok-dist-1",
            "--properties",
            &distribution,
        ])
        .success()
        .json()
    };
    let (one, two) = (make(), make());
    assert_eq!(one["physicalId"], two["physicalId"]);
    let dist = one["physicalId"].as_str().unwrap().to_string();
    assert_eq!(
        aws("len([d for d in c('cloudfront').list_distributions()['DistributionList'].get('Items', []) if d['Origins']['Items'][0]['DomainName'] == 'site.s3.us-east-1.amazonaws.com'])"),
        json!(1)
    );
    let found = call(&[
        "providers",
        "call",
        "AWS::CloudFront::Distribution",
        "find_created",
        "--token",
        "tok-dist-1",
    ])
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(dist));
    assert_eq!(
        found["properties"]["DistributionConfig"]["Logging"]["Prefix"],
        "cdn/"
    );
    // The identity is in use until the distribution is gone.
    let busy = call(&[
        "providers",
        "call",
        "AWS::CloudFront::CloudFrontOriginAccessIdentity",
        "delete",
        "--physical-id",
        &id,
    ]);
    assert_ne!(busy.code, Some(0), "{}", busy.stdout);
    call(&[
        "providers",
        "call",
        "AWS::CloudFront::Distribution",
        "delete",
        "--physical-id",
        &dist,
    ])
    .success();
    call(&[
        "providers",
        "call",
        "AWS::CloudFront::CloudFrontOriginAccessIdentity",
        "delete",
        "--physical-id",
        &id,
    ])
    .success();

    // An origin request policy: made, found by its name, read, changed, deleted.
    let policy = json!({"OriginRequestPolicyConfig": {"Name": "web-api", "Comment": "to the API",
        "CookiesConfig": {"CookieBehavior": "none"}, "HeadersConfig": {"HeaderBehavior": "whitelist", "Headers": ["authorization"]},
        "QueryStringsConfig": {"QueryStringBehavior": "all"}}});
    let made = call(&[
        "providers",
        "call",
        "AWS::CloudFront::OriginRequestPolicy",
        "create",
        "--properties",
        &policy.to_string(),
    ])
    .success()
    .json();
    let policy_id = made["physicalId"].as_str().unwrap().to_string();
    let found = call(&[
        "providers",
        "call",
        "AWS::CloudFront::OriginRequestPolicy",
        "find_created",
        "--token",
        "t",
        "--properties",
        &policy.to_string(),
    ])
    .success()
    .json();
    assert_eq!(found["physicalId"], json!(policy_id));
    assert_eq!(found["properties"], policy);
    let mut changed = policy.clone();
    changed["OriginRequestPolicyConfig"]["Comment"] = json!("v2");
    call(&[
        "providers",
        "call",
        "AWS::CloudFront::OriginRequestPolicy",
        "update",
        "--physical-id",
        &policy_id,
        "--properties",
        &changed.to_string(),
        "--previous-properties",
        &policy.to_string(),
    ])
    .success();
    let read = call(&[
        "providers",
        "call",
        "AWS::CloudFront::OriginRequestPolicy",
        "read_current_state",
        "--physical-id",
        &policy_id,
    ])
    .success()
    .json();
    assert_eq!(read["properties"], changed);
    // A second create of the same name and configuration (a lost answer) adopts it; another
    // configuration under that name is refused.
    let again = call(&[
        "providers",
        "call",
        "AWS::CloudFront::OriginRequestPolicy",
        "create",
        "--properties",
        &changed.to_string(),
    ])
    .success()
    .json();
    assert_eq!(again["physicalId"], json!(policy_id));
    let clash = call(&[
        "providers",
        "call",
        "AWS::CloudFront::OriginRequestPolicy",
        "create",
        "--properties",
        &policy.to_string(),
    ]);
    assert_ne!(clash.code, Some(0), "{}", clash.stdout);
    call(&[
        "providers",
        "call",
        "AWS::CloudFront::OriginRequestPolicy",
        "delete",
        "--physical-id",
        &policy_id,
    ])
    .success();
    assert_eq!(
        aws("[p for p in c('cloudfront').list_origin_request_policies(Type='custom')['OriginRequestPolicyList'].get('Items', []) if p['OriginRequestPolicy']['OriginRequestPolicyConfig']['Name'] == 'web-api']"),
        json!([])
    );
}
