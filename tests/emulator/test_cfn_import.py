"""CloudFormation resource import (IMPORT change sets), as `cdkd export` uses it: what the emulator
refuses as AWS does (cfn_import.py), how an import adopts the resources made before it, and the
UPDATE change set that follows it (Outputs restored, resources that could not be imported created).

The refusal messages are AWS's own for the same requests."""

import io
import json
import re
import zipfile

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}


def _refused(call):
    """The ValidationError message a call is refused with (HTTP 400, query-protocol XML error)."""
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        call()
    response = raised.value.response
    assert response["Error"]["Code"] == "ValidationError", response["Error"]
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert response["Error"].get("Type") == "Sender"
    return response["Error"]["Message"]


def _import(cfn, stack, template, to_import, name="imp", **kwargs):
    body = {"TemplateBody": json.dumps(template)} if template is not None else {}
    return cfn.create_change_set(StackName=stack, ChangeSetName=name, ChangeSetType="IMPORT",
                                 ResourcesToImport=to_import, **body, **kwargs)


def _queue_entry(url, logical_id="Queue"):
    return {"ResourceType": "AWS::SQS::Queue", "LogicalResourceId": logical_id,
            "ResourceIdentifier": {"QueueUrl": url}}


def _queue_resource(name, **extra):
    return {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain", "Properties": {"QueueName": name}, **extra}


def _no_stack(cfn, stack):
    message = _refused(lambda: cfn.describe_stacks(StackName=stack))
    assert message == f"Stack with id {stack} does not exist"


@pytest.fixture()
def queue(emulator):
    """A queue made through SQS, as cdkd makes it; answers (cfn, url, template, to_import)."""
    url = emulator.client("sqs").create_queue(QueueName="exported")["QueueUrl"]
    template = {"Resources": {"Queue": _queue_resource("exported")}}
    return emulator.client("cloudformation"), url, template, [_queue_entry(url)]


# -- refused at CreateChangeSet, as AWS refuses them: no stack, no change set is left -----------

def _case(name):
    """(template, to_import) for one refusal, built from the queue fixture's."""
    def build(url, template, to_import):
        if name == "no-resources-to-import":
            return template, []
        if name == "duplicate":
            return template, to_import + to_import
        if name == "not-in-template":
            return template, [_queue_entry(url, "Missing")]
        if name == "queue-name-key":
            return template, [{**to_import[0], "ResourceIdentifier": {"QueueName": "exported"}}]
        if name == "extra-key":
            return template, [{**to_import[0], "ResourceIdentifier": {"QueueUrl": url, "Bogus": "x"}}]
        if name == "wrong-key-and-type":
            return template, [{**to_import[0], "ResourceType": "AWS::SNS::Topic"}]
        if name == "type-mismatch":
            return template, [{**to_import[0], "ResourceType": "AWS::SNS::Topic",
                               "ResourceIdentifier": {"TopicArn": "arn:aws:sns:us-east-1:123456789012:t"}}]
        if name == "not-importable":
            policy = {"Type": "AWS::IAM::Policy", "DeletionPolicy": "Retain", "Properties": {
                "PolicyName": "p", "Roles": ["r"], "PolicyDocument": {"Version": "2012-10-17", "Statement": []}}}
            return ({"Resources": {**template["Resources"], "Policy": policy}},
                    to_import + [{"ResourceType": "AWS::IAM::Policy", "LogicalResourceId": "Policy",
                                  "ResourceIdentifier": {"Id": "p"}}])
        if name == "topic-policy":
            policy = {"Type": "AWS::SNS::TopicPolicy", "DeletionPolicy": "Retain", "Properties": {
                "Topics": ["arn:aws:sns:us-east-1:123456789012:t"], "PolicyDocument": {}}}
            return ({"Resources": {**template["Resources"], "TopicPolicy": policy}},
                    to_import + [{"ResourceType": "AWS::SNS::TopicPolicy", "LogicalResourceId": "TopicPolicy",
                                  "ResourceIdentifier": {"Id": "x"}}])
        if name == "unlisted":
            extra = {"Type": "AWS::SSM::Parameter", "Properties": {"Type": "String", "Value": "v"}}
            return {"Resources": {**template["Resources"], "Setting": extra}}, to_import
        if name == "cdk-metadata":
            extra = {"Type": "AWS::CDK::Metadata", "Properties": {"Analytics": "v2:deflate64:x"}}
            return {"Resources": {**template["Resources"], "CDKMetadata": extra}}, to_import
        if name == "no-deletion-policy":
            return {"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "exported"}}}}, \
                to_import
        if name == "outputs":
            return {**template, "Outputs": {"Url": {"Value": {"Ref": "Queue"}}}}, to_import
        raise AssertionError(name)
    return build


REFUSALS = {
    "no-resources-to-import": "Must Provide at least one resource to import",
    "duplicate": "Every resource to import must have unique LogicalResourceId",
    "not-in-template": "The logical resource ids [Missing] provided in ResourceToImport do not exist in the template.",
    "queue-name-key": "Invalid resource identifier for resource type AWS::SQS::Queue. Expected [QueueUrl]",
    "extra-key": "Invalid resource identifier for resource type AWS::SQS::Queue. Expected [QueueUrl]",
    # Two faults: AWS names the identifier before the type.
    "wrong-key-and-type": "Invalid resource identifier for resource type AWS::SNS::Topic. Expected [TopicArn]",
    "type-mismatch": ("Resource type of [Queue] passed in ResourceToImport does not match with resource type "
                      "defined in the template. Resource type in ResourceToImport: AWS::SNS::Topic; Resource type "
                      "in Template: AWS::SQS::Queue."),
    "not-importable": "ResourceTypes [AWS::IAM::Policy] are not supported for Import",
    "topic-policy": "ResourceTypes [AWS::SNS::TopicPolicy] are not supported for Import",
    "unlisted": "Resources [Setting] is missing from ResourceToImport list",
    "cdk-metadata": "Resources [CDKMetadata] is missing from ResourceToImport list",
    "no-deletion-policy": ("The following resources to import [Queue] must have DeletionPolicy attribute specified "
                           "in the template."),
    "outputs": "As part of the import operation, you cannot modify or add [Outputs]",
}


def test_an_import_aws_refuses_is_refused_and_leaves_no_stack(queue):
    # One emulator state for every case: a refusal changes nothing.
    cfn, url, template, to_import = queue
    for case, message in REFUSALS.items():
        body, entries = _case(case)(url, json.loads(json.dumps(template)), json.loads(json.dumps(to_import)))
        assert (case, _refused(lambda: _import(cfn, "refused", body, entries))) == (case, message)
        _no_stack(cfn, "refused")
        assert cfn.list_change_sets(StackName="refused")["Summaries"] == [], case


def test_an_import_needs_the_ssm_parameters_its_template_reads(queue, emulator):
    # A CDK app's template reads its bootstrap version from SSM; AWS resolves it at CreateChangeSet.
    cfn, url, template, to_import = queue
    template = {**template, "Parameters": {"BootstrapVersion": {
        "Type": "AWS::SSM::Parameter::Value<String>", "Default": "/cdk-bootstrap/hnb659fds/version"}}}
    assert _refused(lambda: _import(cfn, "bootstrapped", template, to_import)) == (
        "Unable to fetch parameters [/cdk-bootstrap/hnb659fds/version] from parameter store for this account.")
    _no_stack(cfn, "bootstrapped")
    emulator.client("ssm").put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Type="String", Value="21")
    cfn.execute_change_set(ChangeSetName=_import(cfn, "bootstrapped", template, to_import)["Id"])
    stack = cfn.describe_stacks(StackName="bootstrapped")["Stacks"][0]
    assert stack["StackStatus"] == "IMPORT_COMPLETE"
    assert stack["Parameters"] == [{"ParameterKey": "BootstrapVersion", "ParameterValue": "21"}]


def test_an_import_without_an_identifier_is_refused(queue, emulator):
    # botocore refuses an empty identifier map itself; AWS answers the request with this.
    cfn, url, template, to_import = queue
    unvalidated = boto3.client("cloudformation", endpoint_url=emulator.endpoint, region_name="us-east-1",
                               aws_access_key_id="testing", aws_secret_access_key="testing",
                               config=Config(parameter_validation=False, retries={"max_attempts": 1}))
    message = _refused(lambda: _import(unvalidated, "refused", template, [{**to_import[0], "ResourceIdentifier": {}}]))
    assert message == ("1 validation error detected: Value null at 'resourcesToImport.1.member.resourceIdentifier' "
                       "failed to satisfy constraint: Member must not be null")
    _no_stack(cfn, "refused")


def test_an_identifier_must_name_the_type_s_primary_identifier(emulator):
    # The registry schema's primaryIdentifier, in its order; not the CloudFormation console's names.
    cfn = emulator.client("cloudformation")
    for type_name, identifier, expected in [
            ("AWS::EC2::SecurityGroup", {"GroupId": "sg-1"}, "[Id]"),
            ("AWS::EC2::Route", {"RouteTableId": "rtb-1"}, "[RouteTableId, CidrBlock]"),
            ("AWS::EC2::VPCGatewayAttachment", {"VpcId": "vpc-1"}, "[AttachmentType, VpcId]"),
            ("AWS::Lambda::Permission", {"FunctionName": "f"}, "[FunctionName, Id]"),
            ("AWS::IAM::Role", {"Arn": "arn:aws:iam::123456789012:role/r"}, "[RoleName]")]:
        template = {"Resources": {"R": {"Type": type_name, "DeletionPolicy": "Retain", "Properties": {}}}}
        to_import = [{"ResourceType": type_name, "LogicalResourceId": "R", "ResourceIdentifier": identifier}]
        assert _refused(lambda: _import(cfn, "ids", template, to_import)) == \
            f"Invalid resource identifier for resource type {type_name}. Expected {expected}"
    _no_stack(cfn, "ids")


def test_an_import_template_body_over_51200_bytes_is_refused(queue):
    cfn, url, template, to_import = queue
    padded = {**template, "Metadata": {"Padding": "x" * 51_200}}
    assert "Member must have length less than or equal to 51200" in _refused(
        lambda: _import(cfn, "big", padded, to_import))
    _no_stack(cfn, "big")


def test_an_import_template_url_is_read_from_the_emulator_s_s3(queue, emulator):
    cfn, url, template, to_import = queue
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="exports")
    s3.put_object(Bucket="exports", Key="stacks/exported.json", Body=json.dumps(template).encode())
    for n, template_url in enumerate([
            f"{emulator.endpoint}/exports/stacks/exported.json",  # path-style, the emulator's own address
            "https://exports.s3.us-east-1.amazonaws.com/stacks/exported.json",
            "https://exports.s3.amazonaws.com/stacks/exported.json",
            "https://s3.us-east-1.amazonaws.com/exports/stacks/exported.json"]):
        created = _import(cfn, "by-url", None, to_import, name=f"url{n}", TemplateURL=template_url)
        described = cfn.describe_change_set(ChangeSetName=created["Id"])
        assert described["Status"] == "CREATE_COMPLETE", (template_url, described)
        assert [c["ResourceChange"]["Action"] for c in described["Changes"]] == ["Import"]
    missing = _refused(lambda: _import(cfn, "by-url-2", None, to_import,
                                       TemplateURL=f"{emulator.endpoint}/exports/stacks/nope.json"))
    assert missing.startswith("S3 error: The specified key does not exist."), missing
    assert _refused(lambda: _import(cfn, "by-url-2", None, to_import,
                                    TemplateURL="https://example.com/exported.json")) == \
        "TemplateURL must be a supported URL."
    _no_stack(cfn, "by-url-2")
    # The same reading serves CreateStack.
    cfn.create_stack(StackName="from-url", TemplateURL=f"{emulator.endpoint}/exports/stacks/exported.json")
    assert cfn.describe_stacks(StackName="from-url")["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"


# -- accepted, then FAILED: the identifier names nothing, or a stack holds it already -----------

def _missing(emulator, kind):
    """(type, identifier, template properties, the value AWS names) of a resource that does not exist."""
    account = "123456789012"
    if kind == "queue":
        url = f"{emulator.endpoint}/{account}/ghost"
        return "AWS::SQS::Queue", {"QueueUrl": url}, {"QueueName": "ghost"}, url
    if kind == "topic":
        arn = f"arn:aws:sns:us-east-1:{account}:ghost"
        return "AWS::SNS::Topic", {"TopicArn": arn}, {"TopicName": "ghost"}, arn
    if kind == "parameter":
        return "AWS::SSM::Parameter", {"Name": "/ghost"}, {"Name": "/ghost", "Type": "String", "Value": "v"}, "/ghost"
    if kind == "role":
        return "AWS::IAM::Role", {"RoleName": "ghost"}, {"RoleName": "ghost", "AssumeRolePolicyDocument": TRUST}, "ghost"
    if kind == "function":
        return "AWS::Lambda::Function", {"FunctionName": "ghost"}, {"FunctionName": "ghost"}, "ghost"
    if kind == "log-group":
        return "AWS::Logs::LogGroup", {"LogGroupName": "/ghost"}, {"LogGroupName": "/ghost"}, "/ghost"
    if kind == "table":
        return "AWS::DynamoDB::Table", {"TableName": "ghost"}, {"TableName": "ghost"}, "ghost"
    if kind == "vpc":
        return "AWS::EC2::VPC", {"VpcId": "vpc-0ghost"}, {"CidrBlock": "10.0.0.0/16"}, "vpc-0ghost"
    if kind == "subnet":
        return "AWS::EC2::Subnet", {"SubnetId": "subnet-0ghost"}, {"VpcId": "vpc-1", "CidrBlock": "10.0.0.0/24"}, \
            "subnet-0ghost"
    if kind == "security-group":
        return "AWS::EC2::SecurityGroup", {"Id": "sg-0ghost"}, {"GroupDescription": "d"}, "sg-0ghost"
    raise AssertionError(kind)


NOT_FOUND = {
    "topic": r"Topic does not exist \(Service: Sns, Status Code: 404, Request ID: [0-9a-f-]{36}\) "
             r"\(SDK Attempt Count: 1\)",
    "table": "Table: ghost does not exist.",
}


def test_an_import_of_a_resource_that_does_not_exist_fails_the_change_set(emulator):
    cfn = emulator.client("cloudformation")
    for kind in ("queue", "topic", "parameter", "role", "function", "log-group", "table", "vpc", "subnet",
                 "security-group"):
        stack_name = f"ghostly-{kind}"
        type_name, identifier, properties, value = _missing(emulator, kind)
        template = {"Resources": {"R": {"Type": type_name, "DeletionPolicy": "Retain", "Properties": properties}}}
        created = _import(cfn, stack_name, template, [
            {"ResourceType": type_name, "LogicalResourceId": "R", "ResourceIdentifier": identifier}])
        described = cfn.describe_change_set(ChangeSetName=created["Id"])
        assert (kind, described["Status"], described["ExecutionStatus"], described["Changes"]) == \
            (kind, "FAILED", "UNAVAILABLE", [])
        expected = NOT_FOUND.get(kind) or re.escape(
            f"Resource of type '{type_name}' with identifier '{value}' was not found.")
        assert re.fullmatch(expected, described["StatusReason"]), (kind, described["StatusReason"])
        # The new stack stays under review, holding nothing; the change set cannot be executed.
        assert cfn.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"] == "REVIEW_IN_PROGRESS"
        assert cfn.describe_stack_resources(StackName=stack_name)["StackResources"] == []
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            cfn.execute_change_set(ChangeSetName=created["Id"])
        assert raised.value.response["Error"]["Code"] == "InvalidChangeSetStatus"
        assert raised.value.response["Error"]["Message"] == (
            f"ChangeSet [{created['Id']}] cannot be executed in its current execution status of [UNAVAILABLE]")


def test_an_import_of_a_resource_another_stack_holds_fails_the_change_set(emulator):
    cfn = emulator.client("cloudformation")
    owner = cfn.create_stack(StackName="owner", TemplateBody=json.dumps(
        {"Resources": {"Held": {"Type": "AWS::SSM::Parameter",
                                "Properties": {"Name": "/held", "Type": "String", "Value": "v"}}}}))["StackId"]
    template = {"Resources": {"P": {"Type": "AWS::SSM::Parameter", "DeletionPolicy": "Retain",
                                    "Properties": {"Name": "/held", "Type": "String", "Value": "v"}}}}
    created = _import(cfn, "taker", template, [
        {"ResourceType": "AWS::SSM::Parameter", "LogicalResourceId": "P", "ResourceIdentifier": {"Name": "/held"}}])
    described = cfn.describe_change_set(ChangeSetName=created["Id"])
    assert described["Status"] == "FAILED"
    assert described["StatusReason"] == f"/held already exists in stack {owner}"


# -- an existing stack: only new resources are imported, nothing else changes -------------------

@pytest.fixture()
def existing(emulator):
    """A stack holding a parameter (and an output), and a queue outside it."""
    cfn = emulator.client("cloudformation")
    url = emulator.client("sqs").create_queue(QueueName="outside")["QueueUrl"]
    original = {"Resources": {"X": {"Type": "AWS::SSM::Parameter",
                                    "Properties": {"Name": "/kept", "Type": "String", "Value": "v"}}},
                "Outputs": {"Name": {"Value": {"Ref": "X"}}}}
    cfn.create_stack(StackName="existing", TemplateBody=json.dumps(original))
    template = json.loads(json.dumps(original))
    template["Resources"]["Queue"] = _queue_resource("outside")
    return cfn, url, template


def test_an_import_into_an_existing_stack_adds_the_resource_and_keeps_the_rest(existing, emulator):
    cfn, url, template = existing
    created = _import(cfn, "existing", template, [_queue_entry(url)])
    described = cfn.describe_change_set(ChangeSetName=created["Id"])
    assert described["Status"] == "CREATE_COMPLETE"
    assert [c["ResourceChange"]["LogicalResourceId"] for c in described["Changes"]] == ["Queue"]
    cfn.execute_change_set(ChangeSetName=created["Id"])
    stack = cfn.describe_stacks(StackName="existing")["Stacks"][0]
    assert stack["StackStatus"] == "IMPORT_COMPLETE"
    assert stack["Outputs"] == [{"OutputKey": "Name", "OutputValue": "/kept"}]
    assert [s["StackName"] for s in cfn.list_stacks()["StackSummaries"]] == ["existing"]  # no second stack
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in cfn.describe_stack_resources(StackName="existing")["StackResources"]}
    assert physical["X"] == "/kept" and physical["Queue"].endswith("/123456789012/outside")
    assert len(emulator.client("sqs").list_queues()["QueueUrls"]) == 1


