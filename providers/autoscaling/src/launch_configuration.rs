//! `AWS::AutoScaling::LaunchConfiguration`: every property create-only (a launch configuration
//! cannot be changed, as under CloudFormation: a change replaces it); physical id (and `Ref`)
//! is its name, the template's or one generated from the create's token before the call, so
//! the run after a crash finds it by name. Its delete is refused by Auto Scaling while a group
//! uses it (`ResourceInUse`), as under CloudFormation.

use aws_sdk_autoscaling::types::{
    BlockDeviceMapping, Ebs, InstanceMetadataEndpointState, InstanceMetadataHttpTokensState,
    InstanceMetadataOptions, InstanceMonitoring, LaunchConfiguration as LiveConfiguration,
};
use cdkd_aws_common::{
    deleted_unless_failed, flag, found, given_or_generated_name, int, put, string, strings, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::AutoScaling::LaunchConfiguration";

/// The longest launch configuration name Auto Scaling takes.
const MAX_NAME: usize = 255;

/// The `AWS::AutoScaling::LaunchConfiguration` provider.
#[derive(Default)]
pub struct LaunchConfiguration;

/// `BlockDeviceMappings` as Auto Scaling's (EBS volumes, instance stores, suppressed devices).
fn block_devices(value: Option<&Value>) -> Option<Vec<BlockDeviceMapping>> {
    let items = value.and_then(Value::as_array)?;
    Some(
        items
            .iter()
            .map(|m| {
                let ebs = m.get("Ebs").filter(|v| v.is_object()).map(|e| {
                    Ebs::builder()
                        .set_snapshot_id(string(e.get("SnapshotId")))
                        .set_volume_size(int(e.get("VolumeSize")))
                        .set_volume_type(string(e.get("VolumeType")))
                        .set_delete_on_termination(flag(e.get("DeleteOnTermination")))
                        .set_iops(int(e.get("Iops")))
                        .set_encrypted(flag(e.get("Encrypted")))
                        .set_throughput(int(e.get("Throughput")))
                        .build()
                });
                BlockDeviceMapping::builder()
                    .set_device_name(string(m.get("DeviceName")))
                    .set_virtual_name(string(m.get("VirtualName")))
                    .set_no_device(flag(m.get("NoDevice")))
                    .set_ebs(ebs)
                    .build()
            })
            .collect(),
    )
}

/// Live block device mappings in template shape.
fn block_devices_shape(mappings: &[BlockDeviceMapping]) -> Option<Value> {
    let items: Vec<Value> = mappings
        .iter()
        .map(|m| {
            let mut item = Map::new();
            put(&mut item, "DeviceName", m.device_name().map(|v| json!(v)));
            put(&mut item, "VirtualName", m.virtual_name().map(|v| json!(v)));
            put(
                &mut item,
                "NoDevice",
                m.no_device().filter(|n| *n).map(|v| json!(v)),
            );
            if let Some(e) = m.ebs() {
                let mut ebs = Map::new();
                put(&mut ebs, "SnapshotId", e.snapshot_id().map(|v| json!(v)));
                put(&mut ebs, "VolumeSize", e.volume_size().map(|v| json!(v)));
                put(&mut ebs, "VolumeType", e.volume_type().map(|v| json!(v)));
                put(
                    &mut ebs,
                    "DeleteOnTermination",
                    e.delete_on_termination().map(|v| json!(v)),
                );
                put(&mut ebs, "Iops", e.iops().map(|v| json!(v)));
                put(&mut ebs, "Encrypted", e.encrypted().map(|v| json!(v)));
                put(&mut ebs, "Throughput", e.throughput().map(|v| json!(v)));
                item.insert("Ebs".into(), Value::Object(ebs));
            }
            Value::Object(item)
        })
        .collect();
    (!items.is_empty()).then_some(Value::Array(items))
}

/// `MetadataOptions` (the instance metadata service: IMDSv2 tokens, hop limit, endpoint).
fn metadata_options(value: Option<&Value>) -> Option<InstanceMetadataOptions> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        InstanceMetadataOptions::builder()
            .set_http_tokens(
                string(value.get("HttpTokens"))
                    .map(|t| InstanceMetadataHttpTokensState::from(t.as_str())),
            )
            .set_http_put_response_hop_limit(int(value.get("HttpPutResponseHopLimit")))
            .set_http_endpoint(
                string(value.get("HttpEndpoint"))
                    .map(|e| InstanceMetadataEndpointState::from(e.as_str())),
            )
            .build(),
    )
}

