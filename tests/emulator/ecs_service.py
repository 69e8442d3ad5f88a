"""ECS and ECR made AWS-like where it matters to cdkd's ecs and ecr plugins.

ECS services (moto answers a service as settled the moment it is created, and forgets what it
does not model):
- a service's deployment rolls out over time: runningCount stays below desiredCount (the
  deployment IN_PROGRESS, rolloutState IN_PROGRESS) until `ecs_service_steady_ms` has passed
  (65 s with the AWS profile; 2 s otherwise), after a create, a new task definition, a forced
  deployment or a desired-count change; a new task definition's deployment is PRIMARY and the
  old one ACTIVE until then, as on AWS;
- DeleteService leaves the service DRAINING until its tasks have stopped (the target group's
  deregistration delay, 300 s, behind a load balancer, else the 30 s stop timeout, with the AWS
  profile; 1 s otherwise), then INACTIVE; moto made it INACTIVE at once;
- CreateService's `clientToken`: the same token for a service of that name answers the service
  it made; a second service of an ACTIVE or DRAINING name is refused "Creation of service was not
  idempotent." (moto replaced the first);
- a load balancer's target group must exist and be attached to a load balancer (a listener or
  rule forwarding to it), as AWS refuses otherwise;
- the settings moto drops (deployment configuration, circuit breaker, execute command, health
  check grace period, placement, capacity provider strategy, managed tags, AZ rebalancing) are
  kept and described;
- DeleteCluster is refused (ClusterContainsServicesException) while an ACTIVE or DRAINING
  service is in the cluster, and CreateCluster of an ACTIVE cluster's name answers that cluster
  (moto replaced it with an empty one).

ECR already refuses DeleteRepository of a repository holding images unless forced
(RepositoryNotEmptyException), and tags by ARN, in moto: nothing to patch there.

Differences from AWS that remain are listed in docs/testing.md."""

import time

import timing
from moto.ecs import models as ecs_models
from moto.ecs import responses as ecs_responses
from moto.ecs.exceptions import ECSException, InvalidParameterException
from moto.core.responses import ActionResult

_Backend = ecs_models.EC2ContainerServiceBackend
_Response = ecs_responses.EC2ContainerServiceResponse

# Off-profile durations: short, but long enough that a caller which does not wait is caught.
_OFF_PROFILE_S = {"ecs_service_steady_ms": 2.0, "ecs_service_drain_ms": 1.0, "ecs_task_stop_ms": 1.0}

# Settings moto does not keep: request member -> the attribute its serializer reads.
_KEPT = {
    "deploymentConfiguration": "deployment_configuration",
    "enableExecuteCommand": "enable_execute_command",
    "healthCheckGracePeriodSeconds": "health_check_grace_period_seconds",
    "placementConstraints": "placement_constraints",
    "placementStrategy": "placement_strategy",
    "capacityProviderStrategy": "capacity_provider_strategy",
    "enableECSManagedTags": "enable_ecs_managed_tags",
    "availabilityZoneRebalancing": "availability_zone_rebalancing",
}


def _seconds(name):
    """`name`'s duration: the AWS profile's when on, else an override, else the short default."""
    profiled = timing.seconds(name)
    if profiled is not None:
        return profiled
    if name in timing.Settings.overrides:
        return timing.Settings.overrides[name] / 1000.0
    return _OFF_PROFILE_S[name]


class ClusterContainsServicesException(ECSException):
    def __init__(self):
        super().__init__(
            "ClusterContainsServicesException",
            "The Cluster cannot be deleted while Services are active.",
        )


# -- rollouts -------------------------------------------------------------------------------

def _start_rollout(service, new_deployment):
    """A deployment that settles after the steady-state time: counts and states to match."""
    service._emu_settles_at = time.monotonic() + _seconds("ecs_service_steady_ms")
    service.running_count = getattr(service, "_emu_running", 0)
    service.pending_count = max(service.desired_count - service.running_count, 0)
    if not service.deployments:
        return
    primary = service.deployments[0]
    if new_deployment:
        old = dict(primary)
        old["status"] = "ACTIVE"
        primary = dict(primary)
        primary["id"] = f"ecs-svc/{ecs_models.mock_random.randint(0, 32**12)}"
        primary["createdAt"] = ecs_models.utcnow()
        primary["taskDefinition"] = service.task_definition
        primary["runningCount"] = 0
        service.deployments = [primary, old]
    primary["status"] = "PRIMARY"
    primary["desiredCount"] = service.desired_count
    primary["pendingCount"] = service.pending_count
    primary["rolloutState"] = "IN_PROGRESS"
    primary["rolloutStateReason"] = f"ECS deployment {primary['id']} in progress."
    primary["updatedAt"] = ecs_models.utcnow()


def _settle(service):
    """Brings a service's state up to now: a rollout complete, a drain finished."""
    now = time.monotonic()
    if service.status == "DRAINING" and now >= getattr(service, "_emu_drained_at", 0):
        service.status = "INACTIVE"
        service.running_count = 0
        service.pending_count = 0
        service.deployments = []
        return
    if service.status != "ACTIVE" or now < getattr(service, "_emu_settles_at", 0):
        return
    if getattr(service, "_emu_settled", None) == service._emu_settles_at:
        return
    service._emu_settled = service._emu_settles_at
    service.running_count = service.desired_count
    service._emu_running = service.desired_count
    service.pending_count = 0
    if service.deployments:
        primary = service.deployments[0]
        primary.update({
            "runningCount": service.desired_count, "pendingCount": 0,
            "desiredCount": service.desired_count, "rolloutState": "COMPLETED",
            "rolloutStateReason": f"ECS deployment {primary['id']} completed.",
            "updatedAt": ecs_models.utcnow(),
        })
        service.deployments = [primary]


