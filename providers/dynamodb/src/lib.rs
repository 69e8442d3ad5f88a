//! cdkd's DynamoDB provider plugin: `AWS::DynamoDB::Table` and `AWS::DynamoDB::GlobalTable`
//! through direct DynamoDB calls. A table is addressed by its name in every call but tagging and
//! resource policies, which take its ARN. DynamoDB is asynchronous: a table (each of its global
//! secondary indexes, each replica of a global table) goes through CREATING / UPDATING before it
//! is ACTIVE, and most calls are refused meanwhile, so the waiting lives here once.

mod global_table;
mod indexes;
mod input;
mod read;
mod settings;
mod table;

cdkd_provider_api::export_plugin!(
    description: "AWS::DynamoDB::Table and AWS::DynamoDB::GlobalTable through the DynamoDB API"
);

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<table::Table>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<global_table::GlobalTable>);

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{IndexStatus, ReplicaStatus, TableDescription, TableStatus};
use cdkd_aws_common::{aws_error, retry_while, Pacing};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};

/// The shortest pause before a busy table's call is sent again (a write, so not faster).
const FIRST_PAUSE: Duration = Duration::from_millis(200);
/// How long a wait lasts before it gives up.
const PATIENCE: Duration = Duration::from_secs(600);
/// How long a wait for a global table's replicas lasts: a new replica copies every item first.
const REPLICA_PATIENCE: Duration = Duration::from_secs(3600);

/// A DynamoDB client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_dynamodb::Client, ProviderError> {
    regional_client(ctx, ctx.region()).await
}

/// A DynamoDB client for the host's endpoint and credentials in `region` (a global table's
/// replicas keep their own settings, changed in their own region).
pub(crate) async fn regional_client(
    ctx: &PluginContext,
    region: &str,
) -> Result<aws_sdk_dynamodb::Client, ProviderError> {
    let config = aws_sdk_dynamodb::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .region(aws_sdk_dynamodb::config::Region::new(region.to_string()))
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-dynamodb"))
        .build();
    Ok(aws_sdk_dynamodb::Client::from_conf(config))
}

/// The kind DynamoDB's own error codes stand for, where the shared table reads them otherwise:
/// its "not found" codes end in `Exception`, and a missing policy is a 400.
pub(crate) fn dynamodb_kind(code: &str) -> Option<ErrorKind> {
    match code {
        "TableNotFoundException" | "PolicyNotFoundException" | "IndexNotFoundException" => {
            Some(ErrorKind::NOT_FOUND)
        }
        "TableAlreadyExistsException" | "GlobalTableAlreadyExistsException" => {
            Some(ErrorKind::ALREADY_EXISTS)
        }
        "TableInUseException" | "ContinuousBackupsUnavailableException" => {
            Some(ErrorKind::CONFLICT)
        }
        _ => None,
    }
}

/// `err` (from [`aws_error`]) with the kind its DynamoDB code stands for.
pub(crate) fn with_dynamodb_kind(mut err: ProviderError) -> ProviderError {
    if let Some(kind) = err.aws_code().and_then(dynamodb_kind) {
        err.kind = kind;
    }
    err
}

/// Whether a table (and, with `indexes`, every global secondary index) is ACTIVE.
pub(crate) fn is_active(table: &TableDescription, indexes: bool) -> bool {
    table.table_status() == Some(&TableStatus::Active)
        && (!indexes
            || table
                .global_secondary_indexes()
                .iter()
                .all(|i| i.index_status() == Some(&IndexStatus::Active)))
}

/// Whether a global table is ACTIVE with every global secondary index and every replica. A
/// replica DynamoDB gave up on (its creation failed, its key is out of reach, ...) is never
/// ACTIVE: with `strict` it is an error, else it counts as settled (a teardown removes it).
pub(crate) fn replicas_ready(
    what: &str,
    table: &TableDescription,
    strict: bool,
) -> Result<bool, ProviderError> {
    let mut ready = is_active(table, true);
    for replica in table.replicas() {
        match replica.replica_status() {
            Some(ReplicaStatus::Active) => {}
            Some(
                status @ (ReplicaStatus::CreationFailed
                | ReplicaStatus::InaccessibleEncryptionCredentials
                | ReplicaStatus::RegionDisabled
                | ReplicaStatus::ReplicationNotAuthorized),
            ) => {
                if strict {
                    return Err(ProviderError::new(
                        ErrorKind::OTHER,
                        format!(
                            "{what}: the replica in {} is {}{}",
                            replica.region_name().unwrap_or_default(),
                            status.as_str(),
                            replica
                                .replica_status_description()
                                .map(|d| format!(": {d}"))
                                .unwrap_or_default()
                        ),
                    ));
                }
            }
            _ => ready = false,
        }
    }
    Ok(ready)
}

/// The live description of `name`; `None` when there is no such table.
pub(crate) async fn describe(
    ddb: &aws_sdk_dynamodb::Client,
    what: &str,
    name: &str,
) -> Result<Option<TableDescription>, ProviderError> {
    match ddb.describe_table().table_name(name).send().await {
        Ok(answer) => Ok(answer.table().cloned()),
        Err(err) => {
            match with_dynamodb_kind(aws_error(&format!("{what}: DescribeTable {name}"), err)) {
                err if err.kind == ErrorKind::NOT_FOUND => Ok(None),
                err => Err(err),
            }
        }
    }
}

