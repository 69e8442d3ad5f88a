//! The host side: loading a plugin `.so` and calling it with typed requests.
//!
//! All `unsafe` of the project lives here and in nothing else the host uses. The loader goes
//! through abi_stable's raw-library API at an explicit path, because
//! `RootModule::load_from_file` caches one module per root-module type and would silently hand
//! the second plugin the first plugin's module.

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use abi_stable::library::{lib_header_from_raw_library, LibraryError, RawLibrary, RootModule};
use abi_stable::sabi_types::VersionNumber;
use abi_stable::std_types::RString;
use serde::{de::DeserializeOwned, Serialize};

use crate::abi::{ErrorKind, HostContext, ProviderError, ProviderPluginRef};
use crate::protocol::{
    operation, CreateRequest, CreateResult, DeleteRequest, DeleteResult, GetAttributeRequest,
    GetAttributeResult, ImportRequest, PluginManifest, ReadCurrentStateRequest,
    ReadCurrentStateResult, UpdateRequest, UpdateResult,
};

/// Why a plugin could not be loaded; every message fits on one line and names the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The path does not exist.
    #[error("file not found: {}", path.display())]
    NotFound {
        /// The path that was tried.
        path: PathBuf,
    },
    /// The file is not a loadable shared library.
    #[error("not a shared library ({reason}): {}", path.display())]
    NotALibrary {
        /// The file.
        path: PathBuf,
        /// The dynamic loader's explanation.
        reason: String,
    },
    /// The library does not export a cdkd root module (not a cdkd plugin, or not a cdylib).
    #[error("no cdkd root module (is it a cdkd provider plugin built as a cdylib?): {}", path.display())]
    NoRootModule {
        /// The file.
        path: PathBuf,
    },
    /// The plugin was built against a provider-api this host cannot load.
    #[error("incompatible ABI: built against provider-api {plugin_api}, host has {host_api}; rebuild the plugin against provider-api {host_api}: {}", path.display())]
    IncompatibleApi {
        /// The file.
        path: PathBuf,
        /// The provider-api version the plugin was built with.
        plugin_api: String,
        /// The host's provider-api version.
        host_api: String,
    },
    /// Same API version, different type layouts: the plugin was built from a modified API crate.
    #[error("ABI layout mismatch: built against provider-api {plugin_api}, host has {host_api}, and the type layouts differ ({first_difference}); rebuild the plugin against the published provider-api: {}", path.display())]
    LayoutMismatch {
        /// The file.
        path: PathBuf,
        /// The provider-api version the plugin claims.
        plugin_api: String,
        /// The host's provider-api version.
        host_api: String,
        /// The first line of abi_stable's report that names a difference.
        first_difference: String,
        /// abi_stable's whole report, for `--verbose`.
        report: String,
    },
    /// The file is not the library its plugins file pins.
    #[error("refused: its SHA-256 is {actual}, but the plugins file pins {expected}; if you built or trust this library, pin it again (`cdkd providers lock` for your own plugins file, `cdkd providers trust` for a project's), else restore the pinned file: {}", path.display())]
    HashMismatch {
        /// The file.
        path: PathBuf,
        /// The pinned SHA-256.
        expected: String,
        /// The file's SHA-256.
        actual: String,
    },
    /// The plugin's root-module constructor or `describe` failed.
    #[error("the plugin failed to start: {reason}: {}", path.display())]
    Broken {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

/// Caps glibc's malloc arenas for the whole process at `arenas` (elsewhere: does nothing).
///
/// Every plugin runs its own tokio runtime, and glibc gives each new thread that allocates an
/// arena of its own (up to eight per core): a deploy's dozen plugin threads turn that into
/// megabytes of mostly empty heap (a deploy of 50 queues, topics, parameters and roles: 60.5 MB
/// peak RSS, 57.4 MB with two arenas). Call it before any plugin is loaded.
pub fn limit_malloc_arenas(arenas: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn mallopt(
                param: std::os::raw::c_int,
                value: std::os::raw::c_int,
            ) -> std::os::raw::c_int;
        }
        /// glibc's `M_ARENA_MAX` (malloc.h).
        const M_ARENA_MAX: std::os::raw::c_int = -8;
        // SAFETY: mallopt only sets a tuning parameter of glibc's allocator; it takes two ints,
        // touches no memory of ours, and is safe to call at any time (it takes the allocator's
        // own lock). An unknown value is refused by its return code, which changes nothing.
        let _ = unsafe { mallopt(M_ARENA_MAX, arenas) };
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = arenas;
}

