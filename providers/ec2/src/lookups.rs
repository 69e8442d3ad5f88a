//! The CDK's EC2 context lookups, answered as the CDK CLI answers them: `vpc-provider`
//! (`Vpc.fromLookup`), `security-group` (`SecurityGroup.fromLookupById/ByName`), `ami`
//! (`MachineImage.lookup`) and `endpoint-service-availability-zones`.

use aws_sdk_ec2::types::{Filter, RouteTable, Subnet};
use cdkd_aws_common::aws_error;
use cdkd_provider_api::protocol::ContextLookupRequest;
use cdkd_provider_api::{PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// Answers `request`, or says the provider is not one of these.
pub async fn answer(
    ctx: &PluginContext,
    request: &ContextLookupRequest,
) -> Result<Value, ProviderError> {
    let props = &request.props;
    let region = props
        .get("region")
        .and_then(Value::as_str)
        .unwrap_or(ctx.region());
    let ec2 = crate::regional_client(ctx, region).await?;
    match request.provider.as_str() {
        "vpc-provider" => vpc(&ec2, props).await,
        "security-group" => security_group(&ec2, props).await,
        "ami" => ami(&ec2, props).await,
        "endpoint-service-availability-zones" => endpoint_service_zones(&ec2, props).await,
        other => Err(ProviderError::unsupported(format!(
            "the ec2 plugin does not answer '{other}' lookups"
        ))),
    }
}

fn failed(message: String) -> ProviderError {
    ProviderError::validation(message)
}

fn filter_of(name: &str, values: Vec<String>) -> Filter {
    Filter::builder()
        .name(name)
        .set_values(Some(values))
        .build()
}

fn tag<'a>(tags: &'a [aws_sdk_ec2::types::Tag], key: &str) -> Option<&'a str> {
    tags.iter()
        .find(|t| t.key() == Some(key))
        .and_then(|t| t.value())
        .filter(|v| !v.is_empty())
}

/// The subnet types a lookup reports, in the order the symmetric answer lists them.
const TYPES: [&str; 3] = ["Isolated", "Private", "Public"];

#[derive(Debug)]
struct LookedUpSubnet {
    id: String,
    cidr: Option<String>,
    zone: String,
    route_table: String,
    kind: String,
    name: String,
}

async fn vpc(ec2: &aws_sdk_ec2::Client, props: &Value) -> Result<Value, ProviderError> {
    let filters: Vec<Filter> = props
        .get("filter")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, value)| filter_of(name, vec![text_of(value)]))
        .collect();
    let vpcs = ec2
        .describe_vpcs()
        .set_filters(Some(filters))
        .send()
        .await
        .map_err(|e| aws_error("vpc-provider: DescribeVpcs", e))?;
    let vpcs = vpcs.vpcs();
    let query = props.to_string();
    let vpc = match vpcs {
        [] => return Err(failed(format!("Could not find any VPCs matching {query}"))),
        [one] => one,
        many => {
            return Err(failed(format!(
                "Found {} VPCs matching {query}; please narrow the search criteria",
                many.len()
            )))
        }
    };
    let vpc_id = vpc.vpc_id().unwrap_or_default().to_string();
    let in_vpc = || filter_of("vpc-id", vec![vpc_id.clone()]);
    let subnets = ec2
        .describe_subnets()
        .filters(in_vpc())
        .send()
        .await
        .map_err(|e| aws_error("vpc-provider: DescribeSubnets", e))?;
    let tables = ec2
        .describe_route_tables()
        .filters(in_vpc())
        .send()
        .await
        .map_err(|e| aws_error("vpc-provider: DescribeRouteTables", e))?;
    let name_tag = props.get("subnetGroupNameTag").and_then(Value::as_str);
    let mut looked_up = Vec::new();
    for subnet in subnets.subnets() {
        looked_up.push(classify(subnet, tables.route_tables(), name_tag)?);
    }
    let groups = grouped(looked_up);
    let mut answer = Map::new();
    answer.insert("vpcId".into(), json!(vpc_id));
    answer.insert(
        "vpcCidrBlock".into(),
        json!(vpc.cidr_block().unwrap_or_default()),
    );
    if let Some(owner) = vpc.owner_id() {
        answer.insert("ownerAccountId".into(), json!(owner));
    }
    let asymmetric = props
        .get("returnAsymmetricSubnets")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if asymmetric {
        answer.insert("availabilityZones".into(), json!([]));
    } else {
        symmetric(&mut answer, &groups, &vpc_id)?;
    }
    if props
        .get("returnVpnGateways")
        .and_then(Value::as_bool)
        .unwrap_or(true)
    {
        let gateways = ec2
            .describe_vpn_gateways()
            .filters(filter_of("attachment.vpc-id", vec![vpc_id.clone()]))
            .filters(filter_of("attachment.state", vec!["attached".into()]))
            .filters(filter_of("state", vec!["available".into()]))
            .send()
            .await
            .map_err(|e| aws_error("vpc-provider: DescribeVpnGateways", e))?;
        if let [one] = gateways.vpn_gateways() {
            answer.insert("vpnGatewayId".into(), json!(one.vpn_gateway_id()));
        }
    }
    if asymmetric {
        answer.insert("subnetGroups".into(), subnet_groups(&groups));
    }
    Ok(Value::Object(answer))
}

