//! `AWS::CloudFront::CloudFrontOriginAccessIdentity`: physical id (and `Ref`) is the identity's
//! id; attributes `Id` and `S3CanonicalUserId`. The create's token is the identity's
//! `CallerReference`, CloudFront's own idempotency token: a repeated create answers the first
//! one's identity (or, when the comment changed in between, `…AlreadyExists`, and the identity is
//! adopted and updated), and after a crash `find_created` finds it by that reference.

use aws_sdk_cloudfront::types::CloudFrontOriginAccessIdentityConfig;
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::named_config::s;
use crate::{
    built, caller_reference, client, etag, failed, find_request, found_answer, unsupported,
};

const TYPE: &str = "AWS::CloudFront::CloudFrontOriginAccessIdentity";
const CONFIG: &str = "CloudFrontOriginAccessIdentityConfig";

/// The `AWS::CloudFront::CloudFrontOriginAccessIdentity` provider.
#[derive(Default)]
pub struct OriginAccessIdentity;

/// The template's comment (required by CloudFront; empty when the template gives none).
fn comment(properties: &Map<String, Value>) -> String {
    properties
        .get(CONFIG)
        .and_then(|c| s(c, "Comment"))
        .unwrap_or_default()
}

fn config(
    what: &str,
    reference: &str,
    comment: String,
) -> Result<CloudFrontOriginAccessIdentityConfig, ProviderError> {
    built(
        what,
        CloudFrontOriginAccessIdentityConfig::builder()
            .caller_reference(reference)
            .comment(comment)
            .build(),
    )
}

/// The identity: its config, canonical user and ETag; `None` when it is gone.
async fn get(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    id: &str,
) -> Result<Option<(CloudFrontOriginAccessIdentityConfig, String, String)>, ProviderError> {
    let answer = cdkd_aws_common::found(
        cf.get_cloud_front_origin_access_identity()
            .id(id)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: GetCloudFrontOriginAccessIdentity {id}"
            ))),
    )?;
    let Some(answer) = answer else {
        return Ok(None);
    };
    let Some(identity) = answer.cloud_front_origin_access_identity() else {
        return Ok(None);
    };
    let Some(config) = identity.cloud_front_origin_access_identity_config() else {
        return Ok(None);
    };
    Ok(Some((
        config.clone(),
        identity.s3_canonical_user_id().to_string(),
        etag(what, answer.e_tag())?,
    )))
}

fn attributes(id: &str, canonical: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(id));
    attributes.insert("S3CanonicalUserId".into(), json!(canonical));
    attributes
}

fn properties(config: &CloudFrontOriginAccessIdentityConfig) -> Map<String, Value> {
    let mut properties = Map::new();
    properties.insert(CONFIG.into(), json!({"Comment": config.comment()}));
    properties
}

/// The identity a create with `token` made, by its `CallerReference` (the list does not show
/// references: each identity's config is read).
async fn with_reference(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    token: &str,
) -> Result<Option<String>, ProviderError> {
    let reference = caller_reference(token);
    let mut marker: Option<String> = None;
    loop {
        let answer = cf
            .list_cloud_front_origin_access_identities()
            .set_marker(marker.take())
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: ListCloudFrontOriginAccessIdentities"
            )))?;
        let Some(list) = answer.cloud_front_origin_access_identity_list() else {
            return Ok(None);
        };
        for summary in list.items() {
            if let Some((config, _, _)) = get(cf, what, summary.id()).await? {
                if config.caller_reference() == reference {
                    return Ok(Some(summary.id().to_string()));
                }
            }
        }
        match list.next_marker() {
            Some(next) if list.is_truncated() && !next.is_empty() => {
                marker = Some(next.to_string())
            }
            _ => return Ok(None),
        }
    }
}

async fn set_comment(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    id: &str,
    wanted: String,
) -> Result<String, ProviderError> {
    let (live, canonical, etag) = get(cf, what, id)
        .await?
        .ok_or_else(|| cdkd_aws_common::does_not_exist(what, id, "CloudFront"))?;
    if live.comment() != wanted {
        cf.update_cloud_front_origin_access_identity()
            .id(id)
            .if_match(etag)
            .cloud_front_origin_access_identity_config(config(
                what,
                live.caller_reference(),
                wanted,
            )?)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: UpdateCloudFrontOriginAccessIdentity {id}"
            )))?;
    }
    Ok(canonical)
}

