"""CloudFormation resource import (CreateChangeSet `ChangeSetType=IMPORT`) as AWS has it.

moto 5.2.5 takes an IMPORT change set as a CREATE: it checks nothing, lists the resources as
`Add` changes, makes a new stack even when one of that name exists, and executing it creates every
resource of the template, so a VPC, an internet gateway or a route table is duplicated, a
function is replaced (its permissions lost) and a role, parameter, log group, table, subnet or
security group fails with the service's "already exists" error. Here an IMPORT change set is
answered as AWS answers it:

- CreateChangeSet refuses, with a 400 `ValidationError` and AWS's message, a request AWS refuses:
  `IncludeNestedStacks`, no `ResourcesToImport`, a null identifier, a logical id listed twice or
  not in the template, a type that cannot be imported (its registry schema has no `read`
  handler), an identifier whose keys are not the type's `primaryIdentifier`, a type that differs
  from the template's, a template resource not listed (a new stack holds only what it imports; an
  existing stack's other resources must stay as they are), a resource to import without
  `DeletionPolicy`, and Outputs added or changed;
- then, as AWS does after answering, it looks each resource up: one that does not exist, or that
  a stack already holds, fails the change set (`Status` FAILED, `ExecutionStatus` UNAVAILABLE,
  `StatusReason` AWS's, no changes); otherwise it lists `Import` changes whose
  `PhysicalResourceId` is the identifier;
- ExecuteChangeSet adopts the existing resources (the stack holds moto's own object for them; its
  physical id is the identifier, composite ones joined with `|`), writes IMPORT_IN_PROGRESS /
  IMPORT_COMPLETE events for the stack and each resource, and leaves the stack IMPORT_COMPLETE
  with the change set's template. A resource gone since the change set was made fails the import:
  IMPORT_FAILED (with the not-found reason), then IMPORT_ROLLBACK_IN_PROGRESS and
  IMPORT_ROLLBACK_COMPLETE, the stack as it was.

An `AWS::CloudFormation::Stack` to import nests an existing stack (AWS's "Nesting an existing
stack"): its identifier is the stack's `StackId` (its name finds nothing), and the change set FAILS,
as AWS's does, when that stack is another's nested stack already ("<id> already exists in stack
<parent id>"), is not in a stable non-import status (IMPORT_COMPLETE is refused: "Stack <id> is not
in an importable status, current stack status is IMPORT_COMPLETE."), has nested stacks of its own
("Stacks to be imported cannot have any child stacks.") or would go into a nested stack (AWS nests
one level only by import), or when the resource's `TemplateURL` holds another template, its `Tags`
are not the stack's tags, or its `Parameters` are not the stack's values (`nesting_refusal`).
Executed, the parent holds the stack (physical id its StackId, `Fn::GetAtt [Child, Outputs.X]`
its outputs, updated in place by the parent's updates, deleted with the parent unless Retain), and
the stack answers ParentId and RootId, as every nested stack here does (`link_nested`).

Every change set execution (CREATE and UPDATE too) also: refuses a change set that is not
AVAILABLE (`InvalidChangeSetStatus`), sets the stack's outputs and template from the change set's
template (moto kept the old ones, so an UPDATE that adds Outputs showed none), writes an event per
resource added, modified or removed, and turns a resource's failure into events instead of an
error answer: `<ACTION>_FAILED` with the service's message, the stack rolled back to its previous
template (resources the attempt created are deleted) and UPDATE_ROLLBACK_COMPLETE
(ROLLBACK_COMPLETE for a new stack); `ExecuteChangeSet` itself answers 200, as on AWS.

Custom resources (cfn_custom.py) take part: their failures (FAILED, no response, a `Fn::GetAtt` of
a key their Data lacks, in a resource or an Output) roll back change set executions and, here
only for them, `CreateStack` and `UpdateStack` too (which then answer 200); the rollback sends
their requests (Delete to a failed Create that answered a physical id, Update back to updated
ones, Delete to a replacement's new resource) before deleting what the attempt created, newest
first; after a success the cleanup sends Delete to replaced and removed ones. `DeleteStack` sends
Delete to a stack's custom resources first, newest first; one answered FAILED leaves the stack
DELETE_FAILED.

`TemplateURL` (every action that takes one) is read from the emulator's S3: path-style
`http://127.0.0.1:<port>/<bucket>/<key>` or `https://s3[.<region>].amazonaws.com/<bucket>/<key>`,
or virtual-hosted `https://<bucket>.s3[.<region>].amazonaws.com/<key>`. Another URL:
`ValidationError` "TemplateURL must be a supported URL."; a missing bucket or key: `ValidationError`
"S3 error: ...".
"""

import json
import re
import threading
import uuid
from urllib.parse import unquote, urlparse

import yaml
from yaml.parser import ParserError
from yaml.scanner import ScannerError

from moto.cloudformation import parsing as _parsing
from moto.cloudformation import models as _models
from moto.cloudformation import responses as _responses
from moto.cloudformation import utils as _utils
from moto.cloudformation.exceptions import CloudFormationError, ValidationError
from moto.cloudformation.models import ChangeSet, CloudFormationBackend, Event, Stack
from moto.cloudformation.utils import generate_changeset_id, generate_stack_id, validate_create_change_set
from moto.core.responses import ActionResult
from moto.utilities.utils import get_partition

import cfn_custom

TEMPLATE_BODY_LIMIT = 51_200
_REGISTRY = None
_REGISTRY_LOCK = threading.Lock()


def _registry():
    global _REGISTRY
    with _REGISTRY_LOCK:
        if _REGISTRY is None:
            from registry import Registry
            _REGISTRY = Registry()
        return _REGISTRY


class InvalidChangeSetStatus(CloudFormationError):
    code = "InvalidChangeSetStatus"


def _names(names):
    return "[" + ", ".join(names) + "]"


# -- TemplateURL ---------------------------------------------------------------------------------

_PATH_STYLE_HOST = re.compile(r"^s3([.-](dualstack\.)?[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")
_VIRTUAL_HOST = re.compile(r"^(?P<bucket>.+?)\.s3([.-](dualstack\.)?[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")
_LOCAL_HOSTS = ("127.0.0.1", "localhost")


def bucket_and_key(template_url):
    """(bucket, key) a TemplateURL names in the emulator's S3; ValidationError for another URL."""
    parsed = urlparse(template_url or "")
    host = (parsed.hostname or "").lower()
    path = unquote(parsed.path or "").lstrip("/")
    bucket = key = None
    if parsed.scheme in ("http", "https") and host:
        if host in _LOCAL_HOSTS or _PATH_STYLE_HOST.match(host):
            bucket, _, key = path.partition("/")
        else:
            match = _VIRTUAL_HOST.match(host)
            if match:
                bucket, key = match.group("bucket"), path
    if not bucket or not key:
        raise ValidationError(message="TemplateURL must be a supported URL.")
    return bucket, key


def template_from_url(template_url, account_id, partition="aws"):
    """The template text at a TemplateURL, read from the emulator's S3."""
    from moto.s3.exceptions import S3ClientError
    from moto.s3.models import s3_backends
    bucket, key = bucket_and_key(template_url)
    try:
        obj = s3_backends[account_id][partition].get_object(bucket, key)
    except S3ClientError as err:
        message = getattr(err, "message", None) or getattr(err, "description", None) or str(err)
        raise ValidationError(message=f"S3 error: {message}\nFor more information check "
                                      "http://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html")
    if obj is None:
        raise ValidationError(message="S3 error: The specified key does not exist.\nFor more information check "
                                      "http://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html")
    return obj.value.decode("utf-8")


