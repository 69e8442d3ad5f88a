"""The emulator's own tests: its Cloud Control API, latency, fault injection, and the moto
behaviours cdkd's state layer relies on (S3 conditional writes)."""

import json
import time

import botocore.exceptions
import pytest


def wait(cc, progress, timeout=10):
    """Polls a request until it leaves IN_PROGRESS; returns the final event."""
    token = progress["RequestToken"]
    deadline = time.time() + timeout
    while True:
        event = cc.get_resource_request_status(RequestToken=token)["ProgressEvent"]
        if event["OperationStatus"] not in ("PENDING", "IN_PROGRESS"):
            return event
        assert time.time() < deadline, f"request {token} still {event['OperationStatus']}"
        time.sleep(0.05)


def create(cc, type_name, desired):
    started = cc.create_resource(TypeName=type_name, DesiredState=json.dumps(desired))["ProgressEvent"]
    assert started["OperationStatus"] == "IN_PROGRESS"
    return wait(cc, started)


def test_sqs_queue_lifecycle_is_visible_through_the_sqs_api(emulator):
    cc, sqs = emulator.client("cloudcontrol"), emulator.client("sqs")
    done = create(cc, "AWS::SQS::Queue", {"QueueName": "orders", "VisibilityTimeout": 30})
    assert done["OperationStatus"] == "SUCCESS", done
    url = done["Identifier"]
    assert url.endswith("/123456789012/orders")
    # As on AWS: the final model holds the properties sent and the identifier, no attribute.
    assert json.loads(done["ResourceModel"]) == {"QueueName": "orders", "VisibilityTimeout": 30, "QueueUrl": url}
    described = cc.get_resource(TypeName="AWS::SQS::Queue", Identifier=url)["ResourceDescription"]
    assert json.loads(described["Properties"])["Arn"] == "arn:aws:sqs:us-east-1:123456789012:orders"
    # moto answers SQS URLs with the host that was asked; Cloud Control keeps the canonical one.
    assert sqs.get_queue_url(QueueName="orders")["QueueUrl"].endswith("/123456789012/orders")

    patch = [{"op": "replace", "path": "/VisibilityTimeout", "value": 45}]
    updated = wait(cc, cc.update_resource(TypeName="AWS::SQS::Queue", Identifier=url,
                                          PatchDocument=json.dumps(patch))["ProgressEvent"])
    assert updated["OperationStatus"] == "SUCCESS", updated
    assert json.loads(updated["ResourceModel"]) == {"QueueName": "orders", "VisibilityTimeout": 45, "QueueUrl": url}
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "45"
    described = cc.get_resource(TypeName="AWS::SQS::Queue", Identifier=url)["ResourceDescription"]
    assert json.loads(described["Properties"])["VisibilityTimeout"] == 45

    listed = cc.list_resources(TypeName="AWS::SQS::Queue")["ResourceDescriptions"]
    assert [d["Identifier"] for d in listed] == [url]

    deleted = wait(cc, cc.delete_resource(TypeName="AWS::SQS::Queue", Identifier=url)["ProgressEvent"])
    assert deleted["OperationStatus"] == "SUCCESS", deleted
    assert "QueueUrls" not in sqs.list_queues()
    with pytest.raises(cc.exceptions.ResourceNotFoundException):
        cc.get_resource(TypeName="AWS::SQS::Queue", Identifier=url)


@pytest.mark.parametrize("type_name,desired,check", [
    ("AWS::SNS::Topic", {"TopicName": "alerts"},
     lambda e: [t["TopicArn"] for t in e.client("sns").list_topics()["Topics"]]),
    ("AWS::Logs::LogGroup", {"LogGroupName": "/app/logs", "RetentionInDays": 7},
     lambda e: [g["logGroupName"] for g in e.client("logs").describe_log_groups()["logGroups"]]),
    ("AWS::DynamoDB::Table", {
        "TableName": "items",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
        "BillingMode": "PAY_PER_REQUEST"},
     lambda e: e.client("dynamodb").list_tables()["TableNames"]),
])
def test_other_types_are_created_and_deleted_in_their_services(emulator, type_name, desired, check):
    cc = emulator.client("cloudcontrol")
    done = create(cc, type_name, desired)
    assert done["OperationStatus"] == "SUCCESS", done
    assert len(check(emulator)) == 1
    deleted = wait(cc, cc.delete_resource(TypeName=type_name, Identifier=done["Identifier"])["ProgressEvent"])
    assert deleted["OperationStatus"] == "SUCCESS", deleted
    assert check(emulator) == []


