//! Deletes EC2 refuses with `DependencyViolation`. What still depends on the resource is
//! described; the delete waits (on [`DEPENDENCY_BUDGET`]'s schedule) only while something
//! among it can still go by itself — a NAT gateway being deleted, a Lambda's network interface,
//! an interface being detached — and otherwise fails at once naming every dependant, instead
//! of retrying for minutes what no wait can clear.

use std::future::Future;
use std::time::Duration;

use aws_sdk_ec2::types::{
    AttachmentStatus, InternetGateway, NatGateway, NatGatewayState, NetworkAcl, NetworkInterface,
    NetworkInterfaceType, RouteTable, SecurityGroup,
};
use cdkd_aws_common::aws_error;
use cdkd_provider_api::protocol::DeleteResult;
use cdkd_provider_api::{ErrorKind, ProviderError};
use tokio::time::Instant;

use crate::{filter, DEPENDENCY_BUDGET};

/// The code EC2 answers a delete with while something still uses the resource.
const DEPENDENCY_VIOLATION: &str = "DependencyViolation";

/// One thing that still uses a resource EC2 refuses to delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dependant {
    /// Its id (`subnet-…`, `eni-…`, `nat-…`).
    pub id: String,
    /// Whether it goes away without anyone deleting it.
    pub passing: bool,
}

impl Dependant {
    fn staying(id: Option<&str>) -> Option<Dependant> {
        Some(Dependant {
            id: id?.to_string(),
            passing: false,
        })
    }
}

/// What to do about one `DependencyViolation`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// Ask again later; the text says what is awaited.
    Wait(String),
    /// Give up with this error.
    Fail(ProviderError),
}

