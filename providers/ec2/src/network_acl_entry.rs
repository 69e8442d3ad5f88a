//! `AWS::EC2::NetworkAclEntry`: physical id `<networkAclId>|<ruleNumber>|<egress>`.

use aws_sdk_ec2::types::{IcmpTypeCode, PortRange, RuleAction};
use cdkd_aws_common::{aws_error, flag, int, put, require_str, text};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::composite::{join, split};
use crate::network_acl::describe_acl;
use crate::{client, in_place, some_str, what};

const ENTRY: &str = "AWS::EC2::NetworkAclEntry";

/// `AWS::EC2::NetworkAclEntry`.
#[derive(Default)]
pub struct NetworkAclEntry;

const ENTRY_SEGMENTS: &[&str] = &["networkAclId", "ruleNumber", "egress"];

/// Sets an entry's fields on a create or replace call (same setters, no common trait).
macro_rules! entry_fields {
    ($call:expr, $props:expr) => {{
        let p = $props;
        $call
            .set_protocol(text(p.get("Protocol")))
            .set_rule_action(text(p.get("RuleAction")).map(|a| RuleAction::from(a.as_str())))
            .set_cidr_block(text(p.get("CidrBlock")))
            .set_ipv6_cidr_block(text(p.get("Ipv6CidrBlock")))
            .set_icmp_type_code(p.get("Icmp").map(|icmp| {
                IcmpTypeCode::builder()
                    .set_code(int(icmp.get("Code")))
                    .set_type(int(icmp.get("Type")))
                    .build()
            }))
            .set_port_range(p.get("PortRange").map(|range| {
                PortRange::builder()
                    .set_from(int(range.get("From")))
                    .set_to(int(range.get("To")))
                    .build()
            }))
    }};
}

/// `(acl, rule number, egress)` of an entry's template properties, and its id.
fn entry_key(
    what: &str,
    props: &Map<String, Value>,
) -> Result<(String, i32, bool, String), ProviderError> {
    let acl = require_str(props, "NetworkAclId", what)?.to_string();
    let rule = int(props.get("RuleNumber")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: property RuleNumber is required and must be a number"
        ))
    })?;
    let egress = flag(props.get("Egress")).unwrap_or(false);
    let id = join(
        what,
        &[
            ("networkAclId", &acl),
            ("ruleNumber", &rule.to_string()),
            ("egress", &egress.to_string()),
        ],
    )?;
    Ok((acl, rule, egress, id))
}

/// The parts of an entry id.
fn parse_entry(what: &str, id: &str) -> Result<(String, i32, bool), ProviderError> {
    let parts = split(what, id, ENTRY_SEGMENTS)?;
    let rule = parts[1].parse().map_err(|_| {
        ProviderError::validation(format!(
            "{what}: rule number {:?} in {id:?} is not a number",
            parts[1]
        ))
    })?;
    let egress = match parts[2] {
        "true" => true,
        "false" => false,
        other => {
            return Err(ProviderError::validation(format!(
                "{what}: egress {other:?} in {id:?} must be true or false"
            )))
        }
    };
    Ok((parts[0].to_string(), rule, egress))
}

/// Whether the live entry is the one the template asks for: every property the template sets
/// has the same value (numbers and strings alike, as templates spell them either way).
fn same_entry(template: &Map<String, Value>, live: &Map<String, Value>) -> bool {
    fn plain(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), plain(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(plain).collect()),
            Value::Number(n) => Value::String(n.to_string()),
            Value::Bool(b) => Value::String(b.to_string()),
            other => other.clone(),
        }
    }
    template
        .iter()
        .all(|(key, value)| live.get(key).map(plain) == Some(plain(value)))
}

