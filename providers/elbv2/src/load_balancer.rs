//! `AWS::ElasticLoadBalancingV2::LoadBalancer` (application, network and gateway): physical id
//! (and `Ref`) is the ARN. Its name is chosen before the call (the template's, or
//! `{stack}-{logicalId}-{SUFFIX}` in 32 characters from the create's token), so the run after a
//! crash finds it by name. The create returns while the load balancer is `provisioning`: a
//! listener, a target group's registration or an alias record can use it then already. A
//! delete waits until ELBv2 no longer describes it, so its subnets and security groups can
//! be deleted next.

use std::time::Duration;

use aws_sdk_elasticloadbalancingv2::types::{LoadBalancerAttribute, SubnetMapping};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, found, poll, put, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult, Wait,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    arn_suffix, changed, changed_key_values, client, configured_or_undone, created_name,
    created_or_own, failed, key_values, key_values_shape, name_for, read_tags, sdk_tags,
    update_tags,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ElasticLoadBalancingV2::LoadBalancer";

/// How long a wait on the load balancer (gone after a delete, `active` under `--wait full`)
/// lasts when the host sets no timeout.
const PATIENCE: Duration = Duration::from_secs(600);

/// The `AWS::ElasticLoadBalancingV2::LoadBalancer` provider.
#[derive(Default)]
pub struct LoadBalancer;

type Live = aws_sdk_elasticloadbalancingv2::types::LoadBalancer;

/// The template's `SubnetMappings` as the SDK's.
fn subnet_mappings(value: Option<&Value>) -> Option<Vec<SubnetMapping>> {
    value?.as_array().map(|items| {
        items
            .iter()
            .map(|m| {
                SubnetMapping::builder()
                    .set_subnet_id(text(m.get("SubnetId")))
                    .set_allocation_id(text(m.get("AllocationId")))
                    .set_private_ipv4_address(text(m.get("PrivateIPv4Address")))
                    .set_ipv6_address(text(m.get("IPv6Address")))
                    .set_source_nat_ipv6_prefix(text(m.get("SourceNatIpv6Prefix")))
                    .build()
            })
            .collect()
    })
}

/// `[{Key, Value}]` pairs as ELBv2 load balancer attributes.
fn sdk_attributes(pairs: Vec<(String, String)>) -> Vec<LoadBalancerAttribute> {
    pairs
        .into_iter()
        .map(|(k, v)| LoadBalancerAttribute::builder().key(k).value(v).build())
        .collect()
}

/// Sends the `LoadBalancerAttributes` that are new or changed from `before` to `after`
/// (ModifyLoadBalancerAttributes).
async fn set_attributes(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
    before: Option<&Value>,
    after: Option<&Value>,
) -> Result<(), ProviderError> {
    let attributes = changed_key_values(before, after);
    if attributes.is_empty() {
        return Ok(());
    }
    elb.modify_load_balancer_attributes()
        .load_balancer_arn(arn)
        .set_attributes(Some(sdk_attributes(attributes)))
        .send()
        .await
        .map_err(failed!(format!(
            "{what}: ModifyLoadBalancerAttributes {arn}"
        )))?;
    Ok(())
}

/// `Fn::GetAtt` attributes of a live load balancer.
fn attributes_of(lb: &Live) -> Map<String, Value> {
    let mut attributes = Map::new();
    let arn = lb.load_balancer_arn().unwrap_or_default();
    attributes.insert("LoadBalancerArn".into(), json!(arn));
    put(&mut attributes, "DNSName", lb.dns_name().map(Value::from));
    put(
        &mut attributes,
        "CanonicalHostedZoneID",
        lb.canonical_hosted_zone_id().map(Value::from),
    );
    put(
        &mut attributes,
        "LoadBalancerName",
        lb.load_balancer_name().map(Value::from),
    );
    put(
        &mut attributes,
        "LoadBalancerFullName",
        arn_suffix(arn, ":loadbalancer/").map(Value::from),
    );
    attributes.insert("SecurityGroups".into(), json!(lb.security_groups()));
    attributes
}

/// Under `--wait full`, waits until the new load balancer is `active` (about 150 s for an
/// application load balancer on AWS, as CloudFormation waits); by default its dependents need
/// only its ARN, DNS name and zone, which the create answered.
async fn active(
    ctx: &PluginContext,
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
) -> Result<(), ProviderError> {
    let patience = ctx.resource_timeout().unwrap_or(PATIENCE);
    let reached = poll(patience, || async {
        let live = describe(elb, what, arn)
            .await?
            .ok_or_else(|| does_not_exist(what, arn, "ElasticLoadBalancingV2"))?;
        let state = live
            .state()
            .and_then(|s| s.code())
            .map(|c| c.as_str().to_string());
        match state.as_deref() {
            Some("active") => Ok(Some(())),
            Some("failed") => Err(ProviderError::other(format!(
                "{what}: {arn} failed to provision: {}",
                live.state()
                    .and_then(|s| s.reason())
                    .unwrap_or("no reason given")
            ))),
            _ => Ok(None),
        }
    })
    .await?;
    reached.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: {arn} was not active within {}s (--wait full); it exists: deploy again without --wait full to record it",
                patience.as_secs()
            ),
        )
    })
}

