"""CloudFront as AWS has it (cloudfront_service.py), through the running emulator."""

import time

import pytest


@pytest.fixture()
def cf(emulator):
    emulator.post("/moto-api/cloudfront", {"deploySeconds": 1})
    yield emulator.client("cloudfront")
    emulator.post("/moto-api/cloudfront", {"deploySeconds": 3})


def config(reference, comment="site", enabled=True, **behavior):
    default = {"TargetOriginId": "site", "ViewerProtocolPolicy": "allow-all",
               "ForwardedValues": {"QueryString": False, "Cookies": {"Forward": "none"}}}
    default.update(behavior)
    if "CachePolicyId" in behavior:
        default.pop("ForwardedValues")
    return {
        "CallerReference": reference, "Comment": comment, "Enabled": enabled,
        "Origins": {"Quantity": 1, "Items": [{"Id": "site", "DomainName": "b.s3.us-east-1.amazonaws.com",
                                               "S3OriginConfig": {"OriginAccessIdentity": ""}}]},
        "DefaultCacheBehavior": default,
    }


def wait_deployed(cf, dist_id):
    deadline = time.time() + 20
    while cf.get_distribution(Id=dist_id)["Distribution"]["Status"] != "Deployed":
        assert time.time() < deadline, "never Deployed"
        time.sleep(0.2)


def test_a_distribution_is_in_progress_then_deployed_and_keeps_its_whole_config(cf):
    created = cf.create_distribution(DistributionConfig=config("cf-1", DefaultTTL=5, Compress=True))
    dist = created["Distribution"]
    assert dist["Status"] == "InProgress"
    assert dist["DomainName"].endswith(".cloudfront.net")
    got = cf.get_distribution_config(Id=dist["Id"])
    assert got["ETag"] == created["ETag"]
    assert got["DistributionConfig"]["DefaultCacheBehavior"]["DefaultTTL"] == 5
    assert got["DistributionConfig"]["DefaultCacheBehavior"]["Compress"] is True
    wait_deployed(cf, dist["Id"])


def test_a_shorter_deploy_time_cuts_what_is_in_progress(cf, emulator):
    emulator.post("/moto-api/cloudfront", {"deploySeconds": 600})
    dist_id = cf.create_distribution(DistributionConfig=config("cf-cut"))["Distribution"]["Id"]
    time.sleep(0.5)
    assert cf.get_distribution(Id=dist_id)["Distribution"]["Status"] == "InProgress"
    emulator.post("/moto-api/cloudfront", {"deploySeconds": 0})
    assert cf.get_distribution(Id=dist_id)["Distribution"]["Status"] == "Deployed"


def test_the_same_caller_reference_answers_the_same_distribution_or_is_refused(cf):
    first = cf.create_distribution(DistributionConfig=config("cf-ref"))["Distribution"]["Id"]
    again = cf.create_distribution(DistributionConfig=config("cf-ref"))["Distribution"]["Id"]
    assert again == first
    with pytest.raises(cf.exceptions.DistributionAlreadyExists):
        cf.create_distribution(DistributionConfig=config("cf-ref", comment="other"))
    ids = [d["Id"] for d in cf.list_distributions()["DistributionList"].get("Items", [])]
    assert ids.count(first) == 1 and len(ids) == 1


def test_an_enabled_or_undeployed_distribution_is_not_deleted_and_etags_are_checked(cf):
    created = cf.create_distribution(DistributionConfig=config("cf-del"))
    dist_id, etag = created["Distribution"]["Id"], created["ETag"]
    with pytest.raises(cf.exceptions.DistributionNotDisabled):
        cf.delete_distribution(Id=dist_id, IfMatch=etag)
    disabled = config("cf-del", enabled=False)
    with pytest.raises(cf.exceptions.PreconditionFailed):
        cf.update_distribution(Id=dist_id, IfMatch="ESTALE", DistributionConfig=disabled)
    with pytest.raises(cf.exceptions.IllegalUpdate):
        cf.update_distribution(Id=dist_id, IfMatch=etag, DistributionConfig=config("cf-other", enabled=False))
    updated = cf.update_distribution(Id=dist_id, IfMatch=etag, DistributionConfig=disabled)
    assert updated["Distribution"]["Status"] == "InProgress"
    with pytest.raises(cf.exceptions.DistributionNotDisabled):
        cf.delete_distribution(Id=dist_id, IfMatch=updated["ETag"])
    with pytest.raises(cf.exceptions.PreconditionFailed):
        cf.delete_distribution(Id=dist_id, IfMatch=etag)
    wait_deployed(cf, dist_id)
    cf.delete_distribution(Id=dist_id, IfMatch=updated["ETag"])
    with pytest.raises(cf.exceptions.NoSuchDistribution):
        cf.get_distribution(Id=dist_id)


