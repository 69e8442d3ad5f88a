//! Template parts as DynamoDB request shapes: key schemas, attribute definitions, throughput,
//! stream, encryption and tags, and the whole CreateTable input built from them.

use aws_sdk_dynamodb::operation::create_table::builders::CreateTableInputBuilder;
use aws_sdk_dynamodb::operation::create_table::CreateTableInput;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, OnDemandThroughput, Projection,
    ProjectionType, ProvisionedThroughput, ScalarAttributeType, SseSpecification, SseType,
    StreamSpecification, StreamViewType, TableClass, Tag, WarmThroughput,
};
use cdkd_aws_common::{flag, string, tag_pairs};
use serde_json::{Map, Value};

use crate::indexes::{global_index, local_index};

/// A template number; capacity units come as numbers or strings.
pub(crate) fn number(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
}

/// Whether the template's table is billed per provisioned capacity (DynamoDB's default when
/// `BillingMode` is absent).
pub(crate) fn is_provisioned(properties: &Map<String, Value>) -> bool {
    string(properties.get("BillingMode")).as_deref() != Some("PAY_PER_REQUEST")
}

/// A template `KeySchema: [{AttributeName, KeyType}]`.
pub(crate) fn key_schema(value: Option<&Value>) -> Result<Vec<KeySchemaElement>, String> {
    let items = value
        .and_then(Value::as_array)
        .ok_or("KeySchema must be a list of {AttributeName, KeyType}")?;
    items
        .iter()
        .map(|item| {
            KeySchemaElement::builder()
                .set_attribute_name(string(item.get("AttributeName")))
                .set_key_type(string(item.get("KeyType")).map(|t| KeyType::from(t.as_str())))
                .build()
                .map_err(|e| format!("KeySchema: {e}"))
        })
        .collect()
}

/// A template `AttributeDefinitions: [{AttributeName, AttributeType}]`.
pub(crate) fn attribute_definitions(
    value: Option<&Value>,
) -> Result<Option<Vec<AttributeDefinition>>, String> {
    let Some(items) = value.and_then(Value::as_array) else {
        return Ok(None);
    };
    items
        .iter()
        .map(|item| {
            AttributeDefinition::builder()
                .set_attribute_name(string(item.get("AttributeName")))
                .set_attribute_type(
                    string(item.get("AttributeType"))
                        .map(|t| ScalarAttributeType::from(t.as_str())),
                )
                .build()
                .map_err(|e| format!("AttributeDefinitions: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// A template `ProvisionedThroughput: {ReadCapacityUnits, WriteCapacityUnits}`.
pub(crate) fn provisioned_throughput(
    value: Option<&Value>,
) -> Result<Option<ProvisionedThroughput>, String> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    ProvisionedThroughput::builder()
        .set_read_capacity_units(number(value.get("ReadCapacityUnits")))
        .set_write_capacity_units(number(value.get("WriteCapacityUnits")))
        .build()
        .map(Some)
        .map_err(|e| format!("ProvisionedThroughput: {e}"))
}

/// A template `OnDemandThroughput: {MaxReadRequestUnits, MaxWriteRequestUnits}`.
pub(crate) fn on_demand_throughput(value: Option<&Value>) -> Option<OnDemandThroughput> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        OnDemandThroughput::builder()
            .set_max_read_request_units(number(value.get("MaxReadRequestUnits")))
            .set_max_write_request_units(number(value.get("MaxWriteRequestUnits")))
            .build(),
    )
}

/// On-demand limits lifted: DynamoDB takes -1 for "no maximum".
pub(crate) fn unlimited_on_demand() -> OnDemandThroughput {
    OnDemandThroughput::builder()
        .max_read_request_units(-1)
        .max_write_request_units(-1)
        .build()
}

/// A template `WarmThroughput: {ReadUnitsPerSecond, WriteUnitsPerSecond}`.
pub(crate) fn warm_throughput(value: Option<&Value>) -> Option<WarmThroughput> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        WarmThroughput::builder()
            .set_read_units_per_second(number(value.get("ReadUnitsPerSecond")))
            .set_write_units_per_second(number(value.get("WriteUnitsPerSecond")))
            .build(),
    )
}

/// A template `Projection: {ProjectionType, NonKeyAttributes}`.
pub(crate) fn projection(value: Option<&Value>) -> Projection {
    let value = value.cloned().unwrap_or(Value::Null);
    Projection::builder()
        .set_projection_type(
            string(value.get("ProjectionType")).map(|t| ProjectionType::from(t.as_str())),
        )
        .set_non_key_attributes(cdkd_aws_common::strings(value.get("NonKeyAttributes")))
        .build()
}

/// The stream view type a template's `StreamSpecification` turns on; `None`: no stream.
pub(crate) fn stream_view(properties: &Map<String, Value>) -> Option<String> {
    string(properties.get("StreamSpecification")?.get("StreamViewType"))
}

