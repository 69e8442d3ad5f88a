//! `AWS::Cognito::UserPoolClient`: physical id `UserPoolId|ClientId` (`Ref` is the client id);
//! attributes `ClientId`, `Name` and `ClientSecret`, the last declared sensitive so the host
//! never writes it in plaintext. Cognito's `UpdateUserPoolClient` resets every setting it is
//! not given, so an update sends the whole template again. The run after a crash finds the
//! client by its name within its pool.

use aws_sdk_cognitoidentityprovider::types::{
    ExplicitAuthFlowsType, OAuthFlowType, PreventUserExistenceErrorTypes, TimeUnitsType,
    TokenValidityUnitsType, UserPoolClientType,
};
use cdkd_aws_common::{
    deleted_unless_failed, does_not_exist, flag, found, generated_name, int, put, string, strings,
    Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, RefValue, ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{failed, idp};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Cognito::UserPoolClient";

/// The longest client name Cognito takes.
const MAX_NAME: usize = 128;

/// The `AWS::Cognito::UserPoolClient` provider.
#[derive(Default)]
pub struct UserPoolClient;

/// A client's physical id `UserPoolId|ClientId`; a bare client id (an import given only it)
/// takes its pool from the template's `UserPoolId`.
fn split<'a>(
    physical_id: &'a str,
    properties: &'a Map<String, Value>,
    what: &str,
) -> Result<(&'a str, &'a str), ProviderError> {
    if let Some(pair) = physical_id.split_once('|') {
        return Ok(pair);
    }
    match properties.get("UserPoolId").and_then(Value::as_str) {
        Some(pool) => Ok((pool, physical_id)),
        None => Err(ProviderError::validation(format!(
            "{what}: physical id {physical_id} is not UserPoolId|ClientId and the template gives no UserPoolId"
        ))),
    }
}

/// The name a create with `token` gives the client: the template's, else CloudFormation's shape.
fn client_name(
    properties: &Map<String, Value>,
    stack: &str,
    logical_id: &str,
    token: &str,
) -> String {
    string(properties.get("ClientName"))
        .unwrap_or_else(|| generated_name(stack, logical_id, token, MAX_NAME, false, ""))
}

/// `TokenValidityUnits` as Cognito's.
fn units(value: Option<&Value>) -> Option<TokenValidityUnitsType> {
    let value = value.filter(|v| v.is_object())?;
    let unit = |key: &str| string(value.get(key)).map(|u| TimeUnitsType::from(u.as_str()));
    Some(
        TokenValidityUnitsType::builder()
            .set_access_token(unit("AccessToken"))
            .set_id_token(unit("IdToken"))
            .set_refresh_token(unit("RefreshToken"))
            .build(),
    )
}

/// The settings both the create and the update send, from a template.
macro_rules! settings {
    ($call:expr, $props:expr) => {{
        let props = $props;
        $call
            .set_refresh_token_validity(int(props.get("RefreshTokenValidity")))
            .set_access_token_validity(int(props.get("AccessTokenValidity")))
            .set_id_token_validity(int(props.get("IdTokenValidity")))
            .set_auth_session_validity(int(props.get("AuthSessionValidity")))
            .set_token_validity_units(units(props.get("TokenValidityUnits")))
            .set_read_attributes(strings(props.get("ReadAttributes")))
            .set_write_attributes(strings(props.get("WriteAttributes")))
            .set_explicit_auth_flows(strings(props.get("ExplicitAuthFlows")).map(|f| {
                f.iter()
                    .map(|f| ExplicitAuthFlowsType::from(f.as_str()))
                    .collect()
            }))
            .set_supported_identity_providers(strings(props.get("SupportedIdentityProviders")))
            .set_callback_urls(strings(props.get("CallbackURLs")))
            .set_logout_urls(strings(props.get("LogoutURLs")))
            .set_default_redirect_uri(string(props.get("DefaultRedirectURI")))
            .set_allowed_o_auth_flows(
                strings(props.get("AllowedOAuthFlows"))
                    .map(|f| f.iter().map(|f| OAuthFlowType::from(f.as_str())).collect()),
            )
            .set_allowed_o_auth_scopes(strings(props.get("AllowedOAuthScopes")))
            .set_allowed_o_auth_flows_user_pool_client(flag(
                props.get("AllowedOAuthFlowsUserPoolClient"),
            ))
            .set_prevent_user_existence_errors(
                string(props.get("PreventUserExistenceErrors"))
                    .map(|p| PreventUserExistenceErrorTypes::from(p.as_str())),
            )
            .set_enable_token_revocation(flag(props.get("EnableTokenRevocation")))
            .set_enable_propagate_additional_user_context_data(flag(
                props.get("EnablePropagateAdditionalUserContextData"),
            ))
    }};
}

