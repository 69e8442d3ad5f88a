//! The host's half of the plugin boundary: the callbacks every plugin receives in `init`.
//!
//! Plugins call these from their own threads. Logging re-emits the plugin's event under target
//! `cdkd::plugin`; `host_call` answers named requests (today: fresh credentials).

use std::sync::OnceLock;

use abi_stable::std_types::{RResult, RStr, RString};
use cdkd_provider_api::abi::{FfiResult, HostContext, LogLevel};
use cdkd_provider_api::protocol::{host_call as names, HostConfig};
use cdkd_provider_api::ProviderError;

use crate::aws_env::AwsEnvironment;

/// What `host_call` needs: the AWS environment and a runtime handle to drive its futures.
struct HostServices {
    aws: AwsEnvironment,
    runtime: tokio::runtime::Handle,
}

static SERVICES: OnceLock<HostServices> = OnceLock::new();

/// Builds the context handed to one plugin's `init`, registering the host services once.
#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
pub fn host_context(config: &HostConfig, aws: &AwsEnvironment) -> HostContext {
    SERVICES.get_or_init(|| HostServices {
        aws: aws.clone(),
        runtime: tokio::runtime::Handle::current(),
    });
    HostContext {
        config: RString::from(serde_json::to_string(config).expect("HostConfig serialises")),
        max_log_level: max_log_level() as u8,
        log: plugin_log,
        host_call,
    }
}

fn max_log_level() -> LogLevel {
    match tracing::level_filters::LevelFilter::current().into_level() {
        Some(tracing::Level::ERROR) | None => LogLevel::Error,
        Some(tracing::Level::WARN) => LogLevel::Warn,
        Some(tracing::Level::INFO) => LogLevel::Info,
        Some(tracing::Level::DEBUG) => LogLevel::Debug,
        Some(tracing::Level::TRACE) => LogLevel::Trace,
    }
}

extern "C" fn plugin_log(level: u8, plugin: RStr<'_>, target: RStr<'_>, message: RStr<'_>) {
    let (plugin, source, message) = (plugin.as_str(), target.as_str(), message.as_str());
    // `tracing` needs a constant level per call site, hence one arm per level.
    match LogLevel::from_u8(level) {
        LogLevel::Error => tracing::error!(target: "cdkd::plugin", plugin, source, "{message}"),
        LogLevel::Warn => tracing::warn!(target: "cdkd::plugin", plugin, source, "{message}"),
        LogLevel::Info => tracing::info!(target: "cdkd::plugin", plugin, source, "{message}"),
        LogLevel::Debug => tracing::debug!(target: "cdkd::plugin", plugin, source, "{message}"),
        LogLevel::Trace => tracing::trace!(target: "cdkd::plugin", plugin, source, "{message}"),
    }
}

extern "C" fn host_call(name: RStr<'_>, _payload: RStr<'_>) -> FfiResult {
    // A panic here would unwind into the plugin's frames; contain it.
    let answer =
        std::panic::catch_unwind(|| answer_host_call(name.as_str())).unwrap_or_else(|_| {
            Err(ProviderError::other(
                "the host panicked answering a plugin call",
            ))
        });
    match answer {
        Ok(json) => RResult::ROk(RString::from(json)),
        Err(err) => RResult::RErr(err),
    }
}

#[allow(
    clippy::expect_used,
    reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
)]
fn answer_host_call(name: &str) -> Result<String, ProviderError> {
    let services = SERVICES
        .get()
        .ok_or_else(|| ProviderError::other("host services are not initialised"))?;
    match name {
        names::CREDENTIALS => {
            let creds = services
                .runtime
                .block_on(services.aws.credentials())
                .map_err(|err| {
                    ProviderError::new(cdkd_provider_api::ErrorKind::ACCESS_DENIED, err.to_string())
                })?;
            Ok(serde_json::to_string(&creds).expect("credentials serialise"))
        }
        other => Err(ProviderError::unsupported(format!(
            "this cdkd host does not answer '{other}'; upgrade cdkd"
        ))),
    }
}
