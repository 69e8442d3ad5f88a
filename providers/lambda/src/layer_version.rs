//! `AWS::Lambda::LayerVersion`: one published, immutable layer version. Physical id (and `Ref`)
//! = the layer version ARN; every property is create-only, so a change publishes a new version.

use cdkd_aws_common::{
    aws_error, deleted_unless_failed, given_or_generated_name, require_str, string, strings,
};
use cdkd_aws_common::{optional, put};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use aws_sdk_lambda::types::{Architecture, LayerVersionContentInput, Runtime};

use crate::client;

/// The provider.
#[derive(Default)]
pub struct LayerVersion;

const TYPE: &str = "AWS::Lambda::LayerVersion";

const PROPERTIES: [&str; 6] = [
    "Content",
    "LayerName",
    "Description",
    "CompatibleRuntimes",
    "CompatibleArchitectures",
    "LicenseInfo",
];

/// The layer name and version number in a layer version ARN
/// (`arn:aws:lambda:<region>:<account>:layer:<name>:<version>`).
pub fn parse_arn(arn: &str) -> Option<(&str, i64)> {
    let mut parts = arn.rsplitn(3, ':');
    let version = parts.next()?.parse().ok()?;
    let name = parts.next()?;
    (parts.next()?.ends_with(":layer")).then_some((name, version))
}

/// `AWS::Lambda::LayerVersion` by layer version ARN. `Content` cannot be read back (Lambda
/// hands out a download link, not the S3 location it was published from).
async fn current(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let (name, number) = parse_arn(arn).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: {arn} is not a layer version ARN (…:layer:<name>:<version>)"
        ))
    })?;
    let Some(layer) = optional(
        &format!("{what}: GetLayerVersion"),
        lambda
            .get_layer_version()
            .layer_name(name)
            .version_number(number)
            .send()
            .await,
    )?
    else {
        return Ok(None);
    };
    let mut props = Map::new();
    props.insert("LayerName".into(), json!(name));
    put(
        &mut props,
        "Description",
        layer
            .description()
            .filter(|d| !d.is_empty())
            .map(|d| json!(d)),
    );
    if !layer.compatible_runtimes().is_empty() {
        props.insert(
            "CompatibleRuntimes".into(),
            json!(layer
                .compatible_runtimes()
                .iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()),
        );
    }
    if !layer.compatible_architectures().is_empty() {
        props.insert(
            "CompatibleArchitectures".into(),
            json!(layer
                .compatible_architectures()
                .iter()
                .map(|a| a.as_str())
                .collect::<Vec<_>>()),
        );
    }
    put(
        &mut props,
        "LicenseInfo",
        layer.license_info().map(|l| json!(l)),
    );
    Ok(Some(props))
}

#[async_trait]
impl Readable for LayerVersion {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let lambda = client(ctx).await?;
        current(&lambda, what, &request.physical_id).await
    }
}

#[async_trait]
impl ResourceProvider for LayerVersion {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&PROPERTIES)
            .all_create_only()
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let content = props
            .get("Content")
            .and_then(Value::as_object)
            .ok_or_else(|| {
                ProviderError::validation(format!(
                    "{what}: property Content is required (S3Bucket and S3Key)"
                ))
            })?;
        let name = given_or_generated_name(&request, "LayerName", 140, false);
        let published = client(ctx)
            .await?
            .publish_layer_version()
            .layer_name(&name)
            .content(
                LayerVersionContentInput::builder()
                    .s3_bucket(require_str(content, "S3Bucket", &what)?)
                    .s3_key(require_str(content, "S3Key", &what)?)
                    .set_s3_object_version(string(content.get("S3ObjectVersion")))
                    .build(),
            )
            .set_description(string(props.get("Description")))
            .set_license_info(string(props.get("LicenseInfo")))
            .set_compatible_runtimes(
                strings(props.get("CompatibleRuntimes"))
                    .map(|r| r.iter().map(|r| Runtime::from(r.as_str())).collect()),
            )
            .set_compatible_architectures(
                strings(props.get("CompatibleArchitectures"))
                    .map(|a| a.iter().map(|a| Architecture::from(a.as_str())).collect()),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: PublishLayerVersion {name}"), e))?;
        Ok(CreateResult {
            physical_id: published
                .layer_version_arn()
                .unwrap_or_default()
                .to_string(),
            attributes: Map::new(),
            ..Default::default()
        })
    }

    /// Every property is create-only, so the engine replaces on any property change; what is
    /// left to update (nothing AWS stores) keeps the version.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
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
        let what = format!("{TYPE} {}", request.logical_id);
        let (name, version) = parse_arn(&request.physical_id).ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: physical id {} is not a layer version ARN",
                request.physical_id
            ))
        })?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_layer_version()
                .layer_name(name)
                .version_number(version)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: DeleteLayerVersion"), e)),
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn layer_version_arns_give_name_and_version() {
        assert_eq!(
            super::parse_arn("arn:aws:lambda:us-east-1:123456789012:layer:deps:3"),
            Some(("deps", 3))
        );
        assert_eq!(
            super::parse_arn("arn:aws:lambda:us-east-1:123:function:fn"),
            None
        );
        assert_eq!(super::parse_arn("deps"), None);
    }
}