def test_what_a_distribution_names_must_exist_and_is_in_use_while_it_does(cf):
    with pytest.raises(cf.exceptions.NoSuchCachePolicy):
        cf.create_distribution(DistributionConfig=config("cf-p0", CachePolicyId="nope"))
    policy = cf.create_cache_policy(CachePolicyConfig={
        "Name": "pages", "MinTTL": 0, "ParametersInCacheKeyAndForwardedToOrigin": {
            "EnableAcceptEncodingGzip": False, "HeadersConfig": {"HeaderBehavior": "none"},
            "CookiesConfig": {"CookieBehavior": "none"}, "QueryStringsConfig": {"QueryStringBehavior": "none"}}})
    policy_id = policy["CachePolicy"]["Id"]
    with pytest.raises(cf.exceptions.CachePolicyAlreadyExists):
        cf.create_cache_policy(CachePolicyConfig=cf.get_cache_policy_config(Id=policy_id)["CachePolicyConfig"])
    fn = cf.create_function(Name="rewrite", FunctionConfig={"Comment": "", "Runtime": "cloudfront-js-2.0"},
                            FunctionCode=b"function handler(e) { return e.request; }")
    arn = fn["FunctionSummary"]["FunctionMetadata"]["FunctionARN"]
    associations = {"Quantity": 1, "Items": [{"FunctionARN": arn, "EventType": "viewer-request"}]}
    with pytest.raises(cf.exceptions.InvalidFunctionAssociation):
        cf.create_distribution(DistributionConfig=config("cf-p1", CachePolicyId=policy_id, FunctionAssociations=associations))
    cf.publish_function(Name="rewrite", IfMatch=fn["ETag"])
    assert cf.describe_function(Name="rewrite", Stage="LIVE")["FunctionSummary"]["FunctionMetadata"]["Stage"] == "LIVE"
    managed = cf.create_distribution(DistributionConfig=config("cf-p2", CachePolicyId="658327ea-f89d-4fab-a63d-7e88639e58f6"))
    assert managed["Distribution"]["Id"]
    cf.create_distribution(DistributionConfig=config("cf-p3", CachePolicyId=policy_id, FunctionAssociations=associations))
    with pytest.raises(cf.exceptions.CachePolicyInUse):
        cf.delete_cache_policy(Id=policy_id, IfMatch=policy["ETag"])
    with pytest.raises(cf.exceptions.FunctionInUse):
        cf.delete_function(Name="rewrite", IfMatch=cf.describe_function(Name="rewrite")["ETag"])
    with pytest.raises(cf.exceptions.InconsistentQuantities):
        cf.create_distribution(DistributionConfig=config("cf-p4", CachePolicyId=policy_id,
                                                         FunctionAssociations={"Quantity": 2, "Items": associations["Items"]}))


def test_functions_update_with_their_etag_and_publish_to_live(cf):
    created = cf.create_function(Name="fn", FunctionConfig={"Comment": "v1", "Runtime": "cloudfront-js-1.0"},
                                 FunctionCode=b"function handler(e) { return e.request; }")
    with pytest.raises(cf.exceptions.NoSuchFunctionExists):
        cf.describe_function(Name="fn", Stage="LIVE")
    with pytest.raises(cf.exceptions.PreconditionFailed):
        cf.update_function(Name="fn", IfMatch="ESTALE", FunctionConfig={"Comment": "v2", "Runtime": "cloudfront-js-1.0"},
                           FunctionCode=b"x")
    updated = cf.update_function(Name="fn", IfMatch=created["ETag"], FunctionConfig={"Comment": "v2", "Runtime": "cloudfront-js-1.0"},
                                 FunctionCode=b"function handler(e) { return e.response; }")
    assert updated["FunctionSummary"]["FunctionConfig"]["Comment"] == "v2"
    assert cf.get_function(Name="fn")["FunctionCode"].read() == b"function handler(e) { return e.response; }"
    cf.publish_function(Name="fn", IfMatch=updated["ETag"])
    assert [f["Name"] for f in cf.list_functions(Stage="LIVE")["FunctionList"]["Items"]] == ["fn"]
    with pytest.raises(cf.exceptions.FunctionAlreadyExists):
        cf.create_function(Name="fn", FunctionConfig={"Comment": "", "Runtime": "cloudfront-js-1.0"}, FunctionCode=b"x")
    cf.delete_function(Name="fn", IfMatch=cf.describe_function(Name="fn")["ETag"])
    assert cf.list_functions()["FunctionList"].get("Items", []) == []


