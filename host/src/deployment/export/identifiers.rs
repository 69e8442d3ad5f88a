//! What CloudFormation needs to find each resource of an IMPORT change set: the type's primary
//! identifier (its property names), and their values from what cdkd recorded.
//!
//! Names come from the registry schema (`DescribeType`), else from a table of common types. The
//! values come from the physical id, split per type where cdkd's id is composite, or from a
//! recorded attribute where CloudFormation's identifier is not part of cdkd's id at all.

use serde_json::{Map, Value};

use crate::state::schema::{ProvisionedBy, ResourceState};

/// Primary identifiers of common single-key types, for when the registry cannot be asked (a
/// dry run, or a caller without `cloudformation:DescribeType`).
const FALLBACK: &[(&str, &str)] = &[
    ("AWS::S3::Bucket", "BucketName"),
    ("AWS::S3::BucketPolicy", "Bucket"),
    ("AWS::SQS::Queue", "QueueUrl"),
    ("AWS::SNS::Topic", "TopicArn"),
    ("AWS::SNS::Subscription", "Arn"),
    ("AWS::SSM::Parameter", "Name"),
    ("AWS::IAM::Role", "RoleName"),
    ("AWS::IAM::User", "UserName"),
    ("AWS::IAM::Group", "GroupName"),
    ("AWS::IAM::ManagedPolicy", "PolicyArn"),
    ("AWS::IAM::InstanceProfile", "InstanceProfileName"),
    ("AWS::Lambda::Function", "FunctionName"),
    ("AWS::Lambda::Version", "FunctionArn"),
    ("AWS::Lambda::Alias", "AliasArn"),
    ("AWS::Lambda::LayerVersion", "LayerVersionArn"),
    ("AWS::Lambda::EventSourceMapping", "Id"),
    ("AWS::Logs::LogGroup", "LogGroupName"),
    ("AWS::DynamoDB::Table", "TableName"),
    ("AWS::KMS::Key", "KeyId"),
    ("AWS::SecretsManager::Secret", "Id"),
    ("AWS::Events::Rule", "Arn"),
    ("AWS::StepFunctions::StateMachine", "Arn"),
    ("AWS::Kinesis::Stream", "Name"),
    ("AWS::ECR::Repository", "RepositoryName"),
    ("AWS::ECS::Cluster", "ClusterName"),
    ("AWS::CloudWatch::Alarm", "AlarmName"),
    ("AWS::EC2::VPC", "VpcId"),
    ("AWS::EC2::Subnet", "SubnetId"),
    ("AWS::EC2::InternetGateway", "InternetGatewayId"),
    ("AWS::EC2::RouteTable", "RouteTableId"),
    ("AWS::EC2::NatGateway", "NatGatewayId"),
    ("AWS::EC2::SecurityGroup", "Id"),
    ("AWS::EC2::SecurityGroupIngress", "Id"),
    ("AWS::EC2::SecurityGroupEgress", "Id"),
    ("AWS::EC2::NetworkAcl", "Id"),
    ("AWS::EC2::SubnetRouteTableAssociation", "Id"),
    ("AWS::EC2::SubnetNetworkAclAssociation", "AssociationId"),
];

/// Composite primary identifiers cdkd knows without the registry.
const FALLBACK_COMPOSITE: &[(&str, &[&str])] = &[
    ("AWS::Lambda::Permission", &["FunctionName", "Id"]),
    (
        "AWS::EC2::VPCGatewayAttachment",
        &["AttachmentType", "VpcId"],
    ),
    ("AWS::EC2::Route", &["RouteTableId", "CidrBlock"]),
    ("AWS::EC2::EIP", &["PublicIp", "AllocationId"]),
    ("AWS::ApiGatewayV2::Stage", &["ApiId", "StageName"]),
];

