//! `cdkd watch`: deploys, then deploys again each time a file of the app changes, as `cdk watch`
//! does. There is no hotswap: each round is a whole cdkd deploy, which calls AWS only for what
//! changed (and nothing at all when nothing did).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::Args;

use super::deploy::{deploy_until, stop_signal, DeployArgs};
use super::CommandContext;
use crate::synthesis::selection::glob_matches;

/// Folders never watched: what synthesis and builds write, and version control.
const ALWAYS_EXCLUDED: &[&str] = &["cdk.out", "node_modules", ".git", "target", "__pycache__"];

#[derive(Debug, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    deploy: DeployArgs,
    /// Watch only paths (relative to the watched folder) matching this pattern, `*` matching
    /// any characters, `/` included (repeatable; default: cdk.json "watch.include", else all).
    #[arg(long, value_name = "PATTERN")]
    include: Vec<String>,
    /// Ignore paths matching this pattern (repeatable; added to cdk.json "watch.exclude").
    #[arg(long, value_name = "PATTERN")]
    exclude: Vec<String>,
    /// How often the files are looked at, in milliseconds.
    #[arg(long, default_value_t = 500, value_name = "MS")]
    poll_interval: u64,
}

/// Which files count, under which folder.
#[derive(Debug)]
struct Watched {
    root: PathBuf,
    include: Vec<String>,
    exclude: Vec<String>,
}

/// Each watched file's modification time and size.
type Fingerprint = BTreeMap<PathBuf, (SystemTime, u64)>;

impl Watched {
    /// The app's folder: a cloud assembly given with `-a DIR`, else the current folder (where
    /// cdk.json is), with cdk.json's `watch` patterns under the flags'.
    fn new(args: &WatchArgs) -> Watched {
        let root = match args.deploy.app_folder() {
            Some(folder) => folder,
            None => PathBuf::from("."),
        };
        let config = std::fs::read(root.join("cdk.json"))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        let listed = |key: &str| -> Vec<String> {
            (config.as_ref())
                .and_then(|c| c["watch"][key].as_array())
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        };
        let include = if args.include.is_empty() {
            listed("include")
        } else {
            args.include.clone()
        };
        let mut exclude = listed("exclude");
        exclude.extend(args.exclude.iter().cloned());
        Watched {
            root,
            include,
            exclude,
        }
    }

    /// Whether `relative` (a path under the root, `/`-separated) is watched.
    fn counts(&self, relative: &str) -> bool {
        let matches = |pattern: &String| {
            // A bare folder name covers what is under it, as cdk.json's lists mean it.
            let pattern = pattern.trim_start_matches("./").trim_end_matches('/');
            let pattern = pattern.replace("**", "*");
            glob_matches(&pattern, relative) || relative.starts_with(&format!("{pattern}/"))
        };
        (self.include.is_empty() || self.include.iter().any(matches))
            && !self.exclude.iter().any(matches)
    }

    /// The fingerprint of every watched file now.
    fn fingerprint(&self) -> Fingerprint {
        let mut files = Fingerprint::new();
        let mut folders = vec![self.root.clone()];
        while let Some(folder) = folders.pop() {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    if !ALWAYS_EXCLUDED.contains(&name.as_str()) && !name.starts_with('.') {
                        folders.push(path);
                    }
                    continue;
                }
                let relative = relative_to(&self.root, &path);
                if !self.counts(&relative) {
                    continue;
                }
                if let Ok(meta) = entry.metadata() {
                    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    files.insert(path, (modified, meta.len()));
                }
            }
        }
        files
    }
}

fn relative_to(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative.to_string_lossy().replace('\\', "/")
}

/// The files that differ between two fingerprints (changed, added or removed).
fn changed(before: &Fingerprint, after: &Fingerprint) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = after
        .iter()
        .filter(|(path, stamp)| before.get(*path) != Some(*stamp))
        .map(|(path, _)| path.clone())
        .chain(before.keys().filter(|p| !after.contains_key(*p)).cloned())
        .collect();
    paths.sort();
    paths
}

