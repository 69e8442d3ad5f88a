//! `AWS::ElasticLoadBalancingV2::Listener`: physical id (and `Ref`) is the ARN. A port is
//! unique on its load balancer, so the run after a crash finds the listener by its `Port` in
//! its `LoadBalancerArn`. A listener can be created while its load balancer is still
//! `provisioning`, so nothing is waited for.

use aws_sdk_elasticloadbalancingv2::types::{
    Certificate, ListenerAttribute, MutualAuthenticationAttributes,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, found, int, put, require_str, strings, text,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::actions::{actions, actions_shape};
use crate::{
    changed, changed_key_values, client, failed, key_values, key_values_shape, only_keys,
    read_tags, sdk_tags, update_tags,
};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ElasticLoadBalancingV2::Listener";

/// The settings ModifyListener changes in place.
const SETTINGS: &[&str] = &[
    "Port",
    "Protocol",
    "SslPolicy",
    "Certificates",
    "DefaultActions",
    "AlpnPolicy",
    "MutualAuthentication",
];

/// The `AWS::ElasticLoadBalancingV2::Listener` provider.
#[derive(Default)]
pub struct Listener;

type Live = aws_sdk_elasticloadbalancingv2::types::Listener;

/// The template's `Certificates` (`[{CertificateArn}]`) as the SDK's.
pub(crate) fn certificates(value: Option<&Value>) -> Option<Vec<Certificate>> {
    value?.as_array().map(|items| {
        items
            .iter()
            .map(|c| {
                Certificate::builder()
                    .set_certificate_arn(text(c.get("CertificateArn")))
                    .build()
            })
            .collect()
    })
}

fn mutual_authentication(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<MutualAuthenticationAttributes>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    only_keys(
        value,
        &[
            "Mode",
            "TrustStoreArn",
            "IgnoreClientCertificateExpiry",
            "AdvertiseTrustStoreCaNames",
        ],
        &format!("{what}: MutualAuthentication"),
    )?;
    Ok(Some(
        MutualAuthenticationAttributes::builder()
            .set_mode(text(value.get("Mode")))
            .set_trust_store_arn(text(value.get("TrustStoreArn")))
            .set_ignore_client_certificate_expiry(flag(value.get("IgnoreClientCertificateExpiry")))
            .set_advertise_trust_store_ca_names(
                text(value.get("AdvertiseTrustStoreCaNames")).map(|a| a.as_str().into()),
            )
            .build(),
    ))
}

fn sdk_attributes(pairs: Vec<(String, String)>) -> Vec<ListenerAttribute> {
    pairs
        .into_iter()
        .map(|(k, v)| ListenerAttribute::builder().key(k).value(v).build())
        .collect()
}

fn attributes_of(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("ListenerArn".into(), json!(arn));
    attributes
}

async fn describe(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Live>, ProviderError> {
    let answer = found(
        elb.describe_listeners()
            .listener_arns(arn)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeListeners {arn}"))),
    )?;
    Ok(answer.and_then(|a| a.listeners().first().cloned()))
}

/// A live listener in template shape (`template`, the recorded properties, says which
/// optional settings to report).
fn template_shape(
    listener: &Live,
    attributes: Option<Value>,
    template: &Map<String, Value>,
) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "LoadBalancerArn",
        listener.load_balancer_arn().map(Value::from),
    );
    put(&mut props, "Port", listener.port().map(Value::from));
    put(
        &mut props,
        "Protocol",
        listener.protocol().map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "SslPolicy",
        listener.ssl_policy().map(Value::from),
    );
    if !listener.certificates().is_empty() {
        let certificates: Vec<Value> = listener
            .certificates()
            .iter()
            .filter_map(|c| c.certificate_arn())
            .map(|arn| json!({"CertificateArn": arn}))
            .collect();
        props.insert("Certificates".into(), Value::Array(certificates));
    }
    props.insert(
        "DefaultActions".into(),
        actions_shape(listener.default_actions()),
    );
    if !listener.alpn_policy().is_empty() {
        props.insert("AlpnPolicy".into(), json!(listener.alpn_policy()));
    }
    if template.contains_key("MutualAuthentication") {
        if let Some(m) = listener.mutual_authentication() {
            let mut shape = Map::new();
            put(&mut shape, "Mode", m.mode().map(Value::from));
            put(
                &mut shape,
                "TrustStoreArn",
                m.trust_store_arn().map(Value::from),
            );
            put(
                &mut shape,
                "IgnoreClientCertificateExpiry",
                m.ignore_client_certificate_expiry().map(Value::from),
            );
            put(
                &mut shape,
                "AdvertiseTrustStoreCaNames",
                m.advertise_trust_store_ca_names()
                    .map(|a| json!(a.as_str())),
            );
            props.insert("MutualAuthentication".into(), Value::Object(shape));
        }
    }
    put(&mut props, "ListenerAttributes", attributes);
    props
}

