//! The registry of plugins: which plugin handles which resource type.
//!
//! Routing needs only each plugin's manifest, which [`ManifestCache`] keeps by the library's
//! hash; a library is loaded (checked against its pin first) when a run first needs one of
//! its types, and initialised then, so a deploy of queues and topics loads two libraries, not
//! every one installed, and commands that only describe plugins load none once their
//! manifests are known. A manifest not cached yet is read by loading the library at once.
//!
//! Loading never stops at a bad plugin: each failure (not pinned, missing file, hash mismatch,
//! not a plugin, ABI mismatch, version outside the requirement) is recorded with a one-line
//! reason naming the plugin and path, and the others load.

use crate::analyzer::ref_values::RefValues;
use std::collections::BTreeMap;

use cdkd_provider_api::host::{self, PluginLibrary};
use cdkd_provider_api::protocol::{
    best_match, HostConfig, PluginManifest, ResourceTypeSchema, StateBucketRef, Wait,
};
use cdkd_provider_api::ProviderError;
use tokio::sync::OnceCell;

use super::manifest_cache::{CachedManifest, ManifestCache};
use super::plugin_callbacks;
use super::plugins_file::{PluginSpec, PluginsFile, PluginsFileSource};
use crate::aws_env::AwsEnvironment;

/// One `plugins.toml` entry and what became of it.
pub struct PluginSlot {
    /// The entry as configured.
    pub spec: PluginSpec,
    /// Ready, failed or disabled.
    pub status: PluginStatus,
}

/// What became of a plugin entry.
pub enum PluginStatus {
    /// `enabled = false`.
    Disabled,
    /// Refused, with a one-line reason.
    Failed(String),
    /// Pinned, its manifest known; its library loads on first use.
    Ready(Box<ReadyPlugin>),
}

/// A usable plugin: its manifest, and its library once a run needs it.
pub struct ReadyPlugin {
    manifest: CachedManifest,
    path: std::path::PathBuf,
    /// The library's file, opened when the run started: the one later hashed and loaded.
    file: std::sync::Mutex<Option<std::fs::File>>,
    library: std::sync::OnceLock<Result<PluginLibrary, String>>,
    init: OnceCell<Result<(), ProviderError>>,
}

impl ReadyPlugin {
    /// What the plugin says about itself.
    pub fn manifest(&self) -> &PluginManifest {
        &self.manifest.manifest
    }

    /// The provider-api version it was built against.
    pub fn api_version(&self) -> &str {
        &self.manifest.api_version
    }

    /// Its library's SHA-256 (the pin it was checked against).
    pub fn sha256(&self) -> &str {
        &self.manifest.sha256
    }

    /// Whether this run has loaded its library.
    pub fn is_loaded(&self) -> bool {
        matches!(self.library.get(), Some(Ok(_)))
    }

    /// The library, loaded (and checked against its pin) on the first call.
    fn library(&self) -> Result<&PluginLibrary, String> {
        let loaded = self.library.get_or_init(|| {
            let opened = self.file.lock().ok().and_then(|mut file| file.take());
            let library = match opened {
                Some(file) => host::load_opened(file, &self.path, &self.manifest.sha256),
                None => host::load(&self.path, &self.manifest.sha256),
            };
            let library = library.map_err(|err| {
                if let host::LoadError::LayoutMismatch { report, .. } = &err {
                    tracing::debug!("abi_stable's layout report:\n{report}");
                }
                err.to_string()
            })?;
            tracing::debug!(path = %self.path.display(), "plugin library loaded");
            // Same bytes, same manifest: a difference means a library that answers
            // differently each time, which routing cannot rely on.
            if library.manifest() != self.manifest() {
                return Err(format!(
                    "its manifest differs from the one cached for its hash; delete the cache's manifests/{}.json: {}",
                    self.manifest.sha256,
                    self.path.display()
                ));
            }
            Ok(library)
        });
        loaded.as_ref().map_err(Clone::clone)
    }
}

/// Who handles a resource type among the plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeOwner {
    /// Exactly one plugin (or the one `[owners]` chose), by slot index.
    Plugin(usize),
    /// Several plugins claim it and `[owners]` does not say which wins.
    Contested(Vec<String>),
}

/// How a resource of some type would be provisioned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// By a loaded plugin.
    Plugin {
        /// The plugin's name in `plugins.toml`.
        name: String,
        /// The plugin's own version.
        version: String,
    },
    /// By the AWS Cloud Control API.
    CloudControl,
    /// By the custom-resource path (Lambda-backed `Custom::*`).
    CustomResource,
    /// Nothing can handle it; the reason says what to do.
    Unroutable(String),
}

