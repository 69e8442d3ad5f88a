//! `AWS::AutoScaling::LaunchConfiguration`: every property create-only (a launch configuration
//! cannot be changed, as under CloudFormation: a change replaces it); physical id (and `Ref`)
//! is its name, the template's or one generated from the create's token before the call, so
//! the run after a crash finds it by name. Its delete is refused by Auto Scaling while a group
//! uses it (`ResourceInUse`), as under CloudFormation.

use aws_sdk_autoscaling::types::{InstanceMonitoring, LaunchConfiguration as LiveConfiguration};
use cdkd_aws_common::{
    deleted_unless_failed, flag, found, given_or_generated_name, put, string, strings, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::AutoScaling::LaunchConfiguration";

/// The longest launch configuration name Auto Scaling takes.
const MAX_NAME: usize = 255;

/// The `AWS::AutoScaling::LaunchConfiguration` provider.
#[derive(Default)]
pub struct LaunchConfiguration;

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
    use serde_json::json;

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
    fn every_property_is_create_only() {
        let schema = LaunchConfiguration.schema();
        assert_eq!(schema.create_only_properties, schema.handled_properties);
    }
}
