//! Security group rules between template shape (`{IpProtocol, FromPort, ToPort, CidrIp, ...}`)
//! and EC2's shapes (`IpPermission` to authorize/revoke, `SecurityGroupRule` when read back),
//! and what the standalone rule types share (the rule ids AWS mints, the `Id` attribute).

use aws_sdk_ec2::types::{
    IpPermission, IpRange, Ipv6Range, PrefixListId, SecurityGroupRule, UserIdGroupPair,
};
use cdkd_aws_common::{int, optional, put, require_str, text};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::{filter, some_str};

/// Which way a rule points; the template names its peer `Source*` or `Destination*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Ingress,
    Egress,
}

impl Direction {
    fn peer(self) -> &'static str {
        match self {
            Direction::Ingress => "Source",
            Direction::Egress => "Destination",
        }
    }
}

/// A protocol as EC2 reports it: numbers of the named protocols become names.
pub(crate) fn protocol(value: Option<&Value>) -> String {
    let raw = text(value).unwrap_or_else(|| "-1".into()).to_lowercase();
    match raw.as_str() {
        "6" => "tcp".into(),
        "17" => "udp".into(),
        "1" => "icmp".into(),
        "58" => "icmpv6".into(),
        "all" => "-1".into(),
        _ => raw,
    }
}

/// How many sources a template rule names (more than one: AWS mints one rule per source).
pub(crate) fn source_count(rule: &Map<String, Value>, direction: Direction) -> usize {
    let peer = direction.peer();
    [
        "CidrIp".to_string(),
        "CidrIpv6".to_string(),
        format!("{peer}PrefixListId"),
        format!("{peer}SecurityGroupId"),
        format!("{peer}SecurityGroupName"),
    ]
    .iter()
    .filter(|key| rule.contains_key(key.as_str()))
    .count()
}

/// A template rule as the permission EC2 authorizes or revokes.
pub(crate) fn permission(rule: &Map<String, Value>, direction: Direction) -> IpPermission {
    let peer = direction.peer();
    let description = text(rule.get("Description"));
    let proto = protocol(rule.get("IpProtocol"));
    let all = proto == "-1";
    let mut builder = IpPermission::builder()
        .ip_protocol(proto)
        .set_from_port(if all { None } else { int(rule.get("FromPort")) })
        .set_to_port(if all { None } else { int(rule.get("ToPort")) });
    if let Some(cidr) = text(rule.get("CidrIp")) {
        builder = builder.ip_ranges(
            IpRange::builder()
                .cidr_ip(cidr)
                .set_description(description.clone())
                .build(),
        );
    }
    if let Some(cidr) = text(rule.get("CidrIpv6")) {
        builder = builder.ipv6_ranges(
            Ipv6Range::builder()
                .cidr_ipv6(cidr)
                .set_description(description.clone())
                .build(),
        );
    }
    if let Some(list) = text(rule.get(&format!("{peer}PrefixListId"))) {
        builder = builder.prefix_list_ids(
            PrefixListId::builder()
                .prefix_list_id(list)
                .set_description(description.clone())
                .build(),
        );
    }
    let group = text(rule.get(&format!("{peer}SecurityGroupId")));
    let group_name = text(rule.get("SourceSecurityGroupName"));
    if group.is_some() || group_name.is_some() {
        builder = builder.user_id_group_pairs(
            UserIdGroupPair::builder()
                .set_group_id(group)
                .set_group_name(group_name)
                .set_user_id(text(rule.get("SourceSecurityGroupOwnerId")))
                .set_description(description)
                .build(),
        );
    }
    builder.build()
}

/// The same permission without descriptions: what AWS matches on when it revokes.
pub(crate) fn undescribed(permission: &IpPermission) -> IpPermission {
    let mut p = permission.clone();
    p.ip_ranges = p.ip_ranges.map(|r| {
        r.into_iter()
            .map(|mut i| {
                i.description = None;
                i
            })
            .collect()
    });
    p.ipv6_ranges = p.ipv6_ranges.map(|r| {
        r.into_iter()
            .map(|mut i| {
                i.description = None;
                i
            })
            .collect()
    });
    p.prefix_list_ids = p.prefix_list_ids.map(|r| {
        r.into_iter()
            .map(|mut i| {
                i.description = None;
                i
            })
            .collect()
    });
    p.user_id_group_pairs = p.user_id_group_pairs.map(|r| {
        r.into_iter()
            .map(|mut i| {
                i.description = None;
                i
            })
            .collect()
    });
    p
}

/// The rule AWS gives every new VPC security group: all traffic out to anywhere (IPv4).
pub(crate) fn default_egress() -> IpPermission {
    IpPermission::builder()
        .ip_protocol("-1")
        .ip_ranges(IpRange::builder().cidr_ip("0.0.0.0/0").build())
        .build()
}