/// The verdict on a `DependencyViolation` deleting `id`, given what was found still depending
/// on it (`held` says how: "still in it"), whether another pause still fits the budget and how
/// long the delete has waited so far.
pub(crate) fn verdict(
    what: &str,
    id: &str,
    held: &str,
    dependants: &[Dependant],
    time_left: bool,
    waited: Duration,
) -> Verdict {
    let ids = || {
        dependants
            .iter()
            .map(|d| d.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let passing: Vec<&str> = dependants
        .iter()
        .filter(|d| d.passing)
        .map(|d| d.id.as_str())
        .collect();
    let fail = |message: String| {
        Verdict::Fail(
            ProviderError::new(ErrorKind::CONFLICT, message).with_aws_code(DEPENDENCY_VIOLATION),
        )
    };
    match (dependants.is_empty(), passing.is_empty(), time_left) {
        // Nothing listed: EC2 lags behind deletes made a moment ago (or it is a kind not
        // described here); the old patience applies.
        (true, _, true) => Verdict::Wait("what EC2 has not released yet".into()),
        (true, _, false) => fail(format!(
            "{what}: {id} cannot be deleted: something still depends on it (waited {waited:.0?}; nothing cdkd looks for was found: look for VPC endpoints, peering connections or other groups' rules); delete it first, then run the command again"
        )),
        (false, false, true) => Verdict::Wait(passing.join(", ")),
        (false, true, _) => fail(format!(
            "{what}: {id} cannot be deleted: {held}: {}; delete them first",
            ids()
        )),
        (false, false, false) => fail(format!(
            "{what}: {id} cannot be deleted: {held}: {} (waited {waited:.0?} for {} to go); delete them first",
            ids(),
            passing.join(", ")
        )),
    }
}

/// Deletes with `op`; a `DependencyViolation` is judged by what `dependants` describes then
/// ([`verdict`]). Gone already counts as deleted.
pub(crate) async fn delete_unless_held<F, Fut, D, DFut>(
    what: &str,
    id: &str,
    held: &str,
    mut op: F,
    mut dependants: D,
) -> Result<DeleteResult, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), ProviderError>>,
    D: FnMut() -> DFut,
    DFut: Future<Output = Result<Vec<Dependant>, ProviderError>>,
{
    let patience = DEPENDENCY_BUDGET;
    let started = Instant::now();
    loop {
        let pause = patience.pacing.pause(started.elapsed());
        match op().await {
            Err(err) if err.aws_code() == Some(DEPENDENCY_VIOLATION) => {
                let found = dependants().await?;
                let time_left = started.elapsed() + pause < patience.budget;
                match verdict(what, id, held, &found, time_left, started.elapsed()) {
                    Verdict::Fail(error) => return Err(error),
                    Verdict::Wait(awaited) => {
                        tracing::info!(
                            "{what}: waiting for {awaited} to go ({}; {:.0?} so far)",
                            err.message,
                            started.elapsed()
                        );
                        tokio::time::sleep(pause).await;
                    }
                }
            }
            other => return cdkd_aws_common::deleted_unless_failed(other),
        }
    }
}

/// A network interface as a dependant: a Lambda's, or one being detached, goes by itself.
pub(crate) fn interface(eni: &NetworkInterface) -> Option<Dependant> {
    let lambda = eni.interface_type() == Some(&NetworkInterfaceType::Lambda)
        || eni
            .description()
            .is_some_and(|d| d.starts_with("AWS Lambda VPC ENI"));
    let detaching = eni
        .attachment()
        .and_then(|a| a.status())
        .is_some_and(|s| *s == AttachmentStatus::Detaching);
    Some(Dependant {
        id: eni.network_interface_id()?.to_string(),
        passing: lambda || detaching,
    })
}

/// A NAT gateway as a dependant: deleted ones are none, pending or deleting ones pass.
pub(crate) fn nat_gateway(gateway: &NatGateway) -> Option<Dependant> {
    let state = gateway.state();
    if state == Some(&NatGatewayState::Deleted) {
        return None;
    }
    Some(Dependant {
        id: gateway.nat_gateway_id()?.to_string(),
        passing: matches!(
            state,
            Some(NatGatewayState::Deleting | NatGatewayState::Pending)
        ),
    })
}

/// A security group as a dependant; the VPC's `default` group goes with the VPC.
pub(crate) fn security_group(group: &SecurityGroup) -> Option<Dependant> {
    if group.group_name() == Some("default") {
        return None;
    }
    Dependant::staying(group.group_id())
}

/// A route table as a dependant; the VPC's main table goes with the VPC.
pub(crate) fn route_table(table: &RouteTable) -> Option<Dependant> {
    if table.associations().iter().any(|a| a.main() == Some(true)) {
        return None;
    }
    Dependant::staying(table.route_table_id())
}

/// A network ACL as a dependant; the VPC's default ACL goes with the VPC.
pub(crate) fn network_acl(acl: &NetworkAcl) -> Option<Dependant> {
    if acl.is_default() == Some(true) {
        return None;
    }
    Dependant::staying(acl.network_acl_id())
}

/// The VPCs an internet gateway is still attached to; one being detached passes.
pub(crate) fn attachments(gateway: &InternetGateway) -> Vec<Dependant> {
    gateway
        .attachments()
        .iter()
        .filter_map(|a| {
            Some(Dependant {
                id: a.vpc_id()?.to_string(),
                passing: a.state() == Some(&AttachmentStatus::Detaching),
            })
        })
        .collect()
}

/// What a route table is still associated with: subnets (or gateways), the VPC itself when it
/// is the main table.
pub(crate) fn table_associations(table: &RouteTable) -> Vec<Dependant> {
    table
        .associations()
        .iter()
        .filter_map(|a| {
            let id = a
                .subnet_id()
                .or(a.gateway_id())
                .or_else(|| (a.main() == Some(true)).then_some(table.vpc_id()).flatten())
                .or(a.route_table_association_id());
            Dependant::staying(id)
        })
        .collect()
}

/// The subnets a network ACL is still associated with.
pub(crate) fn acl_associations(acl: &NetworkAcl) -> Vec<Dependant> {
    acl.associations()
        .iter()
        .filter_map(|a| Dependant::staying(a.subnet_id()))
        .collect()
}

/// The network interfaces a describe `filter` (`vpc-id`, `subnet-id`, `group-id`) selects.
async fn interfaces(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    name: &str,
    value: &str,
) -> Result<Vec<Dependant>, ProviderError> {
    let out = ec2
        .describe_network_interfaces()
        .filters(filter(name, value))
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: listing the network interfaces"), e))?;
    Ok(out
        .network_interfaces()
        .iter()
        .filter_map(interface)
        .collect())
}

/// What is still in VPC `vpc`: subnets, attached internet gateways, security groups, route
/// tables and network ACLs of its own making, NAT gateways, network interfaces.
pub(crate) async fn in_vpc(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    vpc: &str,
) -> Result<Vec<Dependant>, ProviderError> {
    let failed = |part: &str| format!("{what}: listing the {part} still in {vpc}");
    let (subnets, gateways, groups, tables, acls, nats, enis) = tokio::join!(
        ec2.describe_subnets().filters(filter("vpc-id", vpc)).send(),
        ec2.describe_internet_gateways()
            .filters(filter("attachment.vpc-id", vpc))
            .send(),
        ec2.describe_security_groups()
            .filters(filter("vpc-id", vpc))
            .send(),
        ec2.describe_route_tables()
            .filters(filter("vpc-id", vpc))
            .send(),
        ec2.describe_network_acls()
            .filters(filter("vpc-id", vpc))
            .send(),
        ec2.describe_nat_gateways()
            .filter(filter("vpc-id", vpc))
            .send(),
        interfaces(ec2, what, "vpc-id", vpc),
    );
    let mut found = Vec::new();
    let subnets = subnets.map_err(|e| aws_error(&failed("subnets"), e))?;
    found.extend(
        subnets
            .subnets()
            .iter()
            .filter_map(|s| Dependant::staying(s.subnet_id())),
    );
    let gateways = gateways.map_err(|e| aws_error(&failed("internet gateways"), e))?;
    found.extend(
        gateways
            .internet_gateways()
            .iter()
            .filter_map(|g| Dependant::staying(g.internet_gateway_id())),
    );
    let groups = groups.map_err(|e| aws_error(&failed("security groups"), e))?;
    found.extend(groups.security_groups().iter().filter_map(security_group));
    let tables = tables.map_err(|e| aws_error(&failed("route tables"), e))?;
    found.extend(tables.route_tables().iter().filter_map(route_table));
    let acls = acls.map_err(|e| aws_error(&failed("network ACLs"), e))?;
    found.extend(acls.network_acls().iter().filter_map(network_acl));
    let nats = nats.map_err(|e| aws_error(&failed("NAT gateways"), e))?;
    found.extend(nats.nat_gateways().iter().filter_map(nat_gateway));
    found.extend(enis?);
    Ok(found)
}

/// The network interfaces still in subnet `subnet`.
pub(crate) async fn in_subnet(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    subnet: &str,
) -> Result<Vec<Dependant>, ProviderError> {
    interfaces(ec2, what, "subnet-id", subnet).await
}

/// What still uses security group `group`: network interfaces, and other groups whose rules
/// name it (those stay until their rules change).
pub(crate) async fn using_group(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    group: &str,
) -> Result<Vec<Dependant>, ProviderError> {
    let (enis, ingress, egress) = tokio::join!(
        interfaces(ec2, what, "group-id", group),
        ec2.describe_security_groups()
            .filters(filter("ip-permission.group-id", group))
            .send(),
        ec2.describe_security_groups()
            .filters(filter("egress.ip-permission.group-id", group))
            .send(),
    );
    let mut found = enis?;
    for referencing in [ingress, egress] {
        let referencing = referencing.map_err(|e| {
            aws_error(
                &format!("{what}: listing the security groups whose rules name {group}"),
                e,
            )
        })?;
        found.extend(
            referencing
                .security_groups()
                .iter()
                .filter(|g| g.group_id() != Some(group))
                .filter_map(|g| Dependant::staying(g.group_id())),
        );
    }
    found.dedup();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ec2::types::{
        NetworkInterfaceAttachment, NetworkInterfaceStatus, RouteTableAssociation,
    };

    fn staying(id: &str) -> Dependant {
        Dependant {
            id: id.into(),
            passing: false,
        }
    }

    fn passing(id: &str) -> Dependant {
        Dependant {
            id: id.into(),
            passing: true,
        }
    }

    fn failure(verdict: Verdict) -> ProviderError {
        match verdict {
            Verdict::Fail(err) => err,
            Verdict::Wait(awaited) => panic!("waits for {awaited}"),
        }
    }

    const VPC: &str = "AWS::EC2::VPC Vpc";

    #[test]
    fn what_cannot_go_by_itself_fails_at_once_naming_every_dependant() {
        let err = failure(verdict(
            VPC,
            "vpc-1",
            "still in it",
            &[staying("subnet-1"), staying("subnet-2")],
            true,
            Duration::ZERO,
        ));
        assert_eq!(err.kind, ErrorKind::CONFLICT);
        assert_eq!(err.aws_code(), Some("DependencyViolation"));
        assert_eq!(
            err.message.as_str(),
            "AWS::EC2::VPC Vpc: vpc-1 cannot be deleted: still in it: subnet-1, subnet-2; delete them first"
        );
    }

    #[test]
    fn something_passing_is_waited_for_until_the_budget_ends() {
        let found = [staying("subnet-1"), passing("nat-1")];
        assert_eq!(
            verdict(VPC, "vpc-1", "still in it", &found, true, Duration::ZERO),
            Verdict::Wait("nat-1".into())
        );
        let err = failure(verdict(
            VPC,
            "vpc-1",
            "still in it",
            &found,
            false,
            Duration::from_secs(295),
        ));
        assert!(
            err.message.contains(
                "still in it: subnet-1, nat-1 (waited 295s for nat-1 to go); delete them first"
            ),
            "{}",
            err.message
        );
    }

    #[test]
    fn nothing_found_is_eventual_consistency_until_the_budget_ends() {
        assert!(matches!(
            verdict(VPC, "vpc-1", "still in it", &[], true, Duration::ZERO),
            Verdict::Wait(_)
        ));
        let err = failure(verdict(
            VPC,
            "vpc-1",
            "still in it",
            &[],
            false,
            Duration::from_secs(299),
        ));
        assert!(
            err.message.contains("vpc-1 cannot be deleted"),
            "{}",
            err.message
        );
        assert_eq!(err.aws_code(), Some("DependencyViolation"));
    }

    #[test]
    fn lambda_and_detaching_interfaces_pass_others_stay() {
        let eni = |kind: Option<NetworkInterfaceType>, description: &str, attachment| {
            NetworkInterface::builder()
                .network_interface_id("eni-1")
                .set_interface_type(kind)
                .description(description)
                .status(NetworkInterfaceStatus::InUse)
                .set_attachment(attachment)
                .build()
        };
        let attached = |status| Some(NetworkInterfaceAttachment::builder().status(status).build());
        assert!(
            interface(&eni(Some(NetworkInterfaceType::Lambda), "", None))
                .unwrap()
                .passing
        );
        assert!(
            interface(&eni(None, "AWS Lambda VPC ENI-my-fn-1234", None))
                .unwrap()
                .passing
        );
        assert!(
            interface(&eni(None, "mine", attached(AttachmentStatus::Detaching)))
                .unwrap()
                .passing
        );
        assert_eq!(
            interface(&eni(
                Some(NetworkInterfaceType::Interface),
                "mine",
                attached(AttachmentStatus::Attached)
            )),
            Some(staying("eni-1"))
        );
    }

    #[test]
    fn nat_gateways_pass_while_they_change_and_deleted_ones_are_gone() {
        let nat = |state| {
            nat_gateway(
                &NatGateway::builder()
                    .nat_gateway_id("nat-1")
                    .state(state)
                    .build(),
            )
        };
        assert_eq!(nat(NatGatewayState::Deleted), None);
        assert_eq!(nat(NatGatewayState::Deleting), Some(passing("nat-1")));
        assert_eq!(nat(NatGatewayState::Pending), Some(passing("nat-1")));
        assert_eq!(nat(NatGatewayState::Available), Some(staying("nat-1")));
    }

    #[test]
    fn a_vpcs_own_defaults_are_not_dependants() {
        let group = |name| {
            security_group(
                &SecurityGroup::builder()
                    .group_id("sg-1")
                    .group_name(name)
                    .build(),
            )
        };
        assert_eq!(group("default"), None);
        assert_eq!(group("web"), Some(staying("sg-1")));
        let table = |main| {
            route_table(
                &RouteTable::builder()
                    .route_table_id("rtb-1")
                    .associations(RouteTableAssociation::builder().main(main).build())
                    .build(),
            )
        };
        assert_eq!(table(true), None);
        assert_eq!(table(false), Some(staying("rtb-1")));
        let acl = |default| {
            network_acl(
                &NetworkAcl::builder()
                    .network_acl_id("acl-1")
                    .is_default(default)
                    .build(),
            )
        };
        assert_eq!(acl(true), None);
        assert_eq!(acl(false), Some(staying("acl-1")));
    }

    #[test]
    fn associations_and_attachments_name_what_holds_them() {
        let gateway = InternetGateway::builder()
            .attachments(
                aws_sdk_ec2::types::InternetGatewayAttachment::builder()
                    .vpc_id("vpc-1")
                    .state(AttachmentStatus::Detaching)
                    .build(),
            )
            .build();
        assert_eq!(attachments(&gateway), [passing("vpc-1")]);
        let table = RouteTable::builder()
            .vpc_id("vpc-1")
            .associations(
                RouteTableAssociation::builder()
                    .subnet_id("subnet-1")
                    .route_table_association_id("rtbassoc-1")
                    .build(),
            )
            .associations(
                RouteTableAssociation::builder()
                    .main(true)
                    .route_table_association_id("rtbassoc-2")
                    .build(),
            )
            .build();
        assert_eq!(
            table_associations(&table),
            [staying("subnet-1"), staying("vpc-1")]
        );
        let acl = NetworkAcl::builder()
            .associations(
                aws_sdk_ec2::types::NetworkAclAssociation::builder()
                    .subnet_id("subnet-2")
                    .build(),
            )
            .build();
        assert_eq!(acl_associations(&acl), [staying("subnet-2")]);
    }

    // Paused clock: a permanent dependant fails on the first answer, without a pause.
    #[tokio::test(start_paused = true)]
    async fn a_permanent_dependant_is_not_retried() {
        let started = Instant::now();
        let mut calls = 0;
        let err = delete_unless_held(
            "AWS::EC2::Subnet S",
            "subnet-1",
            "still in it",
            || {
                calls += 1;
                async {
                    Err(ProviderError::new(ErrorKind::CONFLICT, "has dependencies")
                        .with_aws_code("DependencyViolation"))
                }
            },
            || async { Ok(vec![staying("eni-1")]) },
        )
        .await
        .unwrap_err();
        assert_eq!(calls, 1);
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert!(
            err.message.contains("still in it: eni-1"),
            "{}",
            err.message
        );
        let mut tries = 0;
        let deleted = delete_unless_held(
            "AWS::EC2::Subnet S",
            "subnet-1",
            "still in it",
            || {
                tries += 1;
                let answer = if tries < 3 {
                    Err(ProviderError::new(ErrorKind::CONFLICT, "has dependencies")
                        .with_aws_code("DependencyViolation"))
                } else {
                    Err(ProviderError::new(ErrorKind::NOT_FOUND, "gone"))
                };
                async move { answer }
            },
            || async { Ok(vec![passing("eni-2")]) },
        )
        .await;
        assert_eq!(deleted.unwrap(), DeleteResult::Deleted);
        assert_eq!(tries, 3);
    }
}
