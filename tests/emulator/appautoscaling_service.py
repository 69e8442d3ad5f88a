"""Application Auto Scaling made as strict as AWS where cdkd's autoscaling plugin depends on it.

- RegisterScalableTarget for a DynamoDB table (or index) that does not exist is refused with
  ValidationException, as on AWS; moto registered it (it checked only ECS services). A new
  target without MinCapacity and MaxCapacity is refused likewise (moto stored nulls).
- PutScalingPolicy and PutScheduledAction on a target that is not registered are refused with
  ObjectNotFoundException, as on AWS; moto made the policy anyway.
- PutScalingPolicy of a policy that exists keeps its ARN, as on AWS; moto gave it a new one
  (so a policy's `Ref` changed on every update).
- DeregisterScalableTarget deletes the target's scaling policies (and their alarms) and
  scheduled actions with it, as AWS documents; moto left them behind. Deregistering a target,
  or deleting a policy, that does not exist is ObjectNotFoundException (moto: ValidationException).
- DescribeScalingPolicies matches `ResourceId` exactly and honours `PolicyNames`; moto matched
  any resource id the given one contained and ignored the names.
- Tags: RegisterScalableTarget's `Tags`, TagResource, UntagResource and ListTagsForResource on
  a target's ARN (moto had none of them).

Remaining differences are listed in docs/testing.md."""

import json

from moto.applicationautoscaling import models as _models
from moto.applicationautoscaling import responses as _responses
from moto.core.exceptions import JsonRESTError
from moto.dynamodb.models import dynamodb_backends

_Backend = _models.ApplicationAutoscalingBackend
_Response = _responses.ApplicationAutoScalingResponse


def _not_found(message):
    return JsonRESTError("ObjectNotFoundException", message)


def _target(self, namespace, resource_id, dimension):
    target = self.targets.get(dimension, {}).get(resource_id)
    if target is None or target.service_namespace != namespace:
        return None
    return target


def _no_target(namespace, resource_id, dimension):
    return _not_found(
        f"No scalable target registered for service namespace: {namespace}, "
        f"resource ID: {resource_id}, scalable dimension: {dimension}"
    )


def _dynamodb_table_exists(self, resource_id):
    parts = resource_id.split("/")
    if len(parts) < 2 or parts[0] != "table":
        return True
    table = dynamodb_backends[self.account_id][self.region_name].tables.get(parts[1])
    if table is None:
        return False
    if len(parts) >= 4 and parts[2] == "index":
        return any(index.name == parts[3] for index in table.global_indexes)
    return True


_moto_register = _Backend.register_scalable_target


def _register_scalable_target(self, namespace, r_id, dimension, min_capacity, max_capacity, *args, **kwargs):
    if namespace == "dynamodb" and not _dynamodb_table_exists(self, r_id):
        raise _models.AWSValidationException(f"DynamoDB table or index does not exist: {r_id}")
    if _target(self, namespace, r_id, dimension) is None and (min_capacity is None or max_capacity is None):
        raise _models.AWSValidationException(
            "MinCapacity and MaxCapacity are required to register a new scalable target"
        )
    return _moto_register(self, namespace, r_id, dimension, min_capacity, max_capacity, *args, **kwargs)


_Backend.register_scalable_target = _register_scalable_target

_moto_put_policy = _Backend.put_scaling_policy


def _put_scaling_policy(self, policy_name, service_namespace, resource_id, scalable_dimension, *args, **kwargs):
    if _target(self, service_namespace, resource_id, scalable_dimension) is None:
        raise _no_target(service_namespace, resource_id, scalable_dimension)
    key = _models.FakeApplicationAutoscalingPolicy.formulate_key(
        service_namespace, resource_id, scalable_dimension, policy_name
    )
    old = self.policies.get(key)
    policy = _moto_put_policy(self, policy_name, service_namespace, resource_id, scalable_dimension, *args, **kwargs)
    if old is not None:
        policy._guid = old._guid
        policy.policy_arn = old.policy_arn
        policy.creation_time = old.creation_time
    return policy


_Backend.put_scaling_policy = _put_scaling_policy

_moto_put_scheduled_action = _Backend.put_scheduled_action


