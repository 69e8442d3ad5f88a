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
    # The SQS API answers the same URL Cloud Control does, as on AWS.
    assert sqs.get_queue_url(QueueName="orders")["QueueUrl"] == url

    patch = [{"op": "replace", "path": "/VisibilityTimeout", "value": 45}]
    updated = wait(cc, cc.update_resource(TypeName="AWS::SQS::Queue", Identifier=url,
                                          PatchDocument=json.dumps(patch))["ProgressEvent"])
    assert updated["OperationStatus"] == "SUCCESS", updated
    assert json.loads(updated["ResourceModel"]) == {"QueueName": "orders", "VisibilityTimeout": 45, "QueueUrl": url}
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "45"
    described = cc.get_resource(TypeName="AWS::SQS::Queue", Identifier=url)["ResourceDescription"]
    assert json.loads(described["Properties"])["VisibilityTimeout"] == 45

    # As on AWS: a create-only property (the registry schema's) cannot be patched.
    patch = [{"op": "replace", "path": "/QueueName", "value": "renamed"}]
    refused = wait(cc, cc.update_resource(TypeName="AWS::SQS::Queue", Identifier=url,
                                          PatchDocument=json.dumps(patch))["ProgressEvent"])
    assert refused["OperationStatus"] == "FAILED", refused
    assert refused["ErrorCode"] == "NotUpdatable", refused
    assert "/properties/QueueName" in refused["StatusMessage"], refused

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


@pytest.mark.parametrize("type_name", ["AWS::SQS::QueuePolicy", "AWS::SNS::TopicPolicy"])
def test_types_without_a_read_handler_are_refused_as_on_aws(emulator, type_name):
    cc = emulator.client("cloudcontrol")
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        cc.create_resource(TypeName=type_name, DesiredState=json.dumps(
            {"PolicyDocument": {"Statement": []}, "Queues": ["q"], "Topics": ["t"]}))
    assert raised.value.response["Error"]["Code"] == "UnsupportedActionException"
    assert type_name in raised.value.response["Error"]["Message"]


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


def test_an_s3_event_names_the_key_with_its_slashes_as_s3_does(emulator):
    s3, sqs = emulator.client("s3"), emulator.client("sqs")
    queue = sqs.create_queue(QueueName="announced")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    s3.create_bucket(Bucket="announcing")
    s3.put_bucket_notification_configuration(Bucket="announcing", NotificationConfiguration={
        "QueueConfigurations": [{"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]})
    s3.put_object(Bucket="announcing", Key="in/a b.csv", Body=b"x")
    keys = [r["s3"]["object"]["key"]
            for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
            for r in json.loads(m["Body"]).get("Records", [])]
    assert keys == ["in/a+b.csv"]


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



def _throttled(emulator, method="GET"):
    import urllib.request
    request = urllib.request.Request(emulator.endpoint + "/_emulator/throttled", method=method)
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def test_a_rate_limit_throttles_a_service_past_its_burst_until_removed(emulator):
    # retries=0: one attempt per call (botocore's max_attempts counts retries), none hides a
    # throttled answer.
    sqs = emulator.client("sqs", retries=0)
    for _ in range(3):  # moto builds its backends lazily on the first calls
        sqs.list_queues()
    _throttled(emulator, "DELETE")
    limits = {"sqs": {"perSecond": 5, "burst": 5}}
    try:
        emulator.post("/_emulator/config", {"rateLimits": limits})
        assert emulator.get("/_emulator/config")["rateLimits"] == limits
        seen = []
        for _ in range(20):
            try:
                sqs.list_queues()
                seen.append("ok")
            except botocore.exceptions.ClientError as err:
                seen.append((err.response["ResponseMetadata"]["HTTPStatusCode"], err.response["Error"]["Code"]))
        assert seen[:5] == ["ok"] * 5, seen  # the bucket starts full
        assert set(seen) == {"ok", (400, "ThrottlingException")}, seen
        assert _throttled(emulator) == {"sqs": seen.count((400, "ThrottlingException"))}
        emulator.client("s3").list_buckets()  # other services are not limited

        emulator.post("/_emulator/config", {"rateLimits": {}})
        assert emulator.get("/_emulator/config")["rateLimits"] == {}
        for _ in range(20):
            sqs.list_queues()
        assert _throttled(emulator, "DELETE") == {"sqs": seen.count((400, "ThrottlingException"))}
        assert _throttled(emulator) == {}
    finally:
        emulator.post("/_emulator/config", {"rateLimits": None})


def test_a_throttled_request_is_not_applied_and_s3_answers_slow_down(emulator):
    sqs, s3 = emulator.client("sqs", retries=0), emulator.client("s3", retries=0)
    try:
        # One request, then a token every 10 s.
        emulator.post("/_emulator/config", {"rateLimits": {"sqs": {"perSecond": 0.1, "burst": 1},
                                                           "s3": {"perSecond": 0.1, "burst": 1}}})
        sqs.list_queues()
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            sqs.create_queue(QueueName="never-made")
        assert raised.value.response["Error"]["Code"] == "ThrottlingException"
        s3.list_buckets()
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            s3.create_bucket(Bucket="never-made")
        assert raised.value.response["Error"]["Code"] == "SlowDown"
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert _throttled(emulator) == {"sqs": 1, "s3": 1}
        emulator.post("/_emulator/config", {"rateLimits": None})
        assert "QueueUrls" not in sqs.list_queues()
        assert s3.list_buckets()["Buckets"] == []
        emulator.post("/moto-api/reset", {})
        assert _throttled(emulator) == {}
    finally:
        emulator.post("/_emulator/config", {"rateLimits": None})


# -- Lambda runs handler code (lambda_runner.py) ---------------------------------------------------

import base64
import io
import os
import zipfile

FIXTURE_MODULES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "apps", "node_modules")


def _zip(files):
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            # A fixed date: the same files give the same zip, so the runner's code cache stays put.
            archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), text)
    return data.getvalue()


def _function(emulator, name, files, runtime="nodejs20.x", handler="index.handler", **extra):
    iam, aws_lambda = emulator.client("iam"), emulator.client("lambda")
    try:
        role = iam.get_role(RoleName="lambda-runner")["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        role = iam.create_role(RoleName="lambda-runner", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    code = files if isinstance(files, bytes) else _zip(files)
    aws_lambda.create_function(FunctionName=name, Runtime=runtime, Role=role, Handler=handler,
                               Code={"ZipFile": code}, **extra)
    return aws_lambda


def _invoke(aws_lambda, name, event=None, **extra):
    answer = aws_lambda.invoke(FunctionName=name, Payload=json.dumps(event if event is not None else {}), **extra)
    payload = answer["Payload"].read()
    return answer, (json.loads(payload) if payload else None)


def test_a_node_handler_runs_and_answers_its_event_and_region(emulator):
    aws_lambda = _function(emulator, "echo", {"index.js": """
        exports.handler = async (event, context) => ({
          event, region: process.env.AWS_REGION, name: context.functionName,
          remaining: context.getRemainingTimeInMillis(), arn: context.invokedFunctionArn,
        });
    """}, Environment={"Variables": {"GREETING": "hi"}})
    answer, payload = _invoke(aws_lambda, "echo", {"a": [1, "two"]})
    assert answer["StatusCode"] == 200 and "FunctionError" not in answer
    assert answer["ExecutedVersion"] == "$LATEST"
    assert payload["event"] == {"a": [1, "two"]}
    assert payload["region"] == "us-east-1" and payload["name"] == "echo"
    assert 0 < payload["remaining"] <= 3000
    assert payload["arn"] == "arn:aws:lambda:us-east-1:123456789012:function:echo"


def test_a_thrown_error_is_an_unhandled_function_error(emulator):
    aws_lambda = _function(emulator, "thrower", {"index.js": """
        class BadThing extends Error { constructor(m) { super(m); this.name = 'BadThing'; } }
        exports.handler = async () => { throw new BadThing('it broke'); };
    """})
    answer, payload = _invoke(aws_lambda, "thrower")
    assert answer["StatusCode"] == 200
    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "BadThing" and payload["errorMessage"] == "it broke"
    assert any("index.js" in line for line in payload["trace"])


def test_log_type_tail_answers_the_handler_output(emulator):
    aws_lambda = _function(emulator, "talker", {"index.js": """
        exports.handler = async () => { console.log('the handler says %s', 'hello'); return 1; };
    """})
    answer, payload = _invoke(aws_lambda, "talker", LogType="Tail")
    assert payload == 1
    tail = base64.b64decode(answer["LogResult"]).decode()
    assert "INFO\tthe handler says hello" in tail
    assert tail.startswith("START RequestId: ") and "\nREPORT RequestId: " in tail
    assert "LogResult" not in aws_lambda.invoke(FunctionName="talker")
    # The output also goes to CloudWatch Logs, as Lambda's does.
    logs = emulator.client("logs")
    streams = logs.describe_log_streams(logGroupName="/aws/lambda/talker")["logStreams"]
    messages = [e["message"] for s in streams
                for e in logs.get_log_events(logGroupName="/aws/lambda/talker", logStreamName=s["logStreamName"])["events"]]
    assert any("the handler says hello" in m for m in messages)


def test_a_handler_running_past_its_timeout_is_killed(emulator):
    aws_lambda = _function(emulator, "sleeper", {"index.js": """
        exports.handler = () => new Promise((resolve) => setTimeout(() => resolve('late'), 5000));
    """}, Timeout=1)
    started = time.monotonic()
    answer, payload = _invoke(aws_lambda, "sleeper")
    elapsed = time.monotonic() - started
    assert answer["FunctionError"] == "Unhandled"
    assert "Task timed out after 1.00 seconds" in payload["errorMessage"]
    assert 1.0 <= elapsed < 4.0


def test_a_handler_puts_an_object_with_the_sdk_s3_client(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="from-lambda")
    aws_lambda = _function(emulator, "putter", {"index.js": """
        const { S3Client, PutObjectCommand } = require('@aws-sdk/client-s3');
        exports.handler = async (event) => {
          await new S3Client({}).send(new PutObjectCommand({ Bucket: event.bucket, Key: event.key, Body: 'written by the SDK' }));
          return 'put';
        };
    """}, Timeout=30)
    answer, payload = _invoke(aws_lambda, "putter", {"bucket": "from-lambda", "key": "dir/obj.txt"})
    assert "FunctionError" not in answer, payload
    assert payload == "put"
    assert s3.get_object(Bucket="from-lambda", Key="dir/obj.txt")["Body"].read() == b"written by the SDK"


def test_a_cfn_response_put_to_a_presigned_url_reaches_the_emulator(emulator):
    # As aws-cdk-lib's custom-resource handlers send their response: https.request with the
    # ResponseURL's hostname and path only (no scheme, no port).
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="cfn-responses")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "cfn-responses", "Key": "resp/1"}, ExpiresIn=600)
    assert url.startswith("http://127.0.0.1:")
    aws_lambda = _function(emulator, "responder", {"index.js": """
        const https = require('https');
        const url = require('url');
        exports.handler = async (event) => {
          const body = JSON.stringify({ Status: 'SUCCESS', PhysicalResourceId: 'phys-1', Data: { Answer: 42 } });
          const parsed = url.parse(event.ResponseURL);
          const status = await new Promise((resolve, reject) => {
            const req = https.request({ hostname: parsed.hostname, path: parsed.path, method: 'PUT',
              headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) } },
              (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
            req.on('error', reject);
            req.write(body);
            req.end();
          });
          return { status };
        };
    """}, Timeout=30)
    answer, payload = _invoke(aws_lambda, "responder", {"ResponseURL": url})
    assert "FunctionError" not in answer, payload
    assert payload == {"status": 200}
    sent = json.loads(s3.get_object(Bucket="cfn-responses", Key="resp/1")["Body"].read())
    assert sent["Status"] == "SUCCESS" and sent["Data"] == {"Answer": 42}


