"""DynamoDB's Update/DescribeTableReplicaAutoScaling as AWS answers them (dynamodb_autoscaling.py),
through the running emulator."""

import json
import urllib.request

import pytest
from botocore.exceptions import ClientError

ACCOUNT = "123456789012"
ROLE = (f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/dynamodb.application-autoscaling.amazonaws.com/"
        "AWSServiceRoleForApplicationAutoScaling_DynamoDBTable")
DISABLED = {"AutoScalingDisabled": True, "ScalingPolicies": []}
TABLE_WRITE, TABLE_READ = "dynamodb:table:WriteCapacityUnits", "dynamodb:table:ReadCapacityUnits"
INDEX_WRITE, INDEX_READ = "dynamodb:index:WriteCapacityUnits", "dynamodb:index:ReadCapacityUnits"


def _table(emulator, name, on_demand=False, index=True):
    spec = dict(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "gk", "AttributeType": "S"}],
    )
    if index:
        gsi = {"IndexName": "byg", "KeySchema": [{"AttributeName": "gk", "KeyType": "HASH"}],
               "Projection": {"ProjectionType": "ALL"}}
        if not on_demand:
            gsi["ProvisionedThroughput"] = {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}
        spec["GlobalSecondaryIndexes"] = [gsi]
    else:
        spec["AttributeDefinitions"] = spec["AttributeDefinitions"][:1]
    if on_demand:
        spec["BillingMode"] = "PAY_PER_REQUEST"
    else:
        spec["ProvisionedThroughput"] = {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}
    emulator.client("dynamodb").create_table(**spec)


def _setting(minimum, maximum, target, **more):
    policy = {"TargetTrackingScalingPolicyConfiguration": {"TargetValue": target}}
    if "name" in more:
        policy["PolicyName"] = more.pop("name")
    policy["TargetTrackingScalingPolicyConfiguration"].update(more)
    return {"MinimumUnits": minimum, "MaximumUnits": maximum, "ScalingPolicyUpdate": policy}


def _enabled(minimum, maximum, name, target, **more):
    return {"MinimumUnits": minimum, "MaximumUnits": maximum, "AutoScalingRoleArn": ROLE,
            "ScalingPolicies": [{"PolicyName": name,
                                 "TargetTrackingScalingPolicyConfiguration": dict(more, TargetValue=target)}]}


def _refused(call, **kwargs):
    with pytest.raises(ClientError) as refused:
        call(**kwargs)
    error = refused.value.response["Error"]
    return refused.value.response["ResponseMetadata"]["HTTPStatusCode"], error["Code"], error["Message"]


def test_a_table_without_auto_scaling_describes_its_own_region_disabled(emulator):
    _table(emulator, "shop")
    answer = emulator.client("dynamodb").describe_table_replica_auto_scaling(TableName="shop")
    assert answer["TableAutoScalingDescription"] == {
        "TableName": "shop",
        "TableStatus": "ACTIVE",
        "Replicas": [{
            "RegionName": "us-east-1",
            "GlobalSecondaryIndexes": [{"IndexName": "byg", "IndexStatus": "ACTIVE",
                                        "ProvisionedReadCapacityAutoScalingSettings": DISABLED,
                                        "ProvisionedWriteCapacityAutoScalingSettings": DISABLED}],
            "ReplicaProvisionedReadCapacityAutoScalingSettings": DISABLED,
            "ReplicaProvisionedWriteCapacityAutoScalingSettings": DISABLED,
            "ReplicaStatus": "ACTIVE",
        }],
    }


