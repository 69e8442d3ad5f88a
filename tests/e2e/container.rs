//! Container-image assets (`DockerImageFunction`): built and pushed through the docker CLI
//! (`CDK_DOCKER`, here a stand-in that records its calls and puts the image into the
//! emulator's ECR on push), to the cdkd container repository `cdkd bootstrap` creates, the
//! template's image URI rewritten to it; an image already in the repository is not rebuilt.

use cdkd_tests::app_world::AppWorld;
use cdkd_tests::{resource_of_type, workspace_root, Emulator};
use serde_json::json;

const TAG: &str = "62c1123e4124c578177a38815d46c18c2c749e8f9f0450983550f6b88c55ef50";
const REPOSITORY: &str = "cdkd-container-assets-123456789012-us-east-1";

fn image_tags() -> serde_json::Value {
    Emulator::shared().boto(&format!(
        "sorted(t for i in c('ecr').describe_images(repositoryName='{REPOSITORY}')['imageDetails'] for t in i.get('imageTags', []))"
    ))
}

#[test]
fn an_image_asset_is_built_pushed_and_referenced_from_the_cdkd_repository() {
    let world = AppWorld::unedited("container", "container");
    let app = world.assembly.path().display().to_string();
    // Bootstrap made the repository.
    assert_eq!(
        Emulator::shared().boto(&format!(
            "[r['repositoryName'] for r in c('ecr').describe_repositories()['repositories'] if r['repositoryName'] == '{REPOSITORY}']"
        )),
        json!([REPOSITORY])
    );
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("docker.log");
    let stand_in = workspace_root().join("tests/fixtures/docker-stand-in.sh");
    let env = [
        ("CDK_DOCKER", stand_in.to_str().unwrap()),
        ("CDKD_DOCKER_LOG", log.to_str().unwrap()),
    ];
    let deploy = world.cdkd_with_env(&["deploy", "-a", &app], &env).success();
    let calls = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    let asset_dir = world.assembly.path().join(format!("asset.{TAG}"));
    assert_eq!(lines.len(), 4, "{calls}");
    assert_eq!(
        lines[0],
        format!(
            "build --tag cdkdasset-{TAG} --build-arg GREETING=hi {}",
            asset_dir.display()
        )
    );
    assert!(
        lines[1].starts_with("login --username AWS --password-stdin ")
            && lines[1].ends_with("[password]"),
        "{calls}"
    );
    assert!(
        lines[2].starts_with(&format!("tag cdkdasset-{TAG} "))
            && lines[2].ends_with(&format!("/{REPOSITORY}:{TAG}")),
        "{calls}"
    );
    assert!(
        lines[3].starts_with("push ") && lines[3].ends_with(&format!("/{REPOSITORY}:{TAG}")),
        "{calls}"
    );
    assert!(image_tags().as_array().unwrap().contains(&json!(TAG)));

    // The template's URI points at cdkd's repository, and the function was made with it.
    let record = world
        .cdkd(&["state", "show", "ContainerStack", "--json"])
        .success()
        .json();
    let function = resource_of_type(&record["state"], "AWS::Lambda::Function");
    let image_uri = function["properties"]["Code"]["ImageUri"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        image_uri.ends_with(&format!("/{REPOSITORY}:{TAG}")),
        "{image_uri} {}",
        deploy.stdout
    );
    assert!(!image_uri.contains("cdk-hnb659fds"), "{image_uri}");
    let name = function["physicalId"].as_str().unwrap();
    let deployed = Emulator::shared().boto(&format!(
        "c('lambda').get_function(FunctionName='{name}')['Code']['ImageUri']"
    ));
    assert_eq!(deployed, json!(image_uri));

    // The image is in the repository: nothing is built again.
    world.cdkd_with_env(&["deploy", "-a", &app], &env).success();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        calls,
        "no docker call"
    );

    // Without a docker CLI the error says what to install.
    Emulator::shared().boto(&format!(
        "c('ecr').batch_delete_image(repositoryName='{REPOSITORY}', imageIds=[{{'imageTag': '{TAG}'}}]) and None"
    ));
    let missing = world.cdkd_with_env(
        &["publish-assets", "-a", &app],
        &[("CDK_DOCKER", "/nonexistent/docker")],
    );
    assert_eq!(missing.code, Some(1));
    assert!(
        missing
            .stderr
            .contains("container image asset Handler/AssetImage")
            && missing
                .stderr
                .contains("install Docker, or point CDK_DOCKER"),
        "{}",
        missing.stderr
    );
    world.cdkd(&["destroy", "-a", &app, "--force"]).success();
}
