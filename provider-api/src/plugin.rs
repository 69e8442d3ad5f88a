//! The plugin side: what a provider author implements, and the glue that exports it.
//!
//! An author implements [`ResourceProvider`] once per resource type, registers each with
//! [`crate::register_provider!`] and exports the plugin with [`crate::export_plugin!`]. This
//! module turns those into the frozen root module: it owns the plugin's tokio runtime, spawns
//! every call on it, turns panics into `panic` errors and forwards `tracing` events to the host.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use abi_stable::std_types::{RResult, RStr, RString};
use async_ffi::FutureExt as _;
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

use crate::abi::{
    ErrorKind, FfiCall, FfiResult, HostContext, LogLevel, ProviderError, ProviderPlugin,
};
use crate::protocol::{
    host_call, operation, CreateRequest, CreateResult, Credentials, DeleteRequest, DeleteResult,
    GetAttributeRequest, GetAttributeResult, HostConfig, ImportRequest, PluginManifest,
    ReadCurrentStateRequest, ReadCurrentStateResult, ResourceTypeSchema, UpdateRequest,
    UpdateResult,
};

pub use async_trait::async_trait;

/// One resource type's implementation. Optional operations default to `unsupported`; list the
/// ones you implement in [`ResourceTypeSchema::operations`].
#[async_trait]
pub trait ResourceProvider: Send + Sync + 'static {
    /// The type name, handled and create-only properties, operations and id shape.
    fn schema(&self) -> ResourceTypeSchema;

    /// Creates the resource and returns its physical id and attributes.
    async fn create(
        &self,
        ctx: &PluginContext,
        request: CreateRequest,
    ) -> Result<CreateResult, ProviderError>;

    /// Updates the resource in place, or replaces it and says so.
    async fn update(
        &self,
        ctx: &PluginContext,
        request: UpdateRequest,
    ) -> Result<UpdateResult, ProviderError>;

    /// Deletes the resource; one already gone counts as deleted.
    async fn delete(
        &self,
        ctx: &PluginContext,
        request: DeleteRequest,
    ) -> Result<DeleteResult, ProviderError>;

    /// Reads the AWS-current properties.
    async fn read_current_state(
        &self,
        _ctx: &PluginContext,
        _request: ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        Err(unsupported_operation(
            &self.schema().type_name,
            operation::READ_CURRENT_STATE,
        ))
    }

    /// Adopts an existing resource.
    async fn import(
        &self,
        _ctx: &PluginContext,
        _request: ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        Err(unsupported_operation(
            &self.schema().type_name,
            operation::IMPORT,
        ))
    }

    /// Reads one attribute.
    async fn get_attribute(
        &self,
        _ctx: &PluginContext,
        _request: GetAttributeRequest,
    ) -> Result<GetAttributeResult, ProviderError> {
        Err(unsupported_operation(
            &self.schema().type_name,
            operation::GET_ATTRIBUTE,
        ))
    }

    /// Operations added to the protocol after this trait was written, by name.
    async fn invoke_other(
        &self,
        _ctx: &PluginContext,
        operation: &str,
        _request: Value,
    ) -> Result<Value, ProviderError> {
        Err(unsupported_operation(&self.schema().type_name, operation))
    }
}

fn unsupported_operation(type_name: &str, operation: &str) -> ProviderError {
    ProviderError::unsupported(format!(
        "{type_name} does not implement the '{operation}' operation"
    ))
}

/// A registered provider constructor, collected with `inventory` inside the plugin.
pub struct ProviderRegistration {
    /// Builds the provider once, when the plugin is first described or initialised.
    pub make: fn() -> Box<dyn ResourceProvider>,
}

inventory::collect!(ProviderRegistration);

/// The plugin's identity, filled in by [`crate::export_plugin!`] from its `Cargo.toml`.
#[derive(Debug, Clone, Copy)]
pub struct PluginInfo {
    /// Crate name.
    pub name: &'static str,
    /// Crate version.
    pub version: &'static str,
    /// One line for `cdkd providers list`.
    pub description: &'static str,
}

