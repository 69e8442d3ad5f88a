//! A Lambda function as `cdkd local` runs it, read from the synthesized template: its code
//! folder (the asset, or inline source), handler, runtime, timeout, memory, layers and raw
//! environment.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::LocalError;
use crate::analyzer::template::{Resource, Template};

/// The type of the resources `cdkd local` runs.
pub const FUNCTION_TYPE: &str = "AWS::Lambda::Function";
const LAYER_TYPE: &str = "AWS::Lambda::LayerVersion";
/// Lambda's default timeout (seconds) when the template sets none.
const DEFAULT_TIMEOUT: u64 = 3;
/// Lambda's default memory (MB) when the template sets none.
const DEFAULT_MEMORY: u64 = 128;

/// Where a function's code comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Code {
    /// A folder (the staged asset): run in place, no zip.
    Folder(PathBuf),
    /// A zip file asset, extracted before each run.
    Zip(PathBuf),
    /// `Code.ZipFile` inline source, written to `index.js` / `index.py`.
    Inline(String),
}

/// One function of a stack.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalFunction {
    /// The logical id.
    pub logical_id: String,
    /// The construct path (`Stack/Fn`, the `aws:cdk:path` without `/Resource`).
    pub path: String,
    /// `Runtime` (empty for an image package).
    pub runtime: String,
    /// `Handler`.
    pub handler: String,
    /// The code.
    pub code: Code,
    /// `Timeout` in seconds.
    pub timeout: u64,
    /// `MemorySize` in MB.
    pub memory: u64,
    /// The layers' folders, in the template's order (a later one overrides an earlier).
    pub layers: Vec<PathBuf>,
    /// Layers that are not assets of this stack (ARNs of other accounts or stacks).
    pub external_layers: Vec<String>,
    /// `Environment.Variables`, unresolved.
    pub environment: Map<String, Value>,
    /// `FunctionName`, unresolved.
    pub function_name: Option<Value>,
    /// `PackageType: Image`.
    pub image: bool,
}

impl LocalFunction {
    /// How messages name it: `Stack/Fn (LogicalId)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.path, self.logical_id)
    }
}

fn cdk_path(resource: &Resource) -> Option<&str> {
    resource
        .metadata
        .as_ref()
        .and_then(|m| m.get("aws:cdk:path"))
        .and_then(Value::as_str)
}

fn asset_path(resource: &Resource, assembly: &Path) -> Option<PathBuf> {
    resource
        .metadata
        .as_ref()
        .and_then(|m| m.get("aws:asset:path"))
        .and_then(Value::as_str)
        .map(|p| assembly.join(p))
}

/// The construct path of a resource: its `aws:cdk:path` without the trailing `/Resource`.
pub fn construct_path(logical_id: &str, resource: &Resource) -> String {
    cdk_path(resource)
        .map(|p| p.strip_suffix("/Resource").unwrap_or(p).to_string())
        .unwrap_or_else(|| logical_id.to_string())
}

/// The logical id of the resource a `{"Ref": X}` names, if `value` is one.
fn ref_target(value: &Value) -> Option<&str> {
    value.as_object()?.get("Ref")?.as_str()
}

