//! `AWS::Cognito::UserPool`: physical id (and `Ref`) is the pool's id; attributes `Arn`,
//! `ProviderName`, `ProviderURL` and `UserPoolId`. Cognito's `UpdateUserPool` resets every
//! setting it is not given, so an update sends the whole template (and the pool's create-token
//! tag) again (Lambda triggers, device remembering and threat protection included:
//! `pool_blocks`). A pool with `DeletionProtection: ACTIVE` is refused on delete, as under
//! CloudFormation.

use aws_sdk_cognitoidentityprovider::types::{
    AccountRecoverySettingType, AdminCreateUserConfigType, AliasAttributeType, AttributeDataType,
    AuthFactorType, DefaultEmailOptionType, DeletionProtectionType, EmailConfigurationType,
    EmailMfaConfigType, EmailSendingAccountType, MessageTemplateType,
    NumberAttributeConstraintsType, PasswordPolicyType, RecoveryOptionNameType, RecoveryOptionType,
    SchemaAttributeType, SignInPolicyType, SmsConfigurationType, SmsMfaConfigType,
    SoftwareTokenMfaConfigType, StringAttributeConstraintsType, UserPoolMfaType,
    UserPoolPolicyType, UserPoolTierType, UserPoolType, UsernameAttributeType,
    UsernameConfigurationType, VerificationMessageTemplateType, VerifiedAttributeType,
};
use cdkd_aws_common::{
    all_pages, carries_token, deleted_unless_failed, does_not_exist, flag, found, generated_name,
    int, one_tagged, put, string, strings, while_iam_propagates, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult, CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::pool_blocks::{
    add_ons, add_ons_shape, attribute_update, attribute_update_shape, device, device_shape,
    lambda_config, lambda_config_shape,
};
use crate::{created_pool_name, failed, idp, live_tags, sent_tags, template_tags};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Cognito::UserPool";

/// The longest user pool name Cognito takes.
const MAX_NAME: usize = 128;

/// The `AWS::Cognito::UserPool` provider.
#[derive(Default)]
pub struct UserPool;

/// The name a create with `token` gives the pool: the template's, else CloudFormation's shape.
fn pool_name(
    properties: &Map<String, Value>,
    stack: &str,
    logical_id: &str,
    token: &str,
) -> String {
    string(properties.get("UserPoolName"))
        .unwrap_or_else(|| generated_name(stack, logical_id, token, MAX_NAME, false, ""))
}

/// Whether `key`'s value differs between two templates (a missing key and `null` alike).
fn changed(before: &Map<String, Value>, after: &Map<String, Value>, key: &str) -> bool {
    before.get(key).filter(|v| !v.is_null()) != after.get(key).filter(|v| !v.is_null())
}

/// `Policies` as Cognito's.
fn policies(value: Option<&Value>) -> Option<UserPoolPolicyType> {
    let value = value.filter(|v| v.is_object())?;
    let password = value
        .get("PasswordPolicy")
        .filter(|v| v.is_object())
        .map(|p| {
            PasswordPolicyType::builder()
                .set_minimum_length(int(p.get("MinimumLength")))
                .set_require_uppercase(flag(p.get("RequireUppercase")))
                .set_require_lowercase(flag(p.get("RequireLowercase")))
                .set_require_numbers(flag(p.get("RequireNumbers")))
                .set_require_symbols(flag(p.get("RequireSymbols")))
                .set_password_history_size(int(p.get("PasswordHistorySize")))
                .set_temporary_password_validity_days(int(p.get("TemporaryPasswordValidityDays")))
                .build()
        });
    let sign_in = value
        .get("SignInPolicy")
        .filter(|v| v.is_object())
        .map(|s| {
            SignInPolicyType::builder()
                .set_allowed_first_auth_factors(
                    strings(s.get("AllowedFirstAuthFactors"))
                        .map(|f| f.iter().map(|f| AuthFactorType::from(f.as_str())).collect()),
                )
                .build()
        });
    Some(
        UserPoolPolicyType::builder()
            .set_password_policy(password)
            .set_sign_in_policy(sign_in)
            .build(),
    )
}

/// One `Schema` entry as Cognito's attribute.
fn schema_attribute(item: &Value) -> SchemaAttributeType {
    SchemaAttributeType::builder()
        .set_name(string(item.get("Name")))
        .set_attribute_data_type(
            string(item.get("AttributeDataType")).map(|t| AttributeDataType::from(t.as_str())),
        )
        .set_developer_only_attribute(flag(item.get("DeveloperOnlyAttribute")))
        .set_mutable(flag(item.get("Mutable")))
        .set_required(flag(item.get("Required")))
        .set_number_attribute_constraints(
            item.get("NumberAttributeConstraints")
                .filter(|v| v.is_object())
                .map(|c| {
                    NumberAttributeConstraintsType::builder()
                        .set_min_value(cdkd_aws_common::text(c.get("MinValue")))
                        .set_max_value(cdkd_aws_common::text(c.get("MaxValue")))
                        .build()
                }),
        )
        .set_string_attribute_constraints(
            item.get("StringAttributeConstraints")
                .filter(|v| v.is_object())
                .map(|c| {
                    StringAttributeConstraintsType::builder()
                        .set_min_length(cdkd_aws_common::text(c.get("MinLength")))
                        .set_max_length(cdkd_aws_common::text(c.get("MaxLength")))
                        .build()
                }),
        )
        .build()
}

/// The template's `Schema` entries.
fn schema(value: Option<&Value>) -> Option<Vec<SchemaAttributeType>> {
    value?
        .as_array()
        .map(|items| items.iter().map(schema_attribute).collect())
}

/// `AccountRecoverySetting` as Cognito's; a mechanism without a name or priority is refused.
fn recovery(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<AccountRecoverySettingType>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let mechanisms = value
        .get("RecoveryMechanisms")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|m| {
                    RecoveryOptionType::builder()
                        .set_name(
                            string(m.get("Name")).map(|n| RecoveryOptionNameType::from(n.as_str())),
                        )
                        .set_priority(int(m.get("Priority")))
                        .build()
                        .map_err(|e| {
                            ProviderError::validation(format!(
                                "{what}: AccountRecoverySetting.RecoveryMechanisms: {e}"
                            ))
                        })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    Ok(Some(
        AccountRecoverySettingType::builder()
            .set_recovery_mechanisms(mechanisms)
            .build(),
    ))
}

/// `AdminCreateUserConfig` as Cognito's.
fn admin_create(value: Option<&Value>) -> Option<AdminCreateUserConfigType> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        AdminCreateUserConfigType::builder()
            .set_allow_admin_create_user_only(flag(value.get("AllowAdminCreateUserOnly")))
            .set_unused_account_validity_days(int(value.get("UnusedAccountValidityDays")))
            .set_invite_message_template(
                value
                    .get("InviteMessageTemplate")
                    .filter(|v| v.is_object())
                    .map(|t| {
                        MessageTemplateType::builder()
                            .set_email_message(string(t.get("EmailMessage")))
                            .set_email_subject(string(t.get("EmailSubject")))
                            .set_sms_message(string(t.get("SMSMessage")))
                            .build()
                    }),
            )
            .build(),
    )
}