/// What a provider sees of the host: region, endpoint and credentials.
pub struct PluginContext {
    config: HostConfig,
    host_call: extern "C" fn(RStr<'_>, RStr<'_>) -> FfiResult,
    credentials: Mutex<Option<Credentials>>,
}

/// Credentials this close to expiry are refreshed through the host before use.
const CREDENTIAL_REFRESH_MARGIN: Duration = Duration::from_secs(300);

impl PluginContext {
    /// The AWS region to work in.
    pub fn region(&self) -> &str {
        &self.config.region
    }

    /// The endpoint override for every AWS service, if any.
    pub fn endpoint_url(&self) -> Option<&str> {
        self.config.endpoint_url.as_deref()
    }

    /// Whether S3 must be addressed path-style.
    pub fn s3_force_path_style(&self) -> bool {
        self.config.s3_force_path_style
    }

    /// The user's `--resource-timeout`, when given (a plugin applies its own default else).
    pub fn resource_timeout(&self) -> Option<std::time::Duration> {
        self.config
            .resource_timeout_secs
            .map(std::time::Duration::from_secs)
    }

    /// What creates and updates wait for, `cdkd deploy --wait` ([`crate::protocol::Wait`]).
    pub fn wait(&self) -> crate::protocol::Wait {
        self.config.wait
    }

    /// cdkd's state bucket, when the host has one for this command.
    pub fn state_bucket(&self) -> Option<&crate::protocol::StateBucketRef> {
        self.config.state_bucket.as_ref()
    }

    /// The name `plugins.toml` gave this plugin.
    pub fn plugin_name(&self) -> &str {
        &self.config.plugin_name
    }

    /// Current credentials; asks the host for fresh ones when they are about to expire.
    pub async fn credentials(&self) -> Result<Credentials, ProviderError> {
        if let Some(creds) = self.cached_credentials() {
            return Ok(creds);
        }
        let host_call = self.host_call;
        let fresh = tokio::task::spawn_blocking(move || {
            let answer = host_call(RStr::from(host_call::CREDENTIALS), RStr::from("{}"));
            decode::<Credentials>(answer.into_result()?.as_str(), "host credentials")
        })
        .await
        .map_err(|err| ProviderError::other(format!("credential refresh task failed: {err}")))??;
        *self.credentials.lock().unwrap_or_else(|e| e.into_inner()) = Some(fresh.clone());
        Ok(fresh)
    }

    fn cached_credentials(&self) -> Option<Credentials> {
        let cached = self.credentials.lock().unwrap_or_else(|e| e.into_inner());
        let creds = cached.as_ref()?;
        match creds.expires_at_epoch_secs {
            None => Some(creds.clone()),
            Some(expiry) => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                (now + CREDENTIAL_REFRESH_MARGIN < Duration::from_secs(expiry))
                    .then(|| creds.clone())
            }
        }
    }
}

struct PluginRuntime {
    runtime: tokio::runtime::Runtime,
    context: Arc<PluginContext>,
}

static INFO: OnceLock<PluginInfo> = OnceLock::new();
static PROVIDERS: OnceLock<BTreeMap<String, Arc<dyn ResourceProvider>>> = OnceLock::new();

tokio::task_local! {
    /// The resource type of the operation this task runs (a pattern provider's concrete type).
    static RESOURCE_TYPE: String;
}

/// The concrete resource type of the operation being run, e.g. `Custom::S3AutoDeleteObjects`
/// for a provider declared as `Custom::*`; `None` outside an operation.
pub fn current_resource_type() -> Option<String> {
    RESOURCE_TYPE.try_with(Clone::clone).ok()
}
static RUNTIME: OnceLock<PluginRuntime> = OnceLock::new();

