"""Lambda and S3 configuration APIs moto lacks, answered as AWS answers them.

Lambda (REST-JSON, on the moto function object, so a deleted function takes them with it):
  - PutFunctionRecursionConfig / GetFunctionRecursionConfig
    (`/2024-08-31/functions/{name}/recursion-config`; default `Terminate`);
  - PutRuntimeManagementConfig / GetRuntimeManagementConfig
    (`/2021-07-20/functions/{name}/runtime-management-config`; default `Auto`);
  - Put/Get/DeleteFunctionCodeSigningConfig (`/2020-06-30/functions/{name}/code-signing-config`);
    the config ARN must be a code signing config ARN (moto has no CreateCodeSigningConfig, so
    any well-formed ARN is taken);
  - Put/Get/DeleteProvisionedConcurrencyConfig
    (`/2019-09-30/functions/{name}/provisioned-concurrency?Qualifier=`): the qualifier must be an
    alias or a published version (not `$LATEST`); the config is `READY` at once (AWS takes
    minutes); a missing one is 404 `ProvisionedConcurrencyConfigNotFoundException`; deleting the
    alias deletes its config;
  - CreateFunction (and PublishLayerVersion) with `S3Bucket`/`S3Key` of an object that does
    not exist are refused (`InvalidParameterValueException` ... `NoSuchKey`), as on AWS (moto made
    a function without code);
  - `SnapStart` and `ImageConfig` kept by CreateFunction / UpdateFunctionConfiguration and
    answered by GetFunctionConfiguration (moto always answered `SnapStart: None` and ignored
    an `ImageConfig` update); SnapStart on a runtime that does not support it is refused.

S3: a canned ACL answers one Grant per permission, and an ACL granting anyone but the owner is
refused (`AccessControlListNotSupported`) while object ownership is `BucketOwnerEnforced`,
S3's default (`patch_moto_canned_acls`); (REST-XML,
path-style) Put/Get/Delete/ListBucketMetricsConfiguration (`?metrics`) and
Put/Get/Delete/ListBucketIntelligentTieringConfiguration (`?intelligent-tiering`), kept on the
moto bucket. A missing id: 404 `NoSuchConfiguration`.
"""

import json
import re
import uuid
import xml.etree.ElementTree as ET
from urllib.parse import parse_qs, unquote

S3_NS = "http://s3.amazonaws.com/doc/2006-03-01/"

_LAMBDA = re.compile(
    r"^/(?P<version>[0-9-]+)/functions/(?P<name>[^/]+)/"
    r"(?P<what>recursion-config|runtime-management-config|code-signing-config|provisioned-concurrency)/?$")

# Runtimes SnapStart supports (AWS: Java 11+, Python 3.12+, .NET 8+).
_SNAPSTART_RUNTIMES = re.compile(r"^(java(11|17|21|25)|python3\.(1[2-9])|dotnet[89])")


def _json(start_response, status, body, error=None):
    data = json.dumps(body).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
               ("x-amzn-RequestId", str(uuid.uuid4()))]
    if error:
        headers.append(("x-amzn-ErrorType", error))
    start_response(status, headers)
    return [data]


def _lambda_error(start_response, status, code, message):
    return _json(start_response, status, {"Type": "User", "message": message}, code)


def _read_body(environ):
    import io
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return body


def _backend(request, service):
    from moto.iam.models import get_account_id_from
    account = get_account_id_from(request["access_key"]) if request["access_key"] else "123456789012"
    if service == "lambda":
        from moto.awslambda.utils import get_backend
        return get_backend(account, request["region"])
    from moto.s3.models import s3_backends
    return s3_backends[account]["aws"]


