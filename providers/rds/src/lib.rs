//! cdkd provider plugin: the final snapshot `DeletionPolicy: Snapshot` (and
//! `UpdateReplacePolicy: Snapshot`) asks for before an RDS DB instance or cluster is deleted,
//! and before a Neptune or DocumentDB cluster is (the RDS API serves those too).
//!
//! The resources themselves stay on Cloud Control: each type here declares no handled
//! property, only the `final_snapshot` operation, so the host routes their creates, updates and
//! deletes to Cloud Control and asks this plugin for the snapshot just before a delete.

use std::time::Duration;

use cdkd_aws_common::{aws_error, poll_paced, OperationOnly, Pacing};
use cdkd_provider_api::protocol::{operation, FinalSnapshotRequest, FinalSnapshotResult};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

cdkd_provider_api::export_plugin!(description: "Final snapshots (DeletionPolicy: Snapshot) of AWS::RDS::DBInstance, AWS::RDS::DBCluster, AWS::Neptune::DBCluster and AWS::DocDB::DBCluster; the resources stay on Cloud Control");

cdkd_provider_api::register_provider!(cdkd_aws_common::Answers<DbInstance>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Answers<RdsCluster>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Answers<NeptuneCluster>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Answers<DocDbCluster>);

/// How long a snapshot may take to become available when the host sets no resource timeout.
const DEFAULT_WAIT: Duration = Duration::from_secs(2 * 60 * 60);

/// What is snapshotted: one instance, or one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Instance,
    Cluster,
}

macro_rules! snapshot_only_type {
    ($name:ident, $type_name:literal, $target:expr) => {
        #[doc = concat!("`", $type_name, "`: final snapshots only.")]
        #[derive(Debug, Default)]
        pub struct $name;

        #[cdkd_provider_api::async_trait]
        impl OperationOnly for $name {
            type Request = FinalSnapshotRequest;
            type Answer = FinalSnapshotResult;
            const OPERATION: &'static str = operation::FINAL_SNAPSHOT;

            fn type_name(&self) -> &'static str {
                $type_name
            }

            fn not_provisioned(&self) -> String {
                format!(
                    "the rds plugin only takes final snapshots of {}; its resources are provisioned through Cloud Control",
                    $type_name
                )
            }

            async fn answer(
                &self,
                ctx: &PluginContext,
                request: FinalSnapshotRequest,
            ) -> Result<FinalSnapshotResult, ProviderError> {
                final_snapshot(ctx, $target, $type_name, &request).await
            }
        }
    };
}

snapshot_only_type!(DbInstance, "AWS::RDS::DBInstance", Target::Instance);
snapshot_only_type!(RdsCluster, "AWS::RDS::DBCluster", Target::Cluster);
snapshot_only_type!(NeptuneCluster, "AWS::Neptune::DBCluster", Target::Cluster);
snapshot_only_type!(DocDbCluster, "AWS::DocDB::DBCluster", Target::Cluster);

async fn client(ctx: &PluginContext, region: &str) -> Result<aws_sdk_rds::Client, ProviderError> {
    let config = aws_sdk_rds::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .region(aws_sdk_rds::config::Region::new(region.to_string()))
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-rds"))
        .build();
    Ok(aws_sdk_rds::Client::from_conf(config))
}

/// Takes the snapshot, or finds the one an earlier attempt took under the same name, and
/// waits until it is available: the host deletes the resource right after.
async fn final_snapshot(
    ctx: &PluginContext,
    target: Target,
    type_name: &str,
    request: &FinalSnapshotRequest,
) -> Result<FinalSnapshotResult, ProviderError> {
    let what = format!(
        "{} ({type_name} {})",
        request.logical_id, request.physical_id
    );
    if target == Target::Instance && request.properties.contains_key("DBClusterIdentifier") {
        return Ok(FinalSnapshotResult {
            snapshot_id: None,
            note: Some(
                "an Aurora instance; its cluster's snapshot holds the data, as in CloudFormation"
                    .into(),
            ),
        });
    }
    let rds = client(ctx, &request.region).await?;
    let id = &request.snapshot_id;
    let created = match target {
        Target::Instance => rds
            .create_db_snapshot()
            .db_instance_identifier(&request.physical_id)
            .db_snapshot_identifier(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("creating the final snapshot {id} of {what}"), e)),
        Target::Cluster => rds
            .create_db_cluster_snapshot()
            .db_cluster_identifier(&request.physical_id)
            .db_cluster_snapshot_identifier(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("creating the final snapshot {id} of {what}"), e)),
    };
    match created {
        Ok(()) => {}
        // A retry meets the earlier attempt's snapshot: the name is this delete's own.
        Err(err) if err.kind == ErrorKind::ALREADY_EXISTS => {}
        Err(err) => return Err(err),
    }
    let patience = ctx.resource_timeout().unwrap_or(DEFAULT_WAIT);
    // Capped at 15 s: an RDS snapshot takes minutes, so 15 s is a small part of the wait, and
    // RDS's describe calls are rate-limited harder than most.
    let available = poll_paced(
        Pacing::capped(Duration::from_secs(15)),
        patience,
        || async {
            let status = match target {
                Target::Instance => rds
                    .describe_db_snapshots()
                    .db_snapshot_identifier(id)
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("reading the final snapshot {id}"), e))?
                    .db_snapshots()
                    .first()
                    .and_then(|s| s.status().map(str::to_string)),
                Target::Cluster => rds
                    .describe_db_cluster_snapshots()
                    .db_cluster_snapshot_identifier(id)
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("reading the final snapshot {id}"), e))?
                    .db_cluster_snapshots()
                    .first()
                    .and_then(|s| s.status().map(str::to_string)),
            };
            match status.as_deref() {
                Some("available") => Ok(Some(())),
                Some(failed @ ("failed" | "incompatible-restore" | "deleting")) => {
                    Err(ProviderError::other(format!(
                    "the final snapshot {id} of {what} is {failed}; the resource was not deleted"
                )))
                }
                _ => Ok(None),
            }
        },
    )
    .await?;
    match available {
        Some(()) => Ok(FinalSnapshotResult {
            snapshot_id: Some(id.clone()),
            note: None,
        }),
        None => Err(ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "the final snapshot {id} of {what} was not available in time; the resource was not deleted"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_aws_common::Answers;
    use cdkd_provider_api::ResourceProvider;

    #[test]
    fn every_type_only_answers_final_snapshots() {
        for schema in [
            Answers(DbInstance).schema(),
            Answers(RdsCluster).schema(),
            Answers(NeptuneCluster).schema(),
            Answers(DocDbCluster).schema(),
        ] {
            assert!(schema.handled_properties.is_empty(), "{}", schema.type_name);
            assert_eq!(schema.operations, [operation::FINAL_SNAPSHOT]);
        }
    }
}
