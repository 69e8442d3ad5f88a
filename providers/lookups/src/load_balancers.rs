//! `load-balancer` and `load-balancer-listener` lookups (`fromLookup` of the ELBv2 load
//! balancers and listeners).

use aws_sdk_elasticloadbalancingv2::types::{Listener, LoadBalancer};
use aws_sdk_elasticloadbalancingv2::Client;
use cdkd_aws_common::aws_error;
use cdkd_provider_api::ProviderError;
use serde_json::{json, Value};

use crate::failed;

/// The load balancers of the query's type (and ARN), with every tag the query names.
async fn matching(
    elb: &Client,
    props: &Value,
    arn: Option<&str>,
) -> Result<Vec<LoadBalancer>, ProviderError> {
    let kind = props
        .get("loadBalancerType")
        .and_then(Value::as_str)
        .unwrap_or("application");
    let mut found = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = elb
            .describe_load_balancers()
            .set_load_balancer_arns(arn.map(|a| vec![a.to_string()]))
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| aws_error("load-balancer: DescribeLoadBalancers", e))?;
        found.extend(
            page.load_balancers()
                .iter()
                .filter(|lb| lb.r#type().map(|t| t.as_str()) == Some(kind))
                .cloned(),
        );
        match page.next_marker() {
            Some(next) => marker = Some(next.to_string()),
            None => break,
        }
    }
    let Some(wanted) = props.get("loadBalancerTags").and_then(Value::as_array) else {
        return Ok(found);
    };
    let wanted: Vec<(&str, &str)> = wanted
        .iter()
        .filter_map(|t| Some((t.get("key")?.as_str()?, t.get("value")?.as_str()?)))
        .collect();
    let arns: Vec<String> = found
        .iter()
        .filter_map(|lb| lb.load_balancer_arn().map(str::to_string))
        .collect();
    let mut tagged = Vec::new();
    for chunk in arns.chunks(20) {
        let answer = elb
            .describe_tags()
            .set_resource_arns(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| aws_error("load-balancer: DescribeTags", e))?;
        for description in answer.tag_descriptions() {
            let has_all = wanted.iter().all(|(k, v)| {
                description
                    .tags()
                    .iter()
                    .any(|t| t.key() == Some(*k) && t.value() == Some(*v))
            });
            if has_all {
                if let Some(arn) = description.resource_arn() {
                    tagged.extend(
                        found
                            .iter()
                            .filter(|lb| lb.load_balancer_arn() == Some(arn))
                            .cloned(),
                    );
                }
            }
        }
    }
    Ok(tagged)
}

fn filter_text(props: &Value) -> String {
    let mut filter = serde_json::Map::new();
    for key in ["loadBalancerType", "loadBalancerArn", "loadBalancerTags"] {
        if let Some(value) = props.get(key) {
            filter.insert(key.into(), value.clone());
        }
    }
    Value::Object(filter).to_string()
}

/// `load-balancer`: exactly one load balancer.
pub async fn load_balancer(elb: &Client, props: &Value) -> Result<Value, ProviderError> {
    let arn = props.get("loadBalancerArn").and_then(Value::as_str);
    if arn.is_none() && props.get("loadBalancerTags").is_none() {
        return Err(failed(
            "The load balancer lookup query must specify either `loadBalancerArn` or `loadBalancerTags`".into(),
        ));
    }
    let found = matching(elb, props, arn).await?;
    let filter = filter_text(props);
    let lb = match found.as_slice() {
        [] => return Err(failed(format!("No load balancers found matching {filter}"))),
        [one] => one,
        _ => {
            return Err(failed(format!(
                "Multiple load balancers found matching {filter} - please provide more specific criteria"
            )))
        }
    };
    let ip_type = match lb.ip_address_type().map(|t| t.as_str()) {
        Some("ipv4") => "ipv4",
        _ => "dualstack",
    };
    Ok(json!({
        "loadBalancerArn": lb.load_balancer_arn(),
        "loadBalancerCanonicalHostedZoneId": lb.canonical_hosted_zone_id(),
        "loadBalancerDnsName": lb.dns_name(),
        "vpcId": lb.vpc_id(),
        "securityGroupIds": lb.security_groups(),
        "ipAddressType": ip_type,
    }))
}

async fn listeners_of(elb: &Client, lb_arn: &str) -> Result<Vec<Listener>, ProviderError> {
    let mut listeners = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = elb
            .describe_listeners()
            .load_balancer_arn(lb_arn)
            .set_marker(marker.take())
            .send()
            .await
            .map_err(|e| aws_error("load-balancer-listener: DescribeListeners", e))?;
        listeners.extend(page.listeners().iter().cloned());
        match page.next_marker() {
            Some(next) => marker = Some(next.to_string()),
            None => break,
        }
    }
    Ok(listeners)
}

/// `load-balancer-listener`: exactly one listener (by ARN, or by port and protocol on the
/// matching load balancers).
pub async fn listener(elb: &Client, props: &Value) -> Result<Value, ProviderError> {
    let listener_arn = props.get("listenerArn").and_then(Value::as_str);
    let lb_arn = props.get("loadBalancerArn").and_then(Value::as_str);
    if listener_arn.is_none() && lb_arn.is_none() && props.get("loadBalancerTags").is_none() {
        return Err(failed(
            "The load balancer listener query must specify at least one of: `listenerArn`, `loadBalancerArn` or `loadBalancerTags`".into(),
        ));
    }
    if let Some(arn) = listener_arn {
        let not_found = || {
            failed(format!(
                "No load balancer listeners found matching arn {arn}"
            ))
        };
        let answer = elb
            .describe_listeners()
            .listener_arns(arn)
            .send()
            .await
            .map_err(|_| not_found())?;
        let listener = answer.listeners().first().cloned().ok_or_else(not_found)?;
        let owner = listener.load_balancer_arn().or(lb_arn);
        let found = matching(elb, props, owner).await.ok().unwrap_or_default();
        let [lb] = found.as_slice() else {
            return Err(failed(format!(
                "No associated load balancer found for listener arn {arn}"
            )));
        };
        return Ok(json!({
            "listenerArn": listener.listener_arn(),
            "listenerPort": listener.port(),
            "securityGroupIds": lb.security_groups(),
        }));
    }
    let filter = props.to_string();
    let balancers = matching(elb, props, lb_arn).await?;
    if balancers.is_empty() {
        return Err(failed(format!(
            "No associated load balancers found for load balancer listener query {filter}"
        )));
    }
    let port = props
        .get("listenerPort")
        .and_then(Value::as_i64)
        .filter(|p| *p != 0);
    let protocol = props.get("listenerProtocol").and_then(Value::as_str);
    let mut found: Vec<(Listener, Vec<String>)> = Vec::new();
    for lb in &balancers {
        let Some(arn) = lb.load_balancer_arn() else {
            continue;
        };
        for listener in listeners_of(elb, arn).await? {
            let port_ok = port.is_none_or(|p| listener.port().map(i64::from) == Some(p));
            let protocol_ok =
                protocol.is_none_or(|p| listener.protocol().map(|x| x.as_str()) == Some(p));
            if port_ok && protocol_ok {
                found.push((listener, lb.security_groups().to_vec()));
            }
        }
    }
    match found.as_slice() {
        [] => Err(failed(format!("No load balancer listeners found matching {filter}"))),
        [(listener, groups)] => Ok(json!({
            "listenerArn": listener.listener_arn(),
            "listenerPort": listener.port(),
            "securityGroupIds": groups,
        })),
        _ => Err(failed(format!(
            "Multiple load balancer listeners found matching {filter} - please provide more specific criteria"
        ))),
    }
}
