//! The engine's seam to AWS, after OpenTofu's `providers.Interface`: what it asks of the
//! provider of one resource ([`ResourceOperations`]), which provider owns a resource
//! ([`ProviderSet`]), and where the providers of an operation come from ([`ProviderSource`]).
//! Plugins and Cloud Control implement them for real runs; the engine's unit tests use an
//! in-memory cloud.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use async_trait::async_trait;
use cdkd_provider_api::protocol::{
    CreateResult, DeleteResult, FinalSnapshotRequest, FinalSnapshotResult, UpdateResult,
};
use cdkd_provider_api::ProviderError;
use serde_json::{Map, Value};

use super::names::ChosenName;
use super::read_budget::ReadPurpose;
use super::router::Decision;
use super::type_schemas::RegistrySchema;
use crate::state::schema::{ProvisionedBy, ResourceState};

/// What makes one create idempotent, and what it must report.
#[derive(Debug, Clone, Copy)]
pub struct CreateSpec<'a> {
    /// The create's idempotency token (Cloud Control's `ClientToken`), the same on every retry.
    pub token: &'a str,
    /// The physical name, chosen before the call (generated ones are added to the request).
    pub name: Option<&'a ChosenName>,
    /// The attributes the template reads from the resource (`Fn::GetAtt`).
    pub needed: &'a [String],
    /// The account and partition, for ids built from names.
    pub ids: &'a AccountIds,
}

/// The account and partition a stack deploys into.
#[derive(Debug, Clone, Default)]
pub struct AccountIds {
    /// The account id.
    pub account: String,
    /// The partition (`aws`, `aws-cn`, ...).
    pub partition: String,
}

/// An existing resource found by its name.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Its physical id.
    pub physical_id: String,
    /// Its properties as read back (Cloud Control's model, or the plugin's template shape).
    pub properties: Map<String, Value>,
}

/// A create: the resource, the properties to send and what makes the create idempotent.
#[derive(Debug, Clone, Copy)]
pub struct CreateCall<'a> {
    /// The resource's type.
    pub resource_type: &'a str,
    /// Its logical id in the template.
    pub logical_id: &'a str,
    /// The stack it belongs to (for generated physical names).
    pub stack: &'a str,
    /// The resolved properties.
    pub properties: &'a Map<String, Value>,
    /// Its token, name, needed attributes and account.
    pub spec: &'a CreateSpec<'a>,
}

/// An update of a recorded resource from `previous` to `desired`.
#[derive(Debug, Clone, Copy)]
pub struct UpdateCall<'a> {
    /// The resource's type.
    pub resource_type: &'a str,
    /// Its logical id in the template.
    pub logical_id: &'a str,
    /// The stack it belongs to.
    pub stack: &'a str,
    /// Its physical id.
    pub physical_id: &'a str,
    /// The properties last applied.
    pub previous: &'a Map<String, Value>,
    /// The properties wanted.
    pub desired: &'a Map<String, Value>,
    /// The attributes the template reads from it.
    pub needed: &'a [String],
}

/// A delete of a recorded resource.
#[derive(Debug, Clone, Copy)]
pub struct DeleteCall<'a> {
    /// The resource's type.
    pub resource_type: &'a str,
    /// Its logical id in the template.
    pub logical_id: &'a str,
    /// Its physical id.
    pub physical_id: &'a str,
    /// The properties last applied (some deletes need them, e.g. a policy's role).
    pub properties: &'a Map<String, Value>,
}

impl<'a> DeleteCall<'a> {
    /// The delete of `record`.
    pub fn of(logical_id: &'a str, record: &'a ResourceState) -> DeleteCall<'a> {
        DeleteCall {
            resource_type: &record.resource_type,
            logical_id,
            physical_id: &record.physical_id,
            properties: &record.properties,
        }
    }
}

/// A read of an existing resource by its physical id (what AWS holds now, or an import).
#[derive(Debug, Clone, Copy)]
pub struct ReadCall<'a> {
    /// The resource's type.
    pub resource_type: &'a str,
    /// Its logical id in the template.
    pub logical_id: &'a str,
    /// Its physical id.
    pub physical_id: &'a str,
    /// The properties last applied (an import: the template's), as a hint for what to read.
    pub properties: &'a Map<String, Value>,
}

