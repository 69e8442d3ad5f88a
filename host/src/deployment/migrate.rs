//! `cdkd import --migrate-from-cloudformation`: the CloudFormation side. Reading what a
//! stack holds (its status and `ListStackResources`), and, once cdkd has recorded every
//! resource, retiring the stack without deleting anything: `DeletionPolicy: Retain` and
//! `UpdateReplacePolicy: Retain` are put on every resource with an update, then the stack is
//! deleted. A template over CloudFormation's inline limit goes through the state bucket and
//! is purged afterwards (the purge table's transient template).

use std::time::{Duration, Instant};

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::aws_env::AwsEnvironment;
use crate::provisioning::preflight::NESTED_STACK;
use crate::state::backend::StateBackend;
use crate::state::purge::{purge_and_report, PurgeLogLevel, PurgedObject};

/// The largest template `UpdateStack` takes inline, in bytes.
pub(crate) const INLINE_LIMIT: usize = 51_200;

/// Stack statuses a stack can be migrated from, or an interrupted export taken up again in:
/// settled, and not being rolled back or deleted.
pub(crate) const SETTLED: &[&str] = &[
    "CREATE_COMPLETE",
    "UPDATE_COMPLETE",
    "UPDATE_ROLLBACK_COMPLETE",
    "IMPORT_COMPLETE",
    "IMPORT_ROLLBACK_COMPLETE",
];

/// A CloudFormation stack as `DescribeStacks` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// Its ARN.
    pub stack_id: String,
    /// Its status.
    pub status: String,
    /// Why it is in that status, when CloudFormation says.
    pub status_reason: Option<String>,
    /// The stack it is nested in, if any.
    pub parent_id: Option<String>,
    /// Its tags, in CloudFormation's order.
    pub tags: Vec<(String, String)>,
    /// Its parameter keys.
    pub parameters: Vec<String>,
}

impl Described {
    /// Whether the stack is settled: not in progress, failed, rolled back or deleted.
    pub fn settled(&self) -> bool {
        SETTLED.contains(&self.status.as_str())
    }
}

/// One resource of a CloudFormation stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackResource {
    /// Its logical id.
    pub logical_id: String,
    /// Its type.
    pub resource_type: String,
    /// CloudFormation's physical id (absent for some types).
    pub physical_id: Option<String>,
}

/// A CloudFormation client for one region.
pub struct CloudFormation {
    pub(crate) client: aws_sdk_cloudformation::Client,
    pub(crate) region: String,
}

pub(crate) fn failed(what: &str, err: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("CloudFormation {what}: {err}")
}

impl CloudFormation {
    /// A client for `region`.
    pub fn new(aws: &AwsEnvironment, region: &str) -> CloudFormation {
        let config = aws_sdk_cloudformation::config::Builder::from(aws.sdk_config())
            .region(aws_sdk_cloudformation::config::Region::new(
                region.to_string(),
            ))
            .build();
        CloudFormation {
            client: aws_sdk_cloudformation::Client::from_conf(config),
            region: region.to_string(),
        }
    }

    /// The stack, `None` when there is none of that name.
    pub async fn describe(&self, stack: &str) -> anyhow::Result<Option<Described>> {
        match self.client.describe_stacks().stack_name(stack).send().await {
            Ok(answer) => Ok(answer.stacks().first().map(|s| Described {
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
                parameters: s
                    .parameters()
                    .iter()
                    .filter_map(|p| p.parameter_key().map(str::to_string))
                    .collect(),
            })),
            Err(err) => {
                let text = aws_sdk_cloudformation::error::DisplayErrorContext(&err).to_string();
                if text.contains("does not exist") {
                    Ok(None)
                } else {
                    Err(failed(&format!("DescribeStacks {stack}"), text))
                }
            }
        }
    }

