//! `AWS::EC2::Instance`: physical id (and `Ref`) is the instance id.
//!
//! The create is one `RunInstances` (one instance) carrying the create token twice: as EC2's
//! own `ClientToken` (a retried or resumed create answers the instance the first call made)
//! and as the `cdkd:create-token` tag (the next run finds it after a crash). A fresh instance
//! profile is refused by `RunInstances` for about 8 s while IAM propagates it: the call is
//! tried again for up to 2 minutes, and an instance that came up without the profile it asked
//! for is terminated, never recorded. The create waits for `running` (what CloudFormation
//! waits for, and when `PublicIp` and `PublicDnsName` exist) unless the deploy runs with
//! `--no-wait`; the delete waits for `terminated`, so the subnet and security groups deleted
//! next are free of it.

use std::time::Duration;

use aws_sdk_ec2::operation::run_instances::builders::RunInstancesFluentBuilder;
use aws_sdk_ec2::types::{
    AttributeValue, BlockDeviceMapping, CreditSpecificationRequest, EbsBlockDevice, Filter,
    HttpTokensState, IamInstanceProfileSpecification, InstanceIpv6Address,
    InstanceMetadataEndpointState, InstanceMetadataOptionsRequest, InstanceMetadataProtocolState,
    InstanceMetadataTagsState, InstanceNetworkInterfaceSpecification, InstanceStateName,
    InstanceType, LaunchTemplateSpecification, Placement, PrivateIpAddressSpecification,
    ResourceType, RunInstancesMonitoringEnabled, ShutdownBehavior, TagSpecification, Tenancy,
    VolumeType,
};
use cdkd_aws_common::{
    aws_error, flag, int, poll_paced, put, strings, text, while_iam_propagates, Pacing, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult, Wait,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::created::FindsCreated;
use crate::{boolean, client, client_token, create_tags, retag, some_str, tags, tags_value, what};

const INSTANCE: &str = "AWS::EC2::Instance";

/// `AWS::EC2::Instance`.
#[derive(Default)]
pub struct Instance;

/// The template properties the plugin applies; any other sends the instance to Cloud Control.
const HANDLES: &[&str] = &[
    "ImageId",
    "InstanceType",
    "KeyName",
    "SubnetId",
    "SecurityGroupIds",
    "SecurityGroups",
    "IamInstanceProfile",
    "UserData",
    "BlockDeviceMappings",
    "AvailabilityZone",
    "PrivateIpAddress",
    "Monitoring",
    "EbsOptimized",
    "DisableApiTermination",
    "InstanceInitiatedShutdownBehavior",
    "MetadataOptions",
    "CreditSpecification",
    "LaunchTemplate",
    "NetworkInterfaces",
    "PropagateTagsToVolumeOnCreation",
    "Tenancy",
    "SourceDestCheck",
    "Tags",
];

/// A change to one of these replaces the instance: the registry schema's create-only
/// properties, and the two whose change CloudFormation also answers with a replacement
/// (`BlockDeviceMappings`: any change but `DeleteOnTermination`, which this plugin replaces
/// too; `PropagateTagsToVolumeOnCreation`: applied at launch only).
const CREATE_ONLY: &[&str] = &[
    "AvailabilityZone",
    "ImageId",
    "KeyName",
    "LaunchTemplate",
    "NetworkInterfaces",
    "PrivateIpAddress",
    "SecurityGroups",
    "SubnetId",
    "BlockDeviceMappings",
    "PropagateTagsToVolumeOnCreation",
];

/// Changes CloudFormation makes by stopping the instance, changing it and starting it again
/// ("some interruption"), and the one this plugin does not change in place: refused by the
/// update, naming the property, rather than stopping a running instance unasked.
const NOT_IN_PLACE: &[(&str, &str)] = &[
    ("InstanceType", "needs the instance stopped"),
    ("UserData", "needs the instance stopped"),
    ("EbsOptimized", "needs the instance stopped"),
    ("Tenancy", "needs the instance stopped"),
    (
        "IamInstanceProfile",
        "is not changed in place by cdkd's ec2 plugin (AssociateIamInstanceProfile is not mapped)",
    ),
];

/// How long a create waits for `running` and a delete for `terminated` when the host sets no
/// resource timeout (AWS: 35-60 s for either).
const DEFAULT_PATIENCE: Duration = Duration::from_secs(600);

/// Pauses of a state wait: aws-common's default, a tenth of the time waited from 50 ms up to
/// 5 s (an instance takes ~40 s, so `running` is seen within about 4 s, at some 35 describes).
const PACING: Pacing = Pacing::DEFAULT;

/// Refuses keys of a template object the plugin does not apply, naming the property, so
/// nothing is dropped without a word.
fn only_keys(
    value: &Value,
    known: &[&str],
    what: &str,
    property: &str,
) -> Result<(), ProviderError> {
    if let Some(key) = value
        .as_object()
        .and_then(|map| map.keys().find(|k| !known.contains(&k.as_str())))
    {
        return Err(ProviderError::validation(format!(
            "{what}: {property}.{key} is not supported by cdkd's ec2 plugin (supported: {}); deploy this instance through Cloud Control by disabling the ec2 plugin for {INSTANCE}",
            known.join(", ")
        )));
    }
    Ok(())
}

/// The objects of a template list property, each checked against `known`.
fn objects<'a>(
    value: Option<&'a Value>,
    known: &[&str],
    what: &str,
    property: &str,
) -> Result<Option<Vec<&'a Map<String, Value>>>, ProviderError> {
    let Some(value) = value else { return Ok(None) };
    let items = value
        .as_array()
        .ok_or_else(|| ProviderError::validation(format!("{what}: {property} must be a list")))?;
    items
        .iter()
        .map(|item| {
            only_keys(item, known, what, property)?;
            item.as_object().ok_or_else(|| {
                ProviderError::validation(format!("{what}: {property} holds a non-object"))
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// One object property, checked against `known`.
fn object<'a>(
    value: Option<&'a Value>,
    known: &[&str],
    what: &str,
    property: &str,
) -> Result<Option<&'a Map<String, Value>>, ProviderError> {
    let Some(value) = value else { return Ok(None) };
    only_keys(value, known, what, property)?;
    value
        .as_object()
        .map(Some)
        .ok_or_else(|| ProviderError::validation(format!("{what}: {property} must be an object")))
}

/// `BlockDeviceMappings` as EC2's.
fn block_devices(
    what: &str,
    value: Option<&Value>,
) -> Result<Option<Vec<BlockDeviceMapping>>, ProviderError> {
    const KEYS: &[&str] = &["DeviceName", "Ebs", "NoDevice", "VirtualName"];
    const EBS: &[&str] = &[
        "DeleteOnTermination",
        "Encrypted",
        "Iops",
        "KmsKeyId",
        "SnapshotId",
        "VolumeSize",
        "VolumeType",
    ];
    let Some(items) = objects(value, KEYS, what, "BlockDeviceMappings")? else {
        return Ok(None);
    };
    items
        .into_iter()
        .map(|m| {
            let ebs = object(m.get("Ebs"), EBS, what, "BlockDeviceMappings.Ebs")?.map(|e| {
                EbsBlockDevice::builder()
                    .set_delete_on_termination(flag(e.get("DeleteOnTermination")))
                    .set_encrypted(flag(e.get("Encrypted")))
                    .set_iops(int(e.get("Iops")))
                    .set_kms_key_id(text(e.get("KmsKeyId")))
                    .set_snapshot_id(text(e.get("SnapshotId")))
                    .set_volume_size(int(e.get("VolumeSize")))
                    .set_volume_type(
                        text(e.get("VolumeType")).map(|t| VolumeType::from(t.as_str())),
                    )
                    .build()
            });
            Ok(BlockDeviceMapping::builder()
                .set_device_name(text(m.get("DeviceName")))
                .set_ebs(ebs)
                // `NoDevice: {}` suppresses the AMI's device: EC2 takes an empty string.
                .set_no_device(m.get("NoDevice").map(|_| String::new()))
                .set_virtual_name(text(m.get("VirtualName")))
                .build())
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `NetworkInterfaces` as EC2's.
fn network_interfaces(
    what: &str,
    value: Option<&Value>,
) -> Result<Option<Vec<InstanceNetworkInterfaceSpecification>>, ProviderError> {
    const KEYS: &[&str] = &[
        "AssociateCarrierIpAddress",
        "AssociatePublicIpAddress",
        "DeleteOnTermination",
        "Description",
        "DeviceIndex",
        "GroupSet",
        "Ipv6AddressCount",
        "Ipv6Addresses",
        "NetworkInterfaceId",
        "PrivateIpAddress",
        "PrivateIpAddresses",
        "SecondaryPrivateIpAddressCount",
        "SubnetId",
    ];
    let Some(items) = objects(value, KEYS, what, "NetworkInterfaces")? else {
        return Ok(None);
    };
    items
        .into_iter()
        .map(|n| {
            let ipv6 = objects(
                n.get("Ipv6Addresses"),
                &["Ipv6Address"],
                what,
                "NetworkInterfaces.Ipv6Addresses",
            )?
            .map(|all| {
                all.into_iter()
                    .map(|a| {
                        InstanceIpv6Address::builder()
                            .set_ipv6_address(text(a.get("Ipv6Address")))
                            .build()
                    })
                    .collect()
            });
            let private = objects(
                n.get("PrivateIpAddresses"),
                &["Primary", "PrivateIpAddress"],
                what,
                "NetworkInterfaces.PrivateIpAddresses",
            )?
            .map(|all| {
                all.into_iter()
                    .map(|a| {
                        PrivateIpAddressSpecification::builder()
                            .set_primary(flag(a.get("Primary")))
                            .set_private_ip_address(text(a.get("PrivateIpAddress")))
                            .build()
                    })
                    .collect()
            });
            Ok(InstanceNetworkInterfaceSpecification::builder()
                .set_associate_carrier_ip_address(flag(n.get("AssociateCarrierIpAddress")))
                .set_associate_public_ip_address(flag(n.get("AssociatePublicIpAddress")))
                .set_delete_on_termination(flag(n.get("DeleteOnTermination")))
                .set_description(text(n.get("Description")))
                .set_device_index(int(n.get("DeviceIndex")))
                .set_groups(strings(n.get("GroupSet")))
                .set_ipv6_address_count(int(n.get("Ipv6AddressCount")))
                .set_ipv6_addresses(ipv6)
                .set_network_interface_id(text(n.get("NetworkInterfaceId")))
                .set_private_ip_address(text(n.get("PrivateIpAddress")))
                .set_private_ip_addresses(private)
                .set_secondary_private_ip_address_count(
                    int(n.get("SecondaryPrivateIpAddressCount")),
                )
                .set_subnet_id(text(n.get("SubnetId")))
                .build())
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The `MetadataOptions` keys.
const METADATA_KEYS: &[&str] = &[
    "HttpEndpoint",
    "HttpProtocolIpv6",
    "HttpPutResponseHopLimit",
    "HttpTokens",
    "InstanceMetadataTags",
];

/// `MetadataOptions` as `RunInstances` takes them.
fn metadata_options(
    what: &str,
    value: Option<&Value>,
) -> Result<Option<InstanceMetadataOptionsRequest>, ProviderError> {
    Ok(
        object(value, METADATA_KEYS, what, "MetadataOptions")?.map(|m| {
            InstanceMetadataOptionsRequest::builder()
                .set_http_endpoint(
                    text(m.get("HttpEndpoint"))
                        .map(|v| InstanceMetadataEndpointState::from(v.as_str())),
                )
                .set_http_protocol_ipv6(
                    text(m.get("HttpProtocolIpv6"))
                        .map(|v| InstanceMetadataProtocolState::from(v.as_str())),
                )
                .set_http_put_response_hop_limit(int(m.get("HttpPutResponseHopLimit")))
                .set_http_tokens(
                    text(m.get("HttpTokens")).map(|v| HttpTokensState::from(v.as_str())),
                )
                .set_instance_metadata_tags(
                    text(m.get("InstanceMetadataTags"))
                        .map(|v| InstanceMetadataTagsState::from(v.as_str())),
                )
                .build()
        }),
    )
}

/// `CreditSpecification.CPUCredits`.
fn cpu_credits(what: &str, value: Option<&Value>) -> Result<Option<String>, ProviderError> {
    Ok(object(value, &["CPUCredits"], what, "CreditSpecification")?
        .and_then(|c| text(c.get("CPUCredits"))))
}

/// `LaunchTemplate` as EC2's.
fn launch_template(
    what: &str,
    value: Option<&Value>,
) -> Result<Option<LaunchTemplateSpecification>, ProviderError> {
    const KEYS: &[&str] = &["LaunchTemplateId", "LaunchTemplateName", "Version"];
    Ok(object(value, KEYS, what, "LaunchTemplate")?.map(|t| {
        LaunchTemplateSpecification::builder()
            .set_launch_template_id(text(t.get("LaunchTemplateId")))
            .set_launch_template_name(text(t.get("LaunchTemplateName")))
            .set_version(text(t.get("Version")))
            .build()
    }))
}

/// `IamInstanceProfile` (a name, which CDK's `Ref` gives, or an ARN) as EC2's.
fn profile_spec(profile: &str) -> IamInstanceProfileSpecification {
    let spec = IamInstanceProfileSpecification::builder();
    if profile.starts_with("arn:") {
        spec.arn(profile).build()
    } else {
        spec.name(profile).build()
    }
}

/// `AvailabilityZone` and `Tenancy` as EC2's placement.
fn placement(props: &Map<String, Value>) -> Option<Placement> {
    let zone = text(props.get("AvailabilityZone"));
    let tenancy = text(props.get("Tenancy"));
    (zone.is_some() || tenancy.is_some()).then(|| {
        Placement::builder()
            .set_availability_zone(zone)
            .set_tenancy(tenancy.map(|t| Tenancy::from(t.as_str())))
            .build()
    })
}

/// The instance's tags (the template's and the create token) and, with
/// `PropagateTagsToVolumeOnCreation`, the template's tags on its volumes too.
fn tag_specifications(props: &Map<String, Value>, token: &str) -> Option<Vec<TagSpecification>> {
    let mut specs = Vec::new();
    let instance = create_tags(props, token);
    if !instance.is_empty() {
        specs.push(
            TagSpecification::builder()
                .resource_type(ResourceType::Instance)
                .set_tags(Some(instance))
                .build(),
        );
    }
    let volume = tags(props);
    if flag(props.get("PropagateTagsToVolumeOnCreation")) == Some(true) && !volume.is_empty() {
        specs.push(
            TagSpecification::builder()
                .resource_type(ResourceType::Volume)
                .set_tags(Some(volume))
                .build(),
        );
    }
    (!specs.is_empty()).then_some(specs)
}

/// The `RunInstances` call of a create: one instance, the template's properties, the create
/// token as `ClientToken` and tag. Refuses a nested key it does not map, naming it.
fn launch(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    props: &Map<String, Value>,
    token: &str,
) -> Result<RunInstancesFluentBuilder, ProviderError> {
    let credits = cpu_credits(what, props.get("CreditSpecification"))?;
    Ok(ec2
        .run_instances()
        .min_count(1)
        .max_count(1)
        .set_image_id(text(props.get("ImageId")))
        .set_instance_type(text(props.get("InstanceType")).map(|t| InstanceType::from(t.as_str())))
        .set_key_name(text(props.get("KeyName")))
        .set_subnet_id(text(props.get("SubnetId")))
        .set_security_group_ids(strings(props.get("SecurityGroupIds")))
        .set_security_groups(strings(props.get("SecurityGroups")))
        .set_iam_instance_profile(text(props.get("IamInstanceProfile")).map(|p| profile_spec(&p)))
        // Base64 already: CDK writes `Fn::Base64`, which the host resolves.
        .set_user_data(text(props.get("UserData")))
        .set_block_device_mappings(block_devices(what, props.get("BlockDeviceMappings"))?)
        .set_placement(placement(props))
        .set_private_ip_address(text(props.get("PrivateIpAddress")))
        .set_monitoring(
            flag(props.get("Monitoring"))
                .map(|m| RunInstancesMonitoringEnabled::builder().enabled(m).build()),
        )
        .set_ebs_optimized(flag(props.get("EbsOptimized")))
        .set_disable_api_termination(flag(props.get("DisableApiTermination")))
        .set_instance_initiated_shutdown_behavior(
            text(props.get("InstanceInitiatedShutdownBehavior"))
                .map(|b| ShutdownBehavior::from(b.as_str())),
        )
        .set_metadata_options(metadata_options(what, props.get("MetadataOptions"))?)
        .set_credit_specification(
            credits.map(|c| CreditSpecificationRequest::builder().cpu_credits(c).build()),
        )
        .set_launch_template(launch_template(what, props.get("LaunchTemplate"))?)
        .set_network_interfaces(network_interfaces(what, props.get("NetworkInterfaces"))?)
        .set_tag_specifications(tag_specifications(props, token))
        // EC2's own idempotency: a retried create answers the instance the first one made.
        .set_client_token(client_token(token)))
}

/// Whether `RunInstances` refused an instance profile IAM has not propagated to EC2 yet
/// ("Value (name) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance
/// Profile name", or `.arn` / "ARN").
fn profile_propagating(err: &ProviderError) -> bool {
    err.aws_code() == Some("InvalidParameterValue")
        && (err.message.contains("iamInstanceProfile")
            || err.message.contains("Invalid IAM Instance Profile"))
}

/// The instance EC2 describes under `id` (terminated ones too: a wait reads the state).
async fn describe(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_ec2::types::Instance>, ProviderError> {
    let answer =
        cdkd_aws_common::optional(what, ec2.describe_instances().instance_ids(id).send().await)?;
    Ok(answer.and_then(|a| {
        a.reservations()
            .iter()
            .flat_map(|r| r.instances())
            .find(|i| i.instance_id() == Some(id))
            .cloned()
    }))
}

/// The state name of a described instance.
fn state_of(instance: &aws_sdk_ec2::types::Instance) -> Option<&InstanceStateName> {
    instance.state().and_then(|s| s.name())
}

/// Whether an instance is on its way out or gone: no longer the stack's resource.
fn ending(instance: &aws_sdk_ec2::types::Instance) -> bool {
    matches!(
        state_of(instance),
        Some(InstanceStateName::ShuttingDown | InstanceStateName::Terminated)
    )
}

/// The attributes CloudFormation's `Fn::GetAtt` answers for an instance (`PublicIp` and
/// `PublicDnsName` only once it has them).
fn attributes_of(instance: &aws_sdk_ec2::types::Instance) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(
        &mut attributes,
        "InstanceId",
        some_str(instance.instance_id()),
    );
    put(
        &mut attributes,
        "AvailabilityZone",
        some_str(instance.placement().and_then(|p| p.availability_zone())),
    );
    put(
        &mut attributes,
        "PrivateDnsName",
        some_str(instance.private_dns_name()),
    );
    put(
        &mut attributes,
        "PrivateIp",
        some_str(instance.private_ip_address()),
    );
    put(
        &mut attributes,
        "PublicDnsName",
        some_str(instance.public_dns_name().filter(|n| !n.is_empty())),
    );
    put(
        &mut attributes,
        "PublicIp",
        some_str(instance.public_ip_address()),
    );
    put(&mut attributes, "VpcId", some_str(instance.vpc_id()));
    attributes
}

/// Polls until the instance is `goal` (`Terminated`: also when no longer described); an
/// instance that ends while it should come up is an error with EC2's reason.
async fn wait_for(
    ctx: &PluginContext,
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    goal: InstanceStateName,
) -> Result<Option<aws_sdk_ec2::types::Instance>, ProviderError> {
    let patience = ctx.resource_timeout().unwrap_or(DEFAULT_PATIENCE);
    let reached = poll_paced(PACING, patience, || async {
        let instance = describe(ec2, what, id).await?;
        let state = instance.as_ref().and_then(state_of);
        match (state, &instance) {
            (None, _) if goal == InstanceStateName::Terminated => Ok(Some(None)),
            (Some(state), _) if *state == goal => Ok(Some(instance.clone())),
            (Some(InstanceStateName::ShuttingDown | InstanceStateName::Terminated), Some(i))
                if goal == InstanceStateName::Running =>
            {
                Err(ProviderError::other(format!(
                    "{what}: instance {id} is {} instead of running: {}",
                    state_of(i).map(|s| s.as_str()).unwrap_or("ending"),
                    i.state_reason()
                        .and_then(|r| r.message())
                        .or(i.state_transition_reason())
                        .unwrap_or("EC2 gave no reason")
                )))
            }
            _ => Ok(None),
        }
    })
    .await?;
    reached.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: instance {id} did not become {} within {patience:?}",
                goal.as_str()
            ),
        )
    })
}

/// Terminates an instance the create cannot hand over (it came up without its profile), and
/// says in `err` whether that worked.
async fn undo(ec2: &aws_sdk_ec2::Client, id: &str, mut err: ProviderError) -> ProviderError {
    let undone = ec2.terminate_instances().instance_ids(id).send().await;
    err.message = match undone {
        Ok(_) => format!("{} (instance {id} terminated)", err.message),
        Err(e) => format!(
            "{} (and terminating instance {id} failed: {}; terminate it by hand)",
            err.message,
            cdkd_aws_common::error_line(&e)
        ),
    }
    .into();
    err
}

/// The profile name of an instance profile ARN (`arn:…:instance-profile/path/name`).
fn profile_name(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

/// Whether the instance carries the profile the template asked for (a name or an ARN).
fn has_profile(instance: &aws_sdk_ec2::types::Instance, asked: &str) -> bool {
    instance
        .iam_instance_profile()
        .and_then(|p| p.arn())
        .is_some_and(|arn| arn == asked || profile_name(arn) == profile_name(asked))
}

#[async_trait]
impl Readable for Instance {
    /// An instance shutting down or terminated no longer exists.
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let ec2 = client(ctx).await?;
        let instance = describe(&ec2, what, &request.physical_id)
            .await?
            .filter(|i| !ending(i));
        Ok(instance.map(|i| properties_of(&i)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ec2 = client(ctx).await?;
        Ok(describe(&ec2, what, physical_id)
            .await?
            .map(|i| attributes_of(&i))
            .unwrap_or_else(|| crate::id_attribute("InstanceId", physical_id)))
    }
}

/// A described instance's properties in template shape (what DescribeInstances answers).
fn properties_of(i: &aws_sdk_ec2::types::Instance) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "ImageId", some_str(i.image_id()));
    put(
        &mut props,
        "InstanceType",
        some_str(i.instance_type().map(|t| t.as_str())),
    );
    put(&mut props, "KeyName", some_str(i.key_name()));
    put(&mut props, "SubnetId", some_str(i.subnet_id()));
    let groups: Vec<Value> = i
        .security_groups()
        .iter()
        .filter_map(|g| g.group_id().map(|id| json!(id)))
        .collect();
    if !groups.is_empty() {
        props.insert("SecurityGroupIds".into(), Value::Array(groups));
    }
    put(
        &mut props,
        "IamInstanceProfile",
        some_str(
            i.iam_instance_profile()
                .and_then(|p| p.arn())
                .map(profile_name),
        ),
    );
    put(
        &mut props,
        "AvailabilityZone",
        some_str(i.placement().and_then(|p| p.availability_zone())),
    );
    put(
        &mut props,
        "PrivateIpAddress",
        some_str(i.private_ip_address()),
    );
    if let Some(state) = i.monitoring().and_then(|m| m.state()) {
        props.insert("Monitoring".into(), json!(state.as_str() == "enabled"));
    }
    put(
        &mut props,
        "EbsOptimized",
        i.ebs_optimized().map(Value::Bool),
    );
    put(
        &mut props,
        "SourceDestCheck",
        i.source_dest_check().map(Value::Bool),
    );
    put(&mut props, "Tags", tags_value(i.tags()));
    props
}

#[async_trait]
impl FindsCreated for Instance {
    const TYPE_NAME: &'static str = INSTANCE;

    async fn tagged(
        &self,
        ec2: &aws_sdk_ec2::Client,
        what: &str,
        by_token: Filter,
    ) -> Result<Vec<String>, ProviderError> {
        let mut ids = Vec::new();
        let mut pages = ec2
            .describe_instances()
            .filters(by_token)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| aws_error(&format!("{what}: finding its instance"), e))?;
            ids.extend(
                page.reservations()
                    .iter()
                    .flat_map(|r| r.instances())
                    // A terminated instance stays described for an hour; it is no create's
                    // result any more.
                    .filter(|i| !ending(i))
                    .filter_map(|i| i.instance_id().map(String::from)),
            );
        }
        Ok(ids)
    }
}

/// The in-place changes an update makes with `ModifyInstanceAttribute`, one attribute a call
/// (EC2 takes one per call).
async fn modify_attributes(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let changed = |key: &str| before.get(key) != after.get(key);
    let modify = || ec2.modify_instance_attribute().instance_id(id);
    let mut calls = Vec::new();
    if changed("SourceDestCheck") {
        let on = flag(after.get("SourceDestCheck")).unwrap_or(true);
        calls.push(("SourceDestCheck", modify().source_dest_check(boolean(on))));
    }
    if changed("DisableApiTermination") {
        let on = flag(after.get("DisableApiTermination")).unwrap_or(false);
        calls.push((
            "DisableApiTermination",
            modify().disable_api_termination(boolean(on)),
        ));
    }
    if changed("InstanceInitiatedShutdownBehavior") {
        let behavior =
            text(after.get("InstanceInitiatedShutdownBehavior")).unwrap_or("stop".into());
        calls.push((
            "InstanceInitiatedShutdownBehavior",
            modify().instance_initiated_shutdown_behavior(
                AttributeValue::builder().value(behavior).build(),
            ),
        ));
    }
    if changed("SecurityGroupIds") {
        calls.push((
            "SecurityGroupIds",
            modify().set_groups(strings(after.get("SecurityGroupIds"))),
        ));
    }
    for (property, call) in calls {
        call.send()
            .await
            .map_err(|e| aws_error(&format!("{what}: changing {property}"), e))?;
    }
    Ok(())
}

/// The in-place changes with calls of their own: detailed monitoring, metadata options, CPU
/// credits.
async fn modify_settings(
    ec2: &aws_sdk_ec2::Client,
    what: &str,
    id: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let changed = |key: &str| before.get(key) != after.get(key);
    if changed("Monitoring") {
        let changed = if flag(after.get("Monitoring")) == Some(true) {
            ec2.monitor_instances()
                .instance_ids(id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: changing Monitoring"), e))
        } else {
            ec2.unmonitor_instances()
                .instance_ids(id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: changing Monitoring"), e))
        };
        changed?;
    }
    if changed("MetadataOptions") {
        let options = metadata_options(what, after.get("MetadataOptions"))?
            .unwrap_or_else(|| InstanceMetadataOptionsRequest::builder().build());
        ec2.modify_instance_metadata_options()
            .instance_id(id)
            .set_http_endpoint(options.http_endpoint().cloned())
            .set_http_protocol_ipv6(options.http_protocol_ipv6().cloned())
            .set_http_put_response_hop_limit(options.http_put_response_hop_limit())
            .set_http_tokens(options.http_tokens().cloned())
            .set_instance_metadata_tags(options.instance_metadata_tags().cloned())
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: changing MetadataOptions"), e))?;
    }
    if changed("CreditSpecification") {
        if let Some(credits) = cpu_credits(what, after.get("CreditSpecification"))? {
            ec2.modify_instance_credit_specification()
                .instance_credit_specifications(
                    aws_sdk_ec2::types::InstanceCreditSpecificationRequest::builder()
                        .instance_id(id)
                        .cpu_credits(credits)
                        .build(),
                )
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: changing CreditSpecification"), e))?;
        }
    }
    Ok(())
}

/// Refuses an update that changes a property this plugin cannot change in place, naming it
/// and why, before anything is changed.
fn refuse_stopping_changes(
    what: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let refused: Vec<String> = NOT_IN_PLACE
        .iter()
        .filter(|(key, _)| before.get(*key) != after.get(*key))
        .map(|(key, why)| format!("{key} {why}"))
        .collect();
    if refused.is_empty() {
        return Ok(());
    }
    Err(ProviderError::validation(format!(
        "{what}: {}; CloudFormation stops and restarts the instance for such a change, cdkd's ec2 plugin does not stop a running instance: stop it and change it yourself, or replace it (a new logical id)",
        refused.join("; ")
    )))
}

#[async_trait]
impl ResourceProvider for Instance {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(INSTANCE)
            .handles(HANDLES)
            .create_only(CREATE_ONLY)
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        crate::created::invoke(self, ctx, name, request).await
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = what(INSTANCE, &request.logical_id);
        let props = &request.properties;
        let ec2 = client(ctx).await?;
        let run = launch(&ec2, &what, props, &request.client_token)?;
        let profile = text(props.get("IamInstanceProfile"));
        let call = || async {
            run.clone()
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: RunInstances"), e))
        };
        let answer = match &profile {
            Some(p) => {
                while_iam_propagates(
                    &format!("the instance profile {p}"),
                    profile_propagating,
                    call,
                )
                .await?
            }
            None => call().await?,
        };
        let launched = answer.instances().first().cloned().ok_or_else(|| {
            ProviderError::other(format!("{what}: RunInstances answered no instance"))
        })?;
        let id = launched
            .instance_id()
            .ok_or_else(|| {
                ProviderError::other(format!("{what}: RunInstances answered no instance id"))
            })?
            .to_string();
        let mut instance = launched;
        // EC2 either refuses a profile it does not see or launches with it; an instance that
        // came up without it anyway is never handed over as if it had it.
        if let Some(p) = &profile {
            if !has_profile(&instance, p) {
                instance = describe(&ec2, &what, &id).await?.unwrap_or(instance);
            }
            if !has_profile(&instance, p) {
                let err = ProviderError::other(format!(
                    "{what}: instance {id} came up without its instance profile {p}"
                ));
                return Err(undo(&ec2, &id, err).await);
            }
        }
        if flag(props.get("SourceDestCheck")) == Some(false) {
            ec2.modify_instance_attribute()
                .instance_id(&id)
                .source_dest_check(boolean(false))
                .send()
                .await
                .map_err(|e| {
                    aws_error(&format!("{what}: turning SourceDestCheck off on {id}"), e)
                })?;
        }
        // CloudFormation answers at `running`, when the public address exists; `--no-wait`
        // answers at `pending` (the id and private address are there already).
        if ctx.wait() != Wait::None {
            if let Some(running) =
                wait_for(ctx, &ec2, &what, &id, InstanceStateName::Running).await?
            {
                instance = running;
            }
        }
        Ok(CreateResult {
            attributes: attributes_of(&instance),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = what(INSTANCE, &request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        refuse_stopping_changes(&what, before, after)?;
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        modify_attributes(&ec2, &what, id, before, after).await?;
        modify_settings(&ec2, &what, id, before, after).await?;
        retag(&ec2, &what, id, before, after).await?;
        let attributes = match describe(&ec2, &what, id).await? {
            Some(instance) => attributes_of(&instance),
            None => crate::id_attribute("InstanceId", id),
        };
        Ok(crate::in_place(request, attributes))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = what(INSTANCE, &request.logical_id);
        let ec2 = client(ctx).await?;
        let id = &request.physical_id;
        let terminated = ec2
            .terminate_instances()
            .instance_ids(id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_error(&format!("{what}: terminating {id}"), e));
        match terminated {
            Err(err) if err.kind == ErrorKind::NOT_FOUND => return Ok(DeleteResult::Deleted),
            Err(err) => return Err(err),
            Ok(()) => {}
        }
        // Its network interface holds the subnet and security groups deleted next until the
        // instance is terminated.
        wait_for(ctx, &ec2, &what, id, InstanceStateName::Terminated).await?;
        Ok(DeleteResult::Deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ec2() -> aws_sdk_ec2::Client {
        aws_sdk_ec2::Client::from_conf(
            aws_sdk_ec2::Config::builder()
                .behavior_version(aws_sdk_ec2::config::BehaviorVersion::latest())
                .region(aws_sdk_ec2::config::Region::new("us-east-1"))
                .build(),
        )
    }

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    /// The reference stack's instance, as the host resolves it.
    fn cdk_instance() -> Map<String, Value> {
        props(json!({
            "AvailabilityZone": "us-east-1a",
            "IamInstanceProfile": "RefEc2Stack-Instance1InstanceProfile-ABC",
            "ImageId": "ami-03cf127a",
            "InstanceType": "t3.micro",
            "SecurityGroupIds": ["sg-1"],
            "SubnetId": "subnet-1",
            "Tags": [{"Key": "Name", "Value": "RefEc2Stack/Instance1"}],
            "UserData": "IyEvYmluL2Jhc2g=",
        }))
    }

    #[test]
    fn a_cdk_instance_launches_one_with_its_profile_token_and_tags() {
        let run = launch(&ec2(), "I", &cdk_instance(), "tok-1").unwrap();
        let input = run.as_input();
        assert_eq!(
            (input.get_min_count(), input.get_max_count()),
            (&Some(1), &Some(1))
        );
        assert_eq!(input.get_image_id().as_deref(), Some("ami-03cf127a"));
        assert_eq!(input.get_instance_type(), &Some(InstanceType::T3Micro));
        assert_eq!(input.get_subnet_id().as_deref(), Some("subnet-1"));
        assert_eq!(
            input.get_security_group_ids(),
            &Some(vec!["sg-1".to_string()])
        );
        assert_eq!(input.get_user_data().as_deref(), Some("IyEvYmluL2Jhc2g="));
        let profile = input.get_iam_instance_profile().as_ref().unwrap();
        assert_eq!(
            profile.name(),
            Some("RefEc2Stack-Instance1InstanceProfile-ABC")
        );
        assert_eq!(profile.arn(), None);
        let placement = input.get_placement().as_ref().unwrap();
        assert_eq!(placement.availability_zone(), Some("us-east-1a"));
        assert_eq!(input.get_client_token().as_deref(), Some("tok-1"));
        let specs = input.get_tag_specifications().as_ref().unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].resource_type(), Some(&ResourceType::Instance));
        let keys: Vec<_> = specs[0].tags().iter().filter_map(|t| t.key()).collect();
        assert_eq!(keys, ["Name", "cdkd:create-token"]);
    }

    #[test]
    fn nested_properties_are_mapped() {
        let mut p = cdk_instance();
        p.insert(
            "IamInstanceProfile".into(),
            json!("arn:aws:iam::1:instance-profile/p/q"),
        );
        p.insert("BlockDeviceMappings".into(), json!([
            {"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": "20", "VolumeType": "gp3", "Encrypted": true, "DeleteOnTermination": "true"}},
            {"DeviceName": "/dev/sdb", "NoDevice": {}}
        ]));
        p.insert(
            "MetadataOptions".into(),
            json!({"HttpTokens": "required", "HttpPutResponseHopLimit": 2}),
        );
        p.insert(
            "CreditSpecification".into(),
            json!({"CPUCredits": "unlimited"}),
        );
        p.insert("Monitoring".into(), json!(true));
        p.insert("Tenancy".into(), json!("dedicated"));
        p.insert("DisableApiTermination".into(), json!("true"));
        p.insert(
            "InstanceInitiatedShutdownBehavior".into(),
            json!("terminate"),
        );
        p.insert("PropagateTagsToVolumeOnCreation".into(), json!(true));
        p.insert(
            "LaunchTemplate".into(),
            json!({"LaunchTemplateId": "lt-1", "Version": "3"}),
        );
        let run = launch(&ec2(), "I", &p, "").unwrap();
        let input = run.as_input();
        assert_eq!(
            input.get_iam_instance_profile().as_ref().unwrap().arn(),
            Some("arn:aws:iam::1:instance-profile/p/q")
        );
        let devices = input.get_block_device_mappings().as_ref().unwrap();
        let ebs = devices[0].ebs().unwrap();
        assert_eq!(ebs.volume_size(), Some(20));
        assert_eq!(ebs.volume_type(), Some(&VolumeType::Gp3));
        assert_eq!(
            (ebs.encrypted(), ebs.delete_on_termination()),
            (Some(true), Some(true))
        );
        assert_eq!(devices[1].no_device(), Some(""));
        let metadata = input.get_metadata_options().as_ref().unwrap();
        assert_eq!(metadata.http_tokens(), Some(&HttpTokensState::Required));
        assert_eq!(metadata.http_put_response_hop_limit(), Some(2));
        assert_eq!(
            input
                .get_credit_specification()
                .as_ref()
                .unwrap()
                .cpu_credits(),
            Some("unlimited")
        );
        assert_eq!(
            input.get_monitoring().as_ref().unwrap().enabled(),
            Some(true)
        );
        assert_eq!(
            input.get_placement().as_ref().unwrap().tenancy(),
            Some(&Tenancy::Dedicated)
        );
        assert_eq!(input.get_disable_api_termination(), &Some(true));
        assert_eq!(
            input.get_instance_initiated_shutdown_behavior(),
            &Some(ShutdownBehavior::Terminate)
        );
        assert_eq!(
            input.get_launch_template().as_ref().unwrap().version(),
            Some("3")
        );
        // No token: neither a client token nor the token tag; the volumes get the tags.
        assert_eq!(input.get_client_token(), &None);
        let specs = input.get_tag_specifications().as_ref().unwrap();
        assert_eq!(specs.len(), 2);
        assert_eq!(specs[1].resource_type(), Some(&ResourceType::Volume));
        assert_eq!(specs[0].tags().len(), 1);
    }

    #[test]
    fn network_interfaces_are_mapped() {
        let mut p = cdk_instance();
        p.remove("SubnetId");
        p.remove("SecurityGroupIds");
        p.insert(
            "NetworkInterfaces".into(),
            json!([{
                "DeviceIndex": "0", "SubnetId": "subnet-2", "GroupSet": ["sg-2"],
                "AssociatePublicIpAddress": true,
                "PrivateIpAddresses": [{"Primary": true, "PrivateIpAddress": "10.0.0.5"}]
            }]),
        );
        let run = launch(&ec2(), "I", &p, "t").unwrap();
        let nic = &run.as_input().get_network_interfaces().as_ref().unwrap()[0];
        assert_eq!(nic.device_index(), Some(0));
        assert_eq!(nic.subnet_id(), Some("subnet-2"));
        assert_eq!(nic.groups(), ["sg-2"]);
        assert_eq!(nic.associate_public_ip_address(), Some(true));
        assert_eq!(
            nic.private_ip_addresses()[0].private_ip_address(),
            Some("10.0.0.5")
        );
    }

    #[test]
    fn an_unmapped_nested_property_is_refused_by_name() {
        for (property, value, named) in [
            (
                "NetworkInterfaces",
                json!([{"DeviceIndex": "0", "EnaSrdSpecification": {}}]),
                "NetworkInterfaces.EnaSrdSpecification",
            ),
            (
                "BlockDeviceMappings",
                json!([{"DeviceName": "/dev/xvda", "Ebs": {"Throughput": 300}}]),
                "BlockDeviceMappings.Ebs.Throughput",
            ),
            (
                "MetadataOptions",
                json!({"HttpTokens": "required", "Other": 1}),
                "MetadataOptions.Other",
            ),
            (
                "LaunchTemplate",
                json!({"LaunchTemplateId": "lt-1", "Overrides": []}),
                "LaunchTemplate.Overrides",
            ),
            (
                "CreditSpecification",
                json!({"CPUCredits": "standard", "X": 1}),
                "CreditSpecification.X",
            ),
        ] {
            let mut p = cdk_instance();
            p.insert(property.into(), value);
            let err = launch(&ec2(), "AWS::EC2::Instance I", &p, "t").unwrap_err();
            assert_eq!(err.kind, ErrorKind::VALIDATION);
            assert!(
                err.message.contains(named) && err.message.starts_with("AWS::EC2::Instance I"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn every_top_level_property_is_handled_or_left_to_cloud_control() {
        // Every handled property is read by `launch` or changed by an update: the schema, the
        // create-only list and the refusals agree.
        for key in CREATE_ONLY {
            assert!(HANDLES.contains(key), "{key}");
        }
        for (key, _) in NOT_IN_PLACE {
            assert!(HANDLES.contains(key) && !CREATE_ONLY.contains(key), "{key}");
        }
        let schema = Instance.schema();
        assert_eq!(schema.handled_properties.len(), HANDLES.len());
        assert!(schema
            .operations
            .iter()
            .any(|o| o == operation::FIND_CREATED));
    }

    #[test]
    fn only_iam_propagation_refusals_are_retried() {
        let refused = ProviderError::new(
            ErrorKind::VALIDATION,
            "RunInstances: Value (p) for parameter iamInstanceProfile.name is invalid. Invalid IAM Instance Profile name",
        )
        .with_aws_code("InvalidParameterValue");
        assert!(profile_propagating(&refused));
        let by_arn = ProviderError::new(
            ErrorKind::VALIDATION,
            "Value (arn:aws:iam::1:instance-profile/p) for parameter iamInstanceProfile.arn is invalid. Invalid IAM Instance Profile ARN",
        )
        .with_aws_code("InvalidParameterValue");
        assert!(profile_propagating(&by_arn));
        let other =
            ProviderError::new(ErrorKind::VALIDATION, "Invalid value 't9' for InstanceType")
                .with_aws_code("InvalidParameterValue");
        assert!(!profile_propagating(&other));
        let capacity = ProviderError::new(ErrorKind::OTHER, "Invalid IAM Instance Profile name")
            .with_aws_code("InsufficientInstanceCapacity");
        assert!(!profile_propagating(&capacity));
    }

    #[test]
    fn the_profile_is_recognised_by_name_or_arn() {
        let instance = aws_sdk_ec2::types::Instance::builder()
            .iam_instance_profile(
                aws_sdk_ec2::types::IamInstanceProfile::builder()
                    .arn("arn:aws:iam::1:instance-profile/RefEc2Stack-P-1")
                    .build(),
            )
            .build();
        assert!(has_profile(&instance, "RefEc2Stack-P-1"));
        assert!(has_profile(
            &instance,
            "arn:aws:iam::1:instance-profile/RefEc2Stack-P-1"
        ));
        assert!(!has_profile(&instance, "other"));
        assert!(!has_profile(
            &aws_sdk_ec2::types::Instance::builder().build(),
            "RefEc2Stack-P-1"
        ));
    }

    #[test]
    fn a_change_that_needs_a_stop_is_refused_naming_it() {
        let before = cdk_instance();
        let mut after = before.clone();
        after.insert("InstanceType".into(), json!("t3.small"));
        after.insert("Tags".into(), json!([]));
        let err = refuse_stopping_changes("AWS::EC2::Instance I", &before, &after).unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(
            err.message
                .contains("InstanceType needs the instance stopped"),
            "{}",
            err.message
        );
        let mut tags_only = before.clone();
        tags_only.insert("SourceDestCheck".into(), json!(false));
        assert!(refuse_stopping_changes("I", &before, &tags_only).is_ok());
    }

    #[test]
    fn a_described_instance_answers_cloudformations_attributes() {
        use aws_sdk_ec2::types::{InstanceState, Placement as P};
        let instance = aws_sdk_ec2::types::Instance::builder()
            .instance_id("i-1")
            .placement(P::builder().availability_zone("us-east-1a").build())
            .private_dns_name("ip-10-0-0-5.ec2.internal")
            .private_ip_address("10.0.0.5")
            .public_dns_name("")
            .vpc_id("vpc-1")
            .state(
                InstanceState::builder()
                    .name(InstanceStateName::Pending)
                    .build(),
            )
            .build();
        let attributes = attributes_of(&instance);
        assert_eq!(attributes["InstanceId"], "i-1");
        assert_eq!(attributes["AvailabilityZone"], "us-east-1a");
        assert_eq!(attributes["PrivateIp"], "10.0.0.5");
        assert_eq!(attributes["VpcId"], "vpc-1");
        // Pending: no public address yet, and an empty DNS name is none.
        assert!(!attributes.contains_key("PublicIp") && !attributes.contains_key("PublicDnsName"));
        assert!(!ending(&instance));
    }
}