/// `EmailConfiguration` as Cognito's.
fn email(value: Option<&Value>) -> Option<EmailConfigurationType> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        EmailConfigurationType::builder()
            .set_source_arn(string(value.get("SourceArn")))
            .set_reply_to_email_address(string(value.get("ReplyToEmailAddress")))
            .set_email_sending_account(
                string(value.get("EmailSendingAccount"))
                    .map(|a| EmailSendingAccountType::from(a.as_str())),
            )
            .set_from(string(value.get("From")))
            .set_configuration_set(string(value.get("ConfigurationSet")))
            .build(),
    )
}

/// `VerificationMessageTemplate` as Cognito's.
fn verification(value: Option<&Value>) -> Option<VerificationMessageTemplateType> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        VerificationMessageTemplateType::builder()
            .set_sms_message(string(value.get("SmsMessage")))
            .set_email_message(string(value.get("EmailMessage")))
            .set_email_subject(string(value.get("EmailSubject")))
            .set_email_message_by_link(string(value.get("EmailMessageByLink")))
            .set_email_subject_by_link(string(value.get("EmailSubjectByLink")))
            .set_default_email_option(
                string(value.get("DefaultEmailOption"))
                    .map(|o| DefaultEmailOptionType::from(o.as_str())),
            )
            .build(),
    )
}

/// `UsernameConfiguration` as Cognito's.
fn username_configuration(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<UsernameConfigurationType>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    UsernameConfigurationType::builder()
        .set_case_sensitive(flag(value.get("CaseSensitive")).or(Some(true)))
        .build()
        .map(Some)
        .map_err(|e| ProviderError::validation(format!("{what}: UsernameConfiguration: {e}")))
}

/// The template's `MfaConfiguration` (Cognito's default `OFF` when absent).
fn mfa(properties: &Map<String, Value>) -> UserPoolMfaType {
    UserPoolMfaType::from(
        string(properties.get("MfaConfiguration"))
            .unwrap_or_else(|| "OFF".into())
            .as_str(),
    )
}

/// The `Schema` attributes `after` adds to `before`; a change or removal of an existing one is
/// refused by name (Cognito only adds attributes, and CloudFormation fails the same update).
fn schema_additions(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
    what: &str,
) -> Result<Vec<SchemaAttributeType>, ProviderError> {
    let old = schema(before.get("Schema")).unwrap_or_default();
    let (added, kept): (Vec<_>, Vec<_>) = schema(after.get("Schema"))
        .unwrap_or_default()
        .into_iter()
        .partition(|a| !old.iter().any(|o| o.name() == a.name()));
    let unchanged = old.iter().all(|o| kept.iter().any(|k| k == o));
    if kept.len() != old.len() || !unchanged {
        return Err(ProviderError::validation(format!(
            "{what}: Schema: Cognito can only add attributes to a user pool's schema, never change or remove one (CloudFormation fails the same update); keep the existing attributes as they are, or change the pool's logical id to replace it"
        )));
    }
    Ok(added)
}

/// The attributes of the pool `id` in `region`.
fn attributes_of(region: &str, id: &str, arn: Option<&str>) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("UserPoolId".into(), json!(id));
    attributes.insert(
        "ProviderName".into(),
        json!(format!("cognito-idp.{region}.amazonaws.com/{id}")),
    );
    attributes.insert(
        "ProviderURL".into(),
        json!(format!("https://cognito-idp.{region}.amazonaws.com/{id}")),
    );
    put(&mut attributes, "Arn", arn.map(Value::from));
    attributes
}

/// The pool `id`; `None` when it does not exist.
async fn describe(
    cognito: &aws_sdk_cognitoidentityprovider::Client,
    what: &str,
    id: &str,
) -> Result<Option<UserPoolType>, ProviderError> {
    let answer = found(
        cognito
            .describe_user_pool()
            .user_pool_id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeUserPool {id}"))),
    )?;
    Ok(answer.and_then(|a| a.user_pool().cloned()))
}

