//! cdkd's EC2 networking provider plugin: the types a CDK `Vpc`, `SecurityGroup` and
//! `NetworkAcl` synthesize, including the composite-id types (`VPCGatewayAttachment`, `Route`,
//! `EIP`, `SecurityGroupIngress`, `NetworkAclEntry`).
//!
//! EC2 deletes fail with `DependencyViolation` while something still uses the resource (an
//! ENI a Lambda has not released yet, a NAT gateway still holding its EIP): deletes wait that
//! out on a bounded schedule ([`until_released`]), saying what they wait for.

mod composite;
mod eip;
mod internet_gateway;
mod lookups;
mod nat_gateway;
mod network_acl;
mod network_acl_entry;
mod route;
mod route_table;
mod rules;
mod security_group;
mod security_group_egress;
mod security_group_ingress;
mod subnet;
mod subnet_network_acl_association;
mod subnet_route_table_association;
mod volume;
mod vpc;
mod vpc_gateway_attachment;

cdkd_provider_api::export_plugin!(description: "AWS::EC2 networking: VPC, Subnet, InternetGateway, VPCGatewayAttachment, RouteTable, Route, SubnetRouteTableAssociation, NatGateway, EIP, SecurityGroup(+Ingress/Egress), NetworkAcl(+Entry, SubnetNetworkAclAssociation); final snapshots of Volume (provisioned through Cloud Control)");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<vpc::Vpc>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<subnet::Subnet>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<internet_gateway::InternetGateway>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<vpc_gateway_attachment::VpcGatewayAttachment>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<nat_gateway::NatGateway>);
cdkd_provider_api::register_provider!(eip::Eip);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<route_table::RouteTable>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<route::Route>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<subnet_route_table_association::SubnetRouteTableAssociation>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<security_group::SecurityGroup>);
cdkd_provider_api::register_provider!(security_group_ingress::SecurityGroupIngress);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<security_group_egress::SecurityGroupEgress>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<network_acl::NetworkAcl>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<network_acl_entry::NetworkAclEntry>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<subnet_network_acl_association::SubnetNetworkAclAssociation>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Answers<volume::Volume>);

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use aws_sdk_ec2::types::{AttributeBooleanValue, Filter, ResourceType, Tag, TagSpecification};
use cdkd_aws_common::aws_error;
use cdkd_provider_api::protocol::{CreateResult, DeleteResult, UpdateRequest, UpdateResult};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// The EC2 client configuration for the host's endpoint and credentials.
async fn config(ctx: &PluginContext) -> Result<aws_sdk_ec2::config::Builder, ProviderError> {
    Ok(
        aws_sdk_ec2::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-ec2")),
    )
}

/// An EC2 client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_ec2::Client, ProviderError> {
    Ok(aws_sdk_ec2::Client::from_conf(config(ctx).await?.build()))
}

/// An EC2 client for the host's endpoint and credentials in `region`.
pub(crate) async fn regional_client(
    ctx: &PluginContext,
    region: &str,
) -> Result<aws_sdk_ec2::Client, ProviderError> {
    let config = config(ctx)
        .await?
        .region(aws_sdk_ec2::config::Region::new(region.to_string()));
    Ok(aws_sdk_ec2::Client::from_conf(config.build()))
}

/// A boolean as EC2's attribute value (`ModifyVpcAttribute`, `ModifySubnetAttribute`).
pub(crate) fn boolean(value: bool) -> AttributeBooleanValue {
    AttributeBooleanValue::builder().value(value).build()
}

/// `Tags: [{Key, Value}]` of a template.
pub(crate) fn tags(properties: &Map<String, Value>) -> Vec<Tag> {
    properties
        .get("Tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some(
                Tag::builder()
                    .key(t.get("Key")?.as_str()?)
                    .value(cdkd_aws_common::text(t.get("Value"))?)
                    .build(),
            )
        })
        .collect()
}

/// The template's tags as a create call's tag specification (none without tags).
pub(crate) fn tag_spec(
    kind: ResourceType,
    properties: &Map<String, Value>,
) -> Option<TagSpecification> {
    let tags = tags(properties);
    (!tags.is_empty()).then(|| {
        TagSpecification::builder()
            .resource_type(kind)
            .set_tags(Some(tags))
            .build()
    })
}