/// Subnets grouped by (type, name), with their members.
type Groups = Vec<((String, String), Vec<LookedUpSubnet>)>;

/// Groups by (type, name), in order of first appearance; subnets by zone within a group.
fn grouped(looked_up: Vec<LookedUpSubnet>) -> Groups {
    let mut groups: Groups = Vec::new();
    for subnet in looked_up {
        let key = (subnet.kind.clone(), subnet.name.clone());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(subnet),
            None => groups.push((key, vec![subnet])),
        }
    }
    for (_, members) in &mut groups {
        members.sort_by(|a, b| a.zone.cmp(&b.zone));
    }
    groups
}

/// The symmetric answer's zones and, per subnet type, its subnet ids, names and route tables;
/// every group must span the same zones.
fn symmetric(
    answer: &mut Map<String, Value>,
    groups: &Groups,
    vpc_id: &str,
) -> Result<(), ProviderError> {
    let zones = |members: &[LookedUpSubnet]| -> Vec<String> {
        members.iter().map(|s| s.zone.clone()).collect()
    };
    let first = groups
        .first()
        .map(|(_, members)| zones(members))
        .ok_or_else(|| failed(format!("VPC {vpc_id} has no subnets")))?;
    for (_, members) in groups {
        let theirs = zones(members);
        if theirs != first {
            return Err(failed(format!(
                "Not all subnets in VPC have the same AZs: {} vs {}",
                theirs.join(","),
                first.join(",")
            )));
        }
    }
    answer.insert("availabilityZones".into(), json!(first));
    for kind in TYPES {
        let of_kind: Vec<&(_, Vec<LookedUpSubnet>)> =
            groups.iter().filter(|((k, _), _)| k == kind).collect();
        if of_kind.is_empty() {
            continue;
        }
        let prefix = kind.to_ascii_lowercase();
        let ids: Vec<&str> = of_kind
            .iter()
            .flat_map(|(_, m)| m.iter().map(|s| s.id.as_str()))
            .collect();
        let names: Vec<&str> = of_kind.iter().map(|((_, n), _)| n.as_str()).collect();
        let tables: Vec<&str> = of_kind
            .iter()
            .flat_map(|(_, m)| m.iter().map(|s| s.route_table.as_str()))
            .collect();
        answer.insert(format!("{prefix}SubnetIds"), json!(ids));
        answer.insert(format!("{prefix}SubnetNames"), json!(names));
        answer.insert(format!("{prefix}SubnetRouteTableIds"), json!(tables));
    }
    Ok(())
}

