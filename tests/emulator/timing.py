"""The emulator's AWS timing profile: AWS-shaped waits, off unless asked for.

`EMU_PROFILE=aws` (or `POST /_emulator/config {"profile": "aws"}`) turns it on, and
`EMU_TIME_SCALE` (`{"timeScale": 0.1}`) multiplies every duration (0.1: AWS's timing in a tenth of
the time). Every figure is in `aws_timing.json` beside this file, with its basis and source;
`{"timingOverrides": {"nat_gateway_ready_ms": 1000}}` replaces named values at run time.

With the profile on:
- every AWS request waits its call latency first (by action, else by service, else 300 ms);
- Cloud Control requests stay IN_PROGRESS for the type's time (create, update, delete);
- resources pass through AWS's states: DynamoDB tables CREATING -> ACTIVE and DELETING (a
  deleted table is still described, and its name is in use, until the delete's time has
  passed), Kinesis streams CREATING -> ACTIVE, NAT gateways pending -> available (and `deleting`
  for the delete's time: server.py's NAT delete), EC2 instances pending -> running and
  shutting-down -> terminated, Lambda functions State Pending -> Active (VPC functions far
  longer) with Invoke refused while Pending, LastUpdateStatus InProgress -> Successful after an
  update, and a deleted VPC function's interfaces released after the data's tail;
- IAM propagation: a role younger than `iam_role_propagation_ms` is refused by Lambda's
  CreateFunction ("The role defined for the function cannot be assumed by Lambda."), an instance
  profile younger than `iam_instance_profile_propagation_ms` by EC2's RunInstances (or, with
  `{"freshInstanceProfile": "launch-without"}`, the instance launched without it, as AWS
  sometimes does); a role or user that young named by an ECR repository policy
  (SetRepositoryPolicy), a service-linked role or a launch template's instance profile of Auto
  Scaling's Create/UpdateAutoScalingGroup, a Cognito user pool's SMS role (Create/UpdateUserPool, SetUserPoolMfaConfig), a state machine's
  role (Step Functions' Create/UpdateStateMachine), and a principal named by a queue policy
  (SQS's CreateQueue, SetQueueAttributes), a topic policy (SNS's CreateTopic,
  SetTopicAttributes), a bucket policy (S3's PutBucketPolicy) or a key policy (KMS's CreateKey,
  PutKeyPolicy) are refused with each service's own error (these only as the service's own
  calls: Cloud Control's are left to the host's retries); a user younger than
  `iam_user_read_after_write_ms` is unknown to IAM's own CreateAccessKey (NoSuchEntity);
- a deleted SQS queue's name is refused by CreateQueue (QueueDeletedRecently) for 60 s.

Resources made by a CloudFormation stack are left as they are (CloudFormation waits for them
itself, and its handlers retry on propagation), and so are their roles.

Off (the default) nothing here runs: every patched method checks `Settings.enabled` first, and
server.py calls `before_call` only when it is set.
"""

import json
import os
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "aws_timing.json"), encoding="utf-8") as _handle:
    TABLE = json.load(_handle)
VALUES = {name: spec["ms"] for name, spec in TABLE["values"].items()}


class Settings:
    enabled = os.environ.get("EMU_PROFILE", "").lower() == "aws"
    scale = float(os.environ.get("EMU_TIME_SCALE", "1"))
    overrides = {}
    # What RunInstances does with an instance profile IAM has not propagated: AWS either refuses
    # it ("refuse", the usual answer) or launches the instance without it ("launch-without",
    # aws-timing.md: "it can silently launch without the instance profile").
    fresh_instance_profile = "refuse"


def configure(body):
    """Applies `profile`, `timeScale` and `timingOverrides` of a POST /_emulator/config."""
    if "profile" in body:
        Settings.enabled = str(body["profile"] or "").lower() == "aws"
    if "timeScale" in body:
        Settings.scale = float(body["timeScale"])
    if "timingOverrides" in body:
        Settings.overrides = {k: float(v) for k, v in (body["timingOverrides"] or {}).items()}
    if "freshInstanceProfile" in body:
        mode = body["freshInstanceProfile"] or "refuse"
        if mode not in ("refuse", "launch-without"):
            raise ValueError(f"freshInstanceProfile: {mode!r} is neither 'refuse' nor 'launch-without'")
        Settings.fresh_instance_profile = mode


