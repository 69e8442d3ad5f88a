"""The local AWS emulator cdkd's tests and demo run against: moto plus a Cloud Control API.

One process, one port on 127.0.0.1, every service (S3, STS, IAM, Lambda, EC2, CloudFormation,
SQS, SNS, Logs, DynamoDB, Cloud Control). Around moto's WSGI app it adds:

- `X-Amz-Target: CloudApiService.*` requests, answered by cloudcontrol.CloudControl;
- CloudFormation's `DescribeType` (the registry, which moto lacks), answered by
  registry.Registry from cfn-lint's resource schemas; every other CloudFormation action is moto's;
- a per-request latency (`EMU_LATENCY_MS`), to make benchmarks honest about round trips;
- a request log (`EMU_REQUEST_LOG=FILE`: start and end time, service, action, method, path);
- a fault injector: `EMU_FAULT_RATE` (a fraction of requests answered with throttling:
  400 ThrottlingException for JSON and query services, 503 SlowDown for S3; with
  `EMU_FAULT_5XX_SHARE` that share of them is a server error instead: 500 InternalFailure or
  503 ServiceUnavailable, for S3 503 SlowDown or 500 InternalError; with
  `EMU_FAULT_PASS_THROUGH_SHARE` that share of the server errors is answered after the request
  was applied) and targeted rules set at run time with `POST /_emulator/faults`;
- per-service request-rate limits, as AWS's API rate limits: a token bucket per SigV4 service
  name, `EMU_RATE_LIMITS` or `POST /_emulator/config {"rateLimits": ...}`, both
  `{"cloudcontrolapi": {"perSecond": 100, "burst": 20}}` (a bucket starts with `burst` tokens and
  refills at `perSecond`; `{}` or null removes every limit). A request that finds its bucket
  empty is not applied and is answered 400 ThrottlingException "Rate exceeded" (S3: 503
  SlowDown); `GET|DELETE /_emulator/throttled` counts those answers per service. /moto-api and
  /_emulator requests are never limited;
- `GET /_emulator/inflight` (requests being answered), `GET /_emulator/health`, `GET|POST /_emulator/config`, `GET /_emulator/stats` (requests
  seen per service and action), `GET|DELETE /_emulator/describe-type-calls` (the DescribeType
  calls answered), and `POST /moto-api/reset` also resetting Cloud Control and the counts
  (the throttled counts too; the rate limits stay);
- CloudFormation IMPORT change sets checked and executed as AWS does (cfn_import.py: AWS's
  refusals, a change set FAILED for a resource that does not exist or another stack holds, the
  existing resources adopted, not created again; an existing stack nested into another by
  importing its `AWS::CloudFormation::Stack`, with AWS's checks), every change set execution
  taking the new outputs and turning a resource's failure into events and a rollback, nested
  stacks answering ParentId and RootId, and TemplateURLs read from the emulator's S3 in
  path-style (http://127.0.0.1:<port>/<bucket>/<key>) or virtual-hosted form;
- S3 buckets are their owner's (s3_ownership.py): a request from another account, or whose
  `x-amz-expected-bucket-owner` names another account, is answered 403 AccessDenied unless the
  bucket policy allows that account; an access key id of 12 digits is the account it names;
- bucket-policy statements with a `Condition` are not enforced (moto would deny every call);
- S3 mutations run one at a time, so conditional writes are atomic as they are on AWS;
- Lambda `Invoke` runs the function's real handler code (nodejs* and python3* zip functions,
  see lambda_runner.py); other runtimes get moto's canned answer (moto's Docker execution is off);
- SNS delivers to `lambda` subscriptions through the same runner, asynchronously;
- CloudFormation custom resources (`Custom::*`, `AWS::CloudFormation::CustomResource`) send their
  Create/Update/Delete requests to the ServiceToken's function (through the runner) or topic and
  wait for the response PUT to the ResponseURL, a pre-signed-style S3 URL on this endpoint
  (`/cloudformation-custom-resource-response-<region>/…`, answered here, not by moto's S3), up to
  `EMU_CUSTOM_RESOURCE_TIMEOUT` s (default 60; `POST /_emulator/config
  {"customResourceTimeoutSeconds": N}`); see cfn_custom.py.

Run: python server.py --port 0 --endpoint-file FILE   (port 0 picks a free port)
"""

import argparse
import atexit
import io
import json
import os
import random
import re
import signal
import socket
import sys
import threading
import time
from urllib.parse import parse_qs

