//! `AWS::Logs::SubscriptionFilter`: physical id (and `Ref`) is the filter name; no attributes.
//! The filter lives in the template's `LogGroupName`. PutSubscriptionFilter writes the whole
//! filter, so a create and an update are one call, and a property the template drops goes back
//! to AWS's default by being left out of it.

use std::time::Duration;

use aws_sdk_cloudwatchlogs::types::Distribution;
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, flag, given_or_generated_name, require_str, string, strings,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, found, put_strings, put_text, with_logs_kind, MAX_NAME};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Logs::SubscriptionFilter";

/// How long a put waits for a Lambda destination to become invokable by CloudWatch Logs.
const LAMBDA_PATIENCE: Duration = Duration::from_secs(30);

/// The first pause between those attempts (then a tenth of the time waited, up to 5 s).
const LAMBDA_FIRST_PAUSE: Duration = Duration::from_millis(500);

/// The `AWS::Logs::SubscriptionFilter` provider.
#[derive(Default)]
pub struct SubscriptionFilter;

/// Whether `err` is CloudWatch Logs' test delivery failing because a Lambda destination's
/// permission for `logs.amazonaws.com`, created just before, has not reached Lambda yet.
/// `context` is the prefix the error's message starts with, left out of the search so that a
/// logical id such as `PermissionFilter` does not match.
fn lambda_not_ready(err: &ProviderError, context: &str) -> bool {
    let message = err.message.as_str();
    let message = message.strip_prefix(context).unwrap_or(message);
    err.aws_code() == Some("InvalidParameterException")
        && (message.contains("Could not execute the lambda function")
            || message.to_ascii_lowercase().contains("permission"))
}

/// The fields of one PutSubscriptionFilter call, as the template gives them.
#[derive(Debug, Clone, PartialEq)]
struct Filter {
    /// `LogGroupName`.
    group: String,
    /// `FilterPattern` (`""` matches every event).
    pattern: String,
    /// `DestinationArn`.
    destination: String,
    /// `RoleArn`.
    role: Option<String>,
    /// `Distribution`.
    distribution: Option<String>,
    /// `ApplyOnTransformedLogs`.
    transformed: Option<bool>,
    /// `FieldSelectionCriteria`.
    selection: Option<String>,
    /// `EmitSystemFields`.
    system_fields: Option<Vec<String>>,
}

/// The filter the template describes.
fn filter(properties: &Map<String, Value>, what: &str) -> Result<Filter, ProviderError> {
    Ok(Filter {
        group: require_str(properties, "LogGroupName", what)?.to_string(),
        pattern: string(properties.get("FilterPattern")).unwrap_or_default(),
        destination: require_str(properties, "DestinationArn", what)?.to_string(),
        role: string(properties.get("RoleArn")).filter(|r| !r.is_empty()),
        distribution: string(properties.get("Distribution")),
        transformed: flag(properties.get("ApplyOnTransformedLogs")),
        selection: string(properties.get("FieldSelectionCriteria")),
        system_fields: strings(properties.get("EmitSystemFields")).filter(|f| !f.is_empty()),
    })
}

/// A described filter in template shape.
fn template_shape(
    filter: &aws_sdk_cloudwatchlogs::types::SubscriptionFilter,
) -> Map<String, Value> {
    let mut props = Map::new();
    put_text(&mut props, "FilterName", filter.filter_name());
    put_text(&mut props, "LogGroupName", filter.log_group_name());
    props.insert(
        "FilterPattern".into(),
        json!(filter.filter_pattern().unwrap_or_default()),
    );
    put_text(&mut props, "DestinationArn", filter.destination_arn());
    put_text(&mut props, "RoleArn", filter.role_arn());
    put_text(
        &mut props,
        "Distribution",
        filter.distribution().map(Distribution::as_str),
    );
    if filter.apply_on_transformed_logs() {
        props.insert("ApplyOnTransformedLogs".into(), json!(true));
    }
    put_strings(&mut props, "EmitSystemFields", filter.emit_system_fields());
    put_text(
        &mut props,
        "FieldSelectionCriteria",
        filter.field_selection_criteria(),
    );
    props
}

/// The filter `name` of the group `group`; `None` when it (or the group) is gone.
async fn find_filter(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    group: &str,
    name: &str,
) -> Result<Option<aws_sdk_cloudwatchlogs::types::SubscriptionFilter>, ProviderError> {
    let mut token: Option<String> = None;
    loop {
        // DescribeSubscriptionFilters matches a prefix: other filters may come first.
        let page = logs
            .describe_subscription_filters()
            .log_group_name(group)
            .filter_name_prefix(name)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| {
                with_logs_kind(aws_error(
                    &format!("{what}: DescribeSubscriptionFilters {name} in {group}"),
                    e,
                ))
            });
        let Some(page) = found(page)? else {
            return Ok(None);
        };
        if let Some(filter) = page
            .subscription_filters()
            .iter()
            .find(|f| f.filter_name() == Some(name))
        {
            return Ok(Some(filter.clone()));
        }
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => return Ok(None),
        }
    }
}