    /// The resources of a settled stack.
    pub async fn resources(&self, stack: &str) -> anyhow::Result<Vec<StackResource>> {
        match self.describe(stack).await? {
            None => anyhow::bail!(
                "there is no CloudFormation stack {stack} in {}; name the stack to migrate with --migrate-from-cloudformation NAME",
                self.region
            ),
            Some(described) if !described.settled() => anyhow::bail!(
                "CloudFormation stack {stack} is {}; migrate it once it is one of {}",
                described.status,
                SETTLED.join(", ")
            ),
            Some(_) => self.stack_resources(stack).await,
        }
    }

    /// Every resource of the stack, whatever its status: `ListStackResources`, page by page
    /// (`DescribeStackResources` answers only the first 100).
    pub(crate) async fn stack_resources(&self, stack: &str) -> anyhow::Result<Vec<StackResource>> {
        let mut pages = self
            .client
            .list_stack_resources()
            .stack_name(stack)
            .into_paginator()
            .send();
        let mut resources = Vec::new();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|err| {
                failed(
                    &format!("ListStackResources {stack}"),
                    cdkd_aws_common::error_line(&err),
                )
            })?;
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

    /// The stack's parameter values and outputs, by name (CloudFormation reports them as
    /// strings; `NoEcho` parameters as `****`).
    pub async fn values(
        &self,
        stack: &str,
    ) -> anyhow::Result<(BTreeMap<String, Value>, Map<String, Value>)> {
        let answer = self
            .client
            .describe_stacks()
            .stack_name(stack)
            .send()
            .await
            .map_err(|err| failed(&format!("DescribeStacks {stack}"), err))?;
        let Some(described) = answer.stacks().first() else {
            return Ok(Default::default());
        };
        let parameters =
            (described.parameters().iter()).map(|p| (p.parameter_key(), p.parameter_value()));
        let outputs = (described.outputs().iter()).map(|o| (o.output_key(), o.output_value()));
        Ok((by_name(parameters), by_name(outputs)))
    }

    /// Retires the stack, keeping every resource: Retain policies first (nested stacks'
    /// resources included, through their templates), then the delete, which takes the nested
    /// stacks with it.
    pub async fn retire(&self, stack: &str, bucket: &StateBackend) -> anyhow::Result<()> {
        let mut uploads = Vec::new();
        let retained = self.retained_template(stack, bucket, &mut uploads).await;
        let updated = match retained {
            Ok((template, true)) => self.update_retained(stack, &template, bucket).await,
            Ok((_, false)) => Ok(()),
            Err(err) => Err(err),
        };
        for key in &uploads {
            purge_upload(bucket, key).await;
        }
        updated?;
        self.client
            .delete_stack()
            .stack_name(stack)
            .send()
            .await
            .map_err(|err| failed(&format!("DeleteStack {stack}"), err))?;
        self.wait(stack, "DELETE_COMPLETE").await
    }

    /// `stack`'s template with Retain on every resource but its nested stacks, whose own
    /// templates get the same and are uploaded for the update to read; whether it changed.
    async fn retained_template(
        &self,
        stack: &str,
        bucket: &StateBackend,
        uploads: &mut Vec<String>,
    ) -> anyhow::Result<(Value, bool)> {
        let answer = self
            .client
            .get_template()
            .stack_name(stack)
            .template_stage(aws_sdk_cloudformation::types::TemplateStage::Original)
            .send()
            .await
            .map_err(|err| failed(&format!("GetTemplate {stack}"), err))?;
        let body = answer.template_body().unwrap_or_default();
        let mut template = parse_template(body)
            .map_err(|err| anyhow::anyhow!("CloudFormation stack {stack}'s template: {err}"))?;
        let mut changed = retain_everything(&mut template);
        let nested: Vec<String> = nested_stacks(&template);
        if nested.is_empty() {
            return Ok((template, changed));
        }
        let children: BTreeMap<String, String> = self
            .resources(stack)
            .await?
            .into_iter()
            .filter_map(|r| Some((r.logical_id, r.physical_id?)))
            .collect();
        for logical_id in nested {
            let Some(child) = children.get(&logical_id) else {
                anyhow::bail!(
                    "CloudFormation stack {stack}: nested stack {logical_id} has no stack"
                );
            };
            let (child_template, child_changed) =
                Box::pin(self.retained_template(child, bucket, uploads)).await?;
            if !child_changed {
                continue;
            }
            let body = serde_json::to_vec(&child_template).expect("a template serialises");
            let url = self
                .upload(bucket, stack, &format!("{logical_id}.json"), body, uploads)
                .await?;
            template["Resources"][&logical_id]["Properties"]["TemplateURL"] = Value::String(url);
            changed = true;
        }
        Ok((template, changed))
    }

