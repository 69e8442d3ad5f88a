//! The stable ABI between the cdkd host and its provider plugins.
//!
//! This crate is the interface third of abi_stable's interface / implementation / user triad:
//! - [`abi`]: the frozen FFI types that cross the `.so` boundary by layout;
//! - [`protocol`]: the JSON documents those types carry (extensible with defaults);
//! - `plugin` (feature `plugin`, on by default): what a plugin author implements, plus
//!   `export_plugin!` and `register_provider!`;
//! - `host` (feature `host`): loading a plugin at an explicit path and calling it with typed
//!   requests.
//!
//! It is not a provider and knows nothing about AWS services, templates or state. The
//! compatibility rule it promises is written in `docs/provider-abi.md`.

pub mod abi;
#[cfg(feature = "host")]
mod elf_check;
#[cfg(feature = "host")]
pub mod host;
#[cfg(feature = "plugin")]
mod log_forward;
#[cfg(feature = "plugin")]
pub mod plugin;
pub mod protocol;

pub use abi::{ErrorKind, LogLevel, ProviderError};
#[cfg(feature = "plugin")]
pub use plugin::{async_trait, PluginContext, ResourceProvider};

/// The version of this crate, which a plugin reports as the provider-api it was built against.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(feature = "plugin")]
#[doc(hidden)]
pub mod __private {
    pub use inventory;
}

/// Registers a [`ResourceProvider`] type (which must implement `Default`) with the plugin.
///
/// Put it in a module the plugin crate compiles: a registration in a crate the plugin never
/// references is silently dropped by the linker.
#[cfg(feature = "plugin")]
#[macro_export]
macro_rules! register_provider {
    ($provider:ty) => {
        $crate::__private::inventory::submit! {
            $crate::plugin::ProviderRegistration {
                make: || ::std::boxed::Box::new(<$provider as ::core::default::Default>::default()),
            }
        }
    };
}

/// Exports the plugin's root module, naming it after the crate (`CARGO_PKG_NAME`) and
/// versioning it with `CARGO_PKG_VERSION`. The plugin crate must depend on `abi_stable`
/// directly, because abi_stable's export attribute refers to it by its absolute path.
#[cfg(feature = "plugin")]
#[macro_export]
macro_rules! export_plugin {
    (description: $description:expr $(,)?) => {
        // The one exception to the workspace's `unsafe_code = "deny"` a plugin needs: abi_stable's
        // export is a `#[no_mangle]` item. A private module keeps it out of the crate's API.
        #[allow(unsafe_code)]
        mod __cdkd_root_module {
            #[allow(unused_imports)]
            use super::*;

            /// The plugin's root module, read by the cdkd host through abi_stable.
            #[::abi_stable::export_root_module]
            pub fn cdkd_provider_root_module() -> $crate::abi::ProviderPluginRef {
                $crate::plugin::root_module($crate::plugin::PluginInfo {
                    name: env!("CARGO_PKG_NAME"),
                    version: env!("CARGO_PKG_VERSION"),
                    description: $description,
                })
            }
        }
    };
}
