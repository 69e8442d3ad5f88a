//! The assets layer: publishing a stack's file assets before it deploys.
//!
//! A folder asset is zipped deterministically (sorted entries, fixed timestamps and
//! permissions), so the same folder always yields the same bytes and the hash-named object is
//! reproducible. A region with a cdkd bootstrap marker publishes to the cdkd asset bucket it
//! names and rewrites the template's references to that bucket; without a marker the CDK
//! bootstrap destinations are used as written. An object already present is not uploaded
//! again. Container-image assets are built with the docker CLI and pushed to ECR
//! ([`images`]): to the region's cdkd container repository when it opted in (the template's
//! image URIs are rewritten to it), else to the CDK bootstrap repository as written.

pub mod gc;
pub mod images;

use std::io::Write;
use std::path::{Path, PathBuf};

use aws_sdk_s3::primitives::ByteStream;
use serde_json::Value;

use crate::analyzer::template::Template;
use crate::aws_env::partition;
use crate::aws_env::AwsEnvironment;
use crate::state::bootstrap::read_marker;
use crate::state::bucket;
use crate::state::store::StateStore;
use crate::synthesis::assembly::{CloudAssembly, FileAsset, Packaging, StackArtifact};

/// Zips a folder deterministically. Only what lies inside it is read: a symbolic link is
/// followed when its target is inside the folder too, and refused (by name) when it points
/// outside; a FIFO, socket or device is refused instead of hanging the run or reading a device.
pub fn zip_directory(dir: &Path) -> std::io::Result<Vec<u8>> {
    let root = std::fs::canonicalize(dir)?;
    let mut files = Vec::new();
    collect_files(&root, &root, "", &[], &mut files)?;
    files.sort();
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (relative, path) in files {
        let executable = is_executable(&path);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(zip::DateTime::default())
            .unix_permissions(if executable { 0o755 } else { 0o644 });
        writer
            .start_file(relative.replace('\\', "/"), options)
            .map_err(std::io::Error::other)?;
        writer.write_all(&std::fs::read(&path)?)?;
    }
    Ok(writer.finish().map_err(std::io::Error::other)?.into_inner())
}

/// How deep an asset folder (with the links it follows) may nest.
const MAX_ASSET_DEPTH: usize = 64;

/// The most files one asset zip may hold: links that fan out (two links to the next folder,
/// repeated) would otherwise multiply the files without any loop.
const MAX_ASSET_FILES: usize = 200_000;

