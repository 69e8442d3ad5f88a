"""API Gateway REST APIs as AWS answers them (apigateway_rest.py), through the running emulator."""

import json

import pytest

LAMBDA_URI = ("arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/"
              "arn:aws:lambda:us-east-1:123456789012:function:f/invocations")


def _api(apigw, **kwargs):
    api = apigw.create_rest_api(name="rest", **kwargs)
    return api["id"], api["rootResourceId"]


def test_an_api_keeps_its_binary_media_types_and_patches_as_aws_applies_them(emulator):
    apigw = emulator.client("apigateway")
    api, _ = _api(apigw, binaryMediaTypes=["image/png"], endpointConfiguration={"types": ["EDGE"]})
    live = apigw.get_rest_api(restApiId=api)
    assert live["binaryMediaTypes"] == ["image/png"]
    assert "version" not in live
    apigw.update_rest_api(restApiId=api, patchOperations=[
        {"op": "add", "path": "/binaryMediaTypes/application~1pdf"},
        {"op": "remove", "path": "/binaryMediaTypes/image~1png"},
        {"op": "replace", "path": "/minimumCompressionSize", "value": "1024"},
        {"op": "replace", "path": "/endpointConfiguration/types/EDGE", "value": "REGIONAL"},
        {"op": "replace", "path": "/description", "value": "d"},
    ])
    live = apigw.get_rest_api(restApiId=api)
    assert live["binaryMediaTypes"] == ["application/pdf"]
    assert live["minimumCompressionSize"] == 1024
    assert live["endpointConfiguration"]["types"] == ["REGIONAL"]
    assert live["description"] == "d"
    with pytest.raises(apigw.exceptions.BadRequestException):
        apigw.update_rest_api(restApiId=api, patchOperations=[
            {"op": "replace", "path": "/endpointConfiguration/types/EDGE", "value": "REGIONAL"}])
    apigw.delete_rest_api(restApiId=api)
    with pytest.raises(apigw.exceptions.NotFoundException):
        apigw.delete_rest_api(restApiId=api)


def test_tags_change_by_the_arn_of_an_api_a_stage_a_plan_a_key_and_a_domain_name(emulator):
    apigw = emulator.client("apigateway")
    api, _ = _api(apigw, tags={"a": "1"})
    plan = apigw.create_usage_plan(name="p")["id"]
    key = apigw.create_api_key(name="k")["id"]
    apigw.create_domain_name(domainName="tags.example.com", regionalCertificateArn="arn:aws:acm:us-east-1:123456789012:certificate/c",
                             endpointConfiguration={"types": ["REGIONAL"]})
    for path in (f"/restapis/{api}", f"/usageplans/{plan}", f"/apikeys/{key}", "/domainnames/tags.example.com"):
        arn = f"arn:aws:apigateway:us-east-1::{path}"
        apigw.tag_resource(resourceArn=arn, tags={"b": "2"})
        apigw.untag_resource(resourceArn=arn, tagKeys=["a"])
        assert apigw.get_tags(resourceArn=arn)["tags"] == {"b": "2"}, path
    assert apigw.get_rest_api(restApiId=api)["tags"] == {"b": "2"}


def test_duplicates_conflict_and_missing_things_are_not_found(emulator):
    apigw = emulator.client("apigateway")
    api, root = _api(apigw)
    items = apigw.create_resource(restApiId=api, parentId=root, pathPart="items")["id"]
    child = apigw.create_resource(restApiId=api, parentId=items, pathPart="{id}")["id"]
    with pytest.raises(apigw.exceptions.ConflictException):
        apigw.create_resource(restApiId=api, parentId=root, pathPart="items")
    apigw.put_method(restApiId=api, resourceId=items, httpMethod="GET", authorizationType="NONE")
    with pytest.raises(apigw.exceptions.ConflictException):
        apigw.put_method(restApiId=api, resourceId=items, httpMethod="GET", authorizationType="NONE")
    apigw.create_model(restApiId=api, name="Item", contentType="application/json", schema="{}")
    with pytest.raises(apigw.exceptions.ConflictException):
        apigw.create_model(restApiId=api, name="Item", contentType="application/json", schema="{}")
    with pytest.raises(apigw.exceptions.NotFoundException):
        apigw.get_request_validator(restApiId=api, requestValidatorId="nope")
    with pytest.raises(apigw.exceptions.NotFoundException):
        apigw.get_deployment(restApiId=api, deploymentId="nope")
    with pytest.raises(apigw.exceptions.NotFoundException):
        apigw.delete_method(restApiId=api, resourceId=items, httpMethod="POST")
    # A resource's delete takes its children.
    apigw.delete_resource(restApiId=api, resourceId=items)
    with pytest.raises(apigw.exceptions.NotFoundException):
        apigw.get_resource(restApiId=api, resourceId=child)
    with pytest.raises(apigw.exceptions.NotFoundException):
        apigw.delete_resource(restApiId=api, resourceId=items)