/// A stream switched on with `view`, or off.
pub(crate) fn stream_specification(view: Option<&str>) -> StreamSpecification {
    StreamSpecification::builder()
        .stream_enabled(view.is_some())
        .set_stream_view_type(view.map(StreamViewType::from))
        .build()
        .expect("stream_enabled is set")
}

/// A template `SSESpecification`; `None` when absent. `SSEEnabled: false` is DynamoDB's own
/// key (the default), `true` a KMS key (AWS managed unless `KMSMasterKeyId` names one).
pub(crate) fn sse_specification(value: Option<&Value>) -> Option<SseSpecification> {
    let value = value.filter(|v| v.is_object())?;
    let enabled = flag(value.get("SSEEnabled")).unwrap_or(false);
    Some(
        SseSpecification::builder()
            .enabled(enabled)
            .set_sse_type(
                enabled
                    .then(|| string(value.get("SSEType")).unwrap_or_else(|| "KMS".into()))
                    .map(|t| SseType::from(t.as_str())),
            )
            .set_kms_master_key_id(string(value.get("KMSMasterKeyId")).filter(|_| enabled))
            .build(),
    )
}

/// Encryption back to DynamoDB's own key, where a removed `SSESpecification` leaves a table.
pub(crate) fn default_sse() -> SseSpecification {
    SseSpecification::builder().enabled(false).build()
}

/// The template's tags as DynamoDB tags, in template order.
pub(crate) fn tags(properties: &Map<String, Value>) -> Vec<Tag> {
    tag_pairs(properties.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(key, value)| Tag::builder().key(key).value(value).build().ok())
        .collect()
}

/// A policy document as DynamoDB takes it: a JSON string (templates write an object or the
/// string).
pub(crate) fn json_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The document of a template `ResourcePolicy: {PolicyDocument}` as JSON text.
pub(crate) fn policy_document(value: Option<&Value>) -> Option<String> {
    value?
        .get("PolicyDocument")
        .filter(|d| !d.is_null())
        .map(json_text)
}