/// The routing question could not be answered for a type.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No plugin is loaded for the type.
    #[error("no loaded plugin handles {0}; add one to plugins.toml (cdkd providers list shows what is loaded)")]
    NoPlugin(String),
    /// The type is contested.
    #[error("{type_name} is claimed by plugins {claimants}; say which wins in plugins.toml: [owners] \"{type_name}\" = \"<plugin>\"")]
    Contested {
        /// The type.
        type_name: String,
        /// The plugins claiming it, comma-separated.
        claimants: String,
    },
    /// The plugin's library could not be loaded when a run needed it.
    #[error("plugin '{plugin}' could not be loaded: {reason}")]
    Load {
        /// The plugin.
        plugin: String,
        /// Why, naming the file.
        reason: String,
    },
    /// The plugin's `init` failed.
    #[error("plugin '{plugin}' failed to initialise: {source}")]
    Init {
        /// The plugin.
        plugin: String,
        /// Its error.
        source: ProviderError,
    },
}

/// All plugins of one `plugins.toml`, and the type → plugin table.
pub struct Registry {
    file: PluginsFile,
    slots: Vec<PluginSlot>,
    owners: BTreeMap<String, TypeOwner>,
    /// Handed to plugins at init (custom resources' response placeholders live there).
    state_bucket: std::sync::OnceLock<StateBucketRef>,
    /// `--resource-timeout`, handed to plugins at init when the user gave one.
    resource_timeout: std::sync::OnceLock<u64>,
    /// `--wait` / `--no-wait`, handed to plugins at init.
    wait: std::sync::OnceLock<Wait>,
}

/// Whether a type goes to the custom-resource path rather than a provider.
pub fn is_custom_resource(type_name: &str) -> bool {
    type_name.starts_with("Custom::") || type_name == "AWS::CloudFormation::CustomResource"
}

impl Registry {
    /// Loads every enabled plugin of `file`, recording failures instead of stopping.
    pub fn load(file: PluginsFile) -> Registry {
        Registry::load_cached(file, None)
    }

    /// The plugins of `file`, each from its cached manifest when `cache` holds it (its library
    /// then loads on first use), else loaded now and its manifest cached.
    pub fn load_cached(file: PluginsFile, cache: Option<&ManifestCache>) -> Registry {
        let slots: Vec<PluginSlot> = file
            .plugins
            .iter()
            .map(|spec| PluginSlot {
                status: load_one(spec, &file, cache),
                spec: spec.clone(),
            })
            .collect();
        let owners = assign_owners(&slots, &file.owners);
        Registry {
            file,
            slots,
            owners,
            state_bucket: std::sync::OnceLock::new(),
            resource_timeout: std::sync::OnceLock::new(),
            wait: std::sync::OnceLock::new(),
        }
    }

    /// Names the state bucket plugins are told about when they start (set before any
    /// plugin is initialised; later calls are ignored).
    pub fn set_state_bucket(&self, name: &str, region: &str) {
        let _ = self.state_bucket.set(StateBucketRef {
            name: name.to_string(),
            region: region.to_string(),
        });
    }

    /// Hands the user's `--resource-timeout` to plugins when they start.
    pub fn set_resource_timeout(&self, seconds: u64) {
        let _ = self.resource_timeout.set(seconds);
    }

    /// Hands the user's `--wait` / `--no-wait` to plugins when they start.
    pub fn set_wait(&self, wait: Wait) {
        let _ = self.wait.set(wait);
    }

    /// The plugins file the registry came from.
    pub fn file(&self) -> &PluginsFile {
        &self.file
    }

    /// Every entry, in file order.
    pub fn slots(&self) -> &[PluginSlot] {
        &self.slots
    }

    /// The type → owner table (only types some loaded plugin claims).
    pub fn owners(&self) -> &BTreeMap<String, TypeOwner> {
        &self.owners
    }

    /// The owners-table entry that handles `type_name`: its own, else the longest type
    /// pattern (`Custom::*`) a loaded plugin declares that covers it.
    fn owner_of(&self, type_name: &str) -> Option<(&str, &TypeOwner)> {
        let declared = best_match(self.owners.keys().map(String::as_str), type_name)?;
        Some((declared, &self.owners[declared]))
    }

    /// Prints what every run must say (project files skipped, bundled plugins replaced).
    pub fn print_notices(&self) {
        for notice in &self.file.notices {
            tracing::warn!("{notice}");
        }
    }

