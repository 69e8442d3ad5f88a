//! The three Cloud Map namespace types, one provider generic over the kind: an HTTP namespace,
//! a private DNS namespace in a VPC and a public DNS namespace. Physical id (and `Ref`) is the
//! namespace id; attributes `Id`, `Arn` and (DNS kinds) `HostedZoneId`.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::time::Duration;

use aws_sdk_servicediscovery::types::{
    FilterCondition, HttpNamespaceChange, NamespaceFilter, NamespaceFilterName, OperationStatus,
    OperationTargetType, PrivateDnsNamespaceChange, PrivateDnsNamespaceProperties,
    PrivateDnsNamespacePropertiesChange, PrivateDnsPropertiesMutable,
    PrivateDnsPropertiesMutableChange, PublicDnsNamespaceChange, PublicDnsNamespaceProperties,
    PublicDnsNamespacePropertiesChange, PublicDnsPropertiesMutable,
    PublicDnsPropertiesMutableChange, Soa, SoaChange, Tag,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, found, poll, put, require_str, stable_hash, string,
    tag_changes, tag_map, template_tags, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, failed};

/// How long a namespace operation may take (AWS: about a minute for a DNS namespace, whose
/// hosted zone it creates).
const OPERATION_PATIENCE: Duration = Duration::from_secs(600);

/// Which namespace a provider makes.
pub trait Kind: Send + Sync + Default + 'static {
    /// The CloudFormation type name.
    const TYPE: &'static str;
    /// Whether the namespace has a hosted zone (and `Properties.DnsProperties.SOA`).
    const DNS: bool;
    /// Whether it lives in a VPC (`Vpc`).
    const VPC: bool;
}

/// `AWS::ServiceDiscovery::HttpNamespace`.
#[derive(Default)]
pub struct Http;
/// `AWS::ServiceDiscovery::PrivateDnsNamespace`.
#[derive(Default)]
pub struct PrivateDns;
/// `AWS::ServiceDiscovery::PublicDnsNamespace`.
#[derive(Default)]
pub struct PublicDns;

impl Kind for Http {
    const TYPE: &'static str = "AWS::ServiceDiscovery::HttpNamespace";
    const DNS: bool = false;
    const VPC: bool = false;
}
impl Kind for PrivateDns {
    const TYPE: &'static str = "AWS::ServiceDiscovery::PrivateDnsNamespace";
    const DNS: bool = true;
    const VPC: bool = true;
}
impl Kind for PublicDns {
    const TYPE: &'static str = "AWS::ServiceDiscovery::PublicDnsNamespace";
    const DNS: bool = true;
    const VPC: bool = false;
}

/// The provider of the namespaces of kind `K`.
#[derive(Default)]
pub struct Namespace<K: Kind>(PhantomData<K>);

/// The `CreatorRequestId` of a create with `token` (at most 64 characters): the same for every
/// attempt of one create, so Cloud Map makes the namespace once.
pub(crate) fn creator_request_id(token: &str) -> Option<String> {
    if token.is_empty() {
        return None;
    }
    Some(format!("cdkd-{:016x}", stable_hash(&[token])))
}

/// The template's `Properties.DnsProperties.SOA.TTL`.
fn soa_ttl(properties: &Map<String, Value>) -> Option<i64> {
    let ttl = properties
        .get("Properties")?
        .get("DnsProperties")?
        .get("SOA")?
        .get("TTL")?;
    ttl.as_i64()
        .or_else(|| ttl.as_str().and_then(|s| s.parse().ok()))
}

/// Brings the tags of `arn` from the `before` template's to the `after` one's.
pub(crate) async fn retag(
    sd: &aws_sdk_servicediscovery::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed): (BTreeMap<String, String>, Vec<String>) =
        tag_changes(&tag_map(before), &tag_map(after));
    if !removed.is_empty() {
        sd.untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
    }
    if !set.is_empty() {
        sd.tag_resource()
            .resource_arn(arn)
            .set_tags(Some(sd_tags(&set, what)?))
            .send()
            .await
            .map_err(failed!(format!("{what}: TagResource {arn}")))?;
    }
    Ok(())
}

