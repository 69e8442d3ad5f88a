"""DynamoDB's UpdateTableReplicaAutoScaling and DescribeTableReplicaAutoScaling, which moto lacks
(it answered both with a 500 HTML page), answered as AWS does.

As on AWS they are a front for Application Auto Scaling: a setting is a scalable target
(`table/<name>` or `table/<name>/index/<index>`, dimension `dynamodb:table|index:Read|WriteCapacityUnits`)
and its target tracking policy, kept in the emulator's Application Auto Scaling of the table's
region, so what one API sets the other answers (DescribeScalableTargets and
DescribeScalingPolicies show what UpdateTableReplicaAutoScaling set; a target registered through
Application Auto Scaling is described here).

What AWS does, and so the emulator:
- a dimension without a target, or with a target but no policy, is described
  `{"AutoScalingDisabled": true, "ScalingPolicies": []}`; an enabled one by its minimum, maximum,
  role and policies, without `AutoScalingDisabled`; on a PAY_PER_REQUEST table a dimension that
  still has its target and policy shows them with `AutoScalingDisabled: true`;
- an update is a whole setting: MinimumUnits, MaximumUnits and ScalingPolicyUpdate together, or
  `AutoScalingDisabled: true` alone, which deregisters the target with its policies (a partial
  setting is a ValidationException naming what is missing or must be left blank);
- the policy is named `DynamoDB<Read|Write>CapacityUtilization:<resource id>` unless the update
  names it; a new name replaces the dimension's policy, the same name keeps its ARN;
- the role is Application Auto Scaling's service-linked role for DynamoDB; another
  `AutoScalingRoleArn` is refused (DynamoDB cannot pass it) with a ValidationException;
- Application Auto Scaling's own refusals come through as ValidationException with its text
  (MaximumUnits below MinimumUnits; a TargetValue outside 10-90 for DynamoDB's metrics);
- a PAY_PER_REQUEST table refuses settings (only disabling is accepted), a table not ACTIVE is
  ResourceInUseException, an unknown table, index or region ResourceNotFoundException, a
  request that updates nothing or names a region twice ValidationException;
- `TableName` may be the table's ARN.

Differences left are listed in docs/testing.md (the table's own region is the only replica:
moto has no replicas, and AWS refuses both operations on a table that has none)."""

import uuid

from moto.applicationautoscaling.models import applicationautoscaling_backends
from moto.core.responses import ActionResult
from moto.dynamodb.exceptions import (
    MockValidationException,
    ResourceInUseException,
    ResourceNotFoundException,
)
from moto.dynamodb.models import dynamodb_backends
from moto.dynamodb.responses import DynamoHandler
from moto.utilities.utils import get_partition

NAMESPACE = "dynamodb"
TABLE_READ, TABLE_WRITE = "dynamodb:table:ReadCapacityUnits", "dynamodb:table:WriteCapacityUnits"
INDEX_READ, INDEX_WRITE = "dynamodb:index:ReadCapacityUnits", "dynamodb:index:WriteCapacityUnits"
# Java's HashSet order, as AWS's messages list the members.
MEMBERS = ("MaximumUnits", "ScalingPolicyUpdate", "MinimumUnits")
POLICY_KEYS = ("DisableScaleIn", "ScaleInCooldown", "ScaleOutCooldown", "TargetValue")
DISABLED = {"AutoScalingDisabled": True, "ScalingPolicies": []}


def _service_linked_role(account, region):
    return (f"arn:{get_partition(region)}:iam::{account}:role/aws-service-role/"
            "dynamodb.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_DynamoDBTable")


def _aas_error(message):
    """Application Auto Scaling's refusal as DynamoDB passes it on."""
    return MockValidationException(
        f"{message} (Service: AWSApplicationAutoScaling; Status Code: 400; Error Code: ValidationException; "
        f"Request ID: {uuid.uuid4()}; Proxy: null)"
    )


