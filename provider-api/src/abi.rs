//! The frozen FFI surface: the only types that cross the `.so` boundary by layout.
//!
//! Everything here is checked by abi_stable's layout checker when a plugin loads. The rule
//! (docs/provider-abi.md): within one `0.minor`, types here never change; the root module may
//! only grow by appending fields after `invoke` (the last prefix field), and the host must read
//! those through their `Option` accessors. New operations and new data travel as JSON through
//! [`ProviderPlugin::invoke`] and [`HostContext::host_call`], never as new typed fields.

use std::fmt;

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings,
    sabi_types::VersionStrings,
    std_types::{ROption, RResult, RStr, RString},
    StableAbi,
};
use async_ffi::FfiFuture;

/// What every provider operation returns across the boundary: a JSON document or an error.
pub type FfiResult = RResult<RString, ProviderError>;

/// The future a plugin hands the host; dropping it aborts the plugin's task.
pub type FfiCall = FfiFuture<FfiResult>;

/// The root module every plugin exports (through [`crate::export_plugin!`]).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = ProviderPluginRef)))]
#[sabi(missing_field(option))]
pub struct ProviderPlugin {
    /// The plugin manifest as JSON ([`crate::protocol::PluginManifest`]); callable before `init`.
    pub describe: extern "C" fn() -> RString,
    /// Starts the plugin's runtime and hands it the host's configuration and callbacks.
    pub init: extern "C" fn(context: HostContext) -> RResult<(), ProviderError>,
    /// Creates one resource: `(resource type, CreateRequest JSON) -> CreateResult JSON`.
    pub create: extern "C" fn(resource_type: RString, request: RString) -> FfiCall,
    /// Updates one resource: `(resource type, UpdateRequest JSON) -> UpdateResult JSON`.
    pub update: extern "C" fn(resource_type: RString, request: RString) -> FfiCall,
    /// Deletes one resource: `(resource type, DeleteRequest JSON) -> DeleteResult JSON`.
    pub delete: extern "C" fn(resource_type: RString, request: RString) -> FfiCall,
    /// Every other operation, by name (`read_current_state`, `import`, `get_attribute`, ...).
    ///
    /// A type lists the names it implements in its schema's `operations`; any other name
    /// answers an `unsupported` error.
    #[sabi(last_prefix_field)]
    pub invoke:
        extern "C" fn(operation: RString, resource_type: RString, request: RString) -> FfiCall,
}

impl RootModule for ProviderPluginRef {
    declare_root_module_statics! {ProviderPluginRef}
    const BASE_NAME: &'static str = "cdkd_provider";
    const NAME: &'static str = "cdkd provider plugin";
    const VERSION_STRINGS: VersionStrings = package_version_strings!();
}

/// What the host hands a plugin in `init`.
#[repr(C)]
#[derive(StableAbi)]
pub struct HostContext {
    /// [`crate::protocol::HostConfig`] as JSON: region, credentials, endpoint, plugin name.
    pub config: RString,
    /// The most verbose level the host will print ([`LogLevel`] as `u8`); the plugin filters.
    pub max_log_level: u8,
    /// Forwards one log event: `(level, plugin name, target, message)`.
    pub log: extern "C" fn(level: u8, plugin: RStr<'_>, target: RStr<'_>, message: RStr<'_>),
    /// A named, blocking call into the host, e.g. `credentials`; JSON in, JSON out.
    /// Plugins call it from a blocking thread, never from an async task.
    pub host_call: extern "C" fn(name: RStr<'_>, payload: RStr<'_>) -> FfiResult,
}

/// Log levels as they cross the boundary (`tracing::Level` is not ABI-stable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum LogLevel {
    /// An error the user must see.
    Error = 1,
    /// Something surprising that did not stop the work.
    Warn = 2,
    /// Progress a user may want.
    Info = 3,
    /// Detail for debugging.
    Debug = 4,
    /// Everything.
    Trace = 5,
}

impl LogLevel {
    /// Decodes a level; unknown values (from a newer peer) count as the most verbose.
    pub fn from_u8(value: u8) -> LogLevel {
        match value {
            0 | 1 => LogLevel::Error,
            2 => LogLevel::Warn,
            3 => LogLevel::Info,
            4 => LogLevel::Debug,
            _ => LogLevel::Trace,
        }
    }
}

/// The class of a provider failure; an open set of `u32` codes so new kinds never break old peers.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorKind(pub u32);

