//! Listener and rule actions (`DefaultActions`, `Actions`): forward, redirect, fixed-response,
//! authenticate-oidc and authenticate-cognito, from template shape to the SDK's and back.

use std::collections::HashMap;

use aws_sdk_elasticloadbalancingv2::types::{
    Action, AuthenticateCognitoActionConfig, AuthenticateOidcActionConfig,
    FixedResponseActionConfig, ForwardActionConfig, RedirectActionConfig,
    TargetGroupStickinessConfig, TargetGroupTuple,
};
use cdkd_aws_common::{flag, int, put, string, text};
use cdkd_provider_api::ProviderError;
use serde_json::{json, Map, Value};

use crate::only_keys;

const ACTION_KEYS: &[&str] = &[
    "Type",
    "Order",
    "TargetGroupArn",
    "ForwardConfig",
    "RedirectConfig",
    "FixedResponseConfig",
    "AuthenticateOidcConfig",
    "AuthenticateCognitoConfig",
];

/// A template string map (`AuthenticationRequestExtraParams`).
fn string_map(value: Option<&Value>) -> Option<HashMap<String, String>> {
    value?.as_object().map(|map| {
        map.iter()
            .filter_map(|(k, v)| text(Some(v)).map(|v| (k.clone(), v)))
            .collect()
    })
}

fn forward(value: &Value, what: &str) -> Result<ForwardActionConfig, ProviderError> {
    only_keys(
        value,
        &["TargetGroups", "TargetGroupStickinessConfig"],
        what,
    )?;
    let groups = value
        .get("TargetGroups")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|g| {
            TargetGroupTuple::builder()
                .set_target_group_arn(string(g.get("TargetGroupArn")))
                .set_weight(int(g.get("Weight")))
                .build()
        })
        .collect();
    let stickiness = value.get("TargetGroupStickinessConfig").map(|s| {
        TargetGroupStickinessConfig::builder()
            .set_enabled(flag(s.get("Enabled")))
            .set_duration_seconds(int(s.get("DurationSeconds")))
            .build()
    });
    Ok(ForwardActionConfig::builder()
        .set_target_groups(Some(groups))
        .set_target_group_stickiness_config(stickiness)
        .build())
}

fn oidc(value: &Value) -> AuthenticateOidcActionConfig {
    AuthenticateOidcActionConfig::builder()
        .set_issuer(text(value.get("Issuer")))
        .set_authorization_endpoint(text(value.get("AuthorizationEndpoint")))
        .set_token_endpoint(text(value.get("TokenEndpoint")))
        .set_user_info_endpoint(text(value.get("UserInfoEndpoint")))
        .set_client_id(text(value.get("ClientId")))
        .set_client_secret(text(value.get("ClientSecret")))
        .set_session_cookie_name(text(value.get("SessionCookieName")))
        .set_scope(text(value.get("Scope")))
        .set_session_timeout(int(value.get("SessionTimeout")).map(i64::from))
        .set_authentication_request_extra_params(string_map(
            value.get("AuthenticationRequestExtraParams"),
        ))
        .set_on_unauthenticated_request(
            text(value.get("OnUnauthenticatedRequest")).map(|b| b.as_str().into()),
        )
        .set_use_existing_client_secret(flag(value.get("UseExistingClientSecret")))
        .build()
}

fn cognito(value: &Value) -> AuthenticateCognitoActionConfig {
    AuthenticateCognitoActionConfig::builder()
        .set_user_pool_arn(text(value.get("UserPoolArn")))
        .set_user_pool_client_id(text(value.get("UserPoolClientId")))
        .set_user_pool_domain(text(value.get("UserPoolDomain")))
        .set_session_cookie_name(text(value.get("SessionCookieName")))
        .set_scope(text(value.get("Scope")))
        .set_session_timeout(int(value.get("SessionTimeout")).map(i64::from))
        .set_authentication_request_extra_params(string_map(
            value.get("AuthenticationRequestExtraParams"),
        ))
        .set_on_unauthenticated_request(
            text(value.get("OnUnauthenticatedRequest")).map(|b| b.as_str().into()),
        )
        .build()
}