def test_handlers_reach_only_loopback(emulator):
    aws_lambda = _function(emulator, "outbound", {"index.js": """
        const https = require('https');
        exports.handler = () => new Promise((resolve) => {
          https.get('https://example.com/', () => resolve('connected')).on('error', (e) => resolve(e.code));
        });
    """})
    _, payload = _invoke(aws_lambda, "outbound")
    assert payload == "ECONNREFUSED"


def test_a_python_handler_runs_with_boto3(emulator):
    emulator.client("sqs").create_queue(QueueName="seen-by-python")
    aws_lambda = _function(emulator, "pyfn", {"app/main.py": """
import os
import boto3

def handler(event, context):
    queues = boto3.client("sqs").list_queues()["QueueUrls"]
    return {"doubled": event["n"] * 2, "region": os.environ["AWS_REGION"],
            "queues": [q.rsplit("/", 1)[-1] for q in queues], "request": context.aws_request_id,
            "remaining": context.get_remaining_time_in_millis()}
"""}, runtime="python3.12", handler="app/main.handler", Timeout=30)
    answer, payload = _invoke(aws_lambda, "pyfn", {"n": 21})
    assert "FunctionError" not in answer, payload
    assert payload["doubled"] == 42 and payload["region"] == "us-east-1"
    assert payload["queues"] == ["seen-by-python"]
    assert answer["ResponseMetadata"]["HTTPHeaders"]["x-amzn-requestid"] == payload["request"]
    assert 0 < payload["remaining"] <= 30000

    aws_lambda = _function(emulator, "pyerr", {"index.py": "def handler(event, context):\n    raise ValueError('bad value')\n"},
                           runtime="python3.12")
    answer, payload = _invoke(aws_lambda, "pyerr")
    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "ValueError" and payload["errorMessage"] == "bad value"


def test_a_layer_module_is_required_by_the_handler(emulator):
    aws_lambda = emulator.client("lambda")
    layer = aws_lambda.publish_layer_version(LayerName="shared", Content={"ZipFile": _zip({
        "nodejs/node_modules/shared-greeting/index.js": "exports.greet = (who) => `hello, ${who}, from the layer`;",
        "python/shared_greeting.py": "def greet(who):\n    return f'hello, {who}, from the python layer'\n",
    })})["LayerVersionArn"]
    _function(emulator, "layered", {"index.js": """
        const { greet } = require('shared-greeting');
        exports.handler = async (event) => greet(event.who);
    """}, Layers=[layer])
    assert _invoke(aws_lambda, "layered", {"who": "cdkd"})[1] == "hello, cdkd, from the layer"
    _function(emulator, "pylayered", {"index.py": """
from shared_greeting import greet

def handler(event, context):
    return greet(event["who"])
"""}, runtime="python3.12", Layers=[layer])
    assert _invoke(aws_lambda, "pylayered", {"who": "cdkd"})[1] == "hello, cdkd, from the python layer"


def test_callback_handlers_es_modules_event_and_dry_run_invocations(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="async-marks")
    aws_lambda = _function(emulator, "callback", {
        "index.js": "exports.handler = (event, context, callback) => { setTimeout(() => callback(null, {got: event.x}), 10); };",
        "esm/handler.mjs": """
            import { S3Client } from '@aws-sdk/client-s3';  // the runtime's SDK, as on Lambda
            export const main = async (event) => ({ esm: typeof S3Client === 'function', x: event.x });
        """,
        "marker.js": """
            const { S3Client, PutObjectCommand } = require('@aws-sdk/client-s3');
            exports.handler = async (event) => {
              await new S3Client({}).send(new PutObjectCommand({ Bucket: 'async-marks', Key: event.key, Body: 'x' }));
            };
        """,
    }, Timeout=30)
    assert _invoke(aws_lambda, "callback", {"x": 7})[1] == {"got": 7}
    aws_lambda.update_function_configuration(FunctionName="callback", Handler="esm/handler.main")
    assert _invoke(aws_lambda, "callback", {"x": 8})[1] == {"esm": True, "x": 8}

    aws_lambda.update_function_configuration(FunctionName="callback", Handler="marker.handler")
    dry = aws_lambda.invoke(FunctionName="callback", InvocationType="DryRun", Payload=json.dumps({"key": "dry"}))
    assert dry["StatusCode"] == 204
    queued = aws_lambda.invoke(FunctionName="callback", InvocationType="Event", Payload=json.dumps({"key": "event"}))
    assert queued["StatusCode"] == 202
    deadline = time.time() + 20
    while "Contents" not in s3.list_objects_v2(Bucket="async-marks"):
        assert time.time() < deadline, "the Event invocation did not run"
        time.sleep(0.1)
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="async-marks")["Contents"]] == ["event"]


def test_a_missing_handler_module_is_an_import_error(emulator):
    aws_lambda = _function(emulator, "nomodule", {"other.js": "exports.handler = async () => 1;"})
    answer, payload = _invoke(aws_lambda, "nomodule")
    assert answer["FunctionError"] == "Unhandled"
    assert payload["errorType"] == "Runtime.ImportModuleError"


def test_unsupported_runtimes_keep_moto_s_answer(emulator):
    aws_lambda = _function(emulator, "javafn", {"x.txt": "not run"}, runtime="java21", handler="a.B::handle")
    answer = aws_lambda.invoke(FunctionName="javafn", Payload=b'{"k": 1}')
    assert answer["StatusCode"] == 200 and "FunctionError" not in answer
    assert json.loads(answer["Payload"].read()) == {"k": 1}  # moto echoes the payload


CDK_HANDLERS = os.path.join(FIXTURE_MODULES, "aws-cdk-lib", "custom-resource-handlers", "dist")
needs_cdk = pytest.mark.skipif(not os.path.isdir(CDK_HANDLERS),
                               reason="tests/fixtures/apps/node_modules (aws-cdk-lib) is not installed")


def _custom_resource_event(emulator, request_type, properties, response_key):
    s3 = emulator.client("s3")
    if "cfn-responses" not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket="cfn-responses")
    url = s3.generate_presigned_url("put_object", Params={"Bucket": "cfn-responses", "Key": response_key}, ExpiresIn=600)
    return {"RequestType": request_type, "ResponseURL": url, "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/S/1",
            "RequestId": "req-1", "LogicalResourceId": "Res", "ResourceType": "Custom::Test",
            "PhysicalResourceId": properties.get("BucketName", "phys"), "ResourceProperties": properties}


def _custom_resource_response(emulator, response_key):
    return json.loads(emulator.client("s3").get_object(Bucket="cfn-responses", Key=response_key)["Body"].read())


@needs_cdk
def test_aws_cdk_lib_s3_auto_delete_objects_handler_empties_the_bucket(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="doomed")
    s3.put_bucket_tagging(Bucket="doomed", Tagging={"TagSet": [{"Key": "aws-cdk:auto-delete-objects", "Value": "true"}]})
    for key in ("a", "b/c"):
        s3.put_object(Bucket="doomed", Key=key, Body=b"x")
    with open(os.path.join(CDK_HANDLERS, "aws-s3", "auto-delete-objects-handler", "index.js")) as handle:
        aws_lambda = _function(emulator, "auto-delete", {"index.js": handle.read()}, Timeout=60)
    event = _custom_resource_event(emulator, "Delete", {"BucketName": "doomed"}, "auto-delete")
    answer, payload = _invoke(aws_lambda, "auto-delete", event, LogType="Tail")
    assert "FunctionError" not in answer, (payload, base64.b64decode(answer["LogResult"]).decode())
    assert "Contents" not in s3.list_objects_v2(Bucket="doomed")
    response = _custom_resource_response(emulator, "auto-delete")
    assert response["Status"] == "SUCCESS", response
    assert response["PhysicalResourceId"] == "doomed"


@needs_cdk
def test_aws_cdk_lib_bucket_deployment_handler_runs_the_aws_cli_layer(emulator):
    s3, aws_lambda = emulator.client("s3"), emulator.client("lambda")
    s3.create_bucket(Bucket="deploy-source")
    s3.create_bucket(Bucket="deploy-dest")
    s3.put_object(Bucket="deploy-source", Key="asset.zip", Body=_zip({"index.html": "<h1>hi</h1>", "css/site.css": "body {}"}))
    s3.put_object(Bucket="deploy-dest", Key="stale.txt", Body=b"pruned")
    with open(os.path.join(FIXTURE_MODULES, "@aws-cdk", "asset-awscli-v1", "lib", "layer.zip"), "rb") as handle:
        s3.put_object(Bucket="deploy-source", Key="awscli-layer.zip", Body=handle.read())
    layer = aws_lambda.publish_layer_version(
        LayerName="awscli", Content={"S3Bucket": "deploy-source", "S3Key": "awscli-layer.zip"})["LayerVersionArn"]
    with open(os.path.join(CDK_HANDLERS, "aws-s3-deployment", "bucket-deployment-handler", "index.py")) as handle:
        _function(emulator, "deployer", {"index.py": handle.read()}, runtime="python3.13", Timeout=120, Layers=[layer])
    event = _custom_resource_event(emulator, "Create", {
        "SourceBucketNames": ["deploy-source"], "SourceObjectKeys": ["asset.zip"],
        "DestinationBucketName": "deploy-dest", "Prune": "true"}, "deployer")
    answer, payload = _invoke(aws_lambda, "deployer", event, LogType="Tail")
    assert "FunctionError" not in answer, (payload, base64.b64decode(answer["LogResult"]).decode())
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="deploy-dest")["Contents"])
    assert keys == ["css/site.css", "index.html"]
    assert s3.get_object(Bucket="deploy-dest", Key="index.html")["Body"].read() == b"<h1>hi</h1>"
    response = _custom_resource_response(emulator, "deployer")
    assert response["Status"] == "SUCCESS", response
    assert response["PhysicalResourceId"].startswith("aws.cdk.s3deployment.")


