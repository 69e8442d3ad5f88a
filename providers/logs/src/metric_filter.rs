//! `AWS::Logs::MetricFilter`: physical id (and `Ref`) is the filter name; no attributes. The
//! filter lives in the template's `LogGroupName`. PutMetricFilter writes the whole filter, so a
//! create and an update are one call, and a property the template drops goes back to AWS's
//! default by being left out of it.

use std::collections::HashMap;

use aws_sdk_cloudwatchlogs::types::{MetricTransformation, StandardUnit};
use cdkd_aws_common::{
    aws_error, deleted_unless_failed, flag, given_or_generated_name, require_str, string, strings,
    tag_pairs, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    client, found, key_value_list, number, put_strings, put_text, template_number, with_logs_kind,
    MAX_NAME,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Logs::MetricFilter";

/// The `AWS::Logs::MetricFilter` provider.
#[derive(Default)]
pub struct MetricFilter;

/// One template `MetricTransformations` entry as the SDK's transformation.
fn transformation(entry: &Value) -> Result<MetricTransformation, String> {
    let dimensions: Option<HashMap<String, String>> = tag_pairs(entry.get("Dimensions"))
        .filter(|d| !d.is_empty())
        .map(|d| d.into_iter().collect());
    MetricTransformation::builder()
        .set_metric_name(string(entry.get("MetricName")))
        .set_metric_namespace(string(entry.get("MetricNamespace")))
        // Templates write a literal value as a number as often as a string.
        .set_metric_value(text(entry.get("MetricValue")))
        .set_default_value(template_number(entry.get("DefaultValue")))
        .set_unit(string(entry.get("Unit")).map(|u| StandardUnit::from(u.as_str())))
        .set_dimensions(dimensions)
        .build()
        .map_err(|e| format!("MetricTransformations: {e}"))
}

/// The template's `MetricTransformations`, which must list at least one.
fn transformations(properties: &Map<String, Value>) -> Result<Vec<MetricTransformation>, String> {
    let entries = properties
        .get("MetricTransformations")
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
        .ok_or("property MetricTransformations must list a metric transformation")?;
    entries.iter().map(transformation).collect()
}

/// A transformation CloudWatch Logs answered, in template shape.
fn transformation_shape(transformation: &MetricTransformation) -> Value {
    let mut entry = Map::new();
    entry.insert("MetricName".into(), json!(transformation.metric_name()));
    entry.insert(
        "MetricNamespace".into(),
        json!(transformation.metric_namespace()),
    );
    entry.insert("MetricValue".into(), json!(transformation.metric_value()));
    if let Some(default) = transformation.default_value() {
        entry.insert("DefaultValue".into(), number(default));
    }
    if let Some(dimensions) = transformation.dimensions().and_then(key_value_list) {
        entry.insert("Dimensions".into(), dimensions);
    }
    if let Some(unit) = transformation.unit() {
        entry.insert("Unit".into(), json!(unit.as_str()));
    }
    Value::Object(entry)
}

/// A described filter in template shape.
fn template_shape(filter: &aws_sdk_cloudwatchlogs::types::MetricFilter) -> Map<String, Value> {
    let mut props = Map::new();
    put_text(&mut props, "FilterName", filter.filter_name());
    put_text(&mut props, "LogGroupName", filter.log_group_name());
    // The pattern is required, and "" (every event) is a pattern.
    props.insert(
        "FilterPattern".into(),
        json!(filter.filter_pattern().unwrap_or_default()),
    );
    props.insert(
        "MetricTransformations".into(),
        Value::Array(
            filter
                .metric_transformations()
                .iter()
                .map(transformation_shape)
                .collect(),
        ),
    );
    if filter.apply_on_transformed_logs() {
        props.insert("ApplyOnTransformedLogs".into(), json!(true));
    }
    put_strings(
        &mut props,
        "EmitSystemFieldDimensions",
        filter.emit_system_field_dimensions(),
    );
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
) -> Result<Option<aws_sdk_cloudwatchlogs::types::MetricFilter>, ProviderError> {
    let mut token: Option<String> = None;
    loop {
        // DescribeMetricFilters matches a prefix: other filters may come first.
        let page = logs
            .describe_metric_filters()
            .log_group_name(group)
            .filter_name_prefix(name)
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| {
                with_logs_kind(aws_error(
                    &format!("{what}: DescribeMetricFilters {name} in {group}"),
                    e,
                ))
            });
        let Some(page) = found(page)? else {
            return Ok(None);
        };
        if let Some(filter) = page
            .metric_filters()
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

/// Writes the filter `name` as the template describes it.
async fn put(
    logs: &aws_sdk_cloudwatchlogs::Client,
    what: &str,
    name: &str,
    properties: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let group = require_str(properties, "LogGroupName", what)?;
    let transformations = transformations(properties)
        .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
    logs.put_metric_filter()
        .log_group_name(group)
        .filter_name(name)
        .filter_pattern(string(properties.get("FilterPattern")).unwrap_or_default())
        .set_metric_transformations(Some(transformations))
        .set_apply_on_transformed_logs(flag(properties.get("ApplyOnTransformedLogs")))
        .set_field_selection_criteria(string(properties.get("FieldSelectionCriteria")))
        .set_emit_system_field_dimensions(
            strings(properties.get("EmitSystemFieldDimensions")).filter(|d| !d.is_empty()),
        )
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            with_logs_kind(aws_error(
                &format!("{what}: PutMetricFilter {name} in {group}"),
                e,
            ))
        })
}

