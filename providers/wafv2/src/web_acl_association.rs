//! `AWS::WAFv2::WebACLAssociation`: a regional resource (API Gateway stage, load balancer ...)
//! protected by a web ACL. Physical id `ResourceArn|WebACLArn`. Associating a resource with the
//! web ACL it already has changes nothing, so a create repeated after a crash simply runs
//! again; both properties are create-only.

use std::time::Duration;

use cdkd_aws_common::{found, require_str, retry_while, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::WAFv2::WebACLAssociation";

/// How long an association waits for WAF to see a resource just created (a new stage answers
/// `WAFUnavailableEntityException` for a while).
const UNAVAILABLE_PATIENCE: Duration = Duration::from_secs(180);

/// The `AWS::WAFv2::WebACLAssociation` provider.
#[derive(Default)]
pub struct WebAclAssociation;

/// The resource and web ACL ARNs of a physical id.
fn split_id<'a>(physical_id: &'a str, what: &str) -> Result<(&'a str, &'a str), ProviderError> {
    physical_id
        .split_once('|')
        .filter(|(r, w)| !r.is_empty() && !w.is_empty())
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: physical id {physical_id} is not ResourceArn|WebACLArn"
            ))
        })
}

/// The ARN of the web ACL protecting `resource`; `None` when none does (or it is gone).
async fn acl_of(
    waf: &aws_sdk_wafv2::Client,
    what: &str,
    resource: &str,
) -> Result<Option<String>, ProviderError> {
    let answer = found(
        waf.get_web_acl_for_resource()
            .resource_arn(resource)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetWebACLForResource {resource}"))),
    )?;
    Ok(answer
        .and_then(|a| a.web_acl().map(|acl| acl.arn().to_string()))
        .filter(|arn| !arn.is_empty()))
}

#[async_trait]
impl ResourceProvider for WebAclAssociation {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["ResourceArn", "WebACLArn"])
            .all_create_only()
            .read_and_import()
            .composite_id(
                &["ResourceArn", "WebACLArn"],
                &[&["ResourceArn"], &["WebACLArn"]],
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
        let resource = require_str(&request.properties, "ResourceArn", &what)?;
        let acl = require_str(&request.properties, "WebACLArn", &what)?;
        let waf = client(ctx).await?;
        retry_while(
            Duration::from_secs(2),
            UNAVAILABLE_PATIENCE,
            |err: &ProviderError, _| err.aws_code() == Some("WAFUnavailableEntityException"),
            || async {
                waf.associate_web_acl()
                    .resource_arn(resource)
                    .web_acl_arn(acl)
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(failed!(format!("{what}: AssociateWebACL {resource}")))
            },
        )
        .await?;
        Ok(CreateResult {
            physical_id: format!("{resource}|{acl}"),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        // Both properties are create-only: an update that reaches here changed nothing.
        Ok(UpdateResult {
            physical_id: request.physical_id,
            ..Default::default()
        })
    }

    /// Removes the association only when the resource still has this web ACL: a resource
    /// since given another web ACL (a replacement's new association) keeps it.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (resource, acl) = split_id(&request.physical_id, &what)?;
        let waf = client(ctx).await?;
        if acl_of(&waf, &what, resource).await?.as_deref() != Some(acl) {
            return Ok(DeleteResult::Deleted);
        }
        cdkd_aws_common::deleted_unless_failed(
            waf.disassociate_web_acl()
                .resource_arn(resource)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DisassociateWebACL {resource}"))),
        )
    }
}

#[async_trait]
impl Readable for WebAclAssociation {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (resource, acl) = split_id(&request.physical_id, what)?;
        let waf = client(ctx).await?;
        let Some(live) = acl_of(&waf, what, resource).await? else {
            return Ok(None);
        };
        // Another web ACL on the resource: this association no longer exists.
        if live != acl {
            return Ok(None);
        }
        let mut props = Map::new();
        props.insert("ResourceArn".into(), json!(resource));
        props.insert("WebACLArn".into(), json!(live));
        Ok(Some(props))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_the_resource_and_the_acl() {
        let id = "arn:aws:apigateway:us-east-1::/restapis/a/stages/prod|arn:aws:wafv2:us-east-1:1:regional/webacl/w/i";
        let (resource, acl) = split_id(id, "w").unwrap();
        assert!(resource.ends_with("stages/prod"));
        assert!(acl.ends_with("webacl/w/i"));
        assert!(split_id("arn:r", "w").is_err());
        assert!(split_id("|arn:w", "w").is_err());
        let schema = WebAclAssociation.schema();
        assert!(schema.supports(operation::IDEMPOTENT_CREATE));
        assert_eq!(schema.create_only_properties, ["ResourceArn", "WebACLArn"]);
    }
}