/// The primary identifier's property names from cdkd's table, when it has the type.
pub fn fallback(resource_type: &str) -> Option<Vec<String>> {
    if let Some((_, name)) = FALLBACK.iter().find(|(t, _)| *t == resource_type) {
        return Some(vec![name.to_string()]);
    }
    FALLBACK_COMPOSITE
        .iter()
        .find(|(t, _)| *t == resource_type)
        .map(|(_, names)| names.iter().map(ToString::to_string).collect())
}

/// Types whose CloudFormation identifier is an attribute cdkd records, not its physical id.
const RECORDED: &[(&str, &str)] = &[
    ("AWS::S3Tables::Table", "TableARN"),
    ("AWS::AppSync::DataSource", "DataSourceArn"),
    ("AWS::AppSync::Resolver", "ResolverArn"),
    ("AWS::EC2::SecurityGroupIngress", "Id"),
];

/// The attribute holding `resource_type`'s CloudFormation identifier, for the types whose
/// identifier is not (a segment of) cdkd's physical id.
pub fn recorded_attribute(resource_type: &str) -> Option<&'static str> {
    RECORDED
        .iter()
        .find(|(t, _)| *t == resource_type)
        .map(|(_, attribute)| *attribute)
}

/// Why a resource's identifier could not be worked out; the message names what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentifierError {
    /// The identifier is a recorded attribute the record lacks.
    NotRecorded {
        /// The attribute.
        attribute: String,
    },
    /// A composite identifier cdkd has no splitter for.
    NoSplitter {
        /// The identifier's property names.
        names: Vec<String>,
    },
    /// The physical id does not have the shape the splitter expects.
    Shape {
        /// What was expected.
        expected: String,
    },
}

impl std::fmt::Display for IdentifierError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdentifierError::NotRecorded { attribute } => write!(
                f,
                "its state record does not carry the {attribute} attribute CloudFormation identifies it by; deploy the stack once with this cdkd to record it, then export again"
            ),
            IdentifierError::NoSplitter { names } => write!(
                f,
                "its CloudFormation identifier has {} parts ({}) and cdkd has no rule to split its physical id into them; register one in host/src/deployment/export/identifiers.rs (`split`), or remove the resource from the stack before exporting",
                names.len(),
                names.join(", ")
            ),
            IdentifierError::Shape { expected } => {
                write!(f, "its physical id is not {expected}")
            }
        }
    }
}

/// The `ResourceIdentifier` of `resource` for the identifier property `names`.
pub fn identifier(
    resource: &ResourceState,
    names: &[String],
) -> Result<Map<String, Value>, IdentifierError> {
    let physical = resource.physical_id.as_str();
    let string = |s: &str| Value::String(s.to_string());
    // Cloud Control names a resource by its primary identifier, so a resource it made has
    // CloudFormation's identifier as its physical id: only a plugin's composite id needs
    // the recorded attribute.
    let cloud_control = resource.provisioned_by == Some(ProvisionedBy::CcApi);
    if let Some(attribute) = recorded_attribute(&resource.resource_type).filter(|_| !cloud_control)
    {
        let value = resource
            .attributes
            .as_ref()
            .and_then(|a| a.get(attribute))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty() && *v != "***")
            .ok_or_else(|| IdentifierError::NotRecorded {
                attribute: attribute.to_string(),
            })?;
        return Ok(Map::from_iter([(
            names_first(names, attribute),
            string(value),
        )]));
    }
    if names.len() == 1 {
        return Ok(Map::from_iter([(names[0].clone(), string(physical))]));
    }
    let values = split(resource, names)?;
    Ok(names
        .iter()
        .cloned()
        .zip(values.into_iter().map(Value::String))
        .collect())
}

fn names_first(names: &[String], attribute: &str) -> String {
    names
        .first()
        .cloned()
        .unwrap_or_else(|| attribute.to_string())
}