impl<'a> ReadCall<'a> {
    /// The read of `record`.
    pub fn of(logical_id: &'a str, record: &'a ResourceState) -> ReadCall<'a> {
        ReadCall {
            resource_type: &record.resource_type,
            logical_id,
            physical_id: &record.physical_id,
            properties: &record.properties,
        }
    }
}

/// The calls the engine makes for one resource.
#[async_trait]
pub trait ResourceOperations: Send + Sync {
    /// Who does the work, for messages: `plugin <name>`, `Cloud Control`, `nested stack`, or
    /// the label of the provider a wrapper delegates to.
    fn label(&self) -> String;

    /// Creates a resource exactly once: every attempt carries `spec`'s token and name, a
    /// retry after a lost answer is deduplicated by the token (Cloud Control) or finds the
    /// resource by its name (an "already exists" for a name cdkd generated, or for any name
    /// on a retry, is the earlier attempt's resource and is adopted, not made again).
    async fn create(&self, call: CreateCall<'_>) -> Result<CreateResult, ProviderError>;

    /// Records an existing resource as this create's result, bringing it to `desired`: by
    /// default an update of what was found, answered as a create.
    async fn adopt(
        &self,
        resource_type: &str,
        logical_id: &str,
        stack: &str,
        found: Found,
        desired: &Map<String, Value>,
        needed: &[String],
    ) -> Result<CreateResult, ProviderError> {
        let updated = self
            .update(UpdateCall {
                resource_type,
                logical_id,
                stack,
                physical_id: &found.physical_id,
                previous: &found.properties,
                desired,
                needed,
            })
            .await?;
        Ok(CreateResult {
            physical_id: updated.physical_id,
            attributes: updated.attributes,
            sensitive_attributes: updated.sensitive_attributes,
        })
    }

    /// Finds the resource of `resource_type` named `name`, if it exists; by default none is
    /// found (a provider that names nothing itself).
    async fn find_named(
        &self,
        resource_type: &str,
        logical_id: &str,
        name: &str,
        ids: &AccountIds,
    ) -> Result<Option<Found>, ProviderError> {
        let _ = (resource_type, logical_id, name, ids);
        Ok(None)
    }

    /// Whether a create of `resource_type` adopts an identical existing resource (its plugin
    /// declares `idempotent_create`), so repeating it after a crash is safe.
    fn creates_idempotently(&self, _resource_type: &str) -> bool {
        false
    }

    /// The properties `find_created` searches in for `resource_type` (its plugin's
    /// `findScope`): their template values are recorded with a create's intent.
    fn find_scope(&self, _resource_type: &str) -> Vec<String> {
        Vec::new()
    }

    /// Finds the resource a create with `token` made, for a type with no name to look it up
    /// by (the plugin tagged it with the token, gave the service the token, or generated the
    /// name from it within `scope`: the [`Self::find_scope`] values resolved from state); an
    /// `unsupported` error when the provider cannot. `stack` is the stack name the create
    /// reported.
    async fn find_created(
        &self,
        resource_type: &str,
        logical_id: &str,
        _token: &str,
        _stack: &str,
        _scope: &Map<String, Value>,
    ) -> Result<Option<Found>, ProviderError> {
        Err(ProviderError::unsupported(format!(
            "{resource_type} {logical_id}: {} cannot look this type up by its create token",
            self.label()
        )))
    }

    /// Updates a resource (in place, or the provider reports a replacement).
    async fn update(&self, call: UpdateCall<'_>) -> Result<UpdateResult, ProviderError>;

    /// Deletes a resource; one already gone counts as deleted.
    async fn delete(&self, call: DeleteCall<'_>) -> Result<DeleteResult, ProviderError>;

    /// What AWS holds now: the resource's properties in template shape, its absence, or
    /// that this provider has no reader for the type.
    async fn read_current_state(&self, call: ReadCall<'_>) -> Result<Observation, ProviderError>;

    /// Adopts an existing resource by its physical id (`cdkd import`): checks that it exists
    /// and answers what a create would have (its id and attributes).
    async fn import(&self, call: ReadCall<'_>) -> Result<CreateResult, ProviderError> {
        Err(ProviderError::unsupported(format!(
            "{} cannot import {}",
            self.label(),
            call.resource_type
        )))
    }

    /// Takes the final snapshot `DeletionPolicy: Snapshot` asks for, complete when it returns.
    async fn final_snapshot(
        &self,
        resource_type: &str,
        request: &FinalSnapshotRequest,
    ) -> Result<FinalSnapshotResult, ProviderError> {
        let _ = request;
        Err(ProviderError::unsupported(format!(
            "{} cannot take snapshots of {resource_type}",
            self.label()
        )))
    }
}

/// What a provider's reader found.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// The resource exists; its properties as AWS reports them, in template shape.
    Live(Map<String, Value>),
    /// The resource no longer exists.
    Gone,
    /// The provider cannot read this type.
    NoReader,
}

impl Observation {
    /// The live properties, if the resource was read.
    pub fn live(self) -> Option<Map<String, Value>> {
        match self {
            Observation::Live(properties) => Some(properties),
            Observation::Gone | Observation::NoReader => None,
        }
    }
}

/// What AWS holds now for a recorded resource, through `provider`, within `purpose`'s budget.
pub async fn read_record(
    provider: &dyn ResourceOperations,
    logical_id: &str,
    record: &ResourceState,
    purpose: ReadPurpose,
) -> Result<Observation, ProviderError> {
    purpose
        .bounded(
            &format!("reading {logical_id} ({})", record.resource_type),
            provider.read_current_state(ReadCall::of(logical_id, record)),
        )
        .await
}

/// The providers of one stack's resources, ready before any change.
pub trait ProviderSet: Send + Sync {
    /// The provider a routing decision chose.
    fn for_decision(&self, resource_type: &str, decision: &Decision) -> &dyn ResourceOperations;
    /// The provider of `resource_type` on a given layer (write-ahead intents name one).
    fn for_layer(&self, resource_type: &str, layer: ProvisionedBy) -> &dyn ResourceOperations;
    /// The provider that owns a recorded resource (deletes and reverts).
    fn for_record(&self, record: &ResourceState) -> &dyn ResourceOperations;
    /// The provider that takes final snapshots of `resource_type`, if one is loaded.
    fn for_snapshot(&self, resource_type: &str) -> Option<&dyn ResourceOperations>;
}

/// Where one operation's providers come from.
#[async_trait]
pub trait ProviderSource: Send + Sync {
    /// Cloud Control for `region`, and the plugins of `plugin_types` that a loaded plugin
    /// handles (types no plugin handles are left to Cloud Control).
    async fn prepare(
        &self,
        region: &str,
        plugin_types: &BTreeSet<String>,
        timeout: Duration,
    ) -> anyhow::Result<Box<dyn ProviderSet + '_>>;

    /// The account and partition of `region`, for ids built from names.
    async fn account_ids(&self, region: &str) -> AccountIds;

    /// The registry schemas of `types` in `region`, for the types it describes (none where
    /// the registry cannot be read).
    async fn registry_schemas(
        &self,
        region: &str,
        types: Vec<String>,
    ) -> BTreeMap<String, RegistrySchema> {
        let _ = (region, types);
        BTreeMap::new()
    }

    /// The status of CloudFormation stack `name` in `region` when one exists (not deleted):
    /// asked before a stack's first deploy, so that a stack handed to CloudFormation is not
    /// created a second time.
    async fn cloudformation_status(
        &self,
        region: &str,
        name: &str,
    ) -> anyhow::Result<Option<String>> {
        let _ = (region, name);
        Ok(None)
    }
}

/// The types whose plugins deletes, reverts and intents may need: those recorded (or
/// intended) on the SDK layer, and those whose policy asks for a snapshot before a delete.
pub fn owner_types<'r>(
    records: impl IntoIterator<Item = &'r ResourceState>,
    intents: impl IntoIterator<Item = (&'r str, ProvisionedBy)>,
) -> BTreeSet<String> {
    records
        .into_iter()
        .filter(|record| {
            record.provisioned_by != Some(ProvisionedBy::CcApi) || wants_final_snapshot(record)
        })
        .map(|record| record.resource_type.clone())
        .chain(
            intents
                .into_iter()
                .filter(|(_, layer)| *layer == ProvisionedBy::Sdk)
                .map(|(kind, _)| kind.to_string()),
        )
        .collect()
}

/// Whether deleting or replacing `record` first takes a snapshot (either policy says so).
pub fn wants_final_snapshot(record: &ResourceState) -> bool {
    [&record.deletion_policy, &record.update_replace_policy]
        .iter()
        .any(|policy| policy.as_deref() == Some("Snapshot"))
}