MODIFIED = ("You have modified resources [X] in your template that are not being imported. "
            "Update, create or delete operations cannot be executed during import operations.")


def test_an_import_into_an_existing_stack_that_changes_anything_else_is_refused(existing):
    cfn, url, original = existing
    x_entry = {"ResourceType": "AWS::SSM::Parameter", "LogicalResourceId": "X", "ResourceIdentifier": {"Name": "/kept"}}
    before = cfn.describe_stacks(StackName="existing")["Stacks"][0]
    for case, message in [
            ("nothing-new", "The template should contain at least one new resource to import."),
            ("already-held", "Resources [X] passed in ResourceToImport are already in a stack and cannot be imported."),
            ("modified", MODIFIED),
            ("removed", MODIFIED),
            ("unlisted-before-modified", "Resources [N] is missing from ResourceToImport list"),
            ("outputs-changed", "As part of the import operation, you cannot modify or add [Outputs]")]:
        template, to_import = json.loads(json.dumps(original)), [_queue_entry(url)]
        if case == "nothing-new":
            del template["Resources"]["Queue"]
            to_import = [x_entry]
        elif case == "already-held":
            to_import = [x_entry]
        elif case == "modified":
            template["Resources"]["X"]["Properties"]["Value"] = "changed"
        elif case == "removed":
            del template["Resources"]["X"]
            template["Outputs"] = {"Name": {"Value": "/kept"}}
        elif case == "unlisted-before-modified":
            template["Resources"]["X"]["Properties"]["Value"] = "changed"
            template["Resources"]["N"] = _queue_resource("another")
        elif case == "outputs-changed":
            template["Outputs"]["Url"] = {"Value": {"Ref": "Queue"}}
        assert (case, _refused(lambda: _import(cfn, "existing", template, to_import))) == (case, message)
        assert cfn.describe_stacks(StackName="existing")["Stacks"][0] == before, case
        assert cfn.list_change_sets(StackName="existing")["Summaries"] == [], case


