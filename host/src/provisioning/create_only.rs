//! Which properties of a type force a replacement: the plugin's declaration for types a
//! plugin handles; for Cloud Control types, the CloudFormation registry's `createOnlyProperties`.
//!
//! The registry schemas are not fetched yet (`DescribeType` needs CloudFormation, which the
//! test emulator does not serve for registry types): the Cloud Control types below carry the
//! create-only sets copied from their published registry schemas, and any other type falls
//! back to in-place updates, as the reference does when a schema is unavailable.

use crate::analyzer::plan::CreateOnlyProperties;
use crate::provisioning::registry::Registry;

/// Published `createOnlyProperties` of common Cloud Control types (top-level names).
const REGISTRY_CREATE_ONLY: &[(&str, &[&str])] = &[
    ("AWS::SQS::Queue", &["FifoQueue", "QueueName"]),
    ("AWS::SNS::Topic", &["FifoTopic", "TopicName"]),
    ("AWS::Logs::LogGroup", &["LogGroupName"]),
    (
        "AWS::DynamoDB::Table",
        &["TableName", "ImportSourceSpecification"],
    ),
    ("AWS::S3::Bucket", &["BucketName", "ObjectLockEnabled"]),
    ("AWS::IAM::Role", &["Path", "RoleName"]),
    ("AWS::IAM::ManagedPolicy", &["ManagedPolicyName", "Path"]),
    ("AWS::IAM::User", &["UserName"]),
    ("AWS::Lambda::Function", &["FunctionName"]),
    (
        "AWS::EC2::VPC",
        &["CidrBlock", "Ipv4IpamPoolId", "Ipv4NetmaskLength"],
    ),
    (
        "AWS::EC2::Subnet",
        &[
            "AvailabilityZone",
            "AvailabilityZoneId",
            "CidrBlock",
            "VpcId",
        ],
    ),
    (
        "AWS::EC2::SecurityGroup",
        &["GroupDescription", "GroupName", "VpcId"],
    ),
    ("AWS::KMS::Alias", &["AliasName"]),
    ("AWS::SSM::Parameter", &["Name"]),
];

/// The create-only sets cdkd knows: plugins first, then the registry table.
pub struct KnownCreateOnly<'a> {
    registry: &'a Registry,
}

impl<'a> KnownCreateOnly<'a> {
    /// Backed by the loaded plugins.
    pub fn new(registry: &'a Registry) -> KnownCreateOnly<'a> {
        KnownCreateOnly { registry }
    }
}

impl CreateOnlyProperties for KnownCreateOnly<'_> {
    fn create_only(&self, resource_type: &str) -> Vec<String> {
        if let Some(schema) = self.registry.schema(resource_type) {
            return schema.create_only_properties.clone();
        }
        REGISTRY_CREATE_ONLY
            .iter()
            .find(|(name, _)| *name == resource_type)
            .map(|(_, properties)| properties.iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    }
}