impl ErrorKind {
    /// The resource (or its parent) does not exist.
    pub const NOT_FOUND: ErrorKind = ErrorKind(1);
    /// A resource with that name or id already exists.
    pub const ALREADY_EXISTS: ErrorKind = ErrorKind(2);
    /// The service asked us to slow down; retryable.
    pub const THROTTLED: ErrorKind = ErrorKind(3);
    /// The caller lacks permission.
    pub const ACCESS_DENIED: ErrorKind = ErrorKind(4);
    /// The request was malformed or a property value is invalid.
    pub const VALIDATION: ErrorKind = ErrorKind(5);
    /// The resource is in a state that forbids the operation (in use, being modified).
    pub const CONFLICT: ErrorKind = ErrorKind(6);
    /// The type or operation is not implemented by this provider.
    pub const UNSUPPORTED: ErrorKind = ErrorKind(7);
    /// The operation did not finish in time.
    pub const TIMEOUT: ErrorKind = ErrorKind(8);
    /// The plugin panicked; the host caught it.
    pub const PANIC: ErrorKind = ErrorKind(9);
    /// Anything else.
    pub const OTHER: ErrorKind = ErrorKind(10);
    /// The service failed on its side (a 5xx that is not throttling): worth another try, but
    /// not a reason to slow down, and the same failure twice is an answer (since 0.1.12).
    pub const SERVICE_ERROR: ErrorKind = ErrorKind(11);

    /// The stable lowercase name of a known kind, `None` for a code from a newer peer.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            ErrorKind::NOT_FOUND => "not-found",
            ErrorKind::ALREADY_EXISTS => "already-exists",
            ErrorKind::THROTTLED => "throttled",
            ErrorKind::ACCESS_DENIED => "access-denied",
            ErrorKind::VALIDATION => "validation",
            ErrorKind::CONFLICT => "conflict",
            ErrorKind::UNSUPPORTED => "unsupported",
            ErrorKind::TIMEOUT => "timeout",
            ErrorKind::PANIC => "panic",
            ErrorKind::OTHER => "other",
            ErrorKind::SERVICE_ERROR => "service-error",
            _ => return None,
        })
    }

    /// Parses a kind from its stable name.
    pub fn from_name(name: &str) -> Option<ErrorKind> {
        (1..=11)
            .map(ErrorKind)
            .find(|kind| kind.name() == Some(name))
    }

    /// Whether retrying the same call later can succeed.
    pub fn is_retryable(self) -> bool {
        matches!(self, ErrorKind::THROTTLED | ErrorKind::TIMEOUT)
    }
}

impl fmt::Debug for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "kind-{}", self.0),
        }
    }
}

/// A provider failure as it crosses the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, PartialEq, Eq)]
pub struct ProviderError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// A sentence for the user naming the type, resource and property involved.
    pub message: RString,
    /// The AWS error code (`NoSuchBucket`, `Throttling`, ...) when the failure came from AWS.
    pub aws_code: ROption<RString>,
}

impl ProviderError {
    /// An error of `kind` with `message` and no AWS code.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError {
            kind,
            message: RString::from(message.into()),
            aws_code: ROption::RNone,
        }
    }

    /// Attaches the AWS error code.
    pub fn with_aws_code(mut self, code: impl Into<String>) -> ProviderError {
        self.aws_code = ROption::RSome(RString::from(code.into()));
        self
    }

    /// A `validation` error.
    pub fn validation(message: impl Into<String>) -> ProviderError {
        ProviderError::new(ErrorKind::VALIDATION, message)
    }

    /// An `unsupported` error.
    pub fn unsupported(message: impl Into<String>) -> ProviderError {
        ProviderError::new(ErrorKind::UNSUPPORTED, message)
    }

    /// An `other` error.
    pub fn other(message: impl Into<String>) -> ProviderError {
        ProviderError::new(ErrorKind::OTHER, message)
    }

    /// The AWS error code, if any.
    pub fn aws_code(&self) -> Option<&str> {
        match &self.aws_code {
            ROption::RSome(code) => Some(code.as_str()),
            ROption::RNone => None,
        }
    }
}

impl fmt::Debug for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        match self.aws_code() {
            Some(code) => write!(f, " ({}, AWS code {code})", self.kind),
            None => write!(f, " ({})", self.kind),
        }
    }
}

impl std::error::Error for ProviderError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_round_trip_and_unknown_codes_stay_printable() {
        for code in 1..=11 {
            let kind = ErrorKind(code);
            let name = kind.name().expect("known kinds have names");
            assert_eq!(ErrorKind::from_name(name), Some(kind));
        }
        assert_eq!(ErrorKind(4242).name(), None);
        assert_eq!(ErrorKind(4242).to_string(), "kind-4242");
    }

    #[test]
    fn error_display_names_kind_and_aws_code() {
        let err = ProviderError::new(ErrorKind::THROTTLED, "S3 bucket Logs: slow down")
            .with_aws_code("SlowDown");
        assert_eq!(
            err.to_string(),
            "S3 bucket Logs: slow down (throttled, AWS code SlowDown)"
        );
        assert!(err.kind.is_retryable());
    }

    #[test]
    fn unknown_log_levels_are_most_verbose() {
        assert_eq!(LogLevel::from_u8(2), LogLevel::Warn);
        assert_eq!(LogLevel::from_u8(77), LogLevel::Trace);
    }
}
