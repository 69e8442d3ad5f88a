//! `AWS::S3::BucketPolicy`: the policy document of one bucket; the physical id is the bucket.

use cdkd_aws_common::{aws_error, deleted_unless_failed, optional, require_str};
use cdkd_aws_common::{policy_principals, while_iam_propagates, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

const TYPE: &str = "AWS::S3::BucketPolicy";

#[derive(Default)]
pub struct BucketPolicy;

async fn put(
    ctx: &PluginContext,
    logical_id: &str,
    properties: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let what = format!("{TYPE} {logical_id}");
    let bucket = require_str(properties, "Bucket", &what)?.to_string();
    let document = properties.get("PolicyDocument").ok_or_else(|| {
        ProviderError::validation(format!("{what}: property PolicyDocument is required"))
    })?;
    let document = match document {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let s3 = crate::client(ctx).await?;
    let put = || async {
        s3.put_bucket_policy()
            .bucket(&bucket)
            .policy(&document)
            .send()
            .await
            .map(|_| ())
            .map_err(|err| aws_error(&format!("{what}: PutBucketPolicy on {bucket}"), err))
    };
    // S3 refuses a principal too new for it to know ("Invalid principal in policy") until IAM
    // has propagated it: a role or user of the same run.
    let principals = policy_principals(&Value::String(document.clone()));
    if principals.starts_with("the principals") {
        let unknown = |e: &ProviderError| e.message.contains("Invalid principal in policy");
        while_iam_propagates(&principals, unknown, put).await?;
    } else {
        put().await?;
    }
    Ok(bucket)
}

/// A policy reads back as its bucket and document; a bucket without one (or without the bucket)
/// has none.
#[async_trait]
impl Readable for BucketPolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let answer = crate::client(ctx)
            .await?
            .get_bucket_policy()
            .bucket(&request.physical_id)
            .send()
            .await;
        let Some(answer) = optional(&format!("{what}: GetBucketPolicy"), answer)? else {
            return Ok(None);
        };
        let document = answer
            .policy()
            .and_then(|p| serde_json::from_str::<Value>(p).ok())
            .unwrap_or(Value::Null);
        let properties = json!({"Bucket": request.physical_id, "PolicyDocument": document});
        Ok(properties.as_object().cloned())
    }
}

#[async_trait]
impl ResourceProvider for BucketPolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["Bucket", "PolicyDocument"])
            .create_only(&["Bucket"])
            .read_and_import()
            // Its create is an upsert: repeated after a crash it makes nothing twice.
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let bucket = put(ctx, &request.logical_id, &request.properties).await?;
        Ok(CreateResult {
            physical_id: bucket,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let bucket = put(ctx, &request.logical_id, &request.properties).await?;
        Ok(UpdateResult {
            physical_id: bucket,
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
        deleted_unless_failed(
            crate::client(ctx)
                .await?
                .delete_bucket_policy()
                .bucket(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|err| {
                    aws_error(
                        &format!(
                            "{TYPE} {}: DeleteBucketPolicy on {}",
                            request.logical_id, request.physical_id
                        ),
                        err,
                    )
                }),
        )
    }
}