def test_an_update_is_answered_described_and_kept_as_application_auto_scaling_targets(emulator):
    _table(emulator, "shop")
    ddb, aas = emulator.client("dynamodb"), emulator.client("application-autoscaling")
    answer = ddb.update_table_replica_auto_scaling(
        TableName="shop",
        ProvisionedWriteCapacityAutoScalingUpdate=_setting(5, 50, 70.0),
        GlobalSecondaryIndexUpdates=[{"IndexName": "byg",
                                      "ProvisionedWriteCapacityAutoScalingUpdate": _setting(2, 20, 60.0)}],
        ReplicaUpdates=[{
            "RegionName": "us-east-1",
            "ReplicaProvisionedReadCapacityAutoScalingUpdate": _setting(
                3, 30, 50.0, name="reads", ScaleInCooldown=120, ScaleOutCooldown=30, DisableScaleIn=True),
            "ReplicaGlobalSecondaryIndexUpdates": [{"IndexName": "byg",
                                                    "ProvisionedReadCapacityAutoScalingUpdate": _setting(1, 10, 40.0)}],
        }],
    )["TableAutoScalingDescription"]
    replica = {
        "RegionName": "us-east-1",
        "GlobalSecondaryIndexes": [{
            "IndexName": "byg", "IndexStatus": "ACTIVE",
            "ProvisionedReadCapacityAutoScalingSettings": _enabled(
                1, 10, "DynamoDBReadCapacityUtilization:table/shop/index/byg", 40.0),
            "ProvisionedWriteCapacityAutoScalingSettings": _enabled(
                2, 20, "DynamoDBWriteCapacityUtilization:table/shop/index/byg", 60.0),
        }],
        "ReplicaProvisionedReadCapacityAutoScalingSettings": _enabled(
            3, 30, "reads", 50.0, ScaleInCooldown=120, ScaleOutCooldown=30, DisableScaleIn=True),
        "ReplicaProvisionedWriteCapacityAutoScalingSettings": _enabled(
            5, 50, "DynamoDBWriteCapacityUtilization:table/shop", 70.0),
        "ReplicaStatus": "ACTIVE",
    }
    assert answer == {"TableName": "shop", "TableStatus": "ACTIVE", "Replicas": [replica]}
    assert ddb.describe_table_replica_auto_scaling(TableName="shop")["TableAutoScalingDescription"] == answer
    # As on AWS, the settings are Application Auto Scaling targets and policies.
    targets = aas.describe_scalable_targets(ServiceNamespace="dynamodb")["ScalableTargets"]
    assert sorted((t["ResourceId"], t["ScalableDimension"], t["MinCapacity"], t["MaxCapacity"], t["RoleARN"])
                  for t in targets) == [
        ("table/shop", TABLE_READ, 3, 30, ROLE),
        ("table/shop", TABLE_WRITE, 5, 50, ROLE),
        ("table/shop/index/byg", INDEX_READ, 1, 10, ROLE),
        ("table/shop/index/byg", INDEX_WRITE, 2, 20, ROLE),
    ]
    policies = aas.describe_scaling_policies(ServiceNamespace="dynamodb", ResourceId="table/shop",
                                             ScalableDimension=TABLE_WRITE)["ScalingPolicies"]
    assert [(p["PolicyName"], p["PolicyType"], p["TargetTrackingScalingPolicyConfiguration"]) for p in policies] == [(
        "DynamoDBWriteCapacityUtilization:table/shop", "TargetTrackingScaling",
        {"TargetValue": 70.0,
         "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBWriteCapacityUtilization"}},
    )]


