//! Which properties of a type force a replacement: the plugin's declaration for types a
//! plugin handles; for Cloud Control types, the CloudFormation registry's `createOnlyProperties`
//! (read through `DescribeType`, see [`super::type_schemas`]).
//!
//! When the registry cannot be read (no `cloudformation:DescribeType` permission, a type it
//! does not know), the common types below carry the create-only sets copied from their
//! published schemas, and any other type falls back to in-place updates.

use std::collections::BTreeMap;

use crate::analyzer::plan::CreateOnlyProperties;
use crate::provisioning::registry::Registry;
use crate::provisioning::type_schemas::RegistrySchema;
use crate::state::schema::StackState;

/// Published `createOnlyProperties` of common Cloud Control types (top-level names), for when
/// the registry cannot be read.
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

/// The create-only sets cdkd knows: plugins first, then the registry's schemas, then the
/// built-in table.
pub struct KnownCreateOnly<'a> {
    registry: &'a Registry,
    schemas: BTreeMap<String, RegistrySchema>,
}

impl<'a> KnownCreateOnly<'a> {
    /// Backed by the loaded plugins and the registry schemas read for this run.
    pub fn new(
        registry: &'a Registry,
        schemas: BTreeMap<String, RegistrySchema>,
    ) -> KnownCreateOnly<'a> {
        KnownCreateOnly { registry, schemas }
    }

    /// Properties of a Cloud Control type that force a replacement only when the type's
    /// handler refuses them in place (`conditionalCreateOnlyProperties`).
    pub fn conditional(&self, resource_type: &str) -> &[String] {
        self.schemas
            .get(resource_type)
            .map(|schema| schema.conditional_create_only.as_slice())
            .unwrap_or_default()
    }
}

/// The recorded types whose create-only properties the plan may need: those a plugin does not
/// declare (a first deploy needs none; nothing recorded can be replaced yet).
pub fn registry_types(registry: &Registry, recorded: Option<&StackState>) -> Vec<String> {
    let mut types: Vec<String> = recorded
        .into_iter()
        .flat_map(|state| state.resources.values())
        .map(|record| record.resource_type.clone())
        .filter(|t| t.starts_with("AWS::") && t != "AWS::CloudFormation::Stack")
        .filter(|t| {
            registry
                .schema(t)
                .is_none_or(|schema| schema.handled_properties.is_empty())
        })
        .collect();
    types.sort();
    types.dedup();
    types
}

impl CreateOnlyProperties for KnownCreateOnly<'_> {
    fn create_only(&self, resource_type: &str) -> Vec<String> {
        // A type a plugin only snapshots (no handled property) is Cloud Control's.
        if let Some(schema) = self
            .registry
            .schema(resource_type)
            .filter(|schema| !schema.handled_properties.is_empty())
        {
            return schema.create_only_properties.clone();
        }
        if let Some(schema) = self.schemas.get(resource_type) {
            return schema.create_only.clone();
        }
        REGISTRY_CREATE_ONLY
            .iter()
            .find(|(name, _)| *name == resource_type)
            .map(|(_, properties)| properties.iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    }
}
