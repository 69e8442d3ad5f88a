"""CloudFormation custom resources (`Custom::*`, `AWS::CloudFormation::CustomResource`) as AWS runs them.

moto 5.2.5 models `Custom::*` with a `CustomModel` that hands the request to moto's Docker-based
Lambda execution (here: "error running docker" in the log, the handler never runs), with a
ResponseURL on `host.docker.internal:5000` nobody can reach; the resource's physical id is a
generated name, `Fn::GetAtt` answers nothing (an Output reading it is dropped) and the stack stays
CREATE_IN_PROGRESS for ever (a change set's execution says complete). An update leaves the stack
holding nothing for the resource (no update model: the next DescribeStacks answers 500) and a
delete sends nothing. `AWS::CloudFormation::CustomResource` has no model at all: it is
skipped. Here both types are the emulator's `CustomResource` model, which does what CloudFormation
does:

- Create, Update and Delete send CloudFormation's request document (`RequestType`,
  `ServiceToken`, `ResponseURL`, `StackId`, `RequestId`, `ResourceType`, `LogicalResourceId`,
  `ResourceProperties` with every scalar a string, `PhysicalResourceId` for Update and Delete,
  `OldResourceProperties` for Update) to the `ServiceToken`: a Lambda function ARN (with a
  qualifier or not) is invoked asynchronously through the emulator's runner (lambda_runner.py),
  an SNS topic ARN gets the document published (`lambda` subscriptions are delivered through the
  runner);
- the `ResponseURL` is a pre-signed-style S3 PUT URL on the emulator, path-style, as AWS's
  response bucket URL: `http://127.0.0.1:<port>/cloudformation-custom-resource-response-<region
  without dashes>/<StackId>|<LogicalResourceId>|<RequestId>?X-Amz-Algorithm=…&X-Amz-Signature=…`
  (`|` and `:` percent-encoded). A PUT to it (what cfn-response, aws-cdk-lib's handlers and the
  provider framework send; Node.js handlers' `https.request({hostname, path})` reaches the emulator
  through lambda_preload.js) is answered 200 as S3 answers it; a wrong signature 403
  `SignatureDoesNotMatch`, another method 403 `AccessDenied`. The emulator answers these paths
  itself (never moto's S3, not counted, no faults);
- CloudFormation waits for the response: up to `EMU_CUSTOM_RESOURCE_TIMEOUT` seconds (default 60;
  `POST /_emulator/config {"customResourceTimeoutSeconds": N}`), or the resource's
  `ServiceTimeout` when shorter (AWS: one hour, or `ServiceTimeout`). No response in time fails
  the resource with AWS's "CloudFormation did not receive a response from your Custom Resource. …";
- SUCCESS: the resource takes the response's `PhysicalResourceId`, `Fn::GetAtt` reads `Data`
  (a key it lacks fails the consumer: "CustomResource attribute error: Vendor response doesn't
  contain X attribute in object …"). An Update answered with another physical id is a
  replacement: the old id gets a Delete in the cleanup after the operation succeeds
  (`UpdateReplacePolicy: Retain` keeps it). FAILED: the resource fails with "Received response
  status [FAILED] from custom resource. Message returned: <Reason> (RequestId: <id>)"; the stack
  rolls back (cfn_import.py), which sends Delete to a failed Create that answered a physical id,
  Update with the old properties to an updated resource, Delete to the new resource of a
  replacement; a Delete a removed resource needs waits for the cleanup, so a rollback keeps it.

`Journal`: what one stack operation (CreateStack, UpdateStack, DeleteStack, ExecuteChangeSet) did
to custom resources, so that cfn_import.py can clean up after success or roll back after failure.
moto retries a failed update or delete up to five times in one operation: a request already
answered FAILED in the operation is not sent again.
"""

import datetime
import hashlib
import hmac
import json
import os
import secrets
import sys
import threading
import uuid
from urllib.parse import parse_qs, quote

RESPONSE_BUCKET_PREFIX = "cloudformation-custom-resource-response-"
TYPE = "AWS::CloudFormation::CustomResource"
URL_EXPIRES_SECONDS = 7200
MAX_RESPONSE_BYTES = 4096  # CloudFormation's limit on a response document
SNS_SUBJECT = "AWS CloudFormation custom resource request"
_SECRET = secrets.token_bytes(32)


