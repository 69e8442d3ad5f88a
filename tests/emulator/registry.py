"""CloudFormation's registry `DescribeType` for resource types, answered from cfn-lint's schemas.

moto does not implement the registry. AWS answers `DescribeType` with the type's registry schema
(typeName, properties, createOnlyProperties, readOnlyProperties, primaryIdentifier, handlers, …)
as a JSON string; cfn-lint ships a copy of every public resource type's schema:
`cfnlint/data/schemas/providers/<region>.json` maps each type available in that region to a
hash, and `cfnlint/data/schemas/resources/<hash>.json` is that schema. The hash is the answer's
version id (stable per schema), cfn-lint's `schema_date` its LastUpdated / TimeCreated.

Not emulated: private and third-party types, modules and hooks (TypeNotFoundException),
ActivateType / RegisterType / ListTypes / DescribeTypeRegistration, PublisherId and
PublicVersionNumber (ignored), type versions other than the default one.
"""

import importlib.util
import json
import os
import re
import threading
import uuid
from xml.sax.saxutils import escape

NS = "http://cloudformation.amazonaws.com/doc/2010-05-15/"
DEFAULT_REGION = "us-east-1"
FALLBACK_DATE = "2025-01-01T00:00:00.000Z"
# DescribeType's Arn parameter: arn:<partition>:cloudformation:<region>:[account]:type/<kind>/<name>[/<version>]
TYPE_ARN = re.compile(r"^arn:aws[A-Za-z0-9-]{0,64}:cloudformation:[A-Za-z0-9-]{1,64}:([0-9]{12})?:type/([a-z]+)/([^/]+)(?:/([^/]+))?$")


def schemas_dir():
    """cfn-lint's schema folder, found through the import system (the package is not executed:
    importing cfnlint itself takes most of a second)."""
    spec = importlib.util.find_spec("cfnlint")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("cfn-lint is not installed in the emulator's Python (tests/emulator/setup.sh)")
    return os.path.join(list(spec.submodule_search_locations)[0], "data", "schemas")


def partition(region):
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def provisioning_type(schema):
    # As the registry reports it: a type without a create handler, or without a read handler
    # (AWS::SNS::TopicPolicy, AWS::SQS::QueuePolicy, AWS::EC2::NetworkAclEntry, measured on
    # AWS), is NON_PROVISIONABLE; one without an update handler is replaced on every change.
    handlers = schema.get("handlers") or {}
    if "create" not in handlers or "read" not in handlers:
        return "NON_PROVISIONABLE"
    if "update" not in handlers:
        return "IMMUTABLE"
    return "FULLY_MUTABLE"


