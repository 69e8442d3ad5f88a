//! Container-image assets: built with the docker CLI (`$CDK_DOCKER`, as the CDK CLI honours),
//! pushed to ECR, and the cdkd container repository that `cdkd bootstrap` creates.
//!
//! An image whose tag the repository already holds is not built again: asset tags are content
//! hashes, so the tag names the image.

use std::path::Path;
use std::process::Stdio;

use aws_sdk_ecr::types::ImageIdentifier;
use tokio::io::AsyncWriteExt;

use crate::aws_env::AwsEnvironment;
use crate::synthesis::assembly::DockerImageAsset;

/// An ECR client for `region`.
pub fn ecr_client(aws: &AwsEnvironment, region: &str) -> aws_sdk_ecr::Client {
    let config = aws_sdk_ecr::config::Builder::from(aws.sdk_config())
        .region(aws_sdk_ecr::config::Region::new(region.to_string()))
        .retry_partition(cdkd_aws_common::retry_partition("cdkd-ecr"))
        .build();
    aws_sdk_ecr::Client::from_conf(config)
}

/// Creates the repository unless it exists (bootstrap).
pub async fn ensure_repository(ecr: &aws_sdk_ecr::Client, name: &str) -> anyhow::Result<bool> {
    match ecr
        .create_repository()
        .repository_name(name)
        .image_scanning_configuration(
            aws_sdk_ecr::types::ImageScanningConfiguration::builder()
                .scan_on_push(true)
                .build(),
        )
        .send()
        .await
    {
        Ok(_) => Ok(true),
        Err(err) if aws_code(&err) == Some("RepositoryAlreadyExistsException") => Ok(false),
        Err(err) => Err(anyhow::anyhow!(
            "cannot create the container repository {name}: {}",
            cdkd_aws_common::error_line(&err)
        )),
    }
}

/// Deletes the repository and its images (bootstrap --destroy); `false` when it was gone.
pub async fn delete_repository(ecr: &aws_sdk_ecr::Client, name: &str) -> anyhow::Result<bool> {
    match ecr
        .delete_repository()
        .repository_name(name)
        .force(true)
        .send()
        .await
    {
        Ok(_) => Ok(true),
        Err(err) if aws_code(&err) == Some("RepositoryNotFoundException") => Ok(false),
        Err(err) => Err(anyhow::anyhow!(
            "cannot delete the container repository {name}: {}",
            cdkd_aws_common::error_line(&err)
        )),
    }
}

fn aws_code<E, R>(err: &aws_sdk_ecr::error::SdkError<E, R>) -> Option<&str>
where
    E: aws_sdk_ecr::error::ProvideErrorMetadata,
{
    use aws_sdk_ecr::error::ProvideErrorMetadata;
    err.code()
}

/// Whether `repository` holds `tag`.
async fn has_tag(ecr: &aws_sdk_ecr::Client, repository: &str, tag: &str) -> anyhow::Result<bool> {
    match ecr
        .describe_images()
        .repository_name(repository)
        .image_ids(ImageIdentifier::builder().image_tag(tag).build())
        .send()
        .await
    {
        Ok(answer) => Ok(!answer.image_details().is_empty()),
        Err(err) if aws_code(&err) == Some("ImageNotFoundException") => Ok(false),
        Err(err) if aws_code(&err) == Some("RepositoryNotFoundException") => Err(anyhow::anyhow!(
            "the container repository {repository} does not exist; run `cdkd bootstrap` for this region (or the CDK's bootstrap when the region has no cdkd asset storage)"
        )),
        Err(err) => Err(anyhow::anyhow!(
            "cannot read the images of {repository}: {}",
            cdkd_aws_common::error_line(&err)
        )),
    }
}

/// The docker CLI: `$CDK_DOCKER`, else `docker`.
fn docker() -> String {
    std::env::var("CDK_DOCKER")
        .ok()
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "docker".into())
}

async fn run_docker(what: &str, args: &[String], stdin: Option<&str>) -> anyhow::Result<()> {
    let program = docker();
    tracing::debug!("{program} {}", args.join(" "));
    let mut child = tokio::process::Command::new(&program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| {
            anyhow::anyhow!(
                "{what}: cannot run `{program}` ({err}); install Docker, or point CDK_DOCKER at a compatible CLI"
            )
        })?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes()).await?;
        drop(pipe);
    }
    let output = child.wait_with_output().await?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        anyhow::bail!(
            "{what}: `{program} {}` failed ({}): {}",
            args.first().map(String::as_str).unwrap_or(""),
            output.status,
            stderr.trim()
        );
    }
    Ok(())
}