/// `cdkd watch`.
pub async fn run(context: &CommandContext, args: WatchArgs) -> anyhow::Result<ExitCode> {
    let watched = Watched::new(&args);
    let interval = Duration::from_millis(args.poll_interval.max(50));
    // One Ctrl-C for the whole session: the first stops the deploy in flight (or the wait) and
    // ends the watch; a second quits at once.
    let stop = stop_signal("watch");
    loop {
        let before = watched.fingerprint();
        // Each deploy has its own stop, set by the session's Ctrl-C: a deploy that loses its
        // lock stops itself without ending the watch.
        let deploy_stop = tokio::sync::watch::Sender::new(*stop.borrow());
        let forward = {
            let mut session = stop.subscribe();
            let deploy_stop = deploy_stop.clone();
            tokio::spawn(async move {
                if session.wait_for(|s| *s).await.is_ok() {
                    deploy_stop.send_replace(true);
                }
            })
        };
        let deployed = deploy_until(context, args.deploy.clone(), deploy_stop).await;
        forward.abort();
        if let Err(err) = deployed {
            eprintln!("cdkd watch: the deploy failed: {err:#}");
        }
        if *stop.borrow() {
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!(
            "cdkd watch: watching {} for changes (Ctrl-C to stop)",
            watched.root.display()
        );
        let mut now = watched.fingerprint();
        // What changed while the deploy ran counts too.
        let mut edits = changed(&before, &now);
        while edits.is_empty() {
            let mut stopped = stop.subscribe();
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = stopped.wait_for(|s| *s) => return Ok(ExitCode::SUCCESS),
            }
            let later = watched.fingerprint();
            edits = changed(&now, &later);
            now = later;
        }
        // Editors write in bursts: let them finish before synthesizing.
        loop {
            tokio::time::sleep(interval).await;
            let later = watched.fingerprint();
            if changed(&now, &later).is_empty() {
                break;
            }
            now = later;
        }
        let shown: Vec<String> = (edits.iter().take(5))
            .map(|p| relative_to(&watched.root, p))
            .collect();
        eprintln!(
            "cdkd watch: {} changed{}; deploying",
            shown.join(", "),
            if edits.len() > 5 { ", …" } else { "" }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched(include: &[&str], exclude: &[&str]) -> Watched {
        Watched {
            root: PathBuf::from("."),
            include: include.iter().map(|s| s.to_string()).collect(),
            exclude: exclude.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn cdk_json_style_patterns_choose_the_files() {
        let all = watched(&[], &["README.md", "**/*.d.ts", "test"]);
        assert!(all.counts("lib/stack.ts"));
        assert!(!all.counts("lib/stack.d.ts"));
        assert!(!all.counts("README.md"));
        assert!(!all.counts("test/stack.test.ts"));
        let some = watched(&["lib/**", "bin/*.ts"], &[]);
        assert!(some.counts("lib/a/b.ts"));
        assert!(some.counts("bin/app.ts"));
        assert!(!some.counts("other.ts"));
    }

    #[test]
    fn a_file_edited_added_or_removed_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "1").unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        std::fs::write(dir.path().join("node_modules/x.js"), "1").unwrap();
        let watched = Watched {
            root: dir.path().to_path_buf(),
            include: Vec::new(),
            exclude: Vec::new(),
        };
        let first = watched.fingerprint();
        assert_eq!(first.len(), 1, "{first:?}");
        std::fs::write(dir.path().join("node_modules/x.js"), "22").unwrap();
        assert!(changed(&first, &watched.fingerprint()).is_empty());
        std::fs::write(dir.path().join("a.txt"), "22").unwrap();
        std::fs::write(dir.path().join("b.txt"), "1").unwrap();
        let second = watched.fingerprint();
        assert_eq!(changed(&first, &second).len(), 2);
        std::fs::remove_file(dir.path().join("a.txt")).unwrap();
        assert_eq!(
            changed(&second, &watched.fingerprint()),
            vec![dir.path().join("a.txt")]
        );
    }
}
