//! `AWS::CloudFront::OriginAccessControl`: `OriginAccessControlConfig` (how CloudFront signs its
//! requests to an S3, MediaStore, Lambda URL or MediaPackage origin); see
//! [`crate::named_config`]. Attribute `Id`.

use aws_sdk_cloudfront::types::OriginAccessControlConfig;
use cdkd_provider_api::ProviderError;
use serde_json::Value;

use crate::built;
use crate::named_config::{s, Shape};

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

crate::named_config::named_config! {
    control OriginAccessControl: OriginAccessControlConfig {
        max_name: 64,
        calls: create_origin_access_control, get_origin_access_control, update_origin_access_control,
            delete_origin_access_control,
        list: list_origin_access_controls / "ListOriginAccessControls",
        fields: origin_access_control, origin_access_control_config, origin_access_control_list,
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
