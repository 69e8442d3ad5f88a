//! `cdkd publish-assets` and `cdkd gc`: assets published without a deploy, then collected only
//! when no record references them and they are past the age guard; response placeholders of a
//! run that may still be in flight are kept.

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::Emulator;
use serde_json::json;

const ASSET: &str = "09d099f5e56edd144d75c0c41d8cbe701d466d4f9ad51d167e068f2437569926.zip";

fn objects(bucket: &str) -> serde_json::Value {
    Emulator::shared().boto(&format!(
        "sorted(o['Key'] for o in c('s3').list_objects_v2(Bucket='{bucket}').get('Contents', []))"
    ))
}

#[test]
fn gc_deletes_only_unreferenced_assets_past_the_age_guard() {
    let world = AppWorld::new("gc", |_| {});
    let app = world.assembly.path().display().to_string();

    // Published without a deploy: no record exists yet.
    let published = world
        .cdkd(&["publish-assets", "-a", &app, "--all"])
        .success();
    assert!(
        published.stdout.contains("assets published"),
        "{}",
        published.stdout
    );
    assert_eq!(objects(&world.assets), json!([ASSET]));
    assert!(world
        .cdkd(&["state", "list", "--json"])
        .success()
        .stdout
        .contains("[]"));

    // Unreferenced but young: the default 30-day guard keeps it (a deploy may be about to
    // record it).
    let young = world.cdkd(&["gc", "--dry-run"]).success();
    assert!(
        young
            .stdout
            .contains("would delete 0 unreferenced object(s)")
            && young.stdout.contains("1 younger than 30 day(s)"),
        "{}",
        young.stdout
    );

    world.cdkd(&["deploy", "-a", &app, "--all"]).success();
    Emulator::shared().boto(&format!(
        "[c('s3').put_object(Bucket='{assets}', Key='stale.zip', Body=b'old'), \
          c('s3').put_object(Bucket='{state}', Key='custom-resource-responses/in-flight.json', Body=b'')] and None",
        assets = world.assets,
        state = world.bucket
    ));
    let dry = world
        .cdkd(&["gc", "--older-than", "0", "--dry-run"])
        .success();
    assert!(
        dry.stdout.contains("would delete 1 unreferenced object(s)")
            && dry
                .stdout
                .contains(&format!("s3://{}/stale.zip", world.assets))
            && dry.stdout.contains("kept 1 referenced"),
        "{}",
        dry.stdout
    );
    assert_eq!(
        objects(&world.assets),
        json!([ASSET, "stale.zip"]),
        "a dry run deletes nothing"
    );

    let collected = world.cdkd(&["gc", "--older-than", "0"]).success();
    assert!(
        collected
            .stdout
            .contains("deleted 1 unreferenced object(s)"),
        "{}",
        collected.stdout
    );
    assert_eq!(objects(&world.assets), json!([ASSET]));
    // A fresh placeholder may belong to a run in flight: kept.
    assert!(
        collected
            .stdout
            .contains("deleted 0 custom-resource response placeholder(s)"),
        "{}",
        collected.stdout
    );
    assert_eq!(
        objects(&world.bucket)
            .as_array()
            .unwrap()
            .iter()
            .filter(|k| k
                .as_str()
                .unwrap()
                .starts_with("custom-resource-responses/"))
            .count(),
        1
    );

    // A stack kept under another state prefix publishes to the same asset bucket: its record
    // keeps its asset.
    Emulator::shared().boto(&format!(
        "[c('s3').put_object(Bucket='{assets}', Key='team-b.zip', Body=b'b'), \
          c('s3').put_object(Bucket='{state}', Key='team-b/Service/us-east-1/state.json', \
            Body=json.dumps({{'version': 9, 'stackName': 'Service', 'region': 'us-east-1', \
              'resources': {{'Fn': {{'resourceType': 'AWS::Lambda::Function', 'physicalId': 'f', \
                'properties': {{'Code': {{'S3Key': 'team-b.zip'}}}}}}}}}}).encode())] and None",
        assets = world.assets,
        state = world.bucket
    ));
    let kept = world.cdkd(&["gc", "--older-than", "0"]).success();
    assert!(
        kept.stdout.contains("deleted 0 unreferenced object(s)"),
        "{}",
        kept.stdout
    );
    assert_eq!(objects(&world.assets), json!([ASSET, "team-b.zip"]));
    world
        .cdkd(&["destroy", "-a", &app, "--all", "--force"])
        .success();
}

/// `deploy --skip-assets` (issue 46) publishes nothing: before `publish-assets` the asset bucket
/// stays empty and the function's code is missing, after it the deploy uses what is there.
#[test]
fn deploy_skip_assets_uses_the_published_assets_and_publishes_none() {
    let world = AppWorld::new("skipassets", |_| {});
    let app = world.assembly.path().display().to_string();
    let early = world.cdkd(&["deploy", "-a", &app, "--all", "--skip-assets"]);
    assert_eq!(objects(&world.assets), json!([]), "nothing was published");
    assert_eq!(early.code, Some(1), "{}\n{}", early.stdout, early.stderr);

    world
        .cdkd(&["publish-assets", "-a", &app, "--all"])
        .success();
    assert_eq!(objects(&world.assets), json!([ASSET]));
    let deployed = world
        .cdkd(&["deploy", "-a", &app, "--all", "--skip-assets"])
        .success();
    assert!(deployed.stdout.contains("created"), "{}", deployed.stdout);
    assert_eq!(objects(&world.assets), json!([ASSET]));
    world
        .cdkd(&["destroy", "-a", &app, "--all", "-f"])
        .success();
}