/// `SmsConfiguration` as Cognito's; `None` when the template gives none. Without
/// `SnsCallerArn` it is refused by name (Cognito requires the role).
fn sms(value: Option<&Value>, what: &str) -> Result<Option<SmsConfigurationType>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let role = string(value.get("SnsCallerArn")).ok_or_else(|| {
        ProviderError::validation(format!(
            "{what}: SmsConfiguration: SnsCallerArn is required"
        ))
    })?;
    Ok(Some(
        SmsConfigurationType::builder()
            .sns_caller_arn(role)
            .set_external_id(string(value.get("ExternalId")))
            .set_sns_region(string(value.get("SnsRegion")))
            .build(),
    ))
}

/// The SMS role a template's `SmsConfiguration` names, for a message.
fn sms_role(properties: &Map<String, Value>) -> Option<String> {
    string(properties.get("SmsConfiguration")?.get("SnsCallerArn"))
        .map(|role| format!("the SMS role {role}"))
}

/// Whether Cognito refused the SMS role as it does while IAM has not propagated it (or its
/// trust policy and SNS permissions): `InvalidSmsRoleTrustRelationshipException` ("Role does
/// not have a trust relationship allowing Cognito to assume the role") and
/// `InvalidSmsRoleAccessPolicyException` ("Role does not have permission to publish with
/// SNS"), which Terraform's `aws_cognito_user_pool` retries on too.
fn sms_role_not_propagated(err: &ProviderError) -> bool {
    matches!(
        err.aws_code(),
        Some("InvalidSmsRoleTrustRelationshipException" | "InvalidSmsRoleAccessPolicyException")
    )
}

/// `call` again while Cognito does not accept the template's SMS role yet; at once when the
/// template names none.
async fn while_sms_role_propagates<T, F, Fut>(
    properties: &Map<String, Value>,
    mut call: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ProviderError>>,
{
    match sms_role(properties) {
        Some(role) => while_iam_propagates(&role, sms_role_not_propagated, call).await,
        None => call().await,
    }
}

/// Sets the pool's MFA mode and factors when the template asks for more than Cognito's `OFF`
/// (a create or update cannot turn MFA on before the factors are enabled).
async fn apply_mfa(
    cognito: &aws_sdk_cognitoidentityprovider::Client,
    what: &str,
    id: &str,
    properties: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let enabled = strings(properties.get("EnabledMfas")).unwrap_or_default();
    if mfa(properties) == UserPoolMfaType::Off && enabled.is_empty() {
        return Ok(());
    }
    let has = |factor: &str| enabled.iter().any(|f| f == factor);
    // SMS MFA goes with the pool's SMS role, which Cognito checks here too.
    let sms_mfa = match sms(properties.get("SmsConfiguration"), what)? {
        Some(configuration) if has("SMS_MFA") => Some(
            SmsMfaConfigType::builder()
                .sms_configuration(configuration)
                .set_sms_authentication_message(string(properties.get("SmsAuthenticationMessage")))
                .build(),
        ),
        _ => None,
    };
    let request = cognito
        .set_user_pool_mfa_config()
        .user_pool_id(id)
        .mfa_configuration(mfa(properties))
        .software_token_mfa_configuration(
            SoftwareTokenMfaConfigType::builder()
                .enabled(has("SOFTWARE_TOKEN_MFA"))
                .build(),
        )
        .set_email_mfa_configuration(
            has("EMAIL_OTP").then(|| EmailMfaConfigType::builder().build()),
        )
        .set_sms_mfa_configuration(sms_mfa);
    while_sms_role_propagates(properties, || async {
        request
            .clone()
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: SetUserPoolMfaConfig {id}")))
    })
    .await
}

/// The live pool's settings in template shape.
fn template_shape(pool: &UserPoolType) -> Map<String, Value> {
    let mut props = Map::new();
    put(&mut props, "UserPoolName", pool.name().map(Value::from));
    put(
        &mut props,
        "LambdaConfig",
        pool.lambda_config().and_then(lambda_config_shape),
    );
    put(
        &mut props,
        "UserAttributeUpdateSettings",
        pool.user_attribute_update_settings()
            .and_then(attribute_update_shape),
    );
    put(
        &mut props,
        "DeviceConfiguration",
        pool.device_configuration().map(device_shape),
    );
    put(
        &mut props,
        "UserPoolAddOns",
        pool.user_pool_add_ons().and_then(add_ons_shape),
    );
    put(&mut props, "Policies", pool.policies().map(policies_shape));
    let schema: Vec<Value> = pool
        .schema_attributes()
        .iter()
        .map(schema_attribute_shape)
        .collect();
    if !schema.is_empty() {
        props.insert("Schema".into(), Value::Array(schema));
    }
    let list = |items: Vec<&str>| (!items.is_empty()).then(|| json!(items));
    put(
        &mut props,
        "AutoVerifiedAttributes",
        list(
            pool.auto_verified_attributes()
                .iter()
                .map(|a| a.as_str())
                .collect(),
        ),
    );
    put(
        &mut props,
        "AliasAttributes",
        list(pool.alias_attributes().iter().map(|a| a.as_str()).collect()),
    );
    put(
        &mut props,
        "UsernameAttributes",
        list(
            pool.username_attributes()
                .iter()
                .map(|a| a.as_str())
                .collect(),
        ),
    );
    put(
        &mut props,
        "AccountRecoverySetting",
        pool.account_recovery_setting().map(|r| {
            json!({"RecoveryMechanisms": r.recovery_mechanisms().iter().map(|m| json!({"Name": m.name().as_str(), "Priority": m.priority()})).collect::<Vec<_>>()})
        }),
    );
    put(
        &mut props,
        "AdminCreateUserConfig",
        pool.admin_create_user_config()
            .map(admin_create_user_config),
    );
    put(
        &mut props,
        "EmailConfiguration",
        pool.email_configuration().map(email_configuration),
    );
    put(
        &mut props,
        "VerificationMessageTemplate",
        pool.verification_message_template()
            .map(verification_message_template),
    );
    for (key, value) in [
        (
            "EmailVerificationMessage",
            pool.email_verification_message(),
        ),
        (
            "EmailVerificationSubject",
            pool.email_verification_subject(),
        ),
        ("SmsVerificationMessage", pool.sms_verification_message()),
        (
            "SmsAuthenticationMessage",
            pool.sms_authentication_message(),
        ),
    ] {
        put(&mut props, key, value.map(Value::from));
    }
    put(
        &mut props,
        "SmsConfiguration",
        pool.sms_configuration().map(|c| {
            let mut shape = Map::new();
            shape.insert("SnsCallerArn".into(), json!(c.sns_caller_arn()));
            put(&mut shape, "ExternalId", c.external_id().map(Value::from));
            put(&mut shape, "SnsRegion", c.sns_region().map(Value::from));
            Value::Object(shape)
        }),
    );
    put(
        &mut props,
        "MfaConfiguration",
        pool.mfa_configuration().map(|m| json!(m.as_str())),
    );
    put(
        &mut props,
        "DeletionProtection",
        pool.deletion_protection().map(|d| json!(d.as_str())),
    );
    put(
        &mut props,
        "UsernameConfiguration",
        pool.username_configuration()
            .map(|c| json!({"CaseSensitive": c.case_sensitive()})),
    );
    put(
        &mut props,
        "UserPoolTier",
        pool.user_pool_tier().map(|t| json!(t.as_str())),
    );
    put(&mut props, "UserPoolTags", live_tags(pool.user_pool_tags()));
    props
}

/// The pool's `Policies` in template shape.
fn policies_shape(p: &aws_sdk_cognitoidentityprovider::types::UserPoolPolicyType) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "PasswordPolicy",
        p.password_policy().map(|pp| {
            let mut policy = Map::new();
            put(
                &mut policy,
                "MinimumLength",
                pp.minimum_length().map(Value::from),
            );
            policy.insert("RequireUppercase".into(), json!(pp.require_uppercase()));
            policy.insert("RequireLowercase".into(), json!(pp.require_lowercase()));
            policy.insert("RequireNumbers".into(), json!(pp.require_numbers()));
            policy.insert("RequireSymbols".into(), json!(pp.require_symbols()));
            put(
                &mut policy,
                "PasswordHistorySize",
                pp.password_history_size().map(Value::from),
            );
            policy.insert(
                "TemporaryPasswordValidityDays".into(),
                json!(pp.temporary_password_validity_days()),
            );
            Value::Object(policy)
        }),
    );
    put(
        &mut shape,
        "SignInPolicy",
        p.sign_in_policy().map(|s| {
            json!({"AllowedFirstAuthFactors": s.allowed_first_auth_factors().iter().map(|f| f.as_str()).collect::<Vec<_>>()})
        }),
    );
    Value::Object(shape)
}