/// One template action as the SDK's; a key the plugin does not apply is refused.
pub(crate) fn action(value: &Value, what: &str) -> Result<Action, ProviderError> {
    only_keys(value, ACTION_KEYS, what)?;
    let kind = text(value.get("Type"))
        .ok_or_else(|| ProviderError::validation(format!("{what}: an action has no Type")))?;
    let forward_config = match value.get("ForwardConfig") {
        Some(config) => Some(forward(config, &format!("{what}: ForwardConfig"))?),
        None => None,
    };
    Ok(Action::builder()
        .r#type(kind.as_str().into())
        .set_order(int(value.get("Order")))
        .set_target_group_arn(text(value.get("TargetGroupArn")))
        .set_forward_config(forward_config)
        .set_redirect_config(value.get("RedirectConfig").map(|r| {
            RedirectActionConfig::builder()
                .set_protocol(text(r.get("Protocol")))
                .set_port(text(r.get("Port")))
                .set_host(text(r.get("Host")))
                .set_path(text(r.get("Path")))
                .set_query(text(r.get("Query")))
                .set_status_code(text(r.get("StatusCode")).map(|s| s.as_str().into()))
                .build()
        }))
        .set_fixed_response_config(value.get("FixedResponseConfig").map(|f| {
            FixedResponseActionConfig::builder()
                .set_status_code(text(f.get("StatusCode")))
                .set_content_type(text(f.get("ContentType")))
                .set_message_body(text(f.get("MessageBody")))
                .build()
        }))
        .set_authenticate_oidc_config(value.get("AuthenticateOidcConfig").map(oidc))
        .set_authenticate_cognito_config(value.get("AuthenticateCognitoConfig").map(cognito))
        .build())
}

/// A template list of actions as the SDK's.
pub(crate) fn actions(value: Option<&Value>, what: &str) -> Result<Vec<Action>, ProviderError> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|a| action(a, what))
        .collect()
}

fn extra_params(map: Option<&HashMap<String, String>>) -> Option<Value> {
    map.filter(|m| !m.is_empty()).map(|m| {
        let sorted: std::collections::BTreeMap<_, _> = m.iter().collect();
        json!(sorted)
    })
}