/// Reads one function of `template` (assets relative to `assembly`).
pub fn read(
    template: &Template,
    assembly: &Path,
    logical_id: &str,
) -> Result<LocalFunction, LocalError> {
    let resource = template
        .resources
        .get(logical_id)
        .filter(|r| r.kind == FUNCTION_TYPE)
        .ok_or_else(|| LocalError::NotAFunction(logical_id.to_string()))?;
    let props = &resource.properties;
    let path = construct_path(logical_id, resource);
    let text = |key: &str| props.get(key).and_then(Value::as_str).unwrap_or_default();
    let number = |key: &str, default: u64| {
        props
            .get(key)
            .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
            .unwrap_or(default)
    };
    let image = text("PackageType") == "Image";
    let code_props = props.get("Code").and_then(Value::as_object);
    let code = if let Some(source) = code_props
        .and_then(|c| c.get("ZipFile"))
        .and_then(Value::as_str)
    {
        Code::Inline(source.to_string())
    } else if let Some(folder) = asset_path(resource, assembly) {
        if folder.is_dir() {
            Code::Folder(folder)
        } else {
            Code::Zip(folder)
        }
    } else if image {
        Code::Inline(String::new())
    } else {
        return Err(LocalError::NoCode(format!("{path} ({logical_id})")));
    };
    let mut layers = Vec::new();
    let mut external_layers = Vec::new();
    for layer in props
        .get("Layers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let own = ref_target(layer)
            .and_then(|id| template.resources.get(id).map(|r| (id, r)))
            .filter(|(_, r)| r.kind == LAYER_TYPE);
        match own.and_then(|(_, r)| asset_path(r, assembly)) {
            Some(folder) => layers.push(folder),
            None => external_layers.push(match (own, layer.as_str()) {
                (Some((id, _)), _) => format!("{id} (no asset folder)"),
                (None, Some(arn)) => arn.to_string(),
                (None, None) => layer.to_string(),
            }),
        }
    }
    Ok(LocalFunction {
        logical_id: logical_id.to_string(),
        path,
        runtime: text("Runtime").to_string(),
        handler: text("Handler").to_string(),
        code,
        timeout: number("Timeout", DEFAULT_TIMEOUT),
        memory: number("MemorySize", DEFAULT_MEMORY),
        layers,
        external_layers,
        environment: props
            .get("Environment")
            .and_then(|e| e.get("Variables"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        function_name: props.get("FunctionName").cloned(),
        image,
    })
}

/// The logical ids of the stack's functions, sorted.
pub fn all(template: &Template) -> Vec<String> {
    template
        .resources
        .iter()
        .filter(|(_, r)| r.kind == FUNCTION_TYPE)
        .map(|(id, _)| id.clone())
        .collect()
}

/// Finds the one function a `Stack/Path/To/Fn` construct path (or a logical id) names.
pub fn find(template: &Template, stack: &str, name: &str) -> Result<String, LocalError> {
    if template
        .resources
        .get(name)
        .is_some_and(|r| r.kind == FUNCTION_TYPE)
    {
        return Ok(name.to_string());
    }
    let path = if name.starts_with(&format!("{stack}/")) {
        name.to_string()
    } else {
        format!("{stack}/{name}")
    };
    let functions: Vec<String> = template
        .resources_under(&path)
        .into_iter()
        .filter(|id| template.resources[id].kind == FUNCTION_TYPE)
        .collect();
    match functions.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(LocalError::NoSuchFunction {
            stack: stack.to_string(),
            path,
            functions: all(template)
                .iter()
                .map(|id| construct_path(id, &template.resources[id]))
                .collect::<Vec<_>>()
                .join(", "),
        }),
        several => Err(LocalError::SeveralFunctions {
            path,
            functions: several
                .iter()
                .map(|id| construct_path(id, &template.resources[id]))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template() -> Template {
        Template::parse(&json!({
            "Resources": {
                "Layer1": {"Type": LAYER_TYPE, "Properties": {"Content": {}},
                    "Metadata": {"aws:cdk:path": "S/Layer/Resource", "aws:asset:path": "asset.layer"}},
                "Fn1": {"Type": FUNCTION_TYPE, "Properties": {
                    "Runtime": "nodejs20.x", "Handler": "index.handler", "Timeout": 20,
                    "Code": {"S3Bucket": "b", "S3Key": "k.zip"},
                    "Layers": [{"Ref": "Layer1"}, "arn:aws:lambda:us-east-1:1:layer:x:1"],
                    "Environment": {"Variables": {"A": "1"}}},
                    "Metadata": {"aws:cdk:path": "S/Api/Handler/Resource", "aws:asset:path": "asset.fn"}},
                "Inline": {"Type": FUNCTION_TYPE, "Properties": {
                    "Runtime": "python3.12", "Handler": "index.handler",
                    "Code": {"ZipFile": "def handler(e, c): return 1"}},
                    "Metadata": {"aws:cdk:path": "S/Api/Other/Resource"}}
            }
        }))
        .unwrap()
    }

    #[test]
    fn a_function_is_found_by_construct_path_or_logical_id() {
        let t = template();
        assert_eq!(find(&t, "S", "S/Api/Handler").unwrap(), "Fn1");
        assert_eq!(find(&t, "S", "Api/Handler").unwrap(), "Fn1");
        assert_eq!(find(&t, "S", "Inline").unwrap(), "Inline");
        let several = find(&t, "S", "S/Api").unwrap_err().to_string();
        assert!(
            several.contains("S/Api/Handler") && several.contains("S/Api/Other"),
            "{several}"
        );
        let none = find(&t, "S", "S/Nope").unwrap_err().to_string();
        assert!(
            none.contains("S/Nope") && none.contains("S/Api/Handler"),
            "{none}"
        );
    }

    #[test]
    fn code_layers_and_defaults_come_from_the_template() {
        let t = template();
        let dir = Path::new("/asm");
        let f = read(&t, dir, "Fn1").unwrap();
        assert_eq!(f.code, Code::Zip(dir.join("asset.fn")));
        assert_eq!(f.layers, vec![dir.join("asset.layer")]);
        assert_eq!(
            f.external_layers,
            vec!["arn:aws:lambda:us-east-1:1:layer:x:1"]
        );
        assert_eq!((f.timeout, f.memory), (20, 128));
        assert_eq!(f.path, "S/Api/Handler");
        let inline = read(&t, dir, "Inline").unwrap();
        assert_eq!(
            inline.code,
            Code::Inline("def handler(e, c): return 1".into())
        );
        assert_eq!(inline.timeout, 3);
    }
}
