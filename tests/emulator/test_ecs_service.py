"""ECS services and ECR repositories as AWS has them (ecs_service.py), through the running emulator."""

import time

import pytest


def _network(emulator):
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="svc", Description="svc", VpcId=vpc)["GroupId"]
    return vpc, subnet, group


def _task_definition(ecs, family="web"):
    return ecs.register_task_definition(
        family=family, networkMode="awsvpc", requiresCompatibilities=["FARGATE"], cpu="256",
        memory="512", containerDefinitions=[{"name": "web", "image": "nginx", "portMappings": [{"containerPort": 80}]}],
    )["taskDefinition"]["taskDefinitionArn"]


def _fast(emulator, steady_ms=1500, drain_ms=800):
    emulator.post("/_emulator/config", {"timingOverrides": {
        "ecs_service_steady_ms": steady_ms, "ecs_service_drain_ms": drain_ms, "ecs_task_stop_ms": drain_ms}})


def test_a_service_reaches_its_desired_count_after_a_while_and_drains_when_deleted(emulator):
    _fast(emulator)
    ecs = emulator.client("ecs")
    ecs.create_cluster(clusterName="shop")
    _, subnet, group = _network(emulator)
    definition = _task_definition(ecs)
    service = ecs.create_service(
        cluster="shop", serviceName="web", taskDefinition=definition, desiredCount=2, launchType="FARGATE",
        networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet], "securityGroups": [group]}},
        deploymentConfiguration={"deploymentCircuitBreaker": {"enable": True, "rollback": True},
                                 "maximumPercent": 200, "minimumHealthyPercent": 50},
        enableExecuteCommand=True, healthCheckGracePeriodSeconds=30,
    )["service"]
    assert service["status"] == "ACTIVE"
    assert service["runningCount"] == 0
    assert service["deployments"][0]["rolloutState"] == "IN_PROGRESS"
    assert service["deploymentConfiguration"]["deploymentCircuitBreaker"] == {"enable": True, "rollback": True}
    assert service["enableExecuteCommand"] is True
    time.sleep(1.7)
    settled = ecs.describe_services(cluster="shop", services=["web"])["services"][0]
    assert settled["runningCount"] == 2
    assert settled["deployments"][0]["rolloutState"] == "COMPLETED"

    # A new revision is a new deployment; the old one stays ACTIVE until the rollout ends.
    second = _task_definition(ecs)
    updated = ecs.update_service(cluster="shop", service="web", taskDefinition=second)["service"]
    assert [d["status"] for d in updated["deployments"]] == ["PRIMARY", "ACTIVE"]
    assert updated["deployments"][0]["taskDefinition"] == second
    time.sleep(1.7)
    after = ecs.describe_services(cluster="shop", services=["web"])["services"][0]
    assert [d["status"] for d in after["deployments"]] == ["PRIMARY"]
    assert after["enableExecuteCommand"] is True

    # Scaled above 0, the delete is refused; at 0 it drains, then is INACTIVE; the cluster
    # cannot be deleted meanwhile.
    with pytest.raises(ecs.exceptions.InvalidParameterException):
        ecs.delete_service(cluster="shop", service="web")
    ecs.update_service(cluster="shop", service="web", desiredCount=0)
    assert ecs.delete_service(cluster="shop", service="web")["service"]["status"] == "DRAINING"
    with pytest.raises(ecs.exceptions.ClientError) as refused:
        ecs.delete_cluster(cluster="shop")
    assert refused.value.response["Error"]["Code"] == "ClusterContainsServicesException"
    time.sleep(1.0)
    assert ecs.describe_services(cluster="shop", services=["web"])["services"][0]["status"] == "INACTIVE"
    assert ecs.list_services(cluster="shop")["serviceArns"] == []
    ecs.delete_cluster(cluster="shop")


