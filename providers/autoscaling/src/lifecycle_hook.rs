//! `AWS::AutoScaling::LifecycleHook`: physical id (and `Ref`) is the hook's name, as
//! CloudFormation's; the name is the template's or one generated from the create's token before
//! the call, so the run after a crash finds the hook by name in its group. PutLifecycleHook
//! creates or replaces a hook of that name: create and update are the same call.

use aws_sdk_autoscaling::types::LifecycleHook as LiveHook;
use cdkd_aws_common::{
    created_name, deleted_unless_failed, found, given_or_generated_name, int, put, string, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::AutoScaling::LifecycleHook";

/// The longest hook name Auto Scaling takes.
const MAX_NAME: usize = 255;

/// The `AWS::AutoScaling::LifecycleHook` provider.
#[derive(Default)]
pub struct LifecycleHook;

/// The template's group, which every hook call names.
fn group_of(properties: &Map<String, Value>, what: &str) -> Result<String, ProviderError> {
    string(properties.get("AutoScalingGroupName")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: AutoScalingGroupName is required (a hook lives in its group)"
        ))
    })
}

/// The live hook in template shape.
fn template_shape(hook: &LiveHook) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "AutoScalingGroupName",
        hook.auto_scaling_group_name().map(Value::from),
    );
    put(
        &mut props,
        "LifecycleHookName",
        hook.lifecycle_hook_name().map(Value::from),
    );
    put(
        &mut props,
        "LifecycleTransition",
        hook.lifecycle_transition().map(Value::from),
    );
    put(
        &mut props,
        "DefaultResult",
        hook.default_result().map(Value::from),
    );
    put(
        &mut props,
        "HeartbeatTimeout",
        hook.heartbeat_timeout().map(Value::from),
    );
    put(
        &mut props,
        "NotificationMetadata",
        hook.notification_metadata().map(Value::from),
    );
    put(
        &mut props,
        "NotificationTargetARN",
        hook.notification_target_arn().map(Value::from),
    );
    put(&mut props, "RoleARN", hook.role_arn().map(Value::from));
    props
}

/// Hook `name` of `group`; `None` when either does not exist.
async fn describe(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    group: &str,
    name: &str,
) -> Result<Option<LiveHook>, ProviderError> {
    let answer = found(
        asg.describe_lifecycle_hooks()
            .auto_scaling_group_name(group)
            .lifecycle_hook_names(name)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DescribeLifecycleHooks {group} {name}"
            ))),
    )?;
    Ok(answer.and_then(|a| {
        a.lifecycle_hooks()
            .iter()
            .find(|h| h.lifecycle_hook_name() == Some(name))
            .cloned()
    }))
}

/// Creates or replaces hook `name` with the template's settings.
async fn put_hook(
    asg: &aws_sdk_autoscaling::Client,
    what: &str,
    name: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let group = group_of(props, what)?;
    let put = || async {
        asg.put_lifecycle_hook()
            .auto_scaling_group_name(&group)
            .lifecycle_hook_name(name)
            .set_lifecycle_transition(string(props.get("LifecycleTransition")))
            .set_default_result(string(props.get("DefaultResult")))
            .set_heartbeat_timeout(int(props.get("HeartbeatTimeout")))
            .set_notification_metadata(text(props.get("NotificationMetadata")))
            .set_notification_target_arn(string(props.get("NotificationTargetARN")))
            .set_role_arn(string(props.get("RoleARN")))
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: PutLifecycleHook {group} {name}")))
    };
    // Auto Scaling publishes a test message to the target with the role: a role of the same run
    // fails it ("Unable to publish test message to notification target ... using IAM role")
    // until IAM has propagated it.
    match string(props.get("RoleARN")) {
        Some(role) => {
            let unpublished =
                |e: &ProviderError| e.message.contains("Unable to publish test message");
            cdkd_aws_common::while_iam_propagates(&format!("the role {role}"), unpublished, put)
                .await
        }
        None => put().await,
    }
}

#[async_trait]
impl ResourceProvider for LifecycleHook {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "AutoScalingGroupName",
                "LifecycleHookName",
                "LifecycleTransition",
                "DefaultResult",
                "HeartbeatTimeout",
                "NotificationMetadata",
                "NotificationTargetARN",
                "RoleARN",
            ])
            .create_only(&["AutoScalingGroupName", "LifecycleHookName"])
            .read_and_import()
            .finds_created_in(&["AutoScalingGroupName", "LifecycleHookName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = given_or_generated_name(&request, "LifecycleHookName", MAX_NAME, false);
        let asg = client(ctx).await?;
        put_hook(&asg, &what, &name, &request.properties).await?;
        Ok(CreateResult {
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
        let asg = client(ctx).await?;
        put_hook(&asg, &what, &request.physical_id, &request.properties).await?;
        Ok(UpdateResult {
            physical_id: request.physical_id,
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
        let group = group_of(&request.properties, &what)?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_lifecycle_hook()
                .auto_scaling_group_name(&group)
                .lifecycle_hook_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteLifecycleHook {group} {name}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for LifecycleHook {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let group = group_of(&request.properties, what)?;
        let asg = client(ctx).await?;
        Ok(describe(&asg, what, &group, &request.physical_id)
            .await?
            .map(|h| template_shape(&h)))
    }

    /// The template's or the token's name, in the template's group.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(name), Some(group)) = (
            created_name(request, Some("LifecycleHookName"), MAX_NAME, false),
            string(request.properties.get("AutoScalingGroupName")),
        ) else {
            return Ok(None);
        };
        let asg = client(ctx).await?;
        Ok(describe(&asg, what, &group, &name).await?.map(|_| name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_live_hook_reads_back_in_template_shape() {
        let hook = LiveHook::builder()
            .auto_scaling_group_name("web")
            .lifecycle_hook_name("drain")
            .lifecycle_transition("autoscaling:EC2_INSTANCE_TERMINATING")
            .default_result("CONTINUE")
            .heartbeat_timeout(300)
            .build();
        assert_eq!(
            Value::Object(template_shape(&hook)),
            json!({
                "AutoScalingGroupName": "web",
                "LifecycleHookName": "drain",
                "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
                "DefaultResult": "CONTINUE",
                "HeartbeatTimeout": 300,
            })
        );
    }

    #[test]
    fn a_hook_without_its_group_is_refused_by_name() {
        let err = group_of(&Map::new(), "AWS::AutoScaling::LifecycleHook H").unwrap_err();
        assert!(
            err.message.contains("AutoScalingGroupName"),
            "{}",
            err.message
        );
    }
}