@needs_cdk
def test_aws_cdk_lib_restrict_default_security_group_handler_behind_the_entrypoint(emulator):
    # CustomResourceProvider code: aws-cdk-lib's __entrypoint__.js (cfn-response) wrapping index.js.
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.3.0.0/16")["Vpc"]["VpcId"]
    group = ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc]},
                                                  {"Name": "group-name", "Values": ["default"]}])["SecurityGroups"][0]
    assert group["IpPermissionsEgress"]  # moto's default group allows all egress (and no self ingress)
    files = {}
    for name, source in (("__entrypoint__.js", ("core", "nodejs-entrypoint-handler", "index.js")),
                         ("index.js", ("aws-ec2", "restrict-default-security-group-handler", "index.js"))):
        with open(os.path.join(CDK_HANDLERS, *source)) as handle:
            files[name] = handle.read()
    aws_lambda = _function(emulator, "restrict-sg", files, handler="__entrypoint__.handler", Timeout=60)
    event = _custom_resource_event(emulator, "Create", {
        "DefaultSecurityGroupId": group["GroupId"], "Account": "123456789012"}, "restrict-sg")
    answer, payload = _invoke(aws_lambda, "restrict-sg", event, LogType="Tail")
    assert "FunctionError" not in answer, (payload, base64.b64decode(answer["LogResult"]).decode())
    response = _custom_resource_response(emulator, "restrict-sg")
    assert response["Status"] == "SUCCESS", (response, base64.b64decode(answer["LogResult"]).decode())
    group = ec2.describe_security_groups(GroupIds=[group["GroupId"]])["SecurityGroups"][0]
    assert group["IpPermissions"] == [] and group["IpPermissionsEgress"] == []
    # Delete puts the default rules back.
    event = _custom_resource_event(emulator, "Delete", {
        "DefaultSecurityGroupId": group["GroupId"], "Account": "123456789012"}, "restrict-sg-delete")
    answer, payload = _invoke(aws_lambda, "restrict-sg", event)
    assert _custom_resource_response(emulator, "restrict-sg-delete")["Status"] == "SUCCESS"
    group = ec2.describe_security_groups(GroupIds=[group["GroupId"]])["SecurityGroups"][0]
    assert group["IpPermissionsEgress"][0]["IpRanges"] == [{"CidrIp": "0.0.0.0/0"}]
    assert group["IpPermissions"][0]["UserIdGroupPairs"][0]["GroupId"] == group["GroupId"]


@needs_cdk
def test_aws_cdk_lib_provider_framework_invokes_the_user_function(emulator):
    # custom_resources.Provider: the framework's onEvent handler invokes the user's onEvent
    # function through the Lambda API (a nested invocation) and sends the CloudFormation response.
    aws_lambda = _function(emulator, "user-on-event", {"index.py": """
def on_event(event, context):
    return {"PhysicalResourceId": "user-" + event["ResourceProperties"]["Name"], "Data": {"Answer": 42}}
"""}, runtime="python3.12", handler="index.on_event")
    user_arn = aws_lambda.get_function(FunctionName="user-on-event")["Configuration"]["FunctionArn"]
    runtime = os.path.join(FIXTURE_MODULES, "aws-cdk-lib", "custom-resources", "lib", "provider-framework", "runtime")
    files = {}
    for name in os.listdir(runtime):
        if name.endswith(".js"):
            with open(os.path.join(runtime, name)) as handle:
                files[name] = handle.read()
    _function(emulator, "framework-on-event", files, handler="framework.onEvent", Timeout=60,
              Environment={"Variables": {"USER_ON_EVENT_FUNCTION_ARN": user_arn}})
    event = _custom_resource_event(emulator, "Create", {"ServiceToken": "x", "Name": "thing"}, "provider")
    del event["PhysicalResourceId"]
    answer, payload = _invoke(aws_lambda, "framework-on-event", event, LogType="Tail")
    assert "FunctionError" not in answer, (payload, base64.b64decode(answer["LogResult"]).decode())
    response = _custom_resource_response(emulator, "provider")
    assert response["Status"] == "SUCCESS", response
    assert response["PhysicalResourceId"] == "user-thing" and response["Data"] == {"Answer": 42}


def test_inline_zip_file_source_becomes_cloudformation_s_package(emulator):
    # Code.ZipFile in a template is source text: CloudFormation packages it as index.js with the
    # cfn-response module for Node.js (index.py with cfnresponse for Python).
    cc = emulator.client("cloudcontrol")
    role = emulator.client("iam").create_role(RoleName="inline", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    source = """
        const response = require('cfn-response');
        exports.handler = (event, context) => {
          response.send(event, context, response.SUCCESS, { Version: 'one' }, 'inline-phys');
        };
    """
    desired = {"FunctionName": "inline-node", "Runtime": "nodejs20.x", "Handler": "index.handler",
               "Role": role, "Code": {"ZipFile": source}, "Timeout": 30}
    done = create(cc, "AWS::Lambda::Function", desired)
    assert done["OperationStatus"] == "SUCCESS", done
    aws_lambda = emulator.client("lambda")
    event = _custom_resource_event(emulator, "Create", {"Name": "x"}, "inline-1")
    answer, payload = _invoke(aws_lambda, "inline-node", event, LogType="Tail")
    assert "FunctionError" not in answer, (payload, base64.b64decode(answer["LogResult"]).decode())
    response = _custom_resource_response(emulator, "inline-1")
    assert response["Status"] == "SUCCESS" and response["PhysicalResourceId"] == "inline-phys"
    assert response["Data"] == {"Version": "one"}

    patch = [{"op": "replace", "path": "/Code/ZipFile", "value": source.replace("'one'", "'two'")}]
    updated = wait(cc, cc.update_resource(TypeName="AWS::Lambda::Function", Identifier="inline-node",
                                          PatchDocument=json.dumps(patch))["ProgressEvent"])
    assert updated["OperationStatus"] == "SUCCESS", updated
    event = _custom_resource_event(emulator, "Update", {"Name": "x"}, "inline-2")
    _invoke(aws_lambda, "inline-node", event)
    assert _custom_resource_response(emulator, "inline-2")["Data"] == {"Version": "two"}

    python = {"FunctionName": "inline-py", "Runtime": "python3.12", "Handler": "index.handler", "Role": role,
              "Code": {"ZipFile": "import cfnresponse\n\ndef handler(event, context):\n"
                                  "    cfnresponse.send(event, context, cfnresponse.SUCCESS, {'Py': True}, 'py-phys')\n"}}
    assert create(cc, "AWS::Lambda::Function", python)["OperationStatus"] == "SUCCESS"
    event = _custom_resource_event(emulator, "Create", {}, "inline-3")
    answer, payload = _invoke(aws_lambda, "inline-py", event, LogType="Tail")
    assert "FunctionError" not in answer, (payload, base64.b64decode(answer["LogResult"]).decode())
    assert _custom_resource_response(emulator, "inline-3")["PhysicalResourceId"] == "py-phys"


def test_invocations_run_concurrently(emulator):
    from concurrent.futures import ThreadPoolExecutor

    _function(emulator, "napper", {"index.js": """
        exports.handler = (event) => new Promise((resolve) => setTimeout(() => resolve(event.i), 1000));
    """}, Timeout=10)
    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: _invoke(emulator.client("lambda"), "napper", {"i": i})[1], range(4)))
    assert results == [0, 1, 2, 3]
    assert time.monotonic() - started < 3.5  # one at a time would take 4 s and more


# -- SNS delivers to Lambda subscriptions through the runner ---------------------------------------

SNS_NODE_HANDLER = """
    const { SSMClient, PutParameterCommand } = require('@aws-sdk/client-ssm');
    exports.handler = async (event, context) => {
      const record = event.Records[0];
      await new SSMClient({}).send(new PutParameterCommand({
        Name: process.env.PARAMETER, Type: 'String', Overwrite: true, Value: record.Sns.Message }));
      await new SSMClient({}).send(new PutParameterCommand({
        Name: process.env.PARAMETER + '-event', Type: 'String', Overwrite: true,
        Value: JSON.stringify({ event, invokedArn: context.invokedFunctionArn }) }));
    };
"""

SNS_PYTHON_HANDLER = """
import json
import os
import boto3

def handler(event, context):
    ssm = boto3.client("ssm")
    ssm.put_parameter(Name=os.environ["PARAMETER"], Type="String", Overwrite=True,
                      Value=event["Records"][0]["Sns"]["Message"])
    ssm.put_parameter(Name=os.environ["PARAMETER"] + "-event", Type="String", Overwrite=True,
                      Value=json.dumps({"event": event, "invokedArn": context.invoked_function_arn}))
"""


def _parameter(ssm, name, timeout=15):
    """The parameter's value once it exists (bounded wait: the delivery is asynchronous)."""
    deadline = time.time() + timeout
    while True:
        try:
            return ssm.get_parameter(Name=name)["Parameter"]["Value"]
        except ssm.exceptions.ParameterNotFound:
            assert time.time() < deadline, f"{name} was not written within {timeout} s"
            time.sleep(0.1)


def _sns_subscribed_function(emulator, name, files, runtime, handler, parameter, topic_name):
    aws_lambda = _function(emulator, name, files, runtime=runtime, handler=handler, Timeout=30,
                           Environment={"Variables": {"PARAMETER": parameter}})
    function_arn = aws_lambda.get_function(FunctionName=name)["Configuration"]["FunctionArn"]
    sns = emulator.client("sns")
    topic = sns.create_topic(Name=topic_name)["TopicArn"]
    subscription = sns.subscribe(TopicArn=topic, Protocol="lambda", Endpoint=function_arn)["SubscriptionArn"]
    return sns, topic, subscription, function_arn


