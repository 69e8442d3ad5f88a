//! A live table in template shape, from DescribeTable, DescribeTimeToLive,
//! DescribeContinuousBackups and ListTagsOfResource.

use aws_sdk_dynamodb::types::{
    BillingMode, KeySchemaElement, PointInTimeRecoveryDescription, PointInTimeRecoveryStatus,
    Projection, ProvisionedThroughputDescription, SseStatus, TableClass, TableDescription, Tag,
    TimeToLiveDescription, TimeToLiveStatus,
};
use cdkd_aws_common::string;
use serde_json::{json, Map, Value};

/// Keys of a template index the reader does not read (each would take a call per index);
/// the template's own values are carried over so whole-list comparisons stay quiet.
const UNREAD_INDEX_KEYS: &[&str] = &[
    "ContributorInsightsSpecification",
    "OnDemandThroughput",
    "WarmThroughput",
];

/// `KeySchema` in template shape.
fn keys(schema: &[KeySchemaElement]) -> Value {
    Value::Array(
        schema
            .iter()
            .map(|k| json!({"AttributeName": k.attribute_name(), "KeyType": k.key_type().as_str()}))
            .collect(),
    )
}

/// `Projection` in template shape.
fn projection(projection: Option<&Projection>) -> Value {
    let mut out = Map::new();
    if let Some(kind) = projection.and_then(Projection::projection_type) {
        out.insert("ProjectionType".into(), json!(kind.as_str()));
    }
    let attributes = projection
        .map(Projection::non_key_attributes)
        .unwrap_or_default();
    if !attributes.is_empty() {
        out.insert("NonKeyAttributes".into(), json!(attributes));
    }
    Value::Object(out)
}

/// `ProvisionedThroughput` in template shape.
fn capacity(throughput: Option<&ProvisionedThroughputDescription>) -> Option<Value> {
    let throughput = throughput?;
    Some(json!({
        "ReadCapacityUnits": throughput.read_capacity_units()?,
        "WriteCapacityUnits": throughput.write_capacity_units()?,
    }))
}

/// Items ordered like the template's list, matched by `key` (`IndexName`, `AttributeName`,
/// `Region`); DynamoDB answers in its own order and lists compare whole.
pub(crate) fn order_like(items: &mut [Value], template: Option<&Value>, key: &str) {
    let order: Vec<String> = template
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| string(i.get(key)))
        .collect();
    items.sort_by_key(|item| {
        let name = string(item.get(key)).unwrap_or_default();
        order.iter().position(|n| *n == name).unwrap_or(order.len())
    });
}

