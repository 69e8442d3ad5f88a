//! `AWS::S3::Bucket.InventoryConfigurations`, `AnalyticsConfigurations`,
//! `MetricsConfigurations` and `IntelligentTieringConfigurations`: lists of
//! configurations S3 keeps one by one, under their `Id`. Applying one puts each configuration
//! the template lists and deletes the bucket's others, so a configuration removed from the
//! template (or the whole property) is removed from S3.

use aws_sdk_s3::types::{
    AnalyticsAndOperator, AnalyticsConfiguration, AnalyticsExportDestination, AnalyticsFilter,
    AnalyticsS3BucketDestination, AnalyticsS3ExportFileFormat, IntelligentTieringAccessTier,
    IntelligentTieringAndOperator, IntelligentTieringConfiguration, IntelligentTieringFilter,
    IntelligentTieringStatus, InventoryConfiguration, InventoryDestination, InventoryFilter,
    InventoryFormat, InventoryFrequency, InventoryIncludedObjectVersions, InventoryOptionalField,
    InventoryS3BucketDestination, InventorySchedule, MetricsAndOperator, MetricsConfiguration,
    MetricsFilter, StorageClassAnalysis, StorageClassAnalysisDataExport,
    StorageClassAnalysisSchemaVersion, Tag, Tiering,
};
use aws_sdk_s3::Client;
use cdkd_aws_common::aws_error;
use cdkd_provider_api::{async_trait, ProviderError};
use serde_json::{json, Map, Value};

use crate::{invalid, tag, text};

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

/// The metrics configuration of one template entry (`Id`, `Prefix`, `TagFilters`,
/// `AccessPointArn`): S3's filter is one predicate, or an AND of several.
pub fn metrics(entry: &Value) -> Result<MetricsConfiguration, String> {
    let mut tags = entries(entry.get("TagFilters"))
        .into_iter()
        .map(tag)
        .collect::<Result<Vec<_>, _>>()?;
    let prefix = text(entry, "Prefix");
    let access_point = text(entry, "AccessPointArn");
    let filter = match (prefix, access_point, tags.len()) {
        (None, None, 0) => None,
        (Some(prefix), None, 0) => Some(MetricsFilter::Prefix(prefix)),
        (None, Some(arn), 0) => Some(MetricsFilter::AccessPointArn(arn)),
        (None, None, 1) => Some(MetricsFilter::Tag(tags.remove(0))),
        (prefix, access_point, _) => Some(MetricsFilter::And(
            MetricsAndOperator::builder()
                .set_prefix(prefix)
                .set_access_point_arn(access_point)
                .set_tags(Some(tags))
                .build(),
        )),
    };
    MetricsConfiguration::builder()
        .set_id(text(entry, "Id"))
        .set_filter(filter)
        .build()
        .map_err(|e| e.to_string())
}