@pytest.mark.parametrize("runtime, handler, files", [
    ("nodejs20.x", "index.handler", {"index.js": SNS_NODE_HANDLER}),
    ("python3.12", "index.handler", {"index.py": SNS_PYTHON_HANDLER}),
], ids=["nodejs", "python"])
def test_sns_delivers_a_published_message_to_a_lambda_subscription(emulator, runtime, handler, files):
    name = f"sns-{runtime.replace('.', '-')}"
    parameter = f"/sns/{name}"
    sns, topic, subscription, function_arn = _sns_subscribed_function(
        emulator, name, files, runtime, handler, parameter, f"topic-{name}")
    message = json.dumps({"RequestType": "Create", "ResponseURL": "http://127.0.0.1/x", "n": 1})
    started = time.monotonic()
    published = sns.publish(TopicArn=topic, Message=message, Subject="custom resource",
                            MessageAttributes={"kind": {"DataType": "String", "StringValue": "test"}})
    assert time.monotonic() - started < 2  # Publish does not wait for the handler
    ssm = emulator.client("ssm")
    assert _parameter(ssm, parameter) == message
    seen = json.loads(_parameter(ssm, parameter + "-event"))
    assert seen["invokedArn"] == function_arn
    [record] = seen["event"]["Records"]
    assert record["EventSource"] == "aws:sns" and record["EventVersion"] == "1.0"
    assert record["EventSubscriptionArn"] == subscription
    notification = record["Sns"]
    assert notification["Type"] == "Notification" and notification["MessageId"] == published["MessageId"]
    assert notification["TopicArn"] == topic and notification["Subject"] == "custom resource"
    assert notification["Message"] == message
    assert notification["MessageAttributes"] == {"kind": {"Type": "String", "Value": "test"}}
    assert notification["SignatureVersion"] == "1" and notification["Timestamp"].endswith("Z")

    # The handler's run is the function's: its log lines are in its CloudWatch Logs group. The
    # runner writes them after the handler returns, so they may land just after its SSM write.
    logs = emulator.client("logs")
    deadline = time.monotonic() + 20
    while True:
        try:
            streams = logs.describe_log_streams(logGroupName=f"/aws/lambda/{name}")["logStreams"]
        except logs.exceptions.ResourceNotFoundException:
            streams = []
        if streams or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert streams


def test_sns_lambda_delivery_is_asynchronous_and_never_fails_the_publish(emulator):
    sns, topic, _, _ = _sns_subscribed_function(emulator, "sns-slow", {"index.js": """
        const { SSMClient, PutParameterCommand } = require('@aws-sdk/client-ssm');
        exports.handler = async (event) => {
          const message = event.Records[0].Sns.Message;
          if (message === 'fail') throw new Error('the handler failed');
          await new Promise((resolve) => setTimeout(resolve, 2000));
          await new SSMClient({}).send(new PutParameterCommand({
            Name: process.env.PARAMETER, Type: 'String', Overwrite: true, Value: message }));
        };
    """}, "nodejs20.x", "index.handler", "/sns/slow", "topic-slow")
    # A subscription to a function that does not exist, one of a runtime the emulator does not
    # run, and an SQS subscription on the same topic: only logged, and SQS still gets its copy.
    sns.subscribe(TopicArn=topic, Protocol="lambda",
                  Endpoint="arn:aws:lambda:us-east-1:123456789012:function:no-such-function")
    java = _function(emulator, "sns-java", {"x.txt": "not run"}, runtime="java21", handler="a.B::handle")
    sns.subscribe(TopicArn=topic, Protocol="lambda",
                  Endpoint=java.get_function(FunctionName="sns-java")["Configuration"]["FunctionArn"])
    sqs = emulator.client("sqs")
    queue = sqs.create_queue(QueueName="sns-copy")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)

    assert sns.publish(TopicArn=topic, Message="fail")["MessageId"]
    started = time.monotonic()
    sns.publish(TopicArn=topic, Message="slow but delivered")
    assert time.monotonic() - started < 1.5  # the handler sleeps 2 s: Publish did not wait
    ssm = emulator.client("ssm")
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name="/sns/slow")
    assert _parameter(ssm, "/sns/slow") == "slow but delivered"
    received = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    assert sorted(json.loads(m["Body"])["Message"] for m in received) == ["fail", "slow but delivered"]


def test_sns_filter_policy_and_message_structure_apply_to_lambda_subscriptions(emulator):
    sns, topic, subscription, _ = _sns_subscribed_function(
        emulator, "sns-filtered", {"index.py": SNS_PYTHON_HANDLER}, "python3.12", "index.handler",
        "/sns/filtered", "topic-filtered")
    sns.set_subscription_attributes(SubscriptionArn=subscription, AttributeName="FilterPolicy",
                                    AttributeValue=json.dumps({"kind": ["wanted"]}))
    sns.publish(TopicArn=topic, Message="filtered out",
                MessageAttributes={"kind": {"DataType": "String", "StringValue": "other"}})
    sns.publish(TopicArn=topic, MessageStructure="json",
                Message=json.dumps({"default": "the default", "lambda": "for lambda"}),
                MessageAttributes={"kind": {"DataType": "String", "StringValue": "wanted"}})
    ssm = emulator.client("ssm")
    assert _parameter(ssm, "/sns/filtered") == "for lambda"
    time.sleep(1)  # the filtered-out message, published first, would have been handled by now
    # One invocation only (each writes its own log stream), the one the filter policy let through.
    logs = emulator.client("logs")
    assert len(logs.describe_log_streams(logGroupName="/aws/lambda/sns-filtered")["logStreams"]) == 1
    assert ssm.get_parameter(Name="/sns/filtered")["Parameter"]["Value"] == "for lambda"


def test_an_sns_subscription_is_made_and_removed_through_cloud_control(emulator):
    # moto's CloudFormation has no model for it; the emulator subscribes and unsubscribes.
    cc, sns = emulator.client("cloudcontrol"), emulator.client("sns")
    topic = sns.create_topic(Name="subscribed")["TopicArn"]
    queue = emulator.client("sqs").create_queue(QueueName="subscriber")["QueueUrl"]
    endpoint = f"arn:aws:sqs:us-east-1:123456789012:subscriber"
    done = create(cc, "AWS::SNS::Subscription", {"TopicArn": topic, "Protocol": "sqs", "Endpoint": endpoint})
    assert done["OperationStatus"] == "SUCCESS", done
    listed = sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"]
    assert [s["SubscriptionArn"] for s in listed] == [done["Identifier"]]
    deleted = wait(cc, cc.delete_resource(TypeName="AWS::SNS::Subscription", Identifier=done["Identifier"])["ProgressEvent"])
    assert deleted["OperationStatus"] == "SUCCESS", deleted
    assert sns.list_subscriptions_by_topic(TopicArn=topic)["Subscriptions"] == []
    assert queue


# -- types destroyed with `DeletionPolicy: Snapshot` ------------------------------------------
# cdkd takes the snapshot itself (RDS CreateDBSnapshot / CreateDBClusterSnapshot, EC2
# CreateSnapshot) and then deletes through Cloud Control, whose delete takes none: a snapshot
# found after a destroy is cdkd's.

def _rds_instance_snapshots(emulator, identifier):
    snapshots = emulator.client("rds").describe_db_snapshots(DBInstanceIdentifier=identifier)["DBSnapshots"]
    return [(s["DBSnapshotIdentifier"], s["SnapshotType"], s["Status"]) for s in snapshots]


def _rds_cluster_snapshots(emulator, identifier):
    snapshots = emulator.client("rds").describe_db_cluster_snapshots(
        DBClusterIdentifier=identifier)["DBClusterSnapshots"]
    return [(s["DBClusterSnapshotIdentifier"], s["SnapshotType"], s["Status"]) for s in snapshots]


def _ec2_volume_snapshots(emulator, identifier):
    # Filtered by volume: moto's account also owns the snapshots of its canned AMIs.
    snapshots = emulator.client("ec2").describe_snapshots(
        Filters=[{"Name": "volume-id", "Values": [identifier]}])["Snapshots"]
    return [(s["SnapshotId"], "manual", s["State"]) for s in snapshots]


def _rds_instance_snapshot(emulator, identifier):
    rds = emulator.client("rds")
    snapshot = rds.create_db_snapshot(DBInstanceIdentifier=identifier,
                                      DBSnapshotIdentifier=f"{identifier}-final")["DBSnapshot"]
    return snapshot["DBSnapshotIdentifier"], snapshot["Status"]


def _rds_cluster_snapshot(emulator, identifier):
    rds = emulator.client("rds")
    snapshot = rds.create_db_cluster_snapshot(DBClusterIdentifier=identifier,
                                              DBClusterSnapshotIdentifier=f"{identifier}-final")["DBClusterSnapshot"]
    return snapshot["DBClusterSnapshotIdentifier"], snapshot["Status"]


def _ec2_volume_snapshot(emulator, identifier):
    snapshot = emulator.client("ec2").create_snapshot(VolumeId=identifier, Description="final")
    return snapshot["SnapshotId"], snapshot["State"]


SNAPSHOTTED_TYPES = {
    "AWS::RDS::DBInstance": dict(
        desired={"AllocatedStorage": "20", "DBInstanceClass": "db.t3.micro",
                 "DBInstanceIdentifier": "cdkd-snapshot-db", "Engine": "mysql",
                 "MasterUserPassword": "not-a-secret-1", "MasterUsername": "admin"},
        identifier_property="DBInstanceIdentifier",
        live=lambda e, i: [d["DBInstanceIdentifier"] for d in e.client("rds").describe_db_instances()["DBInstances"]],
        snapshot=_rds_instance_snapshot, snapshots=_rds_instance_snapshots,
        # moto answers the finished state at once; AWS passes through creating / pending.
        snapshot_status="available",
    ),
    "AWS::RDS::DBCluster": dict(
        desired={"DBClusterIdentifier": "cdkd-snapshot-cluster", "Engine": "aurora-mysql",
                 "MasterUserPassword": "not-a-secret-1", "MasterUsername": "admin"},
        identifier_property="DBClusterIdentifier",
        live=lambda e, i: [c["DBClusterIdentifier"] for c in e.client("rds").describe_db_clusters()["DBClusters"]],
        snapshot=_rds_cluster_snapshot, snapshots=_rds_cluster_snapshots,
        snapshot_status="available",
    ),
    "AWS::EC2::Volume": dict(
        desired={"AvailabilityZone": "us-east-1a", "Size": 1},
        identifier_property="VolumeId",
        live=lambda e, i: [v["VolumeId"] for v in e.client("ec2").describe_volumes()["Volumes"]],
        snapshot=_ec2_volume_snapshot, snapshots=_ec2_volume_snapshots,
        snapshot_status="completed",
    ),
}


