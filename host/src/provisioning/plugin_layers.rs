//! Which plugins files apply to a run, in which order, and which of them are trusted.
//!
//! Layers, lowest first:
//! 1. the install's own file (bundled): `<exe dir>/plugins.toml`, or `PREFIX/lib/cdkd/plugins.toml`
//!    for `PREFIX/bin/cdkd`. Trusted by where it is; every library it loads is pinned in it.
//! 2. `./plugins.toml`, a project's file: loaded only when the user trusts it
//!    ([`super::trust`]); otherwise skipped with one line on stderr.
//! 3. the user's `$XDG_CONFIG_HOME/cdkd/plugins.toml`: trusted; every library pinned in it.
//! 4. `CDKD_PLUGINS`, then 5. `--plugins FILE`: added over the others (a file that says
//!    `inherit = false` replaces them). A project's file unless it is one of the above; an
//!    untrusted one is an error, since the user asked for it by name.
//!
//! An entry replaces a lower layer's entry of the same name; replacing one of the install's
//! own prints a notice on every run. The workspace's `plugins.toml`, from which
//! `cdkd providers lock` wrote the bundled file of a development build, is that bundled file
//! while it is unchanged, not a second layer.

use std::path::{Path, PathBuf};

use super::plugins_file::{normalize, PluginsFile, PluginsFileError, PluginsFileSource};
use super::trust::{canonical, sha256_hex, Trust, TrustStore};

/// Every plugins file that applies, layered, with each library's pin set from its file or
/// from the user's trust.
pub fn load(
    flag: Option<&Path>,
    env: Option<&Path>,
    trust: Option<&TrustStore>,
) -> Result<PluginsFile, PluginsFileError> {
    let mut candidates: Vec<(PathBuf, PluginsFileSource)> = Vec::new();
    if let Some(bundled) = bundled_file() {
        candidates.push((bundled, PluginsFileSource::Bundled));
    }
    let local = PathBuf::from("plugins.toml");
    if local.is_file() {
        candidates.push((local, PluginsFileSource::WorkingDirectory));
    }
    if let Some(user) = user_file().filter(|f| f.is_file()) {
        candidates.push((user, PluginsFileSource::User));
    }
    if let Some(path) = env {
        candidates.push((path.to_path_buf(), PluginsFileSource::Env));
    }
    if let Some(path) = flag {
        candidates.push((path.to_path_buf(), PluginsFileSource::Flag));
    }
    let candidates: Vec<(PathBuf, PluginsFileSource)> = candidates
        .into_iter()
        .map(|(path, source)| (canonical(&path), source))
        .collect();
    let owned = [PluginsFileSource::Bundled, PluginsFileSource::User];
    let mut merged = PluginsFile::empty();
    for (at, (path, source)) in candidates.iter().enumerate() {
        // The same file twice is one layer, at its highest place, and as trusted as its most
        // trusted place: the install's file named again with --plugins is still the install's.
        if candidates[at + 1..].iter().any(|(later, _)| later == path) {
            continue;
        }
        let source = candidates
            .iter()
            .filter(|(other, _)| other == path)
            .map(|(_, source)| *source)
            .find(|source| owned.contains(source))
            .unwrap_or(*source);
        let source = &source;
        let bytes = std::fs::read(path).map_err(|source| PluginsFileError::Read {
            path: path.clone(),
            source,
        })?;
        let sha256 = sha256_hex(&bytes);
        let owned = [PluginsFileSource::Bundled, PluginsFileSource::User];
        if !owned.contains(source) {
            let is_bundled = merged.layers.iter().any(|(layer, layer_source)| {
                *layer_source == PluginsFileSource::Bundled && layer == path
            });
            let bundled_source = merged
                .locked_from
                .as_ref()
                .is_some_and(|(from, hash)| canonical(from) == *path && *hash == sha256);
            if is_bundled || bundled_source {
                tracing::debug!(file = %path.display(), "the bundled plugins file's own source; not a second layer");
                continue;
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut file = PluginsFile::parse(&text, path, *source)?;
        if !owned.contains(source) {
            match trust.map_or(Trust::Unknown, |store| store.lookup(path, &sha256)) {
                Trust::Trusted(pins) => {
                    for spec in &mut file.plugins {
                        spec.pin = pins.get(&spec.path).cloned();
                    }
                }
                refused => {
                    let reason = match refused {
                        Trust::Changed => "changed since you trusted it",
                        _ => "never trusted",
                    };
                    if *source != PluginsFileSource::WorkingDirectory {
                        return Err(PluginsFileError::Untrusted {
                            path: path.clone(),
                            reason: reason.to_string(),
                        });
                    }
                    merged.notices.push(format!(
                        "skipped the project plugins file {} ({reason}): its libraries would run with your AWS credentials; read it, then `cdkd providers trust {}` to load it",
                        path.display(),
                        path.display()
                    ));
                    continue;
                }
            }
        }
        merged = merged.overlaid_with(file);
    }
    Ok(merged)
}

/// The install's own plugins file: beside the executable, or in the installed layout
/// (`PREFIX/bin/cdkd` → `PREFIX/lib/cdkd/plugins.toml`).
pub fn bundled_file() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [
        dir.join("plugins.toml"),
        dir.join("../lib/cdkd/plugins.toml"),
    ]
    .into_iter()
    .find(|candidate| candidate.is_file())
    .map(|found| normalize(&found))
}

/// cdkd's configuration folder: `$XDG_CONFIG_HOME/cdkd`, else `~/.config/cdkd`.
pub fn config_dir() -> Option<PathBuf> {
    // A relative XDG_CONFIG_HOME is ignored, as the XDG spec says: it would make a
    // repository's `.config/cdkd/plugins.toml` (and trust records) the user's own.
    let base = absolute_env("XDG_CONFIG_HOME")
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(base.join("cdkd"))
}

/// `$name` when it is set to an absolute path.
pub fn absolute_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
}

/// The user's plugins file: `$XDG_CONFIG_HOME/cdkd/plugins.toml`, else
/// `~/.config/cdkd/plugins.toml`.
pub fn user_file() -> Option<PathBuf> {
    config_dir().map(|dir| dir.join("plugins.toml"))
}
