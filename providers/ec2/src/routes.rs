//! `AWS::EC2::RouteTable`, `AWS::EC2::Route` (`<routeTableId>|<destination>`) and
//! `AWS::EC2::SubnetRouteTableAssociation` (the association id).

use aws_sdk_ec2::types::ResourceType;
use cdkd_aws_common::TypeSchema;
use cdkd_aws_common::{aws_error, optional, put, require_str, text};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ImportRequest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, split};
use crate::{
    client, delete_released, does_not_exist, filter, id_attribute, read_existing, retag_only,
    some_str, tag_spec, tags_value, unchanged, what,
};

const TABLE: &str = "AWS::EC2::RouteTable";
const ROUTE: &str = "AWS::EC2::Route";
const ASSOCIATION: &str = "AWS::EC2::SubnetRouteTableAssociation";

async fn describe_table(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::RouteTable>, ProviderError> {
    Ok(optional(
        what,
        ec2.describe_route_tables().route_table_ids(id).send().await,
    )?
    .and_then(|out| out.route_tables().first().cloned()))
}

/// `AWS::EC2::RouteTable`.
#[derive(Default)]
pub struct RouteTable;

#[async_trait]
impl ResourceProvider for RouteTable {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TABLE)
            .handles(&["VpcId", "Tags"])
            .create_only(&["VpcId"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(TABLE, &request.logical_id);
        let vpc = require_str(&request.properties, "VpcId", &what)?;
        let ec2 = client(ctx).await?;
        let created = ec2
            .create_route_table()
            .vpc_id(vpc)
            .set_tag_specifications(
                tag_spec(ResourceType::RouteTable, &request.properties).map(|t| vec![t]),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: creating in {vpc}"), e))?;
        let id = created
            .route_table()
            .and_then(|t| t.route_table_id())
            .ok_or_else(|| does_not_exist(&what, "the new route table"))?
            .to_string();
        Ok(CreateResult {
            attributes: id_attribute("RouteTableId", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("RouteTableId", &request.physical_id);
        retag_only(ctx, &what(TABLE, &request.logical_id), request, attributes).await
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(TABLE, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        delete_released(
            &what,
            "its routes and subnet associations to go",
            || async {
                ec2.delete_route_table()
                    .route_table_id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(&format!("{what}: deleting {id}"), e))
            },
        )
        .await
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(TABLE, &request.logical_id);
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_table(&ec2, &what, &request.physical_id)
                .await?
                .map(|t| {
                    let mut props = Map::new();
                    put(&mut props, "VpcId", some_str(t.vpc_id()));
                    put(&mut props, "Tags", tags_value(t.tags()));
                    props
                }),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(TABLE, &request.logical_id);
        let ec2 = client(ctx).await?;
        describe_table(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: id_attribute("RouteTableId", &request.physical_id),
            physical_id: request.physical_id,
            ..Default::default()
        })
    }
}

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
        route_fields!(ec2.create_route().route_table_id(table), props)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: adding the route to {to} in {table}"), e))?;
        let mut attributes = Map::new();
        if let Some(cidr) = props.get("DestinationCidrBlock") {
            attributes.insert("CidrBlock".into(), cidr.clone());
        }
        Ok(CreateResult {
            physical_id: id,
            attributes,
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
        let mut attributes = Map::new();
        if let Some(cidr) = props.get("DestinationCidrBlock") {
            attributes.insert("CidrBlock".into(), cidr.clone());
        }
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            attributes,
            ..Default::default()
        })
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

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(ROUTE, &request.logical_id);
        let parts = split(&what, &request.physical_id, ROUTE_SEGMENTS)?;
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_table(&ec2, &what, parts[0])
                .await?
                .and_then(|t| route_properties(&t, parts[1])),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let read = read_existing(self, ctx, &request, &what(ROUTE, &request.logical_id)).await?;
        let mut attributes = Map::new();
        put(
            &mut attributes,
            "CidrBlock",
            read.get("DestinationCidrBlock").cloned(),
        );
        Ok(CreateResult {
            physical_id: request.physical_id,
            attributes,
            ..Default::default()
        })
    }
}

/// `AWS::EC2::SubnetRouteTableAssociation`.
#[derive(Default)]
pub struct SubnetRouteTableAssociation;

async fn describe_association(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::RouteTableAssociation>, ProviderError> {
    let tables = optional(
        what,
        ec2.describe_route_tables()
            .filters(filter("association.route-table-association-id", id))
            .send()
            .await,
    )?;
    Ok(tables.and_then(|out| {
        out.route_tables()
            .iter()
            .flat_map(|t| t.associations())
            .find(|a| a.route_table_association_id() == Some(id))
            .cloned()
    }))
}

#[async_trait]
impl ResourceProvider for SubnetRouteTableAssociation {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ASSOCIATION)
            .handles(&["RouteTableId", "SubnetId"])
            .all_create_only()
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let table = require_str(&request.properties, "RouteTableId", &what)?;
        let subnet = require_str(&request.properties, "SubnetId", &what)?;
        let ec2 = client(ctx).await?;
        let associated = ec2
            .associate_route_table()
            .route_table_id(table)
            .subnet_id(subnet)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: associating {subnet} with {table}"), e))?;
        let id = associated
            .association_id()
            .ok_or_else(|| does_not_exist(&what, "the new association"))?
            .to_string();
        Ok(CreateResult {
            attributes: id_attribute("Id", &id),
            physical_id: id,
            ..Default::default()
        })
    }

    /// Both properties are create-only: there is nothing to change in place.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let attributes = id_attribute("Id", &request.physical_id);
        Ok(unchanged(request, attributes))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        cdkd_aws_common::deleted_unless_failed(
            ec2.disassociate_route_table()
                .association_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: disassociating {id}"), e)),
        )
    }

    async fn read_current_state(
        &self,
        ctx: &PluginContext,
        request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let ec2 = client(ctx).await?;
        Ok(ReadCurrentStateResult {
            properties: describe_association(&ec2, &what, &request.physical_id)
                .await?
                .map(|a| {
                    let mut props = Map::new();
                    put(&mut props, "RouteTableId", some_str(a.route_table_id()));
                    put(&mut props, "SubnetId", some_str(a.subnet_id()));
                    props
                }),
        })
    }

    async fn import(
        &self,
        ctx: &PluginContext,
        request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ASSOCIATION, &request.logical_id);
        let ec2 = client(ctx).await?;
        describe_association(&ec2, &what, &request.physical_id)
            .await?
            .ok_or_else(|| does_not_exist(&what, &request.physical_id))?;
        Ok(CreateResult {
            attributes: id_attribute("Id", &request.physical_id),
            physical_id: request.physical_id,
            ..Default::default()
        })
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