def _services_in(backend, cluster_name):
    return [s for s in backend.services.values() if s.cluster_name == cluster_name]


# -- CreateService --------------------------------------------------------------------------

def _check_target_groups(backend, load_balancers):
    from moto.elbv2.models import elbv2_backends

    elbv2 = elbv2_backends[backend.account_id][backend.region_name]
    for entry in load_balancers or []:
        arn = entry.get("targetGroupArn")
        if not arn:
            continue
        group = elbv2.target_groups.get(arn)
        if group is None:
            raise InvalidParameterException(f"Unable to find target group {arn}.")
        if not group.load_balancer_arns:
            raise InvalidParameterException(
                f"The target group with targetGroupArn {arn} does not have an associated load balancer."
            )


_moto_create_service = _Response.create_service


def create_service(self):
    backend = self.ecs_backend
    cluster = backend._get_cluster(self._get_param("cluster", "default"))
    name = self._get_param("serviceName")
    token = self._get_param("clientToken")
    existing = backend.services.get(f"{cluster.name}:{name}")
    if existing is not None:
        _settle(existing)
        if existing.status in ("ACTIVE", "DRAINING"):
            if token and getattr(existing, "_emu_client_token", None) == token:
                return ActionResult({"service": existing})
            raise InvalidParameterException("Creation of service was not idempotent.")
    _check_target_groups(backend, self._get_param("loadBalancers"))
    answer = _moto_create_service(self)
    service = backend.services[f"{cluster.name}:{name}"]
    service._emu_client_token = token
    for member, attribute in _KEPT.items():
        value = self._get_param(member)
        if value is not None:
            setattr(service, attribute, value)
    service._emu_running = 0
    _start_rollout(service, new_deployment=False)
    return answer


_Response.create_service = create_service


# -- UpdateService, DescribeServices, ListServices, DeleteService ---------------------------

_moto_update_service = _Backend.update_service


def update_service(self, service_properties):
    props = dict(service_properties)
    cluster = self._get_cluster(props.get("cluster", "default"))
    service = self._get_service(cluster.name, props["service"].split("/")[-1])
    _settle(service)
    if service.status != "ACTIVE":
        from moto.ecs.exceptions import ECSException as _E

        raise _E("ServiceNotActiveException", "Service was not ACTIVE.")
    if props.get("load_balancers"):
        _check_target_groups(self, props["load_balancers"])
    before = (service.task_definition, service.desired_count)
    running = service.running_count
    # moto stores every member it is sent under its snake_case name, which its serializer
    # reads back: the settings it otherwise drops survive an update too.
    updated = _moto_update_service(self, service_properties)
    updated.running_count = running
    new_definition = props.get("task_definition") and updated.task_definition != before[0]
    forced = bool(props.get("force_new_deployment"))
    if new_definition and updated.deployments:
        updated.deployments[0]["taskDefinition"] = before[0]
    if new_definition or forced or updated.desired_count != before[1]:
        _start_rollout(updated, new_deployment=bool(new_definition or forced))
    return updated


_Backend.update_service = update_service

_moto_describe_services = _Backend.describe_services


def describe_services(self, cluster_str, service_names_or_arns):
    services, failures = _moto_describe_services(self, cluster_str, service_names_or_arns)
    for service in services:
        _settle(service)
    return services, failures


_Backend.describe_services = describe_services

_moto_list_services = _Backend.list_services


def list_services(self, cluster_str, scheduling_strategy=None, launch_type=None):
    arns = _moto_list_services(self, cluster_str, scheduling_strategy, launch_type=launch_type)
    by_arn = {s.arn: s for s in self.services.values()}
    for arn in arns:
        _settle(by_arn[arn])
    return [arn for arn in arns if by_arn[arn].status != "INACTIVE"]


_Backend.list_services = list_services

_moto_delete_service = _Backend.delete_service


def delete_service(self, cluster_name, service_name, force):
    service = self._get_service(cluster_name, service_name.split("/")[-1])
    _settle(service)
    if service.status != "ACTIVE":
        raise ECSException("ServiceNotActiveException", "Service was not ACTIVE.")
    deleted = _moto_delete_service(self, cluster_name, service_name.split("/")[-1], force)
    behind_lb = bool(deleted.load_balancers)
    deleted.status = "DRAINING"
    deleted._emu_drained_at = time.monotonic() + _seconds(
        "ecs_service_drain_ms" if behind_lb else "ecs_task_stop_ms"
    )
    deleted.desired_count = 0
    return deleted


_Backend.delete_service = delete_service


# -- clusters -------------------------------------------------------------------------------

_moto_delete_cluster = _Backend.delete_cluster


def delete_cluster(self, cluster_str):
    cluster = self._get_cluster(cluster_str)
    for service in _services_in(self, cluster.name):
        _settle(service)
        if service.status in ("ACTIVE", "DRAINING"):
            raise ClusterContainsServicesException()
    return _moto_delete_cluster(self, cluster_str)


_Backend.delete_cluster = delete_cluster

_moto_create_cluster = _Backend.create_cluster


def create_cluster(self, cluster_name, *args, **kwargs):
    existing = self.clusters.get(cluster_name)
    if existing is not None and existing.status == "ACTIVE":
        return existing
    return _moto_create_cluster(self, cluster_name, *args, **kwargs)


_Backend.create_cluster = create_cluster
