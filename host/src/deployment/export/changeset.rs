//! The CloudFormation side of an export: the IMPORT change set of phase 1 and the UPDATE of
//! phase 2, each created, waited for, executed and waited for again; on failure, the
//! per-resource reasons from the stack's events (the stack status alone says only that it
//! rolled back).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use aws_sdk_cloudformation::types::{
    Capability, ChangeSetStatus, ChangeSetType, Parameter, ResourceToImport,
};
use serde_json::{Map, Value};

use crate::deployment::migrate::{failed, purge_upload, CloudFormation, Described, INLINE_LIMIT};
use crate::state::backend::StateBackend;

/// A template as sent: its text, in the source's format.
pub struct Body {
    /// The rendered template.
    pub text: String,
    /// `json` or `yaml`, for the transient upload's name.
    pub extension: &'static str,
}

/// One resource of the IMPORT change set.
pub struct ToImport {
    /// The logical id.
    pub logical_id: String,
    /// The type.
    pub resource_type: String,
    /// The `ResourceIdentifier`.
    pub identifier: Map<String, Value>,
}

/// How a change set came out.
pub enum Outcome {
    /// Executed and complete.
    Done,
    /// CloudFormation found nothing to change (phase 2 of a stack with nothing left out).
    NoChanges,
}

impl CloudFormation {
    /// Phase 1: imports `resources` into a new stack `stack` with `body`.
    pub async fn import(
        &self,
        stack: &str,
        body: &Body,
        parameters: &BTreeMap<String, String>,
        resources: &[ToImport],
        bucket: &StateBackend,
    ) -> anyhow::Result<()> {
        let to_import: Vec<ResourceToImport> = resources
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
            .collect();
        let outcome = self
            .change_set(
                stack,
                ChangeSetType::Import,
                body,
                parameters,
                Some(to_import),
                bucket,
            )
            .await;
        if outcome.is_err() {
            self.remove_empty_review_stack(stack).await;
        }
        outcome.map(|_| ())
    }

    /// Phase 2: updates `stack` to the whole template.
    pub async fn update_to(
        &self,
        stack: &str,
        body: &Body,
        parameters: &BTreeMap<String, String>,
        bucket: &StateBackend,
    ) -> anyhow::Result<Outcome> {
        self.change_set(stack, ChangeSetType::Update, body, parameters, None, bucket)
            .await
    }

    async fn change_set(
        &self,
        stack: &str,
        kind: ChangeSetType,
        body: &Body,
        parameters: &BTreeMap<String, String>,
        to_import: Option<Vec<ResourceToImport>>,
        bucket: &StateBackend,
    ) -> anyhow::Result<Outcome> {
        let name = format!(
            "cdkd-export-{}-{}",
            kind.as_str().to_lowercase(),
            chrono::Utc::now().timestamp_millis()
        );
        let mut uploads = Vec::new();
        let mut create = self
            .client
            .create_change_set()
            .stack_name(stack)
            .change_set_name(&name)
            .change_set_type(kind.clone())
            .set_resources_to_import(to_import)
            .set_parameters(Some(
                parameters
                    .iter()
                    .map(|(key, value)| {
                        Parameter::builder()
                            .parameter_key(key)
                            .parameter_value(value)
                            .build()
                    })
                    .collect(),
            ))
            .capabilities(Capability::CapabilityIam)
            .capabilities(Capability::CapabilityNamedIam)
            .capabilities(Capability::CapabilityAutoExpand);
        let result = async {
            if body.text.len() > INLINE_LIMIT {
                let url = self
                    .upload(
                        bucket,
                        stack,
                        &format!("export-{}.{}", kind.as_str().to_lowercase(), body.extension),
                        body.text.clone().into_bytes(),
                        &mut uploads,
                    )
                    .await?;
                create = create.template_url(url);
            } else {
                create = create.template_body(&body.text);
            }
            create.send().await.map_err(|err| {
                failed(
                    &format!("CreateChangeSet {name} on {stack}"),
                    cdkd_aws_common::error_line(&err),
                )
            })?;
            if !self.change_set_ready(stack, &name).await? {
                return Ok(Outcome::NoChanges);
            }
            self.client
                .execute_change_set()
                .stack_name(stack)
                .change_set_name(&name)
                .send()
                .await
                .map_err(|err| {
                    failed(
                        &format!("ExecuteChangeSet {name} on {stack}"),
                        cdkd_aws_common::error_line(&err),
                    )
                })?;
            let done = if kind == ChangeSetType::Import {
                "IMPORT_COMPLETE"
            } else {
                "UPDATE_COMPLETE"
            };
            match self.wait(stack, done).await {
                Ok(()) => Ok(Outcome::Done),
                Err(err) => Err(anyhow::anyhow!(
                    "{err}{}",
                    self.failure_reasons(stack).await
                )),
            }
        }
        .await;
        for key in &uploads {
            purge_upload(bucket, key).await;
        }
        result
    }