/// The provider-api version this host was built with.
pub fn host_api_version() -> VersionNumber {
    ProviderPluginRef::VERSION_STRINGS
        .parsed()
        .expect("provider-api's own version parses")
}

/// Whether a plugin built against `plugin` can be loaded by a host built against `host`.
///
/// Same rule as cargo's caret: the same major, or for 0.x the same minor; patch levels may
/// differ in both directions because the frozen surface only grows by optional fields.
pub fn api_versions_compatible(host: VersionNumber, plugin: VersionNumber) -> bool {
    if host.major == 0 || plugin.major == 0 {
        host.major == plugin.major && host.minor == plugin.minor
    } else {
        host.major == plugin.major
    }
}

/// A loaded plugin library: its manifest and its frozen entry points.
pub struct PluginLibrary {
    module: ProviderPluginRef,
    manifest: PluginManifest,
    api_version: VersionNumber,
    path: PathBuf,
}

impl std::fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLibrary")
            .field("manifest", &self.manifest)
            .field("api_version", &self.api_version.to_string())
            .field("path", &self.path)
            .finish()
    }
}

/// The SHA-256 of a file's bytes as lowercase hex: what plugins files pin a library by.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    sha256_of(&mut std::fs::File::open(path)?)
}

fn sha256_of(reader: &mut impl Read) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    // Streamed: a plugin is tens of MB, and reading it whole would count in the host's RSS.
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buffer[..n]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect())
}

/// The file a `cdylib` crate named `crate_name` builds to on `os` (a value of
/// [`std::env::consts::OS`]): `lib<name>.so`, `lib<name>.dylib` or `<name>.dll`.
pub fn library_file_name(crate_name: &str, os: &str) -> String {
    let stem = crate_name.replace('-', "_");
    match os {
        "macos" | "ios" => format!("lib{stem}.dylib"),
        "windows" => format!("{stem}.dll"),
        _ => format!("lib{stem}.so"),
    }
}

/// Loads the plugin at `path`, whose bytes must hash to `expected_sha256` (lowercase hex).
///
/// The hash is checked before the dynamic loader sees the file, so a library that is not the
/// one pinned never runs a line of code (its constructors run at `dlopen`, before any ABI
/// check could refuse it). On Linux the loader opens the very file that was hashed
/// (`/proc/self/fd/N`), so a file swapped in after the check is not the one loaded. The
/// library is never unloaded: its vtables and statics must outlive every value that came from
/// it.
pub fn load(path: &Path, expected_sha256: &str) -> Result<PluginLibrary, LoadError> {
    if !path.is_file() {
        return Err(LoadError::NotFound {
            path: path.to_path_buf(),
        });
    }
    let file = std::fs::File::open(path).map_err(|err| unreadable(path, err))?;
    load_opened(file, path, expected_sha256)
}

fn unreadable(path: &Path, err: std::io::Error) -> LoadError {
    LoadError::NotALibrary {
        path: path.to_path_buf(),
        reason: format!("cannot read the file: {err}"),
    }
}