def test_a_failed_create_reports_failed_with_an_error_code(emulator):
    cc = emulator.client("cloudcontrol")
    table = {"TableName": "dup", "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
             "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}], "BillingMode": "PAY_PER_REQUEST"}
    assert create(cc, "AWS::DynamoDB::Table", table)["OperationStatus"] == "SUCCESS"
    failed = create(cc, "AWS::DynamoDB::Table", table)
    assert failed["OperationStatus"] == "FAILED"
    assert failed["ErrorCode"] == "AlreadyExists", failed
    assert "dup" in failed["StatusMessage"] or "exist" in failed["StatusMessage"].lower()


def test_deleting_a_missing_resource_fails_with_not_found(emulator):
    cc = emulator.client("cloudcontrol")
    event = wait(cc, cc.delete_resource(TypeName="AWS::SQS::Queue", Identifier="nope")["ProgressEvent"])
    assert event["OperationStatus"] == "FAILED"
    assert event["ErrorCode"] == "NotFound"


def test_unknown_types_are_refused(emulator):
    cc = emulator.client("cloudcontrol")
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        cc.create_resource(TypeName="AWS::Nope::Thing", DesiredState="{}")
    assert raised.value.response["Error"]["Code"] == "TypeNotFoundException"


@pytest.mark.parametrize("type_name,desired,identifier_property,read_only", [
    ("AWS::SNS::Topic", {"TopicName": "sparse"}, "TopicArn", None),
    ("AWS::Logs::LogGroup", {"LogGroupName": "/sparse", "RetentionInDays": 7}, "LogGroupName", "Arn"),
    ("AWS::SSM::Parameter", {"Name": "/sparse", "Type": "String", "Value": "v"}, "Name", None),
    ("AWS::EC2::VPC", {"CidrBlock": "10.9.0.0/16"}, "VpcId", None),
    ("AWS::SQS::Queue", {}, "QueueUrl", "Arn"),
])
def test_a_final_model_holds_the_desired_properties_and_the_identifier_only(
        emulator, type_name, desired, identifier_property, read_only):
    cc = emulator.client("cloudcontrol")
    done = create(cc, type_name, desired)
    assert done["OperationStatus"] == "SUCCESS", done
    assert json.loads(done["ResourceModel"]) == {**desired, identifier_property: done["Identifier"]}
    full = json.loads(cc.get_resource(TypeName=type_name, Identifier=done["Identifier"])
                      ["ResourceDescription"]["Properties"])
    assert full[identifier_property] == done["Identifier"]
    assert all(full[key] == value for key, value in desired.items())
    if read_only:
        assert read_only in full and read_only not in json.loads(done["ResourceModel"])
    listed = cc.list_resources(TypeName=type_name)["ResourceDescriptions"]
    assert [json.loads(d["Properties"]) for d in listed] == [full]


def test_a_type_without_a_known_identifier_reports_the_desired_properties_alone(emulator):
    cc = emulator.client("cloudcontrol")
    done = create(cc, "AWS::EC2::EIP", {"Domain": "vpc"})  # a composite identifier on AWS
    assert done["OperationStatus"] == "SUCCESS", done
    assert done["Identifier"]
    assert json.loads(done["ResourceModel"]) == {"Domain": "vpc"}


def test_a_replayed_client_token_answers_the_original_request(emulator):
    cc = emulator.client("cloudcontrol")
    desired = '{"QueueName":"once"}'
    first = cc.create_resource(TypeName="AWS::SQS::Queue", DesiredState=desired, ClientToken="t-1")["ProgressEvent"]
    done = wait(cc, first)
    assert done["OperationStatus"] == "SUCCESS", done
    again = cc.create_resource(TypeName="AWS::SQS::Queue", DesiredState=desired, ClientToken="t-1")["ProgressEvent"]
    assert again["RequestToken"] == first["RequestToken"]
    assert again["Identifier"] == done["Identifier"]
    assert wait(cc, again) == done
    assert len(cc.list_resources(TypeName="AWS::SQS::Queue")["ResourceDescriptions"]) == 1
    assert len(emulator.client("sqs").list_queues()["QueueUrls"]) == 1
    assert emulator.get("/_emulator/stats")["cloudcontrolapi:CreateResource"] == 2

    # A replayed delete does not run again (it would fail with NotFound).
    url = done["Identifier"]
    deleted = wait(cc, cc.delete_resource(TypeName="AWS::SQS::Queue", Identifier=url, ClientToken="d-1")["ProgressEvent"])
    assert deleted["OperationStatus"] == "SUCCESS", deleted
    replayed = cc.delete_resource(TypeName="AWS::SQS::Queue", Identifier=url, ClientToken="d-1")["ProgressEvent"]
    assert replayed["RequestToken"] == deleted["RequestToken"]
    assert wait(cc, replayed)["OperationStatus"] == "SUCCESS"


def test_a_client_token_reused_for_another_operation_or_type_conflicts(emulator):
    cc = emulator.client("cloudcontrol")
    done = wait(cc, cc.create_resource(TypeName="AWS::SNS::Topic", DesiredState='{"TopicName":"kept"}',
                                       ClientToken="c-1")["ProgressEvent"])
    assert done["OperationStatus"] == "SUCCESS", done
    topic = done["Identifier"]
    reuses = [
        lambda: cc.update_resource(TypeName="AWS::SNS::Topic", Identifier=topic, ClientToken="c-1",
                                   PatchDocument='[{"op":"add","path":"/DisplayName","value":"d"}]'),
        lambda: cc.delete_resource(TypeName="AWS::SNS::Topic", Identifier=topic, ClientToken="c-1"),
        lambda: cc.create_resource(TypeName="AWS::SQS::Queue", DesiredState='{"QueueName":"other"}', ClientToken="c-1"),
    ]
    for reuse in reuses:
        with pytest.raises(cc.exceptions.ClientTokenConflictException) as raised:
            reuse()
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert "already been used" in raised.value.response["Error"]["Message"]
    assert cc.list_resources(TypeName="AWS::SQS::Queue")["ResourceDescriptions"] == []
    assert "QueueUrls" not in emulator.client("sqs").list_queues()
    assert [t["TopicArn"] for t in emulator.client("sns").list_topics()["Topics"]] == [topic]
    assert "DisplayName" not in json.loads(
        cc.get_resource(TypeName="AWS::SNS::Topic", Identifier=topic)["ResourceDescription"]["Properties"])


def test_operations_stay_in_progress_for_the_configured_time(emulator):
    emulator.post("/_emulator/config", {"ccOperationMs": 300})
    cc = emulator.client("cloudcontrol")
    started = cc.create_resource(TypeName="AWS::SNS::Topic", DesiredState='{"TopicName":"slow"}')["ProgressEvent"]
    early = cc.get_resource_request_status(RequestToken=started["RequestToken"])["ProgressEvent"]
    assert early["OperationStatus"] == "IN_PROGRESS"
    time.sleep(0.35)
    late = cc.get_resource_request_status(RequestToken=started["RequestToken"])["ProgressEvent"]
    assert late["OperationStatus"] == "SUCCESS"


def test_reset_forgets_cloud_control_resources(emulator):
    cc = emulator.client("cloudcontrol")
    create(cc, "AWS::SNS::Topic", {"TopicName": "gone-after-reset"})
    emulator.post("/moto-api/reset", {})
    assert cc.list_resources(TypeName="AWS::SNS::Topic")["ResourceDescriptions"] == []


def test_latency_is_added_to_every_request(emulator):
    sqs = emulator.client("sqs")
    for _ in range(3):  # moto builds its backends lazily on the first calls
        sqs.list_queues()
    started = time.monotonic()
    sqs.list_queues()
    fast = time.monotonic() - started
    emulator.post("/_emulator/config", {"latencyMs": 250})
    started = time.monotonic()
    sqs.list_queues()
    slow = time.monotonic() - started
    assert slow >= 0.25 > fast


def test_fault_rate_throttles_json_and_s3_requests(emulator):
    emulator.post("/_emulator/config", {"faultRate": 1.0})
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        emulator.client("sqs").list_queues()
    assert raised.value.response["Error"]["Code"] in ("ThrottlingException", "Throttling")
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        emulator.client("s3").list_buckets()
    assert raised.value.response["Error"]["Code"] == "SlowDown"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503


def test_targeted_fault_rules_hit_only_matching_requests_and_run_out(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="state")
    s3.put_object(Bucket="state", Key="a/lock.json", Body=b"{}")
    emulator.post("/_emulator/faults", {"rules": [
        {"service": "s3", "method": "DELETE", "pathContains": "lock.json",
         "status": 403, "code": "AccessDenied", "count": 1},
    ]})
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        s3.delete_object(Bucket="state", Key="a/lock.json")
    assert raised.value.response["Error"]["Code"] == "AccessDenied"
    s3.head_object(Bucket="state", Key="a/lock.json")  # reads are untouched
    s3.delete_object(Bucket="state", Key="a/lock.json")  # the rule ran out
    rules = emulator.get("/_emulator/faults")["rules"]
    assert rules[0]["hits"] == 1 and rules[0]["remaining"] == 0


def test_query_protocol_actions_are_counted_and_targeted(emulator):
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
    group = ec2.create_security_group(GroupName="held", Description="d", VpcId=vpc)["GroupId"]
    emulator.post("/_emulator/faults", {"rules": [
        {"service": "ec2", "action": "DeleteSecurityGroup", "status": 400,
         "code": "DependencyViolation", "count": 1},
    ]})
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        ec2.delete_security_group(GroupId=group)
    assert raised.value.response["Error"]["Code"] == "DependencyViolation"
    ec2.delete_security_group(GroupId=group)  # the rule ran out; moto still read the body
    emulator.post("/_emulator/faults", {"rules": []})
    stats = emulator.get("/_emulator/stats")
    assert stats["ec2:DeleteSecurityGroup"] == 2
    assert stats["ec2:CreateVpc"] >= 1


def test_s3_conditional_writes_answer_412(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="cond")
    first = s3.put_object(Bucket="cond", Key="state.json", Body=b"1", IfNoneMatch="*")
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        s3.put_object(Bucket="cond", Key="state.json", Body=b"2", IfNoneMatch="*")
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    s3.put_object(Bucket="cond", Key="state.json", Body=b"3", IfMatch=first["ETag"])
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        s3.put_object(Bucket="cond", Key="state.json", Body=b"4", IfMatch=first["ETag"])
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412


def test_stats_count_requests_per_service_and_action(emulator):
    emulator.get("/_emulator/stats")
    cc = emulator.client("cloudcontrol")
    create(cc, "AWS::SNS::Topic", {"TopicName": "counted"})
    stats = emulator.get("/_emulator/stats")
    assert stats["cloudcontrolapi:CreateResource"] == 1
    assert stats["cloudcontrolapi:GetResourceRequestStatus"] >= 1


def test_a_conditional_deny_policy_is_stored_but_does_not_lock_the_owner_out(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="guarded")
    policy = {
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "DenyExternalAccess", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
            "Resource": ["arn:aws:s3:::guarded", "arn:aws:s3:::guarded/*"],
            "Condition": {"StringNotEquals": {"aws:PrincipalAccount": "123456789012"}},
        }],
    }
    s3.put_bucket_policy(Bucket="guarded", Policy=json.dumps(policy))
    s3.put_object(Bucket="guarded", Key="k", Body=b"v")
    assert s3.get_object(Bucket="guarded", Key="k")["Body"].read() == b"v"
    assert json.loads(s3.get_bucket_policy(Bucket="guarded")["Policy"]) == policy
    # An unconditional deny is still enforced.
    policy["Statement"][0].pop("Condition")
    s3.put_bucket_policy(Bucket="guarded", Policy=json.dumps(policy))
    with pytest.raises(botocore.exceptions.ClientError):
        s3.get_object(Bucket="guarded", Key="k")