/// Collects `(name in the zip, file to read)` for every file under `dir` (a canonical folder
/// inside `root`), `prefix` being `dir`'s name in the zip and `ancestors` the canonical folders
/// above it on this path.
fn collect_files(
    root: &Path,
    dir: &Path,
    prefix: &str,
    ancestors: &[PathBuf],
    files: &mut Vec<(String, PathBuf)>,
) -> std::io::Result<()> {
    let refused = |message: String| std::io::Error::new(std::io::ErrorKind::InvalidInput, message);
    if ancestors.len() > MAX_ASSET_DEPTH || files.len() > MAX_ASSET_FILES {
        return Err(refused(format!(
            "{} nests more than {MAX_ASSET_DEPTH} folders deep or holds more than {MAX_ASSET_FILES} files (with the links it follows)",
            dir.display()
        )));
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        let mut path = entry.path();
        let mut kind = entry.file_type()?;
        if kind.is_symlink() {
            let target = std::fs::canonicalize(&path).map_err(|err| {
                refused(format!(
                    "the link {} cannot be resolved: {err}",
                    path.display()
                ))
            })?;
            if !target.starts_with(root) {
                return Err(refused(format!(
                    "the link {} points outside the asset folder, to {}; cdkd uploads only what is inside it",
                    path.display(),
                    target.display()
                )));
            }
            // A link to a folder that encloses it, or to one already on this path (two links
            // naming each other), would repeat forever.
            if dir.starts_with(&target) || ancestors.iter().any(|seen| seen == &target) {
                return Err(refused(format!(
                    "the link {} points back to a folder on its own path ({}): a loop",
                    path.display(),
                    target.display()
                )));
            }
            kind = std::fs::metadata(&target)?.file_type();
            path = target;
        }
        if kind.is_dir() {
            let within: Vec<PathBuf> = ancestors
                .iter()
                .cloned()
                .chain([dir.to_path_buf()])
                .collect();
            collect_files(root, &path, &format!("{name}/"), &within, files)?;
        } else if kind.is_file() {
            files.push((name, path));
        } else {
            return Err(refused(format!(
                "{} is not a regular file or folder (a FIFO, socket or device); remove it from the asset",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Reads a single-file asset: a regular file only (a FIFO would block the run forever).
fn read_file_asset(path: &Path) -> std::io::Result<Vec<u8>> {
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a FIFO, socket or device)",
        ));
    }
    std::fs::read(path)
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(_: &Path) -> bool {
    false
}

/// Fills `${AWS::AccountId}`, `${AWS::Region}` and `${AWS::Partition}`.
pub fn substitute(text: &str, account: &str, region: &str) -> String {
    text.replace("${AWS::AccountId}", account)
        .replace("${AWS::Region}", region)
        .replace("${AWS::Partition}", partition(region))
}

/// Replaces, inside every string of `value`, each occurrence of one of `from` by `to` (a
/// repository name inside an image URI).
fn rewrite_within_strings(value: &mut Value, from: &[String], to: &str) {
    match value {
        Value::String(text) => {
            for name in from {
                if text.contains(name.as_str()) {
                    *text = text.replace(name.as_str(), to);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| rewrite_within_strings(v, from, to)),
        Value::Object(object) => object
            .values_mut()
            .for_each(|v| rewrite_within_strings(v, from, to)),
        _ => {}
    }
}

/// Replaces every string equal to one of `from` (anywhere in `value`) by `to`.
fn rewrite_strings(value: &mut Value, from: &[String], to: &str) {
    match value {
        Value::String(text) if from.iter().any(|f| f == text) => *text = to.to_string(),
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_strings(v, from, to)),
        Value::Object(object) => object
            .values_mut()
            .for_each(|v| rewrite_strings(v, from, to)),
        _ => {}
    }
}

async fn publish_file(
    aws: &AwsEnvironment,
    asset: &FileAsset,
    bucket_name: &str,
    key: &str,
) -> anyhow::Result<bool> {
    let client = bucket::state_bucket_client(aws, bucket_name).await?;
    if client
        .head_object()
        .bucket(bucket_name)
        .key(key)
        .send()
        .await
        .is_ok()
    {
        return Ok(false);
    }
    let body = match asset.packaging {
        Packaging::Zip if asset.source.is_dir() => zip_directory(&asset.source),
        _ => read_file_asset(&asset.source),
    }
    .map_err(|err| {
        anyhow::anyhow!(
            "asset {} ({}): cannot read {}: {err}",
            asset.display_name,
            asset.id,
            asset.source.display()
        )
    })?;
    client
        .put_object()
        .bucket(bucket_name)
        .key(key)
        .body(ByteStream::from(body))
        .send()
        .await
        .map_err(|err| {
            anyhow::anyhow!(
                "asset {}: cannot upload to s3://{bucket_name}/{key}: {}",
                asset.display_name,
                crate::state::s3_error::S3Failure::from_sdk(&err)
            )
        })?;
    Ok(true)
}

/// The names a region's cdkd asset storage replaces in templates (its nested ones too): the
/// CDK asset bucket's (whole strings) and the CDK container repository's (inside image URIs).
#[derive(Debug, Clone, Default)]
pub struct BucketRewrites {
    buckets: Vec<(Vec<String>, String)>,
    repositories: Vec<(Vec<String>, String)>,
}

impl BucketRewrites {
    /// `template` with the CDK asset storage's names replaced by cdkd's.
    #[allow(
        clippy::expect_used,
        reason = "serialising cdkd's own types (string keys, no custom serialisers) cannot fail"
    )]
    pub fn apply(&self, template: Template) -> Template {
        if self.buckets.is_empty() && self.repositories.is_empty() {
            return template;
        }
        let mut document =
            serde_json::to_value(TemplateResources(&template)).expect("resources serialise");
        for (from, to) in &self.buckets {
            rewrite_strings(&mut document, from, to);
        }
        for (from, to) in &self.repositories {
            rewrite_within_strings(&mut document, from, to);
        }
        let mut template = template;
        if let Value::Object(resources) = document {
            for (id, properties) in resources {
                if let (Some(resource), Value::Object(properties)) =
                    (template.resources.get_mut(&id), properties)
                {
                    resource.properties = properties;
                }
            }
        }
        template
    }
}

/// Publishes a stack's file assets (its nested stacks' too) and returns its template,
/// rewritten for cdkd's asset bucket when the region opted in, with the rewrites made.
pub async fn publish_for_stack(
    assembly: &CloudAssembly,
    stack: &StackArtifact,
    template: Template,
    aws: &AwsEnvironment,
    store: &StateStore,
    account: &str,
    region: &str,
) -> anyhow::Result<(Template, BucketRewrites)> {
    let target = AssetTarget {
        aws,
        store: Some(store),
        account,
        region,
    };
    for_stack(assembly, stack, template, &target, Upload::Yes).await
}

/// The template [`publish_for_stack`] would return, with nothing uploaded, built or pushed
/// (what `cdkd diff` plans with). Without a state bucket (`store` `None`) no region has opted
/// in, and the CDK bootstrap destinations stay as written.
pub async fn locate_for_stack(
    assembly: &CloudAssembly,
    stack: &StackArtifact,
    template: Template,
    aws: &AwsEnvironment,
    store: Option<&StateStore>,
    account: &str,
    region: &str,
) -> anyhow::Result<(Template, BucketRewrites)> {
    let target = AssetTarget {
        aws,
        store,
        account,
        region,
    };
    for_stack(assembly, stack, template, &target, Upload::No).await
}

/// Where a stack's assets go.
struct AssetTarget<'a> {
    aws: &'a AwsEnvironment,
    store: Option<&'a StateStore>,
    account: &'a str,
    region: &'a str,
}

/// Whether [`for_stack`] publishes the assets or only works out where they go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Upload {
    Yes,
    No,
}