def _put_scheduled_action(self, service_namespace, schedule, timezone, scheduled_action_name,
                          resource_id, scalable_dimension, *args, **kwargs):
    if _target(self, service_namespace, resource_id, scalable_dimension) is None:
        raise _no_target(service_namespace, resource_id, scalable_dimension)
    return _moto_put_scheduled_action(self, service_namespace, schedule, timezone, scheduled_action_name,
                                      resource_id, scalable_dimension, *args, **kwargs)


_Backend.put_scheduled_action = _put_scheduled_action


def _deregister_scalable_target(self, namespace, r_id, dimension):
    if _target(self, namespace, r_id, dimension) is None:
        raise _no_target(namespace, r_id, dimension)
    del self.targets[dimension][r_id]
    for key, policy in list(self.policies.items()):
        if (policy.service_namespace, policy.resource_id, policy.scalable_dimension) == (namespace, r_id, dimension):
            policy.delete_alarms(self.account_id, self.region_name)
            del self.policies[key]
    self.scheduled_actions = [
        a for a in self.scheduled_actions
        if (a.service_namespace, a.resource_id, a.scalable_dimension) != (namespace, r_id, dimension)
    ]


_Backend.deregister_scalable_target = _deregister_scalable_target

_moto_delete_policy = _Backend.delete_scaling_policy


def _delete_scaling_policy(self, policy_name, service_namespace, resource_id, scalable_dimension):
    key = _models.FakeApplicationAutoscalingPolicy.formulate_key(
        service_namespace, resource_id, scalable_dimension, policy_name
    )
    if key not in self.policies:
        raise _not_found(
            f"No scaling policy found for service namespace: {service_namespace}, resource ID: {resource_id}, "
            f"scalable dimension: {scalable_dimension}, policy name: {policy_name}"
        )
    return _moto_delete_policy(self, policy_name, service_namespace, resource_id, scalable_dimension)


_Backend.delete_scaling_policy = _delete_scaling_policy


def _describe_scaling_policies(self):
    params = json.loads(self.body or "{}")
    names = params.get("PolicyNames") or []
    policies = [
        p for p in self.applicationautoscaling_backend.policies.values()
        if p.service_namespace == params.get("ServiceNamespace")
        and (not params.get("ResourceId") or p.resource_id == params["ResourceId"])
        and (not params.get("ScalableDimension") or p.scalable_dimension == params["ScalableDimension"])
        and (not names or p.policy_name in names)
    ]
    start = int(params.get("NextToken") or 0)
    size = params.get("MaxResults") or 10
    page = policies[start:start + size]
    answer = {"ScalingPolicies": [_responses._build_policy(p) for p in page]}
    if start + size < len(policies):
        answer["NextToken"] = str(start + size)
    return json.dumps(answer)


_Response.describe_scaling_policies = _describe_scaling_policies


def _tags_of(target):
    return target.__dict__.setdefault("_cdkd_tags", {})


_moto_register_response = _Response.register_scalable_target


def _register_response(self):
    answer = _moto_register_response(self)
    tags = self._get_param("Tags") or {}
    if tags:
        backend = self.applicationautoscaling_backend
        target = _target(backend, self._get_param("ServiceNamespace"), self._get_param("ResourceId"),
                         self._get_param("ScalableDimension"))
        _tags_of(target).update(tags)
    return answer


_Response.register_scalable_target = _register_response


def _target_by_arn(backend, arn):
    for by_resource in backend.targets.values():
        for target in by_resource.values():
            if target.arn == arn:
                return target
    raise JsonRESTError("ResourceNotFoundException", f"No scalable target with ARN {arn}")


def _tag_resource(self):
    target = _target_by_arn(self.applicationautoscaling_backend, self._get_param("ResourceARN"))
    _tags_of(target).update(self._get_param("Tags") or {})
    return "{}"


def _untag_resource(self):
    target = _target_by_arn(self.applicationautoscaling_backend, self._get_param("ResourceARN"))
    for key in self._get_param("TagKeys") or []:
        _tags_of(target).pop(key, None)
    return "{}"


def _list_tags_for_resource(self):
    target = _target_by_arn(self.applicationautoscaling_backend, self._get_param("ResourceARN"))
    return json.dumps({"Tags": dict(_tags_of(target))})


_Response.tag_resource = _tag_resource
_Response.untag_resource = _untag_resource
_Response.list_tags_for_resource = _list_tags_for_resource
