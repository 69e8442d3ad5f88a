"""API Gateway REST APIs (v1) made AWS-like where cdkd's apigateway plugin depends on it.

moto (5.2.5) is kinder than AWS, or lacks the call, in these places; each is answered here as
AWS answers it:
- CreateRestApi kept no BinaryMediaTypes and invented a Version ("V1"); UpdateRestApi applied
  patch operations loosely (a binary media type added as "", minimumCompressionSize ignored, an
  endpoint type replaced whatever the path named).
- DeleteRestApi, DeleteResource, DeleteMethod, DeleteUsagePlan, GetDeployment of something
  missing answered 500
  (KeyError) or 200; AWS answers NotFoundException. GetRequestValidator of a missing id answered
  BadRequestException; AWS answers NotFoundException.
- A second resource of one path part under one parent, a second method of one verb on one
  resource, a second model of one name, a second key in one usage plan were made (or replaced);
  AWS answers ConflictException.
- DeleteDeployment refused only while a stage of the deployment's own stage name existed; AWS
  refuses while any stage points to the deployment (BadRequestException) and allows it once
  none does.
- TagResource / UntagResource / GetTags worked only for stages; AWS takes a REST API's, a usage
  plan's, an API key's and a domain name's ARN too.
- UpdateModel, UpdateDeployment and UpdateDomainName were not implemented; UpdateApiKey could
  not add or remove stages; UpdateUsagePlan stored a quota's numbers as text, a rate limit as an
  integer and could not remove the throttle; UpdateStage could not remove a method setting or
  the canary settings.
- A custom domain name answered both a regional and an edge endpoint, with CloudFront's hosted
  zone for the regional one; AWS answers the endpoint its type has, with the region's API
  Gateway hosted zone for a regional name.
Differences that remain are listed in docs/testing.md."""

import json
from urllib.parse import unquote

from moto.apigateway import models as _models
from moto.apigateway.exceptions import (
    BadRequestException,
    ConflictException,
    DeploymentNotFoundException,
    MethodNotFoundException,
    NotFoundException,
    ResourceIdNotFoundException,
    RestAPINotFound,
)
from moto.apigateway.responses import APIGatewayResponse

# API Gateway's regional hosted zones (for a regional custom domain's alias record).
REGIONAL_ZONES = {
    "us-east-1": "Z1UJRXOUMOOFQ8", "us-east-2": "ZOJJZC49E0EPZ", "us-west-1": "Z2MUQ32089INYE",
    "us-west-2": "Z2OJLYMUO9EFXC", "eu-west-1": "ZLY8HYME6SFDD", "eu-central-1": "Z1U9ULNL0V5AJ3",
    "ap-northeast-1": "Z1YSHQZHG15GKL", "ap-southeast-2": "Z2RHNKQZ1WAF3J",
}
# CloudFront's, for an edge-optimized name.
CLOUDFRONT_ZONE = "Z2FDTNDATAQYW2"


def _route(pattern, handler):
    """Serves `pattern` (a moto URL pattern) with `handler`. moto.apigateway.urls copies
    moto.apigatewayv2.urls' routes when it is first imported (both APIs sign as `apigateway`, so
    one app serves both), which must stay after server.py has added its API Gateway v2 routes:
    the route goes into v2's table, and into v1's too if that is already built."""
    import sys
    from moto.apigatewayv2 import urls as v2_urls
    v2_urls.url_paths[pattern] = handler
    v1_urls = sys.modules.get("moto.apigateway.urls")
    if v1_urls is not None:
        v1_urls.url_paths[pattern] = handler


def _unescape(segment):
    return segment.replace("~1", "/").replace("~0", "~")


# --- REST APIs -------------------------------------------------------------------------------

_backend = _models.APIGatewayBackend
_rest_api_init = _models.RestAPI.__init__