/// `ClientId`, `Name` and (when the client has one) `ClientSecret` of a described client.
fn attributes_of(client: &UserPoolClientType) -> Map<String, Value> {
    let mut attributes = Map::new();
    put(
        &mut attributes,
        "ClientId",
        client.client_id().map(Value::from),
    );
    put(
        &mut attributes,
        "Name",
        client.client_name().map(Value::from),
    );
    put(
        &mut attributes,
        "ClientSecret",
        client.client_secret().map(Value::from),
    );
    attributes
}

/// The live client's settings in template shape; its secret never among them.
fn template_shape(client: &UserPoolClientType) -> Map<String, Value> {
    let mut props = Map::new();
    put(
        &mut props,
        "UserPoolId",
        client.user_pool_id().map(Value::from),
    );
    put(
        &mut props,
        "ClientName",
        client.client_name().map(Value::from),
    );
    props.insert(
        "GenerateSecret".into(),
        json!(client.client_secret().is_some()),
    );
    for (key, value) in [
        (
            "RefreshTokenValidity",
            Some(client.refresh_token_validity()).filter(|v| *v != 0),
        ),
        ("AccessTokenValidity", client.access_token_validity()),
        ("IdTokenValidity", client.id_token_validity()),
        ("AuthSessionValidity", client.auth_session_validity()),
    ] {
        put(&mut props, key, value.map(Value::from));
    }
    put(
        &mut props,
        "TokenValidityUnits",
        client.token_validity_units().map(token_validity_units),
    );
    let list = |items: Vec<&str>| (!items.is_empty()).then(|| json!(items));
    put(
        &mut props,
        "ReadAttributes",
        list(
            client
                .read_attributes()
                .iter()
                .map(String::as_str)
                .collect(),
        ),
    );
    put(
        &mut props,
        "WriteAttributes",
        list(
            client
                .write_attributes()
                .iter()
                .map(String::as_str)
                .collect(),
        ),
    );
    put(
        &mut props,
        "ExplicitAuthFlows",
        list(
            client
                .explicit_auth_flows()
                .iter()
                .map(|f| f.as_str())
                .collect(),
        ),
    );
    put(
        &mut props,
        "SupportedIdentityProviders",
        list(
            client
                .supported_identity_providers()
                .iter()
                .map(String::as_str)
                .collect(),
        ),
    );
    put(
        &mut props,
        "CallbackURLs",
        list(client.callback_urls().iter().map(String::as_str).collect()),
    );
    put(
        &mut props,
        "LogoutURLs",
        list(client.logout_urls().iter().map(String::as_str).collect()),
    );
    put(
        &mut props,
        "DefaultRedirectURI",
        client.default_redirect_uri().map(Value::from),
    );
    put(
        &mut props,
        "AllowedOAuthFlows",
        list(
            client
                .allowed_o_auth_flows()
                .iter()
                .map(|f| f.as_str())
                .collect(),
        ),
    );
    put(
        &mut props,
        "AllowedOAuthScopes",
        list(
            client
                .allowed_o_auth_scopes()
                .iter()
                .map(String::as_str)
                .collect(),
        ),
    );
    put(
        &mut props,
        "AllowedOAuthFlowsUserPoolClient",
        client
            .allowed_o_auth_flows_user_pool_client()
            .map(Value::from),
    );
    put(
        &mut props,
        "PreventUserExistenceErrors",
        client
            .prevent_user_existence_errors()
            .map(|p| json!(p.as_str())),
    );
    put(
        &mut props,
        "EnableTokenRevocation",
        client.enable_token_revocation().map(Value::from),
    );
    put(
        &mut props,
        "EnablePropagateAdditionalUserContextData",
        client
            .enable_propagate_additional_user_context_data()
            .map(Value::from),
    );
    props
}

