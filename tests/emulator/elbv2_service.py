"""Elastic Load Balancing v2 made as strict as AWS where cdkd's elbv2 plugin depends on it.

- A load balancer is `provisioning` after its create and `active` only once its time has
  passed: with the AWS timing profile (timing.py, EMU_PROFILE=aws) AWS's figure from
  aws_timing.json (the type's Cloud Control create time less the Cloud Control overhead;
  `timingOverrides: {"elbv2_load_balancer_ready_ms": N}` replaces it), scaled by the profile's
  time scale; without the profile the override in milliseconds, else
  `EMU_ELBV2_PROVISIONING_SECONDS` (default 3). moto turned
  every load balancer `active` on its first describe.
- Names as AWS has them: a load balancer or target group name already in use is refused with
  DuplicateLoadBalancerName / DuplicateTargetGroupName unless the create asks for the same
  settings, which AWS answers with the existing resource (its creates are idempotent); a
  load balancer name must be 1-32 letters, digits or hyphens, no hyphen at either end, not
  starting `internal-`. moto never refused a load balancer name (it compared ARNs).
- A second listener on a port is refused (DuplicateListener) unless it has the same settings;
  moto compared the port with listener ARNs and accepted it.
- A priority already used in the listener is refused (PriorityInUse) whatever the type of the
  number sent.
- Deleting a missing rule is RuleNotFound; deleting a load balancer with
  `deletion_protection.enabled` is OperationNotPermitted; deleting a load balancer or a
  listener drops it from its target groups' `LoadBalancerArns`.
- DescribeTags of a deleted resource's ARN answers its NotFound error (moto kept the tags).
- Registering a Lambda function in a target group needs the function's resource policy to let
  `elasticloadbalancing.amazonaws.com` invoke it (AccessDenied otherwise, as on AWS), and a
  Lambda target group holds one function.

Remaining differences are listed in docs/testing.md."""

import json
import os
import re
import time

from moto.elbv2 import models as elbv2_models
from moto.elbv2.exceptions import (
    DuplicateListenerError,
    DuplicateLoadBalancerName,
    DuplicateTargetGroupName,
    ELBClientError,
    PriorityInUseError,
    RuleNotFoundError,
)

import timing

_Backend = elbv2_models.ELBv2Backend
_LoadBalancer = elbv2_models.FakeLoadBalancer

_LB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,30}[A-Za-z0-9])?$")


def provisioning_seconds():
    """How long a new load balancer stays `provisioning` (read at every describe, so a changed
    override applies to load balancers made before it)."""
    override = timing.Settings.overrides.get("elbv2_load_balancer_ready_ms")
    if timing.Settings.enabled:
        spec = timing.TABLE["cloud_control"]["AWS::ElasticLoadBalancingV2::LoadBalancer"]
        ms = spec["create_ms"] - timing.value_ms("cloud_control_overhead_ms")
        return (ms if override is None else override) * timing.Settings.scale / 1000.0
    if override is not None:
        return override / 1000.0
    return float(os.environ.get("EMU_ELBV2_PROVISIONING_SECONDS", "3"))


class _Refused(ELBClientError):
    def __init__(self, code, message):
        super().__init__(code, message)


def _activate(self):
    created = getattr(self, "_emu_created_at", None)
    if self.state == "provisioning" and (created is None or time.monotonic() - created >= provisioning_seconds()):
        self.state = "active"


_LoadBalancer.activate = _activate


def _same_balancer(lb, subnet_ids, subnet_mappings, security_groups, scheme, kind, ip_type):
    asked = sorted(set(subnet_ids or []) | {m["SubnetId"] for m in subnet_mappings or []})
    return (
        sorted(s.id for s in lb.subnets) == asked
        and sorted(lb.security_groups or []) == sorted(security_groups or [])
        and (lb.scheme or "internet-facing") == (scheme or "internet-facing")
        and lb.type == (kind or "application")
        and lb.ip_address_type == (ip_type or "ipv4")
    )


_create_load_balancer = _Backend.create_load_balancer


