//! Reading a cloud assembly (`cdk.out`): its stacks, their templates and environments, their
//! asset manifests, and the context lookups the app asked for.
//!
//! Manifest schema 36 and later are read; fields cdkd does not use are ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The oldest manifest schema cdkd reads.
pub const OLDEST_SCHEMA: u64 = 36;

/// An assembly that cannot be used, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum AssemblyError {
    /// A file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not what it should be.
    #[error("{}: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn invalid(path: &Path, message: impl Into<String>) -> AssemblyError {
    AssemblyError::Invalid {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> Result<Value, AssemblyError> {
    let bytes = std::fs::read(path).map_err(|source| AssemblyError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|err| invalid(path, format!("not JSON: {err}")))
}

/// A stack's target environment; `None` where the app left it to the CLI (`unknown-…`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StackEnvironment {
    /// The account, if the app fixed one.
    pub account: Option<String>,
    /// The region, if the app fixed one.
    pub region: Option<String>,
}

/// One `aws:cloudformation:stack` artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct StackArtifact {
    /// The artifact id.
    pub id: String,
    /// The CloudFormation stack name (also the state record's name).
    pub stack_name: String,
    /// The construct path shown to users (`Stage/Stack`).
    pub display_name: String,
    /// The template file.
    pub template_file: PathBuf,
    /// Where it deploys.
    pub environment: StackEnvironment,
    /// Ids of the stacks it depends on.
    pub dependencies: Vec<String>,
    /// Whether termination protection is on.
    pub termination_protection: bool,
    /// Its asset manifest's artifact id, if any.
    pub asset_manifest: Option<String>,
    /// What its constructs said at synthesis (`Annotations.of(x).addError(...)`), in
    /// construct-path order.
    pub annotations: Vec<Annotation>,
}

/// How serious a synthesis annotation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AnnotationLevel {
    /// `aws:cdk:error`: the CDK CLI refuses to deploy.
    Error,
    /// `aws:cdk:warning`: refused under `--strict`.
    Warning,
    /// `aws:cdk:info`.
    Info,
}

/// One message a construct left in the assembly's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    /// Error, warning or info.
    pub level: AnnotationLevel,
    /// The construct path (`/Stack/Construct`).
    pub path: String,
    /// The message as the app wrote it.
    pub message: String,
}

/// The annotations of a stack artifact's metadata: the manifest's inline `metadata` and its
/// `additionalMetadataFile` (newer CDK versions write them there).
fn read_annotations(dir: &Path, artifact: &Value) -> Result<Vec<Annotation>, AssemblyError> {
    let mut entries: Vec<(String, Value)> = Vec::new();
    let mut collect = |metadata: &Value| {
        for (path, list) in metadata.as_object().into_iter().flatten() {
            for entry in list.as_array().into_iter().flatten() {
                entries.push((path.clone(), entry.clone()));
            }
        }
    };
    if let Some(metadata) = artifact.get("metadata") {
        collect(metadata);
    }
    if let Some(file) = string_field(artifact, "additionalMetadataFile") {
        collect(&read_json(&dir.join(file))?);
    }
    let mut annotations: Vec<Annotation> = entries
        .into_iter()
        .filter_map(|(path, entry)| {
            let level = match entry.get("type").and_then(Value::as_str)? {
                "aws:cdk:error" => AnnotationLevel::Error,
                "aws:cdk:warning" => AnnotationLevel::Warning,
                "aws:cdk:info" => AnnotationLevel::Info,
                _ => return None,
            };
            let message = match entry.get("data") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            Some(Annotation {
                level,
                path,
                message,
            })
        })
        .collect();
    annotations.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(annotations)
}

impl StackArtifact {
    /// Reads the stack's template.
    pub fn template(&self) -> Result<Value, AssemblyError> {
        read_json(&self.template_file)
    }
}

/// How a file asset is packaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packaging {
    /// A folder to zip.
    Zip,
    /// A file uploaded as is.
    File,
}