def _rest_api_init_as_aws(self, api_id, account_id, region_name, name, description, **kwargs):
    _rest_api_init(self, api_id, account_id, region_name, name, description, **kwargs)
    if not kwargs.get(_models.RestAPI.PROP_VERSION):
        self.version = None


_models.RestAPI.__init__ = _rest_api_init_as_aws

_responses_create_rest_api = APIGatewayResponse.create_rest_api


def _create_rest_api_response(self):
    # moto's handler passes neither binaryMediaTypes nor version to the backend: both are added
    # to the API it made.
    status, headers, body = _responses_create_rest_api(self)
    if status >= 300:
        return status, headers, body
    answer = json.loads(body)
    api = self.backend.apis[answer["id"]]
    api.binaryMediaTypes = list(self._get_param("binaryMediaTypes") or [])
    api.version = self._get_param("version") or None
    api.security_policy = self._get_param("securityPolicy")
    api.endpoint_access_mode = self._get_param("endpointAccessMode")
    return status, headers, json.dumps(api.to_dict())


APIGatewayResponse.create_rest_api = _create_rest_api_response


def _apply_rest_api_ops(self, patch_operations):
    for op in patch_operations:
        path, value, kind = op["path"], op.get("value"), op["op"]
        if kind == "replace" and path in ("/name", "/description", "/version", "/policy"):
            setattr(self, path[1:], value or None if path != "/name" else value)
        elif kind == "replace" and path == "/apiKeySource":
            self.api_key_source = value or "HEADER"
        elif kind == "replace" and path == "/minimumCompressionSize":
            self.minimum_compression_size = int(value) if value not in (None, "") else None
        elif kind == "replace" and path == "/disableExecuteApiEndpoint":
            self.disableExecuteApiEndpoint = str(value).lower() == "true"
        elif path.startswith("/binaryMediaTypes/"):
            media = _unescape(path[len("/binaryMediaTypes/"):])
            if kind == "add" and media not in self.binaryMediaTypes:
                self.binaryMediaTypes.append(media)
            elif kind == "remove":
                if media not in self.binaryMediaTypes:
                    raise BadRequestException(f"Invalid patch path {path}")
                self.binaryMediaTypes.remove(media)
        elif kind == "replace" and path.startswith("/endpointConfiguration/types/"):
            old = path.rsplit("/", 1)[1]
            if old not in self.endpoint_configuration.get("types", []):
                raise BadRequestException(f"Invalid patch path {path}")
            self.endpoint_configuration["types"] = [value]
        elif path == "/endpointConfiguration/vpcEndpointIds":
            ids = self.endpoint_configuration.setdefault("vpcEndpointIds", [])
            if kind == "add" and value not in ids:
                ids.append(value)
            elif kind == "remove" and value in ids:
                ids.remove(value)
        elif kind == "replace" and path in ("/securityPolicy", "/endpointAccessMode"):
            setattr(self, "security_policy" if path == "/securityPolicy" else "endpoint_access_mode",
                    value or None)
        elif kind == "replace" and path == "/endpointConfiguration/ipAddressType":
            self.endpoint_configuration["ipAddressType"] = value
        else:
            raise BadRequestException(f"Invalid patch path {path}")


_models.RestAPI.apply_patch_operations = _apply_rest_api_ops
_rest_api_dict = _models.RestAPI.to_dict


def _rest_api_dict_as_aws(self):
    answer = _rest_api_dict(self)
    for key, attribute in (("securityPolicy", "security_policy"),
                           ("endpointAccessMode", "endpoint_access_mode")):
        if getattr(self, attribute, None):
            answer[key] = getattr(self, attribute)
    return answer


_models.RestAPI.to_dict = _rest_api_dict_as_aws


def _delete_rest_api(self, function_id):
    if function_id not in self.apis:
        raise RestAPINotFound()
    return self.apis.pop(function_id)


_backend.delete_rest_api = _delete_rest_api

# --- resources, methods ----------------------------------------------------------------------

_create_resource = _backend.create_resource