# -- a successful export: import the queue and the role, then create the inline policy ---------

def test_an_export_imports_a_queue_and_a_role_then_an_update_adds_the_policy_and_outputs(emulator):
    cfn, sqs, iam = emulator.client("cloudformation"), emulator.client("sqs"), emulator.client("iam")
    url = sqs.create_queue(QueueName="jobs", Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="kept")
    role_arn = iam.create_role(RoleName="worker", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    queue = {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "jobs", "VisibilityTimeout": 45}}
    role = {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "worker", "AssumeRolePolicyDocument": TRUST}}
    document = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": {"Fn::GetAtt": ["Queue", "Arn"]}}]}
    full = {
        "Resources": {
            "Queue": queue, "Role": role,
            "Policy": {"Type": "AWS::IAM::Policy", "Properties": {
                "PolicyName": "send", "Roles": [{"Ref": "Role"}], "PolicyDocument": document}},
        },
        "Outputs": {"QueueUrl": {"Value": {"Ref": "Queue"}},
                    "RoleArn": {"Value": {"Fn::GetAtt": ["Role", "Arn"]}}},
    }
    # Phase 1: the importable resources with a DeletionPolicy, no Outputs.
    phase1 = {"Resources": {"Queue": {**queue, "DeletionPolicy": "Retain"},
                            "Role": {**role, "DeletionPolicy": "Retain"}}}
    created = _import(cfn, "exported", phase1, [
        _queue_entry(url), {"ResourceType": "AWS::IAM::Role", "LogicalResourceId": "Role",
                            "ResourceIdentifier": {"RoleName": "worker"}}])
    described = cfn.describe_change_set(ChangeSetName=created["Id"])
    assert described["Status"] == "CREATE_COMPLETE" and described["ExecutionStatus"] == "AVAILABLE"
    assert [c["ResourceChange"] for c in described["Changes"]] == [
        {"Action": "Import", "LogicalResourceId": "Queue", "PhysicalResourceId": url,
         "ResourceType": "AWS::SQS::Queue", "Scope": [], "Details": []},
        {"Action": "Import", "LogicalResourceId": "Role", "PhysicalResourceId": "worker",
         "ResourceType": "AWS::IAM::Role", "Scope": [], "Details": []}]
    assert cfn.describe_stacks(StackName="exported")["Stacks"][0]["StackStatus"] == "REVIEW_IN_PROGRESS"
    cfn.execute_change_set(ChangeSetName=created["Id"])
    cfn.get_waiter("stack_import_complete").wait(StackName="exported", WaiterConfig={"Delay": 1, "MaxAttempts": 5})

    resources = cfn.describe_stack_resources(StackName="exported")["StackResources"]
    assert {(r["LogicalResourceId"], r["ResourceType"], r["ResourceStatus"]) for r in resources} == {
        ("Queue", "AWS::SQS::Queue", "IMPORT_COMPLETE"), ("Role", "AWS::IAM::Role", "IMPORT_COMPLETE")}
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in resources}
    # The queue's id is SQS's canonical URL (the emulator answers URLs with the host asked).
    assert physical == {"Queue": "https://sqs.us-east-1.amazonaws.com/123456789012/jobs", "Role": "worker"}
    # Adopted, not made again: one queue, its message and attributes kept; one role.
    assert [u.rsplit("/", 1)[-1] for u in sqs.list_queues()["QueueUrls"]] == ["jobs"]
    assert sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"]["ApproximateNumberOfMessages"] == "1"
    assert [r["Arn"] for r in iam.list_roles()["Roles"] if r["RoleName"] == "worker"] == [role_arn]
    events = [(e["LogicalResourceId"], e["ResourceStatus"])
              for e in reversed(cfn.describe_stack_events(StackName="exported")["StackEvents"])]
    assert events == [("exported", "REVIEW_IN_PROGRESS"), ("exported", "IMPORT_IN_PROGRESS"),
                      ("Queue", "IMPORT_IN_PROGRESS"), ("Queue", "IMPORT_COMPLETE"),
                      ("Role", "IMPORT_IN_PROGRESS"), ("Role", "IMPORT_COMPLETE"), ("exported", "IMPORT_COMPLETE")]
    assert cfn.get_template(StackName="exported")["TemplateBody"] == phase1
    assert cfn.get_template(StackName="exported", TemplateStage="Processed")["TemplateBody"] == phase1
    with pytest.raises(botocore.exceptions.ClientError) as raised:  # an executed change set is spent
        cfn.execute_change_set(ChangeSetName=created["Id"])
    assert raised.value.response["Error"]["Code"] == "InvalidChangeSetStatus"

    # Phase 2: the full template; CloudFormation creates the policy and answers the outputs.
    updated = cfn.create_change_set(StackName="exported", ChangeSetName="complete", ChangeSetType="UPDATE",
                                    TemplateBody=json.dumps(full))
    changes = cfn.describe_change_set(ChangeSetName=updated["Id"])["Changes"]
    assert [(c["ResourceChange"]["Action"], c["ResourceChange"]["LogicalResourceId"]) for c in changes] == \
        [("Add", "Policy")]
    cfn.execute_change_set(ChangeSetName=updated["Id"])
    stack = cfn.describe_stacks(StackName="exported")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]} == {
        "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/jobs", "RoleArn": role_arn}
    assert iam.list_role_policies(RoleName="worker")["PolicyNames"] == ["send"]
    assert iam.get_role_policy(RoleName="worker", PolicyName="send")["PolicyDocument"]["Statement"][0]["Resource"] \
        == "arn:aws:sqs:us-east-1:123456789012:jobs"
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in cfn.describe_stack_resources(StackName="exported")["StackResources"]}
    assert physical["Queue"].endswith("/jobs") and physical["Role"] == "worker" and physical["Policy"]
    assert [u.rsplit("/", 1)[-1] for u in sqs.list_queues()["QueueUrls"]] == ["jobs"]
    latest = cfn.describe_stack_events(StackName="exported")["StackEvents"][:2]
    assert [(e["LogicalResourceId"], e["ResourceStatus"]) for e in latest] == \
        [("exported", "UPDATE_COMPLETE"), ("Policy", "CREATE_COMPLETE")]
    assert cfn.get_template(StackName="exported")["TemplateBody"] == full