/// One PutSubscriptionFilter of `filter` under `name`; its errors start with `context`.
async fn put_once(
    logs: &aws_sdk_cloudwatchlogs::Client,
    context: &str,
    name: &str,
    filter: &Filter,
) -> Result<(), ProviderError> {
    logs.put_subscription_filter()
        .log_group_name(&filter.group)
        .filter_name(name)
        .filter_pattern(&filter.pattern)
        .destination_arn(&filter.destination)
        .set_role_arn(filter.role.clone())
        .set_distribution(filter.distribution.as_deref().map(Distribution::from))
        .set_apply_on_transformed_logs(filter.transformed)
        .set_field_selection_criteria(filter.selection.clone())
        .set_emit_system_fields(filter.system_fields.clone())
        .send()
        .await
        .map(|_| ())
        .map_err(|e| with_logs_kind(aws_error(context, e)))
}

/// Writes the filter `name` as the template describes it, waiting out a Lambda destination
/// whose invoke permission is still propagating.
async fn put(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    name: &str,
    properties: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let filter = filter(properties, what)?;
    let context = format!("{what}: PutSubscriptionFilter {name} in {}", filter.group);
    // With a role (a Kinesis or Firehose destination), CloudWatch Logs' test delivery fails
    // until IAM has propagated the role: waited for as long as any role consumer.
    let role = filter.role.as_deref();
    let not_ready = |err: &ProviderError| {
        lambda_not_ready(err, &context) || (role.is_some() && undeliverable(err, &context))
    };
    let patience = match role {
        Some(_) => cdkd_aws_common::IAM_PROPAGATION,
        None => LAMBDA_PATIENCE,
    };
    let started = tokio::time::Instant::now();
    let retry = |err: &ProviderError, _| {
        let again = not_ready(err);
        if again {
            tracing::info!(
                "{what}: waiting for {} to accept CloudWatch Logs ({}; {:.0?} so far)",
                filter.destination,
                err.message,
                started.elapsed()
            );
        }
        again
    };
    let answer = cdkd_aws_common::retry_while(LAMBDA_FIRST_PAUSE, patience, retry, || {
        put_once(logs, &context, name, &filter)
    })
    .await;
    match (answer, role) {
        (Err(err), Some(role)) if not_ready(&err) => Err(cdkd_aws_common::not_propagated(
            err,
            &format!("the role {role}"),
            started.elapsed(),
        )),
        (other, _) => other,
    }
}

/// Whether `err` is CloudWatch Logs' test delivery to a stream destination failing ("Could not
/// deliver test message to specified Kinesis stream", ... Firehose ...): the destination's
/// role not usable yet.
fn undeliverable(err: &ProviderError, context: &str) -> bool {
    let message = err.message.as_str();
    let message = message.strip_prefix(context).unwrap_or(message);
    err.aws_code() == Some("InvalidParameterException")
        && message.contains("Could not deliver test message")
}

#[async_trait]
impl ResourceProvider for SubscriptionFilter {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "FilterName",
                "LogGroupName",
                "DestinationArn",
                "FilterPattern",
                "RoleArn",
                "Distribution",
                "ApplyOnTransformedLogs",
                "EmitSystemFields",
                "FieldSelectionCriteria",
            ])
            .create_only(&["FilterName", "LogGroupName"])
            .read_and_import()
            .finds_created_in(&["LogGroupName", "FilterName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let group = require_str(&request.properties, "LogGroupName", &what)?;
        let name = given_or_generated_name(&request, "FilterName", MAX_NAME, false);
        let logs = client(ctx).await?;
        // PutSubscriptionFilter overwrites a filter of the same name; CloudFormation refuses one
        // that exists instead of taking it over.
        if find_filter(&logs, &what, group, &name).await?.is_some() {
            return Err(ProviderError::new(
                ErrorKind::ALREADY_EXISTS,
                format!("{what}: subscription filter {name} already exists in log group {group}"),
            ));
        }
        put(&logs, &what, &name, &request.properties).await?;
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
        let logs = client(ctx).await?;
        put(&logs, &what, &request.physical_id, &request.properties).await?;
        Ok(UpdateResult {
            physical_id: request.physical_id,
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
        let group = require_str(&request.properties, "LogGroupName", &what)?;
        let name = &request.physical_id;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_subscription_filter()
                .log_group_name(group)
                .filter_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    with_logs_kind(aws_error(
                        &format!("{what}: DeleteSubscriptionFilter {name} in {group}"),
                        e,
                    ))
                }),
        )
    }
}