async fn for_stack(
    assembly: &CloudAssembly,
    stack: &StackArtifact,
    template: Template,
    target: &AssetTarget<'_>,
    upload: Upload,
) -> anyhow::Result<(Template, BucketRewrites)> {
    let AssetTarget {
        aws,
        store,
        account,
        region,
    } = *target;
    let unchanged = |template| Ok((template, BucketRewrites::default()));
    let Some(manifest) = stack
        .asset_manifest
        .as_ref()
        .and_then(|id| assembly.asset_manifests.get(id))
    else {
        return unchanged(template);
    };
    let template_file = stack
        .template_file
        .file_name()
        .map(|f| f.to_string_lossy().into_owned());
    // The stack's own template (and nested templates) are for CloudFormation, not cdkd.
    let is_template = |asset: &FileAsset| {
        let source_name = asset
            .source
            .file_name()
            .map(|f| f.to_string_lossy().into_owned());
        source_name == template_file
            || source_name
                .as_deref()
                .is_some_and(|n| n.ends_with(".template.json"))
    };
    if manifest.files.values().all(is_template) && manifest.docker_images.is_empty() {
        return unchanged(template);
    }
    let marker = match store {
        Some(store) => read_marker(store.backend.client()?, store.backend.bucket(), region).await?,
        None => None,
    };
    let mut repositories: Vec<(Vec<String>, String)> = Vec::new();
    if !manifest.docker_images.is_empty() {
        let ecr = (upload == Upload::Yes).then(|| images::ecr_client(aws, region));
        for image in manifest.docker_images.values() {
            for destination in &image.destinations {
                let original = substitute(&destination.repository_name, account, region);
                let target = marker
                    .as_ref()
                    .map_or(original.clone(), |m| m.container_repo.clone());
                if let Some(ecr) = &ecr {
                    let started = std::time::Instant::now();
                    let pushed = images::publish_image(ecr, image, &target, &destination.image_tag)
                        .await
                        .map_err(|err| anyhow::anyhow!("stack {}: {err}", stack.display_name))?;
                    tracing::info!(
                        "container image {} {} {target}:{} in {:.2}s",
                        image.display_name,
                        if pushed { "pushed to" } else { "already in" },
                        destination.image_tag,
                        started.elapsed().as_secs_f64()
                    );
                }
                if marker.is_some() && target != original {
                    repositories
                        .push((vec![destination.repository_name.clone(), original], target));
                }
            }
        }
    }
    let mut rewrites: Vec<(Vec<String>, String)> = Vec::new();
    for asset in manifest.files.values() {
        if is_template(asset) {
            continue;
        }
        for destination in &asset.destinations {
            let key = substitute(&destination.object_key, account, region);
            let original = substitute(&destination.bucket_name, account, region);
            let target = marker
                .as_ref()
                .map_or(original.clone(), |m| m.asset_bucket.clone());
            if upload == Upload::Yes {
                let started = std::time::Instant::now();
                let uploaded = publish_file(aws, asset, &target, &key).await?;
                tracing::info!(
                    "asset {} {} s3://{target}/{key} in {:.2}s",
                    asset.display_name,
                    if uploaded {
                        "published to"
                    } else {
                        "already at"
                    },
                    started.elapsed().as_secs_f64()
                );
            }
            if marker.is_some() && target != original {
                rewrites.push((vec![destination.bucket_name.clone(), original], target));
            }
        }
    }
    let rewrites = BucketRewrites {
        buckets: rewrites,
        repositories,
    };
    Ok((rewrites.apply(template), rewrites))
}

