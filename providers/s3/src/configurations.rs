//! `AWS::S3::Bucket`'s configurations applied after creation: one function each, every one
//! putting the template's value or, with `None`, removing (or resetting) the configuration.

use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, AccelerateConfiguration, BucketAccelerateStatus,
    BucketCannedAcl, BucketLifecycleConfiguration, BucketLoggingStatus, BucketVersioningStatus,
    CorsConfiguration, CorsRule, DefaultRetention, ErrorDocument, ExpirationStatus, IndexDocument,
    LifecycleExpiration, LifecycleRule, LifecycleRuleFilter, LoggingEnabled,
    NoncurrentVersionExpiration, ObjectLockConfiguration, ObjectLockEnabled,
    ObjectLockRetentionMode, ObjectLockRule, ObjectOwnership, OwnershipControls,
    OwnershipControlsRule, PublicAccessBlockConfiguration, ServerSideEncryption,
    ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
    Tag, Tagging, VersioningConfiguration, WebsiteConfiguration,
};
use aws_sdk_s3::Client;
use cdkd_aws_common::aws_error;
use cdkd_aws_common::{flag, int, strings, text};
use cdkd_provider_api::ProviderError;
use serde_json::Value;

use crate::keyed_configurations::{self, Analytics, IntelligentTiering, Inventory, Metrics};

/// CloudFormation's `AccessControl` values and S3's canned ACLs.
const CANNED_ACLS: &[(&str, &str)] = &[
    ("Private", "private"),
    ("PublicRead", "public-read"),
    ("PublicReadWrite", "public-read-write"),
    ("AuthenticatedRead", "authenticated-read"),
    ("LogDeliveryWrite", "log-delivery-write"),
    ("BucketOwnerRead", "bucket-owner-read"),
    ("BucketOwnerFullControl", "bucket-owner-full-control"),
    ("AwsExecRead", "aws-exec-read"),
];