/// `TokenValidityUnits` in template shape.
fn token_validity_units(
    u: &aws_sdk_cognitoidentityprovider::types::TokenValidityUnitsType,
) -> Value {
    let mut shape = Map::new();
    put(
        &mut shape,
        "AccessToken",
        u.access_token().map(|t| json!(t.as_str())),
    );
    put(
        &mut shape,
        "IdToken",
        u.id_token().map(|t| json!(t.as_str())),
    );
    put(
        &mut shape,
        "RefreshToken",
        u.refresh_token().map(|t| json!(t.as_str())),
    );
    Value::Object(shape)
}

/// The client `id` of `pool`; `None` when it (or its pool) does not exist.
async fn describe(
    cognito: &aws_sdk_cognitoidentityprovider::Client,
    what: &str,
    pool: &str,
    id: &str,
) -> Result<Option<UserPoolClientType>, ProviderError> {
    let answer = found(
        cognito
            .describe_user_pool_client()
            .user_pool_id(pool)
            .client_id(id)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: DescribeUserPoolClient {id} in {pool}"
            ))),
    )?;
    Ok(answer.and_then(|a| a.user_pool_client().cloned()))
}

#[async_trait]
impl ResourceProvider for UserPoolClient {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "UserPoolId",
                "ClientName",
                "GenerateSecret",
                "RefreshTokenValidity",
                "AccessTokenValidity",
                "IdTokenValidity",
                "AuthSessionValidity",
                "TokenValidityUnits",
                "ReadAttributes",
                "WriteAttributes",
                "ExplicitAuthFlows",
                "SupportedIdentityProviders",
                "CallbackURLs",
                "LogoutURLs",
                "DefaultRedirectURI",
                "AllowedOAuthFlows",
                "AllowedOAuthScopes",
                "AllowedOAuthFlowsUserPoolClient",
                "PreventUserExistenceErrors",
                "EnableTokenRevocation",
                "EnablePropagateAdditionalUserContextData",
            ])
            .create_only(&["UserPoolId", "GenerateSecret"])
            .read_and_import()
            .composite_id(&["UserPoolId", "ClientId"], &[&["UserPoolId"], &[]])
            .ref_value(RefValue::Segment(1))
            .sensitive(&["ClientSecret"])
            .finds_created_in(&["UserPoolId", "ClientName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let props = &request.properties;
        let pool = cdkd_aws_common::require_str(props, "UserPoolId", &what)?;
        let name = client_name(
            props,
            &request.stack_name,
            &request.logical_id,
            &request.client_token,
        );
        let cognito = idp(ctx).await?;
        let call = cognito
            .create_user_pool_client()
            .user_pool_id(pool)
            .client_name(&name)
            .set_generate_secret(flag(props.get("GenerateSecret")));
        let created = settings!(call, props)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: CreateUserPoolClient {name} in {pool}"
            )))?;
        let client = created.user_pool_client().cloned().ok_or_else(|| {
            ProviderError::other(format!("{what}: CreateUserPoolClient returned no client"))
        })?;
        Ok(CreateResult {
            physical_id: format!("{pool}|{}", client.client_id().unwrap_or_default()),
            attributes: attributes_of(&client),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let after = &request.properties;
        let (pool, id) = split(&request.physical_id, after, &what)?;
        let cognito = idp(ctx).await?;
        // UpdateUserPoolClient resets what it is not given: the whole template goes, and the
        // name stays the one the create gave when the template names none.
        let name = match string(after.get("ClientName")) {
            Some(name) => name,
            None => describe(&cognito, &what, pool, id)
                .await?
                .and_then(|c| c.client_name().map(ToString::to_string))
                .ok_or_else(|| does_not_exist(&what, &request.physical_id, "Cognito"))?,
        };
        let call = cognito
            .update_user_pool_client()
            .user_pool_id(pool)
            .client_id(id)
            .client_name(name);
        let updated = settings!(call, after)
            .send()
            .await
            .map_err(failed!(format!(
                "{what}: UpdateUserPoolClient {id} in {pool}"
            )))?;
        let client = updated.user_pool_client().cloned().ok_or_else(|| {
            ProviderError::other(format!("{what}: UpdateUserPoolClient returned no client"))
        })?;
        Ok(UpdateResult {
            physical_id: request.physical_id.clone(),
            attributes: attributes_of(&client),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (pool, id) = split(&request.physical_id, &request.properties, &what)?;
        deleted_unless_failed(
            idp(ctx)
                .await?
                .delete_user_pool_client()
                .user_pool_id(pool)
                .client_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!(
                    "{what}: DeleteUserPoolClient {id} in {pool}"
                ))),
        )
    }
}