def _create_resource_once(self, function_id, parent_resource_id, path_part):
    api = self.get_rest_api(function_id)
    if parent_resource_id not in api.resources:
        raise NotFoundException("Invalid Resource identifier specified")
    if any(r.parent_id == parent_resource_id and r.path_part == path_part
           for r in api.resources.values()):
        raise ConflictException("Another resource with the same parent already has this name: "
                                + path_part)
    return _create_resource(self, function_id, parent_resource_id, path_part)


def _delete_resource(self, function_id, resource_id):
    api = self.get_rest_api(function_id)
    if resource_id not in api.resources:
        raise ResourceIdNotFoundException()
    if resource_id == api.root_resource_id:
        raise BadRequestException("Cannot delete root resource")
    # A resource's children go with it, as in AWS.
    doomed, changed = {resource_id}, True
    while changed:
        changed = False
        for rid, r in api.resources.items():
            if r.parent_id in doomed and rid not in doomed:
                doomed.add(rid)
                changed = True
    removed = {rid: api.resources.pop(rid) for rid in doomed}
    return removed[resource_id]


_put_method = _backend.put_method


def _put_method_once(self, function_id, resource_id, method_type, *args, **kwargs):
    resource = self.get_resource(function_id, resource_id)
    if method_type in resource.resource_methods:
        raise ConflictException("Method already exists for this resource")
    return _put_method(self, function_id, resource_id, method_type, *args, **kwargs)


def _delete_method(self, function_id, resource_id, method_type):
    resource = self.get_resource(function_id, resource_id)
    if method_type not in resource.resource_methods:
        raise MethodNotFoundException()
    resource.delete_method(method_type)


_backend.create_resource = _create_resource_once
_backend.delete_resource = _delete_resource
_backend.put_method = _put_method_once
_backend.delete_method = _delete_method

# --- models, validators ----------------------------------------------------------------------

_create_model = _backend.create_model


def _create_model_once(self, rest_api_id, name, content_type, description, schema):
    if rest_api_id and name in self.get_rest_api(rest_api_id).models:
        raise ConflictException("Model name already exists for this REST API")
    return _create_model(self, rest_api_id, name, content_type, description, schema)


_backend.create_model = _create_model_once


def _update_model(self):
    parts = self.path.split("/")
    api_id, name = parts[2], unquote(parts[4])
    model = self.backend.get_model(api_id, name)
    for op in self._get_param("patchOperations") or []:
        if op["op"] != "replace" or op["path"] not in ("/schema", "/description"):
            raise BadRequestException(f"Invalid patch path {op['path']}")
        setattr(model, op["path"][1:], op.get("value") or None)
    return 200, {}, json.dumps(model.to_json())


APIGatewayResponse.update_model = _update_model

_get_request_validator = _backend.get_request_validator


def _get_request_validator_or_not_found(self, restapi_id, validator_id):
    if validator_id not in self.get_rest_api(restapi_id).request_validators:
        raise NotFoundException("Invalid Request Validator identifier specified")
    return _get_request_validator(self, restapi_id, validator_id)


def _delete_request_validator(self, restapi_id, validator_id):
    api = self.get_rest_api(restapi_id)
    if validator_id not in api.request_validators:
        raise NotFoundException("Invalid Request Validator identifier specified")
    api.request_validators.pop(validator_id)


_backend.get_request_validator = _get_request_validator_or_not_found
_backend.delete_request_validator = _delete_request_validator

# --- deployments, stages ---------------------------------------------------------------------


def _get_deployment(self, function_id, deployment_id):
    api = self.get_rest_api(function_id)
    if deployment_id not in api.deployments:
        raise DeploymentNotFoundException()
    return api.deployments[deployment_id]


def _delete_deployment(self, function_id, deployment_id):
    api = self.get_rest_api(function_id)
    if deployment_id not in api.deployments:
        raise DeploymentNotFoundException()
    if any(s.deployment_id == deployment_id for s in api.stages.values()):
        raise BadRequestException(
            "Active stages pointing to this deployment must be moved or deleted")
    return api.deployments.pop(deployment_id)