def test_a_policy_name_is_the_policys_identity(emulator):
    _table(emulator, "shop", index=False)
    ddb, aas = emulator.client("dynamodb"), emulator.client("application-autoscaling")

    def reads(setting):
        ddb.update_table_replica_auto_scaling(TableName="shop", ReplicaUpdates=[
            {"RegionName": "us-east-1", "ReplicaProvisionedReadCapacityAutoScalingUpdate": setting}])
        return aas.describe_scaling_policies(ServiceNamespace="dynamodb", ResourceId="table/shop",
                                             ScalableDimension=TABLE_READ)["ScalingPolicies"]

    first = reads(_setting(1, 10, 70.0, name="p1"))
    # The same name again keeps the policy (and its ARN) with the new target value.
    again = reads(_setting(1, 10, 50.0, name="p1"))
    assert [(p["PolicyName"], p["PolicyARN"], p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"])
            for p in again] == [("p1", first[0]["PolicyARN"], 50.0)]
    # Another name replaces it: one policy a dimension.
    replaced = reads(_setting(1, 10, 40.0, name="p2"))
    assert [(p["PolicyName"], p["TargetTrackingScalingPolicyConfiguration"]["TargetValue"])
            for p in replaced] == [("p2", 40.0)]
    settings = ddb.describe_table_replica_auto_scaling(TableName="shop")["TableAutoScalingDescription"]["Replicas"][0]
    assert settings["ReplicaProvisionedReadCapacityAutoScalingSettings"] == _enabled(1, 10, "p2", 40.0)


def test_disabling_deregisters_the_target_with_its_policies_and_leaves_the_other_dimension(emulator):
    _table(emulator, "shop", index=False)
    ddb, aas = emulator.client("dynamodb"), emulator.client("application-autoscaling")
    read = [{"RegionName": "us-east-1", "ReplicaProvisionedReadCapacityAutoScalingUpdate": _setting(2, 20, 70.0)}]
    ddb.update_table_replica_auto_scaling(TableName="shop", ReplicaUpdates=read,
                                          ProvisionedWriteCapacityAutoScalingUpdate=_setting(1, 10, 70.0))
    off = [{"RegionName": "us-east-1",
            "ReplicaProvisionedReadCapacityAutoScalingUpdate": {"AutoScalingDisabled": True}}]
    replica = ddb.update_table_replica_auto_scaling(TableName="shop", ReplicaUpdates=off)[
        "TableAutoScalingDescription"]["Replicas"][0]
    assert replica["ReplicaProvisionedReadCapacityAutoScalingSettings"] == DISABLED
    assert replica["ReplicaProvisionedWriteCapacityAutoScalingSettings"] == _enabled(
        1, 10, "DynamoDBWriteCapacityUtilization:table/shop", 70.0)
    targets = aas.describe_scalable_targets(ServiceNamespace="dynamodb")["ScalableTargets"]
    assert [t["ScalableDimension"] for t in targets] == [TABLE_WRITE]
    policies = aas.describe_scaling_policies(ServiceNamespace="dynamodb")["ScalingPolicies"]
    assert [p["ScalableDimension"] for p in policies] == [TABLE_WRITE]
    # Disabling again, or a dimension never enabled, is accepted.
    ddb.update_table_replica_auto_scaling(TableName="shop", ReplicaUpdates=off)


def test_targets_registered_through_application_auto_scaling_are_described(emulator):
    _table(emulator, "shop", index=False)
    ddb, aas = emulator.client("dynamodb"), emulator.client("application-autoscaling")
    aas.register_scalable_target(ServiceNamespace="dynamodb", ResourceId="table/shop",
                                 ScalableDimension=TABLE_READ, MinCapacity=2, MaxCapacity=12)

    def read_settings():
        return ddb.describe_table_replica_auto_scaling(TableName="shop")[
            "TableAutoScalingDescription"]["Replicas"][0]["ReplicaProvisionedReadCapacityAutoScalingSettings"]

    # As on AWS, a target without a policy reads as no auto scaling.
    assert read_settings() == DISABLED
    aas.put_scaling_policy(
        PolicyName="mine", ServiceNamespace="dynamodb", ResourceId="table/shop", ScalableDimension=TABLE_READ,
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 55.0,
            "PredefinedMetricSpecification": {"PredefinedMetricType": "DynamoDBReadCapacityUtilization"}})
    assert read_settings() == _enabled(2, 12, "mine", 55.0)


def test_the_table_may_be_named_by_its_arn(emulator):
    _table(emulator, "shop", index=False)
    ddb = emulator.client("dynamodb")
    arn = ddb.describe_table(TableName="shop")["Table"]["TableArn"]
    answer = ddb.update_table_replica_auto_scaling(
        TableName=arn, ProvisionedWriteCapacityAutoScalingUpdate=_setting(1, 10, 70.0))
    assert answer["TableAutoScalingDescription"]["TableName"] == "shop"
    described = ddb.describe_table_replica_auto_scaling(TableName=arn)["TableAutoScalingDescription"]
    assert described["Replicas"][0]["ReplicaProvisionedWriteCapacityAutoScalingSettings"]["MinimumUnits"] == 1


def test_a_missing_table_is_resource_not_found(emulator):
    ddb = emulator.client("dynamodb")
    message = "Global table with name: 'ghost' does not exist."
    assert _refused(ddb.describe_table_replica_auto_scaling, TableName="ghost") == (
        400, "ResourceNotFoundException", message)
    assert _refused(ddb.update_table_replica_auto_scaling, TableName="ghost",
                    ProvisionedWriteCapacityAutoScalingUpdate=_setting(1, 10, 70.0)) == (
        400, "ResourceNotFoundException", message)
    # DynamoDB's JSON error, as moto answers its other DynamoDB errors.
    request = urllib.request.Request(
        emulator.endpoint + "/", data=json.dumps({"TableName": "ghost"}).encode(), method="POST",
        headers={"Content-Type": "application/x-amz-json-1.0",
                 "X-Amz-Target": "DynamoDB_20120810.DescribeTableReplicaAutoScaling",
                 "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/dynamodb/aws4_request, "
                                  "SignedHeaders=host, Signature=x"})
    with pytest.raises(urllib.error.HTTPError) as raw:
        urllib.request.urlopen(request)
    assert raw.value.code == 400
    assert json.loads(raw.value.read()) == {
        "__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", "message": message}


