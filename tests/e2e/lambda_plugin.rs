//! The Lambda plugin through `cdkd deploy`: the app fixture's inline-code function and its
//! asset function, plus a permission, a function URL, a version and an alias added to the
//! template, with a layer version, an event source mapping (from a queue) and an event invoke
//! config; checked in the emulator's Lambda API.

use cdkd_tests::{AppWorld, Emulator};
use serde_json::{json, Value};

/// The app fixture with its own buckets, prepared for this test.
fn new_world() -> AppWorld {
    // The nested stack waits for nested-stack support; the rest of the Lambda surface is
    // added here because the app does not use it.
    AppWorld::new("lambdaplugin", |t| {
        let resources = t["Resources"].as_object_mut().unwrap();
        resources.retain(|_, r| r["Type"] != "AWS::CloudFormation::Stack");
        resources.insert(
            "InvokeByS3".into(),
            json!({"Type": "AWS::Lambda::Permission", "Properties": {
                "FunctionName": {"Fn::GetAtt": ["Inline6CF80F9D", "Arn"]},
                "Action": "lambda:InvokeFunction",
                "Principal": "s3.amazonaws.com",
                "SourceAccount": {"Ref": "AWS::AccountId"}}}),
        );
        resources.insert(
            "InlineUrl".into(),
            json!({"Type": "AWS::Lambda::Url", "Properties": {
                "TargetFunctionArn": {"Fn::GetAtt": ["Inline6CF80F9D", "Arn"]},
                "AuthType": "AWS_IAM"}}),
        );
        resources.insert(
            "AssetVersion".into(),
            json!({"Type": "AWS::Lambda::Version", "Properties": {
                "FunctionName": {"Ref": "FromAssetF2A31CF9"}}}),
        );
        resources.insert(
            "LiveAlias".into(),
            json!({"Type": "AWS::Lambda::Alias", "Properties": {
                "FunctionName": {"Ref": "FromAssetF2A31CF9"},
                "FunctionVersion": {"Fn::GetAtt": ["AssetVersion", "Version"]},
                "Name": "live"}}),
        );
        resources.insert(
            "DepsLayer".into(),
            json!({"Type": "AWS::Lambda::LayerVersion", "Properties": {
                "Content": {
                    "S3Bucket": {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"},
                    "S3Key": "09d099f5e56edd144d75c0c41d8cbe701d466d4f9ad51d167e068f2437569926.zip"},
                "CompatibleRuntimes": ["nodejs20.x"]}}),
        );
        resources.insert(
            "Jobs".into(),
            json!({"Type": "AWS::SQS::Queue", "Properties": {}}),
        );
        resources.insert(
            "JobsToAsset".into(),
            json!({"Type": "AWS::Lambda::EventSourceMapping", "Properties": {
                "FunctionName": {"Ref": "FromAssetF2A31CF9"},
                "EventSourceArn": {"Fn::GetAtt": ["Jobs", "Arn"]},
                "BatchSize": 5,
                "FilterCriteria": {"Filters": [{"Pattern": "{\"body\":{\"kind\":[\"job\"]}}"}]},
                "FunctionResponseTypes": ["ReportBatchItemFailures"],
                "ScalingConfig": {"MaximumConcurrency": 2},
                "Tags": [{"Key": "team", "Value": "jobs"}]}}),
        );
        resources.insert(
            "InlineAsync".into(),
            json!({"Type": "AWS::Lambda::EventInvokeConfig", "Properties": {
                "FunctionName": {"Ref": "Inline6CF80F9D"},
                "Qualifier": "$LATEST",
                "MaximumRetryAttempts": 1}}),
        );
    })
}

/// Every layer version ARN in the emulator.
const LAYER_VERSIONS: &str = "[v['LayerVersionArn'] for l in c('lambda').list_layers()['Layers'] for v in c('lambda').list_layer_versions(LayerName=l['LayerName'])['LayerVersions']]";

fn lambda(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

#[test]
fn the_app_functions_go_through_the_lambda_plugin() {
    let world = new_world();
    let app = world.assembly.path().display().to_string();
    world.cdkd(&["deploy", "-a", &app, "--all"]).success();
    let resources = world.resources("AppStack");
    for logical in [
        "Inline6CF80F9D",
        "FromAssetF2A31CF9",
        "InvokeByS3",
        "InlineUrl",
        "AssetVersion",
        "LiveAlias",
        "DepsLayer",
        "JobsToAsset",
        "InlineAsync",
    ] {
        assert_eq!(
            resources[logical]["provisionedBy"], "sdk",
            "{logical}: {resources}"
        );
    }
    let inline = resources["Inline6CF80F9D"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let asset = resources["FromAssetF2A31CF9"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(resources["Inline6CF80F9D"]["attributes"]["Arn"]
        .as_str()
        .unwrap()
        .ends_with(&format!(":function:{inline}")));

    // The inline function: its environment carries the producer's topic (ImportValue) and
    // queue URL (GetStackOutput); its code is the ZipFile source under index.js.
    let config = lambda(&format!(
        "c('lambda').get_function_configuration(FunctionName='{inline}')"
    ));
    let topic = world
        .resources("ProducerStack")
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["resourceType"] == "AWS::SNS::Topic")
        .unwrap()["physicalId"]
        .clone();
    assert_eq!(config["Environment"]["Variables"]["TOPIC_ARN"], topic);
    assert!(config["Environment"]["Variables"]["QUEUE_URL"]
        .as_str()
        .unwrap()
        .contains("/123456789012/"));
    assert_eq!(
        config["Role"],
        resources["FnRoleDAF86AC1"]["attributes"]["Arn"]
    );
    // The asset function's code came from cdkd's asset bucket.
    let code = lambda(&format!(
        "c('lambda').get_function(FunctionName='{asset}')['Configuration']['CodeSize'] > 0"
    ));
    assert_eq!(code, json!(true));
    assert_eq!(
        lambda(&format!(
            "c('lambda').get_function(FunctionName='{asset}')['Configuration']['Timeout']"
        )),
        json!(10)
    );

    // The permission, the URL, the version and the alias exist on the emulator's side.
    let policy = lambda(&format!(
        "__import__('json').loads(c('lambda').get_policy(FunctionName='{inline}')['Policy'])['Statement']"
    ));
    assert_eq!(policy[0]["Sid"], resources["InvokeByS3"]["physicalId"]);
    assert_eq!(policy[0]["Principal"]["Service"], "s3.amazonaws.com");
    let url = lambda(&format!(
        "c('lambda').get_function_url_config(FunctionName='{inline}')['AuthType']"
    ));
    assert_eq!(url, json!("AWS_IAM"));
    assert!(resources["InlineUrl"]["attributes"]["FunctionUrl"].is_string());
    let version = resources["AssetVersion"]["attributes"]["Version"].clone();
    let alias = lambda(&format!(
        "c('lambda').get_alias(FunctionName='{asset}', Name='live')['FunctionVersion']"
    ));
    assert_eq!(alias, version);

    // The layer version, the mapping from the queue and the async-invoke settings.
    let layer = resources["DepsLayer"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let layers = lambda(LAYER_VERSIONS);
    assert!(
        layers.as_array().unwrap().contains(&json!(layer)),
        "{layers}"
    );
    let mapping = resources["JobsToAsset"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    let found = lambda(&format!(
        "c('lambda').get_event_source_mapping(UUID='{mapping}')['BatchSize']"
    ));
    assert_eq!(found, json!(5));
    // Filters, partial batch responses and concurrency go through the plugin, not Cloud
    // Control.
    assert_eq!(resources["JobsToAsset"]["provisionedBy"], "sdk");
    let settings = lambda(&format!(
        "(lambda m: [m.get('FilterCriteria'), m.get('FunctionResponseTypes'), m.get('ScalingConfig')])(c('lambda').get_event_source_mapping(UUID='{mapping}'))"
    ));
    assert_eq!(
        settings,
        json!([
            {"Filters": [{"Pattern": "{\"body\":{\"kind\":[\"job\"]}}"}]},
            ["ReportBatchItemFailures"],
            {"MaximumConcurrency": 2}
        ])
    );
    assert_eq!(
        resources["InlineAsync"]["physicalId"],
        json!(format!("{inline}|$LATEST"))
    );
    let retries = lambda(&format!(
        "c('lambda').get_function_event_invoke_config(FunctionName='{inline}', Qualifier='$LATEST')['MaximumRetryAttempts']"
    ));
    assert_eq!(retries, json!(1));

    // In place: a longer timeout and a new variable keep the function (same name).
    world.edit(|t| {
        t["Resources"]["FromAssetF2A31CF9"]["Properties"]["Timeout"] = json!(30);
        t["Resources"]["Inline6CF80F9D"]["Properties"]["Environment"]["Variables"]["MODE"] =
            json!("blue");
        t["Resources"]["JobsToAsset"]["Properties"]["BatchSize"] = json!(8);
        t["Resources"]["InlineAsync"]["Properties"]["MaximumRetryAttempts"] = json!(2);
    });
    world
        .cdkd(&["deploy", "-a", &app, "AppStack", "-e"])
        .success();
    assert_eq!(
        lambda(&format!(
            "c('lambda').get_function_configuration(FunctionName='{asset}')['Timeout']"
        )),
        json!(30)
    );
    assert_eq!(
        lambda(&format!(
            "c('lambda').get_function_configuration(FunctionName='{inline}')['Environment']['Variables']['MODE']"
        )),
        json!("blue")
    );
    assert_eq!(
        world.resources("AppStack")["FromAssetF2A31CF9"]["physicalId"],
        json!(asset),
        "the function was replaced"
    );
    assert_eq!(
        lambda(&format!(
            "c('lambda').get_event_source_mapping(UUID='{mapping}')['BatchSize']"
        )),
        json!(8)
    );
    assert_eq!(
        lambda(&format!(
            "c('lambda').get_function_event_invoke_config(FunctionName='{inline}', Qualifier='$LATEST')['MaximumRetryAttempts']"
        )),
        json!(2)
    );

    // Create-only: naming the inline function replaces it, and the permission, URL and
    // invoke config that name it follow the new function; the old one is gone.
    let renamed = Emulator::unique("renamed-fn");
    world.edit(|t| {
        t["Resources"]["Inline6CF80F9D"]["Properties"]["FunctionName"] = json!(renamed);
    });
    let replaced = world
        .cdkd(&["deploy", "-a", &app, "AppStack", "-e"])
        .success();
    assert!(
        replaced.stdout.contains(&format!("replaced by {renamed}")),
        "{}",
        replaced.stdout
    );
    let functions =
        lambda("[f['FunctionName'] for f in c('lambda').list_functions()['Functions']]");
    let functions = functions.as_array().unwrap();
    assert!(functions.contains(&json!(renamed)), "{functions:?}");
    assert!(
        !functions.contains(&json!(inline)),
        "the old function survived"
    );
    let policy = lambda(&format!(
        "__import__('json').loads(c('lambda').get_policy(FunctionName='{renamed}')['Policy'])['Statement'][0]['Principal']"
    ));
    assert_eq!(policy["Service"], "s3.amazonaws.com");
    assert_eq!(
        lambda(&format!(
            "c('lambda').get_function_url_config(FunctionName='{renamed}')['AuthType']"
        )),
        json!("AWS_IAM")
    );
    assert_eq!(
        world.resources("AppStack")["InlineAsync"]["physicalId"],
        json!(format!("{renamed}|$LATEST"))
    );

    world
        .cdkd(&["destroy", "-a", &app, "--all", "-f"])
        .success();
    let functions =
        lambda("[f['FunctionName'] for f in c('lambda').list_functions()['Functions']]");
    for name in [&inline, &asset, &renamed] {
        assert!(
            !functions.as_array().unwrap().contains(&json!(name)),
            "{name} survived the destroy"
        );
    }
    let mappings = lambda(
        "[m['UUID'] for m in c('lambda').list_event_source_mappings()['EventSourceMappings']]",
    );
    assert!(
        !mappings.as_array().unwrap().contains(&json!(mapping)),
        "the event source mapping survived"
    );
    let layers = lambda(LAYER_VERSIONS);
    assert!(
        !layers.as_array().unwrap().contains(&json!(layer)),
        "the layer version survived"
    );
}
