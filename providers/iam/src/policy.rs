//! `AWS::IAM::Policy`.

use cdkd_aws_common::require_str;
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{changes, client, document, names, read};

use crate::principal::{delete_inline, put_inline, PRINCIPALS};

/// `AWS::IAM::Policy`: an inline policy put on roles, users and groups; physical id = its name.
#[derive(Default)]
pub struct InlinePolicy;

const INLINE: &str = "AWS::IAM::Policy";

/// An inline policy has no id of its own: it is found by name on the template's roles, users
/// and groups.
/// `AWS::IAM::Policy` `name`: on which of the template's roles, users and groups it still is.
async fn current(
    iam: &aws_sdk_iam::Client,
    what: &str,
    name: &str,
    template: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let mut props = Map::new();
    let mut body = None;
    for (kind, key) in PRINCIPALS {
        let mut found = Vec::new();
        for target in names(template, key) {
            if let Some(doc) = read::inline_document(iam, what, kind, &target, name).await? {
                body.get_or_insert(doc);
                found.push(target);
            }
        }
        if !found.is_empty() {
            props.insert(key.into(), json!(found));
        }
    }
    Ok(body.map(|body| {
        props.insert("PolicyName".into(), json!(name));
        props.insert("PolicyDocument".into(), body);
        props
    }))
}

#[async_trait]
impl Readable for InlinePolicy {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let iam = client(ctx).await?;
        current(&iam, what, &request.physical_id, &request.properties).await
    }
}

#[async_trait]
impl ResourceProvider for InlinePolicy {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(INLINE)
            .handles(&["PolicyName", "PolicyDocument", "Roles", "Users", "Groups"])
            .create_only(&["PolicyName"])
            .read_and_import()
            // Its create is an upsert: repeated after a crash it makes nothing twice.
            .operations(&[cdkd_provider_api::protocol::operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{INLINE} {}", request.logical_id);
        let name = require_str(&request.properties, "PolicyName", &what)?.to_string();
        let body = request
            .properties
            .get("PolicyDocument")
            .map(document)
            .unwrap_or_default();
        let iam = client(ctx).await?;
        for (kind, key) in PRINCIPALS {
            for target in names(&request.properties, key) {
                put_inline(&iam, &what, kind, &target, &name, &body).await?;
            }
        }
        Ok(CreateResult {
            physical_id: name,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let what = format!("{INLINE} {}", request.logical_id);
        let name = request.physical_id.clone();
        let body = request
            .properties
            .get("PolicyDocument")
            .map(document)
            .unwrap_or_default();
        let iam = client(ctx).await?;
        for (kind, key) in PRINCIPALS {
            let (_, removed) = changes(
                &names(&request.previous_properties, key),
                &names(&request.properties, key),
            );
            for target in removed {
                delete_inline(&iam, &what, kind, &target, &name).await?;
            }
            for target in names(&request.properties, key) {
                put_inline(&iam, &what, kind, &target, &name, &body).await?;
            }
        }
        Ok(UpdateResult {
            physical_id: name,
            replaced: false,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{INLINE} {}", request.logical_id);
        let iam = client(ctx).await?;
        for (kind, key) in PRINCIPALS {
            for target in names(&request.properties, key) {
                delete_inline(&iam, &what, kind, &target, &request.physical_id).await?;
            }
        }
        Ok(DeleteResult::Deleted)
    }
}

// ---------------------------------------------------------------------------------------------