_backend.get_deployment = _get_deployment
_backend.delete_deployment = _delete_deployment


def _update_deployment(self):
    parts = self.path.split("/")
    deployment = self.backend.get_deployment(parts[2], parts[4])
    for op in self._get_param("patchOperations") or []:
        if op["op"] == "replace" and op["path"] == "/description":
            deployment.description = op.get("value") or ""
        else:
            raise BadRequestException(f"Invalid patch path {op['path']}")
    return 200, {}, json.dumps(deployment.to_json())


APIGatewayResponse.update_deployment = _update_deployment

_stage_apply = _models.Stage.apply_operations


def _stage_apply_as_aws(self, patch_operations):
    rest = []
    for op in patch_operations:
        path, kind = op["path"], op["op"]
        if kind == "remove" and path == "/canarySettings":
            self.canary_settings = None
        elif kind == "remove" and path.count("/") == 2 and not path.startswith("/variables"):
            # A method setting's whole entry (`/~1items/GET`, `/*/*`).
            self.method_settings.pop(path[1:], None)
        elif kind == "replace" and path == "/accessLogSettings/destinationArn" and not op.get("value"):
            self.access_log_settings = None
        else:
            rest.append(op)
    return _stage_apply(self, rest)


_models.Stage.apply_operations = _stage_apply_as_aws

# --- usage plans, keys -----------------------------------------------------------------------

_plan_apply = _models.UsagePlan.apply_patch_operations


def _plan_apply_as_aws(self, patch_operations):
    rest = []
    for op in patch_operations:
        path, kind, value = op["path"], op["op"], op.get("value")
        if kind == "remove" and path == "/throttle":
            self.throttle = {}
        elif kind in ("add", "replace") and path in ("/quota/limit", "/quota/offset"):
            self.quota[path.rsplit("/", 1)[1]] = int(value)
        elif kind in ("add", "replace") and path == "/throttle/rateLimit":
            self.throttle["rateLimit"] = float(value)
        elif kind in ("add", "replace") and path.startswith("/apiStages/") and "/throttle/" in path:
            # /apiStages/{api}:{stage}/throttle/{resourcePath}/{method}/{burstLimit|rateLimit}
            stage_key, rest_path = path[len("/apiStages/"):].split("/throttle/", 1)
            resource, method, field = rest_path.rsplit("/", 2)
            api_id, stage = stage_key.split(":", 1)
            for entry in self.api_stages:
                if entry.get("apiId") == api_id and entry.get("stage") == stage:
                    methods = entry.setdefault("throttle", {})
                    limits = methods.setdefault(f"{_unescape(resource)}/{method}", {})
                    limits[field] = float(value) if field == "rateLimit" else int(value)
                    break
            else:
                raise NotFoundException(f"Invalid stage {stage_key} in usage plan")
        else:
            rest.append(op)
    _plan_apply(self, rest)


_models.UsagePlan.apply_patch_operations = _plan_apply_as_aws

_create_plan_key = _backend.create_usage_plan_key


def _create_plan_key_once(self, usage_plan_id, payload):
    if usage_plan_id not in self.usage_plans:
        raise NotFoundException("Invalid Usage Plan ID specified")
    if payload.get("keyId") in self.usage_plan_keys.get(usage_plan_id, {}):
        raise ConflictException("Usage Plan already contains specified key")
    return _create_plan_key(self, usage_plan_id, payload)


def _delete_plan_key(self, usage_plan_id, key_id):
    if key_id not in self.usage_plan_keys.get(usage_plan_id, {}):
        raise NotFoundException("Invalid Usage Plan Key identifier specified")
    self.usage_plan_keys[usage_plan_id].pop(key_id)


