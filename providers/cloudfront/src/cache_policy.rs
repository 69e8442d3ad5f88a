//! `AWS::CloudFront::CachePolicy`: `CachePolicyConfig` (TTLs and what goes into the cache key:
//! headers, cookies, query strings, accepted encodings); see [`crate::named_config`].

use aws_sdk_cloudfront::types::{
    CachePolicyConfig, CachePolicyCookiesConfig, CachePolicyHeadersConfig,
    CachePolicyQueryStringsConfig, CachePolicyType, CookieNames, Headers,
    ParametersInCacheKeyAndForwardedToOrigin, QueryStringNames,
};
use cdkd_provider_api::ProviderError;
use serde_json::Value;

use crate::built;
use crate::named_config::{b, list, n64, o, s, Shape};

/// The `AWS::CloudFront::CachePolicy` type.
pub struct CachePolicy;

/// A template's `{Quantity, Items}` list as CloudFront's `Headers`.
pub(crate) fn headers(items: Vec<String>) -> Headers {
    Headers::builder()
        .quantity(items.len() as i32)
        .set_items(Some(items).filter(|i| !i.is_empty()))
        .build()
        .expect("quantity is set")
}

/// Cookie names as CloudFront's `CookieNames`.
pub(crate) fn cookie_names(items: Vec<String>) -> CookieNames {
    CookieNames::builder()
        .quantity(items.len() as i32)
        .set_items(Some(items).filter(|i| !i.is_empty()))
        .build()
        .expect("quantity is set")
}

/// Query string names as CloudFront's `QueryStringNames`.
pub(crate) fn query_string_names(items: Vec<String>) -> QueryStringNames {
    QueryStringNames::builder()
        .quantity(items.len() as i32)
        .set_items(Some(items).filter(|i| !i.is_empty()))
        .build()
        .expect("quantity is set")
}

/// The behavior under `key` of one part of a cache key or origin request (`HeadersConfig`,
/// `CookiesConfig`, `QueryStringsConfig`): CloudFront's `none` when the template gives none.
pub(crate) fn behavior(part: &Value, key: &str) -> String {
    s(part, key).unwrap_or_else(|| "none".into())
}

/// The names listed under `key` of one such part; `None` when it lists none.
pub(crate) fn names(part: &Value, key: &str) -> Option<Vec<String>> {
    Some(list(part, key)).filter(|n| !n.is_empty())
}

/// One such part in template shape: its behavior and the names it lists.
pub(crate) fn part_shape<S: ToString>(
    behavior_key: &str,
    behavior: &str,
    names_key: &str,
    names: &[S],
) -> Value {
    Shape::default()
        .put(behavior_key, Some(behavior))
        .list(names_key, names)
        .done()
}

fn to_config(what: &str, config: &Value, name: &str) -> Result<CachePolicyConfig, ProviderError> {
    let params = o(config, "ParametersInCacheKeyAndForwardedToOrigin")
        .cloned()
        .unwrap_or_default();
    let headers_config = o(&params, "HeadersConfig").cloned().unwrap_or_default();
    let cookies_config = o(&params, "CookiesConfig").cloned().unwrap_or_default();
    let query_config = o(&params, "QueryStringsConfig")
        .cloned()
        .unwrap_or_default();
    let parameters = ParametersInCacheKeyAndForwardedToOrigin::builder()
        .enable_accept_encoding_gzip(b(&params, "EnableAcceptEncodingGzip").unwrap_or(false))
        .set_enable_accept_encoding_brotli(b(&params, "EnableAcceptEncodingBrotli"))
        .headers_config(built(
            what,
            CachePolicyHeadersConfig::builder()
                .header_behavior(behavior(&headers_config, "HeaderBehavior").as_str().into())
                .set_headers(names(&headers_config, "Headers").map(headers))
                .build(),
        )?)
        .cookies_config(built(
            what,
            CachePolicyCookiesConfig::builder()
                .cookie_behavior(behavior(&cookies_config, "CookieBehavior").as_str().into())
                .set_cookies(names(&cookies_config, "Cookies").map(cookie_names))
                .build(),
        )?)
        .query_strings_config(built(
            what,
            CachePolicyQueryStringsConfig::builder()
                .query_string_behavior(
                    behavior(&query_config, "QueryStringBehavior")
                        .as_str()
                        .into(),
                )
                .set_query_strings(names(&query_config, "QueryStrings").map(query_string_names))
                .build(),
        )?)
        .build();
    built(
        what,
        CachePolicyConfig::builder()
            .name(name)
            .set_comment(s(config, "Comment"))
            .min_ttl(n64(config, "MinTTL").unwrap_or(0))
            .set_default_ttl(n64(config, "DefaultTTL"))
            .set_max_ttl(n64(config, "MaxTTL"))
            .parameters_in_cache_key_and_forwarded_to_origin(built(what, parameters)?)
            .build(),
    )
}

fn shape(config: &CachePolicyConfig) -> Value {
    let params = config
        .parameters_in_cache_key_and_forwarded_to_origin()
        .map(|p| {
            Shape::default()
                .put(
                    "EnableAcceptEncodingGzip",
                    Some(p.enable_accept_encoding_gzip()),
                )
                .put(
                    "EnableAcceptEncodingBrotli",
                    p.enable_accept_encoding_brotli(),
                )
                .put(
                    "HeadersConfig",
                    p.headers_config().map(|h| {
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
                    p.cookies_config().map(|c| {
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
                    p.query_strings_config().map(|q| {
                        part_shape(
                            "QueryStringBehavior",
                            q.query_string_behavior().as_str(),
                            "QueryStrings",
                            q.query_strings().map(|n| n.items()).unwrap_or_default(),
                        )
                    }),
                )
                .done()
        });
    Shape::default()
        .put("Name", Some(config.name()))
        .text("Comment", config.comment())
        .put("MinTTL", Some(config.min_ttl()))
        .put("DefaultTTL", config.default_ttl())
        .put("MaxTTL", config.max_ttl())
        .put("ParametersInCacheKeyAndForwardedToOrigin", params)
        .done()
}

crate::named_config::named_config! {
    policy CachePolicy: CachePolicyConfig {
        max_name: 128,
        calls: create_cache_policy, get_cache_policy, update_cache_policy, delete_cache_policy,
        list: list_cache_policies / "ListCachePolicies" (CachePolicyType::Custom),
        fields: cache_policy, cache_policy_config, cache_policy_list,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cache_policy_travels_both_ways_in_template_shape() {
        let template = json!({
            "Name": "pages",
            "Comment": "site pages",
            "DefaultTTL": 300,
            "MaxTTL": "3600",
            "MinTTL": 0,
            "ParametersInCacheKeyAndForwardedToOrigin": {
                "CookiesConfig": {"CookieBehavior": "none"},
                "EnableAcceptEncodingBrotli": true,
                "EnableAcceptEncodingGzip": true,
                "HeadersConfig": {"HeaderBehavior": "whitelist", "Headers": ["x-a"]},
                "QueryStringsConfig": {"QueryStringBehavior": "whitelist", "QueryStrings": ["v"]}
            }
        });
        let sdk = to_config("w", &template, "pages").unwrap();
        assert_eq!(sdk.max_ttl(), Some(3600));
        let mut expected = template.clone();
        expected["MaxTTL"] = json!(3600);
        assert_eq!(shape(&sdk), expected);
        let bare = to_config("w", &json!({"MinTTL": 1}), "n").unwrap();
        assert_eq!(
            shape(&bare)["ParametersInCacheKeyAndForwardedToOrigin"]["HeadersConfig"],
            json!({"HeaderBehavior": "none"})
        );
    }
}
