//! `AWS::CloudWatch::CompositeAlarm`: physical id (and `Ref`) is the alarm name; attribute
//! `Arn`. A create and an update are both one PutCompositeAlarm with the whole definition (an
//! update overwrites every setting, so a property removed from the template goes back to
//! CloudWatch's default); tag changes go through TagResource/UntagResource. A create tags the
//! alarm with the create token so `find_created` finds a generated name after a crash.

use aws_sdk_cloudwatch::operation::put_composite_alarm::builders::PutCompositeAlarmInputBuilder;
use aws_sdk_cloudwatch::operation::put_composite_alarm::PutCompositeAlarmInput;
use aws_sdk_cloudwatch::types::{AlarmType, Tag};
use cdkd_aws_common::{
    deleted_unless_failed, flag, given_or_generated_name, int, put, require_str, string, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    action_configuration, action_configuration_shape, action_list, actions, alarm_arn, client,
    create_tags, cw_error, find_created, live_tags, refuse_existing_alarm, template_tags,
    update_tags, Listing,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::CloudWatch::CompositeAlarm";

/// The longest alarm name CloudWatch takes.
const MAX_NAME: usize = 255;

/// The `AWS::CloudWatch::CompositeAlarm` provider.
#[derive(Default)]
pub struct CompositeAlarm;

/// The PutCompositeAlarm of the alarm `name` with the template's whole definition; `tags` only
/// on a create (CloudWatch ignores them on an existing alarm).
fn put_input(
    name: &str,
    rule: &str,
    properties: &Map<String, Value>,
    tags: Vec<Tag>,
) -> PutCompositeAlarmInputBuilder {
    PutCompositeAlarmInput::builder()
        .alarm_name(name)
        .alarm_rule(rule)
        .set_alarm_description(string(properties.get("AlarmDescription")))
        .set_actions_enabled(flag(properties.get("ActionsEnabled")))
        .set_alarm_actions(actions(properties, "AlarmActions"))
        .set_ok_actions(actions(properties, "OKActions"))
        .set_insufficient_data_actions(actions(properties, "InsufficientDataActions"))
        .set_actions_suppressor(text(properties.get("ActionsSuppressor")))
        .set_actions_suppressor_wait_period(int(properties.get("ActionsSuppressorWaitPeriod")))
        .set_actions_suppressor_extension_period(int(
            properties.get("ActionsSuppressorExtensionPeriod")
        ))
        .set_action_configuration(action_configuration(properties))
        .set_tags(Some(tags).filter(|t| !t.is_empty()))
}

/// A live composite alarm in template shape.
fn template_shape(
    alarm: &aws_sdk_cloudwatch::types::CompositeAlarm,
    tags: &[Tag],
) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "AlarmName",
        alarm.alarm_name().map(|v| json!(v)),
    );
    put(
        &mut props,
        "AlarmRule",
        alarm.alarm_rule().map(|v| json!(v)),
    );
    put(
        &mut props,
        "AlarmDescription",
        alarm
            .alarm_description()
            .filter(|d| !d.is_empty())
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "ActionsEnabled",
        alarm.actions_enabled().map(Value::Bool),
    );
    put(
        &mut props,
        "AlarmActions",
        action_list(alarm.alarm_actions()),
    );
    put(&mut props, "OKActions", action_list(alarm.ok_actions()));
    put(
        &mut props,
        "InsufficientDataActions",
        action_list(alarm.insufficient_data_actions()),
    );
    put(
        &mut props,
        "ActionsSuppressor",
        alarm
            .actions_suppressor()
            .filter(|s| !s.is_empty())
            .map(|v| json!(v)),
    );
    // The suppressor periods mean something only with a suppressor; CloudWatch answers them
    // (as 0) for every alarm.
    if alarm.actions_suppressor().is_some_and(|s| !s.is_empty()) {
        put(
            &mut props,
            "ActionsSuppressorWaitPeriod",
            alarm.actions_suppressor_wait_period().map(|v| json!(v)),
        );
        put(
            &mut props,
            "ActionsSuppressorExtensionPeriod",
            alarm
                .actions_suppressor_extension_period()
                .map(|v| json!(v)),
        );
    }
    put(
        &mut props,
        "ActionConfiguration",
        alarm
            .action_configuration()
            .and_then(action_configuration_shape),
    );
    put(&mut props, "Tags", template_tags(tags));
    props
}

/// The live composite alarm named `name`; `None` when there is none.
async fn describe(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
) -> Result<Option<aws_sdk_cloudwatch::types::CompositeAlarm>, ProviderError> {
    let answer = cw
        .describe_alarms()
        .alarm_names(name)
        .alarm_types(AlarmType::CompositeAlarm)
        .send()
        .await
        .map_err(cw_error!(what, format!("DescribeAlarms {name}")))?;
    Ok(answer
        .composite_alarms()
        .iter()
        .find(|a| a.alarm_name() == Some(name))
        .cloned())
}

/// The attributes a create or update reports.
fn attributes_of(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Arn".into(), json!(arn));
    attributes
}

