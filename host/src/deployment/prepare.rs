//! Preparing one stack of the app for the engine: its template with assets published, its
//! nested stacks' templates (from the assembly, recursively), its parameter values (SSM-backed
//! ones read), and the availability zones its templates ask for.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::deploy::{ParentStack, StackInput};
use crate::analyzer::plan::StackContext;
use crate::analyzer::ref_values::RefValues;
use crate::analyzer::template::Template;
use crate::assets::BucketRewrites;
use crate::aws_env::AwsEnvironment;
use crate::provisioning::preflight::NESTED_STACK;
use crate::provisioning::registry::Registry;
use crate::state::store::StateStore;
use crate::synthesis::assembly::{read_json, CloudAssembly, StackArtifact};

/// What preparing a stack needs besides the stack.
pub struct Preparation<'a> {
    /// The app.
    pub assembly: &'a CloudAssembly,
    /// Loaded plugins (availability zones are read through the EC2 plugin when loaded).
    pub registry: &'a Registry,
    /// AWS settings.
    pub aws: &'a AwsEnvironment,
    /// The state bucket (assets are published next to the records); `None` only for a plan
    /// (`cdkd diff`) where no state bucket exists yet.
    pub store: Option<&'a StateStore>,
    /// What `Ref` returns per type.
    pub ref_values: Arc<RefValues>,
    /// `--parameters` values.
    pub parameters: &'a BTreeMap<String, Value>,
    /// Publish the assets (`false`: `deploy --skip-assets`, they are in place already).
    pub publish_assets: bool,
}

impl Preparation<'_> {
    /// The engine's input for `stack` (its parsed `template`) deployed to `account` / `region`,
    /// its assets published.
    pub async fn stack_input(
        &self,
        stack: &StackArtifact,
        template: Template,
        account: String,
        region: String,
    ) -> anyhow::Result<StackInput> {
        if !self.publish_assets {
            tracing::debug!(
                "stack {}: assets not published (--skip-assets)",
                stack.display_name
            );
            return self.planned_input(stack, template, account, region).await;
        }
        let Some(store) = self.store else {
            anyhow::bail!(
                "stack {}: no state bucket to publish assets to; run `cdkd bootstrap`",
                stack.display_name
            );
        };
        let (template, rewrites) = crate::assets::publish_for_stack(
            self.assembly,
            stack,
            template,
            self.aws,
            store,
            &account,
            &region,
        )
        .await?;
        self.finish(stack, template, rewrites, account, region)
            .await
    }

    /// The same input with nothing published (`cdkd diff`): the same asset locations,
    /// parameter values, nested stacks and availability zones a deploy would plan with.
    pub async fn planned_input(
        &self,
        stack: &StackArtifact,
        template: Template,
        account: String,
        region: String,
    ) -> anyhow::Result<StackInput> {
        let (template, rewrites) = crate::assets::locate_for_stack(
            self.assembly,
            stack,
            template,
            self.aws,
            self.store,
            &account,
            &region,
        )
        .await?;
        self.finish(stack, template, rewrites, account, region)
            .await
    }

    async fn finish(
        &self,
        stack: &StackArtifact,
        template: Template,
        rewrites: BucketRewrites,
        account: String,
        region: String,
    ) -> anyhow::Result<StackInput> {
        let named =
            |err: &dyn std::fmt::Display| anyhow::anyhow!("stack {}: {err}", stack.display_name);
        let parameters =
            super::parameters::resolve(&template, self.parameters, self.aws, &region).await?;
        let mut input = StackInput {
            context: StackContext {
                stack_name: stack.stack_name.clone(),
                region,
                account,
                ref_values: self.ref_values.clone(),
                availability_zones: BTreeMap::new(),
            },
            template,
            parameters,
            children: BTreeMap::new(),
            parent: None,
        };
        let folder = stack.template_file.parent().unwrap_or(Path::new("."));
        input.children = nested_inputs(
            folder,
            &input,
            &rewrites,
            std::slice::from_ref(&stack.template_file),
        )?;
        let mut zone_regions = BTreeSet::new();
        visit(&input, &mut |stack| {
            zone_regions.extend(
                stack
                    .template
                    .availability_zone_regions(&stack.context.region),
            )
        });
        let mut zones = BTreeMap::new();
        for zone_region in zone_regions {
            let found = crate::provisioning::zones::availability_zones(
                self.registry,
                self.aws,
                &zone_region,
            )
            .await
            .map_err(|err| named(&err))?;
            zones.insert(zone_region, found);
        }
        set_zones(&mut input, &zones);
        Ok(input)
    }
}