/// The asymmetric answer's `subnetGroups`.
fn subnet_groups(groups: &Groups) -> Value {
    let groups: Vec<Value> = groups
        .iter()
        .map(|((kind, name), members)| {
            json!({
                "name": name,
                "type": kind,
                "subnets": members.iter().map(|s| {
                    let mut subnet = Map::new();
                    subnet.insert("subnetId".into(), json!(s.id));
                    if let Some(cidr) = &s.cidr {
                        subnet.insert("cidr".into(), json!(cidr));
                    }
                    subnet.insert("availabilityZone".into(), json!(s.zone));
                    subnet.insert("routeTableId".into(), json!(s.route_table));
                    Value::Object(subnet)
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!(groups)
}

/// A subnet's type (tag, public IPs on launch, then its route table's routes), name and table.
fn classify(
    subnet: &Subnet,
    tables: &[RouteTable],
    name_tag: Option<&str>,
) -> Result<LookedUpSubnet, ProviderError> {
    let id = subnet.subnet_id().unwrap_or_default().to_string();
    let arn = subnet.subnet_arn().unwrap_or("undefined");
    let is_main = |t: &&RouteTable| t.associations().iter().any(|a| a.main() == Some(true));
    let own = tables.iter().find(|t| {
        t.associations()
            .iter()
            .any(|a| a.subnet_id() == Some(id.as_str()))
    });
    let table = own.or_else(|| tables.iter().find(is_main)).ok_or_else(|| {
        failed(format!(
            "Subnet {arn} does not have an associated route table (and there is no \"main\" table)"
        ))
    })?;
    let routes = table.routes();
    let default_route =
        |r: &&aws_sdk_ec2::types::Route| r.destination_cidr_block() == Some("0.0.0.0/0");
    let kind = match tag(subnet.tags(), "aws-cdk:subnet-type") {
        Some(kind @ ("Public" | "Private" | "Isolated")) => kind.to_string(),
        Some(other) => {
            return Err(failed(format!(
                "Subnet {arn} has invalid subnet type {other} (must be Public, Private or Isolated)"
            )))
        }
        None if subnet.map_public_ip_on_launch() == Some(true) => "Public".into(),
        None if routes
            .iter()
            .any(|r| r.gateway_id().is_some_and(|g| g.starts_with("igw-"))) =>
        {
            "Public".into()
        }
        None if routes
            .iter()
            .filter(default_route)
            .any(|r| r.nat_gateway_id().is_some() || r.transit_gateway_id().is_some()) =>
        {
            "Private".into()
        }
        None => "Isolated".into(),
    };
    let name = match name_tag {
        Some(key) => tag(subnet.tags(), key)
            .ok_or_else(|| {
                failed(format!(
                    "Invalid subnetGroupNameTag: Subnet {arn} does not have an associated tag with Key='{key}'"
                ))
            })?
            .to_string(),
        None => tag(subnet.tags(), "aws-cdk:subnet-name")
            .map(str::to_string)
            .unwrap_or_else(|| kind.clone()),
    };
    Ok(LookedUpSubnet {
        id,
        cidr: subnet.cidr_block().map(str::to_string),
        zone: subnet.availability_zone().unwrap_or_default().to_string(),
        route_table: table.route_table_id().unwrap_or_default().to_string(),
        kind,
        name,
    })
}

async fn security_group(ec2: &aws_sdk_ec2::Client, props: &Value) -> Result<Value, ProviderError> {
    let id = props.get("securityGroupId").and_then(Value::as_str);
    let name = props.get("securityGroupName").and_then(Value::as_str);
    match (id, name) {
        (Some(_), Some(_)) => return Err(failed("'securityGroupId' and 'securityGroupName' can not be specified both when looking up a security group".into())),
        (None, None) => return Err(failed("'securityGroupId' or 'securityGroupName' must be specified to look up a security group".into())),
        _ => {}
    }
    let mut filters = Vec::new();
    if let Some(vpc) = props.get("vpcId").and_then(Value::as_str) {
        filters.push(filter_of("vpc-id", vec![vpc.into()]));
    }
    if let Some(name) = name {
        filters.push(filter_of("group-name", vec![name.into()]));
    }
    let answer = ec2
        .describe_security_groups()
        .set_group_ids(id.map(|id| vec![id.to_string()]))
        .set_filters((!filters.is_empty()).then_some(filters))
        .send()
        .await
        .map_err(|e| aws_error("security-group: DescribeSecurityGroups", e))?;
    let query = props.to_string();
    let group = match answer.security_groups() {
        [] => return Err(failed(format!("No security groups found matching {query}"))),
        [one] => one,
        _ => {
            return Err(failed(format!(
                "More than one security groups found matching {query}"
            )))
        }
    };
    let egress = group.ip_permissions_egress();
    let all = |p: &&aws_sdk_ec2::types::IpPermission| p.ip_protocol() == Some("-1");
    let v4 = egress.iter().filter(all).any(|p| {
        p.ip_ranges()
            .iter()
            .any(|r| r.cidr_ip() == Some("0.0.0.0/0"))
    });
    let v6 = egress.iter().filter(all).any(|p| {
        p.ipv6_ranges()
            .iter()
            .any(|r| r.cidr_ipv6() == Some("::/0"))
    });
    Ok(json!({
        "securityGroupId": group.group_id(),
        "allowAllOutbound": v4 && v6,
    }))
}

async fn ami(ec2: &aws_sdk_ec2::Client, props: &Value) -> Result<Value, ProviderError> {
    let owners: Option<Vec<String>> = props.get("owners").and_then(Value::as_array).map(|o| {
        o.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    });
    let filters: Vec<Filter> = props
        .get("filters")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, values)| {
            let values = match values {
                Value::Array(items) => items.iter().map(text_of).collect(),
                other => vec![text_of(other)],
            };
            filter_of(name, values)
        })
        .collect();
    let images = ec2
        .describe_images()
        .set_owners(owners)
        .set_filters(Some(filters))
        .send()
        .await
        .map_err(|e| aws_error("ami: DescribeImages", e))?;
    // The newest by creation date; ISO-8601 text orders as time does.
    let mut found: Vec<(&str, &str)> = images
        .images()
        .iter()
        .filter_map(|i| Some((i.image_id()?, i.creation_date().unwrap_or("1970"))))
        .collect();
    found.sort_by(|a, b| b.1.cmp(a.1));
    found
        .first()
        .map(|(id, _)| json!(id))
        .ok_or_else(|| failed("No AMI found that matched the search criteria".into()))
}

async fn endpoint_service_zones(
    ec2: &aws_sdk_ec2::Client,
    props: &Value,
) -> Result<Value, ProviderError> {
    let service = props
        .get("serviceName")
        .and_then(Value::as_str)
        .ok_or_else(|| failed("the lookup names no serviceName".into()))?;
    let answer = ec2
        .describe_vpc_endpoint_services()
        .service_names(service)
        .send()
        .await
        .map_err(|e| {
            aws_error(
                "endpoint-service-availability-zones: DescribeVpcEndpointServices",
                e,
            )
        })?;
    let zones: Vec<String> = answer
        .service_details()
        .first()
        .map(|d| d.availability_zones().to_vec())
        .unwrap_or_default();
    Ok(json!(zones))
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{Route, RouteTableAssociation, Tag};

    fn table(id: &str, subnet: Option<&str>, main: bool, routes: Vec<Route>) -> RouteTable {
        RouteTable::builder()
            .route_table_id(id)
            .associations(
                RouteTableAssociation::builder()
                    .set_subnet_id(subnet.map(str::to_string))
                    .main(main)
                    .build(),
            )
            .set_routes(Some(routes))
            .build()
    }

    fn subnet(id: &str, tags: &[(&str, &str)]) -> Subnet {
        Subnet::builder()
            .subnet_id(id)
            .availability_zone("us-east-1a")
            .set_tags(Some(
                tags.iter()
                    .map(|(k, v)| Tag::builder().key(*k).value(*v).build())
                    .collect(),
            ))
            .build()
    }

    #[test]
    fn subnets_are_classified_by_tag_then_routes() {
        let tables = vec![
            table("rtb-main", None, true, vec![]),
            table(
                "rtb-pub",
                Some("s-pub"),
                false,
                vec![Route::builder()
                    .gateway_id("igw-1")
                    .destination_cidr_block("0.0.0.0/0")
                    .build()],
            ),
            table(
                "rtb-nat",
                Some("s-nat"),
                false,
                vec![Route::builder()
                    .nat_gateway_id("nat-1")
                    .destination_cidr_block("0.0.0.0/0")
                    .build()],
            ),
        ];
        let kind = |s: Subnet| classify(&s, &tables, None).unwrap();
        let public = kind(subnet("s-pub", &[]));
        assert_eq!(
            (
                public.kind.as_str(),
                public.name.as_str(),
                public.route_table.as_str()
            ),
            ("Public", "Public", "rtb-pub")
        );
        assert_eq!(kind(subnet("s-nat", &[])).kind, "Private");
        let isolated = kind(subnet("s-other", &[]));
        assert_eq!(
            (isolated.kind.as_str(), isolated.route_table.as_str()),
            ("Isolated", "rtb-main")
        );
        let tagged = kind(subnet(
            "s-other",
            &[
                ("aws-cdk:subnet-type", "Private"),
                ("aws-cdk:subnet-name", "App"),
            ],
        ));
        assert_eq!(
            (tagged.kind.as_str(), tagged.name.as_str()),
            ("Private", "App")
        );
        assert!(classify(
            &subnet("s", &[("aws-cdk:subnet-type", "Odd")]),
            &tables,
            None
        )
        .is_err());
        assert!(classify(&subnet("s", &[]), &tables, Some("Tier"))
            .unwrap_err()
            .message
            .contains("Key='Tier'"));
    }
}