#[async_trait]
impl ResourceProvider for CompositeAlarm {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "AlarmName",
                "AlarmRule",
                "AlarmDescription",
                "ActionsEnabled",
                "AlarmActions",
                "OKActions",
                "InsufficientDataActions",
                "ActionsSuppressor",
                "ActionsSuppressorWaitPeriod",
                "ActionsSuppressorExtensionPeriod",
                "ActionConfiguration",
                "Tags",
            ])
            .create_only(&["AlarmName"])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    /// `find_created`: the composite alarm a create with the request's token made.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        find_created(
            self,
            ctx,
            TYPE,
            "AlarmName",
            Listing::Alarms(AlarmType::CompositeAlarm),
            name,
            request,
        )
        .await
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "AlarmName", MAX_NAME, false);
        let rule = require_str(&request.properties, "AlarmRule", &what)?;
        let tags = create_tags(&request.properties, &request.client_token);
        let input = put_input(&name, rule, &request.properties, tags);
        let cw = client(ctx).await?;
        refuse_existing_alarm(&cw, &what, &name, &request.client_token).await?;
        input
            .send_with(&cw)
            .await
            .map_err(cw_error!(what, format!("PutCompositeAlarm {name}")))?;
        let arn = alarm_arn(&cw, &what, &name, AlarmType::CompositeAlarm).await?;
        Ok(CreateResult {
            attributes: attributes_of(&arn),
            physical_id: name,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = request.physical_id.as_str();
        let rule = require_str(&request.properties, "AlarmRule", &what)?;
        let cw = client(ctx).await?;
        put_input(name, rule, &request.properties, Vec::new())
            .send_with(&cw)
            .await
            .map_err(cw_error!(what, format!("PutCompositeAlarm {name}")))?;
        let arn = alarm_arn(&cw, &what, name, AlarmType::CompositeAlarm).await?;
        update_tags(
            &cw,
            &what,
            &arn,
            &request.previous_properties,
            &request.properties,
        )
        .await?;
        Ok(UpdateResult {
            attributes: attributes_of(&arn),
            physical_id: name.to_string(),
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
        let name = request.physical_id.as_str();
        let cw = client(ctx).await?;
        deleted_unless_failed(
            cw.delete_alarms()
                .alarm_names(name)
                .send()
                .await
                .map(|_| ())
                .map_err(cw_error!(what, format!("DeleteAlarms {name}"))),
        )
    }
}

#[async_trait]
impl Readable for CompositeAlarm {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cw = client(ctx).await?;
        let Some(alarm) = describe(&cw, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let tags = match alarm.alarm_arn() {
            Some(arn) => live_tags(&cw, what, arn).await?.unwrap_or_default(),
            None => Vec::new(),
        };
        Ok(Some(template_shape(&alarm, &tags)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let cw = client(ctx).await?;
        Ok(describe(&cw, what, physical_id)
            .await?
            .and_then(|a| a.alarm_arn().map(attributes_of))
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cdkd_provider_api::protocol::CREATE_TOKEN_TAG;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_put_carries_the_rule_actions_and_suppressor() {
        let template = props(json!({
            "AlarmRule": "ALARM(a) OR ALARM(b)",
            "AlarmDescription": "either",
            "ActionsEnabled": true,
            "AlarmActions": ["arn:aws:sns:r:1:t"],
            "ActionsSuppressor": "maintenance",
            "ActionsSuppressorWaitPeriod": "60",
            "ActionsSuppressorExtensionPeriod": 120,
            "Tags": [{"Key": "team", "Value": "a"}],
        }));
        let input = put_input(
            "both",
            "ALARM(a) OR ALARM(b)",
            &template,
            create_tags(&template, "tok"),
        )
        .build()
        .unwrap();
        assert_eq!(input.alarm_name(), Some("both"));
        assert_eq!(input.alarm_rule(), Some("ALARM(a) OR ALARM(b)"));
        assert_eq!(input.alarm_description(), Some("either"));
        assert_eq!(input.actions_enabled(), Some(true));
        assert_eq!(input.alarm_actions(), ["arn:aws:sns:r:1:t"]);
        assert_eq!(input.actions_suppressor(), Some("maintenance"));
        assert_eq!(input.actions_suppressor_wait_period(), Some(60));
        assert_eq!(input.actions_suppressor_extension_period(), Some(120));
        let keys: Vec<Option<&str>> = input.tags().iter().map(Tag::key).collect();
        assert_eq!(keys, [Some("team"), Some(CREATE_TOKEN_TAG)]);
    }

    #[test]
    fn the_live_alarm_reads_back_in_template_shape() {
        let alarm = aws_sdk_cloudwatch::types::CompositeAlarm::builder()
            .alarm_name("both")
            .alarm_rule("ALARM(a)")
            .alarm_description("")
            .actions_enabled(true)
            .ok_actions("arn:ok")
            .actions_suppressor_wait_period(0)
            .actions_suppressor_extension_period(0)
            .build();
        let tags = [Tag::builder().key(CREATE_TOKEN_TAG).value("tok").build()];
        assert_eq!(
            Value::Object(template_shape(&alarm, &tags)),
            json!({
                "AlarmName": "both",
                "AlarmRule": "ALARM(a)",
                "ActionsEnabled": true,
                "OKActions": ["arn:ok"],
            })
        );
        let suppressed = aws_sdk_cloudwatch::types::CompositeAlarm::builder()
            .alarm_name("s")
            .actions_suppressor("m")
            .actions_suppressor_wait_period(60)
            .actions_suppressor_extension_period(0)
            .build();
        let shape = template_shape(&suppressed, &[]);
        assert_eq!(shape["ActionsSuppressorWaitPeriod"], json!(60));
        assert_eq!(shape["ActionsSuppressorExtensionPeriod"], json!(0));
    }
}