def _parse_template(text):
    yaml.add_multi_constructor("", _utils.yaml_tag_constructor)
    try:
        parsed = yaml.load(text, Loader=yaml.Loader)
    except (ParserError, ScannerError):
        try:
            parsed = json.loads(text)
        except ValueError:
            raise ValidationError(message="Template format error: JSON not well-formed.")
    if not isinstance(parsed, dict) or not parsed.get("Resources"):
        raise ValidationError(message="Template format error: At least one Resources member must be defined.")
    return parsed


# -- the resources an import can adopt -----------------------------------------------------------

class Imported:
    """A stack's imported resource whose moto object answers another physical id than AWS's (a
    composite identifier), or that has no moto object of its own (a Lambda permission)."""

    def __init__(self, model, physical_id, delete=None):
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "physical_resource_id", physical_id)
        object.__setattr__(self, "_delete", delete)

    def __getattr__(self, name):
        model = object.__getattribute__(self, "_model")
        if model is None:
            raise AttributeError(name)
        return getattr(model, name)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)

    def delete(self, account_id, region_name):
        if self._delete is not None:
            self._delete()

    def get_cfn_attribute(self, attribute):
        if self._model is not None and hasattr(self._model, "get_cfn_attribute"):
            return self._model.get_cfn_attribute(attribute)
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException
        raise UnformattedGetAttTemplateException()


def _ec2(account_id, region):
    from moto.ec2.models import ec2_backends
    return ec2_backends[account_id][region]


def _find_queue(ident, account_id, region):
    from moto.sqs.models import sqs_backends
    parts = ident["QueueUrl"].rstrip("/").split("/")
    if len(parts) < 2 or parts[-2] != account_id:
        return None
    return sqs_backends[account_id][region].queues.get(parts[-1])


def _find_topic(ident, account_id, region):
    from moto.sns.models import sns_backends
    return sns_backends[account_id][region].topics.get(ident["TopicArn"])


def _find_parameter(ident, account_id, region):
    from moto.ssm.models import ssm_backends
    return ssm_backends[account_id][region].get_parameter(ident["Name"])


def _find_role(ident, account_id, region):
    from moto.iam.models import iam_backends
    return iam_backends[account_id][get_partition(region)].get_role(ident["RoleName"])


def _lambda(account_id, region):
    # moto's "simple" backend when its Docker execution is off, as here; moto picks it the same way.
    from moto.awslambda.utils import get_backend
    return get_backend(account_id, region)


def _find_function(ident, account_id, region):
    return _lambda(account_id, region).get_function(ident["FunctionName"])


def _find_permission(ident, account_id, region):
    function = _lambda(account_id, region).get_function(ident["FunctionName"])
    if function is None or not any(s.get("Sid") == ident["Id"] for s in function.policy.statements):
        return None
    return Imported(None, f"{ident['FunctionName']}|{ident['Id']}",
                    delete=lambda: function.policy.del_statement(ident["Id"]))


def _find_log_group(ident, account_id, region):
    from moto.logs.models import logs_backends
    return logs_backends[account_id][region].groups.get(ident["LogGroupName"])


def _find_table(ident, account_id, region):
    from moto.dynamodb.models import dynamodb_backends
    return dynamodb_backends[account_id][region].tables.get(ident["TableName"])


def _find_bucket(ident, account_id, region):
    from moto.s3.models import s3_backends
    return s3_backends[account_id][get_partition(region)].buckets.get(ident["BucketName"])


def _find_vpc(ident, account_id, region):
    return _ec2(account_id, region).vpcs.get(ident["VpcId"])


def _find_subnet(ident, account_id, region):
    return _ec2(account_id, region).get_subnet(ident["SubnetId"])


def _find_internet_gateway(ident, account_id, region):
    return _ec2(account_id, region).internet_gateways.get(ident["InternetGatewayId"])


def _find_gateway_attachment(ident, account_id, region):
    from moto.ec2.models.vpn_gateway import VPCGatewayAttachment
    ec2 = _ec2(account_id, region)
    vpc_id, kind = ident["VpcId"], ident["AttachmentType"]
    if kind == "IGW":
        for gateway in ec2.internet_gateways.values():
            if gateway.vpc is not None and gateway.vpc.id == vpc_id:
                model = VPCGatewayAttachment(vpc_id=vpc_id, gateway_id=gateway.id, state="available")
                return Imported(model, f"{kind}|{vpc_id}",
                                delete=lambda g=gateway.id: ec2.detach_internet_gateway(g, vpc_id))
    elif kind == "VGW":
        for gateway in ec2.vpn_gateways.values():
            attachment = gateway.attachments.get(vpc_id)
            if attachment is not None and attachment.state == "attached":
                return Imported(attachment, f"{kind}|{vpc_id}",
                                delete=lambda g=gateway.id: ec2.detach_vpn_gateway(g, vpc_id))
    return None


def _find_security_group(ident, account_id, region):
    return _ec2(account_id, region).get_security_group_from_id(ident["Id"])


def _find_ingress(ident, account_id, region):
    from moto.ec2.models.security_groups import SecurityGroupIngress
    ec2 = _ec2(account_id, region)
    for groups in list(ec2.groups.values()):
        for group in list(groups.values()):
            for rule in list(group.ingress_rules):
                if rule.id == ident["Id"]:
                    def revoke(group=group, rule=rule):
                        if rule in group.ingress_rules:
                            group.ingress_rules.remove(rule)
                    return Imported(SecurityGroupIngress(group, {}), rule.id, delete=revoke)
    return None


def _find_route_table(ident, account_id, region):
    return _ec2(account_id, region).route_tables.get(ident["RouteTableId"])


def _find_route(ident, account_id, region):
    ec2 = _ec2(account_id, region)
    table = ec2.route_tables.get(ident["RouteTableId"])
    if table is None:
        return None
    for route in table.routes:
        if route.destination_cidr_block == ident["CidrBlock"] and not route.local:
            return Imported(route, f"{table.id}|{ident['CidrBlock']}",
                            delete=lambda: ec2.delete_route(table.id, ident["CidrBlock"]))
    return None


def _find_subnet_association(ident, account_id, region):
    from moto.ec2.models.subnets import SubnetRouteTableAssociation
    ec2 = _ec2(account_id, region)
    for table in ec2.route_tables.values():
        subnet_id = table._associations.get(ident["Id"])
        if subnet_id is not None:
            return Imported(SubnetRouteTableAssociation(table.id, subnet_id), ident["Id"],
                            delete=lambda: ec2.disassociate_route_table(ident["Id"]))
    return None


def _find_stack(ident, account_id, region):
    # By its StackId only: a stack's name is not its identifier (AWS finds nothing by a name).
    from moto.cloudformation.models import cloudformation_backends
    backend = cloudformation_backends[account_id][region]
    stack = backend.stacks.get(ident["StackId"])
    if stack is None or stack.status == "DELETE_COMPLETE":
        return None
    # The parent answers the child's StackId as its physical id (moto's nested stacks answer their
    # name) and deletes the child with itself unless its DeletionPolicy is Retain.
    return Imported(stack, stack.stack_id, delete=lambda: backend.delete_stack(stack.stack_id))