def _table(handler):
    """The table `TableName` (a name or the table's ARN) names, as (backend, table)."""
    given = handler.body.get("TableName") or ""
    account, region = handler.current_account, handler.region
    name = given
    if given.startswith("arn:"):
        parts = given.split(":", 5)
        name = None
        if len(parts) == 6 and parts[2:5] == ["dynamodb", region, account] and parts[5].startswith("table/"):
            name = parts[5][len("table/"):]
    table = dynamodb_backends[account][region].tables.get(name) if name else None
    if table is None:
        raise ResourceNotFoundException(f"Global table with name: '{given}' does not exist.")
    return table


def _status(table):
    """The table's status as DescribeTable answers it (the AWS timing profile's CREATING too)."""
    return table.describe()["TableDescription"]["TableStatus"]


def _target(aas, resource_id, dimension):
    target = aas.targets.get(dimension, {}).get(resource_id)
    return target if target is not None and target.service_namespace == NAMESPACE else None


def _policies(aas, resource_id, dimension):
    return [p for p in aas.policies.values()
            if (p.service_namespace, p.resource_id, p.scalable_dimension) == (NAMESPACE, resource_id, dimension)
            and p.policy_type == "TargetTrackingScaling"]


def _settings(aas, table, resource_id, dimension):
    """One dimension's AutoScalingSettingsDescription."""
    target, policies = _target(aas, resource_id, dimension), _policies(aas, resource_id, dimension)
    if target is None or not policies:
        return dict(DISABLED, ScalingPolicies=[])
    settings = {"MinimumUnits": target.min_capacity, "MaximumUnits": target.max_capacity}
    if table.billing_mode == "PAY_PER_REQUEST":
        settings["AutoScalingDisabled"] = True
    settings["AutoScalingRoleArn"] = target.role_arn or _service_linked_role(aas.account_id, aas.region_name)
    settings["ScalingPolicies"] = [
        {"PolicyName": p.policy_name,
         "TargetTrackingScalingPolicyConfiguration": {
             k: v for k, v in (p.target_tracking_scaling_policy_configuration or {}).items() if k in POLICY_KEYS}}
        for p in policies
    ]
    return settings


def _replicas(table):
    """The table's replica regions: only its own (moto has no replicas)."""
    return [table.region_name]


def _indexes(table):
    """The global secondary indexes auto scaling knows of: AWS leaves out one still CREATING."""
    return [index for index in table.global_indexes if index.status != "CREATING"]


def _description(table):
    aas = applicationautoscaling_backends[table.account_id][table.region_name]
    status, base = _status(table), f"table/{table.name}"
    replicas = []
    for region in sorted(_replicas(table)):
        indexes = [
            {"IndexName": index.name, "IndexStatus": index.status,
             "ProvisionedReadCapacityAutoScalingSettings": _settings(aas, table, resource, INDEX_READ),
             "ProvisionedWriteCapacityAutoScalingSettings": _settings(aas, table, resource, INDEX_WRITE)}
            for index, resource in ((i, f"{base}/index/{i.name}") for i in _indexes(table))
        ]
        replicas.append({
            "RegionName": region,
            "GlobalSecondaryIndexes": indexes,
            "ReplicaProvisionedReadCapacityAutoScalingSettings": _settings(aas, table, base, TABLE_READ),
            "ReplicaProvisionedWriteCapacityAutoScalingSettings": _settings(aas, table, base, TABLE_WRITE),
            "ReplicaStatus": status,
        })
    return {"TableAutoScalingDescription": {"TableName": table.name, "TableStatus": status, "Replicas": replicas}}


def describe_table_replica_auto_scaling(self):
    return ActionResult(_description(_table(self)))


class _Change:
    """One dimension's AutoScalingSettingsUpdate: where it applies and what it asks."""

    def __init__(self, resource_id, dimension, metric, parameter, update):
        self.resource_id, self.dimension, self.metric = resource_id, dimension, metric
        self.parameter = parameter  # the member AWS's PAY_PER_REQUEST refusal names
        self.update = update or {}

    @property
    def disables(self):
        return self.update.get("AutoScalingDisabled") is True


