//! Retiring a stack whose resources cdkd now holds (`cdkd import
//! --migrate-from-cloudformation`), without deleting anything: `DeletionPolicy: Retain` and
//! `UpdateReplacePolicy: Retain` are put on every resource with an update, then the stack is
//! deleted. A template over CloudFormation's inline limit goes through the staging and is
//! purged afterwards.

use std::collections::BTreeMap;

use serde_json::Value;

use super::staging::{stage, TemplateStaging};
use super::{
    failed, nested_stacks, CloudFormation, StackUpdate, TemplateSource, TemplateStage,
    INLINE_LIMIT, NESTED_STACK,
};

impl CloudFormation {
    /// Retires the stack, keeping every resource: Retain policies first (nested stacks'
    /// resources included, through their templates), then the delete, which takes the nested
    /// stacks with it.
    pub async fn retire(&self, stack: &str, staging: &dyn TemplateStaging) -> anyhow::Result<()> {
        let mut uploads = Vec::new();
        let retained = self.retained_template(stack, staging, &mut uploads).await;
        let updated = match retained {
            Ok((template, true)) => self.update_retained(stack, &template, staging).await,
            Ok((_, false)) => Ok(()),
            Err(err) => Err(err),
        };
        for key in &uploads {
            staging.purge(key).await;
        }
        updated?;
        (self.api.delete_stack(stack).await)
            .map_err(|err| failed(&format!("DeleteStack {stack}"), err))?;
        self.wait(stack, "DELETE_COMPLETE").await
    }

    /// `stack`'s template with Retain on every resource but its nested stacks, whose own
    /// templates get the same and are uploaded for the update to read; whether it changed.
    #[allow(
        clippy::expect_used,
        reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
    )]
    async fn retained_template(
        &self,
        stack: &str,
        staging: &dyn TemplateStaging,
        uploads: &mut Vec<String>,
    ) -> anyhow::Result<(Value, bool)> {
        let body = (self.api.get_template(stack, TemplateStage::Original).await)
            .map_err(|err| failed(&format!("GetTemplate {stack}"), err))?
            .unwrap_or_default();
        let mut template = parse_template(&body)
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
                Box::pin(self.retained_template(child, staging, uploads)).await?;
            if !child_changed {
                continue;
            }
            let body = serde_json::to_vec(&child_template).expect("a template serialises");
            let url = stage(staging, stack, &format!("{logical_id}.json"), body, uploads).await?;
            template["Resources"][&logical_id]["Properties"]["TemplateURL"] = Value::String(url);
            changed = true;
        }
        Ok((template, changed))
    }

    #[allow(
        clippy::expect_used,
        reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
    )]
    async fn update_retained(
        &self,
        stack: &str,
        template: &Value,
        staging: &dyn TemplateStaging,
    ) -> anyhow::Result<()> {
        let body = serde_json::to_string(template).expect("a template serialises");
        let (current, _) = self.values(stack).await?;
        let mut uploads = Vec::new();
        let source = if body.len() > INLINE_LIMIT {
            let name = "template.json";
            TemplateSource::Url(stage(staging, stack, name, body.into_bytes(), &mut uploads).await?)
        } else {
            TemplateSource::Body(body)
        };
        let update = StackUpdate {
            stack: stack.to_string(),
            template: source,
            previous_parameters: current.keys().cloned().collect(),
            tags: None,
        };
        let result = match self.api.update_stack(&update).await {
            Ok(()) => self.wait(stack, "UPDATE_COMPLETE").await,
            Err(err) if err.context.contains("No updates are to be performed") => Ok(()),
            Err(err) => Err(failed(&format!("UpdateStack {stack}"), err.context)),
        };
        for key in &uploads {
            staging.purge(key).await;
        }
        result
    }
}

/// A template body cdkd cannot rewrite (the YAML parser's error).
#[derive(Debug, thiserror::Error)]
#[error("it is neither JSON nor YAML cdkd can rewrite ({0}); YAML with short-form intrinsics (!Ref, !Sub, ...) is not supported yet: set DeletionPolicy: Retain on its resources and delete the stack yourself")]
struct UnreadableTemplate(serde_yaml::Error);

/// A template body as `GetTemplate` returns it: JSON, or YAML without short-form tags.
fn parse_template(body: &str) -> Result<Value, UnreadableTemplate> {
    if let Ok(template) = serde_json::from_str(body) {
        return Ok(template);
    }
    serde_yaml::from_str(body).map_err(UnreadableTemplate)
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
        // The advice is what the user acts on.
        assert!(err.to_string().contains("short-form"), "{err}");
    }
}