def test_an_on_demand_table_refuses_settings_and_accepts_disabling(emulator):
    _table(emulator, "ondemand", on_demand=True)
    ddb, aas = emulator.client("dynamodb"), emulator.client("application-autoscaling")
    replica = ddb.describe_table_replica_auto_scaling(TableName="ondemand")[
        "TableAutoScalingDescription"]["Replicas"][0]
    assert (replica["ReplicaProvisionedReadCapacityAutoScalingSettings"],
            replica["ReplicaProvisionedWriteCapacityAutoScalingSettings"]) == (DISABLED, DISABLED)
    status, code, message = _refused(
        ddb.update_table_replica_auto_scaling, TableName="ondemand",
        ReplicaUpdates=[{"RegionName": "us-east-1",
                         "ReplicaProvisionedReadCapacityAutoScalingUpdate": _setting(1, 10, 70.0)}])
    assert (status, code) == (400, "ValidationException")
    assert message == (
        "Failed to update global table with name ‘ondemand‘. Replicas 'US-EAST-1' BillingMode is PayPerRequest. "
        "You must convert table's BillingMode to PROVISIONED to set parameters: "
        "'ReplicaProvisionedReadCapacityAutoScalingSettingsUpdate'.")
    assert _refused(ddb.update_table_replica_auto_scaling, TableName="ondemand",
                    ProvisionedWriteCapacityAutoScalingUpdate=_setting(1, 10, 70.0))[1] == "ValidationException"
    assert aas.describe_scalable_targets(ServiceNamespace="dynamodb")["ScalableTargets"] == []
    # Disabling is accepted, as on AWS.
    answer = ddb.update_table_replica_auto_scaling(
        TableName="ondemand", ProvisionedWriteCapacityAutoScalingUpdate={"AutoScalingDisabled": True})
    assert answer["TableAutoScalingDescription"]["Replicas"][0][
        "ReplicaProvisionedWriteCapacityAutoScalingSettings"] == DISABLED


def test_a_table_switched_to_on_demand_shows_its_targets_disabled(emulator):
    _table(emulator, "shop", index=False)
    ddb = emulator.client("dynamodb")
    ddb.update_table_replica_auto_scaling(TableName="shop",
                                          ProvisionedWriteCapacityAutoScalingUpdate=_setting(1, 10, 70.0))
    ddb.update_table(TableName="shop", BillingMode="PAY_PER_REQUEST")
    replica = ddb.describe_table_replica_auto_scaling(TableName="shop")["TableAutoScalingDescription"]["Replicas"][0]
    assert replica["ReplicaProvisionedWriteCapacityAutoScalingSettings"] == dict(
        _enabled(1, 10, "DynamoDBWriteCapacityUtilization:table/shop", 70.0), AutoScalingDisabled=True)


def test_a_table_that_is_not_active_is_resource_in_use(emulator):
    emulator.post("/_emulator/config", {"profile": "aws", "timeScale": 0.01,
                                        "timingOverrides": {"dynamodb_table_ready_ms": 800000}})
    try:
        _table(emulator, "fresh", index=False)
        ddb = emulator.client("dynamodb")
        described = ddb.describe_table_replica_auto_scaling(TableName="fresh")["TableAutoScalingDescription"]
        assert (described["TableStatus"], described["Replicas"][0]["ReplicaStatus"]) == ("CREATING", "CREATING")
        assert _refused(ddb.update_table_replica_auto_scaling, TableName="fresh",
                        ProvisionedWriteCapacityAutoScalingUpdate=_setting(1, 10, 70.0)) == (
            400, "ResourceInUseException",
            "Attempt to change a resource which is still in use: Table is being created: fresh")
    finally:
        emulator.post("/_emulator/config", {"profile": "off", "timeScale": 1, "timingOverrides": {}})


def test_an_unknown_index_or_region_is_resource_not_found(emulator):
    _table(emulator, "shop")
    ddb = emulator.client("dynamodb")
    prefix = "Failed to update settings for global table with name: ‘shop’ because "
    assert _refused(ddb.update_table_replica_auto_scaling, TableName="shop", GlobalSecondaryIndexUpdates=[
        {"IndexName": "nope", "ProvisionedWriteCapacityAutoScalingUpdate": _setting(1, 10, 70.0)}]) == (
        400, "ResourceNotFoundException",
        prefix + "the global secondary indexes with names: ‘[nope]’ do not exist.")
    assert _refused(ddb.update_table_replica_auto_scaling, TableName="shop", ReplicaUpdates=[
        {"RegionName": "us-east-1", "ReplicaGlobalSecondaryIndexUpdates": [
            {"IndexName": "nope", "ProvisionedReadCapacityAutoScalingUpdate": _setting(1, 10, 70.0)}]}]) == (
        400, "ResourceNotFoundException",
        prefix + "a global secondary index with name: ‘nope’ does not exist in region: ‘us-east-1’.")
    status, code, message = _refused(ddb.update_table_replica_auto_scaling, TableName="shop", ReplicaUpdates=[
        {"RegionName": "eu-west-1", "ReplicaProvisionedReadCapacityAutoScalingUpdate": _setting(1, 10, 70.0)}])
    assert (status, code) == (400, "ResourceNotFoundException") and "eu-west-1" in message
    # Nothing was applied by a refused request.
    assert emulator.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace="dynamodb")["ScalableTargets"] == []