    /// Logs one warning per refused plugin; commands that do not print the table call this.
    pub fn warn_about_failures(&self) {
        for slot in &self.slots {
            if let PluginStatus::Failed(reason) = &slot.status {
                tracing::warn!("plugin '{}' not loaded: {reason}", slot.spec.name);
            }
        }
    }

    /// The schema a loaded plugin declares for `type_name`, when one plugin owns it.
    pub fn schema(&self, type_name: &str) -> Option<&ResourceTypeSchema> {
        let (declared, owner) = self.owner_of(type_name)?;
        match owner {
            TypeOwner::Plugin(index) => match &self.slots[*index].status {
                PluginStatus::Ready(plugin) => plugin
                    .manifest()
                    .resource_types
                    .iter()
                    .find(|schema| schema.type_name == declared),
                _ => None,
            },
            TypeOwner::Contested(_) => None,
        }
    }

    /// The `Ref` rules: the spec's table, plus what loaded plugins declare for their types.
    pub fn ref_values(&self) -> RefValues {
        self.owners
            .keys()
            .filter_map(|type_name| self.schema(type_name))
            .filter_map(|schema| Some((&schema.type_name, schema.composite_id.as_ref()?)))
            .fold(RefValues::builtin(), |values, (type_name, composite)| {
                values.with(type_name, composite.ref_value.clone())
            })
    }

    /// How a resource of `type_name` would be provisioned, ignoring its properties.
    pub fn route(&self, type_name: &str) -> Route {
        let owner = self.owner_of(type_name).map(|(_, owner)| owner);
        if owner.is_none() && is_custom_resource(type_name) {
            return Route::CustomResource;
        }
        // A type declared with no handled property only answers named operations (a final
        // snapshot of a Cloud Control resource): its resources are not the plugin's.
        let companion = self
            .schema(type_name)
            .is_some_and(|schema| schema.handled_properties.is_empty());
        match owner {
            Some(TypeOwner::Plugin(_)) if companion && type_name.starts_with("AWS::") => {
                Route::CloudControl
            }
            Some(TypeOwner::Plugin(index)) => {
                let slot = &self.slots[*index];
                let version = match &slot.status {
                    PluginStatus::Ready(plugin) => plugin.manifest().version.clone(),
                    _ => String::new(),
                };
                Route::Plugin {
                    name: slot.spec.name.clone(),
                    version,
                }
            }
            Some(TypeOwner::Contested(claimants)) => Route::Unroutable(
                RegistryError::Contested {
                    type_name: type_name.to_string(),
                    claimants: claimants.join(", "),
                }
                .to_string(),
            ),
            None if type_name.starts_with("AWS::") => Route::CloudControl,
            None => Route::Unroutable(RegistryError::NoPlugin(type_name.to_string()).to_string()),
        }
    }

    /// The plugin that handles `type_name`, initialised (once) with the host's AWS environment.
    pub async fn plugin_for(
        &self,
        type_name: &str,
        aws: &AwsEnvironment,
    ) -> Result<&PluginLibrary, RegistryError> {
        let index = match self.owner_of(type_name).map(|(_, owner)| owner) {
            Some(TypeOwner::Plugin(index)) => *index,
            Some(TypeOwner::Contested(claimants)) => {
                return Err(RegistryError::Contested {
                    type_name: type_name.to_string(),
                    claimants: claimants.join(", "),
                })
            }
            None => return Err(RegistryError::NoPlugin(type_name.to_string())),
        };
        let slot = &self.slots[index];
        let PluginStatus::Ready(plugin) = &slot.status else {
            return Err(RegistryError::NoPlugin(type_name.to_string()));
        };
        let library = plugin.library().map_err(|reason| RegistryError::Load {
            plugin: slot.spec.name.clone(),
            reason,
        })?;
        let init = plugin
            .init
            .get_or_init(|| async {
                let config = HostConfig {
                    plugin_name: slot.spec.name.clone(),
                    region: aws.region(),
                    credentials: aws.credentials().await.ok(),
                    endpoint_url: aws.endpoint_url(),
                    s3_force_path_style: aws.s3_force_path_style(),
                    worker_threads: 2,
                    state_bucket: self.state_bucket.get().cloned(),
                    resource_timeout_secs: self.resource_timeout.get().copied(),
                    wait: self.wait.get().copied().unwrap_or_default(),
                };
                let started = std::time::Instant::now();
                let result = library.init(plugin_callbacks::host_context(&config, aws));
                tracing::debug!(plugin = %slot.spec.name, elapsed = ?started.elapsed(), "plugin initialised");
                result
            })
            .await;
        match init {
            Ok(()) => Ok(library),
            Err(err) => Err(RegistryError::Init {
                plugin: slot.spec.name.clone(),
                source: err.clone(),
            }),
        }
    }
}