def _changes(table, body, label):
    """Every dimension the request updates, checked as AWS checks the request's shape, its
    regions and its indexes."""
    def fail(reason):
        return MockValidationException(f"Failed to update settings for global table with name: {label} {reason}")

    def missing(reason):
        return ResourceNotFoundException(f"Failed to update settings for global table with name: {label} {reason}")

    write = body.get("ProvisionedWriteCapacityAutoScalingUpdate")
    index_updates = body.get("GlobalSecondaryIndexUpdates") or []
    replica_updates = body.get("ReplicaUpdates") or []
    if write is None and not index_updates and not replica_updates:
        raise fail("because at least one update parameter must be specified.")
    base = f"table/{table.name}"
    indexes = {index.name for index in _indexes(table)}
    changes = []
    if write is not None:
        changes.append(_Change(base, TABLE_WRITE, "DynamoDBWriteCapacityUtilization",
                               "GlobalTableProvisionedWriteCapacityAutoScalingSettingsUpdate", write))
    unknown = [u.get("IndexName") for u in index_updates if u.get("IndexName") not in indexes]
    if unknown:
        names = ", ".join(map(str, unknown))
        raise missing(f"because the global secondary indexes with names: ‘[{names}]’ do not exist.")
    for update in index_updates:
        name = update["IndexName"]
        if update.get("ProvisionedWriteCapacityAutoScalingUpdate") is None:
            raise fail(f"because at least one update parameter must be specified for global secondary index: "
                       f"‘{name}’.")
        changes.append(_Change(f"{base}/index/{name}", INDEX_WRITE, "DynamoDBWriteCapacityUtilization",
                               "ProvisionedWriteCapacityAutoScalingSettingsUpdate",
                               update["ProvisionedWriteCapacityAutoScalingUpdate"]))
    regions = [u.get("RegionName") for u in replica_updates]
    twice = sorted({r for r in regions if regions.count(r) > 1})
    if twice:
        raise fail(f"because the regions: ‘[{', '.join(twice)}]’ were specified more than once.")
    foreign = [r for r in regions if r not in _replicas(table)]
    if foreign:
        names = ", ".join(map(str, foreign))
        raise missing(f"because the regions: ‘[{names}]’ are not replicas of the global table.")
    for update in replica_updates:
        region = update["RegionName"]
        read = update.get("ReplicaProvisionedReadCapacityAutoScalingUpdate")
        index_reads = update.get("ReplicaGlobalSecondaryIndexUpdates") or []
        if read is None and not index_reads:
            raise fail(f"because at least one update parameter must be specified for region: ‘{region}’.")
        if read is not None:
            changes.append(_Change(base, TABLE_READ, "DynamoDBReadCapacityUtilization",
                                   "ReplicaProvisionedReadCapacityAutoScalingSettingsUpdate", read))
        for index_read in index_reads:
            name = index_read.get("IndexName")
            if name not in indexes:
                raise missing(f"because a global secondary index with name: ‘{name}’ does not exist in "
                              f"region: ‘{region}’.")
            if index_read.get("ProvisionedReadCapacityAutoScalingUpdate") is None:
                raise fail(f"because at least one update parameter must be specified for global secondary index: "
                           f"‘{name}’ in region: ‘{region}’.")
            changes.append(_Change(f"{base}/index/{name}", INDEX_READ, "DynamoDBReadCapacityUtilization",
                                   "ProvisionedReadCapacityAutoScalingSettingsUpdate",
                                   index_read["ProvisionedReadCapacityAutoScalingUpdate"]))
    return changes


def _check_setting(change, label):
    """A whole setting, or a disable alone; then what Application Auto Scaling refuses."""
    given = [m for m in MEMBERS if change.update.get(m) is not None]
    if change.disables:
        if given:
            raise MockValidationException(
                f"Failed to update settings for global table with name {label}: Parameters "
                f"{', '.join(repr(m) for m in given)} must be left blank when disabling auto scaling.")
        return
    absent = [m for m in MEMBERS if m not in given]
    if absent:
        raise MockValidationException(
            f"Failed to update settings for global table with name: {label}: Parameters "
            f"{', '.join(repr(m) for m in absent)} are required unless auto scaling is being disabled.")


