//! The user pool settings CreateUserPool and UpdateUserPool both take whole and
//! DescribeUserPool gives back: Lambda triggers (`LambdaConfig`), attribute-update verification
//! (`UserAttributeUpdateSettings`), device remembering (`DeviceConfiguration`) and threat
//! protection (`UserPoolAddOns`). Each converts both ways; a read leaves out what is at
//! Cognito's default, as a template that never set it would.

use aws_sdk_cognitoidentityprovider::types::{
    AdvancedSecurityAdditionalFlowsType, AdvancedSecurityEnabledModeType, AdvancedSecurityModeType,
    CustomEmailLambdaVersionConfigType, CustomEmailSenderLambdaVersionType,
    CustomSmsLambdaVersionConfigType, CustomSmsSenderLambdaVersionType, DeviceConfigurationType,
    InboundFederationLambdaType, InboundFederationLambdaVersionType, LambdaConfigType,
    PreTokenGenerationLambdaVersionType, PreTokenGenerationVersionConfigType,
    UserAttributeUpdateSettingsType, UserPoolAddOnsType, VerifiedAttributeType,
};
use cdkd_aws_common::{flag, put, string, strings};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

/// The single-ARN triggers: (template name, getter of the live value).
type Trigger = (&'static str, fn(&LambdaConfigType) -> Option<&str>);

const TRIGGERS: &[Trigger] = &[
    ("PreSignUp", LambdaConfigType::pre_sign_up),
    ("CustomMessage", LambdaConfigType::custom_message),
    ("PostConfirmation", LambdaConfigType::post_confirmation),
    ("PreAuthentication", LambdaConfigType::pre_authentication),
    ("PostAuthentication", LambdaConfigType::post_authentication),
    (
        "DefineAuthChallenge",
        LambdaConfigType::define_auth_challenge,
    ),
    (
        "CreateAuthChallenge",
        LambdaConfigType::create_auth_challenge,
    ),
    (
        "VerifyAuthChallengeResponse",
        LambdaConfigType::verify_auth_challenge_response,
    ),
    ("PreTokenGeneration", LambdaConfigType::pre_token_generation),
    ("UserMigration", LambdaConfigType::user_migration),
    ("KMSKeyID", LambdaConfigType::kms_key_id),
];

/// A versioned trigger block's `(LambdaArn, LambdaVersion)`, both required.
fn versioned(
    config: &Value,
    name: &str,
    what: &str,
) -> Result<Option<(String, String)>, ProviderError> {
    let Some(block) = config.get(name).filter(|v| v.is_object()) else {
        return Ok(None);
    };
    match (
        string(block.get("LambdaArn")),
        string(block.get("LambdaVersion")),
    ) {
        (Some(arn), Some(version)) => Ok(Some((arn, version))),
        _ => Err(ProviderError::validation(format!(
            "{what}: LambdaConfig.{name} needs LambdaArn and LambdaVersion"
        ))),
    }
}

/// `LambdaConfig` as Cognito's.
pub(crate) fn lambda_config(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<LambdaConfigType>, ProviderError> {
    let Some(config) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let arn = |name: &str| string(config.get(name));
    let built = |e: aws_sdk_cognitoidentityprovider::error::BuildError| {
        ProviderError::validation(format!("{what}: LambdaConfig: {e}"))
    };
    let pre_token = versioned(config, "PreTokenGenerationConfig", what)?
        .map(|(arn, version)| {
            PreTokenGenerationVersionConfigType::builder()
                .lambda_arn(arn)
                .lambda_version(PreTokenGenerationLambdaVersionType::from(version.as_str()))
                .build()
        })
        .transpose()
        .map_err(built)?;
    let sms = versioned(config, "CustomSMSSender", what)?
        .map(|(arn, version)| {
            CustomSmsLambdaVersionConfigType::builder()
                .lambda_arn(arn)
                .lambda_version(CustomSmsSenderLambdaVersionType::from(version.as_str()))
                .build()
        })
        .transpose()
        .map_err(built)?;
    let email = versioned(config, "CustomEmailSender", what)?
        .map(|(arn, version)| {
            CustomEmailLambdaVersionConfigType::builder()
                .lambda_arn(arn)
                .lambda_version(CustomEmailSenderLambdaVersionType::from(version.as_str()))
                .build()
        })
        .transpose()
        .map_err(built)?;
    let federation = versioned(config, "InboundFederation", what)?
        .map(|(arn, version)| {
            InboundFederationLambdaType::builder()
                .lambda_arn(arn)
                .lambda_version(InboundFederationLambdaVersionType::from(version.as_str()))
                .build()
        })
        .transpose()
        .map_err(built)?;
    Ok(Some(
        LambdaConfigType::builder()
            .set_pre_sign_up(arn("PreSignUp"))
            .set_custom_message(arn("CustomMessage"))
            .set_post_confirmation(arn("PostConfirmation"))
            .set_pre_authentication(arn("PreAuthentication"))
            .set_post_authentication(arn("PostAuthentication"))
            .set_define_auth_challenge(arn("DefineAuthChallenge"))
            .set_create_auth_challenge(arn("CreateAuthChallenge"))
            .set_verify_auth_challenge_response(arn("VerifyAuthChallengeResponse"))
            .set_pre_token_generation(arn("PreTokenGeneration"))
            .set_user_migration(arn("UserMigration"))
            .set_kms_key_id(arn("KMSKeyID"))
            .set_pre_token_generation_config(pre_token)
            .set_custom_sms_sender(sms)
            .set_custom_email_sender(email)
            .set_inbound_federation(federation)
            .build(),
    ))
}

/// A live `LambdaConfig` in template shape; `None` when no trigger is set (Cognito describes
/// an empty block for every pool).
pub(crate) fn lambda_config_shape(config: &LambdaConfigType) -> Option<Value> {
    let mut shape = Map::new();
    for (name, live) in TRIGGERS {
        put(&mut shape, name, live(config).map(|v| json!(v)));
    }
    let pair = |arn: &str, version: &str| json!({"LambdaArn": arn, "LambdaVersion": version});
    put(
        &mut shape,
        "PreTokenGenerationConfig",
        config
            .pre_token_generation_config()
            .map(|c| pair(c.lambda_arn(), c.lambda_version().as_str())),
    );
    put(
        &mut shape,
        "CustomSMSSender",
        config
            .custom_sms_sender()
            .map(|c| pair(c.lambda_arn(), c.lambda_version().as_str())),
    );
    put(
        &mut shape,
        "CustomEmailSender",
        config
            .custom_email_sender()
            .map(|c| pair(c.lambda_arn(), c.lambda_version().as_str())),
    );
    put(
        &mut shape,
        "InboundFederation",
        config
            .inbound_federation()
            .map(|c| pair(c.lambda_arn(), c.lambda_version().as_str())),
    );
    (!shape.is_empty()).then_some(Value::Object(shape))
}

/// `UserAttributeUpdateSettings` as Cognito's.
pub(crate) fn attribute_update(value: Option<&Value>) -> Option<UserAttributeUpdateSettingsType> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        UserAttributeUpdateSettingsType::builder()
            .set_attributes_require_verification_before_update(
                strings(value.get("AttributesRequireVerificationBeforeUpdate")).map(|a| {
                    a.iter()
                        .map(|a| VerifiedAttributeType::from(a.as_str()))
                        .collect()
                }),
            )
            .build(),
    )
}