def describe():
    return {"profile": "aws" if Settings.enabled else "off", "timeScale": Settings.scale,
            "timingOverrides": dict(Settings.overrides),
            "freshInstanceProfile": Settings.fresh_instance_profile}


def value_ms(name):
    return Settings.overrides.get(name, VALUES[name])


def seconds(name, default=None):
    """`name`'s scaled duration in seconds; `default` when the profile is off."""
    if not Settings.enabled:
        return default
    return value_ms(name) * Settings.scale / 1000.0


def _due(name):
    return time.monotonic() + seconds(name)


# -- which service a request came through ---------------------------------------------------

_via = threading.local()


def _through(*services):
    """True when the current request came through one of `services` (so not a CloudFormation
    stack, whose handlers wait and retry themselves)."""
    return getattr(_via, "service", None) in services


def before_call(request):
    """Called by server.py for every AWS request while the profile is on: waits the call's
    latency; answers (status, code, message) for a request AWS would refuse at this moment."""
    _via.service = request["service"]
    latency = TABLE["call_latency"]
    action = request["action"]
    if request["service"] == "s3" and action in ("", "-", None):
        action = _s3_action(request)
    key = f"{request['service']}:{action}"
    ms = (latency["actions"].get(key) or latency["services"].get(request["service"]) or {}).get("ms")
    time.sleep((ms or latency["default_ms"]) * Settings.scale / 1000.0)
    if request["service"] == "lambda" and _operates_on_the_function(request):
        return _refuse_pending_invoke(request)
    return None


# Queries of a bucket-level request that work on its objects (S3's data plane).
_S3_OBJECT_QUERIES = ("delete", "versions", "list-type", "uploads")


def _s3_action(request):
    """S3's REST requests carry no action name: the bucket's create and delete by method, and
    every object request (and a bucket's object listing or batch delete) as `Object`, whose
    latency is S3's data plane's, not a control-plane call's."""
    from urllib.parse import parse_qs
    path = request["path"].split("?", 1)[0].strip("/")
    query = parse_qs(request.get("query") or "", keep_blank_values=True)
    if "/" in path:
        return "Object"
    if not query:
        return {"PUT": "CreateBucket", "DELETE": "DeleteBucket", "GET": "Object"}.get(request["method"], "-")
    if any(q in query for q in _S3_OBJECT_QUERIES):
        return "Object"
    return "-"


def _operates_on_the_function(request):
    """Invoke, PublishVersion, UpdateFunctionCode and UpdateFunctionConfiguration: the calls
    Lambda's function-states page says fail while a function is Pending ("Any invocations or
    other API actions that operate on the function will fail"). Its resource policy, URL, event
    source mappings and aliases are other resources, accepted meanwhile (as on AWS)."""
    method, path = request["method"], request["path"].split("?", 1)[0]
    return ((method == "POST" and (path.endswith("/invocations") or path.endswith("/versions")))
            or (method == "PUT" and (path.endswith("/code") or path.endswith("/configuration"))))


# -- Cloud Control --------------------------------------------------------------------------

def cloud_control_ms(type_name, operation):
    """How long a Cloud Control request stays IN_PROGRESS (0 with the profile off)."""
    if not Settings.enabled:
        return 0
    spec = TABLE["cloud_control"].get(type_name)
    key = {"CREATE": "create_ms", "UPDATE": "update_ms", "DELETE": "delete_ms"}[operation]
    ms = spec[key] if spec else value_ms("cloud_control_default_ms")
    return ms * Settings.scale


# -- IAM propagation ------------------------------------------------------------------------

def _fresh(principal, value):
    created = getattr(principal, "_emu_created_at", None)
    return created is not None and time.monotonic() - created < seconds(value)


REFUSALS = {}  # "service:Operation" -> the calls refused since the last clear, as IAM propagates
_refusals_lock = threading.Lock()


def _refused(operation, error):
    """Counts a call refused because a principal it names has not propagated (`operation`:
    "service:Operation", as /_emulator/stats names calls) and answers `error`, to raise."""
    with _refusals_lock:
        REFUSALS[operation] = REFUSALS.get(operation, 0) + 1
    return error


def refusals(clear=False):
    """GET /_emulator/refusals: the calls refused while IAM propagated, by operation (S3's by
    name too, where /_emulator/stats counts only `s3:PUT`); DELETE clears them."""
    with _refusals_lock:
        answer = dict(REFUSALS)
        if clear:
            REFUSALS.clear()
    return answer


