//! cdkd's EC2 networking provider plugin: the types a CDK `Vpc`, `SecurityGroup` and
//! `NetworkAcl` synthesize, including the composite-id types (`VPCGatewayAttachment`, `Route`,
//! `EIP`, `SecurityGroupIngress`, `NetworkAclEntry`).
//!
//! EC2 deletes fail with `DependencyViolation` while something still uses the resource (an
//! ENI a Lambda has not released yet, a NAT gateway still holding its EIP): deletes wait that
//! out on a bounded schedule ([`until_released`]), saying what they wait for, but only while
//! what is in the way can still go by itself ([`dependants`]); anything else fails at once.
//!
//! Types with no name cdkd chooses carry the create's token as a tag from their first moment,
//! so the next run finds what an interrupted one made ([`created`]).

mod association;
mod composite;
mod created;
mod dependants;
mod eip;
mod instance;
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
mod tagged;
mod volume;
mod vpc;
mod vpc_gateway_attachment;

cdkd_provider_api::export_plugin!(description: "AWS::EC2 networking: VPC, Subnet, InternetGateway, VPCGatewayAttachment, RouteTable, Route, SubnetRouteTableAssociation, NatGateway, EIP, SecurityGroup(+Ingress/Egress), NetworkAcl(+Entry, SubnetNetworkAclAssociation), Instance; final snapshots of Volume (provisioned through Cloud Control)");

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
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<instance::Instance>);

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use aws_sdk_ec2::types::{AttributeBooleanValue, Filter, ResourceType, Tag, TagSpecification};
use cdkd_aws_common::{aws_error, Pacing};
use cdkd_provider_api::protocol::{
    CreateResult, DeleteResult, UpdateRequest, UpdateResult, CREATE_TOKEN_TAG,
};
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

/// `Tags: [{Key, Value}]` of a template. cdkd's create-token tag is never the template's: left
/// out here, a tag change can neither set it nor remove it.
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
        .filter(|t| t.key() != Some(CREATE_TOKEN_TAG))
        .collect()
}

/// The tags a create sets: the template's, then the create's `token` under
/// [`CREATE_TOKEN_TAG`] (none without a token).
pub(crate) fn create_tags(properties: &Map<String, Value>, token: &str) -> Vec<Tag> {
    let mut tags = tags(properties);
    if !token.is_empty() {
        tags.push(Tag::builder().key(CREATE_TOKEN_TAG).value(token).build());
    }
    tags
}

/// A create call's tag specification: the template's tags and the create token (none when
/// there is neither).
pub(crate) fn tag_spec(
    kind: ResourceType,
    properties: &Map<String, Value>,
    token: &str,
) -> Option<Vec<TagSpecification>> {
    let tags = create_tags(properties, token);
    (!tags.is_empty()).then(|| {
        vec![TagSpecification::builder()
            .resource_type(kind)
            .set_tags(Some(tags))
            .build()]
    })
}

/// AWS's tags in template shape; `aws:` tags are AWS's own and the create-token tag cdkd's,
/// never in a template (so never drift).
pub(crate) fn tags_value(tags: &[Tag]) -> Option<Value> {
    let tags: Vec<Value> = tags
        .iter()
        .filter(|t| {
            let key = t.key().unwrap_or_default();
            !key.starts_with("aws:") && key != CREATE_TOKEN_TAG
        })
        .map(|t| json!({"Key": t.key(), "Value": t.value()}))
        .collect();
    (!tags.is_empty()).then_some(Value::Array(tags))
}

/// The longest client token EC2 takes.
const MAX_CLIENT_TOKEN: usize = 64;

/// The create token as EC2's own idempotency `ClientToken`: itself when it fits, else a stable
/// hash of it, so every attempt of one create sends the same value.
pub(crate) fn client_token(token: &str) -> Option<String> {
    if token.is_empty() {
        None
    } else if token.len() <= MAX_CLIENT_TOKEN {
        Some(token.to_string())
    } else {
        Some(format!(
            "cdkd-{:016x}",
            cdkd_aws_common::stable_hash(&[token])
        ))
    }
}

/// Whether EC2 refused a create because what it would make is already there (`…Duplicate`,
/// `…AlreadyExists`, `Resource.AlreadyAssociated`, "already attached").
pub(crate) fn already_there(err: &ProviderError) -> bool {
    err.kind == ErrorKind::ALREADY_EXISTS || err.message.contains("already")
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
    /// The pauses between tries: a tenth of the time waited so far, within its bounds.
    pub pacing: Pacing,
}