    /// Waits for the change set to be created: `true` when it is ready to execute, `false`
    /// when CloudFormation found nothing to change; an error naming CloudFormation's reason.
    async fn change_set_ready(&self, stack: &str, name: &str) -> anyhow::Result<bool> {
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            let answer = self
                .client
                .describe_change_set()
                .stack_name(stack)
                .change_set_name(name)
                .send()
                .await
                .map_err(|err| {
                    failed(
                        &format!("DescribeChangeSet {name}"),
                        cdkd_aws_common::error_line(&err),
                    )
                })?;
            match answer.status() {
                Some(ChangeSetStatus::CreateComplete) => return Ok(true),
                Some(ChangeSetStatus::Failed) => {
                    let reason = answer.status_reason().unwrap_or("no reason given");
                    if reason.contains("didn't contain changes")
                        || reason.contains("No updates are to be performed")
                    {
                        return Ok(false);
                    }
                    anyhow::bail!(
                        "CloudFormation refused change set {name} on stack {stack}: {reason}"
                    );
                }
                _ => {}
            }
            if started.elapsed() > Duration::from_secs(10 * 60) {
                anyhow::bail!(
                    "change set {name} on stack {stack} was not created within 10 minutes"
                );
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }

    /// The failed resources' reasons from the stack's events, as lines to append.
    async fn failure_reasons(&self, stack: &str) -> String {
        let Ok(answer) = self
            .client
            .describe_stack_events()
            .stack_name(stack)
            .send()
            .await
        else {
            return String::new();
        };
        let mut lines = Vec::new();
        for event in answer.stack_events() {
            let status = event
                .resource_status()
                .map(|s| s.as_str())
                .unwrap_or_default();
            let logical = event.logical_resource_id().unwrap_or_default();
            if status.ends_with("_FAILED") && logical != stack {
                lines.push(format!(
                    "\n  {logical} ({}): {status}: {}",
                    event.resource_type().unwrap_or_default(),
                    event.resource_status_reason().unwrap_or("no reason given")
                ));
            }
        }
        lines.reverse();
        lines.concat()
    }

    /// After a refused IMPORT, CloudFormation leaves the new stack behind (REVIEW_IN_PROGRESS,
    /// or IMPORT_ROLLBACK_COMPLETE): delete it when it holds no resource, so the next attempt
    /// does not find a stack in the way. One that holds any is left alone: deleting it could
    /// delete a resource.
    async fn remove_empty_review_stack(&self, stack: &str) {
        let Ok(Some(Described { status, .. })) = self.describe(stack).await else {
            return;
        };
        if status != "REVIEW_IN_PROGRESS" && status != "IMPORT_ROLLBACK_COMPLETE" {
            return;
        }
        let empty = self
            .stack_resources(stack)
            .await
            .is_ok_and(|resources| resources.is_empty());
        if empty {
            let _ = self.client.delete_stack().stack_name(stack).send().await;
            let _ = self.wait(stack, "DELETE_COMPLETE").await;
        } else {
            tracing::warn!("CloudFormation stack {stack} is {status} and still holds resources; it is left as it is");
        }
    }
}
