//! Provisioning: the registry of provider plugins and the host side of the plugin boundary.
//!
//! Later: the Cloud Control provider and the custom-resource path live here too.

pub mod cloud_control;
pub mod create_only;
pub mod names;
pub mod plugin_callbacks;
pub mod plugins_file;
pub mod provider;
pub mod registry;
pub mod router;
pub mod zones;
