//! `AWS::CloudFront::CachePolicy`: `CachePolicyConfig` (TTLs and what goes into the cache key:
//! headers, cookies, query strings, accepted encodings); see [`crate::named_config`].

use aws_sdk_cloudfront::types::{
    CachePolicyConfig, CachePolicyCookiesConfig, CachePolicyHeadersConfig,
    CachePolicyQueryStringsConfig, CachePolicyType, CookieNames, Headers,
    ParametersInCacheKeyAndForwardedToOrigin, QueryStringNames,
};
use cdkd_provider_api::{async_trait, ProviderError};
use serde_json::Value;

use crate::named_config::{b, list, n64, o, s, Live, NamedConfig, Shape};
use crate::{built, etag, failed};

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
                .header_behavior(
                    s(&headers_config, "HeaderBehavior")
                        .unwrap_or_else(|| "none".into())
                        .as_str()
                        .into(),
                )
                .set_headers(
                    Some(list(&headers_config, "Headers"))
                        .filter(|h| !h.is_empty())
                        .map(headers),
                )
                .build(),
        )?)
        .cookies_config(built(
            what,
            CachePolicyCookiesConfig::builder()
                .cookie_behavior(
                    s(&cookies_config, "CookieBehavior")
                        .unwrap_or_else(|| "none".into())
                        .as_str()
                        .into(),
                )
                .set_cookies(
                    Some(list(&cookies_config, "Cookies"))
                        .filter(|c| !c.is_empty())
                        .map(cookie_names),
                )
                .build(),
        )?)
        .query_strings_config(built(
            what,
            CachePolicyQueryStringsConfig::builder()
                .query_string_behavior(
                    s(&query_config, "QueryStringBehavior")
                        .unwrap_or_else(|| "none".into())
                        .as_str()
                        .into(),
                )
                .set_query_strings(
                    Some(list(&query_config, "QueryStrings"))
                        .filter(|q| !q.is_empty())
                        .map(query_string_names),
                )
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
                        Shape::default()
                            .put("HeaderBehavior", Some(h.header_behavior().as_str()))
                            .list(
                                "Headers",
                                h.headers().map(|h| h.items()).unwrap_or_default(),
                            )
                            .done()
                    }),
                )
                .put(
                    "CookiesConfig",
                    p.cookies_config().map(|c| {
                        Shape::default()
                            .put("CookieBehavior", Some(c.cookie_behavior().as_str()))
                            .list(
                                "Cookies",
                                c.cookies().map(|c| c.items()).unwrap_or_default(),
                            )
                            .done()
                    }),
                )
                .put(
                    "QueryStringsConfig",
                    p.query_strings_config().map(|q| {
                        Shape::default()
                            .put(
                                "QueryStringBehavior",
                                Some(q.query_string_behavior().as_str()),
                            )
                            .list(
                                "QueryStrings",
                                q.query_strings().map(|q| q.items()).unwrap_or_default(),
                            )
                            .done()
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

#[async_trait]
impl NamedConfig for CachePolicy {
    const TYPE: &'static str = "AWS::CloudFront::CachePolicy";
    const CONFIG: &'static str = "CachePolicyConfig";
    const MAX_NAME: usize = 128;
    const MODIFIED: bool = true;
    type Config = CachePolicyConfig;

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
            .create_cache_policy()
            .cache_policy_config(config)
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateCachePolicy {name}")))?;
        let policy = answer.cache_policy().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateCachePolicy returned no policy"))
        })?;
        Ok((
            policy.id().to_string(),
            Live {
                config: (),
                modified: Some(*policy.last_modified_time()),
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
            cf.get_cache_policy()
                .id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetCachePolicy {id}"))),
        )?;
        let Some(answer) = answer else {
            return Ok(None);
        };
        let Some(policy) = answer.cache_policy() else {
            return Ok(None);
        };
        let Some(config) = policy.cache_policy_config() else {
            return Ok(None);
        };
        Ok(Some(Live {
            config: config.clone(),
            modified: Some(*policy.last_modified_time()),
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
        let answer = cf
            .update_cache_policy()
            .id(id)
            .if_match(etag)
            .cache_policy_config(config)
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateCachePolicy {id}")))?;
        Ok(answer.cache_policy().map(|p| *p.last_modified_time()))
    }

    async fn delete(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
        etag: &str,
    ) -> Result<(), ProviderError> {
        cf.delete_cache_policy()
            .id(id)
            .if_match(etag)
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: DeleteCachePolicy {id}")))
    }

    async fn find(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        name: &str,
    ) -> Result<Option<String>, ProviderError> {
        let mut marker: Option<String> = None;
        loop {
            let answer = cf
                .list_cache_policies()
                .r#type(CachePolicyType::Custom)
                .set_marker(marker.take())
                .send()
                .await
                .map_err(failed!(format!("{what}: ListCachePolicies")))?;
            let Some(list) = answer.cache_policy_list() else {
                return Ok(None);
            };
            if let Some(found) = list
                .items()
                .iter()
                .filter_map(|s| s.cache_policy())
                .find(|p| p.cache_policy_config().is_some_and(|c| c.name() == name))
            {
                return Ok(Some(found.id().to_string()));
            }
            match list.next_marker() {
                Some(next) if !next.is_empty() => marker = Some(next.to_string()),
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