/// The CreateTable input for a table named `name` from the template's properties: keys,
/// indexes, billing and throughput, stream, encryption, class, deletion protection, tags and
/// resource policy. The settings DynamoDB changes by separate calls (TTL, backups, insights,
/// Kinesis) are not in it.
pub(crate) fn create_table_input(
    name: &str,
    properties: &Map<String, Value>,
) -> Result<CreateTableInputBuilder, String> {
    let provisioned = is_provisioned(properties);
    let globals = properties
        .get("GlobalSecondaryIndexes")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|i| global_index(i, provisioned))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .filter(|list| !list.is_empty());
    let locals = properties
        .get("LocalSecondaryIndexes")
        .and_then(Value::as_array)
        .map(|items| items.iter().map(local_index).collect::<Result<Vec<_>, _>>())
        .transpose()?
        .filter(|list| !list.is_empty());
    let tags = Some(tags(properties)).filter(|t| !t.is_empty());
    Ok(CreateTableInput::builder()
        .table_name(name)
        .set_key_schema(Some(key_schema(properties.get("KeySchema"))?))
        .set_attribute_definitions(attribute_definitions(
            properties.get("AttributeDefinitions"),
        )?)
        .set_billing_mode(
            string(properties.get("BillingMode")).map(|m| BillingMode::from(m.as_str())),
        )
        .set_provisioned_throughput(if provisioned {
            provisioned_throughput(properties.get("ProvisionedThroughput"))?
        } else {
            None
        })
        .set_on_demand_throughput(on_demand_throughput(properties.get("OnDemandThroughput")))
        .set_warm_throughput(warm_throughput(properties.get("WarmThroughput")))
        .set_global_secondary_indexes(globals)
        .set_local_secondary_indexes(locals)
        .set_stream_specification(
            stream_view(properties).map(|view| stream_specification(Some(&view))),
        )
        .set_sse_specification(sse_specification(properties.get("SSESpecification")))
        .set_table_class(string(properties.get("TableClass")).map(|c| TableClass::from(c.as_str())))
        .set_deletion_protection_enabled(flag(properties.get("DeletionProtectionEnabled")))
        .set_tags(tags)
        .set_resource_policy(policy_document(properties.get("ResourcePolicy"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_provisioned_table_with_indexes_becomes_one_create_table() {
        let template = props(json!({
            "KeySchema": [
                {"AttributeName": "pk", "KeyType": "HASH"},
                {"AttributeName": "sk", "KeyType": "RANGE"}
            ],
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "g", "AttributeType": "S"}
            ],
            "ProvisionedThroughput": {"ReadCapacityUnits": "5", "WriteCapacityUnits": 3},
            "GlobalSecondaryIndexes": [{
                "IndexName": "byG",
                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a", "b"]},
                "ProvisionedThroughput": {"ReadCapacityUnits": 2, "WriteCapacityUnits": "1"}
            }],
            "LocalSecondaryIndexes": [{
                "IndexName": "bySk",
                "KeySchema": [
                    {"AttributeName": "pk", "KeyType": "HASH"},
                    {"AttributeName": "sk", "KeyType": "RANGE"}
                ],
                "Projection": {"ProjectionType": "KEYS_ONLY"}
            }],
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "SSESpecification": {"SSEEnabled": true, "KMSMasterKeyId": "alias/k"},
            "TableClass": "STANDARD_INFREQUENT_ACCESS",
            "DeletionProtectionEnabled": "true",
            "Tags": [{"Key": "team", "Value": "a"}],
            "ResourcePolicy": {"PolicyDocument": {"Version": "2012-10-17"}}
        }));
        let input = create_table_input("orders", &template)
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(input.table_name(), Some("orders"));
        let keys: Vec<(&str, &str)> = input
            .key_schema()
            .iter()
            .map(|k| (k.attribute_name(), k.key_type().as_str()))
            .collect();
        assert_eq!(keys, [("pk", "HASH"), ("sk", "RANGE")]);
        assert_eq!(input.attribute_definitions().len(), 3);
        assert_eq!(
            input.attribute_definitions()[1].attribute_type().as_str(),
            "N"
        );
        assert_eq!(input.billing_mode(), None);
        let throughput = input.provisioned_throughput().unwrap();
        assert_eq!(
            (
                throughput.read_capacity_units(),
                throughput.write_capacity_units()
            ),
            (5, 3)
        );
        let gsi = &input.global_secondary_indexes()[0];
        assert_eq!(gsi.index_name(), "byG");
        let projection = gsi.projection().unwrap();
        assert_eq!(projection.projection_type(), Some(&ProjectionType::Include));
        assert_eq!(projection.non_key_attributes(), ["a", "b"]);
        let gsi_throughput = gsi.provisioned_throughput().unwrap();
        assert_eq!(gsi_throughput.read_capacity_units(), 2);
        assert_eq!(gsi_throughput.write_capacity_units(), 1);
        let lsi = &input.local_secondary_indexes()[0];
        assert_eq!(lsi.index_name(), "bySk");
        assert_eq!(lsi.key_schema().len(), 2);
        let stream = input.stream_specification().unwrap();
        assert!(stream.stream_enabled());
        assert_eq!(
            stream.stream_view_type(),
            Some(&StreamViewType::NewAndOldImages)
        );
        let sse = input.sse_specification().unwrap();
        assert_eq!(sse.enabled(), Some(true));
        assert_eq!(sse.sse_type(), Some(&SseType::Kms));
        assert_eq!(sse.kms_master_key_id(), Some("alias/k"));
        assert_eq!(
            input.table_class(),
            Some(&TableClass::StandardInfrequentAccess)
        );
        assert_eq!(input.deletion_protection_enabled(), Some(true));
        assert_eq!(input.tags()[0].key(), "team");
        assert_eq!(
            input.resource_policy(),
            Some("{\"Version\":\"2012-10-17\"}")
        );
    }

    #[test]
    fn an_on_demand_table_sends_no_capacity() {
        let template = props(json!({
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
            "OnDemandThroughput": {"MaxReadRequestUnits": "100"},
            "GlobalSecondaryIndexes": [{
                "IndexName": "byId",
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
            }]
        }));
        let input = create_table_input("t", &template).unwrap().build().unwrap();
        assert_eq!(input.billing_mode(), Some(&BillingMode::PayPerRequest));
        assert!(input.provisioned_throughput().is_none());
        assert!(input.global_secondary_indexes()[0]
            .provisioned_throughput()
            .is_none());
        let on_demand = input.on_demand_throughput().unwrap();
        assert_eq!(on_demand.max_read_request_units(), Some(100));
        assert_eq!(on_demand.max_write_request_units(), None);
        assert!(input.stream_specification().is_none());
        assert!(input.local_secondary_indexes().is_empty());
        assert!(input.tags().is_empty());
    }

    #[test]
    fn a_key_schema_is_required_and_encryption_off_means_dynamodbs_key() {
        let err = create_table_input("t", &props(json!({}))).unwrap_err();
        assert!(err.contains("KeySchema"), "{err}");
        let off =
            sse_specification(Some(&json!({"SSEEnabled": false, "KMSMasterKeyId": "k"}))).unwrap();
        assert_eq!(off.enabled(), Some(false));
        assert_eq!(off.sse_type(), None);
        assert_eq!(off.kms_master_key_id(), None);
        assert_eq!(number(Some(&json!(" 7"))), Some(7));
        assert!(!stream_specification(None).stream_enabled());
    }
}