def test_origin_access_controls_and_identities_and_policies_keep_names_and_references(cf):
    oac = cf.create_origin_access_control(OriginAccessControlConfig={
        "Name": "site", "SigningProtocol": "sigv4", "SigningBehavior": "always", "OriginAccessControlOriginType": "s3"})
    with pytest.raises(cf.exceptions.OriginAccessControlAlreadyExists):
        cf.create_origin_access_control(OriginAccessControlConfig={
            "Name": "site", "SigningProtocol": "sigv4", "SigningBehavior": "always", "OriginAccessControlOriginType": "s3"})
    listed = cf.list_origin_access_controls()["OriginAccessControlList"]["Items"]
    assert [o["Name"] for o in listed] == ["site"]
    oai = cf.create_cloud_front_origin_access_identity(
        CloudFrontOriginAccessIdentityConfig={"CallerReference": "oai-1", "Comment": "c"})
    again = cf.create_cloud_front_origin_access_identity(
        CloudFrontOriginAccessIdentityConfig={"CallerReference": "oai-1", "Comment": "c"})
    assert again["CloudFrontOriginAccessIdentity"]["Id"] == oai["CloudFrontOriginAccessIdentity"]["Id"]
    assert len(oai["CloudFrontOriginAccessIdentity"]["S3CanonicalUserId"]) == 64
    with pytest.raises(cf.exceptions.CloudFrontOriginAccessIdentityAlreadyExists):
        cf.create_cloud_front_origin_access_identity(
            CloudFrontOriginAccessIdentityConfig={"CallerReference": "oai-1", "Comment": "other"})
    headers = cf.create_response_headers_policy(ResponseHeadersPolicyConfig={
        "Name": "h", "CustomHeadersConfig": {"Quantity": 1, "Items": [{"Header": "x-a", "Value": "1", "Override": True}]}})
    headers_id = headers["ResponseHeadersPolicy"]["Id"]
    updated = cf.update_response_headers_policy(Id=headers_id, IfMatch=headers["ETag"], ResponseHeadersPolicyConfig={
        "Name": "h", "Comment": "now", "CustomHeadersConfig": {"Quantity": 0}})
    assert updated["ResponseHeadersPolicy"]["ResponseHeadersPolicyConfig"]["Comment"] == "now"
    custom = cf.list_response_headers_policies(Type="custom")["ResponseHeadersPolicyList"]["Items"]
    assert [p["ResponseHeadersPolicy"]["Id"] for p in custom] == [headers_id]
    managed = cf.list_origin_request_policies(Type="managed")["OriginRequestPolicyList"]["Items"]
    assert "b689b0a8-53d0-40ab-baf2-68738e2966ac" in [p["OriginRequestPolicy"]["Id"] for p in managed]
    dist = config("cf-oac")
    dist["Origins"]["Items"][0]["OriginAccessControlId"] = oac["OriginAccessControl"]["Id"]
    cf.create_distribution(DistributionConfig=dist)
    with pytest.raises(cf.exceptions.OriginAccessControlInUse):
        cf.delete_origin_access_control(Id=oac["OriginAccessControl"]["Id"], IfMatch=oac["ETag"])


def test_tags_travel_by_arn(cf):
    created = cf.create_distribution_with_tags(DistributionConfigWithTags={
        "DistributionConfig": config("cf-tags"), "Tags": {"Items": [{"Key": "site", "Value": "web"}]}})
    arn = created["Distribution"]["ARN"]
    assert cf.list_tags_for_resource(Resource=arn)["Tags"]["Items"] == [{"Key": "site", "Value": "web"}]
    cf.tag_resource(Resource=arn, Tags={"Items": [{"Key": "team", "Value": "a"}]})
    cf.untag_resource(Resource=arn, TagKeys={"Items": ["site"]})
    assert cf.list_tags_for_resource(Resource=arn)["Tags"]["Items"] == [{"Key": "team", "Value": "a"}]