#[async_trait]
impl ResourceProvider for OriginAccessIdentity {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[CONFIG])
            .read_and_import()
            .operations(&[operation::FIND_CREATED])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let wanted = comment(&request.properties);
        let reference = caller_reference(&request.client_token);
        let cf = client(ctx).await?;
        let created = cf
            .create_cloud_front_origin_access_identity()
            .cloud_front_origin_access_identity_config(config(&what, &reference, wanted.clone())?)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateCloudFrontOriginAccessIdentity"
            )));
        let (id, canonical) = match created {
            Ok(answer) => {
                let identity = answer.cloud_front_origin_access_identity().ok_or_else(|| {
                    ProviderError::other(format!(
                        "{what}: CreateCloudFrontOriginAccessIdentity returned no identity"
                    ))
                })?;
                (
                    identity.id().to_string(),
                    identity.s3_canonical_user_id().to_string(),
                )
            }
            // The reference is this create's token: an earlier attempt of it made the identity.
            Err(err)
                if err.kind == ErrorKind::ALREADY_EXISTS && !request.client_token.is_empty() =>
            {
                let Some(id) = with_reference(&cf, &what, &request.client_token).await? else {
                    return Err(err);
                };
                let canonical = set_comment(&cf, &what, &id, wanted).await?;
                (id, canonical)
            }
            Err(err) => return Err(err),
        };
        Ok(CreateResult {
            attributes: attributes(&id, &canonical),
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
        let id = request.physical_id.clone();
        let cf = client(ctx).await?;
        let canonical = set_comment(&cf, &what, &id, comment(&request.properties)).await?;
        Ok(UpdateResult {
            attributes: attributes(&id, &canonical),
            physical_id: id,
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
        let id = &request.physical_id;
        let cf = client(ctx).await?;
        let Some((_, _, etag)) = get(&cf, &what, id).await? else {
            return Ok(DeleteResult::Deleted);
        };
        cdkd_aws_common::deleted_unless_failed(
            cf.delete_cloud_front_origin_access_identity()
                .id(id)
                .if_match(etag)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteCloudFrontOriginAccessIdentity {id}"
                ))),
        )
    }

    /// `find_created`: the identity whose `CallerReference` is the create's token.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if name != operation::FIND_CREATED {
            return Err(unsupported(TYPE, name));
        }
        let request = find_request(TYPE, request, true)?;
        let what = format!("{TYPE} {}", request.logical_id);
        let cf = client(ctx).await?;
        let Some(id) = with_reference(&cf, &what, &request.token).await? else {
            return found_answer(None, None);
        };
        let live = get(&cf, &what, &id).await?;
        found_answer(Some(id), live.map(|(config, _, _)| properties(&config)))
    }
}

#[async_trait]
impl Readable for OriginAccessIdentity {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cf = client(ctx).await?;
        Ok(get(&cf, what, &request.physical_id)
            .await?
            .map(|(config, _, _)| properties(&config)))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let cf = client(ctx).await?;
        let (_, canonical, _) = get(&cf, what, physical_id)
            .await?
            .ok_or_else(|| cdkd_aws_common::does_not_exist(what, physical_id, "CloudFront"))?;
        Ok(attributes(physical_id, &canonical))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comment_reads_from_the_config_and_defaults_empty() {
        let props = json!({CONFIG: {"Comment": "site"}});
        assert_eq!(comment(props.as_object().unwrap()), "site");
        assert_eq!(comment(&Map::new()), "");
        let config = config("w", "ref-1", "c".into()).unwrap();
        assert_eq!(
            Value::Object(properties(&config)),
            json!({CONFIG: {"Comment": "c"}})
        );
        let attrs = attributes("E1", "abc");
        assert_eq!(attrs["S3CanonicalUserId"], "abc");
    }
}