/// [`load`] of a file opened from `path` earlier: what is hashed and mapped is that open file,
/// so a file put at `path` since (an install replacing the plugins) is not the one loaded.
pub fn load_opened(
    mut file: std::fs::File,
    path: &Path,
    expected_sha256: &str,
) -> Result<PluginLibrary, LoadError> {
    let unreadable = |err: std::io::Error| unreadable(path, err);
    file.seek(std::io::SeekFrom::Start(0)).map_err(unreadable)?;
    let actual = sha256_of(&mut file).map_err(unreadable)?;
    if !actual.eq_ignore_ascii_case(expected_sha256) {
        return Err(LoadError::HashMismatch {
            path: path.to_path_buf(),
            expected: expected_sha256.to_string(),
            actual,
        });
    }
    let mut file = if is_gzip(&mut file) {
        inflate(file, path)?
    } else {
        file
    };
    if let Some(problem) = crate::elf_check::check(&mut file) {
        return Err(LoadError::NotALibrary {
            path: path.to_path_buf(),
            reason: problem,
        });
    }
    let raw =
        RawLibrary::load_at(&opened_path(&file, path)).map_err(|err| LoadError::NotALibrary {
            path: path.to_path_buf(),
            reason: one_line(&library_error_reason(&err)),
        })?;
    // Kept open for the life of the process: the loader knows the library by the name
    // `/proc/self/fd/N`, and a later plugin opened under a reused N would be handed this one.
    std::mem::forget(file);
    let raw: &'static RawLibrary = Box::leak(Box::new(raw));
    // SAFETY: `raw` is 'static, so the header's 'static references into the library stay valid;
    // the symbol is abi_stable's root-module header, whose type abi_stable itself checks below.
    let header = unsafe { lib_header_from_raw_library(raw) }.map_err(|err| match err {
        LibraryError::GetSymbolError { .. } => LoadError::NoRootModule {
            path: path.to_path_buf(),
        },
        other => LoadError::Broken {
            path: path.to_path_buf(),
            reason: one_line(&other.to_string()),
        },
    })?;

    let host_api = host_api_version();
    let plugin_api = header
        .version_strings()
        .parsed()
        .map_err(|err| LoadError::Broken {
            path: path.to_path_buf(),
            reason: format!("unreadable provider-api version: {err}"),
        })?;
    if !api_versions_compatible(host_api, plugin_api) {
        return Err(LoadError::IncompatibleApi {
            path: path.to_path_buf(),
            plugin_api: plugin_api.to_string(),
            host_api: host_api.to_string(),
        });
    }
    // abi_stable's own `init_root_module` would also require plugin patch >= host patch, which
    // rejects an older plugin of the same minor; we check the version above and only the layout
    // here (prefix types make a host with more optional fields compatible with an older plugin).
    let module = header
        .check_layout::<ProviderPluginRef>()
        .map_err(|err| match err {
            LibraryError::AbiInstability(report) => {
                let report = report.to_string();
                LoadError::LayoutMismatch {
                    path: path.to_path_buf(),
                    plugin_api: plugin_api.to_string(),
                    host_api: host_api.to_string(),
                    first_difference: first_difference(&report),
                    report,
                }
            }
            other => LoadError::Broken {
                path: path.to_path_buf(),
                reason: one_line(&other.to_string()),
            },
        })?;

    let described = (module.describe())();
    let manifest: PluginManifest =
        serde_json::from_str(described.as_str()).map_err(|err| LoadError::Broken {
            path: path.to_path_buf(),
            reason: format!("describe returned an unreadable manifest: {err}"),
        })?;
    Ok(PluginLibrary {
        module,
        manifest,
        api_version: plugin_api,
        path: path.to_path_buf(),
    })
}

/// The most a compressed library may inflate to: bundled plugins are under 50 MB, and a pinned
/// file is trusted, but a mistake must not fill memory.
const MAX_INFLATED_BYTES: u64 = 1 << 30;

/// Whether `file` starts with gzip's magic bytes: a library stored compressed.
fn is_gzip(file: &mut std::fs::File) -> bool {
    let mut magic = [0u8; 2];
    let gzip = file.seek(std::io::SeekFrom::Start(0)).is_ok()
        && file.read_exact(&mut magic).is_ok()
        && magic == [0x1f, 0x8b];
    let _ = file.seek(std::io::SeekFrom::Start(0));
    gzip
}