def test_a_failed_update_after_an_import_rolls_back_with_the_resource_s_reason(emulator):
    cfn, sqs = emulator.client("cloudformation"), emulator.client("sqs")
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    phase1 = {"Resources": {"Queue": _queue_resource("jobs")}}
    cfn.execute_change_set(ChangeSetName=_import(cfn, "exported", phase1, [_queue_entry(url)])["Id"])
    broken = {"Resources": {**phase1["Resources"], "Policy": {"Type": "AWS::IAM::Policy", "Properties": {
        "PolicyName": "send", "Roles": ["no-such-role"],
        "PolicyDocument": {"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}]}}}},
        "Outputs": {"QueueUrl": {"Value": {"Ref": "Queue"}}}}
    updated = cfn.create_change_set(StackName="exported", ChangeSetName="complete", ChangeSetType="UPDATE",
                                    TemplateBody=json.dumps(broken))
    cfn.execute_change_set(ChangeSetName=updated["Id"])  # answers 200, as on AWS; the stack rolls back
    stack = cfn.describe_stacks(StackName="exported")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    assert "Outputs" not in stack
    events = cfn.describe_stack_events(StackName="exported")["StackEvents"]
    failed = [e for e in events if e["ResourceStatus"].endswith("_FAILED")]
    assert [(e["LogicalResourceId"], e["ResourceType"], e["ResourceStatus"]) for e in failed] == \
        [("Policy", "AWS::IAM::Policy", "CREATE_FAILED")]
    assert "no-such-role" in failed[0]["ResourceStatusReason"], failed[0]
    assert [(e["LogicalResourceId"], e["ResourceStatus"]) for e in events[:2]] == \
        [("exported", "UPDATE_ROLLBACK_COMPLETE"), ("exported", "UPDATE_ROLLBACK_IN_PROGRESS")]
    assert events[1]["ResourceStatusReason"] == "The following resource(s) failed to create: [Policy]. "
    assert cfn.get_template(StackName="exported")["TemplateBody"] == phase1
    assert [r["LogicalResourceId"] for r in cfn.describe_stack_resources(StackName="exported")["StackResources"]] \
        == ["Queue"]
    assert cfn.describe_change_set(ChangeSetName=updated["Id"])["ExecutionStatus"] == "EXECUTE_FAILED"


def test_a_resource_deleted_before_the_execution_fails_the_import_and_rolls_it_back(emulator):
    cfn, sqs = emulator.client("cloudformation"), emulator.client("sqs")
    kept = sqs.create_queue(QueueName="kept")["QueueUrl"]
    gone = sqs.create_queue(QueueName="gone")["QueueUrl"]
    template = {"Resources": {"Kept": _queue_resource("kept"), "Gone": _queue_resource("gone")}}
    created = _import(cfn, "racing", template, [_queue_entry(kept, "Kept"), _queue_entry(gone, "Gone")])
    assert cfn.describe_change_set(ChangeSetName=created["Id"])["Status"] == "CREATE_COMPLETE"
    sqs.delete_queue(QueueUrl=gone)
    cfn.execute_change_set(ChangeSetName=created["Id"])
    stack = cfn.describe_stacks(StackName="racing")["Stacks"][0]
    assert stack["StackStatus"] == "IMPORT_ROLLBACK_COMPLETE"
    events = [(e["LogicalResourceId"], e["ResourceStatus"], e.get("ResourceStatusReason"))
              for e in reversed(cfn.describe_stack_events(StackName="racing")["StackEvents"])]
    assert ("Gone", "IMPORT_FAILED",
            f"Resource of type 'AWS::SQS::Queue' with identifier '{gone}' was not found.") in events
    assert events[-2:] == [("racing", "IMPORT_ROLLBACK_IN_PROGRESS", "The following resource(s) failed to import: [Gone]. "),
                           ("racing", "IMPORT_ROLLBACK_COMPLETE", None)]
    assert cfn.describe_stack_resources(StackName="racing")["StackResources"] == []
    assert [u.rsplit("/", 1)[-1] for u in sqs.list_queues()["QueueUrls"]] == ["kept"]


# -- every type cdkd export imports is adopted, not made again ----------------------------------

def _zip():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return 1\n")
    return buffer.getvalue()


def test_an_import_adopts_every_type_with_its_identifier_as_physical_id(emulator):
    c = emulator.client
    sqs, sns, ssm, iam, lam, logs, ddb, ec2 = (c(s) for s in (
        "sqs", "sns", "ssm", "iam", "lambda", "logs", "dynamodb", "ec2"))
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    topic = sns.create_topic(Name="t")["TopicArn"]
    ssm.put_parameter(Name="/p", Type="String", Value="v")
    role_arn = iam.create_role(RoleName="r", AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    lam.create_function(FunctionName="f", Runtime="python3.11", Handler="index.handler", Role=role_arn,
                        Code={"ZipFile": _zip()})
    lam.add_permission(FunctionName="f", StatementId="s", Action="lambda:InvokeFunction",
                       Principal="sns.amazonaws.com")
    logs.create_log_group(logGroupName="/g")
    ddb.create_table(TableName="d", AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.1.0/24")["Subnet"]["SubnetId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    sg = ec2.create_security_group(GroupName="g", Description="d", VpcId=vpc)["GroupId"]
    rule = ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": [{"CidrIp": "10.0.0.0/8"}]}])
    rule_id = rule["SecurityGroupRules"][0]["SecurityGroupRuleId"]
    rtb = ec2.create_route_table(VpcId=vpc)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=rtb, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    association = ec2.associate_route_table(RouteTableId=rtb, SubnetId=subnet)["AssociationId"]

    def counts():
        table = ec2.describe_route_tables(RouteTableIds=[rtb])["RouteTables"][0]
        return (len(sqs.list_queues()["QueueUrls"]), len(sns.list_topics()["Topics"]),
                len(ssm.describe_parameters()["Parameters"]), [r["RoleName"] for r in iam.list_roles()["Roles"]],
                len(lam.list_functions()["Functions"]), lam.get_policy(FunctionName="f")["Policy"],
                len(logs.describe_log_groups()["logGroups"]), ddb.list_tables()["TableNames"],
                len(ec2.describe_vpcs()["Vpcs"]), len(ec2.describe_subnets()["Subnets"]),
                ec2.describe_internet_gateways()["InternetGateways"],
                len(ec2.describe_security_groups()["SecurityGroups"]),
                ec2.describe_security_groups(GroupIds=[sg])["SecurityGroups"][0]["IpPermissions"],
                len(ec2.describe_route_tables()["RouteTables"]), table["Routes"], table["Associations"])

    # (logical id, type, properties, identifier, physical id answered)
    declared = [
        ("Queue", "AWS::SQS::Queue", {"QueueName": "q"}, {"QueueUrl": url},
         "https://sqs.us-east-1.amazonaws.com/123456789012/q"),
        ("Topic", "AWS::SNS::Topic", {"TopicName": "t"}, {"TopicArn": topic}, topic),
        ("Param", "AWS::SSM::Parameter", {"Name": "/p", "Type": "String", "Value": "v"}, {"Name": "/p"}, "/p"),
        ("Role", "AWS::IAM::Role", {"RoleName": "r", "AssumeRolePolicyDocument": TRUST}, {"RoleName": "r"}, "r"),
        ("Fn", "AWS::Lambda::Function", {"FunctionName": "f", "Runtime": "python3.11", "Handler": "index.handler",
                                         "Role": {"Fn::GetAtt": ["Role", "Arn"]}, "Code": {"ZipFile": "x"}},
         {"FunctionName": "f"}, "f"),
        ("Perm", "AWS::Lambda::Permission", {"FunctionName": {"Ref": "Fn"}, "Action": "lambda:InvokeFunction",
                                             "Principal": "sns.amazonaws.com"},
         {"FunctionName": "f", "Id": "s"}, "f|s"),
        ("Logs", "AWS::Logs::LogGroup", {"LogGroupName": "/g"}, {"LogGroupName": "/g"}, "/g"),
        ("Table", "AWS::DynamoDB::Table", {"TableName": "d"}, {"TableName": "d"}, "d"),
        ("Vpc", "AWS::EC2::VPC", {"CidrBlock": "10.9.0.0/16"}, {"VpcId": vpc}, vpc),
        ("Subnet", "AWS::EC2::Subnet", {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.9.1.0/24"},
         {"SubnetId": subnet}, subnet),
        ("Igw", "AWS::EC2::InternetGateway", {}, {"InternetGatewayId": igw}, igw),
        ("Attach", "AWS::EC2::VPCGatewayAttachment", {"VpcId": {"Ref": "Vpc"}, "InternetGatewayId": {"Ref": "Igw"}},
         {"AttachmentType": "IGW", "VpcId": vpc}, f"IGW|{vpc}"),
        ("Group", "AWS::EC2::SecurityGroup", {"GroupDescription": "d", "VpcId": {"Ref": "Vpc"}}, {"Id": sg}, sg),
        ("Ingress", "AWS::EC2::SecurityGroupIngress", {"GroupId": {"Ref": "Group"}, "IpProtocol": "tcp",
                                                       "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/8"},
         {"Id": rule_id}, rule_id),
        ("Rtb", "AWS::EC2::RouteTable", {"VpcId": {"Ref": "Vpc"}}, {"RouteTableId": rtb}, rtb),
        ("Route", "AWS::EC2::Route", {"RouteTableId": {"Ref": "Rtb"}, "DestinationCidrBlock": "0.0.0.0/0",
                                      "GatewayId": {"Ref": "Igw"}},
         {"RouteTableId": rtb, "CidrBlock": "0.0.0.0/0"}, f"{rtb}|0.0.0.0/0"),
        ("Assoc", "AWS::EC2::SubnetRouteTableAssociation", {"RouteTableId": {"Ref": "Rtb"},
                                                            "SubnetId": {"Ref": "Subnet"}},
         {"Id": association}, association),
    ]
    template = {"Resources": {lid: {"Type": t, "DeletionPolicy": "Retain", "Properties": p}
                              for lid, t, p, _i, _ph in declared}}
    to_import = [{"ResourceType": t, "LogicalResourceId": lid, "ResourceIdentifier": i}
                 for lid, t, _p, i, _ph in declared]
    cfn = emulator.client("cloudformation")
    before = counts()
    created = _import(cfn, "everything", template, to_import)
    described = cfn.describe_change_set(ChangeSetName=created["Id"])
    assert described["Status"] == "CREATE_COMPLETE", described.get("StatusReason")
    cfn.execute_change_set(ChangeSetName=created["Id"])
    assert cfn.describe_stacks(StackName="everything")["Stacks"][0]["StackStatus"] == "IMPORT_COMPLETE"
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in cfn.describe_stack_resources(StackName="everything")["StackResources"]}
    assert physical == {lid: ph for lid, _t, _p, _i, ph in declared}
    assert counts() == before

    # Phase 2 may refer to them: outputs through Ref and Fn::GetAtt of imported resources.
    full = {**template, "Outputs": {
        "VpcId": {"Value": {"Ref": "Vpc"}}, "RoleArn": {"Value": {"Fn::GetAtt": ["Role", "Arn"]}},
        "TopicArn": {"Value": {"Ref": "Topic"}}, "QueueArn": {"Value": {"Fn::GetAtt": ["Queue", "Arn"]}}}}
    updated = cfn.create_change_set(StackName="everything", ChangeSetName="outputs", ChangeSetType="UPDATE",
                                    TemplateBody=json.dumps(full))
    cfn.execute_change_set(ChangeSetName=updated["Id"])
    stack = cfn.describe_stacks(StackName="everything")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]} == {
        "VpcId": vpc, "RoleArn": role_arn, "TopicArn": topic, "QueueArn": "arn:aws:sqs:us-east-1:123456789012:q"}
    assert counts() == before


# -- nesting an existing stack: AWS::CloudFormation::Stack imported by its StackId --------------
#
# cdkd's export of a nested tree: each child is imported as a stack of its own first (leaf first),
# then nested into its parent with an IMPORT change set ("Nesting an existing stack" in AWS's user
# guide). AWS nests one level only, and only a stack whose template and tags the parent's
# resource repeats. AWS's own words, as reported from real accounts: the IMPORT_COMPLETE refusal
# and "Stacks to be imported cannot have any child stacks."; a stack nested already gets AWS's
# refusal of any resource another stack holds; the Tags refusal is known only up to "defined in
# the template don't match"; the rest is the emulator's wording.

STACK = "AWS::CloudFormation::Stack"


def _upload(emulator, key, body, bucket="cdkd-state"):
    """Uploads a template body to S3 (making the bucket on first use); answers its TemplateURL."""
    s3 = emulator.client("s3")
    if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key=key, Body=body.encode())
    return f"https://{bucket}.s3.us-east-1.amazonaws.com/{key}"


def _executed(cfn, created, status):
    described = cfn.describe_change_set(ChangeSetName=created["Id"])
    assert described["Status"] == "CREATE_COMPLETE", described.get("StatusReason")
    cfn.execute_change_set(ChangeSetName=created["Id"])
    stack = cfn.describe_stacks(StackName=created["StackId"])["Stacks"][0]
    assert stack["StackStatus"] == status, stack
    return stack


def _failed_reason(cfn, created):
    described = cfn.describe_change_set(ChangeSetName=created["Id"])
    assert (described["Status"], described["ExecutionStatus"], described["Changes"]) == ("FAILED", "UNAVAILABLE", [])
    return described["StatusReason"]


def _child_phase1(queue_name):
    return {"Parameters": {"Stage": {"Type": "String"}},
            "Resources": {"Queue": _queue_resource(queue_name)}}


def _child_full(queue_name):
    return {**_child_phase1(queue_name), "Outputs": {
        "QueueName": {"Value": {"Fn::GetAtt": ["Queue", "QueueName"]}},
        "QueueUrl": {"Value": {"Ref": "Queue"}}}}


def _imported_child(emulator, name, queue_name, phase2=True):
    """Steps 1 and 2 of cdkd's export for a child: its queue imported into a stack of its own
    (parameter Stage=prod, tag app=demo), then, with `phase2`, the UPDATE adding its Outputs."""
    cfn = emulator.client("cloudformation")
    url = emulator.client("sqs").create_queue(QueueName=queue_name)["QueueUrl"]
    _executed(cfn, _import(cfn, name, _child_phase1(queue_name), [_queue_entry(url)],
                           Parameters=[{"ParameterKey": "Stage", "ParameterValue": "prod"}],
                           Tags=[{"Key": "app", "Value": "demo"}]), "IMPORT_COMPLETE")
    if phase2:
        _executed(cfn, cfn.create_change_set(
            StackName=name, ChangeSetName="complete", ChangeSetType="UPDATE",
            TemplateBody=json.dumps(_child_full(queue_name)),
            Parameters=[{"ParameterKey": "Stage", "UsePreviousValue": True}]), "UPDATE_COMPLETE")
    return cfn.describe_stacks(StackName=name)["Stacks"][0]


def _flip(cfn, name):
    """Step 3: a tags-only UpdateStack that takes a stack out of IMPORT_COMPLETE."""
    stack = cfn.describe_stacks(StackName=name)["Stacks"][0]
    cfn.update_stack(StackName=name, UsePreviousTemplate=True,
                     Parameters=[{"ParameterKey": p["ParameterKey"], "UsePreviousValue": True}
                                 for p in stack.get("Parameters", [])],
                     Tags=stack.get("Tags", []) + [{"Key": "cdkd:nested-export-flip", "Value": "1700000000000"}],
                     Capabilities=["CAPABILITY_IAM"])
    return cfn.describe_stacks(StackName=name)["Stacks"][0]


def _nested_row(emulator, cfn, child_name):
    """Steps 4 and 5: the parent's resource for an existing child, read from CloudFormation as cdkd
    reads it (its processed template uploaded to S3, its parameters and tags)."""
    child = cfn.describe_stacks(StackName=child_name)["Stacks"][0]
    body = cfn.get_template(StackName=child_name, TemplateStage="Processed")["TemplateBody"]
    url = _upload(emulator, f"nested/{child_name}.json", body if isinstance(body, str) else json.dumps(body))
    return {"Type": STACK, "DeletionPolicy": "Retain", "Properties": {
        "TemplateURL": url,
        "Parameters": {p["ParameterKey"]: p["ParameterValue"] for p in child.get("Parameters", [])},
        "Tags": child.get("Tags", [])}}


def _physical_ids(cfn, stack_name):
    return {r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in cfn.describe_stack_resources(StackName=stack_name)["StackResources"]}


def _stack_entry(logical_id, stack_id):
    return {"ResourceType": STACK, "LogicalResourceId": logical_id, "ResourceIdentifier": {"StackId": stack_id}}


def _parent_with_topic(emulator, name, topic_name):
    """A parent stack holding its own resource (a topic made through SNS), imported: step 5's
    existing parent. Answers (its template, its StackId)."""
    cfn = emulator.client("cloudformation")
    arn = emulator.client("sns").create_topic(Name=topic_name)["TopicArn"]
    template = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "DeletionPolicy": "Retain",
                                        "Properties": {"TopicName": topic_name}}}}
    stack = _executed(cfn, _import(cfn, name, template, [
        {"ResourceType": "AWS::SNS::Topic", "LogicalResourceId": "Topic", "ResourceIdentifier": {"TopicArn": arn}}]),
        "IMPORT_COMPLETE")
    return template, stack["StackId"]


