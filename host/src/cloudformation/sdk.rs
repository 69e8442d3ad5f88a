//! [`CloudFormationApi`] through the AWS SDK.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_cloudformation::error::{DisplayErrorContext, ProvideErrorMetadata};
use aws_sdk_cloudformation::types::{Capability, ChangeSetType, Parameter, ResourceToImport, Tag};
use aws_smithy_runtime_api::client::result::SdkError;

use super::{
    CallError, ChangeSetKind, ChangeSetRequest, ChangeSetState, CloudFormationApi,
    StackDescription, StackEvent, StackResource, StackUpdate, TemplateSource, TemplateStage,
};
use crate::aws_env::AwsEnvironment;

/// The AWS SDK's CloudFormation client for one region.
pub struct SdkCloudFormation {
    client: aws_sdk_cloudformation::Client,
}

impl SdkCloudFormation {
    /// A client for `region`.
    pub fn new(aws: &AwsEnvironment, region: &str) -> SdkCloudFormation {
        let config = aws_sdk_cloudformation::config::Builder::from(aws.sdk_config())
            .region(aws_sdk_cloudformation::config::Region::new(
                region.to_string(),
            ))
            .build();
        SdkCloudFormation {
            client: aws_sdk_cloudformation::Client::from_conf(config),
        }
    }
}

/// An SDK error in each form cdkd's messages quote.
fn call_error<E>(err: SdkError<E, aws_smithy_runtime_api::http::Response>) -> CallError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    CallError {
        code: err.code().map(str::to_string),
        message: err.message().map(str::to_string),
        line: cdkd_aws_common::error_line(&err),
        context: DisplayErrorContext(&err).to_string(),
        summary: err.to_string(),
    }
}

const CAPABILITIES: [Capability; 3] = [
    Capability::CapabilityIam,
    Capability::CapabilityNamedIam,
    Capability::CapabilityAutoExpand,
];

fn previous(keys: &[String]) -> Vec<Parameter> {
    keys.iter()
        .map(|key| {
            Parameter::builder()
                .parameter_key(key)
                .use_previous_value(true)
                .build()
        })
        .collect()
}

#[async_trait]
impl CloudFormationApi for SdkCloudFormation {
    async fn describe_stack(&self, stack: &str) -> Result<Option<StackDescription>, CallError> {
        let answer =
            (self.client.describe_stacks().stack_name(stack).send().await).map_err(call_error)?;
        Ok(answer.stacks().first().map(|s| StackDescription {
            stack_id: s.stack_id().unwrap_or_default().to_string(),
            status: s
                .stack_status()
                .map(|x| x.as_str().to_string())
                .unwrap_or_default(),
            status_reason: s.stack_status_reason().map(str::to_string),
            parent_id: s.parent_id().map(str::to_string),
            tags: s
                .tags()
                .iter()
                .map(|t| {
                    (
                        t.key().unwrap_or_default().to_string(),
                        t.value().unwrap_or_default().to_string(),
                    )
                })
                .collect(),
            parameters: (s.parameters().iter())
                .filter_map(|p| {
                    Some((
                        p.parameter_key()?.to_string(),
                        p.parameter_value().map(str::to_string),
                    ))
                })
                .collect(),
            outputs: (s.outputs().iter())
                .filter_map(|o| {
                    Some((
                        o.output_key()?.to_string(),
                        o.output_value().map(str::to_string),
                    ))
                })
                .collect(),
        }))
    }