@pytest.mark.parametrize("kwargs, message", [
    ({}, "Failed to update settings for global table with name: ‘shop’ because at least one update parameter "
         "must be specified."),
    ({"ReplicaUpdates": [{"RegionName": "us-east-1"}]},
     "Failed to update settings for global table with name: ‘shop’ because at least one update parameter must be "
     "specified for region: ‘us-east-1’."),
    ({"ReplicaUpdates": [{"RegionName": "us-east-1",
                          "ReplicaProvisionedReadCapacityAutoScalingUpdate": _setting(1, 10, 70.0)}] * 2},
     "Failed to update settings for global table with name: ‘shop’ because the regions: ‘[us-east-1]’ were "
     "specified more than once."),
    ({"ProvisionedWriteCapacityAutoScalingUpdate": {"MinimumUnits": 1, "MaximumUnits": 10}},
     "Failed to update settings for global table with name: ‘shop’: Parameters 'ScalingPolicyUpdate' are "
     "required unless auto scaling is being disabled."),
    ({"ProvisionedWriteCapacityAutoScalingUpdate": {"AutoScalingDisabled": False}},
     "Failed to update settings for global table with name: ‘shop’: Parameters 'MaximumUnits', "
     "'ScalingPolicyUpdate', 'MinimumUnits' are required unless auto scaling is being disabled."),
    ({"ProvisionedWriteCapacityAutoScalingUpdate": dict(_setting(1, 10, 70.0), MaximumUnits=None)},
     "Failed to update settings for global table with name: ‘shop’: Parameters 'MaximumUnits' are required "
     "unless auto scaling is being disabled."),
    ({"ProvisionedWriteCapacityAutoScalingUpdate": {"AutoScalingDisabled": True,
                                                    "MinimumUnits": 1, "MaximumUnits": 10}},
     "Failed to update settings for global table with name ‘shop’: Parameters 'MaximumUnits', 'MinimumUnits' "
     "must be left blank when disabling auto scaling."),
])
def test_a_setting_is_whole_or_a_disable_alone(emulator, kwargs, message):
    _table(emulator, "shop")
    ddb = emulator.client("dynamodb")
    update = kwargs.get("ProvisionedWriteCapacityAutoScalingUpdate")
    if update is not None:
        kwargs = dict(kwargs, ProvisionedWriteCapacityAutoScalingUpdate={
            k: v for k, v in update.items() if v is not None})
    assert _refused(ddb.update_table_replica_auto_scaling, TableName="shop", **kwargs) == (
        400, "ValidationException", message)


def test_application_auto_scalings_refusals_come_through(emulator):
    _table(emulator, "shop")
    ddb = emulator.client("dynamodb")

    def refused(setting):
        status, code, message = _refused(ddb.update_table_replica_auto_scaling, TableName="shop",
                                         ProvisionedWriteCapacityAutoScalingUpdate=setting)
        assert (status, code) == (400, "ValidationException")
        assert message.endswith("; Proxy: null)") and "(Service: AWSApplicationAutoScaling; " in message
        return message.split(" (Service:")[0]

    assert refused(_setting(20, 10, 70.0)) == "Maximum capacity cannot be less than minimum capacity"
    assert refused(_setting(1, 10, 90.5)) == (
        "For predefined metric type DynamoDBWriteCapacityUtilization, target value must be between '10.0' and "
        "'90.0', but was '90.5'.")
    assert "not authorized to perform: iam:PassRole on resource: arn:aws:iam::123456789012:role/admin" in refused(
        dict(_setting(1, 10, 70.0), AutoScalingRoleArn="arn:aws:iam::123456789012:role/admin"))
    # Min equal to max, and the service-linked role named, are accepted.
    ddb.update_table_replica_auto_scaling(TableName="shop", ProvisionedWriteCapacityAutoScalingUpdate=dict(
        _setting(5, 5, 70.0), AutoScalingRoleArn=ROLE))
