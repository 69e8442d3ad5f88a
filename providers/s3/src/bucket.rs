//! `AWS::S3::Bucket`: created with `CreateBucket`, then each declared configuration applied by
//! its own S3 call; an update re-applies (or removes) exactly the configurations that changed.

use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration, Permission};
use cdkd_aws_common::{aws_error, optional, physical_name, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, GetAttributeRequest,
    GetAttributeResult, ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::auto_delete;
use crate::configurations::Call;
use crate::keyed_configurations;

const TYPE: &str = "AWS::S3::Bucket";

/// The configurations applied after creation, each by its own call.
const CONFIGURATIONS: &[&str] = &[
    "VersioningConfiguration",
    "BucketEncryption",
    "PublicAccessBlockConfiguration",
    "OwnershipControls",
    // After OwnershipControls: a canned ACL needs ACLs enabled (not BucketOwnerEnforced).
    "AccessControl",
    "AccelerateConfiguration",
    "LifecycleConfiguration",
    "CorsConfiguration",
    "WebsiteConfiguration",
    "LoggingConfiguration",
    "NotificationConfiguration",
    "ObjectLockConfiguration",
    "ReplicationConfiguration",
    "InventoryConfigurations",
    "AnalyticsConfigurations",
    "MetricsConfigurations",
    "IntelligentTieringConfigurations",
    "Tags",
];

const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
const AUTHENTICATED_USERS: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
const LOG_DELIVERY: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";

/// The `AccessControl` value whose canned ACL gives exactly these group grants (the owner's
/// FULL_CONTROL aside); `None` for an ACL no canned one gives. A bucket-level read sees
/// `BucketOwnerRead` / `BucketOwnerFullControl` / `AwsExecRead` as the grants they make.
fn access_control_of(group_grants: &[(String, String)]) -> Option<&'static str> {
    let mut grants: Vec<(&str, &str)> = group_grants
        .iter()
        .map(|(uri, permission)| (uri.as_str(), permission.as_str()))
        .collect();
    grants.sort_unstable();
    match grants.as_slice() {
        [] => Some("Private"),
        [(ALL_USERS, "READ")] => Some("PublicRead"),
        [(ALL_USERS, "READ"), (ALL_USERS, "WRITE")] => Some("PublicReadWrite"),
        [(AUTHENTICATED_USERS, "READ")] => Some("AuthenticatedRead"),
        [(LOG_DELIVERY, "READ_ACP"), (LOG_DELIVERY, "WRITE")] => Some("LogDeliveryWrite"),
        _ => None,
    }
}

#[derive(Default)]
pub struct Bucket;