fn load_one(spec: &PluginSpec, file: &PluginsFile, cache: Option<&ManifestCache>) -> PluginStatus {
    if !spec.enabled {
        return PluginStatus::Disabled;
    }
    if !spec.path.is_file() {
        return PluginStatus::Failed(format!("file not found: {}", spec.path.display()));
    }
    let Some(pin) = &spec.pin else {
        return PluginStatus::Failed(unpinned(spec, file));
    };
    let manifest = match cache.and_then(|cache| cache.get(pin)) {
        Some(cached) => {
            tracing::debug!(plugin = %spec.name, "manifest from the cache; library not loaded");
            cached
        }
        None => {
            let started = std::time::Instant::now();
            let library = match host::load(&spec.path, pin) {
                Ok(library) => library,
                Err(err) => {
                    if let host::LoadError::LayoutMismatch { report, .. } = &err {
                        tracing::debug!(plugin = %spec.name, "abi_stable's layout report:\n{report}");
                    }
                    return PluginStatus::Failed(err.to_string());
                }
            };
            tracing::debug!(plugin = %spec.name, elapsed = ?started.elapsed(), "plugin loaded");
            let cached = CachedManifest {
                sha256: pin.clone(),
                api_version: library.api_version(),
                manifest: library.manifest().clone(),
            };
            if let Some(cache) = cache {
                cache.put(&cached);
            }
            let plugin = ready(spec, cached);
            let _ = plugin.library.set(Ok(library));
            return checked(spec, plugin);
        }
    };
    checked(spec, ready(spec, manifest))
}

fn ready(spec: &PluginSpec, manifest: CachedManifest) -> ReadyPlugin {
    ReadyPlugin {
        manifest,
        path: spec.path.clone(),
        file: std::sync::Mutex::new(std::fs::File::open(&spec.path).ok()),
        library: std::sync::OnceLock::new(),
        init: OnceCell::new(),
    }
}

/// `plugin` when its provider-api and own versions are ones this host and `spec` accept.
fn checked(spec: &PluginSpec, plugin: ReadyPlugin) -> PluginStatus {
    let api = plugin.api_version().to_string();
    let api_ok = semver::Version::parse(&api).is_ok_and(|api| {
        let number = |v: &semver::Version| abi_stable::sabi_types::VersionNumber {
            major: v.major as u32,
            minor: v.minor as u32,
            patch: v.patch as u32,
        };
        host::api_versions_compatible(host::host_api_version(), number(&api))
    });
    if !api_ok {
        let host_api = host::host_api_version();
        return PluginStatus::Failed(format!(
            "incompatible ABI: built against provider-api {api}, host has {host_api}; rebuild the plugin against provider-api {host_api}: {}",
            spec.path.display()
        ));
    }
    let manifest = plugin.manifest();
    let version = match semver::Version::parse(&manifest.version) {
        Ok(version) => version,
        Err(err) => {
            return PluginStatus::Failed(format!(
                "its version '{}' is not semver ({err}): {}",
                manifest.version,
                spec.path.display()
            ))
        }
    };
    if !spec.version.matches(&version) {
        return PluginStatus::Failed(format!(
            "version {version} does not meet the requirement {} in plugins.toml: {}",
            spec.version,
            spec.path.display()
        ));
    }
    PluginStatus::Ready(Box::new(plugin))
}

/// Why an entry without a pin is refused, and how to pin it, by the kind of file it is in.
fn unpinned(spec: &PluginSpec, file: &PluginsFile) -> String {
    let source = file
        .layers
        .iter()
        .find(|(path, _)| *path == spec.file)
        .map_or(PluginsFileSource::None, |(_, source)| *source);
    let at = spec.file.display();
    match source {
        PluginsFileSource::Bundled | PluginsFileSource::User => format!(
            "not pinned: {at} gives no sha256 for {}; check the library, then `cdkd providers lock {at}` pins it",
            spec.path.display()
        ),
        _ => format!(
            "not pinned: the trust record of {at} has no hash for {} (it did not exist, or was not listed, when you trusted the file); check it, then `cdkd providers trust {at}` again",
            spec.path.display()
        ),
    }
}

