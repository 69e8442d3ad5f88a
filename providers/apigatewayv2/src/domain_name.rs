//! `AWS::ApiGatewayV2::DomainName`: physical id (and `Ref`) is the domain name; attributes
//! `RegionalDomainName`, `RegionalHostedZoneId` (of the regional endpoint configuration) and
//! `DomainNameArn`. The name is the template's (required), so the run after a crash looks it up.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_apigatewayv2::types::{
    DomainNameConfiguration, MutualTlsAuthentication, MutualTlsAuthenticationInput,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, put, require_str, tag_changes, text, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changed, client, failed, found, string_map};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGatewayV2::DomainName";

/// The `AWS::ApiGatewayV2::DomainName` provider.
#[derive(Default)]
pub struct DomainName;

/// One `DomainNameConfigurations` entry as the SDK's.
fn configuration(value: &Value) -> DomainNameConfiguration {
    DomainNameConfiguration::builder()
        .set_certificate_arn(text(value.get("CertificateArn")))
        .set_certificate_name(text(value.get("CertificateName")))
        .set_endpoint_type(text(value.get("EndpointType")).map(|t| t.as_str().into()))
        .set_ip_address_type(text(value.get("IpAddressType")).map(|t| t.as_str().into()))
        .set_security_policy(text(value.get("SecurityPolicy")).map(|t| t.as_str().into()))
        .set_ownership_verification_certificate_arn(text(
            value.get("OwnershipVerificationCertificateArn"),
        ))
        .build()
}

fn configurations(props: &Map<String, Value>) -> Option<Vec<DomainNameConfiguration>> {
    props
        .get("DomainNameConfigurations")?
        .as_array()
        .map(|list| list.iter().map(configuration).collect())
}

fn mutual_tls(props: &Map<String, Value>) -> Option<MutualTlsAuthenticationInput> {
    let value = props
        .get("MutualTlsAuthentication")
        .filter(|v| v.is_object())?;
    Some(
        MutualTlsAuthenticationInput::builder()
            .set_truststore_uri(text(value.get("TruststoreUri")))
            .set_truststore_version(text(value.get("TruststoreVersion")))
            .build(),
    )
}

/// A live configuration in template shape (what AWS fills in left out).
fn configuration_shape(c: &DomainNameConfiguration) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "CertificateArn",
        c.certificate_arn().map(Value::from),
    );
    put(
        &mut shape,
        "CertificateName",
        c.certificate_name().map(Value::from),
    );
    put(
        &mut shape,
        "EndpointType",
        c.endpoint_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut shape,
        "IpAddressType",
        c.ip_address_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut shape,
        "SecurityPolicy",
        c.security_policy().map(|t| json!(t.as_str())),
    );
    put(
        &mut shape,
        "OwnershipVerificationCertificateArn",
        c.ownership_verification_certificate_arn().map(Value::from),
    );
    Value::Object(shape)
}

fn mutual_tls_shape(m: &MutualTlsAuthentication) -> Option<Value> {
    let mut shape = Map::new();
    put(
        &mut shape,
        "TruststoreUri",
        m.truststore_uri().map(Value::from),
    );
    put(
        &mut shape,
        "TruststoreVersion",
        m.truststore_version().map(Value::from),
    );
    (!shape.is_empty()).then_some(Value::Object(shape))
}

/// `RegionalDomainName` and `RegionalHostedZoneId` (of the regional configuration) and
/// `DomainNameArn`.
fn attributes_of(
    arn: Option<&str>,
    configurations: &[DomainNameConfiguration],
) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(&mut attributes, "DomainNameArn", arn.map(Value::from));
    if let Some(regional) = configurations
        .iter()
        .find(|c| c.endpoint_type().is_none_or(|t| t.as_str() == "REGIONAL"))
    {
        put(
            &mut attributes,
            "RegionalDomainName",
            regional.api_gateway_domain_name().map(Value::from),
        );
        put(
            &mut attributes,
            "RegionalHostedZoneId",
            regional.hosted_zone_id().map(Value::from),
        );
    }
    attributes
}

/// The template's `Tags` (a map for this type).
fn template_tags(props: &Map<String, Value>) -> BTreeMap<String, String> {
    string_map(props.get("Tags"))
        .unwrap_or_default()
        .into_iter()
        .collect()
}

