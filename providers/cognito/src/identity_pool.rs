//! `AWS::Cognito::IdentityPool`: physical id (and `Ref`) is the pool's id; attributes `Id` and
//! `Name`. Its create carries cdkd's create-token tag in `IdentityPoolTags`, so the run after a
//! crash finds it among the pools of its name by that tag. `UpdateIdentityPool` replaces the
//! whole pool's settings, so an update sends the whole template (and the token tag) again.

use std::collections::HashMap;

use aws_sdk_cognitoidentity::operation::describe_identity_pool::DescribeIdentityPoolOutput;
use aws_sdk_cognitoidentity::types::CognitoIdentityProvider;
use cdkd_aws_common::{
    all_pages, carries_token, deleted_unless_failed, does_not_exist, flag, found, generated_name,
    one_tagged, put, string, strings, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, FindCreatedRequest,
    ReadCurrentStateRequest, ResourceTypeSchema, UpdateRequest, UpdateResult, CREATE_TOKEN_TAG,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{created_pool_name, failed, live_tags, sent_tags, template_tags};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Cognito::IdentityPool";

/// The longest identity pool name Cognito takes.
const MAX_NAME: usize = 128;

/// The `AWS::Cognito::IdentityPool` provider.
#[derive(Default)]
pub struct IdentityPool;

/// A Cognito identity client for the host's endpoint and credentials.
async fn client(ctx: &PluginContext) -> Result<aws_sdk_cognitoidentity::Client, ProviderError> {
    let config =
        aws_sdk_cognitoidentity::config::Builder::from(&cdkd_aws_common::sdk_config(ctx).await?)
            .retry_partition(cdkd_aws_common::retry_partition("cdkd-cognito-identity"))
            .build();
    Ok(aws_sdk_cognitoidentity::Client::from_conf(config))
}

/// The name a create with `token` gives the pool: the template's, else CloudFormation's shape
/// with `_` for `-` (an identity pool name takes letters, digits, spaces and `_` only).
fn pool_name(
    properties: &Map<String, Value>,
    stack: &str,
    logical_id: &str,
    token: &str,
) -> String {
    string(properties.get("IdentityPoolName")).unwrap_or_else(|| {
        generated_name(stack, logical_id, token, MAX_NAME, false, "")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect()
    })
}

/// A `{key: value}` template map as strings.
fn string_map(value: Option<&Value>) -> Option<HashMap<String, String>> {
    value?.as_object().map(|m| {
        m.iter()
            .filter_map(|(k, v)| Some((k.clone(), cdkd_aws_common::text(Some(v))?)))
            .collect()
    })
}

/// `CognitoIdentityProviders` as Cognito's.
fn providers(value: Option<&Value>) -> Option<Vec<CognitoIdentityProvider>> {
    value?.as_array().map(|items| {
        items
            .iter()
            .map(|p| {
                CognitoIdentityProvider::builder()
                    .set_client_id(string(p.get("ClientId")))
                    .set_provider_name(string(p.get("ProviderName")))
                    .set_server_side_token_check(flag(p.get("ServerSideTokenCheck")))
                    .build()
            })
            .collect()
    })
}

/// The live pool in template shape.
fn template_shape(pool: &DescribeIdentityPoolOutput) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("IdentityPoolName".into(), json!(pool.identity_pool_name()));
    props.insert(
        "AllowUnauthenticatedIdentities".into(),
        json!(pool.allow_unauthenticated_identities()),
    );
    put(
        &mut props,
        "AllowClassicFlow",
        pool.allow_classic_flow().map(Value::from),
    );
    put(
        &mut props,
        "SupportedLoginProviders",
        pool.supported_login_providers()
            .filter(|m| !m.is_empty())
            .map(|m| json!(m)),
    );
    put(
        &mut props,
        "DeveloperProviderName",
        pool.developer_provider_name().map(Value::from),
    );
    let list = |items: &[String]| (!items.is_empty()).then(|| json!(items));
    put(
        &mut props,
        "OpenIdConnectProviderARNs",
        list(pool.open_id_connect_provider_arns()),
    );
    put(
        &mut props,
        "SamlProviderARNs",
        list(pool.saml_provider_arns()),
    );
    let idps: Vec<Value> = pool
        .cognito_identity_providers()
        .iter()
        .map(|p| {
            let mut shape = Map::new();
            put(&mut shape, "ClientId", p.client_id().map(Value::from));
            put(
                &mut shape,
                "ProviderName",
                p.provider_name().map(Value::from),
            );
            put(
                &mut shape,
                "ServerSideTokenCheck",
                p.server_side_token_check().map(Value::from),
            );
            Value::Object(shape)
        })
        .collect();
    if !idps.is_empty() {
        props.insert("CognitoIdentityProviders".into(), Value::Array(idps));
    }
    put(
        &mut props,
        "IdentityPoolTags",
        live_tags(pool.identity_pool_tags()),
    );
    props
}

