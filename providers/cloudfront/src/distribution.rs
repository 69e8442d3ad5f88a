//! `AWS::CloudFront::Distribution`: physical id (and `Ref`) is the distribution id; attributes
//! `DomainName` and `Id`. The create's token is the config's `CallerReference`, CloudFront's own
//! idempotency token: a repeated create with the same configuration answers the first one's
//! distribution, one whose configuration changed in between is answered
//! `DistributionAlreadyExists` and the distribution is adopted and updated, and after a crash
//! `find_created` finds it by that reference.
//!
//! Waits: a create or update returns once CloudFront has accepted it. The distribution is
//! `InProgress` for minutes on AWS while the edge locations take the configuration, but its id
//! and domain name exist at once, which is all a dependent needs (a Route 53 alias, a bucket
//! policy naming the distribution's ARN). The delete is CloudFormation's: disable it (an update
//! with `Enabled: false` and the ETag), wait for `Deployed`, delete with the new ETag; a
//! distribution already gone is deleted.

use std::time::Duration;

use aws_sdk_cloudfront::types::{DistributionConfig, DistributionConfigWithTags, Tags};
use cdkd_aws_common::{tag_map_without_token, template_tags, Pacing, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult, Wait,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::distribution_config::{shape, to_sdk};
use crate::{
    caller_reference, client, etag, failed, find_request, found_answer, live_tags, sdk_tags,
    set_tags, unsupported,
};

const TYPE: &str = "AWS::CloudFront::Distribution";

/// How long a delete waits for a disabled distribution to be `Deployed` (Terraform waits 90
/// minutes; AWS usually takes 3 to 15).
const DEPLOYED_PATIENCE: Duration = Duration::from_secs(90 * 60);

/// How often a delete starts over when the distribution changed under it (a stale ETag).
const DELETE_ATTEMPTS: usize = 3;

/// The `AWS::CloudFront::Distribution` provider.
#[derive(Default)]
pub struct Distribution;

/// The distribution as CloudFront answers it, with its ETag.
struct Live {
    arn: String,
    status: String,
    domain_name: String,
    config: DistributionConfig,
    etag: String,
}

fn config_of<'a>(
    properties: &'a Map<String, Value>,
    what: &str,
) -> Result<&'a Value, ProviderError> {
    properties
        .get("DistributionConfig")
        .filter(|v| v.is_object())
        .ok_or_else(|| {
            ProviderError::validation(format!(
                "{what}: property DistributionConfig is required and must be an object"
            ))
        })
}

async fn get(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    id: &str,
) -> Result<Option<Live>, ProviderError> {
    let answer = cdkd_aws_common::found(
        cf.get_distribution()
            .id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: GetDistribution {id}"))),
    )?;
    let Some(answer) = answer else {
        return Ok(None);
    };
    let Some(distribution) = answer.distribution() else {
        return Ok(None);
    };
    Ok(Some(Live {
        arn: distribution.arn().to_string(),
        status: distribution.status().to_string(),
        domain_name: distribution.domain_name().to_string(),
        config: distribution.distribution_config().cloned().ok_or_else(|| {
            ProviderError::other(format!("{what}: GetDistribution {id} returned no config"))
        })?,
        etag: etag(what, answer.e_tag())?,
    }))
}

fn attributes(id: &str, domain_name: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(id));
    attributes.insert("DomainName".into(), json!(domain_name));
    attributes
}

/// Replaces the live config with `config` (keeping its `CallerReference`), starting over once
/// when the distribution changed between the read and the write.
async fn put_config(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    id: &str,
    config: &Value,
) -> Result<Live, ProviderError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let live = get(cf, what, id)
            .await?
            .ok_or_else(|| cdkd_aws_common::does_not_exist(what, id, "CloudFront"))?;
        let wanted = to_sdk(what, config, live.config.caller_reference())?;
        let answer = cf
            .update_distribution()
            .id(id)
            .if_match(&live.etag)
            .distribution_config(wanted)
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateDistribution {id}")));
        match answer {
            Ok(answer) => {
                let distribution = answer.distribution();
                return Ok(Live {
                    arn: live.arn,
                    status: distribution
                        .map(|d| d.status().to_string())
                        .unwrap_or(live.status),
                    domain_name: distribution
                        .map(|d| d.domain_name().to_string())
                        .unwrap_or(live.domain_name),
                    config: live.config,
                    etag: answer.e_tag().unwrap_or_default().to_string(),
                });
            }
            Err(err)
                if err.aws_code() == Some("PreconditionFailed") && attempt < DELETE_ATTEMPTS =>
            {
                tracing::info!("{what}: {id} changed while it was being updated; reading it again");
            }
            Err(err) => return Err(err),
        }
    }
}