def test_an_export_nests_an_imported_child_into_its_parent_and_updates_it_in_place(emulator):
    cfn, sqs, logs = emulator.client("cloudformation"), emulator.client("sqs"), emulator.client("logs")
    # Steps 1 and 2: the child, its queue imported, its Outputs added (UPDATE_COMPLETE: no flip).
    child = _imported_child(emulator, "P-Child", "jobs")
    child_id = child["StackId"]
    queue_url = _physical_ids(cfn, "P-Child")["Queue"]
    assert {o["OutputKey"]: o["OutputValue"] for o in child["Outputs"]}["QueueName"] == "jobs"
    # The parent already exists, holding its topic.
    phase1, parent_id = _parent_with_topic(emulator, "P", "alerts")
    # Step 5: the child nested, with a log group named after the child's output, in one change set.
    logs.create_log_group(logGroupName="/nested/jobs")
    row = _nested_row(emulator, cfn, "P-Child")
    log_group = {"Type": "AWS::Logs::LogGroup", "DeletionPolicy": "Retain", "Properties": {"LogGroupName": {
        "Fn::Join": ["", ["/nested/", {"Fn::GetAtt": ["Child", "Outputs.QueueName"]}]]}}}
    nesting = {"Resources": {**phase1["Resources"], "Child": row, "Logs": log_group}}
    created = _import(cfn, "P", nesting, [
        _stack_entry("Child", child_id),
        {"ResourceType": "AWS::Logs::LogGroup", "LogicalResourceId": "Logs",
         "ResourceIdentifier": {"LogGroupName": "/nested/jobs"}}], name="nest")
    changes = cfn.describe_change_set(ChangeSetName=created["Id"])["Changes"]
    assert [(c["ResourceChange"]["Action"], c["ResourceChange"]["LogicalResourceId"],
             c["ResourceChange"]["PhysicalResourceId"]) for c in changes] == \
        [("Import", "Child", child_id), ("Import", "Logs", "/nested/jobs")]
    _executed(cfn, created, "IMPORT_COMPLETE")

    resources = {r["LogicalResourceId"]: r for r in cfn.describe_stack_resources(StackName="P")["StackResources"]}
    assert (resources["Child"]["ResourceType"], resources["Child"]["PhysicalResourceId"],
            resources["Child"]["ResourceStatus"]) == (STACK, child_id, "IMPORT_COMPLETE")
    events = [(e["LogicalResourceId"], e["ResourceStatus"], e["PhysicalResourceId"])
              for e in cfn.describe_stack_events(StackName="P")["StackEvents"]]
    assert ("Child", "IMPORT_COMPLETE", child_id) in events
    nested = cfn.describe_stacks(StackName="P-Child")["Stacks"][0]
    assert (nested["StackId"], nested["ParentId"], nested["RootId"]) == (child_id, parent_id, parent_id)
    assert nested["StackStatus"] == "UPDATE_COMPLETE"  # nesting leaves the child as it was
    summaries = {s["StackName"]: s for s in cfn.list_stacks()["StackSummaries"]}
    assert summaries["P-Child"]["ParentId"] == parent_id and "ParentId" not in summaries["P"]

    # Step 6: the whole parent template; the child loses its Tags and DeletionPolicy.
    full = {"Resources": {**nesting["Resources"], "Child": {"Type": STACK, "Properties": {
        k: v for k, v in row["Properties"].items() if k != "Tags"}}},
        "Outputs": {"ChildQueueUrl": {"Value": {"Fn::GetAtt": ["Child", "Outputs.QueueUrl"]}},
                    "ChildId": {"Value": {"Ref": "Child"}},
                    "LogGroup": {"Value": {"Ref": "Logs"}},
                    "FromChild": {"Value": {"Fn::Join": ["", ["/nested/", {"Fn::GetAtt": ["Child", "Outputs.QueueName"]}]]}}}}
    _executed(cfn, cfn.create_change_set(StackName="P", ChangeSetName="complete", ChangeSetType="UPDATE",
                                         TemplateBody=json.dumps(full)), "UPDATE_COMPLETE")
    parent = cfn.describe_stacks(StackName="P")["Stacks"][0]
    assert {o["OutputKey"]: o["OutputValue"] for o in parent["Outputs"]} == {
        "ChildQueueUrl": queue_url, "ChildId": child_id, "LogGroup": "/nested/jobs", "FromChild": "/nested/jobs"}
    # Updated in place: the same stack and queue, nothing deleted.
    nested = cfn.describe_stacks(StackName="P-Child")["Stacks"][0]
    assert (nested["StackId"], nested["ParentId"], nested["RootId"]) == (child_id, parent_id, parent_id)
    assert _physical_ids(cfn, "P-Child") == {"Queue": queue_url}
    assert [u.rsplit("/", 1)[-1] for u in sqs.list_queues()["QueueUrls"]] == ["jobs"]
    for name in ("P", "P-Child"):
        assert not [e for e in cfn.describe_stack_events(StackName=name)["StackEvents"]
                    if e["ResourceStatus"].startswith("DELETE")], name
    assert _physical_ids(cfn, "P")["Child"] == child_id

    # The child's DeletionPolicy is gone: the parent's delete takes it (and its queue).
    cfn.delete_stack(StackName="P")
    statuses = {s["StackId"]: s["StackStatus"] for s in cfn.list_stacks()["StackSummaries"]}
    assert (statuses[parent_id], statuses[child_id]) == ("DELETE_COMPLETE", "DELETE_COMPLETE")