def _iam_backend(account_id):
    from moto.iam.models import iam_backends
    return iam_backends[account_id]["global"]


def _role_by_arn(account_id, arn):
    return next((r for r in _iam_backend(account_id).roles.values() if r.arn == arn), None)


def _profile(account_id, name=None, arn=None):
    profiles = _iam_backend(account_id).instance_profiles.values()
    return next((p for p in profiles if (name and p.name == name) or (arn and p.arn == arn)), None)


def _install_iam():
    from moto.iam.models import IAMBackend
    create_role, create_profile = IAMBackend.create_role, IAMBackend.create_instance_profile

    def created_role(self, *args, **kwargs):
        role = create_role(self, *args, **kwargs)
        if Settings.enabled and not _through("cloudformation"):
            role._emu_created_at = time.monotonic()
        return role

    def created_profile(self, *args, **kwargs):
        profile = create_profile(self, *args, **kwargs)
        if Settings.enabled and not _through("cloudformation"):
            profile._emu_created_at = time.monotonic()
        return profile

    IAMBackend.create_role = created_role
    IAMBackend.create_instance_profile = created_profile
    _install_iam_users(IAMBackend)


def _install_iam_users(backend_class):
    """Marks users when made, and refuses CreateAccessKey for one IAM does not see yet."""
    from moto.iam.exceptions import NoSuchEntity
    create_user, create_key = backend_class.create_user, backend_class.create_access_key

    def created_user(self, *args, **kwargs):
        answer = create_user(self, *args, **kwargs)
        user = answer[0] if isinstance(answer, tuple) else answer
        if Settings.enabled and not _through("cloudformation"):
            user._emu_created_at = time.monotonic()
        return answer

    def create_access_key(self, user_name, *args, **kwargs):
        if Settings.enabled and _through("iam"):
            user = self.users.get(user_name)
            if user is not None and _fresh(user, "iam_user_read_after_write_ms"):
                raise _refused("iam:CreateAccessKey",
                               NoSuchEntity(f"The user with name {user_name} cannot be found."))
        return create_key(self, user_name, *args, **kwargs)

    backend_class.create_user = created_user
    backend_class.create_access_key = create_access_key


def _fresh_principal(account_id, arn):
    """Whether `arn` is a role or user IAM made less than `iam_role_propagation_ms` ago."""
    backend = _iam_backend(account_id)
    for principal in list(backend.roles.values()) + list(backend.users.values()):
        if principal.arn == arn:
            return _fresh(principal, "iam_role_propagation_ms")
    return False


def _policy_principals(policy_text):
    """The `Principal.AWS` values of a policy document (text), as a list."""
    try:
        statements = json.loads(policy_text).get("Statement", [])
    except (ValueError, AttributeError):
        return []
    if isinstance(statements, dict):
        statements = [statements]
    found = []
    for statement in statements:
        principal = statement.get("Principal") if isinstance(statement, dict) else None
        aws = principal.get("AWS") if isinstance(principal, dict) else None
        found.extend(aws if isinstance(aws, list) else [aws] if aws else [])
    return found


# -- Lambda ---------------------------------------------------------------------------------

LAMBDA_FUNCTIONS = {}  # function ARN -> the function, for Invoke's Pending check


def _pending(fn):
    due = fn.__dict__.get("_emu_active_at")
    return due is not None and time.monotonic() < due


def _refuse_pending_invoke(request):
    path = request["path"]
    name = path.split("/functions/", 1)[-1].split("/", 1)[0]
    from urllib.parse import unquote
    name = unquote(name)
    invoke = path.split("?", 1)[0].endswith("/invocations")
    for arn, fn in list(LAMBDA_FUNCTIONS.items()):
        if arn != name and fn.function_name != name:
            continue
        if _pending(fn):
            return (409, "ResourceConflictException",
                    "The operation cannot be performed at this time. The function is currently in the following state: Pending")
        # An update in progress: the function still answers invokes (with what it had), but
        # another update or a version is refused until LastUpdateStatus is Successful.
        due = fn.__dict__.get("_emu_updated_at")
        if not invoke and due is not None and time.monotonic() < due:
            return (409, "ResourceConflictException",
                    f"The operation cannot be performed at this time. An update is in progress for resource: {arn}")
    return None


