//! Preparing one stack of the app for the engine: its template with assets published, its
//! parameter values (SSM-backed ones read), and the availability zones its template asks for.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::deploy::StackInput;
use crate::analyzer::plan::StackContext;
use crate::analyzer::ref_values::RefValues;
use crate::analyzer::template::Template;
use crate::aws_env::AwsEnvironment;
use crate::provisioning::registry::Registry;
use crate::state::store::StateStore;
use crate::synthesis::assembly::{CloudAssembly, StackArtifact};

/// What preparing a stack needs besides the stack.
pub struct Preparation<'a> {
    /// The app.
    pub assembly: &'a CloudAssembly,
    /// Loaded plugins (availability zones are read through the EC2 plugin when loaded).
    pub registry: &'a Registry,
    /// AWS settings.
    pub aws: &'a AwsEnvironment,
    /// The state bucket (assets are published next to the records).
    pub store: &'a StateStore,
    /// What `Ref` returns per type.
    pub ref_values: Arc<RefValues>,
    /// `--parameters` values.
    pub parameters: &'a BTreeMap<String, Value>,
}

impl Preparation<'_> {
    /// The engine's input for `stack` deployed to `account` / `region`.
    pub async fn stack_input(
        &self,
        stack: &StackArtifact,
        account: String,
        region: String,
    ) -> anyhow::Result<StackInput> {
        let named =
            |err: &dyn std::fmt::Display| anyhow::anyhow!("stack {}: {err}", stack.display_name);
        let template = Template::parse(&stack.template()?).map_err(|err| named(&err))?;
        let template = crate::assets::publish_for_stack(
            self.assembly,
            stack,
            template,
            self.aws,
            self.store,
            &account,
            &region,
        )
        .await?;
        let parameters =
            super::parameters::resolve(&template, self.parameters, self.aws, &region).await?;
        let mut availability_zones = BTreeMap::new();
        for zone_region in template.availability_zone_regions(&region) {
            let zones = crate::provisioning::zones::availability_zones(
                self.registry,
                self.aws,
                &zone_region,
            )
            .await
            .map_err(|err| named(&err))?;
            availability_zones.insert(zone_region, zones);
        }
        Ok(StackInput {
            context: StackContext {
                stack_name: stack.stack_name.clone(),
                region,
                account,
                ref_values: self.ref_values.clone(),
                availability_zones,
            },
            template,
            parameters,
        })
    }
}