def test_a_new_parent_nests_a_child_that_a_tag_flip_took_out_of_import_complete(emulator):
    cfn = emulator.client("cloudformation")
    # A child whose phase 2 changes nothing: that change set FAILS (Parameters sent too), the
    # child stays IMPORT_COMPLETE, and AWS will not nest it so.
    _imported_child(emulator, "N-Child", "work", phase2=False)
    unchanged = cfn.create_change_set(StackName="N-Child", ChangeSetName="complete", ChangeSetType="UPDATE",
                                      TemplateBody=json.dumps(_child_phase1("work")),
                                      Parameters=[{"ParameterKey": "Stage", "UsePreviousValue": True}])
    assert _failed_reason(cfn, unchanged) == (
        "The submitted information didn't contain changes. Submit different information to create a change set.")
    child = cfn.describe_stacks(StackName="N-Child")["Stacks"][0]
    assert child["StackStatus"] == "IMPORT_COMPLETE"
    row = _nested_row(emulator, cfn, "N-Child")
    refused = _import(cfn, "N", {"Resources": {"Child": row}}, [_stack_entry("Child", child["StackId"])])
    assert _failed_reason(cfn, refused) == (
        f"Stack {child['StackId']} is not in an importable status, current stack status is IMPORT_COMPLETE.")
    assert cfn.describe_stacks(StackName="N")["Stacks"][0]["StackStatus"] == "REVIEW_IN_PROGRESS"
    cfn.delete_stack(StackName="N")

    # Step 3: the tags-only update, the template and parameters kept.
    flipped = _flip(cfn, "N-Child")
    assert flipped["StackStatus"] == "UPDATE_COMPLETE"
    assert flipped["Tags"] == [{"Key": "app", "Value": "demo"},
                               {"Key": "cdkd:nested-export-flip", "Value": "1700000000000"}]
    assert flipped["Parameters"] == [{"ParameterKey": "Stage", "ParameterValue": "prod"}]
    assert cfn.get_template(StackName="N-Child", TemplateStage="Processed")["TemplateBody"] == _child_phase1("work")
    assert cfn.get_template(StackName="N-Child", TemplateStage="Original")["TemplateBody"] == _child_phase1("work")
    # A second update changing nothing at all is refused, as on AWS.
    message = _refused(lambda: cfn.update_stack(
        StackName="N-Child", UsePreviousTemplate=True, Tags=flipped["Tags"],
        Parameters=[{"ParameterKey": "Stage", "UsePreviousValue": True}]))
    assert message == "No updates are to be performed."

    # A new parent made by the IMPORT that nests the child.
    row = _nested_row(emulator, cfn, "N-Child")
    parent = _executed(cfn, _import(cfn, "N", {"Resources": {"Child": row}}, [_stack_entry("Child", child["StackId"])]),
                       "IMPORT_COMPLETE")
    nested = cfn.describe_stacks(StackName="N-Child")["Stacks"][0]
    assert (nested["ParentId"], nested["RootId"]) == (parent["StackId"], parent["StackId"])

    # The parent's update without the resource's Tags untags the child (the flip tag goes).
    untagged = {"Resources": {"Child": {"Type": STACK, "Properties": {
        k: v for k, v in row["Properties"].items() if k != "Tags"}}}}
    _executed(cfn, cfn.create_change_set(StackName="N", ChangeSetName="untag", ChangeSetType="UPDATE",
                                         TemplateBody=json.dumps(untagged)), "UPDATE_COMPLETE")
    nested = cfn.describe_stacks(StackName="N-Child")["Stacks"][0]
    assert (nested["StackId"], nested.get("Tags", [])) == (child["StackId"], [])