# Type -> function(identifier, account, region) answering the resource (moto's object, or an
# Imported stand-in) or None. A type not here is adopted unchecked (see `_adopt`).
FINDERS = {
    "AWS::SQS::Queue": _find_queue,
    "AWS::SNS::Topic": _find_topic,
    "AWS::SSM::Parameter": _find_parameter,
    "AWS::IAM::Role": _find_role,
    "AWS::Lambda::Function": _find_function,
    "AWS::Lambda::Permission": _find_permission,
    "AWS::Logs::LogGroup": _find_log_group,
    "AWS::DynamoDB::Table": _find_table,
    "AWS::S3::Bucket": _find_bucket,
    "AWS::EC2::VPC": _find_vpc,
    "AWS::EC2::Subnet": _find_subnet,
    "AWS::EC2::InternetGateway": _find_internet_gateway,
    "AWS::EC2::VPCGatewayAttachment": _find_gateway_attachment,
    "AWS::EC2::SecurityGroup": _find_security_group,
    "AWS::EC2::SecurityGroupIngress": _find_ingress,
    "AWS::EC2::RouteTable": _find_route_table,
    "AWS::EC2::Route": _find_route,
    "AWS::EC2::SubnetRouteTableAssociation": _find_subnet_association,
    "AWS::CloudFormation::Stack": _find_stack,
}


def _identifier_value(ident, keys):
    return "|".join(str(ident[k]) for k in keys)


def _not_found_reason(type_name, value):
    """AWS's StatusReason for an identifier that names nothing (the type's read handler's words)."""
    if type_name == "AWS::SNS::Topic":
        return f"Topic does not exist (Service: Sns, Status Code: 404, Request ID: {uuid.uuid4()}) (SDK Attempt Count: 1)"
    if type_name == "AWS::DynamoDB::Table":
        return f"Table: {value} does not exist."
    if type_name == "AWS::S3::Bucket":
        return "Bucket not found"
    return f"Resource of type '{type_name}' with identifier '{value}' was not found."


def _lookup(type_name, ident, account_id, region):
    """(found, resource): found is False when the type has a finder and it found nothing."""
    finder = FINDERS.get(type_name)
    if finder is None:
        return True, None
    try:
        resource = finder(ident, account_id, region)
    except Exception:  # the service's own "not found" error
        resource = None
    return resource is not None, resource


def _physical_id(resource):
    try:
        return getattr(resource, "physical_resource_id", None)
    except Exception:  # a moto model whose id cannot be formed
        return None


def _same_resource(type_name, held, physical_id, value):
    """Whether a stack's resource (its physical id `held`) is the one an identifier names."""
    if not held:
        return False
    if type_name == "AWS::SQS::Queue":
        return held.rstrip("/").split("/")[-2:] == value.rstrip("/").split("/")[-2:]
    candidates = {physical_id, value}
    if type_name == "AWS::EC2::Route":
        held = held.replace("~", "|")
    if type_name == "AWS::EC2::VPCGatewayAttachment" and "|" not in held:
        return value.endswith("|" + held)  # moto's CloudFormation names an attachment by its VPC
    return held in candidates


def _holder(backend, type_name, physical_id, value):
    """The id of the live stack holding this resource already, or None."""
    for stack in list(backend.stacks.values()):
        if stack.status in ("DELETE_COMPLETE",):
            continue
        for resource in list(stack.resource_map._parsed_resources.values()):
            if getattr(resource, "cf_resource_type", None) != type_name:
                continue
            if _same_resource(type_name, _physical_id(resource), physical_id, value):
                return stack.stack_id
    return None


# -- nesting an existing stack (an AWS::CloudFormation::Stack to import) -----------------------

STACK_TYPE = "AWS::CloudFormation::Stack"
# The statuses a stack can be nested from. AWS refuses IMPORT_COMPLETE (reported from a real
# account: "Stack <arn> is not in an importable status, current stack status is IMPORT_COMPLETE."),
# which is why cdkd updates a just-imported child once before nesting it; the others are the
# stable statuses a stack can be updated from (not verified on AWS one by one).
NESTABLE_STATUSES = ("CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_ROLLBACK_COMPLETE")


def _stack_model(resource):
    """The moto Stack behind a stack resource (an adopted child is held in an Imported)."""
    if isinstance(resource, Imported):
        resource = object.__getattribute__(resource, "_model")
    return resource if isinstance(resource, Stack) else None


def _live(backend, stack_id):
    stack = backend.stacks.get(stack_id) if stack_id else None
    return stack if stack is not None and stack.status != "DELETE_COMPLETE" else None


def _nested_children(stack):
    """The stacks a stack holds as AWS::CloudFormation::Stack resources of its template."""
    resource_map = stack.resource_map
    for name, resource in list(resource_map._parsed_resources.items()):
        if name in resource_map._resource_json_map and getattr(resource, "cf_resource_type", None) == STACK_TYPE:
            child = _stack_model(resource)
            if child is not None:
                yield child


def link_nested(stack, seen=None):
    """Sets ParentId and RootId on the stacks nested in `stack`, and on theirs: DescribeStacks
    answers them (moto has neither). The root is the root of `stack`'s whole tree."""
    seen = seen if seen is not None else {stack.stack_id}
    root = stack.root_id or stack.stack_id
    for child in _nested_children(stack):
        if child.stack_id in seen:  # a cycle cannot be built, but never loop on one
            continue
        seen.add(child.stack_id)
        child.parent_id, child.root_id = stack.stack_id, root
        link_nested(child, seen)


def _param_text(value):
    """A parameter value as CloudFormation passes it to a nested stack: a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_param_text(item) for item in value)
    return str(value)


def _same_parameters(given, child):
    """Whether the parent's `Parameters` for a nested stack are the child's current values.
    AWS documents only the template and tag checks; this is stricter on purpose: a parameter the
    parent would pass differently (or leave to a default the child does not hold) would change the
    child at the parent's next update, which an import must not prepare."""
    if given is not None and not isinstance(given, dict):
        return False
    given = {key: _param_text(value) for key, value in (given or {}).items()}
    declared = (_current_template(child) or {}).get("Parameters") or {}
    if set(given) - set(declared):
        return False
    current = dict(child.parameters or {})
    resolved = child.resource_map.resolved_parameters
    for key, slot in declared.items():
        value = current.get(key, slot.get("Default"))
        if value is None:
            return False
        expected = given.get(key, slot.get("Default"))
        # The value as passed, or as resolved: DescribeStacks here answers an SSM parameter's
        # resolved value as its ParameterValue (AWS answers the parameter's name there).
        held = {_param_text(v) for v in (value, resolved.get(key)) if v is not None}
        if expected is None or _param_text(expected) not in held:
            return False
    return True


