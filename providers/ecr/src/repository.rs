//! `AWS::ECR::Repository`: physical id (and `Ref`) is the repository name; attributes `Arn` and
//! `RepositoryUri`. Its delete is refused by ECR while the repository holds images, as under
//! CloudFormation, unless the template sets `EmptyOnDelete: true` (a forced delete).

use std::collections::BTreeMap;

use aws_sdk_ecr::types::{
    EncryptionConfiguration, EncryptionType, ImageScanningConfiguration, ImageTagMutability,
    ImageTagMutabilityExclusionFilter, ImageTagMutabilityExclusionFilterType, Tag,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, found, given_or_generated_name, json_text, parsed,
    policy_principals, put, string, tag_changes, tag_map, template_tags, while_iam_propagates,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ECR::Repository";

/// The longest repository name ECR takes.
const MAX_NAME: usize = 256;

/// The `AWS::ECR::Repository` provider.
#[derive(Default)]
pub struct Repository;

/// Whether `key`'s value differs between two templates (a missing key and `null` alike).
fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    before.get(key).filter(|v| !v.is_null()) != after.get(key).filter(|v| !v.is_null())
}

/// `ImageTagMutabilityExclusionFilters` as the SDK's filters; one without a type or value is
/// refused by name.
fn exclusion_filters(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<Vec<ImageTagMutabilityExclusionFilter>>, ProviderError> {
    let Some(items) = value.and_then(Value::as_array) else {
        return Ok(None);
    };
    items
        .iter()
        .map(|item| {
            ImageTagMutabilityExclusionFilter::builder()
                .set_filter_type(
                    string(item.get("ImageTagMutabilityExclusionFilterType"))
                        .map(|t| ImageTagMutabilityExclusionFilterType::from(t.as_str())),
                )
                .set_filter(string(item.get("ImageTagMutabilityExclusionFilterValue")))
                .build()
                .map_err(|e| {
                    ProviderError::validation(format!(
                        "{what}: ImageTagMutabilityExclusionFilters: {e}"
                    ))
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `EncryptionConfiguration` as the SDK's; `None` when the template gives none.
fn encryption(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<EncryptionConfiguration>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    EncryptionConfiguration::builder()
        .encryption_type(EncryptionType::from(
            string(value.get("EncryptionType"))
                .unwrap_or_else(|| "AES256".into())
                .as_str(),
        ))
        .set_kms_key(string(value.get("KmsKey")))
        .build()
        .map(Some)
        .map_err(|e| ProviderError::validation(format!("{what}: EncryptionConfiguration: {e}")))
}

/// `ImageScanningConfiguration` as the SDK's.
fn scanning(value: Option<&Value>) -> Option<ImageScanningConfiguration> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        ImageScanningConfiguration::builder()
            .scan_on_push(flag(value.get("ScanOnPush")).unwrap_or(false))
            .build(),
    )
}

/// Template tags as ECR's, cdkd's token tag never among them (the name finds the repository).
fn ecr_tags(tags: &BTreeMap<String, String>) -> Result<Vec<Tag>, ProviderError> {
    tags.iter()
        .map(|(k, v)| {
            Tag::builder()
                .key(k)
                .value(v)
                .build()
                .map_err(|e| ProviderError::validation(format!("{TYPE}: Tags: {e}")))
        })
        .collect()
}

/// The lifecycle policy text of a template's `LifecyclePolicy`.
fn lifecycle_text(properties: &Map<String, Value>) -> Option<String> {
    properties
        .get("LifecyclePolicy")?
        .get("LifecyclePolicyText")
        .filter(|v| !v.is_null())
        .map(json_text)
}

/// `Arn` and `RepositoryUri` of a described repository.
fn attributes_of(repository: &aws_sdk_ecr::types::Repository) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(
        &mut attributes,
        "Arn",
        repository.repository_arn().map(Value::from),
    );
    put(
        &mut attributes,
        "RepositoryUri",
        repository.repository_uri().map(Value::from),
    );
    attributes
}

/// The repository named `name`; `None` when it does not exist.
async fn describe(
    ecr: &aws_sdk_ecr::Client,
    what: &str,
    name: &str,
) -> Result<Option<aws_sdk_ecr::types::Repository>, ProviderError> {
    let answer = found(
        ecr.describe_repositories()
            .repository_names(name)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeRepositories {name}"))),
    )?;
    Ok(answer.and_then(|a| a.repositories().first().cloned()))
}

/// The live repository's configuration in template shape (what DescribeRepositories answers).
fn configuration_shape(repository: &aws_sdk_ecr::types::Repository) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "RepositoryName",
        repository.repository_name().map(Value::from),
    );
    put(
        &mut props,
        "ImageTagMutability",
        repository.image_tag_mutability().map(|m| json!(m.as_str())),
    );
    let filters: Vec<Value> = repository
        .image_tag_mutability_exclusion_filters()
        .iter()
        .map(|f| {
            json!({
                "ImageTagMutabilityExclusionFilterType": f.filter_type().as_str(),
                "ImageTagMutabilityExclusionFilterValue": f.filter(),
            })
        })
        .collect();
    if !filters.is_empty() {
        props.insert(
            "ImageTagMutabilityExclusionFilters".into(),
            Value::Array(filters),
        );
    }
    put(
        &mut props,
        "ImageScanningConfiguration",
        repository
            .image_scanning_configuration()
            .map(|s| json!({"ScanOnPush": s.scan_on_push()})),
    );
    put(
        &mut props,
        "EncryptionConfiguration",
        repository.encryption_configuration().map(|e| {
            let mut shape = Map::new();
            shape.insert("EncryptionType".into(), json!(e.encryption_type().as_str()));
            put(&mut shape, "KmsKey", e.kms_key().map(Value::from));
            Value::Object(shape)
        }),
    );
    props
}

/// Sets (or, with `None`, removes) the repository's lifecycle policy.
async fn apply_lifecycle(
    ecr: &aws_sdk_ecr::Client,
    what: &str,
    name: &str,
    text: Option<String>,
) -> Result<(), ProviderError> {
    match text {
        Some(text) => ecr
            .put_lifecycle_policy()
            .repository_name(name)
            .lifecycle_policy_text(text)
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: PutLifecyclePolicy {name}"))),
        None => found(
            ecr.delete_lifecycle_policy()
                .repository_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteLifecyclePolicy {name}"))),
        )
        .map(|_| ()),
    }
}

/// Sets (or, with `None`, removes) the repository's policy.
async fn apply_policy(
    ecr: &aws_sdk_ecr::Client,
    what: &str,
    name: &str,
    policy: Option<&Value>,
) -> Result<(), ProviderError> {
    match policy.filter(|p| !p.is_null()) {
        Some(policy) => {
            let set = || async {
                ecr.set_repository_policy()
                    .repository_name(name)
                    .policy_text(json_text(policy))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(failed!(format!("{what}: SetRepositoryPolicy {name}")))
            };
            // ECR checks the principals a policy names: a role or user of the same run is
            // refused until IAM has propagated it. A policy naming only services or accounts'
            // roots has nothing to wait for.
            let principals = policy_principals(policy);
            if principals.starts_with("the principals") {
                while_iam_propagates(&principals, principal_unknown, set).await
            } else {
                set().await
            }
        }
        None => found(
            ecr.delete_repository_policy()
                .repository_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteRepositoryPolicy {name}"))),
        )
        .map(|_| ()),
    }
}

/// Whether ECR refused a repository policy as it does while a principal the policy names is
/// not yet known to it (`InvalidParameterException`: "Invalid parameter at 'PolicyText' failed
/// to satisfy constraint: 'Invalid repository policy provided'", what Terraform's
/// `aws_ecr_repository_policy` retries on too).
fn principal_unknown(err: &ProviderError) -> bool {
    err.kind == ErrorKind::VALIDATION && err.message.contains("Invalid repository policy provided")
}

#[async_trait]
impl ResourceProvider for Repository {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "RepositoryName",
                "LifecyclePolicy",
                "ImageScanningConfiguration",
                "ImageTagMutability",
                "ImageTagMutabilityExclusionFilters",
                "EncryptionConfiguration",
                "RepositoryPolicyText",
                "EmptyOnDelete",
                "Tags",
            ])
            .create_only(&["RepositoryName", "EncryptionConfiguration"])
            .read_and_import()
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        // CloudFormation generates a lowercase name: ECR refuses upper case.
        let name = given_or_generated_name(&request, "RepositoryName", MAX_NAME, true);
        let ecr = client(ctx).await?;
        let created = ecr
            .create_repository()
            .repository_name(&name)
            .set_image_tag_mutability(
                string(props.get("ImageTagMutability"))
                    .map(|m| ImageTagMutability::from(m.as_str())),
            )
            .set_image_tag_mutability_exclusion_filters(exclusion_filters(
                props.get("ImageTagMutabilityExclusionFilters"),
                &what,
            )?)
            .set_image_scanning_configuration(scanning(props.get("ImageScanningConfiguration")))
            .set_encryption_configuration(encryption(props.get("EncryptionConfiguration"), &what)?)
            .set_tags(Some(ecr_tags(&tag_map(props))?).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateRepository {name}")))?;
        let repository = created.repository().cloned().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateRepository returned no repository"))
        })?;
        // The repository exists: a refused policy must not leave it unrecorded.
        let configured = async {
            if let Some(text) = lifecycle_text(props) {
                apply_lifecycle(&ecr, &what, &name, Some(text)).await?;
            }
            if let Some(policy) = props.get("RepositoryPolicyText").filter(|p| !p.is_null()) {
                apply_policy(&ecr, &what, &name, Some(policy)).await?;
            }
            Ok::<(), ProviderError>(())
        }
        .await;
        if let Err(err) = configured {
            let undone = ecr
                .delete_repository()
                .repository_name(&name)
                .force(true)
                .send()
                .await
                .is_ok();
            let fate = if undone {
                "deleted again"
            } else {
                "NOT deleted: delete it by hand (aws ecr delete-repository --force)"
            };
            return Err(ProviderError::new(
                err.kind,
                format!(
                    "{}; the repository {name} it had created was {fate}",
                    err.message
                ),
            ));
        }
        Ok(CreateResult {
            physical_id: name,
            attributes: attributes_of(&repository),
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
        let ecr = client(ctx).await?;
        if changed(before, after, "ImageTagMutability")
            || changed(before, after, "ImageTagMutabilityExclusionFilters")
        {
            ecr.put_image_tag_mutability()
                .repository_name(name)
                .image_tag_mutability(ImageTagMutability::from(
                    string(after.get("ImageTagMutability"))
                        .unwrap_or_else(|| "MUTABLE".into())
                        .as_str(),
                ))
                .set_image_tag_mutability_exclusion_filters(exclusion_filters(
                    after.get("ImageTagMutabilityExclusionFilters"),
                    &what,
                )?)
                .send()
                .await
                .map_err(failed!(format!("{what}: PutImageTagMutability {name}")))?;
        }
        if changed(before, after, "ImageScanningConfiguration") {
            ecr.put_image_scanning_configuration()
                .repository_name(name)
                .image_scanning_configuration(
                    scanning(after.get("ImageScanningConfiguration")).unwrap_or_else(|| {
                        ImageScanningConfiguration::builder()
                            .scan_on_push(false)
                            .build()
                    }),
                )
                .send()
                .await
                .map_err(failed!(format!(
                    "{what}: PutImageScanningConfiguration {name}"
                )))?;
        }
        if lifecycle_text(before) != lifecycle_text(after) {
            apply_lifecycle(&ecr, &what, name, lifecycle_text(after)).await?;
        }
        if changed(before, after, "RepositoryPolicyText") {
            apply_policy(&ecr, &what, name, after.get("RepositoryPolicyText")).await?;
        }
        let repository = describe(&ecr, &what, name)
            .await?
            .ok_or_else(|| does_not_exist(&what, name, "ECR"))?;
        let (set, removed): (BTreeMap<String, String>, Vec<String>) =
            tag_changes(&tag_map(before), &tag_map(after));
        let arn = repository.repository_arn().unwrap_or_default().to_string();
        if !removed.is_empty() {
            ecr.untag_resource()
                .resource_arn(&arn)
                .set_tag_keys(Some(removed))
                .send()
                .await
                .map_err(failed!(format!("{what}: UntagResource {arn}")))?;
        }
        if !set.is_empty() {
            ecr.tag_resource()
                .resource_arn(&arn)
                .set_tags(Some(ecr_tags(&set)?))
                .send()
                .await
                .map_err(failed!(format!("{what}: TagResource {arn}")))?;
        }
        Ok(UpdateResult {
            physical_id: name.to_string(),
            attributes: attributes_of(&repository),
            ..Default::default()
        })
    }

    /// ECR refuses to delete a repository that holds images unless forced; CloudFormation
    /// forces only with `EmptyOnDelete: true`, and so does this.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let name = &request.physical_id;
        let force = flag(request.properties.get("EmptyOnDelete")).unwrap_or(false);
        let result = client(ctx)
            .await?
            .delete_repository()
            .repository_name(name)
            .force(force)
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: DeleteRepository {name}")));
        if let Err(err) = &result {
            if err.aws_code() == Some("RepositoryNotEmptyException") {
                return Err(ProviderError::new(
                    ErrorKind::CONFLICT,
                    format!(
                        "{what}: the repository {name} still holds images, and ECR (like CloudFormation) deletes only an empty repository: set EmptyOnDelete: true on it (CDK: emptyOnDelete), or delete its images (aws ecr batch-delete-image), then destroy again"
                    ),
                )
                .with_aws_code("RepositoryNotEmptyException"));
            }
        }
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl Readable for Repository {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let name = request.physical_id.as_str();
        let ecr = client(ctx).await?;
        let Some(repository) = describe(&ecr, what, name).await? else {
            return Ok(None);
        };
        let mut props = configuration_shape(&repository);
        let arn = repository.repository_arn().unwrap_or_default().to_string();
        let (lifecycle, policy, tags) = tokio::join!(
            ecr.get_lifecycle_policy().repository_name(name).send(),
            ecr.get_repository_policy().repository_name(name).send(),
            ecr.list_tags_for_resource().resource_arn(&arn).send(),
        );
        if let Some(lifecycle) =
            found(lifecycle.map_err(failed!(format!("{what}: GetLifecyclePolicy {name}"))))?
        {
            put(
                &mut props,
                "LifecyclePolicy",
                lifecycle.lifecycle_policy_text().map(|text| {
                    let mut shape = Map::new();
                    shape.insert("LifecyclePolicyText".into(), json!(text));
                    put(
                        &mut shape,
                        "RegistryId",
                        lifecycle.registry_id().map(Value::from),
                    );
                    Value::Object(shape)
                }),
            );
        }
        if let Some(policy) =
            found(policy.map_err(failed!(format!("{what}: GetRepositoryPolicy {name}"))))?
        {
            put(
                &mut props,
                "RepositoryPolicyText",
                policy.policy_text().map(parsed),
            );
        }
        let tags = tags.map_err(failed!(format!("{what}: ListTagsForResource {arn}")))?;
        put(
            &mut props,
            "Tags",
            template_tags(tags.tags().iter().map(|t| (t.key(), t.value()))),
        );
        // Not a setting of the repository but of its delete: what the template says stands.
        put(
            &mut props,
            "EmptyOnDelete",
            request.properties.get("EmptyOnDelete").cloned(),
        );
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let ecr = client(ctx).await?;
        let repository = describe(&ecr, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "ECR"))?;
        Ok(attributes_of(&repository))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_policy_naming_an_unpropagated_principal_is_retried_and_nothing_else() {
        let refused = ProviderError::validation(
            "AWS::ECR::Repository Repo: SetRepositoryPolicy r: InvalidParameterException: Invalid parameter at 'PolicyText' failed to satisfy constraint: 'Invalid repository policy provided'",
        );
        assert!(principal_unknown(&refused));
        let too_long = ProviderError::validation(
            "AWS::ECR::Repository Repo: SetRepositoryPolicy r: InvalidParameterException: Invalid parameter at 'PolicyText' failed to satisfy constraint: 'Member must have length less than or equal to 10240'",
        );
        assert!(!principal_unknown(&too_long));
        let gone = ProviderError::new(
            ErrorKind::NOT_FOUND,
            "RepositoryNotFoundException: Invalid repository policy provided",
        );
        assert!(!principal_unknown(&gone));
    }

    #[test]
    fn a_lifecycle_policy_goes_as_text_whether_written_as_text_or_object() {
        let text = props(json!({"LifecyclePolicy": {"LifecyclePolicyText": "{\"rules\":[]}"}}));
        assert_eq!(lifecycle_text(&text).unwrap(), "{\"rules\":[]}");
        let object = props(json!({"LifecyclePolicy": {"LifecyclePolicyText": {"rules": []}}}));
        assert_eq!(lifecycle_text(&object).unwrap(), "{\"rules\":[]}");
        assert_eq!(lifecycle_text(&Map::new()), None);
    }

    #[test]
    fn settings_convert_to_ecr_and_back() {
        let filters = exclusion_filters(
            Some(&json!([{"ImageTagMutabilityExclusionFilterType": "WILDCARD", "ImageTagMutabilityExclusionFilterValue": "dev-*"}])),
            "w",
        )
        .unwrap()
        .unwrap();
        assert_eq!(filters[0].filter(), "dev-*");
        let encryption = encryption(Some(&json!({"EncryptionType": "KMS", "KmsKey": "k"})), "w")
            .unwrap()
            .unwrap();
        assert_eq!(encryption.kms_key(), Some("k"));
        let repository = aws_sdk_ecr::types::Repository::builder()
            .repository_name("shop")
            .repository_arn("arn:aws:ecr:us-east-1:1:repository/shop")
            .repository_uri("1.dkr.ecr.us-east-1.amazonaws.com/shop")
            .image_tag_mutability(ImageTagMutability::Immutable)
            .image_tag_mutability_exclusion_filters(filters[0].clone())
            .image_scanning_configuration(scanning(Some(&json!({"ScanOnPush": "true"}))).unwrap())
            .encryption_configuration(encryption)
            .build();
        assert_eq!(
            Value::Object(configuration_shape(&repository)),
            json!({
                "RepositoryName": "shop",
                "ImageTagMutability": "IMMUTABLE",
                "ImageTagMutabilityExclusionFilters": [{"ImageTagMutabilityExclusionFilterType": "WILDCARD", "ImageTagMutabilityExclusionFilterValue": "dev-*"}],
                "ImageScanningConfiguration": {"ScanOnPush": true},
                "EncryptionConfiguration": {"EncryptionType": "KMS", "KmsKey": "k"},
            })
        );
        assert_eq!(
            Value::Object(attributes_of(&repository)),
            json!({"Arn": "arn:aws:ecr:us-east-1:1:repository/shop", "RepositoryUri": "1.dkr.ecr.us-east-1.amazonaws.com/shop"})
        );
    }

    #[test]
    fn a_generated_name_is_lowercase_and_fixed_by_the_token() {
        let request = CreateRequest {
            logical_id: "RepoE9A1".into(),
            stack_name: "Shop".into(),
            client_token: "t1".into(),
            properties: Map::new(),
        };
        let name = given_or_generated_name(&request, "RepositoryName", MAX_NAME, true);
        assert!(name.starts_with("shop-repoe9a1-"), "{name}");
        assert_eq!(name, name.to_lowercase());
    }
}
