//! `AWS::CloudFront::ResponseHeadersPolicy`: `ResponseHeadersPolicyConfig` (CORS, security
//! headers, custom and removed headers, Server-Timing); see [`crate::named_config`].

use aws_sdk_cloudfront::types::{
    ResponseHeadersPolicyAccessControlAllowHeaders, ResponseHeadersPolicyAccessControlAllowMethods,
    ResponseHeadersPolicyAccessControlAllowOrigins,
    ResponseHeadersPolicyAccessControlExposeHeaders, ResponseHeadersPolicyConfig,
    ResponseHeadersPolicyContentSecurityPolicy, ResponseHeadersPolicyContentTypeOptions,
    ResponseHeadersPolicyCorsConfig, ResponseHeadersPolicyCustomHeader,
    ResponseHeadersPolicyCustomHeadersConfig, ResponseHeadersPolicyFrameOptions,
    ResponseHeadersPolicyReferrerPolicy, ResponseHeadersPolicyRemoveHeader,
    ResponseHeadersPolicyRemoveHeadersConfig, ResponseHeadersPolicySecurityHeadersConfig,
    ResponseHeadersPolicyServerTimingHeadersConfig, ResponseHeadersPolicyStrictTransportSecurity,
    ResponseHeadersPolicyType, ResponseHeadersPolicyXssProtection,
};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Value};

use crate::built;
use crate::named_config::{b, list, n32, o, objects, s, Shape};

/// The `AWS::CloudFront::ResponseHeadersPolicy` type.
pub struct ResponseHeadersPolicy;

/// A template's `{Items: [...]}` list.
fn items(value: &Value, key: &str) -> Vec<String> {
    o(value, key).map(|v| list(v, "Items")).unwrap_or_default()
}

fn cors(what: &str, c: &Value) -> Result<ResponseHeadersPolicyCorsConfig, ProviderError> {
    let origins = items(c, "AccessControlAllowOrigins");
    let headers = items(c, "AccessControlAllowHeaders");
    let methods = items(c, "AccessControlAllowMethods");
    let expose = o(c, "AccessControlExposeHeaders").map(|_| items(c, "AccessControlExposeHeaders"));
    built(
        what,
        ResponseHeadersPolicyCorsConfig::builder()
            .access_control_allow_origins(built(
                what,
                ResponseHeadersPolicyAccessControlAllowOrigins::builder()
                    .quantity(origins.len() as i32)
                    .set_items(Some(origins))
                    .build(),
            )?)
            .access_control_allow_headers(built(
                what,
                ResponseHeadersPolicyAccessControlAllowHeaders::builder()
                    .quantity(headers.len() as i32)
                    .set_items(Some(headers))
                    .build(),
            )?)
            .access_control_allow_methods(built(
                what,
                ResponseHeadersPolicyAccessControlAllowMethods::builder()
                    .quantity(methods.len() as i32)
                    .set_items(Some(methods.iter().map(|m| m.as_str().into()).collect()))
                    .build(),
            )?)
            .access_control_allow_credentials(
                b(c, "AccessControlAllowCredentials").unwrap_or(false),
            )
            .set_access_control_expose_headers(
                expose
                    .map(|e| {
                        built(
                            what,
                            ResponseHeadersPolicyAccessControlExposeHeaders::builder()
                                .quantity(e.len() as i32)
                                .set_items(Some(e).filter(|e| !e.is_empty()))
                                .build(),
                        )
                    })
                    .transpose()?,
            )
            .set_access_control_max_age_sec(n32(c, "AccessControlMaxAgeSec"))
            .origin_override(b(c, "OriginOverride").unwrap_or(false))
            .build(),
    )
}

