//! `AWS::EC2::Route`: physical id `<routeTableId>|<destination>`.

use cdkd_aws_common::{aws_error, put, require_str, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, split};
use crate::route_table::describe_table;
use crate::{already_there, client, does_not_exist, in_place, some_str, what};

const ROUTE: &str = "AWS::EC2::Route";

/// `AWS::EC2::Route`.
#[derive(Default)]
pub struct Route;

const ROUTE_SEGMENTS: &[&str] = &["routeTableId", "destination"];
/// Where a route's destination may come from, in the order the id prefers them.
const DESTINATIONS: &[&str] = &[
    "DestinationCidrBlock",
    "DestinationIpv6CidrBlock",
    "DestinationPrefixListId",
];
/// Where a route may send traffic: template property = the route's field.
const TARGETS: &[&str] = &[
    "GatewayId",
    "NatGatewayId",
    "InstanceId",
    "NetworkInterfaceId",
    "VpcPeeringConnectionId",
    "TransitGatewayId",
    "EgressOnlyInternetGatewayId",
    "VpcEndpointId",
    "CarrierGatewayId",
    "LocalGatewayId",
    "CoreNetworkArn",
];

/// Sets the destination and targets the template declares on a create or replace call (the
/// two builders have the same setters but no common trait).
macro_rules! route_fields {
    ($call:expr, $props:expr) => {{
        let p = $props;
        $call
            .set_destination_cidr_block(text(p.get("DestinationCidrBlock")))
            .set_destination_ipv6_cidr_block(text(p.get("DestinationIpv6CidrBlock")))
            .set_destination_prefix_list_id(text(p.get("DestinationPrefixListId")))
            .set_gateway_id(text(p.get("GatewayId")))
            .set_nat_gateway_id(text(p.get("NatGatewayId")))
            .set_instance_id(text(p.get("InstanceId")))
            .set_network_interface_id(text(p.get("NetworkInterfaceId")))
            .set_vpc_peering_connection_id(text(p.get("VpcPeeringConnectionId")))
            .set_transit_gateway_id(text(p.get("TransitGatewayId")))
            .set_egress_only_internet_gateway_id(text(p.get("EgressOnlyInternetGatewayId")))
            .set_vpc_endpoint_id(text(p.get("VpcEndpointId")))
            .set_carrier_gateway_id(text(p.get("CarrierGatewayId")))
            .set_local_gateway_id(text(p.get("LocalGatewayId")))
            .set_core_network_arn(text(p.get("CoreNetworkArn")))
    }};
}

/// The route's destination: `(property, value)`.
fn destination<'a>(
    what: &str,
    properties: &'a Map<String, Value>,
) -> Result<(&'static str, &'a str), ProviderError> {
    DESTINATIONS
        .iter()
        .find_map(|key| {
            properties
                .get(*key)
                .and_then(Value::as_str)
                .map(|value| (*key, value))
        })
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: one of {} is required",
                DESTINATIONS.join(", ")
            ))
        })
}

/// The route with `destination` in the table, in template shape.
fn route_properties(
    table: &aws_sdk_ec2::types::RouteTable,
    destination: &str,
) -> Option<Map<String, Value>> {
    let route = table.routes().iter().find(|r| {
        [
            r.destination_cidr_block(),
            r.destination_ipv6_cidr_block(),
            r.destination_prefix_list_id(),
        ]
        .contains(&Some(destination))
    })?;
    let mut props = Map::new();
    put(&mut props, "RouteTableId", some_str(table.route_table_id()));
    for (key, value) in DESTINATIONS.iter().zip([
        route.destination_cidr_block(),
        route.destination_ipv6_cidr_block(),
        route.destination_prefix_list_id(),
    ]) {
        put(&mut props, key, some_str(value));
    }
    for (key, value) in TARGETS.iter().zip([
        route.gateway_id(),
        route.nat_gateway_id(),
        route.instance_id(),
        route.network_interface_id(),
        route.vpc_peering_connection_id(),
        route.transit_gateway_id(),
        route.egress_only_internet_gateway_id(),
        None,
        route.carrier_gateway_id(),
        route.local_gateway_id(),
        route.core_network_arn(),
    ]) {
        put(&mut props, key, some_str(value));
    }
    Some(props)
}