def log(message):
    print(f"cfn-custom: {message}", file=sys.stderr, flush=True)


class Settings:
    """Set by server.py: the runner that runs handlers, the endpoint, the response timeout."""

    runner = None
    endpoint = None
    timeout_seconds = float(os.environ.get("EMU_CUSTOM_RESOURCE_TIMEOUT") or 60)


def is_custom_type(resource_type):
    return bool(resource_type) and (resource_type.startswith("Custom::") or resource_type == TYPE)


class CustomResourceFailure(Exception):
    """A request answered FAILED, not answered, or not deliverable. `message` is the reason the
    stack's events show; `physical_id` the id a FAILED answer gave (a failed Create's rollback
    sends Delete with it)."""

    def __init__(self, message, physical_id=None):
        super().__init__(message)
        self.message = message
        self.physical_id = physical_id


class CustomAttributeError(Exception):
    """`Fn::GetAtt` of a key the handler's `Data` lacks."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message


# -- the ResponseURL -----------------------------------------------------------------------------

class _Pending:
    def __init__(self):
        self.answered = threading.Event()
        self.body = None


_pending = {}  # RequestId -> _Pending
_pending_lock = threading.Lock()


def _signature(bucket, key, stamp, expires):
    text = f"PUT\n/{bucket}/{key}\n{stamp}\n{expires}".encode()
    return hmac.new(_SECRET, text, hashlib.sha256).hexdigest()


def response_url(endpoint, region, stack_id, logical_id, request_id):
    """A pre-signed-style S3 PUT URL, path-style on the emulator, in AWS's response bucket form."""
    bucket = RESPONSE_BUCKET_PREFIX + region.replace("-", "")
    key = f"{stack_id}|{logical_id}|{request_id}"
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    query = "&".join([
        "X-Amz-Algorithm=AWS4-HMAC-SHA256",
        f"X-Amz-Date={stamp}",
        "X-Amz-SignedHeaders=host",
        f"X-Amz-Expires={URL_EXPIRES_SECONDS}",
        f"X-Amz-Credential={quote(f'AKIAEMULATORCFNRESP/{stamp[:8]}/{region}/s3/aws4_request', safe='')}",
        f"X-Amz-Signature={_signature(bucket, key, stamp, URL_EXPIRES_SECONDS)}",
    ])
    return f"{endpoint}/{bucket}/{quote(key, safe='/')}?{query}"


def is_response_path(path):
    return path.startswith("/" + RESPONSE_BUCKET_PREFIX)


def _s3_error(start_response, status, code, message):
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>emulator</RequestId></Error>").encode()
    start_response(status, [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))])
    return [body]


def answer_response_put(environ, start_response):
    """WSGI: a request to a ResponseURL (the path is WSGI's, percent-decoded)."""
    path = environ.get("PATH_INFO", "")
    bucket, _, key = path.lstrip("/").partition("/")
    params = {name: values[0] for name, values in parse_qs(environ.get("QUERY_STRING", "")).items()}
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    if environ.get("REQUEST_METHOD") != "PUT":
        return _s3_error(start_response, "403 Forbidden", "AccessDenied", "Access Denied")
    stamp, expires = params.get("X-Amz-Date", ""), params.get("X-Amz-Expires", "")
    expected = _signature(bucket, key, stamp, expires)
    if not hmac.compare_digest(expected, params.get("X-Amz-Signature", "")):
        return _s3_error(start_response, "403 Forbidden", "SignatureDoesNotMatch",
                         "The request signature we calculated does not match the signature you provided.")
    try:
        signed_at = datetime.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
        expired = datetime.datetime.now(datetime.timezone.utc) > signed_at + datetime.timedelta(seconds=int(expires))
    except ValueError:
        expired = True
    if expired:
        return _s3_error(start_response, "403 Forbidden", "AccessDenied", "Request has expired")
    request_id = key.rsplit("|", 1)[-1]
    with _pending_lock:
        pending = _pending.get(request_id)
        if pending is not None and pending.body is None:
            pending.body = body
            pending.answered.set()
        elif pending is None:
            log(f"a response to request {request_id} arrived after CloudFormation stopped waiting; ignored")
    etag = '"' + hashlib.md5(body).hexdigest() + '"'
    start_response("200 OK", [("ETag", etag), ("Content-Length", "0")])
    return [b""]