fn security(
    what: &str,
    c: &Value,
) -> Result<ResponseHeadersPolicySecurityHeadersConfig, ProviderError> {
    let flag = |v: &Value, k: &str| b(v, k).unwrap_or(false);
    let mut builder = ResponseHeadersPolicySecurityHeadersConfig::builder();
    if let Some(v) = o(c, "ContentSecurityPolicy") {
        builder = builder.content_security_policy(built(
            what,
            ResponseHeadersPolicyContentSecurityPolicy::builder()
                .r#override(flag(v, "Override"))
                .content_security_policy(s(v, "ContentSecurityPolicy").unwrap_or_default())
                .build(),
        )?);
    }
    if let Some(v) = o(c, "ContentTypeOptions") {
        builder = builder.content_type_options(built(
            what,
            ResponseHeadersPolicyContentTypeOptions::builder()
                .r#override(flag(v, "Override"))
                .build(),
        )?);
    }
    if let Some(v) = o(c, "FrameOptions") {
        builder = builder.frame_options(built(
            what,
            ResponseHeadersPolicyFrameOptions::builder()
                .r#override(flag(v, "Override"))
                .frame_option(s(v, "FrameOption").unwrap_or_default().as_str().into())
                .build(),
        )?);
    }
    if let Some(v) = o(c, "ReferrerPolicy") {
        builder = builder.referrer_policy(built(
            what,
            ResponseHeadersPolicyReferrerPolicy::builder()
                .r#override(flag(v, "Override"))
                .referrer_policy(s(v, "ReferrerPolicy").unwrap_or_default().as_str().into())
                .build(),
        )?);
    }
    if let Some(v) = o(c, "StrictTransportSecurity") {
        builder = builder.strict_transport_security(built(
            what,
            ResponseHeadersPolicyStrictTransportSecurity::builder()
                .r#override(flag(v, "Override"))
                .set_include_subdomains(b(v, "IncludeSubdomains"))
                .set_preload(b(v, "Preload"))
                .access_control_max_age_sec(n32(v, "AccessControlMaxAgeSec").unwrap_or(0))
                .build(),
        )?);
    }
    if let Some(v) = o(c, "XSSProtection") {
        builder = builder.xss_protection(built(
            what,
            ResponseHeadersPolicyXssProtection::builder()
                .r#override(flag(v, "Override"))
                .protection(flag(v, "Protection"))
                .set_mode_block(b(v, "ModeBlock"))
                .set_report_uri(s(v, "ReportUri"))
                .build(),
        )?);
    }
    Ok(builder.build())
}