/// Waits until the table is ACTIVE (and, with `indexes`, every global secondary index too),
/// polling paced by the time waited ([`Pacing::DEFAULT`]) for up to 10 minutes; answers the
/// last description.
pub(crate) async fn wait_active(
    ddb: &aws_sdk_dynamodb::Client,
    what: &str,
    name: &str,
    indexes: bool,
) -> Result<TableDescription, ProviderError> {
    wait_until(ddb, what, name, PATIENCE, |table| {
        Ok(is_active(table, indexes))
    })
    .await
}

/// Waits until a global table, its indexes and every replica are ACTIVE ([`replicas_ready`]),
/// for up to an hour; answers the last description.
pub(crate) async fn wait_replicas(
    ddb: &aws_sdk_dynamodb::Client,
    what: &str,
    name: &str,
    strict: bool,
) -> Result<TableDescription, ProviderError> {
    wait_until(ddb, what, name, REPLICA_PATIENCE, |table| {
        replicas_ready(what, table, strict)
    })
    .await
}

/// Polls the table until `ready` says so, for up to `patience`, paced by the time waited
/// ([`Pacing::DEFAULT`]: a table is ACTIVE within about 10 s, seen within a second of it).
async fn wait_until(
    ddb: &aws_sdk_dynamodb::Client,
    what: &str,
    name: &str,
    patience: Duration,
    ready: impl Fn(&TableDescription) -> Result<bool, ProviderError>,
) -> Result<TableDescription, ProviderError> {
    let started = Instant::now();
    loop {
        let table = describe(ddb, what, name).await?.ok_or_else(|| {
            ProviderError::new(
                ErrorKind::NOT_FOUND,
                format!("{what}: table {name} disappeared while waiting for it to be ACTIVE"),
            )
        })?;
        if ready(&table)? {
            return Ok(table);
        }
        if started.elapsed() >= patience {
            let status = table
                .table_status()
                .map(|s| s.as_str().to_string())
                .unwrap_or_default();
            return Err(ProviderError::new(
                ErrorKind::TIMEOUT,
                format!(
                    "{what}: table {name} was not ACTIVE after {:.0?} (status {status})",
                    started.elapsed()
                ),
            ));
        }
        tracing::debug!("{what}: waiting for table {name} to be ACTIVE");
        tokio::time::sleep(Pacing::DEFAULT.pause(started.elapsed())).await;
    }
}

/// Runs `op` again while DynamoDB answers that the table is busy (`ResourceInUseException`,
/// `ContinuousBackupsUnavailableException` right after a create, a `LimitExceededException`
/// for concurrent index or stream changes), paced by the time waited from 200 ms, for up to
/// 10 minutes.
pub(crate) async fn while_busy<T, F, Fut>(what: &str, op: F) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    let busy = |err: &ProviderError, _: Duration| {
        let busy = err.aws_code().is_some_and(is_busy_code);
        if busy {
            tracing::debug!("{what}: table busy, retrying ({})", err.message);
        }
        busy
    };
    retry_while(FIRST_PAUSE, PATIENCE, busy, op).await
}

/// Codes that mean "the table is busy with another change; try again later".
fn is_busy_code(code: &str) -> bool {
    matches!(
        code,
        "ResourceInUseException" | "ContinuousBackupsUnavailableException" | "TableInUseException"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::{GlobalSecondaryIndexDescription, ReplicaDescription};

    #[test]
    fn dynamodb_codes_get_their_kinds() {
        assert_eq!(
            dynamodb_kind("PolicyNotFoundException"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            dynamodb_kind("TableAlreadyExistsException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(dynamodb_kind("ResourceNotFoundException"), None);
        let err = with_dynamodb_kind(
            ProviderError::new(ErrorKind::OTHER, "no policy")
                .with_aws_code("PolicyNotFoundException"),
        );
        assert_eq!(err.kind, ErrorKind::NOT_FOUND);
        assert!(is_busy_code("ResourceInUseException"));
        assert!(!is_busy_code("ValidationException"));
    }

    #[test]
    fn a_table_is_active_when_its_indexes_are() {
        let index = |status: IndexStatus| {
            GlobalSecondaryIndexDescription::builder()
                .index_name("gsi")
                .index_status(status)
                .build()
        };
        let table = TableDescription::builder()
            .table_status(TableStatus::Active)
            .global_secondary_indexes(index(IndexStatus::Active))
            .global_secondary_indexes(index(IndexStatus::Creating))
            .build();
        assert!(is_active(&table, false));
        assert!(!is_active(&table, true));
        let updating = TableDescription::builder()
            .table_status(TableStatus::Updating)
            .build();
        assert!(!is_active(&updating, false));
    }

    #[test]
    fn a_global_table_is_ready_when_every_replica_is_active() {
        let replica = |region: &str, status: ReplicaStatus| {
            ReplicaDescription::builder()
                .region_name(region)
                .replica_status(status)
                .build()
        };
        let table = |replicas: Vec<ReplicaDescription>| {
            TableDescription::builder()
                .table_status(TableStatus::Active)
                .set_replicas(Some(replicas))
                .build()
        };
        let settled = table(vec![replica("eu-west-1", ReplicaStatus::Active)]);
        assert!(replicas_ready("t", &settled, true).unwrap());
        let adding = table(vec![
            replica("eu-west-1", ReplicaStatus::Active),
            replica("us-west-2", ReplicaStatus::Creating),
        ]);
        assert!(!replicas_ready("t", &adding, true).unwrap());
        let failed = table(vec![replica("us-west-2", ReplicaStatus::CreationFailed)]);
        let err = replicas_ready("t", &failed, true).unwrap_err();
        assert!(
            err.message.contains("us-west-2 is CREATION_FAILED"),
            "{}",
            err.message
        );
        // A teardown removes such a replica rather than waiting for it.
        assert!(replicas_ready("t", &failed, false).unwrap());
    }
}