@pytest.fixture()
def nestable(emulator):
    """A flipped child (N-Child) ready to nest and an existing parent (N) holding a topic:
    answers (cfn, the parent's template with the child's resource, the child's StackId)."""
    cfn = emulator.client("cloudformation")
    _imported_child(emulator, "N-Child", "work", phase2=False)
    child_id = _flip(cfn, "N-Child")["StackId"]
    phase1, _parent_id = _parent_with_topic(emulator, "N", "alerts")
    row = _nested_row(emulator, cfn, "N-Child")
    return cfn, {"Resources": {**phase1["Resources"], "Child": row}}, child_id


def test_nesting_a_stack_aws_would_not_nest_fails_the_change_set(nestable, emulator):
    cfn, template, child_id = nestable
    cases = {
        "unknown-stack-id": (lambda t: t, child_id.rsplit("/", 1)[0] + "/00000000-0000-0000-0000-000000000000",
                             "Resource of type 'AWS::CloudFormation::Stack' with identifier '{id}' was not found."),
        "stack-name": (lambda t: t, "N-Child",
                       "Resource of type 'AWS::CloudFormation::Stack' with identifier '{id}' was not found."),
        "tags-missing-the-flip": (
            lambda t: t["Resources"]["Child"]["Properties"].update(Tags=[{"Key": "app", "Value": "demo"}]), None,
            "Tags of resource [Child] defined in the template don't match the tags of stack {id}."),
        "tags-absent": (lambda t: t["Resources"]["Child"]["Properties"].pop("Tags"), None,
                        "Tags of resource [Child] defined in the template don't match the tags of stack {id}."),
        "another-template": (
            lambda t: t["Resources"]["Child"]["Properties"].update(TemplateURL=_upload(
                emulator, "nested/other.json", json.dumps({"Resources": {"Queue": _queue_resource("other")}}))),
            None, "Template of resource [Child] defined in the template doesn't match the template of stack {id}."),
        "another-parameter-value": (
            lambda t: t["Resources"]["Child"]["Properties"].update(Parameters={"Stage": "dev"}), None,
            "Parameters of resource [Child] defined in the template don't match the parameters of stack {id}."),
        "parameters-absent": (
            lambda t: t["Resources"]["Child"]["Properties"].pop("Parameters"), None,
            "Parameters of resource [Child] defined in the template don't match the parameters of stack {id}."),
    }
    for case, (change, identifier, message) in cases.items():
        body = json.loads(json.dumps(template))
        change(body)
        stack_id = identifier or child_id
        created = _import(cfn, "N", body, [_stack_entry("Child", stack_id)], name=f"nest-{case}")
        assert (case, _failed_reason(cfn, created)) == (case, message.format(id=stack_id))
        assert cfn.describe_stacks(StackName="N")["Stacks"][0]["StackStatus"] == "IMPORT_COMPLETE", case
        assert "ParentId" not in cfn.describe_stacks(StackName="N-Child")["Stacks"][0], case
    # The same template in YAML matches: templates are compared as documents.
    yaml_url = _upload(emulator, "nested/child.yaml", "Parameters:\n  Stage:\n    Type: String\nResources:\n"
                       "  Queue:\n    Type: AWS::SQS::Queue\n    DeletionPolicy: Retain\n"
                       "    Properties:\n      QueueName: work\n")
    body = json.loads(json.dumps(template))
    body["Resources"]["Child"]["Properties"]["TemplateURL"] = yaml_url
    created = _import(cfn, "N", body, [_stack_entry("Child", child_id)], name="nest-yaml")
    assert cfn.describe_change_set(ChangeSetName=created["Id"])["Status"] == "CREATE_COMPLETE"
    # Refused at CreateChangeSet: AWS nests no stack through IncludeNestedStacks on an IMPORT.
    assert _refused(lambda: _import(cfn, "N", template, [_stack_entry("Child", child_id)], name="nest-include",
                                    IncludeNestedStacks=True)) == \
        "IncludeNestedStacks is not supported for changeSet type: IMPORT."
    # Refused at CreateChangeSet like any import: a DeletionPolicy is needed.
    body = json.loads(json.dumps(template))
    del body["Resources"]["Child"]["DeletionPolicy"]
    assert _refused(lambda: _import(cfn, "N", body, [_stack_entry("Child", child_id)], name="nest-policy")) == (
        "The following resources to import [Child] must have DeletionPolicy attribute specified in the template.")


