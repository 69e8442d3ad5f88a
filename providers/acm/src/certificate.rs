//! `AWS::CertificateManager::Certificate`: physical id (and `Ref`) is the certificate ARN;
//! attribute `CertificateArn`. The create's token, hashed to ACM's 32-character `\w+` limit,
//! is the request's `IdempotencyToken` (ACM answers the same certificate to a repeated request
//! within an hour), and the certificate is tagged `cdkd:create-token`, by which `find_created`
//! finds it after a crash. A delete leaves the validation CNAME in its zone, as
//! CloudFormation does.

#![allow(deprecated)] // CertificateTransparencyLoggingPreference: CloudFormation still takes it; ACM ignores an opt-out now.

use std::collections::BTreeMap;
use std::time::Duration;

use aws_sdk_acm::types::{
    CertificateOptions, CertificateStatus, CertificateTransparencyLoggingPreference,
    DomainValidation, DomainValidationOption, KeyAlgorithm, Tag, ValidationMethod,
};
use aws_sdk_route53::types::{
    Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType,
};
use cdkd_aws_common::{
    aws_error, stable_hash, string, strings, tag_changes, tag_map_without_token, Readable,
    TypeSchema,
};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    FindCreatedResult, ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult,
    CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, route53};

const TYPE: &str = "AWS::CertificateManager::Certificate";

/// How long a create waits for ACM to publish the validation records.
const RECORDS_PATIENCE: Duration = Duration::from_secs(300);
/// How long a create waits for `ISSUED` (AWS validates within minutes once the CNAME exists).
const ISSUE_PATIENCE: Duration = Duration::from_secs(3600);

/// The `AWS::CertificateManager::Certificate` provider.
#[derive(Default)]
pub struct Certificate;

/// The request's `IdempotencyToken`: 32 hex characters drawn from the create token (ACM
/// takes at most 32 `\w` characters; cdkd's tokens may be longer or hold `-`).
pub(crate) fn idempotency_token(token: &str) -> String {
    format!(
        "{:016x}{:016x}",
        stable_hash(&[token]),
        stable_hash(&[token, "acm"])
    )
}