/// Live metadata options in template shape.
fn metadata_options_shape(options: &InstanceMetadataOptions) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "HttpTokens",
        options.http_tokens().map(|v| json!(v.as_str())),
    );
    put(
        &mut shape,
        "HttpPutResponseHopLimit",
        options.http_put_response_hop_limit().map(|v| json!(v)),
    );
    put(
        &mut shape,
        "HttpEndpoint",
        options.http_endpoint().map(|v| json!(v.as_str())),
    );
    Value::Object(shape)
}

/// The live configuration in template shape.
fn template_shape(config: &LiveConfiguration) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "LaunchConfigurationName",
        config.launch_configuration_name().map(Value::from),
    );
    put(&mut props, "ImageId", config.image_id().map(Value::from));
    put(
        &mut props,
        "InstanceType",
        config.instance_type().map(Value::from),
    );
    put(
        &mut props,
        "KeyName",
        config.key_name().filter(|k| !k.is_empty()).map(Value::from),
    );
    let groups = config.security_groups();
    if !groups.is_empty() {
        props.insert(
            "SecurityGroups".into(),
            Value::Array(groups.iter().map(|g| Value::from(g.as_str())).collect()),
        );
    }
    put(
        &mut props,
        "UserData",
        config
            .user_data()
            .filter(|u| !u.is_empty())
            .map(Value::from),
    );
    put(
        &mut props,
        "IamInstanceProfile",
        config.iam_instance_profile().map(Value::from),
    );
    put(
        &mut props,
        "InstanceMonitoring",
        config
            .instance_monitoring()
            .and_then(InstanceMonitoring::enabled)
            .map(Value::from),
    );
    put(
        &mut props,
        "SpotPrice",
        config.spot_price().map(Value::from),
    );
    put(
        &mut props,
        "EbsOptimized",
        config.ebs_optimized().map(Value::from),
    );
    put(
        &mut props,
        "AssociatePublicIpAddress",
        config.associate_public_ip_address().map(Value::from),
    );
    put(
        &mut props,
        "PlacementTenancy",
        config.placement_tenancy().map(Value::from),
    );
    put(
        &mut props,
        "KernelId",
        config
            .kernel_id()
            .filter(|k| !k.is_empty())
            .map(Value::from),
    );
    put(
        &mut props,
        "RamDiskId",
        config
            .ramdisk_id()
            .filter(|k| !k.is_empty())
            .map(Value::from),
    );
    put(
        &mut props,
        "BlockDeviceMappings",
        block_devices_shape(config.block_device_mappings()),
    );
    put(
        &mut props,
        "MetadataOptions",
        config.metadata_options().map(metadata_options_shape),
    );
    props
}

/// The launch configuration named `name`; `None` when it does not exist.
async fn describe(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
) -> Result<Option<LiveConfiguration>, ProviderError> {
    let answer = found(
        asg.describe_launch_configurations()
            .launch_configuration_names(name)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DescribeLaunchConfigurations {name}"
            ))),
    )?;
    Ok(answer.and_then(|a| a.launch_configurations().first().cloned()))
}

