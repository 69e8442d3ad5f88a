"""EC2 RunInstances made as AWS answers it where cdkd's ec2 plugin depends on it.

- RunInstances with a `ClientToken` already used by an earlier RunInstances of the account and
  region answers that earlier request's reservation and launches nothing, as on AWS (EC2's
  idempotency: a retried or resumed create gets the instance the first call made, whatever
  became of it); moto ignored the token and launched another instance each time. AWS also
  refuses the same token with other parameters (IdempotentParameterMismatch): not modelled.
- DescribeInstances takes the `client-token` filter, as on AWS; moto raised
  NotImplementedError for it.
- ModifyInstanceAttribute changes `InstanceInitiatedShutdownBehavior`, as on AWS; moto answered
  success and changed nothing.

Remaining differences are listed in docs/testing.md."""

from moto.core.responses import ActionResult
from moto.ec2 import utils as ec2_utils
from moto.ec2.responses.instances import InstanceResponse

ec2_utils.filter_dict_attribute_mapping.setdefault("client-token", "client_token")

_original_run = InstanceResponse.run_instances


def _earlier_reservation(backend, token):
    """The reservation an earlier RunInstances with `token` made, or None."""
    for reservation in backend.reservations.values():
        if any(getattr(i, "client_token", None) == token for i in reservation.instances):
            return reservation
    return None


def _run_instances(self):
    # moto fills in "ABCDE" for a request without a token: only a token the caller sent counts.
    token = self._get_param("ClientToken")
    if token:
        earlier = _earlier_reservation(self.ec2_backend, token)
        if earlier is not None:
            self.error_on_dryrun()
            return ActionResult(earlier)
    return _original_run(self)


InstanceResponse.run_instances = _run_instances

_original_dot_value = InstanceResponse._dot_value_instance_attribute_handler


def _dot_value_instance_attribute_handler(self):
    behavior = self._get_param("InstanceInitiatedShutdownBehavior.Value")
    if behavior is not None:
        self.error_on_dryrun()
        self.ec2_backend.modify_instance_attribute(
            self._get_param("InstanceId"), "instance_initiated_shutdown_behavior", behavior)
        return True
    return _original_dot_value(self)


InstanceResponse._dot_value_instance_attribute_handler = _dot_value_instance_attribute_handler
