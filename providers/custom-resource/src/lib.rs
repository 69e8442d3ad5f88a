//! cdkd's custom-resource plugin: `Custom::*` and `AWS::CloudFormation::CustomResource`, run as
//! CloudFormation runs them. Each create, update and delete sends the handler CloudFormation's
//! request (`RequestType`, `ResponseURL`, `StackId`, `RequestId`, `ResourceType`,
//! `LogicalResourceId`, `ResourceProperties` with scalars as strings, `OldResourceProperties`,
//! `PhysicalResourceId`) by invoking the Lambda function its `ServiceToken` names, and takes the
//! response from the invocation's own answer or, as CloudFormation does, from the object the
//! handler PUTs to the pre-signed `ResponseURL`: `custom-resource-responses/{RequestId}.json` in
//! cdkd's state bucket, signed for that bucket's region. The placeholder and every version of
//! it are deleted once read (a response may hold secrets).
//!
//! A response with `NoEcho: true` marks every `Data` value sensitive: consumers get it within the
//! run, cdkd records `***` (the state spec's `NoEcho` section).
//!
//! An SNS-backed custom resource (`ServiceToken` a topic ARN) gets the same request published
//! to its topic; its subscriber answers through the ResponseURL.

mod exchange;

use cdkd_aws_common::TypeSchema;
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};

use exchange::{Exchange, RequestType};

cdkd_provider_api::export_plugin!(description: "CloudFormation custom resources (Custom::*, AWS::CloudFormation::CustomResource) backed by Lambda functions");

cdkd_provider_api::register_provider!(CustomResource);
cdkd_provider_api::register_provider!(CloudFormationCustomResource);

/// Every `Custom::*` type.
#[derive(Default)]
pub struct CustomResource;

/// `AWS::CloudFormation::CustomResource`, the same protocol under CloudFormation's own name.
#[derive(Default)]
pub struct CloudFormationCustomResource;

fn schema(type_name: &str) -> ResourceTypeSchema {
    TypeSchema::builder(type_name)
        // A custom resource's properties are its handler's: every one is passed on.
        .handles(&["*"])
        // A new ServiceToken is a new handler, which CloudFormation refuses to switch to in
        // place; cdkd replaces the resource instead.
        .create_only(&["ServiceToken"])
        .build()
}

/// The one implementation behind both registrations.
async fn create(
    ctx: &PluginContext,
    request: CreateRequest,
) -> Result<CreateResult, ProviderError> {
    let exchange = Exchange::new(ctx, &request.logical_id, &request.stack_name).await?;
    let response = exchange
        .run(
            RequestType::Create,
            &request.properties,
            None,
            None,
            &request.client_token,
        )
        .await?;
    Ok(CreateResult {
        sensitive_attributes: response.sensitive_attributes(),
        physical_id: response.physical_id,
        attributes: response.data,
    })
}

async fn update(
    ctx: &PluginContext,
    request: UpdateRequest,
) -> Result<UpdateResult, ProviderError> {
    let exchange = Exchange::new(ctx, &request.logical_id, &request.stack_name).await?;
    let response = exchange
        .run(
            RequestType::Update,
            &request.properties,
            Some(&request.previous_properties),
            Some(&request.physical_id),
            "",
        )
        .await?;
    Ok(UpdateResult {
        // A handler that answers with another physical id has replaced the resource: the host
        // sends the old one a Delete once the rest of the deploy succeeded.
        replaced: response.physical_id != request.physical_id,
        sensitive_attributes: response.sensitive_attributes(),
        physical_id: response.physical_id,
        attributes: response.data,
    })
}

async fn delete(
    ctx: &PluginContext,
    request: DeleteRequest,
) -> Result<DeleteResult, ProviderError> {
    let exchange = Exchange::new(ctx, &request.logical_id, "").await?;
    match exchange
        .run(
            RequestType::Delete,
            &request.properties,
            None,
            Some(&request.physical_id),
            "",
        )
        .await
    {
        Ok(_) => Ok(DeleteResult::Deleted),
        Err(error) if exchange::handler_is_gone(&error) => {
            tracing::warn!(
                "{}: the handler function is gone, so the custom resource cannot be told to delete itself; its record is dropped ({error})",
                request.logical_id
            );
            Ok(DeleteResult::Deleted)
        }
        Err(error) => Err(error),
    }
}

macro_rules! custom_resource_provider {
    ($name:ident, $type_name:expr) => {
        #[async_trait]
        impl ResourceProvider for $name {
            fn schema(&self) -> ResourceTypeSchema {
                schema($type_name)
            }

            async fn create(
                &self,
                ctx: &PluginContext,
                request: CreateRequest,
            ) -> Result<CreateResult, ProviderError> {
                create(ctx, request).await
            }

            async fn update(
                &self,
                ctx: &PluginContext,
                request: UpdateRequest,
            ) -> Result<UpdateResult, ProviderError> {
                update(ctx, request).await
            }

            async fn delete(
                &self,
                ctx: &PluginContext,
                request: DeleteRequest,
            ) -> Result<DeleteResult, ProviderError> {
                delete(ctx, request).await
            }
        }
    };
}

custom_resource_provider!(CustomResource, "Custom::*");
custom_resource_provider!(
    CloudFormationCustomResource,
    "AWS::CloudFormation::CustomResource"
);
