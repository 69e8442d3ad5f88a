//! The S3 plugin through `cdkd deploy`: the storage fixture's bucket and policy, checked in the
//! emulator's S3 API; an in-place change, a create-only change, a silent-drop reroute, destroy.

use std::process::Command;

use cdkd_tests::{cdkd_binary, workspace_root, Emulator, Run};
use serde_json::{json, Value};

struct World {
    bucket: String,
    assembly: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let world = World {
            bucket: Emulator::unique("s3plugin"),
            assembly: tempfile::tempdir().unwrap(),
        };
        let source = workspace_root().join("tests/fixtures/cdk.out/storage");
        for entry in std::fs::read_dir(&source).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                std::fs::copy(entry.path(), world.assembly.path().join(entry.file_name())).unwrap();
            }
        }
        // moto has no CloudFormation model for AWS::SQS::QueuePolicy, which the subscription
        // needs; keep the stack to what the emulator can provision.
        world.edit(|t| {
            let resources = t["Resources"].as_object_mut().unwrap();
            resources.retain(|_, r| {
                !matches!(
                    r["Type"].as_str(),
                    Some("AWS::SQS::QueuePolicy" | "AWS::SNS::Subscription")
                )
            });
        });
        world.cdkd(&["bootstrap", "--no-assets"]).success();
        world
    }

    fn cdkd(&self, args: &[&str]) -> Run {
        let mut command = Command::new(cdkd_binary());
        command
            .current_dir(workspace_root())
            .args(["--state-bucket", &self.bucket])
            .args(args)
            .env_remove("CDKD_PLUGINS");
        for (key, value) in Emulator::shared().env() {
            command.env(key, value);
        }
        command.output().unwrap().into()
    }

    fn deploy(&self) -> Run {
        let app = self.assembly.path().display().to_string();
        self.cdkd(&["deploy", "-a", &app])
    }

    fn edit(&self, change: impl FnOnce(&mut Value)) {
        let path = self.assembly.path().join("StorageStack.template.json");
        let mut template: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        change(&mut template);
        std::fs::write(&path, serde_json::to_vec_pretty(&template).unwrap()).unwrap();
    }

    fn record(&self, logical_id: &str) -> Value {
        self.cdkd(&["state", "show", "StorageStack", "--json"])
            .success()
            .json()["state"]["resources"][logical_id]
            .clone()
    }
}