/// The `docker build` arguments of an asset, as the CDK CLI passes them.
pub fn build_args(asset: &DockerImageAsset, local_tag: &str) -> Vec<String> {
    let mut args = vec!["build".to_string(), "--tag".into(), local_tag.into()];
    if let Some(file) = &asset.docker_file {
        args.push("--file".into());
        args.push(Path::new(&asset.directory).join(file).display().to_string());
    }
    for (key, value) in &asset.build_args {
        args.push("--build-arg".into());
        args.push(format!("{key}={value}"));
    }
    if let Some(target) = &asset.target {
        args.push("--target".into());
        args.push(target.clone());
    }
    if let Some(platform) = &asset.platform {
        args.push("--platform".into());
        args.push(platform.clone());
    }
    if let Some(network) = &asset.network_mode {
        args.push("--network".into());
        args.push(network.clone());
    }
    args.push(asset.directory.display().to_string());
    args
}

/// Builds and pushes one image to `repository:tag` unless it is there; `true` when pushed.
pub async fn publish_image(
    ecr: &aws_sdk_ecr::Client,
    asset: &DockerImageAsset,
    repository: &str,
    tag: &str,
) -> anyhow::Result<bool> {
    let what = format!(
        "container image asset {} ({})",
        asset.display_name, asset.id
    );
    if has_tag(ecr, repository, tag)
        .await
        .map_err(|err| anyhow::anyhow!("{what}: {err}"))?
    {
        return Ok(false);
    }
    let uri = ecr
        .describe_repositories()
        .repository_names(repository)
        .send()
        .await
        .map_err(|err| anyhow::anyhow!("{what}: {}", cdkd_aws_common::error_line(&err)))?
        .repositories()
        .first()
        .and_then(|r| r.repository_uri().map(str::to_string))
        .ok_or_else(|| anyhow::anyhow!("{what}: the repository {repository} has no URI"))?;
    let local = format!("cdkdasset-{}", asset.id);
    run_docker(&what, &build_args(asset, &local), None).await?;
    let token = ecr.get_authorization_token().send().await.map_err(|err| {
        anyhow::anyhow!(
            "{what}: cannot get an ECR login: {}",
            cdkd_aws_common::error_line(&err)
        )
    })?;
    let data = token
        .authorization_data()
        .first()
        .ok_or_else(|| anyhow::anyhow!("{what}: ECR returned no authorization data"))?;
    let (user, password) = decode_token(data.authorization_token().unwrap_or_default())
        .ok_or_else(|| anyhow::anyhow!("{what}: ECR returned an unreadable authorization token"))?;
    let registry = data
        .proxy_endpoint()
        .unwrap_or_default()
        .trim_start_matches("https://")
        .to_string();
    run_docker(
        &what,
        &[
            "login".into(),
            "--username".into(),
            user,
            "--password-stdin".into(),
            registry,
        ],
        Some(&password),
    )
    .await?;
    let remote = format!("{uri}:{tag}");
    run_docker(&what, &["tag".into(), local, remote.clone()], None).await?;
    run_docker(&what, &["push".into(), remote], None).await?;
    Ok(true)
}

/// ECR's base64 `user:password` token, split.
fn decode_token(token: &str) -> Option<(String, String)> {
    let bytes = aws_smithy_types::base64::decode(token).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (user, password) = text.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn decodes_ecr_tokens() {
        // base64("AWS:secret-pw")
        assert_eq!(
            decode_token("QVdTOnNlY3JldC1wdw=="),
            Some(("AWS".into(), "secret-pw".into()))
        );
        assert_eq!(decode_token("not base64!"), None);
    }

    #[test]
    fn build_arguments_follow_the_manifest() {
        let asset = DockerImageAsset {
            id: "abc".into(),
            display_name: "Fn/Image".into(),
            directory: PathBuf::from("/app/asset.abc"),
            docker_file: Some("Dockerfile.prod".into()),
            build_args: [("GREETING".to_string(), "hi".to_string())].into(),
            target: Some("runtime".into()),
            platform: Some("linux/arm64".into()),
            network_mode: None,
            destinations: vec![],
        };
        assert_eq!(
            build_args(&asset, "cdkdasset-abc").join(" "),
            "build --tag cdkdasset-abc --file /app/asset.abc/Dockerfile.prod --build-arg GREETING=hi --target runtime --platform linux/arm64 /app/asset.abc"
        );
    }
}
