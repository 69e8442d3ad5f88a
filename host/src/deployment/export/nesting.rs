//! The CloudFormation side of nesting exported stacks: the tag flip that takes a child out of
//! `IMPORT_COMPLETE` (which AWS refuses to nest), and what the parent's IMPORT needs of each
//! child: its stack id, tags and current template.

use std::collections::BTreeMap;

use aws_sdk_cloudformation::types::{Capability, Parameter, Tag, TemplateStage};

use crate::deployment::migrate::{failed, CloudFormation, Described};

/// The tag the flip adds; the parent's IMPORT forwards it, and phase 2 drops it again.
pub const FLIP_TAG: &str = "cdkd:nested-export-flip";

impl CloudFormation {
    /// Takes `stack` out of `IMPORT_COMPLETE` with a tags-only update (AWS nests no stack in
    /// that status); answers the stack as it is afterwards.
    pub async fn flip(&self, stack: &str, described: &Described) -> anyhow::Result<Described> {
        if described.status != "IMPORT_COMPLETE" {
            return Ok(described.clone());
        }
        let mut tags: Vec<Tag> = described
            .tags
            .iter()
            .filter(|(key, _)| key != FLIP_TAG)
            .map(|(key, value)| Tag::builder().key(key).value(value).build())
            .collect();
        tags.push(
            Tag::builder()
                .key(FLIP_TAG)
                .value(chrono::Utc::now().timestamp_millis().to_string())
                .build(),
        );
        let parameters: Vec<Parameter> = described
            .parameters
            .iter()
            .map(|key| {
                Parameter::builder()
                    .parameter_key(key)
                    .use_previous_value(true)
                    .build()
            })
            .collect();
        self.client
            .update_stack()
            .stack_name(stack)
            .use_previous_template(true)
            .set_parameters(Some(parameters))
            .set_tags(Some(tags))
            .capabilities(Capability::CapabilityIam)
            .capabilities(Capability::CapabilityNamedIam)
            .capabilities(Capability::CapabilityAutoExpand)
            .send()
            .await
            .map_err(|err| {
                failed(
                    &format!("UpdateStack {stack} (tags only, to leave IMPORT_COMPLETE)"),
                    cdkd_aws_common::error_line(&err),
                )
            })?;
        self.wait(stack, "UPDATE_COMPLETE").await?;
        self.describe(stack)
            .await?
            .ok_or_else(|| anyhow::anyhow!("CloudFormation stack {stack} is gone after its update"))
    }

    /// The stack's template as CloudFormation holds it (what nesting it must match).
    pub async fn processed_template(&self, stack: &str) -> anyhow::Result<String> {
        let answer = self
            .client
            .get_template()
            .stack_name(stack)
            .template_stage(TemplateStage::Processed)
            .send()
            .await
            .map_err(|err| failed(&format!("GetTemplate {stack}"), err))?;
        answer
            .template_body()
            .map(str::to_string)
            .ok_or_else(|| anyhow::anyhow!("CloudFormation GetTemplate {stack}: no template body"))
    }
}

/// What a parent's template needs of one child to nest it.
#[derive(Debug, Clone, PartialEq)]
pub struct Nest {
    /// The child's stack id (its `ResourceIdentifier` and physical id).
    pub stack_id: String,
    /// Where its current template was uploaded.
    pub template_url: String,
    /// Its tags (the flip tag included), which the parent's IMPORT must carry exactly.
    pub tags: Vec<(String, String)>,
    /// The parameter values the parent passes it, resolved: the IMPORT carries them as
    /// literals, which match the stack's values whatever CloudFormation could resolve.
    pub parameters: BTreeMap<String, String>,
}

/// Points each child resource of `template` at its uploaded template; for the IMPORT that
/// nests them (`importing`), also `DeletionPolicy: Retain`, the child's tags and its resolved
/// parameters, which AWS checks against the existing stack.
pub fn point_children(
    template: &mut serde_json::Value,
    nests: &BTreeMap<String, Nest>,
    importing: bool,
) {
    use serde_json::{json, Value};
    let Some(resources) = template.get_mut("Resources").and_then(Value::as_object_mut) else {
        return;
    };
    for (logical_id, nest) in nests {
        let Some(resource) = resources.get_mut(logical_id) else {
            continue;
        };
        resource["Properties"]["TemplateURL"] = Value::String(nest.template_url.clone());
        if importing {
            resource["DeletionPolicy"] = json!("Retain");
            resource["Properties"]["Tags"] = nest
                .tags
                .iter()
                .map(|(key, value)| json!({"Key": key, "Value": value}))
                .collect();
            if !nest.parameters.is_empty() {
                resource["Properties"]["Parameters"] = nest
                    .parameters
                    .iter()
                    .map(|(key, value)| (key.clone(), Value::String(value.clone())))
                    .collect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn children_point_at_their_uploads_and_the_import_carries_retain_and_tags() {
        let template = json!({"Resources": {
            "Child": {"Type": "AWS::CloudFormation::Stack", "DeletionPolicy": "Delete",
                      "Properties": {"TemplateURL": {"Fn::Join": ["", ["https://", "x"]]}, "Parameters": {"P": {"Ref": "Q"}}}},
            "Q": {"Type": "AWS::SQS::Queue"}
        }});
        let nests = BTreeMap::from([(
            "Child".to_string(),
            Nest {
                stack_id: "arn:aws:cloudformation:us-east-1:1:stack/P-Child/abc".into(),
                template_url: "https://b.s3.us-east-1.amazonaws.com/k".into(),
                tags: vec![(FLIP_TAG.into(), "1".into())],
                parameters: BTreeMap::from([("P".to_string(), "queue-1".to_string())]),
            },
        )]);
        let mut importing = template.clone();
        point_children(&mut importing, &nests, true);
        let child = &importing["Resources"]["Child"];
        assert_eq!(child["DeletionPolicy"], "Retain");
        assert_eq!(
            child["Properties"]["TemplateURL"],
            "https://b.s3.us-east-1.amazonaws.com/k"
        );
        assert_eq!(
            child["Properties"]["Tags"],
            json!([{"Key": FLIP_TAG, "Value": "1"}])
        );
        assert_eq!(child["Properties"]["Parameters"], json!({"P": "queue-1"}));
        let mut updating = template.clone();
        point_children(&mut updating, &nests, false);
        let child = &updating["Resources"]["Child"];
        assert_eq!(child["DeletionPolicy"], "Delete");
        assert!(child["Properties"].get("Tags").is_none());
        assert_eq!(
            child["Properties"]["Parameters"],
            json!({"P": {"Ref": "Q"}})
        );
        assert_eq!(importing["Resources"]["Q"], template["Resources"]["Q"]);
    }
}
