//! `AWS::EC2::Volume`: final snapshots only (`DeletionPolicy: Snapshot`). The volume itself
//! stays on Cloud Control; the type declares no handled property.

use std::time::Duration;

use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use cdkd_aws_common::{aws_error, poll_paced, OperationOnly, Pacing};
use cdkd_provider_api::protocol::{operation, FinalSnapshotRequest, FinalSnapshotResult};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

use crate::{filter, regional_client};

const VOLUME: &str = "AWS::EC2::Volume";

/// How long a snapshot may take to complete when the host sets no resource timeout.
const DEFAULT_WAIT: Duration = Duration::from_secs(2 * 60 * 60);

/// `AWS::EC2::Volume`: final snapshots only.
#[derive(Debug, Default)]
pub struct Volume;

#[cdkd_provider_api::async_trait]
impl OperationOnly for Volume {
    type Request = FinalSnapshotRequest;
    type Answer = FinalSnapshotResult;
    const OPERATION: &'static str = operation::FINAL_SNAPSHOT;

    fn type_name(&self) -> &'static str {
        VOLUME
    }

    fn not_provisioned(&self) -> String {
        format!("the ec2 plugin only takes final snapshots of {VOLUME}; volumes are provisioned through Cloud Control")
    }

    async fn answer(
        &self,
        ctx: &PluginContext,
        request: FinalSnapshotRequest,
    ) -> Result<FinalSnapshotResult, ProviderError> {
        final_snapshot(ctx, &request).await
    }
}

/// EC2 names snapshots itself: the host's name goes into the `Name` tag, which also finds the
/// snapshot an earlier attempt of this delete took.
async fn final_snapshot(
    ctx: &PluginContext,
    request: &FinalSnapshotRequest,
) -> Result<FinalSnapshotResult, ProviderError> {
    let ec2 = regional_client(ctx, &request.region).await?;
    let volume = &request.physical_id;
    let what = format!("{} ({VOLUME} {volume})", request.logical_id);
    let name = &request.snapshot_id;
    let earlier = ec2
        .describe_snapshots()
        .owner_ids("self")
        .filters(filter("volume-id", volume))
        .filters(filter("tag:Name", name))
        .send()
        .await
        .map_err(|e| {
            aws_error(
                &format!("looking for the final snapshot {name} of {what}"),
                e,
            )
        })?
        .snapshots()
        .first()
        .and_then(|s| s.snapshot_id().map(str::to_string));
    let snapshot_id = match earlier {
        Some(id) => id,
        None => ec2
            .create_snapshot()
            .volume_id(volume)
            .description(format!("cdkd final snapshot of {}", request.logical_id))
            .tag_specifications(
                TagSpecification::builder()
                    .resource_type(ResourceType::Snapshot)
                    .tags(Tag::builder().key("Name").value(name).build())
                    .build(),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("creating the final snapshot of {what}"), e))?
            .snapshot_id()
            .map(str::to_string)
            .ok_or_else(|| {
                ProviderError::other(format!("{what}: CreateSnapshot returned no id"))
            })?,
    };
    let patience = ctx.resource_timeout().unwrap_or(DEFAULT_WAIT);
    // Capped at 15 s: a snapshot takes minutes (hours for a large volume), so a pause of up to
    // 15 s is a small part of the wait and keeps a long one from asking every 5 s.
    let completed = poll_paced(Pacing::capped(Duration::from_secs(15)), patience, || async {
        let answer = ec2
            .describe_snapshots()
            .snapshot_ids(&snapshot_id)
            .send()
            .await
            .map_err(|e| aws_error(&format!("reading the final snapshot {snapshot_id}"), e))?;
        let state = answer
            .snapshots()
            .first()
            .and_then(|s| s.state().map(|s| s.as_str().to_string()));
        match state.as_deref() {
            Some("completed") => Ok(Some(())),
            Some(failed @ ("error" | "recoverable")) => Err(ProviderError::other(format!(
                "the final snapshot {snapshot_id} of {what} is in state {failed}; the volume was not deleted"
            ))),
            _ => Ok(None),
        }
    })
    .await?;
    match completed {
        Some(()) => Ok(FinalSnapshotResult {
            snapshot_id: Some(snapshot_id),
            note: None,
        }),
        None => Err(ProviderError::new(
            ErrorKind::TIMEOUT,
            format!("the final snapshot {snapshot_id} of {what} did not complete in time; the volume was not deleted"),
        )),
    }
}