/// The intelligent-tiering configuration of one template entry (`Id`, `Status`, `Prefix`,
/// `TagFilters`, `Tierings: [{AccessTier, Days}]`).
pub fn intelligent_tiering(entry: &Value) -> Result<IntelligentTieringConfiguration, String> {
    let mut tags = entries(entry.get("TagFilters"))
        .into_iter()
        .map(tag)
        .collect::<Result<Vec<_>, _>>()?;
    let prefix = text(entry, "Prefix");
    let filter = match (prefix, tags.len()) {
        (None, 0) => None,
        (Some(prefix), 0) => Some(IntelligentTieringFilter::builder().prefix(prefix).build()),
        (None, 1) => Some(
            IntelligentTieringFilter::builder()
                .tag(tags.remove(0))
                .build(),
        ),
        (prefix, _) => Some(
            IntelligentTieringFilter::builder()
                .and(
                    IntelligentTieringAndOperator::builder()
                        .set_prefix(prefix)
                        .set_tags(Some(tags))
                        .build(),
                )
                .build(),
        ),
    };
    let tierings = entries(entry.get("Tierings"))
        .into_iter()
        .map(|t| {
            Tiering::builder()
                .set_days(
                    t.get("Days")
                        .and_then(|d| d.as_i64().or_else(|| d.as_str()?.parse().ok()))
                        .and_then(|d| i32::try_from(d).ok()),
                )
                .set_access_tier(
                    text(t, "AccessTier").map(|a| IntelligentTieringAccessTier::from(a.as_str())),
                )
                .build()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    IntelligentTieringConfiguration::builder()
        .set_id(text(entry, "Id"))
        .set_filter(filter)
        .set_status(text(entry, "Status").map(|s| IntelligentTieringStatus::from(s.as_str())))
        .set_tierings(Some(tierings))
        .build()
        .map_err(|e| e.to_string())
}

fn tag_filters(tags: &[Tag]) -> Value {
    Value::Array(
        tags.iter()
            .map(|t| json!({"Key": t.key(), "Value": t.value()}))
            .collect(),
    )
}

/// A metrics configuration in template shape.
pub fn metrics_shape(configuration: &MetricsConfiguration) -> Value {
    let mut shape = Map::new();
    shape.insert("Id".into(), json!(configuration.id()));
    match configuration.filter() {
        Some(MetricsFilter::Prefix(prefix)) => {
            shape.insert("Prefix".into(), json!(prefix));
        }
        Some(MetricsFilter::AccessPointArn(arn)) => {
            shape.insert("AccessPointArn".into(), json!(arn));
        }
        Some(MetricsFilter::Tag(t)) => {
            shape.insert("TagFilters".into(), tag_filters(std::slice::from_ref(t)));
        }
        Some(MetricsFilter::And(and)) => {
            if let Some(prefix) = and.prefix() {
                shape.insert("Prefix".into(), json!(prefix));
            }
            if let Some(arn) = and.access_point_arn() {
                shape.insert("AccessPointArn".into(), json!(arn));
            }
            if !and.tags().is_empty() {
                shape.insert("TagFilters".into(), tag_filters(and.tags()));
            }
        }
        _ => {}
    }
    Value::Object(shape)
}

/// An intelligent-tiering configuration in template shape.
pub fn intelligent_tiering_shape(configuration: &IntelligentTieringConfiguration) -> Value {
    let mut shape = Map::new();
    shape.insert("Id".into(), json!(configuration.id()));
    shape.insert("Status".into(), json!(configuration.status().as_str()));
    if let Some(filter) = configuration.filter() {
        let (prefix, tags) = match filter.and() {
            Some(and) => (and.prefix(), and.tags().to_vec()),
            None => (filter.prefix(), filter.tag().cloned().into_iter().collect()),
        };
        if let Some(prefix) = prefix {
            shape.insert("Prefix".into(), json!(prefix));
        }
        if !tags.is_empty() {
            shape.insert("TagFilters".into(), tag_filters(&tags));
        }
    }
    shape.insert(
        "Tierings".into(),
        Value::Array(
            configuration
                .tierings()
                .iter()
                .map(|t| json!({"AccessTier": t.access_tier().as_str(), "Days": t.days()}))
                .collect(),
        ),
    );
    Value::Object(shape)
}

/// One kind of keyed configuration: its property, the S3 form of a template entry, and the
/// S3 calls that put, list and delete configurations of the kind. `failed` is the context of
/// an AWS error (`{what}: applying {PROPERTY}`).
#[async_trait]
pub trait Keyed {
    /// The bucket's template property.
    const PROPERTY: &'static str;
    /// S3's form of one entry.
    type Configuration: Send + Sync;
    /// The S3 form of one template entry.
    fn configuration(entry: &Value) -> Result<Self::Configuration, String>;
    /// The configuration's `Id`.
    fn id(configuration: &Self::Configuration) -> &str;
    /// Puts one configuration under its id.
    async fn put(
        client: &Client,
        bucket: &str,
        configuration: &Self::Configuration,
        failed: &str,
    ) -> Result<(), ProviderError>;
    /// One page of the ids the bucket has.
    async fn list(
        client: &Client,
        bucket: &str,
        token: Option<String>,
        failed: &str,
    ) -> Result<Page, ProviderError>;
    /// Deletes the configuration `id`.
    async fn delete(
        client: &Client,
        bucket: &str,
        id: &str,
        failed: &str,
    ) -> Result<(), ProviderError>;
}

/// A page of a bucket's configuration ids.
pub struct Page {
    ids: Vec<String>,
    next: Option<String>,
    truncated: Option<bool>,
}

/// Puts the template's configurations of kind `K` and deletes the bucket's others.
pub async fn apply<K: Keyed>(
    client: &Client,
    bucket: &str,
    what: &str,
    value: Option<&Value>,
) -> Result<(), ProviderError> {
    let failed = format!("{what}: applying {}", K::PROPERTY);
    let mut wanted = Vec::new();
    for entry in entries(value) {
        let configuration = K::configuration(entry).map_err(|e| invalid(what, K::PROPERTY, e))?;
        K::put(client, bucket, &configuration, &failed).await?;
        wanted.push(K::id(&configuration).to_string());
    }
    let mut token = None;
    loop {
        let page = K::list(client, bucket, token.take(), &failed).await?;
        for existing in &page.ids {
            if !wanted.iter().any(|id| id == existing) {
                K::delete(client, bucket, existing, &failed).await?;
            }
        }
        match page.next {
            Some(next) if page.truncated == Some(true) => token = Some(next),
            _ => return Ok(()),
        }
    }
}

/// Declares a [`Keyed`] kind: the four kinds differ only in their S3 operation and field
/// names, so each is one row of the table below.
macro_rules! keyed {
    ($(#[$doc:meta])* $kind:ident: $property:literal, $configuration:ty, $from_template:ident,
     put $put:ident . $field:ident, list $list:ident . $items:ident, delete $delete:ident) => {
        $(#[$doc])*
        pub struct $kind;

        #[async_trait]
        impl Keyed for $kind {
            const PROPERTY: &'static str = $property;
            type Configuration = $configuration;

            fn configuration(entry: &Value) -> Result<$configuration, String> {
                $from_template(entry)
            }

            fn id(configuration: &$configuration) -> &str {
                configuration.id()
            }

            async fn put(
                client: &Client,
                bucket: &str,
                configuration: &$configuration,
                failed: &str,
            ) -> Result<(), ProviderError> {
                client
                    .$put()
                    .bucket(bucket)
                    .id(configuration.id())
                    .$field(configuration.clone())
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(failed, e))
            }

            async fn list(
                client: &Client,
                bucket: &str,
                token: Option<String>,
                failed: &str,
            ) -> Result<Page, ProviderError> {
                let page = client
                    .$list()
                    .bucket(bucket)
                    .set_continuation_token(token)
                    .send()
                    .await
                    .map_err(|e| aws_error(failed, e))?;
                Ok(Page {
                    ids: page.$items().iter().map(|c| c.id().to_string()).collect(),
                    next: page.next_continuation_token().map(str::to_string),
                    truncated: page.is_truncated(),
                })
            }

            async fn delete(
                client: &Client,
                bucket: &str,
                id: &str,
                failed: &str,
            ) -> Result<(), ProviderError> {
                client
                    .$delete()
                    .bucket(bucket)
                    .id(id)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| aws_error(failed, e))
            }
        }
    };
}

keyed!(
    /// `InventoryConfigurations`.
    Inventory: "InventoryConfigurations", InventoryConfiguration, inventory,
    put put_bucket_inventory_configuration.inventory_configuration,
    list list_bucket_inventory_configurations.inventory_configuration_list,
    delete delete_bucket_inventory_configuration
);
keyed!(
    /// `AnalyticsConfigurations`.
    Analytics: "AnalyticsConfigurations", AnalyticsConfiguration, analytics,
    put put_bucket_analytics_configuration.analytics_configuration,
    list list_bucket_analytics_configurations.analytics_configuration_list,
    delete delete_bucket_analytics_configuration
);
keyed!(
    /// `MetricsConfigurations`.
    Metrics: "MetricsConfigurations", MetricsConfiguration, metrics,
    put put_bucket_metrics_configuration.metrics_configuration,
    list list_bucket_metrics_configurations.metrics_configuration_list,
    delete delete_bucket_metrics_configuration
);
keyed!(
    /// `IntelligentTieringConfigurations`.
    IntelligentTiering: "IntelligentTieringConfigurations", IntelligentTieringConfiguration,
    intelligent_tiering,
    put put_bucket_intelligent_tiering_configuration.intelligent_tiering_configuration,
    list list_bucket_intelligent_tiering_configurations.intelligent_tiering_configuration_list,
    delete delete_bucket_intelligent_tiering_configuration
);

/// The bucket's metrics and intelligent-tiering configurations in template shape (empty
/// lists left out), for `read_current_state`.
pub async fn read_back(
    client: &Client,
    bucket: &str,
    what: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let mut properties = Map::new();
    let (mut metrics, mut tiering) = (Vec::new(), Vec::new());
    let mut token = None;
    loop {
        let page = client
            .list_bucket_metrics_configurations()
            .bucket(bucket)
            .set_continuation_token(token.take())
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: ListBucketMetricsConfigurations"), e))?;
        metrics.extend(page.metrics_configuration_list().iter().map(metrics_shape));
        match page.next_continuation_token() {
            Some(next) if page.is_truncated() == Some(true) => token = Some(next.to_string()),
            _ => break,
        }
    }
    loop {
        let page = client
            .list_bucket_intelligent_tiering_configurations()
            .bucket(bucket)
            .set_continuation_token(token.take())
            .send()
            .await
            .map_err(|e| {
                aws_error(
                    &format!("{what}: ListBucketIntelligentTieringConfigurations"),
                    e,
                )
            })?;
        tiering.extend(
            page.intelligent_tiering_configuration_list()
                .iter()
                .map(intelligent_tiering_shape),
        );
        match page.next_continuation_token() {
            Some(next) if page.is_truncated() == Some(true) => token = Some(next.to_string()),
            _ => break,
        }
    }
    if !metrics.is_empty() {
        properties.insert("MetricsConfigurations".into(), Value::Array(metrics));
    }
    if !tiering.is_empty() {
        properties.insert(
            "IntelligentTieringConfigurations".into(),
            Value::Array(tiering),
        );
    }
    Ok(properties)
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

    #[test]
    fn metrics_and_intelligent_tiering_entries_round_trip_to_template_shape() {
        let entry = json!({"Id": "EntireBucket"});
        let m = metrics(&entry).unwrap();
        assert!(m.filter().is_none());
        assert_eq!(metrics_shape(&m), entry);
        let entry =
            json!({"Id": "logs", "Prefix": "logs/", "TagFilters": [{"Key": "k", "Value": "v"}]});
        let m = metrics(&entry).unwrap();
        assert!(matches!(m.filter(), Some(MetricsFilter::And(_))));
        assert_eq!(metrics_shape(&m), entry);
        let m = metrics(&json!({"Id": "p", "Prefix": "a/"})).unwrap();
        assert_eq!(m.filter(), Some(&MetricsFilter::Prefix("a/".into())));
        assert!(metrics(&json!({"Prefix": "no id"})).is_err());

        let entry = json!({"Id": "archive", "Status": "Enabled", "Prefix": "old/",
            "Tierings": [{"AccessTier": "ARCHIVE_ACCESS", "Days": 90},
                         {"AccessTier": "DEEP_ARCHIVE_ACCESS", "Days": 180}]});
        let t = intelligent_tiering(&entry).unwrap();
        assert_eq!(t.status(), &IntelligentTieringStatus::Enabled);
        assert_eq!(t.tierings().len(), 2);
        assert_eq!(t.filter().unwrap().prefix(), Some("old/"));
        assert_eq!(intelligent_tiering_shape(&t), entry);
        let tagged = json!({"Id": "t", "Status": "Disabled", "TagFilters": [{"Key": "a", "Value": "b"}, {"Key": "c", "Value": "d"}],
            "Tierings": [{"AccessTier": "ARCHIVE_ACCESS", "Days": 90}]});
        assert_eq!(
            intelligent_tiering_shape(&intelligent_tiering(&tagged).unwrap()),
            tagged
        );
        assert!(intelligent_tiering(
            &json!({"Id": "x", "Status": "Enabled", "Tierings": [{"Days": 90}]})
        )
        .is_err());
    }
}
