//! `AWS::CloudFront::OriginRequestPolicy`: `OriginRequestPolicyConfig` (the headers, cookies and
//! query strings sent to the origin); see [`crate::named_config`].

use aws_sdk_cloudfront::types::{
    OriginRequestPolicyConfig, OriginRequestPolicyCookiesConfig, OriginRequestPolicyHeadersConfig,
    OriginRequestPolicyQueryStringsConfig, OriginRequestPolicyType,
};
use cdkd_provider_api::ProviderError;
use serde_json::Value;

use crate::built;
use crate::cache_policy::{behavior, cookie_names, headers, names, part_shape, query_string_names};
use crate::named_config::{o, s, Shape};

/// The `AWS::CloudFront::OriginRequestPolicy` type.
pub struct OriginRequestPolicy;

fn to_config(
    what: &str,
    config: &Value,
    name: &str,
) -> Result<OriginRequestPolicyConfig, ProviderError> {
    let headers_config = o(config, "HeadersConfig").cloned().unwrap_or_default();
    let cookies_config = o(config, "CookiesConfig").cloned().unwrap_or_default();
    let query_config = o(config, "QueryStringsConfig").cloned().unwrap_or_default();
    built(
        what,
        OriginRequestPolicyConfig::builder()
            .name(name)
            .set_comment(s(config, "Comment"))
            .headers_config(built(
                what,
                OriginRequestPolicyHeadersConfig::builder()
                    .header_behavior(behavior(&headers_config, "HeaderBehavior").as_str().into())
                    .set_headers(names(&headers_config, "Headers").map(headers))
                    .build(),
            )?)
            .cookies_config(built(
                what,
                OriginRequestPolicyCookiesConfig::builder()
                    .cookie_behavior(behavior(&cookies_config, "CookieBehavior").as_str().into())
                    .set_cookies(names(&cookies_config, "Cookies").map(cookie_names))
                    .build(),
            )?)
            .query_strings_config(built(
                what,
                OriginRequestPolicyQueryStringsConfig::builder()
                    .query_string_behavior(
                        behavior(&query_config, "QueryStringBehavior")
                            .as_str()
                            .into(),
                    )
                    .set_query_strings(names(&query_config, "QueryStrings").map(query_string_names))
                    .build(),
            )?)
            .build(),
    )
}

fn shape(config: &OriginRequestPolicyConfig) -> Value {
    Shape::default()
        .put("Name", Some(config.name()))
        .text("Comment", config.comment())
        .put(
            "HeadersConfig",
            config.headers_config().map(|h| {
                part_shape(
                    "HeaderBehavior",
                    h.header_behavior().as_str(),
                    "Headers",
                    h.headers().map(|n| n.items()).unwrap_or_default(),
                )
            }),
        )
        .put(
            "CookiesConfig",
            config.cookies_config().map(|c| {
                part_shape(
                    "CookieBehavior",
                    c.cookie_behavior().as_str(),
                    "Cookies",
                    c.cookies().map(|n| n.items()).unwrap_or_default(),
                )
            }),
        )
        .put(
            "QueryStringsConfig",
            config.query_strings_config().map(|q| {
                part_shape(
                    "QueryStringBehavior",
                    q.query_string_behavior().as_str(),
                    "QueryStrings",
                    q.query_strings().map(|n| n.items()).unwrap_or_default(),
                )
            }),
        )
        .done()
}

crate::named_config::named_config! {
    policy OriginRequestPolicy: OriginRequestPolicyConfig {
        max_name: 128,
        calls: create_origin_request_policy, get_origin_request_policy, update_origin_request_policy,
            delete_origin_request_policy,
        list: list_origin_request_policies / "ListOriginRequestPolicies" (OriginRequestPolicyType::Custom),
        fields: origin_request_policy, origin_request_policy_config, origin_request_policy_list,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_origin_request_policy_travels_both_ways_in_template_shape() {
        let template = json!({
            "Name": "api",
            "Comment": "to the API",
            "CookiesConfig": {"CookieBehavior": "all"},
            "HeadersConfig": {"HeaderBehavior": "whitelist", "Headers": ["authorization", "x-b"]},
            "QueryStringsConfig": {"QueryStringBehavior": "all"}
        });
        let sdk = to_config("w", &template, "api").unwrap();
        assert_eq!(shape(&sdk), template);
    }
}