/// The live table in template shape. `template` is the resource's template (for list order,
/// the key id spelling, and index keys not read); `ttl`, `pitr` and `tags` come from their own
/// calls.
pub(crate) fn template_shape(
    table: &TableDescription,
    ttl: Option<&TimeToLiveDescription>,
    pitr: Option<&PointInTimeRecoveryDescription>,
    tags: &[Tag],
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    if let Some(name) = table.table_name() {
        props.insert("TableName".into(), json!(name));
    }
    props.insert("KeySchema".into(), keys(table.key_schema()));
    let mut definitions: Vec<Value> = table
        .attribute_definitions()
        .iter()
        .map(|a| json!({"AttributeName": a.attribute_name(), "AttributeType": a.attribute_type().as_str()}))
        .collect();
    order_like(
        &mut definitions,
        template.get("AttributeDefinitions"),
        "AttributeName",
    );
    props.insert("AttributeDefinitions".into(), Value::Array(definitions));
    // No summary: the table was created provisioned and never switched.
    let provisioned = table
        .billing_mode_summary()
        .and_then(|s| s.billing_mode())
        .is_none_or(|m| *m == BillingMode::Provisioned);
    props.insert(
        "BillingMode".into(),
        json!(if provisioned {
            "PROVISIONED"
        } else {
            "PAY_PER_REQUEST"
        }),
    );
    if provisioned {
        if let Some(throughput) = capacity(table.provisioned_throughput()) {
            props.insert("ProvisionedThroughput".into(), throughput);
        }
    }
    let mut globals = global_indexes(table, provisioned, template);
    if !globals.is_empty() {
        order_like(
            &mut globals,
            template.get("GlobalSecondaryIndexes"),
            "IndexName",
        );
        props.insert("GlobalSecondaryIndexes".into(), Value::Array(globals));
    }
    let mut locals: Vec<Value> = table
        .local_secondary_indexes()
        .iter()
        .map(|index| {
            json!({
                "IndexName": index.index_name().unwrap_or_default(),
                "KeySchema": keys(index.key_schema()),
                "Projection": projection(index.projection()),
            })
        })
        .collect();
    if !locals.is_empty() {
        order_like(
            &mut locals,
            template.get("LocalSecondaryIndexes"),
            "IndexName",
        );
        props.insert("LocalSecondaryIndexes".into(), Value::Array(locals));
    }
    if let Some(stream) = table.stream_specification().filter(|s| s.stream_enabled()) {
        if let Some(view) = stream.stream_view_type() {
            props.insert(
                "StreamSpecification".into(),
                json!({"StreamViewType": view.as_str()}),
            );
        }
    }
    if let Some(ttl) = ttl {
        let on = matches!(
            ttl.time_to_live_status(),
            Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
        );
        if let (true, Some(attribute)) = (on, ttl.attribute_name()) {
            props.insert(
                "TimeToLiveSpecification".into(),
                json!({"AttributeName": attribute, "Enabled": true}),
            );
        }
    }
    if let Some(spec) = pitr.and_then(|pitr| recovery_spec(pitr, template)) {
        props.insert("PointInTimeRecoverySpecification".into(), spec);
    }
    if let Some(spec) = table
        .sse_description()
        .and_then(|sse| sse_spec(sse, template))
    {
        props.insert("SSESpecification".into(), spec);
    }
    if table.deletion_protection_enabled() == Some(true) {
        props.insert("DeletionProtectionEnabled".into(), json!(true));
    }
    if let Some(class) = table
        .table_class_summary()
        .and_then(|s| s.table_class())
        .filter(|c| **c != TableClass::Standard)
    {
        props.insert("TableClass".into(), json!(class.as_str()));
    }
    let mut pairs: Vec<(&str, &str)> = tags.iter().map(|t| (t.key(), t.value())).collect();
    pairs.sort();
    if !pairs.is_empty() {
        props.insert(
            "Tags".into(),
            Value::Array(
                pairs
                    .into_iter()
                    .map(|(k, v)| json!({"Key": k, "Value": v}))
                    .collect(),
            ),
        );
    }
    props
}

/// The global secondary indexes in template shape, with the keys DynamoDB does not report
/// taken from the template's index of the same name.
fn global_indexes(
    table: &TableDescription,
    provisioned: bool,
    template: &Map<String, Value>,
) -> Vec<Value> {
    let template_indexes = crate::indexes::by_name(template);
    table
        .global_secondary_indexes()
        .iter()
        .map(|index| {
            let name = index.index_name().unwrap_or_default();
            let mut out = Map::new();
            out.insert("IndexName".into(), json!(name));
            out.insert("KeySchema".into(), keys(index.key_schema()));
            out.insert("Projection".into(), projection(index.projection()));
            if provisioned {
                if let Some(throughput) = capacity(index.provisioned_throughput()) {
                    out.insert("ProvisionedThroughput".into(), throughput);
                }
            }
            if let Some(given) = template_indexes.get(name) {
                for key in UNREAD_INDEX_KEYS {
                    if let Some(value) = given.get(*key) {
                        out.insert((*key).into(), value.clone());
                    }
                }
            }
            Value::Object(out)
        })
        .collect()
}

