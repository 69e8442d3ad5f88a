//! A distribution's `DistributionConfig` between template shape and CloudFront's: origins (S3
//! with an origin access control or identity, custom, VPC), origin groups, the default and
//! ordered cache behaviors (policies, function and Lambda@Edge associations, legacy forwarded
//! values and TTLs), error responses, aliases and viewer certificate, logging, geo
//! restrictions, price class, web ACL, HTTP version, IPv6, continuous deployment. CloudFront
//! wraps every list as `{Quantity, Items}`; templates write plain lists.

#![allow(deprecated)] // ForwardedValues and a behavior's TTLs: legacy in CloudFront, still taken from templates.

use aws_sdk_cloudfront::types::{
    Aliases, AllowedMethods, CacheBehavior, CacheBehaviors, CachedMethods, CookieNames,
    CookiePreference, CustomErrorResponse, CustomErrorResponses, CustomHeaders, CustomOriginConfig,
    DefaultCacheBehavior, DistributionConfig, ForwardedValues, FunctionAssociation,
    FunctionAssociations, GeoRestriction, GrpcConfig, Headers, LambdaFunctionAssociation,
    LambdaFunctionAssociations, LoggingConfig, Method, Origin, OriginCustomHeader, OriginGroup,
    OriginGroupFailoverCriteria, OriginGroupMember, OriginGroupMembers, OriginGroups, OriginShield,
    OriginSslProtocols, Origins, QueryStringCacheKeys, Restrictions, S3OriginConfig, StatusCodes,
    TrustedKeyGroups, TrustedSigners, ViewerCertificate, VpcOriginConfig,
};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Value};

use crate::built;
use crate::named_config::{b, list, n32, n64, o, objects, s, Shape};

/// Legacy or multi-tenant settings cdkd does not translate: refused by name rather than lost.
const REFUSED: &[(&str, &str)] = &[
    (
        "S3Origin",
        "write the origin in Origins with an S3OriginConfig",
    ),
    (
        "CustomOrigin",
        "write the origin in Origins with a CustomOriginConfig",
    ),
    (
        "TenantConfig",
        "multi-tenant distributions are not supported by cdkd's cloudfront plugin",
    ),
    (
        "ViewerMtlsConfig",
        "viewer mTLS is not supported by cdkd's cloudfront plugin yet",
    ),
    (
        "ConnectionFunctionAssociation",
        "connection functions are not supported by cdkd's cloudfront plugin yet",
    ),
    (
        "CacheTagConfig",
        "cache tags are not supported by cdkd's cloudfront plugin yet",
    ),
];

fn methods(items: &[String]) -> Vec<Method> {
    items.iter().map(|m| m.as_str().into()).collect()
}