@pytest.mark.parametrize("take_snapshot", [True, False], ids=["snapshot", "no-snapshot"])
@pytest.mark.parametrize("type_name", list(SNAPSHOTTED_TYPES))
def test_a_snapshot_taken_before_a_cloud_control_delete_is_the_only_one_left(emulator, type_name, take_snapshot):
    spec = SNAPSHOTTED_TYPES[type_name]
    cc = emulator.client("cloudcontrol")
    done = create(cc, type_name, spec["desired"])
    assert done["OperationStatus"] == "SUCCESS", done
    identifier = done["Identifier"]
    assert json.loads(done["ResourceModel"]) == {**spec["desired"], spec["identifier_property"]: identifier}
    assert spec["live"](emulator, identifier) == [identifier]

    taken = []
    if take_snapshot:
        name, status = spec["snapshot"](emulator, identifier)
        assert status == spec["snapshot_status"]
        taken = [(name, "manual", spec["snapshot_status"])]

    deleted = wait(cc, cc.delete_resource(TypeName=type_name, Identifier=identifier)["ProgressEvent"])
    assert deleted["OperationStatus"] == "SUCCESS", deleted
    assert spec["live"](emulator, identifier) == []
    # No final snapshot, no automated backup left: only the snapshot taken before the delete.
    assert spec["snapshots"](emulator, identifier) == taken
    with pytest.raises(cc.exceptions.ResourceNotFoundException):
        cc.get_resource(TypeName=type_name, Identifier=identifier)

    # Created again under the same identifier (a redeploy), then deleted again: nothing clashes
    # with what the first one left.
    if type_name != "AWS::EC2::Volume":
        again = create(cc, type_name, spec["desired"])
        assert again["OperationStatus"] == "SUCCESS", again
        gone = wait(cc, cc.delete_resource(TypeName=type_name, Identifier=identifier)["ProgressEvent"])
        assert gone["OperationStatus"] == "SUCCESS", gone
        assert spec["snapshots"](emulator, identifier) == taken


@pytest.mark.parametrize("type_name,identifier", [
    ("AWS::RDS::DBInstance", "cdkd-missing-db"),
    ("AWS::RDS::DBCluster", "cdkd-missing-cluster"),
    ("AWS::EC2::Volume", "vol-0123456789abcdef0"),
])
def test_deleting_a_missing_snapshotted_type_fails_with_not_found(emulator, type_name, identifier):
    cc = emulator.client("cloudcontrol")
    event = wait(cc, cc.delete_resource(TypeName=type_name, Identifier=identifier)["ProgressEvent"])
    assert event["OperationStatus"] == "FAILED"
    assert event["ErrorCode"] == "NotFound", event


def test_an_rds_db_cluster_answers_its_attributes_and_refuses_a_duplicate(emulator):
    cc = emulator.client("cloudcontrol")
    desired = SNAPSHOTTED_TYPES["AWS::RDS::DBCluster"]["desired"]
    assert create(cc, "AWS::RDS::DBCluster", desired)["OperationStatus"] == "SUCCESS"
    full = json.loads(cc.get_resource(TypeName="AWS::RDS::DBCluster", Identifier="cdkd-snapshot-cluster")
                      ["ResourceDescription"]["Properties"])
    cluster = emulator.client("rds").describe_db_clusters(DBClusterIdentifier="cdkd-snapshot-cluster")["DBClusters"][0]
    assert full["DBClusterArn"] == cluster["DBClusterArn"] == \
        "arn:aws:rds:us-east-1:123456789012:cluster:cdkd-snapshot-cluster"
    assert full["Endpoint.Address"] == cluster["Endpoint"]
    assert full["Endpoint.Port"] == "3306"
    assert full["ReadEndpoint.Address"] == cluster["ReaderEndpoint"]
    duplicate = create(cc, "AWS::RDS::DBCluster", desired)
    assert duplicate["OperationStatus"] == "FAILED"
    assert duplicate["ErrorCode"] == "AlreadyExists", duplicate


# -- CloudFormation registry: DescribeType from cfn-lint's schemas ----------------------------


def _describe_type_calls(emulator, method="GET", query=""):
    import urllib.request
    request = urllib.request.Request(emulator.endpoint + "/_emulator/describe-type-calls" + query, method=method)
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read())


def test_describe_type_answers_the_registry_schema_of_a_resource_type(emulator):
    cfn = emulator.client("cloudformation")
    described = cfn.describe_type(Type="RESOURCE", TypeName="AWS::SQS::Queue")
    assert described["Arn"] == "arn:aws:cloudformation:us-east-1::type/resource/AWS-SQS-Queue"
    assert described["Type"] == "RESOURCE"
    assert described["TypeName"] == "AWS::SQS::Queue"
    assert described["IsDefaultVersion"] is True
    assert described["ProvisioningType"] == "FULLY_MUTABLE"
    assert described["Visibility"] == "PUBLIC"
    assert described["DeprecatedStatus"] == "LIVE"
    assert described["LastUpdated"] == described["TimeCreated"]
    schema = json.loads(described["Schema"])
    assert schema["typeName"] == "AWS::SQS::Queue"
    assert schema["createOnlyProperties"] == ["/properties/FifoQueue", "/properties/QueueName"]
    assert schema["primaryIdentifier"] == ["/properties/QueueUrl"]
    assert schema["readOnlyProperties"] == ["/properties/QueueUrl", "/properties/Arn"]
    assert "VisibilityTimeout" in schema["properties"]
    # The version id is cfn-lint's hash of the schema: the same on every call and by Arn.
    version = described["DefaultVersionId"]
    assert len(version) == 16 and int(version, 16) >= 0
    by_arn = cfn.describe_type(Arn=described["Arn"])
    assert by_arn["DefaultVersionId"] == version and by_arn["Schema"] == described["Schema"]
    assert cfn.describe_type(Type="RESOURCE", TypeName="AWS::SQS::Queue", VersionId=version)["TypeName"] == \
        "AWS::SQS::Queue"


def test_describe_type_answers_the_real_create_only_properties_of_a_dynamodb_table(emulator):
    schema = json.loads(emulator.client("cloudformation").describe_type(
        Type="RESOURCE", TypeName="AWS::DynamoDB::Table")["Schema"])
    # As in AWS's schema: KeySchema is only conditionally create-only (the handler replaces the
    # table when it changes), so it is not in createOnlyProperties.
    assert schema["createOnlyProperties"] == ["/properties/TableName", "/properties/ImportSourceSpecification"]
    assert schema["conditionalCreateOnlyProperties"] == ["/properties/KeySchema"]
    assert schema["primaryIdentifier"] == ["/properties/TableName"]
    assert "/properties/Arn" in schema["readOnlyProperties"]


@pytest.mark.parametrize("type_name,provisioning", [
    ("AWS::Lambda::Function", "FULLY_MUTABLE"),
    ("AWS::EC2::KeyPair", "IMMUTABLE"),  # create and delete handlers, no update
    ("AWS::CDK::Metadata", "NON_PROVISIONABLE"),  # no handlers
    ("AWS::EC2::NetworkAclEntry", "NON_PROVISIONABLE"),  # no read handler
])
def test_describe_type_derives_the_provisioning_type_from_the_handlers(emulator, type_name, provisioning):
    described = emulator.client("cloudformation").describe_type(Type="RESOURCE", TypeName=type_name)
    assert described["ProvisioningType"] == provisioning


def test_describe_type_answers_in_the_region_the_request_was_signed_for(emulator):
    cfn = emulator.client("cloudformation", region="eu-west-1")
    described = cfn.describe_type(Arn="arn:aws:cloudformation:eu-west-1::type/resource/AWS-SNS-Topic")
    assert described["TypeName"] == "AWS::SNS::Topic"
    assert described["Arn"] == "arn:aws:cloudformation:eu-west-1::type/resource/AWS-SNS-Topic"
    assert json.loads(described["Schema"])["primaryIdentifier"] == ["/properties/TopicArn"]


@pytest.mark.parametrize("args", [
    {"Type": "RESOURCE", "TypeName": "AWS::Nope::Thing"},
    {"Arn": "arn:aws:cloudformation:us-east-1::type/resource/AWS-Nope-Thing"},
    {"Type": "RESOURCE", "TypeName": "AWS::SQS::Queue", "VersionId": "00000042"},
    {"Type": "MODULE", "TypeName": "AWS::SQS::Queue"},
])
def test_describe_type_of_an_unknown_type_is_type_not_found(emulator, args):
    cfn = emulator.client("cloudformation")
    with pytest.raises(cfn.exceptions.TypeNotFoundException) as raised:
        cfn.describe_type(**args)
    error = raised.value.response["Error"]
    name = args.get("TypeName", "AWS::Nope::Thing")
    assert error["Code"] == "TypeNotFoundException"
    assert error["Message"] == f"The type '{name}' cannot be found."
    assert error["Type"] == "Sender"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    assert raised.value.response["ResponseMetadata"]["RequestId"]