def test_a_deployment_a_stage_points_to_cannot_be_deleted_until_the_stage_moves(emulator):
    apigw = emulator.client("apigateway")
    api, root = _api(apigw)
    apigw.put_method(restApiId=api, resourceId=root, httpMethod="ANY", authorizationType="NONE")
    apigw.put_integration(restApiId=api, resourceId=root, httpMethod="ANY", type="AWS_PROXY",
                          integrationHttpMethod="POST", uri=LAMBDA_URI)
    first = apigw.create_deployment(restApiId=api, description="one")["id"]
    second = apigw.create_deployment(restApiId=api)["id"]
    apigw.create_stage(restApiId=api, stageName="prod", deploymentId=first)
    with pytest.raises(apigw.exceptions.BadRequestException):
        apigw.delete_deployment(restApiId=api, deploymentId=first)
    apigw.update_stage(restApiId=api, stageName="prod", patchOperations=[
        {"op": "replace", "path": "/deploymentId", "value": second},
        {"op": "replace", "path": "/~1items/GET/metrics/enabled", "value": "true"}])
    apigw.update_stage(restApiId=api, stageName="prod", patchOperations=[
        {"op": "remove", "path": "/~1items/GET"}])
    assert apigw.get_stage(restApiId=api, stageName="prod").get("methodSettings", {}) == {}
    apigw.update_deployment(restApiId=api, deploymentId=first, patchOperations=[
        {"op": "replace", "path": "/description", "value": "old"}])
    assert apigw.get_deployment(restApiId=api, deploymentId=first)["description"] == "old"
    apigw.delete_deployment(restApiId=api, deploymentId=first)


def test_usage_plans_keys_and_models_update_as_aws_does(emulator):
    apigw = emulator.client("apigateway")
    api, _ = _api(apigw)
    plan = apigw.create_usage_plan(name="p", throttle={"burstLimit": 2, "rateLimit": 10.0},
                                   quota={"limit": 10, "period": "DAY"},
                                   apiStages=[{"apiId": api, "stage": "prod"}])["id"]
    apigw.update_usage_plan(usagePlanId=plan, patchOperations=[
        {"op": "replace", "path": "/quota/limit", "value": "20"},
        {"op": "replace", "path": "/throttle/rateLimit", "value": "2.5"},
        {"op": "replace", "path": f"/apiStages/{api}:prod/throttle/~1items/GET/rateLimit", "value": "5"}])
    live = apigw.get_usage_plan(usagePlanId=plan)
    assert live["quota"]["limit"] == 20
    assert live["throttle"]["rateLimit"] == 2.5
    assert live["apiStages"][0]["throttle"] == {"/items/GET": {"rateLimit": 5.0}}
    apigw.update_usage_plan(usagePlanId=plan, patchOperations=[{"op": "remove", "path": "/throttle"}])
    assert "throttle" not in apigw.get_usage_plan(usagePlanId=plan)
    key = apigw.create_api_key(name="k", enabled=True, stageKeys=[{"restApiId": api, "stageName": "prod"}])["id"]
    assert apigw.get_api_key(apiKey=key)["stageKeys"] == [f"{api}/prod"]
    apigw.update_api_key(apiKey=key, patchOperations=[{"op": "remove", "path": "/stages", "value": f"{api}/prod"},
                                                      {"op": "add", "path": "/stages", "value": f"{api}/live"}])
    assert apigw.get_api_key(apiKey=key)["stageKeys"] == [f"{api}/live"]
    apigw.create_usage_plan_key(usagePlanId=plan, keyId=key, keyType="API_KEY")
    with pytest.raises(apigw.exceptions.ConflictException):
        apigw.create_usage_plan_key(usagePlanId=plan, keyId=key, keyType="API_KEY")
    apigw.create_model(restApiId=api, name="M", contentType="application/json", schema='{"type": "object"}')
    apigw.update_model(restApiId=api, modelName="M", patchOperations=[
        {"op": "replace", "path": "/schema", "value": json.dumps({"type": "string"})}])
    assert json.loads(apigw.get_model(restApiId=api, modelName="M")["schema"]) == {"type": "string"}