def test_a_pass_through_fault_applies_the_request_then_fails_it(emulator):
    import urllib.error
    import urllib.request
    emulator.client("s3").create_bucket(Bucket="landed")
    emulator.post("/_emulator/faults", {"rules": [
        {"service": "s3", "method": "PUT", "pathContains": "landed/k", "status": 503,
         "code": "SlowDown", "count": 1, "passThrough": True},
    ]})
    # A raw request: SDKs retry a 503 on their own, which would hide the injected answer.
    request = urllib.request.Request(
        emulator.endpoint + "/landed/k", data=b"it landed", method="PUT",
        headers={"Content-Type": "application/octet-stream",
                 "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"},
    )
    with pytest.raises(urllib.error.HTTPError) as raised:
        urllib.request.urlopen(request)
    assert raised.value.code == 503
    body = emulator.client("s3").get_object(Bucket="landed", Key="k")["Body"].read()
    assert body == b"it landed"



def test_s3_configuration_answers_have_the_root_element_s3_uses(emulator):
    # The Rust SDK refuses moto's `GetBucketVersioningResponse` root.
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="roots")
    s3.put_bucket_versioning(Bucket="roots", VersioningConfiguration={"Status": "Enabled"})
    bodies = []
    s3.meta.events.register("after-call.s3.*", lambda http_response, **_: bodies.append(http_response.content))
    assert s3.get_bucket_versioning(Bucket="roots")["Status"] == "Enabled"
    s3.get_bucket_notification_configuration(Bucket="roots")
    assert b"<VersioningConfiguration" in bodies[0] and b"</VersioningConfiguration>" in bodies[0]
    assert b"<NotificationConfiguration" in bodies[1]