def test_describe_type_without_a_type_is_a_validation_error(emulator):
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        emulator.client("cloudformation").describe_type(TypeName="AWS::SQS::Queue")
    assert raised.value.response["Error"]["Code"] == "ValidationError"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_other_cloudformation_actions_still_reach_moto(emulator):
    cfn = emulator.client("cloudformation")
    template = {"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "through-moto"}}}}
    cfn.create_stack(StackName="moto-stack", TemplateBody=json.dumps(template))
    cfn.describe_type(Type="RESOURCE", TypeName="AWS::SQS::Queue")
    stacks = cfn.list_stacks()["StackSummaries"]
    assert [s["StackName"] for s in stacks] == ["moto-stack"]
    assert cfn.describe_stacks(StackName="moto-stack")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    assert emulator.client("sqs").get_queue_url(QueueName="through-moto")["QueueUrl"].endswith("/through-moto")
    assert emulator.get("/_emulator/stats")["cloudformation:ListStacks"] == 1


def test_describe_type_calls_are_counted_and_reset(emulator):
    cfn = emulator.client("cloudformation")
    assert _describe_type_calls(emulator) == {"calls": 0, "types": [], "notFound": []}  # the fixture's reset
    cfn.describe_type(Type="RESOURCE", TypeName="AWS::SQS::Queue")
    cfn.describe_type(Type="RESOURCE", TypeName="AWS::SNS::Topic")
    cfn.describe_type(Type="RESOURCE", TypeName="AWS::SQS::Queue")
    with pytest.raises(cfn.exceptions.TypeNotFoundException):
        cfn.describe_type(Type="RESOURCE", TypeName="AWS::Nope::Thing")
    cfn.list_stacks()  # not a DescribeType
    expected = {"calls": 4, "types": ["AWS::SQS::Queue", "AWS::SNS::Topic", "AWS::SQS::Queue", "AWS::Nope::Thing"],
                "notFound": ["AWS::Nope::Thing"]}
    assert _describe_type_calls(emulator) == expected
    assert _describe_type_calls(emulator, query="?accessKey=testing") == expected
    assert _describe_type_calls(emulator, query="?accessKey=other")["calls"] == 0
    assert emulator.get("/_emulator/stats")["cloudformation:DescribeType"] == 4
    # A fault answered instead of the registry is not a DescribeType answered.
    emulator.post("/_emulator/faults", {"rules": [
        {"service": "cloudformation", "action": "DescribeType", "code": "Throttling", "count": 1}]})
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        emulator.client("cloudformation", retries=0).describe_type(Type="RESOURCE", TypeName="AWS::SQS::Queue")
    assert raised.value.response["Error"]["Code"] == "Throttling"
    assert _describe_type_calls(emulator)["calls"] == 4
    assert _describe_type_calls(emulator, method="DELETE")["calls"] == 4  # answers the counts it cleared
    assert _describe_type_calls(emulator)["calls"] == 0
    cfn.describe_type(Type="RESOURCE", TypeName="AWS::SQS::Queue")
    emulator.post("/moto-api/reset", {})
    assert _describe_type_calls(emulator)["calls"] == 0


# -- Cloud Control reads SQS queues and SNS topics from their services --------------------------


def _properties(cc, type_name, identifier):
    return json.loads(cc.get_resource(TypeName=type_name, Identifier=identifier)
                      ["ResourceDescription"]["Properties"])


def test_get_resource_reads_a_queue_from_sqs_so_out_of_band_changes_and_deletes_show(emulator):
    cc, sqs = emulator.client("cloudcontrol"), emulator.client("sqs")
    done = create(cc, "AWS::SQS::Queue", {"QueueName": "drifting", "VisibilityTimeout": 30})
    assert done["OperationStatus"] == "SUCCESS", done
    url = done["Identifier"]
    assert _properties(cc, "AWS::SQS::Queue", url)["VisibilityTimeout"] == 30

    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "90"})
    full = _properties(cc, "AWS::SQS::Queue", url)
    assert full["VisibilityTimeout"] == 90 and isinstance(full["VisibilityTimeout"], int)
    assert full["QueueName"] == "drifting" and full["QueueUrl"] == url

    sqs.delete_queue(QueueUrl=url)
    with pytest.raises(cc.exceptions.ResourceNotFoundException):
        cc.get_resource(TypeName="AWS::SQS::Queue", Identifier=url)
    assert cc.list_resources(TypeName="AWS::SQS::Queue")["ResourceDescriptions"] == []


def test_get_resource_reads_a_topic_from_sns_so_out_of_band_changes_and_deletes_show(emulator):
    cc, sns = emulator.client("cloudcontrol"), emulator.client("sns")
    done = create(cc, "AWS::SNS::Topic", {"TopicName": "watched"})
    assert done["OperationStatus"] == "SUCCESS", done
    arn = done["Identifier"]
    assert "DisplayName" not in _properties(cc, "AWS::SNS::Topic", arn)

    sns.set_topic_attributes(TopicArn=arn, AttributeName="DisplayName", AttributeValue="changed")
    full = _properties(cc, "AWS::SNS::Topic", arn)
    assert full["DisplayName"] == "changed"
    assert full["TopicArn"] == arn and full["TopicName"] == "watched"

    sns.delete_topic(TopicArn=arn)
    with pytest.raises(cc.exceptions.ResourceNotFoundException):
        cc.get_resource(TypeName="AWS::SNS::Topic", Identifier=arn)
    assert cc.list_resources(TypeName="AWS::SNS::Topic")["ResourceDescriptions"] == []


def test_get_resource_finds_a_queue_made_through_the_sqs_api_by_its_url(emulator):
    cc, sqs = emulator.client("cloudcontrol"), emulator.client("sqs")
    url = sqs.create_queue(QueueName="made-by-sqs", Attributes={"VisibilityTimeout": "17"})["QueueUrl"]
    full = _properties(cc, "AWS::SQS::Queue", url)
    assert full["QueueName"] == "made-by-sqs"
    assert full["VisibilityTimeout"] == 17
    assert full["QueueUrl"] == url
    assert full["Arn"] == "arn:aws:sqs:us-east-1:123456789012:made-by-sqs"
    # Still a live read: a change through SQS shows.
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "18"})
    assert _properties(cc, "AWS::SQS::Queue", url)["VisibilityTimeout"] == 18
    # A queue that exists nowhere is still not found.
    missing = url.rsplit("/", 1)[0] + "/never-made"
    with pytest.raises(cc.exceptions.ResourceNotFoundException):
        cc.get_resource(TypeName="AWS::SQS::Queue", Identifier=missing)


# -- CloudFormation stacks: what cdkd's migration from a stack relies on -----------------------


def _template_of_size(size):
    """A JSON template of exactly `size` bytes, padded by a top-level Metadata string."""
    def template(padding):
        return json.dumps({
            "Metadata": {"Padding": "x" * padding},
            "Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "padded"}}},
        })
    base = len(template(0).encode())
    body = template(size - base)
    assert len(body.encode()) == size
    return body


def _refused_as_too_large(call):
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        call()
    error = raised.value.response["Error"]
    assert error["Code"] == "ValidationError", error
    assert "51200" in error["Message"], error
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_template_body_over_51200_bytes_is_refused_and_accepted_through_a_template_url(emulator):
    cfn, s3 = emulator.client("cloudformation"), emulator.client("s3")
    too_large = _template_of_size(51_201)
    _refused_as_too_large(lambda: cfn.create_stack(StackName="big", TemplateBody=too_large))
    _refused_as_too_large(lambda: cfn.create_change_set(
        StackName="big", ChangeSetName="big", ChangeSetType="CREATE", TemplateBody=too_large))
    assert [s["StackName"] for s in cfn.list_stacks()["StackSummaries"]] == []

    # At the limit: accepted inline.
    cfn.create_stack(StackName="at-limit", TemplateBody=_template_of_size(51_200))
    assert cfn.describe_stacks(StackName="at-limit")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"

    # The same template through S3.
    s3.create_bucket(Bucket="templates")
    s3.put_object(Bucket="templates", Key="big.json", Body=too_large.encode())
    template_url = "https://templates.s3.us-east-1.amazonaws.com/big.json"
    cfn.create_stack(StackName="big", TemplateURL=template_url)
    assert cfn.describe_stacks(StackName="big")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    assert "padded" in [t["TopicArn"].rsplit(":", 1)[-1] for t in emulator.client("sns").list_topics()["Topics"]]

    # UpdateStack: refused inline, accepted through S3.
    small = json.dumps({"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "small"}}}})
    cfn.create_stack(StackName="grows", TemplateBody=small)
    _refused_as_too_large(lambda: cfn.update_stack(StackName="grows", TemplateBody=too_large))
    assert cfn.describe_stacks(StackName="grows")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    cfn.update_stack(StackName="grows", TemplateURL=template_url)
    assert cfn.describe_stacks(StackName="grows")["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"
    # boto3 decodes a JSON template body.
    assert cfn.get_template(StackName="grows")["TemplateBody"] == json.loads(too_large)


def test_use_previous_value_keeps_a_parameter_that_took_its_template_default(emulator):
    cfn, ssm = emulator.client("cloudformation"), emulator.client("ssm")
    parameters = {
        "Greeting": {"Type": "String", "Default": "hello"},
        "Passed": {"Type": "String", "Default": "unused"},
    }

    def template(names):
        return json.dumps({"Parameters": parameters, "Resources": {
            f"P{i}": {"Type": "AWS::SSM::Parameter",
                      "Properties": {"Name": name, "Type": "String", "Value": {"Ref": ref}}}
            for i, (name, ref) in enumerate(names)}})

    cfn.create_stack(StackName="defaults", TemplateBody=template([("/greeting", "Greeting")]),
                     Parameters=[{"ParameterKey": "Passed", "ParameterValue": "given"}])
    cfn.update_stack(StackName="defaults",
                     TemplateBody=template([("/greeting", "Greeting"), ("/passed", "Passed")]),
                     Parameters=[{"ParameterKey": "Greeting", "UsePreviousValue": True},
                                 {"ParameterKey": "Passed", "UsePreviousValue": True}])
    stack = cfn.describe_stacks(StackName="defaults")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert {p["ParameterKey"]: p["ParameterValue"] for p in stack["Parameters"]} == \
        {"Greeting": "hello", "Passed": "given"}
    assert ssm.get_parameter(Name="/greeting")["Parameter"]["Value"] == "hello"
    assert ssm.get_parameter(Name="/passed")["Parameter"]["Value"] == "given"


def test_a_retain_policy_only_update_keeps_the_security_group_and_delete_leaves_it(emulator):
    cfn, ec2 = emulator.client("cloudformation"), emulator.client("ec2")
    # The VPC is not the stack's: as on AWS, a stack's own VPC could not be deleted with a
    # retained group still in it.
    vpc = ec2.create_vpc(CidrBlock="10.8.0.0/16")["Vpc"]["VpcId"]

    def template(policies):
        return json.dumps({"Resources": {
            "Group": {"Type": "AWS::EC2::SecurityGroup", **policies, "Properties": {
                "GroupDescription": "kept", "VpcId": vpc}},
        }})

    def physical_ids():
        resources = cfn.describe_stack_resources(StackName="retiring")["StackResources"]
        return {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources}

    cfn.create_stack(StackName="retiring", TemplateBody=template({}))
    before = physical_ids()
    assert before["Group"].startswith("sg-")
    cfn.update_stack(StackName="retiring", TemplateBody=template(
        {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}))
    assert cfn.describe_stacks(StackName="retiring")["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"
    assert physical_ids() == before
    assert [g["GroupId"] for g in ec2.describe_security_groups(GroupIds=[before["Group"]])["SecurityGroups"]] == \
        [before["Group"]]

    cfn.delete_stack(StackName="retiring")
    assert [g["GroupId"] for g in ec2.describe_security_groups(GroupIds=[before["Group"]])["SecurityGroups"]] == \
        [before["Group"]]


def test_a_role_s_inline_policy_from_a_template_reads_back_as_a_json_document(emulator):
    cfn, iam = emulator.client("cloudformation"), emulator.client("iam")
    document = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["sqs:SendMessage", "sqs:ReceiveMessage"], "Resource": "*"}]}
    trust = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
    template = {"Resources": {"Role": {"Type": "AWS::IAM::Role", "Properties": {
        "RoleName": "with-inline", "AssumeRolePolicyDocument": trust,
        "Policies": [{"PolicyName": "queues", "PolicyDocument": document}]}}}}
    cfn.create_stack(StackName="roles", TemplateBody=json.dumps(template))
    assert cfn.describe_stacks(StackName="roles")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    assert iam.list_role_policies(RoleName="with-inline")["PolicyNames"] == ["queues"]
    read = iam.get_role_policy(RoleName="with-inline", PolicyName="queues")["PolicyDocument"]
    assert isinstance(read, dict), read
    assert read == document


# -- Nested stacks, unnamed SSM parameters, and Cloud Control adopting SNS and SSM ------------


def _uploaded_template(s3, key, template, bucket="nested-templates"):
    """Uploads a template to S3 (making the bucket on first use); answers its TemplateURL."""
    if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(template).encode())
    return f"https://{bucket}.s3.us-east-1.amazonaws.com/{key}"


