//! Which bucket holds the state, where it lives, and an S3 client aimed at it.
//!
//! Name: `--state-bucket` > `CDKD_STATE_BUCKET` > cdk.json `context.cdkd.stateBucket` >
//! `STATE_BUCKET` > `cdkd-state-{accountId}` > the legacy `cdkd-state-{accountId}-{region}` (with a deprecation
//! warning) > an error asking for `cdkd bootstrap`. Region: `GetBucketLocation`, asked of the
//! caller's own region, remembered per bucket when it succeeds ([`crate::aws_facts`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use aws_sdk_s3::config::Region;
use aws_sdk_s3::Client;

use super::s3_error::S3Failure;
use super::StateError;
use crate::aws_env::{AwsEnvironment, FALLBACK_REGION};
use crate::aws_facts::FactsFile;

/// Where the bucket name came from (shown by `cdkd state info`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketSource {
    /// `--state-bucket`.
    CliFlag,
    /// `CDKD_STATE_BUCKET` or `STATE_BUCKET`.
    Env,
    /// cdk.json `context.cdkd.stateBucket`.
    CdkJson,
    /// `cdkd-state-{accountId}`.
    Default,
    /// `cdkd-state-{accountId}-{region}` (deprecated).
    LegacyDefault,
}

impl BucketSource {
    /// The spelling `state info` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            BucketSource::CliFlag => "cli-flag",
            BucketSource::Env => "env",
            BucketSource::CdkJson => "cdk.json",
            BucketSource::Default => "default",
            BucketSource::LegacyDefault => "legacy-default",
        }
    }
}

/// A resolved state bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateBucket {
    /// The bucket name.
    pub name: String,
    /// Where the name came from.
    pub source: BucketSource,
}

/// The explicit choices, before any AWS call.
#[derive(Debug, Clone, Default)]
pub struct BucketChoice {
    /// `--state-bucket`.
    pub flag: Option<String>,
    /// `CDKD_STATE_BUCKET`.
    pub env: Option<String>,
    /// cdk.json `context.cdkd.stateBucket`.
    pub cdk_json: Option<String>,
    /// `STATE_BUCKET`, spec 000's name: generic enough that another tool's job may export it,
    /// so the project's cdk.json wins over it.
    pub spec_env: Option<String>,
}

impl BucketChoice {
    /// Reads `CDKD_STATE_BUCKET`, `./cdk.json` and `STATE_BUCKET` next to the flag's value.
    pub fn from_environment(flag: Option<String>, cdk_json: &Path) -> BucketChoice {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let env = var("CDKD_STATE_BUCKET");
        let spec_env = var("STATE_BUCKET");
        let cdk_json = std::fs::read(cdk_json)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|doc| {
                doc.pointer("/context/cdkd/stateBucket")
                    .and_then(|v| v.as_str())
                    .map(ToString::to_string)
            });
        BucketChoice {
            flag,
            env,
            cdk_json,
            spec_env,
        }
    }

    /// The explicitly chosen name, if any.
    pub fn explicit(&self) -> Option<StateBucket> {
        let pick =
            |name: &Option<String>, source| name.clone().map(|name| StateBucket { name, source });
        pick(&self.flag, BucketSource::CliFlag)
            .or_else(|| pick(&self.env, BucketSource::Env))
            .or_else(|| pick(&self.cdk_json, BucketSource::CdkJson))
            .or_else(|| pick(&self.spec_env, BucketSource::Env))
    }
}

/// The default bucket name for an account.
pub fn default_bucket_name(account_id: &str) -> String {
    format!("cdkd-state-{account_id}")
}

/// The pre-v0.8 default name.
pub fn legacy_bucket_name(account_id: &str, region: &str) -> String {
    format!("cdkd-state-{account_id}-{region}")
}

/// The deprecation warning for a legacy-named bucket, worded as the spec words it.
pub fn legacy_bucket_warning(account_id: &str, region: &str) -> String {
    format!(
        "Using legacy state bucket name '{legacy}'.\nThe default has changed to '{new}'. To migrate, run:\n\n    cdkd state migrate --region {region}\n\n(add --remove-legacy to delete the legacy bucket after a successful\ncopy; legacy support will be dropped in a future release.)",
        legacy = legacy_bucket_name(account_id, region),
        new = default_bucket_name(account_id),
    )
}

