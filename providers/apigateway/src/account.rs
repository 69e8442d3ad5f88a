//! `AWS::ApiGateway::Account`: the region's one API Gateway account setting, the CloudWatch
//! role API Gateway logs with. Physical id (and `Ref`, attribute `Id`) is the AWS account id.
//! A create or update sets the role (UpdateAccount), retried while IAM has not yet made a role
//! of the same deploy usable by API Gateway; a delete leaves the setting as it is, as
//! CloudFormation's does. Setting it twice is the same as once, so a create repeated after a
//! crash is harmless.

use cdkd_aws_common::{put, text, while_iam_propagates, Readable, TypeSchema};
use cdkd_provider_api::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, ErrorKind, PluginContext, ProviderError, ResourceProvider};
use serde_json::{Map, Value};

use crate::patch::replace;
use crate::{account_id, attributes, client, failed};

/// The CloudFormation type name.
const TYPE: &str = "AWS::ApiGateway::Account";

/// The `AWS::ApiGateway::Account` provider.
#[derive(Default)]
pub struct Account;

/// Sets the CloudWatch role (an empty one when the template gives none).
async fn set_role(
    ctx: &PluginContext,
    what: &str,
    props: &Map<String, Value>,
) -> Result<(), ProviderError> {
    let apigw = client(ctx).await?;
    let role = text(props.get("CloudWatchRoleArn"));
    let (apigw, role) = (&apigw, role.as_ref());
    // A role of the same deploy: API Gateway answers BadRequest ("does not have required
    // permissions set") until IAM has spread it.
    let Some(arn) = role else {
        return update_role(apigw, what, None).await;
    };
    while_iam_propagates(
        &format!("the role {arn}"),
        |e| e.kind == ErrorKind::VALIDATION,
        || update_role(apigw, what, Some(arn)),
    )
    .await
}

/// UpdateAccount with the CloudWatch role `role` (none: an empty one).
async fn update_role(
    apigw: &aws_sdk_apigateway::Client,
    what: &str,
    role: Option<&String>,
) -> Result<(), ProviderError> {
    apigw
        .update_account()
        .patch_operations(replace("/cloudwatchRoleArn", role.cloned()))
        .send()
        .await
        .map(|_| ())
        .map_err(failed!(format!("{what}: UpdateAccount")))
}

#[async_trait]
impl ResourceProvider for Account {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["CloudWatchRoleArn"])
            .read_and_import()
            .operations(&[operation::IDEMPOTENT_CREATE])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let (set, id) = tokio::join!(
            set_role(ctx, &what, &request.properties),
            account_id(ctx, &what)
        );
        set?;
        let id = id?;
        Ok(CreateResult {
            attributes: attributes(&[("Id", &id)]),
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
        if crate::changed(
            &request.previous_properties,
            &request.properties,
            "CloudWatchRoleArn",
        ) {
            set_role(ctx, &what, &request.properties).await?;
        }
        Ok(UpdateResult {
            attributes: attributes(&[("Id", &request.physical_id)]),
            physical_id: request.physical_id,
            replaced: false,
            ..Default::default()
        })
    }

    /// The setting outlives the stack, as CloudFormation leaves it: nothing is called.
    async fn delete(
        &self,
        _ctx: &PluginContext,
        _request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        Ok(DeleteResult::Deleted)
    }
}

#[async_trait]
impl Readable for Account {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        _request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let live = client(ctx)
            .await?
            .get_account()
            .send()
            .await
            .map_err(failed!(format!("{what}: GetAccount")))?;
        let mut props = Map::new();
        put(
            &mut props,
            "CloudWatchRoleArn",
            live.cloudwatch_role_arn()
                .filter(|r| !r.is_empty())
                .map(Value::from),
        );
        Ok(Some(props))
    }

    async fn attributes(
        &self,
        _ctx: &PluginContext,
        _what: &str,
        physical_id: &str,
    ) -> Result<Map<String, Value>, ProviderError> {
        Ok(attributes(&[("Id", physical_id)]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_account_is_set_idempotently_and_never_deleted() {
        let schema = Account.schema();
        assert_eq!(schema.handled_properties, ["CloudWatchRoleArn"]);
        assert!(schema
            .operations
            .iter()
            .any(|o| o == operation::IDEMPOTENT_CREATE));
        let op = replace("/cloudwatchRoleArn", None);
        assert_eq!(op.value(), Some(""));
    }
}