/// S3's canned ACL for a template's `AccessControl` (absent: `private`, S3's default).
pub(crate) fn canned_acl(value: Option<&Value>) -> Result<BucketCannedAcl, String> {
    let Some(name) = value.and_then(Value::as_str) else {
        return Ok(BucketCannedAcl::Private);
    };
    CANNED_ACLS
        .iter()
        .find(|(cfn, s3)| *cfn == name || *s3 == name)
        .map(|(_, s3)| BucketCannedAcl::from(*s3))
        .ok_or_else(|| {
            format!(
                "{name} is not a canned ACL ({})",
                CANNED_ACLS
                    .iter()
                    .map(|(c, _)| *c)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// One bucket's S3 calls, named for errors by `what`.
pub(crate) struct Call<'a> {
    pub(crate) client: &'a Client,
    pub(crate) bucket: &'a str,
    pub(crate) what: String,
}

/// Each S3 call has its own error type; a macro makes one closure per call site.
macro_rules! failed {
    ($one:expr) => {
        |err| aws_error(&format!("{}: applying {}", $one.what, $one.property), err)
    };
}

/// The template's value, or, when it has none, the configuration removed by `$delete` and the
/// function done.
macro_rules! or_removed {
    ($one:expr, $value:expr, $delete:ident) => {
        match $value {
            Some(value) => value,
            None => {
                $one.client
                    .$delete()
                    .bucket($one.bucket)
                    .send()
                    .await
                    .map_err(failed!($one))?;
                return Ok(());
            }
        }
    };
}

impl Call<'_> {
    /// Applies (or, with `None`, removes) one configuration.
    pub(crate) async fn apply(
        &self,
        property: &str,
        value: Option<&Value>,
    ) -> Result<(), ProviderError> {
        let one = One {
            client: self.client,
            bucket: self.bucket,
            what: &self.what,
            property,
        };
        let (client, bucket, what) = (self.client, self.bucket, self.what.as_str());
        match property {
            "VersioningConfiguration" => one.versioning(value).await,
            "BucketEncryption" => one.encryption(value).await,
            "PublicAccessBlockConfiguration" => one.public_access_block(value).await,
            "OwnershipControls" => one.ownership_controls(value).await,
            "LifecycleConfiguration" => one.lifecycle(value).await,
            "CorsConfiguration" => one.cors(value).await,
            "WebsiteConfiguration" => one.website(value).await,
            "LoggingConfiguration" => one.logging(value).await,
            "NotificationConfiguration" => one.notification(value).await,
            "ObjectLockConfiguration" => one.object_lock(value).await,
            "ReplicationConfiguration" => one.replication(value).await,
            "AccessControl" => one.access_control(value).await,
            "AccelerateConfiguration" => one.accelerate(value).await,
            "MetricsConfigurations" => {
                keyed_configurations::apply::<Metrics>(client, bucket, what, value).await
            }
            "IntelligentTieringConfigurations" => {
                keyed_configurations::apply::<IntelligentTiering>(client, bucket, what, value).await
            }
            "InventoryConfigurations" => {
                keyed_configurations::apply::<Inventory>(client, bucket, what, value).await
            }
            "AnalyticsConfigurations" => {
                keyed_configurations::apply::<Analytics>(client, bucket, what, value).await
            }
            "Tags" => one.tags(value).await,
            other => Err(ProviderError::unsupported(format!(
                "{what}: property {other} is not handled"
            ))),
        }
    }
}

/// One configuration of one bucket: the calls that put or remove it.
struct One<'a> {
    client: &'a Client,
    bucket: &'a str,
    what: &'a str,
    property: &'a str,
}

impl One<'_> {
    /// A value S3 cannot take for this property.
    fn invalid(&self, detail: impl std::fmt::Display) -> ProviderError {
        crate::invalid(self.what, self.property, detail)
    }

    async fn versioning(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let status = value
            .and_then(|v| text(v.get("Status")))
            .unwrap_or_else(|| "Suspended".into());
        self.client
            .put_bucket_versioning()
            .bucket(self.bucket)
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::from(status.as_str()))
                    .build(),
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn encryption(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let value = or_removed!(self, value, delete_bucket_encryption);
        let mut rules = Vec::new();
        for rule in value
            .get("ServerSideEncryptionConfiguration")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let mut built = ServerSideEncryptionRule::builder();
            if let Some(default) = rule.get("ServerSideEncryptionByDefault") {
                let algorithm =
                    text(default.get("SSEAlgorithm")).unwrap_or_else(|| "AES256".into());
                let mut by_default = ServerSideEncryptionByDefault::builder()
                    .sse_algorithm(ServerSideEncryption::from(algorithm.as_str()));
                if let Some(key) = text(default.get("KMSMasterKeyID")) {
                    by_default = by_default.kms_master_key_id(key);
                }
                built = built.apply_server_side_encryption_by_default(
                    by_default.build().map_err(|e| self.invalid(e))?,
                );
            }
            if let Some(enabled) = flag(rule.get("BucketKeyEnabled")) {
                built = built.bucket_key_enabled(enabled);
            }
            rules.push(built.build());
        }
        self.client
            .put_bucket_encryption()
            .bucket(self.bucket)
            .server_side_encryption_configuration(
                ServerSideEncryptionConfiguration::builder()
                    .set_rules(Some(rules))
                    .build()
                    .map_err(|e| self.invalid(e))?,
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn public_access_block(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let value = or_removed!(self, value, delete_public_access_block);
        let on = |key: &str| flag(value.get(key)).unwrap_or(false);
        self.client
            .put_public_access_block()
            .bucket(self.bucket)
            .public_access_block_configuration(
                PublicAccessBlockConfiguration::builder()
                    .block_public_acls(on("BlockPublicAcls"))
                    .block_public_policy(on("BlockPublicPolicy"))
                    .ignore_public_acls(on("IgnorePublicAcls"))
                    .restrict_public_buckets(on("RestrictPublicBuckets"))
                    .build(),
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn ownership_controls(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let value = or_removed!(self, value, delete_bucket_ownership_controls);
        let mut rules = Vec::new();
        for rule in value
            .get("Rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ownership = text(rule.get("ObjectOwnership"))
                .ok_or_else(|| self.invalid("each rule needs ObjectOwnership"))?;
            rules.push(
                OwnershipControlsRule::builder()
                    .object_ownership(ObjectOwnership::from(ownership.as_str()))
                    .build()
                    .map_err(|e| self.invalid(e))?,
            );
        }
        self.client
            .put_bucket_ownership_controls()
            .bucket(self.bucket)
            .ownership_controls(
                OwnershipControls::builder()
                    .set_rules(Some(rules))
                    .build()
                    .map_err(|e| self.invalid(e))?,
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn lifecycle(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let value = or_removed!(self, value, delete_bucket_lifecycle);
        let mut rules = Vec::new();
        for rule in value
            .get("Rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            rules.push(lifecycle_rule(rule).map_err(|e| self.invalid(e))?);
        }
        self.client
            .put_bucket_lifecycle_configuration()
            .bucket(self.bucket)
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .set_rules(Some(rules))
                    .build()
                    .map_err(|e| self.invalid(e))?,
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn cors(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let mut rules = Vec::new();
        for rule in value
            .and_then(|v| v.get("CorsRules"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let list = |key: &str| Some(strings(rule.get(key)).unwrap_or_default());
            rules.push(
                CorsRule::builder()
                    .set_id(text(rule.get("Id")))
                    .set_allowed_headers(list("AllowedHeaders"))
                    .set_allowed_methods(list("AllowedMethods"))
                    .set_allowed_origins(list("AllowedOrigins"))
                    .set_expose_headers(list("ExposedHeaders"))
                    .set_max_age_seconds(int(rule.get("MaxAge")))
                    .build()
                    .map_err(|e| self.invalid(e))?,
            );
        }
        if rules.is_empty() {
            // S3 answers an empty rule list with MalformedXML; no rules = no CORS.
            self.client
                .delete_bucket_cors()
                .bucket(self.bucket)
                .send()
                .await
                .map_err(failed!(self))?;
            return Ok(());
        }
        self.client
            .put_bucket_cors()
            .bucket(self.bucket)
            .cors_configuration(
                CorsConfiguration::builder()
                    .set_cors_rules(Some(rules))
                    .build()
                    .map_err(|e| self.invalid(e))?,
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn website(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let value = or_removed!(self, value, delete_bucket_website);
        let mut website = WebsiteConfiguration::builder();
        if let Some(index) = text(value.get("IndexDocument")) {
            website = website.index_document(
                IndexDocument::builder()
                    .suffix(index)
                    .build()
                    .map_err(|e| self.invalid(e))?,
            );
        }
        if let Some(error) = text(value.get("ErrorDocument")) {
            website = website.error_document(
                ErrorDocument::builder()
                    .key(error)
                    .build()
                    .map_err(|e| self.invalid(e))?,
            );
        }
        self.client
            .put_bucket_website()
            .bucket(self.bucket)
            .website_configuration(website.build())
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn logging(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let mut status = BucketLoggingStatus::builder();
        if let Some(value) = value {
            let target =
                text(value.get("DestinationBucketName")).unwrap_or_else(|| self.bucket.to_string());
            status = status.logging_enabled(
                LoggingEnabled::builder()
                    .target_bucket(target)
                    .target_prefix(text(value.get("LogFilePrefix")).unwrap_or_default())
                    .build()
                    .map_err(|e| self.invalid(e))?,
            );
        }
        self.client
            .put_bucket_logging()
            .bucket(self.bucket)
            .bucket_logging_status(status.build())
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn notification(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        self.client
            .put_bucket_notification_configuration()
            .bucket(self.bucket)
            .notification_configuration(crate::notification::configuration(self.what, value)?)
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    /// Object lock itself is enabled at creation (ObjectLockEnabled, create-only); this sets or
    /// changes the default retention. S3 cannot turn object lock off, so removing the property
    /// drops the default rule.
    async fn object_lock(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let rule = value
            .and_then(|v| v.get("Rule"))
            .and_then(|r| r.get("DefaultRetention"))
            .map(|d| {
                ObjectLockRule::builder()
                    .default_retention(
                        DefaultRetention::builder()
                            .set_mode(
                                text(d.get("Mode"))
                                    .map(|m| ObjectLockRetentionMode::from(m.as_str())),
                            )
                            .set_days(int(d.get("Days")))
                            .set_years(int(d.get("Years")))
                            .build(),
                    )
                    .build()
            });
        self.client
            .put_object_lock_configuration()
            .bucket(self.bucket)
            .object_lock_configuration(
                ObjectLockConfiguration::builder()
                    .object_lock_enabled(ObjectLockEnabled::Enabled)
                    .set_rule(rule)
                    .build(),
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn replication(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let value = or_removed!(self, value, delete_bucket_replication);
        let configuration =
            crate::replication::configuration(value).map_err(|e| self.invalid(e))?;
        self.client
            .put_bucket_replication()
            .bucket(self.bucket)
            .replication_configuration(configuration)
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn access_control(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        self.client
            .put_bucket_acl()
            .bucket(self.bucket)
            .acl(canned_acl(value).map_err(|e| self.invalid(e))?)
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    /// S3 has no delete: a removed configuration is suspended.
    async fn accelerate(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let status = value
            .and_then(|v| text(v.get("AccelerationStatus")))
            .unwrap_or_else(|| "Suspended".into());
        self.client
            .put_bucket_accelerate_configuration()
            .bucket(self.bucket)
            .accelerate_configuration(
                AccelerateConfiguration::builder()
                    .status(BucketAccelerateStatus::from(status.as_str()))
                    .build(),
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }

    async fn tags(&self, value: Option<&Value>) -> Result<(), ProviderError> {
        let value = or_removed!(self, value, delete_bucket_tagging);
        let mut tags = Vec::new();
        for tag in value.as_array().into_iter().flatten() {
            let (Some(key), Some(val)) = (text(tag.get("Key")), text(tag.get("Value"))) else {
                return Err(self.invalid("each tag needs Key and Value"));
            };
            tags.push(
                Tag::builder()
                    .key(key)
                    .value(val)
                    .build()
                    .map_err(|e| self.invalid(e))?,
            );
        }
        self.client
            .put_bucket_tagging()
            .bucket(self.bucket)
            .tagging(
                Tagging::builder()
                    .set_tag_set(Some(tags))
                    .build()
                    .map_err(|e| self.invalid(e))?,
            )
            .send()
            .await
            .map_err(failed!(self))?;
        Ok(())
    }
}

/// One lifecycle rule of the template as S3's.
fn lifecycle_rule(rule: &Value) -> Result<LifecycleRule, aws_sdk_s3::error::BuildError> {
    let prefix = text(rule.get("Prefix")).unwrap_or_default();
    let mut built = LifecycleRule::builder()
        .set_id(text(rule.get("Id")))
        .status(ExpirationStatus::from(
            text(rule.get("Status"))
                .unwrap_or_else(|| "Enabled".into())
                .as_str(),
        ))
        .filter(LifecycleRuleFilter::builder().prefix(prefix).build());
    if let Some(days) = int(rule.get("ExpirationInDays")) {
        built = built.expiration(LifecycleExpiration::builder().days(days).build());
    }
    if let Some(days) = rule
        .get("NoncurrentVersionExpiration")
        .and_then(|n| int(n.get("NoncurrentDays")))
    {
        built = built.noncurrent_version_expiration(
            NoncurrentVersionExpiration::builder()
                .noncurrent_days(days)
                .build(),
        );
    }
    if let Some(days) = rule
        .get("AbortIncompleteMultipartUpload")
        .and_then(|a| int(a.get("DaysAfterInitiation")))
    {
        built = built.abort_incomplete_multipart_upload(
            AbortIncompleteMultipartUpload::builder()
                .days_after_initiation(days)
                .build(),
        );
    }
    built.build()
}