/// A live action in template shape. A forward to one group answered with both
/// `TargetGroupArn` and the `ForwardConfig` AWS fills in keeps only the former, as templates
/// write it; the OIDC client secret is never read back.
pub(crate) fn action_shape(action: &Action) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "Type",
        action.r#type().map(|t| json!(t.as_str())),
    );
    put(&mut shape, "Order", action.order().map(Value::from));
    put(
        &mut shape,
        "TargetGroupArn",
        action.target_group_arn().map(Value::from),
    );
    if let Some(config) = action.forward_config() {
        let single = action.target_group_arn().is_some()
            && config.target_groups().len() <= 1
            && config
                .target_group_stickiness_config()
                .is_none_or(|s| s.enabled() != Some(true));
        if !single {
            let mut forward = Map::new();
            forward.insert(
                "TargetGroups".into(),
                Value::Array(
                    config
                        .target_groups()
                        .iter()
                        .map(|g| {
                            let mut group = Map::new();
                            put(
                                &mut group,
                                "TargetGroupArn",
                                g.target_group_arn().map(Value::from),
                            );
                            put(&mut group, "Weight", g.weight().map(Value::from));
                            Value::Object(group)
                        })
                        .collect(),
                ),
            );
            if let Some(s) = config.target_group_stickiness_config() {
                let mut sticky = Map::new();
                put(&mut sticky, "Enabled", s.enabled().map(Value::from));
                put(
                    &mut sticky,
                    "DurationSeconds",
                    s.duration_seconds().map(Value::from),
                );
                forward.insert("TargetGroupStickinessConfig".into(), Value::Object(sticky));
            }
            shape.insert("ForwardConfig".into(), Value::Object(forward));
        }
    }
    if let Some(r) = action.redirect_config() {
        let mut redirect = Map::new();
        put(&mut redirect, "Protocol", r.protocol().map(Value::from));
        put(&mut redirect, "Port", r.port().map(Value::from));
        put(&mut redirect, "Host", r.host().map(Value::from));
        put(&mut redirect, "Path", r.path().map(Value::from));
        put(&mut redirect, "Query", r.query().map(Value::from));
        put(
            &mut redirect,
            "StatusCode",
            r.status_code().map(|s| json!(s.as_str())),
        );
        shape.insert("RedirectConfig".into(), Value::Object(redirect));
    }
    if let Some(f) = action.fixed_response_config() {
        let mut fixed = Map::new();
        put(&mut fixed, "StatusCode", f.status_code().map(Value::from));
        put(&mut fixed, "ContentType", f.content_type().map(Value::from));
        put(&mut fixed, "MessageBody", f.message_body().map(Value::from));
        shape.insert("FixedResponseConfig".into(), Value::Object(fixed));
    }
    put(
        &mut shape,
        "AuthenticateOidcConfig",
        action.authenticate_oidc_config().map(oidc_shape),
    );
    put(
        &mut shape,
        "AuthenticateCognitoConfig",
        action.authenticate_cognito_config().map(cognito_shape),
    );
    Value::Object(shape)
}

/// An action's `AuthenticateOidcConfig` in template shape (never the client secret).
fn oidc_shape(o: &aws_sdk_elasticloadbalancingv2::types::AuthenticateOidcActionConfig) -> Value {
    let mut oidc = Map::new();
    put(&mut oidc, "Issuer", o.issuer().map(Value::from));
    put(
        &mut oidc,
        "AuthorizationEndpoint",
        o.authorization_endpoint().map(Value::from),
    );
    put(
        &mut oidc,
        "TokenEndpoint",
        o.token_endpoint().map(Value::from),
    );
    put(
        &mut oidc,
        "UserInfoEndpoint",
        o.user_info_endpoint().map(Value::from),
    );
    put(&mut oidc, "ClientId", o.client_id().map(Value::from));
    put(
        &mut oidc,
        "SessionCookieName",
        o.session_cookie_name().map(Value::from),
    );
    put(&mut oidc, "Scope", o.scope().map(Value::from));
    put(
        &mut oidc,
        "SessionTimeout",
        o.session_timeout().map(Value::from),
    );
    put(
        &mut oidc,
        "AuthenticationRequestExtraParams",
        extra_params(o.authentication_request_extra_params()),
    );
    put(
        &mut oidc,
        "OnUnauthenticatedRequest",
        o.on_unauthenticated_request().map(|b| json!(b.as_str())),
    );
    Value::Object(oidc)
}

/// An action's `AuthenticateCognitoConfig` in template shape.
fn cognito_shape(
    c: &aws_sdk_elasticloadbalancingv2::types::AuthenticateCognitoActionConfig,
) -> Value {
    let mut cognito = Map::new();
    put(
        &mut cognito,
        "UserPoolArn",
        c.user_pool_arn().map(Value::from),
    );
    put(
        &mut cognito,
        "UserPoolClientId",
        c.user_pool_client_id().map(Value::from),
    );
    put(
        &mut cognito,
        "UserPoolDomain",
        c.user_pool_domain().map(Value::from),
    );
    put(
        &mut cognito,
        "SessionCookieName",
        c.session_cookie_name().map(Value::from),
    );
    put(&mut cognito, "Scope", c.scope().map(Value::from));
    put(
        &mut cognito,
        "SessionTimeout",
        c.session_timeout().map(Value::from),
    );
    put(
        &mut cognito,
        "AuthenticationRequestExtraParams",
        extra_params(c.authentication_request_extra_params()),
    );
    put(
        &mut cognito,
        "OnUnauthenticatedRequest",
        c.on_unauthenticated_request().map(|b| json!(b.as_str())),
    );
    Value::Object(cognito)
}