# -- one request ---------------------------------------------------------------------------------

def as_cloudformation_sends(value):
    """Properties as CloudFormation hands them to a handler: every scalar a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return [as_cloudformation_sends(item) for item in value]
    if isinstance(value, dict):
        return {key: as_cloudformation_sends(item) for key, item in value.items()}
    return value


def _deliver(token, event, what):
    """Starts the handler (asynchronously, as CloudFormation invokes it); CustomResourceFailure
    when the ServiceToken cannot be delivered to."""
    parts = str(token or "").split(":")
    if len(parts) in (7, 8) and parts[0] == "arn" and parts[2] == "lambda" and parts[5] == "function":
        from lambda_runner import runtime_kind
        from moto.awslambda.utils import get_backend

        region, account, name = parts[3], parts[4], parts[6]
        qualifier = parts[7] if len(parts) == 8 else None
        try:
            backend = get_backend(account, region)
            fn = backend.get_function(name, qualifier)
        except Exception:
            fn = None
        if fn is None:
            raise CustomResourceFailure(f"Function not found: {token}")
        runner = Settings.runner
        endpoint = Settings.endpoint or getattr(runner, "endpoint", None)
        kind = runtime_kind(fn)
        if runner is None or not endpoint:
            raise CustomResourceFailure("the emulator's Lambda runner is not ready (its endpoint is unknown)")
        if kind is None or not getattr(fn, "code_bytes", b""):
            raise CustomResourceFailure(
                f"the emulator cannot run {token} (runtime {fn.run_time or fn.package_type}: only nodejs* and "
                "python3* zip functions run), so it cannot answer the custom resource request")
        runner.invoke_in_background(fn, backend, kind, event, str(uuid.uuid4()), token, endpoint,
                                    source=f" ({what} {event['RequestType']})")
        return
    if len(parts) == 6 and parts[0] == "arn" and parts[2] == "sns":
        from moto.sns.models import sns_backends

        region, account = parts[3], parts[4]
        try:
            sns_backends[account][region].publish(json.dumps(event), arn=token, subject=SNS_SUBJECT)
        except Exception as err:
            raise CustomResourceFailure(f"Topic {token} could not be published to: "
                                        f"{getattr(err, 'message', None) or err}")
        return
    raise CustomResourceFailure(f"Invalid service token: {token}" if token else
                                "Service token is required for custom resources (ServiceToken)")


def _wait_seconds(properties):
    limit = float(Settings.timeout_seconds)
    service_timeout = properties.get("ServiceTimeout")
    try:
        if service_timeout is not None:
            limit = min(limit, float(service_timeout))
    except (TypeError, ValueError):
        pass
    return limit


def exchange(request_type, stack_id, region, logical_id, resource_type, properties, old_properties=None,
             physical_id=None):
    """Sends one request and waits for the handler's response. Answers (physical id, Data,
    NoEcho, RequestId) for SUCCESS; raises CustomResourceFailure for FAILED, no answer, a bad
    answer."""
    request_id = str(uuid.uuid4())
    token = properties.get("ServiceToken")
    event = {
        "RequestType": request_type,
        "ServiceToken": token,
        "ResponseURL": response_url(Settings.endpoint or "http://127.0.0.1", region, stack_id, logical_id,
                                    request_id),
        "StackId": stack_id,
        "RequestId": request_id,
        "ResourceType": resource_type,
        "LogicalResourceId": logical_id,
        "ResourceProperties": as_cloudformation_sends(properties),
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    if old_properties is not None:
        event["OldResourceProperties"] = as_cloudformation_sends(old_properties)
    pending = _Pending()
    with _pending_lock:
        _pending[request_id] = pending
    try:
        _deliver(token, event, f"custom resource {logical_id}")
        if not pending.answered.wait(_wait_seconds(properties)):
            raise CustomResourceFailure(
                "CloudFormation did not receive a response from your Custom Resource. Please check your logs "
                f"for requestId [{request_id}]. If you are using the Python cfn-response module, you may need to "
                "update your Lambda function code so that CloudFormation can attach the updated version.")
    finally:
        with _pending_lock:
            _pending.pop(request_id, None)
    return (*_read_response(pending.body, request_type, request_id), request_id)


def _read_response(body, request_type, request_id):
    if len(body) > MAX_RESPONSE_BYTES:
        raise CustomResourceFailure("Response object is too long.")
    try:
        answer = json.loads(body)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise CustomResourceFailure("Invalid response object: the response is not a JSON object")
    status = answer.get("Status")
    physical_id = answer.get("PhysicalResourceId")
    physical_id = physical_id if isinstance(physical_id, str) and physical_id else None
    if status == "FAILED":
        raise CustomResourceFailure(
            "Received response status [FAILED] from custom resource. Message returned: "
            f"{answer.get('Reason')} (RequestId: {request_id})", physical_id=physical_id)
    if status != "SUCCESS":
        raise CustomResourceFailure(
            f"Invalid response object: Status must be SUCCESS or FAILED, not {json.dumps(status)}")
    if physical_id is None and request_type != "Delete":
        raise CustomResourceFailure("Invalid PhysicalResourceId")
    data = answer.get("Data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CustomResourceFailure("Invalid response object: Data must be a JSON object")
    no_echo = answer.get("NoEcho") in (True, "true")
    return physical_id, data, no_echo


# -- what one stack operation did ----------------------------------------------------------------

class Journal:
    """A stack operation's custom-resource requests. `defer_deletes`: a Delete for a resource the
    operation removes waits for the cleanup after success (an update)."""

    def __init__(self, defer_deletes=False):
        self.defer_deletes = defer_deletes
        self.failures = {}  # (logical id, request type) -> CustomResourceFailure, sent once
        self.updated = []  # (logical id, old model, new model): updated in place
        self.replaced = []  # (logical id, old model, new model): a new physical id
        self.removed = []  # models whose Delete waits for the cleanup
        self.failed_creates = []  # (model that never was, physical id its FAILED answer gave)
        self.failed_updates = []  # (logical id, old model, the model it was to become)


_local = threading.local()


def begin(defer_deletes=False):
    journal = Journal(defer_deletes)
    _local.journal = journal
    return journal


def end():
    _local.journal = None


def current():
    return getattr(_local, "journal", None)


def _once(logical_id, request_type, send):
    """Runs `send` unless this operation's same request already failed (moto retries)."""
    journal = current()
    if journal is not None and (logical_id, request_type) in journal.failures:
        raise journal.failures[(logical_id, request_type)]
    try:
        return send()
    except CustomResourceFailure as failure:
        if journal is not None:
            journal.failures[(logical_id, request_type)] = failure
        raise