def nesting_refusal(backend, parent, logical_id, resource_json, child, partition):
    """AWS's reason for refusing to nest the existing stack `child` into `parent` as the template
    resource `resource_json`, or None. One level of nesting only (AWS's user guide, "Nesting an
    existing stack"), then its "Nested stack import validation": the template at TemplateURL and
    the Tags must be the stack's own."""
    stack_id = child.stack_id
    if child is parent or stack_id == parent.stack_id:
        return f"Stack {stack_id} cannot be imported into itself."
    holder = _live(backend, child.parent_id)
    if holder is not None:
        return f"{stack_id} already exists in stack {holder.stack_id}"
    if _live(backend, parent.parent_id) is not None:
        return "Stacks cannot be imported into a child stack."
    if child.status not in NESTABLE_STATUSES:
        return f"Stack {stack_id} is not in an importable status, current stack status is {child.status}."
    if any(other.parent_id == stack_id for other in list(backend.stacks.values())
           if other.status != "DELETE_COMPLETE"):
        return "Stacks to be imported cannot have any child stacks."
    properties = resource_json.get("Properties") or {}
    url = properties.get("TemplateURL")
    try:
        body = template_from_url(url, child.account_id, partition) if isinstance(url, str) else None
        nested = Stack.parse_template(body) if body is not None else None
    except ValidationError as err:
        return err.message
    except Exception:  # not YAML nor JSON: no template matches it
        nested = None
    if nested is None or nested != _current_template(child):
        return (f"Template of resource [{logical_id}] defined in the template doesn't match the template "
                f"of stack {stack_id}.")
    tags = properties.get("Tags") or []
    declared = ({t.get("Key"): t.get("Value") for t in tags if isinstance(t, dict)}
                if isinstance(tags, list) else None)
    if declared is None or len(declared) != len(tags) or declared != dict(child.tags or {}):
        return f"Tags of resource [{logical_id}] defined in the template don't match the tags of stack {stack_id}."
    if not _same_parameters(properties.get("Parameters"), child):
        return (f"Parameters of resource [{logical_id}] defined in the template don't match the parameters "
                f"of stack {stack_id}.")
    return None


# -- CreateChangeSet ChangeSetType=IMPORT --------------------------------------------------------

def _primary_identifier(schema):
    return [pointer.rsplit("/", 1)[-1] for pointer in schema.get("primaryIdentifier") or []]


def check_import(entries, template, current, region):
    """Raises ValidationError as CloudFormation refuses an IMPORT change set. `entries` are the
    ResourcesToImport, `current` the existing stack's template (None for a new stack)."""
    if not entries:
        raise ValidationError(message="Must Provide at least one resource to import")
    for index, entry in enumerate(entries, start=1):
        for member, name in (("ResourceType", "resourceType"), ("LogicalResourceId", "logicalResourceId"),
                             ("ResourceIdentifier", "resourceIdentifier")):
            if not entry.get(member):
                raise ValidationError(message=(
                    f"1 validation error detected: Value null at 'resourcesToImport.{index}.member.{name}' "
                    "failed to satisfy constraint: Member must not be null"))
    logical_ids = [entry["LogicalResourceId"] for entry in entries]
    if len(set(logical_ids)) != len(logical_ids):
        raise ValidationError(message="Every resource to import must have unique LogicalResourceId")
    resources = template["Resources"]
    absent = [lid for lid in logical_ids if lid not in resources]
    if absent:
        raise ValidationError(message=(
            f"The logical resource ids {_names(absent)} provided in ResourceToImport do not exist in the template."))
    registry = _registry()
    unsupported = []
    for entry in entries:
        schema = registry.schema_of(entry["ResourceType"], region)
        if (schema is None or "read" not in (schema.get("handlers") or {})) and entry["ResourceType"] not in unsupported:
            unsupported.append(entry["ResourceType"])
    if unsupported:
        raise ValidationError(message=f"ResourceTypes {_names(unsupported)} are not supported for Import")
    for entry in entries:
        expected = _primary_identifier(registry.schema_of(entry["ResourceType"], region))
        if sorted(entry["ResourceIdentifier"]) != sorted(expected):
            raise ValidationError(message=(
                f"Invalid resource identifier for resource type {entry['ResourceType']}. Expected {_names(expected)}"))
    for entry in entries:
        declared = resources[entry["LogicalResourceId"]].get("Type")
        if declared != entry["ResourceType"]:
            raise ValidationError(message=(
                f"Resource type of [{entry['LogicalResourceId']}] passed in ResourceToImport does not match with "
                f"resource type defined in the template. Resource type in ResourceToImport: {entry['ResourceType']}; "
                f"Resource type in Template: {declared}."))
    held = (current or {}).get("Resources") or {}
    new = [lid for lid in resources if lid not in held]
    if not new:
        raise ValidationError(message="The template should contain at least one new resource to import.")
    again = [lid for lid in logical_ids if lid in held]
    if again:
        raise ValidationError(message=(
            f"Resources {_names(again)} passed in ResourceToImport are already in a stack and cannot be imported."))
    unlisted = [lid for lid in new if lid not in logical_ids]
    if unlisted:
        raise ValidationError(message=f"Resources {_names(unlisted)} is missing from ResourceToImport list")
    modified = [lid for lid in held if resources.get(lid) != held[lid]]
    if modified:
        raise ValidationError(message=(
            f"You have modified resources {_names(modified)} in your template that are not being imported. "
            "Update, create or delete operations cannot be executed during import operations."))
    undeletable = [lid for lid in logical_ids if "DeletionPolicy" not in resources[lid]]
    if undeletable:
        raise ValidationError(message=(
            f"The following resources to import {_names(undeletable)} must have DeletionPolicy attribute "
            "specified in the template."))
    if (template.get("Outputs") or {}) != ((current or {}).get("Outputs") or {}):
        raise ValidationError(message="As part of the import operation, you cannot modify or add [Outputs]")


def check_ssm_parameters(template, passed, account_id, region):
    """CloudFormation resolves `AWS::SSM::Parameter::Value<...>` parameters (a CDK app's
    BootstrapVersion) when the change set is made: one that does not exist refuses it (moto would
    crash on it at execution)."""
    from moto.ssm.models import ssm_backends
    ssm = ssm_backends[account_id][region]
    missing = []
    for name, declared in (template.get("Parameters") or {}).items():
        if not str(declared.get("Type", "")).startswith("AWS::SSM::Parameter::Value"):
            continue
        path = passed.get(name, declared.get("Default"))
        if path and ssm.get_parameter(path) is None:
            missing.append(path)
    if missing:
        raise ValidationError(message=f"Unable to fetch parameters {_names(missing)} from parameter store for this account.")


class ImportChange:
    """A change set's `Import` change (moto's Change has no PhysicalResourceId, Scope, Details)."""

    def __init__(self, logical_resource_id, resource_type, physical_resource_id):
        self.action = "Import"
        self.logical_resource_id = logical_resource_id
        self.physical_resource_id = physical_resource_id
        self.resource_type = resource_type
        self.scope = []
        self.details = []


def _live_stack(backend, name):
    for stack in backend.stacks.values():
        if stack.name == name or stack.stack_id == name:
            return stack
    return None


def _current_template(stack):
    """The template an existing stack holds, as it was sent (moto's parsed copy gains an empty
    `Properties` where a resource had none); None for no stack or one only under review."""
    if stack is None or stack.status == "REVIEW_IN_PROGRESS" or not stack.template:
        return None
    if isinstance(stack.template, dict):
        return stack.template
    yaml.add_multi_constructor("", _utils.yaml_tag_constructor)
    try:
        return yaml.load(stack.template, Loader=yaml.Loader)
    except (ParserError, ScannerError):
        return json.loads(stack.template)


def _import_entries(response):
    entries = []
    for entry in response._get_param("ResourcesToImport", []) or []:
        ident = entry.get("ResourceIdentifier") or {}
        if isinstance(ident, list):  # [{key, value}] when moto leaves the map unparsed
            ident = {item.get("key"): item.get("value") for item in ident}
        entries.append({"ResourceType": entry.get("ResourceType"),
                        "LogicalResourceId": entry.get("LogicalResourceId"),
                        "ResourceIdentifier": dict(ident)})
    return entries