class RegistryError(Exception):
    def __init__(self, status, code, message):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class Registry:
    """Answers DescribeType and counts the calls it answered (for tests: `/_emulator/describe-type-calls`)."""

    def __init__(self, directory=None):
        self.directory = directory or schemas_dir()
        self.lock = threading.Lock()
        self.providers = {}  # region -> {type name: hash}
        self.schemas = {}  # hash -> (schema text, parsed schema)
        self.calls = []  # (access key, type name asked for, found)
        try:
            with open(os.path.join(self.directory, "version.json")) as handle:
                self.date = json.load(handle).get("schema_date") or FALLBACK_DATE
        except (OSError, ValueError):
            self.date = FALLBACK_DATE

    # -- data -------------------------------------------------------------------------------

    def _provider(self, region):
        """The types available in `region` (cfn-lint's list for it; us-east-1's for a region
        cfn-lint does not know, such as a made-up one moto accepts)."""
        with self.lock:
            if region not in self.providers:
                path = os.path.join(self.directory, "providers", f"{region}.json")
                if not re.fullmatch(r"[a-z0-9-]+", region) or region == "sam" or not os.path.exists(path):
                    path = os.path.join(self.directory, "providers", f"{DEFAULT_REGION}.json")
                with open(path) as handle:
                    self.providers[region] = json.load(handle)
            return self.providers[region]

    def _schema(self, digest):
        with self.lock:
            if digest not in self.schemas:
                with open(os.path.join(self.directory, "resources", f"{digest}.json"), encoding="utf-8") as handle:
                    text = handle.read().strip()
                self.schemas[digest] = (text, json.loads(text))
            return self.schemas[digest]

    def schema_of(self, type_name, region=DEFAULT_REGION):
        """The parsed registry schema of `type_name`, or None."""
        digest = self._provider(region).get(type_name)
        return self._schema(digest)[1] if digest else None

    # -- the action -------------------------------------------------------------------------

    def describe_type(self, params, region):
        """DescribeType's result members, in AWS's order; raises RegistryError."""
        arn = params.get("Arn")
        kind = params.get("Type")
        type_name = params.get("TypeName")
        version = params.get("VersionId")
        if arn:
            if type_name or kind:
                raise RegistryError(400, "ValidationError", "Specify either Arn, or TypeName and Type, not both.")
            match = TYPE_ARN.match(arn)
            if not match:
                raise RegistryError(400, "ValidationError",
                                    f"1 validation error detected: Value '{arn}' at 'arn' failed to satisfy constraint: "
                                    "Member must satisfy regular expression pattern: "
                                    "arn:aws[A-Za-z0-9-]{0,64}:cloudformation:[A-Za-z0-9-]{1,64}:([0-9]{12})?:type/.+")
            kind = match.group(2).upper()
            type_name = match.group(3).replace("-", "::")
            version = version or match.group(4)
        elif not type_name or not kind:
            raise RegistryError(400, "ValidationError", "Specify either Arn, or TypeName and Type.")
        if kind not in ("RESOURCE", "MODULE", "HOOK"):
            raise RegistryError(400, "ValidationError",
                                f"1 validation error detected: Value '{kind}' at 'type' failed to satisfy constraint: "
                                "Member must satisfy enum value set: [RESOURCE, MODULE, HOOK]")
        digest = self._provider(region).get(type_name) if kind == "RESOURCE" else None
        if digest is None or (version and version != digest):
            raise RegistryError(404, "TypeNotFoundException", f"The type '{type_name}' cannot be found.")
        text, schema = self._schema(digest)
        result = [
            ("Arn", f"arn:{partition(region)}:cloudformation:{region}::type/resource/{type_name.replace('::', '-')}"),
            ("Type", "RESOURCE"),
            ("TypeName", type_name),
            ("DefaultVersionId", digest),
            ("IsDefaultVersion", "true"),
        ]
        if schema.get("description"):
            result.append(("Description", schema["description"]))
        result += [
            ("Schema", text),
            ("ProvisioningType", provisioning_type(schema)),
            ("DeprecatedStatus", "LIVE"),
            ("Visibility", "PUBLIC"),
        ]
        if schema.get("sourceUrl"):
            result.append(("SourceUrl", schema["sourceUrl"]))
        if schema.get("documentationUrl"):
            result.append(("DocumentationUrl", schema["documentationUrl"]))
        result += [("LastUpdated", self.date), ("TimeCreated", self.date)]
        return type_name, result

    def answer(self, params, region, access_key):
        """(HTTP status line, XML body) for one DescribeType request; counts it."""
        request_id = str(uuid.uuid4())
        try:
            type_name, result = self.describe_type(params, region)
        except RegistryError as err:
            with self.lock:
                self.calls.append((access_key, params.get("TypeName") or params.get("Arn") or "", False))
            reason = "Not Found" if err.status == 404 else "Bad Request"
            body = (f"<ErrorResponse xmlns=\"{NS}\"><Error><Type>Sender</Type><Code>{err.code}</Code>"
                    f"<Message>{escape(err.message)}</Message></Error>"
                    f"<RequestId>{request_id}</RequestId></ErrorResponse>")
            return f"{err.status} {reason}", err.code, body.encode("utf-8")
        with self.lock:
            self.calls.append((access_key, type_name, True))
        members = "".join(f"<{name}>{escape(value)}</{name}>" for name, value in result)
        body = (f"<DescribeTypeResponse xmlns=\"{NS}\"><DescribeTypeResult>{members}</DescribeTypeResult>"
                f"<ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata></DescribeTypeResponse>")
        return "200 OK", None, body.encode("utf-8")

    # -- test observables -------------------------------------------------------------------

    def observed(self, access_key=None, clear=False):
        """The calls answered (only `access_key`'s when given); `clear` forgets them all."""
        with self.lock:
            calls = [c for c in self.calls if access_key is None or c[0] == access_key]
            if clear:
                self.calls = []
        return {"calls": len(calls), "types": [c[1] for c in calls],
                "notFound": [c[1] for c in calls if not c[2]]}

    def reset(self):
        with self.lock:
            self.calls = []