/// AWS's tags in template shape; `aws:` tags are AWS's own and never in a template.
pub(crate) fn tags_value(tags: &[Tag]) -> Option<Value> {
    let tags: Vec<Value> = tags
        .iter()
        .filter(|t| !t.key().unwrap_or_default().starts_with("aws:"))
        .map(|t| json!({"Key": t.key(), "Value": t.value()}))
        .collect();
    (!tags.is_empty()).then_some(Value::Array(tags))
}

/// Applies a tag change: new and changed tags written, removed ones deleted.
pub(crate) async fn retag(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (old, new) = (tags(before), tags(after));
    let added: Vec<Tag> = new.iter().filter(|t| !old.contains(t)).cloned().collect();
    let removed: Vec<Tag> = old
        .iter()
        .filter(|t| !new.iter().any(|n| n.key() == t.key()))
        .map(|t| {
            Tag::builder()
                .set_key(t.key().map(ToString::to_string))
                .build()
        })
        .collect();
    if !removed.is_empty() {
        ec2.delete_tags()
            .resources(id)
            .set_tags(Some(removed))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: removing tags"), e))?;
    }
    if !added.is_empty() {
        ec2.create_tags()
            .resources(id)
            .set_tags(Some(added))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: tagging"), e))?;
    }
    Ok(())
}

/// The attributes of a type whose one attribute is its own id (`RouteTableId`, `Id`, …).
pub(crate) fn id_attribute(key: &str, id: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert(key.into(), json!(id));
    attributes
}

/// The result of an update made in place: same physical id, not replaced (a type whose
/// properties are all create-only changes nothing).
pub(crate) fn in_place(request: UpdateRequest, attributes: Map<String, Value>) -> UpdateResult {
    UpdateResult {
        physical_id: request.physical_id,
        replaced: false,
        attributes,
        ..Default::default()
    }
}

/// The result of an update that re-created the resource under a new physical id without a
/// replacement (a security group rule revoked and authorized again).
pub(crate) fn recreated(created: CreateResult) -> UpdateResult {
    UpdateResult {
        physical_id: created.physical_id,
        replaced: false,
        attributes: created.attributes,
        ..Default::default()
    }
}

/// The update of a type whose only in-place change is its tags.
pub(crate) async fn retag_only(
    ctx: &PluginContext,
    what: &str,
    request: UpdateRequest,
    attributes: Map<String, Value>,
) -> Result<UpdateResult, ProviderError> {
    let ec2 = client(ctx).await?;
    retag(
        &ec2,
        what,
        &request.physical_id,
        &request.previous_properties,
        &request.properties,
    )
    .await?;
    Ok(in_place(request, attributes))
}

/// A delete that waits out EC2's "still in use" answers; a resource already gone is deleted.
pub(crate) async fn delete_released<F, Fut>(
    what: &str,
    waiting_for: &str,
    op: F,
) -> Result<DeleteResult, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
{
    cdkd_aws_common::deleted_unless_failed(
        until_released(what, waiting_for, DEPENDENCY_BUDGET, op).await,
    )
}

/// The error of a read or import whose EC2 resource does not exist.
pub(crate) fn does_not_exist(what: &str, id: &str) -> ProviderError {
    cdkd_aws_common::does_not_exist(what, id, "EC2")
}

/// A describe filter.
pub(crate) fn filter(name: &str, value: &str) -> Filter {
    Filter::builder().name(name).values(value).build()
}

/// "Type LogicalId", the prefix of every message.
pub(crate) fn what(type_name: &str, logical_id: &str) -> String {
    format!("{type_name} {logical_id}")
}

/// A string attribute or property value.
pub(crate) fn some_str(value: Option<&str>) -> Option<Value> {
    value.map(|v| Value::String(v.to_string()))
}

/// How long a delete waits for EC2 to release what still depends on the resource, and how
/// often it asks again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Patience {
    /// The whole wait.
    pub budget: Duration,
    /// The first pause; it doubles up to `longest`.
    pub first: Duration,
    /// The longest pause.
    pub longest: Duration,
}

/// Lambda ENIs in a VPC can take minutes to go; longer than this and the user is told what is
/// in the way.
pub(crate) const DEPENDENCY_BUDGET: Patience = Patience {
    budget: Duration::from_secs(300),
    first: Duration::from_millis(500),
    longest: Duration::from_secs(10),
};