#[async_trait]
impl Readable for SubscriptionFilter {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let group = require_str(&request.properties, "LogGroupName", what)?;
        let logs = client(ctx).await?;
        Ok(find_filter(&logs, what, group, &request.physical_id)
            .await?
            .map(|f| template_shape(&f)))
    }

    /// The template's name or the one generated from the token, in its group.
    const CREATED_NAME: Option<(Option<&'static str>, usize)> =
        Some((Some("FilterName"), MAX_NAME));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_template_becomes_one_put() {
        let template = props(json!({
            "LogGroupName": "/app/api",
            "FilterPattern": "ERROR",
            "DestinationArn": "arn:aws:lambda:us-east-1:1:function:ship",
            "RoleArn": "",
            "Distribution": "Random",
            "ApplyOnTransformedLogs": "true",
            "EmitSystemFields": ["@aws.account"],
            "FieldSelectionCriteria": "@aws.region = \"us-east-1\"",
        }));
        assert_eq!(
            filter(&template, "T L").unwrap(),
            Filter {
                group: "/app/api".into(),
                pattern: "ERROR".into(),
                destination: "arn:aws:lambda:us-east-1:1:function:ship".into(),
                role: None,
                distribution: Some("Random".into()),
                transformed: Some(true),
                selection: Some("@aws.region = \"us-east-1\"".into()),
                system_fields: Some(vec!["@aws.account".into()]),
            }
        );
        let minimal = props(json!({
            "LogGroupName": "g",
            "FilterPattern": "",
            "DestinationArn": "arn:aws:kinesis:us-east-1:1:stream/s",
            "RoleArn": "arn:aws:iam::1:role/r",
            "EmitSystemFields": [],
        }));
        let built = filter(&minimal, "T L").unwrap();
        assert_eq!(built.role.as_deref(), Some("arn:aws:iam::1:role/r"));
        assert_eq!((built.distribution, built.system_fields), (None, None));
        let err = filter(&props(json!({"LogGroupName": "g"})), "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);
        assert!(err.message.contains("DestinationArn"), "{}", err.message);
    }

    #[test]
    fn only_a_lambda_not_yet_invokable_is_waited_for() {
        let invalid = |message: &str| {
            ProviderError::new(ErrorKind::VALIDATION, message)
                .with_aws_code("InvalidParameterException")
        };
        let context = "T PermissionFilter: PutSubscriptionFilter f in g";
        assert!(lambda_not_ready(
            &invalid(&format!("{context}: Could not execute the lambda function. Make sure you have given CloudWatch Logs permission to execute your function.")),
            context
        ));
        assert!(lambda_not_ready(
            &invalid(&format!("{context}: missing Permission")),
            context
        ));
        assert!(!lambda_not_ready(
            &invalid(&format!("{context}: invalid filter pattern")),
            context
        ));
        assert!(!lambda_not_ready(
            &ProviderError::new(
                ErrorKind::ACCESS_DENIED,
                format!("{context}: no permission")
            )
            .with_aws_code("AccessDeniedException"),
            context
        ));
        assert!(undeliverable(
            &invalid(&format!("{context}: Could not deliver test message to specified Kinesis stream. Check if the given kinesis stream is in ACTIVE state.")),
            context
        ));
        assert!(!undeliverable(
            &invalid(&format!("{context}: invalid filter pattern")),
            context
        ));
    }

    #[test]
    fn the_live_filter_reads_back_in_template_shape() {
        let live = aws_sdk_cloudwatchlogs::types::SubscriptionFilter::builder()
            .filter_name("ship")
            .log_group_name("/app/api")
            .filter_pattern("")
            .destination_arn("arn:aws:lambda:us-east-1:1:function:ship")
            .distribution(Distribution::ByLogStream)
            .emit_system_fields("@aws.account")
            .creation_time(1)
            .build();
        assert_eq!(
            Value::Object(template_shape(&live)),
            json!({
                "FilterName": "ship",
                "LogGroupName": "/app/api",
                "FilterPattern": "",
                "DestinationArn": "arn:aws:lambda:us-east-1:1:function:ship",
                "Distribution": "ByLogStream",
                "EmitSystemFields": ["@aws.account"],
            })
        );
        let with_role = aws_sdk_cloudwatchlogs::types::SubscriptionFilter::builder()
            .filter_name("k")
            .log_group_name("g")
            .filter_pattern("ERROR")
            .destination_arn("arn:aws:kinesis:us-east-1:1:stream/s")
            .role_arn("arn:aws:iam::1:role/r")
            .apply_on_transformed_logs(true)
            .build();
        let shape = template_shape(&with_role);
        assert_eq!(shape["RoleArn"], "arn:aws:iam::1:role/r");
        assert_eq!(shape["ApplyOnTransformedLogs"], true);
        assert!(!shape.contains_key("Distribution"));
    }
}
