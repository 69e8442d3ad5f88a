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


def test_a_service_needs_its_namespace_a_free_name_and_a_request_id_creates_once(emulator):
    sd = emulator.client("servicediscovery")
    with pytest.raises(ClientError) as missing:
        sd.create_service(Name="api", NamespaceId="ns-doesnotexist0000000")
    assert missing.value.response["Error"]["Code"] == "NamespaceNotFound"
    operation = sd.create_http_namespace(Name="svcs")["OperationId"]
    _wait(sd, operation)
    namespace = sd.get_operation(OperationId=operation)["Operation"]["Targets"]["NAMESPACE"]
    first = sd.create_service(Name="api", NamespaceId=namespace, CreatorRequestId="r1")["Service"]
    again = sd.create_service(Name="api", NamespaceId=namespace, CreatorRequestId="r1")["Service"]
    assert again["Id"] == first["Id"]
    with pytest.raises(ClientError) as taken:
        sd.create_service(Name="api", NamespaceId=namespace, CreatorRequestId="r2")
    assert taken.value.response["Error"]["Code"] == "ServiceAlreadyExists"
    other = sd.create_http_namespace(Name="elsewhere")["OperationId"]
    _wait(sd, other)
    other_ns = sd.get_operation(OperationId=other)["Operation"]["Targets"]["NAMESPACE"]
    sd.create_service(Name="web", NamespaceId=other_ns)
    listed = sd.list_services(
        Filters=[{"Name": "NAMESPACE_ID", "Values": [namespace], "Condition": "EQ"}]
    )["Services"]
    assert [s["Name"] for s in listed] == ["api"]


def test_a_service_with_instances_refuses_delete_and_a_missing_one_is_not_found(emulator):
    sd = emulator.client("servicediscovery")
    operation = sd.create_http_namespace(Name="inst")["OperationId"]
    _wait(sd, operation)
    namespace = sd.get_operation(OperationId=operation)["Operation"]["Targets"]["NAMESPACE"]
    service = sd.create_service(Name="api", NamespaceId=namespace)["Service"]["Id"]
    sd.register_instance(ServiceId=service, InstanceId="i-1", Attributes={"AWS_INSTANCE_IPV4": "10.0.0.1"})
    with pytest.raises(ClientError) as busy:
        sd.delete_service(Id=service)
    assert busy.value.response["Error"]["Code"] == "ResourceInUse"
    sd.deregister_instance(ServiceId=service, InstanceId="i-1")
    sd.delete_service(Id=service)
    with pytest.raises(ClientError) as gone:
        sd.delete_service(Id=service)
    assert gone.value.response["Error"]["Code"] == "ServiceNotFound"