def _physical_ids(cfn, stack_name):
    resources = cfn.describe_stack_resources(StackName=stack_name)["StackResources"]
    return {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources}


def _queue_names(sqs):
    # moto answers ListQueues with the host that was asked, not the canonical one.
    return [url.rsplit("/", 1)[-1] for url in sqs.list_queues().get("QueueUrls", [])]


def _child_template(policies=None):
    # An unnamed queue: a re-created one would get another generated name, so another URL.
    return {
        "Resources": {"Queue": {"Type": "AWS::SQS::Queue", **(policies or {})}},
        "Outputs": {"QueueArn": {"Value": {"Fn::GetAtt": ["Queue", "Arn"]}}},
    }


def _parent_template(template_url, extra_resources=None, outputs=None):
    return json.dumps({
        "Resources": {"Child": {"Type": "AWS::CloudFormation::Stack",
                                "Properties": {"TemplateURL": template_url}},
                      **(extra_resources or {})},
        **({"Outputs": outputs} if outputs else {}),
    })


def test_a_nested_stack_is_updated_in_place_and_the_parent_s_delete_takes_it(emulator):
    cfn, s3, sqs = emulator.client("cloudformation"), emulator.client("s3"), emulator.client("sqs")
    first = _uploaded_template(s3, "child-v1.json", _child_template())
    cfn.create_stack(StackName="parent", TemplateBody=_parent_template(first))
    assert cfn.describe_stacks(StackName="parent")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    child = _physical_ids(cfn, "parent")["Child"]
    queue_url = _physical_ids(cfn, child)["Queue"]
    queue_name = queue_url.rsplit("/", 1)[-1]
    assert _queue_names(sqs) == [queue_name]

    # A new TemplateURL whose template only adds a Retain policy to the child's resource.
    retained = _child_template({"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
    second = _uploaded_template(s3, "child-v2.json", retained)
    cfn.update_stack(StackName="parent", TemplateBody=_parent_template(second))
    assert cfn.describe_stacks(StackName="parent")["Stacks"][0]["StackStatus"] == "UPDATE_COMPLETE"
    # The same child stack, its queue untouched; the child holds the new template.
    assert _physical_ids(cfn, "parent")["Child"] == child
    assert _physical_ids(cfn, child) == {"Queue": queue_url}
    assert cfn.get_template(StackName=child)["TemplateBody"] == retained
    assert _queue_names(sqs) == [queue_name]

    cfn.delete_stack(StackName="parent")
    statuses = {}
    for summary in cfn.list_stacks()["StackSummaries"]:
        statuses.setdefault(summary["StackName"], []).append(summary["StackStatus"])
    assert statuses == {"parent": ["DELETE_COMPLETE"], child: ["DELETE_COMPLETE"]}
    # The Retain policy the update put in keeps the queue.
    assert _queue_names(sqs) == [queue_name]
    assert sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]


def test_get_att_outputs_of_a_nested_stack_answers_the_child_s_output(emulator):
    cfn, s3, ssm = emulator.client("cloudformation"), emulator.client("s3"), emulator.client("ssm")
    url = _uploaded_template(s3, "child.json", _child_template())
    output = {"Fn::GetAtt": ["Child", "Outputs.QueueArn"]}
    cfn.create_stack(StackName="reads-child", TemplateBody=_parent_template(
        url,
        extra_resources={"ChildArn": {"Type": "AWS::SSM::Parameter", "Properties": {
            "Name": "/child/queue-arn", "Type": "String", "Value": output}}},
        outputs={"ChildQueueArn": {"Value": output}}))
    assert cfn.describe_stacks(StackName="reads-child")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"

    child = _physical_ids(cfn, "reads-child")["Child"]
    child_outputs = {o["OutputKey"]: o["OutputValue"]
                     for o in cfn.describe_stacks(StackName=child)["Stacks"][0]["Outputs"]}
    queue_arn = child_outputs["QueueArn"]
    assert queue_arn.startswith("arn:aws:sqs:us-east-1:123456789012:")
    parent_outputs = cfn.describe_stacks(StackName="reads-child")["Stacks"][0]["Outputs"]
    assert {o["OutputKey"]: o["OutputValue"] for o in parent_outputs} == {"ChildQueueArn": queue_arn}
    assert ssm.get_parameter(Name="/child/queue-arn")["Parameter"]["Value"] == queue_arn


def test_an_unnamed_ssm_parameter_in_a_template_gets_a_generated_name(emulator):
    cfn, ssm = emulator.client("cloudformation"), emulator.client("ssm")
    template = {"Resources": {"Setting": {"Type": "AWS::SSM::Parameter",
                                          "Properties": {"Type": "String", "Value": "on"}}}}
    cfn.create_stack(StackName="unnamed", TemplateBody=json.dumps(template))
    assert cfn.describe_stacks(StackName="unnamed")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    name = _physical_ids(cfn, "unnamed")["Setting"]
    assert name
    parameter = ssm.get_parameter(Name=name)["Parameter"]
    assert parameter["Name"] == name
    assert parameter["Value"] == "on" and parameter["Type"] == "String"


def test_get_resource_finds_a_topic_made_through_the_sns_api_by_its_arn(emulator):
    cc, sns = emulator.client("cloudcontrol"), emulator.client("sns")
    arn = sns.create_topic(Name="made-by-sns")["TopicArn"]
    full = _properties(cc, "AWS::SNS::Topic", arn)
    assert full["TopicArn"] == arn and full["TopicName"] == "made-by-sns"
    # Still a live read: a change through SNS shows.
    sns.set_topic_attributes(TopicArn=arn, AttributeName="DisplayName", AttributeValue="shown")
    assert _properties(cc, "AWS::SNS::Topic", arn)["DisplayName"] == "shown"
    with pytest.raises(cc.exceptions.ResourceNotFoundException):
        cc.get_resource(TypeName="AWS::SNS::Topic", Identifier=arn.rsplit(":", 1)[0] + ":never-made")


def test_get_resource_finds_a_parameter_made_through_the_ssm_api_by_its_name(emulator):
    cc, ssm = emulator.client("cloudcontrol"), emulator.client("ssm")
    ssm.put_parameter(Name="/made/by-ssm", Type="String", Value="given")
    full = _properties(cc, "AWS::SSM::Parameter", "/made/by-ssm")
    assert {k: full[k] for k in ("Name", "Type", "Value")} == \
        {"Name": "/made/by-ssm", "Type": "String", "Value": "given"}
    with pytest.raises(cc.exceptions.ResourceNotFoundException):
        cc.get_resource(TypeName="AWS::SSM::Parameter", Identifier="/never/made")


def test_queue_urls_have_aws_form_whatever_endpoint_was_asked(emulator):
    sqs = emulator.client("sqs")
    url = sqs.create_queue(QueueName="url-form")["QueueUrl"]
    assert url == "https://sqs.us-east-1.amazonaws.com/123456789012/url-form"
    # The URL names the queue; requests still go to the emulator.
    sqs.send_message(QueueUrl=url, MessageBody="m")
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "m"
    assert sqs.get_queue_url(QueueName="url-form")["QueueUrl"] == url


def test_an_input_transformer_quotes_strings_as_eventbridge_does(emulator):
    sqs, events = emulator.client("sqs"), emulator.client("events")
    url = sqs.create_queue(QueueName="transformed")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="transform", EventPattern=json.dumps({"source": ["emu.test"]}))
    events.put_targets(Rule="transform", Targets=[
        {"Id": "json", "Arn": arn, "InputTransformer": {
            "InputPathsMap": {"kind": "$.detail-type", "id": "$.detail.id", "missing": "$.detail.nope"},
            "InputTemplate": '{"kind": <kind>, "text": "order <id> placed", "missing": <missing>}'}},
    ])
    answer = events.put_events(Entries=[{"Source": "emu.test", "DetailType": "Placed", "Detail": '{"id": "o-1"}'}])
    assert answer["FailedEntryCount"] == 0
    bodies = [json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]]
    # A string outside quotes arrives quoted; inside quotes, as text; an unmatched path is null.
    assert bodies == [{"kind": "Placed", "text": "order o-1 placed", "missing": None}]