def answer_lambda(environ, start_response, request):
    """Answers the Lambda configuration APIs moto lacks, or returns None to leave it to moto."""
    match = _LAMBDA.match(request["path"])
    if not match:
        return None
    from moto.awslambda.exceptions import UnknownFunctionException
    name = unquote(match["name"])
    if name.startswith("arn:"):
        name = name.split(":")[6]
    method = request["method"]
    query = parse_qs(request["query"])
    qualifier = query.get("Qualifier", [None])[0]
    backend = _backend(request, "lambda")
    try:
        fn = backend.get_function(name)
    except UnknownFunctionException as err:
        return _lambda_error(start_response, "404 Not Found", "ResourceNotFoundException", err.description)
    body = _read_body(environ) if method in ("PUT", "POST") else b""
    params = json.loads(body) if body.strip() else {}
    what = match["what"]
    if what == "recursion-config":
        if method == "PUT":
            value = params.get("RecursiveLoop")
            if value not in ("Allow", "Terminate"):
                return _lambda_error(start_response, "400 Bad Request", "InvalidParameterValueException",
                                     f"RecursiveLoop must be Allow or Terminate, not {value!r}")
            fn.emu_recursive_loop = value
        return _json(start_response, "200 OK", {"RecursiveLoop": getattr(fn, "emu_recursive_loop", "Terminate")})
    if what == "runtime-management-config":
        if method == "PUT":
            on = params.get("UpdateRuntimeOn")
            if on not in ("Auto", "Manual", "FunctionUpdate"):
                return _lambda_error(start_response, "400 Bad Request", "InvalidParameterValueException",
                                     f"UpdateRuntimeOn must be Auto, Manual or FunctionUpdate, not {on!r}")
            if on == "Manual" and not params.get("RuntimeVersionArn"):
                return _lambda_error(start_response, "400 Bad Request", "InvalidParameterValueException",
                                     "RuntimeVersionArn is required when UpdateRuntimeOn is Manual")
            if on != "Manual" and params.get("RuntimeVersionArn"):
                return _lambda_error(start_response, "400 Bad Request", "InvalidParameterValueException",
                                     "RuntimeVersionArn is only allowed when UpdateRuntimeOn is Manual")
            fn.emu_runtime_management = {"UpdateRuntimeOn": on, "RuntimeVersionArn": params.get("RuntimeVersionArn")}
        config = getattr(fn, "emu_runtime_management", {"UpdateRuntimeOn": "Auto", "RuntimeVersionArn": None})
        answer = {"UpdateRuntimeOn": config["UpdateRuntimeOn"], "FunctionArn": fn.function_arn}
        if config.get("RuntimeVersionArn"):
            answer["RuntimeVersionArn"] = config["RuntimeVersionArn"]
        return _json(start_response, "200 OK", answer)
    if what == "code-signing-config":
        if method == "PUT":
            arn = params.get("CodeSigningConfigArn") or ""
            if not re.match(r"^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:code-signing-config:csc-[a-z0-9]{17}$", arn):
                return _lambda_error(start_response, "400 Bad Request", "InvalidParameterValueException",
                                     f"{arn!r} is not a code signing config ARN")
            fn.code_signing_config_arn = arn
        elif method == "DELETE":
            fn.code_signing_config_arn = None
            start_response("204 No Content", [("Content-Length", "0")])
            return [b""]
        return _json(start_response, "200 OK", {"CodeSigningConfigArn": fn.code_signing_config_arn or "",
                                                "FunctionName": fn.function_name})
    # provisioned-concurrency
    if not qualifier or qualifier == "$LATEST":
        return _lambda_error(start_response, "400 Bad Request", "InvalidParameterValueException",
                             "Provisioned concurrency needs an alias or a published version as Qualifier")
    configs = fn.__dict__.setdefault("emu_provisioned", {})
    if method == "PUT":
        if not qualifier.isdigit():
            try:
                backend.get_alias(qualifier, fn.function_name)
            except Exception:
                return _lambda_error(start_response, "404 Not Found", "ResourceNotFoundException",
                                     f"Cannot find alias arn: {fn.function_arn}:{qualifier}")
        count = params.get("ProvisionedConcurrentExecutions")
        if not isinstance(count, int) or count < 1:
            return _lambda_error(start_response, "400 Bad Request", "InvalidParameterValueException",
                                 "ProvisionedConcurrentExecutions must be at least 1")
        configs[qualifier] = count
        return _json(start_response, "202 Accepted", {
            "RequestedProvisionedConcurrentExecutions": count,
            "AllocatedProvisionedConcurrentExecutions": count,
            "AvailableProvisionedConcurrentExecutions": count,
            "Status": "READY", "LastModified": "2026-01-01T00:00:00.000+0000"})
    if qualifier not in configs:
        return _lambda_error(start_response, "404 Not Found", "ProvisionedConcurrencyConfigNotFoundException",
                             "No Provisioned Concurrency Config found for this function")
    if method == "DELETE":
        del configs[qualifier]
        start_response("204 No Content", [("Content-Length", "0")])
        return [b""]
    count = configs[qualifier]
    return _json(start_response, "200 OK", {
        "RequestedProvisionedConcurrentExecutions": count,
        "AllocatedProvisionedConcurrentExecutions": count,
        "AvailableProvisionedConcurrentExecutions": count,
        "Status": "READY", "LastModified": "2026-01-01T00:00:00.000+0000"})