/// Where a file asset is published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDestination {
    /// The bucket (may hold `${AWS::AccountId}`, `${AWS::Region}`, `${AWS::Partition}`).
    pub bucket_name: String,
    /// The object key.
    pub object_key: String,
    /// The region, when the manifest names one.
    pub region: Option<String>,
}

/// A file asset.
#[derive(Debug, Clone, PartialEq)]
pub struct FileAsset {
    /// The asset hash / id.
    pub id: String,
    /// A name for messages.
    pub display_name: String,
    /// The source file or folder, absolute.
    pub source: PathBuf,
    /// Zip a folder, or upload a file.
    pub packaging: Packaging,
    /// Where to publish it.
    pub destinations: Vec<FileDestination>,
}

/// A container-image asset (built and pushed through the docker CLI).
#[derive(Debug, Clone, PartialEq)]
pub struct DockerImageAsset {
    /// The asset id.
    pub id: String,
    /// A name for messages.
    pub display_name: String,
    /// The build context, absolute.
    pub directory: PathBuf,
    /// `--file`, relative to the context, when not `Dockerfile`.
    pub docker_file: Option<String>,
    /// `--build-arg` pairs.
    pub build_args: BTreeMap<String, String>,
    /// `--target`.
    pub target: Option<String>,
    /// `--platform`.
    pub platform: Option<String>,
    /// `--network`.
    pub network_mode: Option<String>,
    /// Where to push it.
    pub destinations: Vec<ImageDestination>,
}

/// Where a container image is pushed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageDestination {
    /// The ECR repository (may hold `${AWS::AccountId}`, `${AWS::Region}`).
    pub repository_name: String,
    /// The image tag.
    pub image_tag: String,
}

/// One `cdk:asset-manifest` artifact.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AssetManifest {
    /// File assets by id.
    pub files: BTreeMap<String, FileAsset>,
    /// Image assets by id.
    pub docker_images: BTreeMap<String, DockerImageAsset>,
}

/// A context value the app asked for and did not find.
#[derive(Debug, Clone, PartialEq)]
pub struct MissingContext {
    /// The context key to fill.
    pub key: String,
    /// The provider (`availability-zones`, `ssm`, `vpc-provider`, …).
    pub provider: String,
    /// The lookup's properties (account, region, parameterName, …).
    pub props: Value,
}

/// A read cloud assembly.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudAssembly {
    /// The assembly folder.
    pub dir: PathBuf,
    /// The manifest schema version string.
    pub version: String,
    /// Stacks in manifest order.
    pub stacks: Vec<StackArtifact>,
    /// Asset manifests by artifact id.
    pub asset_manifests: BTreeMap<String, AssetManifest>,
    /// Context lookups the app could not answer.
    pub missing: Vec<MissingContext>,
    /// The construct tree file, if any.
    pub tree: Option<PathBuf>,
}

fn string_field(object: &Value, key: &str) -> Option<String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(ToString::to_string)
}

fn parse_environment(raw: Option<&str>) -> StackEnvironment {
    let Some(rest) = raw.and_then(|env| env.strip_prefix("aws://")) else {
        return StackEnvironment::default();
    };
    let (account, region) = rest.split_once('/').unwrap_or((rest, ""));
    let known = |value: &str| {
        (!value.is_empty() && !value.starts_with("unknown-")).then(|| value.to_string())
    };
    StackEnvironment {
        account: known(account),
        region: known(region),
    }
}

/// Whether `name` is a stack name CloudFormation accepts: a letter, then letters, digits and
/// hyphens, 128 characters at most. cdkd keys its state by it, so a `/` would hide a record
/// from `state list` and `gc`.
pub fn check_stack_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = name.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-');
    if valid {
        Ok(())
    } else {
        Err("is not a valid stack name: a letter, then letters, digits and hyphens, at most 128 characters (CloudFormation's rule)".into())
    }
}

/// How deep Stages may nest: CDK apps nest a few; a deeper chain is a loop or a mistake, and is
/// refused by name instead of exhausting the stack.
const MAX_STAGE_DEPTH: usize = 32;