def test_deleting_a_vpc_is_refused_while_it_holds_things_and_takes_its_default_acl(emulator):
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"]
    group = ec2.create_security_group(VpcId=vpc, GroupName="kept", Description="d")["GroupId"]
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
    for blocker, remove in [
        ("gateway", lambda: ec2.detach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)),
        ("group", lambda: ec2.delete_security_group(GroupId=group)),
    ]:
        with pytest.raises(ec2.exceptions.ClientError) as refused:
            ec2.delete_vpc(VpcId=vpc)
        assert refused.value.response["Error"]["Code"] == "DependencyViolation", blocker
        remove()
    acls = lambda: [a["NetworkAclId"] for a in ec2.describe_network_acls(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["NetworkAcls"]]
    assert len(acls()) == 1  # the default one
    ec2.delete_vpc(VpcId=vpc)
    assert acls() == []


def _cbor_call(endpoint, operation, params):
    """One CloudWatch call over Smithy RPC v2 CBOR, as the Rust SDK sends it (boto3 picks JSON)."""
    import urllib.error
    import urllib.request

    import botocore.session
    from botocore import parsers, serialize
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    model = botocore.session.get_session().get_service_model("cloudwatch").operation_model(operation)
    serialized = serialize.create_serializer("smithy-rpc-v2-cbor").serialize_to_request(params, model)
    request = AWSRequest(method="POST", url=endpoint + serialized["url_path"], data=serialized["body"],
                         headers=serialized["headers"])
    SigV4Auth(Credentials("testing", "testing"), "monitoring", "us-east-1").add_auth(request)
    prepared = urllib.request.Request(request.url, data=request.body, headers=dict(request.headers), method="POST")
    try:
        with urllib.request.urlopen(prepared) as answer:
            status, headers, body = answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as err:
        status, headers, body = err.code, dict(err.headers), err.read()
    assert headers.get("smithy-protocol") == "rpc-v2-cbor", headers
    return parsers.RpcV2CBORParser().parse(
        {"body": body, "headers": headers, "status_code": status}, model.output_shape)


def test_cloudwatch_answers_rpc_v2_cbor_through_moto(emulator):
    _cbor_call(emulator.endpoint, "PutMetricAlarm", dict(
        AlarmName="depth", MetricName="ApproximateNumberOfMessagesVisible", Namespace="AWS/SQS",
        Statistic="Maximum", Period=60, EvaluationPeriods=3, Threshold=100.0,
        ComparisonOperator="GreaterThanOrEqualToThreshold",
        Dimensions=[{"Name": "QueueName", "Value": "q"}]))
    alarm = _cbor_call(emulator.endpoint, "DescribeAlarms", {"AlarmNames": ["depth"]})["MetricAlarms"][0]
    assert (alarm["Threshold"], alarm["Dimensions"]) == (100.0, [{"Name": "QueueName", "Value": "q"}])
    assert alarm["AlarmConfigurationUpdatedTimestamp"].year >= 2024  # a timestamp survives both ways
    # The same alarm through moto's own protocol: one alarm, not two worlds.
    assert emulator.client("cloudwatch").describe_alarms(AlarmNames=["depth"])["MetricAlarms"][0]["Threshold"] == 100.0
    refused = _cbor_call(emulator.endpoint, "GetDashboard", {"DashboardName": "nope"})
    assert refused["Error"]["Code"] == "ResourceNotFound"


def test_deleting_a_missing_network_acl_entry_is_not_found(emulator):
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.78.0.0/16")["Vpc"]["VpcId"]
    acl = ec2.create_network_acl(VpcId=vpc)["NetworkAcl"]["NetworkAclId"]
    with pytest.raises(ec2.exceptions.ClientError) as refused:
        ec2.delete_network_acl_entry(NetworkAclId=acl, RuleNumber=100, Egress=False)
    assert refused.value.response["Error"]["Code"] == "InvalidNetworkAclEntry.NotFound"


def test_a_nat_gateway_is_deleting_then_deleted_taking_its_interface_and_holding_its_subnet_and_eip(emulator):
    import server

    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.78.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.78.1.0/24")["Subnet"]["SubnetId"]
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=subnet, AllocationId=allocation)["NatGateway"]["NatGatewayId"]
    interfaces = lambda: [e["NetworkInterfaceId"] for e in ec2.describe_network_interfaces(
        Filters=[{"Name": "subnet-id", "Values": [subnet]}])["NetworkInterfaces"]]
    assert len(interfaces()) == 1
    for call, code in [(lambda: ec2.delete_subnet(SubnetId=subnet), "DependencyViolation"),
                       (lambda: ec2.release_address(AllocationId=allocation), "InvalidIPAddress.InUse")]:
        with pytest.raises(ec2.exceptions.ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == code
    ec2.delete_nat_gateway(NatGatewayId=nat)
    state = lambda: ec2.describe_nat_gateways(NatGatewayIds=[nat])["NatGateways"][0]["State"]
    assert state() == "deleting"
    time.sleep(server.NAT_DELETE_SECONDS + 0.2)
    assert state() == "deleted"
    assert interfaces() == []
    ec2.release_address(AllocationId=allocation)
    ec2.delete_subnet(SubnetId=subnet)
    with pytest.raises(ec2.exceptions.ClientError) as unknown:
        ec2.delete_nat_gateway(NatGatewayId="nat-0000000000000000a")
    assert unknown.value.response["Error"]["Code"] == "NatGatewayNotFound"


def test_a_rule_from_another_group_keeps_its_description(emulator):
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.79.0.0/16")["Vpc"]["VpcId"]
    db = ec2.create_security_group(VpcId=vpc, GroupName="db", Description="db")["GroupId"]
    app = ec2.create_security_group(VpcId=vpc, GroupName="app", Description="app")["GroupId"]
    ec2.authorize_security_group_ingress(GroupId=db, IpPermissions=[{
        "IpProtocol": "tcp", "FromPort": 5432, "ToPort": 5432,
        "UserIdGroupPairs": [{"GroupId": app, "Description": "postgres from app"}]}])
    rules = ec2.describe_security_group_rules(Filters=[{"Name": "group-id", "Values": [db]}])["SecurityGroupRules"]
    assert [r.get("Description") for r in rules if not r["IsEgress"]] == ["postgres from app"]


def test_invoking_a_function_that_does_not_exist_is_resource_not_found(emulator):
    aws_lambda = emulator.client("lambda")
    with pytest.raises(aws_lambda.exceptions.ResourceNotFoundException):
        aws_lambda.invoke(FunctionName="arn:aws:lambda:us-east-1:123456789012:function:gone", Payload=b"{}")


def test_a_fault_rule_can_match_the_request_body_and_lambda_faults_are_json(emulator):
    emulator.post("/_emulator/faults", {"rules": [{
        "service": "lambda", "method": "POST", "pathContains": "/functions", "bodyContains": "refused-fn",
        "status": 400, "code": "InvalidParameterValueException", "message": "no"}]})
    _function(emulator, "accepted-fn", {"index.js": "exports.handler = async () => 1;"})
    with pytest.raises(emulator.client("lambda").exceptions.InvalidParameterValueException):
        _function(emulator, "refused-fn", {"index.js": "exports.handler = async () => 1;"})
    assert emulator.get("/_emulator/faults")["rules"][0]["hits"] == 1


def test_a_vpc_function_has_interfaces_that_hold_its_subnets_and_group_until_released(emulator):
    import server

    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.80.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.80.{i}.0/24")["Subnet"]["SubnetId"] for i in (1, 2)]
    group = ec2.create_security_group(VpcId=vpc, GroupName="fn", Description="fn")["GroupId"]
    aws_lambda = _function(emulator, "in-vpc", {"index.js": "exports.handler = async () => 1;"},
                           VpcConfig={"SubnetIds": subnets, "SecurityGroupIds": [group]})
    interfaces = lambda: ec2.describe_network_interfaces(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["NetworkInterfaces"]
    assert sorted(e["SubnetId"] for e in interfaces()) == sorted(subnets)
    assert all(e["InterfaceType"] == "lambda" and e["Description"].startswith("AWS Lambda VPC ENI-in-vpc-")
               for e in interfaces())
    aws_lambda.delete_function(FunctionName="in-vpc")
    for call in (lambda: ec2.delete_subnet(SubnetId=subnets[0]), lambda: ec2.delete_security_group(GroupId=group)):
        with pytest.raises(ec2.exceptions.ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == "DependencyViolation"
    time.sleep(server.LAMBDA_ENI_RELEASE_SECONDS + 0.2)
    assert interfaces() == []
    ec2.delete_security_group(GroupId=group)
    for subnet in subnets:
        ec2.delete_subnet(SubnetId=subnet)


def test_a_stream_consumer_name_is_taken_once_and_consumers_keep_tags(emulator):
    kinesis = emulator.client("kinesis")
    kinesis.create_stream(StreamName="consumed", ShardCount=1)
    stream = kinesis.describe_stream_summary(StreamName="consumed")["StreamDescriptionSummary"]["StreamARN"]
    consumer = kinesis.register_stream_consumer(StreamARN=stream, ConsumerName="reader",
                                                Tags={"cdkd:create-token": "t1"})["Consumer"]["ConsumerARN"]
    with pytest.raises(kinesis.exceptions.ResourceInUseException):
        kinesis.register_stream_consumer(StreamARN=stream, ConsumerName="reader")
    assert len(kinesis.list_stream_consumers(StreamARN=stream)["Consumers"]) == 1
    kinesis.tag_resource(ResourceARN=consumer, Tags={"team": "data"})
    kinesis.untag_resource(ResourceARN=consumer, TagKeys=["cdkd:create-token"])
    assert kinesis.list_tags_for_resource(ResourceARN=consumer)["Tags"] == [{"Key": "team", "Value": "data"}]


def test_a_metric_filter_put_again_replaces_itself(emulator):
    logs = emulator.client("logs")
    logs.create_log_group(logGroupName="/filtered")
    for pattern in ("ERROR", "WARN"):
        logs.put_metric_filter(logGroupName="/filtered", filterName="problems", filterPattern=pattern,
                               metricTransformations=[{"metricName": "Problems", "metricNamespace": "App",
                                                       "metricValue": "1"}])
    filters = logs.describe_metric_filters(logGroupName="/filtered")["metricFilters"]
    assert [(f["filterName"], f["filterPattern"]) for f in filters] == [("problems", "WARN")]


def test_a_version_is_published_again_only_after_a_change(emulator):
    aws_lambda = _function(emulator, "versioned", {"index.py": "def handler(event, context):\n    return 1\n"},
                           runtime="python3.12", handler="index.handler")
    first = aws_lambda.publish_version(FunctionName="versioned")["Version"]
    # An update that changes nothing publishes nothing new.
    aws_lambda.update_function_configuration(FunctionName="versioned", Timeout=3)
    assert aws_lambda.publish_version(FunctionName="versioned")["Version"] == first
    aws_lambda.update_function_configuration(FunctionName="versioned", Timeout=9)
    assert aws_lambda.publish_version(FunctionName="versioned")["Version"] != first


def test_inflight_counts_requests_being_answered(emulator):
    assert emulator.get("/_emulator/inflight") == {"inFlight": 0}


def test_listing_the_versions_of_a_prefix_reads_only_that_prefix(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="versions-of-a-prefix")
    s3.put_bucket_versioning(Bucket="versions-of-a-prefix", VersioningConfiguration={"Status": "Enabled"})
    for body in (b"1", b"2", b"3"):
        s3.put_object(Bucket="versions-of-a-prefix", Key="a/key", Body=body)
    s3.put_object(Bucket="versions-of-a-prefix", Key="b/key", Body=b"x")
    s3.delete_object(Bucket="versions-of-a-prefix", Key="b/key")
    listed = s3.list_object_versions(Bucket="versions-of-a-prefix", Prefix="a/")
    assert [(v["Key"], v["IsLatest"]) for v in listed["Versions"]] == [("a/key", True), ("a/key", False), ("a/key", False)]
    assert "DeleteMarkers" not in listed
    everything = s3.list_object_versions(Bucket="versions-of-a-prefix")
    assert len(everything["Versions"]) == 4 and len(everything["DeleteMarkers"]) == 1
