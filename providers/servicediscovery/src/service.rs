//! `AWS::ServiceDiscovery::Service`: a Cloud Map service in a namespace. Physical id (and `Ref`)
//! is the service id; attributes `Id`, `Arn` and `Name`. CreateService answers the service at
//! once (no operation to wait for) and carries a `CreatorRequestId` from the create token, so a
//! retried create makes one service and the run after a crash finds it by its name in its
//! namespace and that id. UpdateService is an operation the plugin waits for.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_servicediscovery::types::{
    DnsConfig, DnsConfigChange, DnsRecord, FilterCondition, HealthCheckConfig,
    HealthCheckCustomConfig, HealthCheckType, OperationTargetType, RecordType, RoutingPolicy,
    Service as LiveService, ServiceChange, ServiceFilter, ServiceFilterName, ServiceTypeOption,
};
use cdkd_aws_common::{
    created_name, deleted_unless_failed, does_not_exist, found, given_or_generated_name, int, put,
    string, tag_changes, tag_map, template_tags, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::namespace::{creator_request_id, retag, sd_tags, wait_for};
use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ServiceDiscovery::Service";

/// The longest generated name: one DNS label, so it also names records in a DNS namespace.
const MAX_NAME: usize = 63;

/// The `AWS::ServiceDiscovery::Service` provider.
#[derive(Default)]
pub struct Service;

/// A template number as an integer (templates carry numbers as strings too).
fn long(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    value
        .as_i64()
        .or_else(|| value.as_f64().map(|f| f as i64))
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

/// The namespace the service lives in: `NamespaceId`, or the older `DnsConfig.NamespaceId`.
fn namespace_of(props: &Map<String, Value>) -> Option<String> {
    string(props.get("NamespaceId")).or_else(|| {
        props
            .get("DnsConfig")
            .and_then(|d| string(d.get("NamespaceId")))
    })
}

/// `DnsConfig.DnsRecords` as Cloud Map's.
fn dns_records(config: &Value, what: &str) -> Result<Vec<DnsRecord>, ProviderError> {
    config
        .get("DnsRecords")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            DnsRecord::builder()
                .set_type(string(r.get("Type")).map(|t| RecordType::from(t.as_str())))
                .set_ttl(long(r.get("TTL")))
                .build()
                .map_err(|e| {
                    ProviderError::validation(format!("{what}: DnsConfig.DnsRecords: {e}"))
                })
        })
        .collect()
}

/// The template's `DnsConfig` as Cloud Map's. `DnsConfig.NamespaceId` is deprecated in the SDK
/// but still a CloudFormation property a template may use, so it is passed on.
#[allow(deprecated)]
fn dns_config(props: &Map<String, Value>, what: &str) -> Result<Option<DnsConfig>, ProviderError> {
    let Some(config) = props.get("DnsConfig").filter(|v| v.is_object()) else {
        return Ok(None);
    };
    DnsConfig::builder()
        .set_namespace_id(string(config.get("NamespaceId")))
        .set_routing_policy(
            string(config.get("RoutingPolicy")).map(|p| RoutingPolicy::from(p.as_str())),
        )
        .set_dns_records(Some(dns_records(config, what)?))
        .build()
        .map(Some)
        .map_err(|e| ProviderError::validation(format!("{what}: DnsConfig: {e}")))
}

/// The template's `HealthCheckConfig` as Cloud Map's.
fn health_check(
    props: &Map<String, Value>,
    what: &str,
) -> Result<Option<HealthCheckConfig>, ProviderError> {
    let Some(config) = props.get("HealthCheckConfig").filter(|v| v.is_object()) else {
        return Ok(None);
    };
    HealthCheckConfig::builder()
        .set_type(string(config.get("Type")).map(|t| HealthCheckType::from(t.as_str())))
        .set_resource_path(string(config.get("ResourcePath")))
        .set_failure_threshold(int(config.get("FailureThreshold")))
        .build()
        .map(Some)
        .map_err(|e| ProviderError::validation(format!("{what}: HealthCheckConfig: {e}")))
}

/// The template's `ServiceAttributes` (values as text).
fn service_attributes(props: &Map<String, Value>) -> BTreeMap<String, String> {
    props
        .get("ServiceAttributes")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), text(Some(v))?)))
        .collect()
}

/// `Id`, `Arn` and `Name`.
fn attributes_of(service: &LiveService) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "Id", service.id().map(Value::from));
    put(&mut attributes, "Arn", service.arn().map(Value::from));
    put(&mut attributes, "Name", service.name().map(Value::from));
    attributes
}

