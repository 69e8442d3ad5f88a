//! `AWS::S3::BucketPolicy`: the policy document of one bucket; the physical id is the bucket.

use cdkd_aws_common::{aws_error, require_str};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
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
    crate::client(ctx)
        .await?
        .put_bucket_policy()
        .bucket(&bucket)
        .policy(document)
        .send()
        .await
        .map_err(|err| aws_error(&format!("{what}: PutBucketPolicy on {bucket}"), err))?;
    Ok(bucket)
}

#[async_trait]
impl ResourceProvider for BucketPolicy {
    fn schema(&self) -> ResourceTypeSchema {
        ResourceTypeSchema {
            type_name: TYPE.into(),
            handled_properties: vec!["Bucket".into(), "PolicyDocument".into()],
            create_only_properties: vec!["Bucket".into()],
            operations: vec![
                operation::READ_CURRENT_STATE.into(),
                operation::IMPORT.into(),
            ],
            ..ResourceTypeSchema::default()
        }
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
        match crate::client(ctx)
            .await?
            .delete_bucket_policy()
            .bucket(&request.physical_id)
            .send()
            .await
        {
            Ok(_) => Ok(DeleteResult::Deleted),
            Err(err) => {
                let err = aws_error(
                    &format!(
                        "{TYPE} {}: DeleteBucketPolicy on {}",
                        request.logical_id, request.physical_id
                    ),
                    err,
                );
                if err.kind == ErrorKind::NOT_FOUND {
                    Ok(DeleteResult::Deleted)
                } else {
                    Err(err)
                }
            }
        }
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        match crate::client(ctx)
            .await?
            .get_bucket_policy()
            .bucket(&request.physical_id)
            .send()
            .await
        {
            Ok(answer) => {
                let document = answer
                    .policy()
                    .and_then(|p| serde_json::from_str::<Value>(p).ok())
                    .unwrap_or(Value::Null);
                let properties = json!({"Bucket": request.physical_id, "PolicyDocument": document});
                Ok(ReadCurrentStateResult {
                    properties: properties.as_object().cloned(),
                })
            }
            Err(err) => {
                let err = aws_error(
                    &format!("{TYPE} {}: GetBucketPolicy", request.logical_id),
                    err,
                );
                if err.kind == ErrorKind::NOT_FOUND {
                    Ok(ReadCurrentStateResult { properties: None })
                } else {
                    Err(err)
                }
            }
        }
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let current = self
            .read_current_state(
                ctx,
                ReadCurrentStateRequest {
                    logical_id: request.logical_id.clone(),
                    physical_id: request.physical_id.clone(),
                    properties: request.properties,
                },
            )
            .await?;
        match current.properties {
            Some(_) => Ok(CreateResult {
                physical_id: request.physical_id,
                attributes: Map::new(),
                ..Default::default()
            }),
            None => Err(ProviderError::new(
                ErrorKind::NOT_FOUND,
                format!(
                    "{TYPE} {}: bucket {} has no policy to import",
                    request.logical_id, request.physical_id
                ),
            )),
        }
    }
}
