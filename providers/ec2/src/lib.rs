//! cdkd's EC2 networking provider plugin: the types a CDK `Vpc`, `SecurityGroup` and
//! `NetworkAcl` synthesize, including the composite-id types (`VPCGatewayAttachment`, `Route`,
//! `EIP`, `SecurityGroupIngress`, `NetworkAclEntry`).
//!
//! EC2 deletes fail with `DependencyViolation` while something still uses the resource (an
//! ENI a Lambda has not released yet, a NAT gateway still holding its EIP): deletes wait that
//! out on a bounded schedule ([`until_released`]), saying what they wait for.

mod composite;
mod gateways;
mod lookups;
mod network_acl;
mod routes;
mod rules;
mod security_group;
mod volume;
mod vpc;

cdkd_provider_api::export_plugin!(description: "AWS::EC2 networking: VPC, Subnet, InternetGateway, VPCGatewayAttachment, RouteTable, Route, SubnetRouteTableAssociation, NatGateway, EIP, SecurityGroup(+Ingress/Egress), NetworkAcl(+Entry, SubnetNetworkAclAssociation); final snapshots of Volume (provisioned through Cloud Control)");

cdkd_provider_api::register_provider!(vpc::Vpc);
cdkd_provider_api::register_provider!(vpc::Subnet);
cdkd_provider_api::register_provider!(gateways::InternetGateway);
cdkd_provider_api::register_provider!(gateways::GatewayAttachment);
cdkd_provider_api::register_provider!(gateways::NatGateway);
cdkd_provider_api::register_provider!(gateways::Eip);
cdkd_provider_api::register_provider!(routes::RouteTable);
cdkd_provider_api::register_provider!(routes::Route);
cdkd_provider_api::register_provider!(routes::SubnetRouteTableAssociation);
cdkd_provider_api::register_provider!(security_group::SecurityGroup);
cdkd_provider_api::register_provider!(security_group::Ingress);
cdkd_provider_api::register_provider!(security_group::Egress);
cdkd_provider_api::register_provider!(network_acl::NetworkAcl);
cdkd_provider_api::register_provider!(network_acl::Entry);
cdkd_provider_api::register_provider!(network_acl::SubnetAssociation);
cdkd_provider_api::register_provider!(volume::Volume);

use std::future::Future;
use std::time::Duration;

use std::time::Instant;

use aws_sdk_ec2::types::{Filter, ResourceType, Tag, TagSpecification};
use cdkd_aws_common::aws_error;
use cdkd_provider_api::protocol::{
    DeleteResult, ImportRequest, ReadCurrentStateRequest, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

/// An EC2 client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_ec2::Client, ProviderError> {
    let config = aws_sdk_ec2::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-ec2"))
        .build();
    Ok(aws_sdk_ec2::Client::from_conf(config))
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

/// The update of a type whose properties are all create-only: nothing changes in place.
pub(crate) fn unchanged(request: UpdateRequest, attributes: Map<String, Value>) -> UpdateResult {
    UpdateResult {
        physical_id: request.physical_id,
        replaced: false,
        attributes,
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
    Ok(unchanged(request, attributes))
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

/// What an import of a type without a describe call of its own checks first: the resource
/// reads back (its properties), or it does not exist.
pub(crate) async fn read_existing(
    provider: &impl ResourceProvider,
    ctx: &PluginContext,
    request: &ImportRequest,
    what: &str,
) -> Result<Map<String, Value>, ProviderError> {
    provider
        .read_current_state(
            ctx,
            ReadCurrentStateRequest {
                logical_id: request.logical_id.clone(),
                physical_id: request.physical_id.clone(),
                properties: request.properties.clone(),
            },
        )
        .await?
        .properties
        .ok_or_else(|| does_not_exist(what, &request.physical_id))
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

/// The AWS error code an error carries.
pub(crate) fn aws_code(err: &ProviderError) -> Option<&str> {
    match &err.aws_code {
        abi_stable::std_types::ROption::RSome(code) => Some(code.as_str()),
        abi_stable::std_types::ROption::RNone => None,
    }
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
                if aws_code(&err).is_some_and(|code| IN_USE_CODES.contains(&code))
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
            Err(err) if aws_code(&err).is_some_and(|code| IN_USE_CODES.contains(&code)) => {
                let code = aws_code(&err).unwrap_or_default().to_string();
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

    const QUICK: Patience = Patience {
        budget: Duration::from_millis(40),
        first: Duration::from_millis(1),
        longest: Duration::from_millis(4),
    };

    #[tokio::test]
    async fn a_delete_waits_until_the_dependency_is_gone() {
        let calls = AtomicUsize::new(0);
        let result = until_released("AWS::EC2::Subnet S", "ENIs", QUICK, || async {
            match calls.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Err(in_use()),
                _ => Ok("gone"),
            }
        })
        .await;
        assert_eq!(result.unwrap(), "gone");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_delete_gives_up_after_its_budget_naming_what_it_waited_for() {
        let calls = AtomicUsize::new(0);
        let err = until_released::<(), _, _>(
            "AWS::EC2::Subnet S",
            "the subnet's network interfaces",
            QUICK,
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(in_use())
            },
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        assert!(
            calls.load(Ordering::SeqCst) > 2,
            "it gave up without retrying"
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