    /// Puts a transient template into the state bucket under `name` (with its extension);
    /// answers its URL.
    pub(crate) async fn upload(
        &self,
        bucket: &StateBackend,
        stack: &str,
        name: &str,
        body: Vec<u8>,
        uploads: &mut Vec<String>,
    ) -> anyhow::Result<String> {
        let millis = chrono::Utc::now().timestamp_millis();
        let key = format!("cdkd-migrate-tmp/{stack}/{millis}-{name}");
        bucket.put_json(&key, body).await?;
        uploads.push(key.clone());
        Ok(format!(
            "https://{}.s3.{}.{}/{key}",
            bucket.bucket(),
            self.region,
            crate::aws_env::url_suffix(&self.region)
        ))
    }

    async fn update_retained(
        &self,
        stack: &str,
        template: &Value,
        bucket: &StateBackend,
    ) -> anyhow::Result<()> {
        let body = serde_json::to_string(template).expect("a template serialises");
        let (current, _) = self.values(stack).await?;
        let parameters: Vec<aws_sdk_cloudformation::types::Parameter> = current
            .keys()
            .map(|key| {
                aws_sdk_cloudformation::types::Parameter::builder()
                    .parameter_key(key)
                    .use_previous_value(true)
                    .build()
            })
            .collect();
        let mut update = self
            .client
            .update_stack()
            .stack_name(stack)
            .set_parameters(Some(parameters))
            .capabilities(aws_sdk_cloudformation::types::Capability::CapabilityIam)
            .capabilities(aws_sdk_cloudformation::types::Capability::CapabilityNamedIam)
            .capabilities(aws_sdk_cloudformation::types::Capability::CapabilityAutoExpand);
        let mut uploads = Vec::new();
        if body.len() > INLINE_LIMIT {
            let url = self
                .upload(
                    bucket,
                    stack,
                    "template.json",
                    body.into_bytes(),
                    &mut uploads,
                )
                .await?;
            update = update.template_url(url);
        } else {
            update = update.template_body(body);
        }
        let sent = update.send().await;
        let result = match sent {
            Ok(_) => self.wait(stack, "UPDATE_COMPLETE").await,
            Err(err) => {
                let text = aws_sdk_cloudformation::error::DisplayErrorContext(&err).to_string();
                if text.contains("No updates are to be performed") {
                    Ok(())
                } else {
                    Err(failed(&format!("UpdateStack {stack}"), text))
                }
            }
        };
        for key in &uploads {
            purge_upload(bucket, key).await;
        }
        result
    }

    /// Polls until the stack reaches `done` (gone counts as deleted), or fails naming why.
    pub(crate) async fn wait(&self, stack: &str, done: &str) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        loop {
            match self
                .describe(stack)
                .await?
                .map(|d| (d.status, d.status_reason))
            {
                None if done == "DELETE_COMPLETE" => return Ok(()),
                Some((status, _)) if status == done => return Ok(()),
                Some((status, reason))
                    if status.ends_with("_FAILED")
                        || status.ends_with("ROLLBACK_COMPLETE")
                        || (status.ends_with("_COMPLETE") && status != done) =>
                {
                    anyhow::bail!(
                        "CloudFormation stack {stack} ended {status}{}",
                        reason.map(|r| format!(": {r}")).unwrap_or_default()
                    )
                }
                _ => {}
            }
            if started.elapsed() > Duration::from_secs(30 * 60) {
                anyhow::bail!(
                    "CloudFormation stack {stack} did not reach {done} within 30 minutes"
                );
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
    }
}

/// `(name, value)` pairs CloudFormation reports as a map of strings (incomplete ones left out).
fn by_name<'a, C: FromIterator<(String, Value)>>(
    pairs: impl Iterator<Item = (Option<&'a str>, Option<&'a str>)>,
) -> C {
    pairs
        .filter_map(|(name, value)| Some((name?.to_string(), Value::String(value?.to_string()))))
        .collect()
}