#[async_trait]
impl Readable for UserPoolClient {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (pool, id) = split(&request.physical_id, &request.properties, what)?;
        let cognito = idp(ctx).await?;
        Ok(describe(&cognito, what, pool, id)
            .await?
            .as_ref()
            .map(template_shape))
    }

    async fn attributes(
        &self,
        ctx: &PluginContext,
        what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        let Some((pool, id)) = physical_id.split_once('|') else {
            return Ok(Map::new());
        };
        let cognito = idp(ctx).await?;
        let client = describe(&cognito, what, pool, id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "Cognito"))?;
        Ok(attributes_of(&client))
    }

    /// The client named as the create named it in its pool; more than one is refused.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let Some(pool) = string(request.properties.get("UserPoolId")) else {
            return Ok(None);
        };
        if request.token.is_empty() && string(request.properties.get("ClientName")).is_none() {
            return Ok(None);
        }
        let name = client_name(
            &request.properties,
            &request.stack_name,
            &request.logical_id,
            &request.token,
        );
        let cognito = idp(ctx).await?;
        let mut ids = Vec::new();
        let mut next: Option<String> = None;
        loop {
            let Some(page) = found(
                cognito
                    .list_user_pool_clients()
                    .user_pool_id(&pool)
                    .max_results(60)
                    .set_next_token(next.take())
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: ListUserPoolClients in {pool}"))),
            )?
            else {
                return Ok(None);
            };
            ids.extend(
                page.user_pool_clients()
                    .iter()
                    .filter(|c| c.client_name() == Some(name.as_str()))
                    .filter_map(|c| c.client_id().map(ToString::to_string)),
            );
            match page.next_token() {
                Some(t) if !t.is_empty() => next = Some(t.to_string()),
                _ => break,
            }
        }
        if ids.len() > 1 {
            return Err(ProviderError::new(
                ErrorKind::CONFLICT,
                format!(
                    "{what}: {} clients of user pool {pool} are named {name}: {}; cdkd cannot tell which one its create made (delete the extra ones, or import the right one)",
                    ids.len(),
                    ids.join(", ")
                ),
            ));
        }
        Ok(ids.pop().map(|id| format!("{pool}|{id}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn an_id_splits_and_a_bare_one_takes_the_template_pool() {
        let template = props(json!({"UserPoolId": "us-east-1_p"}));
        assert_eq!(
            split("us-east-1_p|c1", &Map::new(), "w").unwrap(),
            ("us-east-1_p", "c1")
        );
        assert_eq!(split("c1", &template, "w").unwrap(), ("us-east-1_p", "c1"));
        let err = split("c1", &Map::new(), "AWS::Cognito::UserPoolClient C").unwrap_err();
        assert!(
            err.message.contains("UserPoolId|ClientId"),
            "{}",
            err.message
        );
    }

    #[test]
    fn the_secret_is_an_attribute_never_a_property() {
        let client = UserPoolClientType::builder()
            .user_pool_id("p")
            .client_id("c1")
            .client_name("web")
            .client_secret("s3cr3t")
            .explicit_auth_flows(ExplicitAuthFlowsType::AllowUserSrpAuth)
            .token_validity_units(units(Some(&json!({"IdToken": "minutes"}))).unwrap())
            .build();
        let shape = template_shape(&client);
        assert!(!Value::Object(shape.clone()).to_string().contains("s3cr3t"));
        assert_eq!(shape["GenerateSecret"], json!(true));
        assert_eq!(shape["ExplicitAuthFlows"], json!(["ALLOW_USER_SRP_AUTH"]));
        assert_eq!(shape["TokenValidityUnits"], json!({"IdToken": "minutes"}));
        assert_eq!(attributes_of(&client)["ClientSecret"], json!("s3cr3t"));
        assert_eq!(
            UserPoolClient.schema().sensitive_attributes,
            vec!["ClientSecret".to_string()]
        );
    }

    #[test]
    fn a_generated_name_is_fixed_by_the_token() {
        let a = client_name(&Map::new(), "Shop", "Client1", "t1");
        assert_eq!(a, client_name(&Map::new(), "Shop", "Client1", "t1"));
        assert!(a.starts_with("Shop-Client1-"), "{a}");
        let given = props(json!({"ClientName": "web"}));
        assert_eq!(client_name(&given, "Shop", "Client1", "t1"), "web");
    }
}
