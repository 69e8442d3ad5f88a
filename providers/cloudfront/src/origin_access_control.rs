//! `AWS::CloudFront::OriginAccessControl`: `OriginAccessControlConfig` (how CloudFront signs its
//! requests to an S3, MediaStore, Lambda URL or MediaPackage origin); see
//! [`crate::named_config`]. Attribute `Id`.

use aws_sdk_cloudfront::types::OriginAccessControlConfig;
use cdkd_provider_api::{async_trait, ProviderError};
use serde_json::Value;

use crate::named_config::{s, Live, NamedConfig, Shape};
use crate::{built, etag, failed};

/// The `AWS::CloudFront::OriginAccessControl` type.
pub struct OriginAccessControl;

fn to_config(
    what: &str,
    config: &Value,
    name: &str,
) -> Result<OriginAccessControlConfig, ProviderError> {
    let required = |key: &str| {
        s(config, key).ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: OriginAccessControlConfig.{key} is required"
            ))
        })
    };
    built(
        what,
        OriginAccessControlConfig::builder()
            .name(name)
            .set_description(s(config, "Description"))
            .signing_protocol(required("SigningProtocol")?.as_str().into())
            .signing_behavior(required("SigningBehavior")?.as_str().into())
            .origin_access_control_origin_type(
                required("OriginAccessControlOriginType")?.as_str().into(),
            )
            .build(),
    )
}

fn shape(config: &OriginAccessControlConfig) -> Value {
    Shape::default()
        .put("Name", Some(config.name()))
        .text("Description", config.description())
        .put("SigningProtocol", Some(config.signing_protocol().as_str()))
        .put("SigningBehavior", Some(config.signing_behavior().as_str()))
        .put(
            "OriginAccessControlOriginType",
            Some(config.origin_access_control_origin_type().as_str()),
        )
        .done()
}

#[async_trait]
impl NamedConfig for OriginAccessControl {
    const TYPE: &'static str = "AWS::CloudFront::OriginAccessControl";
    const CONFIG: &'static str = "OriginAccessControlConfig";
    const MAX_NAME: usize = 64;
    const MODIFIED: bool = false;
    type Config = OriginAccessControlConfig;

    fn to_sdk(what: &str, config: &Value, name: &str) -> Result<Self::Config, ProviderError> {
        to_config(what, config, name)
    }

    fn shape(config: &Self::Config) -> Value {
        shape(config)
    }

    async fn create(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        config: Self::Config,
    ) -> Result<(String, Live<()>), ProviderError> {
        let name = config.name().to_string();
        let answer = cf
            .create_origin_access_control()
            .origin_access_control_config(config)
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateOriginAccessControl {name}")))?;
        let control = answer.origin_access_control().ok_or_else(|| {
            ProviderError::other(format!(
                "{what}: CreateOriginAccessControl returned no control"
            ))
        })?;
        Ok((
            control.id().to_string(),
            Live {
                config: (),
                modified: None,
                etag: answer.e_tag().unwrap_or_default().to_string(),
            },
        ))
    }

    async fn get(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
    ) -> Result<Option<Live<Self::Config>>, ProviderError> {
        let answer = cdkd_aws_common::found(
            cf.get_origin_access_control()
                .id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetOriginAccessControl {id}"))),
        )?;
        let Some(answer) = answer else {
            return Ok(None);
        };
        let Some(config) = answer
            .origin_access_control()
            .and_then(|c| c.origin_access_control_config())
        else {
            return Ok(None);
        };
        Ok(Some(Live {
            config: config.clone(),
            modified: None,
            etag: etag(what, answer.e_tag())?,
        }))
    }

    async fn update(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
        etag: &str,
        config: Self::Config,
    ) -> Result<Option<aws_sdk_cloudfront::primitives::DateTime>, ProviderError> {
        cf.update_origin_access_control()
            .id(id)
            .if_match(etag)
            .origin_access_control_config(config)
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateOriginAccessControl {id}")))?;
        Ok(None)
    }

    async fn delete(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
        etag: &str,
    ) -> Result<(), ProviderError> {
        cf.delete_origin_access_control()
            .id(id)
            .if_match(etag)
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: DeleteOriginAccessControl {id}")))
    }

    async fn find(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        name: &str,
    ) -> Result<Option<String>, ProviderError> {
        let mut marker: Option<String> = None;
        loop {
            let answer = cf
                .list_origin_access_controls()
                .set_marker(marker.take())
                .send()
                .await
                .map_err(failed!(format!("{what}: ListOriginAccessControls")))?;
            let Some(list) = answer.origin_access_control_list() else {
                return Ok(None);
            };
            if let Some(found) = list.items().iter().find(|c| c.name() == name) {
                return Ok(Some(found.id().to_string()));
            }
            match list.next_marker() {
                Some(next) if !next.is_empty() && list.is_truncated() => {
                    marker = Some(next.to_string())
                }
                _ => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_origin_access_control_travels_both_ways_and_needs_its_settings() {
        let template = json!({
            "Name": "site-oac",
            "OriginAccessControlOriginType": "s3",
            "SigningBehavior": "always",
            "SigningProtocol": "sigv4"
        });
        let sdk = to_config("w", &template, "site-oac").unwrap();
        assert_eq!(shape(&sdk), template);
        let err = to_config("w", &json!({"SigningProtocol": "sigv4"}), "n").unwrap_err();
        assert!(err.message.contains("SigningBehavior"), "{}", err.message);
    }
}