/// What changes between two rule lists: `(revoke, authorize, redescribe)`; a rule whose only
/// change is its description is re-described rather than revoked and re-authorized.
pub(crate) fn rule_changes(
    before: &[IpPermission],
    after: &[IpPermission],
) -> (Vec<IpPermission>, Vec<IpPermission>, Vec<IpPermission>) {
    let bare_before: Vec<IpPermission> = before.iter().map(undescribed).collect();
    let bare_after: Vec<IpPermission> = after.iter().map(undescribed).collect();
    let revoke = before
        .iter()
        .zip(&bare_before)
        .filter(|(_, bare)| !bare_after.contains(bare))
        .map(|(p, _)| p.clone())
        .collect();
    let authorize = after
        .iter()
        .zip(&bare_after)
        .filter(|(_, bare)| !bare_before.contains(bare))
        .map(|(p, _)| p.clone())
        .collect();
    let redescribe = after
        .iter()
        .zip(&bare_after)
        .filter(|(p, bare)| bare_before.contains(bare) && !before.contains(p))
        .map(|(p, _)| p.clone())
        .collect();
    (revoke, authorize, redescribe)
}

/// A rule EC2 reports, in template shape (`GroupId` included for the standalone types).
pub(crate) fn rule_properties(
    rule: &SecurityGroupRule,
    direction: Direction,
) -> Map<String, Value> {
    let peer = direction.peer();
    let mut props = Map::new();
    put(&mut props, "GroupId", some_str(rule.group_id()));
    put(&mut props, "IpProtocol", some_str(rule.ip_protocol()));
    if rule.ip_protocol() != Some("-1") {
        put(&mut props, "FromPort", rule.from_port().map(|p| json!(p)));
        put(&mut props, "ToPort", rule.to_port().map(|p| json!(p)));
    }
    put(&mut props, "CidrIp", some_str(rule.cidr_ipv4()));
    put(&mut props, "CidrIpv6", some_str(rule.cidr_ipv6()));
    put(
        &mut props,
        &format!("{peer}PrefixListId"),
        some_str(rule.prefix_list_id()),
    );
    if let Some(group) = rule.referenced_group_info() {
        put(
            &mut props,
            &format!("{peer}SecurityGroupId"),
            some_str(group.group_id()),
        );
    }
    put(&mut props, "Description", some_str(rule.description()));
    props
}

/// Whether a reported rule is the one a template rule declares: same protocol and ports and,
/// when the template names a source, that source.
pub(crate) fn matches(
    rule: &SecurityGroupRule,
    wanted: &Map<String, Value>,
    direction: Direction,
) -> bool {
    let read = rule_properties(rule, direction);
    let ports = |m: &Map<String, Value>, key: &str| int(m.get(key)).unwrap_or(-1);
    let all = protocol(wanted.get("IpProtocol")) == "-1";
    protocol(read.get("IpProtocol")) == protocol(wanted.get("IpProtocol"))
        && (all
            || (ports(&read, "FromPort") == ports(wanted, "FromPort")
                && ports(&read, "ToPort") == ports(wanted, "ToPort")))
        && wanted
            .iter()
            .filter(|(key, _)| {
                key.starts_with("Cidr")
                    || key.ends_with("PrefixListId")
                    || key.ends_with("SecurityGroupId")
            })
            .all(|(key, value)| read.get(key) == Some(value))
}

/// The rule a retried create adopts: the one rule with the template rule's protocol, ports,
/// source and description. A rule with several sources (several rules in EC2) or named by a
/// group name (not in what EC2 reports) is never adopted.
pub(crate) fn adoptable(
    rules: &[SecurityGroupRule],
    wanted: &Map<String, Value>,
    direction: Direction,
) -> Option<String> {
    if source_count(wanted, direction) != 1 || wanted.contains_key("SourceSecurityGroupName") {
        return None;
    }
    let description = |d: Option<String>| d.filter(|d| !d.is_empty());
    let same: Vec<&SecurityGroupRule> = rules
        .iter()
        .filter(|r| r.is_egress() == Some(direction == Direction::Egress))
        .filter(|r| matches(r, wanted, direction))
        .filter(|r| {
            description(r.description().map(ToString::to_string))
                == description(text(wanted.get("Description")))
        })
        .collect();
    match same.as_slice() {
        [rule] => rule
            .security_group_rule_id()
            .filter(|id| id.starts_with("sgr-"))
            .map(ToString::to_string),
        _ => None,
    }
}