def create_import_change_set(response):
    """CreateChangeSet with ChangeSetType=IMPORT, answered as CloudFormation answers it."""
    backend = response.cloudformation_backend
    account_id, region = response.current_account, response.region
    stack_name = response._get_param("StackName")
    change_set_name = response._get_param("ChangeSetName")
    validate_create_change_set(change_set_name)
    if response._get_bool_param("IncludeNestedStacks", False):  # AWS's answer, reported from a real account
        raise ValidationError(message="IncludeNestedStacks is not supported for changeSet type: IMPORT.")
    body = response._get_param("TemplateBody")
    url = response._get_param("TemplateURL")
    if not body and not url:
        raise ValidationError(message="Either Template URL or Template Body must be specified.")
    if body and len(body.encode()) > TEMPLATE_BODY_LIMIT:
        raise ValidationError(message=(
            "1 validation error detected: Value at 'templateBody' failed to satisfy constraint: "
            f"Member must have length less than or equal to {TEMPLATE_BODY_LIMIT}"))
    if url and not body:
        body = template_from_url(url, account_id, response.partition)
    template = _parse_template(body)
    stack = _live_stack(backend, stack_name)
    current = _current_template(stack)
    entries = _import_entries(response)
    check_import(entries, template, current, region)

    parameters = {}
    for param in response._get_param("Parameters", []) or []:
        if param.get("UsePreviousValue") and stack is not None:
            parameters[param["ParameterKey"]] = stack.stack_parameters.get(param["ParameterKey"])
        else:
            parameters[param["ParameterKey"]] = param.get("ParameterValue")
    check_ssm_parameters(template, parameters, account_id, region)
    tags = {item["Key"]: item["Value"] for item in response._get_param("Tags", []) or []}
    if stack is None:
        stack = Stack(stack_id=generate_stack_id(stack_name, region, account_id), name=stack_name, template={},
                      parameters=parameters, account_id=account_id, region_name=region,
                      notification_arns=response._get_param("NotificationARNs", []), tags=tags,
                      role_arn=response._get_param("RoleARN"))
        backend.stacks[stack.stack_id] = stack
        stack.status = "REVIEW_IN_PROGRESS"
        stack._add_stack_event("REVIEW_IN_PROGRESS", resource_status_reason="User Initiated")
    change_set = ChangeSet(
        change_set_type="IMPORT",
        change_set_id=generate_changeset_id(change_set_name, region, account_id),
        change_set_name=change_set_name, stack=stack, template=body, parameters=parameters,
        description=response._get_param("Description"),
        notification_arns=response._get_param("NotificationARNs", []), tags=tags,
        role_arn=response._get_param("RoleARN"))
    change_set.resources_to_import = entries
    change_set.status, change_set.execution_status = "CREATE_COMPLETE", "AVAILABLE"
    changes = []
    registry = _registry()
    for entry in entries:
        type_name, ident = entry["ResourceType"], entry["ResourceIdentifier"]
        value = _identifier_value(ident, _primary_identifier(registry.schema_of(type_name, region)))
        found, resource = _lookup(type_name, ident, account_id, region)
        reason = None
        if not found:
            reason = _not_found_reason(type_name, value)
        elif type_name == STACK_TYPE:
            reason = nesting_refusal(backend, stack, entry["LogicalResourceId"],
                                     template["Resources"][entry["LogicalResourceId"]], _stack_model(resource),
                                     response.partition)
        else:
            holder = _holder(backend, type_name, _physical_id(resource) or value, value)
            if holder is not None:
                reason = f"{value} already exists in stack {holder}"
        if reason is not None:
            change_set.status, change_set.execution_status = "FAILED", "UNAVAILABLE"
            change_set.status_reason = reason
            changes = []
            break
        changes.append(ImportChange(entry["LogicalResourceId"], type_name, value))
    change_set.changes = changes
    backend.change_sets[change_set.change_set_id] = change_set
    return ActionResult({"Id": change_set.change_set_id, "StackId": stack.stack_id})


# -- ExecuteChangeSet ----------------------------------------------------------------------------

def _resource_event(stack, logical_id, type_name, physical_id, status, reason=None):
    event = Event(stack_id=stack.stack_id, stack_name=stack.name, logical_resource_id=logical_id,
                  physical_resource_id=physical_id or "", resource_type=type_name,
                  resource_status=status, resource_status_reason=reason, resource_properties=None)
    event.sendToSns(stack.account_id, stack.region_name, stack.notification_arns)
    stack.events.append(event)


def _snapshot(stack):
    resource_map = stack.resource_map
    return {
        "template": stack.template,
        "template_dict": stack.template_dict,
        "map_template": resource_map._template,
        "json_map": resource_map._resource_json_map,
        "parsed": dict(resource_map._parsed_resources),
        "input_parameters": resource_map.input_parameters,
        "resolved": dict(resource_map.resolved_parameters),
        "parameters": stack.parameters,
        "output_map": stack.output_map,
        "description": stack.description,
    }


def _restore(stack, saved):
    resource_map = stack.resource_map
    stack.template, stack.template_dict = saved["template"], saved["template_dict"]
    resource_map._template, resource_map._resource_json_map = saved["map_template"], saved["json_map"]
    resource_map._parsed_resources.clear()
    resource_map._parsed_resources.update(saved["parsed"])
    resource_map.input_parameters = saved["input_parameters"]
    resource_map.resolved_parameters = saved["resolved"]
    stack.parameters = saved["parameters"]
    stack.output_map, stack.description = saved["output_map"], saved["description"]


def _take_template(stack, change_set):
    """The stack now holds the change set's template: its description and outputs follow."""
    stack.template = change_set.template
    stack._parse_template()
    stack.description = stack.template_dict.get("Description")
    if change_set.parameters:
        stack.parameters = change_set.parameters
    stack.output_map = stack._create_output_map()


def execute_import(backend, change_set):
    stack = change_set.stack
    saved = _snapshot(stack)
    new_stack = not (saved["template_dict"] or {}).get("Resources")
    template = change_set.template_dict
    resource_map = stack.resource_map
    stack.status = "IMPORT_IN_PROGRESS"
    stack._add_stack_event("IMPORT_IN_PROGRESS", resource_status_reason="User Initiated")
    change_set.execution_status = "EXECUTE_IN_PROGRESS"
    registry = _registry()
    failure = None
    try:
        resource_map._template = template
        resource_map._resource_json_map = template["Resources"]
        if change_set.parameters:
            resource_map.input_parameters = change_set.parameters
        resource_map.load_mapping()
        resource_map.load_parameters()
        resource_map.load_conditions()
        for entry in change_set.resources_to_import:
            logical_id, type_name, ident = entry["LogicalResourceId"], entry["ResourceType"], entry["ResourceIdentifier"]
            value = _identifier_value(ident, _primary_identifier(registry.schema_of(type_name, stack.region_name)))
            _resource_event(stack, logical_id, type_name, value, "IMPORT_IN_PROGRESS")
            found, resource = _lookup(type_name, ident, stack.account_id, stack.region_name)
            if not found:
                failure = logical_id
                _resource_event(stack, logical_id, type_name, value, "IMPORT_FAILED",
                                _not_found_reason(type_name, value))
                break
            child = _stack_model(resource) if type_name == STACK_TYPE else None
            holder = _live(backend, child.parent_id) if child is not None else None
            if holder is not None:  # another parent nested it since the change set was made
                failure = logical_id
                _resource_event(stack, logical_id, type_name, value, "IMPORT_FAILED",
                                f"{value} already exists in stack {holder.stack_id}")
                break
            if resource is None:
                resource = Imported(None, value)  # a type the emulator cannot look up: taken on trust
            resource.cf_resource_type = type_name
            resource.logical_resource_id = logical_id
            resource_map._parsed_resources[logical_id] = resource
            _resource_event(stack, logical_id, type_name, _physical_id(resource) or value, "IMPORT_COMPLETE")
    except Exception:
        _restore(stack, saved)
        stack.status = "REVIEW_IN_PROGRESS" if new_stack else "IMPORT_ROLLBACK_COMPLETE"
        change_set.execution_status = "EXECUTE_FAILED"
        raise
    if failure is not None:
        stack._add_stack_event("IMPORT_ROLLBACK_IN_PROGRESS",
                               resource_status_reason=f"The following resource(s) failed to import: [{failure}]. ")
        _restore(stack, saved)
        stack._add_stack_event("IMPORT_ROLLBACK_COMPLETE")
        stack.status = "IMPORT_ROLLBACK_COMPLETE"
        change_set.execution_status = "EXECUTE_FAILED"
        return
    _take_template(stack, change_set)
    link_nested(stack)  # a nested existing stack now answers ParentId and RootId
    stack._add_stack_event("IMPORT_COMPLETE")
    stack.status = "IMPORT_COMPLETE"
    change_set.execution_status = "EXECUTE_COMPLETE"