/// One `Schema` attribute in template shape.
fn schema_attribute_shape(
    a: &aws_sdk_cognitoidentityprovider::types::SchemaAttributeType,
) -> Value {
    let mut item = Map::new();
    put(&mut item, "Name", a.name().map(Value::from));
    put(
        &mut item,
        "AttributeDataType",
        a.attribute_data_type().map(|t| json!(t.as_str())),
    );
    put(
        &mut item,
        "DeveloperOnlyAttribute",
        a.developer_only_attribute().map(Value::from),
    );
    put(&mut item, "Mutable", a.mutable().map(Value::from));
    put(&mut item, "Required", a.required().map(Value::from));
    put(
        &mut item,
        "NumberAttributeConstraints",
        a.number_attribute_constraints().map(|c| {
            let mut shape = Map::new();
            put(&mut shape, "MinValue", c.min_value().map(Value::from));
            put(&mut shape, "MaxValue", c.max_value().map(Value::from));
            Value::Object(shape)
        }),
    );
    put(
        &mut item,
        "StringAttributeConstraints",
        a.string_attribute_constraints().map(|c| {
            let mut shape = Map::new();
            put(&mut shape, "MinLength", c.min_length().map(Value::from));
            put(&mut shape, "MaxLength", c.max_length().map(Value::from));
            Value::Object(shape)
        }),
    );
    Value::Object(item)
}

/// `AdminCreateUserConfig` in template shape.
fn admin_create_user_config(
    c: &aws_sdk_cognitoidentityprovider::types::AdminCreateUserConfigType,
) -> Value {
    let mut shape = Map::new();
    shape.insert(
        "AllowAdminCreateUserOnly".into(),
        json!(c.allow_admin_create_user_only()),
    );
    shape.insert(
        "UnusedAccountValidityDays".into(),
        json!(c.unused_account_validity_days()),
    );
    put(
        &mut shape,
        "InviteMessageTemplate",
        c.invite_message_template().map(|t| {
            let mut template = Map::new();
            put(
                &mut template,
                "EmailMessage",
                t.email_message().map(Value::from),
            );
            put(
                &mut template,
                "EmailSubject",
                t.email_subject().map(Value::from),
            );
            put(
                &mut template,
                "SMSMessage",
                t.sms_message().map(Value::from),
            );
            Value::Object(template)
        }),
    );
    Value::Object(shape)
}

