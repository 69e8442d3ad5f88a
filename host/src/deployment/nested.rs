//! Nested stacks (`AWS::CloudFormation::Stack` with its template in the cloud assembly) as a
//! provider the engine itself implements: a create or update deploys the child stack through
//! the same engine (record `{parent}~{logicalId}`, under the parent's lock), a delete destroys
//! it. Its outputs are the resource's `Outputs.<Name>` attributes; its physical id (and `Ref`)
//! is a stable stack ARN.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use cdkd_provider_api::protocol::{CreateResult, DeleteResult, UpdateResult};
use cdkd_provider_api::ProviderError;
use serde_json::{Map, Value};

use super::deploy::{DeployOptions, StackInput};
use super::destroy::DestroyOptions;
use super::engine::Engine;
use super::external::StateSnapshot;
use crate::provisioning::operations::{
    CreateCall, DeleteCall, Observation, ProviderSet, ReadCall, ResourceOperations, UpdateCall,
};
use crate::provisioning::preflight::NESTED_STACK;
use crate::provisioning::router::Decision;
use crate::state::schema::{ProvisionedBy, ResourceState};

/// What deploying children needs (destroying them needs only the engine).
#[derive(Clone, Copy)]
pub struct ChildDeploys<'r> {
    /// The children's inputs, by logical id.
    pub children: &'r BTreeMap<String, StackInput>,
    /// Other stacks' records.
    pub snapshot: &'r StateSnapshot,
    /// The parent's options.
    pub options: &'r DeployOptions,
}

/// Nested stacks as resource operations.
pub struct NestedStacks<'r> {
    /// The engine that deploys and destroys children.
    pub engine: &'r Engine<'r>,
    /// The parent's region.
    pub region: String,
    /// `None` for destroy and rollback, which only delete children.
    pub deploys: Option<ChildDeploys<'r>>,
}

/// The stable id of a child stack (its physical id in the parent's record).
pub fn stack_id(partition: &str, region: &str, account: &str, stack: &str) -> String {
    format!("arn:{partition}:cloudformation:{region}:{account}:stack/{stack}/cdkd")
}

/// The child's stack name from its stable id.
fn child_of(physical_id: &str) -> Option<&str> {
    physical_id.split_once(":stack/")?.1.split('/').next()
}

impl NestedStacks<'_> {
    async fn deploy(
        &self,
        logical_id: &str,
        properties: &Map<String, Value>,
    ) -> Result<(String, Map<String, Value>, Vec<String>), ProviderError> {
        let Some(deploys) = self.deploys else {
            return Err(ProviderError::unsupported(format!(
                "nested stack {logical_id} can only be deployed with its parent"
            )));
        };
        let Some(child) = deploys.children.get(logical_id) else {
            return Err(ProviderError::validation(format!(
                "nested stack {logical_id}: its template is not in the cloud assembly"
            )));
        };
        let input = super::planning::child_input(child, properties);
        let deployed = Box::pin(self.engine.deploy_child(
            &input,
            deploys.snapshot,
            deploys.options,
        ))
        .await
        .map_err(|err| ProviderError::other(format!("nested stack {logical_id}: {err:#}")))?;
        let context = &input.context;
        let partition = crate::aws_env::partition(&context.region);
        let id = stack_id(
            partition,
            &context.region,
            &context.account,
            &context.stack_name,
        );
        // Outputs the child masked (NoEcho) reach the parent in plaintext for this run only,
        // declared sensitive so the parent's record masks them too.
        let mut attributes = Map::new();
        let mut sensitive = Vec::new();
        for (name, value) in &deployed.state.outputs {
            let key = format!("Outputs.{name}");
            match deployed.secret_outputs.get(name) {
                Some(plain) => {
                    attributes.insert(key.clone(), plain.clone());
                    sensitive.push(key);
                }
                None => {
                    attributes.insert(key, value.clone());
                }
            }
        }
        Ok((id, attributes, sensitive))
    }
}

#[async_trait]
impl ResourceOperations for NestedStacks<'_> {
    fn label(&self) -> String {
        "nested stack".into()
    }

    async fn create(&self, call: CreateCall<'_>) -> Result<CreateResult, ProviderError> {
        let CreateCall {
            logical_id,
            properties,
            ..
        } = call;
        let (physical_id, attributes, sensitive_attributes) =
            self.deploy(logical_id, properties).await?;
        Ok(CreateResult {
            physical_id,
            attributes,
            sensitive_attributes,
        })
    }

    async fn update(&self, call: UpdateCall<'_>) -> Result<UpdateResult, ProviderError> {
        let UpdateCall {
            logical_id,
            desired,
            ..
        } = call;
        let (physical_id, attributes, sensitive_attributes) =
            self.deploy(logical_id, desired).await?;
        Ok(UpdateResult {
            physical_id,
            attributes,
            sensitive_attributes,
            ..Default::default()
        })
    }

    async fn delete(&self, call: DeleteCall<'_>) -> Result<DeleteResult, ProviderError> {
        let DeleteCall {
            logical_id,
            physical_id,
            ..
        } = call;
        let Some(child) = child_of(physical_id) else {
            return Err(ProviderError::validation(format!(
                "nested stack {logical_id}: {physical_id} is not a stack id cdkd wrote"
            )));
        };
        let none = BTreeMap::new();
        let snapshot = StateSnapshot::default();
        let destroyed = self.engine.destroy_locked(
            child,
            &self.region,
            &none,
            &snapshot,
            DestroyOptions::default(),
        );
        Box::pin(destroyed)
            .await
            .map_err(|err| ProviderError::other(format!("nested stack {logical_id}: {err:#}")))?;
        Ok(DeleteResult::Deleted)
    }

    async fn read_current_state(&self, _call: ReadCall<'_>) -> Result<Observation, ProviderError> {
        // A nested stack's resources are read in its own record, not through the parent.
        Ok(Observation::NoReader)
    }
}

/// A provider set in which nested stacks go to [`NestedStacks`].
pub struct WithNested<'r> {
    /// Everything else.
    pub inner: Box<dyn ProviderSet + 'r>,
    /// Nested stacks.
    pub nested: NestedStacks<'r>,
}

impl ProviderSet for WithNested<'_> {
    fn for_decision(&self, resource_type: &str, decision: &Decision) -> &dyn ResourceOperations {
        match resource_type {
            NESTED_STACK => &self.nested,
            _ => self.inner.for_decision(resource_type, decision),
        }
    }

    fn for_layer(&self, resource_type: &str, layer: ProvisionedBy) -> &dyn ResourceOperations {
        match resource_type {
            NESTED_STACK => &self.nested,
            _ => self.inner.for_layer(resource_type, layer),
        }
    }

    fn for_record(&self, record: &ResourceState) -> &dyn ResourceOperations {
        match record.resource_type.as_str() {
            NESTED_STACK => &self.nested,
            _ => self.inner.for_record(record),
        }
    }

    fn for_snapshot(&self, resource_type: &str) -> Option<&dyn ResourceOperations> {
        self.inner.for_snapshot(resource_type)
    }
}

/// The logical ids of a stack's nested stacks.
pub fn nested_ids(input: &StackInput) -> BTreeSet<String> {
    input.children.keys().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_found_from_its_stack_id() {
        let id = stack_id("aws", "us-east-1", "123456789012", "Parent~Child");
        assert_eq!(child_of(&id), Some("Parent~Child"));
        assert_eq!(child_of("not-an-arn"), None);
    }
}