fn providers() -> &'static BTreeMap<String, Arc<dyn ResourceProvider>> {
    PROVIDERS.get_or_init(|| {
        let mut by_type = BTreeMap::new();
        for registration in inventory::iter::<ProviderRegistration> {
            let provider: Arc<dyn ResourceProvider> = Arc::from((registration.make)());
            // Registration order is inventory's and not defined: when two registrations name
            // one type, the one inserted last replaces the other, and the warning names it.
            let type_name = provider.schema().type_name;
            if by_type.insert(type_name.clone(), provider).is_some() {
                tracing::warn!("provider for {type_name} registered twice; keeping one");
            }
        }
        by_type
    })
}

/// Builds the root module; called by the function [`crate::export_plugin!`] generates.
pub fn root_module(info: PluginInfo) -> crate::abi::ProviderPluginRef {
    use abi_stable::prefix_type::PrefixTypeTrait;
    let _ = INFO.set(info);
    ProviderPlugin {
        describe: ffi_describe,
        init: ffi_init,
        create: ffi_create,
        update: ffi_update,
        delete: ffi_delete,
        invoke: ffi_invoke,
    }
    .leak_into_prefix()
}

/// The manifest this plugin describes itself with.
pub fn manifest() -> PluginManifest {
    let info = INFO.get().copied().unwrap_or(PluginInfo {
        name: "unknown",
        version: "0.0.0",
        description: "",
    });
    let mut resource_types: Vec<ResourceTypeSchema> = providers()
        .values()
        .map(|provider| provider.schema())
        .collect();
    resource_types.sort_by(|a, b| a.type_name.cmp(&b.type_name));
    PluginManifest {
        name: info.name.to_string(),
        version: info.version.to_string(),
        description: info.description.to_string(),
        provider_api_version: crate::VERSION.to_string(),
        resource_types,
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

fn panic_error(what: &str, payload: &(dyn std::any::Any + Send)) -> ProviderError {
    let plugin = INFO.get().map_or("unknown", |info| info.name);
    ProviderError::new(
        ErrorKind::PANIC,
        format!(
            "plugin {plugin} panicked in {what}: {}",
            panic_message(payload)
        ),
    )
}

extern "C" fn ffi_describe() -> RString {
    // A panic must not unwind into the host; describe then reports an empty, invalid manifest
    // and the host refuses the plugin with a clear error.
    catch_unwind(|| serde_json::to_string(&manifest()).unwrap_or_default())
        .unwrap_or_default()
        .into()
}

extern "C" fn ffi_init(context: HostContext) -> RResult<(), ProviderError> {
    catch_unwind(AssertUnwindSafe(|| init(context)))
        .unwrap_or_else(|payload| Err(panic_error("init", &*payload)))
        .into()
}

fn init(context: HostContext) -> Result<(), ProviderError> {
    let config: HostConfig = decode(context.config.as_str(), "host config")?;
    crate::log_forward::install(
        context.log,
        LogLevel::from_u8(context.max_log_level),
        &config.plugin_name,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.worker_threads.clamp(1, 2))
        .thread_name(format!("cdkd-plugin-{}", config.plugin_name))
        .enable_all()
        .build()
        .map_err(|err| ProviderError::other(format!("cannot start the plugin runtime: {err}")))?;
    let plugin_context = Arc::new(PluginContext {
        credentials: Mutex::new(config.credentials.clone()),
        config,
        host_call: context.host_call,
    });
    providers();
    RUNTIME
        .set(PluginRuntime {
            runtime,
            context: plugin_context,
        })
        .map_err(|_| ProviderError::other("plugin initialised twice"))
}

extern "C" fn ffi_create(resource_type: RString, request: RString) -> FfiCall {
    dispatch("create", resource_type, request)
}

extern "C" fn ffi_update(resource_type: RString, request: RString) -> FfiCall {
    dispatch("update", resource_type, request)
}

extern "C" fn ffi_delete(resource_type: RString, request: RString) -> FfiCall {
    dispatch("delete", resource_type, request)
}

extern "C" fn ffi_invoke(operation: RString, resource_type: RString, request: RString) -> FfiCall {
    dispatch_owned(operation.into_string(), resource_type, request)
}

fn dispatch(operation: &'static str, resource_type: RString, request: RString) -> FfiCall {
    dispatch_owned(operation.to_string(), resource_type, request)
}

fn ready(result: Result<RString, ProviderError>) -> FfiCall {
    let result: FfiResult = result.into();
    async move { result }.into_ffi()
}

fn dispatch_owned(operation: String, resource_type: RString, request: RString) -> FfiCall {
    let spawned = catch_unwind(AssertUnwindSafe(|| {
        spawn_call(operation, resource_type, request)
    }));
    match spawned {
        Ok(Ok(call)) => call,
        Ok(Err(err)) => ready(Err(err)),
        Err(payload) => ready(Err(panic_error("dispatch", &*payload))),
    }
}

fn spawn_call(
    operation: String,
    resource_type: RString,
    request: RString,
) -> Result<FfiCall, ProviderError> {
    let runtime = RUNTIME
        .get()
        .ok_or_else(|| ProviderError::other("plugin used before init"))?;
    let provider =
        crate::protocol::best_match(providers().keys().map(String::as_str), &resource_type)
            .and_then(|declared| providers().get(declared))
            .cloned()
            .ok_or_else(|| {
                ProviderError::unsupported(format!(
                    "this plugin does not handle resource type {resource_type}"
                ))
            })?;
    let context = Arc::clone(&runtime.context);
    let what = format!("{operation} of {resource_type}");
    // tokio catches a panic inside the task and reports it through the JoinHandle.
    let concrete = resource_type.to_string();
    let task = runtime
        .runtime
        .spawn(RESOURCE_TYPE.scope(concrete, async move {
            run_operation(&*provider, &context, &operation, request.as_str()).await
        }));
    let call = AbortOnDrop(task);
    Ok(async move {
        let outcome = match call.await {
            Ok(result) => result,
            Err(join_error) if join_error.is_panic() => {
                Err(panic_error(&what, &*join_error.into_panic()))
            }
            Err(_) => Err(ProviderError::new(
                ErrorKind::TIMEOUT,
                format!("{what} was cancelled"),
            )),
        };
        FfiResult::from(outcome)
    }
    .into_ffi())
}

/// Aborts the plugin task when the host drops the future (a timeout or a cancelled deploy).
struct AbortOnDrop(tokio::task::JoinHandle<Result<RString, ProviderError>>);

impl Future for AbortOnDrop {
    type Output = Result<Result<RString, ProviderError>, tokio::task::JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_operation(
    provider: &dyn ResourceProvider,
    context: &PluginContext,
    operation: &str,
    request: &str,
) -> Result<RString, ProviderError> {
    let json = match operation {
        "create" => encode(
            provider
                .create(context, decode(request, operation)?)
                .await?,
        ),
        "update" => encode(
            provider
                .update(context, decode(request, operation)?)
                .await?,
        ),
        "delete" => encode(
            provider
                .delete(context, decode(request, operation)?)
                .await?,
        ),
        operation::READ_CURRENT_STATE => encode(
            provider
                .read_current_state(context, decode(request, operation)?)
                .await?,
        ),
        operation::IMPORT => encode(
            provider
                .import(context, decode(request, operation)?)
                .await?,
        ),
        operation::GET_ATTRIBUTE => encode(
            provider
                .get_attribute(context, decode(request, operation)?)
                .await?,
        ),
        other => encode(
            provider
                .invoke_other(context, other, decode(request, other)?)
                .await?,
        ),
    }?;
    Ok(RString::from(json))
}

/// Decodes a JSON document that crossed the boundary, naming it in the error.
pub fn decode<T: DeserializeOwned>(json: &str, what: &str) -> Result<T, ProviderError> {
    serde_json::from_str(json)
        .map_err(|err| ProviderError::validation(format!("malformed {what} request: {err}")))
}

fn encode<T: Serialize>(value: T) -> Result<String, ProviderError> {
    serde_json::to_string(&value)
        .map_err(|err| ProviderError::other(format!("cannot encode the provider's answer: {err}")))
}
