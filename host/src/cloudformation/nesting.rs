//! What nesting an existing stack into a parent needs of CloudFormation: the tag flip that
//! takes a child out of `IMPORT_COMPLETE` (which AWS refuses to nest), and the child's
//! current template.

use super::{failed, CloudFormation, Described, StackUpdate, TemplateSource, TemplateStage};

/// The tag the flip adds; the parent's IMPORT forwards it, and phase 2 drops it again.
pub const FLIP_TAG: &str = "cdkd:nested-export-flip";

impl CloudFormation {
    /// Takes `stack` out of `IMPORT_COMPLETE` with a tags-only update (AWS nests no stack in
    /// that status); answers the stack as it is afterwards.
    pub async fn flip(&self, stack: &str, described: &Described) -> anyhow::Result<Described> {
        if described.status != "IMPORT_COMPLETE" {
            return Ok(described.clone());
        }
        let mut tags: Vec<(String, String)> = (described.tags.iter())
            .filter(|(key, _)| key != FLIP_TAG)
            .cloned()
            .collect();
        tags.push((
            FLIP_TAG.to_string(),
            chrono::Utc::now().timestamp_millis().to_string(),
        ));
        let update = StackUpdate {
            stack: stack.to_string(),
            template: TemplateSource::Previous,
            previous_parameters: described.parameters.clone(),
            tags: Some(tags),
        };
        self.api.update_stack(&update).await.map_err(|err| {
            failed(
                &format!("UpdateStack {stack} (tags only, to leave IMPORT_COMPLETE)"),
                err.line,
            )
        })?;
        self.wait(stack, "UPDATE_COMPLETE").await?;
        self.describe(stack)
            .await?
            .ok_or_else(|| anyhow::anyhow!("CloudFormation stack {stack} is gone after its update"))
    }

    /// The stack's template as CloudFormation holds it (what nesting it must match).
    pub async fn processed_template(&self, stack: &str) -> anyhow::Result<String> {
        (self.api.get_template(stack, TemplateStage::Processed).await)
            .map_err(|err| failed(&format!("GetTemplate {stack}"), err))?
            .ok_or_else(|| anyhow::anyhow!("CloudFormation GetTemplate {stack}: no template body"))
    }
}