impl CloudAssembly {
    /// Reads the assembly in `dir` (its `manifest.json`).
    pub fn read(dir: &Path) -> Result<CloudAssembly, AssemblyError> {
        CloudAssembly::read_within(dir, &[])
    }

    /// Reads the assembly in `dir`, a Stage of the assemblies in `outer` (outermost first).
    fn read_within(dir: &Path, outer: &[PathBuf]) -> Result<CloudAssembly, AssemblyError> {
        let manifest_path = dir.join("manifest.json");
        let here = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if outer.contains(&here) {
            return Err(invalid(
                &manifest_path,
                format!(
                    "this assembly is a Stage of itself ({} → {}): fix the cdk:cloud-assembly artifact's directoryName",
                    outer.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" → "),
                    here.display()
                ),
            ));
        }
        if outer.len() >= MAX_STAGE_DEPTH {
            return Err(invalid(
                &manifest_path,
                format!("Stages nest more than {MAX_STAGE_DEPTH} deep here"),
            ));
        }
        let within: Vec<PathBuf> = outer.iter().cloned().chain([here]).collect();
        let manifest = read_json(&manifest_path)?;
        let version = string_field(&manifest, "version")
            .ok_or_else(|| invalid(&manifest_path, "has no version"))?;
        let major: u64 = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| {
                invalid(
                    &manifest_path,
                    format!("version {version} is not a schema version"),
                )
            })?;
        if major < OLDEST_SCHEMA {
            return Err(invalid(
                &manifest_path,
                format!("cloud assembly schema {version} is older than {OLDEST_SCHEMA}.0.0; upgrade aws-cdk-lib in the app"),
            ));
        }
        let empty = serde_json::Map::new();
        let artifacts = manifest
            .get("artifacts")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let stack_ids: Vec<&String> = artifacts
            .iter()
            .filter(|(_, a)| {
                a.get("type").and_then(Value::as_str) == Some("aws:cloudformation:stack")
            })
            .map(|(id, _)| id)
            .collect();
        let mut assembly = CloudAssembly {
            dir: dir.to_path_buf(),
            version,
            stacks: Vec::new(),
            asset_manifests: BTreeMap::new(),
            missing: Vec::new(),
            tree: None,
        };
        for (id, artifact) in artifacts {
            let properties = artifact.get("properties").cloned().unwrap_or(Value::Null);
            match artifact.get("type").and_then(Value::as_str) {
                Some("aws:cloudformation:stack") => {
                    let template = string_field(&properties, "templateFile").ok_or_else(|| {
                        invalid(&manifest_path, format!("stack {id} has no templateFile"))
                    })?;
                    let dependencies: Vec<String> = artifact
                        .get("dependencies")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(ToString::to_string)
                        .collect();
                    let asset_manifest = dependencies
                        .iter()
                        .find(|dep| {
                            artifacts
                                .get(*dep)
                                .and_then(|a| a.get("type"))
                                .and_then(Value::as_str)
                                == Some("cdk:asset-manifest")
                        })
                        .cloned();
                    let stack_name =
                        string_field(&properties, "stackName").unwrap_or_else(|| id.clone());
                    if let Err(reason) = check_stack_name(&stack_name) {
                        return Err(invalid(
                            &manifest_path,
                            format!("stack {}: {reason}", stack_name.escape_debug()),
                        ));
                    }
                    assembly.stacks.push(StackArtifact {
                        id: id.clone(),
                        stack_name,
                        display_name: string_field(artifact, "displayName")
                            .unwrap_or_else(|| id.clone()),
                        template_file: dir.join(template),
                        environment: parse_environment(
                            artifact.get("environment").and_then(Value::as_str),
                        ),
                        dependencies: dependencies
                            .into_iter()
                            .filter(|dep| stack_ids.contains(&dep))
                            .collect(),
                        termination_protection: properties
                            .get("terminationProtection")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                        asset_manifest,
                        annotations: read_annotations(dir, artifact)?,
                    });
                }
                Some("cdk:asset-manifest") => {
                    let file = string_field(&properties, "file").ok_or_else(|| {
                        invalid(&manifest_path, format!("asset manifest {id} has no file"))
                    })?;
                    assembly.asset_manifests.insert(
                        id.clone(),
                        read_asset_manifest(dir, &dir.join(file), &within[0])?,
                    );
                }
                Some("cdk:tree") => {
                    assembly.tree = string_field(&properties, "file").map(|file| dir.join(file));
                }
                // A Stage: its stacks join the app's (their display paths say `Stage/Stack`),
                // with their templates and assets read from the stage's own folder.
                Some("cdk:cloud-assembly") => {
                    let folder = string_field(&properties, "directoryName").ok_or_else(|| {
                        invalid(&manifest_path, format!("stage {id} has no directoryName"))
                    })?;
                    let stage = CloudAssembly::read_within(&dir.join(folder), &within)?;
                    assembly.stacks.extend(stage.stacks);
                    assembly.asset_manifests.extend(stage.asset_manifests);
                    assembly.missing.extend(stage.missing);
                }
                _ => {}
            }
        }
        for missing in manifest
            .get("missing")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            assembly.missing.push(MissingContext {
                key: string_field(missing, "key").unwrap_or_default(),
                provider: string_field(missing, "provider").unwrap_or_default(),
                props: missing.get("props").cloned().unwrap_or(Value::Null),
            });
        }
        Ok(assembly)
    }

    /// A stack by artifact id.
    pub fn stack(&self, id: &str) -> Option<&StackArtifact> {
        self.stacks.iter().find(|stack| stack.id == id)
    }
}