/// EC2's "still in use" codes: retried by [`until_released`].
const IN_USE_CODES: &[&str] = &[
    "DependencyViolation",
    "InvalidIPAddress.InUse",
    "InvalidNetworkAclID.InUse",
    "AuthFailure.InUse",
];

/// Runs `op` until it stops failing with a "still in use" error or the budget runs out,
/// logging what it waits for.
pub(crate) async fn until_released<T, F, Fut>(
    what: &str,
    waiting_for: &str,
    patience: Patience,
    mut op: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let started = Instant::now();
    let mut pause = patience.first;
    loop {
        match op().await {
            Err(err)
                if err
                    .aws_code()
                    .is_some_and(|code| IN_USE_CODES.contains(&code))
                    && started.elapsed() + pause < patience.budget =>
            {
                tracing::info!(
                    "{what}: waiting for {waiting_for} ({}; {:.0?} so far)",
                    err.message,
                    started.elapsed()
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(patience.longest);
            }
            Err(err)
                if err
                    .aws_code()
                    .is_some_and(|code| IN_USE_CODES.contains(&code)) =>
            {
                let code = err.aws_code().unwrap_or_default().to_string();
                return Err(ProviderError::new(
                    ErrorKind::CONFLICT,
                    format!(
                        "{} (waited {:.0?} for {waiting_for}; delete what still uses it, then run the command again)",
                        err.message,
                        started.elapsed()
                    ),
                )
                .with_aws_code(code));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn in_use() -> ProviderError {
        ProviderError::new(ErrorKind::CONFLICT, "subnet has dependencies")
            .with_aws_code("DependencyViolation")
    }

    // Paused clock: the sleeps advance virtual time at once, so the real schedule is tested
    // without waiting it out, on any machine.
    #[tokio::test(start_paused = true)]
    async fn a_delete_waits_until_the_dependency_is_gone() {
        let calls = AtomicUsize::new(0);
        let started = Instant::now();
        let result = until_released("AWS::EC2::Subnet S", "ENIs", DEPENDENCY_BUDGET, || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(in_use()),
                _ => Ok("gone"),
            }
        })
        .await;
        assert_eq!(result.unwrap(), "gone");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        // Two pauses: the first, then twice as long.
        let waited = started.elapsed();
        assert!(
            waited >= DEPENDENCY_BUDGET.first * 3 && waited < DEPENDENCY_BUDGET.first * 4,
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_delete_gives_up_after_its_budget_naming_what_it_waited_for() {
        let calls = AtomicUsize::new(0);
        let started = Instant::now();
        let err = until_released::<(), _, _>(
            "AWS::EC2::Subnet S",
            "the subnet's network interfaces",
            DEPENDENCY_BUDGET,
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(in_use())
            },
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        assert_eq!(err.aws_code(), Some("DependencyViolation"));
        // Pauses of 0.5, 1, 2, 4 and 8 s, then 10 s each while the next one still fits in
        // the 300 s budget: 33 pauses (295.5 s), 34 calls.
        assert_eq!(calls.load(Ordering::SeqCst), 34);
        let waited = started.elapsed();
        assert!(
            waited >= DEPENDENCY_BUDGET.budget - DEPENDENCY_BUDGET.longest
                && waited < DEPENDENCY_BUDGET.budget,
            "gave up after {waited:?}"
        );
        assert!(
            err.message
                .contains("for the subnet's network interfaces; delete what still uses it"),
            "{}",
            err.message
        );
        let other = until_released::<(), _, _>("x", "y", DEPENDENCY_BUDGET, || async {
            Err(ProviderError::validation("bad"))
        })
        .await
        .unwrap_err();
        assert_eq!(other.kind, ErrorKind::VALIDATION);
    }

    #[test]
    fn tags_read_and_write_in_template_shape() {
        let props = json!({"Tags": [{"Key": "Name", "Value": "a"}, {"Key": "n", "Value": 5}]});
        let tags = tags(props.as_object().unwrap());
        assert_eq!(tags.len(), 2);
        assert_eq!(tags[1].value(), Some("5"));
        let mut with_aws = tags.clone();
        with_aws.push(
            Tag::builder()
                .key("aws:cloudformation:stack-name")
                .value("x")
                .build(),
        );
        assert_eq!(
            tags_value(&with_aws),
            Some(json!([{"Key": "Name", "Value": "a"}, {"Key": "n", "Value": "5"}]))
        );
        assert_eq!(tags_value(&[]), None);
    }
}