def patch_moto_lambda():
    """SnapStart and ImageConfig as CreateFunction / UpdateFunctionConfiguration set them."""
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import ImageConfig, LambdaFunction

    def check_snap_start(spec_snap, runtime):
        apply_on = (spec_snap or {}).get("ApplyOn", "None")
        if apply_on not in ("None", "PublishedVersions"):
            raise InvalidParameterValueException(f"SnapStart ApplyOn must be None or PublishedVersions, not {apply_on!r}")
        if apply_on != "None" and not _SNAPSTART_RUNTIMES.match(runtime or ""):
            raise InvalidParameterValueException(f"{runtime} is not supported for SnapStart enabled functions.")
        return apply_on

    original_init = LambdaFunction.__init__

    def init(self, account_id, spec, region, version="1"):
        apply_on = check_snap_start(spec.get("SnapStart"), spec.get("Runtime"))
        original_init(self, account_id, spec, region, version)
        self.emu_snap_start = apply_on

    original_config = LambdaFunction.get_configuration

    def get_configuration(self, on_create=False):
        config = original_config(self, on_create)
        apply_on = getattr(self, "emu_snap_start", "None")
        # OptimizationStatus is On for published versions of a SnapStart function.
        config["SnapStart"] = {"ApplyOn": apply_on,
                               "OptimizationStatus": "On" if apply_on != "None" and self.version != "$LATEST" else "Off"}
        return config

    original_update = LambdaFunction.update_configuration

    def update_configuration(self, config_updates):
        if "SnapStart" in config_updates:
            self.emu_snap_start = check_snap_start(config_updates["SnapStart"],
                                                   config_updates.get("Runtime", self.run_time))
        if "ImageConfig" in config_updates:
            if self.package_type != "Image":
                raise InvalidParameterValueException("ImageConfig is only supported for Image package type functions")
            self.image_config = ImageConfig(config_updates["ImageConfig"] or {})
        return original_update(self, config_updates)

    LambdaFunction.__init__ = init
    LambdaFunction.get_configuration = get_configuration
    LambdaFunction.update_configuration = update_configuration

    # Deleting an alias deletes its provisioned concurrency, as on AWS.
    from moto.awslambda.models import LambdaBackend

    original_delete_alias = LambdaBackend.delete_alias

    def delete_alias(self, name, function_name):
        try:
            fn = self.get_function(function_name)
            fn.__dict__.get("emu_provisioned", {}).pop(name, None)
        except Exception:  # an unknown function: moto's own answer
            pass
        return original_delete_alias(self, name, function_name)

    LambdaBackend.delete_alias = delete_alias

    # An event source mapping keeps its LoggingConfig (moto dropped it), and an update applies
    # the access, metrics, logging and poller settings it is sent (moto ignored them); an empty
    # setting removes it, as on AWS.
    from moto.awslambda.models import EventSourceMapping

    original_esm_init = EventSourceMapping.__init__

    def esm_init(self, spec):
        original_esm_init(self, spec)
        self.emu_logging = spec.get("LoggingConfig")

    original_esm_config = EventSourceMapping.get_configuration

    def esm_configuration(self):
        config = original_esm_config(self)
        config["LoggingConfig"] = getattr(self, "emu_logging", None) or None
        return config

    original_update_esm = LambdaBackend.update_event_source_mapping

    def update_event_source_mapping(self, uuid, spec):
        esm = original_update_esm(self, uuid, spec)
        if esm is not None:
            if "SourceAccessConfigurations" in spec:
                esm.source_access_config = spec["SourceAccessConfigurations"] or None
            if "MetricsConfig" in spec:
                esm.metrics = spec["MetricsConfig"] if (spec["MetricsConfig"] or {}).get("Metrics") else None
            if "LoggingConfig" in spec:
                esm.emu_logging = spec["LoggingConfig"] if (spec["LoggingConfig"] or {}).get("SystemLogLevel") else None
            if "ProvisionedPollerConfig" in spec:
                esm.poller_config = spec["ProvisionedPollerConfig"] or None
        return esm

    # Code in S3 that is not there is refused, as AWS refuses it (moto created the function
    # without code when the bucket existed but the key did not).
    from moto.awslambda import models as lambda_models

    original_validate = lambda_models._validate_s3_bucket_and_key

    def validate_s3_bucket_and_key(account_id, partition, data):
        try:
            key = original_validate(account_id, partition, data)
        except ValueError:
            key = None
        if key is None:
            raise InvalidParameterValueException(
                "Error occurred while GetObject. S3 Error Code: NoSuchKey. S3 Error Message: The specified key does not exist."
            )
        return key

    lambda_models._validate_s3_bucket_and_key = validate_s3_bucket_and_key
    EventSourceMapping.__init__ = esm_init
    EventSourceMapping.get_configuration = esm_configuration
    LambdaBackend.update_event_source_mapping = update_event_source_mapping


