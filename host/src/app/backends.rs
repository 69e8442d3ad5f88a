//! The engine of one command, built once from what the command works with.

use std::sync::Arc;

use crate::aws_env::AwsEnvironment;
use crate::deployment::engine::Engine;
use crate::deployment::report::Reporter;
use crate::provisioning::providers::LiveProviders;
use crate::provisioning::registry::Registry;
use crate::state::store::StateStore;

/// What a command's engine works with in AWS: the loaded plugins, the providers behind them
/// and the state bucket.
pub struct Backends<'a> {
    registry: &'a Registry,
    providers: LiveProviders<'a>,
    store: &'a StateStore,
}

impl<'a> Backends<'a> {
    /// The plugins of `registry` in the `aws` environment, recording in `store`.
    pub fn new(registry: &'a Registry, aws: &'a AwsEnvironment, store: &'a StateStore) -> Self {
        Backends {
            registry,
            providers: LiveProviders { registry, aws },
            store,
        }
    }

    /// The engine, reporting through `reporter` and stopped by `stop`.
    pub fn engine(&self, reporter: Reporter, stop: tokio::sync::watch::Sender<bool>) -> Engine<'_> {
        Engine {
            registry: self.registry,
            providers: &self.providers,
            store: Arc::new(self.store.backend.clone()),
            locks: &self.store.locks,
            reporter,
            stop,
        }
    }
}
