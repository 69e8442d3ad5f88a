//! The live providers of one operation: the loaded plugins (initialised for the types they
//! handle) and Cloud Control for the stack's region, each resolving dynamic references on the
//! way in and hiding them again on the way out.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cdkd_provider_api::protocol::operation;

use super::cloud_control::{CloudControlProvider, PollSchedule};
use super::dynamic_references::{AwsSecrets, DynamicReferences, Resolving};
use super::operations::{AccountIds, ProviderSet, ProviderSource, ResourceOperations};
use super::provider::Provider;
use super::registry::{Registry, Route};
use super::router::Decision;
use super::type_schemas::{RegistrySchema, TypeSchemas};
use crate::aws_env::AwsEnvironment;
use crate::state::schema::{ProvisionedBy, ResourceState};

/// Plugins and Cloud Control, as a [`ProviderSource`].
pub struct LiveProviders<'a> {
    /// Loaded plugins.
    pub registry: &'a Registry,
    /// AWS settings.
    pub aws: &'a AwsEnvironment,
}

/// The providers of one stack's resources.
pub struct Providers<'a> {
    plugins: BTreeMap<String, Resolving<Provider<'a>>>,
    cloud_control: Resolving<Provider<'a>>,
    /// The plugins that take final snapshots, by type (often of Cloud Control resources).
    snapshots: BTreeMap<String, Resolving<Provider<'a>>>,
}

#[async_trait]
impl ProviderSource for LiveProviders<'_> {
    async fn prepare(
        &self,
        region: &str,
        plugin_types: &BTreeSet<String>,
        timeout: Duration,
    ) -> anyhow::Result<Box<dyn ProviderSet + '_>> {
        // One set of references per stack, so a secret used by many resources is read once.
        let references = Arc::new(DynamicReferences::new(Box::new(AwsSecrets::new(
            self.aws, region,
        ))));
        let mut plugins = BTreeMap::new();
        for resource_type in plugin_types {
            if let Route::Plugin { name, .. } = self.registry.route(resource_type) {
                let library = self.registry.plugin_for(resource_type, self.aws).await?;
                plugins.insert(
                    resource_type.clone(),
                    Resolving::new(Provider::Plugin(library, name), references.clone()),
                );
            }
        }
        let mut snapshots = BTreeMap::new();
        for resource_type in plugin_types {
            let takes_snapshots = (self.registry.schema(resource_type))
                .is_some_and(|schema| schema.supports(operation::FINAL_SNAPSHOT));
            if takes_snapshots {
                let library = self.registry.plugin_for(resource_type, self.aws).await?;
                let name = library.manifest().name.clone();
                snapshots.insert(
                    resource_type.clone(),
                    Resolving::new(Provider::Plugin(library, name), references.clone()),
                );
            }
        }
        let schedule = PollSchedule {
            timeout,
            ..PollSchedule::default()
        };
        let cloud_control = CloudControlProvider::new(self.aws, region, schedule);
        Ok(Box::new(Providers {
            plugins,
            cloud_control: Resolving::new(
                Provider::CloudControl(Arc::new(cloud_control)),
                references,
            ),
            snapshots,
        }))
    }

    async fn account_ids(&self, region: &str) -> AccountIds {
        AccountIds {
            account: crate::state::bucket::account_id(self.aws)
                .await
                .unwrap_or_default(),
            partition: crate::aws_env::partition(region).to_string(),
        }
    }

    async fn registry_schemas(
        &self,
        region: &str,
        types: Vec<String>,
    ) -> BTreeMap<String, RegistrySchema> {
        TypeSchemas::new(self.aws).get(region, types).await
    }

    async fn cloudformation_status(
        &self,
        region: &str,
        name: &str,
    ) -> anyhow::Result<Option<String>> {
        let described = crate::cloudformation::CloudFormation::new(self.aws, region)
            .describe(name)
            .await?;
        Ok(described
            .map(|d| d.status)
            .filter(|status| status != "DELETE_COMPLETE"))
    }
}

impl ProviderSet for Providers<'_> {
    fn for_decision(&self, resource_type: &str, decision: &Decision) -> &dyn ResourceOperations {
        match (decision, self.plugins.get(resource_type)) {
            (Decision::Plugin(_), Some(plugin)) => plugin,
            _ => &self.cloud_control,
        }
    }

    fn for_layer(&self, resource_type: &str, layer: ProvisionedBy) -> &dyn ResourceOperations {
        match (layer, self.plugins.get(resource_type)) {
            (ProvisionedBy::Sdk, Some(plugin)) => plugin,
            _ => &self.cloud_control,
        }
    }

    fn for_record(&self, record: &ResourceState) -> &dyn ResourceOperations {
        if record.provisioned_by == Some(ProvisionedBy::CcApi) {
            return &self.cloud_control;
        }
        match self.plugins.get(&record.resource_type) {
            Some(plugin) => plugin,
            None => &self.cloud_control,
        }
    }

    fn for_snapshot(&self, resource_type: &str) -> Option<&dyn ResourceOperations> {
        self.snapshots
            .get(resource_type)
            .map(|p| p as &dyn ResourceOperations)
    }
}