def create_load_balancer(self, name, security_groups, subnet_ids, subnet_mappings=None,
                         scheme="internet-facing", loadbalancer_type=None, ip_address_type="ipv4",
                         tags=None):
    if not name or not _LB_NAME.match(name) or name.lower().startswith("internal-"):
        raise _Refused(
            "ValidationError",
            f"The load balancer name '{name}' must have 1-32 alphanumeric characters or hyphens, must not begin or end with a hyphen, and must not begin with 'internal-'",
        )
    for lb in self.load_balancers.values():
        if lb.name == name:
            if _same_balancer(lb, subnet_ids, subnet_mappings, security_groups, scheme,
                              loadbalancer_type, ip_address_type):
                return lb
            raise DuplicateLoadBalancerName()
    lb = _create_load_balancer(
        self, name, security_groups, subnet_ids, subnet_mappings=subnet_mappings,
        scheme=scheme or "internet-facing", loadbalancer_type=loadbalancer_type,
        ip_address_type=ip_address_type or "ipv4", tags=tags,
    )
    lb.state = "provisioning"
    lb._emu_created_at = time.monotonic()
    return lb


_Backend.create_load_balancer = create_load_balancer

_create_target_group = _Backend.create_target_group


def create_target_group(self, name, **kwargs):
    for group in self.target_groups.values():
        if group.name != name:
            continue
        same = (
            str(group.port) == str(kwargs.get("port"))
            and group.vpc_id == kwargs.get("vpc_id")
            and group.target_type == (kwargs.get("target_type") or "instance")
            and (group.protocol or None) == (kwargs.get("protocol") if group.target_type != "lambda" else None)
        )
        if same:
            return group
        raise DuplicateTargetGroupName()
    return _create_target_group(self, name, **kwargs)


_Backend.create_target_group = create_target_group

_create_listener = _Backend.create_listener


def create_listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate, actions,
                    alpn_policy=None, tags=None):
    balancer = self.load_balancers.get(load_balancer_arn)
    if balancer is not None:
        for listener in balancer.listeners.values():
            if str(listener.port) != str(port):
                continue
            same = (
                listener.protocol == (protocol or "").upper()
                and [a.data for a in listener.default_actions] == list(actions or [])
            )
            if same:
                return listener
            raise DuplicateListenerError()
    # moto gives every listener a default SSL policy; AWS only secure ones.
    if (protocol or "").upper() not in ("HTTPS", "TLS"):
        ssl_policy = None
    return _create_listener(self, load_balancer_arn, protocol, port, ssl_policy, certificate,
                            actions, alpn_policy=alpn_policy, tags=tags)


_Backend.create_listener = create_listener

_create_rule = _Backend.create_rule


def create_rule(self, listener_arn, conditions, priority, actions, tags=None):
    for listener in self.describe_listeners(None, [listener_arn]):
        if any(str(r.priority) == str(priority) for r in listener.rules.values()):
            raise PriorityInUseError()
    return _create_rule(self, listener_arn, conditions, priority, actions, tags=tags)


_Backend.create_rule = create_rule

_delete_rule = _Backend.delete_rule


def delete_rule(self, arn):
    for lb in self.load_balancers.values():
        for listener in lb.listeners.values():
            if arn in listener.rules:
                if getattr(listener.rules[arn], "is_default", False):
                    raise _Refused("OperationNotPermitted", "Default rule cannot be removed.")
                return _delete_rule(self, arn)
    raise RuleNotFoundError("One or more rules not found")


_Backend.delete_rule = delete_rule


def _forget_balancer(self, lb_arn):
    """Drops `lb_arn` from the target groups no listener of it forwards to any more."""
    lb = self.load_balancers.get(lb_arn)
    for arn, group in self.target_groups.items():
        still = lb is not None and any(
            arn in self._get_target_group_arns_from(action_data=action.data)
            for listener in lb.listeners.values()
            for rule in listener.rules.values()
            for action in rule.actions
        )
        if not still:
            group.load_balancer_arns = [a for a in group.load_balancer_arns if a != lb_arn]


_delete_load_balancer = _Backend.delete_load_balancer


