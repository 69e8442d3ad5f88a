"""EC2 Auto Scaling made as strict as AWS where cdkd's autoscaling plugin depends on it.

- CreateAutoScalingGroup of a name already in use is refused with AlreadyExists, as on AWS;
  moto replaced the existing group (and its instances) without a word.
- DeleteAutoScalingGroup of a group that still has instances is refused with ResourceInUse
  unless it asks for ForceDelete, as on AWS; moto scaled the group to zero and deleted it.
- PutScalingPolicy answers the policy's ARN as `PolicyARN`, AWS's member name; moto answered
  `PolicyArn`, which the SDKs do not read.
- An instance's primary network interface made at launch (as every instance a group launches
  has) is deleted when the instance terminates, as on AWS (DeleteOnTermination defaults to true
  for it); moto kept it, so the subnets and security group of a deleted group stayed in use.

Remaining differences are listed in docs/testing.md."""

from moto.autoscaling import models as autoscaling_models
from moto.autoscaling import responses as autoscaling_responses
from moto.autoscaling.exceptions import AutoscalingClientError
from moto.core.responses import ActionResult
from moto.ec2.models import instances as ec2_instances


class AlreadyExistsError(AutoscalingClientError):
    """AWS's answer to a create of a name in use."""

    code = "AlreadyExists"


class ResourceInUseError(AutoscalingClientError):
    """AWS's answer to a delete of a group with instances, without ForceDelete."""

    code = "ResourceInUse"


_Backend = autoscaling_models.AutoScalingBackend
_original_create = _Backend.create_auto_scaling_group


def _create_auto_scaling_group(self, name, *args, **kwargs):
    if name in self.autoscaling_groups:
        raise AlreadyExistsError(f"AutoScalingGroup by this name already exists - A group with the name {name} already exists")
    return _original_create(self, name, *args, **kwargs)


_Backend.create_auto_scaling_group = _create_auto_scaling_group

_Response = autoscaling_responses.AutoScalingResponse
_original_delete = _Response.delete_auto_scaling_group


def _delete_auto_scaling_group(self):
    name = self._get_param("AutoScalingGroupName")
    force = str(self._get_param("ForceDelete", "false")).lower() == "true"
    group = self.autoscaling_backend.autoscaling_groups.get(name)
    if group is not None and not force and group.instance_states:
        raise ResourceInUseError(
            "You cannot delete an AutoScalingGroup while there are instances or pending Spot instance request(s) still in the group."
        )
    return _original_delete(self)


_Response.delete_auto_scaling_group = _delete_auto_scaling_group

_original_terminate = ec2_instances.Instance.terminate


def _terminate(self):
    for nic in self.nics.values():
        if getattr(nic, "description", None) == "Primary network interface":
            nic.delete_on_termination = True
    return _original_terminate(self)


ec2_instances.Instance.terminate = _terminate

_original_put_policy = _Response.put_scaling_policy


def _put_scaling_policy(self):
    _original_put_policy(self)
    policy = self.autoscaling_backend.policies[self._get_param("PolicyName")]
    return ActionResult({"PolicyARN": policy.arn, "Alarms": []})


_Response.put_scaling_policy = _put_scaling_policy