/// The caller's account id: remembered for its access key ([`FactsFile`]), else from STS.
pub async fn account_id(aws: &AwsEnvironment) -> Result<String, StateError> {
    let facts = FactsFile::of(aws);
    let endpoint = aws.endpoint_url();
    let access_key = aws.credentials().await.ok().map(|c| c.access_key_id);
    if let Some(account) = access_key
        .as_deref()
        .and_then(|key| facts.account(endpoint.as_deref(), key))
    {
        return Ok(account);
    }
    let sts = aws_sdk_sts::Client::from_conf(
        aws_sdk_sts::config::Builder::from(aws.sdk_config())
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-sts"))
            .build(),
    );
    let identity = sts
        .get_caller_identity()
        .send()
        .await
        .map_err(|err| StateError::NoAccount {
            detail: cdkd_aws_common::error_line(&err),
        })?;
    let account = identity
        .account()
        .map(ToString::to_string)
        .ok_or(StateError::NoAccountInAnswer)?;
    if let Some(key) = access_key {
        facts.remember_account(endpoint.as_deref(), &key, &account);
    }
    Ok(account)
}

/// Resolves the state bucket: the explicit choice, else the default name if it exists, else
/// the legacy name if that exists (warning), else an error asking for `cdkd bootstrap`.
pub async fn resolve(
    aws: &AwsEnvironment,
    choice: &BucketChoice,
) -> Result<StateBucket, StateError> {
    if let Some(bucket) = choice.explicit() {
        // A named bucket must be the caller's too; one that does not exist yet is reported by
        // the command that needs it.
        bucket_exists(aws, &bucket.name).await?;
        return Ok(bucket);
    }
    let account = account_id(aws).await?;
    let name = default_bucket_name(&account);
    if bucket_exists(aws, &name).await? {
        return Ok(StateBucket {
            name,
            source: BucketSource::Default,
        });
    }
    let region = aws.region();
    let legacy = legacy_bucket_name(&account, &region);
    if bucket_exists(aws, &legacy).await? {
        tracing::warn!("{}", legacy_bucket_warning(&account, &region));
        return Ok(StateBucket {
            name: legacy,
            source: BucketSource::LegacyDefault,
        });
    }
    Err(StateError::NoBucket { name })
}

/// Whether a bucket exists and is the caller's. A bucket S3 refuses (403) with the caller's
/// account as `ExpectedBucketOwner` is another account's, or not one cdkd may use: an error
/// naming the bucket, never "exists" (the name is predictable, so another account can take it).
pub async fn bucket_exists(aws: &AwsEnvironment, name: &str) -> Result<bool, StateError> {
    let account = account_id(aws).await?;
    // Asked in the bucket's own region: from another one S3 may answer 400 or 301, not 200.
    let client = owned_s3_client(aws, &bucket_region(aws, name).await, &account);
    match client.head_bucket().bucket(name).send().await {
        Ok(_) => Ok(true),
        Err(err) => {
            let failure = S3Failure::from_sdk(&err);
            match failure.status {
                Some(404) => Ok(false),
                Some(403) => Err(StateError::NotOwned {
                    bucket: name.to_string(),
                    account,
                }),
                Some(301) => Ok(true),
                _ if failure.is_no_such_bucket() => Ok(false),
                _ => Err(StateError::BucketCheck {
                    bucket: name.to_string(),
                    detail: failure.to_string(),
                }),
            }
        }
    }
}

/// An S3 client for `region` with the host's endpoint and addressing settings.
pub fn s3_client(aws: &AwsEnvironment, region: &str) -> Client {
    let config = aws_sdk_s3::config::Builder::from(aws.sdk_config())
        .region(Region::new(region.to_string()))
        .force_path_style(aws.s3_force_path_style())
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-s3"))
        .build();
    Client::from_conf(config)
}

/// An S3 client for `region` whose every bucket call carries `ExpectedBucketOwner: account`,
/// so S3 itself refuses (403) a bucket another account owns: the state and asset buckets are
/// only ever reached through one. `CreateBucket` and `ListBuckets` name no owner and go
/// without it.
pub fn owned_s3_client(aws: &AwsEnvironment, region: &str, account: &str) -> Client {
    let config = aws_sdk_s3::config::Builder::from(aws.sdk_config())
        .region(Region::new(region.to_string()))
        .force_path_style(aws.s3_force_path_style())
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-s3"))
        .interceptor(ExpectedOwner(account.to_string()))
        .build();
    Client::from_conf(config)
}

