//! `AWS::S3::Bucket.InventoryConfigurations` and `AnalyticsConfigurations`: lists of
//! configurations S3 keeps one by one, under their `Id`. Applying one puts each configuration
//! the template lists and deletes the bucket's others, so a configuration removed from the
//! template (or the whole property) is removed from S3.

use aws_sdk_s3::types::{
    AnalyticsAndOperator, AnalyticsConfiguration, AnalyticsExportDestination, AnalyticsFilter,
    AnalyticsS3BucketDestination, AnalyticsS3ExportFileFormat, InventoryConfiguration,
    InventoryDestination, InventoryFilter, InventoryFormat, InventoryFrequency,
    InventoryIncludedObjectVersions, InventoryOptionalField, InventoryS3BucketDestination,
    InventorySchedule, StorageClassAnalysis, StorageClassAnalysisDataExport,
    StorageClassAnalysisSchemaVersion, Tag,
};
use aws_sdk_s3::Client;
use cdkd_aws_common::aws_error;
use cdkd_provider_api::ProviderError;
use serde_json::Value;

fn text(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn invalid(what: &str, property: &str, detail: impl std::fmt::Display) -> ProviderError {
    ProviderError::validation(format!("{what}: property {property}: {detail}"))
}

fn entries(value: Option<&Value>) -> Vec<&Value> {
    value
        .and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default()
}

/// The inventory configuration of one template entry.
pub fn inventory(entry: &Value) -> Result<InventoryConfiguration, String> {
    let destination = entry.get("Destination").unwrap_or(&Value::Null);
    let bucket = InventoryS3BucketDestination::builder()
        .set_account_id(text(destination, "BucketAccountId"))
        .set_bucket(text(destination, "BucketArn"))
        .set_format(text(destination, "Format").map(|f| InventoryFormat::from(f.as_str())))
        .set_prefix(text(destination, "Prefix"))
        .build()
        .map_err(|e| e.to_string())?;
    let fields: Option<Vec<InventoryOptionalField>> = entry
        .get("OptionalFields")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(InventoryOptionalField::from)
                .collect()
        });
    InventoryConfiguration::builder()
        .set_id(text(entry, "Id"))
        .set_is_enabled(entry.get("Enabled").and_then(Value::as_bool))
        .set_included_object_versions(
            text(entry, "IncludedObjectVersions")
                .map(|v| InventoryIncludedObjectVersions::from(v.as_str())),
        )
        .set_optional_fields(fields)
        .set_filter(
            text(entry, "Prefix")
                .map(|p| InventoryFilter::builder().prefix(p).build())
                .transpose()
                .map_err(|e| e.to_string())?,
        )
        .set_schedule(Some(
            InventorySchedule::builder()
                .set_frequency(
                    text(entry, "ScheduleFrequency").map(|f| InventoryFrequency::from(f.as_str())),
                )
                .build()
                .map_err(|e| e.to_string())?,
        ))
        .destination(
            InventoryDestination::builder()
                .s3_bucket_destination(bucket)
                .build(),
        )
        .build()
        .map_err(|e| e.to_string())
}

fn tag(value: &Value) -> Result<Tag, String> {
    Tag::builder()
        .set_key(text(value, "Key"))
        .set_value(text(value, "Value"))
        .build()
        .map_err(|e| e.to_string())
}

