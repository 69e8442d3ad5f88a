//! cdkd's Secrets Manager provider plugin: `AWS::SecretsManager::Secret`,
//! `AWS::SecretsManager::SecretTargetAttachment` and `AWS::SecretsManager::ResourcePolicy`
//! through direct Secrets Manager calls. All three are addressed by the secret's ARN.
//!
//! Secret values never leave the plugin: no attribute, read answer or log line carries a
//! `SecretString`, a generated password or a secret's stored value.

mod resource_policy;
mod secret;
mod secret_target_attachment;

cdkd_provider_api::export_plugin!(description: "AWS::SecretsManager::Secret, SecretTargetAttachment and ResourcePolicy through the Secrets Manager API");

cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<secret::Secret>);
cdkd_provider_api::register_provider!(
    cdkd_aws_common::Reads<secret_target_attachment::SecretTargetAttachment>
);
cdkd_provider_api::register_provider!(cdkd_aws_common::Reads<resource_policy::ResourcePolicy>);

use aws_sdk_secretsmanager::operation::describe_secret::DescribeSecretOutput;
use cdkd_aws_common::aws_error;
pub(crate) use cdkd_aws_common::{json_text, parsed};
use cdkd_provider_api::{ErrorKind, PluginContext, ProviderError};
use serde_json::{json, Map, Value};

/// A Secrets Manager client for the host's endpoint and credentials.
pub(crate) async fn client(
    ctx: &PluginContext,
) -> Result<aws_sdk_secretsmanager::Client, ProviderError> {
    let config =
        aws_sdk_secretsmanager::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-secretsmanager"))
            .build();
    Ok(aws_sdk_secretsmanager::Client::from_conf(config))
}

/// The kind Secrets Manager's own error codes stand for, where the shared table has none.
pub(crate) const SECRETS_KINDS: &[(&str, ErrorKind)] = &[
    ("ResourceExistsException", ErrorKind::ALREADY_EXISTS),
    ("InvalidParameterException", ErrorKind::VALIDATION),
    ("InvalidRequestException", ErrorKind::VALIDATION),
    ("MalformedPolicyDocumentException", ErrorKind::VALIDATION),
    ("PublicPolicyException", ErrorKind::VALIDATION),
    ("LimitExceededException", ErrorKind::VALIDATION),
    ("EncryptionFailure", ErrorKind::VALIDATION),
    ("PreconditionNotMetException", ErrorKind::VALIDATION),
];

/// `err` (from [`aws_error`]) with the kind its Secrets Manager code stands for; unchanged
/// when the code is not Secrets Manager's own.
pub(crate) fn with_secrets_kind(err: ProviderError) -> ProviderError {
    cdkd_aws_common::reclassify(err, SECRETS_KINDS)
}

/// Whether `err` says the secret is scheduled for deletion (or being deleted): Secrets
/// Manager answers calls on such a secret with `InvalidRequestException`, not "not found".
pub(crate) fn marked_for_deletion(err: &ProviderError) -> bool {
    let code = err.aws_code.as_ref().into_option().map(|c| c.as_str());
    let message = err.message.as_str().to_ascii_lowercase();
    code == Some("InvalidRequestException")
        && (message.contains("for deletion") || message.contains("was deleted"))
}

/// A result whose "gone" error (not found, or scheduled for deletion) means absence.
pub(crate) fn found<T>(result: Result<T, ProviderError>) -> Result<Option<T>, ProviderError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(err) if err.kind == ErrorKind::NOT_FOUND || marked_for_deletion(&err) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The secret `id` (ARN or name) as DescribeSecret answers it; `None` when it does not exist
/// or is scheduled for deletion (a deleted secret keeps answering until its recovery window
/// ends, with `DeletedDate` set).
pub(crate) async fn live_secret(
    sm: &aws_sdk_secretsmanager::Client,
    what: &str,
    id: &str,
) -> Result<Option<DescribeSecretOutput>, ProviderError> {
    let answer = sm
        .describe_secret()
        .secret_id(id)
        .send()
        .await
        .map_err(|e| with_secrets_kind(aws_error(&format!("{what}: DescribeSecret {id}"), e)));
    Ok(found(answer)?.filter(|s| s.deleted_date().is_none()))
}

/// The `Id` attribute all three types report: the secret's ARN.
pub(crate) fn id_attribute(arn: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(arn));
    attributes
}

/// The template's way of naming the secret (`SecretId` as a name, ARN or partial ARN) when it
/// names the secret whose ARN and name are given; else the ARN.
pub(crate) fn secret_id_like(template: Option<&Value>, arn: &str, name: Option<&str>) -> String {
    match template.and_then(Value::as_str) {
        Some(given) if given == arn || Some(given) == name || arn.starts_with(given) => {
            given.to_string()
        }
        _ => arn.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_manager_codes_get_their_kinds() {
        assert_eq!(
            cdkd_aws_common::kind_in(SECRETS_KINDS, "ResourceExistsException"),
            Some(ErrorKind::ALREADY_EXISTS)
        );
        assert_eq!(
            cdkd_aws_common::kind_in(SECRETS_KINDS, "MalformedPolicyDocumentException"),
            Some(ErrorKind::VALIDATION)
        );
        assert_eq!(cdkd_aws_common::kind_in(SECRETS_KINDS, "Throttling"), None);
        let err = with_secrets_kind(
            ProviderError::new(ErrorKind::OTHER, "taken").with_aws_code("ResourceExistsException"),
        );
        assert_eq!(err.kind, ErrorKind::ALREADY_EXISTS);
    }

    #[test]
    fn a_secret_scheduled_for_deletion_reads_as_gone() {
        let scheduled = ProviderError::new(
            ErrorKind::VALIDATION,
            "T L: DeleteSecret: You can't perform this operation on the secret because it was marked for deletion.",
        )
        .with_aws_code("InvalidRequestException");
        assert!(marked_for_deletion(&scheduled));
        assert_eq!(found::<i32>(Err(scheduled)).unwrap(), None);
        let other = ProviderError::new(ErrorKind::VALIDATION, "T L: bad request")
            .with_aws_code("InvalidRequestException");
        assert!(!marked_for_deletion(&other));
        assert_eq!(
            found::<i32>(Err(other)).unwrap_err().kind,
            ErrorKind::VALIDATION
        );
        let gone = ProviderError::new(ErrorKind::NOT_FOUND, "gone");
        assert_eq!(found::<i32>(Err(gone)).unwrap(), None);
        assert_eq!(found(Ok::<_, ProviderError>(7)).unwrap(), Some(7));
    }

    #[test]
    fn documents_and_secret_ids_keep_the_templates_spelling() {
        assert_eq!(json_text(&json!({"a": 1})), "{\"a\":1}");
        assert_eq!(json_text(&json!("{\"a\":1}")), "{\"a\":1}");
        assert_eq!(parsed("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(parsed("nope"), json!("nope"));
        let arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:db-AbCdEf";
        assert_eq!(secret_id_like(Some(&json!("db")), arn, Some("db")), "db");
        assert_eq!(secret_id_like(Some(&json!(arn)), arn, Some("db")), arn);
        assert_eq!(
            secret_id_like(
                Some(&json!(
                    "arn:aws:secretsmanager:us-east-1:123456789012:secret:db"
                )),
                arn,
                Some("db")
            ),
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:db"
        );
        assert_eq!(secret_id_like(Some(&json!("other")), arn, Some("db")), arn);
        assert_eq!(secret_id_like(None, arn, Some("db")), arn);
        assert_eq!(Value::Object(id_attribute(arn)), json!({ "Id": arn }));
    }
}