/// Adds `x-amz-expected-bucket-owner` to every request but those that name no bucket owner.
#[derive(Debug)]
struct ExpectedOwner(String);

impl aws_smithy_runtime_api::client::interceptors::Intercept for ExpectedOwner {
    fn name(&self) -> &'static str {
        "cdkd-expected-bucket-owner"
    }

    fn modify_before_signing(
        &self,
        context: &mut aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextMut<'_>,
        _components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let operation = cfg.load::<aws_smithy_runtime_api::client::orchestrator::Metadata>();
        if operation.is_some_and(|m| matches!(m.name(), "CreateBucket" | "ListBuckets")) {
            return Ok(());
        }
        context
            .request_mut()
            .headers_mut()
            .insert("x-amz-expected-bucket-owner", self.0.clone());
        Ok(())
    }
}

static BUCKET_REGIONS: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

/// The bucket's region: remembered ([`FactsFile`]), else `GetBucketLocation` asked of the
/// caller's region. A success is remembered; a failure is not (it degrades to the caller's
/// region this once).
pub async fn bucket_region(aws: &AwsEnvironment, bucket: &str) -> String {
    if let Some(region) = BUCKET_REGIONS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .and_then(|cache| cache.get(bucket).cloned())
    {
        return region;
    }
    let facts = FactsFile::of(aws);
    let endpoint = aws.endpoint_url();
    if let Some(region) = facts.bucket_region(endpoint.as_deref(), bucket) {
        remember_for_the_process(bucket, &region);
        return region;
    }
    let caller_region = aws.region();
    let probe = s3_client(aws, &caller_region);
    match probe.get_bucket_location().bucket(bucket).send().await {
        Ok(answer) => {
            let region = match answer.location_constraint().map(|c| c.as_str()) {
                None | Some("") => FALLBACK_REGION.to_string(),
                Some("EU") => "eu-west-1".to_string(),
                Some(other) => other.to_string(),
            };
            remember_for_the_process(bucket, &region);
            facts.remember_bucket_region(endpoint.as_deref(), bucket, &region);
            region
        }
        Err(err) => {
            tracing::debug!(
                "GetBucketLocation failed ({}); using {caller_region} for the state bucket this time",
                S3Failure::from_sdk(&err)
            );
            caller_region
        }
    }
}

fn remember_for_the_process(bucket: &str, region: &str) {
    BUCKET_REGIONS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(bucket.to_string(), region.to_string());
}

/// An S3 client aimed at the state (or asset) bucket's own region, proving on every call that
/// the bucket is the caller's account's ([`owned_s3_client`]).
pub async fn state_bucket_client(aws: &AwsEnvironment, bucket: &str) -> Result<Client, StateError> {
    let account = account_id(aws).await?;
    let region = bucket_region(aws, bucket).await;
    Ok(owned_s3_client(aws, &region, &account))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_choices_win_in_order() {
        let mut choice = BucketChoice {
            flag: Some("flag".into()),
            env: Some("env".into()),
            cdk_json: Some("json".into()),
            spec_env: Some("spec".into()),
        };
        assert_eq!(choice.explicit().unwrap().source, BucketSource::CliFlag);
        choice.flag = None;
        assert_eq!(choice.explicit().unwrap().name, "env");
        choice.env = None;
        assert_eq!(choice.explicit().unwrap().source, BucketSource::CdkJson);
        choice.cdk_json = None;
        assert_eq!(choice.explicit().unwrap().name, "spec");
        choice.spec_env = None;
        assert_eq!(choice.explicit(), None);
    }

    #[test]
    fn cdk_json_context_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cdk.json");
        std::fs::write(
            &path,
            r#"{"app":"node app.js","context":{"cdkd":{"stateBucket":"team-state"}}}"#,
        )
        .unwrap();
        let choice = BucketChoice::from_environment(None, &path);
        assert_eq!(choice.cdk_json.as_deref(), Some("team-state"));
    }

    #[test]
    fn the_legacy_warning_is_worded_as_the_spec() {
        let text = legacy_bucket_warning("123456789012", "us-east-1");
        assert!(text.starts_with("Using legacy state bucket name 'cdkd-state-123456789012-us-east-1'.\nThe default has changed to 'cdkd-state-123456789012'. To migrate, run:\n\n    cdkd state migrate --region us-east-1\n"));
        assert!(text.ends_with("legacy support will be dropped in a future release.)"));
    }
}