/// A live `UserAttributeUpdateSettings` in template shape; `None` when nothing waits for
/// verification (Cognito's default).
pub(crate) fn attribute_update_shape(settings: &UserAttributeUpdateSettingsType) -> Option<Value> {
    let attributes: Vec<&str> = settings
        .attributes_require_verification_before_update()
        .iter()
        .map(VerifiedAttributeType::as_str)
        .collect();
    (!attributes.is_empty())
        .then(|| json!({"AttributesRequireVerificationBeforeUpdate": attributes}))
}

/// `DeviceConfiguration` as Cognito's.
pub(crate) fn device(value: Option<&Value>) -> Option<DeviceConfigurationType> {
    let value = value.filter(|v| v.is_object())?;
    Some(
        DeviceConfigurationType::builder()
            .set_challenge_required_on_new_device(flag(value.get("ChallengeRequiredOnNewDevice")))
            .set_device_only_remembered_on_user_prompt(flag(
                value.get("DeviceOnlyRememberedOnUserPrompt"),
            ))
            .build(),
    )
}

/// A live `DeviceConfiguration` in template shape.
pub(crate) fn device_shape(device: &DeviceConfigurationType) -> Value {
    json!({
        "ChallengeRequiredOnNewDevice": device.challenge_required_on_new_device(),
        "DeviceOnlyRememberedOnUserPrompt": device.device_only_remembered_on_user_prompt(),
    })
}