/// `EmailConfiguration` in template shape.
fn email_configuration(
    e: &aws_sdk_cognitoidentityprovider::types::EmailConfigurationType,
) -> Value {
    let mut shape = Map::new();
    put(&mut shape, "SourceArn", e.source_arn().map(Value::from));
    put(
        &mut shape,
        "ReplyToEmailAddress",
        e.reply_to_email_address().map(Value::from),
    );
    put(
        &mut shape,
        "EmailSendingAccount",
        e.email_sending_account().map(|a| json!(a.as_str())),
    );
    put(&mut shape, "From", e.from().map(Value::from));
    put(
        &mut shape,
        "ConfigurationSet",
        e.configuration_set().map(Value::from),
    );
    Value::Object(shape)
}

/// `VerificationMessageTemplate` in template shape.
fn verification_message_template(
    t: &aws_sdk_cognitoidentityprovider::types::VerificationMessageTemplateType,
) -> Value {
    let mut shape = Map::new();
    put(&mut shape, "SmsMessage", t.sms_message().map(Value::from));
    put(
        &mut shape,
        "EmailMessage",
        t.email_message().map(Value::from),
    );
    put(
        &mut shape,
        "EmailSubject",
        t.email_subject().map(Value::from),
    );
    put(
        &mut shape,
        "EmailMessageByLink",
        t.email_message_by_link().map(Value::from),
    );
    put(
        &mut shape,
        "EmailSubjectByLink",
        t.email_subject_by_link().map(Value::from),
    );
    put(
        &mut shape,
        "DefaultEmailOption",
        t.default_email_option().map(|o| json!(o.as_str())),
    );
    Value::Object(shape)
}

/// The ids of pools named `name` carrying the create token `token`.
async fn tagged(
    cognito: &aws_sdk_cognitoidentityprovider::Client,
    what: &str,
    name: &str,
    token: &str,
) -> Result<Vec<String>, ProviderError> {
    let named = all_pages(|next| async move {
        let page = cognito
            .list_user_pools()
            .max_results(60)
            .set_next_token(next)
            .send()
            .await
            .map_err(failed!(format!("{what}: ListUserPools")))?;
        let named = page
            .user_pools()
            .iter()
            .filter(|p| p.name() == Some(name))
            .filter_map(|p| p.id().map(ToString::to_string))
            .collect();
        Ok((named, page.next_token().map(ToString::to_string)))
    })
    .await?;
    let mut ids = Vec::new();
    for id in named {
        let pool = describe(cognito, what, &id).await?;
        if pool.is_some_and(|p| carries_token(p.user_pool_tags(), token)) {
            ids.push(id);
        }
    }
    Ok(ids)
}