def test_a_create_with_the_same_client_token_answers_the_first_service(emulator):
    _fast(emulator)
    ecs = emulator.client("ecs")
    ecs.create_cluster(clusterName="tok")
    definition = _task_definition(ecs, "tok")
    first = ecs.create_service(cluster="tok", serviceName="s", taskDefinition=definition, desiredCount=1,
                               clientToken="token-1")["service"]
    again = ecs.create_service(cluster="tok", serviceName="s", taskDefinition=definition, desiredCount=1,
                               clientToken="token-1")["service"]
    assert again["serviceArn"] == first["serviceArn"]
    with pytest.raises(ecs.exceptions.InvalidParameterException, match="not idempotent"):
        ecs.create_service(cluster="tok", serviceName="s", taskDefinition=definition, desiredCount=1,
                           clientToken="token-2")
    # A cluster created again by name is the same cluster, its tags kept.
    ecs.tag_resource(resourceArn=ecs.describe_clusters(clusters=["tok"])["clusters"][0]["clusterArn"],
                     tags=[{"key": "team", "value": "a"}])
    ecs.create_cluster(clusterName="tok")
    cluster = ecs.describe_clusters(clusters=["tok"], include=["TAGS"])["clusters"][0]
    assert cluster["tags"] == [{"key": "team", "value": "a"}]


def test_a_target_group_must_be_attached_to_a_load_balancer(emulator):
    ecs, elbv2 = emulator.client("ecs"), emulator.client("elbv2")
    vpc, subnet, group = _network(emulator)
    ec2 = emulator.client("ec2")
    other = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.2.0/24", AvailabilityZone="us-east-1b")["Subnet"]["SubnetId"]
    target = elbv2.create_target_group(Name="tg", Protocol="HTTP", Port=80, VpcId=vpc, TargetType="ip")
    arn = target["TargetGroups"][0]["TargetGroupArn"]
    ecs.create_cluster(clusterName="lb")
    definition = _task_definition(ecs, "lb")
    kwargs = dict(cluster="lb", serviceName="s", taskDefinition=definition, desiredCount=1, launchType="FARGATE",
                  loadBalancers=[{"targetGroupArn": arn, "containerName": "web", "containerPort": 80}],
                  networkConfiguration={"awsvpcConfiguration": {"subnets": [subnet], "securityGroups": [group]}})
    with pytest.raises(ecs.exceptions.InvalidParameterException, match="does not have an associated load balancer"):
        ecs.create_service(**kwargs)
    balancer = elbv2.create_load_balancer(Name="alb", Subnets=[subnet, other], SecurityGroups=[group])
    elbv2.create_listener(LoadBalancerArn=balancer["LoadBalancers"][0]["LoadBalancerArn"], Protocol="HTTP",
                          Port=80, DefaultActions=[{"Type": "forward", "TargetGroupArn": arn}])
    assert ecs.create_service(**kwargs)["service"]["loadBalancers"][0]["targetGroupArn"] == arn


def test_a_repository_holding_images_is_deleted_only_when_forced(emulator):
    ecr = emulator.client("ecr")
    ecr.create_repository(repositoryName="held", tags=[{"Key": "team", "Value": "a"}])
    arn = ecr.describe_repositories(repositoryNames=["held"])["repositories"][0]["repositoryArn"]
    assert ecr.list_tags_for_resource(resourceArn=arn)["tags"] == [{"Key": "team", "Value": "a"}]
    manifest = '{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json", "config": {"digest": "sha256:' + "a" * 64 + '", "size": 1, "mediaType": "application/vnd.docker.container.image.v1+json"}, "layers": []}'
    ecr.put_image(repositoryName="held", imageManifest=manifest, imageTag="latest")
    with pytest.raises(ecr.exceptions.RepositoryNotEmptyException):
        ecr.delete_repository(repositoryName="held")
    ecr.delete_repository(repositoryName="held", force=True)
    assert ecr.describe_repositories()["repositories"] == []