/// The library `compressed` holds, inflated into an anonymous in-memory file: checked against
/// its pin as stored, it never touches the disk uncompressed, so nothing can be swapped in
/// between the check and the load.
#[cfg(target_os = "linux")]
fn inflate(compressed: std::fs::File, path: &Path) -> Result<std::fs::File, LoadError> {
    use std::os::fd::{FromRawFd, OwnedFd};
    let failed = |reason: String| LoadError::NotALibrary {
        path: path.to_path_buf(),
        reason,
    };
    let name = c"cdkd-plugin";
    // SAFETY: memfd_create takes a NUL-terminated name (a C string literal, 'static) and flags;
    // it returns a new descriptor or -1, touching no memory of ours.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(failed(format!(
            "cannot make an in-memory file to inflate it into: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: `fd` was just returned by memfd_create, is open, and nothing else owns it.
    let mut memory = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    let mut decoder = flate2::read::GzDecoder::new(std::io::BufReader::new(compressed));
    let written = std::io::copy(
        &mut (&mut decoder).take(MAX_INFLATED_BYTES + 1),
        &mut memory,
    )
    .map_err(|err| failed(format!("its gzip stream is damaged: {err}")))?;
    if written > MAX_INFLATED_BYTES {
        return Err(failed(format!(
            "it inflates to more than {MAX_INFLATED_BYTES} bytes"
        )));
    }
    memory
        .seek(std::io::SeekFrom::Start(0))
        .map_err(|err| failed(err.to_string()))?;
    Ok(memory)
}

/// Compressed libraries load on Linux only (from an in-memory file).
#[cfg(not(target_os = "linux"))]
fn inflate(_compressed: std::fs::File, path: &Path) -> Result<std::fs::File, LoadError> {
    Err(LoadError::NotALibrary {
        path: path.to_path_buf(),
        reason: "it is gzip-compressed, and compressed plugins load on Linux only; install an uncompressed build".into(),
    })
}

/// The path the dynamic loader should open for `file`, opened from `path`: on Linux the open
/// file itself, so what is loaded is what was hashed.
fn opened_path(file: &std::fs::File, path: &Path) -> PathBuf {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let own = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        if own.exists() {
            return own;
        }
    }
    let _ = file;
    path.to_path_buf()
}