def test_a_regional_domain_name_answers_its_regional_endpoint_only(emulator):
    apigw = emulator.client("apigateway")
    regional = apigw.create_domain_name(
        domainName="r.example.com", regionalCertificateArn="arn:aws:acm:us-east-1:123456789012:certificate/c",
        endpointConfiguration={"types": ["REGIONAL"]})
    assert regional["regionalHostedZoneId"] == "Z1UJRXOUMOOFQ8"
    assert regional["regionalDomainName"].endswith(".execute-api.us-east-1.amazonaws.com")
    assert "distributionDomainName" not in regional
    assert regional["domainNameArn"] == "arn:aws:apigateway:us-east-1::/domainnames/r.example.com"
    edge = apigw.create_domain_name(domainName="e.example.com",
                                    certificateArn="arn:aws:acm:us-east-1:123456789012:certificate/c")
    assert edge["distributionHostedZoneId"] == "Z2FDTNDATAQYW2"
    assert "regionalDomainName" not in edge
    apigw.update_domain_name(domainName="r.example.com", patchOperations=[
        {"op": "replace", "path": "/securityPolicy", "value": "TLS_1_2"}])
    assert apigw.get_domain_name(domainName="r.example.com")["securityPolicy"] == "TLS_1_2"


def test_deleting_a_missing_usage_plan_is_not_found(emulator):
    apigw = emulator.client("apigateway")
    plan = apigw.create_usage_plan(name="gone")["id"]
    apigw.delete_usage_plan(usagePlanId=plan)
    with pytest.raises(apigw.exceptions.NotFoundException):
        apigw.delete_usage_plan(usagePlanId=plan)


def _python_function(emulator, name):
    import io
    import zipfile
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("index.py", (
            "import json\n"
            "def handler(event, context):\n"
            "    return {'statusCode': 201, 'headers': {'x-from': 'lambda'}, 'body': json.dumps({\n"
            "        'path': event['path'], 'method': event['httpMethod'], 'resource': event['resource'],\n"
            "        'params': event['pathParameters'], 'query': event['queryStringParameters'],\n"
            "        'stage': event['requestContext']['stage'], 'vars': event['stageVariables'], 'body': event['body']})}\n"))
    iam = emulator.client("iam")
    role = iam.create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"},
                                                "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    return emulator.client("lambda").create_function(
        FunctionName=name, Runtime="python3.12", Role=role, Handler="index.handler",
        Code={"ZipFile": code.getvalue()})["FunctionArn"]


def test_a_deployed_stage_answers_through_its_lambda_proxy_integration(emulator):
    import urllib.error
    import urllib.request
    apigw = emulator.client("apigateway")
    fn = _python_function(emulator, "proxy-target")
    uri = f"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/{fn}/invocations"
    api, root = _api(apigw)
    items = apigw.create_resource(restApiId=api, parentId=root, pathPart="items")["id"]
    item = apigw.create_resource(restApiId=api, parentId=items, pathPart="{id}")["id"]
    proxy = apigw.create_resource(restApiId=api, parentId=root, pathPart="{proxy+}")["id"]
    for resource, verb, keyed in ((item, "GET", False), (proxy, "ANY", False), (items, "POST", True)):
        apigw.put_method(restApiId=api, resourceId=resource, httpMethod=verb, authorizationType="NONE",
                         apiKeyRequired=keyed)
        apigw.put_integration(restApiId=api, resourceId=resource, httpMethod=verb, type="AWS_PROXY",
                              integrationHttpMethod="POST", uri=uri)
    deployment = apigw.create_deployment(restApiId=api)["id"]
    apigw.create_stage(restApiId=api, stageName="prod", deploymentId=deployment, variables={"mode": "live"})
    base = f"{emulator.endpoint}/apigateway_us-east-1/restapis/{api}/prod/_user_request_"

    def send(path, method="GET", body=None, headers=None):
        request = urllib.request.Request(base + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.status, dict(answer.headers), json.loads(answer.read())
        except urllib.error.HTTPError as err:
            return err.code, dict(err.headers), json.loads(err.read())

    status, headers, body = send("/items/42?q=1")
    assert status == 201 and headers.get("x-from") == "lambda", (status, body)
    assert body == {"path": "/items/42", "method": "GET", "resource": "/items/{id}", "params": {"id": "42"},
                    "query": {"q": "1"}, "stage": "prod", "vars": {"mode": "live"}, "body": None}
    status, _, body = send("/a/b", method="DELETE")
    assert (status, body["resource"], body["params"]) == (201, "/{proxy+}", {"proxy": "a/b"})
    # The POST needs an API key of a usage plan on the stage.
    assert send("/items", method="POST", body=b"{}")[0] == 403
    key = apigw.create_api_key(name="proxy-key", enabled=True)
    plan = apigw.create_usage_plan(name="proxy-plan", apiStages=[{"apiId": api, "stage": "prod"}])["id"]
    apigw.create_usage_plan_key(usagePlanId=plan, keyId=key["id"], keyType="API_KEY")
    status, _, body = send("/items", method="POST", body=b'{"name": "x"}', headers={"x-api-key": key["value"]})
    assert (status, body["body"]) == (201, '{"name": "x"}')
    assert send("/", method="GET")[0] == 403