def test_a_nested_stack_cannot_be_nested_again(nestable, emulator):
    cfn, template, child_id = nestable
    parent_id = _executed(cfn, _import(cfn, "N", template, [_stack_entry("Child", child_id)], name="nest"),
                          "IMPORT_COMPLETE")["StackId"]
    other = _import(cfn, "Other", {"Resources": {"Child": template["Resources"]["Child"]}},
                    [_stack_entry("Child", child_id)])
    assert _failed_reason(cfn, other) == f"{child_id} already exists in stack {parent_id}"
    assert cfn.describe_stacks(StackName="N-Child")["Stacks"][0]["ParentId"] == parent_id


def test_import_nests_one_level_only_as_aws_does(emulator):
    # AWS: "CloudFormation only supports one level of nesting using resource import. This means
    # that you can't import a stack into a child stack or import a stack that has children."
    cfn = emulator.client("cloudformation")
    leaf_id = _imported_child(emulator, "Leaf", "leaf")["StackId"]
    # Mid: its own topic imported, then Leaf nested into it, then its phase 2.
    mid_template, mid_id = _parent_with_topic(emulator, "Mid", "mid-topic")
    row = _nested_row(emulator, cfn, "Leaf")
    mid_template = {"Resources": {**mid_template["Resources"], "Leaf": row}}
    _executed(cfn, _import(cfn, "Mid", mid_template, [_stack_entry("Leaf", leaf_id)], name="nest"), "IMPORT_COMPLETE")
    leaf = cfn.describe_stacks(StackName="Leaf")["Stacks"][0]
    assert (leaf["ParentId"], leaf["RootId"]) == (mid_id, mid_id)
    mid_full = {**mid_template, "Outputs": {"LeafQueue": {"Value": {"Fn::GetAtt": ["Leaf", "Outputs.QueueName"]}}}}
    _executed(cfn, cfn.create_change_set(StackName="Mid", ChangeSetName="complete", ChangeSetType="UPDATE",
                                         TemplateBody=json.dumps(mid_full)), "UPDATE_COMPLETE")
    # Root: its own topic, then Mid, which has a child: refused.
    root_template, root_id = _parent_with_topic(emulator, "Root", "root-topic")
    row = _nested_row(emulator, cfn, "Mid")
    created = _import(cfn, "Root", {"Resources": {**root_template["Resources"], "Mid": row}},
                      [_stack_entry("Mid", mid_id)], name="nest")
    assert _failed_reason(cfn, created) == "Stacks to be imported cannot have any child stacks."
    assert "ParentId" not in cfn.describe_stacks(StackName="Mid")["Stacks"][0]
    assert cfn.describe_stacks(StackName="Leaf")["Stacks"][0]["RootId"] == mid_id

    # The other order: a stack without children nested into Root, then a stack nested into it.
    _imported_child(emulator, "Mid2", "mid2")
    row = _nested_row(emulator, cfn, "Mid2")
    root_template = {"Resources": {**root_template["Resources"], "Mid2": row}}
    mid2_id = cfn.describe_stacks(StackName="Mid2")["Stacks"][0]["StackId"]
    _executed(cfn, _import(cfn, "Root", root_template, [_stack_entry("Mid2", mid2_id)], name="nest2"),
              "IMPORT_COMPLETE")
    leaf2_id = _imported_child(emulator, "Leaf2", "leaf2")["StackId"]
    row = _nested_row(emulator, cfn, "Leaf2")
    mid2_template = json.loads(json.dumps(cfn.get_template(StackName="Mid2")["TemplateBody"]))
    created = _import(cfn, "Mid2", {**mid2_template, "Resources": {**mid2_template["Resources"], "Leaf2": row}},
                      [_stack_entry("Leaf2", leaf2_id)], name="nest")
    assert _failed_reason(cfn, created) == "Stacks cannot be imported into a child stack."
    assert cfn.describe_stacks(StackName="Mid2")["Stacks"][0]["RootId"] == root_id


def test_a_three_level_tree_made_by_create_stack_answers_parent_and_root_ids(emulator):
    cfn = emulator.client("cloudformation")
    leaf_url = _upload(emulator, "tree/leaf.json", json.dumps({"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}))
    mid_url = _upload(emulator, "tree/mid.json", json.dumps({"Resources": {"Leaf": {
        "Type": STACK, "Properties": {"TemplateURL": leaf_url}}}}))
    root_id = cfn.create_stack(StackName="tree", TemplateBody=json.dumps({"Resources": {"Mid": {
        "Type": STACK, "Properties": {"TemplateURL": mid_url}}}}))["StackId"]
    mid = cfn.describe_stacks(StackName=_physical_ids(cfn, "tree")["Mid"])["Stacks"][0]
    leaf = cfn.describe_stacks(StackName=_physical_ids(cfn, mid["StackId"])["Leaf"])["Stacks"][0]
    assert (mid["ParentId"], mid["RootId"]) == (root_id, root_id)
    assert (leaf["ParentId"], leaf["RootId"]) == (mid["StackId"], root_id)
    assert "ParentId" not in cfn.describe_stacks(StackName="tree")["Stacks"][0]
    # A stack nested by CloudFormation is held by its parent: it cannot be nested elsewhere.
    created = _import(cfn, "thief", {"Resources": {"Mid": {"Type": STACK, "DeletionPolicy": "Retain",
                                                           "Properties": {"TemplateURL": mid_url}}}},
                      [_stack_entry("Mid", mid["StackId"])])
    assert _failed_reason(cfn, created) == f"{mid['StackId']} already exists in stack {root_id}"


def test_a_resource_whose_only_change_is_depends_on_or_its_policies_is_not_updated(emulator):
    cfn = emulator.client("cloudformation")
    before = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "steady"}},
                            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "steady-topic"}}}}
    cfn.create_stack(StackName="Steady", TemplateBody=json.dumps(before))
    after = json.loads(json.dumps(before))
    after["Resources"]["Queue"].update(DependsOn="Topic", DeletionPolicy="Retain", UpdateReplacePolicy="Retain")
    after["Resources"]["Extra"] = {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "steady-extra"}}
    _executed(cfn, cfn.create_change_set(StackName="Steady", ChangeSetName="deps", ChangeSetType="UPDATE",
                                         TemplateBody=json.dumps(after)), "UPDATE_COMPLETE")
    touched = {(e["LogicalResourceId"], e["ResourceStatus"])
               for e in cfn.describe_stack_events(StackName="Steady")["StackEvents"]}
    assert ("Extra", "CREATE_COMPLETE") in touched
    assert not [t for t in touched if t[0] == "Queue" and t[1].startswith("UPDATE")], touched
    # A property change still is an update.
    after["Resources"]["Queue"]["Properties"]["VisibilityTimeout"] = 60
    _executed(cfn, cfn.create_change_set(StackName="Steady", ChangeSetName="prop", ChangeSetType="UPDATE",
                                         TemplateBody=json.dumps(after)), "UPDATE_COMPLETE")
    touched = {(e["LogicalResourceId"], e["ResourceStatus"])
               for e in cfn.describe_stack_events(StackName="Steady")["StackEvents"]}
    assert ("Queue", "UPDATE_COMPLETE") in touched


def test_describe_stack_resources_answers_the_first_100_and_list_stack_resources_every_one(emulator):
    cfn = emulator.client("cloudformation")
    template = {"Resources": {f"Topic{i}": {"Type": "AWS::SNS::Topic"} for i in range(101)}}
    cfn.create_stack(StackName="wide", TemplateBody=json.dumps(template))
    described = cfn.describe_stack_resources(StackName="wide")["StackResources"]
    assert len(described) == 100
    listed = [r["LogicalResourceId"]
              for page in cfn.get_paginator("list_stack_resources").paginate(StackName="wide")
              for r in page["StackResourceSummaries"]]
    assert sorted(listed) == sorted(template["Resources"])
