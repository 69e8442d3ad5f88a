"""CloudFormation custom resources as AWS runs them (cfn_custom.py): the handler really runs (through
the emulator's Lambda runner), gets CloudFormation's request document, and its response PUT to
the ResponseURL decides the resource's physical id, its `Fn::GetAtt` values and whether it fails.

The Node.js handler is the custom-resource fixtures' own (tests/fixtures/apps/custom-handler.js):
it logs every request to SSM under /custom/<Tag>/log/ and answers with an https PUT to the
ResponseURL's hostname and path, as aws-cdk-lib's handlers do."""

import json
import os
import subprocess
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE_HANDLER = os.path.join(HERE, "..", "fixtures", "apps", "custom-handler.js")
TRUST = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}
FAILED_PREFIX = "Received response status [FAILED] from custom resource. Message returned: "


@pytest.fixture(scope="module")
def handler_source():
    return subprocess.run(["node", "-e", f"process.stdout.write(require({json.dumps(FIXTURE_HANDLER)}))"],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def cfn(emulator):
    return emulator.client("cloudformation")


def _role(emulator):
    return emulator.client("iam").create_role(RoleName="custom-handler",
                                              AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]


def _function(role, source, runtime="nodejs20.x"):
    return {"Type": "AWS::Lambda::Function", "Properties": {
        "Runtime": runtime, "Handler": "index.handler", "Role": role, "Code": {"ZipFile": source}, "Timeout": 30}}


def _echo(tag, message="hello", resource_type="Custom::Echo", **extra):
    return {"Type": resource_type, "Properties": {
        "ServiceToken": {"Fn::GetAtt": ["EchoHandler", "Arn"]}, "Message": message, "Count": 3, "Tag": tag, **extra}}


def _template(role, source, echo, outputs=None, **extra):
    template = {"Resources": {"EchoHandler": _function(role, source), "Echo": echo, **extra}}
    if outputs is not None:
        template["Outputs"] = outputs
    return json.dumps(template)


ECHO_OUTPUTS = {"EchoOut": {"Value": {"Fn::GetAtt": ["Echo", "Echo"]}}, "EchoId": {"Value": {"Ref": "Echo"}}}


def _requests(emulator, tag):
    """The requests the handler logged, oldest first: [(RequestType, what it saw)]."""
    ssm = emulator.client("ssm")
    found, token = [], None
    while True:
        page = ssm.get_parameters_by_path(Path=f"/custom/{tag}/log", Recursive=True,
                                          **({"NextToken": token} if token else {}))
        found += page["Parameters"]
        token = page.get("NextToken")
        if not token:
            break
    found.sort(key=lambda p: p["Name"])
    return [(json.loads(p["Value"])["RequestType"], json.loads(p["Value"])) for p in found]


def _stack(cfn, name):
    return cfn.describe_stacks(StackName=name)["Stacks"][0]


def _outputs(stack):
    return {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs") or []}


def _events(cfn, name):
    """Oldest first: (logical id, status, reason, physical id)."""
    return [(e["LogicalResourceId"], e["ResourceStatus"], e.get("ResourceStatusReason"), e.get("PhysicalResourceId"))
            for e in reversed(cfn.describe_stack_events(StackName=name)["StackEvents"])]


def _physical(cfn, name):
    return {r["LogicalResourceId"]: r["PhysicalResourceId"]
            for r in cfn.describe_stack_resources(StackName=name)["StackResources"]}


# -- CreateStack / UpdateStack / DeleteStack ------------------------------------------------------

def test_a_custom_resource_runs_its_handler_and_takes_its_answer(emulator, cfn, handler_source):
    role = _role(emulator)
    cfn.create_stack(StackName="custom", TemplateBody=_template(
        role, handler_source, _echo("ok"), ECHO_OUTPUTS,
        Consumer={"Type": "AWS::SSM::Parameter", "Properties": {
            "Name": "/consumer", "Type": "String", "Value": {"Fn::GetAtt": ["Echo", "Echo"]}}},
        Plain={"Type": "AWS::CloudFormation::CustomResource", "Properties": {
            "ServiceToken": {"Fn::GetAtt": ["EchoHandler", "Arn"]}, "Message": "plain", "Tag": "ok"}}))
    stack = _stack(cfn, "custom")
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    # Data reaches Fn::GetAtt (an Output, a consuming resource); the physical id is the answer's.
    assert _outputs(stack) == {"EchoOut": "hello!", "EchoId": "echo-hello"}
    assert emulator.client("ssm").get_parameter(Name="/consumer")["Parameter"]["Value"] == "hello!"
    physical = _physical(cfn, "custom")
    assert physical["Echo"] == "echo-hello" and physical["Plain"] == "echo-plain"
    # The handler ran, with CloudFormation's request: every property a string, ServiceToken too.
    requests = _requests(emulator, "ok")
    assert sorted(kind for kind, _ in requests) == ["Create", "Create"]
    echo = next(seen for _, seen in requests if seen["LogicalResourceId"] == "Echo")
    function_arn = emulator.client("lambda").get_function(FunctionName=physical["EchoHandler"])[
        "Configuration"]["FunctionArn"]
    assert echo["ResourceProperties"] == {"ServiceToken": function_arn, "Message": "hello", "Count": "3", "Tag": "ok"}
    assert echo["ResourceType"] == "Custom::Echo" and "PhysicalResourceId" not in echo
    assert "OldResourceProperties" not in echo
    plain = next(seen for _, seen in requests if seen["LogicalResourceId"] == "Plain")
    assert plain["ResourceType"] == "AWS::CloudFormation::CustomResource"

    # A new Message: Update with the old properties; a new physical id is a replacement, whose old
    # id gets Delete after the update succeeded.
    cfn.update_stack(StackName="custom", TemplateBody=_template(role, handler_source, _echo("ok", "again"),
                                                                ECHO_OUTPUTS))
    stack = _stack(cfn, "custom")
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert _outputs(stack) == {"EchoOut": "again!", "EchoId": "echo-again"}
    requests = _requests(emulator, "ok")[2:]
    # The update first; the deletes (the replaced id, the removed resource) in the cleanup after it.
    assert [kind for kind, _ in requests] == ["Update", "Delete", "Delete"]
    update = requests[0][1]
    assert update["PhysicalResourceId"] == "echo-hello"
    assert update["ResourceProperties"]["Message"] == "again"
    assert update["OldResourceProperties"]["Message"] == "hello"
    deletes = {seen["LogicalResourceId"]: seen["PhysicalResourceId"] for kind, seen in requests if kind == "Delete"}
    assert deletes == {"Echo": "echo-hello", "Plain": "echo-plain"}
    events = _events(cfn, "custom")
    assert ("Echo", "DELETE_COMPLETE", None, "echo-hello") in events
    assert events[-1][:2] == ("custom", "UPDATE_COMPLETE")

    # DeleteStack sends Delete (before the function it needs goes).
    cfn.delete_stack(StackName="custom")
    (kind, seen), = _requests(emulator, "ok")[5:]
    assert kind == "Delete" and seen["PhysicalResourceId"] == "echo-again"
    assert seen["ResourceProperties"]["Message"] == "again"
    assert not emulator.client("lambda").list_functions()["Functions"]


def test_a_failed_answer_rolls_the_new_stack_back_with_the_handler_s_reason(emulator, cfn, handler_source):
    role = _role(emulator)
    answer = cfn.create_stack(StackName="failing", TemplateBody=_template(
        role, handler_source, _echo("fail", Fail="true"), ECHO_OUTPUTS))
    stack = _stack(cfn, answer["StackId"])
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert "Outputs" not in stack
    events = _events(cfn, "failing")
    failed = [e for e in events if e[1].endswith("_FAILED")]
    assert len(failed) == 1 and failed[0][:2] == ("Echo", "CREATE_FAILED")
    assert failed[0][2].startswith(FAILED_PREFIX + "asked to fail (RequestId: "), failed[0]
    assert failed[0][3] == "failed"  # the physical id the FAILED answer gave
    assert ("failing", "ROLLBACK_IN_PROGRESS", "The following resource(s) failed to create: [Echo]. ", None) in [
        e[:3] + (None,) for e in events]
    assert events[-1][:2] == ("failing", "ROLLBACK_COMPLETE")
    # The rollback sends Delete with the physical id the failed Create answered, then deletes the
    # function; the stack holds nothing.
    requests = _requests(emulator, "fail")
    assert [kind for kind, _ in requests] == ["Create", "Delete"]
    assert requests[1][1]["PhysicalResourceId"] == "failed"
    assert ("Echo", "DELETE_COMPLETE", None, "failed") in events
    assert not emulator.client("lambda").list_functions()["Functions"]
    assert cfn.describe_stack_resources(StackName="failing")["StackResources"] == []


def test_no_answer_fails_the_resource_after_the_timeout(emulator, cfn, handler_source):
    emulator.post("/_emulator/config", {"customResourceTimeoutSeconds": 2})
    role = _role(emulator)
    cfn.create_stack(StackName="silent", TemplateBody=_template(role, handler_source, _echo("silent", Silent="true")))
    assert _stack(cfn, "silent")["StackStatus"] == "ROLLBACK_COMPLETE"
    failed = [e for e in _events(cfn, "silent") if e[1] == "CREATE_FAILED"]
    assert failed[0][0] == "Echo"
    assert failed[0][2].startswith("CloudFormation did not receive a response from your Custom Resource. "
                                   "Please check your logs for requestId ["), failed[0]
    # It did run; with no physical id answered, the rollback has nothing to delete.
    assert [kind for kind, _ in _requests(emulator, "silent")] == ["Create"]


def test_an_output_reading_a_key_the_data_lacks_rolls_the_stack_back(emulator, cfn, handler_source):
    role = _role(emulator)
    cfn.create_stack(StackName="missing", TemplateBody=_template(
        role, handler_source, _echo("missing"), {"Nope": {"Value": {"Fn::GetAtt": ["Echo", "Nope"]}}}))
    assert _stack(cfn, "missing")["StackStatus"] == "ROLLBACK_COMPLETE"
    events = _events(cfn, "missing")
    reason = next(e[2] for e in events if e[1] == "ROLLBACK_IN_PROGRESS")
    assert reason.startswith("CustomResource attribute error: Vendor response doesn't contain Nope attribute in "
                             "object arn:aws:cloudformation:us-east-1:123456789012:stack/missing/"), reason
    assert [kind for kind, _ in _requests(emulator, "missing")] == ["Create", "Delete"]


PYTHON_HANDLER = """
import boto3
import cfnresponse

def handler(event, context):
    boto3.client("ssm").put_parameter(Name="/py/" + event["RequestType"], Value=event["ResponseURL"],
                                      Type="String", Overwrite=True)
    if event["RequestType"] == "Delete" and event["ResourceProperties"].get("FailDelete") == "true":
        cfnresponse.send(event, context, cfnresponse.FAILED, {}, event["PhysicalResourceId"], reason="keep me")
        return
    cfnresponse.send(event, context, cfnresponse.SUCCESS, {"Py": "yes"}, "py-" + event["LogicalResourceId"])
"""


def test_a_python_handler_answers_through_cfnresponse_and_a_failed_delete_keeps_the_stack(emulator, cfn):
    role = _role(emulator)
    template = {"Resources": {
        "EchoHandler": _function(role, PYTHON_HANDLER, runtime="python3.12"),
        "Thing": {"Type": "Custom::Thing", "Properties": {
            "ServiceToken": {"Fn::GetAtt": ["EchoHandler", "Arn"]}, "FailDelete": True}}},
        "Outputs": {"Py": {"Value": {"Fn::GetAtt": ["Thing", "Py"]}}}}
    cfn.create_stack(StackName="py", TemplateBody=json.dumps(template))
    stack = _stack(cfn, "py")
    assert stack["StackStatus"] == "CREATE_COMPLETE" and _outputs(stack) == {"Py": "yes"}
    assert _physical(cfn, "py")["Thing"] == "py-Thing"
    # The ResponseURL: AWS's response bucket, path-style on the emulator, pre-signed.
    ssm = emulator.client("ssm")
    url = ssm.get_parameter(Name="/py/Create")["Parameter"]["Value"]
    assert url.startswith(emulator.endpoint + "/cloudformation-custom-resource-response-useast1/arn%3Aaws%3A"
                                              "cloudformation%3Aus-east-1%3A123456789012%3Astack/py/"), url
    assert "%7CThing%7C" in url and "X-Amz-Signature=" in url and "X-Amz-Expires=7200" in url
    # A tampered signature is refused as S3 refuses it; a GET is not allowed.
    forged = url.replace("X-Amz-Signature=", "X-Amz-Signature=0")
    for method, target in (("PUT", forged), ("GET", url)):
        request = urllib.request.Request(target, data=b"{}" if method == "PUT" else None, method=method)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request)
        assert refused.value.code == 403
        assert (b"SignatureDoesNotMatch" if method == "PUT" else b"AccessDenied") in refused.value.read()

    cfn.delete_stack(StackName="py")
    stack = _stack(cfn, "py")
    assert stack["StackStatus"] == "DELETE_FAILED"
    events = _events(cfn, "py")
    assert events[-2][:2] == ("Thing", "DELETE_FAILED")
    assert events[-2][2].startswith(FAILED_PREFIX + "keep me (RequestId: ")
    assert events[-1][:3] == ("py", "DELETE_FAILED", "The following resource(s) failed to delete: [Thing]. ")
    assert set(_physical(cfn, "py")) == {"EchoHandler", "Thing"}  # nothing else was deleted
    assert ssm.get_parameter(Name="/py/Delete")


SNS_HANDLER = """
const https = require('https');
const { URL } = require('url');
exports.handler = async (event) => {
  const request = JSON.parse(event.Records[0].Sns.Message);
  const id = request.RequestType === 'Delete' ? request.PhysicalResourceId : 'topic-' + request.ResourceProperties.Name;
  const body = JSON.stringify({ Status: 'SUCCESS', Reason: 'ok', PhysicalResourceId: id,
    StackId: request.StackId, RequestId: request.RequestId, LogicalResourceId: request.LogicalResourceId,
    Data: { Echo: request.RequestType + ' ' + request.ResourceProperties.Name + ' ' + event.Records[0].Sns.Subject } });
  const url = new URL(request.ResponseURL);
  await new Promise((resolve, reject) => {
    const put = https.request({ hostname: url.hostname, path: url.pathname + url.search, method: 'PUT',
      headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) } },
      (response) => { response.resume(); response.on('end', resolve); });
    put.on('error', reject);
    put.write(body);
    put.end();
  });
};
"""


def test_a_topic_service_token_gets_the_request_published(emulator, cfn):
    # As snsbacked.js: the ServiceToken is a topic; its Lambda subscriber answers.
    role = _role(emulator)
    template = {"Resources": {
        "Subscriber": _function(role, SNS_HANDLER),
        "Requests": {"Type": "AWS::SNS::Topic", "Properties": {"Subscription": [
            {"Protocol": "lambda", "Endpoint": {"Fn::GetAtt": ["Subscriber", "Arn"]}}]}},
        "ViaTopic": {"Type": "AWS::CloudFormation::CustomResource", "DependsOn": "Requests",
                     "Properties": {"ServiceToken": {"Ref": "Requests"}, "Name": "sns"}}},
        "Outputs": {"Echo": {"Value": {"Fn::GetAtt": ["ViaTopic", "Echo"]}}}}
    cfn.create_stack(StackName="sns", TemplateBody=json.dumps(template))
    stack = _stack(cfn, "sns")
    assert stack["StackStatus"] == "CREATE_COMPLETE", _events(cfn, "sns")
    assert _outputs(stack) == {"Echo": "Create sns AWS CloudFormation custom resource request"}
    assert _physical(cfn, "sns")["ViaTopic"] == "topic-sns"


# -- change sets (the cfn_import.py path) -------------------------------------------------------

def test_an_update_change_set_after_an_import_creates_a_custom_resource(emulator, cfn, handler_source):
    role = _role(emulator)
    url = emulator.client("sqs").create_queue(QueueName="jobs")["QueueUrl"]
    queue = {"Type": "AWS::SQS::Queue", "DeletionPolicy": "Retain", "Properties": {"QueueName": "jobs"}}
    imported = cfn.create_change_set(
        StackName="exported", ChangeSetName="imp", ChangeSetType="IMPORT",
        TemplateBody=json.dumps({"Resources": {"Queue": queue}}),
        ResourcesToImport=[{"ResourceType": "AWS::SQS::Queue", "LogicalResourceId": "Queue",
                            "ResourceIdentifier": {"QueueUrl": url}}])
    cfn.execute_change_set(ChangeSetName=imported["Id"])
    assert _stack(cfn, "exported")["StackStatus"] == "IMPORT_COMPLETE"
    ref = "https://sqs.us-east-1.amazonaws.com/123456789012/jobs"  # the queue's physical id (its Ref)

    full = _template(role, handler_source, _echo("cs", {"Ref": "Queue"}), ECHO_OUTPUTS, Queue=queue)
    updated = cfn.create_change_set(StackName="exported", ChangeSetName="complete", ChangeSetType="UPDATE",
                                    TemplateBody=full)
    cfn.execute_change_set(ChangeSetName=updated["Id"])
    stack = _stack(cfn, "exported")
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    assert _outputs(stack) == {"EchoOut": ref + "!", "EchoId": "echo-" + ref}
    (kind, seen), = _requests(emulator, "cs")
    assert kind == "Create" and seen["ResourceProperties"]["Message"] == ref
    assert seen["LogicalResourceId"] == "Echo" and seen["ResourceType"] == "Custom::Echo"
    events = _events(cfn, "exported")
    assert ("Echo", "CREATE_COMPLETE", None, "echo-" + ref) in events
    assert events[-1][:2] == ("exported", "UPDATE_COMPLETE")

    # An update the handler answers FAILED rolls back: Update back to the old properties.
    failing = _template(role, handler_source, _echo("cs", {"Ref": "Queue"}, Fail="true"), ECHO_OUTPUTS, Queue=queue)
    change = cfn.create_change_set(StackName="exported", ChangeSetName="failing", ChangeSetType="UPDATE",
                                   TemplateBody=failing)
    cfn.execute_change_set(ChangeSetName=change["Id"])
    stack = _stack(cfn, "exported")
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    assert _outputs(stack) == {"EchoOut": ref + "!", "EchoId": "echo-" + ref}
    assert cfn.describe_change_set(ChangeSetName=change["Id"])["ExecutionStatus"] == "EXECUTE_FAILED"
    requests = _requests(emulator, "cs")[1:]
    assert [kind for kind, _ in requests] == ["Update", "Update"]
    assert requests[0][1]["ResourceProperties"]["Fail"] == "true"
    assert "Fail" not in requests[1][1]["ResourceProperties"]  # the rollback: the old properties
    assert requests[1][1]["OldResourceProperties"]["Fail"] == "true"
    assert requests[1][1]["PhysicalResourceId"] == "echo-" + ref
    events = _events(cfn, "exported")
    failed = [e for e in events if e[1] == "UPDATE_FAILED"]
    assert failed[0][0] == "Echo" and failed[0][2].startswith(FAILED_PREFIX + "asked to fail"), failed
    assert events[-1][:2] == ("exported", "UPDATE_ROLLBACK_COMPLETE")
    assert _physical(cfn, "exported")["Echo"] == "echo-" + ref