/// Whether `relative` (from `dir`) leads outside the canonical folder `root`: an absolute path,
/// or one that resolves out (a Stage's assets are `../asset.*` from its own folder, inside). An
/// asset source outside the app's assembly would upload or build any file the user can read.
fn leaves(dir: &Path, relative: &str, root: &Path) -> bool {
    Path::new(relative).is_absolute()
        || std::fs::canonicalize(dir.join(relative)).is_ok_and(|source| !source.starts_with(root))
}

/// The asset manifest at `path` of the assembly in `dir`, whose outermost assembly (the app's
/// `cdk.out`, where CDK stages every asset) is the canonical folder `root`.
fn read_asset_manifest(
    dir: &Path,
    path: &Path,
    root: &Path,
) -> Result<AssetManifest, AssemblyError> {
    let document = read_json(path)?;
    let mut manifest = AssetManifest::default();
    for (id, asset) in document
        .get("files")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let source = asset.get("source").cloned().unwrap_or(Value::Null);
        let source_path = string_field(&source, "path")
            .ok_or_else(|| invalid(path, format!("file asset {id} has no source.path")))?;
        let packaging = match source.get("packaging").and_then(Value::as_str) {
            Some("zip") => Packaging::Zip,
            Some("file") | None => Packaging::File,
            Some(other) => {
                return Err(invalid(
                    path,
                    format!("file asset {id} has unknown packaging {other}"),
                ))
            }
        };
        let destinations = asset
            .get("destinations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(_, d)| FileDestination {
                bucket_name: string_field(d, "bucketName").unwrap_or_default(),
                object_key: string_field(d, "objectKey").unwrap_or_default(),
                region: string_field(d, "region"),
            })
            .collect();
        if leaves(dir, &source_path, root) {
            return Err(invalid(
                path,
                format!("file asset {id}: its source {source_path} is outside the assembly {}; cdkd uploads only what the assembly holds", root.display()),
            ));
        }
        manifest.files.insert(
            id.clone(),
            FileAsset {
                id: id.clone(),
                display_name: string_field(asset, "displayName").unwrap_or_else(|| id.clone()),
                source: dir.join(source_path),
                packaging,
                destinations,
            },
        );
    }
    for (id, asset) in document
        .get("dockerImages")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let source = asset.get("source").cloned().unwrap_or_default();
        let directory = string_field(&source, "directory").unwrap_or_default();
        let docker_file = string_field(&source, "dockerFile");
        let image_dir = dir.join(&directory);
        if leaves(dir, &directory, root)
            || docker_file
                .as_deref()
                .is_some_and(|file| leaves(&image_dir, file, root))
        {
            return Err(invalid(
                path,
                format!("image asset {id}: its directory {directory} or Dockerfile is outside the assembly {}; cdkd builds only what the assembly holds", root.display()),
            ));
        }
        let build_args = source
            .get("dockerBuildArgs")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        let destinations = asset
            .get("destinations")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(_, d)| {
                Some(ImageDestination {
                    repository_name: string_field(d, "repositoryName")?,
                    image_tag: string_field(d, "imageTag")?,
                })
            })
            .collect();
        manifest.docker_images.insert(
            id.clone(),
            DockerImageAsset {
                id: id.clone(),
                display_name: string_field(asset, "displayName").unwrap_or_else(|| id.clone()),
                directory: image_dir,
                docker_file,
                build_args,
                target: string_field(&source, "dockerBuildTarget"),
                platform: string_field(&source, "platform"),
                network_mode: string_field(&source, "networkMode"),
                destinations,
            },
        );
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/cdk.out")
            .join(name)
    }

    #[test]
    fn stages_are_read_from_their_folders_with_stage_paths() {
        let assembly = CloudAssembly::read(&fixture("stages")).unwrap();
        let shown: Vec<(&str, &str)> = assembly
            .stacks
            .iter()
            .map(|s| (s.display_name.as_str(), s.stack_name.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                ("Shared/Network", "Shared-Network"),
                ("Prod/Service", "Prod-Service")
            ]
        );
        let prod = assembly.stack("ProdServiceC810982D").unwrap();
        assert!(prod
            .template_file
            .starts_with(fixture("stages").join("assembly-Prod")));
        assert!(prod.template().is_ok());
        let assets = prod.asset_manifest.as_ref().unwrap();
        assert!(assembly.asset_manifests.contains_key(assets));
    }

    #[test]
    fn the_app_fixture_reads_with_dependencies_and_assets() {
        let assembly = CloudAssembly::read(&fixture("app")).unwrap();
        assert_eq!(assembly.version, "55.0.0");
        let names: Vec<&str> = assembly
            .stacks
            .iter()
            .map(|s| s.stack_name.as_str())
            .collect();
        assert_eq!(names, ["ProducerStack", "AppStack"], "manifest order");
        let app = assembly.stack("AppStack").unwrap();
        assert_eq!(app.dependencies, ["ProducerStack"]);
        assert_eq!(
            app.environment,
            StackEnvironment::default(),
            "unknown-account/unknown-region"
        );
        let assets = &assembly.asset_manifests[app.asset_manifest.as_ref().unwrap()];
        let zip = assets
            .files
            .values()
            .find(|f| f.packaging == Packaging::Zip)
            .unwrap();
        assert!(zip.source.join("index.js").is_file());
        assert_eq!(
            zip.destinations[0].bucket_name,
            "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"
        );
        assert!(app.template().unwrap()["Resources"].is_object());
        assert!(assembly.tree.is_some());
    }

    #[test]
    fn environments_and_old_schemas() {
        assert_eq!(
            parse_environment(Some("aws://123456789012/eu-west-1")),
            StackEnvironment {
                account: Some("123456789012".into()),
                region: Some("eu-west-1".into())
            }
        );
        assert_eq!(
            parse_environment(Some("aws://unknown-account/us-east-2"))
                .region
                .as_deref(),
            Some("us-east-2")
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("manifest.json"),
            r#"{"version":"21.0.0","artifacts":{}}"#,
        )
        .unwrap();
        let err = CloudAssembly::read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("older than 36.0.0"), "{err}");
        std::fs::write(
            dir.path().join("manifest.json"),
            r#"{"version":"60.1.0","artifacts":{},"futureField":1}"#,
        )
        .unwrap();
        assert!(CloudAssembly::read(dir.path()).unwrap().stacks.is_empty());
    }
}
