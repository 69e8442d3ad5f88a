//! The cognito plugin through `cdkd deploy` with a real CDK app (tests/fixtures/apps/
//! cognito.js): a `UserPool` with a client (with a generated secret) and a Cognito-prefix
//! domain, and an L1 identity pool trusting the client; checked in the emulator's Cognito and
//! in the state file (the client secret never in it), through a no-change deploy, an in-place
//! update, a replacement, drift, import and destroy.

use cdkd_tests::{cdkd_on, AppWorld, Emulator};
use serde_json::{json, Value};

const STACK: &str = "CognitoStack";
const POOL: &str = "Users0A0EEA89";
const CLIENT: &str = "UsersWebA39D1A70";
const DOMAIN: &str = "UsersDomainC6632324";
const IDENTITIES: &str = "Identities";
const TRIGGER: &str = "PreSignUp1C2BA29E";

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

#[test]
fn a_user_pool_with_a_client_a_domain_and_an_identity_pool_deploys_through_the_plugin() {
    let world = AppWorld::of("cognito", STACK, "cognito", |_| {});
    let first = deploy(&world);
    assert!(
        first.stdout.contains("created"),
        "{}\n{}",
        first.stdout,
        first.stderr
    );
    let resources = world.resources(STACK);
    for id in [POOL, CLIENT, DOMAIN, IDENTITIES] {
        assert_eq!(resources[id]["provisionedBy"], "sdk", "{id}: {resources}");
    }
    let pool = physical(&world, POOL);
    assert_eq!(resources[POOL]["attributes"]["UserPoolId"], json!(pool));
    assert_eq!(
        resources[POOL]["attributes"]["ProviderName"],
        json!(format!("cognito-idp.us-east-1.amazonaws.com/{pool}"))
    );
    let client = physical(&world, CLIENT);
    let client_id = client
        .strip_prefix(&format!("{pool}|"))
        .unwrap()
        .to_string();
    assert_eq!(
        resources[CLIENT]["attributes"]["ClientId"],
        json!(client_id)
    );
    assert_eq!(physical(&world, DOMAIN), "cdkd-e2e-users");
    let identities = physical(&world, IDENTITIES);

    // AWS's side: the pool with CDK's settings and the create-token tag, the client with a
    // secret, the domain on the pool, the identity pool trusting the client (Ref of the
    // client is its id, GetAtt ProviderName the pool's provider name).
    let live = aws(&format!(
        "c('cognito-idp').describe_user_pool(UserPoolId='{pool}')['UserPool']"
    ));
    assert_eq!(
        live["Policies"]["PasswordPolicy"]["MinimumLength"],
        json!(10)
    );
    assert_eq!(live["UsernameAttributes"], json!(["email"]));
    // The trigger, device remembering and attribute-update verification are the plugin's own
    // (issue 48: a pool with a trigger went to Cloud Control).
    assert_eq!(
        live["LambdaConfig"],
        json!({"PreSignUp": resources[TRIGGER]["attributes"]["Arn"]}),
        "{live}"
    );
    assert_eq!(
        live["DeviceConfiguration"],
        json!({"ChallengeRequiredOnNewDevice": true, "DeviceOnlyRememberedOnUserPrompt": false})
    );
    assert_eq!(
        live["UserAttributeUpdateSettings"],
        json!({"AttributesRequireVerificationBeforeUpdate": ["email"]})
    );
    assert_eq!(
        resources[POOL]["observedProperties"]["LambdaConfig"],
        live["LambdaConfig"]
    );
    let on_cloud_control = world.off_plugins(STACK);
    assert!(on_cloud_control.is_empty(), "{on_cloud_control:?}");
    assert_eq!(live["AutoVerifiedAttributes"], json!(["email"]));
    assert!(
        live["UserPoolTags"]["cdkd:create-token"].is_string(),
        "{live}"
    );
    assert!(
        live["SchemaAttributes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["Name"] == "custom:tier"),
        "{live}"
    );
    let live_client = aws(&format!(
        "c('cognito-idp').describe_user_pool_client(UserPoolId='{pool}', ClientId='{client_id}')['UserPoolClient']"
    ));
    let secret = live_client["ClientSecret"].as_str().unwrap().to_string();
    assert_eq!(
        live_client["CallbackURLs"],
        json!(["https://example.com/callback"])
    );
    assert_eq!(
        aws("c('cognito-idp').describe_user_pool_domain(Domain='cdkd-e2e-users')['DomainDescription']['UserPoolId']"),
        json!(pool)
    );
    let live_identities = aws(&format!(
        "c('cognito-identity').describe_identity_pool(IdentityPoolId='{identities}')"
    ));
    let trusted = &live_identities["CognitoIdentityProviders"][0];
    assert_eq!(trusted["ClientId"], json!(client_id), "{live_identities}");
    assert_eq!(
        trusted["ProviderName"],
        json!(format!("cognito-idp.us-east-1.amazonaws.com/{pool}"))
    );
    // The client secret is in no record, no output.
    let state_text = world.state().to_string();
    assert!(
        !state_text.contains(&secret),
        "the client secret is in state"
    );
    assert!(!first.stdout.contains(&secret) && !first.stderr.contains(&secret));

    // Nothing drifts right after the deploy: what Cognito fills in (standard attributes,
    // defaults) is not reported as a change.
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);

    // A second deploy changes nothing.
    let again = deploy(&world);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);
    assert!(
        !again.stdout.contains("updated") || again.stdout.contains("0 updated"),
        "{}",
        again.stdout
    );

    // In place: the pool's password length and the client's callback URL.
    world.edit(|t| {
        t["Resources"][POOL]["Properties"]["Policies"]["PasswordPolicy"]["MinimumLength"] =
            json!(12);
        t["Resources"][POOL]["Properties"]["Schema"]
            .as_array_mut()
            .unwrap()
            .push(json!({"Name": "plan", "AttributeDataType": "String", "Mutable": true}));
        t["Resources"][CLIENT]["Properties"]["CallbackURLs"] =
            json!(["https://shop.example.com/callback"]);
    });
    let updated = deploy(&world);
    assert!(
        updated.stdout.contains("2 updated, 0 replaced"),
        "{}",
        updated.stdout
    );
    assert_eq!(physical(&world, POOL), pool);
    assert_eq!(
        aws(&format!(
            "c('cognito-idp').describe_user_pool(UserPoolId='{pool}')['UserPool']['Policies']['PasswordPolicy']['MinimumLength']"
        )),
        json!(12)
    );
    // A schema attribute added in the template is added to the pool (Cognito only adds).
    assert!(aws(&format!(
        "[a['Name'] for a in c('cognito-idp').describe_user_pool(UserPoolId='{pool}')['UserPool']['SchemaAttributes']]"
    ))
    .as_array()
    .unwrap()
    .contains(&json!("custom:plan")));
    // The update sent the whole pool again and kept the token tag.
    assert!(aws(&format!(
        "c('cognito-idp').describe_user_pool(UserPoolId='{pool}')['UserPool']['UserPoolTags']"
    ))["cdkd:create-token"]
        .is_string());
    assert_eq!(
        aws(&format!(
            "c('cognito-idp').describe_user_pool_client(UserPoolId='{pool}', ClientId='{client_id}')['UserPoolClient']['CallbackURLs']"
        )),
        json!(["https://shop.example.com/callback"])
    );

    // Drift: a password policy changed outside cdkd is found by the plugin's reader.
    aws(&format!(
        "c('cognito-idp').update_user_pool(UserPoolId='{pool}', Policies={{'PasswordPolicy': {{'MinimumLength': 20}}}}) and None"
    ));
    let drift = world.cdkd(&["drift", STACK]);
    assert_eq!(drift.code, Some(1), "{}\n{}", drift.stdout, drift.stderr);
    assert!(
        drift.stdout.contains(POOL) && drift.stdout.contains("Policies"),
        "{}",
        drift.stdout
    );

    world.cdkd(&["drift", STACK, "--revert", "--yes"]).success();
    let clean = world.cdkd(&["drift", STACK]);
    assert_eq!(clean.code, Some(0), "{}\n{}", clean.stdout, clean.stderr);
    assert_eq!(
        aws(&format!(
            "c('cognito-idp').describe_user_pool(UserPoolId='{pool}')['UserPool']['Policies']['PasswordPolicy']['MinimumLength']"
        )),
        json!(12)
    );

    // Create-only: a client without a secret replaces the client; the old one is deleted and
    // the identity pool follows the new client id in place.
    world.edit(|t| {
        t["Resources"][CLIENT]["Properties"]["GenerateSecret"] = json!(false);
    });
    let replaced = deploy(&world);
    assert!(replaced.stdout.contains("replaced"), "{}", replaced.stdout);
    let new_client = physical(&world, CLIENT);
    assert_ne!(new_client, client);
    let new_client_id = new_client
        .strip_prefix(&format!("{pool}|"))
        .unwrap()
        .to_string();
    assert_eq!(
        aws(&format!(
            "[c['ClientId'] for c in c('cognito-idp').list_user_pool_clients(UserPoolId='{pool}', MaxResults=60)['UserPoolClients']]"
        )),
        json!([new_client_id])
    );
    assert_eq!(
        aws(&format!(
            "c('cognito-identity').describe_identity_pool(IdentityPoolId='{identities}')['CognitoIdentityProviders'][0]['ClientId']"
        )),
        json!(new_client_id)
    );
    assert_eq!(physical(&world, IDENTITIES), identities);

    // Import: the pool, read back by the plugin.
    let imported = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::Cognito::UserPool",
            "import",
            "--physical-id",
            &pool,
        ],
    )
    .success()
    .json();
    assert_eq!(imported["physicalId"], json!(pool));
    assert_eq!(imported["attributes"]["UserPoolId"], json!(pool));
    let imported = cdkd_on(
        Emulator::shared(),
        &[
            "providers",
            "call",
            "AWS::Cognito::IdentityPool",
            "import",
            "--physical-id",
            &identities,
        ],
    )
    .success()
    .json();
    assert_eq!(imported["attributes"]["Id"], json!(identities));

    // Destroy: nothing left.
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["destroy", "-a", &app, STACK, "-f"]).success();
    assert_eq!(
        aws(&format!(
            "[p['Id'] for p in c('cognito-idp').list_user_pools(MaxResults=60)['UserPools'] if p['Id'] == '{pool}']"
        )),
        json!([])
    );
    assert_eq!(
        aws(&format!(
            "[p['IdentityPoolId'] for p in c('cognito-identity').list_identity_pools(MaxResults=60)['IdentityPools'] if p['IdentityPoolId'] == '{identities}']"
        )),
        json!([])
    );
}