fn visit(input: &StackInput, f: &mut dyn FnMut(&StackInput)) {
    f(input);
    for child in input.children.values() {
        visit(child, f);
    }
}

fn set_zones(input: &mut StackInput, zones: &BTreeMap<String, Vec<String>>) {
    input.context.availability_zones = zones.clone();
    for child in input.children.values_mut() {
        set_zones(child, zones);
    }
}

/// How deep nested stacks may nest under a top-level stack: real apps nest a few levels; a
/// deeper chain is refused by name instead of exhausting the stack.
const MAX_NESTING: usize = 16;

/// The nested stacks of `parent` whose templates the assembly holds (`aws:asset:path`
/// metadata naming a `*.nested.template.json` file beside the parent's template).
/// `ancestors` are the template files from the top-level stack down to `parent`'s.
fn nested_inputs(
    folder: &Path,
    parent: &StackInput,
    rewrites: &BucketRewrites,
    ancestors: &[std::path::PathBuf],
) -> anyhow::Result<BTreeMap<String, StackInput>> {
    let mut children = BTreeMap::new();
    for (logical_id, resource) in &parent.template.resources {
        if resource.kind != NESTED_STACK {
            continue;
        }
        let Some(path) = resource
            .metadata
            .as_ref()
            .and_then(|m| m.get("aws:asset:path"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let file = folder.join(path);
        let same = |a: &Path, b: &Path| {
            a == b
                || matches!(
                    (std::fs::canonicalize(a), std::fs::canonicalize(b)),
                    (Ok(a), Ok(b)) if a == b
                )
        };
        if ancestors.iter().any(|ancestor| same(ancestor, &file)) {
            anyhow::bail!(
                "stack {}: nested stack {logical_id} uses the template {}, which already encloses it: a stack cannot nest itself",
                parent.context.stack_name,
                file.display()
            );
        }
        if ancestors.len() > MAX_NESTING {
            anyhow::bail!(
                "stack {}: nested stack {logical_id} is nested more than {MAX_NESTING} levels deep",
                parent.context.stack_name
            );
        }
        let document = read_json(&file).map_err(|err| {
            anyhow::anyhow!(
                "stack {}: nested stack {logical_id}: {err}",
                parent.context.stack_name
            )
        })?;
        let template = Template::parse(&document).map_err(|err| {
            anyhow::anyhow!(
                "stack {}: nested stack {logical_id} ({}): {err}",
                parent.context.stack_name,
                file.display()
            )
        })?;
        let mut child = StackInput {
            context: StackContext {
                stack_name: format!("{}~{logical_id}", parent.context.stack_name),
                ..parent.context.clone()
            },
            template: rewrites.apply(template),
            parameters: BTreeMap::new(),
            children: BTreeMap::new(),
            parent: Some(ParentStack {
                stack: parent.context.stack_name.clone(),
                logical_id: logical_id.clone(),
                region: parent.context.region.clone(),
            }),
        };
        let within: Vec<std::path::PathBuf> =
            ancestors.iter().cloned().chain([file.clone()]).collect();
        child.children = nested_inputs(folder, &child, rewrites, &within)?;
        children.insert(logical_id.clone(), child);
    }
    Ok(children)
}
