//! `AWS::ApiGateway::DomainName` (regional and edge): physical id (and `Ref`) is the domain
//! name, which the template gives, so the run after a crash looks it up. Attributes
//! `DistributionDomainName` and `DistributionHostedZoneId` (edge), `RegionalDomainName` and
//! `RegionalHostedZoneId` (regional) and `DomainNameArn`: an alias record needs only those,
//! which the create answers, so nothing is waited for (an edge name's CloudFront distribution
//! finishes on its own).

use aws_sdk_apigateway::types::{
    EndpointConfiguration, MutualTlsAuthenticationInput, Op, PatchOperation,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, put, require_str, strings, text, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::patch::{op, replace};
use crate::{arn, changed, client, create_tags, failed, found, retag, tags_shape};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::DomainName";

/// The `AWS::ApiGateway::DomainName` provider.
#[derive(Default)]
pub struct DomainName;

/// The attributes of a live (or just created) domain name.
fn attributes_of(
    arn: Option<&str>,
    distribution: Option<&str>,
    distribution_zone: Option<&str>,
    regional: Option<&str>,
    regional_zone: Option<&str>,
) -> Map<String, Value> {
    let mut attrs = Map::new();
    put(&mut attrs, "DomainNameArn", arn.map(Value::from));
    put(
        &mut attrs,
        "DistributionDomainName",
        distribution.map(Value::from),
    );
    put(
        &mut attrs,
        "DistributionHostedZoneId",
        distribution_zone.map(Value::from),
    );
    put(&mut attrs, "RegionalDomainName", regional.map(Value::from));
    put(
        &mut attrs,
        "RegionalHostedZoneId",
        regional_zone.map(Value::from),
    );
    attrs
}

/// The domain name's ARN, as API Gateway writes it for tags.
fn domain_arn(region: &str, name: &str) -> String {
    arn(region, &format!("/domainnames/{name}"))
}

/// The patch operations that turn the domain name of `before` into the one of `after`.
fn update_ops(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<PatchOperation> {
    let mut ops = Vec::new();
    for (key, path) in [
        ("CertificateArn", "/certificateArn"),
        ("RegionalCertificateArn", "/regionalCertificateArn"),
        ("SecurityPolicy", "/securityPolicy"),
        (
            "OwnershipVerificationCertificateArn",
            "/ownershipVerificationCertificateArn",
        ),
        ("RoutingMode", "/routingMode"),
        ("EndpointAccessMode", "/endpointAccessMode"),
    ] {
        if changed(before, after, key) {
            ops.push(replace(path, text(after.get(key))));
        }
    }
    if changed(before, after, "EndpointConfiguration") {
        let first = |p: &Map<String, Value>| {
            strings(p.get("EndpointConfiguration").and_then(|e| e.get("Types")))
                .and_then(|t| t.first().cloned())
                .unwrap_or_else(|| "EDGE".into())
        };
        let (old, new) = (first(before), first(after));
        if old != new {
            ops.push(op(
                Op::Replace,
                &format!("/endpointConfiguration/types/{old}"),
                Some(new),
            ));
        }
        let ip = |p: &Map<String, Value>| {
            text(
                p.get("EndpointConfiguration")
                    .and_then(|e| e.get("IpAddressType")),
            )
        };
        if ip(before) != ip(after) {
            if let Some(new) = ip(after) {
                ops.push(replace("/endpointConfiguration/ipAddressType", Some(new)));
            }
        }
    }
    if changed(before, after, "MutualTlsAuthentication") {
        let tls = after.get("MutualTlsAuthentication");
        for (key, path) in [
            ("TruststoreUri", "/mutualTlsAuthentication/truststoreUri"),
            (
                "TruststoreVersion",
                "/mutualTlsAuthentication/truststoreVersion",
            ),
        ] {
            ops.push(replace(path, text(tls.and_then(|t| t.get(key)))));
        }
    }
    ops
}

/// A live domain name in template shape and its attributes; `None` when it is gone.
async fn read_domain(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    name: &str,
) -> Result<Option<(Map<String, Value>, Map<String, Value>)>, ProviderError> {
    let Some(d) = found(
        apigw
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
    put(
        &mut props,
        "CertificateArn",
        d.certificate_arn().map(Value::from),
    );
    put(
        &mut props,
        "RegionalCertificateArn",
        d.regional_certificate_arn().map(Value::from),
    );
    put(
        &mut props,
        "SecurityPolicy",
        d.security_policy().map(|p| json!(p.as_str())),
    );
    if let Some(e) = d.endpoint_configuration() {
        let types: Vec<&str> = e.types().iter().map(|t| t.as_str()).collect();
        let mut shape = Map::new();
        if !types.is_empty() {
            shape.insert("Types".into(), json!(types));
        }
        put(
            &mut shape,
            "IpAddressType",
            e.ip_address_type().map(|t| json!(t.as_str())),
        );
        props.insert("EndpointConfiguration".into(), Value::Object(shape));
    }
    if let Some(m) = d.mutual_tls_authentication() {
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
        if !shape.is_empty() {
            props.insert("MutualTlsAuthentication".into(), Value::Object(shape));
        }
    }
    put(
        &mut props,
        "OwnershipVerificationCertificateArn",
        d.ownership_verification_certificate_arn().map(Value::from),
    );
    put(
        &mut props,
        "RoutingMode",
        d.routing_mode().map(|m| json!(m.as_str())),
    );
    put(
        &mut props,
        "EndpointAccessMode",
        d.endpoint_access_mode().map(|m| json!(m.as_str())),
    );
    put(&mut props, "Tags", tags_shape(d.tags()));
    let attrs = attributes_of(
        d.domain_name_arn(),
        d.distribution_domain_name(),
        d.distribution_hosted_zone_id(),
        d.regional_domain_name(),
        d.regional_hosted_zone_id(),
    );
    Ok(Some((props, attrs)))
}

#[async_trait]
impl ResourceProvider for DomainName {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "DomainName",
                "CertificateArn",
                "RegionalCertificateArn",
                "EndpointConfiguration",
                "SecurityPolicy",
                "MutualTlsAuthentication",
                "OwnershipVerificationCertificateArn",
                "RoutingMode",
                "EndpointAccessMode",
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
        let endpoint = props
            .get("EndpointConfiguration")
            .filter(|v| v.is_object())
            .map(|e| {
                EndpointConfiguration::builder()
                    .set_types(
                        strings(e.get("Types"))
                            .map(|t| t.iter().map(|t| t.as_str().into()).collect()),
                    )
                    .set_ip_address_type(text(e.get("IpAddressType")).map(|t| t.as_str().into()))
                    .build()
            });
        let tls = props
            .get("MutualTlsAuthentication")
            .filter(|v| v.is_object())
            .map(|m| {
                MutualTlsAuthenticationInput::builder()
                    .set_truststore_uri(text(m.get("TruststoreUri")))
                    .set_truststore_version(text(m.get("TruststoreVersion")))
                    .build()
            });
        let created = client(ctx)
            .await?
            .create_domain_name()
            .domain_name(name)
            .set_certificate_arn(text(props.get("CertificateArn")))
            .set_regional_certificate_arn(text(props.get("RegionalCertificateArn")))
            .set_endpoint_configuration(endpoint)
            .set_security_policy(text(props.get("SecurityPolicy")).map(|p| p.as_str().into()))
            .set_mutual_tls_authentication(tls)
            .set_ownership_verification_certificate_arn(text(
                props.get("OwnershipVerificationCertificateArn"),
            ))
            .set_routing_mode(text(props.get("RoutingMode")).map(|m| m.as_str().into()))
            .set_endpoint_access_mode(
                text(props.get("EndpointAccessMode")).map(|m| m.as_str().into()),
            )
            .set_tags(create_tags(props, None))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateDomainName {name}")))?;
        Ok(CreateResult {
            physical_id: name.to_string(),
            attributes: attributes_of(
                created.domain_name_arn(),
                created.distribution_domain_name(),
                created.distribution_hosted_zone_id(),
                created.regional_domain_name(),
                created.regional_hosted_zone_id(),
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
        let ops = update_ops(before, after);
        if !ops.is_empty() {
            apigw
                .update_domain_name()
                .domain_name(name)
                .set_patch_operations(Some(ops))
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateDomainName {name}")))?;
        }
        retag(
            &apigw,
            &what,
            &domain_arn(ctx.region(), name),
            before,
            after,
        )
        .await?;
        let (_, attributes) = read_domain(&apigw, &what, name)
            .await?
            .ok_or_else(|| does_not_exist(&what, name, "API Gateway"))?;
        Ok(UpdateResult {
            physical_id: name.to_string(),
            attributes,
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
        Ok(read_domain(&client(ctx).await?, what, &request.physical_id)
            .await?
            .map(|(props, _)| props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        read_domain(&client(ctx).await?, what, physical_id)
            .await?
            .map(|(_, attrs)| attrs)
            .ok_or_else(|| does_not_exist(what, physical_id, "API Gateway"))
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
    fn domain_changes_become_patch_operations() {
        let before = json!({"DomainName": "a.example.com", "RegionalCertificateArn": "arn:c1",
            "EndpointConfiguration": {"Types": ["REGIONAL"]}});
        let after = json!({"DomainName": "a.example.com", "RegionalCertificateArn": "arn:c2",
            "EndpointConfiguration": {"Types": ["REGIONAL"]}, "SecurityPolicy": "TLS_1_2"});
        let ops: Vec<String> = update_ops(before.as_object().unwrap(), after.as_object().unwrap())
            .iter()
            .map(|o| format!("{} {}", o.path().unwrap(), o.value().unwrap_or("-")))
            .collect();
        assert_eq!(
            ops,
            ["/regionalCertificateArn arn:c2", "/securityPolicy TLS_1_2"]
        );
        assert_eq!(
            domain_arn("us-east-1", "a.example.com"),
            "arn:aws:apigateway:us-east-1::/domainnames/a.example.com"
        );
        let attrs = attributes_of(None, None, None, Some("d-1.execute-api"), Some("Z1"));
        assert_eq!(
            Value::Object(attrs),
            json!({"RegionalDomainName": "d-1.execute-api", "RegionalHostedZoneId": "Z1"})
        );
    }
}
