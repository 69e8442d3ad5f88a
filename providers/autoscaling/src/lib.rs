//! cdkd's Auto Scaling provider plugin: EC2 Auto Scaling groups through direct Auto Scaling
//! calls. A group's (and a launch configuration's) physical id and `Ref` is its name, which cdkd chooses before the create
//! (the template's, or `{stack}-{logicalId}-{suffix}` as CloudFormation generates), so the run
//! after a crash finds it by name; a scaling policy (physical id its ARN) is found by its
//! generated name in its group, a lifecycle hook (physical id its name) by name in its group.
//! Application Auto Scaling's scalable target (physical id and `Ref`
//! `resourceId|scalableDimension|serviceNamespace`, as CloudFormation has it) and scaling
//! policy (physical id and `Ref` its ARN) are made by upserts keyed by what the template names,
//! so a repeated create makes the same target or policy.

mod app_policy;
mod app_target;
mod group;
mod launch_configuration;
mod lifecycle_hook;
mod mixed_instances;
mod notifications;
mod scaling_policy;

cdkd_provider_api::export_plugin!(description: "AWS::AutoScaling::AutoScalingGroup, LaunchConfiguration, ScalingPolicy and LifecycleHook through the EC2 Auto Scaling API; AWS::ApplicationAutoScaling::ScalableTarget and ScalingPolicy through the Application Auto Scaling API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<group::Group>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<scaling_policy::ScalingPolicy>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<lifecycle_hook::LifecycleHook>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<launch_configuration::LaunchConfiguration>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<app_target::ScalableTarget>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<app_policy::ScalingPolicy>);

use cdkd_aws_common::put;
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{Map, Value};

/// An EC2 Auto Scaling client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_autoscaling::Client, ProviderError> {
    let config =
        aws_sdk_autoscaling::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-autoscaling"))
            .build();
    Ok(aws_sdk_autoscaling::Client::from_conf(config))
}

/// An Application Auto Scaling client for the host's endpoint and credentials.
pub(crate) async fn app_client(
    ctx: &PluginContext,
) -> Result<aws_sdk_applicationautoscaling::Client, ProviderError> {
    let config = aws_sdk_applicationautoscaling::config::Builder::from(
        &cdkd_aws_common::sdk_config(ctx).await?,
    )
    .retry_partition(cdkd_aws_common::retry_partition(
        "cdkd-applicationautoscaling",
    ))
    .build();
    Ok(aws_sdk_applicationautoscaling::Client::from_conf(config))
}

/// Application Auto Scaling's own error codes. A concurrent update of the same target is
/// retried as a throttle (AWS asks callers to retry it).
pub(crate) const APP_KINDS: &[(&str, ErrorKind)] = &[
    ("ObjectNotFoundException", ErrorKind::NOT_FOUND),
    ("ConcurrentUpdateException", ErrorKind::THROTTLED),
    ("FailedResourceAccessException", ErrorKind::VALIDATION),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("TooManyTagsException", ErrorKind::VALIDATION),
];

/// A failed Application Auto Scaling call's error, named by `context`.
macro_rules! app_failed {
    ($context:expr) => {
        |e| cdkd_aws_common::aws_error_in(&$context, e, $crate::APP_KINDS)
    };
}
pub(crate) use app_failed;

/// Auto Scaling's own error codes the shared table does not know or reads otherwise.
pub(crate) const KINDS: &[(&str, ErrorKind)] = &[
    ("AlreadyExists", ErrorKind::ALREADY_EXISTS),
    ("ResourceInUse", ErrorKind::CONFLICT),
    ("ScalingActivityInProgress", ErrorKind::CONFLICT),
    ("ResourceContention", ErrorKind::THROTTLED),
    ("LimitExceeded", ErrorKind::VALIDATION),
    ("ServiceLinkedRoleFailure", ErrorKind::VALIDATION),
];

/// A failed call's error, named by `context`, with Auto Scaling's kinds. Auto Scaling answers
/// a missing group, policy or hook with `ValidationError` and a message saying it was not
/// found (there is no NotFound code): that one is read as NOT_FOUND.
macro_rules! failed {
    ($context:expr) => {
        |e| $crate::not_found_by_message(cdkd_aws_common::aws_error_in(&$context, e, $crate::KINDS))
    };
}
pub(crate) use failed;

/// A `ValidationError` whose message says the thing was not found, as NOT_FOUND.
pub(crate) fn not_found_by_message(mut err: ProviderError) -> ProviderError {
    let message = err.message.as_str().to_ascii_lowercase();
    if err.aws_code() == Some("ValidationError")
        && (message.contains("not found") || message.contains("does not exist"))
    {
        err.kind = ErrorKind::NOT_FOUND;
    }
    err
}

/// A `CustomizedMetricSpecification` in template shape: EC2 Auto Scaling's and Application
/// Auto Scaling's policies spell it alike, each SDK with a type of its own.
pub(crate) fn customized_metric(
    name: Option<&str>,
    namespace: Option<&str>,
    statistic: Option<&str>,
    unit: Option<&str>,
    dimensions: impl Iterator<Item = Value>,
) -> Value {
    let mut spec = Map::new();
    put(&mut spec, "MetricName", name.map(Value::from));
    put(&mut spec, "Namespace", namespace.map(Value::from));
    put(&mut spec, "Statistic", statistic.map(Value::from));
    put(&mut spec, "Unit", unit.map(Value::from));
    let dimensions: Vec<Value> = dimensions.collect();
    if !dimensions.is_empty() {
        spec.insert("Dimensions".into(), Value::Array(dimensions));
    }
    Value::Object(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_validation_error_saying_not_found_is_not_found() {
        let err = ProviderError::validation(
            "AWS::AutoScaling::AutoScalingGroup G: AutoScalingGroup name not found - null",
        )
        .with_aws_code("ValidationError");
        assert_eq!(not_found_by_message(err).kind, ErrorKind::NOT_FOUND);
        let err = ProviderError::validation("x: MinSize must be less than MaxSize")
            .with_aws_code("ValidationError");
        assert_eq!(not_found_by_message(err).kind, ErrorKind::VALIDATION);
        assert_eq!(
            cdkd_aws_common::kind_in(KINDS, "AlreadyExists"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
    }
}