def _install_lambda():
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import LambdaBackend, LambdaFunction
    create, get_configuration = LambdaBackend.create_function, LambdaFunction.get_configuration
    update_configuration = LambdaFunction.update_configuration
    update_code = LambdaFunction.update_function_code

    def create_function(self, spec):
        if Settings.enabled and _through("lambda", "cloudcontrolapi"):
            role = _role_by_arn(self.account_id, spec.get("Role") or "")
            if role is not None and _fresh(role, "iam_role_propagation_ms"):
                raise _refused("lambda:CreateFunction", InvalidParameterValueException(
                    "The role defined for the function cannot be assumed by Lambda."))
        fn = create(self, spec)
        if Settings.enabled and not _through("cloudformation"):
            vpc = (spec.get("VpcConfig") or {}).get("SubnetIds")
            fn._emu_active_at = _due("lambda_vpc_function_ready_ms" if vpc else "lambda_function_ready_ms")
            LAMBDA_FUNCTIONS[fn.function_arn] = fn
        return fn

    def configuration(self, on_create=False):
        config = get_configuration(self, on_create)
        if _pending(self):
            config.update(State="Pending", StateReason="The function is being created.",
                          StateReasonCode="Creating")
            config.pop("LastUpdateStatus", None)
        else:
            due = self.__dict__.get("_emu_updated_at")
            if due is not None and time.monotonic() < due and "LastUpdateStatus" in config:
                config["LastUpdateStatus"] = "InProgress"
        return config

    def updating(original):
        def update(self, *args, **kwargs):
            # Marked first, so that the update's own answer says InProgress, as Lambda's does.
            before = self.__dict__.get("_emu_updated_at")
            if Settings.enabled and not _through("cloudformation"):
                self._emu_updated_at = _due("lambda_update_ms")
            try:
                return original(self, *args, **kwargs)
            except Exception:
                self._emu_updated_at = before
                raise
        return update

    LambdaBackend.create_function = create_function
    LambdaFunction.get_configuration = configuration
    LambdaFunction.update_configuration = updating(update_configuration)
    LambdaFunction.update_function_code = updating(update_code)


# -- DynamoDB -------------------------------------------------------------------------------

DELETED_TABLES = {}  # (account, region, name) -> the deleted table, described DELETING until due


def _install_dynamodb():
    from moto.dynamodb.exceptions import ResourceInUseException, ResourceNotFoundException
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table
    describe = Table.describe
    create, delete, describe_table = (DynamoDBBackend.create_table, DynamoDBBackend.delete_table,
                                      DynamoDBBackend.describe_table)

    def described(self, base_key="TableDescription"):
        answer = describe(self, base_key)
        now = time.monotonic()
        if self.__dict__.get("_emu_deleted_at") is not None:
            answer[base_key]["TableStatus"] = "DELETING"
        elif now < self.__dict__.get("_emu_active_at", 0):
            answer[base_key]["TableStatus"] = "CREATING"
        return answer

    def deleted_table(backend, name):
        key = (backend.account_id, backend.region_name, name)
        table = DELETED_TABLES.get(key)
        if table is not None and time.monotonic() >= table._emu_deleted_at:
            DELETED_TABLES.pop(key, None)
            return None
        return table

    def create_table(self, name, *args, **kwargs):
        if Settings.enabled and deleted_table(self, name) is not None:
            raise ResourceInUseException(f"Table already exists: {name}")
        table = create(self, name, *args, **kwargs)
        if Settings.enabled and not _through("cloudformation"):
            table._emu_active_at = _due("dynamodb_table_ready_ms")
        return table

    def delete_table(self, name):
        table = delete(self, name)
        if Settings.enabled and not _through("cloudformation"):
            table._emu_deleted_at = _due("dynamodb_table_delete_ms")
            DELETED_TABLES[(self.account_id, self.region_name, table.name)] = table
        return table

    def describe_deleting(self, name):
        try:
            return describe_table(self, name)
        except ResourceNotFoundException:
            table = deleted_table(self, name) if DELETED_TABLES else None
            if table is None:
                raise
            return table.describe(base_key="Table")

    Table.describe = described
    DynamoDBBackend.create_table = create_table
    DynamoDBBackend.delete_table = delete_table
    DynamoDBBackend.describe_table = describe_deleting


# -- Kinesis --------------------------------------------------------------------------------

