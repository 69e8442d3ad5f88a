"""WAFv2 as AWS has it (waf_service.py), through the running emulator."""

import pytest
from botocore.exceptions import ClientError

VISIBILITY = {"SampledRequestsEnabled": False, "CloudWatchMetricsEnabled": False, "MetricName": "m"}
RULE = {
    "Name": "rate", "Priority": 0, "Action": {"Block": {}},
    "Statement": {"RateBasedStatement": {"Limit": 100, "AggregateKeyType": "IP"}},
    "VisibilityConfig": VISIBILITY,
}


def _acl(waf, name="web", **extra):
    summary = waf.create_web_acl(Name=name, Scope="REGIONAL", DefaultAction={"Allow": {}},
                                 VisibilityConfig=VISIBILITY, **extra)["Summary"]
    return summary


def _get(waf, summary):
    return waf.get_web_acl(Name=summary["Name"], Scope="REGIONAL", Id=summary["Id"])


def test_an_update_replaces_every_setting_and_needs_the_current_lock_token(emulator):
    waf = emulator.client("wafv2")
    summary = _acl(waf, Rules=[RULE], Description="first")
    got = _get(waf, summary)
    with pytest.raises(ClientError) as stale:
        waf.update_web_acl(Name="web", Scope="REGIONAL", Id=summary["Id"], LockToken="stale",
                           DefaultAction={"Block": {}}, VisibilityConfig=VISIBILITY)
    assert stale.value.response["Error"]["Code"] == "WAFOptimisticLockException"
    waf.update_web_acl(Name="web", Scope="REGIONAL", Id=summary["Id"], LockToken=got["LockToken"],
                       DefaultAction={"Block": {}}, VisibilityConfig=VISIBILITY)
    acl = _get(waf, summary)["WebACL"]
    assert acl["Rules"] == []
    assert acl.get("Description", "") == ""
    assert acl["DefaultAction"] == {"Block": {}}


def test_an_associated_acl_refuses_delete_and_a_resource_has_one_acl(emulator):
    waf = emulator.client("wafv2")
    first, second = _acl(waf, "one"), _acl(waf, "two")
    resource = "arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/lb/1"
    waf.associate_web_acl(WebACLArn=first["ARN"], ResourceArn=resource)
    waf.associate_web_acl(WebACLArn=second["ARN"], ResourceArn=resource)
    assert waf.get_web_acl_for_resource(ResourceArn=resource)["WebACL"]["ARN"] == second["ARN"]
    token = _get(waf, second)["LockToken"]
    with pytest.raises(ClientError) as refused:
        waf.delete_web_acl(Name="two", Scope="REGIONAL", Id=second["Id"], LockToken=token)
    assert refused.value.response["Error"]["Code"] == "WAFAssociatedItemException"
    # The first no longer protects it, so it goes.
    waf.delete_web_acl(Name="one", Scope="REGIONAL", Id=first["Id"], LockToken=_get(waf, first)["LockToken"])
    waf.disassociate_web_acl(ResourceArn=resource)
    waf.delete_web_acl(Name="two", Scope="REGIONAL", Id=second["Id"], LockToken=token)
    with pytest.raises(ClientError) as gone:
        _get(waf, second)
    assert gone.value.response["Error"]["Code"] == "WAFNonexistentItemException"


def test_a_taken_name_is_refused_with_aws_code(emulator):
    waf = emulator.client("wafv2")
    _acl(waf)
    with pytest.raises(ClientError) as duplicate:
        _acl(waf)
    assert duplicate.value.response["Error"]["Code"] == "WAFDuplicateItemException"