#[async_trait]
impl ResourceProvider for LaunchConfiguration {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "LaunchConfigurationName",
                "ImageId",
                "InstanceType",
                "KeyName",
                "SecurityGroups",
                "UserData",
                "IamInstanceProfile",
                "InstanceMonitoring",
                "SpotPrice",
                "EbsOptimized",
                "AssociatePublicIpAddress",
                "PlacementTenancy",
                "KernelId",
                "RamDiskId",
                "BlockDeviceMappings",
                "MetadataOptions",
            ])
            .all_create_only()
            .read_and_import()
            .finds_created_in(&["LaunchConfigurationName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = given_or_generated_name(&request, "LaunchConfigurationName", MAX_NAME, false);
        client(ctx)
            .await?
            .create_launch_configuration()
            .launch_configuration_name(&name)
            .set_image_id(string(props.get("ImageId")))
            .set_instance_type(string(props.get("InstanceType")))
            .set_key_name(string(props.get("KeyName")))
            .set_security_groups(strings(props.get("SecurityGroups")))
            .set_user_data(string(props.get("UserData")))
            .set_iam_instance_profile(string(props.get("IamInstanceProfile")))
            .set_instance_monitoring(
                flag(props.get("InstanceMonitoring"))
                    .map(|enabled| InstanceMonitoring::builder().enabled(enabled).build()),
            )
            .set_spot_price(text(props.get("SpotPrice")))
            .set_ebs_optimized(flag(props.get("EbsOptimized")))
            .set_associate_public_ip_address(flag(props.get("AssociatePublicIpAddress")))
            .set_placement_tenancy(string(props.get("PlacementTenancy")))
            .set_kernel_id(string(props.get("KernelId")))
            .set_ramdisk_id(string(props.get("RamDiskId")))
            .set_block_device_mappings(block_devices(props.get("BlockDeviceMappings")))
            .set_metadata_options(metadata_options(props.get("MetadataOptions")))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateLaunchConfiguration {name}")))?;
        Ok(CreateResult {
            physical_id: name,
            ..Default::default()
        })
    }

    /// Every property is create-only, so the host replaces instead of updating; an update
    /// reaching here changed nothing Auto Scaling holds (only the template's formatting).
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Ok(UpdateResult {
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    /// A group still using it makes Auto Scaling refuse (`ResourceInUse`, a conflict), as
    /// under CloudFormation; cdkd deletes the group first when both go.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_launch_configuration()
                .launch_configuration_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteLaunchConfiguration {name}"))),
        )
    }
}

#[async_trait]
impl Readable for LaunchConfiguration {
    const CREATED_NAME: Option<(Option<&'static str>, usize)> =
        Some((Some("LaunchConfigurationName"), MAX_NAME));

    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let asg = client(ctx).await?;
        Ok(describe(&asg, what, &request.physical_id)
            .await?
            .map(|c| template_shape(&c)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_live_configuration_reads_back_in_template_shape() {
        let config = LiveConfiguration::builder()
            .launch_configuration_name("web-lc")
            .image_id("ami-1")
            .instance_type("t3.micro")
            .key_name("")
            .security_groups("sg-1")
            .instance_monitoring(InstanceMonitoring::builder().enabled(false).build())
            .build();
        assert_eq!(
            Value::Object(template_shape(&config)),
            json!({
                "LaunchConfigurationName": "web-lc",
                "ImageId": "ami-1",
                "InstanceType": "t3.micro",
                "SecurityGroups": ["sg-1"],
                "InstanceMonitoring": false,
            })
        );
    }

    #[test]
    fn block_devices_and_metadata_options_convert_and_read_back_as_written() {
        let template = json!({
            "BlockDeviceMappings": [
                {"DeviceName": "/dev/xvda", "Ebs": {"VolumeSize": 20, "VolumeType": "gp3", "Encrypted": true, "DeleteOnTermination": true}},
                {"DeviceName": "/dev/sdb", "VirtualName": "ephemeral0"},
                {"DeviceName": "/dev/sdc", "NoDevice": true},
            ],
            "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 2, "HttpEndpoint": "enabled"},
        });
        let config = LiveConfiguration::builder()
            .set_block_device_mappings(block_devices(template.get("BlockDeviceMappings")))
            .set_metadata_options(metadata_options(template.get("MetadataOptions")))
            .build();
        let shape = template_shape(&config);
        assert_eq!(
            shape["BlockDeviceMappings"],
            template["BlockDeviceMappings"]
        );
        assert_eq!(shape["MetadataOptions"], template["MetadataOptions"]);
    }

    #[test]
    fn every_property_is_create_only() {
        let schema = LaunchConfiguration.schema();
        assert_eq!(schema.create_only_properties, schema.handled_properties);
    }
}
