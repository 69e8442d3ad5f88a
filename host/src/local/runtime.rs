//! Which interpreter runs a function (`node` or `python3.X` from PATH), the bootstrap that loads
//! its handler, and the module paths its layers give it (each layer's folder standing in for
//! `/opt`, as Lambda extracts them there).

use std::path::{Path, PathBuf};

use super::LocalError;

/// The Node.js bootstrap, embedded in the binary.
pub const NODE_BOOTSTRAP: &str = include_str!("bootstrap.js");
/// The Python bootstrap, embedded in the binary.
pub const PYTHON_BOOTSTRAP: &str = include_str!("bootstrap.py");

/// A runtime `cdkd local` can run without a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Runtime {
    /// `nodejsNN.x`: the major version.
    Node(u32),
    /// `python3.N`: the version (`3.12`).
    Python(String),
}

impl Runtime {
    /// The runtime of a function, or the refusal naming it.
    pub fn of(runtime: &str, image: bool, function: &str) -> Result<Runtime, LocalError> {
        if image {
            return Err(LocalError::Unsupported {
                function: function.to_string(),
                runtime: "a container image package".into(),
                hint: "run it with --container".into(),
            });
        }
        if let Some(rest) = runtime.strip_prefix("nodejs") {
            let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(major) = major.parse() {
                return Ok(Runtime::Node(major));
            }
        }
        if let Some(version) = runtime.strip_prefix("python") {
            if version.starts_with("3.") {
                return Ok(Runtime::Python(version.to_string()));
            }
        }
        let kind = if runtime.starts_with("provided") {
            "a custom runtime (it needs its bootstrap binary built for Amazon Linux)"
        } else if runtime.starts_with("java") || runtime.starts_with("dotnet") {
            "a compiled runtime"
        } else {
            "a runtime cdkd local does not run"
        };
        Err(LocalError::Unsupported {
            function: function.to_string(),
            runtime: format!("{runtime} ({kind})"),
            hint:
                "only nodejs* and python3* run from PATH; run it with --container (Docker) instead"
                    .into(),
        })
    }

    /// The interpreter names to look for on PATH, best first.
    fn candidates(&self) -> Vec<String> {
        match self {
            Runtime::Node(_) => vec!["node".into()],
            Runtime::Python(version) => vec![format!("python{version}"), "python3".into()],
        }
    }

    /// The interpreter on PATH (`path`: the PATH to search).
    pub fn interpreter(&self, path: &str, function: &str) -> Result<PathBuf, LocalError> {
        self.candidates()
            .iter()
            .find_map(|name| which(name, path))
            .ok_or_else(|| LocalError::NoInterpreter {
                function: function.to_string(),
                wanted: self.candidates().join(" or "),
            })
    }

    /// The bootstrap's file name and text.
    pub fn bootstrap(&self) -> (&'static str, &'static str) {
        match self {
            Runtime::Node(_) => ("bootstrap.js", NODE_BOOTSTRAP),
            Runtime::Python(_) => ("bootstrap.py", PYTHON_BOOTSTRAP),
        }
    }

    /// The module-path variable and its entries for the task root and layers (a later layer
    /// first, as a later layer overrides an earlier one in `/opt`), before `inherited` (the
    /// machine's own modules, standing in for the runtime's bundled SDK).
    pub fn module_path(
        &self,
        task_root: &Path,
        layers: &[PathBuf],
        inherited: Option<&str>,
    ) -> (&'static str, String) {
        let mut entries: Vec<PathBuf> = Vec::new();
        match self {
            Runtime::Node(major) => {
                for layer in layers.iter().rev() {
                    entries.push(layer.join(format!("nodejs/node{major}/node_modules")));
                    entries.push(layer.join("nodejs/node_modules"));
                }
                entries.push(task_root.to_path_buf());
            }
            Runtime::Python(version) => {
                entries.push(task_root.to_path_buf());
                for layer in layers.iter().rev() {
                    entries.push(layer.join(format!("python/lib/python{version}/site-packages")));
                    entries.push(layer.join("python"));
                }
            }
        }
        let mut joined = std::env::join_paths(&entries)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(inherited) = inherited.filter(|v| !v.is_empty()) {
            joined.push(':');
            joined.push_str(inherited);
        }
        let name = match self {
            Runtime::Node(_) => "NODE_PATH",
            Runtime::Python(_) => "PYTHONPATH",
        };
        (name, joined)
    }