/// The load balancer of `arn`; `None` when it is gone.
async fn describe(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Live>, ProviderError> {
    let answer = found(
        elb.describe_load_balancers()
            .load_balancer_arns(arn)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeLoadBalancers {arn}"))),
    )?;
    Ok(answer.and_then(|a| a.load_balancers().first().cloned()))
}

/// The load balancer named `name`; `None` when there is none.
async fn describe_named(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    name: &str,
) -> Result<Option<Live>, ProviderError> {
    let answer = found(
        elb.describe_load_balancers()
            .names(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeLoadBalancers {name}"))),
    )?;
    Ok(answer.and_then(|a| a.load_balancers().first().cloned()))
}

/// A live load balancer in template shape; `template` (the recorded properties) says which
/// attributes to report and whether subnets are written as mappings.
fn template_shape(
    lb: &Live,
    attributes: &[LoadBalancerAttribute],
    tags: Option<Value>,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", lb.load_balancer_name().map(Value::from));
    put(&mut props, "Type", lb.r#type().map(|t| json!(t.as_str())));
    put(&mut props, "Scheme", lb.scheme().map(|s| json!(s.as_str())));
    put(
        &mut props,
        "IpAddressType",
        lb.ip_address_type().map(|t| json!(t.as_str())),
    );
    if !lb.security_groups().is_empty() {
        let mut groups = lb.security_groups().to_vec();
        groups.sort();
        props.insert("SecurityGroups".into(), json!(groups));
    }
    put(
        &mut props,
        "EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic",
        lb.enforce_security_group_inbound_rules_on_private_link_traffic()
            .filter(|_| {
                template.contains_key("EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic")
            })
            .map(Value::from),
    );
    let mut zones: Vec<_> = lb.availability_zones().iter().collect();
    zones.sort_by_key(|z| z.subnet_id().unwrap_or_default().to_string());
    if template.contains_key("SubnetMappings") {
        let mappings: Vec<Value> = zones
            .iter()
            .map(|z| {
                let mut mapping = Map::new();
                put(&mut mapping, "SubnetId", z.subnet_id().map(Value::from));
                if let Some(address) = z.load_balancer_addresses().first() {
                    put(
                        &mut mapping,
                        "AllocationId",
                        address.allocation_id().map(Value::from),
                    );
                    put(
                        &mut mapping,
                        "PrivateIPv4Address",
                        address.private_ipv4_address().map(Value::from),
                    );
                    put(
                        &mut mapping,
                        "IPv6Address",
                        address.ipv6_address().map(Value::from),
                    );
                }
                Value::Object(mapping)
            })
            .collect();
        props.insert("SubnetMappings".into(), Value::Array(mappings));
    } else {
        let subnets: Vec<&str> = zones.iter().filter_map(|z| z.subnet_id()).collect();
        props.insert("Subnets".into(), json!(subnets));
    }
    put(
        &mut props,
        "LoadBalancerAttributes",
        key_values_shape(
            attributes
                .iter()
                .filter_map(|a| Some((a.key()?, a.value().unwrap_or_default()))),
            &key_values(template.get("LoadBalancerAttributes")),
        ),
    );
    put(&mut props, "Tags", tags);
    props
}

/// Applies the settings a create cannot send (attributes, the PrivateLink flag) to a new load
/// balancer.
async fn configure(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    set_attributes(elb, what, arn, None, props.get("LoadBalancerAttributes")).await?;
    if let Some(flag) = text(props.get("EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic")) {
        elb.set_security_groups()
            .load_balancer_arn(arn)
            .set_security_groups(strings(props.get("SecurityGroups")))
            .enforce_security_group_inbound_rules_on_private_link_traffic(flag.as_str().into())
            .send()
            .await
            .map_err(failed!(format!("{what}: SetSecurityGroups {arn}")))?;
    }
    Ok(())
}

#[async_trait]
impl ResourceProvider for LoadBalancer {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "Type",
                "Scheme",
                "IpAddressType",
                "Subnets",
                "SubnetMappings",
                "SecurityGroups",
                "EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic",
                "LoadBalancerAttributes",
                "Tags",
            ])
            .create_only(&["Name", "Type", "Scheme"])
            .read_and_import()
            .finds_created_in(&["Name"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = name_for(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
        );
        let elb = client(ctx).await?;
        let created = elb
            .create_load_balancer()
            .name(&name)
            .set_type(text(props.get("Type")).map(|t| t.as_str().into()))
            .set_scheme(text(props.get("Scheme")).map(|s| s.as_str().into()))
            .set_subnets(strings(props.get("Subnets")))
            .set_subnet_mappings(subnet_mappings(props.get("SubnetMappings")))
            .set_security_groups(strings(props.get("SecurityGroups")))
            .set_ip_address_type(text(props.get("IpAddressType")).map(|t| t.as_str().into()))
            .set_tags(sdk_tags(props))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateLoadBalancer {name}")));
        let lb = created_or_own(
            created.map(|answer| answer.load_balancers().first().cloned()),
            props,
            || {
                ProviderError::other(format!(
                    "{what}: CreateLoadBalancer returned no load balancer"
                ))
            },
            || describe_named(&elb, &what, &name),
        )
        .await?;
        let arn = lb.load_balancer_arn().unwrap_or_default().to_string();
        configured_or_undone(
            configure(&elb, &what, &arn, props).await,
            "load balancer",
            &arn,
            || async {
                elb.delete_load_balancer()
                    .load_balancer_arn(&arn)
                    .send()
                    .await
                    .is_ok()
            },
        )
        .await?;
        if ctx.wait() == Wait::Full {
            active(ctx, &elb, &what, &arn).await?;
        }
        Ok(CreateResult {
            physical_id: arn,
            attributes: attributes_of(&lb),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let arn = request.physical_id.as_str();
        let elb = client(ctx).await?;
        if changed(before, after, "Subnets") || changed(before, after, "SubnetMappings") {
            elb.set_subnets()
                .load_balancer_arn(arn)
                .set_subnets(strings(after.get("Subnets")))
                .set_subnet_mappings(subnet_mappings(after.get("SubnetMappings")))
                .send()
                .await
                .map_err(failed!(format!("{what}: SetSubnets {arn}")))?;
        }
        let enforce = "EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic";
        if changed(before, after, "SecurityGroups") || changed(before, after, enforce) {
            elb.set_security_groups()
                .load_balancer_arn(arn)
                .set_security_groups(Some(
                    strings(after.get("SecurityGroups")).unwrap_or_default(),
                ))
                .set_enforce_security_group_inbound_rules_on_private_link_traffic(
                    text(after.get(enforce)).map(|f| f.as_str().into()),
                )
                .send()
                .await
                .map_err(failed!(format!("{what}: SetSecurityGroups {arn}")))?;
        }
        if changed(before, after, "IpAddressType") {
            elb.set_ip_address_type()
                .load_balancer_arn(arn)
                .ip_address_type(
                    text(after.get("IpAddressType"))
                        .unwrap_or_else(|| "ipv4".into())
                        .as_str()
                        .into(),
                )
                .send()
                .await
                .map_err(failed!(format!("{what}: SetIpAddressType {arn}")))?;
        }
        set_attributes(
            &elb,
            &what,
            arn,
            before.get("LoadBalancerAttributes"),
            after.get("LoadBalancerAttributes"),
        )
        .await?;
        update_tags(&elb, &what, arn, before, after).await?;
        let lb = describe(&elb, &what, arn)
            .await?
            .ok_or_else(|| does_not_exist(&what, arn, "ElasticLoadBalancingV2"))?;
        Ok(UpdateResult {
            physical_id: arn.to_string(),
            attributes: attributes_of(&lb),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let elb = client(ctx).await?;
        let deleted = deleted_unless_failed(
            elb.delete_load_balancer()
                .load_balancer_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteLoadBalancer {arn}"))),
        )?;
        let patience = ctx.resource_timeout().unwrap_or(PATIENCE);
        let gone = poll(patience, || {
            let elb = &elb;
            let what = &what;
            async move { Ok(describe(elb, what, arn).await?.is_none().then_some(())) }
        })
        .await?;
        if gone.is_none() {
            return Err(ProviderError::new(
                ErrorKind::TIMEOUT,
                format!(
                    "{what}: {arn} is still described {}s after DeleteLoadBalancer; run the destroy again once it is gone",
                    patience.as_secs()
                ),
            ));
        }
        Ok(deleted)
    }
}

#[async_trait]
impl Readable for LoadBalancer {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let elb = client(ctx).await?;
        let arn = request.physical_id.as_str();
        let Some(lb) = describe(&elb, what, arn).await? else {
            return Ok(None);
        };
        let attributes = elb
            .describe_load_balancer_attributes()
            .load_balancer_arn(arn)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DescribeLoadBalancerAttributes {arn}"
            )))?;
        let tags = read_tags(&elb, what, arn).await?;
        Ok(Some(template_shape(
            &lb,
            attributes.attributes(),
            tags,
            &request.properties,
        )))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let elb = client(ctx).await?;
        let lb = describe(&elb, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "ElasticLoadBalancingV2"))?;
        Ok(attributes_of(&lb))
    }

    /// The load balancer of the name the create took (the template's, or the one generated
    /// from its token).
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(name) = created_name(request) else {
            return Ok(None);
        };
        let elb = client(ctx).await?;
        Ok(describe_named(&elb, what, &name)
            .await?
            .and_then(|lb| lb.load_balancer_arn().map(ToString::to_string)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_elasticloadbalancingv2::types::{AvailabilityZone, LoadBalancerAddress};

    fn live() -> Live {
        Live::builder()
            .load_balancer_arn(
                "arn:aws:elasticloadbalancing:us-east-1:1:loadbalancer/app/web/50dc6c495c0c9188",
            )
            .load_balancer_name("web")
            .dns_name("web-1.us-east-1.elb.amazonaws.com")
            .canonical_hosted_zone_id("Z35SXDOTRQ7X7K")
            .r#type("application".into())
            .scheme("internet-facing".into())
            .ip_address_type("ipv4".into())
            .security_groups("sg-2")
            .security_groups("sg-1")
            .availability_zones(AvailabilityZone::builder().subnet_id("subnet-b").build())
            .availability_zones(
                AvailabilityZone::builder()
                    .subnet_id("subnet-a")
                    .load_balancer_addresses(
                        LoadBalancerAddress::builder()
                            .allocation_id("eipalloc-1")
                            .build(),
                    )
                    .build(),
            )
            .build()
    }

    #[test]
    fn the_live_load_balancer_reads_back_in_template_shape() {
        let attributes = [
            LoadBalancerAttribute::builder()
                .key("idle_timeout.timeout_seconds")
                .value("120")
                .build(),
            LoadBalancerAttribute::builder()
                .key("routing.http2.enabled")
                .value("true")
                .build(),
        ];
        let template = json!({"LoadBalancerAttributes": [{"Key": "idle_timeout.timeout_seconds", "Value": 120}]});
        let shape = template_shape(
            &live(),
            &attributes,
            Some(json!([{"Key": "team", "Value": "a"}])),
            template.as_object().unwrap(),
        );
        assert_eq!(
            Value::Object(shape),
            json!({
                "Name": "web",
                "Type": "application",
                "Scheme": "internet-facing",
                "IpAddressType": "ipv4",
                "SecurityGroups": ["sg-1", "sg-2"],
                "Subnets": ["subnet-a", "subnet-b"],
                "LoadBalancerAttributes": [{"Key": "idle_timeout.timeout_seconds", "Value": "120"}],
                "Tags": [{"Key": "team", "Value": "a"}],
            })
        );
        let mapped = template_shape(
            &live(),
            &[],
            None,
            json!({"SubnetMappings": []}).as_object().unwrap(),
        );
        assert_eq!(
            mapped["SubnetMappings"],
            json!([{"SubnetId": "subnet-a", "AllocationId": "eipalloc-1"}, {"SubnetId": "subnet-b"}])
        );
    }

    #[test]
    fn attributes_name_the_arn_dns_zone_and_full_name() {
        let attributes = attributes_of(&live());
        assert_eq!(
            attributes["LoadBalancerFullName"],
            "app/web/50dc6c495c0c9188"
        );
        assert_eq!(attributes["CanonicalHostedZoneID"], "Z35SXDOTRQ7X7K");
        assert_eq!(attributes["LoadBalancerName"], "web");
        assert_eq!(attributes["SecurityGroups"], json!(["sg-2", "sg-1"]));
        let schema = LoadBalancer.schema();
        assert_eq!(schema.find_scope, ["Name"]);
        assert!(schema
            .create_only_properties
            .contains(&"Scheme".to_string()));
    }

    #[test]
    fn subnet_mappings_take_every_field() {
        let mappings = subnet_mappings(Some(&json!([
            {"SubnetId": "s1", "AllocationId": "a1", "PrivateIPv4Address": "10.0.0.5"}
        ])))
        .unwrap();
        assert_eq!(mappings[0].allocation_id(), Some("a1"));
        assert_eq!(mappings[0].private_ipv4_address(), Some("10.0.0.5"));
    }
}