/// The rules of `group` in one direction, as EC2 reports them (none when the group is gone).
pub(crate) async fn group_rules(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    group: &str,
    direction: Direction,
) -> Result<Vec<SecurityGroupRule>, ProviderError> {
    let mut rules = Vec::new();
    let mut pages = ec2
        .describe_security_group_rules()
        .filters(filter("group-id", group))
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        match optional(what, page)? {
            Some(page) => rules.extend(page.security_group_rules().iter().cloned()),
            None => return Ok(Vec::new()),
        }
    }
    rules.retain(|r| r.is_egress() == Some(direction == Direction::Egress));
    Ok(rules)
}

/// The `sgr-` id of the rule on the template's group that is exactly the template's rule
/// ([`adoptable`]).
pub(crate) async fn existing_rule(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    wanted: &Map<String, Value>,
    direction: Direction,
) -> Result<Option<String>, ProviderError> {
    let group = require_str(wanted, "GroupId", what)?;
    let rules = group_rules(ec2, what, group, direction).await?;
    Ok(adoptable(&rules, wanted, direction))
}

/// The rule ids an authorize call minted.
pub(crate) fn minted(rules: &[SecurityGroupRule]) -> Vec<String> {
    rules
        .iter()
        .filter_map(|r| r.security_group_rule_id().map(ToString::to_string))
        .collect()
}

/// The `Id` attribute: the rule id when AWS minted exactly one (a rule with several sources
/// gets none on purpose: no single id names the resource).
pub(crate) fn rule_id_attribute(ids: &[String]) -> Map<String, Value> {
    let mut attributes = Map::new();
    if let [id] = ids {
        attributes.insert("Id".into(), json!(id));
    }
    attributes
}

