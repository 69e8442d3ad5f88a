//! cdkd's Step Functions provider plugin: `AWS::StepFunctions::StateMachine` and
//! `AWS::StepFunctions::Activity` through direct Step Functions calls. Both are addressed by
//! their ARN in every call, tags included.

mod activity;
mod state_machine;

cdkd_provider_api::export_plugin!(description: "AWS::StepFunctions::StateMachine and Activity through the Step Functions API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<state_machine::StateMachine>);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<activity::Activity>);

use std::collections::BTreeMap;

use aws_sdk_sfn::types::{EncryptionConfiguration, EncryptionType, Tag};
pub(crate) use cdkd_aws_common::found;
use cdkd_aws_common::{int, put, text};
pub(crate) use cdkd_aws_common::{tag_map, template_tag_changes as tag_changes};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// A Step Functions client for the host's endpoint and credentials.
pub(crate) async fn client(ctx: &PluginContext) -> Result<aws_sdk_sfn::Client, ProviderError> {
    let config = aws_sdk_sfn::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-stepfunctions"))
        .build();
    Ok(aws_sdk_sfn::Client::from_conf(config))
}

/// The kind Step Functions' own error codes stand for, where the shared table has none or the
/// wrong one: its "not found" codes end in `DoesNotExist`, and its validation failures are
/// named after the input broken.
pub(crate) const SFN_KINDS: &[(&str, ErrorKind)] = &[
    ("StateMachineDoesNotExist", ErrorKind::NOT_FOUND),
    ("ActivityDoesNotExist", ErrorKind::NOT_FOUND),
    ("ResourceNotFound", ErrorKind::NOT_FOUND),
    ("StateMachineAlreadyExists", ErrorKind::ALREADY_EXISTS),
    ("ActivityAlreadyExists", ErrorKind::ALREADY_EXISTS),
    // A machine of that name is still being deleted, or another change is in flight.
    ("StateMachineDeleting", ErrorKind::CONFLICT),
    ("ConflictException", ErrorKind::CONFLICT),
    ("KmsThrottlingException", ErrorKind::THROTTLED),
    ("KmsAccessDeniedException", ErrorKind::ACCESS_DENIED),
    ("InvalidArn", ErrorKind::VALIDATION),
    ("InvalidDefinition", ErrorKind::VALIDATION),
    ("InvalidName", ErrorKind::VALIDATION),
    ("InvalidLoggingConfiguration", ErrorKind::VALIDATION),
    ("InvalidTracingConfiguration", ErrorKind::VALIDATION),
    ("InvalidEncryptionConfiguration", ErrorKind::VALIDATION),
    ("MissingRequiredParameter", ErrorKind::VALIDATION),
    ("StateMachineTypeNotSupported", ErrorKind::VALIDATION),
    ("StateMachineLimitExceeded", ErrorKind::VALIDATION),
    ("ActivityLimitExceeded", ErrorKind::VALIDATION),
    ("ServiceQuotaExceededException", ErrorKind::VALIDATION),
    ("KmsInvalidStateException", ErrorKind::VALIDATION),
    ("TooManyTags", ErrorKind::VALIDATION),
];

/// A `map_err` closure turning an SDK error of the call `$call` into a provider error with
/// Step Functions' kinds, naming `$what` and the call.
macro_rules! sfn_error {
    ($what:expr, $call:expr) => {
        cdkd_aws_common::call_error!($crate::SFN_KINDS, $what, $call)
    };
}
pub(crate) use sfn_error;

/// Whether a template names a setting (present and not null).
pub(crate) fn given(properties: &Map<String, Value>, name: &str) -> bool {
    properties.get(name).is_some_and(|v| !v.is_null())
}

/// The name at the end of a Step Functions ARN (`arn:aws:states:r:a:stateMachine:Name`); names
/// cannot hold a colon.
pub(crate) fn name_of(arn: &str) -> &str {
    arn.rsplit(':').next().unwrap_or(arn)
}

/// Tags as Step Functions takes them.
pub(crate) fn sdk_tags(tags: &BTreeMap<String, String>) -> Vec<Tag> {
    tags.iter()
        .map(|(key, value)| Tag::builder().key(key).value(value).build())
        .collect()
}

/// Applies a template's tag change to the resource `arn`: untag removed keys, tag new and
/// changed ones.
pub(crate) async fn update_tags(
    sfn: &aws_sdk_sfn::Client,
    what: &str,
    arn: &str,
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let (set, removed) = tag_changes(before, after);
    if !removed.is_empty() {
        sfn.untag_resource()
            .resource_arn(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(sfn_error!(what, "UntagResource"))?;
    }
    if !set.is_empty() {
        sfn.tag_resource()
            .resource_arn(arn)
            .set_tags(Some(sdk_tags(&set)))
            .send()
            .await
            .map_err(sfn_error!(what, "TagResource"))?;
    }
    Ok(())
}

/// The tags of the resource `arn`; `None` when the resource is gone.
pub(crate) async fn live_tags(
    sfn: &aws_sdk_sfn::Client,
    what: &str,
    arn: &str,
) -> Result<Option<Vec<Tag>>, ProviderError> {
    let answer = sfn
        .list_tags_for_resource()
        .resource_arn(arn)
        .send()
        .await
        .map_err(sfn_error!(what, "ListTagsForResource"));
    Ok(found(answer)?.map(|a| a.tags.unwrap_or_default()))
}

/// Tags as a template writes them: `[{Key, Value}]` sorted by key, AWS's own left out; `None`
/// when there are none.
pub(crate) fn template_tags(tags: &[Tag]) -> Option<Value> {
    cdkd_aws_common::template_tags(
        tags.iter()
            .filter_map(|t| Some((t.key()?, t.value().unwrap_or_default()))),
    )
}

/// The data key reuse period Step Functions applies to a customer managed key that names none.
const DEFAULT_KEY_REUSE_SECONDS: i32 = 300;

/// The template's `EncryptionConfiguration` as Step Functions takes it; `None` when absent.
pub(crate) fn encryption(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<EncryptionConfiguration>, ProviderError> {
    let Some(block) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let kind = text(block.get("Type")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: EncryptionConfiguration.Type is required (AWS_OWNED_KEY or \
             CUSTOMER_MANAGED_KMS_KEY)"
        ))
    })?;
    EncryptionConfiguration::builder()
        .r#type(EncryptionType::from(kind.as_str()))
        .set_kms_key_id(text(block.get("KmsKeyId")))
        .set_kms_data_key_reuse_period_seconds(int(block.get("KmsDataKeyReusePeriodSeconds")))
        .build()
        .map(Some)
        .map_err(|e| ProviderError::validation(format!("{what}: EncryptionConfiguration: {e}")))
}