/// The analytics configuration of one template entry.
pub fn analytics(entry: &Value) -> Result<AnalyticsConfiguration, String> {
    let tags = entries(entry.get("TagFilters"))
        .into_iter()
        .map(tag)
        .collect::<Result<Vec<_>, _>>()?;
    let prefix = text(entry, "Prefix");
    // S3's filter is one predicate, or an AND of several.
    let filter = match (prefix, tags.len()) {
        (None, 0) => None,
        (Some(prefix), 0) => Some(AnalyticsFilter::Prefix(prefix)),
        (None, 1) => Some(AnalyticsFilter::Tag(tags[0].clone())),
        (prefix, _) => Some(AnalyticsFilter::And(
            AnalyticsAndOperator::builder()
                .set_prefix(prefix)
                .set_tags(Some(tags))
                .build(),
        )),
    };
    let export = entry
        .get("StorageClassAnalysis")
        .and_then(|s| s.get("DataExport"));
    let mut analysis = StorageClassAnalysis::builder();
    if let Some(export) = export {
        let destination = export.get("Destination").unwrap_or(&Value::Null);
        let bucket = AnalyticsS3BucketDestination::builder()
            .set_format(
                text(destination, "Format").map(|f| AnalyticsS3ExportFileFormat::from(f.as_str())),
            )
            .set_bucket_account_id(text(destination, "BucketAccountId"))
            .set_bucket(text(destination, "BucketArn"))
            .set_prefix(text(destination, "Prefix"))
            .build()
            .map_err(|e| e.to_string())?;
        analysis = analysis.data_export(
            StorageClassAnalysisDataExport::builder()
                .set_output_schema_version(
                    text(export, "OutputSchemaVersion")
                        .map(|v| StorageClassAnalysisSchemaVersion::from(v.as_str())),
                )
                .destination(
                    AnalyticsExportDestination::builder()
                        .s3_bucket_destination(bucket)
                        .build(),
                )
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    AnalyticsConfiguration::builder()
        .set_id(text(entry, "Id"))
        .set_filter(filter)
        .storage_class_analysis(analysis.build())
        .build()
        .map_err(|e| e.to_string())
}

/// Puts the template's inventory configurations and deletes the bucket's others.
pub async fn apply_inventory(
    client: &Client,
    bucket: &str,
    what: &str,
    value: Option<&Value>,
) -> Result<(), ProviderError> {
    const PROPERTY: &str = "InventoryConfigurations";
    let mut wanted = Vec::new();
    for entry in entries(value) {
        let configuration = inventory(entry).map_err(|e| invalid(what, PROPERTY, e))?;
        client
            .put_bucket_inventory_configuration()
            .bucket(bucket)
            .id(configuration.id())
            .inventory_configuration(configuration.clone())
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: applying {PROPERTY}"), e))?;
        wanted.push(configuration.id().to_string());
    }
    let mut token = None;
    loop {
        let page = client
            .list_bucket_inventory_configurations()
            .bucket(bucket)
            .set_continuation_token(token.take())
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: applying {PROPERTY}"), e))?;
        for existing in page.inventory_configuration_list() {
            if !wanted.iter().any(|id| id == existing.id()) {
                client
                    .delete_bucket_inventory_configuration()
                    .bucket(bucket)
                    .id(existing.id())
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: applying {PROPERTY}"), e))?;
            }
        }
        match page.next_continuation_token() {
            Some(next) if page.is_truncated() == Some(true) => token = Some(next.to_string()),
            _ => return Ok(()),
        }
    }
}

/// Puts the template's analytics configurations and deletes the bucket's others.
pub async fn apply_analytics(
    client: &Client,
    bucket: &str,
    what: &str,
    value: Option<&Value>,
) -> Result<(), ProviderError> {
    const PROPERTY: &str = "AnalyticsConfigurations";
    let mut wanted = Vec::new();
    for entry in entries(value) {
        let configuration = analytics(entry).map_err(|e| invalid(what, PROPERTY, e))?;
        client
            .put_bucket_analytics_configuration()
            .bucket(bucket)
            .id(configuration.id())
            .analytics_configuration(configuration.clone())
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: applying {PROPERTY}"), e))?;
        wanted.push(configuration.id().to_string());
    }
    let mut token = None;
    loop {
        let page = client
            .list_bucket_analytics_configurations()
            .bucket(bucket)
            .set_continuation_token(token.take())
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: applying {PROPERTY}"), e))?;
        for existing in page.analytics_configuration_list() {
            if !wanted.iter().any(|id| id == existing.id()) {
                client
                    .delete_bucket_analytics_configuration()
                    .bucket(bucket)
                    .id(existing.id())
                    .send()
                    .await
                    .map_err(|e| aws_error(&format!("{what}: applying {PROPERTY}"), e))?;
            }
        }
        match page.next_continuation_token() {
            Some(next) if page.is_truncated() == Some(true) => token = Some(next.to_string()),
            _ => return Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn template_entries_become_s3_configurations() {
        let inventory = inventory(&json!({
            "Id": "weekly", "Enabled": true, "IncludedObjectVersions": "Current",
            "ScheduleFrequency": "Weekly", "Prefix": "data/", "OptionalFields": ["Size"],
            "Destination": {"BucketArn": "arn:aws:s3:::reports", "Format": "CSV", "Prefix": "inv"}
        }))
        .unwrap();
        assert_eq!(inventory.id(), "weekly");
        assert_eq!(
            inventory.schedule().unwrap().frequency(),
            &InventoryFrequency::Weekly
        );
        assert_eq!(
            inventory
                .destination()
                .unwrap()
                .s3_bucket_destination()
                .unwrap()
                .bucket(),
            "arn:aws:s3:::reports"
        );
        let analytics = analytics(&json!({
            "Id": "all", "Prefix": "logs/", "TagFilters": [{"Key": "k", "Value": "v"}],
            "StorageClassAnalysis": {"DataExport": {"OutputSchemaVersion": "V_1",
                "Destination": {"BucketArn": "arn:aws:s3:::reports", "Format": "CSV"}}}
        }))
        .unwrap();
        assert!(matches!(analytics.filter(), Some(AnalyticsFilter::And(_))));
        assert!(analytics
            .storage_class_analysis()
            .unwrap()
            .data_export()
            .is_some());
        assert!(inventory_missing_destination_fails());
    }

    fn inventory_missing_destination_fails() -> bool {
        inventory(&json!({"Id": "x", "Enabled": true, "IncludedObjectVersions": "All", "ScheduleFrequency": "Daily"})).is_err()
    }
}
