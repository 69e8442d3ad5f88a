//! `AWS::CloudFront::OriginRequestPolicy`: `OriginRequestPolicyConfig` (the headers, cookies and
//! query strings sent to the origin); see [`crate::named_config`].

use aws_sdk_cloudfront::types::{
    OriginRequestPolicyConfig, OriginRequestPolicyCookiesConfig, OriginRequestPolicyHeadersConfig,
    OriginRequestPolicyQueryStringsConfig, OriginRequestPolicyType,
};
use cdkd_provider_api::{async_trait, ProviderError};
use serde_json::Value;

use crate::cache_policy::{cookie_names, headers, query_string_names};
use crate::named_config::{list, o, s, Live, NamedConfig, Shape};
use crate::{built, etag, failed};

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
                OriginRequestPolicyCookiesConfig::builder()
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
                OriginRequestPolicyQueryStringsConfig::builder()
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
            config.cookies_config().map(|c| {
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
            config.query_strings_config().map(|q| {
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
}

#[async_trait]
impl NamedConfig for OriginRequestPolicy {
    const TYPE: &'static str = "AWS::CloudFront::OriginRequestPolicy";
    const CONFIG: &'static str = "OriginRequestPolicyConfig";
    const MAX_NAME: usize = 128;
    const MODIFIED: bool = true;
    type Config = OriginRequestPolicyConfig;

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
            .create_origin_request_policy()
            .origin_request_policy_config(config)
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateOriginRequestPolicy {name}")))?;
        let policy = answer.origin_request_policy().ok_or_else(|| {
            ProviderError::other(format!(
                "{what}: CreateOriginRequestPolicy returned no policy"
            ))
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
            cf.get_origin_request_policy()
                .id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetOriginRequestPolicy {id}"))),
        )?;
        let Some(answer) = answer else {
            return Ok(None);
        };
        let Some(policy) = answer.origin_request_policy() else {
            return Ok(None);
        };
        let Some(config) = policy.origin_request_policy_config() else {
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
            .update_origin_request_policy()
            .id(id)
            .if_match(etag)
            .origin_request_policy_config(config)
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateOriginRequestPolicy {id}")))?;
        Ok(answer
            .origin_request_policy()
            .map(|p| *p.last_modified_time()))
    }

    async fn delete(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        id: &str,
        etag: &str,
    ) -> Result<(), ProviderError> {
        cf.delete_origin_request_policy()
            .id(id)
            .if_match(etag)
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: DeleteOriginRequestPolicy {id}")))
    }

    async fn find(
        cf: &aws_sdk_cloudfront::Client,
        what: &str,
        name: &str,
    ) -> Result<Option<String>, ProviderError> {
        let mut marker: Option<String> = None;
        loop {
            let answer = cf
                .list_origin_request_policies()
                .r#type(OriginRequestPolicyType::Custom)
                .set_marker(marker.take())
                .send()
                .await
                .map_err(failed!(format!("{what}: ListOriginRequestPolicies")))?;
            let Some(list) = answer.origin_request_policy_list() else {
                return Ok(None);
            };
            if let Some(found) = list
                .items()
                .iter()
                .filter_map(|s| s.origin_request_policy())
                .find(|p| {
                    p.origin_request_policy_config()
                        .is_some_and(|c| c.name() == name)
                })
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