/// The template's `DomainValidationOptions` entries that name a hosted zone: (domain, zone).
fn validation_zones(properties: &Map<String, Value>) -> Vec<(String, String)> {
    properties
        .get("DomainValidationOptions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| Some((string(o.get("DomainName"))?, string(o.get("HostedZoneId"))?)))
        .collect()
}

fn sdk_tags(tags: &BTreeMap<String, String>) -> Vec<Tag> {
    tags.iter()
        .filter_map(|(k, v)| Tag::builder().key(k).value(v).build().ok())
        .collect()
}

/// The certificate's description, `None` when it is gone.
async fn describe(
    acm: &aws_sdk_acm::Client,
    what: &str,
    arn: &str,
) -> Result<Option<aws_sdk_acm::types::CertificateDetail>, ProviderError> {
    match acm.describe_certificate().certificate_arn(arn).send().await {
        Ok(answer) => Ok(answer.certificate().cloned()),
        Err(err) => match aws_error(&format!("{what}: DescribeCertificate {arn}"), err) {
            err if err.kind == ErrorKind::NOT_FOUND => Ok(None),
            err => Err(err),
        },
    }
}

/// Writes the validation CNAME of each domain the template gives a zone for.
async fn write_validation_records(
    ctx: &PluginContext,
    what: &str,
    zones: &[(String, String)],
    validations: &[DomainValidation],
) -> Result<(), ProviderError> {
    let r53 = route53(ctx).await?;
    let mut by_zone: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
    for (domain, zone) in zones {
        let record = validations
            .iter()
            .find(|v| v.domain_name() == domain)
            .and_then(|v| v.resource_record());
        if let Some(record) = record {
            by_zone
                .entry(zone.as_str())
                .or_default()
                .insert(record.name().to_string(), record.value().to_string());
        }
    }
    for (zone, records) in by_zone {
        let changes = records
            .into_iter()
            .map(|(name, value)| {
                let set = ResourceRecordSet::builder()
                    .name(name)
                    .r#type(RrType::Cname)
                    .ttl(60)
                    .resource_records(ResourceRecord::builder().value(value).build()?)
                    .build()?;
                Change::builder()
                    .action(ChangeAction::Upsert)
                    .resource_record_set(set)
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        let batch = ChangeBatch::builder()
            .set_changes(Some(changes))
            .comment("ACM DNS validation (cdkd)")
            .build()
            .map_err(|e| ProviderError::validation(format!("{what}: {e}")))?;
        r53.change_resource_record_sets()
            .hosted_zone_id(zone.trim_start_matches("/hostedzone/"))
            .change_batch(batch)
            .send()
            .await
            .map_err(|e| {
                aws_error(
                    &format!("{what}: ChangeResourceRecordSets (validation CNAME) in {zone}"),
                    e,
                )
            })?;
    }
    Ok(())
}

/// After the request: the validation records written where the template says, then `ISSUED`.
async fn validate(
    ctx: &PluginContext,
    acm: &aws_sdk_acm::Client,
    what: &str,
    arn: &str,
    properties: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let zones = validation_zones(properties);
    if !zones.is_empty() {
        let wanted: Vec<&str> = zones.iter().map(|(d, _)| d.as_str()).collect();
        let validations = cdkd_aws_common::poll(RECORDS_PATIENCE, || async {
            let Some(detail) = describe(acm, what, arn).await? else {
                return Err(ProviderError::new(
                    ErrorKind::NOT_FOUND,
                    format!("{what}: {arn} is gone"),
                ));
            };
            let options = detail.domain_validation_options().to_vec();
            let ready = wanted.iter().all(|d| {
                options
                    .iter()
                    .any(|o| o.domain_name() == *d && o.resource_record().is_some())
            });
            Ok(ready.then_some(options))
        })
        .await?
        .ok_or_else(|| {
            ProviderError::new(
                ErrorKind::TIMEOUT,
                format!("{what}: ACM published no validation record within {RECORDS_PATIENCE:?}"),
            )
        })?;
        write_validation_records(ctx, what, &zones, &validations).await?;
    }
    tracing::info!("{what}: waiting for {arn} to be issued");
    let status = cdkd_aws_common::poll(ISSUE_PATIENCE, || async {
        let Some(detail) = describe(acm, what, arn).await? else {
            return Err(ProviderError::new(
                ErrorKind::NOT_FOUND,
                format!("{what}: {arn} is gone"),
            ));
        };
        Ok(match detail.status() {
            Some(CertificateStatus::PendingValidation) | None => None,
            Some(status) => Some(status.clone()),
        })
    })
    .await?;
    match status {
        Some(CertificateStatus::Issued) => Ok(()),
        Some(other) => Err(ProviderError::other(format!(
            "{what}: the certificate {arn} is {} rather than ISSUED",
            other.as_str()
        ))),
        None => Err(ProviderError::new(
            ErrorKind::TIMEOUT,
            format!("{what}: {arn} was not issued within {ISSUE_PATIENCE:?}: is its validation CNAME in the domain's DNS?"),
        )),
    }
}

/// The certificates tagged with `token`.
async fn certificates_with_token(
    acm: &aws_sdk_acm::Client,
    what: &str,
    token: &str,
) -> Result<Vec<String>, ProviderError> {
    let mut found = Vec::new();
    let mut next: Option<String> = None;
    loop {
        let answer = acm
            .list_certificates()
            .set_next_token(next.take())
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: ListCertificates"), e))?;
        for summary in answer.certificate_summary_list() {
            let Some(arn) = summary.certificate_arn() else {
                continue;
            };
            let tags = match acm
                .list_tags_for_certificate()
                .certificate_arn(arn)
                .send()
                .await
            {
                Ok(tags) => tags,
                Err(err) => {
                    match aws_error(&format!("{what}: ListTagsForCertificate {arn}"), err) {
                        err if err.kind == ErrorKind::NOT_FOUND => continue,
                        err => return Err(err),
                    }
                }
            };
            if tags
                .tags()
                .iter()
                .any(|t| t.key() == CREATE_TOKEN_TAG && t.value() == Some(token))
            {
                found.push(arn.to_string());
            }
        }
        match answer.next_token() {
            Some(token) => next = Some(token.to_string()),
            None => return Ok(found),
        }
    }
}

#[async_trait]
impl ResourceProvider for Certificate {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "DomainName",
                "SubjectAlternativeNames",
                "ValidationMethod",
                "DomainValidationOptions",
                "CertificateAuthorityArn",
                "KeyAlgorithm",
                "CertificateTransparencyLoggingPreference",
                "Tags",
            ])
            .create_only(&[
                "DomainName",
                "SubjectAlternativeNames",
                "ValidationMethod",
                "DomainValidationOptions",
                "CertificateAuthorityArn",
                "KeyAlgorithm",
            ])
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
        let domain = cdkd_aws_common::require_str(props, "DomainName", &what)?;
        let mut tags = tag_map_without_token(props);
        tags.insert(CREATE_TOKEN_TAG.to_string(), request.client_token.clone());
        let options: Vec<DomainValidationOption> = props
            .get("DomainValidationOptions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| {
                DomainValidationOption::builder()
                    .domain_name(string(o.get("DomainName"))?)
                    .validation_domain(string(o.get("ValidationDomain"))?)
                    .build()
                    .ok()
            })
            .collect();
        let acm = client(ctx).await?;
        let arn = acm
            .request_certificate()
            .domain_name(domain)
            .idempotency_token(idempotency_token(&request.client_token))
            .set_subject_alternative_names(strings(props.get("SubjectAlternativeNames")))
            .set_validation_method(
                string(props.get("ValidationMethod")).map(|m| ValidationMethod::from(m.as_str())),
            )
            .set_domain_validation_options(Some(options).filter(|o| !o.is_empty()))
            .set_certificate_authority_arn(string(props.get("CertificateAuthorityArn")))
            .set_key_algorithm(
                string(props.get("KeyAlgorithm")).map(|k| KeyAlgorithm::from(k.as_str())),
            )
            .set_options(
                string(props.get("CertificateTransparencyLoggingPreference")).map(|p| {
                    CertificateOptions::builder()
                        .certificate_transparency_logging_preference(
                            CertificateTransparencyLoggingPreference::from(p.as_str()),
                        )
                        .build()
                }),
            )
            .set_tags(Some(sdk_tags(&tags)))
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: RequestCertificate {domain}"), e))?
            .certificate_arn()
            .ok_or_else(|| {
                ProviderError::other(format!("{what}: RequestCertificate returned no ARN"))
            })?
            .to_string();
        if string(props.get("CertificateAuthorityArn")).is_none() {
            if let Err(err) = validate(ctx, &acm, &what, &arn, props).await {
                // Not left unrecorded: the certificate goes again, the CNAME stays (harmless).
                let undone = acm
                    .delete_certificate()
                    .certificate_arn(&arn)
                    .send()
                    .await
                    .is_ok();
                return Err(ProviderError::new(
                    err.kind,
                    format!(
                        "{} (the certificate was {})",
                        err.message,
                        if undone {
                            "deleted again"
                        } else {
                            "left: delete it by hand"
                        }
                    ),
                ));
            }
        }
        Ok(CreateResult {
            attributes: [("CertificateArn".to_string(), json!(arn))]
                .into_iter()
                .collect(),
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
        let arn = request.physical_id.clone();
        let acm = client(ctx).await?;
        let preference =
            |p: &Map<String, Value>| string(p.get("CertificateTransparencyLoggingPreference"));
        if preference(before) != preference(after) {
            acm.update_certificate_options()
                .certificate_arn(&arn)
                .options(
                    CertificateOptions::builder()
                        .certificate_transparency_logging_preference(
                            CertificateTransparencyLoggingPreference::from(
                                preference(after).as_deref().unwrap_or("ENABLED"),
                            ),
                        )
                        .build(),
                )
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: UpdateCertificateOptions"), e))?;
        }
        let (set, removed): (BTreeMap<String, String>, Vec<String>) = tag_changes(
            &tag_map_without_token(before),
            &tag_map_without_token(after),
        );
        if !removed.is_empty() {
            let keys: Vec<Tag> = removed
                .iter()
                .filter_map(|k| Tag::builder().key(k).build().ok())
                .collect();
            acm.remove_tags_from_certificate()
                .certificate_arn(&arn)
                .set_tags(Some(keys))
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: RemoveTagsFromCertificate"), e))?;
        }
        if !set.is_empty() {
            acm.add_tags_to_certificate()
                .certificate_arn(&arn)
                .set_tags(Some(sdk_tags(&set)))
                .send()
                .await
                .map_err(|e| aws_error(&format!("{what}: AddTagsToCertificate"), e))?;
        }
        Ok(UpdateResult {
            attributes: [("CertificateArn".to_string(), json!(arn))]
                .into_iter()
                .collect(),
            physical_id: arn,
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
        let acm = client(ctx).await?;
        cdkd_aws_common::deleted_unless_failed(
            acm.delete_certificate()
                .certificate_arn(&request.physical_id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    aws_error(
                        &format!("{what}: DeleteCertificate {}", request.physical_id),
                        e,
                    )
                }),
        )
    }

    /// `find_created`: the certificate tagged with the create's token.
    async fn invoke_other(
        &self,
        ctx: &PluginContext,
        name: &str,
        request: Value,
    ) -> Result<Value, ProviderError> {
        if name != operation::FIND_CREATED {
            return Err(ProviderError::unsupported(format!(
                "{TYPE} does not implement the '{name}' operation"
            )));
        }
        let request: FindCreatedRequest = serde_json::from_value(request)
            .map_err(|e| ProviderError::validation(format!("{name}: {e}")))?;
        let what = format!("{TYPE} {}", request.logical_id);
        if request.token.is_empty() {
            return Err(ProviderError::validation(format!(
                "{what}: {name} needs the create's token"
            )));
        }
        let acm = client(ctx).await?;
        let found = certificates_with_token(&acm, &what, &request.token).await?;
        if found.len() > 1 {
            return Err(ProviderError::other(format!(
                "{what}: several certificates carry the create token {}: {}",
                request.token,
                found.join(", ")
            )));
        }
        let physical_id = found.into_iter().next();
        let properties = match &physical_id {
            Some(arn) => self
                .read(
                    ctx,
                    &what,
                    &ReadCurrentStateRequest {
                        logical_id: request.logical_id.clone(),
                        physical_id: arn.clone(),
                        properties: request.properties.clone(),
                    },
                )
                .await?
                .unwrap_or_default(),
            None => Map::new(),
        };
        serde_json::to_value(FindCreatedResult {
            physical_id,
            properties,
        })
        .map_err(|e| ProviderError::other(e.to_string()))
    }
}

#[async_trait]
impl Readable for Certificate {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let acm = client(ctx).await?;
        let arn = &request.physical_id;
        let Some(detail) = describe(&acm, what, arn).await? else {
            return Ok(None);
        };
        let template = &request.properties;
        let mut properties = Map::new();
        let domain = detail.domain_name().unwrap_or_default().to_string();
        properties.insert("DomainName".into(), json!(domain));
        // ACM lists the domain among the alternative names; a template that names none
        // reads back without them.
        let sans: Vec<&str> = detail
            .subject_alternative_names()
            .iter()
            .map(String::as_str)
            .collect();
        if template.contains_key("SubjectAlternativeNames") || sans.iter().any(|s| *s != domain) {
            properties.insert("SubjectAlternativeNames".into(), json!(sans));
        }
        let method = detail
            .domain_validation_options()
            .iter()
            .find_map(|o| o.validation_method())
            .map(|m| m.as_str().to_string());
        if let Some(method) = method.filter(|_| template.contains_key("ValidationMethod")) {
            properties.insert("ValidationMethod".into(), json!(method));
        }
        // What ACM keeps of them is the validation state, not the template's zones.
        if let Some(options) = template.get("DomainValidationOptions") {
            properties.insert("DomainValidationOptions".into(), options.clone());
        }
        if let Some(ca) = detail.certificate_authority_arn() {
            properties.insert("CertificateAuthorityArn".into(), json!(ca));
        }
        if let Some(algorithm) = detail.key_algorithm() {
            let algorithm = algorithm.as_str().replace('-', "_");
            if template.contains_key("KeyAlgorithm") || algorithm != "RSA_2048" {
                properties.insert("KeyAlgorithm".into(), json!(algorithm));
            }
        }
        if let Some(preference) = detail
            .options()
            .and_then(|o| o.certificate_transparency_logging_preference())
        {
            if template.contains_key("CertificateTransparencyLoggingPreference")
                || preference.as_str() != "ENABLED"
            {
                properties.insert(
                    "CertificateTransparencyLoggingPreference".into(),
                    json!(preference.as_str()),
                );
            }
        }
        let tags = acm
            .list_tags_for_certificate()
            .certificate_arn(arn)
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: ListTagsForCertificate {arn}"), e))?;
        cdkd_aws_common::put(
            &mut properties,
            "Tags",
            cdkd_aws_common::template_tags(
                tags.tags()
                    .iter()
                    .filter(|t| t.key() != CREATE_TOKEN_TAG)
                    .map(|t| (t.key(), t.value().unwrap_or_default())),
            ),
        );
        Ok(Some(properties))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok([("CertificateArn".to_string(), json!(physical_id))]
            .into_iter()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idempotency_token_fits_acm_and_is_stable() {
        let token = idempotency_token("0f8fad5b-d9cb-469f-a165-70867728950e-with-a-long-tail");
        assert_eq!(token.len(), 32);
        assert!(token.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(
            token,
            idempotency_token("0f8fad5b-d9cb-469f-a165-70867728950e-with-a-long-tail")
        );
        assert_ne!(token, idempotency_token("other"));
    }

    #[test]
    fn validation_zones_come_from_the_templates_options() {
        let props = json!({"DomainValidationOptions": [
            {"DomainName": "example.com", "HostedZoneId": "Z1"},
            {"DomainName": "mail.example.com", "ValidationDomain": "example.com"},
        ]});
        assert_eq!(
            validation_zones(props.as_object().unwrap()),
            [("example.com".to_string(), "Z1".to_string())]
        );
    }
}