async fn properties(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    live: &Live,
) -> Result<Map<String, Value>, ProviderError> {
    let mut properties = Map::new();
    properties.insert("DistributionConfig".into(), shape(&live.config));
    let tags = live_tags(cf, what, &live.arn).await?;
    cdkd_aws_common::put(
        &mut properties,
        "Tags",
        template_tags(tags.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
    );
    Ok(properties)
}

/// The distribution a create with `token` made, by its `CallerReference` (the list does not
/// show references: each distribution's config is read).
async fn with_reference(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    token: &str,
) -> Result<Option<String>, ProviderError> {
    let reference = caller_reference(token);
    let mut marker: Option<String> = None;
    loop {
        let answer = cf
            .list_distributions()
            .set_marker(marker.take())
            .send()
            .await
            .map_err(failed!(format!("{what}: ListDistributions")))?;
        let Some(list) = answer.distribution_list() else {
            return Ok(None);
        };
        for summary in list.items() {
            let config = cdkd_aws_common::found(
                cf.get_distribution_config()
                    .id(summary.id())
                    .send()
                    .await
                    .map_err(failed!(format!(
                        "{what}: GetDistributionConfig {}",
                        summary.id()
                    ))),
            )?;
            if config
                .and_then(|c| {
                    c.distribution_config()
                        .map(|d| d.caller_reference() == reference)
                })
                .unwrap_or(false)
            {
                return Ok(Some(summary.id().to_string()));
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

/// Waits until the distribution is `Deployed`; its ETag then. `None` when it is gone.
async fn deployed(
    cf: &aws_sdk_cloudfront::Client,
    what: &str,
    id: &str,
) -> Result<Option<Live>, ProviderError> {
    // Capped at 15 s: `Deployed` takes about 170 s (up to 15 min), so the cap is reached only
    // after 150 s, where 15 s is still a tenth of the wait; CloudFront's control plane has low
    // per-account rate limits (Terraform polls it no faster than every 15 s either).
    let pacing = Pacing::capped(Duration::from_secs(15));
    let answer = cdkd_aws_common::poll_paced(pacing, DEPLOYED_PATIENCE, || async {
        match get(cf, what, id).await? {
            None => Ok(Some(None)),
            Some(live) if live.status == "Deployed" => Ok(Some(Some(live))),
            Some(_) => Ok(None),
        }
    })
    .await?;
    match answer {
        Some(found) => Ok(found),
        None => Err(ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: {id} was not Deployed within {} minutes; run the destroy again to go on waiting",
                DEPLOYED_PATIENCE.as_secs() / 60
            ),
        )),
    }
}

/// Under `--wait full`, waits until the created or updated distribution is `Deployed` (about
/// 170 s on AWS, as CloudFormation waits); by default a dependent needs only its id and domain
/// name, which the create answered.
async fn settle(
    cf: &aws_sdk_cloudfront::Client,
    ctx: &PluginContext,
    what: &str,
    id: &str,
) -> Result<(), ProviderError> {
    if ctx.wait() != Wait::Full {
        return Ok(());
    }
    match deployed(cf, what, id).await {
        Err(err) if err.kind == ErrorKind::TIMEOUT => Err(ProviderError::new(
            ErrorKind::TIMEOUT,
            format!(
                "{what}: {id} was not Deployed within {} minutes (--wait full); it keeps deploying on its own: deploy again without --wait full to record it",
                DEPLOYED_PATIENCE.as_secs() / 60
            ),
        )),
        other => other.map(|_| ()),
    }
}

#[async_trait]
impl ResourceProvider for Distribution {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["DistributionConfig", "Tags"])
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
        let props = &request.properties;
        let config_json = config_of(props, &what)?;
        let reference = caller_reference(&request.client_token);
        let config = to_sdk(&what, config_json, &reference)?;
        let tags = tag_map_without_token(props);
        let cf = client(ctx).await?;
        let created = cf
            .create_distribution_with_tags()
            .distribution_config_with_tags(
                DistributionConfigWithTags::builder()
                    .distribution_config(config)
                    .tags(
                        Tags::builder()
                            .set_items(Some(sdk_tags(&what, &tags)?))
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateDistributionWithTags")));
        let (id, domain_name) = match created {
            Ok(answer) => {
                let distribution = answer.distribution().ok_or_else(|| {
                    ProviderError::other(format!(
                        "{what}: CreateDistributionWithTags returned no distribution"
                    ))
                })?;
                (
                    distribution.id().to_string(),
                    distribution.domain_name().to_string(),
                )
            }
            // The reference is this create's token: an earlier attempt of it made the
            // distribution, with another configuration (the template changed in between).
            Err(err)
                if err.kind == ErrorKind::ALREADY_EXISTS && !request.client_token.is_empty() =>
            {
                let Some(id) = with_reference(&cf, &what, &request.client_token).await? else {
                    return Err(err);
                };
                tracing::info!("{what}: adopting {id}, made by an earlier attempt of this create");
                let live = put_config(&cf, &what, &id, config_json).await?;
                let before = live_tags(&cf, &what, &live.arn).await?;
                set_tags(&cf, &what, &live.arn, &before, &tags).await?;
                (id, live.domain_name)
            }
            Err(err) => return Err(err),
        };
        settle(&cf, ctx, &what, &id).await?;
        Ok(CreateResult {
            attributes: attributes(&id, &domain_name),
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
        let (before, after) = (&request.previous_properties, &request.properties);
        let id = request.physical_id.clone();
        let cf = client(ctx).await?;
        let config = config_of(after, &what)?;
        let live = if before.get("DistributionConfig") != Some(config) {
            put_config(&cf, &what, &id, config).await?
        } else {
            get(&cf, &what, &id)
                .await?
                .ok_or_else(|| cdkd_aws_common::does_not_exist(&what, &id, "CloudFront"))?
        };
        set_tags(
            &cf,
            &what,
            &live.arn,
            &tag_map_without_token(before),
            &tag_map_without_token(after),
        )
        .await?;
        settle(&cf, ctx, &what, &id).await?;
        Ok(UpdateResult {
            attributes: attributes(&id, &live.domain_name),
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
        let id = request.physical_id.clone();
        let cf = client(ctx).await?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(live) = get(&cf, &what, &id).await? else {
                return Ok(DeleteResult::Deleted);
            };
            if live.config.enabled() {
                tracing::info!("{what}: disabling {id} before its delete");
                let mut disabled = live.config.clone();
                disabled.enabled = false;
                let answer = cf
                    .update_distribution()
                    .id(&id)
                    .if_match(&live.etag)
                    .distribution_config(disabled)
                    .send()
                    .await
                    .map_err(failed!(format!(
                        "{what}: UpdateDistribution {id} (disable)"
                    )));
                match cdkd_aws_common::found(answer) {
                    Ok(None) => return Ok(DeleteResult::Deleted),
                    Ok(Some(_)) => {}
                    Err(err)
                        if err.aws_code() == Some("PreconditionFailed")
                            && attempt < DELETE_ATTEMPTS =>
                    {
                        continue
                    }
                    Err(err) => return Err(err),
                }
            }
            tracing::info!("{what}: waiting for {id} to be Deployed before its delete");
            let Some(ready) = deployed(&cf, &what, &id).await? else {
                return Ok(DeleteResult::Deleted);
            };
            let deleted = cf
                .delete_distribution()
                .id(&id)
                .if_match(&ready.etag)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteDistribution {id}")));
            match deleted {
                Err(err)
                    if (err.aws_code() == Some("PreconditionFailed")
                        || err.aws_code() == Some("DistributionNotDisabled"))
                        && attempt < DELETE_ATTEMPTS =>
                {
                    // Changed (or re-enabled) between the wait and the delete: start over.
                    tracing::info!("{what}: {id} changed before its delete; starting over");
                }
                other => return cdkd_aws_common::deleted_unless_failed(other),
            }
        }
    }

    /// `find_created`: the distribution whose `CallerReference` is the create's token.
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
        let properties = match get(&cf, &what, &id).await? {
            Some(live) => Some(properties(&cf, &what, &live).await?),
            None => None,
        };
        found_answer(Some(id), properties)
    }
}

#[async_trait]
impl Readable for Distribution {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cf = client(ctx).await?;
        match get(&cf, what, &request.physical_id).await? {
            Some(live) => Ok(Some(properties(&cf, what, &live).await?)),
            None => Ok(None),
        }
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let cf = client(ctx).await?;
        let live = get(&cf, what, physical_id)
            .await?
            .ok_or_else(|| cdkd_aws_common::does_not_exist(what, physical_id, "CloudFront"))?;
        Ok(attributes(physical_id, &live.domain_name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_is_required_and_tags_convert() {
        let err = config_of(&Map::new(), "w").unwrap_err();
        assert!(err.message.contains("DistributionConfig"));
        let tags: std::collections::BTreeMap<String, String> =
            [("site".to_string(), "web".to_string())].into();
        let sdk = sdk_tags("w", &tags).unwrap();
        assert_eq!(sdk[0].key(), "site");
        assert_eq!(sdk[0].value(), Some("web"));
        let attrs = attributes("E1", "d1.cloudfront.net");
        assert_eq!(attrs["DomainName"], "d1.cloudfront.net");
        assert_eq!(attrs["Id"], "E1");
    }
}