def delete_load_balancer(self, arn):
    lb = self.load_balancers.get(arn)
    if lb is not None and str(lb.attrs.get("deletion_protection.enabled", "false")).lower() == "true":
        raise _Refused(
            "OperationNotPermitted",
            f"Load balancer '{arn}' cannot be deleted because deletion protection is enabled",
        )
    _delete_load_balancer(self, arn)
    _forget_balancer(self, arn)
    self.tagging_service.delete_all_tags_for_resource(arn)


_Backend.delete_load_balancer = delete_load_balancer

_delete_listener = _Backend.delete_listener


def delete_listener(self, listener_arn):
    listener = _delete_listener(self, listener_arn)
    _forget_balancer(self, listener.load_balancer_arn)
    return listener


_Backend.delete_listener = delete_listener


def describe_tags(self, resource_arns):
    for arn in resource_arns:
        self._get_resource_by_arn(arn)
    return {arn: self.tagging_service.get_tag_dict_for_resource(arn) for arn in resource_arns}


_Backend.describe_tags = describe_tags


def _may_invoke(account_id, region, function_arn):
    """Whether the function's resource policy lets ELBv2 invoke it."""
    # moto's own lookup: with Docker off (server.py) the functions live in its "simple"
    # Lambda backend, not in `lambda_backends`.
    from moto.awslambda.utils import get_backend

    try:
        answer = json.loads(get_backend(account_id, region).get_policy(function_arn))
        statements = json.loads(answer["Policy"])["Statement"]
    except Exception:  # noqa: BLE001  (no function, or no policy: nobody may invoke it)
        return False
    return any(
        "elasticloadbalancing.amazonaws.com" in json.dumps(s.get("Principal"))
        and s.get("Effect", "Allow") == "Allow"
        for s in statements
    )


_register_targets = _Backend.register_targets


def register_targets(self, target_group_arn, instances):
    group = self.target_groups.get(target_group_arn)
    if group is not None and group.target_type == "lambda":
        ids = {t["Id"] for t in instances} | set(group.targets)
        if len(ids) > 1:
            raise _Refused("TooManyTargets", "A Lambda target group can have only one target")
        for target in instances:
            if not _may_invoke(self.account_id, self.region_name, target["Id"]):
                raise _Refused(
                    "AccessDenied",
                    f"elasticloadbalancing principal does not have permission to invoke {target['Id']} from target group {target_group_arn}",
                )
    return _register_targets(self, target_group_arn, instances)


_Backend.register_targets = register_targets


# A listener's certificates as AWS keeps them: its default certificate (the one CreateListener
# and ModifyListener set, the only one DescribeListeners answers) and the extra ones
# AddListenerCertificates adds, which ModifyListener leaves alone. moto kept one list for both:
# DescribeListeners answered the extra ones too, and ModifyListener dropped them.


def _listener(self, arn):
    return self.describe_listeners(load_balancer_arn=None, listener_arns=[arn])[0]


def add_listener_certificates(self, arn, certificates):
    listener = _listener(self, arn)
    extra = listener.__dict__.setdefault("_emu_extra_certificates", [])
    for certificate in certificates:
        wanted = certificate["CertificateArn"]
        if wanted not in extra and wanted not in listener.certificates:
            extra.append(wanted)
    if len(extra) > 25:
        from moto.elbv2.exceptions import TooManyCertificatesError

        raise TooManyCertificatesError()
    return listener.certificates[:1] + extra


def describe_listener_certificates(self, arn):
    listener = _listener(self, arn)
    return listener.certificates[:1] + listener.__dict__.get("_emu_extra_certificates", [])


def remove_listener_certificates(self, arn, certificates):
    listener = _listener(self, arn)
    gone = {c["CertificateArn"] for c in certificates}
    extra = listener.__dict__.get("_emu_extra_certificates", [])
    listener._emu_extra_certificates = [c for c in extra if c not in gone]


_modify_listener = _Backend.modify_listener


def modify_listener(self, arn, *args, **kwargs):
    listener = _modify_listener(self, arn, *args, **kwargs)
    listener.certificates = listener.certificates[:1]
    return listener


_Backend.add_listener_certificates = add_listener_certificates
_Backend.describe_listener_certificates = describe_listener_certificates
_Backend.remove_listener_certificates = remove_listener_certificates
_Backend.modify_listener = modify_listener