/// Deletes a transient template upload and every earlier version of it (warns on failure).
pub(crate) async fn purge_upload(bucket: &StateBackend, key: &str) {
    let _ = bucket.delete_object(key).await;
    purge_and_report(
        bucket.client(),
        bucket.bucket(),
        key,
        PurgedObject::TransientTemplate,
        PurgeLogLevel::Warn,
    )
    .await;
}

/// The logical ids of a template's nested stacks.
pub(crate) fn nested_stacks(template: &Value) -> Vec<String> {
    template
        .get("Resources")
        .and_then(Value::as_object)
        .map(|resources| {
            resources
                .iter()
                .filter(|(_, r)| r.get("Type").and_then(Value::as_str) == Some(NESTED_STACK))
                .map(|(id, _)| id.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// A template body as `GetTemplate` returns it: JSON, or YAML without short-form tags.
fn parse_template(body: &str) -> Result<Value, String> {
    if let Ok(template) = serde_json::from_str(body) {
        return Ok(template);
    }
    serde_yaml::from_str(body).map_err(|err| {
        format!("it is neither JSON nor YAML cdkd can rewrite ({err}); YAML with short-form intrinsics (!Ref, !Sub, ...) is not supported yet: set DeletionPolicy: Retain on its resources and delete the stack yourself")
    })
}

/// Puts `Retain` on every resource's `DeletionPolicy` and `UpdateReplacePolicy`, except on
/// nested stacks (deleting the parent must delete them; their resources are retained through
/// their own templates); whether anything changed.
fn retain_everything(template: &mut Value) -> bool {
    let mut changed = false;
    if let Some(resources) = template.get_mut("Resources").and_then(Value::as_object_mut) {
        for resource in resources.values_mut() {
            let Some(resource) = resource.as_object_mut() else {
                continue;
            };
            if resource.get("Type").and_then(Value::as_str) == Some(NESTED_STACK) {
                continue;
            }
            for policy in ["DeletionPolicy", "UpdateReplacePolicy"] {
                if resource.get(policy).and_then(Value::as_str) != Some("Retain") {
                    resource.insert(policy.into(), Value::String("Retain".into()));
                    changed = true;
                }
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_resource_is_retained_once() {
        let mut template = json!({"Resources": {
            "A": {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Delete"},
            "B": {"Type": "AWS::SNS::Topic", "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"},
            "Child": {"Type": "AWS::CloudFormation::Stack", "Properties": {"TemplateURL": "u"}}}});
        assert!(retain_everything(&mut template));
        assert!(template["Resources"]["Child"]
            .get("DeletionPolicy")
            .is_none());
        assert_eq!(nested_stacks(&template), ["Child"]);
        assert_eq!(
            template["Resources"]["A"]["DeletionPolicy"],
            json!("Retain")
        );
        assert_eq!(
            template["Resources"]["A"]["UpdateReplacePolicy"],
            json!("Retain")
        );
        assert!(!retain_everything(&mut template));
    }

    #[test]
    fn json_and_plain_yaml_templates_are_read_and_short_forms_are_refused() {
        assert!(parse_template(r#"{"Resources": {}}"#).is_ok());
        let yaml = parse_template("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n").unwrap();
        assert_eq!(yaml["Resources"]["Q"]["Type"], json!("AWS::SQS::Queue"));
        let err =
            parse_template("Resources:\n  Q:\n    Type: X\n    Properties:\n      A: !Ref B\n")
                .unwrap_err();
        assert!(err.contains("short-form"), "{err}");
    }
}