fn s3(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

fn bucket_exists(name: &str) -> bool {
    s3(&format!(
        "'{name}' in [b['Name'] for b in c('s3').list_buckets()['Buckets']]"
    )) == json!(true)
}

#[test]
fn the_storage_bucket_and_policy_go_through_the_s3_plugin() {
    let world = World::new();
    let deployed = world.deploy().success();
    assert!(
        deployed
            .stdout
            .contains("Data666C94C7 (AWS::S3::Bucket): created storagestack-data666c94c7-"),
        "{}",
        deployed.stdout
    );
    let bucket = world.record("Data666C94C7");
    assert_eq!(bucket["provisionedBy"], "sdk");
    let name = bucket["physicalId"].as_str().unwrap().to_string();
    assert_eq!(
        name.len(),
        "storagestack-data666c94c7-".len() + 12,
        "{name}"
    );
    assert_eq!(
        bucket["attributes"]["Arn"],
        json!(format!("arn:aws:s3:::{name}"))
    );
    assert!(bucket_exists(&name));
    assert_eq!(
        s3(&format!(
            "c('s3').get_bucket_versioning(Bucket='{name}').get('Status')"
        )),
        json!("Enabled")
    );
    let policy = s3(&format!(
        "json.loads(c('s3').get_bucket_policy(Bucket='{name}')['Policy'])"
    ));
    assert_eq!(policy["Statement"][0]["Action"], "s3:GetObject");
    assert_eq!(world.record("DataPolicyB80589C3")["provisionedBy"], "sdk");

    // In place: tags added and versioning suspended on the same bucket.
    world.edit(|t| {
        let props = &mut t["Resources"]["Data666C94C7"]["Properties"];
        props["VersioningConfiguration"] = json!({"Status": "Suspended"});
        props["Tags"] = json!([{"Key": "team", "Value": "storage"}]);
    });
    world.deploy().success();
    assert_eq!(world.record("Data666C94C7")["physicalId"], json!(name));
    assert_eq!(
        s3(&format!(
            "c('s3').get_bucket_versioning(Bucket='{name}').get('Status')"
        )),
        json!("Suspended")
    );
    assert_eq!(
        s3(&format!(
            "c('s3').get_bucket_tagging(Bucket='{name}')['TagSet']"
        )),
        json!([{"Key": "team", "Value": "storage"}])
    );

    // Replication goes through the plugin too (versioning first, as S3 requires), and its
    // removal reaches S3.
    world.edit(|t| {
        let props = &mut t["Resources"]["Data666C94C7"]["Properties"];
        props["VersioningConfiguration"] = json!({"Status": "Enabled"});
        props["ReplicationConfiguration"] = json!({
            "Role": "arn:aws:iam::123456789012:role/replication",
            "Rules": [{"Id": "backup", "Priority": 1, "Status": "Enabled",
                       "Filter": {"Prefix": "logs/"},
                       "DeleteMarkerReplication": {"Status": "Disabled"},
                       "Destination": {"Bucket": "arn:aws:s3:::cdkd-replica", "StorageClass": "STANDARD_IA"}}]
        });
    });
    world.deploy().success();
    assert_eq!(world.record("Data666C94C7")["provisionedBy"], "sdk");
    let rule = s3(&format!(
        "(lambda r: [r['Role'], r['Rules'][0]['ID'], r['Rules'][0]['Destination']])(c('s3').get_bucket_replication(Bucket='{name}')['ReplicationConfiguration'])"
    ));
    assert_eq!(
        rule,
        json!([
            "arn:aws:iam::123456789012:role/replication",
            "backup",
            {"Bucket": "arn:aws:s3:::cdkd-replica", "StorageClass": "STANDARD_IA"}
        ])
    );
    world.edit(|t| {
        let props = t["Resources"]["Data666C94C7"]["Properties"]
            .as_object_mut()
            .unwrap();
        props.remove("ReplicationConfiguration");
    });
    world.deploy().success();
    let replication = s3(&format!(
        "(lambda g: (exec(\"def f(s3, b):\\n try:\\n  s3.get_bucket_replication(Bucket=b)\\n  return 'present'\\n except Exception as e:\\n  return e.response['Error']['Code']\", g), g['f'](c('s3'), '{name}'))[1])({{}})"
    ));
    assert_eq!(replication, json!("ReplicationConfigurationNotFoundError"));

    // Inventory reports are per-id configurations, put one by one.
    world.edit(|t| {
        t["Resources"]["Data666C94C7"]["Properties"]["InventoryConfigurations"] = json!([{
            "Id": "weekly", "Enabled": true, "IncludedObjectVersions": "Current",
            "ScheduleFrequency": "Weekly",
            "Destination": {"BucketArn": "arn:aws:s3:::cdkd-reports", "Format": "CSV"}
        }]);
    });
    world.deploy().success();
    assert_eq!(world.record("Data666C94C7")["provisionedBy"], "sdk");
    let inventory = s3(&format!(
        "(lambda i: [i['Id'], i['IsEnabled'], i['Schedule']['Frequency']])(c('s3').get_bucket_inventory_configuration(Bucket='{name}', Id='weekly')['InventoryConfiguration'])"
    ));
    assert_eq!(inventory, json!(["weekly", true, "Weekly"]));

    // A template property the plugin does not handle sends the bucket to Cloud Control, with a
    // warning naming it (checked on a diff-free deploy of a new logical id).
    world.edit(|t| {
        t["Resources"]["Extra"] =
            json!({"Type": "AWS::S3::Bucket", "Properties": {"AbacStatus": "Enabled"}});
    });
    let rerouted = world.deploy().success();
    assert!(
        rerouted
            .stderr
            .contains("Extra (AWS::S3::Bucket) uses AbacStatus which plugin s3 does not handle"),
        "{}",
        rerouted.stderr
    );
    assert_eq!(world.record("Extra")["provisionedBy"], "cc-api");

    // Create-only: a new name replaces the bucket (the policy follows it).
    let renamed = Emulator::unique("renamed-data");
    world.edit(|t| t["Resources"]["Data666C94C7"]["Properties"]["BucketName"] = json!(renamed));
    let replaced = world.deploy().success();
    assert!(
        replaced.stdout.contains(&format!("replaced by {renamed}")),
        "{}",
        replaced.stdout
    );
    assert!(bucket_exists(&renamed) && !bucket_exists(&name));
    assert_eq!(
        world.record("DataPolicyB80589C3")["physicalId"],
        json!(renamed)
    );

    let app = world.assembly.path().display().to_string();
    let destroyed = world.cdkd(&["destroy", "-a", &app, "-f"]).success();
    assert!(!bucket_exists(&renamed), "{}", destroyed.stdout);
    // The table has DeletionPolicy Retain: kept in AWS, forgotten by cdkd.
    assert!(
        destroyed
            .stdout
            .contains("Items5C12978B (AWS::DynamoDB::Table): kept in AWS (DeletionPolicy)"),
        "{}",
        destroyed.stdout
    );
}

#[test]
fn a_non_empty_bucket_is_refused_unless_cdk_marked_it_for_emptying() {
    let world = World::new();
    world.deploy().success();
    let name = world.record("Data666C94C7")["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    s3(&format!(
        "c('s3').put_object(Bucket='{name}', Key='keep.txt', Body=b'x')['ETag']"
    ));
    let app = world.assembly.path().display().to_string();
    let refused = world.cdkd(&["destroy", "-a", &app, "-f"]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains(&format!(
            "bucket {name} is not empty, and CloudFormation (like cdkd) deletes only empty buckets"
        )),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("autoDeleteObjects"),
        "{}",
        refused.stderr
    );
    assert!(bucket_exists(&name));

    // CDK's autoDeleteObjects tag: objects written after its handler emptied the bucket (access
    // logs) are deleted again, versions included, and the delete goes through.
    s3(&format!(
        "c('s3').put_bucket_tagging(Bucket='{name}', Tagging={{'TagSet': [{{'Key': 'aws-cdk:auto-delete-objects', 'Value': 'true'}}]}}) and None"
    ));
    s3(&format!(
        "[c('s3').put_object(Bucket='{name}', Key=f'logs/{{i}}', Body=b'x')['ETag'] for i in range(3)]"
    ));
    world.cdkd(&["destroy", "-a", &app, "-f"]).success();
    assert!(
        !bucket_exists(&name),
        "the tagged bucket survived its destroy"
    );
}