fn library_error_reason(err: &LibraryError) -> String {
    match err {
        LibraryError::OpenError { err, .. } => err.to_string(),
        other => other.to_string(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Summarises abi_stable's multi-hundred-line layout report as "where: what (expected, found)".
///
/// The report lists, per error, the path of fields leading to it (`field_name:`/`type:` lines
/// after "N error(s)inside:"), then `Error:<kind>` with `Expected:`/`Found:` values.
fn first_difference(report: &str) -> String {
    let lines: Vec<&str> = report.lines().map(str::trim).collect();
    let Some(error_at) = lines.iter().position(|line| line.starts_with("Error:")) else {
        return lines
            .iter()
            .find(|l| !l.is_empty())
            .copied()
            .unwrap_or("no details")
            .to_string();
    };
    let kind = lines[error_at].trim_start_matches("Error:").trim();
    let value_after = |label: &str| {
        lines[error_at..]
            .iter()
            .position(|line| *line == label)
            .and_then(|i| lines.get(error_at + i + 1))
            .map(|value| value.trim().to_string())
            .unwrap_or_default()
    };
    let (expected, found) = (value_after("Expected:"), value_after("Found:"));
    let path_start = lines[..error_at]
        .iter()
        .rposition(|line| line.ends_with("error(s)inside:"))
        .unwrap_or(0);
    let path_end = lines[path_start..error_at]
        .iter()
        .position(|line| line.starts_with("Layout of expected type:"))
        .map_or(error_at, |i| path_start + i);
    let mut path: Vec<String> = Vec::new();
    let mut field = "";
    for line in &lines[path_start..path_end] {
        if let Some(name) = line.strip_prefix("field_name:") {
            field = name.trim_end_matches(',');
        } else if let Some(type_name) = line.strip_prefix("type:") {
            path.push(match field {
                "" | "0" => type_name.to_string(),
                field => format!("{field}: {type_name}"),
            });
            field = "";
        }
    }
    let mut summary = format!("{kind} at {}", path.join(" > "));
    if !expected.is_empty() || !found.is_empty() {
        summary.push_str(&format!(", host expects {expected}, plugin has {found}"));
    }
    summary
}

impl PluginLibrary {
    /// The plugin's self-description.
    pub fn manifest(&self) -> &PluginManifest {
        &self.manifest
    }

    /// The provider-api version the plugin was built against.
    pub fn api_version(&self) -> String {
        self.api_version.to_string()
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts the plugin with the host's configuration and callbacks.
    pub fn init(&self, context: HostContext) -> Result<(), ProviderError> {
        (self.module.init())(context).into_result()
    }

    /// Creates a resource.
    pub async fn create(
        &self,
        resource_type: &str,
        request: &CreateRequest,
    ) -> Result<CreateResult, ProviderError> {
        let call = (self.module.create())(resource_type.into(), encode(request)?);
        decode(call.await.into_result()?)
    }

    /// Updates a resource.
    pub async fn update(
        &self,
        resource_type: &str,
        request: &UpdateRequest,
    ) -> Result<UpdateResult, ProviderError> {
        let call = (self.module.update())(resource_type.into(), encode(request)?);
        decode(call.await.into_result()?)
    }

    /// Deletes a resource.
    pub async fn delete(
        &self,
        resource_type: &str,
        request: &DeleteRequest,
    ) -> Result<DeleteResult, ProviderError> {
        let call = (self.module.delete())(resource_type.into(), encode(request)?);
        decode(call.await.into_result()?)
    }

    /// Reads the AWS-current properties.
    pub async fn read_current_state(
        &self,
        resource_type: &str,
        request: &ReadCurrentStateRequest,
    ) -> Result<ReadCurrentStateResult, ProviderError> {
        self.invoke(operation::READ_CURRENT_STATE, resource_type, request)
            .await
    }

    /// Adopts an existing resource.
    pub async fn import(
        &self,
        resource_type: &str,
        request: &ImportRequest,
    ) -> Result<CreateResult, ProviderError> {
        self.invoke(operation::IMPORT, resource_type, request).await
    }

    /// Reads one attribute.
    pub async fn get_attribute(
        &self,
        resource_type: &str,
        request: &GetAttributeRequest,
    ) -> Result<GetAttributeResult, ProviderError> {
        self.invoke(operation::GET_ATTRIBUTE, resource_type, request)
            .await
    }

    /// Calls any operation by name: the way new operations reach older plugins.
    pub async fn invoke<Req: Serialize, Res: DeserializeOwned>(
        &self,
        operation: &str,
        resource_type: &str,
        request: &Req,
    ) -> Result<Res, ProviderError> {
        let call = (self.module.invoke())(operation.into(), resource_type.into(), encode(request)?);
        decode(call.await.into_result()?)
    }
}

fn encode<T: Serialize>(request: &T) -> Result<RString, ProviderError> {
    serde_json::to_string(request)
        .map(RString::from)
        .map_err(|err| ProviderError::other(format!("cannot encode the request: {err}")))
}

fn decode<T: DeserializeOwned>(answer: RString) -> Result<T, ProviderError> {
    serde_json::from_str(answer.as_str()).map_err(|err| {
        ProviderError::new(
            ErrorKind::OTHER,
            format!("the plugin answered a document the host cannot read: {err}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32, patch: u32) -> VersionNumber {
        VersionNumber {
            major,
            minor,
            patch,
        }
    }

    #[test]
    fn same_minor_loads_in_both_directions() {
        assert!(api_versions_compatible(v(0, 1, 1), v(0, 1, 0)));
        assert!(api_versions_compatible(v(0, 1, 0), v(0, 1, 7)));
    }

    #[test]
    fn another_minor_or_major_is_refused() {
        assert!(!api_versions_compatible(v(0, 1, 1), v(0, 2, 0)));
        assert!(!api_versions_compatible(v(1, 0, 0), v(0, 1, 0)));
        assert!(!api_versions_compatible(v(1, 4, 0), v(2, 0, 0)));
        assert!(api_versions_compatible(v(1, 4, 0), v(1, 0, 3)));
    }

    #[test]
    fn the_layout_report_becomes_one_line() {
        let report = "0 error(s)inside:\n  field_name:0\n  type:ProviderPlugin\n\n\
            1 error(s)inside:\n    <other>\n    field_name:0\n    type:ProviderPlugin\n\
            field_name:init\n    type:AFunctionPointer\n    field_name:context,\n    type:HostContext\n\
            Layout of expected type:\n    type:HostContext\n    field_name:config\n\
            Error:incompatible type size\nExpected:\n    88\nFound:\n    96\n2 error(s)inside:\n";
        assert_eq!(
            first_difference(report),
            "incompatible type size at ProviderPlugin > init: AFunctionPointer > context: HostContext, host expects 88, plugin has 96"
        );
    }

    #[test]
    fn library_file_names_follow_each_platform() {
        assert_eq!(
            library_file_name("cdkd-provider-s3", "linux"),
            "libcdkd_provider_s3.so"
        );
        assert_eq!(
            library_file_name("cdkd_provider_s3", "freebsd"),
            "libcdkd_provider_s3.so"
        );
        assert_eq!(
            library_file_name("cdkd-provider-s3", "macos"),
            "libcdkd_provider_s3.dylib"
        );
        assert_eq!(
            library_file_name("cdkd-provider-s3", "windows"),
            "cdkd_provider_s3.dll"
        );
    }

    #[test]
    fn a_file_whose_hash_differs_from_its_pin_is_never_opened_by_the_loader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libx.so");
        std::fs::write(&path, b"abc").unwrap();
        // The SHA-256 of "abc", a published test vector.
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(sha256_file(&path).unwrap(), abc);
        let wrong = "0".repeat(64);
        match load(&path, &wrong).unwrap_err() {
            LoadError::HashMismatch {
                expected, actual, ..
            } => {
                assert_eq!((expected.as_str(), actual.as_str()), (wrong.as_str(), abc));
            }
            other => panic!("expected a hash mismatch, got {other}"),
        }
        // With the right pin the same file reaches the loader, which refuses it as no library.
        assert!(matches!(
            load(&path, abc).unwrap_err(),
            LoadError::NotALibrary { .. }
        ));
    }

    #[test]
    fn a_compressed_file_is_checked_as_stored_then_inflated_before_the_loader_sees_it() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libx.so.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"\x7fELF and then nothing a loader wants")
            .unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        let pin = sha256_file(&path).unwrap();
        // Inflated, the bytes are an ELF header cut short: the structural check refuses them,
        // which it could only do after inflating.
        match load(&path, &pin).unwrap_err() {
            LoadError::NotALibrary { reason, .. } => {
                assert!(reason.contains("truncated"), "{reason}")
            }
            other => panic!("expected a refusal of the inflated bytes, got {other}"),
        }
        assert!(matches!(
            load(&path, &"0".repeat(64)).unwrap_err(),
            LoadError::HashMismatch { .. }
        ));
        let damaged = dir.path().join("libdamaged.so.gz");
        std::fs::write(&damaged, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
        let err = load(&damaged, &sha256_file(&damaged).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("gzip stream is damaged"), "{err}");
    }

    #[test]
    fn a_missing_file_names_the_path() {
        let err = load(Path::new("/nonexistent/libnothing.so"), "").unwrap_err();
        assert_eq!(
            err.to_string(),
            "file not found: /nonexistent/libnothing.so"
        );
    }
}