_in_flight = threading.local()


def _tracked(original, action):
    """Wraps moto's parse_and_create/update_resource: during a change set's execution, records
    the innermost resource that failed (its logical id, type and the error)."""
    def run(logical_id, resource_json, *args, **kwargs):
        tracker = getattr(_in_flight, "tracker", None)
        try:
            return original(logical_id, resource_json, *args, **kwargs)
        except Exception as err:
            if tracker is not None and tracker.get("failed") is None:
                tracker["failed"] = (logical_id, resource_json.get("Type", ""), action, err)
            raise

    return run


def _message(err):
    """The service's words for a resource's failure: its message and error code."""
    message = getattr(err, "message", None) or getattr(err, "description", None) or str(err) or type(err).__name__
    code = next((c for c in (getattr(err, "error_type", None), getattr(err, "code", None)) if isinstance(c, str) and c),
                None)
    return f"{message} (Error code: {code.rsplit('#', 1)[-1]})" if code else message


def _reason(cause):
    """The reason a resource's failure shows in its event: a custom resource's own words, else the
    service's message as a resource handler reports it."""
    if isinstance(cause, (cfn_custom.CustomResourceFailure, cfn_custom.CustomAttributeError)):
        return cause.message
    return f'Resource handler returned message: "{_message(cause)}"'


def _is_custom(cause):
    return isinstance(cause, (cfn_custom.CustomResourceFailure, cfn_custom.CustomAttributeError))


def _custom_output_error(stack, template):
    """The reason an Output cannot be formed because a custom resource's Data lacks the key it
    reads (the stack then rolls back, as on AWS), or None."""
    if not any(cfn_custom.is_custom_type(r.get("Type")) for r in (template.get("Resources") or {}).values()):
        return None
    from moto.cloudformation.parsing import OutputMap
    try:
        outputs = OutputMap(stack.resource_map, template, stack.stack_id)
        for key in outputs.outputs:
            outputs[key]
    except cfn_custom.CustomAttributeError as err:
        return err.message
    except Exception:  # moto's own output problems are left as they were
        return None
    return None


def _custom_cleanup(journal):
    """After an operation succeeded: Delete for the old physical id of each replaced custom resource
    and for each custom resource the operation removed (CloudFormation's cleanup phase). Answers
    the events to write, (logical id, type, physical id, status, reason), and the removed ones by
    logical id. A failed Delete leaves DELETE_FAILED and the stack's success stands, as on AWS."""
    journal.defer_deletes = False
    events, removed = [], {}

    def delete(model):
        try:
            model.delete_now()
            return (model.logical_id, model.resource_type, model.physical_id, "DELETE_COMPLETE", None)
        except cfn_custom.CustomResourceFailure as failure:
            return (model.logical_id, model.resource_type, model.physical_id, "DELETE_FAILED", failure.message)

    for _logical_id, old, _new in journal.replaced:
        if old.update_replace_policy != "Retain":
            events.append(delete(old))
    for model in journal.removed:
        removed[model.logical_id] = delete(model)
    return events, removed


def _custom_roll_back(stack, journal):
    """A rollback's custom-resource requests: Delete for a failed Create that answered a physical
    id, Update back for each updated resource (the failed one too), Delete for the new resource of a
    replacement. True when one of them failed (the rollback then fails)."""
    journal.defer_deletes = False
    failed = False

    def attempt(logical_id, model, status, send):
        nonlocal failed
        try:
            send()
            _resource_event(stack, logical_id, model.resource_type, model.physical_id, f"{status}_COMPLETE")
        except cfn_custom.CustomResourceFailure as failure:
            failed = True
            _resource_event(stack, logical_id, model.resource_type, model.physical_id, f"{status}_FAILED",
                            failure.message)

    for model, physical_id in journal.failed_creates:
        if model.deletion_policy != "Retain":
            model.physical_id = physical_id
            attempt(model.logical_id, model, "DELETE", model.delete_now)
    for logical_id, old, attempted in journal.failed_updates:
        attempt(logical_id, old, "UPDATE", lambda: old.roll_back_update(attempted))
    for logical_id, old, new in reversed(journal.updated):
        attempt(logical_id, old, "UPDATE", lambda: old.roll_back_update(new))
    for logical_id, _old, new in reversed(journal.replaced):
        if new.deletion_policy != "Retain":
            attempt(logical_id, new, "DELETE", new.delete_now)
    return failed


def _roll_back(stack, journal, previous, new_json, creating, restore, failed=None, stack_reason=None):
    """A failed operation's events and rollback: the failed resource's events (`failed`: logical id,
    type, action, cause) or the stack's reason, the custom resources' rollback requests, the
    resources the attempt created deleted (newest first), then `restore()`."""
    rollback = "ROLLBACK" if creating else "UPDATE_ROLLBACK"
    if failed is not None:
        logical_id, type_name, action, cause = failed
        physical_id = getattr(cause, "physical_id", None) or ""
        _resource_event(stack, logical_id, type_name, physical_id, f"{action}_IN_PROGRESS")
        _resource_event(stack, logical_id, type_name, physical_id, f"{action}_FAILED", _reason(cause))
        stack_reason = f"The following resource(s) failed to {action.lower()}: [{logical_id}]. "
    stack._add_stack_event(f"{rollback}_IN_PROGRESS", resource_status_reason=stack_reason)
    rollback_failed = _custom_roll_back(stack, journal) if journal is not None else False
    resource_map = stack.resource_map
    for name, resource in reversed(list(resource_map._parsed_resources.items())):
        if name in previous or not hasattr(resource, "cf_resource_type"):
            continue
        try:
            resource_map._delete_resource(resource, new_json.get(name) or {"Type": resource.cf_resource_type})
            _resource_event(stack, name, resource.cf_resource_type, _physical_id(resource), "DELETE_COMPLETE")
        except Exception as err:
            custom = _is_custom(err)
            rollback_failed = rollback_failed or custom
            _resource_event(stack, name, resource.cf_resource_type, _physical_id(resource), "DELETE_FAILED",
                            err.message if custom else None)
    restore()
    final = f"{rollback}_FAILED" if rollback_failed else f"{rollback}_COMPLETE"
    stack._add_stack_event(final)
    stack.status = final