/// `UserPoolAddOns` as Cognito's; a block without `AdvancedSecurityMode` is refused by name.
pub(crate) fn add_ons(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<UserPoolAddOnsType>, ProviderError> {
    let Some(value) = value.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let flows = value
        .get("AdvancedSecurityAdditionalFlows")
        .filter(|v| v.is_object())
        .map(|f| {
            AdvancedSecurityAdditionalFlowsType::builder()
                .set_custom_auth_mode(
                    string(f.get("CustomAuthMode"))
                        .map(|m| AdvancedSecurityEnabledModeType::from(m.as_str())),
                )
                .build()
        });
    UserPoolAddOnsType::builder()
        .set_advanced_security_mode(
            string(value.get("AdvancedSecurityMode"))
                .map(|m| AdvancedSecurityModeType::from(m.as_str())),
        )
        .set_advanced_security_additional_flows(flows)
        .build()
        .map(Some)
        .map_err(|e| ProviderError::validation(format!("{what}: UserPoolAddOns: {e}")))
}

/// A live `UserPoolAddOns` in template shape; `None` for threat protection off with no
/// additional flow (Cognito's default).
pub(crate) fn add_ons_shape(add_ons: &UserPoolAddOnsType) -> Option<Value> {
    let mode = add_ons.advanced_security_mode().as_str();
    let flows = add_ons
        .advanced_security_additional_flows()
        .and_then(|f| f.custom_auth_mode())
        .map(|m| json!({"CustomAuthMode": m.as_str()}));
    if mode == "OFF" && flows.is_none() {
        return None;
    }
    let mut shape = Map::new();
    shape.insert("AdvancedSecurityMode".into(), json!(mode));
    put(&mut shape, "AdvancedSecurityAdditionalFlows", flows);
    Some(Value::Object(shape))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_block_converts_and_reads_back_as_written() {
        let triggers = json!({
            "PreSignUp": "arn:aws:lambda:us-east-1:123456789012:function:pre",
            "PostConfirmation": "arn:aws:lambda:us-east-1:123456789012:function:post",
            "KMSKeyID": "arn:aws:kms:us-east-1:123456789012:key/k",
            "PreTokenGenerationConfig": {"LambdaArn": "arn:aws:lambda:us-east-1:123456789012:function:tok", "LambdaVersion": "V2_0"},
            "CustomEmailSender": {"LambdaArn": "arn:aws:lambda:us-east-1:123456789012:function:mail", "LambdaVersion": "V1_0"},
        });
        let config = lambda_config(Some(&triggers), "P").unwrap().unwrap();
        assert_eq!(
            config.pre_sign_up(),
            Some("arn:aws:lambda:us-east-1:123456789012:function:pre")
        );
        assert_eq!(lambda_config_shape(&config), Some(triggers));
        assert_eq!(
            lambda_config_shape(&LambdaConfigType::builder().build()),
            None
        );
        let half = json!({"CustomSMSSender": {"LambdaArn": "a"}});
        assert!(lambda_config(Some(&half), "P")
            .unwrap_err()
            .message
            .contains("LambdaConfig.CustomSMSSender"));

        let update = json!({"AttributesRequireVerificationBeforeUpdate": ["email"]});
        let settings = attribute_update(Some(&update)).unwrap();
        assert_eq!(attribute_update_shape(&settings), Some(update));

        let remembered = json!({"ChallengeRequiredOnNewDevice": true, "DeviceOnlyRememberedOnUserPrompt": false});
        assert_eq!(
            device_shape(&device(Some(&remembered)).unwrap()),
            remembered
        );

        let threat = json!({"AdvancedSecurityMode": "ENFORCED",
            "AdvancedSecurityAdditionalFlows": {"CustomAuthMode": "AUDIT"}});
        let built = add_ons(Some(&threat), "P").unwrap().unwrap();
        assert_eq!(add_ons_shape(&built), Some(threat));
        let off = add_ons(Some(&json!({"AdvancedSecurityMode": "OFF"})), "P")
            .unwrap()
            .unwrap();
        assert_eq!(add_ons_shape(&off), None);
        assert!(add_ons(Some(&json!({})), "P")
            .unwrap_err()
            .message
            .contains("UserPoolAddOns"));
    }
}