#[async_trait]
impl ResourceProvider for MetricFilter {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "FilterName",
                "LogGroupName",
                "FilterPattern",
                "MetricTransformations",
                "ApplyOnTransformedLogs",
                "EmitSystemFieldDimensions",
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
        // PutMetricFilter overwrites a filter of the same name; CloudFormation refuses one that
        // exists instead of taking it over.
        if find_filter(&logs, &what, group, &name).await?.is_some() {
            return Err(ProviderError::new(
                ErrorKind::ALREADY_EXISTS,
                format!("{what}: metric filter {name} already exists in log group {group}"),
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
                .delete_metric_filter()
                .log_group_name(group)
                .filter_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    with_logs_kind(aws_error(
                        &format!("{what}: DeleteMetricFilter {name} in {group}"),
                        e,
                    ))
                }),
        )
    }
}

#[async_trait]
impl Readable for MetricFilter {
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
    fn transformations_come_from_the_template_in_every_spelling() {
        let template = props(json!({
            "LogGroupName": "/app/api",
            "FilterPattern": "[ip, user, status=5*]",
            "MetricTransformations": [{
                "MetricName": "Errors",
                "MetricNamespace": "App/Api",
                "MetricValue": 1,
                "DefaultValue": "0",
                "Unit": "Count",
                "Dimensions": [
                    {"Key": "Status", "Value": "$status"},
                    {"Key": "User", "Value": "$user"}
                ],
            }],
        }));
        let built = transformations(&template).unwrap();
        assert_eq!(built.len(), 1);
        let t = &built[0];
        assert_eq!(t.metric_name(), "Errors");
        assert_eq!(t.metric_namespace(), "App/Api");
        assert_eq!(t.metric_value(), "1");
        assert_eq!(t.default_value(), Some(0.0));
        assert_eq!(t.unit(), Some(&StandardUnit::Count));
        let dimensions = t.dimensions().unwrap();
        assert_eq!(dimensions.len(), 2);
        assert_eq!(dimensions["Status"], "$status");
        assert_eq!(dimensions["User"], "$user");

        let minimal = props(json!({"MetricTransformations": [
            {"MetricName": "Hits", "MetricNamespace": "N", "MetricValue": "$.bytes"}
        ]}));
        let t = &transformations(&minimal).unwrap()[0];
        assert_eq!(t.metric_value(), "$.bytes");
        assert_eq!(
            (t.default_value(), t.unit(), t.dimensions()),
            (None, None, None)
        );
    }

    #[test]
    fn a_transformation_without_its_required_fields_is_refused() {
        assert!(transformations(&props(json!({}))).is_err());
        assert!(transformations(&props(json!({"MetricTransformations": []}))).is_err());
        let no_value = props(json!({"MetricTransformations": [
            {"MetricName": "Hits", "MetricNamespace": "N"}
        ]}));
        let err = transformations(&no_value).unwrap_err();
        assert!(err.contains("metric_value"), "{err}");
    }

    #[test]
    fn the_live_filter_reads_back_in_template_shape() {
        let transformation = MetricTransformation::builder()
            .metric_name("Errors")
            .metric_namespace("App/Api")
            .metric_value("1")
            .default_value(0.0)
            .unit(StandardUnit::Count)
            .dimensions("User", "$user")
            .dimensions("Status", "$status")
            .build()
            .unwrap();
        let filter = aws_sdk_cloudwatchlogs::types::MetricFilter::builder()
            .filter_name("errors")
            .log_group_name("/app/api")
            .filter_pattern("ERROR")
            .metric_transformations(transformation)
            .apply_on_transformed_logs(true)
            .emit_system_field_dimensions("@aws.account")
            .field_selection_criteria("@aws.region = \"us-east-1\"")
            .creation_time(1)
            .build();
        assert_eq!(
            Value::Object(template_shape(&filter)),
            json!({
                "FilterName": "errors",
                "LogGroupName": "/app/api",
                "FilterPattern": "ERROR",
                "MetricTransformations": [{
                    "MetricName": "Errors",
                    "MetricNamespace": "App/Api",
                    "MetricValue": "1",
                    "DefaultValue": 0,
                    "Dimensions": [
                        {"Key": "Status", "Value": "$status"},
                        {"Key": "User", "Value": "$user"}
                    ],
                    "Unit": "Count",
                }],
                "ApplyOnTransformedLogs": true,
                "EmitSystemFieldDimensions": ["@aws.account"],
                "FieldSelectionCriteria": "@aws.region = \"us-east-1\"",
            })
        );
        let plain = aws_sdk_cloudwatchlogs::types::MetricFilter::builder()
            .filter_name("all")
            .log_group_name("g")
            .metric_transformations(
                MetricTransformation::builder()
                    .metric_name("Hits")
                    .metric_namespace("N")
                    .metric_value("2.5")
                    .default_value(0.25)
                    .build()
                    .unwrap(),
            )
            .build();
        assert_eq!(
            Value::Object(template_shape(&plain)),
            json!({
                "FilterName": "all",
                "LogGroupName": "g",
                "FilterPattern": "",
                "MetricTransformations": [{
                    "MetricName": "Hits",
                    "MetricNamespace": "N",
                    "MetricValue": "2.5",
                    "DefaultValue": 0.25,
                }],
            })
        );
    }

    #[test]
    fn a_read_back_template_builds_the_same_transformation() {
        let template = json!({
            "MetricName": "Latency",
            "MetricNamespace": "App",
            "MetricValue": "$.latency",
            "DefaultValue": 0,
            "Unit": "Milliseconds",
            "Dimensions": [{"Key": "Route", "Value": "$.route"}],
        });
        let built = transformation(&template).unwrap();
        assert_eq!(transformation_shape(&built), template);
    }
}