def _delete_usage_plan(self, usage_plan_id):
    if usage_plan_id not in self.usage_plans:
        raise NotFoundException("Invalid Usage Plan ID specified")
    self.usage_plans.pop(usage_plan_id)
    self.usage_plan_keys.pop(usage_plan_id, None)


_backend.delete_usage_plan = _delete_usage_plan
_backend.create_usage_plan_key = _create_plan_key_once
_backend.delete_usage_plan_key = _delete_plan_key

_key_update = _models.ApiKey.update_operations


def _key_update_as_aws(self, patch_operations):
    rest = []
    for op in patch_operations:
        if op["path"] == "/stages" and op["op"] in ("add", "remove"):
            api_id, stage = op["value"].split("/", 1)
            entry = {"restApiId": api_id, "stageName": stage}
            keys = [k if isinstance(k, dict) else dict(zip(("restApiId", "stageName"), k.split("/", 1)))
                    for k in self.stage_keys]
            if op["op"] == "add" and entry not in keys:
                keys.append(entry)
            elif op["op"] == "remove" and entry in keys:
                keys.remove(entry)
            self.stage_keys = keys
        else:
            rest.append(op)
    return _key_update(self, rest)


_models.ApiKey.update_operations = _key_update_as_aws
_key_json = _models.ApiKey.to_json


def _key_json_as_aws(self):
    # AWS writes a key's stages as "restApiId/stageName".
    answer = _key_json(self)
    answer["stageKeys"] = [f"{k['restApiId']}/{k['stageName']}" if isinstance(k, dict) else k
                           for k in self.stage_keys]
    return answer


_models.ApiKey.to_json = _key_json_as_aws

# --- domain names ----------------------------------------------------------------------------

_domain_init = _models.DomainName.__init__
_domain_json = _models.DomainName.to_json


def _domain_init_as_aws(self, domain_name, **kwargs):
    _domain_init(self, domain_name, **kwargs)
    region = kwargs.get("region_name") or "us-east-1"
    self.regional_hosted_zone_id = REGIONAL_ZONES.get(region, REGIONAL_ZONES["us-east-1"])
    self.distribution_hosted_zone_id = CLOUDFRONT_ZONE
    self.endpoint_configuration = self.endpoint_configuration or {"types": ["EDGE"]}
    self.routing_mode = kwargs.get("routing_mode")


def _domain_json_as_aws(self):
    answer = _domain_json(self)
    types = (self.endpoint_configuration or {}).get("types") or ["EDGE"]
    if "REGIONAL" in types:
        answer.pop("distributionDomainName", None)
        answer.pop("distributionHostedZoneId", None)
    else:
        answer.pop("regionalDomainName", None)
        answer.pop("regionalHostedZoneId", None)
    answer["endpointConfiguration"] = self.endpoint_configuration
    answer["domainNameArn"] = (f"arn:aws:apigateway:{self.regional_domain_name.split('.')[2]}"
                               f"::/domainnames/{self.domain_name}")
    if self.tags:
        answer["tags"] = self.tags
    else:
        answer.pop("tags", None)
    return answer


_models.DomainName.__init__ = _domain_init_as_aws
_models.DomainName.to_json = _domain_json_as_aws


def _update_domain_name(self):
    name = unquote(self.path.rstrip("/").split("/")[-1])
    domain = self.backend.get_domain_name(name)
    fields = {"/certificateArn": "certificate_arn", "/regionalCertificateArn": "regional_certificate_arn",
              "/securityPolicy": "security_policy", "/certificateName": "certificate_name",
              "/regionalCertificateName": "regional_certificate_name"}
    for op in self._get_param("patchOperations") or []:
        path, value = op["path"], op.get("value")
        if op["op"] == "replace" and path in fields:
            setattr(domain, fields[path], value or None)
        elif op["op"] == "replace" and path.startswith("/endpointConfiguration/types/"):
            domain.endpoint_configuration = dict(domain.endpoint_configuration or {}, types=[value])
        elif op["op"] == "replace" and path.startswith("/mutualTlsAuthentication/"):
            tls = getattr(domain, "mutual_tls_authentication", None) or {}
            tls[path.rsplit("/", 1)[1]] = value
            domain.mutual_tls_authentication = tls
        else:
            raise BadRequestException(f"Invalid patch path {path}")
    return 200, {}, json.dumps(domain.to_json())