# --- S3 ---------------------------------------------------------------------------------------


def patch_moto_canned_acls():
    """A canned ACL granting a group two permissions (`log-delivery-write`: WRITE and
    READ_ACP) answers one Grant per permission, as S3 does (moto answered only the first)."""
    from moto.s3 import models, responses

    original = models.get_canned_acl

    def get_canned_acl(acl):
        canned = original(acl)
        canned.grants = [models.FakeGrant(grant.grantees, [permission])
                         for grant in canned.grants for permission in grant.permissions]
        return canned

    models.get_canned_acl = get_canned_acl
    responses.get_canned_acl = get_canned_acl

    # ACLs are disabled on a bucket whose object ownership is BucketOwnerEnforced, S3's
    # default for new buckets since April 2023: an ACL granting anyone but the owner is
    # refused (moto took it).
    from moto.s3.exceptions import S3ClientError

    class AccessControlListNotSupported(S3ClientError):
        code = "AccessControlListNotSupported"

        def __init__(self):
            super().__init__("AccessControlListNotSupported", "The bucket does not allow ACLs")

    original_put = models.S3Backend.put_bucket_acl

    def put_bucket_acl(self, bucket_name, acl):
        bucket = self.get_bucket(bucket_name)
        enforced = bucket.ownership_rule in (None, "BucketOwnerEnforced")
        others = [g for grant in (acl.grants if acl else []) for g in grant.grantees
                  if g.uri or (g.id and g.id != models.OWNER)]
        if enforced and others:
            raise AccessControlListNotSupported()
        return original_put(self, bucket_name, acl)

    models.S3Backend.put_bucket_acl = put_bucket_acl