def _timed_attribute(cls, attribute, transitions):
    """Replaces `cls.attribute` with a property that answers `before` instead of the stored value
    `after` until the instance's `_emu_<marker>` time (monotonic) has passed, for each
    (marker, after, before) in `transitions`. Without a marker the stored value is answered."""
    slot = f"_emu_stored_{attribute}"

    def get(self):
        value = self.__dict__.get(slot)
        for marker, after, before in transitions:
            due = self.__dict__.get(marker)
            if due is not None and value == after and time.monotonic() < due:
                return before
        return value

    def set_(self, value):
        self.__dict__[slot] = value

    setattr(cls, attribute, property(get, set_))


def _install_kinesis():
    from moto.kinesis.models import KinesisBackend, Stream
    create = KinesisBackend.create_stream
    _timed_attribute(Stream, "status", [("_emu_active_at", "ACTIVE", "CREATING")])

    def create_stream(self, *args, **kwargs):
        stream = create(self, *args, **kwargs)
        if Settings.enabled and not _through("cloudformation"):
            stream._emu_active_at = _due("kinesis_stream_ready_ms")
        return stream

    KinesisBackend.create_stream = create_stream


# -- EC2: NAT gateways, instances -----------------------------------------------------------

def _install_ec2():
    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.models import EC2Backend
    from moto.ec2.models.instances import Instance
    from moto.ec2.models.nat_gateways import NatGateway
    _timed_attribute(NatGateway, "state", [("_emu_available_at", "available", "pending")])
    create_nat, run, terminate = (EC2Backend.create_nat_gateway, EC2Backend.run_instances,
                                  EC2Backend.terminate_instances)
    associate = EC2Backend.associate_iam_instance_profile

    def create_nat_gateway(self, *args, **kwargs):
        gateway = create_nat(self, *args, **kwargs)
        if Settings.enabled and not _through("cloudformation"):
            gateway._emu_available_at = _due("nat_gateway_ready_ms")
        return gateway

    # An instance's state object: pending -> running, shutting-down -> terminated when due.
    def get_state(self):
        state = self.__dict__["_emu_state"]
        now = time.monotonic()
        if state.name == "pending" and now >= self.__dict__.get("_emu_running_at", 0):
            state.name, state.code = "running", 16
        if state.name == "shutting-down" and now >= self.__dict__.get("_emu_terminated_at", 0):
            state.name, state.code = "terminated", 48
        return state

    def set_state(self, state):
        self.__dict__["_emu_state"] = state

    Instance._state = property(get_state, set_state)

    def run_instances(self, image_id, count, user_data, security_group_names, **kwargs):
        if Settings.enabled and _through("ec2", "cloudcontrolapi"):
            name, arn = kwargs.get("iam_instance_profile_name"), kwargs.get("iam_instance_profile_arn")
            if name or arn:
                profile = _profile(self.account_id, name=name, arn=arn)
                if profile is not None and _fresh(profile, "iam_instance_profile_propagation_ms"):
                    if Settings.fresh_instance_profile == "launch-without":
                        # Counted with the refusals: the profile was not honoured either way.
                        _refused("ec2:RunInstances without its profile", None)
                        reservation = run(self, image_id, count, user_data, security_group_names, **kwargs)
                        for instance in reservation.instances:
                            # moto's RunInstances response associates the profile next: skip that.
                            instance._emu_skip_profile = True
                        return _launched(reservation)
                    field = "name" if name else "arn"
                    raise _refused("ec2:RunInstances", EC2ClientError(
                        "InvalidParameterValue",
                        f"Value ({name or arn}) for parameter iamInstanceProfile.{field} is invalid. "
                        f"Invalid IAM Instance Profile {'name' if name else 'ARN'}"))
        return _launched(run(self, image_id, count, user_data, security_group_names, **kwargs))

    def _launched(reservation):
        """The reservation's instances `pending` until their ready time."""
        if Settings.enabled and not _through("cloudformation"):
            due = _due("ec2_instance_ready_ms")
            for instance in reservation.instances:
                # The due time first: reading `_state` without one would move it to running.
                instance._emu_running_at = due
                instance._state.name, instance._state.code = "pending", 0
        return reservation

    def terminate_instances(self, instance_ids):
        answer = terminate(self, instance_ids)
        if Settings.enabled and not _through("cloudformation"):
            due = _due("ec2_instance_terminate_ms")
            for instance, _previous in answer:
                instance._emu_terminated_at = due
                instance._state.name, instance._state.code = "shutting-down", 32
        return answer

    def associate_iam_instance_profile(self, instance_id, *args, **kwargs):
        instance = self.get_instance(instance_id)
        if instance.__dict__.pop("_emu_skip_profile", False):
            return None  # RunInstances' own association of a profile it launched without
        return associate(self, instance_id, *args, **kwargs)

    EC2Backend.create_nat_gateway = create_nat_gateway
    EC2Backend.run_instances = run_instances
    EC2Backend.associate_iam_instance_profile = associate_iam_instance_profile
    EC2Backend.terminate_instances = terminate_instances