def _drop_last_stack_event(stack, status):
    for event in reversed(stack.events):
        if event.resource_type == "AWS::CloudFormation::Stack" and event.resource_status == status:
            stack.events.remove(event)
            return


def execute_template_change_set(backend, change_set, moto_execute, change_set_name, stack_name):
    """A CREATE or UPDATE change set, run by moto, with AWS's events, outputs and failure handling."""
    stack = change_set.stack
    saved = _snapshot(stack)
    creating = change_set.change_set_type == "CREATE"
    old = saved["json_map"] or {}
    new = change_set.template_dict.get("Resources") or {}
    diff = stack.resource_map.build_resource_diff(change_set.template_dict)
    verb = "CREATE" if creating else "UPDATE"
    tracker = {"failed": None}
    _in_flight.tracker = tracker
    journal = cfn_custom.begin(defer_deletes=not creating)
    try:
        try:
            moto_execute(backend, change_set_name=change_set_name, stack_name=stack_name)
        except Exception as err:
            failed = tracker["failed"]
            if failed is None and not _is_custom(err):
                raise
            _roll_back(stack, journal, saved["parsed"], new, creating, lambda: _restore(stack, saved), failed,
                       stack_reason=None if failed else err.message)
            change_set.execution_status = "EXECUTE_FAILED"
            return
        finally:
            _in_flight.tracker = None
        output_error = _custom_output_error(stack, change_set.template_dict)
        if output_error:
            _drop_last_stack_event(stack, f"{verb}_COMPLETE")
            _roll_back(stack, journal, saved["parsed"], new, creating, lambda: _restore(stack, saved),
                       stack_reason=output_error)
            change_set.execution_status = "EXECUTE_FAILED"
            return
        cleanup, removed = _custom_cleanup(journal)
    finally:
        cfn_custom.end()
    parsed = stack.resource_map._parsed_resources
    for action, names in (("CREATE", diff["Add"]), ("UPDATE", diff["Modify"])):
        for name in names:
            _resource_event(stack, name, new[name].get("Type", ""), _physical_id(parsed.get(name)), f"{action}_COMPLETE")
    # The cleanup: what the update removed or replaced is deleted after it succeeded.
    for name in diff["Remove"]:
        if name in removed:
            _resource_event(stack, *removed[name])
        else:
            _resource_event(stack, name, old[name].get("Type", ""), "", "DELETE_COMPLETE")
    for event in cleanup:
        _resource_event(stack, *event)
    _take_template(stack, change_set)
    link_nested(stack)
    # moto added its stack event before the resources' ones: keep the stack's last.
    if stack.events and stack.events[-1].resource_type != "AWS::CloudFormation::Stack":
        last = next((e for e in reversed(stack.events) if e.resource_type == "AWS::CloudFormation::Stack"
                     and e.resource_status == f"{verb}_COMPLETE"), None)
        if last is not None:
            stack.events.remove(last)
            stack.events.append(last)


# -- CreateStack, UpdateStack, DeleteStack with custom resources ----------------------------------

def _pseudo(parsed):
    return {name: value for name, value in parsed.items() if name.startswith("AWS::")}


def _empty_new_stack(backend, stack):
    """A new stack rolled back: no resources, no outputs, no exports (the template stays)."""
    from moto.cloudformation.parsing import OutputMap
    resource_map = stack.resource_map
    pseudo = _pseudo(resource_map._parsed_resources)
    resource_map._parsed_resources.clear()
    resource_map._parsed_resources.update(pseudo)
    resource_map._resource_json_map = {}
    stack.output_map = OutputMap(resource_map, {}, stack.stack_id)
    for name, export in list(backend.exports.items()):
        if export.exporting_stack_id == stack.stack_id:
            del backend.exports[name]


def create_stack(moto_create_stack):
    """CreateStack: a custom resource's failure (FAILED, no answer, a GetAtt of a key its Data
    lacks) rolls the new stack back (ROLLBACK_COMPLETE, events, CreateStack answers 200), as on
    AWS. Other failures keep moto's behaviour (an error answer)."""
    def run(self, name, template, parameters, *args, **kwargs):
        if cfn_custom.current() is not None:  # a nested stack: its parent's operation handles failures
            return moto_create_stack(self, name, template, parameters, *args, **kwargs)
        before = set(self.stacks)
        tracker = {"failed": None}
        _in_flight.tracker = tracker
        journal = cfn_custom.begin()
        try:
            try:
                return_stack = moto_create_stack(self, name, template, parameters, *args, **kwargs)
            except Exception as err:
                failed = tracker["failed"]
                cause = failed[3] if failed else err
                stack = next((self.stacks[i] for i in set(self.stacks) - before), None)
                if stack is None or not _is_custom(cause):
                    raise
                _roll_back(stack, journal, _pseudo(stack.resource_map._parsed_resources),
                           stack.template_dict.get("Resources") or {}, True,
                           lambda: _empty_new_stack(self, stack), failed,
                           stack_reason=None if failed else cause.message)
                return stack
            finally:
                _in_flight.tracker = None
            stack = return_stack
            output_error = _custom_output_error(stack, stack.template_dict)
            if output_error:
                _drop_last_stack_event(stack, "CREATE_COMPLETE")
                _roll_back(stack, journal, _pseudo(stack.resource_map._parsed_resources),
                           stack.template_dict.get("Resources") or {}, True,
                           lambda: _empty_new_stack(self, stack), stack_reason=output_error)
            link_nested(stack)
            return stack
        finally:
            cfn_custom.end()

    return run


def update_stack(moto_update_stack):
    """UpdateStack: a custom resource's failure rolls the update back (UPDATE_ROLLBACK_COMPLETE,
    events; UpdateStack answers 200); replaced and removed custom resources get their Delete after
    the update succeeded. Other failures keep moto's behaviour."""
    def run(self, name, template, role_arn, parameters, tags):
        if cfn_custom.current() is not None:
            return moto_update_stack(self, name, template, role_arn, parameters, tags)
        stack = self.get_stack(name)
        saved = _snapshot(stack)
        tracker = {"failed": None}
        _in_flight.tracker = tracker
        journal = cfn_custom.begin(defer_deletes=True)
        try:
            try:
                result = moto_update_stack(self, name, template, role_arn, parameters, tags)
            except Exception as err:
                failed = tracker["failed"]
                cause = failed[3] if failed else err
                if not _is_custom(cause):
                    raise
                new_json = (stack.template_dict or {}).get("Resources") or {}
                _roll_back(stack, journal, saved["parsed"], new_json, False, lambda: _restore(stack, saved), failed,
                           stack_reason=None if failed else cause.message)
                return stack
            finally:
                _in_flight.tracker = None
            output_error = _custom_output_error(stack, stack.template_dict)
            if output_error:
                _drop_last_stack_event(stack, "UPDATE_COMPLETE")
                _roll_back(stack, journal, saved["parsed"], stack.template_dict.get("Resources") or {}, False,
                           lambda: _restore(stack, saved), stack_reason=output_error)
                return stack
            cleanup, removed = _custom_cleanup(journal)
            for event in list(removed.values()) + cleanup:
                _resource_event(stack, *event)
            if cleanup or removed:  # the stack's event stays the last
                _drop_last_stack_event(stack, "UPDATE_COMPLETE")
                stack._add_stack_event("UPDATE_COMPLETE")
            link_nested(stack)
            return result
        finally:
            cfn_custom.end()

    return run


