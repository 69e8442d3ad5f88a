"""Cloud Map (servicediscovery) made as strict as AWS where cdkd's servicediscovery plugin
depends on it.

- A namespace operation (create, update, delete) is `SUBMITTED` on its first GetOperation and
  for `EMU_CLOUDMAP_OPERATION_SECONDS` (default 1) after it starts, then `SUCCESS`, as AWS's take
  a while (about a minute for a DNS namespace); moto answered `SUCCESS` at once, so a plugin
  that never polled GetOperation passed.
- A create repeated with a `CreatorRequestId` already used answers the first create's
  operation and makes nothing (AWS's idempotency); moto made a second namespace.
- A second namespace of a name already used is refused with NamespaceAlreadyExists (moto made
  it).
- DeleteNamespace of a namespace that still holds services is refused with ResourceInUse
  (moto deleted it and left the services).
- CreateService in a namespace that does not exist is refused with NamespaceNotFound, a second
  service of a name already used in the namespace with ServiceAlreadyExists, and a create
  repeated with a `CreatorRequestId` already used answers the first create's service (moto
  made a service each time, in any namespace id).
- DeleteService of a service that does not exist is ServiceNotFound, of one with registered
  instances ResourceInUse (moto answered success and dropped the instances).
- ListServices applies its `NAMESPACE_ID` filter (moto listed every service).

Remaining differences are listed in docs/testing.md."""

import os
import time

from moto.core.exceptions import JsonRESTError
from moto.servicediscovery import models as _models
from moto.servicediscovery import responses as _responses


def _operation_seconds():
    return float(os.environ.get("EMU_CLOUDMAP_OPERATION_SECONDS", "1"))


_moto_operation_to_json = _models.Operation.to_json


def _operation_to_json(self, short=False):
    started = getattr(self, "_cdkd_started", None)
    if started is None:
        started = self._cdkd_started = time.time()
    reads = getattr(self, "_cdkd_reads", 0)
    self._cdkd_reads = reads + 1
    # The first answer is always SUBMITTED: no AWS namespace operation is done when it starts.
    done = reads > 0 and time.time() - started >= _operation_seconds()
    self.status = "SUCCESS" if done else "SUBMITTED"
    return _moto_operation_to_json(self, short)


_models.Operation.to_json = _operation_to_json

_moto_operation_init = _models.Operation.__init__


def _operation_init(self, *args, **kwargs):
    _moto_operation_init(self, *args, **kwargs)
    self._cdkd_started = time.time()


_models.Operation.__init__ = _operation_init


def _idempotent_create(original):
    def create(self, name, creator_request_id, *args, **kwargs):
        by_request = self.__dict__.setdefault("_cdkd_by_request", {})
        if creator_request_id and creator_request_id in by_request:
            operation_id, namespace_name = by_request[creator_request_id]
            if namespace_name == name:
                return operation_id
        if any(ns.name == name for ns in self.namespaces.values()):
            raise JsonRESTError("NamespaceAlreadyExists", f"Namespace with name {name} already exists.")
        operation_id = original(self, name, creator_request_id, *args, **kwargs)
        if creator_request_id:
            by_request[creator_request_id] = (operation_id, name)
        return operation_id

    return create


for _name in ("create_http_namespace", "create_private_dns_namespace", "create_public_dns_namespace"):
    setattr(_models.ServiceDiscoveryBackend, _name, _idempotent_create(getattr(_models.ServiceDiscoveryBackend, _name)))

_moto_delete_namespace = _models.ServiceDiscoveryBackend.delete_namespace


def _delete_namespace(self, namespace_id):
    if any(s.namespace_id == namespace_id for s in self.services.values()):
        raise JsonRESTError("ResourceInUse", f"Namespace {namespace_id} has associated services.")
    return _moto_delete_namespace(self, namespace_id)


_models.ServiceDiscoveryBackend.delete_namespace = _delete_namespace


_moto_create_service = _models.ServiceDiscoveryBackend.create_service


def _create_service(self, name, namespace_id, creator_request_id, *args, **kwargs):
    # The namespace may come inside DnsConfig (the older spelling).
    dns_config = kwargs.get("dns_config") or {}
    namespace_id = namespace_id or dns_config.get("NamespaceId")
    if namespace_id not in self.namespaces:
        raise JsonRESTError("NamespaceNotFound", f"Namespace {namespace_id} not found.")
    by_request = self.__dict__.setdefault("_cdkd_services_by_request", {})
    if creator_request_id and creator_request_id in by_request:
        service = self.services.get(by_request[creator_request_id])
        if service is not None and service.name == name and service.namespace_id == namespace_id:
            return service
    existing = next(
        (s for s in self.services.values() if s.namespace_id == namespace_id and s.name == name),
        None,
    )
    if existing is not None:
        raise JsonRESTError(
            "ServiceAlreadyExists",
            f"Service {name} already exists in namespace {namespace_id}: {existing.id}.",
        )
    service = _moto_create_service(self, name, namespace_id, creator_request_id, *args, **kwargs)
    if creator_request_id:
        by_request[creator_request_id] = service.id
    return service


_models.ServiceDiscoveryBackend.create_service = _create_service


def _delete_service(self, service_id):
    service = self.get_service(service_id)
    if service.instances:
        raise JsonRESTError("ResourceInUse", f"Service {service_id} has registered instances.")
    self.services.pop(service_id, None)


_models.ServiceDiscoveryBackend.delete_service = _delete_service


def _list_services(self):
    import json

    params = json.loads(self.body or "{}")
    services = list(self.servicediscovery_backend.list_services())
    for f in params.get("Filters") or []:
        if f.get("Name") == "NAMESPACE_ID":
            values = set(f.get("Values") or [])
            services = [s for s in services if s.namespace_id in values]
    return json.dumps({"Services": [s.to_json() for s in services]})


_responses.ServiceDiscoveryResponse.list_services = _list_services
