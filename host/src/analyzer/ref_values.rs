//! What `Ref` returns for each resource type, from the recorded physical id. For most types it
//! is the id itself; for composite-id types CloudFormation returns one segment or an ARN
//! attribute (state-management.md, "The composite id is NOT what Ref returns").

use std::collections::BTreeMap;

use cdkd_provider_api::protocol::RefValue;
use serde_json::{Map, Value};

/// The `Ref` rule of every type that has one other than the whole id.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RefValues {
    rules: BTreeMap<String, RefValue>,
}

impl RefValues {
    /// The rules the spec lists, whichever provider created the resource.
    pub fn builtin() -> RefValues {
        let rules = [
            ("AWS::EC2::EIP", RefValue::Segment(0)),
            ("AWS::Glue::Table", RefValue::Segment(1)),
            ("AWS::Route53::RecordSet", RefValue::Segment(1)),
            ("AWS::S3Tables::Namespace", RefValue::Segment(-1)),
            ("AWS::S3Tables::Table", RefValue::Segment(-1)),
            // Cloud Control's id is `<serviceArn>|<cluster>`; the plugin's, the bare ARN.
            ("AWS::ECS::Service", RefValue::Segment(0)),
            ("AWS::AppSync::ApiKey", RefValue::Attribute("Arn".into())),
            (
                "AWS::AppSync::DataSource",
                RefValue::Attribute("DataSourceArn".into()),
            ),
            (
                "AWS::AppSync::Resolver",
                RefValue::Attribute("ResolverArn".into()),
            ),
        ];
        RefValues {
            rules: rules
                .into_iter()
                .map(|(type_name, rule)| (type_name.to_string(), rule))
                .collect(),
        }
    }

    /// Adds (or, for a type the builtin table lists, replaces) the rule a plugin declares.
    pub fn with(mut self, type_name: &str, rule: RefValue) -> RefValues {
        self.rules.insert(type_name.to_string(), rule);
        self
    }

    /// The value `Ref` returns for a resource of `resource_type` recorded with `physical_id`.
    pub fn value(
        &self,
        resource_type: &str,
        physical_id: &str,
        attributes: Option<&Map<String, Value>>,
    ) -> Value {
        match self.rules.get(resource_type) {
            Some(rule) => rule.apply(physical_id, attributes),
            None => Value::String(physical_id.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_types_translate_and_others_keep_their_id() {
        let values = RefValues::builtin();
        assert_eq!(
            values.value("AWS::EC2::EIP", "52.1.2.3|eipalloc-0abc", None),
            "52.1.2.3"
        );
        assert_eq!(
            values.value("AWS::Route53::RecordSet", "Z1D6|www.example.com.|A", None),
            "www.example.com."
        );
        assert_eq!(values.value("AWS::Glue::Table", "db|tbl", None), "tbl");
        let service = "arn:aws:ecs:us-east-1:123456789012:service/prod/web";
        assert_eq!(
            values.value("AWS::ECS::Service", &format!("{service}|prod"), None),
            service
        );
        assert_eq!(values.value("AWS::ECS::Service", service, None), service);
        assert_eq!(
            values.value("AWS::EC2::VPCGatewayAttachment", "igw-1|vpc-1", None),
            "igw-1|vpc-1"
        );
        let plugin = values.with("Acme::Pair::Thing", RefValue::Segment(-1));
        assert_eq!(plugin.value("Acme::Pair::Thing", "a|b", None), "b");
    }
}