/// The resources' properties as one JSON object, for rewriting.
struct TemplateResources<'a>(&'a Template);

impl serde::Serialize for TemplateResources<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.resources.len()))?;
        for (id, resource) in &self.0.resources {
            map.serialize_entry(id, &resource.properties)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zips_are_byte_identical_whatever_the_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("index.js"), "exports.handler = 1;").unwrap();
        std::fs::write(dir.path().join("lib/util.js"), "module.exports = 2;").unwrap();
        let first = zip_directory(dir.path()).unwrap();
        // Years apart, far beyond the zip format's 2-second timestamp resolution.
        let index = dir.path().join("index.js");
        let file = std::fs::File::options().write(true).open(&index).unwrap();
        let then = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        file.set_modified(then).unwrap();
        assert_eq!(std::fs::metadata(&index).unwrap().modified().unwrap(), then);
        let second = zip_directory(dir.path()).unwrap();
        assert_eq!(first, second);
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(first)).unwrap();
        let names: Vec<String> = (0..archive.len())
            .map(|i| archive.by_index(i).unwrap().name().to_string())
            .collect();
        assert_eq!(names, ["index.js", "lib/util.js"]);
    }

    #[cfg(unix)]
    #[test]
    fn links_inside_are_followed_and_links_outside_or_special_files_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "not for upload").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("lib/util.js"), "module.exports = 2;").unwrap();
        std::os::unix::fs::symlink("lib/util.js", dir.path().join("alias.js")).unwrap();
        std::os::unix::fs::symlink("lib", dir.path().join("linked")).unwrap();
        let zipped = zip_directory(dir.path()).unwrap();
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zipped)).unwrap();
        let names: Vec<String> = (0..archive.len())
            .map(|i| archive.by_index(i).unwrap().name().to_string())
            .collect();
        assert_eq!(names, ["alias.js", "lib/util.js", "linked/util.js"]);

        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("leak")).unwrap();
        let err = zip_directory(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("leak") && err.contains("points outside the asset folder"),
            "{err}"
        );
        std::fs::remove_file(dir.path().join("leak")).unwrap();

        std::os::unix::fs::symlink(".", dir.path().join("lib/loop")).unwrap();
        let err = zip_directory(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a loop"), "{err}");
        std::fs::remove_file(dir.path().join("lib/loop")).unwrap();
        // Two links naming each other's folders.
        std::fs::create_dir(dir.path().join("m1")).unwrap();
        std::fs::create_dir(dir.path().join("m2")).unwrap();
        std::os::unix::fs::symlink("../m2", dir.path().join("m1/to2")).unwrap();
        std::os::unix::fs::symlink("../m1", dir.path().join("m2/to1")).unwrap();
        let err = zip_directory(dir.path()).unwrap_err().to_string();
        assert!(err.contains("a loop"), "{err}");
        std::fs::remove_dir_all(dir.path().join("m1")).unwrap();
        std::fs::remove_dir_all(dir.path().join("m2")).unwrap();

        let fifo = dir.path().join("pipe");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let err = zip_directory(dir.path()).unwrap_err().to_string();
        assert!(err.contains("pipe") && err.contains("FIFO"), "{err}");
        let err = read_file_asset(&fifo).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn placeholders_and_rewrites() {
        assert_eq!(
            substitute(
                "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}",
                "123456789012",
                "eu-west-1"
            ),
            "cdk-hnb659fds-assets-123456789012-eu-west-1"
        );
        let mut value = serde_json::json!({"Code": {"S3Bucket": {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"}, "S3Key": "abc.zip"}});
        rewrite_strings(
            &mut value,
            &["cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}".into()],
            "cdkd-assets-1-r",
        );
        assert_eq!(value["Code"]["S3Bucket"]["Fn::Sub"], "cdkd-assets-1-r");
    }
}
