//! `DeletionPolicy: Snapshot` in a real CDK app (an RDS instance and cluster and an EBS volume,
//! all provisioned through Cloud Control): a final snapshot is taken before each delete, on
//! removal from the template and on destroy; `destroy --skip-final-snapshot` takes none.

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::Emulator;
use serde_json::{json, Value};

fn boto(expression: &str) -> Value {
    Emulator::shared().boto(expression)
}

/// The final snapshots cdkd took of this fixture's resources, by kind.
fn snapshots() -> Value {
    boto(
        "{'db': sorted(s['DBSnapshotIdentifier'] for s in c('rds').describe_db_snapshots()['DBSnapshots'] if s['DBSnapshotIdentifier'].startswith('snapshotstack-database-final-')), \
          'cluster': sorted(s['DBClusterSnapshotIdentifier'] for s in c('rds').describe_db_cluster_snapshots()['DBClusterSnapshots'] if s['DBClusterSnapshotIdentifier'].startswith('snapshotstack-cluster-final-')), \
          'volume': sorted(t['Value'] for s in c('ec2').describe_snapshots(OwnerIds=['self'], Filters=[{'Name': 'tag-key', 'Values': ['Name']}])['Snapshots'] for t in s.get('Tags', []) if t['Key'] == 'Name' and t['Value'].startswith('snapshotstack-volume-final-'))}",
    )
}

fn count(kind: &str) -> usize {
    snapshots()[kind].as_array().unwrap().len()
}

fn live() -> Value {
    boto(
        "{'db': [d['DBInstanceIdentifier'] for d in c('rds').describe_db_instances()['DBInstances'] if d['DBInstanceIdentifier'] == 'cdkd-snapshot-db'], \
          'cluster': [d['DBClusterIdentifier'] for d in c('rds').describe_db_clusters()['DBClusters'] if d['DBClusterIdentifier'] == 'cdkd-snapshot-cluster']}",
    )
}

fn volume_exists(id: &str) -> bool {
    boto(&format!(
        "any(v['VolumeId'] == '{id}' for v in c('ec2').describe_volumes()['Volumes'])"
    )) == json!(true)
}

#[test]
fn snapshot_policies_take_a_final_snapshot_before_every_delete() {
    let world = AppWorld::of("snapshots", "SnapshotStack", "snapshots", |_| {});
    let app = world.assembly.path().display().to_string();
    let before = snapshots();
    world.cdkd(&["deploy", "-a", &app]).success();
    assert_eq!(
        live(),
        json!({"db": ["cdkd-snapshot-db"], "cluster": ["cdkd-snapshot-cluster"]})
    );
    let resources = world.resources("SnapshotStack");
    assert_eq!(resources["Database"]["provisionedBy"], "cc-api");
    assert_eq!(resources["Database"]["deletionPolicy"], "Snapshot");
    let volume = resources["Volume"]["physicalId"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(volume_exists(&volume));

    // Removed from the template: snapshot, then delete.
    world.edit(|template| {
        template["Resources"]
            .as_object_mut()
            .unwrap()
            .remove("Volume");
    });
    let removed = world.cdkd(&["deploy", "-a", &app]).success();
    assert!(
        removed.stdout.contains("deleted (final snapshot snap-"),
        "{}",
        removed.stdout
    );
    assert!(!volume_exists(&volume));
    assert_eq!(
        count("volume"),
        before["volume"].as_array().unwrap().len() + 1
    );

    // Destroyed: each asks for its snapshot.
    let destroyed = world.cdkd(&["destroy", "-a", &app, "--force"]).success();
    assert!(
        destroyed
            .stdout
            .contains("deleted (final snapshot snapshotstack-database-final-"),
        "{}",
        destroyed.stdout
    );
    assert_eq!(live(), json!({"db": [], "cluster": []}));
    let after = snapshots();
    assert_eq!(
        after["db"].as_array().unwrap().len(),
        before["db"].as_array().unwrap().len() + 1
    );
    assert_eq!(
        after["cluster"].as_array().unwrap().len(),
        before["cluster"].as_array().unwrap().len() + 1
    );

    // --skip-final-snapshot opts out.
    world.cdkd(&["deploy", "-a", &app]).success();
    world
        .cdkd(&["destroy", "-a", &app, "--force", "--skip-final-snapshot"])
        .success();
    assert_eq!(live(), json!({"db": [], "cluster": []}));
    assert_eq!(snapshots(), after, "no snapshot was taken");

    // So does `state destroy`, which reads the policies from the record.
    world.cdkd(&["deploy", "-a", &app]).success();
    world
        .cdkd(&[
            "state",
            "destroy",
            "SnapshotStack",
            "-f",
            "--skip-final-snapshot",
        ])
        .success();
    assert_eq!(live(), json!({"db": [], "cluster": []}));
    assert_eq!(snapshots(), after, "state destroy took a snapshot");
}