/// Lambda ENIs in a VPC can take minutes to go; longer than this and the user is told what is
/// in the way. The pauses start at 500 ms (each try is a delete, not a read) and stop growing at
/// 10 s: a wait this long is for ENIs that take minutes, so a few seconds' lag costs little and
/// the deletes and describes stay well under EC2's mutating-call limits.
pub(crate) const DEPENDENCY_BUDGET: Patience = Patience {
    budget: Duration::from_secs(300),
    pacing: Pacing {
        floor: Duration::from_millis(500),
        cap: Duration::from_secs(10),
    },
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
    loop {
        let pause = patience.pacing.pause(started.elapsed());
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
        // Two pauses at the floor: a tenth of a second's wait is still below it.
        assert_eq!(started.elapsed(), DEPENDENCY_BUDGET.pacing.floor * 2);
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
        // Pauses of 0.5 s for the first 5 s, then a tenth of the time waited, then 10 s from
        // 100 s on while the next one still fits in the 300 s budget: about 62 calls.
        let calls = calls.load(Ordering::SeqCst);
        assert!((58..=66).contains(&calls), "{calls} calls");
        let waited = started.elapsed();
        assert!(
            waited >= DEPENDENCY_BUDGET.budget - DEPENDENCY_BUDGET.pacing.cap
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

    #[test]
    fn the_create_token_is_tagged_at_creation_and_never_read_or_retagged() {
        let props = json!({"Tags": [{"Key": "Name", "Value": "a"}, {"Key": CREATE_TOKEN_TAG, "Value": "forged"}]});
        let props = props.as_object().unwrap();
        // The template cannot set cdkd's tag: only the create's own token goes under it.
        let created = create_tags(props, "tok-1");
        let pairs: Vec<(Option<&str>, Option<&str>)> =
            created.iter().map(|t| (t.key(), t.value())).collect();
        assert_eq!(
            pairs,
            [
                (Some("Name"), Some("a")),
                (Some(CREATE_TOKEN_TAG), Some("tok-1"))
            ]
        );
        let spec = tag_spec(ResourceType::Vpc, props, "tok-1").unwrap();
        assert_eq!(spec[0].resource_type(), Some(&ResourceType::Vpc));
        assert_eq!(spec[0].tags().len(), 2);
        // No token: the template's tags only; neither: no specification at all.
        assert_eq!(create_tags(props, "").len(), 1);
        assert_eq!(tag_spec(ResourceType::Subnet, &Map::new(), ""), None);
        assert_eq!(
            tag_spec(ResourceType::Subnet, &Map::new(), "t").unwrap()[0].tags()[0].key(),
            Some(CREATE_TOKEN_TAG)
        );
        // Read back, the token tag is not drift; a tag update neither removes nor sets it.
        assert_eq!(
            tags_value(&created),
            Some(json!([{"Key": "Name", "Value": "a"}]))
        );
        assert!(tags(props)
            .iter()
            .all(|t| t.key() != Some(CREATE_TOKEN_TAG)));
    }

    #[test]
    fn the_client_token_fits_ec2s_limit_and_stays_the_same() {
        assert_eq!(client_token(""), None);
        assert_eq!(client_token("tok-1"), Some("tok-1".into()));
        let exact = "t".repeat(64);
        assert_eq!(client_token(&exact), Some(exact.clone()));
        let long = "t".repeat(65);
        let fitted = client_token(&long).unwrap();
        assert!(
            fitted.len() <= 64 && fitted.starts_with("cdkd-"),
            "{fitted}"
        );
        assert_eq!(client_token(&long), Some(fitted.clone()));
        assert_ne!(client_token(&"u".repeat(65)), Some(fitted));
    }

    #[test]
    fn already_there_answers_are_recognised() {
        let duplicate = ProviderError::new(ErrorKind::ALREADY_EXISTS, "dup")
            .with_aws_code("InvalidPermission.Duplicate");
        assert!(already_there(&duplicate));
        assert!(already_there(&ProviderError::new(
            ErrorKind::OTHER,
            "igw-1 is already attached to network vpc-1"
        )));
        assert!(!already_there(&ProviderError::validation("bad cidr")));
    }
}