os.environ.setdefault("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
# As on AWS: a container-image function needs its image in ECR (moto stubs the check by default).
os.environ.setdefault("MOTO_LAMBDA_STUB_ECR", "false")

from werkzeug.serving import make_server  # noqa: E402
from moto.moto_server.werkzeug_app import (  # noqa: E402
    DomainDispatcherApplication,
    create_backend_app,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cloudcontrol import ApiError, CloudControl  # noqa: E402
from lambda_runner import (  # noqa: E402
    LambdaRunner,
    patch_moto_events_delivery,
    patch_moto_inline_code,
    patch_moto_sns_delivery,
)
from registry import Registry  # noqa: E402
import rpcv2_cbor  # noqa: E402
import timing  # noqa: E402  (EMU_PROFILE=aws: AWS's timing, off by default)
import dns_services  # noqa: E402,F401  (Route 53 and ACM as AWS has them: CallerReference, query logging, DNS validation)
import apigateway_rest  # noqa: E402,F401  (API Gateway REST APIs as AWS answers them: conflicts, not-found, patch operations, tags by ARN)
import ecs_service  # noqa: E402,F401  (ECS services roll out and drain over time, clientToken, target groups on a load balancer; see the module)
import config_apis  # noqa: E402  (Lambda and S3 configuration APIs moto lacks)
import elbv2_service  # noqa: E402,F401  (ELBv2 as AWS has it: provisioning, duplicate names and ports, Lambda target permissions)
import cloudfront_service  # noqa: E402,F401  (CloudFront as AWS has it: distributions InProgress then Deployed, ETags, policies, functions)
import waf_service  # noqa: E402,F401  (WAFv2 as AWS has it: updates replace, associated ACLs refuse delete, one ACL per resource)
import cloudmap_service  # noqa: E402,F401  (Cloud Map as AWS has it: operations take time, CreatorRequestId idempotency, names unique, namespaces with services refuse delete)
import autoscaling_service  # noqa: E402,F401  (EC2 Auto Scaling as AWS has it: AlreadyExists on a name in use, ResourceInUse on a delete with instances without ForceDelete)
import cognito_service  # noqa: E402,F401  (Cognito user pool domains as AWS has them: a domain in use or a second one of a kind on a pool refused)
import appautoscaling_service  # noqa: E402,F401  (Application Auto Scaling as AWS has it: targets need their resource, policies their target, deregister takes policies along, tags)
import dynamodb_autoscaling  # noqa: E402,F401  (DynamoDB's Update/DescribeTableReplicaAutoScaling, moto has neither: settings kept as Application Auto Scaling targets and policies, as on AWS)
import ec2_instances  # noqa: E402,F401  (EC2 RunInstances as AWS has it: ClientToken idempotency, the client-token filter)
import apigatewayv2_mapping  # noqa: E402,F401  (HTTP API integrations: an update merges parameter mappings, as AWS does)
import s3_ownership  # noqa: E402  (S3 buckets are their owner's: ExpectedBucketOwner, other accounts refused; a 12-digit access key is its account)
from moto.core.config import default_user_config  # noqa: E402
from moto.iam import access_control  # noqa: E402
from moto.core.base_backend import BaseBackend  # noqa: E402

# moto's /moto-api/reset re-creates every region backend (`BaseBackend.reset`: `__init__` again)
# and then drops them all (`BackendDict.reset` clears every account right after), so a reset paid
# for building EC2's default VPCs and AMI catalogue once more for nothing: seconds per emulator
# test. The clear alone resets; S3's own `reset` still closes its files and frees bucket names
# before it reaches this one.
BaseBackend.reset = lambda self: None

# No Docker engine here: moto's own Lambda execution is off from the start (functions live in
# moto's "simple" backend, whose canned answer is what unsupported runtimes get); the emulator
# runs Node.js and Python handlers itself (lambda_runner.py).
default_user_config["lambda"]["use_docker"] = False
patch_moto_inline_code()


def _patch_moto_list_inventory():
    """S3 answers ListBucketInventoryConfigurations with a `ListInventoryConfigurationsResult`
    root; moto names the root after the action, which SDKs that check the root reject."""
    from moto.s3.responses import S3Response
    original = S3Response.list_bucket_inventory_configurations

    def as_s3(self):
        status, headers, body = original(self)
        wrong, right = "ListBucketInventoryConfigurationsResponse", "ListInventoryConfigurationsResult"
        if isinstance(body, bytes):
            body = body.replace(wrong.encode(), right.encode())
        else:
            body = body.replace(wrong, right)
        return status, headers, body

    S3Response.list_bucket_inventory_configurations = as_s3


_patch_moto_list_inventory()


def _patch_moto_s3_event_key():
    """S3 event notifications carry the object key form-encoded with its slashes kept
    (`in/a b.csv` -> `in/a+b.csv`); moto encoded the slashes too (`in%2Fa+b.csv`)."""
    import functools
    from urllib.parse import quote_plus
    from moto.s3 import notifications
    notifications.quote_plus = functools.partial(quote_plus, safe="/")


_patch_moto_s3_event_key()


def _patch_moto_kinesis_consumers():
    """Kinesis refuses a second consumer of one name on a stream (ResourceInUseException; moto
    appended a duplicate) and tags consumers: RegisterStreamConsumer's `Tags`, and
    ListTagsForResource / TagResource / UntagResource by ARN (moto had none of the three, and
    answered them with a 500)."""
    from moto.core.responses import ActionResult, EmptyResult
    from moto.kinesis.exceptions import ResourceInUseError, ResourceNotFoundError
    from moto.kinesis.responses import KinesisResponse
    consumer_tags = {}  # consumer ARN -> {key: value}
    register = KinesisResponse.register_stream_consumer

    def register_once(self):
        stream_arn, name = self._get_param("StreamARN"), self._get_param("ConsumerName")
        stream = self.kinesis_backend._find_stream_by_arn(stream_arn)
        if stream is not None and any(c.consumer_name == name for c in stream.consumers):
            raise ResourceInUseError(f"Consumer {name} under stream {stream_arn} already exists")
        answer = register(self)
        consumer = self.kinesis_backend.describe_stream_consumer(stream_arn, name, None)
        consumer_tags[consumer.consumer_arn] = dict(self._get_param("Tags") or {})
        return answer

    def tags_of(self, arn):
        """The tag dictionary of the stream or consumer `arn` (KeyError-free: not found raises)."""
        if "/consumer/" in arn:
            self.kinesis_backend.describe_stream_consumer(None, None, arn)
            return consumer_tags.setdefault(arn, {})
        return self.kinesis_backend.describe_stream(stream_arn=arn, stream_name=None).tags

    def list_tags_for_resource(self):
        arn = self._get_param("ResourceARN")
        try:
            tags = tags_of(self, arn)
        except KeyError:
            raise ResourceNotFoundError(f"Resource {arn} not found")
        return ActionResult({"Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())]})

    def tag_resource(self):
        tags_of(self, self._get_param("ResourceARN")).update(self._get_param("Tags") or {})
        return EmptyResult()

    def untag_resource(self):
        tags = tags_of(self, self._get_param("ResourceARN"))
        for key in self._get_param("TagKeys") or []:
            tags.pop(key, None)
        return EmptyResult()

    KinesisResponse.register_stream_consumer = register_once
    KinesisResponse.list_tags_for_resource = list_tags_for_resource
    KinesisResponse.tag_resource = tag_resource
    KinesisResponse.untag_resource = untag_resource


_patch_moto_kinesis_consumers()


def _patch_moto_metric_filter_upsert():
    """PutMetricFilter of a name the log group already has replaces that filter, as CloudWatch
    Logs does (moto appended a second filter of the same name)."""
    from moto.logs.metric_filters import MetricFilters
    add = MetricFilters.add_filter

    def replace_or_add(self, filter_name, filter_pattern, log_group_name, metric_transformations):
        self.metric_filters = [f for f in self.metric_filters
                               if (f["filterName"], f["logGroupName"]) != (filter_name, log_group_name)]
        add(self, filter_name, filter_pattern, log_group_name, metric_transformations)

    MetricFilters.add_filter = replace_or_add


_patch_moto_metric_filter_upsert()


def _patch_moto_publish_unchanged():
    """PublishVersion publishes nothing when the function's code and configuration equal the
    last version's: it answers that version (moto published again after any update call,
    even one that changed nothing)."""
    from moto.awslambda.models import LambdaStorage
    publish = LambdaStorage.publish_version
    volatile = {"Version", "FunctionArn", "LastModified", "RevisionId", "Description",
                "LastUpdateStatus", "State", "StateReason", "StateReasonCode"}

    def settings(function):
        return {k: v for k, v in function.get_configuration().items() if k not in volatile}

    def publish_if_changed(self, name_or_arn, description=""):
        function = self.get_function_by_name_or_arn_forbid_qualifier(name_or_arn)
        versions = self._functions.get(function.function_name, {}).get("versions") or []
        if versions and settings(versions[-1]) == settings(function):
            return versions[-1]
        return publish(self, name_or_arn, description)

    LambdaStorage.publish_version = publish_if_changed


_patch_moto_publish_unchanged()


def _patch_moto_apigatewayv2_as_aws():
    """API Gateway v2 as AWS answers it: UpdateStage (PATCH /v2/apis/{id}/stages/{name}),
    DeleteAccessLogSettings and GetAuthorizers (moto had none of them), a second stage of one
    name or a second route of one route key on an API is a ConflictException (moto replaced the
    stage and added a duplicate route), and a delete of an API or stage that does not exist is a
    NotFoundException (moto answered 200)."""
    from moto.apigatewayv2.exceptions import APIGatewayV2Error, ApiNotFound, StageNotFound
    from moto.apigatewayv2.models import Api, ApiGatewayV2Backend
    from moto.apigatewayv2.responses import ApiGatewayV2Response

    class Conflict(APIGatewayV2Error):
        code = 409

        def __init__(self, message):
            super().__init__("ConflictException", message)

    create_stage, create_route = Api.create_stage, Api.create_route

    def create_stage_once(self, config):
        if config.get("stageName") in self.stages:
            raise Conflict(f"Stage already exists: {config.get('stageName')}")
        return create_stage(self, config)

    def create_route_once(self, *args, **kwargs):
        key = kwargs.get("route_key")
        if any(r.route_key == key for r in self.routes.values()):
            raise Conflict(f"Route with key {key} already exists for this API")
        return create_route(self, *args, **kwargs)

    def delete_api(self, api_id):
        if api_id not in self.apis:
            raise ApiNotFound(api_id)
        self.apis.pop(api_id)

    def delete_stage(self, stage_name):
        if stage_name not in self.stages:
            raise StageNotFound
        self.stages.pop(stage_name)

    def update_stage(self):
        import json as _json
        from urllib.parse import unquote
        parts = self.path.split("/")
        api_id, stage_name = parts[-3], unquote(parts[-1])
        stage = self.apigatewayv2_backend.get_stage(api_id, stage_name)
        body = _json.loads(self.body or "{}")
        fields = {"accessLogSettings": "access_log_settings", "autoDeploy": "auto_deploy",
                  "clientCertificateId": "client_certificate_id", "description": "description",
                  "defaultRouteSettings": "default_route_settings",
                  "routeSettings": "route_settings", "stageVariables": "stage_variables"}
        for key, attribute in fields.items():
            if key in body:
                setattr(stage, attribute, body[key])
        return 200, {}, _json.dumps(stage.to_json())

    def get_authorizers(self):
        import json as _json
        api = self.apigatewayv2_backend.get_api(self.path.split("/")[-2])
        return 200, {}, _json.dumps({"items": [a.to_json() for a in api.authorizers.values()]})

    def delete_access_log_settings(self):
        parts = self.path.split("/")
        api_id, stage_name = parts[-4], parts[-2]
        from urllib.parse import unquote
        self.apigatewayv2_backend.get_stage(api_id, unquote(stage_name)).access_log_settings = None
        return 204, {}, ""

    from moto.apigatewayv2.models import Stage
    stage_init, stage_json = Stage.__init__, Stage.to_json

    def stage_arn(stage):
        return f"arn:aws:apigateway:{stage.api.backend.region_name}::/apis/{stage.api.api_id}/stages/{stage.name}"

    def stage_init_tagged(self, api, config):
        stage_init(self, api, config)
        self.api = api
        api.backend.tag_resource(stage_arn(self), config.get("tags") or {})

    def stage_json_tagged(self):
        answer = stage_json(self)
        answer["tags"] = self.api.backend.get_tags(stage_arn(self))
        return answer

    Stage.__init__ = stage_init_tagged
    Stage.to_json = stage_json_tagged
    Api.create_stage = create_stage_once
    Api.create_route = create_route_once
    Api.delete_stage = delete_stage
    ApiGatewayV2Backend.delete_api = delete_api
    ApiGatewayV2Response.update_stage = update_stage
    ApiGatewayV2Response.get_authorizers = get_authorizers
    ApiGatewayV2Response.delete_access_log_settings = delete_access_log_settings
    # A stage's tags are the ones TagResource / UntagResource change by the stage's ARN (moto
    # kept the create's apart). Custom domain names: the regional endpoint AWS gives each configuration (its
    # apiGatewayDomainName, hostedZoneId and status; moto echoed the request), tags kept where
    # TagResource / UntagResource change them, UpdateDomainName and UpdateApiMapping (moto had
    # neither), and a second mapping of one key on a domain name a ConflictException.
    import random as _random
    import string as _string
    from moto.apigatewayv2.models import DomainName
    zones = {"us-east-1": "Z1UJRXOUMOOFQ8", "us-east-2": "ZOJJZC49E0EPZ", "us-west-2": "Z2OJLYMUO9EFXC",
             "eu-west-1": "ZLY8HYME6SFDD", "eu-central-1": "Z1U9ULNL0V5AJ3"}
    domain_init, domain_json = DomainName.__init__, DomainName.to_json

    def regional(self, configurations):
        filled = []
        for config in configurations or [{}]:
            config = dict(config)
            region = self.backend_region
            config.setdefault("endpointType", "REGIONAL")
            config.setdefault("apiGatewayDomainName", "d-" + "".join(
                _random.choice(_string.ascii_lowercase + _string.digits) for _ in range(10))
                + f".execute-api.{region}.amazonaws.com")
            config.setdefault("hostedZoneId", zones.get(region, "Z1UJRXOUMOOFQ8"))
            config.setdefault("domainNameStatus", "AVAILABLE")
            filled.append(config)
        return filled

    def domain_init_as_aws(self, domain_name, domain_name_configurations, mutual_tls_authentication,
                           tags, backend):
        self.backend_region, self.backend = backend.region_name, backend
        domain_init(self, domain_name, regional(self, domain_name_configurations),
                    mutual_tls_authentication, tags, backend)
        backend.tag_resource(self.domain_name_arn, tags)

    def domain_json_as_aws(self):
        answer = domain_json(self)
        answer["tags"] = self.backend.get_tags(self.domain_name_arn)
        return answer

    def update_domain_name(self):
        import json as _json
        from urllib.parse import unquote
        domain = self.apigatewayv2_backend.get_domain_name(unquote(self.path.split("/")[-1]))
        body = _json.loads(self.body or "{}")
        if "domainNameConfigurations" in body:
            domain.domain_name_configurations = regional(domain, body["domainNameConfigurations"])
        if "mutualTlsAuthentication" in body:
            domain.mutual_tls_authentication = body["mutualTlsAuthentication"]
        return 200, {}, _json.dumps(domain.to_json())

    create_mapping = ApiGatewayV2Backend.create_api_mapping

    def create_api_mapping_once(self, api_id, api_mapping_key, domain_name, stage):
        if any(m.domain_name == domain_name and m.api_mapping_key == api_mapping_key
               for m in self.api_mappings.values()):
            raise Conflict(f"ApiMapping key {api_mapping_key!r} already exists for domain name {domain_name}")
        return create_mapping(self, api_id, api_mapping_key, domain_name, stage)

    def update_api_mapping(self):
        import json as _json
        parts = self.path.split("/")
        mapping = self.apigatewayv2_backend.get_api_mapping(parts[-1], parts[-3])
        body = _json.loads(self.body or "{}")
        for key, attribute in {"apiId": "api_id", "apiMappingKey": "api_mapping_key",
                               "stage": "stage"}.items():
            if key in body:
                setattr(mapping, attribute, body[key])
        return 200, {}, _json.dumps(mapping.to_json())

    DomainName.__init__ = domain_init_as_aws
    DomainName.to_json = domain_json_as_aws
    ApiGatewayV2Backend.create_api_mapping = create_api_mapping_once
    ApiGatewayV2Response.update_domain_name = update_domain_name
    ApiGatewayV2Response.update_api_mapping = update_api_mapping
    from moto.apigatewayv2 import urls
    urls.url_paths[
        "{0}/v2/apis/(?P<api_id>[^/]+)/stages/(?P<stage_name>[^/]+)/accesslogsettings$"
    ] = ApiGatewayV2Response.dispatch
    # TagResource / UntagResource / GetTags by a stage's or a domain name's ARN (moto routed
    # only an API's and a VPC link's).
    urls.url_paths[
        "{0}/v2/tags/(?P<resource_arn_pt1>[^/]+)/apis/(?P<resource_arn_pt2>[^/]+)/stages/(?P<resource_arn_pt3>[^/]+)$"
    ] = ApiGatewayV2Response.dispatch
    urls.url_paths[
        "{0}/v2/tags/(?P<resource_arn_pt1>[^/]+)/domainnames/(?P<resource_arn_pt2>[^/]+)$"
    ] = ApiGatewayV2Response.dispatch


_patch_moto_apigatewayv2_as_aws()
config_apis.patch_moto_lambda()
config_apis.patch_moto_canned_acls()

_moto_statement_check = access_control.IAMPolicyStatement.is_action_permitted


def _statement_check_without_conditions(self, action, resource="*", principal=None, incoming_condition_values=None):
    # moto evaluates a bucket-policy statement's Condition with no request context, so every
    # conditional statement matches: a "deny other accounts" or "deny plain HTTP" statement then
    # denies every object call of the owner itself. The emulator cannot know the request's
    # account or transport either, so such a statement is treated as not applying. The policy
    # is still stored and returned by GetBucketPolicy.
    if "Condition" in self._statement and incoming_condition_values is None:
        return access_control.PermissionResult.NEUTRAL
    return _moto_statement_check(self, action, resource, principal, incoming_condition_values)


access_control.IAMPolicyStatement.is_action_permitted = _statement_check_without_conditions

from moto.awslambda.models import LambdaBackend  # noqa: E402

_moto_put_invoke_config = LambdaBackend.put_function_event_invoke_config


def _put_invoke_config_replacing(self, function_name, config):
    # Lambda's PutFunctionEventInvokeConfig replaces the function's configuration; moto appends
    # another one and keeps answering Get with the first, so an update would never show.
    self.get_function(function_name).event_invoke_config = []
    return _moto_put_invoke_config(self, function_name, config)


LambdaBackend.put_function_event_invoke_config = _put_invoke_config_replacing

from moto.cloudformation.models import CloudFormationBackend  # noqa: E402


def _previous_parameters_with_defaults(self, instance, incoming_params):
    # UpdateStack's UsePreviousValue keeps a parameter's current value, the template default
    # included when it was never passed; moto only knows the passed ones and fails (500) on
    # the others, such as a CDK app's BootstrapVersion.
    parameters = {p["ParameterKey"]: p["ParameterValue"] for p in incoming_params if "ParameterValue" in p}
    current = dict(getattr(instance, "parameters", {}) or {})
    declared = (getattr(instance, "template_dict", None) or {}).get("Parameters", {})
    for parameter in incoming_params:
        if parameter.get("UsePreviousValue", False):
            key = parameter["ParameterKey"]
            if key in current:
                parameters[key] = current[key]
            elif "Default" in declared.get(key, {}):
                parameters[key] = declared[key]["Default"]
    return parameters


CloudFormationBackend._resolve_update_parameters = _previous_parameters_with_defaults

from moto.cloudformation.parsing import ResourceMap  # noqa: E402

_moto_resource_diff = ResourceMap.build_resource_diff
_POLICIES = ("DeletionPolicy", "UpdateReplacePolicy")


def _resource_diff_ignoring_policies(self, other_template, parameters=None):
    # A change of DeletionPolicy or UpdateReplacePolicy alone touches no resource in
    # CloudFormation; moto treats it as a modification and re-creates some types (a security
    # group gets a new id), which would make retiring a stack (Retain, then delete) lose them.
    diff = _moto_resource_diff(self, other_template, parameters)
    old, new = self._resource_json_map, other_template["Resources"]

    def without_policies(resource):
        return {k: v for k, v in resource.items() if k not in _POLICIES}

    diff["Modify"] = [
        name for name in diff["Modify"]
        if without_policies(new[name]) != without_policies(old[name])
    ]
    return diff


ResourceMap.build_resource_diff = _resource_diff_ignoring_policies

import json as _json  # noqa: E402

from moto.iam import models as _iam_models  # noqa: E402


def _policy_as_json(original):
    # CloudFormation stores an inline policy written as an object in the template as its JSON
    # text; moto's CloudFormation models hand the object itself to put_policy, and IAM then
    # answers GetRolePolicy with Python's repr of it.
    def put_policy(self, policy_name, policy_json):
        if isinstance(policy_json, (dict, list)):
            policy_json = _json.dumps(policy_json)
        return original(self, policy_name, policy_json)

    return put_policy


for _principal in (_iam_models.Role, _iam_models.Group, _iam_models.User):
    _principal.put_policy = _policy_as_json(_principal.put_policy)

from moto.cloudformation.exceptions import ValidationError as _CfnValidationError  # noqa: E402
from moto.cloudformation.responses import CloudFormationResponse  # noqa: E402

import cfn_custom  # noqa: E402
import cfn_import  # noqa: E402

# IMPORT change sets as AWS answers them, change set executions with AWS's events, outputs and
# failure handling, and TemplateURLs read from the emulator's S3 (cfn_import.py). Installed
# before the TemplateBody limit below, which then wraps CreateChangeSet's IMPORT path too.
cfn_import.install()

# CloudFormation refuses an inline TemplateBody over 51,200 bytes (larger templates go through
# S3 and TemplateURL); moto takes any size.
TEMPLATE_BODY_LIMIT = 51_200


def _inline_limited(original):
    def action(self):
        body = self._get_param("TemplateBody")
        if body and len(body.encode()) > TEMPLATE_BODY_LIMIT:
            raise _CfnValidationError(
                message=f"1 validation error detected: Value at 'templateBody' failed to satisfy constraint: Member must have length less than or equal to {TEMPLATE_BODY_LIMIT}")
        return original(self)

    return action


for _action in ("create_stack", "update_stack", "create_change_set"):
    setattr(CloudFormationResponse, _action, _inline_limited(getattr(CloudFormationResponse, _action)))

from moto.cloudformation.models import Stack as _CfnStack  # noqa: E402
from moto.utilities.utils import get_partition as _partition  # noqa: E402


def _nested_stack_updated_in_place(cls, original_resource, new_resource_name, cloudformation_json,
                                   account_id, region_name):
    # CloudFormation updates a nested stack in place when its TemplateURL, Parameters or Tags
    # change (same stack, same resources); moto deleted it and created another, re-creating (or,
    # with a Retain policy, orphaning) every resource in it. `original_resource` is moto's Stack,
    # or the Imported holding a stack nested by an import (cfn_import.py), which passes `update`
    # on to the stack. The property's Tags become the stack's: without it the stack has none (an
    # update that drops the property untags the nested stack, as on AWS).
    properties = cloudformation_json["Properties"]
    body = cfn_import.template_from_url(properties["TemplateURL"], account_id=account_id,
                                        partition=_partition(region_name))
    tags = properties.get("Tags")
    original_resource.update(template=body, parameters=properties.get("Parameters") or None,
                             tags={t["Key"]: t["Value"] for t in tags or []})
    return original_resource


_CfnStack.update_from_cloudformation_json = classmethod(_nested_stack_updated_in_place)


def _nested_stack_output(self, attribute):
    # `Fn::GetAtt [NestedStack, Outputs.Name]`, how a parent reads its nested stack's output
    # (a CDK NestedStack's exposed values); moto's Stack model answers no attribute at all.
    if attribute.startswith("Outputs."):
        name = attribute[len("Outputs."):]
        for output in self.output_map.values():
            if output.key == name:
                return output.value
    from moto.cloudformation.exceptions import UnformattedGetAttTemplateException
    raise UnformattedGetAttTemplateException()


_CfnStack.get_cfn_attribute = _nested_stack_output

from moto.ssm.models import Parameter as _SsmParameter  # noqa: E402

_moto_parameter_from_cfn = _SsmParameter.create_from_cloudformation_json.__func__


def _parameter_named_when_unnamed(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
    # An AWS::SSM::Parameter without a Name gets a generated one, as every unnamed resource
    # does; moto crashed on the missing name.
    properties = cloudformation_json.setdefault("Properties", {})
    if not properties.get("Name"):
        properties["Name"] = resource_name
    return _moto_parameter_from_cfn(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs)


_SsmParameter.create_from_cloudformation_json = classmethod(_parameter_named_when_unnamed)

from moto.sqs.models import Queue as _SqsQueue  # noqa: E402


def _aws_queue_url(self, request_url):
    # AWS answers every queue URL in one form whatever endpoint was called; moto echoed the
    # request's host and port, so a URL recorded through SQS differed from Cloud Control's and
    # CloudFormation's for the same queue. Requests still go to the client's endpoint: the URL
    # travels in the request body, and only its last segment (the name) is read.
    return f"https://sqs.{self.region}.amazonaws.com/{self.account_id}/{self.name}"


_SqsQueue.url = _aws_queue_url

from moto.events.utils import EventTemplateParser as _EventTemplateParser  # noqa: E402


def _aws_input_transform(input_template, input_paths_map, event):
    # EventBridge's input transformer: a placeholder inside quotes ("<name>") takes the
    # value's text, one outside quotes its JSON (a string arrives quoted); a path that matches
    # nothing is null; a template that is not JSON after substitution is sent as text. moto
    # pasted strings in unquoted and failed the whole PutEvents on the invalid JSON.
    from jsonpath_ng.ext import parse as jsonpath

    template = input_template or _EventTemplateParser.DEFAULT_EVENT_INPUT_TEMPLATE
    paths = input_paths_map or _EventTemplateParser.DEFAULT_EVENT_INPUT_PATHS_MAP
    values = {}
    for name, path in paths.items():
        matches = jsonpath(path).find(event)
        values[name] = matches[0].value if matches else None
    values["aws.events.event.json"] = event
    values["aws.events.event.ingestion-time"] = event.get("ingestion-time")

    out, in_string, i = [], False, 0
    while i < len(template):
        char = template[i]
        if char == "\\" and in_string:
            out.append(template[i:i + 2])
            i += 2
            continue
        if char == '"':
            in_string = not in_string
        elif char == "<":
            end = template.find(">", i)
            name = template[i + 1:end] if end > 0 else None
            if name in values:
                value = values[name]
                if in_string:
                    text = value if isinstance(value, str) else json.dumps(value)
                    out.append(json.dumps(text)[1:-1])
                else:
                    out.append(json.dumps(value))
                i = end + 1
                continue
        out.append(char)
        i += 1
    text = "".join(out)
    try:
        return json.loads(text)
    except ValueError:
        return text


_EventTemplateParser.parse = staticmethod(_aws_input_transform)

from moto.ec2.exceptions import DependencyViolationError as _Ec2DependencyViolation  # noqa: E402
from moto.ec2.models import EC2Backend as _Ec2Backend  # noqa: E402

_moto_delete_vpc = _Ec2Backend.delete_vpc


def _delete_vpc_as_aws(self, vpc_id):
    # AWS refuses DeleteVpc while an internet gateway is attached or a security group or network
    # ACL of its own is left (moto deleted it anyway), and deletes the VPC's default ACL with it
    # (moto kept the ACL forever).
    attached = [g.id for g in self.internet_gateways.values() if g.vpc and g.vpc.id == vpc_id]
    groups = [g.id for g in self.groups.get(vpc_id, {}).values() if g.name != "default"]
    acls = [a for a in self.network_acls.values() if a.vpc_id == vpc_id]
    if attached or groups or any(not a.default for a in acls):
        raise _Ec2DependencyViolation(f"The vpc '{vpc_id}' has dependencies and cannot be deleted.")
    vpc = _moto_delete_vpc(self, vpc_id)
    for acl in acls:
        self.network_acls.pop(acl.id, None)
    return vpc


_Ec2Backend.delete_vpc = _delete_vpc_as_aws


def _delete_network_acl_entry_as_aws(self, network_acl_id, rule_number, egress):
    # AWS answers a missing entry with InvalidNetworkAclEntry.NotFound; moto's StopIteration
    # became an HTML 500, which a client retries as a server error for a minute.
    from moto.ec2.exceptions import EC2ClientError

    acl = self.get_network_acl(network_acl_id)
    entry = next((e for e in acl.network_acl_entries
                  if e.egress == egress and e.rule_number == rule_number), None)
    if entry is None:
        direction = "egress" if egress else "ingress"
        raise EC2ClientError("InvalidNetworkAclEntry.NotFound",
                             f"The network acl entry identified by {rule_number} ({direction}) does not exist.")
    acl.network_acl_entries.remove(entry)
    return entry


_Ec2Backend.delete_network_acl_entry = _delete_network_acl_entry_as_aws

from moto.ec2.models.security_groups import SecurityGroupRule as _SecurityGroupRule  # noqa: E402
from moto.s3.models import S3Backend as _S3Backend  # noqa: E402

# ListObjectVersions with a prefix copies only that prefix's versions: moto deep-copied every
# version of every key in the bucket on each call (and kept much of it), so a state bucket's
# growing history of state.json versions made each custom-resource placeholder clean-up slower
# and the emulator grow by gigabytes over a long soak.
_moto_list_object_versions = _S3Backend.list_object_versions
_list_versions_lock = threading.Lock()


def _list_object_versions_of_prefix(self, bucket_name, delimiter=None, key_marker=None, max_keys=1000,
                                    prefix="", version_id_marker=None):
    keys = self.get_bucket(bucket_name).keys
    everything = type(keys).iterlists
    with _list_versions_lock:
        keys.iterlists = lambda: ((k, v) for k, v in everything(keys) if k.startswith(prefix or ""))
        try:
            return _moto_list_object_versions(self, bucket_name, delimiter, key_marker, max_keys, prefix,
                                              version_id_marker)
        finally:
            del keys.iterlists


_S3Backend.list_object_versions = _list_object_versions_of_prefix


# As AWS: DescribeSecurityGroupRules answers a rule's Description whatever its source (moto
# answered it only for CIDR sources, so a rule from another group lost its description).
_SecurityGroupRule.description = property(
    lambda self: self.ip_range.get("Description") or (self.source_group or {}).get("Description"))

# NAT gateways, as AWS: DeleteNatGateway leaves the gateway `deleting` for EMU_NAT_DELETE_SECONDS
# (default 1; AWS takes about a minute), then `deleted` with its network interface gone and its
# EIP disassociated (moto marked it deleted at once and kept the interface and the association
# forever); an unknown id is NatGatewayNotFound (moto failed with a 500). While an interface or
# a NAT gateway is in a subnet, DeleteSubnet is refused with DependencyViolation, and an EIP a
# NAT gateway still holds cannot be released (InvalidIPAddress.InUse); moto allowed both.
NAT_DELETE_SECONDS = float(os.environ.get("EMU_NAT_DELETE_SECONDS", "1"))
_moto_describe_nat_gateways = _Ec2Backend.describe_nat_gateways
_moto_get_all_network_interfaces = _Ec2Backend.get_all_network_interfaces
_moto_describe_addresses = _Ec2Backend.describe_addresses
_moto_delete_subnet = _Ec2Backend.delete_subnet
_moto_release_address = _Ec2Backend.release_address


def _settle_nat_gateways(backend):
    """Finishes the deletes whose time has come: a NAT gateway `deleted`, its interface gone;
    a deleted Lambda function's interfaces released."""
    now = time.monotonic()
    for eni in list(backend.enis.values()):
        due = getattr(eni, "_emulator_release_at", None)
        if due is not None and now >= due:
            backend.enis.pop(eni.id, None)
    for gateway in list(backend.nat_gateways.values()):
        due = getattr(gateway, "_emulator_deleted_at", None)
        if gateway.state != "deleting" or due is None or now < due:
            continue
        gateway.state = "deleted"
        eni = gateway._eni
        for address in list(backend.addresses):
            if address.eni is eni:
                backend.disassociate_address(address=address.public_ip)
        backend.enis.pop(eni.id, None)


def _delete_nat_gateway_as_aws(self, nat_gateway_id):
    from moto.ec2.exceptions import EC2ClientError

    _settle_nat_gateways(self)
    gateway = self.nat_gateways.get(nat_gateway_id)
    if gateway is None:
        raise EC2ClientError("NatGatewayNotFound", f"The Nat Gateway {nat_gateway_id} was not found")
    if gateway.state not in ("deleting", "deleted"):
        gateway.state = "deleting"
        gateway._emulator_deleted_at = time.monotonic() + timing.seconds("nat_gateway_delete_ms", NAT_DELETE_SECONDS)
        _settle_nat_gateways(self)
    return gateway


def _describe_nat_gateways_settled(self, *args, **kwargs):
    _settle_nat_gateways(self)
    return _moto_describe_nat_gateways(self, *args, **kwargs)


def _get_all_network_interfaces_settled(self, *args, **kwargs):
    _settle_nat_gateways(self)
    return _moto_get_all_network_interfaces(self, *args, **kwargs)


def _describe_addresses_settled(self, *args, **kwargs):
    _settle_nat_gateways(self)
    return _moto_describe_addresses(self, *args, **kwargs)


def _delete_subnet_as_aws(self, subnet_id):
    _settle_nat_gateways(self)
    in_use = [e.id for e in self.enis.values() if getattr(e.subnet, "id", None) == subnet_id]
    in_use += [g.id for g in self.nat_gateways.values() if g.subnet_id == subnet_id and g.state != "deleted"]
    if in_use:
        raise _Ec2DependencyViolation(f"The subnet '{subnet_id}' has dependencies and cannot be deleted.")
    return _moto_delete_subnet(self, subnet_id)


def _release_address_as_aws(self, address=None, allocation_id=None):
    from moto.ec2.exceptions import EC2ClientError

    _settle_nat_gateways(self)
    eips = self.address_by_ip([address]) if address else self.address_by_allocation([allocation_id])
    held = [g for g in self.nat_gateways.values() if g.state != "deleted" and eips and eips[0].eni is g._eni]
    if held:
        raise EC2ClientError("InvalidIPAddress.InUse", f"Address {eips[0].public_ip} is in use.")
    return _moto_release_address(self, address=address, allocation_id=allocation_id)



# Lambda functions in a VPC, as AWS: CreateFunction with VpcConfig makes one network interface
# per subnet (type `lambda`, requester-managed, "AWS Lambda VPC ENI-<function>-…", in the
# function's security groups); DeleteFunction releases them EMU_LAMBDA_ENI_RELEASE_SECONDS later
# (default 2; AWS takes up to about 20 minutes). While they are there the subnets cannot be
# deleted and neither can their security groups (DependencyViolation). moto made no interface.
LAMBDA_ENI_RELEASE_SECONDS = float(os.environ.get("EMU_LAMBDA_ENI_RELEASE_SECONDS", "2"))
LAMBDA_ENI_PREFIX = "AWS Lambda VPC ENI-"

from moto.awslambda.models import LambdaBackend as _LambdaBackend  # noqa: E402

_moto_create_function = _LambdaBackend.create_function
_moto_delete_function = _LambdaBackend.delete_function
_moto_delete_security_group = _Ec2Backend.delete_security_group


def _ec2_backend(account_id, region):
    from moto.ec2.models import ec2_backends

    return ec2_backends[account_id][region]


def _create_function_with_interfaces(self, spec):
    fn = _moto_create_function(self, spec)
    config = spec.get("VpcConfig") or {}
    ec2 = _ec2_backend(self.account_id, self.region_name)
    for subnet_id in config.get("SubnetIds") or []:
        subnet = next((n for subnets in ec2.subnets.values() for i, n in subnets.items() if i == subnet_id), None)
        if subnet is None:
            continue
        eni = ec2.create_network_interface(
            subnet, None, group_ids=list(config.get("SecurityGroupIds") or []),
            description=f"{LAMBDA_ENI_PREFIX}{fn.function_name}-{random.getrandbits(64):016x}")
        eni.interface_type = "lambda"
        eni.requester_managed = True
    return fn


def _delete_function_releasing_interfaces(self, function_name, qualifier=None):
    name = function_name.split(":")[6] if function_name.startswith("arn:") else function_name
    _moto_delete_function(self, function_name, qualifier)
    if qualifier:
        return
    ec2 = _ec2_backend(self.account_id, self.region_name)
    for eni in ec2.enis.values():
        if (eni.description or "").startswith(f"{LAMBDA_ENI_PREFIX}{name}-"):
            eni._emulator_release_at = time.monotonic() + timing.seconds(
                "lambda_vpc_eni_release_ms", LAMBDA_ENI_RELEASE_SECONDS)


def _delete_security_group_as_aws(self, name=None, group_id=None):
    _settle_nat_gateways(self)
    if group_id and any(group_id in [g.id for g in eni._group_set] for eni in self.enis.values()):
        raise _Ec2DependencyViolation(f"resource {group_id} has a dependent object")
    return _moto_delete_security_group(self, name=name, group_id=group_id)


_LambdaBackend.create_function = _create_function_with_interfaces
_LambdaBackend.delete_function = _delete_function_releasing_interfaces
_Ec2Backend.delete_security_group = _delete_security_group_as_aws
_Ec2Backend.delete_nat_gateway = _delete_nat_gateway_as_aws
_Ec2Backend.describe_nat_gateways = _describe_nat_gateways_settled
_Ec2Backend.get_all_network_interfaces = _get_all_network_interfaces_settled
_Ec2Backend.describe_addresses = _describe_addresses_settled
_Ec2Backend.delete_subnet = _delete_subnet_as_aws
_Ec2Backend.release_address = _release_address_as_aws
# The AWS timing profile wraps moto's methods as patched above (timing.py).
timing.install()

# moto names some S3 answers' XML root after the action; S3 (and the Rust SDK, which checks the
# root) uses the configuration's name. Keyed by the bucket subresource queried.
S3_XML_ROOTS = {
    "versioning": (b"GetBucketVersioningResponse", b"VersioningConfiguration"),
    "notification": (b"GetBucketNotificationResponse", b"NotificationConfiguration"),
    "accelerate": (b"GetBucketAccelerateConfigurationResponse", b"AccelerateConfiguration"),
}


def _rename_root(body, moto_root, s3_root):
    return body.replace(b"<" + moto_root, b"<" + s3_root, 1).replace(b"</" + moto_root + b">", b"</" + s3_root + b">", 1)


CC_TARGET_PREFIX = "CloudApiService."
DEFAULT_ACCOUNT = "123456789012"
SCOPE = re.compile(r"Credential=([^/]+)/\d{8}/([^/]+)/([^/]+)/aws4_request")


def _is_describe_type(request):
    return request["service"] == "cloudformation" and request["action"] == "DescribeType" and not request["target"]


class FaultRule:
    """Answer matching requests with an error, `count` times (or forever), with probability `rate`."""

    def __init__(self, spec):
        self.service = spec.get("service")
        self.method = spec.get("method")
        self.action = spec.get("action")
        self.path_contains = spec.get("pathContains")
        self.query_contains = spec.get("queryContains")
        self.header = spec.get("header")  # e.g. "If-Match": only requests carrying it
        self.body_contains = spec.get("bodyContains")  # e.g. a function's name in CreateFunction
        self.status = int(spec.get("status", 400))
        self.code = spec.get("code", "ThrottlingException")
        self.message = spec.get("message", "injected by the cdkd emulator")
        self.rate = float(spec.get("rate", 1.0))
        self.remaining = spec.get("count")
        # Apply the request, then answer with the error: "the write landed, its answer was lost".
        self.pass_through = bool(spec.get("passThrough", False))
        self.hits = 0

    def matches(self, request):
        return (
            (self.service is None or request["service"] == self.service)
            and (self.method is None or request["method"] == self.method)
            and (self.action is None or request["action"] == self.action)
            and (self.path_contains is None or self.path_contains in request["path"])
            and (self.query_contains is None or self.query_contains in request["query"])
            and (self.header is None or self.header.lower() in request["headers"])
            and (self.body_contains is None or self.body_contains in request_body(request))
            and (self.remaining is None or self.remaining > 0)
        )

    def describe(self):
        return {"status": self.status, "code": self.code, "hits": self.hits, "remaining": self.remaining}


def request_body(request):
    """The request's body as text (read once, on demand: only `bodyContains` rules need it)."""
    if "body" not in request:
        environ = request["environ"]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        request["body"] = body.decode("utf-8", "replace")
    return request["body"]


class TokenBucket:
    """One service's API rate limit: `burst` requests at once, refilled at `perSecond`."""

    def __init__(self, spec):
        self.per_second = float(spec["perSecond"])
        self.burst = float(spec.get("burst", max(1.0, self.per_second)))
        self.tokens = self.burst
        self.stamp = time.monotonic()

    def take(self):
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.per_second)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def describe(self):
        return {"perSecond": self.per_second, "burst": self.burst}


def _rate_limits(specs):
    return {service: TokenBucket(spec) for service, spec in (specs or {}).items()}


class Emulator:
    """The WSGI application: moto's dispatcher behind the extras above."""

    def __init__(self):
        self.moto = DomainDispatcherApplication(create_backend_app)
        self.cloudcontrol = CloudControl(operation_ms=int(os.environ.get("EMU_CC_OPERATION_MS", "0")))
        self.cloudcontrol.duration_ms = timing.cloud_control_ms
        self.registry = Registry()
        self.latency_ms = float(os.environ.get("EMU_LATENCY_MS", "0"))
        self.fault_rate = float(os.environ.get("EMU_FAULT_RATE", "0"))
        # Of the random faults, the share answered with a 5xx instead of throttling, and of
        # those, the share applied before the error is answered (0: throttling only, as before).
        self.fault_5xx_share = float(os.environ.get("EMU_FAULT_5XX_SHARE", "0"))
        self.fault_pass_through_share = float(os.environ.get("EMU_FAULT_PASS_THROUGH_SHARE", "0"))
        self.random_hits = {}  # "status code" -> random faults answered so far
        self.random = random.Random(int(os.environ.get("EMU_FAULT_SEED", "0")) or None)
        self.rules = []
        self.rate_limits = _rate_limits(json.loads(os.environ.get("EMU_RATE_LIMITS") or "{}"))
        self.throttled = {}  # service -> requests answered with throttling by its rate limit
        log = os.environ.get("EMU_REQUEST_LOG")
        self.request_log = open(log, "a", encoding="utf-8") if log else None
        self.stats = {}
        self.stats_by_key = {}
        self.in_flight = 0
        self.lock = threading.Lock()
        # moto checks If-Match / If-None-Match and then writes, without a lock: two concurrent
        # conditional PUTs can both succeed. S3 makes them atomic; so does the emulator, by
        # running S3 mutations one at a time.
        self.s3_writes = threading.Lock()
        self.lambda_runner = LambdaRunner()
        # SNS `lambda` subscriptions are delivered through the runner (asynchronously).
        patch_moto_sns_delivery(self.lambda_runner)
        patch_moto_events_delivery(self.lambda_runner)
        # CloudFormation custom resources invoke their handlers through it too (cfn_custom.py).
        cfn_custom.install(self.lambda_runner)

    # -- WSGI -------------------------------------------------------------------------------

    def __call__(self, environ, start_response):
        # Requests being answered (control requests aside): a test that killed a client waits
        # for what it had sent to land before it looks (`GET /_emulator/inflight`).
        counted = not environ.get("PATH_INFO", "").startswith("/_emulator/")
        if counted:
            with self.lock:
                self.in_flight += 1
        try:
            return self._logged(environ, start_response)
        finally:
            if counted:
                with self.lock:
                    self.in_flight -= 1

    def _logged(self, environ, start_response):
        if self.request_log is None:
            return self._answer(environ, start_response)
        # `EMU_REQUEST_LOG`: one line per request, "start end service action method path", for
        # finding what sits on a run's critical path.
        started = time.time()
        request = self._describe(environ)
        answer = self._answer(environ, start_response)
        with self.lock:
            self.request_log.write(f"{started:.4f} {time.time():.4f} {request['service'] or '-'} {request['action'] or '-'} {request['method']} {request['path']}\n")
            self.request_log.flush()
        return answer

    def _answer(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_emulator/"):
            return self._control(environ, start_response, path)
        if cfn_custom.is_response_path(path):
            # A custom resource handler's response to CloudFormation's pre-signed ResponseURL.
            return cfn_custom.answer_response_put(environ, start_response)
        if path == "/moto-api/reset" and environ.get("REQUEST_METHOD") == "POST":
            self.cloudcontrol.reset()
            timing.reset()
            self.registry.reset()
            with self.lock:
                self.stats.clear()
                self.stats_by_key.clear()
                self.throttled.clear()
        request = self._describe(environ)
        if not path.startswith("/moto-api"):
            self._count(request)
            if self.latency_ms > 0:
                time.sleep(self.latency_ms / 1000.0)
            if not self._within_rate_limit(request):
                if request["service"] == "s3":
                    return self._error(start_response, request, 503, "SlowDown", "Please reduce your request rate.")
                return self._error(start_response, request, 400, "ThrottlingException", "Rate exceeded")
            # A bucket of another account (or not of the ExpectedBucketOwner) is refused before
            # any fault is drawn: a pass-through fault must not apply what S3 refuses.
            refusal = s3_ownership.answer(environ, start_response, request)
            if refusal is not None:
                return refusal
            fault = self._fault_for(request)
            if fault is not None:
                status, code, message, pass_through = fault
                if pass_through:
                    handler = (self._cloudcontrol if request["target"].startswith(CC_TARGET_PREFIX)
                               else self._describe_type if _is_describe_type(request) else None)
                    if handler:
                        handler(environ, lambda *_: None, request)
                    elif request["service"] == "lambda" and self.lambda_runner.handle(
                            environ, lambda *_: None, request) is not None:
                        pass  # the handler ran (for an Event invocation, runs) before the error
                    else:
                        for _ in self.moto(environ, lambda *_args, **_kw: None):
                            pass
                return self._error(start_response, request, status, code, message)
            if timing.Settings.enabled:  # the call's AWS latency; a refusal of AWS's at this moment
                refusal = timing.before_call(request)
                if refusal is not None:
                    return self._error(start_response, request, *refusal)
        if request["target"].startswith(CC_TARGET_PREFIX):
            return self._cloudcontrol(environ, start_response, request)
        if _is_describe_type(request):
            return self._describe_type(environ, start_response, request)
        if rpcv2_cbor.operation_name(environ):
            return rpcv2_cbor.answer(environ, start_response, self.moto)
        if request["service"] == "lambda":
            answer = config_apis.answer_lambda(environ, start_response, request)
            if answer is not None:
                return answer
        if request["service"] == "s3":
            answer = config_apis.answer_s3(environ, start_response, request)
            if answer is not None:
                return answer
        if request["service"] == "lambda" and request["method"] == "POST":
            answer = self.lambda_runner.handle(environ, start_response, request)
            if answer is not None:
                return answer
        if request["service"] == "s3" and request["method"] in ("PUT", "POST", "DELETE"):
            with self.s3_writes:
                return list(self.moto(environ, start_response))
        if request["service"] == "s3" and request["method"] == "GET":
            subresource = next((q for q in S3_XML_ROOTS if q in parse_qs(request["query"], keep_blank_values=True)), None)
            if subresource:
                answered = {}
                body = b"".join(self.moto(environ, lambda status, headers, *_: answered.update(status=status, headers=headers)))
                body = _rename_root(body, *S3_XML_ROOTS[subresource])
                headers = [(k, v) for k, v in answered["headers"] if k.lower() != "content-length"]
                start_response(answered["status"], headers + [("Content-Length", str(len(body)))])
                return [body]
        return self.moto(environ, start_response)

    def _describe(self, environ):
        auth = environ.get("HTTP_AUTHORIZATION", "")
        query = environ.get("QUERY_STRING", "")
        match = SCOPE.search(auth) or SCOPE.search(query.replace("%2F", "/"))
        service = match.group(3) if match else ""
        access_key = match.group(1) if match else ""
        region = match.group(2) if match else "us-east-1"
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        action = rpcv2_cbor.operation_name(environ) or (
            target.split(".")[-1] if target else parse_qs(query).get("Action", [""])[0])
        if not action and environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
            # Query-protocol services (EC2, IAM, STS, SQS's old API) POST the Action in a form
            # body: read it, and put the body back for moto.
            length = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(length) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            action = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])[0]
        return {
            "service": service,
            "access_key": access_key,
            "region": region,
            "target": target,
            "action": action,
            "method": environ.get("REQUEST_METHOD", "GET"),
            "path": environ.get("PATH_INFO", ""),
            "query": query,
            "headers": {key[5:].replace("_", "-").lower() for key in environ if key.startswith("HTTP_")},
            "environ": environ,
        }

    def _count(self, request):
        key = f"{request['service'] or 'unknown'}:{request['action'] or request['method']}"
        with self.lock:
            self.stats[key] = self.stats.get(key, 0) + 1
            # Per access key too, so parallel tests can each count their own calls.
            per_key = self.stats_by_key.setdefault(request["access_key"], {})
            per_key[key] = per_key.get(key, 0) + 1

    def _within_rate_limit(self, request):
        """Takes a token from the service's bucket; False (counted) when it is empty."""
        service = request["service"]
        with self.lock:
            bucket = self.rate_limits.get(service)
            if bucket is None or bucket.take():
                return True
            self.throttled[service] = self.throttled.get(service, 0) + 1
            return False

    def _fault_for(self, request):
        with self.lock:
            for rule in self.rules:
                if rule.matches(request) and self.random.random() < rule.rate:
                    rule.hits += 1
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    return rule.status, rule.code, rule.message, rule.pass_through
            if self.fault_rate > 0 and self.random.random() < self.fault_rate:
                fault = self._random_fault(request)
                key = f"{fault[0]} {fault[1]}" + (" (applied)" if fault[3] else "")
                self.random_hits[key] = self.random_hits.get(key, 0) + 1
                return fault
        return None

    def _random_fault(self, request):
        # Draws beyond the first only when a share asks for them, so a seed's sequence of
        # throttling faults is unchanged without the 5xx keys.
        s3 = request["service"] == "s3"
        if self.fault_5xx_share > 0 and self.random.random() < self.fault_5xx_share:
            applied = self.fault_pass_through_share > 0 and self.random.random() < self.fault_pass_through_share
            if self.random.random() < 0.5:
                if s3:
                    return 503, "SlowDown", "Please reduce your request rate (injected)", applied
                return 503, "ServiceUnavailable", "Service unavailable (injected)", applied
            if s3:
                return 500, "InternalError", "We encountered an internal error (injected)", applied
            return 500, "InternalFailure", "Internal failure (injected)", applied
        if s3:
            return 503, "SlowDown", "Please reduce your request rate (injected)", False
        return 400, "ThrottlingException", "Rate exceeded (injected)", False

    def _error(self, start_response, request, status, code, message):
        reason = {400: "Bad Request", 403: "Forbidden", 404: "Not Found", 409: "Conflict",
                  412: "Precondition Failed", 500: "Internal Server Error", 501: "Not Implemented",
                  503: "Service Unavailable"}.get(status, "Error")
        if request["target"] or request["service"] == "lambda":  # JSON protocols (Lambda's REST-JSON too)
            body = json.dumps({"__type": code, "message": message})
            content_type = "application/x-amz-json-1.0"
        elif request["service"] == "s3":
            body = f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{message}</Message><RequestId>emulator</RequestId></Error>"
            content_type = "application/xml"
        elif request["service"] == "ec2":
            body = f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors><RequestID>emulator</RequestID></Response>"
            content_type = "text/xml"
        else:
            body = f"<ErrorResponse><Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error><RequestId>emulator</RequestId></ErrorResponse>"
            content_type = "text/xml"
        data = body.encode()
        start_response(f"{status} {reason}", [
            ("Content-Type", content_type),
            ("Content-Length", str(len(data))),
            ("x-amzn-ErrorType", code),
        ])
        return [data]

    def _cloudcontrol(self, environ, start_response, request):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
            answer = self.cloudcontrol.handle(request["action"], body, DEFAULT_ACCOUNT, request["region"])
            data = json.dumps(answer).encode()
            status = "200 OK"
        except ApiError as err:
            data = json.dumps({"__type": err.code, "message": err.message}).encode()
            status = f"{err.status} Bad Request"
        except json.JSONDecodeError as err:
            data = json.dumps({"__type": "ValidationException", "message": f"malformed JSON: {err}"}).encode()
            status = "400 Bad Request"
        start_response(status, [
            ("Content-Type", "application/x-amz-json-1.0"),
            ("Content-Length", str(len(data))),
        ])
        return [data]

    def _describe_type(self, environ, start_response, request):
        # CloudFormation's query protocol: the parameters are in the form body (the AWS SDKs) or
        # in the query string. _describe put the body back in wsgi.input after reading it.
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        environ["wsgi.input"] = io.BytesIO(body)
        params = {key: values[0] for key, values in parse_qs(request["query"]).items()}
        params.update({key: values[0] for key, values in parse_qs(body.decode("utf-8", "replace")).items()})
        status, code, data = self.registry.answer(params, request["region"], request["access_key"])
        headers = [("Content-Type", "text/xml"), ("Content-Length", str(len(data)))]
        if code:
            headers.append(("x-amzn-ErrorType", code))
        start_response(status, headers)
        return [data]

    # -- control endpoints ------------------------------------------------------------------

    def _control(self, environ, start_response, path):
        method = environ.get("REQUEST_METHOD", "GET")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = json.loads(environ["wsgi.input"].read(length) or b"{}") if length else {}
        if path == "/_emulator/health":
            answer = {"ok": True}
        elif path == "/_emulator/config":
            if method == "POST":
                if "latencyMs" in body:
                    self.latency_ms = float(body["latencyMs"])
                if "faultRate" in body:
                    self.fault_rate = float(body["faultRate"])
                if "fault5xxShare" in body:
                    self.fault_5xx_share = float(body["fault5xxShare"])
                if "faultPassThroughShare" in body:
                    self.fault_pass_through_share = float(body["faultPassThroughShare"])
                if "faultSeed" in body:  # restart the random faults' sequence (0: unseeded)
                    with self.lock:
                        self.random.seed(int(body["faultSeed"]) or None)
                if "ccOperationMs" in body:
                    self.cloudcontrol.operation_ms = int(body["ccOperationMs"])
                if "rateLimits" in body:  # replaces every limit; buckets start full
                    limits = _rate_limits(body["rateLimits"])
                    with self.lock:
                        self.rate_limits = limits
                if "customResourceTimeoutSeconds" in body:
                    cfn_custom.Settings.timeout_seconds = float(body["customResourceTimeoutSeconds"])
                timing.configure(body)  # profile, timeScale, timingOverrides
            with self.lock:
                rate_limits = {service: bucket.describe() for service, bucket in self.rate_limits.items()}
            answer = {"latencyMs": self.latency_ms, "faultRate": self.fault_rate,
                      "fault5xxShare": self.fault_5xx_share,
                      "faultPassThroughShare": self.fault_pass_through_share,
                      "ccOperationMs": self.cloudcontrol.operation_ms, "rateLimits": rate_limits,
                      "customResourceTimeoutSeconds": cfn_custom.Settings.timeout_seconds,
                      **timing.describe()}
        elif path == "/_emulator/faults":
            with self.lock:
                if method == "POST":
                    self.rules = [FaultRule(spec) for spec in body.get("rules", [])]
                elif method == "DELETE":
                    self.rules = []
                    self.random_hits = {}
                # `random`: the faults the fault rate answered, by status and code, since the
                # last DELETE.
                answer = {"rules": [rule.describe() for rule in self.rules],
                          "random": dict(self.random_hits)}
        elif path == "/_emulator/inflight":
            with self.lock:
                answer = {"inFlight": self.in_flight}
        elif path == "/_emulator/stats":
            access_key = parse_qs(environ.get("QUERY_STRING", "")).get("accessKey", [None])[0]
            with self.lock:
                answer = dict(self.stats_by_key.get(access_key, {}) if access_key else self.stats)
                if method == "DELETE":
                    self.stats.clear()
                    self.stats_by_key.clear()
        elif path == "/_emulator/refusals":
            # The calls the AWS timing profile refused while a principal they name propagated,
            # by "service:Operation" (S3's by operation too). DELETE clears them (answering the
            # counts it cleared), as /moto-api/reset does.
            answer = timing.refusals(clear=method == "DELETE")
        elif path == "/_emulator/throttled":
            # Requests answered with throttling by a rate limit, per service. DELETE clears them
            # (answering the counts it cleared), as /moto-api/reset does.
            with self.lock:
                answer = dict(self.throttled)
                if method == "DELETE":
                    self.throttled.clear()
        elif path == "/_emulator/describe-type-calls":
            # The CloudFormation DescribeType calls the emulator answered (found or not), in
            # order; `?accessKey=AKID` only that key's. DELETE clears (so does /moto-api/reset).
            access_key = parse_qs(environ.get("QUERY_STRING", "")).get("accessKey", [None])[0]
            answer = self.registry.observed(access_key, clear=method == "DELETE")
        else:
            answer = {"error": f"unknown control path {path}"}
        data = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--endpoint-file", help="write http://127.0.0.1:PORT here once listening")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="exit when the process that started the emulator exits (test harnesses)")
    args = parser.parse_args()
    app = Emulator()
    if args.exit_with_parent:
        parent = os.getppid()

        def watch_parent():
            while os.getppid() == parent:
                time.sleep(0.5)
            app.lambda_runner.kill_all()
            os._exit(0)

        threading.Thread(target=watch_parent, daemon=True).start()

    def stop(_signum, _frame):
        app.lambda_runner.kill_all()  # running handlers are in their own process groups
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    atexit.register(app.lambda_runner.kill_all)
    if not os.environ.get("EMU_LOG_REQUESTS"):
        import logging
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    # Always loopback: the emulator is for this machine's tests only.
    server = make_server("127.0.0.1", args.port, app, threaded=True)
    # A client that opens a hundred connections at once (as AWS's endpoints allow) must not
    # overflow werkzeug's listen backlog of 128: a refused SYN is retried a second later.
    server.socket.listen(1024)
    endpoint = f"http://127.0.0.1:{server.socket.getsockname()[1]}"
    app.lambda_runner.endpoint = endpoint
    cfn_custom.Settings.endpoint = endpoint
    if args.endpoint_file:
        tmp = args.endpoint_file + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(endpoint + "\n")
        os.replace(tmp, args.endpoint_file)
    print(f"cdkd emulator listening on {endpoint}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    socket.setdefaulttimeout(None)
    main()