# -- SQS ------------------------------------------------------------------------------------

DELETED_QUEUES = {}  # (account, region, name) -> monotonic time of the delete


def _install_sqs():
    from moto.sqs.exceptions import SQSException
    from moto.sqs.models import SQSBackend

    class QueueDeletedRecently(SQSException):
        def __init__(self):
            super().__init__(
                "AWS.SimpleQueueService.QueueDeletedRecently",
                "You must wait 60 seconds after deleting a queue before you can create another with the same name.")

    create, delete, set_attributes = (SQSBackend.create_queue, SQSBackend.delete_queue,
                                      SQSBackend.set_queue_attributes)

    def create_queue(self, name, *args, **kwargs):
        if Settings.enabled:
            deleted = DELETED_QUEUES.get((self.account_id, self.region_name, name))
            if deleted is not None and time.monotonic() - deleted < seconds("sqs_deleted_name_ms"):
                raise QueueDeletedRecently()
        _refuse_fresh_queue_principal(self.account_id, kwargs.get("Policy"), "CreateQueue")
        return create(self, name, *args, **kwargs)

    def set_queue_attributes(self, queue_name, attributes):
        _refuse_fresh_queue_principal(self.account_id, (attributes or {}).get("Policy"), "SetQueueAttributes")
        return set_attributes(self, queue_name, attributes)

    def delete_queue(self, queue_name):
        answer = delete(self, queue_name)
        if Settings.enabled:
            DELETED_QUEUES[(self.account_id, self.region_name, queue_name)] = time.monotonic()
        return answer

    SQSBackend.create_queue = create_queue
    SQSBackend.delete_queue = delete_queue
    SQSBackend.set_queue_attributes = set_queue_attributes


def _names_a_fresh_principal(account_id, policy_text):
    """Whether a policy document (text or bytes) names in `Principal.AWS` a role or user IAM has
    not propagated yet."""
    if isinstance(policy_text, bytes):
        policy_text = policy_text.decode("utf-8", "replace")
    if not policy_text:
        return False
    return any(_fresh_principal(account_id, p) for p in _policy_principals(policy_text))


def _refuse_fresh_queue_principal(account_id, policy_text, operation):
    """SQS's answer to a queue policy (CreateQueue's or SetQueueAttributes' `Policy`) naming a
    principal it does not know yet: the answer of an invalid policy."""
    from moto.sqs.exceptions import InvalidAttributeValue
    if Settings.enabled and _through("sqs") and _names_a_fresh_principal(account_id, policy_text):
        # "Invalid value for the parameter Policy."
        raise _refused(f"sqs:{operation}", InvalidAttributeValue("Policy"))


# -- IAM propagation: ECR, Auto Scaling, Cognito, Step Functions, SNS, S3, KMS --------------

def _install_ecr():
    from moto.ecr.exceptions import InvalidParameterException
    from moto.ecr.models import ECRBackend
    set_policy = ECRBackend.set_repository_policy

    def set_repository_policy(self, registry_id, repository_name, policy_text):
        # ECR checks the principals a policy names; one IAM has not propagated is refused with
        # the answer of a malformed policy.
        if Settings.enabled and _through("ecr"):
            if any(_fresh_principal(self.account_id, p) for p in _policy_principals(policy_text)):
                raise _refused("ecr:SetRepositoryPolicy", InvalidParameterException(
                    "Invalid parameter at 'PolicyText' failed to satisfy constraint: "
                    "'Invalid repository policy provided'"))
        return set_policy(self, registry_id, repository_name, policy_text)

    ECRBackend.set_repository_policy = set_repository_policy