fn call_with(type_name: &str, operation: &str, args: &[&str]) -> cdkd_tests::Run {
    let mut all = vec!["providers", "call", type_name, operation];
    all.extend_from_slice(args);
    cdkd_on(Emulator::shared(), &all)
}

#[test]
fn what_an_interrupted_create_made_is_found_by_its_token_its_name_or_its_pool() {
    // A user pool with a generated name carries the token and is found by name and token;
    // another token finds nothing.
    let common = ["--stack-name", "Crash", "--logical-id", "Pool"];
    let mut args = common.to_vec();
    args.extend(["--token", "tok-pool-1", "--properties", "{}"]);
    let created = call_with("AWS::Cognito::UserPool", "create", &args)
        .success()
        .json();
    let pool = created["physicalId"].as_str().unwrap().to_string();
    let mut args = common.to_vec();
    args.extend(["--token", "tok-pool-1"]);
    let found = call_with("AWS::Cognito::UserPool", "find_created", &args)
        .success()
        .json();
    assert_eq!(found["physicalId"], json!(pool), "{found}");
    assert!(found["properties"].get("UserPoolTags").is_none(), "{found}");
    let mut args = common.to_vec();
    args.extend(["--token", "tok-pool-2"]);
    let none = call_with("AWS::Cognito::UserPool", "find_created", &args)
        .success()
        .json();
    assert!(none["physicalId"].is_null(), "{none}");

    // A client is found by its generated name in its pool; a domain by its name.
    let client_props = json!({"UserPoolId": pool}).to_string();
    let client_args = [
        "--stack-name",
        "Crash",
        "--logical-id",
        "Client",
        "--token",
        "tok-client-1",
        "--properties",
        &client_props,
    ];
    let client = call_with("AWS::Cognito::UserPoolClient", "create", &client_args)
        .success()
        .json();
    assert!(client["physicalId"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{pool}|")));
    let found = call_with("AWS::Cognito::UserPoolClient", "find_created", &client_args)
        .success()
        .json();
    assert_eq!(found["physicalId"], client["physicalId"], "{found}");
    let domain_props = json!({"UserPoolId": pool, "Domain": "cdkd-crash-prefix"}).to_string();
    call_with(
        "AWS::Cognito::UserPoolDomain",
        "create",
        &["--properties", &domain_props],
    )
    .success();
    let found = call_with(
        "AWS::Cognito::UserPoolDomain",
        "find_created",
        &["--token", "t", "--properties", &domain_props],
    )
    .success()
    .json();
    assert_eq!(found["physicalId"], "cdkd-crash-prefix", "{found}");
    // A second create of the domain is refused as AWS refuses it.
    let again = call_with(
        "AWS::Cognito::UserPoolDomain",
        "create",
        &["--properties", &domain_props],
    );
    assert_ne!(again.code, Some(0), "{}", again.stdout);

    // An identity pool is found by its name and token.
    let identity_args = [
        "--stack-name",
        "Crash",
        "--logical-id",
        "Ids",
        "--token",
        "tok-ids-1",
        "--properties",
        r#"{"AllowUnauthenticatedIdentities": false}"#,
    ];
    let ids = call_with("AWS::Cognito::IdentityPool", "create", &identity_args)
        .success()
        .json();
    let found = call_with("AWS::Cognito::IdentityPool", "find_created", &identity_args)
        .success()
        .json();
    assert_eq!(found["physicalId"], ids["physicalId"], "{found}");

    // Deletes of what is already gone are deletes.
    for (type_name, id) in [
        ("AWS::Cognito::UserPoolDomain", "cdkd-crash-prefix"),
        ("AWS::Cognito::UserPoolDomain", "cdkd-crash-prefix"),
        (
            "AWS::Cognito::IdentityPool",
            ids["physicalId"].as_str().unwrap(),
        ),
        (
            "AWS::Cognito::UserPoolClient",
            client["physicalId"].as_str().unwrap(),
        ),
        (
            "AWS::Cognito::UserPoolClient",
            client["physicalId"].as_str().unwrap(),
        ),
        ("AWS::Cognito::UserPool", &pool),
        ("AWS::Cognito::UserPool", &pool),
    ] {
        call_with(
            type_name,
            "delete",
            &["--physical-id", id, "--properties", &domain_props],
        )
        .success();
    }
}
