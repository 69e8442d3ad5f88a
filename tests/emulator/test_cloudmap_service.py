"""Cloud Map as AWS has it (cloudmap_service.py), through the running emulator."""

import time

import pytest
from botocore.exceptions import ClientError


def _wait(sd, operation_id):
    statuses = []
    deadline = time.time() + 10
    while True:
        status = sd.get_operation(OperationId=operation_id)["Operation"]["Status"]
        statuses.append(status)
        if status == "SUCCESS":
            return statuses
        assert time.time() < deadline, statuses
        time.sleep(0.2)


def test_an_operation_is_submitted_before_it_succeeds_and_a_request_id_creates_once(emulator):
    sd = emulator.client("servicediscovery")
    first = sd.create_http_namespace(Name="shop", CreatorRequestId="req-1")["OperationId"]
    again = sd.create_http_namespace(Name="shop", CreatorRequestId="req-1")["OperationId"]
    assert again == first
    statuses = _wait(sd, first)
    assert statuses[0] == "SUBMITTED" and statuses[-1] == "SUCCESS", statuses
    names = [n["Name"] for n in sd.list_namespaces()["Namespaces"]]
    assert names == ["shop"]
    with pytest.raises(ClientError) as taken:
        sd.create_http_namespace(Name="shop", CreatorRequestId="req-2")
    assert taken.value.response["Error"]["Code"] == "NamespaceAlreadyExists"


def test_a_namespace_with_services_refuses_delete(emulator):
    sd = emulator.client("servicediscovery")
    operation = sd.create_http_namespace(Name="busy")["OperationId"]
    _wait(sd, operation)
    namespace = sd.get_operation(OperationId=operation)["Operation"]["Targets"]["NAMESPACE"]
    service = sd.create_service(Name="api", NamespaceId=namespace)["Service"]["Id"]
    with pytest.raises(ClientError) as busy:
        sd.delete_namespace(Id=namespace)
    assert busy.value.response["Error"]["Code"] == "ResourceInUse"
    sd.delete_service(Id=service)
    _wait(sd, sd.delete_namespace(Id=namespace)["OperationId"])
    with pytest.raises(ClientError) as gone:
        sd.get_namespace(Id=namespace)
    assert gone.value.response["Error"]["Code"] == "NamespaceNotFound"
