//! `AWS::IAM::AccessKey`.

use std::time::Duration;

use cdkd_aws_common::{aws_error, not_propagated, optional, require_str, retry_while};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::client;

/// `AWS::IAM::AccessKey`: physical id (and `Ref`) = the access key id; the secret is the
/// `SecretAccessKey` attribute only, where CloudFormation exposes it, and is never logged.
#[derive(Default)]
pub struct AccessKey;

const ACCESS_KEY: &str = "AWS::IAM::AccessKey";

/// How long CreateAccessKey is tried again while IAM does not know the user yet. IAM is
/// eventually consistent within itself too: a user made moments ago (the template's own, the
/// usual case) can be answered `NoSuchEntity`; that settles in seconds, far sooner than other
/// services see a new principal, and a user that really does not exist should not hold the
/// deploy for the full [`cdkd_aws_common::IAM_PROPAGATION`]. The plugin cannot tell whether
/// the user is of this run, so every `NoSuchEntity` gets this bounded wait.
const USER_PROPAGATION: Duration = Duration::from_secs(30);

/// Whether IAM refused CreateAccessKey because it does not know the user (yet).
fn user_unknown(err: &ProviderError) -> bool {
    err.aws_code() == Some("NoSuchEntity")
}

/// `call` again while IAM answers that it does not know `user`, for up to
/// [`USER_PROPAGATION`]; then its error naming the user and the time waited.
async fn while_user_propagates<T, F, Fut>(user: &str, call: F) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    let started = tokio::time::Instant::now();
    let first = Duration::from_millis(500);
    match retry_while(first, USER_PROPAGATION, |e, _| user_unknown(e), call).await {
        Err(err) if user_unknown(&err) => Err(not_propagated(
            err,
            &format!("the user {user}"),
            started.elapsed(),
        )),
        other => other,
    }
}

/// `AWS::IAM::AccessKey` (physical id = the key id) of the template's user.
async fn current(
    iam: &aws_sdk_iam::Client,
    what: &str,
    key_id: &str,
    user_name: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(keys) = optional(
        &format!("{what}: ListAccessKeys"),
        iam.list_access_keys().user_name(user_name).send().await,
    )?
    else {
        return Ok(None);
    };
    Ok(keys
        .access_key_metadata()
        .iter()
        .find(|k| k.access_key_id() == Some(key_id))
        .map(|k| {
            let mut props = Map::new();
            props.insert("UserName".into(), json!(user_name));
            if let Some(status) = k.status() {
                props.insert("Status".into(), json!(status.as_str()));
            }
            props
        }))
}

#[async_trait]
impl Readable for AccessKey {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let user = require_str(&request.properties, "UserName", what)?;
        let iam = client(ctx).await?;
        current(&iam, what, &request.physical_id, user).await
    }

    /// IAM returns a secret only when the key is created, so an adopted key has no
    /// `SecretAccessKey` attribute (a `Fn::GetAtt` on it fails rather than serving nothing).
    async fn attributes(
        &self,
        _ctx: &PluginContext,
        what: &str,
        _physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        tracing::warn!("{what}: an imported access key has no SecretAccessKey attribute; IAM returns the secret only at creation");
        Ok(Map::new())
    }
}

#[async_trait]
impl ResourceProvider for AccessKey {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ACCESS_KEY)
            .handles(&["UserName", "Status", "Serial"])
            .create_only(&["UserName", "Serial"])
            .read_and_import()
            .sensitive(&["SecretAccessKey"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?.to_string();
        let iam = client(ctx).await?;
        let create = || async {
            iam.create_access_key()
                .user_name(&user)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: CreateAccessKey for {user}"), e))
        };
        let created = while_user_propagates(&user, create).await?;
        let key = created
            .access_key()
            .ok_or_else(|| ProviderError::other(format!("{what}: no key returned")))?;
        let id = key.access_key_id().to_string();
        if request.properties.get("Status").and_then(Value::as_str) == Some("Inactive") {
            iam.update_access_key()
                .user_name(&user)
                .access_key_id(&id)
                .status(aws_sdk_iam::types::StatusType::Inactive)
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: deactivating"), e))?;
        }
        Ok(CreateResult {
            attributes: json!({"SecretAccessKey": key.secret_access_key()})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?.to_string();
        let status = request
            .properties
            .get("Status")
            .and_then(Value::as_str)
            .unwrap_or("Active");
        client(ctx)
            .await?
            .update_access_key()
            .user_name(&user)
            .access_key_id(&request.physical_id)
            .status(aws_sdk_iam::types::StatusType::from(status))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: status"), e))?;
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{ACCESS_KEY} {}", request.logical_id);
        let user = require_str(&request.properties, "UserName", &what)?.to_string();
        cdkd_aws_common::deleted_unless_failed(
            client(ctx)
                .await?
                .delete_access_key()
                .user_name(&user)
                .access_key_id(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteAccessKey"), e)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::ErrorKind;

    #[test]
    fn only_an_unknown_user_is_waited_for() {
        let unknown = ProviderError::new(
            ErrorKind::NOT_FOUND,
            "AWS::IAM::AccessKey Key: CreateAccessKey for u: The user with name u cannot be found.",
        )
        .with_aws_code("NoSuchEntity");
        assert!(user_unknown(&unknown));
        let too_many = ProviderError::validation(
            "AWS::IAM::AccessKey Key: CreateAccessKey for u: Cannot exceed quota for AccessKeysPerUser: 2",
        )
        .with_aws_code("LimitExceeded");
        assert!(!user_unknown(&too_many));
        // A not-found of another cause (no code: a transport answer) is not waited for.
        let other = ProviderError::new(ErrorKind::NOT_FOUND, "NoSuchEntity somewhere");
        assert!(!user_unknown(&other));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unknown_user_is_tried_again_for_a_bounded_time_then_named() {
        let unknown = || {
            ProviderError::new(
                ErrorKind::NOT_FOUND,
                "The user with name u cannot be found.",
            )
            .with_aws_code("NoSuchEntity")
        };
        // Known after 3 s: created.
        let started = tokio::time::Instant::now();
        let created = while_user_propagates("u", || {
            let result = if started.elapsed() < Duration::from_secs(3) {
                Err(unknown())
            } else {
                Ok("key")
            };
            async move { result }
        })
        .await;
        assert_eq!(created.unwrap(), "key");
        assert!(started.elapsed() < Duration::from_secs(4));
        // Never known: refused within the bound, naming the user.
        let started = tokio::time::Instant::now();
        let err = while_user_propagates("u", || async { Err::<(), _>(unknown()) })
            .await
            .unwrap_err();
        assert!(started.elapsed() <= USER_PROPAGATION);
        assert!(started.elapsed() >= USER_PROPAGATION - Duration::from_secs(5));
        assert!(
            err.message
                .contains("waiting for IAM to propagate the user u"),
            "{}",
            err.message
        );
    }
}