APIGatewayResponse.update_domain_name = _update_domain_name

# --- tags by ARN -----------------------------------------------------------------------------


def _tagged(self, arn):
    """The object whose `tags` an API Gateway ARN names."""
    path = arn.split("::", 1)[1] if "::" in arn else arn
    parts = path.strip("/").split("/")
    backend = self.backend
    if parts[0] == "restapis" and len(parts) == 2:
        return backend.get_rest_api(parts[1])
    if parts[0] == "restapis" and len(parts) == 4 and parts[2] == "stages":
        return backend.get_stage(parts[1], parts[3])
    if parts[0] == "usageplans" and len(parts) == 2:
        return backend.get_usage_plan(parts[1])
    if parts[0] == "apikeys" and len(parts) == 2:
        return backend.get_api_key(parts[1])
    if parts[0] == "domainnames" and len(parts) == 2:
        return backend.get_domain_name(parts[1])
    raise BadRequestException(f"Invalid resource ARN {arn}")


def _arn_of(self):
    return unquote(self.path.split("/tags/", 1)[1])


def _get_tags(self):
    return 200, {}, json.dumps({"tags": _tagged(self, _arn_of(self)).tags or {}})


def _tag_resource(self):
    target = _tagged(self, _arn_of(self))
    target.tags = dict(target.tags or {}, **(self._get_param("tags") or {}))
    return 204, {}, ""


def _untag_resource(self):
    target = _tagged(self, _arn_of(self))
    keys = self.querystring.get("tagKeys") or []
    target.tags = {k: v for k, v in (target.tags or {}).items() if k not in keys}
    return 204, {}, ""


APIGatewayResponse.get_tags = _get_tags
APIGatewayResponse.tag_resource = _tag_resource
APIGatewayResponse.untag_resource = _untag_resource
_route("{0}/tags/(?P<resourceArn>.+)$", APIGatewayResponse.dispatch)

# --- invoking a deployed stage ---------------------------------------------------------------
# AWS serves a stage at https://{api}.execute-api.{region}.amazonaws.com/{stage}/{path}. moto
# answers stage URLs only inside its Python decorator (and no AWS_PROXY integration at all), so
# the emulator serves them at /apigateway_{region}/restapis/{api}/{stage}/_user_request_/{path}
# (the path names the service and region, as moto's own self-calls do): the method of the
# resource whose path matches (a literal part before a {param}, a {param} before a {greedy+}),
# or ANY; a method that requires an API key needs an enabled key of a usage plan on the stage in
# `x-api-key` (else 403); a Lambda proxy integration invokes its function through the emulator's
# own Lambda Invoke with API Gateway's proxy event (version 1.0) and answers what it returns (502
# when it fails or answers something else). Not modelled: the deployment's snapshot (the API's
# current methods answer), authorizers, request validation, other integration types.

import base64 as _base64
import re as _re
import uuid as _uuid


def _match(api, path):
    """The resource of `api` that serves `path`, with its path parameters."""
    wanted = [p for p in path.split("/") if p]
    best = None
    for resource in api.resources.values():
        parts = [p for p in resource.get_path().split("/") if p]
        params, score, ok = {}, [], True
        for i, part in enumerate(parts):
            if part.startswith("{") and part.endswith("+}"):
                if i >= len(wanted) or i != len(parts) - 1:
                    ok = False
                    break
                params[part[1:-2]] = "/".join(wanted[i:])
                score.append(0)
                break
            if i >= len(wanted):
                ok = False
                break
            if part.startswith("{") and part.endswith("}"):
                params[part[1:-1]] = wanted[i]
                score.append(1)
            elif part == wanted[i]:
                score.append(2)
            else:
                ok = False
                break
        else:
            ok = ok and len(parts) == len(wanted)
        if ok and (best is None or score > best[0]):
            best = (score, resource, params)
    return (best[1], best[2]) if best else (None, None)


