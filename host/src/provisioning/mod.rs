//! Provisioning: the registry of provider plugins, routing and pre-flight, the Cloud Control
//! provider, and the seam the engine calls providers through ([`operations`]).

pub mod activity;
pub mod cloud_control;
pub mod concurrency;
pub mod context_lookups;
pub mod create_only;
pub mod dynamic_references;
pub mod manifest_cache;
pub mod names;
pub mod operations;
pub mod plugin_callbacks;
pub mod plugin_layers;
pub mod plugins_file;
pub mod preflight;
pub mod provider;
pub mod providers;
pub mod read_budget;
pub mod registry;
pub mod router;
pub mod trust;
pub mod type_schemas;
pub mod user_plugins;
pub mod zones;