#[async_trait]
impl Readable for NetworkAclEntry {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (acl, rule, egress) = parse_entry(what, &request.physical_id)?;
        let ec2 = client(ctx).await?;
        let found = describe_acl(&ec2, what, &acl).await?.and_then(|a| {
            a.entries()
                .iter()
                .find(|e| e.rule_number() == Some(rule) && e.egress() == Some(egress))
                .cloned()
        });
        Ok(found.map(|e| {
            let mut props = Map::new();
            props.insert("NetworkAclId".into(), json!(acl));
            props.insert("RuleNumber".into(), json!(rule));
            props.insert("Egress".into(), json!(egress));
            put(&mut props, "Protocol", some_str(e.protocol()));
            put(
                &mut props,
                "RuleAction",
                some_str(e.rule_action().map(|a| a.as_str())),
            );
            put(&mut props, "CidrBlock", some_str(e.cidr_block()));
            put(&mut props, "Ipv6CidrBlock", some_str(e.ipv6_cidr_block()));
            put(
                &mut props,
                "PortRange",
                e.port_range()
                    .map(|r| json!({"From": r.from(), "To": r.to()})),
            );
            put(
                &mut props,
                "Icmp",
                e.icmp_type_code()
                    .map(|i| json!({"Code": i.code(), "Type": i.r#type()})),
            );
            props
        }))
    }
}

#[async_trait]
impl ResourceProvider for NetworkAclEntry {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(ENTRY)
            .handles(&[
                "NetworkAclId",
                "RuleNumber",
                "Egress",
                "Protocol",
                "RuleAction",
                "CidrBlock",
                "Ipv6CidrBlock",
                "Icmp",
                "PortRange",
            ])
            .create_only(&["NetworkAclId", "RuleNumber", "Egress"])
            .read_and_import()
            // A repeated create adopts the identical entry (docs/deploy.md).
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .composite_id(
                ENTRY_SEGMENTS,
                &[&["NetworkAclId"], &["RuleNumber"], &["Egress"]],
            )
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(ENTRY, &request.logical_id);
        let props = &request.properties;
        let (acl, rule, egress, id) = entry_key(&what, props)?;
        let ec2 = client(ctx).await?;
        let created = entry_fields!(
            ec2.create_network_acl_entry()
                .network_acl_id(&acl)
                .rule_number(rule)
                .egress(egress),
            props
        )
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: adding rule {rule} to {acl}"), e));
        if let Err(err) = created {
            // After a crash, the entry an interrupted run added is adopted when it is exactly
            // the one asked for; any other entry under that number is not ours to take.
            if !crate::already_there(&err) {
                return Err(err);
            }
            let read = ReadCurrentStateRequest {
                logical_id: request.logical_id.clone(),
                physical_id: id.clone(),
                properties: props.clone(),
            };
            let live = self.read(ctx, &what, &read).await?;
            if !live.is_some_and(|live| same_entry(props, &live)) {
                return Err(err);
            }
        }
        Ok(CreateResult {
            physical_id: id,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(ENTRY, &request.logical_id);
        let (acl, rule, egress) = parse_entry(&what, &request.physical_id)?;
        let ec2 = client(ctx).await?;
        entry_fields!(
            ec2.replace_network_acl_entry()
                .network_acl_id(&acl)
                .rule_number(rule)
                .egress(egress),
            &request.properties
        )
        .send()
        .await
        .map_err(|e| aws_error(&format!("{what}: replacing rule {rule} of {acl}"), e))?;
        Ok(in_place(request, Map::new()))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(ENTRY, &request.logical_id);
        let (acl, rule, egress) = parse_entry(&what, &request.physical_id)?;
        let ec2 = client(ctx).await?;
        cdkd_aws_common::deleted_unless_failed(
            ec2.delete_network_acl_entry()
                .network_acl_id(&acl)
                .rule_number(rule)
                .egress(egress)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: deleting rule {rule} of {acl}"), e)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_identical_entry_is_adopted() {
        let template = json!({"NetworkAclId": "acl-1", "RuleNumber": 100, "Protocol": 6, "RuleAction": "allow", "CidrBlock": "0.0.0.0/0", "PortRange": {"From": 443, "To": 443}});
        let live = json!({"NetworkAclId": "acl-1", "RuleNumber": 100, "Egress": false, "Protocol": "6", "RuleAction": "allow", "CidrBlock": "0.0.0.0/0", "PortRange": {"From": 443, "To": 443}});
        let (template, live) = (template.as_object().unwrap(), live.as_object().unwrap());
        assert!(same_entry(template, live));
        let mut other = live.clone();
        other.insert("RuleAction".into(), json!("deny"));
        assert!(!same_entry(template, &other));
        let mut narrower = live.clone();
        narrower.insert("PortRange".into(), json!({"From": 443, "To": 444}));
        assert!(!same_entry(template, &narrower));
    }

    #[test]
    fn entry_ids_encode_and_decode() {
        let props = json!({"NetworkAclId": "acl-1", "RuleNumber": 100, "Egress": true, "Protocol": -1, "RuleAction": "allow"});
        let (acl, rule, egress, id) = entry_key("E", props.as_object().unwrap()).unwrap();
        assert_eq!((acl.as_str(), rule, egress), ("acl-1", 100, true));
        assert_eq!(id, "acl-1|100|true");
        assert_eq!(parse_entry("E", &id).unwrap(), ("acl-1".into(), 100, true));
        let ingress = json!({"NetworkAclId": "acl-1", "RuleNumber": "100"});
        assert_eq!(
            entry_key("E", ingress.as_object().unwrap()).unwrap().3,
            "acl-1|100|false"
        );
        assert!(parse_entry("E", "acl-1|100|maybe").is_err());
        assert!(parse_entry("E", "acl-1|x|true").is_err());
    }
}