fn assign_owners(
    slots: &[PluginSlot],
    preferred: &BTreeMap<String, String>,
) -> BTreeMap<String, TypeOwner> {
    let mut claims: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, slot) in slots.iter().enumerate() {
        if let PluginStatus::Ready(plugin) = &slot.status {
            for schema in &plugin.manifest().resource_types {
                claims
                    .entry(schema.type_name.clone())
                    .or_default()
                    .push(index);
            }
        }
    }
    claims
        .into_iter()
        .map(|(type_name, claimants)| {
            let owner = match claimants.as_slice() {
                [only] => TypeOwner::Plugin(*only),
                several => {
                    let chosen = preferred.get(&type_name).and_then(|winner| {
                        several
                            .iter()
                            .copied()
                            .find(|&index| &slots[index].spec.name == winner)
                    });
                    // Unsettled by [owners]: the plugin of the highest layer (a user's file
                    // over the bundled one), when one is alone there.
                    let top = several.iter().map(|&i| slots[i].spec.layer).max();
                    let highest: Vec<usize> = several
                        .iter()
                        .copied()
                        .filter(|&i| Some(slots[i].spec.layer) == top)
                        .collect();
                    let chosen = chosen.or(match highest.as_slice() {
                        [only] => Some(*only),
                        _ => None,
                    });
                    match chosen {
                        Some(index) => TypeOwner::Plugin(index),
                        None => TypeOwner::Contested(
                            several
                                .iter()
                                .map(|&i| slots[i].spec.name.clone())
                                .collect(),
                        ),
                    }
                }
            };
            (type_name, owner)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provisioning::plugins_file::PluginsFileSource;
    use std::path::Path;

    fn registry_of(text: &str) -> Registry {
        Registry::load(
            PluginsFile::parse(
                text,
                Path::new("/nowhere/plugins.toml"),
                PluginsFileSource::Flag,
            )
            .unwrap(),
        )
    }

    #[test]
    fn a_missing_or_unpinned_plugin_fails_alone_and_names_its_path() {
        let pin = "a".repeat(64);
        let registry = registry_of(&format!(
            "[[plugin]]\nname = \"gone\"\npath = \"libgone.so\"\nsha256 = \"{pin}\"\n\
             [[plugin]]\nname = \"off\"\npath = \"x.so\"\nenabled = false\n\
             [[plugin]]\nname = \"loose\"\npath = \"{}\"\n",
            // A file that exists, so the missing pin is what refuses it.
            std::env::current_exe().unwrap().display()
        ));
        match &registry.slots()[0].status {
            PluginStatus::Failed(reason) => {
                assert_eq!(reason, "file not found: /nowhere/libgone.so")
            }
            _ => panic!("expected a failure"),
        }
        assert!(matches!(registry.slots()[1].status, PluginStatus::Disabled));
        match &registry.slots()[2].status {
            PluginStatus::Failed(reason) => assert!(
                reason.starts_with(
                    "not pinned: the trust record of /nowhere/plugins.toml has no hash for "
                ),
                "{reason}"
            ),
            _ => panic!("expected a failure"),
        }
    }

    #[test]
    fn routes_without_plugins() {
        let registry = registry_of("");
        assert_eq!(registry.route("AWS::SQS::Queue"), Route::CloudControl);
        assert_eq!(
            registry.route("Custom::S3AutoDeleteObjects"),
            Route::CustomResource
        );
        assert_eq!(
            registry.route("AWS::CloudFormation::CustomResource"),
            Route::CustomResource
        );
        match registry.route("Acme::Echo::Thing") {
            Route::Unroutable(reason) => {
                assert!(reason.contains("no loaded plugin handles Acme::Echo::Thing"))
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_type_goes_to_its_exact_owner_else_the_longest_covering_pattern() {
        let registry = Registry {
            file: PluginsFile::empty(),
            slots: Vec::new(),
            state_bucket: std::sync::OnceLock::new(),
            resource_timeout: std::sync::OnceLock::new(),
            wait: std::sync::OnceLock::new(),
            owners: BTreeMap::from([
                ("Custom::*".to_string(), TypeOwner::Plugin(0)),
                ("Custom::Acme*".to_string(), TypeOwner::Plugin(1)),
                ("Custom::AcmeExact".to_string(), TypeOwner::Plugin(2)),
            ]),
        };
        let owner = |t: &str| {
            registry
                .owner_of(t)
                .map(|(declared, _)| declared.to_string())
        };
        assert_eq!(
            owner("Custom::AcmeExact").as_deref(),
            Some("Custom::AcmeExact")
        );
        assert_eq!(owner("Custom::AcmeOther").as_deref(), Some("Custom::Acme*"));
        assert_eq!(
            owner("Custom::S3AutoDeleteObjects").as_deref(),
            Some("Custom::*")
        );
        assert_eq!(owner("AWS::SQS::Queue"), None);
    }
}