#[async_trait]
impl ResourceProvider for DomainName {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "DomainName",
                "DomainNameConfigurations",
                "MutualTlsAuthentication",
                "RoutingMode",
                "Tags",
            ])
            .create_only(&["DomainName"])
            .read_and_import()
            .finds_created_in(&["DomainName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = require_str(props, "DomainName", &what)?;
        let tags: HashMap<String, String> = template_tags(props).into_iter().collect();
        let created = client(ctx)
            .await?
            .create_domain_name()
            .domain_name(name)
            .set_domain_name_configurations(configurations(props))
            .set_mutual_tls_authentication(mutual_tls(props))
            .set_routing_mode(text(props.get("RoutingMode")).map(|m| m.as_str().into()))
            .set_tags(Some(tags).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateDomainName {name}")))?;
        Ok(CreateResult {
            physical_id: name.to_string(),
            attributes: attributes_of(
                created.domain_name_arn(),
                created.domain_name_configurations(),
            ),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after, name) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let apigw = client(ctx).await?;
        if [
            "DomainNameConfigurations",
            "MutualTlsAuthentication",
            "RoutingMode",
        ]
        .iter()
        .any(|k| changed(before, after, k))
        {
            apigw
                .update_domain_name()
                .domain_name(name)
                .set_domain_name_configurations(configurations(after))
                .set_mutual_tls_authentication(mutual_tls(after))
                .set_routing_mode(text(after.get("RoutingMode")).map(|m| m.as_str().into()))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateDomainName {name}")))?;
        }
        let live = apigw
            .get_domain_name()
            .domain_name(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetDomainName {name}")))?;
        let (set, removed): (HashMap<String, String>, Vec<String>) =
            tag_changes(&template_tags(before), &template_tags(after));
        if let Some(arn) = live.domain_name_arn() {
            if !removed.is_empty() {
                apigw
                    .untag_resource()
                    .resource_arn(arn)
                    .set_tag_keys(Some(removed))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
            }
            if !set.is_empty() {
                apigw
                    .tag_resource()
                    .resource_arn(arn)
                    .set_tags(Some(set))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: TagResource {arn}")))?;
            }
        }
        Ok(UpdateResult {
            physical_id: name.to_string(),
            attributes: attributes_of(live.domain_name_arn(), live.domain_name_configurations()),
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
        let name = &request.physical_id;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_domain_name()
                .domain_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteDomainName {name}"))),
        )
    }
}

#[async_trait]
impl Readable for DomainName {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let name = &request.physical_id;
        let Some(live) = found(
            client(ctx)
                .await?
                .get_domain_name()
                .domain_name(name)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetDomainName {name}"))),
        )?
        else {
            return Ok(None);
        };
        let mut props = Map::new();
        props.insert("DomainName".into(), json!(name));
        let configurations: Vec<Value> = live
            .domain_name_configurations()
            .iter()
            .map(configuration_shape)
            .collect();
        if !configurations.is_empty() {
            props.insert(
                "DomainNameConfigurations".into(),
                Value::Array(configurations),
            );
        }
        put(
            &mut props,
            "MutualTlsAuthentication",
            live.mutual_tls_authentication().and_then(mutual_tls_shape),
        );
        put(
            &mut props,
            "RoutingMode",
            live.routing_mode().map(|m| json!(m.as_str())),
        );
        let tags: BTreeMap<&str, &str> = live
            .tags()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !k.starts_with("aws:"))
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if !tags.is_empty() {
            props.insert("Tags".into(), json!(tags));
        }
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let live = found(
            client(ctx)
                .await?
                .get_domain_name()
                .domain_name(physical_id)
                .send()
                .await
                .map_err(failed!(format!("{what}: GetDomainName {physical_id}"))),
        )?
        .ok_or_else(|| does_not_exist(what, physical_id, "API Gateway"))?;
        Ok(attributes_of(
            live.domain_name_arn(),
            live.domain_name_configurations(),
        ))
    }

    /// The template's name: it is the physical id.
    async fn created_id(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        Ok(text(request.properties.get("DomainName")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_travel_and_the_regional_one_gives_the_attributes() {
        let template = json!({
            "CertificateArn": "arn:aws:acm:us-east-1:1:certificate/c",
            "EndpointType": "REGIONAL",
            "SecurityPolicy": "TLS_1_2",
        });
        let sdk = configuration(&template);
        assert_eq!(configuration_shape(&sdk), template);
        let live = DomainNameConfiguration::builder()
            .endpoint_type("REGIONAL".into())
            .api_gateway_domain_name("d-abc.execute-api.us-east-1.amazonaws.com")
            .hosted_zone_id("Z1UJRXOUMOOFQ8")
            .build();
        assert_eq!(
            Value::Object(attributes_of(Some("arn:d"), &[live])),
            json!({
                "DomainNameArn": "arn:d",
                "RegionalDomainName": "d-abc.execute-api.us-east-1.amazonaws.com",
                "RegionalHostedZoneId": "Z1UJRXOUMOOFQ8",
            })
        );
    }
}
