"""Application Auto Scaling as AWS has it (appautoscaling_service.py), through the running
emulator."""

import pytest
from botocore.exceptions import ClientError

READ = "dynamodb:table:ReadCapacityUnits"


def _table(emulator, name):
    emulator.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )


def _policy(aas, resource_id, name="reads", target=70.0):
    return aas.put_scaling_policy(
        PolicyName=name, ServiceNamespace="dynamodb", ResourceId=resource_id,
        ScalableDimension=READ, PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": target,
            "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"},
        },
    )["PolicyARN"]


def test_a_target_needs_its_table_and_a_policy_its_target(emulator):
    aas = emulator.client("application-autoscaling")
    with pytest.raises(ClientError) as no_table:
        aas.register_scalable_target(ServiceNamespace="dynamodb", ResourceId="table/ghost",
                                     ScalableDimension=READ, MinCapacity=1, MaxCapacity=5)
    assert no_table.value.response["Error"]["Code"] == "ValidationException"
    _table(emulator, "shop")
    with pytest.raises(ClientError) as no_target:
        _policy(aas, "table/shop")
    assert no_target.value.response["Error"]["Code"] == "ObjectNotFoundException"
    with pytest.raises(ClientError) as no_capacity:
        aas.register_scalable_target(ServiceNamespace="dynamodb", ResourceId="table/shop", ScalableDimension=READ)
    assert no_capacity.value.response["Error"]["Code"] == "ValidationException"


def test_a_policy_keeps_its_arn_and_goes_with_its_target(emulator):
    aas = emulator.client("application-autoscaling")
    _table(emulator, "shop")
    _table(emulator, "shop2")
    for table in ("table/shop", "table/shop2"):
        aas.register_scalable_target(ServiceNamespace="dynamodb", ResourceId=table,
                                     ScalableDimension=READ, MinCapacity=1, MaxCapacity=5)
    first = _policy(aas, "table/shop")
    assert _policy(aas, "table/shop", target=50.0) == first
    _policy(aas, "table/shop2", name="other")
    listed = aas.describe_scaling_policies(ServiceNamespace="dynamodb", ResourceId="table/shop",
                                           PolicyNames=["reads"])["ScalingPolicies"]
    assert [(p["PolicyARN"], p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"]) for p in listed] == [(first, 50.0)]
    aas.deregister_scalable_target(ServiceNamespace="dynamodb", ResourceId="table/shop", ScalableDimension=READ)
    assert aas.describe_scaling_policies(ServiceNamespace="dynamodb", ResourceId="table/shop")["ScalingPolicies"] == []
    with pytest.raises(ClientError) as gone:
        aas.deregister_scalable_target(ServiceNamespace="dynamodb", ResourceId="table/shop", ScalableDimension=READ)
    assert gone.value.response["Error"]["Code"] == "ObjectNotFoundException"
    with pytest.raises(ClientError) as no_policy:
        aas.delete_scaling_policy(PolicyName="reads", ServiceNamespace="dynamodb",
                                  ResourceId="table/shop", ScalableDimension=READ)
    assert no_policy.value.response["Error"]["Code"] == "ObjectNotFoundException"


def test_a_target_has_tags(emulator):
    aas = emulator.client("application-autoscaling")
    _table(emulator, "shop")
    arn = aas.register_scalable_target(ServiceNamespace="dynamodb", ResourceId="table/shop",
                                       ScalableDimension=READ, MinCapacity=1, MaxCapacity=5,
                                       Tags={"team": "a"})["ScalableTargetARN"]
    aas.tag_resource(ResourceARN=arn, Tags={"env": "test"})
    aas.untag_resource(ResourceARN=arn, TagKeys=["team"])
    assert aas.list_tags_for_resource(ResourceARN=arn)["Tags"] == {"env": "test"}
