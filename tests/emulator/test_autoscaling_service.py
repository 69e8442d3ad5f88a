"""EC2 Auto Scaling as AWS has it (autoscaling_service.py), through the running emulator."""

import pytest
from botocore.exceptions import ClientError


def _group(emulator, name):
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    template = ec2.create_launch_template(
        LaunchTemplateName=f"{name}-lt", LaunchTemplateData={"ImageId": ami, "InstanceType": "t3.micro"}
    )["LaunchTemplate"]["LaunchTemplateId"]
    settings = dict(
        AutoScalingGroupName=name,
        MinSize=1,
        MaxSize=2,
        LaunchTemplate={"LaunchTemplateId": template, "Version": "1"},
        VPCZoneIdentifier=subnet,
    )
    emulator.client("autoscaling").create_auto_scaling_group(**settings)
    return settings


def test_a_name_in_use_is_refused_with_already_exists(emulator):
    asg = emulator.client("autoscaling")
    settings = _group(emulator, "dup")
    with pytest.raises(ClientError) as refused:
        asg.create_auto_scaling_group(**settings)
    assert refused.value.response["Error"]["Code"] == "AlreadyExists"
    asg.delete_auto_scaling_group(AutoScalingGroupName="dup", ForceDelete=True)


def test_a_group_with_instances_is_deleted_only_when_forced(emulator):
    asg = emulator.client("autoscaling")
    _group(emulator, "busy")
    with pytest.raises(ClientError) as refused:
        asg.delete_auto_scaling_group(AutoScalingGroupName="busy")
    assert refused.value.response["Error"]["Code"] == "ResourceInUse"
    assert asg.describe_auto_scaling_groups(AutoScalingGroupNames=["busy"])["AutoScalingGroups"]
    asg.delete_auto_scaling_group(AutoScalingGroupName="busy", ForceDelete=True)
    assert not asg.describe_auto_scaling_groups(AutoScalingGroupNames=["busy"])["AutoScalingGroups"]


def test_a_missing_group_is_a_validation_error_saying_not_found(emulator):
    with pytest.raises(ClientError) as refused:
        emulator.client("autoscaling").delete_auto_scaling_group(AutoScalingGroupName="missing", ForceDelete=True)
    assert refused.value.response["Error"]["Code"] == "ValidationError"
    assert "not found" in refused.value.response["Error"]["Message"]


def test_a_forced_delete_frees_the_subnet_of_its_instances(emulator):
    asg = emulator.client("autoscaling")
    settings = _group(emulator, "freed")
    ec2 = emulator.client("ec2")
    subnet = settings["VPCZoneIdentifier"]
    in_subnet = lambda: ec2.describe_network_interfaces(Filters=[{"Name": "subnet-id", "Values": [subnet]}])["NetworkInterfaces"]  # noqa: E731
    assert len(in_subnet()) == 1
    asg.delete_auto_scaling_group(AutoScalingGroupName="freed", ForceDelete=True)
    assert in_subnet() == []
    ec2.delete_subnet(SubnetId=subnet)


def test_put_scaling_policy_answers_the_policy_arn(emulator):
    asg = emulator.client("autoscaling")
    _group(emulator, "scaled")
    answer = asg.put_scaling_policy(
        AutoScalingGroupName="scaled",
        PolicyName="cpu",
        PolicyType="TargetTrackingScaling",
        TargetTrackingConfiguration={"PredefinedMetricSpecification": {"PredefinedMetricType": "ASGAverageCPUUtilization"}, "TargetValue": 50},
    )
    arn = asg.describe_policies(AutoScalingGroupName="scaled")["ScalingPolicies"][0]["PolicyARN"]
    assert answer["PolicyARN"] == arn
    asg.delete_auto_scaling_group(AutoScalingGroupName="scaled", ForceDelete=True)


def test_notification_configurations_are_kept_per_topic_and_go_with_the_group(emulator):
    asg = emulator.client("autoscaling")
    sns = emulator.client("sns")
    topic = sns.create_topic(Name="scaling-events")["TopicArn"]
    _group(emulator, "notified")
    launches = ["autoscaling:EC2_INSTANCE_LAUNCH", "autoscaling:EC2_INSTANCE_TERMINATE"]
    asg.put_notification_configuration(
        AutoScalingGroupName="notified", TopicARN=topic, NotificationTypes=launches
    )
    described = asg.describe_notification_configurations(AutoScalingGroupNames=["notified"])
    assert [(c["TopicARN"], c["NotificationType"]) for c in described["NotificationConfigurations"]] == [
        (topic, kind) for kind in launches
    ]
    # A put replaces the topic's types.
    asg.put_notification_configuration(
        AutoScalingGroupName="notified", TopicARN=topic,
        NotificationTypes=["autoscaling:EC2_INSTANCE_LAUNCH_ERROR"],
    )
    described = asg.describe_notification_configurations(AutoScalingGroupNames=["notified"])
    assert [c["NotificationType"] for c in described["NotificationConfigurations"]] == [
        "autoscaling:EC2_INSTANCE_LAUNCH_ERROR"
    ]
    for bad in (
        dict(AutoScalingGroupName="nobody", TopicARN=topic, NotificationTypes=launches),
        dict(AutoScalingGroupName="notified", TopicARN=topic + "-gone", NotificationTypes=launches),
        dict(AutoScalingGroupName="notified", TopicARN=topic, NotificationTypes=["autoscaling:NAP"]),
    ):
        with pytest.raises(ClientError) as refused:
            asg.put_notification_configuration(**bad)
        assert refused.value.response["Error"]["Code"] == "ValidationError", bad
    asg.delete_notification_configuration(AutoScalingGroupName="notified", TopicARN=topic)
    assert asg.describe_notification_configurations(AutoScalingGroupNames=["notified"])[
        "NotificationConfigurations"
    ] == []
    asg.put_notification_configuration(
        AutoScalingGroupName="notified", TopicARN=topic, NotificationTypes=launches
    )
    asg.delete_auto_scaling_group(AutoScalingGroupName="notified", ForceDelete=True)
    assert asg.describe_notification_configurations()["NotificationConfigurations"] == []
