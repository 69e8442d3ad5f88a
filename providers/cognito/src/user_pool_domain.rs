//! `AWS::Cognito::UserPoolDomain`: physical id (and `Ref`) is the domain (a Cognito prefix or
//! a custom domain name), which the template always gives, so the run after a crash finds it by
//! that name. Attribute `CloudFrontDistribution`. The create waits for nothing: the domain's
//! CloudFront name is answered at once, which is all a Route 53 alias needs.

use aws_sdk_cognitoidentityprovider::types::{CustomDomainConfigType, DomainDescriptionType};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, int, put, require_str, string, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{failed, idp};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Cognito::UserPoolDomain";

/// The `AWS::Cognito::UserPoolDomain` provider.
#[derive(Default)]
pub struct UserPoolDomain;

/// `CustomDomainConfig` as Cognito's.
fn custom(value: Option<&Value>) -> Option<CustomDomainConfigType> {
    let value = value.filter(|v| v.is_object())?;
    CustomDomainConfigType::builder()
        .set_certificate_arn(string(value.get("CertificateArn")))
        .build()
        .ok()
}

/// The domain `domain`; `None` when it does not exist (Cognito answers an empty description).
async fn describe(
    cognito: &aws_sdk_cognitoidentityprovider::Client,
    what: &str,
    domain: &str,
) -> Result<Option<DomainDescriptionType>, ProviderError> {
    let answer = cognito
        .describe_user_pool_domain()
        .domain(domain)
        .send()
        .await
        .map_err(failed!(format!("{what}: DescribeUserPoolDomain {domain}")))?;
    Ok(answer
        .domain_description()
        .filter(|d| d.user_pool_id().is_some_and(|p| !p.is_empty()))
        .cloned())
}

/// The live domain in template shape.
fn template_shape(domain: &DomainDescriptionType) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "Domain", domain.domain().map(Value::from));
    put(
        &mut props,
        "UserPoolId",
        domain.user_pool_id().map(Value::from),
    );
    put(
        &mut props,
        "CustomDomainConfig",
        domain
            .custom_domain_config()
            .map(|c| json!({"CertificateArn": c.certificate_arn()})),
    );
    put(
        &mut props,
        "ManagedLoginVersion",
        domain.managed_login_version().map(Value::from),
    );
    props
}

/// `CloudFrontDistribution` of a described domain.
fn attributes_of(domain: Option<&DomainDescriptionType>) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(
        &mut attributes,
        "CloudFrontDistribution",
        domain
            .and_then(|d| d.cloud_front_distribution())
            .map(Value::from),
    );
    attributes
}

#[async_trait]
impl ResourceProvider for UserPoolDomain {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "Domain",
                "UserPoolId",
                "CustomDomainConfig",
                "ManagedLoginVersion",
            ])
            .create_only(&["Domain", "UserPoolId"])
            .read_and_import()
            .finds_created_in(&["UserPoolId", "Domain"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let domain = require_str(props, "Domain", &what)?;
        let pool = require_str(props, "UserPoolId", &what)?;
        let cognito = idp(ctx).await?;
        let created = cognito
            .create_user_pool_domain()
            .domain(domain)
            .user_pool_id(pool)
            .set_custom_domain_config(custom(props.get("CustomDomainConfig")))
            .set_managed_login_version(int(props.get("ManagedLoginVersion")))
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateUserPoolDomain {domain} for {pool}"
            )))?;
        let mut attributes = attributes_of(describe(&cognito, &what, domain).await?.as_ref());
        if let Some(name) = created.cloud_front_domain() {
            attributes.insert("CloudFrontDistribution".into(), json!(name));
        }
        Ok(CreateResult {
            physical_id: domain.to_string(),
            attributes,
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let domain = request.physical_id.as_str();
        let pool = require_str(props, "UserPoolId", &what)?;
        let cognito = idp(ctx).await?;
        cognito
            .update_user_pool_domain()
            .domain(domain)
            .user_pool_id(pool)
            .set_custom_domain_config(custom(props.get("CustomDomainConfig")))
            .set_managed_login_version(int(props.get("ManagedLoginVersion")))
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateUserPoolDomain {domain}")))?;
        Ok(UpdateResult {
            physical_id: domain.to_string(),
            attributes: attributes_of(describe(&cognito, &what, domain).await?.as_ref()),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let domain = request.physical_id.as_str();
        let cognito = idp(ctx).await?;
        // The pool the domain is on: the template's, else the live domain's.
        let pool = match string(request.properties.get("UserPoolId")) {
            Some(pool) => pool,
            None => match describe(&cognito, &what, domain).await? {
                Some(d) => d.user_pool_id().unwrap_or_default().to_string(),
                None => return Ok(DeleteResult::Deleted),
            },
        };
        // Cognito answers a missing domain with InvalidParameterException, not "not found":
        // what decides is whether the domain is still there.
        let result = cognito
            .delete_user_pool_domain()
            .domain(domain)
            .user_pool_id(&pool)
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: DeleteUserPoolDomain {domain}")));
        if result.is_err() && describe(&cognito, &what, domain).await?.is_none() {
            return Ok(DeleteResult::Deleted);
        }
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl Readable for UserPoolDomain {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cognito = idp(ctx).await?;
        let mut props = describe(&cognito, what, &request.physical_id)
            .await?
            .as_ref()
            .map(template_shape);
        // Write-only in CloudFormation's schema: what the template says stands.
        if let Some(props) = props.as_mut() {
            put(
                props,
                "ManagedLoginVersion",
                request.properties.get("ManagedLoginVersion").cloned(),
            );
        }
        Ok(props)
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let cognito = idp(ctx).await?;
        let domain = describe(&cognito, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "Cognito"))?;
        Ok(attributes_of(Some(&domain)))
    }

    const CREATED_NAME: Option<(Option<&'static str>, usize)> = Some((Some("Domain"), 63));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_described_domain_reads_back_in_template_shape() {
        let domain = DomainDescriptionType::builder()
            .domain("shop-users")
            .user_pool_id("us-east-1_p")
            .cloud_front_distribution("d1.cloudfront.net")
            .build();
        assert_eq!(
            Value::Object(template_shape(&domain)),
            json!({"Domain": "shop-users", "UserPoolId": "us-east-1_p"})
        );
        assert_eq!(
            Value::Object(attributes_of(Some(&domain))),
            json!({"CloudFrontDistribution": "d1.cloudfront.net"})
        );
        assert_eq!(
            custom(Some(&json!({"CertificateArn": "arn:c"})))
                .unwrap()
                .certificate_arn(),
            "arn:c"
        );
    }
}