fn origin(what: &str, v: &Value) -> Result<Origin, ProviderError> {
    let id = s(v, "Id").unwrap_or_default();
    let mut builder = Origin::builder()
        .id(&id)
        .domain_name(s(v, "DomainName").unwrap_or_default())
        .origin_path(s(v, "OriginPath").unwrap_or_default())
        .set_connection_attempts(n32(v, "ConnectionAttempts"))
        .set_connection_timeout(n32(v, "ConnectionTimeout"))
        .set_response_completion_timeout(n32(v, "ResponseCompletionTimeout"))
        .set_origin_access_control_id(s(v, "OriginAccessControlId"));
    let headers = objects(v, "OriginCustomHeaders")
        .into_iter()
        .map(|h| {
            built(
                what,
                OriginCustomHeader::builder()
                    .header_name(s(h, "HeaderName").unwrap_or_default())
                    .header_value(s(h, "HeaderValue").unwrap_or_default())
                    .build(),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    builder = builder.custom_headers(built(
        what,
        CustomHeaders::builder()
            .quantity(headers.len() as i32)
            .set_items(Some(headers).filter(|h| !h.is_empty()))
            .build(),
    )?);
    if let Some(c) = o(v, "CustomOriginConfig") {
        if c.get("OriginMtlsConfig").is_some_and(|m| !m.is_null()) {
            return Err(ProviderError::validation(format!(
                "{what}: origin {id}: CustomOriginConfig.OriginMtlsConfig is not supported by cdkd's cloudfront plugin yet"
            )));
        }
        let protocols = Some(list(c, "OriginSSLProtocols"))
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| vec!["TLSv1.2".into()]);
        builder = builder.custom_origin_config(built(
            what,
            CustomOriginConfig::builder()
                .http_port(n32(c, "HTTPPort").unwrap_or(80))
                .https_port(n32(c, "HTTPSPort").unwrap_or(443))
                .origin_protocol_policy(
                    s(c, "OriginProtocolPolicy")
                        .unwrap_or_default()
                        .as_str()
                        .into(),
                )
                .origin_ssl_protocols(built(
                    what,
                    OriginSslProtocols::builder()
                        .quantity(protocols.len() as i32)
                        .set_items(Some(protocols.iter().map(|p| p.as_str().into()).collect()))
                        .build(),
                )?)
                .set_origin_read_timeout(n32(c, "OriginReadTimeout"))
                .set_origin_keepalive_timeout(n32(c, "OriginKeepaliveTimeout"))
                .set_ip_address_type(s(c, "IpAddressType").map(|t| t.as_str().into()))
                .build(),
        )?);
    } else if let Some(c) = o(v, "VpcOriginConfig") {
        builder = builder.vpc_origin_config(built(
            what,
            VpcOriginConfig::builder()
                .vpc_origin_id(s(c, "VpcOriginId").unwrap_or_default())
                .set_owner_account_id(s(c, "OwnerAccountId"))
                .set_origin_read_timeout(n32(c, "OriginReadTimeout"))
                .set_origin_keepalive_timeout(n32(c, "OriginKeepaliveTimeout"))
                .build(),
        )?);
    } else {
        // An S3 origin (CloudFront requires one of the three; CloudFormation defaults to S3).
        let c = o(v, "S3OriginConfig").cloned().unwrap_or_default();
        builder = builder.s3_origin_config(
            S3OriginConfig::builder()
                .origin_access_identity(s(&c, "OriginAccessIdentity").unwrap_or_default())
                .set_origin_read_timeout(n32(&c, "OriginReadTimeout"))
                .build(),
        );
    }
    if let Some(c) = o(v, "OriginShield") {
        builder = builder.origin_shield(built(
            what,
            OriginShield::builder()
                .enabled(b(c, "Enabled").unwrap_or(false))
                .set_origin_shield_region(s(c, "OriginShieldRegion"))
                .build(),
        )?);
    }
    built(&format!("{what}: origin {id}"), builder.build())
}

fn origin_group(what: &str, v: &Value) -> Result<OriginGroup, ProviderError> {
    let codes: Vec<i32> = o(v, "FailoverCriteria")
        .and_then(|f| o(f, "StatusCodes"))
        .and_then(|c| c.get("Items"))
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| cdkd_aws_common::int(Some(i)))
                .collect()
        })
        .unwrap_or_default();
    let members = o(v, "Members")
        .map(|m| objects(m, "Items"))
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            built(
                what,
                OriginGroupMember::builder()
                    .origin_id(s(m, "OriginId").unwrap_or_default())
                    .build(),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    built(
        what,
        OriginGroup::builder()
            .id(s(v, "Id").unwrap_or_default())
            .failover_criteria(
                OriginGroupFailoverCriteria::builder()
                    .status_codes(built(
                        what,
                        StatusCodes::builder()
                            .quantity(codes.len() as i32)
                            .set_items(Some(codes))
                            .build(),
                    )?)
                    .build(),
            )
            .members(built(
                what,
                OriginGroupMembers::builder()
                    .quantity(members.len() as i32)
                    .set_items(Some(members))
                    .build(),
            )?)
            .set_selection_criteria(s(v, "SelectionCriteria").map(|c| c.as_str().into()))
            .build(),
    )
}

/// The parts a default and an ordered cache behavior share, read once.
struct Behavior {
    target: String,
    viewer_protocol_policy: String,
    trusted_signers: Option<TrustedSigners>,
    trusted_key_groups: Option<TrustedKeyGroups>,
    allowed: Option<AllowedMethods>,
    function_associations: FunctionAssociations,
    lambda_associations: LambdaFunctionAssociations,
    forwarded: Option<ForwardedValues>,
    grpc: Option<GrpcConfig>,
}

/// A behavior's legacy `ForwardedValues` (cookies, headers, query string keys).
fn forwarded_values(what: &str, f: &Value) -> Result<ForwardedValues, ProviderError> {
    let cookies = o(f, "Cookies").cloned().unwrap_or_default();
    let names = list(&cookies, "WhitelistedNames");
    let headers = list(f, "Headers");
    let keys = list(f, "QueryStringCacheKeys");
    built(
        what,
        ForwardedValues::builder()
            .query_string(b(f, "QueryString").unwrap_or(false))
            .cookies(built(
                what,
                CookiePreference::builder()
                    .forward(
                        s(&cookies, "Forward")
                            .unwrap_or_else(|| "none".into())
                            .as_str()
                            .into(),
                    )
                    .set_whitelisted_names(if names.is_empty() {
                        None
                    } else {
                        Some(built(
                            what,
                            CookieNames::builder()
                                .quantity(names.len() as i32)
                                .set_items(Some(names))
                                .build(),
                        )?)
                    })
                    .build(),
            )?)
            .headers(built(
                what,
                Headers::builder()
                    .quantity(headers.len() as i32)
                    .set_items(Some(headers).filter(|h| !h.is_empty()))
                    .build(),
            )?)
            .query_string_cache_keys(built(
                what,
                QueryStringCacheKeys::builder()
                    .quantity(keys.len() as i32)
                    .set_items(Some(keys).filter(|k| !k.is_empty()))
                    .build(),
            )?)
            .build(),
    )
}