/// The service `id`; `None` when it does not exist.
async fn get(
    sd: &aws_sdk_servicediscovery::Client,
    what: &str,
    id: &str,
) -> Result<Option<LiveService>, ProviderError> {
    Ok(found(
        sd.get_service()
            .id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetService {id}"))),
    )?
    .and_then(|a| a.service().cloned()))
}

async fn attributes_or_gone(
    sd: &aws_sdk_servicediscovery::Client,
    what: &str,
    id: &str,
) -> Result<Map<String, Value>, ProviderError> {
    let service = get(sd, what, id)
        .await?
        .ok_or_else(|| does_not_exist(what, id, "Cloud Map"))?;
    Ok(attributes_of(&service))
}

/// Sets the attributes of `after` that differ from `before` and removes those `after` dropped.
async fn apply_service_attributes(
    sd: &aws_sdk_servicediscovery::Client,
    what: &str,
    id: &str,
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Result<(), ProviderError> {
    let (set, removed): (BTreeMap<String, String>, Vec<String>) = tag_changes(before, after);
    if !removed.is_empty() {
        sd.delete_service_attributes()
            .service_id(id)
            .set_attributes(Some(removed))
            .send()
            .await
            .map_err(failed!(format!("{what}: DeleteServiceAttributes {id}")))?;
    }
    if !set.is_empty() {
        sd.update_service_attributes()
            .service_id(id)
            .set_attributes(Some(set.into_iter().collect::<HashMap<_, _>>()))
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateServiceAttributes {id}")))?;
    }
    Ok(())
}

/// The live service in template shape; `template` says which optional spellings it used.
/// (The deprecated `DnsConfig.NamespaceId` and custom health check `FailureThreshold` are read
/// because CloudFormation's schema still has them.)
#[allow(deprecated)]
fn template_shape(service: &LiveService, template: &Map<String, Value>) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Name", service.name().map(Value::from));
    put(
        &mut props,
        "Description",
        service
            .description()
            .filter(|d| !d.is_empty())
            .map(Value::from),
    );
    // A template that names the namespace only inside DnsConfig keeps that spelling.
    if template.contains_key("NamespaceId") || !template.contains_key("DnsConfig") {
        put(
            &mut props,
            "NamespaceId",
            service.namespace_id().map(Value::from),
        );
    }
    if let Some(dns) = service.dns_config() {
        let mut config = Map::new();
        let in_template = template
            .get("DnsConfig")
            .is_some_and(|d| d.get("NamespaceId").is_some());
        // DnsConfig.NamespaceId is deprecated: AWS may leave it out of the answer.
        if in_template {
            put(
                &mut config,
                "NamespaceId",
                dns.namespace_id()
                    .or(service.namespace_id())
                    .map(Value::from),
            );
        }
        put(
            &mut config,
            "RoutingPolicy",
            dns.routing_policy().map(|p| json!(p.as_str())),
        );
        config.insert(
            "DnsRecords".into(),
            Value::Array(
                dns.dns_records()
                    .iter()
                    .map(|r| json!({"Type": r.r#type().as_str(), "TTL": r.ttl()}))
                    .collect(),
            ),
        );
        props.insert("DnsConfig".into(), Value::Object(config));
    }
    if let Some(check) = service.health_check_config() {
        let mut config = Map::new();
        config.insert("Type".into(), json!(check.r#type().as_str()));
        put(
            &mut config,
            "ResourcePath",
            check.resource_path().map(Value::from),
        );
        put(
            &mut config,
            "FailureThreshold",
            check.failure_threshold().map(Value::from),
        );
        props.insert("HealthCheckConfig".into(), Value::Object(config));
    }
    if let Some(custom) = service.health_check_custom_config() {
        let mut config = Map::new();
        put(
            &mut config,
            "FailureThreshold",
            custom.failure_threshold().map(Value::from),
        );
        props.insert("HealthCheckCustomConfig".into(), Value::Object(config));
    }
    // Cloud Map answers a type for every service (DNS, DNS_HTTP, HTTP); the template's `Type`
    // is only ever HTTP (an HTTP-only service in a DNS namespace), so it is read back only
    // where the template said it.
    if template.contains_key("Type") {
        put(
            &mut props,
            "Type",
            service.r#type().map(|t| json!(t.as_str())),
        );
    }
    props
}

#[async_trait]
impl ResourceProvider for Service {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Name",
                "NamespaceId",
                "Description",
                "DnsConfig",
                "HealthCheckConfig",
                "HealthCheckCustomConfig",
                "ServiceAttributes",
                "Tags",
                "Type",
            ])
            .create_only(&["Name", "NamespaceId", "HealthCheckCustomConfig", "Type"])
            .read_and_import()
            // Found by its name in its namespace, then by the CreatorRequestId the token gave it.
            .finds_created_in(&["NamespaceId", "Name"])
            .build()
    }

    // HealthCheckCustomConfig.FailureThreshold is deprecated (AWS always uses 1) but is a
    // CloudFormation property, sent as written.
    #[allow(deprecated)]
    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = given_or_generated_name(&request, "Name", MAX_NAME, false);
        let tags = Some(sd_tags(&tag_map(props), &what)?).filter(|t| !t.is_empty());
        let sd = client(ctx).await?;
        let answer = sd
            .create_service()
            .name(&name)
            .set_namespace_id(string(props.get("NamespaceId")))
            .set_creator_request_id(creator_request_id(&request.client_token))
            .set_description(string(props.get("Description")))
            .set_dns_config(dns_config(props, &what)?)
            .set_health_check_config(health_check(props, &what)?)
            .set_health_check_custom_config(
                props
                    .get("HealthCheckCustomConfig")
                    .filter(|v| v.is_object())
                    .map(|c| {
                        HealthCheckCustomConfig::builder()
                            .set_failure_threshold(int(c.get("FailureThreshold")))
                            .build()
                    }),
            )
            .set_type(string(props.get("Type")).map(|t| ServiceTypeOption::from(t.as_str())))
            .set_tags(tags)
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateService {name}")))?;
        let service = answer.service().cloned().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateService {name} answered no service"))
        })?;
        let id = service.id().unwrap_or_default().to_string();
        apply_service_attributes(
            &sd,
            &what,
            &id,
            &BTreeMap::new(),
            &service_attributes(props),
        )
        .await?;
        Ok(CreateResult {
            attributes: attributes_of(&service),
            physical_id: id,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, id) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let routing = |p: &Map<String, Value>| {
            p.get("DnsConfig")
                .and_then(|d| string(d.get("RoutingPolicy")))
        };
        if routing(before) != routing(after) {
            return Err(ProviderError::validation(format!(
                "{what}: DnsConfig.RoutingPolicy cannot change on an existing Cloud Map service (UpdateService changes only the records' TTLs); give the service a new Name to replace it"
            )));
        }
        let sd = client(ctx).await?;
        let changed = |key: &str| before.get(key) != after.get(key);
        if changed("Description") || changed("DnsConfig") || changed("HealthCheckConfig") {
            // UpdateService drops what the change leaves out, so all three are sent every time.
            let dns = match after.get("DnsConfig").filter(|v| v.is_object()) {
                Some(config) => Some(
                    DnsConfigChange::builder()
                        .set_dns_records(Some(dns_records(config, &what)?))
                        .build()
                        .map_err(|e| {
                            ProviderError::validation(format!("{what}: DnsConfig: {e}"))
                        })?,
                ),
                None => None,
            };
            let change = ServiceChange::builder()
                .description(string(after.get("Description")).unwrap_or_default())
                .set_dns_config(dns)
                .set_health_check_config(health_check(after, &what)?)
                .build();
            let answer = sd
                .update_service()
                .id(id)
                .service(change)
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateService {id}")))?;
            if let Some(operation_id) = answer.operation_id() {
                wait_for(&sd, &what, operation_id, OperationTargetType::Service).await?;
            }
        }
        apply_service_attributes(
            &sd,
            &what,
            id,
            &service_attributes(before),
            &service_attributes(after),
        )
        .await?;
        let attributes = attributes_or_gone(&sd, &what, id).await?;
        let arn = string(attributes.get("Arn")).unwrap_or_default();
        retag(&sd, &what, &arn, before, after).await?;
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes,
            ..Default::default()
        })
    }

    /// A service that still has instances registered is refused (`ResourceInUse`), as under
    /// CloudFormation; one already gone is deleted.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let id = request.physical_id.as_str();
        let sd = client(ctx).await?;
        deleted_unless_failed(
            sd.delete_service()
                .id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteService {id}"))),
        )
    }
}