/// The encryption every resource gets when the template names none: an AWS owned key.
pub(crate) fn default_encryption() -> EncryptionConfiguration {
    EncryptionConfiguration::builder()
        .r#type(EncryptionType::AwsOwnedKey)
        .build()
        .expect("the type is set")
}

/// Whether the live key `live` is the one a template names as `given`: Step Functions may
/// answer the ARN of a key the template gave by id or alias.
fn same_key(given: &str, live: &str) -> bool {
    live == given || live.ends_with(&format!("/{given}")) || live.ends_with(&format!(":{given}"))
}

/// A live encryption configuration in template shape; `None` for the AWS owned key every
/// resource has unless the template names an encryption configuration. The key is written as
/// the template gave it when it is the same key, and the reuse period only when the template
/// gives one or it differs from the default.
pub(crate) fn encryption_shape(
    live: Option<&EncryptionConfiguration>,
    template: &Map<String, Value>,
) -> Option<Value> {
    let block = template
        .get("EncryptionConfiguration")
        .filter(|v| v.is_object());
    let live = match live {
        Some(live) => live.clone(),
        None if block.is_some() => default_encryption(),
        None => return None,
    };
    let aws_owned = *live.r#type() == EncryptionType::AwsOwnedKey && live.kms_key_id().is_none();
    if aws_owned && block.is_none() {
        return None;
    }
    let mut shape = Map::new();
    shape.insert("Type".into(), json!(live.r#type().as_str()));
    if let Some(key) = live.kms_key_id() {
        let given = block.and_then(|b| text(b.get("KmsKeyId")));
        let key = match given {
            Some(given) if same_key(&given, key) => given,
            _ => key.to_string(),
        };
        shape.insert("KmsKeyId".into(), json!(key));
    }
    let period_given = block.is_some_and(|b| given_in(b, "KmsDataKeyReusePeriodSeconds"));
    put(
        &mut shape,
        "KmsDataKeyReusePeriodSeconds",
        live.kms_data_key_reuse_period_seconds()
            .filter(|p| period_given || *p != DEFAULT_KEY_REUSE_SECONDS)
            .map(|p| json!(p)),
    );
    Some(Value::Object(shape))
}

/// Whether a template block (an object value) names `name`.
pub(crate) fn given_in(block: &Value, name: &str) -> bool {
    block.get(name).is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn step_functions_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(SFN_KINDS, "StateMachineDoesNotExist"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SFN_KINDS, "ActivityDoesNotExist"),
            Some(ErrorKind::NOT_FOUND)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SFN_KINDS, "StateMachineAlreadyExists"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SFN_KINDS, "InvalidDefinition"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SFN_KINDS, "StateMachineDeleting"),
            Some(ErrorKind::CONFLICT)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SFN_KINDS, "ThrottlingException"),
            None
        );
        let err = cdkd_aws_common::reclassify(
            ProviderError::new(ErrorKind::OTHER, "gone").with_aws_code("StateMachineDoesNotExist"),
            SFN_KINDS,
        );
        assert_eq!(err.kind, ErrorKind::NOT_FOUND);
        let kept = cdkd_aws_common::reclassify(
            ProviderError::new(ErrorKind::THROTTLED, "slow"),
            SFN_KINDS,
        );
        assert_eq!(kept.kind, ErrorKind::THROTTLED);
    }

    #[test]
    fn names_come_from_the_arn() {
        assert_eq!(
            name_of("arn:aws:states:us-east-1:123456789012:stateMachine:Flow"),
            "Flow"
        );
        assert_eq!(
            name_of("arn:aws:states:us-east-1:123456789012:activity:Work"),
            "Work"
        );
    }

    #[test]
    fn live_tags_read_back_sorted_without_aws_ones() {
        let tags = [
            Tag::builder().key("z").value("26").build(),
            Tag::builder().key("a").value("1").build(),
            Tag::builder()
                .key("aws:cloudformation:stack-name")
                .value("S")
                .build(),
        ];
        assert_eq!(
            template_tags(&tags),
            Some(json!([{"Key": "a", "Value": "1"}, {"Key": "z", "Value": "26"}]))
        );
        assert_eq!(template_tags(&tags[2..]), None);
    }

    #[test]
    fn encryption_goes_in_and_reads_back_as_the_template_wrote_it() {
        let block = json!({
            "Type": "CUSTOMER_MANAGED_KMS_KEY",
            "KmsKeyId": "alias/flows",
            "KmsDataKeyReusePeriodSeconds": "600",
        });
        let config = encryption(Some(&block), "T L").unwrap().unwrap();
        assert_eq!(*config.r#type(), EncryptionType::CustomerManagedKmsKey);
        assert_eq!(config.kms_key_id(), Some("alias/flows"));
        assert_eq!(config.kms_data_key_reuse_period_seconds(), Some(600));
        assert!(encryption(None, "T L").unwrap().is_none());
        let err = encryption(Some(&json!({"KmsKeyId": "k"})), "T L").unwrap_err();
        assert_eq!(err.kind, ErrorKind::VALIDATION);

        let live = EncryptionConfiguration::builder()
            .r#type(EncryptionType::CustomerManagedKmsKey)
            .kms_key_id("arn:aws:kms:us-east-1:123456789012:alias/flows")
            .kms_data_key_reuse_period_seconds(300)
            .build()
            .unwrap();
        let template = props(json!({"EncryptionConfiguration": {
            "Type": "CUSTOMER_MANAGED_KMS_KEY", "KmsKeyId": "alias/flows"
        }}));
        assert_eq!(
            encryption_shape(Some(&live), &template),
            Some(json!({"Type": "CUSTOMER_MANAGED_KMS_KEY", "KmsKeyId": "alias/flows"}))
        );
        // The AWS owned key is every resource's default: written only when the template asks.
        let owned = default_encryption();
        assert_eq!(encryption_shape(Some(&owned), &Map::new()), None);
        assert_eq!(
            encryption_shape(
                None,
                &props(json!({"EncryptionConfiguration": {"Type": "AWS_OWNED_KEY"}}))
            ),
            Some(json!({"Type": "AWS_OWNED_KEY"}))
        );
    }
}