_KINDS = {
    "metrics": ("MetricsConfiguration", "ListMetricsConfigurationsResult", "emu_metrics"),
    "intelligent-tiering": ("IntelligentTieringConfiguration",
                            "ListBucketIntelligentTieringConfigurationsOutput", "emu_intelligent_tiering"),
}


def _xml(start_response, status, body):
    headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(body))),
               ("x-amz-request-id", uuid.uuid4().hex[:16])]
    start_response(status, headers)
    return [body]


def _s3_error(start_response, status, code, message):
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>").encode()
    return _xml(start_response, status, body)


def _strip_ns(element):
    for node in element.iter():
        if "}" in node.tag:
            node.tag = node.tag.split("}", 1)[1]
    return element


def answer_s3(environ, start_response, request):
    """Answers S3's metrics and intelligent-tiering configuration APIs, or returns None."""
    query = parse_qs(request["query"], keep_blank_values=True)
    kind = next((k for k in _KINDS if k in query), None)
    if kind is None:
        return None
    bucket_name = request["path"].strip("/").split("/", 1)[0]
    if not bucket_name:
        return None
    element, list_root, attribute = _KINDS[kind]
    from moto.s3.exceptions import MissingBucket
    try:
        bucket = _backend(request, "s3").get_bucket(bucket_name)
    except MissingBucket:
        return _s3_error(start_response, "404 Not Found", "NoSuchBucket", "The specified bucket does not exist")
    configs = bucket.__dict__.setdefault(attribute, {})
    config_id = query.get("id", [None])[0]
    method = request["method"]
    if method == "GET" and config_id is None:
        items = "".join(configs[i] for i in sorted(configs))
        body = (f'<?xml version="1.0" encoding="UTF-8"?><{list_root} xmlns="{S3_NS}">'
                f"<IsTruncated>false</IsTruncated>{items}</{list_root}>").encode()
        return _xml(start_response, "200 OK", body)
    if not config_id:
        return _s3_error(start_response, "400 Bad Request", "InvalidArgument", "Missing required parameter: id")
    if method == "PUT":
        try:
            root = _strip_ns(ET.fromstring(_read_body(environ)))
        except ET.ParseError:
            return _s3_error(start_response, "400 Bad Request", "MalformedXML",
                             "The XML you provided was not well-formed or did not validate against our published schema")
        if root.tag != element or (root.findtext("Id") or "") != config_id:
            return _s3_error(start_response, "400 Bad Request", "InvalidArgument",
                             f"The {element} Id must match the id parameter")
        if kind == "intelligent-tiering":
            if root.findtext("Status") not in ("Enabled", "Disabled") or not root.findall("Tiering"):
                return _s3_error(start_response, "400 Bad Request", "MalformedXML",
                                 "An IntelligentTieringConfiguration needs a Status and at least one Tiering")
            for tiering in root.findall("Tiering"):
                tier, days = tiering.findtext("AccessTier"), int(tiering.findtext("Days") or 0)
                low = 90 if tier == "ARCHIVE_ACCESS" else 180 if tier == "DEEP_ARCHIVE_ACCESS" else None
                if low is None or not low <= days <= 730:
                    return _s3_error(start_response, "400 Bad Request", "InvalidArgument",
                                     f"Days for {tier} must be between {low or 90} and 730")
        configs[config_id] = ET.tostring(root, encoding="unicode")
        start_response("204 No Content", [("Content-Length", "0")])
        return [b""]
    if config_id not in configs:
        return _s3_error(start_response, "404 Not Found", "NoSuchConfiguration",
                         "The specified configuration does not exist.")
    if method == "DELETE":
        del configs[config_id]
        start_response("204 No Content", [("Content-Length", "0")])
        return [b""]
    body = configs[config_id].replace(f"<{element}>", f'<{element} xmlns="{S3_NS}">', 1)
    return _xml(start_response, "200 OK", ('<?xml version="1.0" encoding="UTF-8"?>' + body).encode())