def _check_with_aas(change, account, region):
    update = change.update
    if update["MaximumUnits"] < update["MinimumUnits"]:
        raise _aas_error("Maximum capacity cannot be less than minimum capacity")
    role = update.get("AutoScalingRoleArn")
    if role and role != _service_linked_role(account, region):
        raise _aas_error(
            f"User: arn:{get_partition(region)}:sts::{account}:assumed-role/AWSServiceRoleForDynamoDBReplication/"
            f"DynamoDBReplication is not authorized to perform: iam:PassRole on resource: {role} because no "
            "identity-based policy allows the iam:PassRole action")
    tracking = (update.get("ScalingPolicyUpdate") or {}).get("TargetTrackingScalingPolicyConfiguration")
    if not tracking or "TargetValue" not in tracking:
        raise MockValidationException(
            "1 validation error detected: Value null at 'scalingPolicyUpdate.targetTrackingScalingPolicyConfiguration' failed to satisfy constraint: Member must not be null")
    value = float(tracking["TargetValue"])
    if not 8.51592e-109 <= value <= 1.174271e108:
        raise _aas_error(f"For target tracking scaling, target value must be between '8.51592E-109' and "
                         f"'1.174271E108', but was '{value}'.")
    if not 10.0 <= value <= 90.0:
        raise _aas_error(f"For predefined metric type {change.metric}, target value must be between '10.0' and "
                         f"'90.0', but was '{value}'.")


def _apply(aas, change, role):
    rid, dim = change.resource_id, change.dimension
    if change.disables:
        if _target(aas, rid, dim) is not None:
            aas.deregister_scalable_target(NAMESPACE, rid, dim)  # its policies and alarms go with it
        return
    update = change.update
    policy_update = update["ScalingPolicyUpdate"]
    name = policy_update.get("PolicyName") or f"{change.metric}:{rid}"
    aas.register_scalable_target(NAMESPACE, rid, dim, update["MinimumUnits"], update["MaximumUnits"], role, None)
    for policy in _policies(aas, rid, dim):
        if policy.policy_name != name:  # one policy a dimension: a new name replaces the old one
            aas.delete_scaling_policy(policy.policy_name, NAMESPACE, rid, dim)
    tracking = policy_update["TargetTrackingScalingPolicyConfiguration"]
    body = {k: tracking[k] for k in POLICY_KEYS if tracking.get(k) is not None}
    body["TargetValue"] = float(body["TargetValue"])
    body["PredefinedMetricSpecification"] = {"PredefinedMetricType": change.metric}
    aas.put_scaling_policy(name, NAMESPACE, rid, dim, body, "TargetTrackingScaling")


def update_table_replica_auto_scaling(self):
    table = _table(self)
    status = _status(table)
    if status != "ACTIVE":
        doing = {"CREATING": "created", "DELETING": "deleted"}.get(status, "updated")
        raise ResourceInUseException(
            f"Attempt to change a resource which is still in use: Table is being {doing}: {table.name}")
    label = f"‘{table.name}’"
    changes = _changes(table, self.body, label)
    account, region = table.account_id, table.region_name
    role = _service_linked_role(account, region)
    for change in changes:
        _check_setting(change, label)
    settings = [c for c in changes if not c.disables]
    if settings and table.billing_mode == "PAY_PER_REQUEST":
        replicas = ", ".join(f"'{r.upper()}'" for r in sorted(_replicas(table)))
        parameters = ", ".join(f"'{p}'" for p in dict.fromkeys(c.parameter for c in settings))
        raise MockValidationException(
            f"Failed to update global table with name ‘{table.name}‘. Replicas {replicas} BillingMode is "
            f"PayPerRequest. You must convert table's BillingMode to PROVISIONED to set parameters: {parameters}.")
    for change in settings:
        _check_with_aas(change, account, region)
    aas = applicationautoscaling_backends[account][region]
    for change in changes:
        _apply(aas, change, role)
    return ActionResult(_description(table))


DynamoHandler.describe_table_replica_auto_scaling = describe_table_replica_auto_scaling
DynamoHandler.update_table_replica_auto_scaling = update_table_replica_auto_scaling