/// Live actions in template shape, in their order.
pub(crate) fn actions_shape(actions: &[Action]) -> Value {
    let mut sorted: Vec<&Action> = actions.iter().collect();
    sorted.sort_by_key(|a| a.order().unwrap_or(i32::MAX));
    Value::Array(sorted.into_iter().map(action_shape).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_type_travels_both_ways() {
        let template = json!([
            {"Type": "fixed-response", "Order": 1,
             "FixedResponseConfig": {"StatusCode": "404", "ContentType": "text/plain", "MessageBody": "no"}},
            {"Type": "redirect", "Order": 2,
             "RedirectConfig": {"Protocol": "HTTPS", "Port": "443", "StatusCode": "HTTP_301"}},
            {"Type": "forward", "Order": 3, "ForwardConfig": {
                "TargetGroups": [{"TargetGroupArn": "tg1", "Weight": 1}, {"TargetGroupArn": "tg2", "Weight": 3}],
                "TargetGroupStickinessConfig": {"Enabled": true, "DurationSeconds": 60}}},
            {"Type": "authenticate-cognito", "Order": 4, "AuthenticateCognitoConfig": {
                "UserPoolArn": "up", "UserPoolClientId": "c", "UserPoolDomain": "d",
                "OnUnauthenticatedRequest": "deny", "SessionTimeout": "600"}},
            {"Type": "authenticate-oidc", "Order": 5, "AuthenticateOidcConfig": {
                "Issuer": "i", "AuthorizationEndpoint": "a", "TokenEndpoint": "t",
                "UserInfoEndpoint": "u", "ClientId": "c", "ClientSecret": "s",
                "AuthenticationRequestExtraParams": {"p": "v"}}},
        ]);
        let sdk = actions(Some(&template), "w").unwrap();
        assert_eq!(
            sdk[3]
                .authenticate_cognito_config()
                .unwrap()
                .session_timeout(),
            Some(600)
        );
        assert_eq!(
            sdk[4].authenticate_oidc_config().unwrap().client_secret(),
            Some("s")
        );
        let back = actions_shape(&sdk);
        let mut expected = template.clone();
        expected[3]["AuthenticateCognitoConfig"]["SessionTimeout"] = json!(600);
        expected[4]["AuthenticateOidcConfig"]
            .as_object_mut()
            .unwrap()
            .remove("ClientSecret");
        assert_eq!(back, expected);
    }

    #[test]
    fn a_plain_forward_reads_back_as_the_template_writes_it() {
        let live = Action::builder()
            .r#type("forward".into())
            .target_group_arn("tg1")
            .forward_config(
                ForwardActionConfig::builder()
                    .target_groups(
                        TargetGroupTuple::builder()
                            .target_group_arn("tg1")
                            .weight(1)
                            .build(),
                    )
                    .target_group_stickiness_config(
                        TargetGroupStickinessConfig::builder()
                            .enabled(false)
                            .build(),
                    )
                    .build(),
            )
            .build();
        assert_eq!(
            action_shape(&live),
            json!({"Type": "forward", "TargetGroupArn": "tg1"})
        );
    }

    #[test]
    fn unknown_action_keys_are_refused_by_name() {
        let err = action(
            &json!({"Type": "jwt-validation", "JwtValidationConfig": {}}),
            "L",
        )
        .unwrap_err();
        assert!(
            err.message.contains("JwtValidationConfig"),
            "{}",
            err.message
        );
        let err = action(&json!({"Order": 1}), "L").unwrap_err();
        assert!(err.message.contains("Type"));
    }
}