#[async_trait]
impl Readable for Service {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sd = client(ctx).await?;
        let id = request.physical_id.as_str();
        let Some(service) = get(&sd, what, id).await? else {
            return Ok(None);
        };
        let mut props = template_shape(&service, &request.properties);
        let live = found(
            sd.get_service_attributes()
                .service_id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetServiceAttributes {id}"))),
        )?;
        let attributes: Map<String, Value> = live
            .as_ref()
            .and_then(|a| a.service_attributes())
            .and_then(|a| a.attributes())
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        if !attributes.is_empty() {
            props.insert("ServiceAttributes".into(), Value::Object(attributes));
        }
        let arn = service.arn().unwrap_or_default().to_string();
        let tags = sd
            .list_tags_for_resource()
            .resource_arn(&arn)
            .send()
            .await
            .map_err(failed!(format!("{what}: ListTagsForResource {arn}")))?;
        put(
            &mut props,
            "Tags",
            template_tags(tags.tags().iter().map(|t| (t.key(), t.value()))),
        );
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let sd = client(ctx).await?;
        attributes_or_gone(&sd, what, physical_id).await
    }

    /// The service of the create's name in the template's namespace whose `CreatorRequestId`
    /// is the token's.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(name), Some(namespace), Some(wanted)) = (
            created_name(request, Some("Name"), MAX_NAME, false),
            namespace_of(&request.properties),
            creator_request_id(&request.token),
        ) else {
            return Ok(None);
        };
        let sd = client(ctx).await?;
        let filter = ServiceFilter::builder()
            .name(ServiceFilterName::NamespaceId)
            .values(&namespace)
            .condition(FilterCondition::Eq)
            .build()
            .map_err(|e| ProviderError::other(format!("{what}: {e}")))?;
        let mut next: Option<String> = None;
        loop {
            let page = sd
                .list_services()
                .filters(filter.clone())
                .set_next_token(next.take())
                .send()
                .await
                .map_err(failed!(format!("{what}: ListServices {namespace}")))?;
            for summary in page.services().iter().filter(|s| s.name() == Some(&name)) {
                let Some(id) = summary.id() else { continue };
                if let Some(service) = get(&sd, what, id).await? {
                    if service.namespace_id() == Some(namespace.as_str())
                        && service.creator_request_id() == Some(wanted.as_str())
                    {
                        return Ok(Some(id.to_string()));
                    }
                }
            }
            match page.next_token() {
                Some(token) if !token.is_empty() => next = Some(token.to_string()),
                _ => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated)]
    fn a_dns_service_converts_and_reads_back_in_template_shape() {
        let template = json!({
            "Name": "api",
            "NamespaceId": "ns-1",
            "DnsConfig": {"RoutingPolicy": "MULTIVALUE", "DnsRecords": [{"Type": "A", "TTL": "60"}]},
            "HealthCheckCustomConfig": {"FailureThreshold": 1},
        });
        let props = template.as_object().unwrap();
        let dns = dns_config(props, "w").unwrap().unwrap();
        assert_eq!(dns.dns_records()[0].ttl(), 60);
        let service = LiveService::builder()
            .id("srv-1")
            .name("api")
            .namespace_id("ns-1")
            .dns_config(dns)
            .health_check_custom_config(
                HealthCheckCustomConfig::builder()
                    .failure_threshold(1)
                    .build(),
            )
            .r#type(aws_sdk_servicediscovery::types::ServiceType::Dns)
            .build();
        assert_eq!(
            Value::Object(template_shape(&service, props)),
            json!({
                "Name": "api",
                "NamespaceId": "ns-1",
                "DnsConfig": {"RoutingPolicy": "MULTIVALUE", "DnsRecords": [{"Type": "A", "TTL": 60}]},
                "HealthCheckCustomConfig": {"FailureThreshold": 1},
            })
        );
    }

    #[test]
    fn the_namespace_comes_from_either_spelling() {
        let top = json!({"NamespaceId": "ns-1"});
        assert_eq!(
            namespace_of(top.as_object().unwrap()).as_deref(),
            Some("ns-1")
        );
        let nested = json!({"DnsConfig": {"NamespaceId": "ns-2", "DnsRecords": []}});
        assert_eq!(
            namespace_of(nested.as_object().unwrap()).as_deref(),
            Some("ns-2")
        );
        let attributes = json!({"ServiceAttributes": {"a": "1", "b": 2}});
        assert_eq!(
            service_attributes(attributes.as_object().unwrap()),
            BTreeMap::from([("a".into(), "1".into()), ("b".into(), "2".into())])
        );
    }

    #[test]
    fn the_schema_declares_every_property() {
        let schema = Service.schema();
        assert_eq!(schema.handled_properties.len(), 9);
        assert_eq!(schema.find_scope, ["NamespaceId", "Name"]);
    }
}