#[async_trait]
impl ResourceProvider for UserPool {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "UserPoolName",
                "Policies",
                "Schema",
                "AutoVerifiedAttributes",
                "UsernameAttributes",
                "AliasAttributes",
                "AccountRecoverySetting",
                "AdminCreateUserConfig",
                "EmailConfiguration",
                "VerificationMessageTemplate",
                "EmailVerificationMessage",
                "EmailVerificationSubject",
                "SmsVerificationMessage",
                "SmsAuthenticationMessage",
                "SmsConfiguration",
                "MfaConfiguration",
                "EnabledMfas",
                "DeletionProtection",
                "UsernameConfiguration",
                "UserPoolTier",
                "UserPoolTags",
                "LambdaConfig",
                "UserAttributeUpdateSettings",
                "DeviceConfiguration",
                "UserPoolAddOns",
            ])
            // Cognito has no call that changes these after the create (CloudFormation
            // replaces the pool too).
            .create_only(&[
                "UsernameAttributes",
                "AliasAttributes",
                "UsernameConfiguration",
            ])
            .read_and_import()
            .finds_created_in(&["UserPoolName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let name = pool_name(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
        );
        let tags = sent_tags(
            template_tags(props, "UserPoolTags"),
            Some(&request.client_token),
        );
        let cognito = idp(ctx).await?;
        let request = cognito
            .create_user_pool()
            .pool_name(&name)
            .set_policies(policies(props.get("Policies")))
            .set_schema(schema(props.get("Schema")))
            .set_auto_verified_attributes(strings(props.get("AutoVerifiedAttributes")).map(|a| {
                a.iter()
                    .map(|a| VerifiedAttributeType::from(a.as_str()))
                    .collect()
            }))
            .set_alias_attributes(strings(props.get("AliasAttributes")).map(|a| {
                a.iter()
                    .map(|a| AliasAttributeType::from(a.as_str()))
                    .collect()
            }))
            .set_username_attributes(strings(props.get("UsernameAttributes")).map(|a| {
                a.iter()
                    .map(|a| UsernameAttributeType::from(a.as_str()))
                    .collect()
            }))
            .set_account_recovery_setting(recovery(props.get("AccountRecoverySetting"), &what)?)
            .set_admin_create_user_config(admin_create(props.get("AdminCreateUserConfig")))
            .set_email_configuration(email(props.get("EmailConfiguration")))
            .set_verification_message_template(verification(
                props.get("VerificationMessageTemplate"),
            ))
            .set_email_verification_message(string(props.get("EmailVerificationMessage")))
            .set_email_verification_subject(string(props.get("EmailVerificationSubject")))
            .set_sms_verification_message(string(props.get("SmsVerificationMessage")))
            .set_sms_authentication_message(string(props.get("SmsAuthenticationMessage")))
            .set_deletion_protection(
                string(props.get("DeletionProtection"))
                    .map(|d| DeletionProtectionType::from(d.as_str())),
            )
            .set_username_configuration(username_configuration(
                props.get("UsernameConfiguration"),
                &what,
            )?)
            .set_user_pool_tier(
                string(props.get("UserPoolTier")).map(|t| UserPoolTierType::from(t.as_str())),
            )
            .set_sms_configuration(sms(props.get("SmsConfiguration"), &what)?)
            .set_lambda_config(lambda_config(props.get("LambdaConfig"), &what)?)
            .set_user_attribute_update_settings(attribute_update(
                props.get("UserAttributeUpdateSettings"),
            ))
            .set_device_configuration(device(props.get("DeviceConfiguration")))
            .set_user_pool_add_ons(add_ons(props.get("UserPoolAddOns"), &what)?)
            .set_user_pool_tags(Some(tags).filter(|t| !t.is_empty()));
        let created = while_sms_role_propagates(props, || async {
            request
                .clone()
                .send()
                .await
                .map_err(failed!(format!("{what}: CreateUserPool {name}")))
        })
        .await?;
        let pool = created.user_pool().cloned().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateUserPool returned no user pool"))
        })?;
        let id = pool.id().unwrap_or_default().to_string();
        // The pool exists: a refused MFA setting must not leave it unrecorded.
        if let Err(err) = apply_mfa(&cognito, &what, &id, props).await {
            let undone = cognito
                .delete_user_pool()
                .user_pool_id(&id)
                .send()
                .await
                .is_ok();
            let fate = if undone {
                "deleted again"
            } else {
                "NOT deleted: delete it by hand (aws cognito-idp delete-user-pool)"
            };
            return Err(ProviderError::new(
                err.kind,
                format!(
                    "{}; the user pool {id} it had created was {fate}",
                    err.message
                ),
            ));
        }
        Ok(CreateResult {
            attributes: attributes_of(ctx.region(), &id, pool.arn()),
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
        let (before, after, id) = (
            &request.previous_properties,
            &request.properties,
            request.physical_id.as_str(),
        );
        let cognito = idp(ctx).await?;
        let live = describe(&cognito, &what, id)
            .await?
            .ok_or_else(|| does_not_exist(&what, id, "Cognito"))?;
        if changed(before, after, "Schema") {
            let added = schema_additions(before, after, &what)?;
            if !added.is_empty() {
                cognito
                    .add_custom_attributes()
                    .user_pool_id(id)
                    .set_custom_attributes(Some(added))
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: AddCustomAttributes {id}")))?;
            }
        }
        if changed(before, after, "MfaConfiguration") || changed(before, after, "EnabledMfas") {
            apply_mfa(&cognito, &what, id, after).await?;
        }
        // UpdateUserPool resets what it is not given: the whole template goes, and the
        // create-token tag stays.
        let tags = sent_tags(
            template_tags(after, "UserPoolTags"),
            live.user_pool_tags().and_then(|t| t.get(CREATE_TOKEN_TAG)),
        );
        let request = cognito
            .update_user_pool()
            .user_pool_id(id)
            .set_pool_name(
                string(after.get("UserPoolName")).or_else(|| live.name().map(ToString::to_string)),
            )
            .set_policies(policies(after.get("Policies")))
            .set_auto_verified_attributes(strings(after.get("AutoVerifiedAttributes")).map(|a| {
                a.iter()
                    .map(|a| VerifiedAttributeType::from(a.as_str()))
                    .collect()
            }))
            .set_account_recovery_setting(recovery(after.get("AccountRecoverySetting"), &what)?)
            .set_admin_create_user_config(admin_create(after.get("AdminCreateUserConfig")))
            .set_email_configuration(email(after.get("EmailConfiguration")))
            .set_verification_message_template(verification(
                after.get("VerificationMessageTemplate"),
            ))
            .set_email_verification_message(string(after.get("EmailVerificationMessage")))
            .set_email_verification_subject(string(after.get("EmailVerificationSubject")))
            .set_sms_verification_message(string(after.get("SmsVerificationMessage")))
            .set_sms_authentication_message(string(after.get("SmsAuthenticationMessage")))
            .mfa_configuration(mfa(after))
            .deletion_protection(DeletionProtectionType::from(
                string(after.get("DeletionProtection"))
                    .unwrap_or_else(|| "INACTIVE".into())
                    .as_str(),
            ))
            .set_user_pool_tier(
                string(after.get("UserPoolTier")).map(|t| UserPoolTierType::from(t.as_str())),
            )
            .set_sms_configuration(sms(after.get("SmsConfiguration"), &what)?)
            .set_lambda_config(lambda_config(after.get("LambdaConfig"), &what)?)
            .set_user_attribute_update_settings(attribute_update(
                after.get("UserAttributeUpdateSettings"),
            ))
            .set_device_configuration(device(after.get("DeviceConfiguration")))
            .set_user_pool_add_ons(add_ons(after.get("UserPoolAddOns"), &what)?)
            .set_user_pool_tags(Some(tags));
        while_sms_role_propagates(after, || async {
            request
                .clone()
                .send()
                .await
                .map_err(failed!(format!("{what}: UpdateUserPool {id}")))
        })
        .await?;
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes: attributes_of(ctx.region(), id, live.arn()),
            ..Default::default()
        })
    }

    /// Cognito refuses to delete a pool whose deletion protection is on, as CloudFormation
    /// does; the error says how to turn it off.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let id = &request.physical_id;
        let result = idp(ctx)
            .await?
            .delete_user_pool()
            .user_pool_id(id)
            .send()
            .await
            .map(|_| ())
            .map_err(failed!(format!("{what}: DeleteUserPool {id}")));
        if let Err(err) = &result {
            if err.kind != ErrorKind::NOT_FOUND
                && string(request.properties.get("DeletionProtection")).as_deref() == Some("ACTIVE")
            {
                return Err(ProviderError::new(
                    ErrorKind::CONFLICT,
                    format!(
                        "{}; the user pool {id} has DeletionProtection ACTIVE: set it to INACTIVE (CDK: deletionProtection: false) and deploy, then destroy again",
                        err.message
                    ),
                ));
            }
        }
        deleted_unless_failed(result)
    }
}