def test_putting_an_event_invoke_config_replaces_it(emulator):
    iam, aws_lambda = emulator.client("iam"), emulator.client("lambda")
    role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    aws_lambda.create_function(FunctionName="fn", Runtime="python3.12", Role=role, Handler="index.handler",
                               Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18})
    for attempts in (1, 2):
        aws_lambda.put_function_event_invoke_config(FunctionName="fn", MaximumRetryAttempts=attempts)
    assert aws_lambda.get_function_event_invoke_config(FunctionName="fn")["MaximumRetryAttempts"] == 2



def test_a_share_of_random_faults_are_server_errors_deterministic_by_seed(emulator):
    import urllib.request

    def outcomes(call, count):
        seen = []
        for _ in range(count):
            try:
                call()
                seen.append("ok")
            except botocore.exceptions.ClientError as err:
                seen.append((err.response["ResponseMetadata"]["HTTPStatusCode"], err.response["Error"]["Code"]))
        return seen

    def clear_random_counts():
        request = urllib.request.Request(emulator.endpoint + "/_emulator/faults", method="DELETE")
        with urllib.request.urlopen(request) as answer:
            return json.loads(answer.read())["random"]

    # No retries: one request per call, so every call draws one fault.
    sqs, s3 = emulator.client("sqs", retries=0), emulator.client("s3", retries=0)
    clear_random_counts()
    try:
        # Without the 5xx share the random faults stay throttling, as before.
        emulator.post("/_emulator/config", {"faultRate": 1.0, "faultSeed": 7})
        assert set(outcomes(sqs.list_queues, 5)) == {(400, "ThrottlingException")}
        emulator.post("/_emulator/config", {"fault5xxShare": 1.0})
        assert set(outcomes(sqs.list_queues, 30)) == {(500, "InternalFailure"), (503, "ServiceUnavailable")}
        assert set(outcomes(s3.list_buckets, 30)) == {(500, "InternalError"), (503, "SlowDown")}
        counts = emulator.get("/_emulator/faults")["random"]
        assert counts["400 ThrottlingException"] == 5
        assert counts["500 InternalFailure"] + counts["503 ServiceUnavailable"] == 30
        assert counts["500 InternalError"] + counts["503 SlowDown"] == 30

        # The same seed gives the same sequence of faults, throttling and 5xx mixed.
        emulator.post("/_emulator/config", {"faultRate": 0.5, "fault5xxShare": 0.5, "faultSeed": 11})
        first = outcomes(sqs.list_queues, 40)
        emulator.post("/_emulator/config", {"faultSeed": 11})
        assert outcomes(sqs.list_queues, 40) == first
        assert {"ok", (400, "ThrottlingException")} <= set(first)
        assert any(o != "ok" and o[0] >= 500 for o in first)

        # With the pass-through share the request is applied, then answered with the 5xx.
        emulator.post("/_emulator/config", {"faultRate": 1.0, "fault5xxShare": 1.0, "faultPassThroughShare": 1.0})
        assert outcomes(lambda: sqs.create_queue(QueueName="landed-anyway"), 1)[0][0] >= 500
        emulator.post("/_emulator/config", {"faultRate": 0})
        assert sqs.list_queues()["QueueUrls"][0].endswith("/landed-anyway")
        assert any(key.endswith("(applied)") for key in emulator.get("/_emulator/faults")["random"])
        assert clear_random_counts() == {}
    finally:
        emulator.post("/_emulator/config", {"faultRate": 0, "fault5xxShare": 0, "faultPassThroughShare": 0, "faultSeed": 0})