def _launch_template_profile(account_id, region, spec):
    """The instance profile (name, arn) a group's launch template version names, if any."""
    from moto.ec2.models import ec2_backends
    ec2 = ec2_backends[account_id][region]
    try:
        if spec.get("LaunchTemplateId"):
            template = ec2.get_launch_template(spec["LaunchTemplateId"])
        else:
            template = ec2.get_launch_template_by_name(spec.get("LaunchTemplateName") or "")
        version = template.get_version(spec.get("Version") or "$Default")
    except Exception:  # noqa: BLE001 - moto's own validation answers for a missing template
        return None, None
    profile = version.data.get("IamInstanceProfile") or {}
    return profile.get("Name"), profile.get("Arn")


def _refuse_unpropagated_group_roles(response, operation):
    """Auto Scaling's answers while a service-linked role or the launch template's instance
    profile of a Create/UpdateAutoScalingGroup has not propagated."""
    from moto.autoscaling.exceptions import ValidationError
    account, region = response.current_account, response.region
    role = response._get_param("ServiceLinkedRoleARN")
    if role and _fresh_principal(account, role):
        raise _refused(f"autoscaling:{operation}",
                       ValidationError("ARN specified for Service-Linked Role does not exist."))
    spec = response._get_param("LaunchTemplate") or {}
    if spec:
        name, arn = _launch_template_profile(account, region, spec)
        profile = _profile(account, name=name, arn=arn) if (name or arn) else None
        if profile is not None and _fresh(profile, "iam_instance_profile_propagation_ms"):
            field = "name" if name else "arn"
            raise _refused(f"autoscaling:{operation}", ValidationError(
                "You must use a valid fully-formed launch template. "
                f"Value ({name or arn}) for parameter iamInstanceProfile.{field} is invalid. "
                f"Invalid IAM Instance Profile {'name' if name else 'ARN'}"))


def _install_autoscaling():
    from moto.autoscaling.responses import AutoScalingResponse

    def checked(original, operation):
        def call(self):
            if Settings.enabled and _through("autoscaling"):
                _refuse_unpropagated_group_roles(self, operation)
            return original(self)
        return call

    AutoScalingResponse.create_auto_scaling_group = checked(AutoScalingResponse.create_auto_scaling_group,
                                                            "CreateAutoScalingGroup")
    AutoScalingResponse.update_auto_scaling_group = checked(AutoScalingResponse.update_auto_scaling_group,
                                                            "UpdateAutoScalingGroup")


def _install_cognito():
    from moto.cognitoidp.models import CognitoIdpBackend
    from moto.core.exceptions import JsonRESTError

    class InvalidSmsRoleTrustRelationshipException(JsonRESTError):
        def __init__(self):
            super().__init__("InvalidSmsRoleTrustRelationshipException",
                             "Role does not have a trust relationship allowing Cognito to assume the role")

    def refuse_fresh_sms_role(backend, sms_configuration, operation):
        role = (sms_configuration or {}).get("SnsCallerArn")
        if Settings.enabled and _through("cognito-idp") and role and _fresh_principal(backend.account_id, role):
            raise _refused(f"cognito-idp:{operation}", InvalidSmsRoleTrustRelationshipException())

    create, update, set_mfa = (CognitoIdpBackend.create_user_pool, CognitoIdpBackend.update_user_pool,
                               CognitoIdpBackend.set_user_pool_mfa_config)

    def create_user_pool(self, name, extended_config):
        refuse_fresh_sms_role(self, (extended_config or {}).get("SmsConfiguration"), "CreateUserPool")
        return create(self, name, extended_config)

    def update_user_pool(self, user_pool_id, extended_config):
        refuse_fresh_sms_role(self, (extended_config or {}).get("SmsConfiguration"), "UpdateUserPool")
        return update(self, user_pool_id, extended_config)

    def set_user_pool_mfa_config(self, user_pool_id, sms_config, *args, **kwargs):
        refuse_fresh_sms_role(self, (sms_config or {}).get("SmsConfiguration"), "SetUserPoolMfaConfig")
        return set_mfa(self, user_pool_id, sms_config, *args, **kwargs)

    CognitoIdpBackend.create_user_pool = create_user_pool
    CognitoIdpBackend.update_user_pool = update_user_pool
    CognitoIdpBackend.set_user_pool_mfa_config = set_user_pool_mfa_config


