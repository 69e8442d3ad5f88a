//! `AWS::ElasticLoadBalancingV2::ListenerCertificate`: extra certificates on an HTTPS or TLS
//! listener. Physical id `ListenerArn|CertificateArn[,CertificateArn…]`. AddListenerCertificates
//! adds nothing twice, so a create repeated after a crash simply runs again; every property is
//! create-only (a change adds the new certificates under a new id, then removes the old ones).

use aws_sdk_elasticloadbalancingv2::types::Certificate;
use cdkd_aws_common::{deleted_unless_failed, found, require_str, text, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ElasticLoadBalancingV2::ListenerCertificate";

/// The `AWS::ElasticLoadBalancingV2::ListenerCertificate` provider.
#[derive(Default)]
pub struct ListenerCertificate;

/// The certificate ARNs of a template's `Certificates` (`[{CertificateArn}]`).
fn certificate_arns(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| text(c.get("CertificateArn")))
        .collect()
}

/// The listener and certificates of a physical id.
fn split_id(physical_id: &str, what: &str) -> Result<(String, Vec<String>), ProviderError> {
    let (listener, certificates) = physical_id.split_once('|').ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: physical id {physical_id} is not ListenerArn|CertificateArn"
        ))
    })?;
    Ok((
        listener.to_string(),
        certificates
            .split(',')
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect(),
    ))
}

fn sdk_certificates(arns: &[String]) -> Vec<Certificate> {
    arns.iter()
        .map(|arn| Certificate::builder().certificate_arn(arn).build())
        .collect()
}

/// The non-default certificates of `listener`, every page; `None` when the listener is gone.
async fn listed(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    listener: &str,
) -> Result<Option<Vec<String>>, ProviderError> {
    let mut all = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let Some(page) = found(
            elb.describe_listener_certificates()
                .listener_arn(listener)
                .set_marker(marker.take())
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: DescribeListenerCertificates {listener}"
                ))),
        )?
        else {
            return Ok(None);
        };
        all.extend(
            page.certificates()
                .iter()
                .filter(|c| c.is_default() != Some(true))
                .filter_map(|c| c.certificate_arn().map(ToString::to_string)),
        );
        match page.next_marker() {
            Some(next) if !next.is_empty() => marker = Some(next.to_string()),
            _ => return Ok(Some(all)),
        }
    }
}

#[async_trait]
impl ResourceProvider for ListenerCertificate {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["ListenerArn", "Certificates"])
            .all_create_only()
            .read_and_import()
            .composite_id(
                &["ListenerArn", "CertificateArns"],
                &[&["ListenerArn"], &[]],
            )
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let listener = require_str(&request.properties, "ListenerArn", &what)?;
        let arns = certificate_arns(request.properties.get("Certificates"));
        if arns.is_empty() {
            return Err(ProviderError::validation(format!(
                "{what}: property Certificates needs at least one {{CertificateArn}}"
            )));
        }
        if let Some(bad) = arns.iter().find(|a| a.contains(',') || a.contains('|')) {
            return Err(ProviderError::validation(format!(
                "{what}: certificate ARN {bad} contains ',' or '|'"
            )));
        }
        client(ctx)
            .await?
            .add_listener_certificates()
            .listener_arn(listener)
            .set_certificates(Some(sdk_certificates(&arns)))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: AddListenerCertificates {listener}"
            )))?;
        Ok(CreateResult {
            physical_id: format!("{listener}|{}", arns.join(",")),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        // Every property is create-only: an update that reaches here changed nothing.
        Ok(UpdateResult {
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (listener, arns) = split_id(&request.physical_id, &what)?;
        deleted_unless_failed(
            client(ctx)
                .await?
                .remove_listener_certificates()
                .listener_arn(&listener)
                .set_certificates(Some(sdk_certificates(&arns)))
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: RemoveListenerCertificates {listener}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for ListenerCertificate {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (listener, arns) = split_id(&request.physical_id, what)?;
        let elb = client(ctx).await?;
        let Some(live) = listed(&elb, what, &listener).await? else {
            return Ok(None);
        };
        let present: Vec<Value> = arns
            .iter()
            .filter(|a| live.contains(a))
            .map(|a| json!({"CertificateArn": a}))
            .collect();
        if present.is_empty() {
            return Ok(None);
        }
        let mut props = Map::new();
        props.insert("ListenerArn".into(), json!(listener));
        props.insert("Certificates".into(), Value::Array(present));
        Ok(Some(props))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_the_listener_and_its_certificates() {
        assert_eq!(
            split_id("arn:l|arn:c1,arn:c2", "w").unwrap(),
            (
                "arn:l".to_string(),
                vec!["arn:c1".to_string(), "arn:c2".into()]
            )
        );
        assert!(split_id("arn:l", "w").is_err());
        assert_eq!(
            certificate_arns(Some(&json!([{"CertificateArn": "a"}, {"Other": 1}]))),
            ["a"]
        );
        let schema = ListenerCertificate.schema();
        assert!(schema.supports(operation::IDEMPOTENT_CREATE));
        assert_eq!(
            schema.create_only_properties,
            ["ListenerArn", "Certificates"]
        );
    }
}