/// Tags as Cloud Map's, each named by `what` when one cannot be built.
pub(crate) fn sd_tags(
    tags: &BTreeMap<String, String>,
    what: &str,
) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(k, v)| {
            Tag::builder()
                .key(k)
                .value(v)
                .build()
                .map_err(|e| ProviderError::validation(format!("{what}: Tags: {e}")))
        })
        .collect()
}

/// Waits for operation `id` to succeed; the id of the `target` (namespace or service) it names.
pub(crate) async fn wait_for(
    sd: &aws_sdk_servicediscovery::Client,
    what: &str,
    id: &str,
    target: OperationTargetType,
) -> Result<Option<String>, ProviderError> {
    let done = poll(OPERATION_PATIENCE, || async {
        let answer = sd
            .get_operation()
            .operation_id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetOperation {id}")))?;
        let Some(op) = answer.operation() else {
            return Ok(None);
        };
        match op.status() {
            Some(OperationStatus::Success) => {
                Ok(Some(op.targets().and_then(|t| t.get(&target).cloned())))
            }
            Some(OperationStatus::Fail) => Err(ProviderError::new(
                ErrorKind::VALIDATION,
                format!(
                    "{what}: Cloud Map operation {id} failed: {} {}",
                    op.error_code().unwrap_or_default(),
                    op.error_message().unwrap_or_default()
                ),
            )),
            _ => Ok(None),
        }
    })
    .await?;
    done.ok_or_else(|| {
        ProviderError::new(
            ErrorKind::OTHER,
            format!(
                "{what}: Cloud Map operation {id} did not finish in {} s: check it with aws servicediscovery get-operation --operation-id {id}, then deploy again",
                OPERATION_PATIENCE.as_secs()
            ),
        )
    })
}

/// The namespace `id`; `None` when it does not exist.
async fn get(
    sd: &aws_sdk_servicediscovery::Client,
    what: &str,
    id: &str,
) -> Result<Option<aws_sdk_servicediscovery::types::Namespace>, ProviderError> {
    Ok(found(
        sd.get_namespace()
            .id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetNamespace {id}"))),
    )?
    .and_then(|a| a.namespace().cloned()))
}

/// `Id`, `Arn` and, for DNS kinds, `HostedZoneId`.
fn attributes_of(
    namespace: &aws_sdk_servicediscovery::types::Namespace,
    dns: bool,
) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "Id", namespace.id().map(Value::from));
    put(&mut attributes, "Arn", namespace.arn().map(Value::from));
    if dns {
        put(
            &mut attributes,
            "HostedZoneId",
            namespace
                .properties()
                .and_then(|p| p.dns_properties())
                .and_then(|d| d.hosted_zone_id())
                .map(Value::from),
        );
    }
    attributes
}

impl<K: Kind> Namespace<K> {
    async fn attributes_or_gone(
        sd: &aws_sdk_servicediscovery::Client,
        what: &str,
        id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let namespace = get(sd, what, id)
            .await?
            .ok_or_else(|| does_not_exist(what, id, "Cloud Map"))?;
        Ok(attributes_of(&namespace, K::DNS))
    }
}

