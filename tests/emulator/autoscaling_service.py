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
from moto.core.responses import ActionResult, EmptyResult
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


# Notification configurations (moto had none of the three operations): SNS topics a group
# notifies of launches and terminations, one configuration per (group, topic) holding its
# notification types; PutNotificationConfiguration replaces a topic's types, a group's delete
# takes its configurations along, as on AWS.

NOTIFICATION_TYPES = {
    "autoscaling:EC2_INSTANCE_LAUNCH",
    "autoscaling:EC2_INSTANCE_LAUNCH_ERROR",
    "autoscaling:EC2_INSTANCE_TERMINATE",
    "autoscaling:EC2_INSTANCE_TERMINATE_ERROR",
    "autoscaling:TEST_NOTIFICATION",
}


class ValidationError(AutoscalingClientError):
    """AWS's answer to a request naming something that does not exist or is not allowed."""

    code = "ValidationError"


def _configurations(backend):
    if not hasattr(backend, "cdkd_notifications"):
        backend.cdkd_notifications = {}  # (group name, topic ARN) -> [notification types]
    return backend.cdkd_notifications


def _known_group(backend, name):
    if name not in backend.autoscaling_groups:
        raise ValidationError(f"AutoScalingGroup name not found - AutoScalingGroup {name} not found")


def _put_notification_configuration(self):
    from moto.sns.models import sns_backends

    backend = self.autoscaling_backend
    name = self._get_param("AutoScalingGroupName")
    topic = self._get_param("TopicARN")
    types = self._get_param("NotificationTypes", []) or []
    _known_group(backend, name)
    topics = sns_backends[backend.account_id][backend.region_name].topics
    if topic not in topics:
        raise ValidationError(f"Topic not found: {topic}")
    unknown = [t for t in types if t not in NOTIFICATION_TYPES]
    if unknown or not types:
        raise ValidationError(f"Invalid notification types: {unknown or types}")
    _configurations(backend)[(name, topic)] = list(dict.fromkeys(types))
    return EmptyResult()


def _delete_notification_configuration(self):
    backend = self.autoscaling_backend
    name = self._get_param("AutoScalingGroupName")
    _known_group(backend, name)
    _configurations(backend).pop((name, self._get_param("TopicARN")), None)
    return EmptyResult()


def _describe_notification_configurations(self):
    backend = self.autoscaling_backend
    names = self._get_param("AutoScalingGroupNames", []) or []
    answer = [
        {"AutoScalingGroupName": group, "TopicARN": topic, "NotificationType": kind}
        for (group, topic), kinds in sorted(_configurations(backend).items())
        if (not names or group in names) and group in backend.autoscaling_groups
        for kind in kinds
    ]
    return ActionResult({"NotificationConfigurations": answer})


_Response.put_notification_configuration = _put_notification_configuration
_Response.delete_notification_configuration = _delete_notification_configuration
_Response.describe_notification_configurations = _describe_notification_configurations

_notified_delete = _Response.delete_auto_scaling_group


def _delete_group_and_its_notifications(self):
    answer = _notified_delete(self)
    name = self._get_param("AutoScalingGroupName")
    configurations = _configurations(self.autoscaling_backend)
    for key in [k for k in configurations if k[0] == name]:
        configurations.pop(key)
    return answer


_Response.delete_auto_scaling_group = _delete_group_and_its_notifications
