//! `AWS::Logs::LogStream`: physical id (and `Ref`) is the stream name; no attributes. The
//! stream lives in the template's `LogGroupName`, which every call after the create takes from
//! the resource's properties. Both names are create-only, so there is nothing to update.

use cdkd_aws_common::{
    aws_error, deleted_unless_failed, given_or_generated_name, require_str, Readable, TypeSchema,
};
use cdkd_provider_api::protocol::{
    CreateRequest, CreateResult, DeleteRequest, DeleteResult, ReadCurrentStateRequest,
    ResourceTypeSchema, UpdateRequest, UpdateResult,
};
use cdkd_provider_api::{async_trait, PluginContext, ProviderError, ResourceProvider};
use serde_json::{json, Map, Value};

use crate::{client, found, with_logs_kind, MAX_NAME};

/// The CloudFormation type name.
const TYPE: &str = "AWS::Logs::LogStream";

/// The `AWS::Logs::LogStream` provider.
#[derive(Default)]
pub struct LogStream;

/// The stream in template shape.
fn template_shape(group: &str, stream: &str) -> Map<String, Value> {
    let mut props = Map::new();
    props.insert("LogGroupName".into(), json!(group));
    props.insert("LogStreamName".into(), json!(stream));
    props
}

#[async_trait]
impl ResourceProvider for LogStream {
    fn schema(&self) -> ResourceTypeSchema {
        TypeSchema::builder(TYPE)
            .handles(&["LogGroupName", "LogStreamName"])
            .all_create_only()
            .read_and_import()
            .finds_created_in(&["LogGroupName", "LogStreamName"])
            .build()
    }

    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let group = require_str(&request.properties, "LogGroupName", &what)?;
        let name = given_or_generated_name(&request, "LogStreamName", MAX_NAME, false);
        client(ctx)
            .await?
            .create_log_stream()
            .log_group_name(group)
            .log_stream_name(&name)
            .send()
            .await
            .map_err(|e| {
                with_logs_kind(aws_error(
                    &format!("{what}: CreateLogStream {name} in {group}"),
                    e,
                ))
            })?;
        Ok(CreateResult {
            physical_id: name,
            ..Default::default()
        })
    }

    /// Every property is create-only: a change replaces the stream, so an update has nothing
    /// to send.
    async fn update(
        &self,
        _ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        Ok(UpdateResult {
            physical_id: request.physical_id,
            replaced: false,
            ..Default::default()
        })
    }

    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let what = format!("{TYPE} {}", request.logical_id);
        let group = require_str(&request.properties, "LogGroupName", &what)?;
        let name = &request.physical_id;
        deleted_unless_failed(
            client(ctx)
                .await?
                .delete_log_stream()
                .log_group_name(group)
                .log_stream_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    with_logs_kind(aws_error(
                        &format!("{what}: DeleteLogStream {name} in {group}"),
                        e,
                    ))
                }),
        )
    }
}

#[async_trait]
impl Readable for LogStream {
    async fn read(
        &self,
        ctx: &PluginContext,
        what: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let group = require_str(&request.properties, "LogGroupName", what)?;
        let name = request.physical_id.as_str();
        let logs = client(ctx).await?;
        let mut token: Option<String> = None;
        loop {
            // DescribeLogStreams matches a prefix: other streams may come first.
            let page = logs
                .describe_log_streams()
                .log_group_name(group)
                .log_stream_name_prefix(name)
                .set_next_token(token.take())
                .send()
                .await
                .map_err(|e| {
                    with_logs_kind(aws_error(
                        &format!("{what}: DescribeLogStreams {name} in {group}"),
                        e,
                    ))
                });
            // A group that is gone took its streams with it.
            let Some(page) = found(page)? else {
                return Ok(None);
            };
            if page
                .log_streams()
                .iter()
                .any(|s| s.log_stream_name() == Some(name))
            {
                return Ok(Some(template_shape(group, name)));
            }
            match page.next_token() {
                Some(next) if !next.is_empty() => token = Some(next.to_string()),
                _ => return Ok(None),
            }
        }
    }

    /// The template's name or the one generated from the token, in its group.
    const CREATED_NAME: Option<(Option<&'static str>, usize)> =
        Some((Some("LogStreamName"), MAX_NAME));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_reads_back_with_its_group() {
        assert_eq!(
            Value::Object(template_shape("/app/api", "instance-1")),
            json!({"LogGroupName": "/app/api", "LogStreamName": "instance-1"})
        );
    }

    #[test]
    fn both_names_are_create_only() {
        let schema = LogStream.schema();
        assert_eq!(schema.handled_properties, ["LogGroupName", "LogStreamName"]);
        assert_eq!(
            schema.create_only_properties,
            ["LogGroupName", "LogStreamName"]
        );
    }

    #[test]
    fn a_stream_without_a_name_gets_a_generated_one() {
        let request = |properties: Value| CreateRequest {
            logical_id: "Stream".into(),
            stack_name: "App".into(),
            client_token: "t1".into(),
            properties: properties.as_object().cloned().unwrap(),
        };
        let generated = given_or_generated_name(
            &request(json!({"LogGroupName": "g"})),
            "LogStreamName",
            MAX_NAME,
            false,
        );
        assert!(generated.starts_with("App-Stream-"), "{generated}");
        assert_eq!(generated.len(), "App-Stream-".len() + 12);
        assert_eq!(
            given_or_generated_name(
                &request(json!({"LogGroupName": "g", "LogStreamName": "s"})),
                "LogStreamName",
                MAX_NAME,
                false
            ),
            "s"
        );
    }
}