#[async_trait]
impl<K: Kind> ResourceProvider for Namespace<K> {
    fn schema(&self) -> ResourceTypeSchema {
        let mut handled = vec!["Name", "Description", "Tags"];
        let mut create_only = vec!["Name"];
        if K::DNS {
            handled.push("Properties");
        }
        if K::VPC {
            handled.push("Vpc");
            create_only.push("Vpc");
        }
        TypeSchema::builder(K::TYPE)
            .handles(&handled)
            .create_only(&create_only)
            .read_and_import()
            // Found by its name, then by the CreatorRequestId the token gave it.
            .finds_created_in(&["Name"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{} {}", K::TYPE, request.logical_id);
        let props = &request.properties;
        let name = require_str(props, "Name", &what)?;
        let request_id = creator_request_id(&request.client_token);
        let description = string(props.get("Description"));
        let tags = Some(sd_tags(&tag_map(props), &what)?).filter(|t| !t.is_empty());
        let sd = client(ctx).await?;
        let ttl = soa_ttl(props);
        let operation_id = if !K::DNS {
            sd.create_http_namespace()
                .name(name)
                .set_creator_request_id(request_id)
                .set_description(description)
                .set_tags(tags)
                .send()
                .await
                .map_err(failed!(format!("{what}: CreateHttpNamespace {name}")))?
                .operation_id()
                .map(ToString::to_string)
        } else if K::VPC {
            let vpc = require_str(props, "Vpc", &what)?;
            sd.create_private_dns_namespace()
                .name(name)
                .vpc(vpc)
                .set_creator_request_id(request_id)
                .set_description(description)
                .set_tags(tags)
                .set_properties(ttl.map(|ttl| {
                    PrivateDnsNamespaceProperties::builder()
                        .dns_properties(
                            PrivateDnsPropertiesMutable::builder()
                                .soa(Soa::builder().ttl(ttl).build().expect("ttl set"))
                                .build(),
                        )
                        .build()
                }))
                .send()
                .await
                .map_err(failed!(format!("{what}: CreatePrivateDnsNamespace {name}")))?
                .operation_id()
                .map(ToString::to_string)
        } else {
            sd.create_public_dns_namespace()
                .name(name)
                .set_creator_request_id(request_id)
                .set_description(description)
                .set_tags(tags)
                .set_properties(ttl.map(|ttl| {
                    PublicDnsNamespaceProperties::builder()
                        .dns_properties(
                            PublicDnsPropertiesMutable::builder()
                                .soa(Soa::builder().ttl(ttl).build().expect("ttl set"))
                                .build(),
                        )
                        .build()
                }))
                .send()
                .await
                .map_err(failed!(format!("{what}: CreatePublicDnsNamespace {name}")))?
                .operation_id()
                .map(ToString::to_string)
        };
        let operation_id = operation_id.ok_or_else(|| {
            ProviderError::other(format!("{what}: the create answered no OperationId"))
        })?;
        let id = wait_for(&sd, &what, &operation_id, OperationTargetType::Namespace)
            .await?
            .ok_or_else(|| {
                ProviderError::other(format!(
                    "{what}: operation {operation_id} succeeded without naming its namespace"
                ))
            })?;
        let attributes = Self::attributes_or_gone(&sd, &what, &id).await?;
        Ok(CreateResult {
            physical_id: id,
            attributes,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{} {}", K::TYPE, request.logical_id);
        let (before, after, id) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let sd = client(ctx).await?;
        let description = string(after.get("Description")).unwrap_or_default();
        let settings_changed = string(before.get("Description")).unwrap_or_default() != description
            || soa_ttl(before) != soa_ttl(after);
        if settings_changed {
            let ttl = soa_ttl(after);
            let answer = if !K::DNS {
                sd.update_http_namespace()
                    .id(id)
                    .namespace(
                        HttpNamespaceChange::builder()
                            .description(&description)
                            .build()
                            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?,
                    )
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: UpdateHttpNamespace {id}")))?
                    .operation_id()
                    .map(ToString::to_string)
            } else if K::VPC {
                sd.update_private_dns_namespace()
                    .id(id)
                    .namespace(
                        PrivateDnsNamespaceChange::builder()
                            .description(&description)
                            .set_properties(ttl.map(|ttl| {
                                PrivateDnsNamespacePropertiesChange::builder()
                                    .dns_properties(
                                        PrivateDnsPropertiesMutableChange::builder()
                                            .soa(
                                                SoaChange::builder()
                                                    .ttl(ttl)
                                                    .build()
                                                    .expect("ttl set"),
                                            )
                                            .build(),
                                    )
                                    .build()
                            }))
                            .build(),
                    )
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: UpdatePrivateDnsNamespace {id}")))?
                    .operation_id()
                    .map(ToString::to_string)
            } else {
                sd.update_public_dns_namespace()
                    .id(id)
                    .namespace(
                        PublicDnsNamespaceChange::builder()
                            .description(&description)
                            .set_properties(ttl.map(|ttl| {
                                PublicDnsNamespacePropertiesChange::builder()
                                    .dns_properties(
                                        PublicDnsPropertiesMutableChange::builder()
                                            .soa(
                                                SoaChange::builder()
                                                    .ttl(ttl)
                                                    .build()
                                                    .expect("ttl set"),
                                            )
                                            .build(),
                                    )
                                    .build()
                            }))
                            .build(),
                    )
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: UpdatePublicDnsNamespace {id}")))?
                    .operation_id()
                    .map(ToString::to_string)
            };
            if let Some(operation_id) = answer {
                wait_for(&sd, &what, &operation_id, OperationTargetType::Namespace).await?;
            }
        }
        let attributes = Self::attributes_or_gone(&sd, &what, id).await?;
        let arn = string(attributes.get("Arn")).unwrap_or_default();
        retag(&sd, &what, &arn, before, after).await?;
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes,
            ..Default::default()
        })
    }

    /// A namespace that still holds services is refused (`ResourceInUse`), as under
    /// CloudFormation; one already gone is deleted.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{} {}", K::TYPE, request.logical_id);
        let id = request.physical_id.as_str();
        let sd = client(ctx).await?;
        let result = async {
            let answer = sd
                .delete_namespace()
                .id(id)
                .send()
                .await
                .map_err(failed!(format!("{what}: DeleteNamespace {id}")))?;
            if let Some(operation_id) = answer.operation_id() {
                wait_for(&sd, &what, operation_id, OperationTargetType::Namespace).await?;
            }
            Ok(())
        }
        .await;
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl<K: Kind> Readable for Namespace<K> {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let sd = client(ctx).await?;
        let Some(namespace) = get(&sd, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let mut props = Map::new();
        put(&mut props, "Name", namespace.name().map(Value::from));
        put(
            &mut props,
            "Description",
            namespace
                .description()
                .filter(|d| !d.is_empty())
                .map(Value::from),
        );
        if K::DNS {
            put(
                &mut props,
                "Properties",
                namespace
                    .properties()
                    .and_then(|p| p.dns_properties())
                    .and_then(|d| d.soa())
                    .map(|soa| json!({"DnsProperties": {"SOA": {"TTL": soa.ttl()}}})),
            );
        }
        if K::VPC {
            // GetNamespace does not answer the VPC; it cannot change (create-only).
            put(&mut props, "Vpc", request.properties.get("Vpc").cloned());
        }
        let arn = namespace.arn().unwrap_or_default().to_string();
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
        Self::attributes_or_gone(&sd, what, physical_id).await
    }

    /// The namespace of the template's name whose `CreatorRequestId` is the token's.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(name), Some(wanted)) = (
            string(request.properties.get("Name")),
            creator_request_id(&request.token),
        ) else {
            return Ok(None);
        };
        let sd = client(ctx).await?;
        let filter = NamespaceFilter::builder()
            .name(NamespaceFilterName::Name)
            .values(&name)
            .condition(FilterCondition::Eq)
            .build()
            .map_err(|e| ProviderError::other(format!("{what}: {e}")))?;
        let mut next: Option<String> = None;
        loop {
            let page = sd
                .list_namespaces()
                .filters(filter.clone())
                .set_next_token(next.take())
                .send()
                .await
                .map_err(failed!(format!("{what}: ListNamespaces {name}")))?;
            for summary in page.namespaces().iter().filter(|s| s.name() == Some(&name)) {
                let Some(id) = summary.id() else { continue };
                if let Some(namespace) = get(&sd, what, id).await? {
                    if namespace.creator_request_id() == Some(wanted.as_str()) {
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
    use cdkd_provider_api::protocol::operation;

    #[test]
    fn a_token_fixes_the_creator_request_id() {
        let id = creator_request_id("t1").unwrap();
        assert_eq!(creator_request_id("t1").unwrap(), id);
        assert_ne!(creator_request_id("t2").unwrap(), id);
        assert!(id.len() <= 64);
        assert_eq!(creator_request_id(""), None);
    }

    #[test]
    fn each_kind_declares_its_own_properties() {
        let private = Namespace::<PrivateDns>::default().schema();
        assert_eq!(private.create_only_properties, ["Name", "Vpc"]);
        assert!(private
            .handled_properties
            .contains(&"Properties".to_string()));
        let http = Namespace::<Http>::default().schema();
        assert_eq!(http.handled_properties, ["Name", "Description", "Tags"]);
        assert!(http.supports(operation::FIND_CREATED));
        assert_eq!(http.find_scope, ["Name"]);
        let props = json!({"Properties": {"DnsProperties": {"SOA": {"TTL": "60"}}}});
        assert_eq!(soa_ttl(props.as_object().unwrap()), Some(60));
    }
}