    async fn list_stack_resources(&self, stack: &str) -> Result<Vec<StackResource>, CallError> {
        let mut pages = self
            .client
            .list_stack_resources()
            .stack_name(stack)
            .into_paginator()
            .send();
        let mut resources = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(call_error)?;
            resources.extend(page.stack_resource_summaries().iter().filter_map(|r| {
                Some(StackResource {
                    logical_id: r
                        .logical_resource_id()
                        .filter(|s| !s.is_empty())?
                        .to_string(),
                    resource_type: r.resource_type().filter(|s| !s.is_empty())?.to_string(),
                    physical_id: (r.physical_resource_id())
                        .filter(|s| !s.is_empty())
                        .map(str::to_string),
                })
            }));
        }
        Ok(resources)
    }

    async fn get_template(
        &self,
        stack: &str,
        stage: TemplateStage,
    ) -> Result<Option<String>, CallError> {
        let stage = match stage {
            TemplateStage::Original => aws_sdk_cloudformation::types::TemplateStage::Original,
            TemplateStage::Processed => aws_sdk_cloudformation::types::TemplateStage::Processed,
        };
        let answer = (self.client.get_template())
            .stack_name(stack)
            .template_stage(stage)
            .send()
            .await
            .map_err(call_error)?;
        Ok(answer.template_body().map(str::to_string))
    }

    async fn update_stack(&self, update: &StackUpdate) -> Result<(), CallError> {
        let mut call = (self.client.update_stack())
            .stack_name(&update.stack)
            .set_parameters(Some(previous(&update.previous_parameters)))
            .set_tags(update.tags.as_ref().map(|tags| {
                tags.iter()
                    .map(|(key, value)| Tag::builder().key(key).value(value).build())
                    .collect()
            }))
            .set_capabilities(Some(CAPABILITIES.to_vec()));
        call = match &update.template {
            TemplateSource::Body(body) => call.template_body(body),
            TemplateSource::Url(url) => call.template_url(url),
            TemplateSource::Previous => call.use_previous_template(true),
        };
        call.send().await.map(|_| ()).map_err(call_error)
    }

    async fn delete_stack(&self, stack: &str) -> Result<(), CallError> {
        (self.client.delete_stack().stack_name(stack).send().await)
            .map(|_| ())
            .map_err(call_error)
    }

    async fn create_change_set(&self, request: &ChangeSetRequest) -> Result<(), CallError> {
        let to_import = request.resources_to_import.as_ref().map(|resources| {
            resources
                .iter()
                .map(|r| {
                    let mut builder = ResourceToImport::builder()
                        .resource_type(&r.resource_type)
                        .logical_resource_id(&r.logical_id);
                    for (key, value) in &r.identifier {
                        let value = value
                            .as_str()
                            .map_or_else(|| value.to_string(), str::to_string);
                        builder = builder.resource_identifier(key, value);
                    }
                    builder.build()
                })
                .collect()
        });
        let kind = match request.kind {
            ChangeSetKind::Import => ChangeSetType::Import,
            ChangeSetKind::Update => ChangeSetType::Update,
        };
        let mut call = (self.client.create_change_set())
            .stack_name(&request.stack)
            .change_set_name(&request.name)
            .change_set_type(kind)
            .set_resources_to_import(to_import)
            .set_parameters(Some(
                (request.parameters.iter())
                    .map(|(key, value)| {
                        Parameter::builder()
                            .parameter_key(key)
                            .parameter_value(value)
                            .build()
                    })
                    .collect(),
            ))
            .set_capabilities(Some(CAPABILITIES.to_vec()));
        call = match &request.template {
            TemplateSource::Body(body) => call.template_body(body),
            TemplateSource::Url(url) => call.template_url(url),
            TemplateSource::Previous => call.use_previous_template(true),
        };
        call.send().await.map(|_| ()).map_err(call_error)
    }

    async fn describe_change_set(
        &self,
        stack: &str,
        name: &str,
    ) -> Result<ChangeSetState, CallError> {
        let answer = (self.client.describe_change_set())
            .stack_name(stack)
            .change_set_name(name)
            .send()
            .await
            .map_err(call_error)?;
        Ok(ChangeSetState {
            status: (answer.status())
                .map(|s| s.as_str().to_string())
                .unwrap_or_default(),
            status_reason: answer.status_reason().map(str::to_string),
        })
    }

    async fn execute_change_set(&self, stack: &str, name: &str) -> Result<(), CallError> {
        (self.client.execute_change_set())
            .stack_name(stack)
            .change_set_name(name)
            .send()
            .await
            .map(|_| ())
            .map_err(call_error)
    }

    async fn describe_stack_events(&self, stack: &str) -> Result<Vec<StackEvent>, CallError> {
        let answer = (self
            .client
            .describe_stack_events()
            .stack_name(stack)
            .send()
            .await)
            .map_err(call_error)?;
        Ok((answer.stack_events().iter())
            .map(|event| StackEvent {
                logical_id: event.logical_resource_id().unwrap_or_default().to_string(),
                resource_type: event.resource_type().unwrap_or_default().to_string(),
                status: (event.resource_status())
                    .map(|s| s.as_str().to_string())
                    .unwrap_or_default(),
                reason: event.resource_status_reason().map(str::to_string),
            })
            .collect())
    }

    async fn list_exports(&self) -> Result<BTreeMap<String, String>, CallError> {
        let mut exports = BTreeMap::new();
        let mut pages = self.client.list_exports().into_paginator().send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(call_error)?;
            for export in page.exports() {
                if let (Some(name), Some(value)) = (export.name(), export.value()) {
                    exports.insert(name.to_string(), value.to_string());
                }
            }
        }
        Ok(exports)
    }
}