fn to_config(
    what: &str,
    config: &Value,
    name: &str,
) -> Result<ResponseHeadersPolicyConfig, ProviderError> {
    let mut builder = ResponseHeadersPolicyConfig::builder()
        .name(name)
        .set_comment(s(config, "Comment"));
    if let Some(c) = o(config, "CorsConfig") {
        builder = builder.cors_config(cors(what, c)?);
    }
    if let Some(c) = o(config, "SecurityHeadersConfig") {
        builder = builder.security_headers_config(security(what, c)?);
    }
    if let Some(c) = o(config, "ServerTimingHeadersConfig") {
        builder = builder.server_timing_headers_config(built(
            what,
            ResponseHeadersPolicyServerTimingHeadersConfig::builder()
                .enabled(b(c, "Enabled").unwrap_or(false))
                .set_sampling_rate(c.get("SamplingRate").and_then(|r| {
                    r.as_f64()
                        .or_else(|| r.as_str().and_then(|s| s.parse().ok()))
                }))
                .build(),
        )?);
    }
    if let Some(c) = o(config, "CustomHeadersConfig") {
        let headers = objects(c, "Items")
            .into_iter()
            .map(|h| {
                built(
                    what,
                    ResponseHeadersPolicyCustomHeader::builder()
                        .header(s(h, "Header").unwrap_or_default())
                        .value(s(h, "Value").unwrap_or_default())
                        .r#override(b(h, "Override").unwrap_or(false))
                        .build(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        builder = builder.custom_headers_config(built(
            what,
            ResponseHeadersPolicyCustomHeadersConfig::builder()
                .quantity(headers.len() as i32)
                .set_items(Some(headers).filter(|h| !h.is_empty()))
                .build(),
        )?);
    }
    if let Some(c) = o(config, "RemoveHeadersConfig") {
        let headers = objects(c, "Items")
            .into_iter()
            .map(|h| {
                built(
                    what,
                    ResponseHeadersPolicyRemoveHeader::builder()
                        .header(s(h, "Header").unwrap_or_default())
                        .build(),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        builder = builder.remove_headers_config(built(
            what,
            ResponseHeadersPolicyRemoveHeadersConfig::builder()
                .quantity(headers.len() as i32)
                .set_items(Some(headers).filter(|h| !h.is_empty()))
                .build(),
        )?);
    }
    built(what, builder.build())
}

fn items_shape<S: ToString>(items: &[S]) -> Value {
    json!({"Items": items.iter().map(ToString::to_string).collect::<Vec<_>>()})
}

fn shape(config: &ResponseHeadersPolicyConfig) -> Value {
    let cors = config.cors_config().map(|c| {
        Shape::default()
            .put(
                "AccessControlAllowOrigins",
                c.access_control_allow_origins()
                    .map(|v| items_shape(v.items())),
            )
            .put(
                "AccessControlAllowHeaders",
                c.access_control_allow_headers()
                    .map(|v| items_shape(v.items())),
            )
            .put(
                "AccessControlAllowMethods",
                c.access_control_allow_methods().map(|v| {
                    items_shape(&v.items().iter().map(|m| m.as_str()).collect::<Vec<_>>())
                }),
            )
            .put(
                "AccessControlAllowCredentials",
                Some(c.access_control_allow_credentials()),
            )
            .put(
                "AccessControlExposeHeaders",
                c.access_control_expose_headers()
                    .map(|v| items_shape(v.items())),
            )
            .put("AccessControlMaxAgeSec", c.access_control_max_age_sec())
            .put("OriginOverride", Some(c.origin_override()))
            .done()
    });
    let security = config.security_headers_config().map(|c| {
        Shape::default()
            .put(
                "ContentSecurityPolicy",
                c.content_security_policy().map(|v| {
                    json!({"ContentSecurityPolicy": v.content_security_policy(), "Override": v.r#override()})
                }),
            )
            .put(
                "ContentTypeOptions",
                c.content_type_options()
                    .map(|v| json!({"Override": v.r#override()})),
            )
            .put(
                "FrameOptions",
                c.frame_options().map(|v| {
                    json!({"FrameOption": v.frame_option().as_str(), "Override": v.r#override()})
                }),
            )
            .put(
                "ReferrerPolicy",
                c.referrer_policy().map(|v| {
                    json!({"ReferrerPolicy": v.referrer_policy().as_str(), "Override": v.r#override()})
                }),
            )
            .put(
                "StrictTransportSecurity",
                c.strict_transport_security().map(|v| {
                    Shape::default()
                        .put("AccessControlMaxAgeSec", Some(v.access_control_max_age_sec()))
                        .put("IncludeSubdomains", v.include_subdomains())
                        .put("Preload", v.preload())
                        .put("Override", Some(v.r#override()))
                        .done()
                }),
            )
            .put(
                "XSSProtection",
                c.xss_protection().map(|v| {
                    Shape::default()
                        .put("Protection", Some(v.protection()))
                        .put("ModeBlock", v.mode_block())
                        .text("ReportUri", v.report_uri())
                        .put("Override", Some(v.r#override()))
                        .done()
                }),
            )
            .done()
    });
    Shape::default()
        .put("Name", Some(config.name()))
        .text("Comment", config.comment())
        .put("CorsConfig", cors)
        .put("SecurityHeadersConfig", security)
        .put(
            "ServerTimingHeadersConfig",
            config.server_timing_headers_config().map(|c| {
                Shape::default()
                    .put("Enabled", Some(c.enabled()))
                    .put("SamplingRate", c.sampling_rate())
                    .done()
            }),
        )
        .put(
            "CustomHeadersConfig",
            config.custom_headers_config().map(|c| {
                let items: Vec<Value> = c
                    .items()
                    .iter()
                    .map(|h| json!({"Header": h.header(), "Value": h.value(), "Override": h.r#override()}))
                    .collect();
                json!({ "Items": items })
            }),
        )
        .put(
            "RemoveHeadersConfig",
            config.remove_headers_config().map(|c| {
                let items: Vec<Value> = c
                    .items()
                    .iter()
                    .map(|h| json!({"Header": h.header()}))
                    .collect();
                json!({ "Items": items })
            }),
        )
        .done()
}

crate::named_config::named_config! {
    policy ResponseHeadersPolicy: ResponseHeadersPolicyConfig {
        max_name: 128,
        calls: create_response_headers_policy, get_response_headers_policy,
            update_response_headers_policy, delete_response_headers_policy,
        list: list_response_headers_policies / "ListResponseHeadersPolicies"
            (ResponseHeadersPolicyType::Custom),
        fields: response_headers_policy, response_headers_policy_config,
            response_headers_policy_list,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_headers_policy_travels_both_ways_in_template_shape() {
        let template = json!({
            "Name": "headers",
            "Comment": "security headers",
            "CorsConfig": {
                "AccessControlAllowOrigins": {"Items": ["https://example.com"]},
                "AccessControlAllowHeaders": {"Items": ["*"]},
                "AccessControlAllowMethods": {"Items": ["GET", "HEAD"]},
                "AccessControlAllowCredentials": false,
                "AccessControlMaxAgeSec": 600,
                "OriginOverride": true
            },
            "CustomHeadersConfig": {"Items": [{"Header": "x-site", "Override": true, "Value": "website"}]},
            "RemoveHeadersConfig": {"Items": [{"Header": "server"}]},
            "SecurityHeadersConfig": {
                "ContentTypeOptions": {"Override": true},
                "FrameOptions": {"FrameOption": "DENY", "Override": true},
                "StrictTransportSecurity": {"AccessControlMaxAgeSec": 31536000, "IncludeSubdomains": true, "Override": true}
            },
            "ServerTimingHeadersConfig": {"Enabled": true, "SamplingRate": 50.0}
        });
        let sdk = to_config("w", &template, "headers").unwrap();
        assert_eq!(shape(&sdk), template);
    }
}