/// The route an id names, in template shape; `None` when the table or the route is gone.
async fn read_route(
    ctx: &PluginContext,
    what: &str,
    physical_id: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let parts = split(what, physical_id, ROUTE_SEGMENTS)?;
    let ec2 = client(ctx).await?;
    Ok(describe_table(&ec2, what, parts[0])
        .await?
        .and_then(|t| route_properties(&t, parts[1])))
}

/// The ids a route sends traffic to. Compared as a set of values, not by property: EC2 reports
/// some targets under another field than the template names them (a VPC endpoint's as
/// `GatewayId`).
fn targets(properties: &Map<String, Value>) -> std::collections::BTreeSet<String> {
    TARGETS
        .iter()
        .filter_map(|key| text(properties.get(*key)))
        .collect()
}

/// Whether the route read back is the one the template asks for: same table, destination and
/// target.
fn same_route(existing: &Map<String, Value>, wanted: &Map<String, Value>) -> bool {
    let destination_of =
        |m: &Map<String, Value>| DESTINATIONS.iter().find_map(|key| text(m.get(*key)));
    text(existing.get("RouteTableId")) == text(wanted.get("RouteTableId"))
        && destination_of(existing) == destination_of(wanted)
        && !targets(wanted).is_empty()
        && targets(existing) == targets(wanted)
}

/// The `CidrBlock` attribute: the template's IPv4 destination, when it has one.
fn cidr_attribute(properties: &Map<String, Value>) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(
        &mut attributes,
        "CidrBlock",
        properties.get("DestinationCidrBlock").cloned(),
    );
    attributes
}

#[async_trait]
impl Readable for Route {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        read_route(ctx, what, &request.physical_id).await
    }

    /// `CidrBlock`, from the route read back.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let read = read_route(ctx, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id))?;
        Ok(cidr_attribute(&read))
    }
}

#[async_trait]
impl ResourceProvider for Route {
    fn schema(&self) -> ResourceTypeSchema {
        let mut handled = vec!["RouteTableId"];
        handled.extend(DESTINATIONS);
        handled.extend(TARGETS);
        let mut create_only = vec!["RouteTableId"];
        create_only.extend(DESTINATIONS);
        TypeSchema::builder(ROUTE)
            .handles(&handled)
            .create_only(&create_only)
            .read_and_import()
            // A repeated create adopts the identical pair (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .composite_id(ROUTE_SEGMENTS, &[&["RouteTableId"], DESTINATIONS])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ROUTE, &request.logical_id);
        let props = &request.properties;
        let table = require_str(props, "RouteTableId", &what)?;
        let (_, to) = destination(&what, props)?;
        let id = join(&what, &[("routeTableId", table), ("destination", to)])?;
        let ec2 = client(ctx).await?;
        let added = route_fields!(ec2.create_route().route_table_id(table), props)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: adding the route to {to} in {table}"), e));
        match added {
            // A create retried after a crash finds its own route: adopted. A route to another
            // target is not the one asked for, and the refusal stands.
            Err(err) if already_there(&err) => {
                let ours = read_route(ctx, &what, &id)
                    .await?
                    .is_some_and(|existing| same_route(&existing, props));
                if !ours {
                    return Err(err);
                }
                tracing::info!("{what}: the route to {to} in {table} already exists; adopting it");
            }
            other => {
                other?;
            }
        }
        Ok(CreateResult {
            physical_id: id,
            attributes: cidr_attribute(props),
            ..Default::default()
        })
    }