/// `PointInTimeRecoverySpecification` when recovery is on.
fn recovery_spec(
    pitr: &PointInTimeRecoveryDescription,
    template: &Map<String, Value>,
) -> Option<Value> {
    if pitr.point_in_time_recovery_status() == Some(&PointInTimeRecoveryStatus::Enabled) {
        let mut spec = Map::new();
        spec.insert("PointInTimeRecoveryEnabled".into(), json!(true));
        let given_period = template
            .get("PointInTimeRecoverySpecification")
            .and_then(|p| p.get("RecoveryPeriodInDays"))
            .is_some();
        // The default period (35) is reported only where the template names a period.
        match pitr.recovery_period_in_days() {
            Some(days) if days != 35 || given_period => {
                spec.insert("RecoveryPeriodInDays".into(), json!(days));
            }
            _ => {}
        }
        return Some(Value::Object(spec));
    }
    None
}

/// `SSESpecification` when server-side encryption is on.
fn sse_spec(
    sse: &aws_sdk_dynamodb::types::SseDescription,
    template: &Map<String, Value>,
) -> Option<Value> {
    if matches!(
        sse.status(),
        Some(SseStatus::Enabled | SseStatus::Enabling | SseStatus::Updating)
    ) {
        let mut spec = Map::new();
        spec.insert("SSEEnabled".into(), json!(true));
        if let Some(kind) = sse.sse_type() {
            spec.insert("SSEType".into(), json!(kind.as_str()));
        }
        let given = template
            .get("SSESpecification")
            .and_then(|s| string(s.get("KMSMasterKeyId")));
        if let (Some(arn), Some(given)) = (sse.kms_master_key_arn(), given) {
            // The template may name the key by id or ARN; DynamoDB answers the ARN.
            let same = arn == given || arn.ends_with(&format!("/{given}"));
            spec.insert(
                "KMSMasterKeyId".into(),
                json!(if same { given.as_str() } else { arn }),
            );
        }
        return Some(Value::Object(spec));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingModeSummary, GlobalSecondaryIndexDescription, KeyType,
        LocalSecondaryIndexDescription, ProjectionType, ScalarAttributeType, SseDescription,
        SseType, StreamSpecification, StreamViewType, TableClassSummary,
    };

    fn key(name: &str, kind: KeyType) -> KeySchemaElement {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .unwrap()
    }

    fn attribute(name: &str) -> AttributeDefinition {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .unwrap()
    }

    fn throughput(read: i64, write: i64) -> ProvisionedThroughputDescription {
        ProvisionedThroughputDescription::builder()
            .read_capacity_units(read)
            .write_capacity_units(write)
            .build()
    }

    #[test]
    fn a_provisioned_table_reads_back_in_template_shape() {
        let table = TableDescription::builder()
            .table_name("orders")
            .key_schema(key("pk", KeyType::Hash))
            .key_schema(key("sk", KeyType::Range))
            .attribute_definitions(attribute("sk"))
            .attribute_definitions(attribute("pk"))
            .attribute_definitions(attribute("g"))
            .provisioned_throughput(throughput(5, 3))
            .global_secondary_indexes(
                GlobalSecondaryIndexDescription::builder()
                    .index_name("byG")
                    .key_schema(key("g", KeyType::Hash))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::Include)
                            .non_key_attributes("a")
                            .build(),
                    )
                    .provisioned_throughput(throughput(2, 1))
                    .build(),
            )
            .local_secondary_indexes(
                LocalSecondaryIndexDescription::builder()
                    .index_name("bySk")
                    .key_schema(key("pk", KeyType::Hash))
                    .key_schema(key("sk", KeyType::Range))
                    .projection(
                        Projection::builder()
                            .projection_type(ProjectionType::KeysOnly)
                            .build(),
                    )
                    .build(),
            )
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(true)
                    .stream_view_type(StreamViewType::NewImage)
                    .build()
                    .unwrap(),
            )
            .sse_description(
                SseDescription::builder()
                    .status(SseStatus::Enabled)
                    .sse_type(SseType::Kms)
                    .kms_master_key_arn("arn:aws:kms:us-east-1:1:key/abc")
                    .build(),
            )
            .deletion_protection_enabled(true)
            .table_class_summary(
                TableClassSummary::builder()
                    .table_class(TableClass::StandardInfrequentAccess)
                    .build(),
            )
            .build();
        let ttl = TimeToLiveDescription::builder()
            .time_to_live_status(TimeToLiveStatus::Enabled)
            .attribute_name("expires")
            .build();
        let pitr = PointInTimeRecoveryDescription::builder()
            .point_in_time_recovery_status(PointInTimeRecoveryStatus::Enabled)
            .recovery_period_in_days(35)
            .build();
        let tags = [
            Tag::builder().key("z").value("1").build().unwrap(),
            Tag::builder().key("a").value("2").build().unwrap(),
        ];
        let template = json!({
            "AttributeDefinitions": [
                {"AttributeName": "pk"}, {"AttributeName": "sk"}, {"AttributeName": "g"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "byG",
                "ContributorInsightsSpecification": {"Enabled": true}
            }],
            "SSESpecification": {"SSEEnabled": true, "KMSMasterKeyId": "abc"}
        });
        let shape = template_shape(
            &table,
            Some(&ttl),
            Some(&pitr),
            &tags,
            template.as_object().unwrap(),
        );
        assert_eq!(
            Value::Object(shape),
            json!({
                "TableName": "orders",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"}
                ],
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                    {"AttributeName": "g", "AttributeType": "S"}
                ],
                "BillingMode": "PROVISIONED",
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 3},
                "GlobalSecondaryIndexes": [{
                    "IndexName": "byG",
                    "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a"]},
                    "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": 1},
                    "ContributorInsightsSpecification": {"Enabled": true}
                }],
                "LocalSecondaryIndexes": [{
                    "IndexName": "bySk",
                    "KeySchema": [
                        {"AttributeName": "pk", "KeyType": "HASH"},
                        {"AttributeName": "sk", "KeyType": "RANGE"}
                    ],
                    "Projection": {"ProjectionType": "KEYS_ONLY"}
                }],
                "StreamSpecification": {"StreamViewType": "NEW_IMAGE"},
                "TimeToLiveSpecification": {"AttributeName": "expires", "Enabled": true},
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": true},
                "SSESpecification": {"SSEEnabled": true, "SSEType": "KMS", "KMSMasterKeyId": "abc"},
                "DeletionProtectionEnabled": true,
                "TableClass": "STANDARD_INFREQUENT_ACCESS",
                "Tags": [{"Key": "a", "Value": "2"}, {"Key": "z", "Value": "1"}]
            })
        );
    }

    #[test]
    fn an_on_demand_table_reports_no_capacity_and_no_disabled_settings() {
        let table = TableDescription::builder()
            .table_name("t")
            .key_schema(key("id", KeyType::Hash))
            .attribute_definitions(attribute("id"))
            .billing_mode_summary(
                BillingModeSummary::builder()
                    .billing_mode(BillingMode::PayPerRequest)
                    .build(),
            )
            .provisioned_throughput(throughput(0, 0))
            .stream_specification(
                StreamSpecification::builder()
                    .stream_enabled(false)
                    .build()
                    .unwrap(),
            )
            .sse_description(
                SseDescription::builder()
                    .status(SseStatus::Disabled)
                    .build(),
            )
            .deletion_protection_enabled(false)
            .table_class_summary(
                TableClassSummary::builder()
                    .table_class(TableClass::Standard)
                    .build(),
            )
            .build();
        let ttl = TimeToLiveDescription::builder()
            .time_to_live_status(TimeToLiveStatus::Disabled)
            .build();
        let pitr = PointInTimeRecoveryDescription::builder()
            .point_in_time_recovery_status(PointInTimeRecoveryStatus::Disabled)
            .build();
        let shape = template_shape(&table, Some(&ttl), Some(&pitr), &[], &Map::new());
        assert_eq!(
            Value::Object(shape),
            json!({
                "TableName": "t",
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST"
            })
        );
    }
}