def _json_answer(status, message):
    return status, {"Content-Type": "application/json"}, json.dumps({"message": message})


def _invoke_stage(request, full_url, headers):
    from moto.apigateway.models import apigateway_backends
    from moto.core import DEFAULT_ACCOUNT_ID
    match = _re.match(r"^/apigateway_([^/]+)/restapis/([^/]+)/([^/]+)/_user_request_(/.*)?$",
                      request.path)
    region, api_id, stage_name, path = match.group(1), match.group(2), match.group(3), match.group(4) or "/"
    backend = apigateway_backends[DEFAULT_ACCOUNT_ID][region]
    api = backend.apis.get(api_id)
    if api is None or stage_name not in api.stages:
        return _json_answer(403, "Forbidden")
    stage = api.stages[stage_name]
    resource, params = _match(api, path)
    if resource is None:
        return _json_answer(403, "Missing Authentication Token")
    method = resource.resource_methods.get(request.method) or resource.resource_methods.get("ANY")
    if method is None:
        return _json_answer(403, "Missing Authentication Token")
    if method.api_key_required:
        given = request.headers.get("x-api-key")
        usable = {
            key_id for plan in backend.usage_plans.values()
            if any(s.get("apiId") == api_id and s.get("stage") == stage_name for s in plan.api_stages)
            for key_id in backend.usage_plan_keys.get(plan.id, {})
        }
        if not any(k.value == given and k.enabled and k.id in usable for k in backend.keys.values()):
            return _json_answer(403, "Forbidden")
    integration = method.method_integration
    if integration is None or integration.integration_type != "AWS_PROXY" or ":lambda:path/" not in (integration.uri or ""):
        return _json_answer(500, "Internal server error")
    function = integration.uri.split("/functions/", 1)[1].rsplit("/invocations", 1)[0]
    body = request.get_data(as_text=True) if request.get_data() else None
    query = {k: v[-1] for k, v in request.args.lists()} or None
    event = {
        "resource": resource.get_path(), "path": path, "httpMethod": request.method,
        "headers": dict(request.headers), "multiValueHeaders": {k: [v] for k, v in request.headers.items()},
        "queryStringParameters": query,
        "multiValueQueryStringParameters": {k: v for k, v in request.args.lists()} or None,
        "pathParameters": params or None, "stageVariables": stage.variables or None,
        "requestContext": {
            "resourceId": resource.id, "resourcePath": resource.get_path(), "httpMethod": request.method,
            "path": f"/{stage_name}{path}", "stage": stage_name, "apiId": api_id,
            "accountId": DEFAULT_ACCOUNT_ID, "requestId": str(_uuid.uuid4()),
            "identity": {"sourceIp": request.remote_addr or "127.0.0.1"},
        },
        "body": body, "isBase64Encoded": False,
    }
    import boto3
    lam = boto3.client("lambda", endpoint_url=f"http://{request.host}", region_name=region,
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    answer = lam.invoke(FunctionName=function, Payload=json.dumps(event).encode())
    if answer.get("FunctionError"):
        return _json_answer(502, "Internal server error")
    try:
        result = json.loads(answer["Payload"].read() or b"null")
        status = int(result["statusCode"])
    except (ValueError, TypeError, KeyError):
        return _json_answer(502, "Internal server error")
    out = result.get("body") or ""
    if result.get("isBase64Encoded"):
        out = _base64.b64decode(out)
    return status, dict(result.get("headers") or {}), out


_route(r"{0}/apigateway_(?P<region>[^/]+)/restapis/(?P<api>[^/]+)/(?P<stage>[^/]+)/_user_request_(?P<path>.*)$",
       _invoke_stage)