    /// The image of the runtime's Lambda base image (with the Runtime Interface Emulator).
    pub fn image_of(runtime: &str) -> Option<String> {
        let (family, version) = if let Some(v) = runtime.strip_prefix("nodejs") {
            ("nodejs", v.trim_end_matches(".x").to_string())
        } else if let Some(v) = runtime.strip_prefix("python") {
            ("python", v.to_string())
        } else if let Some(v) = runtime.strip_prefix("java") {
            ("java", v.trim_end_matches(".al2").to_string())
        } else if let Some(v) = runtime.strip_prefix("dotnet") {
            ("dotnet", v.to_string())
        } else if let Some(v) = runtime.strip_prefix("ruby") {
            ("ruby", v.to_string())
        } else if let Some(v) = runtime.strip_prefix("provided") {
            ("provided", v.trim_start_matches('.').to_string())
        } else {
            return None;
        };
        let tag = if version.is_empty() {
            "latest".to_string()
        } else {
            version
        };
        Some(format!("public.ecr.aws/lambda/{family}:{tag}"))
    }
}

/// The first executable called `name` on `path`.
pub fn which(name: &str, path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_and_python_runtimes_run_and_others_are_refused_by_name() {
        assert_eq!(
            Runtime::of("nodejs20.x", false, "S/Fn").unwrap(),
            Runtime::Node(20)
        );
        assert_eq!(
            Runtime::of("python3.11", false, "S/Fn").unwrap(),
            Runtime::Python("3.11".into())
        );
        for (runtime, words) in [
            ("java21", "compiled"),
            ("dotnet8", "compiled"),
            ("provided.al2023", "custom runtime"),
            ("ruby3.3", "does not run"),
        ] {
            let message = Runtime::of(runtime, false, "S/JavaFn (JavaFn1)")
                .unwrap_err()
                .to_string();
            assert!(message.contains("S/JavaFn (JavaFn1)"), "{message}");
            assert!(
                message.contains(runtime) && message.contains(words),
                "{message}"
            );
            assert!(message.contains("--container"), "{message}");
        }
        let image = Runtime::of("", true, "S/Img").unwrap_err().to_string();
        assert!(
            image.contains("S/Img") && image.contains("image"),
            "{image}"
        );
    }

    #[test]
    fn layers_are_on_the_module_path_a_later_one_first() {
        let (name, value) = Runtime::Node(20).module_path(
            Path::new("/task"),
            &[PathBuf::from("/l1"), PathBuf::from("/l2")],
            Some("/sdk"),
        );
        assert_eq!(name, "NODE_PATH");
        assert_eq!(
            value,
            "/l2/nodejs/node20/node_modules:/l2/nodejs/node_modules:/l1/nodejs/node20/node_modules:/l1/nodejs/node_modules:/task:/sdk"
        );
        let (name, value) = Runtime::Python("3.11".into()).module_path(
            Path::new("/task"),
            &[PathBuf::from("/l1")],
            None,
        );
        assert_eq!(name, "PYTHONPATH");
        assert_eq!(
            value,
            "/task:/l1/python/lib/python3.11/site-packages:/l1/python"
        );
    }

    #[test]
    fn base_images_are_named_after_the_runtime() {
        assert_eq!(
            Runtime::image_of("nodejs20.x").unwrap(),
            "public.ecr.aws/lambda/nodejs:20"
        );
        assert_eq!(
            Runtime::image_of("python3.12").unwrap(),
            "public.ecr.aws/lambda/python:3.12"
        );
        assert_eq!(
            Runtime::image_of("provided.al2023").unwrap(),
            "public.ecr.aws/lambda/provided:al2023"
        );
        assert_eq!(Runtime::image_of("go1.x"), None);
    }
}