/// The partition and website-endpoint style of a region.
fn attributes(name: &str, region: &str) -> Map<String, Value> {
    let partition = if region.starts_with("cn-") {
        "aws-cn"
    } else if region.starts_with("us-gov-") {
        "aws-us-gov"
    } else {
        "aws"
    };
    let suffix = if partition == "aws-cn" {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    // Older regions keep the dash form of the website endpoint.
    const DASH_REGIONS: &[&str] = &[
        "us-east-1",
        "us-west-1",
        "us-west-2",
        "eu-west-1",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-northeast-1",
        "sa-east-1",
        "us-gov-west-1",
    ];
    let website = if DASH_REGIONS.contains(&region) {
        format!("http://{name}.s3-website-{region}.{suffix}")
    } else {
        format!("http://{name}.s3-website.{region}.{suffix}")
    };
    json!({
        "Arn": format!("arn:{partition}:s3:::{name}"),
        "DomainName": format!("{name}.s3.{suffix}"),
        "RegionalDomainName": format!("{name}.s3.{region}.{suffix}"),
        "DualStackDomainName": format!("{name}.s3.dualstack.{region}.{suffix}"),
        "WebsiteURL": website,
    })
    .as_object()
    .cloned()
    .unwrap_or_default()
}

/// A bucket reads back as its name and the configurations read here (versioning, encryption,
/// public access block, tags); a bucket HeadBucket does not find is gone.
#[async_trait]
impl Readable for Bucket {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let client = crate::client(ctx).await?;
        let bucket = request.physical_id.as_str();
        let head = client.head_bucket().bucket(bucket).send().await;
        if optional(&format!("{what}: HeadBucket"), head)?.is_none() {
            return Ok(None);
        }
        let mut properties = Map::new();
        properties.insert("BucketName".into(), json!(bucket));
        let read = |operation: &str| format!("{what}: {operation} {bucket}");
        if let Some(versioning) = optional(
            &read("GetBucketVersioning"),
            client.get_bucket_versioning().bucket(bucket).send().await,
        )? {
            if let Some(status) = versioning.status() {
                properties.insert(
                    "VersioningConfiguration".into(),
                    json!({"Status": status.as_str()}),
                );
            }
        }
        if let Some(encryption) = optional(
            &read("GetBucketEncryption"),
            client.get_bucket_encryption().bucket(bucket).send().await,
        )? {
            let rules: Vec<Value> = encryption
                .server_side_encryption_configuration()
                .map(|c| c.rules())
                .unwrap_or_default()
                .iter()
                .map(|rule| {
                    let default = rule.apply_server_side_encryption_by_default();
                    let mut by_default = json!({
                        "SSEAlgorithm": default.map(|d| d.sse_algorithm().as_str()),
                    });
                    // A key id AWS does not report is left out, not stored as null.
                    if let Some(key) = default.and_then(|d| d.kms_master_key_id()) {
                        by_default["KMSMasterKeyID"] = json!(key);
                    }
                    json!({"ServerSideEncryptionByDefault": by_default})
                })
                .collect();
            properties.insert(
                "BucketEncryption".into(),
                json!({"ServerSideEncryptionConfiguration": rules}),
            );
        }
        if let Some(block) = optional(
            &read("GetPublicAccessBlock"),
            client.get_public_access_block().bucket(bucket).send().await,
        )? {
            if let Some(c) = block.public_access_block_configuration() {
                properties.insert(
                    "PublicAccessBlockConfiguration".into(),
                    json!({"BlockPublicAcls": c.block_public_acls(), "BlockPublicPolicy": c.block_public_policy(),
                           "IgnorePublicAcls": c.ignore_public_acls(), "RestrictPublicBuckets": c.restrict_public_buckets()}),
                );
            }
        }
        if let Some(tagging) = optional(
            &read("GetBucketTagging"),
            client.get_bucket_tagging().bucket(bucket).send().await,
        )? {
            let tags: Vec<Value> = tagging
                .tag_set()
                .iter()
                .map(|t| json!({"Key": t.key(), "Value": t.value()}))
                .collect();
            properties.insert("Tags".into(), Value::Array(tags));
        }
        let accelerate = client
            .get_bucket_accelerate_configuration()
            .bucket(bucket)
            .send()
            .await
            .map_err(|e| aws_error(&read("GetBucketAccelerateConfiguration"), e))?;
        if let Some(status) = accelerate.status() {
            properties.insert(
                "AccelerateConfiguration".into(),
                json!({"AccelerationStatus": status.as_str()}),
            );
        }
        let acl = client
            .get_bucket_acl()
            .bucket(bucket)
            .send()
            .await
            .map_err(|e| aws_error(&read("GetBucketAcl"), e))?;
        let owner = acl.owner().and_then(|o| o.id());
        let mut group_grants = Vec::new();
        let mut other = false;
        for grant in acl.grants() {
            let grantee = grant.grantee();
            let permission = grant.permission().map(Permission::as_str).unwrap_or("");
            match (grantee.and_then(|g| g.uri()), grantee.and_then(|g| g.id())) {
                (Some(uri), _) => group_grants.push((uri.to_string(), permission.to_string())),
                (None, Some(id)) if Some(id) == owner && permission == "FULL_CONTROL" => {}
                _ => other = true,
            }
        }
        // Private (S3's default) is left out, as a template without AccessControl has it.
        match access_control_of(&group_grants) {
            Some("Private") if !other => {}
            Some(canned) if !other => {
                properties.insert("AccessControl".into(), json!(canned));
            }
            _ => {
                properties.insert("AccessControl".into(), json!("(custom ACL)"));
            }
        }
        properties.extend(keyed_configurations::read_back(&client, bucket, what).await?);
        Ok(Some(properties))
    }

    /// An adopted bucket's attributes follow from its name and the region.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(attributes(physical_id, ctx.region()))
    }
}

