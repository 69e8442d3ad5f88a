//! `AWS::StepFunctions::Activity`: physical id (and `Ref`) is the activity ARN; attributes
//! `Arn` and `Name`. Only the tags change in place: no call changes an activity's name or
//! encryption, so both are create-only.

use aws_sdk_sfn::operation::describe_activity::DescribeActivityOutput;
use aws_sdk_sfn::types::Tag;
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, put, require_str, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, encryption, encryption_shape, found, live_tags, name_of, sdk_tags, sfn_error, tag_map,
    template_tags, update_tags,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::StepFunctions::Activity";

/// The `AWS::StepFunctions::Activity` provider.
#[derive(Default)]
pub struct Activity;

/// The attributes of the activity `arn`.
fn attributes_of(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes.insert("Name".into(), json!(name_of(arn)));
    attributes
}

/// The live activity; `None` when there is none.
async fn describe(
    sfn: &aws_sdk_sfn::Client,
    what: &str,
    arn: &str,
) -> Result<Option<DescribeActivityOutput>, ProviderError> {
    found(
        sfn.describe_activity()
            .activity_arn(arn)
            .send()
            .await
            .map_err(sfn_error!(what, format!("DescribeActivity {arn}"))),
    )
}

/// A live activity in template shape.
fn template_shape(
    activity: &DescribeActivityOutput,
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("Name".into(), json!(activity.name()));
    put(
        &mut props,
        "EncryptionConfiguration",
        encryption_shape(activity.encryption_configuration(), template),
    );
    put(&mut props, "Tags", template_tags(tags));
    props
}

#[async_trait]
impl ResourceProvider for Activity {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["Name", "EncryptionConfiguration", "Tags"])
            .create_only(&["Name", "EncryptionConfiguration"])
            .read_and_import()
            // CreateActivity answers the existing activity of that name: a repeated create adopts it.
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let properties = &request.properties;
        let name = require_str(properties, "Name", &what)?;
        let encryption = encryption(properties.get("EncryptionConfiguration"), &what)?;
        let tags = sdk_tags(&tag_map(properties));
        let sfn = client(ctx).await?;
        // CreateActivity is idempotent by name: an activity of that name already there answers
        // its ARN, as CloudFormation's own create does.
        let answer = sfn
            .create_activity()
            .name(name)
            .set_encryption_configuration(encryption)
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(sfn_error!(what, format!("CreateActivity {name}")))?;
        let arn = answer.activity_arn;
        Ok(CreateResult {
            attributes: attributes_of(&arn),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let sfn = client(ctx).await?;
        update_tags(
            &sfn,
            &what,
            arn,
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        Ok(UpdateResult {
            attributes: attributes_of(arn),
            physical_id: arn.to_string(),
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        let sfn = client(ctx).await?;
        deleted_unless_failed(
            sfn.delete_activity()
                .activity_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(sfn_error!(what, format!("DeleteActivity {arn}"))),
        )
    }
}

#[async_trait]
impl Readable for Activity {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sfn = client(ctx).await?;
        let arn = request.physical_id.as_str();
        let (activity, tags) = tokio::join!(describe(&sfn, what, arn), live_tags(&sfn, what, arn));
        let Some(activity) = activity? else {
            return Ok(None);
        };
        let Some(tags) = tags? else {
            return Ok(None);
        };
        Ok(Some(template_shape(&activity, &tags, &request.properties)))
    }

    /// `Arn` and `Name`.
    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let sfn = client(ctx).await?;
        match describe(&sfn, what, physical_id).await? {
            Some(activity) => Ok(attributes_of(activity.activity_arn())),
            None => Err(does_not_exist(what, physical_id, "StepFunctions")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_sfn::types::{EncryptionConfiguration, EncryptionType};

    fn activity(encryption: Option<EncryptionConfiguration>) -> DescribeActivityOutput {
        DescribeActivityOutput::builder()
            .activity_arn("arn:aws:states:us-east-1:123456789012:activity:Work")
            .name("Work")
            .creation_date(aws_sdk_sfn::primitives::DateTime::from_secs(1_700_000_000))
            .set_encryption_configuration(encryption)
            .build()
            .unwrap()
    }

    #[test]
    fn the_live_activity_reads_back_in_template_shape() {
        let key = EncryptionConfiguration::builder()
            .r#type(EncryptionType::CustomerManagedKmsKey)
            .kms_key_id("arn:aws:kms:us-east-1:123456789012:key/1234")
            .kms_data_key_reuse_period_seconds(900)
            .build()
            .unwrap();
        let tags = [
            Tag::builder().key("b").value("2").build(),
            Tag::builder().key("a").value("1").build(),
        ];
        let template = serde_json::from_value::<Map<String, Value>>(json!({
            "Name": "Work",
            "EncryptionConfiguration": {"Type": "CUSTOMER_MANAGED_KMS_KEY", "KmsKeyId": "1234"},
        }))
        .unwrap();
        assert_eq!(
            Value::Object(template_shape(&activity(Some(key)), &tags, &template)),
            json!({
                "Name": "Work",
                "EncryptionConfiguration": {
                    "Type": "CUSTOMER_MANAGED_KMS_KEY",
                    "KmsKeyId": "1234",
                    "KmsDataKeyReusePeriodSeconds": 900,
                },
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}],
            })
        );
        assert_eq!(
            Value::Object(template_shape(&activity(None), &[], &Map::new())),
            json!({"Name": "Work"})
        );
    }

    #[test]
    fn attributes_are_the_arn_and_name() {
        assert_eq!(
            Value::Object(attributes_of("arn:aws:states:us-east-1:1:activity:Work")),
            json!({"Arn": "arn:aws:states:us-east-1:1:activity:Work", "Name": "Work"})
        );
    }

    #[test]
    fn name_and_encryption_are_create_only() {
        let schema = Activity.schema();
        assert_eq!(
            schema.create_only_properties,
            ["Name", "EncryptionConfiguration"]
        );
        assert!(schema.handled_properties.iter().any(|p| p == "Tags"));
    }
}
