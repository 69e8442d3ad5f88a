//! `AWS::CloudWatch::Alarm`: physical id (and `Ref`) is the alarm name; attribute `Arn`. A
//! create and an update are both one PutMetricAlarm with the whole definition (an update
//! overwrites every setting, so a property removed from the template goes back to
//! CloudWatch's default); tag changes go through TagResource/UntagResource. A create tags the
//! alarm with the create token so `find_created` finds a generated name after a crash.

use aws_sdk_cloudwatch::operation::put_metric_alarm::builders::PutMetricAlarmInputBuilder;
use aws_sdk_cloudwatch::operation::put_metric_alarm::PutMetricAlarmInput;
use aws_sdk_cloudwatch::types::{
    AlarmPromQlCriteria, AlarmType, ComparisonOperator, Dimension, EvaluationCriteria,
    EvaluationWindow, Metric, MetricAlarm, MetricDataQuery, MetricStat, SlidingWindow,
    StandardUnit, Statistic, Tag, WallClockWindow, WarmUpConfiguration,
};
use cdkd_aws_common::{
    deleted_unless_failed, flag, given_or_generated_name, int, put, string, text, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{
    action_configuration, action_configuration_shape, action_list, actions, alarm_arn, client,
    create_tags, cw_error, find_created, float, live_tags, number, refuse_existing_alarm,
    template_tags, update_tags, Listing,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::CloudWatch::Alarm";

/// The longest alarm name CloudWatch takes.
const MAX_NAME: usize = 255;

/// The `AWS::CloudWatch::Alarm` provider.
#[derive(Default)]
pub struct Alarm;

/// A template's `[{Name, Value}]` dimensions as CloudWatch takes them.
fn dimensions(value: Option<&Value>) -> Option<Vec<Dimension>> {
    value?.as_array().map(|items| {
        items
            .iter()
            .map(|d| {
                Dimension::builder()
                    .set_name(text(d.get("Name")))
                    .set_value(text(d.get("Value")))
                    .build()
            })
            .collect()
    })
}

/// A template's `MetricStat` as CloudWatch takes it.
fn metric_stat(value: &Value) -> MetricStat {
    let metric = value.get("Metric").map(|m| {
        Metric::builder()
            .set_metric_name(text(m.get("MetricName")))
            .set_namespace(text(m.get("Namespace")))
            .set_dimensions(dimensions(m.get("Dimensions")))
            .build()
    });
    MetricStat::builder()
        .set_metric(metric)
        .set_period(int(value.get("Period")))
        .set_stat(text(value.get("Stat")))
        .set_unit(text(value.get("Unit")).map(|u| StandardUnit::from(u.as_str())))
        .build()
}

/// A template's `Metrics` (metric math) as CloudWatch takes them, in template order.
fn metrics(value: Option<&Value>) -> Option<Vec<MetricDataQuery>> {
    value?.as_array().map(|items| {
        items
            .iter()
            .map(|q| {
                MetricDataQuery::builder()
                    .set_id(text(q.get("Id")))
                    .set_expression(text(q.get("Expression")))
                    .set_label(text(q.get("Label")))
                    .set_return_data(flag(q.get("ReturnData")))
                    .set_period(int(q.get("Period")))
                    .set_account_id(text(q.get("AccountId")))
                    .set_metric_stat(q.get("MetricStat").map(metric_stat))
                    .build()
            })
            .collect()
    })
}

/// A template's `EvaluationWindow`: a wall-clock window, or the sliding one.
fn evaluation_window(properties: &Map<String, Value>) -> Option<EvaluationWindow> {
    let window = properties.get("EvaluationWindow")?;
    if let Some(wall) = window.get("WallClockWindow") {
        return Some(EvaluationWindow::WallClockWindow(
            WallClockWindow::builder()
                .set_timezone(text(wall.get("Timezone")))
                .build(),
        ));
    }
    window
        .get("SlidingWindow")
        .map(|_| EvaluationWindow::SlidingWindow(SlidingWindow::builder().build()))
}

/// A template's `WarmUpConfiguration`.
fn warm_up(properties: &Map<String, Value>) -> Option<WarmUpConfiguration> {
    let warm = properties.get("WarmUpConfiguration")?;
    Some(
        WarmUpConfiguration::builder()
            .set_warm_up_period_duration_in_minutes(int(warm.get("WarmUpPeriodDurationInMinutes")))
            .set_only_start_evaluating_after_warm_up_period_ends(flag(
                warm.get("OnlyStartEvaluatingAfterWarmUpPeriodEnds"),
            ))
            .build(),
    )
}

/// A template's `EvaluationCriteria` (a PromQL alarm's query).
fn evaluation_criteria(properties: &Map<String, Value>) -> Option<EvaluationCriteria> {
    let criteria = properties
        .get("EvaluationCriteria")?
        .get("PromQLCriteria")?;
    Some(EvaluationCriteria::PromQlCriteria(
        AlarmPromQlCriteria::builder()
            .set_query(text(criteria.get("Query")))
            .set_pending_period(int(criteria.get("PendingPeriod")))
            .set_recovery_period(int(criteria.get("RecoveryPeriod")))
            .build(),
    ))
}

/// The PutMetricAlarm of the alarm `name` with the template's whole definition; `tags` only on
/// a create (CloudWatch ignores them on an existing alarm).
fn put_input(
    name: &str,
    properties: &Map<String, Value>,
    tags: Vec<Tag>,
) -> PutMetricAlarmInputBuilder {
    PutMetricAlarmInput::builder()
        .alarm_name(name)
        .set_alarm_description(string(properties.get("AlarmDescription")))
        .set_actions_enabled(flag(properties.get("ActionsEnabled")))
        .set_ok_actions(actions(properties, "OKActions"))
        .set_alarm_actions(actions(properties, "AlarmActions"))
        .set_insufficient_data_actions(actions(properties, "InsufficientDataActions"))
        .set_metric_name(text(properties.get("MetricName")))
        .set_namespace(text(properties.get("Namespace")))
        .set_statistic(text(properties.get("Statistic")).map(|s| Statistic::from(s.as_str())))
        .set_extended_statistic(text(properties.get("ExtendedStatistic")))
        .set_dimensions(dimensions(properties.get("Dimensions")))
        .set_period(int(properties.get("Period")))
        .set_unit(text(properties.get("Unit")).map(|u| StandardUnit::from(u.as_str())))
        .set_evaluation_periods(int(properties.get("EvaluationPeriods")))
        .set_datapoints_to_alarm(int(properties.get("DatapointsToAlarm")))
        .set_threshold(float(properties.get("Threshold")))
        .set_threshold_metric_id(text(properties.get("ThresholdMetricId")))
        .set_comparison_operator(
            text(properties.get("ComparisonOperator"))
                .map(|c| ComparisonOperator::from(c.as_str())),
        )
        .set_treat_missing_data(text(properties.get("TreatMissingData")))
        .set_evaluate_low_sample_count_percentile(text(
            properties.get("EvaluateLowSampleCountPercentile"),
        ))
        .set_metrics(metrics(properties.get("Metrics")))
        .set_evaluation_window(evaluation_window(properties))
        .set_warm_up_configuration(warm_up(properties))
        .set_evaluation_criteria(evaluation_criteria(properties))
        .set_evaluation_interval(int(properties.get("EvaluationInterval")))
        .set_action_configuration(action_configuration(properties))
        .set_tags(Some(tags).filter(|t| !t.is_empty()))
}

/// Dimensions in template shape, sorted by name (CloudWatch keeps no order that matters).
fn dimensions_shape(live: &[Dimension]) -> Value {
    let mut pairs: Vec<(&str, &str)> = live
        .iter()
        .map(|d| (d.name().unwrap_or_default(), d.value().unwrap_or_default()))
        .collect();
    pairs.sort();
    Value::Array(
        pairs
            .into_iter()
            .map(|(name, value)| json!({"Name": name, "Value": value}))
            .collect(),
    )
}

/// A metric-math query in template shape.
fn query_shape(query: &MetricDataQuery) -> Value {
    let mut shape = Map::new();
    put(&mut shape, "Id", query.id().map(|v| json!(v)));
    put(
        &mut shape,
        "Expression",
        query.expression().map(|v| json!(v)),
    );
    put(&mut shape, "Label", query.label().map(|v| json!(v)));
    put(
        &mut shape,
        "ReturnData",
        query.return_data().map(Value::Bool),
    );
    put(&mut shape, "Period", query.period().map(|v| json!(v)));
    put(
        &mut shape,
        "AccountId",
        query.account_id().map(|v| json!(v)),
    );
    if let Some(stat) = query.metric_stat() {
        let mut block = Map::new();
        if let Some(metric) = stat.metric() {
            let mut m = Map::new();
            put(&mut m, "MetricName", metric.metric_name().map(|v| json!(v)));
            put(&mut m, "Namespace", metric.namespace().map(|v| json!(v)));
            if !metric.dimensions().is_empty() {
                m.insert("Dimensions".into(), dimensions_shape(metric.dimensions()));
            }
            block.insert("Metric".into(), Value::Object(m));
        }
        put(&mut block, "Period", stat.period().map(|v| json!(v)));
        put(&mut block, "Stat", stat.stat().map(|v| json!(v)));
        put(&mut block, "Unit", stat.unit().map(|u| json!(u.as_str())));
        shape.insert("MetricStat".into(), Value::Object(block));
    }
    Value::Object(shape)
}

/// An alarm's `WarmUpConfiguration` in template shape.
fn warm_up_shape(warm: &aws_sdk_cloudwatch::types::WarmUpConfiguration) -> Value {
    let mut block = Map::new();
    put(
        &mut block,
        "WarmUpPeriodDurationInMinutes",
        warm.warm_up_period_duration_in_minutes().map(|v| json!(v)),
    );
    put(
        &mut block,
        "OnlyStartEvaluatingAfterWarmUpPeriodEnds",
        warm.only_start_evaluating_after_warm_up_period_ends()
            .map(Value::Bool),
    );
    Value::Object(block)
}

/// An alarm's PromQL `EvaluationCriteria` in template shape.
fn promql_shape(criteria: &aws_sdk_cloudwatch::types::AlarmPromQlCriteria) -> Value {
    let mut block = Map::new();
    put(&mut block, "Query", criteria.query().map(|v| json!(v)));
    put(
        &mut block,
        "PendingPeriod",
        criteria.pending_period().map(|v| json!(v)),
    );
    put(
        &mut block,
        "RecoveryPeriod",
        criteria.recovery_period().map(|v| json!(v)),
    );
    json!({"PromQLCriteria": block})
}

/// A live alarm in template shape; the sliding evaluation window, every alarm's default, only
/// when the template names a window.
fn template_shape(
    alarm: &MetricAlarm,
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "AlarmName",
        alarm.alarm_name().map(|v| json!(v)),
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
        "MetricName",
        alarm.metric_name().map(|v| json!(v)),
    );
    put(&mut props, "Namespace", alarm.namespace().map(|v| json!(v)));
    put(
        &mut props,
        "Statistic",
        alarm.statistic().map(|s| json!(s.as_str())),
    );
    put(
        &mut props,
        "ExtendedStatistic",
        alarm.extended_statistic().map(|v| json!(v)),
    );
    if !alarm.dimensions().is_empty() {
        props.insert("Dimensions".into(), dimensions_shape(alarm.dimensions()));
    }
    put(&mut props, "Period", alarm.period().map(|v| json!(v)));
    put(&mut props, "Unit", alarm.unit().map(|u| json!(u.as_str())));
    put(
        &mut props,
        "EvaluationPeriods",
        alarm.evaluation_periods().map(|v| json!(v)),
    );
    put(
        &mut props,
        "DatapointsToAlarm",
        alarm.datapoints_to_alarm().map(|v| json!(v)),
    );
    put(&mut props, "Threshold", alarm.threshold().map(number));
    put(
        &mut props,
        "ThresholdMetricId",
        alarm.threshold_metric_id().map(|v| json!(v)),
    );
    put(
        &mut props,
        "ComparisonOperator",
        alarm.comparison_operator().map(|c| json!(c.as_str())),
    );
    put(
        &mut props,
        "TreatMissingData",
        alarm.treat_missing_data().map(|v| json!(v)),
    );
    put(
        &mut props,
        "EvaluateLowSampleCountPercentile",
        alarm
            .evaluate_low_sample_count_percentile()
            .filter(|v| !v.is_empty())
            .map(|v| json!(v)),
    );
    if !alarm.metrics().is_empty() {
        props.insert(
            "Metrics".into(),
            Value::Array(alarm.metrics().iter().map(query_shape).collect()),
        );
    }
    match alarm.evaluation_window() {
        Some(EvaluationWindow::WallClockWindow(wall)) => {
            let mut block = Map::new();
            put(&mut block, "Timezone", wall.timezone().map(|v| json!(v)));
            props.insert("EvaluationWindow".into(), json!({"WallClockWindow": block}));
        }
        Some(EvaluationWindow::SlidingWindow(_)) if template.contains_key("EvaluationWindow") => {
            props.insert("EvaluationWindow".into(), json!({"SlidingWindow": {}}));
        }
        _ => {}
    }
    put(
        &mut props,
        "WarmUpConfiguration",
        alarm.warm_up_configuration().map(warm_up_shape),
    );
    if let Some(EvaluationCriteria::PromQlCriteria(criteria)) = alarm.evaluation_criteria() {
        props.insert("EvaluationCriteria".into(), promql_shape(criteria));
    }
    put(
        &mut props,
        "EvaluationInterval",
        alarm.evaluation_interval().map(|v| json!(v)),
    );
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

/// The live metric alarm named `name`; `None` when there is none.
async fn describe(
    cw: &aws_sdk_cloudwatch::Client,
    what: &str,
    name: &str,
) -> Result<Option<MetricAlarm>, ProviderError> {
    let answer = cw
        .describe_alarms()
        .alarm_names(name)
        .alarm_types(AlarmType::MetricAlarm)
        .send()
        .await
        .map_err(cw_error!(what, format!("DescribeAlarms {name}")))?;
    Ok(answer
        .metric_alarms()
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
impl ResourceProvider for Alarm {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "AlarmName",
                "AlarmDescription",
                "ActionsEnabled",
                "AlarmActions",
                "OKActions",
                "InsufficientDataActions",
                "MetricName",
                "Namespace",
                "Statistic",
                "ExtendedStatistic",
                "Dimensions",
                "Period",
                "Unit",
                "EvaluationPeriods",
                "DatapointsToAlarm",
                "Threshold",
                "ThresholdMetricId",
                "ComparisonOperator",
                "TreatMissingData",
                "EvaluateLowSampleCountPercentile",
                "Metrics",
                "EvaluationWindow",
                "WarmUpConfiguration",
                "EvaluationCriteria",
                "EvaluationInterval",
                "ActionConfiguration",
                "Tags",
            ])
            .create_only(&["AlarmName"])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    /// `find_created`: the alarm a create with the request's token made.
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
            Listing::Alarms(AlarmType::MetricAlarm),
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
        let tags = create_tags(&request.properties, &request.client_token);
        let input = put_input(&name, &request.properties, tags);
        let cw = client(ctx).await?;
        refuse_existing_alarm(&cw, &what, &name, &request.client_token).await?;
        input
            .send_with(&cw)
            .await
            .map_err(cw_error!(what, format!("PutMetricAlarm {name}")))?;
        let arn = alarm_arn(&cw, &what, &name, AlarmType::MetricAlarm).await?;
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
        let cw = client(ctx).await?;
        put_input(name, &request.properties, Vec::new())
            .send_with(&cw)
            .await
            .map_err(cw_error!(what, format!("PutMetricAlarm {name}")))?;
        let arn = alarm_arn(&cw, &what, name, AlarmType::MetricAlarm).await?;
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
impl Readable for Alarm {
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
        Ok(Some(template_shape(&alarm, &tags, &request.properties)))
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
    fn a_simple_metric_alarm_puts_every_setting_with_numbers_from_strings() {
        let template = props(json!({
            "AlarmName": "high-cpu",
            "AlarmDescription": "CPU above 80%",
            "ActionsEnabled": "false",
            "AlarmActions": ["arn:aws:sns:us-east-1:1:alerts"],
            "MetricName": "CPUUtilization",
            "Namespace": "AWS/EC2",
            "Statistic": "Average",
            "Dimensions": [{"Name": "InstanceId", "Value": "i-0abc"}],
            "Period": "300",
            "Unit": "Percent",
            "EvaluationPeriods": 2,
            "DatapointsToAlarm": "1",
            "Threshold": "80.5",
            "ComparisonOperator": "GreaterThanThreshold",
            "TreatMissingData": "notBreaching",
            "Tags": [{"Key": "team", "Value": "a"}],
        }));
        let input = put_input("high-cpu", &template, create_tags(&template, "tok"))
            .build()
            .unwrap();
        assert_eq!(input.alarm_name(), Some("high-cpu"));
        assert_eq!(input.alarm_description(), Some("CPU above 80%"));
        assert_eq!(input.actions_enabled(), Some(false));
        assert_eq!(input.alarm_actions(), ["arn:aws:sns:us-east-1:1:alerts"]);
        assert!(input.ok_actions().is_empty());
        assert_eq!(input.metric_name(), Some("CPUUtilization"));
        assert_eq!(input.namespace(), Some("AWS/EC2"));
        assert_eq!(input.statistic(), Some(&Statistic::Average));
        assert_eq!(input.dimensions().len(), 1);
        assert_eq!(input.dimensions()[0].name(), Some("InstanceId"));
        assert_eq!(input.dimensions()[0].value(), Some("i-0abc"));
        assert_eq!(input.period(), Some(300));
        assert_eq!(input.unit(), Some(&StandardUnit::Percent));
        assert_eq!(input.evaluation_periods(), Some(2));
        assert_eq!(input.datapoints_to_alarm(), Some(1));
        assert_eq!(input.threshold(), Some(80.5));
        assert_eq!(
            input.comparison_operator(),
            Some(&ComparisonOperator::GreaterThanThreshold)
        );
        assert_eq!(input.treat_missing_data(), Some("notBreaching"));
        assert!(input.metrics().is_empty());
        let tags: Vec<(Option<&str>, Option<&str>)> =
            input.tags().iter().map(|t| (t.key(), t.value())).collect();
        assert_eq!(
            tags,
            [
                (Some("team"), Some("a")),
                (Some(CREATE_TOKEN_TAG), Some("tok"))
            ]
        );
        // An update puts the same definition without tags (CloudWatch ignores them there).
        let update = put_input("high-cpu", &template, Vec::new())
            .build()
            .unwrap();
        assert!(update.tags().is_empty());
        assert_eq!(update.threshold(), Some(80.5));
    }

    #[test]
    fn a_metric_math_alarm_puts_its_queries_in_order() {
        let template = props(json!({
            "EvaluationPeriods": 1,
            "Threshold": 10,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "Metrics": [
                {"Id": "e1", "Expression": "m1 / m2 * 100", "Label": "ErrorRate", "ReturnData": true},
                {"Id": "m1", "ReturnData": "false", "MetricStat": {
                    "Metric": {"MetricName": "Errors", "Namespace": "AWS/Lambda",
                               "Dimensions": [{"Name": "FunctionName", "Value": "f"}]},
                    "Period": "60", "Stat": "Sum", "Unit": "Count"}},
                {"Id": "m2", "ReturnData": false, "AccountId": "123456789012", "MetricStat": {
                    "Metric": {"MetricName": "Invocations", "Namespace": "AWS/Lambda"},
                    "Period": 60, "Stat": "Sum"}},
            ],
        }));
        let input = put_input("rate", &template, Vec::new()).build().unwrap();
        assert_eq!(input.metric_name(), None);
        assert_eq!(input.statistic(), None);
        assert_eq!(input.threshold(), Some(10.0));
        let queries = input.metrics();
        let ids: Vec<Option<&str>> = queries.iter().map(MetricDataQuery::id).collect();
        assert_eq!(ids, [Some("e1"), Some("m1"), Some("m2")]);
        assert_eq!(queries[0].expression(), Some("m1 / m2 * 100"));
        assert_eq!(queries[0].label(), Some("ErrorRate"));
        assert_eq!(queries[0].return_data(), Some(true));
        assert!(queries[0].metric_stat().is_none());
        let stat = queries[1].metric_stat().unwrap();
        assert_eq!(queries[1].return_data(), Some(false));
        assert_eq!(stat.period(), Some(60));
        assert_eq!(stat.stat(), Some("Sum"));
        assert_eq!(stat.unit(), Some(&StandardUnit::Count));
        let metric = stat.metric().unwrap();
        assert_eq!(metric.metric_name(), Some("Errors"));
        assert_eq!(metric.namespace(), Some("AWS/Lambda"));
        assert_eq!(metric.dimensions()[0].value(), Some("f"));
        assert_eq!(queries[2].account_id(), Some("123456789012"));
        assert!(input.tags().is_empty());
    }

    #[test]
    fn newer_settings_go_into_the_put() {
        let template = props(json!({
            "EvaluationWindow": {"WallClockWindow": {"Timezone": "UTC+05:30"}},
            "WarmUpConfiguration": {"WarmUpPeriodDurationInMinutes": "15"},
            "EvaluationCriteria": {"PromQLCriteria": {"Query": "up == 0", "PendingPeriod": 60}},
            "EvaluationInterval": 60,
        }));
        let input = put_input("a", &template, Vec::new()).build().unwrap();
        assert_eq!(
            input
                .evaluation_window()
                .and_then(|w| w.as_wall_clock_window().ok())
                .and_then(WallClockWindow::timezone),
            Some("UTC+05:30")
        );
        assert_eq!(
            input
                .warm_up_configuration()
                .and_then(WarmUpConfiguration::warm_up_period_duration_in_minutes),
            Some(15)
        );
        let criteria = input
            .evaluation_criteria()
            .and_then(|c| c.as_prom_ql_criteria().ok())
            .unwrap();
        assert_eq!(criteria.query(), Some("up == 0"));
        assert_eq!(criteria.pending_period(), Some(60));
        assert_eq!(input.evaluation_interval(), Some(60));
        let sliding = props(json!({"EvaluationWindow": {"SlidingWindow": {}}}));
        assert!(evaluation_window(&sliding).unwrap().is_sliding_window());
    }

    #[test]
    fn the_live_alarm_reads_back_in_template_shape() {
        let dimension =
            |name: &str, value: &str| Dimension::builder().name(name).value(value).build();
        let alarm = MetricAlarm::builder()
            .alarm_name("high-cpu")
            .alarm_arn("arn:aws:cloudwatch:us-east-1:1:alarm:high-cpu")
            .alarm_description("")
            .actions_enabled(true)
            .alarm_actions("arn:aws:sns:us-east-1:1:alerts")
            .metric_name("CPUUtilization")
            .namespace("AWS/EC2")
            .statistic(Statistic::Average)
            .dimensions(dimension("InstanceId", "i-0abc"))
            .dimensions(dimension("AutoScalingGroupName", "asg"))
            .period(300)
            .evaluation_periods(2)
            .threshold(80.0)
            .comparison_operator(ComparisonOperator::GreaterThanThreshold)
            .treat_missing_data("missing")
            .evaluation_window(EvaluationWindow::SlidingWindow(
                SlidingWindow::builder().build(),
            ))
            .build();
        let tags = [
            Tag::builder().key("z").value("26").build(),
            Tag::builder().key(CREATE_TOKEN_TAG).value("tok").build(),
            Tag::builder().key("a").value("1").build(),
        ];
        let shape = template_shape(&alarm, &tags, &Map::new());
        assert_eq!(
            Value::Object(shape),
            json!({
                "AlarmName": "high-cpu",
                "ActionsEnabled": true,
                "AlarmActions": ["arn:aws:sns:us-east-1:1:alerts"],
                "MetricName": "CPUUtilization",
                "Namespace": "AWS/EC2",
                "Statistic": "Average",
                "Dimensions": [
                    {"Name": "AutoScalingGroupName", "Value": "asg"},
                    {"Name": "InstanceId", "Value": "i-0abc"},
                ],
                "Period": 300,
                "EvaluationPeriods": 2,
                "Threshold": 80,
                "ComparisonOperator": "GreaterThanThreshold",
                "TreatMissingData": "missing",
                "Tags": [{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}],
            })
        );
        // A template naming the sliding window reads it back.
        let template = props(json!({"EvaluationWindow": {"SlidingWindow": {}}}));
        let shape = template_shape(&alarm, &[], &template);
        assert_eq!(shape["EvaluationWindow"], json!({"SlidingWindow": {}}));
        assert!(!shape.contains_key("Tags"));
    }

    #[test]
    fn metric_math_reads_back_in_order_with_sorted_dimensions() {
        let template = props(json!({
            "Metrics": [
                {"Id": "e1", "Expression": "m1 * 2", "ReturnData": true},
                {"Id": "m1", "ReturnData": false, "MetricStat": {
                    "Metric": {"MetricName": "Errors", "Namespace": "AWS/Lambda", "Dimensions": [
                        {"Name": "Resource", "Value": "r"}, {"Name": "FunctionName", "Value": "f"}]},
                    "Period": 60, "Stat": "Sum"}},
            ],
            "Threshold": 0.5,
        }));
        let input = put_input("m", &template, Vec::new()).build().unwrap();
        let alarm = MetricAlarm::builder()
            .alarm_name("m")
            .set_metrics(Some(input.metrics().to_vec()))
            .threshold(0.5)
            .build();
        let shape = template_shape(&alarm, &[], &template);
        assert_eq!(
            shape["Metrics"],
            json!([
                {"Id": "e1", "Expression": "m1 * 2", "ReturnData": true},
                {"Id": "m1", "ReturnData": false, "MetricStat": {
                    "Metric": {"MetricName": "Errors", "Namespace": "AWS/Lambda", "Dimensions": [
                        {"Name": "FunctionName", "Value": "f"}, {"Name": "Resource", "Value": "r"}]},
                    "Period": 60, "Stat": "Sum"}},
            ])
        );
        assert_eq!(shape["Threshold"], json!(0.5));
    }

    #[test]
    fn the_schema_answers_find_created() {
        let schema = Alarm.schema();
        assert!(schema.supports(operation::FIND_CREATED));
        assert_eq!(schema.create_only_properties, ["AlarmName"]);
    }
}