/// A composite identifier's values, in `names`' order.
fn split(resource: &ResourceState, names: &[String]) -> Result<Vec<String>, IdentifierError> {
    let physical = resource.physical_id.as_str();
    let segments: Vec<&str> = physical.split('|').collect();
    let property = |name: &str| {
        resource
            .properties
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let shape = |expected: &str| IdentifierError::Shape {
        expected: expected.to_string(),
    };
    let by_name = |pairs: &[(&str, String)]| -> Result<Vec<String>, IdentifierError> {
        names
            .iter()
            .map(|name| {
                pairs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| IdentifierError::NoSplitter {
                        names: names.to_vec(),
                    })
            })
            .collect()
    };
    match resource.resource_type.as_str() {
        // cdkd's id is the statement id; the function lives in the properties.
        "AWS::Lambda::Permission" => {
            let function = property("FunctionName")
                .ok_or_else(|| shape("a statement id with FunctionName recorded"))?;
            by_name(&[("FunctionName", function), ("Id", physical.to_string())])
        }
        // cdkd's id is `<internetGatewayId>|<vpcId>`; CloudFormation names the attachment by
        // its kind (`IGW`, as CloudFormation spells an internet gateway) and the VPC.
        "AWS::EC2::VPCGatewayAttachment" => match segments.as_slice() {
            [gateway, vpc] if !gateway.is_empty() && !vpc.is_empty() => by_name(&[
                ("AttachmentType", "IGW".to_string()),
                ("VpcId", vpc.to_string()),
            ]),
            _ => Err(shape("<internetGatewayId>|<vpcId>")),
        },
        // cdkd's id is `<routeTableId>|<destination>`.
        "AWS::EC2::Route" => match segments.as_slice() {
            [table, destination] => by_name(&[
                ("RouteTableId", table.to_string()),
                ("CidrBlock", destination.to_string()),
            ]),
            _ => Err(shape("<routeTableId>|<destination>")),
        },
        // cdkd's id is `<publicIp>|<allocationId>`, CloudFormation's order.
        "AWS::EC2::EIP" => match segments.as_slice() {
            [ip, allocation] => by_name(&[
                ("PublicIp", ip.to_string()),
                ("AllocationId", allocation.to_string()),
            ]),
            _ => Err(shape("<publicIp>|<allocationId>")),
        },
        // The API id lives in the properties; cdkd's id is the stage name.
        "AWS::ApiGatewayV2::Stage" => {
            let api = property("ApiId").ok_or_else(|| shape("a stage name with ApiId recorded"))?;
            by_name(&[("ApiId", api), ("StageName", physical.to_string())])
        }
        // A Cloud Control id is the primary identifier's values joined with `|`, in order.
        _ if resource.provisioned_by == Some(ProvisionedBy::CcApi)
            && segments.len() == names.len() =>
        {
            Ok(segments.into_iter().map(str::to_string).collect())
        }
        _ => Err(IdentifierError::NoSplitter {
            names: names.to_vec(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resource(resource_type: &str, physical_id: &str, properties: Value) -> ResourceState {
        serde_json::from_value(json!({
            "physicalId": physical_id,
            "resourceType": resource_type,
            "properties": properties,
        }))
        .unwrap()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_single_key_identifier_is_the_physical_id() {
        let queue = resource("AWS::SQS::Queue", "https://sqs/q", json!({}));
        assert_eq!(
            identifier(&queue, &names(&["QueueUrl"])).unwrap(),
            json!({"QueueUrl": "https://sqs/q"})
                .as_object()
                .unwrap()
                .clone()
        );
        assert_eq!(fallback("AWS::SQS::Queue").unwrap(), ["QueueUrl"]);
        assert_eq!(
            fallback("AWS::Lambda::Permission").unwrap(),
            ["FunctionName", "Id"]
        );
        assert_eq!(fallback("Acme::Nope::Thing"), None);
    }

    #[test]
    fn composite_identifiers_are_split_per_type() {
        let permission = resource(
            "AWS::Lambda::Permission",
            "stmt-1",
            json!({"FunctionName": "fn-a", "Principal": "s3.amazonaws.com"}),
        );
        assert_eq!(
            identifier(&permission, &names(&["FunctionName", "Id"])).unwrap(),
            json!({"FunctionName": "fn-a", "Id": "stmt-1"})
                .as_object()
                .unwrap()
                .clone()
        );
        let attachment = resource("AWS::EC2::VPCGatewayAttachment", "igw-1|vpc-2", json!({}));
        assert_eq!(
            identifier(&attachment, &names(&["AttachmentType", "VpcId"])).unwrap(),
            json!({"AttachmentType": "IGW", "VpcId": "vpc-2"})
                .as_object()
                .unwrap()
                .clone()
        );
        let bad = resource("AWS::EC2::VPCGatewayAttachment", "igw-1", json!({}));
        assert!(matches!(
            identifier(&bad, &names(&["AttachmentType", "VpcId"])),
            Err(IdentifierError::Shape { .. })
        ));
    }

    #[test]
    fn a_cloud_control_composite_splits_in_identifier_order_and_others_need_a_splitter() {
        let mut method = resource("AWS::ApiGateway::Method", "api-1|res-2|GET", json!({}));
        let parts = names(&["RestApiId", "ResourceId", "HttpMethod"]);
        let err = identifier(&method, &parts).unwrap_err();
        assert!(
            err.to_string()
                .contains("3 parts (RestApiId, ResourceId, HttpMethod)"),
            "{err}"
        );
        method.provisioned_by = Some(ProvisionedBy::CcApi);
        assert_eq!(
            identifier(&method, &parts).unwrap(),
            json!({"RestApiId": "api-1", "ResourceId": "res-2", "HttpMethod": "GET"})
                .as_object()
                .unwrap()
                .clone()
        );
    }

    #[test]
    fn recorded_identifiers_come_from_attributes_or_say_how_to_heal() {
        let mut rule = resource(
            "AWS::EC2::SecurityGroupIngress",
            "sg-1|tcp|443|443",
            json!({"GroupId": "sg-1"}),
        );
        let err = identifier(&rule, &names(&["Id"])).unwrap_err();
        assert_eq!(
            err,
            IdentifierError::NotRecorded {
                attribute: "Id".into()
            }
        );
        rule.attributes = Some(json!({"Id": "sgr-9"}).as_object().unwrap().clone());
        assert_eq!(
            identifier(&rule, &names(&["Id"])).unwrap(),
            json!({"Id": "sgr-9"}).as_object().unwrap().clone()
        );
    }

    #[test]
    fn a_cloud_control_record_of_a_recorded_type_is_identified_by_its_physical_id() {
        let arn = "arn:aws:s3tables:us-east-1:1:bucket/b/table/t-1";
        let mut table = resource("AWS::S3Tables::Table", arn, json!({"TableName": "t"}));
        table.provisioned_by = Some(ProvisionedBy::CcApi);
        assert_eq!(
            identifier(&table, &names(&["TableARN"])).unwrap(),
            json!({"TableARN": arn}).as_object().unwrap().clone()
        );
    }

    #[test]
    fn cloud_control_sub_resources_split_into_their_parents_and_own_ids() {
        for (resource_type, physical_id, parts, expected) in [
            (
                "AWS::ApiGatewayV2::Integration",
                "api-1|int-2",
                &["ApiId", "IntegrationId"][..],
                json!({"ApiId": "api-1", "IntegrationId": "int-2"}),
            ),
            (
                "AWS::ApiGatewayV2::Route",
                "api-1|route-3",
                &["ApiId", "RouteId"][..],
                json!({"ApiId": "api-1", "RouteId": "route-3"}),
            ),
            (
                "AWS::S3Tables::Namespace",
                "arn:aws:s3tables:us-east-1:1:bucket/b|analytics",
                &["TableBucketARN", "Namespace"][..],
                json!({"TableBucketARN": "arn:aws:s3tables:us-east-1:1:bucket/b", "Namespace": "analytics"}),
            ),
        ] {
            let mut row = resource(resource_type, physical_id, json!({}));
            row.provisioned_by = Some(ProvisionedBy::CcApi);
            assert_eq!(
                identifier(&row, &names(parts)).unwrap(),
                expected.as_object().unwrap().clone(),
                "{resource_type}"
            );
        }
    }
}