/// The pool `id`; `None` when it does not exist.
async fn describe(
    cognito: &aws_sdk_cognitoidentity::Client,
    what: &str,
    id: &str,
) -> Result<Option<DescribeIdentityPoolOutput>, ProviderError> {
    found(
        cognito
            .describe_identity_pool()
            .identity_pool_id(id)
            .send()
            .await
            .map_err(failed!(format!("{what}: DescribeIdentityPool {id}"))),
    )
}

/// `Id` and `Name` of the pool.
fn attributes_of(id: &str, name: &str) -> Map<String, Value> {
    let mut attributes = Map::new();
    attributes.insert("Id".into(), json!(id));
    attributes.insert("Name".into(), json!(name));
    attributes
}

#[async_trait]
impl ResourceProvider for IdentityPool {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&[
                "IdentityPoolName",
                "AllowUnauthenticatedIdentities",
                "AllowClassicFlow",
                "SupportedLoginProviders",
                "DeveloperProviderName",
                "OpenIdConnectProviderARNs",
                "CognitoIdentityProviders",
                "SamlProviderARNs",
                "IdentityPoolTags",
            ])
            // Cognito refuses to change the developer provider once set (CloudFormation
            // replaces the pool too).
            .create_only(&["DeveloperProviderName"])
            .read_and_import()
            .finds_created_in(&["IdentityPoolName"])
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
            template_tags(props, "IdentityPoolTags"),
            Some(&request.client_token),
        );
        let created = client(ctx)
            .await?
            .create_identity_pool()
            .identity_pool_name(&name)
            .allow_unauthenticated_identities(
                flag(props.get("AllowUnauthenticatedIdentities")).unwrap_or(false),
            )
            .set_allow_classic_flow(flag(props.get("AllowClassicFlow")))
            .set_supported_login_providers(string_map(props.get("SupportedLoginProviders")))
            .set_developer_provider_name(string(props.get("DeveloperProviderName")))
            .set_open_id_connect_provider_arns(strings(props.get("OpenIdConnectProviderARNs")))
            .set_cognito_identity_providers(providers(props.get("CognitoIdentityProviders")))
            .set_saml_provider_arns(strings(props.get("SamlProviderARNs")))
            .set_identity_pool_tags(Some(tags).filter(|t| !t.is_empty()))
            .send()
            .await
            .map_err(failed!(format!("{what}: CreateIdentityPool {name}")))?;
        let id = created.identity_pool_id().to_string();
        Ok(CreateResult {
            attributes: attributes_of(&id, created.identity_pool_name()),
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
        let (after, id) = (&request.properties, request.physical_id.as_str());
        let cognito = client(ctx).await?;
        let live = describe(&cognito, &what, id)
            .await?
            .ok_or_else(|| does_not_exist(&what, id, "Cognito"))?;
        let tags = sent_tags(
            template_tags(after, "IdentityPoolTags"),
            live.identity_pool_tags()
                .and_then(|t| t.get(CREATE_TOKEN_TAG)),
        );
        let name = string(after.get("IdentityPoolName"))
            .unwrap_or_else(|| live.identity_pool_name().to_string());
        cognito
            .update_identity_pool()
            .identity_pool_id(id)
            .identity_pool_name(&name)
            .allow_unauthenticated_identities(
                flag(after.get("AllowUnauthenticatedIdentities")).unwrap_or(false),
            )
            .set_allow_classic_flow(flag(after.get("AllowClassicFlow")))
            .set_supported_login_providers(string_map(after.get("SupportedLoginProviders")))
            .set_developer_provider_name(string(after.get("DeveloperProviderName")))
            .set_open_id_connect_provider_arns(strings(after.get("OpenIdConnectProviderARNs")))
            .set_cognito_identity_providers(providers(after.get("CognitoIdentityProviders")))
            .set_saml_provider_arns(strings(after.get("SamlProviderARNs")))
            .set_identity_pool_tags(Some(tags))
            .send()
            .await
            .map_err(failed!(format!("{what}: UpdateIdentityPool {id}")))?;
        Ok(UpdateResult {
            physical_id: id.to_string(),
            attributes: attributes_of(id, &name),
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
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_identity_pool()
                .identity_pool_id(id)
                .send()
                .await
                .map(|_| ())
                .map_err(failed!(format!("{what}: DeleteIdentityPool {id}"))),
        )
    }
}

#[async_trait]
impl Readable for IdentityPool {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let cognito = client(ctx).await?;
        Ok(describe(&cognito, what, &request.physical_id)
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
        let cognito = client(ctx).await?;
        let pool = describe(&cognito, what, physical_id)
            .await?
            .ok_or_else(|| does_not_exist(what, physical_id, "Cognito"))?;
        Ok(attributes_of(physical_id, pool.identity_pool_name()))
    }

    /// The pool named as the create named it and carrying its token; more than one is refused.
    async fn created_id(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &FindCreatedRequest,
    ) -> Result<Option<String>, ProviderError> {
        let name = created_pool_name(what, request, pool_name)?;
        let cognito = client(ctx).await?;
        let named = all_pages(|next| {
            let (cognito, name) = (&cognito, &name);
            async move {
                let page = cognito
                    .list_identity_pools()
                    .max_results(60)
                    .set_next_token(next)
                    .send()
                    .await
                    .map_err(failed!(format!("{what}: ListIdentityPools")))?;
                let named = page
                    .identity_pools()
                    .iter()
                    .filter(|p| p.identity_pool_name() == Some(name.as_str()))
                    .filter_map(|p| p.identity_pool_id().map(ToString::to_string))
                    .collect();
                Ok((named, page.next_token().map(ToString::to_string)))
            }
        })
        .await?;
        let mut ids = Vec::new();
        for id in named {
            let pool = describe(&cognito, what, &id).await?;
            if pool.is_some_and(|p| carries_token(p.identity_pool_tags(), &request.token)) {
                ids.push(id);
            }
        }
        one_tagged(
            what,
            &format!("identity pools named {name}"),
            &request.token,
            ids,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_name_has_only_the_characters_cognito_takes() {
        let name = pool_name(&Map::new(), "Shop-1", "Identities", "t1");
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{name}"
        );
        assert_eq!(name, pool_name(&Map::new(), "Shop-1", "Identities", "t1"));
        let given = json!({"IdentityPoolName": "shop ids"});
        assert_eq!(
            pool_name(given.as_object().unwrap(), "S", "I", "t1"),
            "shop ids"
        );
    }

    #[test]
    fn a_described_pool_reads_back_without_the_token_tag() {
        let pool = DescribeIdentityPoolOutput::builder()
            .identity_pool_id("us-east-1:1")
            .identity_pool_name("ids")
            .allow_unauthenticated_identities(false)
            .set_cognito_identity_providers(providers(Some(
                &json!([{"ClientId": "c1", "ProviderName": "cognito-idp.us-east-1.amazonaws.com/p"}]),
            )))
            .identity_pool_tags(CREATE_TOKEN_TAG, "t1")
            .identity_pool_tags("team", "a")
            .build()
            .unwrap();
        assert_eq!(
            Value::Object(template_shape(&pool)),
            json!({
                "IdentityPoolName": "ids",
                "AllowUnauthenticatedIdentities": false,
                "CognitoIdentityProviders": [{"ClientId": "c1", "ProviderName": "cognito-idp.us-east-1.amazonaws.com/p"}],
                "IdentityPoolTags": {"team": "a"},
            })
        );
    }
}