def _install_stepfunctions():
    """CreateStateMachine and UpdateStateMachine refuse a role Step Functions cannot assume yet
    (checked in the responses: moto has two backends, the plain one and the parser's)."""
    from moto.stepfunctions.exceptions import AWSError
    from moto.stepfunctions.responses import StepFunctionResponse

    class AccessDeniedException(AWSError):
        TYPE = "AccessDeniedException"
        STATUS = 400

    def checked(original, operation):
        def call(self):
            role = self._get_param("roleArn")
            if Settings.enabled and _through("states") and role and _fresh_principal(self.current_account, role):
                raise _refused(f"states:{operation}", AccessDeniedException(
                    "Neither the global service principal states.amazonaws.com, nor the regional one "
                    "is authorized to assume the provided role."))
            return original(self)
        return call

    StepFunctionResponse.create_state_machine = checked(StepFunctionResponse.create_state_machine,
                                                        "CreateStateMachine")
    StepFunctionResponse.update_state_machine = checked(StepFunctionResponse.update_state_machine,
                                                        "UpdateStateMachine")


def _install_sns():
    from moto.sns.exceptions import SNSInvalidParameter
    from moto.sns.models import SNSBackend
    create, set_attribute = SNSBackend.create_topic, SNSBackend.set_topic_attribute

    def refuse_fresh_principal(backend, policy_text, operation):
        if Settings.enabled and _through("sns") and _names_a_fresh_principal(backend.account_id, policy_text):
            raise _refused(f"sns:{operation}",
                           SNSInvalidParameter("Invalid parameter: Policy Error: PrincipalNotFound"))

    def create_topic(self, name, attributes=None, tags=None):
        refuse_fresh_principal(self, (attributes or {}).get("Policy"), "CreateTopic")
        return create(self, name, attributes, tags)

    def set_topic_attribute(self, topic_arn, attribute_name, attribute_value):
        # The responses pass the name in snake case ("policy").
        if attribute_name in ("Policy", "policy"):
            refuse_fresh_principal(self, attribute_value, "SetTopicAttributes")
        return set_attribute(self, topic_arn, attribute_name, attribute_value)

    SNSBackend.create_topic = create_topic
    SNSBackend.set_topic_attribute = set_topic_attribute


def _install_s3():
    from moto.s3.exceptions import S3ClientError
    from moto.s3.models import S3Backend
    put_policy = S3Backend.put_bucket_policy

    def put_bucket_policy(self, bucket_name, policy):
        if Settings.enabled and _through("s3") and _names_a_fresh_principal(self.account_id, policy):
            raise _refused("s3:PutBucketPolicy", S3ClientError("MalformedPolicy", "Invalid principal in policy"))
        return put_policy(self, bucket_name, policy)

    S3Backend.put_bucket_policy = put_bucket_policy


def _install_kms():
    from moto.core.exceptions import JsonRESTError
    from moto.kms.models import KmsBackend
    create, put_policy = KmsBackend.create_key, KmsBackend.put_key_policy

    class MalformedPolicyDocumentException(JsonRESTError):
        def __init__(self):
            super().__init__("MalformedPolicyDocumentException",
                             "Policy contains a statement with one or more invalid principals.")

    def refuse_fresh_principal(backend, policy_text, operation):
        if Settings.enabled and _through("kms") and _names_a_fresh_principal(backend.account_id, policy_text):
            raise _refused(f"kms:{operation}", MalformedPolicyDocumentException())

    def create_key(self, policy, *args, **kwargs):
        refuse_fresh_principal(self, policy, "CreateKey")
        return create(self, policy, *args, **kwargs)

    def put_key_policy(self, key_id, policy):
        refuse_fresh_principal(self, policy, "PutKeyPolicy")
        return put_policy(self, key_id, policy)

    KmsBackend.create_key = create_key
    KmsBackend.put_key_policy = put_key_policy


def reset():
    """Forgets deleted names and tables, and the refusals counted (POST /moto-api/reset)."""
    refusals(clear=True)
    DELETED_QUEUES.clear()
    DELETED_TABLES.clear()
    LAMBDA_FUNCTIONS.clear()


_installed = False


def install():
    """Wraps moto's methods (once; call after server.py's own patches, which it wraps)."""
    global _installed
    if _installed:
        return
    _installed = True
    _install_iam()
    _install_lambda()
    _install_dynamodb()
    _install_kinesis()
    _install_ec2()
    _install_sqs()
    _install_ecr()
    _install_autoscaling()
    _install_cognito()
    _install_stepfunctions()
    _install_sns()
    _install_s3()
    _install_kms()