#[async_trait]
impl Readable for UserPool {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cognito = idp(ctx).await?;
        let Some(pool) = describe(&cognito, what, &request.physical_id).await? else {
            return Ok(None);
        };
        let mut props = template_shape(&pool);
        // Write-only in CloudFormation's schema: what the template says stands.
        put(
            &mut props,
            "EnabledMfas",
            request.properties.get("EnabledMfas").cloned(),
        );
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let cognito = idp(ctx).await?;
        let pool = describe(&cognito, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "Cognito"))?;
        Ok(attributes_of(ctx.region(), physical_id, pool.arn()))
    }

    /// The pool named as the create named it and carrying its token; more than one is refused
    /// (cdkd cannot tell which its create made).
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let name = created_pool_name(what, request, pool_name)?;
        let cognito = idp(ctx).await?;
        let ids = tagged(&cognito, what, &name, &request.token).await?;
        one_tagged(
            what,
            &format!("user pools named {name}"),
            &request.token,
            ids,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_generated_name_is_fixed_by_the_token_and_a_given_one_wins() {
        let empty = Map::new();
        let a = pool_name(&empty, "Shop", "Pool1234", "t1");
        assert!(a.starts_with("Shop-Pool1234-"), "{a}");
        assert_eq!(a, pool_name(&empty, "Shop", "Pool1234", "t1"));
        assert_ne!(a, pool_name(&empty, "Shop", "Pool1234", "t2"));
        let given = props(json!({"UserPoolName": "users"}));
        assert_eq!(pool_name(&given, "Shop", "Pool1234", "t1"), "users");
    }

    #[test]
    fn the_token_tag_is_never_a_template_tag() {
        let template = props(json!({"UserPoolTags": {"team": "a", CREATE_TOKEN_TAG: "forged"}}));
        assert_eq!(
            template_tags(&template, "UserPoolTags"),
            BTreeMap::from([("team".to_string(), "a".to_string())])
        );
    }

    #[test]
    fn the_sms_role_converts_and_reads_back_and_is_waited_for_only_on_its_refusals() {
        let template = props(json!({"SmsConfiguration": {
            "SnsCallerArn": "arn:aws:iam::1:role/sms", "ExternalId": "x", "SnsRegion": "us-east-1"}}));
        let configuration = sms(template.get("SmsConfiguration"), "w").unwrap().unwrap();
        assert_eq!(configuration.sns_caller_arn(), "arn:aws:iam::1:role/sms");
        let pool = UserPoolType::builder()
            .sms_configuration(configuration)
            .build();
        assert_eq!(
            template_shape(&pool)["SmsConfiguration"],
            template["SmsConfiguration"]
        );
        let no_role = props(json!({"SmsConfiguration": {"ExternalId": "x"}}));
        assert!(sms(no_role.get("SmsConfiguration"), "w")
            .unwrap_err()
            .message
            .contains("SmsConfiguration"));
        assert_eq!(
            sms_role(&template).as_deref(),
            Some("the SMS role arn:aws:iam::1:role/sms")
        );
        assert_eq!(sms_role(&props(json!({}))), None);
        let refused = |code: &str, message: &str| {
            ProviderError::validation(format!("CreateUserPool p: {message}")).with_aws_code(code)
        };
        assert!(sms_role_not_propagated(&refused(
            "InvalidSmsRoleTrustRelationshipException",
            "Role does not have a trust relationship allowing Cognito to assume the role"
        )));
        assert!(sms_role_not_propagated(&refused(
            "InvalidSmsRoleAccessPolicyException",
            "Role does not have permission to publish with SNS"
        )));
        assert!(!sms_role_not_propagated(&refused(
            "InvalidParameterException",
            "SMS configuration role trust relationship"
        )));
        assert!(!sms_role_not_propagated(&ProviderError::validation(
            "InvalidSmsRoleTrustRelationshipException"
        )));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_naming_a_fresh_sms_role_is_tried_until_cognito_accepts_it() {
        let template =
            props(json!({"SmsConfiguration": {"SnsCallerArn": "arn:aws:iam::1:role/sms"}}));
        let started = tokio::time::Instant::now();
        let answer = while_sms_role_propagates(&template, || {
            let result = if started.elapsed() < std::time::Duration::from_secs(8) {
                Err(
                    ProviderError::validation("Role does not have a trust relationship")
                        .with_aws_code("InvalidSmsRoleTrustRelationshipException"),
                )
            } else {
                Ok("created")
            };
            async move { result }
        })
        .await;
        assert_eq!(answer.unwrap(), "created");
        // Without an SMS role the same refusal is not waited for.
        let mut tries = 0;
        let refused = while_sms_role_propagates(&props(json!({})), || {
            tries += 1;
            async {
                Err::<(), _>(
                    ProviderError::validation("no")
                        .with_aws_code("InvalidSmsRoleTrustRelationshipException"),
                )
            }
        })
        .await;
        assert!(refused.is_err());
        assert_eq!(tries, 1);
    }

    #[test]
    fn cdk_settings_convert_to_cognito_and_back() {
        let template = props(json!({
            "Policies": {"PasswordPolicy": {"MinimumLength": 8, "RequireLowercase": true, "RequireNumbers": true, "RequireSymbols": true, "RequireUppercase": true, "TemporaryPasswordValidityDays": 7}},
            "Schema": [{"Name": "tier", "AttributeDataType": "String", "Mutable": "true", "StringAttributeConstraints": {"MinLength": "1", "MaxLength": 10}}],
            "AccountRecoverySetting": {"RecoveryMechanisms": [{"Name": "verified_email", "Priority": 1}]},
            "AdminCreateUserConfig": {"AllowAdminCreateUserOnly": true, "InviteMessageTemplate": {"SMSMessage": "hi {username} {####}"}},
            "EmailConfiguration": {"EmailSendingAccount": "COGNITO_DEFAULT"},
            "VerificationMessageTemplate": {"DefaultEmailOption": "CONFIRM_WITH_CODE", "EmailMessage": "code {####}"},
        }));
        let pool = UserPoolType::builder()
            .id("us-east-1_abc")
            .name("users")
            .set_policies(policies(template.get("Policies")))
            .set_schema_attributes(schema(template.get("Schema")))
            .set_account_recovery_setting(
                recovery(template.get("AccountRecoverySetting"), "w").unwrap(),
            )
            .set_admin_create_user_config(admin_create(template.get("AdminCreateUserConfig")))
            .set_email_configuration(email(template.get("EmailConfiguration")))
            .set_verification_message_template(verification(
                template.get("VerificationMessageTemplate"),
            ))
            .mfa_configuration(UserPoolMfaType::Off)
            .deletion_protection(DeletionProtectionType::Inactive)
            .user_pool_tags("team", "a")
            .user_pool_tags(CREATE_TOKEN_TAG, "t1")
            .build();
        let shape = template_shape(&pool);
        assert_eq!(shape["UserPoolName"], json!("users"));
        assert_eq!(
            shape["Policies"]["PasswordPolicy"],
            json!({"MinimumLength": 8, "RequireLowercase": true, "RequireNumbers": true, "RequireSymbols": true, "RequireUppercase": true, "TemporaryPasswordValidityDays": 7})
        );
        assert_eq!(
            shape["Schema"],
            json!([{"Name": "tier", "AttributeDataType": "String", "Mutable": true, "StringAttributeConstraints": {"MinLength": "1", "MaxLength": "10"}}])
        );
        assert_eq!(
            shape["AccountRecoverySetting"],
            json!({"RecoveryMechanisms": [{"Name": "verified_email", "Priority": 1}]})
        );
        assert_eq!(
            shape["AdminCreateUserConfig"],
            json!({"AllowAdminCreateUserOnly": true, "UnusedAccountValidityDays": 0, "InviteMessageTemplate": {"SMSMessage": "hi {username} {####}"}})
        );
        assert_eq!(
            shape["EmailConfiguration"],
            json!({"EmailSendingAccount": "COGNITO_DEFAULT"})
        );
        assert_eq!(
            shape["VerificationMessageTemplate"],
            json!({"DefaultEmailOption": "CONFIRM_WITH_CODE", "EmailMessage": "code {####}"})
        );
        assert_eq!(shape["MfaConfiguration"], json!("OFF"));
        assert_eq!(shape["DeletionProtection"], json!("INACTIVE"));
        assert_eq!(shape["UserPoolTags"], json!({"team": "a"}));
    }

    #[test]
    fn a_recovery_mechanism_without_a_priority_is_refused_by_name() {
        let err = recovery(
            Some(&json!({"RecoveryMechanisms": [{"Name": "verified_email"}]})),
            "AWS::Cognito::UserPool Pool",
        )
        .unwrap_err();
        assert!(
            err.message.contains("Pool: AccountRecoverySetting"),
            "{}",
            err.message
        );
    }

    #[test]
    fn attributes_name_the_pool_in_its_region() {
        let attributes = attributes_of("eu-west-1", "eu-west-1_x", Some("arn:p"));
        assert_eq!(
            Value::Object(attributes),
            json!({"UserPoolId": "eu-west-1_x", "Arn": "arn:p", "ProviderName": "cognito-idp.eu-west-1.amazonaws.com/eu-west-1_x", "ProviderURL": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_x"})
        );
    }

    #[test]
    fn a_schema_update_only_adds_attributes() {
        let before = props(json!({"Schema": [{"Name": "tier", "AttributeDataType": "String"}]}));
        let added = props(
            json!({"Schema": [{"Name": "tier", "AttributeDataType": "String"}, {"Name": "plan", "AttributeDataType": "Number"}]}),
        );
        let names: Vec<_> = schema_additions(&before, &added, "w")
            .unwrap()
            .iter()
            .map(|a| a.name().unwrap().to_string())
            .collect();
        assert_eq!(names, vec!["plan".to_string()]);
        let changed = props(json!({"Schema": [{"Name": "tier", "AttributeDataType": "Number"}]}));
        let err = schema_additions(&before, &changed, "AWS::Cognito::UserPool Pool").unwrap_err();
        assert!(err.message.contains("Pool: Schema"), "{}", err.message);
        assert!(schema_additions(&before, &Map::new(), "w").is_err());
    }

    #[test]
    fn the_schema_declares_the_find_scope_and_replacements() {
        let schema = UserPool.schema();
        assert_eq!(schema.find_scope, vec!["UserPoolName".to_string()]);
        assert!(schema
            .create_only_properties
            .contains(&"UsernameAttributes".to_string()));
        assert!(!schema
            .create_only_properties
            .contains(&"Schema".to_string()));
    }
}
