//! A table's settings that DynamoDB changes by calls of their own rather than UpdateTable:
//! time to live, point-in-time recovery, contributor insights, Kinesis streaming destinations
//! and resource policies. Each is retried while the table is busy with another change.

use aws_sdk_dynamodb::types::{
    ApproximateCreationDateTimePrecision, ContributorInsightsAction, ContributorInsightsMode,
    DestinationStatus, EnableKinesisStreamingConfiguration, PointInTimeRecoverySpecification,
    TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use cdkd_aws_common::{aws_error, deleted_unless_failed};
use cdkd_provider_api::{ErrorKind, ProviderError};

use crate::{while_busy, with_dynamodb_kind};

/// Turns time to live on or off for `attribute`.
pub(crate) async fn set_ttl(
    ddb: &Client,
    what: &str,
    name: &str,
    attribute: &str,
    enabled: bool,
) -> Result<(), ProviderError> {
    let spec = TimeToLiveSpecification::builder()
        .enabled(enabled)
        .attribute_name(attribute)
        .build()
        .map_err(|e| ProviderError::validation(format!("{what}: TimeToLiveSpecification: {e}")))?;
    let spec = &spec;
    while_busy(what, || async move {
        ddb.update_time_to_live()
            .table_name(name)
            .time_to_live_specification(spec.clone())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| with_dynamodb_kind(aws_error(&format!("{what}: UpdateTimeToLive"), e)))
    })
    .await
}

/// Sets point-in-time recovery; retried while DynamoDB is still preparing a new table's backups.
pub(crate) async fn set_recovery(
    ddb: &Client,
    what: &str,
    name: &str,
    (enabled, days): (bool, Option<i64>),
) -> Result<(), ProviderError> {
    let spec = PointInTimeRecoverySpecification::builder()
        .point_in_time_recovery_enabled(enabled)
        .set_recovery_period_in_days(days.map(|d| d as i32))
        .build()
        .map_err(|e| {
            ProviderError::validation(format!("{what}: PointInTimeRecoverySpecification: {e}"))
        })?;
    let spec = &spec;
    while_busy(what, || async move {
        ddb.update_continuous_backups()
            .table_name(name)
            .point_in_time_recovery_specification(spec.clone())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                with_dynamodb_kind(aws_error(&format!("{what}: UpdateContinuousBackups"), e))
            })
    })
    .await
}

/// Turns contributor insights on (with its mode) or off, for the table or one index.
pub(crate) async fn set_insights(
    ddb: &Client,
    what: &str,
    name: &str,
    index: Option<&str>,
    (enabled, mode): (bool, Option<String>),
) -> Result<(), ProviderError> {
    let action = if enabled {
        ContributorInsightsAction::Enable
    } else {
        ContributorInsightsAction::Disable
    };
    let (action, mode) = (&action, mode.as_deref());
    while_busy(what, || async move {
        ddb.update_contributor_insights()
            .table_name(name)
            .set_index_name(index.map(ToString::to_string))
            .contributor_insights_action(action.clone())
            .set_contributor_insights_mode(
                mode.filter(|_| enabled).map(ContributorInsightsMode::from),
            )
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                with_dynamodb_kind(aws_error(&format!("{what}: UpdateContributorInsights"), e))
            })
    })
    .await
}

/// Starts streaming changes to a Kinesis data stream.
pub(crate) async fn enable_kinesis(
    ddb: &Client,
    what: &str,
    name: &str,
    (stream, precision): &(String, Option<String>),
) -> Result<(), ProviderError> {
    let config = precision.as_deref().map(|p| {
        EnableKinesisStreamingConfiguration::builder()
            .approximate_creation_date_time_precision(ApproximateCreationDateTimePrecision::from(p))
            .build()
    });
    let config = &config;
    while_busy(what, || async move {
        ddb.enable_kinesis_streaming_destination()
            .table_name(name)
            .stream_arn(stream)
            .set_enable_kinesis_streaming_configuration(config.clone())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                with_dynamodb_kind(aws_error(
                    &format!("{what}: EnableKinesisStreamingDestination {stream}"),
                    e,
                ))
            })
    })
    .await
}

/// Stops streaming to `stream` and waits until DynamoDB has let go of it (another destination
/// cannot start meanwhile).
pub(crate) async fn disable_kinesis(
    ddb: &Client,
    what: &str,
    name: &str,
    stream: &str,
) -> Result<(), ProviderError> {
    let stopped = while_busy(what, || async move {
        ddb.disable_kinesis_streaming_destination()
            .table_name(name)
            .stream_arn(stream)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                with_dynamodb_kind(aws_error(
                    &format!("{what}: DisableKinesisStreamingDestination {stream}"),
                    e,
                ))
            })
    })
    .await;
    deleted_unless_failed(stopped)?;
    let stopped = cdkd_aws_common::poll(crate::PATIENCE, || async {
        let answer = ddb
            .describe_kinesis_streaming_destination()
            .table_name(name)
            .send()
            .await
            .map_err(|e| {
                with_dynamodb_kind(aws_error(
                    &format!("{what}: DescribeKinesisStreamingDestination"),
                    e,
                ))
            })?;
        let disabling = answer.kinesis_data_stream_destinations().iter().any(|d| {
            d.stream_arn() == Some(stream)
                && d.destination_status() == Some(&DestinationStatus::Disabling)
        });
        Ok((!disabling).then_some(()))
    })
    .await?;
    stopped.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!("{what}: Kinesis destination {stream} was still disabling after 10 minutes"),
        )
    })
}

/// Puts a resource policy on the table or stream `arn`, or removes it (`None`; already
/// without one is fine).
pub(crate) async fn set_policy(
    ddb: &Client,
    what: &str,
    arn: &str,
    policy: Option<&str>,
) -> Result<(), ProviderError> {
    match policy {
        Some(policy) => {
            while_busy(what, || async move {
                ddb.put_resource_policy()
                    .resource_arn(arn)
                    .policy(policy)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        with_dynamodb_kind(aws_error(
                            &format!("{what}: PutResourcePolicy {arn}"),
                            e,
                        ))
                    })
            })
            .await
        }
        None => {
            let removed = while_busy(what, || async move {
                ddb.delete_resource_policy()
                    .resource_arn(arn)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| {
                        with_dynamodb_kind(aws_error(
                            &format!("{what}: DeleteResourcePolicy {arn}"),
                            e,
                        ))
                    })
            })
            .await;
            deleted_unless_failed(removed).map(|_| ())
        }
    }
}