# -- the resource --------------------------------------------------------------------------------

class CustomResource:
    """A custom resource of a stack: its physical id and Data come from its handler's answers. moto's
    CloudFormation uses it as one of its models (not a subclass of CloudFormationModel, whose
    metaclass registers models by moto's own module names)."""

    def __init__(self, account_id, region_name, stack_id, logical_id, resource_type, resource_json, physical_id,
                 data, no_echo):
        self.account_id = account_id
        self.region_name = region_name
        self.stack_id = stack_id
        self.logical_id = logical_id
        self.resource_type = resource_type
        self.properties = dict(resource_json.get("Properties") or {})
        self.deletion_policy = resource_json.get("DeletionPolicy")
        self.update_replace_policy = resource_json.get("UpdateReplacePolicy")
        self.physical_id = physical_id
        self.data = data
        self.no_echo = no_echo
        self.request_id = None

    @property
    def physical_resource_id(self):
        return self.physical_id

    @staticmethod
    def cloudformation_name_type():
        return ""

    @staticmethod
    def cloudformation_type():
        return TYPE

    @classmethod
    def has_cfn_attr(cls, attr):
        return True  # whatever the handler's Data holds

    def is_created(self):
        return True

    def get_cfn_attribute(self, attribute_name):
        if attribute_name in self.data:
            return self.data[attribute_name]
        raise CustomAttributeError(
            f"CustomResource attribute error: Vendor response doesn't contain {attribute_name} attribute in object "
            f"{self.stack_id}|{self.logical_id}|{self.request_id}")

    def _send(self, request_type, properties, old_properties=None, physical_id=None):
        """One request; keeps the answer's physical id (Create, Update), Data and NoEcho."""
        physical, data, no_echo, request_id = exchange(request_type, self.stack_id, self.region_name,
                                                       self.logical_id, self.resource_type, properties,
                                                       old_properties, physical_id)
        if request_type != "Delete":
            self.physical_id, self.data, self.no_echo, self.request_id = physical, data, no_echo, request_id

    @classmethod
    def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        stack_id = kwargs.get("StackId")
        if not stack_id:  # not a stack's (Cloud Control): moto's model, as before
            from moto.cloudformation.custom_model import CustomModel
            return CustomModel.create_from_cloudformation_json(resource_name, cloudformation_json, account_id,
                                                               region_name, **kwargs)
        logical_id, resource_type = kwargs["LogicalId"], kwargs["ResourceType"]
        resource = cls(account_id, region_name, stack_id, logical_id, resource_type, cloudformation_json, None, {},
                       False)
        try:
            _once(logical_id, "Create", lambda: resource._send("Create", resource.properties))
        except CustomResourceFailure as failure:
            journal = current()
            if journal is not None and failure.physical_id and all(
                    model.logical_id != logical_id for model, _ in journal.failed_creates):
                journal.failed_creates.append((resource, failure.physical_id))
            raise
        return resource

    @classmethod
    def update_from_cloudformation_json(cls, original_resource, new_resource_name, cloudformation_json, account_id,
                                        region_name):
        logical_id = getattr(original_resource, "logical_id", None) or getattr(original_resource,
                                                                               "logical_resource_id", "")
        resource_type = cloudformation_json.get("Type") or TYPE
        stack_id = getattr(original_resource, "stack_id", "")
        if not isinstance(original_resource, CustomResource):
            raise CustomResourceFailure("the emulator holds no custom resource to update")
        new = cls(account_id, region_name, stack_id, logical_id, resource_type, cloudformation_json, None, {}, False)
        old = original_resource
        if new.properties.get("ServiceToken") != old.properties.get("ServiceToken"):
            raise CustomResourceFailure("Modifying service token is not allowed.")
        journal = current()
        try:
            _once(logical_id, "Update", lambda: new._send("Update", new.properties, old.properties, old.physical_id))
        except CustomResourceFailure:
            if journal is not None and all(entry[0] != logical_id for entry in journal.failed_updates):
                journal.failed_updates.append((logical_id, old, new))
            raise
        if new.physical_id != old.physical_id:
            if journal is not None:
                journal.replaced.append((logical_id, old, new))
            elif old.update_replace_policy != "Retain":
                old.delete_now()
        elif journal is not None:
            journal.updated.append((logical_id, old, new))
        return new

    def delete(self, account_id=None, region_name=None):
        """moto's ResourceMap deletes through this (a stack's delete, an update's removal, a rollback)."""
        if self.deletion_policy == "Retain":
            return
        journal = current()
        if journal is not None and journal.defer_deletes:
            if self not in journal.removed:
                journal.removed.append(self)
            return
        self.delete_now()

    def delete_now(self):
        """Sends Delete; CustomResourceFailure when it is answered FAILED (or not at all)."""
        _once(self.logical_id, f"Delete {self.physical_id}",
              lambda: self._send("Delete", self.properties, physical_id=self.physical_id))

    def roll_back_update(self, attempted):
        """The rollback of an update (done or failed) to `attempted`'s properties: Update back to
        this model's properties, the physical id the resource has."""
        physical_id = self.physical_id
        try:
            _once(self.logical_id, "Rollback update",
                  lambda: self._send("Update", self.properties, attempted.properties, physical_id))
        finally:
            self.physical_id = physical_id  # the resource keeps its id (another one is not followed)


def resource_class_from_type(original):
    def resource_class(resource_type):
        if is_custom_type(resource_type):
            return CustomResource
        return original(resource_type)

    return resource_class


def install(runner):
    """Makes moto's CloudFormation build custom resources with the emulator's model."""
    from moto.cloudformation import parsing

    Settings.runner = runner
    if not getattr(parsing.resource_class_from_type, "_cdkd_custom", False):
        patched = resource_class_from_type(parsing.resource_class_from_type)
        patched._cdkd_custom = True
        parsing.resource_class_from_type = patched