/// Rules of a described group in template shape: one template rule per source.
pub(crate) fn template_rules(permissions: &[IpPermission], direction: Direction) -> Vec<Value> {
    let peer = direction.peer();
    let mut rules = Vec::new();
    for p in permissions {
        let mut base = Map::new();
        put(&mut base, "IpProtocol", some_str(p.ip_protocol()));
        if p.ip_protocol() != Some("-1") {
            put(&mut base, "FromPort", p.from_port().map(|v| json!(v)));
            put(&mut base, "ToPort", p.to_port().map(|v| json!(v)));
        }
        let mut add = |key: String, value: Option<&str>, description: Option<&str>| {
            let mut rule = base.clone();
            put(&mut rule, &key, some_str(value));
            put(&mut rule, "Description", some_str(description));
            rules.push(Value::Object(rule));
        };
        for r in p.ip_ranges() {
            add("CidrIp".into(), r.cidr_ip(), r.description());
        }
        for r in p.ipv6_ranges() {
            add("CidrIpv6".into(), r.cidr_ipv6(), r.description());
        }
        for r in p.prefix_list_ids() {
            add(
                format!("{peer}PrefixListId"),
                r.prefix_list_id(),
                r.description(),
            );
        }
        for r in p.user_id_group_pairs() {
            add(
                format!("{peer}SecurityGroupId"),
                r.group_id(),
                r.description(),
            );
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_template_rule_becomes_one_permission_per_source_kind() {
        let p = permission(
            &rule(
                json!({"IpProtocol": 6, "FromPort": "443", "ToPort": 443, "CidrIp": "0.0.0.0/0", "Description": "https"}),
            ),
            Direction::Ingress,
        );
        assert_eq!(p.ip_protocol(), Some("tcp"));
        assert_eq!((p.from_port(), p.to_port()), (Some(443), Some(443)));
        assert_eq!(p.ip_ranges()[0].description(), Some("https"));
        let peer = permission(
            &rule(json!({"IpProtocol": "-1", "DestinationSecurityGroupId": "sg-1", "FromPort": 1})),
            Direction::Egress,
        );
        assert_eq!(peer.from_port(), None, "all-traffic rules carry no ports");
        assert_eq!(peer.user_id_group_pairs()[0].group_id(), Some("sg-1"));
    }

    #[test]
    fn only_a_description_change_is_redescribed() {
        let described = permission(
            &rule(
                json!({"IpProtocol": "-1", "CidrIp": "0.0.0.0/0", "Description": "Allow all outbound traffic by default"}),
            ),
            Direction::Egress,
        );
        let (revoke, authorize, redescribe) =
            rule_changes(&[default_egress()], std::slice::from_ref(&described));
        assert!(revoke.is_empty() && authorize.is_empty());
        assert_eq!(redescribe, vec![described]);
        let icmp = permission(
            &rule(
                json!({"IpProtocol": "icmp", "FromPort": 252, "ToPort": 86, "CidrIp": "255.255.255.255/32"}),
            ),
            Direction::Egress,
        );
        let (revoke, authorize, redescribe) =
            rule_changes(&[default_egress()], std::slice::from_ref(&icmp));
        assert_eq!(
            (revoke, authorize, redescribe),
            (vec![default_egress()], vec![icmp], vec![])
        );
    }

    #[test]
    fn reported_rules_read_back_and_match_their_template() {
        let reported = SecurityGroupRule::builder()
            .group_id("sg-web")
            .ip_protocol("tcp")
            .from_port(8000)
            .to_port(8010)
            .referenced_group_info(
                aws_sdk_ec2::types::ReferencedSecurityGroup::builder()
                    .group_id("sg-db")
                    .build(),
            )
            .description("callbacks from db")
            .build();
        assert_eq!(
            Value::Object(rule_properties(&reported, Direction::Ingress)),
            json!({"GroupId": "sg-web", "IpProtocol": "tcp", "FromPort": 8000, "ToPort": 8010,
                   "SourceSecurityGroupId": "sg-db", "Description": "callbacks from db"})
        );
        let wanted = rule(
            json!({"IpProtocol": "6", "FromPort": 8000, "ToPort": 8010, "SourceSecurityGroupId": "sg-db"}),
        );
        assert!(matches(&reported, &wanted, Direction::Ingress));
        let other = rule(
            json!({"IpProtocol": "tcp", "FromPort": 8000, "ToPort": 8010, "CidrIp": "10.0.0.0/8"}),
        );
        assert!(!matches(&reported, &other, Direction::Ingress));
        assert_eq!(
            source_count(
                &rule(json!({"CidrIp": "a", "CidrIpv6": "b"})),
                Direction::Ingress
            ),
            2
        );
    }

    #[test]
    fn a_duplicate_is_adopted_only_when_it_is_exactly_the_rule_asked_for() {
        let reported = |id: &str, cidr: &str, description: Option<&str>| {
            SecurityGroupRule::builder()
                .security_group_rule_id(id)
                .group_id("sg-1")
                .is_egress(false)
                .ip_protocol("tcp")
                .from_port(443)
                .to_port(443)
                .cidr_ipv4(cidr)
                .set_description(description.map(ToString::to_string))
                .build()
        };
        let rules = [
            reported("sgr-1", "10.0.0.0/8", Some("https")),
            reported("sgr-2", "0.0.0.0/0", None),
        ];
        let wanted = |v: Value| rule(v);
        assert_eq!(
            adoptable(
                &rules,
                &wanted(
                    json!({"GroupId": "sg-1", "IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/8", "Description": "https"})
                ),
                Direction::Ingress
            ),
            Some("sgr-1".into())
        );
        assert_eq!(
            adoptable(
                &rules,
                &wanted(
                    json!({"GroupId": "sg-1", "IpProtocol": "6", "FromPort": "443", "ToPort": 443, "CidrIp": "0.0.0.0/0"})
                ),
                Direction::Ingress
            ),
            Some("sgr-2".into())
        );
        // Another description: the same permission, but not the rule the template declares.
        assert_eq!(
            adoptable(
                &rules,
                &wanted(
                    json!({"GroupId": "sg-1", "IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/8", "Description": "other"})
                ),
                Direction::Ingress
            ),
            None
        );
        // The egress side of the group is not the ingress rule.
        assert_eq!(
            adoptable(
                &rules,
                &wanted(
                    json!({"GroupId": "sg-1", "IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"})
                ),
                Direction::Egress
            ),
            None
        );
        assert_eq!(
            adoptable(
                &rules,
                &wanted(
                    json!({"GroupId": "sg-1", "IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0", "CidrIpv6": "::/0"})
                ),
                Direction::Ingress
            ),
            None
        );
    }

    #[test]
    fn only_a_single_minted_rule_becomes_the_id() {
        assert_eq!(
            Value::Object(rule_id_attribute(&["sgr-1".into()])),
            json!({"Id": "sgr-1"})
        );
        assert!(rule_id_attribute(&["sgr-1".into(), "sgr-2".into()]).is_empty());
    }

    #[test]
    fn a_described_group_lists_one_rule_per_source() {
        let p = IpPermission::builder()
            .ip_protocol("tcp")
            .from_port(443)
            .to_port(443)
            .ip_ranges(
                IpRange::builder()
                    .cidr_ip("0.0.0.0/0")
                    .description("https")
                    .build(),
            )
            .ipv6_ranges(Ipv6Range::builder().cidr_ipv6("::/0").build())
            .build();
        assert_eq!(
            template_rules(&[p], Direction::Ingress),
            [
                json!({"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0", "Description": "https"}),
                json!({"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIpv6": "::/0"}),
            ]
        );
    }
}
