//! `AWS::Lambda::Permission`.

use cdkd_aws_common::{aws_error, deleted_unless_failed, flag, physical_name, require_str, text};
use cdkd_aws_common::{optional, put};
use cdkd_aws_common::{Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, function_name};

/// `AWS::Lambda::Permission`: physical id = the statement id. State written by Cloud Control
/// holds `<functionArn>|<statementId>`; both forms are read.
#[derive(Default)]
pub struct Permission;

const PERMISSION: &str = "AWS::Lambda::Permission";

/// The longest statement id Lambda accepts.
const STATEMENT_MAX: usize = 100;

/// The function and statement id a recorded permission names.
pub fn permission_target<'a>(
    physical_id: &'a str,
    properties: &'a Map<String, Value>,
) -> (String, &'a str) {
    match physical_id.split_once('|') {
        Some((function, statement)) => (function_name(function).to_string(), statement),
        None => (
            properties
                .get("FunctionName")
                .and_then(Value::as_str)
                .map(function_name)
                .unwrap_or_default()
                .to_string(),
            physical_id,
        ),
    }
}

/// `AWS::Lambda::Permission`: the statement in the function's resource policy.
async fn current(
    lambda: &aws_sdk_lambda::Client,
    what: &str,
    physical_id: &str,
    template: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let (function, statement) = permission_target(physical_id, template);
    if function.is_empty() {
        return Err(ProviderError::validation(format!(
            "{what}: the statement id {physical_id} needs the template's FunctionName (or the id as <functionArn>|<statementId>)"
        )));
    }
    let Some(policy) = optional(
        &format!("{what}: GetPolicy of {function}"),
        lambda.get_policy().function_name(&function).send().await,
    )?
    .and_then(|p| p.policy) else {
        return Ok(None);
    };
    let policy: Value = serde_json::from_str(&policy).unwrap_or(Value::Null);
    Ok(statement_properties(&policy, &function, statement))
}

/// One statement of a resource policy in `AWS::Lambda::Permission` shape.
fn statement_properties(policy: &Value, function: &str, sid: &str) -> Option<Map<String, Value>> {
    let statements = match &policy["Statement"] {
        Value::Array(items) => items.clone(),
        Value::Null => Vec::new(),
        single => vec![single.clone()],
    };
    let found = statements.into_iter().find(|s| s["Sid"] == sid)?;
    let mut props = Map::new();
    props.insert("FunctionName".into(), json!(function));
    put(&mut props, "Action", found.get("Action").cloned());
    let principal = match &found["Principal"] {
        Value::Object(p) => p.get("Service").or_else(|| p.get("AWS")).cloned(),
        other if other.is_string() => Some(other.clone()),
        _ => None,
    };
    put(&mut props, "Principal", principal);
    let condition = &found["Condition"];
    put(
        &mut props,
        "SourceArn",
        condition["ArnLike"]["AWS:SourceArn"]
            .as_str()
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "SourceAccount",
        condition["StringEquals"]["AWS:SourceAccount"]
            .as_str()
            .map(|v| json!(v)),
    );
    put(
        &mut props,
        "FunctionUrlAuthType",
        condition["StringEquals"]["lambda:FunctionUrlAuthType"]
            .as_str()
            .map(|v| json!(v)),
    );
    Some(props)
}

#[async_trait]
impl Readable for Permission {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let lambda = client(ctx).await?;
        current(&lambda, what, &request.physical_id, &request.properties).await
    }

    /// The statement id generated from the token, in the function's policy.
    const CREATED_NAME: Option<(Option<&'static str>, usize)> = Some((None, STATEMENT_MAX));
}

#[async_trait]
impl ResourceProvider for Permission {
    fn schema(&self) -> ResourceTypeSchema {
        let all = [
            "FunctionName",
            "Action",
            "Principal",
            "SourceArn",
            "SourceAccount",
            "EventSourceToken",
            "FunctionUrlAuthType",
            "PrincipalOrgID",
            "InvokedViaFunctionUrl",
        ];
        // Lambda permissions cannot be changed in place: every property replaces.
        TypeSchema::builder(PERMISSION)
            .handles(&all)
            .all_create_only()
            .read_and_import()
            .finds_created_in(&["FunctionName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{PERMISSION} {}", request.logical_id);
        let props = &request.properties;
        let function = require_str(props, "FunctionName", &what)?;
        let statement = physical_name(&request, STATEMENT_MAX, false);
        client(ctx)
            .await?
            .add_permission()
            .function_name(function)
            .statement_id(&statement)
            .action(require_str(props, "Action", &what)?)
            .principal(require_str(props, "Principal", &what)?)
            .set_source_arn(text(props.get("SourceArn")))
            .set_source_account(text(props.get("SourceAccount")))
            .set_event_source_token(text(props.get("EventSourceToken")))
            .set_principal_org_id(text(props.get("PrincipalOrgID")))
            .set_invoked_via_function_url(flag(props.get("InvokedViaFunctionUrl")))
            .set_function_url_auth_type(
                text(props.get("FunctionUrlAuthType"))
                    .map(|t| aws_sdk_lambda::types::FunctionUrlAuthType::from(t.as_str())),
            )
            .send()
            .await
            .map_err(|e| aws_error(&format!("{what}: AddPermission on {function}"), e))?;
        Ok(CreateResult {
            physical_id: statement,
            attributes: Map::new(),
            ..Default::default()
        })
    }

    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Err(ProviderError::validation(format!(
            "{PERMISSION} {}: permissions are replaced, not updated",
            request.logical_id
        )))
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{PERMISSION} {}", request.logical_id);
        let (function, statement) = permission_target(&request.physical_id, &request.properties);
        deleted_unless_failed(
            client(ctx)
                .await?
                .remove_permission()
                .function_name(&function)
                .statement_id(statement)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| aws_error(&format!("{what}: RemovePermission"), e)),
        )
    }
}

// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_permission_is_found_from_either_id_form() {
        let props = json!({"FunctionName": "arn:aws:lambda:us-east-1:123:function:fn"})
            .as_object()
            .cloned()
            .unwrap();
        assert_eq!(
            permission_target("sid-1", &props),
            ("fn".to_string(), "sid-1")
        );
        assert_eq!(
            permission_target("arn:aws:lambda:us-east-1:123:function:other|sid-2", &props),
            ("other".to_string(), "sid-2")
        );
    }

    #[test]
    fn a_permission_statement_reads_back_in_template_shape() {
        let policy = json!({"Version": "2012-10-17", "Statement": [
            {"Sid": "other", "Action": "lambda:InvokeFunction", "Principal": "*"},
            {"Sid": "Stack-Invoke-ABC", "Effect": "Allow", "Action": "lambda:InvokeFunction",
             "Principal": {"Service": "s3.amazonaws.com"},
             "Condition": {"ArnLike": {"AWS:SourceArn": "arn:aws:s3:::b"},
                           "StringEquals": {"AWS:SourceAccount": "123456789012"}}}]});
        assert_eq!(
            Value::Object(statement_properties(&policy, "fn", "Stack-Invoke-ABC").unwrap()),
            json!({"FunctionName": "fn", "Action": "lambda:InvokeFunction",
                   "Principal": "s3.amazonaws.com", "SourceArn": "arn:aws:s3:::b",
                   "SourceAccount": "123456789012"})
        );
        assert!(statement_properties(&policy, "fn", "missing").is_none());
        assert_eq!(
            statement_properties(&policy, "fn", "other").unwrap()["Principal"],
            "*"
        );
    }
}