#[async_trait]
impl ResourceProvider for Listener {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["LoadBalancerArn", "ListenerAttributes", "Tags"])
            .handles(SETTINGS)
            .create_only(&["LoadBalancerArn"])
            .read_and_import()
            .finds_created_in(&["LoadBalancerArn", "Port"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let lb = require_str(props, "LoadBalancerArn", &what)?;
        let elb = client(ctx).await?;
        let created = elb
            .create_listener()
            .load_balancer_arn(lb)
            .set_port(int(props.get("Port")))
            .set_protocol(text(props.get("Protocol")).map(|p| p.as_str().into()))
            .set_ssl_policy(text(props.get("SslPolicy")))
            .set_certificates(certificates(props.get("Certificates")))
            .set_default_actions(Some(actions(props.get("DefaultActions"), &what)?))
            .set_alpn_policy(strings(props.get("AlpnPolicy")))
            .set_mutual_authentication(mutual_authentication(
                props.get("MutualAuthentication"),
                &what,
            )?)
            .set_tags(sdk_tags(props))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateListener on {lb}")))?;
        let arn = created
            .listeners()
            .first()
            .and_then(|l| l.listener_arn())
            .ok_or_else(|| ProviderError::other(format!("{what}: CreateListener returned no ARN")))?
            .to_string();
        let attributes = changed_key_values(None, props.get("ListenerAttributes"));
        if !attributes.is_empty() {
            let modified = elb
                .modify_listener_attributes()
                .listener_arn(&arn)
                .set_attributes(Some(sdk_attributes(attributes)))
                .send()
                .await
                .map_err(failed!(format!("{what}: ModifyListenerAttributes {arn}")));
            if let Err(err) = modified {
                let undone = elb
                    .delete_listener()
                    .listener_arn(&arn)
                    .send()
                    .await
                    .is_ok();
                let fate = if undone {
                    "deleted again"
                } else {
                    "NOT deleted: delete it by hand"
                };
                return Err(ProviderError::new(
                    err.kind,
                    format!(
                        "{}; the listener {arn} it had created was {fate}",
                        err.message
                    ),
                ));
            }
        }
        Ok(CreateResult {
            attributes: attributes_of(&arn),
            physical_id: arn,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (before, after) = (&request.previous_properties, &request.properties);
        let arn = request.physical_id.as_str();
        let elb = client(ctx).await?;
        if SETTINGS.iter().any(|k| changed(before, after, k)) {
            // A dropped ALPN policy is sent empty: ModifyListener leaves out what it is not sent.
            let alpn = strings(after.get("AlpnPolicy"))
                .or_else(|| changed(before, after, "AlpnPolicy").then(|| vec!["None".into()]));
            elb.modify_listener()
                .listener_arn(arn)
                .set_port(int(after.get("Port")))
                .set_protocol(text(after.get("Protocol")).map(|p| p.as_str().into()))
                .set_ssl_policy(text(after.get("SslPolicy")))
                .set_certificates(certificates(after.get("Certificates")))
                .set_default_actions(Some(actions(after.get("DefaultActions"), &what)?))
                .set_alpn_policy(alpn)
                .set_mutual_authentication(mutual_authentication(
                    after.get("MutualAuthentication"),
                    &what,
                )?)
                .send()
                .await
                .map_err(failed!(format!("{what}: ModifyListener {arn}")))?;
        }
        let attributes = changed_key_values(
            before.get("ListenerAttributes"),
            after.get("ListenerAttributes"),
        );
        if !attributes.is_empty() {
            elb.modify_listener_attributes()
                .listener_arn(arn)
                .set_attributes(Some(sdk_attributes(attributes)))
                .send()
                .await
                .map_err(failed!(format!("{what}: ModifyListenerAttributes {arn}")))?;
        }
        update_tags(&elb, &what, arn, before, after).await?;
        Ok(UpdateResult {
            physical_id: arn.to_string(),
            attributes: attributes_of(arn),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let arn = request.physical_id.as_str();
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_listener()
                .listener_arn(arn)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteListener {arn}"))),
        )
    }
}

#[async_trait]
impl Readable for Listener {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let elb = client(ctx).await?;
        let arn = request.physical_id.as_str();
        let Some(listener) = describe(&elb, what, arn).await? else {
            return Ok(None);
        };
        // Every listener has attributes with AWS's defaults: read only when the template sets
        // some, and report those.
        let wanted = key_values(request.properties.get("ListenerAttributes"));
        let attributes = if wanted.is_empty() {
            None
        } else {
            let answer = elb
                .describe_listener_attributes()
                .listener_arn(arn)
                .send()
                .await
                .map_err(failed!(format!("{what}: DescribeListenerAttributes {arn}")))?;
            key_values_shape(
                answer
                    .attributes()
                    .iter()
                    .filter_map(|a| Some((a.key()?, a.value().unwrap_or_default()))),
                &wanted,
            )
        };
        let mut props = template_shape(&listener, attributes, &request.properties);
        cdkd_aws_common::put(&mut props, "Tags", read_tags(&elb, what, arn).await?);
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let elb = client(ctx).await?;
        describe(&elb, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "ElasticLoadBalancingV2"))?;
        Ok(attributes_of(physical_id))
    }

    /// The listener on the template's `Port` of its `LoadBalancerArn`.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let (Some(lb), Some(port)) = (
            text(request.properties.get("LoadBalancerArn")),
            int(request.properties.get("Port")),
        ) else {
            return Ok(None);
        };
        let elb = client(ctx).await?;
        let mut marker: Option<String> = None;
        loop {
            let Some(page) = found(
                elb.describe_listeners()
                    .load_balancer_arn(&lb)
                    .set_marker(marker.take())
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: DescribeListeners on {lb}"))),
            )?
            else {
                return Ok(None);
            };
            if let Some(listener) = page.listeners().iter().find(|l| l.port() == Some(port)) {
                return Ok(listener.listener_arn().map(ToString::to_string));
            }
            match page.next_marker() {
                Some(next) if !next.is_empty() => marker = Some(next.to_string()),
                _ => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_elasticloadbalancingv2::types::{Action, FixedResponseActionConfig};

    #[test]
    fn a_live_listener_reads_back_in_template_shape() {
        let listener = Live::builder()
            .listener_arn("arn:l")
            .load_balancer_arn("arn:lb")
            .port(443)
            .protocol("HTTPS".into())
            .ssl_policy("ELBSecurityPolicy-2016-08")
            .certificates(Certificate::builder().certificate_arn("arn:cert").build())
            .default_actions(
                Action::builder()
                    .r#type("fixed-response".into())
                    .order(1)
                    .fixed_response_config(
                        FixedResponseActionConfig::builder()
                            .status_code("404")
                            .build(),
                    )
                    .build(),
            )
            .mutual_authentication(
                MutualAuthenticationAttributes::builder()
                    .mode("off")
                    .build(),
            )
            .build();
        assert_eq!(
            Value::Object(template_shape(&listener, None, &Map::new())),
            json!({
                "LoadBalancerArn": "arn:lb",
                "Port": 443,
                "Protocol": "HTTPS",
                "SslPolicy": "ELBSecurityPolicy-2016-08",
                "Certificates": [{"CertificateArn": "arn:cert"}],
                "DefaultActions": [{"Type": "fixed-response", "Order": 1, "FixedResponseConfig": {"StatusCode": "404"}}],
            })
        );
        assert_eq!(Listener.schema().find_scope, ["LoadBalancerArn", "Port"]);
    }

    #[test]
    fn mutual_authentication_refuses_unknown_keys() {
        let ok = mutual_authentication(Some(&json!({"Mode": "verify", "TrustStoreArn": "t"})), "L")
            .unwrap()
            .unwrap();
        assert_eq!(ok.mode(), Some("verify"));
        assert!(mutual_authentication(Some(&json!({"Other": 1})), "L").is_err());
        assert!(mutual_authentication(None, "L").unwrap().is_none());
    }
}