fn behavior(what: &str, v: &Value) -> Result<Behavior, ProviderError> {
    let signers = list(v, "TrustedSigners");
    let groups = list(v, "TrustedKeyGroups");
    let allowed = list(v, "AllowedMethods");
    let cached = list(v, "CachedMethods");
    let allowed = if allowed.is_empty() {
        None
    } else {
        let cached = if cached.is_empty() {
            vec!["GET".to_string(), "HEAD".to_string()]
        } else {
            cached
        };
        Some(built(
            what,
            AllowedMethods::builder()
                .quantity(allowed.len() as i32)
                .set_items(Some(methods(&allowed)))
                .cached_methods(built(
                    what,
                    CachedMethods::builder()
                        .quantity(cached.len() as i32)
                        .set_items(Some(methods(&cached)))
                        .build(),
                )?)
                .build(),
        )?)
    };
    let functions = objects(v, "FunctionAssociations")
        .into_iter()
        .map(|f| {
            built(
                what,
                FunctionAssociation::builder()
                    .function_arn(s(f, "FunctionARN").unwrap_or_default())
                    .event_type(s(f, "EventType").unwrap_or_default().as_str().into())
                    .build(),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let lambdas = objects(v, "LambdaFunctionAssociations")
        .into_iter()
        .map(|f| {
            built(
                what,
                LambdaFunctionAssociation::builder()
                    .lambda_function_arn(s(f, "LambdaFunctionARN").unwrap_or_default())
                    .event_type(s(f, "EventType").unwrap_or_default().as_str().into())
                    .set_include_body(b(f, "IncludeBody"))
                    .build(),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let forwarded = o(v, "ForwardedValues")
        .map(|f| forwarded_values(what, f))
        .transpose()?;
    Ok(Behavior {
        target: s(v, "TargetOriginId").unwrap_or_default(),
        viewer_protocol_policy: s(v, "ViewerProtocolPolicy").unwrap_or_default(),
        trusted_signers: Some(built(
            what,
            TrustedSigners::builder()
                .enabled(!signers.is_empty())
                .quantity(signers.len() as i32)
                .set_items(Some(signers.clone()).filter(|s| !s.is_empty()))
                .build(),
        )?),
        trusted_key_groups: Some(built(
            what,
            TrustedKeyGroups::builder()
                .enabled(!groups.is_empty())
                .quantity(groups.len() as i32)
                .set_items(Some(groups.clone()).filter(|g| !g.is_empty()))
                .build(),
        )?),
        allowed,
        function_associations: built(
            what,
            FunctionAssociations::builder()
                .quantity(functions.len() as i32)
                .set_items(Some(functions).filter(|f| !f.is_empty()))
                .build(),
        )?,
        lambda_associations: built(
            what,
            LambdaFunctionAssociations::builder()
                .quantity(lambdas.len() as i32)
                .set_items(Some(lambdas).filter(|l| !l.is_empty()))
                .build(),
        )?,
        forwarded,
        grpc: o(v, "GrpcConfig")
            .map(|g| {
                built(
                    what,
                    GrpcConfig::builder()
                        .enabled(b(g, "Enabled").unwrap_or(false))
                        .build(),
                )
            })
            .transpose()?,
    })
}

fn default_behavior(what: &str, v: &Value) -> Result<DefaultCacheBehavior, ProviderError> {
    let common = behavior(what, v)?;
    built(
        &format!("{what}: DefaultCacheBehavior"),
        DefaultCacheBehavior::builder()
            .target_origin_id(common.target)
            .viewer_protocol_policy(common.viewer_protocol_policy.as_str().into())
            .set_trusted_signers(common.trusted_signers)
            .set_trusted_key_groups(common.trusted_key_groups)
            .set_allowed_methods(common.allowed)
            .function_associations(common.function_associations)
            .lambda_function_associations(common.lambda_associations)
            .set_forwarded_values(common.forwarded)
            .set_grpc_config(common.grpc)
            .set_smooth_streaming(b(v, "SmoothStreaming"))
            .set_compress(b(v, "Compress"))
            .set_field_level_encryption_id(s(v, "FieldLevelEncryptionId"))
            .set_realtime_log_config_arn(s(v, "RealtimeLogConfigArn"))
            .set_cache_policy_id(s(v, "CachePolicyId"))
            .set_origin_request_policy_id(s(v, "OriginRequestPolicyId"))
            .set_response_headers_policy_id(s(v, "ResponseHeadersPolicyId"))
            .set_min_ttl(n64(v, "MinTTL"))
            .set_default_ttl(n64(v, "DefaultTTL"))
            .set_max_ttl(n64(v, "MaxTTL"))
            .build(),
    )
}

fn cache_behavior(what: &str, v: &Value) -> Result<CacheBehavior, ProviderError> {
    let common = behavior(what, v)?;
    let path = s(v, "PathPattern").unwrap_or_default();
    built(
        &format!("{what}: CacheBehavior {path}"),
        CacheBehavior::builder()
            .path_pattern(&path)
            .target_origin_id(common.target)
            .viewer_protocol_policy(common.viewer_protocol_policy.as_str().into())
            .set_trusted_signers(common.trusted_signers)
            .set_trusted_key_groups(common.trusted_key_groups)
            .set_allowed_methods(common.allowed)
            .function_associations(common.function_associations)
            .lambda_function_associations(common.lambda_associations)
            .set_forwarded_values(common.forwarded)
            .set_grpc_config(common.grpc)
            .set_smooth_streaming(b(v, "SmoothStreaming"))
            .set_compress(b(v, "Compress"))
            .set_field_level_encryption_id(s(v, "FieldLevelEncryptionId"))
            .set_realtime_log_config_arn(s(v, "RealtimeLogConfigArn"))
            .set_cache_policy_id(s(v, "CachePolicyId"))
            .set_origin_request_policy_id(s(v, "OriginRequestPolicyId"))
            .set_response_headers_policy_id(s(v, "ResponseHeadersPolicyId"))
            .set_min_ttl(n64(v, "MinTTL"))
            .set_default_ttl(n64(v, "DefaultTTL"))
            .set_max_ttl(n64(v, "MaxTTL"))
            .build(),
    )
}

/// The template's `DistributionConfig` as CloudFront's, with `reference` as its
/// `CallerReference` (the create's token; an update sends the one the distribution has).
pub(crate) fn to_sdk(
    what: &str,
    dc: &Value,
    reference: &str,
) -> Result<DistributionConfig, ProviderError> {
    for (key, instead) in REFUSED {
        if dc.get(*key).is_some_and(|v| !v.is_null()) {
            return Err(ProviderError::validation(format!(
                "{what}: DistributionConfig.{key} is not supported: {instead}"
            )));
        }
    }
    let mut aliases = list(dc, "Aliases");
    aliases.extend(list(dc, "CNAMEs"));
    let origins = objects(dc, "Origins")
        .into_iter()
        .map(|v| origin(what, v))
        .collect::<Result<Vec<_>, _>>()?;
    let groups = o(dc, "OriginGroups")
        .map(|g| objects(g, "Items"))
        .unwrap_or_default()
        .into_iter()
        .map(|g| origin_group(what, g))
        .collect::<Result<Vec<_>, _>>()?;
    let behaviors = objects(dc, "CacheBehaviors")
        .into_iter()
        .map(|v| cache_behavior(what, v))
        .collect::<Result<Vec<_>, _>>()?;
    let errors = objects(dc, "CustomErrorResponses")
        .into_iter()
        .map(|e| {
            built(
                what,
                CustomErrorResponse::builder()
                    .error_code(n32(e, "ErrorCode").unwrap_or_default())
                    .set_response_page_path(s(e, "ResponsePagePath"))
                    .set_response_code(s(e, "ResponseCode"))
                    .set_error_caching_min_ttl(n64(e, "ErrorCachingMinTTL"))
                    .build(),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let default = o(dc, "DefaultCacheBehavior").ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: DistributionConfig.DefaultCacheBehavior is required"
        ))
    })?;
    let logging = o(dc, "Logging").map(|l| {
        LoggingConfig::builder()
            .enabled(true)
            .include_cookies(b(l, "IncludeCookies").unwrap_or(false))
            .bucket(s(l, "Bucket").unwrap_or_default())
            .prefix(s(l, "Prefix").unwrap_or_default())
            .build()
    });
    let certificate = o(dc, "ViewerCertificate").map(|c| {
        ViewerCertificate::builder()
            .set_cloud_front_default_certificate(b(c, "CloudFrontDefaultCertificate"))
            .set_iam_certificate_id(s(c, "IamCertificateId"))
            .set_acm_certificate_arn(s(c, "AcmCertificateArn"))
            .set_ssl_support_method(s(c, "SslSupportMethod").map(|m| m.as_str().into()))
            .set_minimum_protocol_version(s(c, "MinimumProtocolVersion").map(|m| m.as_str().into()))
            .build()
    });
    let restrictions = match o(dc, "Restrictions").and_then(|r| o(r, "GeoRestriction")) {
        None => None,
        Some(g) => {
            let locations = list(g, "Locations");
            Some(
                Restrictions::builder()
                    .geo_restriction(built(
                        what,
                        GeoRestriction::builder()
                            .restriction_type(
                                s(g, "RestrictionType")
                                    .unwrap_or_else(|| "none".into())
                                    .as_str()
                                    .into(),
                            )
                            .quantity(locations.len() as i32)
                            .set_items(Some(locations).filter(|l| !l.is_empty()))
                            .build(),
                    )?)
                    .build(),
            )
        }
    };
    built(
        what,
        DistributionConfig::builder()
            .caller_reference(reference)
            .aliases(built(
                what,
                Aliases::builder()
                    .quantity(aliases.len() as i32)
                    .set_items(Some(aliases).filter(|a| !a.is_empty()))
                    .build(),
            )?)
            .default_root_object(s(dc, "DefaultRootObject").unwrap_or_default())
            .origins(built(
                what,
                Origins::builder()
                    .quantity(origins.len() as i32)
                    .set_items(Some(origins))
                    .build(),
            )?)
            .origin_groups(built(
                what,
                OriginGroups::builder()
                    .quantity(groups.len() as i32)
                    .set_items(Some(groups).filter(|g| !g.is_empty()))
                    .build(),
            )?)
            .default_cache_behavior(default_behavior(what, default)?)
            .cache_behaviors(built(
                what,
                CacheBehaviors::builder()
                    .quantity(behaviors.len() as i32)
                    .set_items(Some(behaviors).filter(|b| !b.is_empty()))
                    .build(),
            )?)
            .custom_error_responses(built(
                what,
                CustomErrorResponses::builder()
                    .quantity(errors.len() as i32)
                    .set_items(Some(errors).filter(|e| !e.is_empty()))
                    .build(),
            )?)
            .comment(s(dc, "Comment").unwrap_or_default())
            .set_logging(logging)
            .set_price_class(s(dc, "PriceClass").map(|p| p.as_str().into()))
            .enabled(b(dc, "Enabled").unwrap_or(true))
            .set_viewer_certificate(certificate)
            .set_restrictions(restrictions)
            .set_web_acl_id(s(dc, "WebACLId"))
            .set_http_version(s(dc, "HttpVersion").map(|h| h.as_str().into()))
            .set_is_ipv6_enabled(b(dc, "IPV6Enabled"))
            .set_continuous_deployment_policy_id(s(dc, "ContinuousDeploymentPolicyId"))
            .set_staging(b(dc, "Staging"))
            .set_anycast_ip_list_id(s(dc, "AnycastIpListId"))
            .set_connection_mode(s(dc, "ConnectionMode").map(|m| m.as_str().into()))
            .build(),
    )
}

fn origin_shape(o: &Origin) -> Value {
    let headers: Vec<Value> = o
        .custom_headers()
        .map(|h| h.items())
        .unwrap_or_default()
        .iter()
        .map(|h| json!({"HeaderName": h.header_name(), "HeaderValue": h.header_value()}))
        .collect();
    let mut shape = Shape::default()
        .put("Id", Some(o.id()))
        .put("DomainName", Some(o.domain_name()))
        .text("OriginPath", o.origin_path())
        .put("ConnectionAttempts", o.connection_attempts())
        .put("ConnectionTimeout", o.connection_timeout())
        .put("ResponseCompletionTimeout", o.response_completion_timeout())
        .text("OriginAccessControlId", o.origin_access_control_id());
    if !headers.is_empty() {
        shape = shape.put("OriginCustomHeaders", Some(headers));
    }
    if let Some(c) = o.s3_origin_config() {
        shape = shape.put(
            "S3OriginConfig",
            Some(
                Shape::default()
                    .put("OriginAccessIdentity", Some(c.origin_access_identity()))
                    .put("OriginReadTimeout", c.origin_read_timeout())
                    .done(),
            ),
        );
    }
    if let Some(c) = o.custom_origin_config() {
        shape = shape.put(
            "CustomOriginConfig",
            Some(
                Shape::default()
                    .put("HTTPPort", Some(c.http_port()))
                    .put("HTTPSPort", Some(c.https_port()))
                    .put(
                        "OriginProtocolPolicy",
                        Some(c.origin_protocol_policy().as_str()),
                    )
                    .list(
                        "OriginSSLProtocols",
                        &c.origin_ssl_protocols()
                            .map(|p| p.items().iter().map(|i| i.as_str()).collect::<Vec<_>>())
                            .unwrap_or_default(),
                    )
                    .put("OriginReadTimeout", c.origin_read_timeout())
                    .put("OriginKeepaliveTimeout", c.origin_keepalive_timeout())
                    .put("IpAddressType", c.ip_address_type().map(|t| t.as_str()))
                    .done(),
            ),
        );
    }
    if let Some(c) = o.vpc_origin_config() {
        shape = shape.put(
            "VpcOriginConfig",
            Some(
                Shape::default()
                    .put("VpcOriginId", Some(c.vpc_origin_id()))
                    .put("OwnerAccountId", c.owner_account_id())
                    .put("OriginReadTimeout", c.origin_read_timeout())
                    .put("OriginKeepaliveTimeout", c.origin_keepalive_timeout())
                    .done(),
            ),
        );
    }
    if let Some(c) = o.origin_shield().filter(|c| c.enabled()) {
        shape = shape.put(
            "OriginShield",
            Some(
                Shape::default()
                    .put("Enabled", Some(true))
                    .put("OriginShieldRegion", c.origin_shield_region())
                    .done(),
            ),
        );
    }
    shape.done()
}

/// The fields a default and an ordered cache behavior share, in template shape.
#[allow(clippy::too_many_arguments)]
fn behavior_shape(
    mut shape: Shape,
    target: &str,
    viewer: &str,
    signers: Option<&TrustedSigners>,
    groups: Option<&TrustedKeyGroups>,
    allowed: Option<&AllowedMethods>,
    functions: Option<&FunctionAssociations>,
    lambdas: Option<&LambdaFunctionAssociations>,
    forwarded: Option<&ForwardedValues>,
) -> Shape {
    shape = shape
        .put("TargetOriginId", Some(target))
        .put("ViewerProtocolPolicy", Some(viewer))
        .list(
            "TrustedSigners",
            signers.map(|s| s.items()).unwrap_or_default(),
        )
        .list(
            "TrustedKeyGroups",
            groups.map(|g| g.items()).unwrap_or_default(),
        );
    if let Some(a) = allowed {
        let names = |m: &[Method]| m.iter().map(|m| m.as_str().to_string()).collect::<Vec<_>>();
        shape = shape.list("AllowedMethods", &names(a.items())).list(
            "CachedMethods",
            &a.cached_methods()
                .map(|c| names(c.items()))
                .unwrap_or_default(),
        );
    }
    let functions: Vec<Value> = functions
        .map(|f| f.items())
        .unwrap_or_default()
        .iter()
        .map(|f| json!({"EventType": f.event_type().as_str(), "FunctionARN": f.function_arn()}))
        .collect();
    if !functions.is_empty() {
        shape = shape.put("FunctionAssociations", Some(functions));
    }
    let lambdas: Vec<Value> = lambdas
        .map(|l| l.items())
        .unwrap_or_default()
        .iter()
        .map(|l| {
            Shape::default()
                .put("EventType", Some(l.event_type().as_str()))
                .put("LambdaFunctionARN", Some(l.lambda_function_arn()))
                .put("IncludeBody", l.include_body())
                .done()
        })
        .collect();
    if !lambdas.is_empty() {
        shape = shape.put("LambdaFunctionAssociations", Some(lambdas));
    }
    if let Some(f) = forwarded {
        let cookies = f.cookies().map(|c| {
            Shape::default()
                .put("Forward", Some(c.forward().as_str()))
                .list(
                    "WhitelistedNames",
                    c.whitelisted_names().map(|n| n.items()).unwrap_or_default(),
                )
                .done()
        });
        shape = shape.put(
            "ForwardedValues",
            Some(
                Shape::default()
                    .put("QueryString", Some(f.query_string()))
                    .put("Cookies", cookies)
                    .list(
                        "Headers",
                        f.headers().map(|h| h.items()).unwrap_or_default(),
                    )
                    .list(
                        "QueryStringCacheKeys",
                        f.query_string_cache_keys()
                            .map(|k| k.items())
                            .unwrap_or_default(),
                    )
                    .done(),
            ),
        );
    }
    shape
}

fn default_behavior_shape(d: &DefaultCacheBehavior) -> Value {
    behavior_shape(
        Shape::default(),
        d.target_origin_id(),
        d.viewer_protocol_policy().as_str(),
        d.trusted_signers(),
        d.trusted_key_groups(),
        d.allowed_methods(),
        d.function_associations(),
        d.lambda_function_associations(),
        d.forwarded_values(),
    )
    .put("SmoothStreaming", d.smooth_streaming().filter(|s| *s))
    .put("Compress", d.compress())
    .text("FieldLevelEncryptionId", d.field_level_encryption_id())
    .text("RealtimeLogConfigArn", d.realtime_log_config_arn())
    .text("CachePolicyId", d.cache_policy_id())
    .text("OriginRequestPolicyId", d.origin_request_policy_id())
    .text("ResponseHeadersPolicyId", d.response_headers_policy_id())
    .put(
        "GrpcConfig",
        d.grpc_config().map(|g| json!({"Enabled": g.enabled()})),
    )
    .put("MinTTL", d.min_ttl())
    .put("DefaultTTL", d.default_ttl())
    .put("MaxTTL", d.max_ttl())
    .done()
}

fn cache_behavior_shape(d: &CacheBehavior) -> Value {
    behavior_shape(
        Shape::default().put("PathPattern", Some(d.path_pattern())),
        d.target_origin_id(),
        d.viewer_protocol_policy().as_str(),
        d.trusted_signers(),
        d.trusted_key_groups(),
        d.allowed_methods(),
        d.function_associations(),
        d.lambda_function_associations(),
        d.forwarded_values(),
    )
    .put("SmoothStreaming", d.smooth_streaming().filter(|s| *s))
    .put("Compress", d.compress())
    .text("FieldLevelEncryptionId", d.field_level_encryption_id())
    .text("RealtimeLogConfigArn", d.realtime_log_config_arn())
    .text("CachePolicyId", d.cache_policy_id())
    .text("OriginRequestPolicyId", d.origin_request_policy_id())
    .text("ResponseHeadersPolicyId", d.response_headers_policy_id())
    .put(
        "GrpcConfig",
        d.grpc_config().map(|g| json!({"Enabled": g.enabled()})),
    )
    .put("MinTTL", d.min_ttl())
    .put("DefaultTTL", d.default_ttl())
    .put("MaxTTL", d.max_ttl())
    .done()
}

/// An origin group in template shape.
fn origin_group_shape(g: &aws_sdk_cloudfront::types::OriginGroup) -> Value {
    let codes = g
        .failover_criteria()
        .and_then(|f| f.status_codes())
        .map(|c| c.items().to_vec())
        .unwrap_or_default();
    let members: Vec<Value> = g
        .members()
        .map(|m| m.items())
        .unwrap_or_default()
        .iter()
        .map(|m| json!({"OriginId": m.origin_id()}))
        .collect();
    Shape::default()
        .put("Id", Some(g.id()))
        .put(
            "FailoverCriteria",
            Some(json!({"StatusCodes": {"Items": codes, "Quantity": codes.len()}})),
        )
        .put(
            "Members",
            Some(json!({"Items": members, "Quantity": members.len()})),
        )
        .put(
            "SelectionCriteria",
            g.selection_criteria().map(|c| c.as_str()),
        )
        .done()
}

/// A custom error response in template shape.
fn error_response_shape(e: &aws_sdk_cloudfront::types::CustomErrorResponse) -> Value {
    Shape::default()
        .put("ErrorCode", Some(e.error_code()))
        .text("ResponsePagePath", e.response_page_path())
        .put(
            "ResponseCode",
            e.response_code().filter(|c| !c.is_empty()).map(|c| {
                c.parse::<i64>()
                    .map(Value::from)
                    .unwrap_or_else(|_| json!(c))
            }),
        )
        .put("ErrorCachingMinTTL", e.error_caching_min_ttl())
        .done()
}

/// CloudFront's config in template shape (the `CallerReference` left out: no template has it).
pub(crate) fn shape(dc: &DistributionConfig) -> Value {
    let origins: Vec<Value> = dc
        .origins()
        .map(|o| o.items())
        .unwrap_or_default()
        .iter()
        .map(origin_shape)
        .collect();
    let groups: Vec<Value> = dc
        .origin_groups()
        .map(|g| g.items())
        .unwrap_or_default()
        .iter()
        .map(origin_group_shape)
        .collect();
    let behaviors: Vec<Value> = dc
        .cache_behaviors()
        .map(|b| b.items())
        .unwrap_or_default()
        .iter()
        .map(cache_behavior_shape)
        .collect();
    let errors: Vec<Value> = dc
        .custom_error_responses()
        .map(|e| e.items())
        .unwrap_or_default()
        .iter()
        .map(error_response_shape)
        .collect();
    let mut shape = Shape::default()
        .list(
            "Aliases",
            dc.aliases().map(|a| a.items()).unwrap_or_default(),
        )
        .text("DefaultRootObject", dc.default_root_object())
        .put("Origins", Some(origins))
        .put(
            "DefaultCacheBehavior",
            dc.default_cache_behavior().map(default_behavior_shape),
        )
        .put("Comment", Some(dc.comment()))
        .put("Enabled", Some(dc.enabled()))
        .put("PriceClass", dc.price_class().map(|p| p.as_str()))
        .text("WebACLId", dc.web_acl_id())
        .put("HttpVersion", dc.http_version().map(|h| h.as_str()))
        .put("IPV6Enabled", dc.is_ipv6_enabled())
        .text(
            "ContinuousDeploymentPolicyId",
            dc.continuous_deployment_policy_id(),
        )
        .put("Staging", dc.staging().filter(|s| *s))
        .text("AnycastIpListId", dc.anycast_ip_list_id())
        .put("ConnectionMode", dc.connection_mode().map(|m| m.as_str()));
    if !groups.is_empty() {
        shape = shape.put(
            "OriginGroups",
            Some(json!({"Items": groups, "Quantity": groups.len()})),
        );
    }
    if !behaviors.is_empty() {
        shape = shape.put("CacheBehaviors", Some(behaviors));
    }
    if !errors.is_empty() {
        shape = shape.put("CustomErrorResponses", Some(errors));
    }
    if let Some(l) = dc.logging().filter(|l| l.enabled()) {
        shape = shape.put(
            "Logging",
            Some(
                Shape::default()
                    .put("Bucket", Some(l.bucket()))
                    .put("IncludeCookies", Some(l.include_cookies()))
                    .text("Prefix", Some(l.prefix()))
                    .done(),
            ),
        );
    }
    if let Some(c) = dc.viewer_certificate() {
        shape = shape.put(
            "ViewerCertificate",
            Some(
                Shape::default()
                    .put(
                        "CloudFrontDefaultCertificate",
                        c.cloud_front_default_certificate().filter(|d| *d),
                    )
                    .text("IamCertificateId", c.iam_certificate_id())
                    .text("AcmCertificateArn", c.acm_certificate_arn())
                    .put(
                        "SslSupportMethod",
                        c.ssl_support_method().map(|m| m.as_str()),
                    )
                    .put(
                        "MinimumProtocolVersion",
                        c.minimum_protocol_version().map(|m| m.as_str()),
                    )
                    .done(),
            ),
        );
    }
    if let Some(g) = dc
        .restrictions()
        .and_then(|r| r.geo_restriction())
        .filter(|g| g.restriction_type().as_str() != "none")
    {
        shape = shape.put(
            "Restrictions",
            Some(json!({"GeoRestriction": Shape::default()
                .put("RestrictionType", Some(g.restriction_type().as_str()))
                .list("Locations", g.items())
                .done()})),
        );
    }
    shape.done()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What CDK's `Distribution` with an OAC-backed S3 origin, a custom origin, a function
    /// association and policies synthesizes (tests/fixtures/apps/website.js), ids resolved.
    fn website() -> Value {
        json!({
            "CacheBehaviors": [{
                "AllowedMethods": ["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"],
                "CachePolicyId": "4135ea2d-6df8-44a3-9df3-4b5a84be39ad",
                "CachedMethods": ["GET", "HEAD"],
                "Compress": true,
                "OriginRequestPolicyId": "b689b0a8-53d0-40ab-baf2-68738e2966ac",
                "PathPattern": "/api/*",
                "TargetOriginId": "api",
                "ViewerProtocolPolicy": "allow-all"
            }],
            "Comment": "website",
            "DefaultCacheBehavior": {
                "CachePolicyId": "cp1",
                "Compress": true,
                "FunctionAssociations": [{"EventType": "viewer-request", "FunctionARN": "arn:aws:cloudfront::1:function/f"}],
                "ResponseHeadersPolicyId": "rh1",
                "TargetOriginId": "site",
                "ViewerProtocolPolicy": "redirect-to-https"
            },
            "DefaultRootObject": "index.html",
            "Enabled": true,
            "HttpVersion": "http2",
            "IPV6Enabled": true,
            "Origins": [
                {"DomainName": "b.s3.us-east-1.amazonaws.com", "Id": "site", "OriginAccessControlId": "oac1",
                 "S3OriginConfig": {"OriginAccessIdentity": ""}},
                {"CustomOriginConfig": {"HTTPPort": 80, "HTTPSPort": 443, "OriginProtocolPolicy": "https-only", "OriginSSLProtocols": ["TLSv1.2"]},
                 "DomainName": "api.example.com", "Id": "api"}
            ],
            "PriceClass": "PriceClass_100",
            "Aliases": ["www.example.com"],
            "ViewerCertificate": {"AcmCertificateArn": "arn:aws:acm:us-east-1:1:certificate/c", "MinimumProtocolVersion": "TLSv1.2_2021", "SslSupportMethod": "sni-only"},
            "Logging": {"Bucket": "logs.s3.amazonaws.com", "IncludeCookies": false, "Prefix": "cdn/"},
            "WebACLId": "arn:aws:wafv2:us-east-1:1:global/webacl/w/1",
            "CustomErrorResponses": [{"ErrorCode": 404, "ResponseCode": 200, "ResponsePagePath": "/index.html", "ErrorCachingMinTTL": 10}],
            "Restrictions": {"GeoRestriction": {"Locations": ["DE", "FR"], "RestrictionType": "whitelist"}}
        })
    }

    #[test]
    fn a_website_distribution_travels_both_ways_in_template_shape() {
        let sdk = to_sdk("w", &website(), "tok-1").unwrap();
        assert_eq!(sdk.caller_reference(), "tok-1");
        let origin = &sdk.origins().unwrap().items()[0];
        assert_eq!(origin.origin_access_control_id(), Some("oac1"));
        let default = sdk.default_cache_behavior().unwrap();
        assert_eq!(default.function_associations().unwrap().quantity(), 1);
        assert_eq!(sdk.aliases().unwrap().quantity(), 1);
        assert!(sdk.logging().unwrap().enabled());
        assert_eq!(shape(&sdk), website());
    }

    #[test]
    fn cloudfront_defaults_fill_what_the_template_leaves_out_and_legacy_origins_are_refused() {
        let minimal = json!({
            "Enabled": false,
            "Origins": [{"DomainName": "api.example.com", "Id": "o", "CustomOriginConfig": {"OriginProtocolPolicy": "https-only"}}],
            "DefaultCacheBehavior": {"TargetOriginId": "o", "ViewerProtocolPolicy": "allow-all", "ForwardedValues": {"QueryString": true}}
        });
        let sdk = to_sdk("w", &minimal, "r").unwrap();
        assert_eq!(sdk.comment(), "");
        assert!(!sdk.enabled());
        let custom = sdk.origins().unwrap().items()[0]
            .custom_origin_config()
            .unwrap();
        assert_eq!((custom.http_port(), custom.https_port()), (80, 443));
        let read = shape(&sdk);
        assert_eq!(
            read["DefaultCacheBehavior"]["ForwardedValues"],
            json!({"QueryString": true, "Cookies": {"Forward": "none"}})
        );
        let legacy = json!({"S3Origin": {"DNSName": "b.s3.amazonaws.com"}, "Enabled": true});
        let err = to_sdk("w", &legacy, "r").unwrap_err();
        assert!(err.message.contains("S3Origin"), "{}", err.message);
        let err = to_sdk("w", &json!({"Enabled": true}), "r").unwrap_err();
        assert!(
            err.message.contains("DefaultCacheBehavior"),
            "{}",
            err.message
        );
    }
}