def delete_stack(moto_delete_stack):
    """DeleteStack: the stack's custom resources get Delete first, newest first (their handlers
    need the functions and the resources they manage still there), then moto deletes the rest. A
    Delete answered FAILED (or not at all) leaves the stack DELETE_FAILED with the resources not
    yet deleted, as on AWS."""
    def run(self, name_or_stack_id):
        stack = self.stacks.get(name_or_stack_id) or next(
            (s for s in self.stacks.values() if s.name == name_or_stack_id), None)
        if stack is None:
            return moto_delete_stack(self, name_or_stack_id)
        resource_map = stack.resource_map
        retained = {name for name, resource in resource_map._resource_json_map.items()
                    if resource.get("DeletionPolicy") == "Retain"}
        nested = cfn_custom.current() is not None  # a nested stack: its parent's operation
        journal = cfn_custom.current() or cfn_custom.begin()
        try:
            for name, resource in reversed(list(resource_map._parsed_resources.items())):
                # (moto keeps the models of resources an update removed: only the template's count)
                if (not isinstance(resource, cfn_custom.CustomResource) or name in retained
                        or name not in resource_map._resource_json_map):
                    continue
                try:
                    resource.delete_now()
                except cfn_custom.CustomResourceFailure as failure:
                    if nested:
                        raise
                    stack._add_stack_event("DELETE_IN_PROGRESS", resource_status_reason="User Initiated")
                    _resource_event(stack, name, resource.resource_type, resource.physical_id, "DELETE_FAILED",
                                    failure.message)
                    stack._add_stack_event("DELETE_FAILED", resource_status_reason=(
                        f"The following resource(s) failed to delete: [{name}]. "))
                    stack.status = "DELETE_FAILED"
                    return
                finally:
                    if journal.failures.get((name, f"Delete {resource.physical_id}")) is None:
                        resource_map._parsed_resources.pop(name, None)
                        resource_map._resource_json_map = {
                            key: value for key, value in resource_map._resource_json_map.items() if key != name}
            return moto_delete_stack(self, stack.stack_id)
        finally:
            if not nested:
                cfn_custom.end()

    return run


def _find_change_set(backend, change_set_name, stack_name):
    if change_set_name in backend.change_sets:
        return backend.change_sets[change_set_name]
    for change_set in backend.change_sets.values():
        if change_set.change_set_name == change_set_name and (
                not stack_name or stack_name in (change_set.stack_name, change_set.stack_id)):
            return change_set
    return None


# -- installation --------------------------------------------------------------------------------

def _without_attributes(resource):
    """A template resource without the attributes that never call its handler."""
    return {k: v for k, v in resource.items() if k not in ("DependsOn", "DeletionPolicy", "UpdateReplacePolicy")}


# The most resources DescribeStackResources answers (AWS's documented cap).
DESCRIBE_STACK_RESOURCES_LIMIT = 100


def install():
    """Patches moto's CloudFormation (call once, before the emulator serves)."""
    _utils.get_stack_from_s3_url = template_from_url
    _models.get_stack_from_s3_url = template_from_url
    _responses.get_stack_from_s3_url = template_from_url

    original_create = _responses.CloudFormationResponse.create_change_set

    def create_change_set(self):
        if self._get_param("ChangeSetType") == "IMPORT":
            return create_import_change_set(self)
        return original_create(self)

    _responses.CloudFormationResponse.create_change_set = create_change_set

    # DescribeStacks and ListStacks answer a nested stack's ParentId and RootId (`link_nested`).
    Stack.parent_id = None
    Stack.root_id = None

    moto_validate_different = _responses.CloudFormationResponse._validate_different_update

    def validate_different_update(self, incoming_params, stack_body, old_stack):
        # An UPDATE change set that changes nothing is made and FAILS ("The submitted information
        # didn't contain changes..."), as on AWS; moto refused CreateChangeSet itself when
        # Parameters were sent. And new stack tags alone are an update (UpdateStack with
        # UsePreviousTemplate and only Tags changed, as cdkd's flip of a stack out of
        # IMPORT_COMPLETE sends); moto answered "No updates are to be performed.".
        if self._get_param("ChangeSetName"):
            return None
        tags = {item["Key"]: item["Value"] for item in self._get_param("Tags", []) or []}
        if tags and tags != dict(old_stack.tags or {}):
            return None
        return moto_validate_different(self, incoming_params, stack_body, old_stack)

    _responses.CloudFormationResponse._validate_different_update = validate_different_update

    moto_execute = CloudFormationBackend.execute_change_set

    def execute_change_set(self, change_set_name, stack_name=None):
        change_set = _find_change_set(self, change_set_name, stack_name)
        if change_set is None:
            raise ValidationError(name_or_id=stack_name or change_set_name,
                                  message=f"ChangeSet [{change_set_name}] does not exist")
        if change_set.execution_status != "AVAILABLE":
            raise InvalidChangeSetStatus(
                f"ChangeSet [{change_set.change_set_id}] cannot be executed in its current execution status "
                f"of [{change_set.execution_status}]")
        if change_set.change_set_type == "IMPORT":
            return execute_import(self, change_set)
        return execute_template_change_set(self, change_set, moto_execute, change_set.change_set_id, stack_name)

    CloudFormationBackend.execute_change_set = execute_change_set

    moto_describe_stack_resources = CloudFormationBackend.describe_stack_resources

    def describe_stack_resources(self, stack_name, logical_resource_id):
        # AWS answers only a stack's first 100 resources here ("use ListStackResources
        # instead"); moto answered every one, which hid callers that never page.
        stack, resources = moto_describe_stack_resources(self, stack_name, logical_resource_id)
        return stack, list(resources)[:DESCRIBE_STACK_RESOURCES_LIMIT]

    CloudFormationBackend.describe_stack_resources = describe_stack_resources

    moto_diff = _parsing.ResourceMap.build_resource_diff

    def build_resource_diff(self, other_template, parameters=None):
        # A resource whose only change is a DependsOn, DeletionPolicy or UpdateReplacePolicy is
        # not updated by CloudFormation (its handler is not called); moto updated it, which for a
        # function fetched its code again from the template's S3 location. One whose text is
        # the same stays: moto lists it only when a value it reads (a parameter, another
        # resource's attribute) changed, and that is a real update.
        diff = moto_diff(self, other_template, parameters)
        new = other_template["Resources"]
        diff["Modify"] = [name for name in diff["Modify"]
                          if _without_attributes(new[name]) != _without_attributes(self._resource_json_map[name])
                          or new[name] == self._resource_json_map[name]]
        return diff

    _parsing.ResourceMap.build_resource_diff = build_resource_diff
    CloudFormationBackend.create_stack = create_stack(CloudFormationBackend.create_stack)
    CloudFormationBackend.update_stack = update_stack(CloudFormationBackend.update_stack)
    CloudFormationBackend.delete_stack = delete_stack(CloudFormationBackend.delete_stack)
    _parsing.parse_and_create_resource = _tracked(_parsing.parse_and_create_resource, "CREATE")
    _parsing.parse_and_update_resource = _tracked(_parsing.parse_and_update_resource, "UPDATE")