#[async_trait]
impl ResourceProvider for Bucket {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(CONFIGURATIONS)
            .handles(&["BucketName", "ObjectLockEnabled"])
            .create_only(&["BucketName", "ObjectLockEnabled"])
            .read_and_import()
            .operations(&[operation::GET_ATTRIBUTE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = match request.properties.get("BucketName").and_then(Value::as_str) {
            Some(name) => name.to_string(),
            None => physical_name(&request, 63, true),
        };
        let client = crate::client(ctx).await?;
        let mut create = client.create_bucket().bucket(&name);
        if ctx.region() != "us-east-1" {
            create = create.create_bucket_configuration(
                CreateBucketConfiguration::builder()
                    .location_constraint(BucketLocationConstraint::from(ctx.region()))
                    .build(),
            );
        }
        if request
            .properties
            .get("ObjectLockEnabled")
            .and_then(|v| v.as_bool().or_else(|| v.as_str().map(|s| s == "true")))
            == Some(true)
        {
            create = create.object_lock_enabled_for_bucket(true);
        }
        create
            .send()
            .await
            .map_err(|err| aws_error(&format!("{what}: CreateBucket {name}"), err))?;
        let call = Call {
            client: &client,
            bucket: &name,
            what: what.clone(),
        };
        for property in CONFIGURATIONS {
            if let Some(value) = request.properties.get(*property) {
                if let Err(error) = call.apply(property, Some(value)).await {
                    // The protocol's rule for multi-step creates: a create that fails after
                    // the resource exists undoes its own work, so nothing is left unrecorded.
                    let undone = client.delete_bucket().bucket(&name).send().await;
                    let note = match undone {
                        Ok(_) => format!("; the new bucket {name} was deleted again"),
                        Err(err) => format!(
                            "; the new bucket {name} could not be deleted again ({}), the next deploy, rollback or destroy removes it",
                            aws_error("DeleteBucket", err).message
                        ),
                    };
                    let undone = ProviderError::new(error.kind, format!("{}{note}", error.message));
                    return Err(match error.aws_code() {
                        Some(code) => undone.with_aws_code(code),
                        None => undone,
                    });
                }
            }
        }
        tracing::info!("created bucket {name}");
        Ok(CreateResult {
            attributes: attributes(&name, ctx.region()),
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let client = crate::client(ctx).await?;
        let call = Call {
            client: &client,
            bucket: &request.physical_id,
            what: format!("{TYPE} {}", request.logical_id),
        };
        for property in CONFIGURATIONS {
            let (before, after) = (
                request.previous_properties.get(*property),
                request.properties.get(*property),
            );
            if before != after {
                call.apply(property, after).await?;
            }
        }
        Ok(UpdateResult {
            attributes: attributes(&request.physical_id, ctx.region()),
            physical_id: request.physical_id,
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let bucket = request.physical_id.as_str();
        let client = crate::client(ctx).await?;
        // A logging bucket can be written to between an emptying and the delete: a few rounds.
        for _ in 0..5 {
            let err = match client.delete_bucket().bucket(bucket).send().await {
                Ok(_) => return Ok(DeleteResult::Deleted),
                Err(err) => aws_error(&format!("{what}: DeleteBucket {bucket}"), err),
            };
            match err.kind {
                ErrorKind::NOT_FOUND => return Ok(DeleteResult::Deleted),
                ErrorKind::CONFLICT => {
                    if !auto_delete::marked(&client, bucket, &what).await? {
                        return Err(ProviderError::new(
                            ErrorKind::CONFLICT,
                            format!("{what}: bucket {bucket} is not empty, and CloudFormation (like cdkd) deletes only empty buckets; empty it (`aws s3 rm s3://{bucket} --recursive`, and its old versions if versioned), or give it `autoDeleteObjects: true` in the app, then delete again"),
                        )
                        .with_aws_code("BucketNotEmpty"));
                    }
                    let removed = auto_delete::empty(&client, bucket, &what).await?;
                    tracing::info!(
                        "{what}: {removed} object versions written after autoDeleteObjects emptied {bucket} were deleted"
                    );
                }
                _ => return Err(err),
            }
        }
        Err(ProviderError::new(
            ErrorKind::CONFLICT,
            format!("{what}: bucket {bucket} ({}) filled up again after each of 5 emptyings; stop what writes to it (access logs, load balancer logs) and delete again", auto_delete::TAG),
        )
        .with_aws_code("BucketNotEmpty"))
    }

    async fn get_attribute(
        &self,
        ctx: &PluginContext,
        request: GetAttributeRequest,
    ) -> Result<GetAttributeResult, ProviderError> {
        Ok(GetAttributeResult {
            value: attributes(&request.physical_id, ctx.region()).remove(&request.attribute),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::configurations::canned_acl;
    use aws_sdk_s3::types::BucketCannedAcl;

    #[test]
    fn attributes_follow_the_region_and_partition() {
        let attrs = attributes("logs", "eu-central-1");
        assert_eq!(attrs["Arn"], "arn:aws:s3:::logs");
        assert_eq!(
            attrs["RegionalDomainName"],
            "logs.s3.eu-central-1.amazonaws.com"
        );
        assert_eq!(
            attrs["WebsiteURL"],
            "http://logs.s3-website.eu-central-1.amazonaws.com"
        );
        assert_eq!(
            attributes("logs", "us-east-1")["WebsiteURL"],
            "http://logs.s3-website-us-east-1.amazonaws.com"
        );
        assert_eq!(attributes("x", "cn-north-1")["Arn"], "arn:aws-cn:s3:::x");
    }

    #[test]
    fn the_schema_declares_every_applied_configuration() {
        let schema = Bucket.schema();
        for property in CONFIGURATIONS {
            assert!(
                schema.handled_properties.iter().any(|h| h == property),
                "{property}"
            );
        }
        assert!(
            !schema.handled_properties.iter().any(|h| h == "AbacStatus"),
            "not applied, so not declared"
        );
        let at = |p: &str| CONFIGURATIONS.iter().position(|c| *c == p).unwrap();
        assert!(
            at("OwnershipControls") < at("AccessControl"),
            "a canned ACL needs ACLs enabled first"
        );
    }

    #[test]
    fn access_control_maps_to_canned_acls_and_back() {
        assert_eq!(
            canned_acl(Some(&json!("LogDeliveryWrite")))
                .unwrap()
                .as_str(),
            "log-delivery-write"
        );
        assert_eq!(canned_acl(None).unwrap(), BucketCannedAcl::Private);
        assert_eq!(
            canned_acl(Some(&json!("public-read"))).unwrap(),
            BucketCannedAcl::PublicRead
        );
        assert!(canned_acl(Some(&json!("Everyone"))).is_err());
        let grants = |g: &[(&str, &str)]| {
            g.iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(access_control_of(&[]), Some("Private"));
        assert_eq!(
            access_control_of(&grants(&[
                (LOG_DELIVERY, "WRITE"),
                (LOG_DELIVERY, "READ_ACP")
            ])),
            Some("LogDeliveryWrite")
        );
        assert_eq!(
            access_control_of(&grants(&[(ALL_USERS, "WRITE"), (ALL_USERS, "READ")])),
            Some("PublicReadWrite")
        );
        assert_eq!(
            access_control_of(&grants(&[(ALL_USERS, "FULL_CONTROL")])),
            None
        );
    }
}