    /// Only the target can change in place (`ReplaceRoute`); table and destination are
    /// create-only.
    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(ROUTE, &request.logical_id);
        let props = &request.properties;
        let parts = split(&what, &request.physical_id, ROUTE_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        route_fields!(ec2.replace_route().route_table_id(parts[0]), props)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: changing the route to {}", parts[1]), e))?;
        let attributes = cidr_attribute(props);
        Ok(in_place(request, attributes))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ROUTE, &request.logical_id);
        let parts = split(&what, &request.physical_id, ROUTE_SEGMENTS)?;
        // Which kind of destination the segment is comes from the recorded properties; an
        // import without them is told apart by shape.
        let key = destination(&what, &request.properties)
            .map(|(key, _)| key)
            .unwrap_or(if parts[1].starts_with("pl-") {
                "DestinationPrefixListId"
            } else if parts[1].contains(':') {
                "DestinationIpv6CidrBlock"
            } else {
                "DestinationCidrBlock"
            });
        let mut target = Map::new();
        target.insert(key.into(), json!(parts[1]));
        let ec2 = client(ctx).await?;
        let call = ec2.delete_route().route_table_id(parts[0]);
        let call = call
            .set_destination_cidr_block(text(target.get("DestinationCidrBlock")))
            .set_destination_ipv6_cidr_block(text(target.get("DestinationIpv6CidrBlock")))
            .set_destination_prefix_list_id(text(target.get("DestinationPrefixListId")));
        cdkd_aws_common::deleted_unless_failed(
            call.send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: deleting the route to {}", parts[1]), e)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_destination_is_the_first_declared_kind() {
        let props = json!({"RouteTableId": "rtb-1", "DestinationIpv6CidrBlock": "::/0", "GatewayId": "igw-1"});
        assert_eq!(
            destination("R", props.as_object().unwrap()).unwrap(),
            ("DestinationIpv6CidrBlock", "::/0")
        );
        let none = json!({"RouteTableId": "rtb-1"});
        let err = destination("AWS::EC2::Route R", none.as_object().unwrap()).unwrap_err();
        assert!(
            err.message.contains("one of DestinationCidrBlock"),
            "{}",
            err.message
        );
    }

    #[test]
    fn an_existing_route_is_adopted_only_with_the_same_target() {
        let existing = json!({"RouteTableId": "rtb-1", "DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-1"});
        let existing = existing.as_object().unwrap();
        let wanted = |v: Value| v.as_object().unwrap().clone();
        assert!(same_route(
            existing,
            &wanted(
                json!({"RouteTableId": "rtb-1", "DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-1"})
            )
        ));
        assert!(!same_route(
            existing,
            &wanted(
                json!({"RouteTableId": "rtb-1", "DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-2"})
            )
        ));
        assert!(!same_route(
            existing,
            &wanted(
                json!({"RouteTableId": "rtb-1", "DestinationCidrBlock": "0.0.0.0/0", "GatewayId": "igw-1"})
            )
        ));
        assert!(!same_route(
            existing,
            &wanted(
                json!({"RouteTableId": "rtb-1", "DestinationCidrBlock": "10.0.0.0/8", "NatGatewayId": "nat-1"})
            )
        ));
        // A VPC endpoint's route reads back under GatewayId.
        let endpoint = json!({"RouteTableId": "rtb-1", "DestinationPrefixListId": "pl-1", "GatewayId": "vpce-1"});
        assert!(same_route(
            endpoint.as_object().unwrap(),
            &wanted(
                json!({"RouteTableId": "rtb-1", "DestinationPrefixListId": "pl-1", "VpcEndpointId": "vpce-1"})
            )
        ));
    }

    #[test]
    fn a_route_reads_back_in_template_shape() {
        let table = aws_sdk_ec2::types::RouteTable::builder()
            .route_table_id("rtb-1")
            .routes(
                aws_sdk_ec2::types::Route::builder()
                    .destination_cidr_block("10.0.0.0/16")
                    .gateway_id("local")
                    .build(),
            )
            .routes(
                aws_sdk_ec2::types::Route::builder()
                    .destination_cidr_block("0.0.0.0/0")
                    .nat_gateway_id("nat-1")
                    .build(),
            )
            .build();
        assert_eq!(
            Value::Object(route_properties(&table, "0.0.0.0/0").unwrap()),
            json!({"RouteTableId": "rtb-1", "DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-1"})
        );
        assert!(route_properties(&table, "::/0").is_none());
    }
}
