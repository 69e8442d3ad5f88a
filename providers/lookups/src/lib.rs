//! cdkd provider plugin: the CDK's context lookups that read Route 53, KMS and Elastic Load
//! Balancing (`HostedZone.fromLookup`, `Key.fromLookup`, `ApplicationLoadBalancer.fromLookup`,
//! `ApplicationListener.fromLookup` and their network counterparts), answered as the CDK CLI
//! answers them. The types it declares only answer `context_lookup`: their resources stay on
//! Cloud Control.

use cdkd_aws_common::{aws_error, OperationOnly};
use cdkd_provider_api::protocol::{operation, ContextLookupRequest, ContextLookupResult};
use cdkd_provider_api::{PluginContext, ProviderError};
use serde_json::{json, Value};

mod load_balancers;

cdkd_provider_api::export_plugin!(description: "Context lookups: hosted-zone (Route 53), key-provider (KMS), load-balancer and load-balancer-listener (ELBv2); no resources");

cdkd_provider_api::register_provider!(cdkd_aws_common::Answers<Lookups>);

/// The type the lookups are declared on: a name of cdkd's own, no resource type, so it claims
/// no type another plugin provisions (`AWS::Route53::HostedZone` is the route53 plugin's).
const DECLARED_ON: &str = "Cdkd::Lookups::Context";

/// Answers `context_lookup` for the providers above.
#[derive(Debug, Default)]
pub struct Lookups;

#[cdkd_provider_api::async_trait]
impl OperationOnly for Lookups {
    type Request = ContextLookupRequest;
    type Answer = ContextLookupResult;
    const OPERATION: &'static str = operation::CONTEXT_LOOKUP;

    fn type_name(&self) -> &'static str {
        DECLARED_ON
    }

    fn not_provisioned(&self) -> String {
        format!("the lookups plugin answers context lookups only; {DECLARED_ON} resources are provisioned through Cloud Control")
    }

    async fn answer(
        &self,
        ctx: &PluginContext,
        request: ContextLookupRequest,
    ) -> Result<ContextLookupResult, ProviderError> {
        let props = &request.props;
        let region = props
            .get("region")
            .and_then(Value::as_str)
            .unwrap_or(ctx.region())
            .to_string();
        let config = cdkd_aws_common::sdk_config(ctx).await?;
        let value = match request.provider.as_str() {
            "hosted-zone" => {
                // Route 53 is global; its client still needs a region to sign with.
                let route53 = aws_sdk_route53::Client::from_conf(
                    aws_sdk_route53::config::Builder::from(&config)
                        .region(aws_sdk_route53::config::Region::new(region))
                        .retry_partition(cdkd_aws_common::retry_partition("cdkd-route53"))
                        .build(),
                );
                hosted_zone(&route53, props).await?
            }
            "key-provider" => {
                let kms = aws_sdk_kms::Client::from_conf(
                    aws_sdk_kms::config::Builder::from(&config)
                        .region(aws_sdk_kms::config::Region::new(region))
                        .retry_partition(cdkd_aws_common::retry_partition("cdkd-kms"))
                        .build(),
                );
                key(&kms, props).await?
            }
            provider @ ("load-balancer" | "load-balancer-listener") => {
                let elb = aws_sdk_elasticloadbalancingv2::Client::from_conf(
                    aws_sdk_elasticloadbalancingv2::config::Builder::from(&config)
                        .region(aws_sdk_elasticloadbalancingv2::config::Region::new(region))
                        .retry_partition(cdkd_aws_common::retry_partition("cdkd-elbv2"))
                        .build(),
                );
                if provider == "load-balancer" {
                    load_balancers::load_balancer(&elb, props).await?
                } else {
                    load_balancers::listener(&elb, props).await?
                }
            }
            other => {
                return Err(ProviderError::unsupported(format!(
                    "the lookups plugin does not answer '{other}' lookups"
                )))
            }
        };
        Ok(ContextLookupResult { value })
    }
}

pub(crate) fn failed(message: String) -> ProviderError {
    ProviderError::validation(message)
}

/// `hosted-zone`: the one zone named `domainName` (private or not, in `vpcId` when given).
async fn hosted_zone(
    route53: &aws_sdk_route53::Client,
    props: &Value,
) -> Result<Value, ProviderError> {
    let domain = props
        .get("domainName")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            failed(format!(
                "HostedZoneProvider requires domainName property to be set in {props}"
            ))
        })?;
    let private = props
        .get("privateZone")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let vpc = props.get("vpcId").and_then(Value::as_str);
    let wanted = if domain.ends_with('.') {
        domain.to_string()
    } else {
        format!("{domain}.")
    };
    let zones = route53
        .list_hosted_zones_by_name()
        .dns_name(domain)
        .send()
        .await
        .map_err(|e| aws_error("hosted-zone: ListHostedZonesByName", e))?;
    let mut candidates = Vec::new();
    for zone in zones.hosted_zones() {
        let is_private = zone.config().is_some_and(|c| c.private_zone());
        if zone.name() != wanted || is_private != private {
            continue;
        }
        if let Some(vpc) = vpc {
            let details = route53
                .get_hosted_zone()
                .id(zone.id())
                .send()
                .await
                .map_err(|e| aws_error("hosted-zone: GetHostedZone", e))?;
            if !details.vpcs().iter().any(|v| v.vpc_id() == Some(vpc)) {
                continue;
            }
        }
        candidates.push(zone);
    }
    match candidates.as_slice() {
        [zone] => Ok(json!({"Id": zone.id(), "Name": zone.name()})),
        many => {
            Err(failed(format!(
            "Found zones: {} for dns:{domain}, privateZone:{}, vpcId:{}, but wanted exactly 1 zone",
            json!(many.iter().map(|z| json!({"Id": z.id(), "Name": z.name()})).collect::<Vec<_>>()),
            props.get("privateZone").map_or("undefined".to_string(), |p| p.to_string()),
            vpc.unwrap_or("undefined"),
        )))
        }
    }
}

/// `key-provider`: the key an alias points at.
async fn key(kms: &aws_sdk_kms::Client, props: &Value) -> Result<Value, ProviderError> {
    let alias = props
        .get("aliasName")
        .and_then(Value::as_str)
        .ok_or_else(|| failed("the lookup names no aliasName".into()))?;
    let mut marker: Option<String> = None;
    loop {
        let page = kms
            .list_aliases()
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| aws_error("key-provider: ListAliases", e))?;
        if let Some(found) = page
            .aliases()
            .iter()
            .find(|a| a.alias_name() == Some(alias))
        {
            return match found.target_key_id() {
                Some(id) => Ok(json!({"keyId": id})),
                None => Err(failed(format!(
                    "Could not find any key with alias named {alias}"
                ))),
            };
        }
        match page.next_marker() {
            Some(next) if page.truncated() => marker = Some(next.to_string()),
            _ => break,
        }
    }
    // The library's "return a dummy key when missing" option: a normal, saved value.
    let ignore = props
        .get("ignoreErrorOnMissingContext")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match props.get("dummyValue").and_then(|d| d.get("keyId")) {
        Some(dummy) if ignore => Ok(json!({"keyId": dummy})),
        _ => Err(failed(format!(
            "Could not find any key with alias named {alias}"
        ))),
    }
}
