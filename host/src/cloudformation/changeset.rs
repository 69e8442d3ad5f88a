//! The change sets of an export: the IMPORT of phase 1 and the UPDATE of phase 2, each
//! created, waited for, executed and waited for again; on failure, the per-resource reasons
//! from the stack's events (the stack status alone says only that it rolled back).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::staging::{stage, TemplateStaging};
use super::{
    failed, ChangeSetKind, ChangeSetRequest, CloudFormation, Described, TemplateSource,
    INLINE_LIMIT,
};

/// A template as sent: its text, in the source's format.
pub struct Body {
    /// The rendered template.
    pub text: String,
    /// `json` or `yaml`, for the transient upload's name.
    pub extension: &'static str,
}

/// One resource of the IMPORT change set.
#[derive(Debug, Clone, PartialEq)]
pub struct ToImport {
    /// The logical id.
    pub logical_id: String,
    /// The type.
    pub resource_type: String,
    /// The `ResourceIdentifier`.
    pub identifier: Map<String, Value>,
}

/// How a change set came out.
#[derive(Debug, PartialEq, Eq)]
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
        staging: &dyn TemplateStaging,
    ) -> anyhow::Result<()> {
        let outcome = self
            .change_set(
                stack,
                ChangeSetKind::Import,
                body,
                parameters,
                Some(resources.to_vec()),
                staging,
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
        staging: &dyn TemplateStaging,
    ) -> anyhow::Result<Outcome> {
        self.change_set(
            stack,
            ChangeSetKind::Update,
            body,
            parameters,
            None,
            staging,
        )
        .await
    }

    async fn change_set(
        &self,
        stack: &str,
        kind: ChangeSetKind,
        body: &Body,
        parameters: &BTreeMap<String, String>,
        to_import: Option<Vec<ToImport>>,
        staging: &dyn TemplateStaging,
    ) -> anyhow::Result<Outcome> {
        let name = format!(
            "cdkd-export-{}-{}",
            kind.as_str().to_lowercase(),
            chrono::Utc::now().timestamp_millis()
        );
        let mut uploads = Vec::new();
        let result = async {
            let template = if body.text.len() > INLINE_LIMIT {
                TemplateSource::Url(
                    stage(
                        staging,
                        stack,
                        &format!("export-{}.{}", kind.as_str().to_lowercase(), body.extension),
                        body.text.clone().into_bytes(),
                        &mut uploads,
                    )
                    .await?,
                )
            } else {
                TemplateSource::Body(body.text.clone())
            };
            let request = ChangeSetRequest {
                stack: stack.to_string(),
                name: name.clone(),
                kind,
                template,
                parameters: parameters.clone(),
                resources_to_import: to_import,
            };
            self.api
                .create_change_set(&request)
                .await
                .map_err(|err| failed(&format!("CreateChangeSet {name} on {stack}"), err.line))?;
            if !self.change_set_ready(stack, &name).await? {
                return Ok(Outcome::NoChanges);
            }
            self.api
                .execute_change_set(stack, &name)
                .await
                .map_err(|err| failed(&format!("ExecuteChangeSet {name} on {stack}"), err.line))?;
            let done = match kind {
                ChangeSetKind::Import => "IMPORT_COMPLETE",
                ChangeSetKind::Update => "UPDATE_COMPLETE",
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
            staging.purge(key).await;
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
                .api
                .describe_change_set(stack, name)
                .await
                .map_err(|err| failed(&format!("DescribeChangeSet {name}"), err.line))?;
            match answer.status.as_str() {
                "CREATE_COMPLETE" => return Ok(true),
                "FAILED" => {
                    let reason = answer.status_reason.as_deref().unwrap_or("no reason given");
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
        let Ok(events) = self.api.describe_stack_events(stack).await else {
            return String::new();
        };
        let mut lines = Vec::new();
        for event in events {
            if event.status.ends_with("_FAILED") && event.logical_id != stack {
                lines.push(format!(
                    "\n  {} ({}): {}: {}",
                    event.logical_id,
                    event.resource_type,
                    event.status,
                    event.reason.as_deref().unwrap_or("no reason given")
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
            let _ = self.api.delete_stack(stack).await;
            let _ = self.wait(stack, "DELETE_COMPLETE").await;
        } else {
            tracing::warn!("CloudFormation stack {stack} is {status} and still holds resources; it is left as it is");
        }
    }
}
