"""Elastic Load Balancing v2 as AWS has it (elbv2_service.py), through the running emulator."""

import json
import time

import pytest


def _network(emulator):
    ec2 = emulator.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=f"us-east-1{z}")["Subnet"]["SubnetId"]
        for i, z in ((1, "a"), (2, "b"))
    ]
    group = ec2.create_security_group(GroupName="lb", Description="lb", VpcId=vpc)["GroupId"]
    return vpc, subnets, group


def _fixed(code="404"):
    return [{"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": code}}]


def test_a_load_balancer_is_provisioning_until_its_time_has_passed(emulator):
    emulator.post("/_emulator/config", {"profile": "aws", "timeScale": 0.01})
    try:
        _, subnets, group = _network(emulator)
        elb = emulator.client("elbv2")
        arn = elb.create_load_balancer(Name="slow", Subnets=subnets, SecurityGroups=[group])["LoadBalancers"][0]["LoadBalancerArn"]
        state = lambda: elb.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0]["State"]["Code"]  # noqa: E731
        assert state() == "provisioning"
        # A listener can be made while it provisions, as on AWS.
        elb.create_listener(LoadBalancerArn=arn, Protocol="HTTP", Port=80, DefaultActions=_fixed())
        assert state() == "provisioning"
        deadline = time.time() + 10
        while state() != "active":
            assert time.time() < deadline, "never active"
            time.sleep(0.2)
    finally:
        emulator.post("/_emulator/config", {"profile": "off", "timeScale": 1})


def test_the_provisioning_time_follows_its_override_without_the_profile(emulator):
    _, subnets, group = _network(emulator)
    elb = emulator.client("elbv2")
    emulator.post("/_emulator/config", {"timingOverrides": {"elbv2_load_balancer_ready_ms": 600000}})
    try:
        arn = elb.create_load_balancer(Name="held", Subnets=subnets)["LoadBalancers"][0]["LoadBalancerArn"]
        state = lambda: elb.describe_load_balancers(LoadBalancerArns=[arn])["LoadBalancers"][0]["State"]["Code"]  # noqa: E731
        assert state() == "provisioning"
        emulator.post("/_emulator/config", {"timingOverrides": {"elbv2_load_balancer_ready_ms": 0}})
        assert state() == "active"
    finally:
        emulator.post("/_emulator/config", {"timingOverrides": {}})


def test_names_in_use_are_refused_unless_the_settings_are_the_same(emulator):
    vpc, subnets, group = _network(emulator)
    elb = emulator.client("elbv2")
    first = elb.create_load_balancer(Name="web", Subnets=subnets, SecurityGroups=[group])["LoadBalancers"][0]
    again = elb.create_load_balancer(Name="web", Subnets=list(reversed(subnets)), SecurityGroups=[group])["LoadBalancers"][0]
    assert again["LoadBalancerArn"] == first["LoadBalancerArn"]
    with pytest.raises(elb.exceptions.DuplicateLoadBalancerNameException):
        elb.create_load_balancer(Name="web", Subnets=subnets[:1] + subnets[1:], Scheme="internal", SecurityGroups=[group])
    assert len(elb.describe_load_balancers()["LoadBalancers"]) == 1
    for bad in ("-web", "web-", "internal-web", "a" * 33, "we_b"):
        with pytest.raises(elb.exceptions.ClientError) as refused:
            elb.create_load_balancer(Name=bad, Subnets=subnets)
        assert refused.value.response["Error"]["Code"] == "ValidationError", bad

    tg = elb.create_target_group(Name="tg", Protocol="HTTP", Port=80, VpcId=vpc)["TargetGroups"][0]
    same = elb.create_target_group(Name="tg", Protocol="HTTP", Port=80, VpcId=vpc)["TargetGroups"][0]
    assert same["TargetGroupArn"] == tg["TargetGroupArn"]
    with pytest.raises(elb.exceptions.DuplicateTargetGroupNameException):
        elb.create_target_group(Name="tg", Protocol="HTTP", Port=8080, VpcId=vpc)


def test_ports_and_priorities_are_unique_in_their_parent(emulator):
    vpc, subnets, group = _network(emulator)
    elb = emulator.client("elbv2")
    lb = elb.create_load_balancer(Name="ports", Subnets=subnets, SecurityGroups=[group])["LoadBalancers"][0]["LoadBalancerArn"]
    listener = elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80, DefaultActions=_fixed())["Listeners"][0]
    assert "SslPolicy" not in listener
    same = elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80, DefaultActions=_fixed())["Listeners"][0]
    assert same["ListenerArn"] == listener["ListenerArn"]
    with pytest.raises(elb.exceptions.DuplicateListenerException):
        elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80, DefaultActions=_fixed("503"))
    conditions = [{"Field": "path-pattern", "PathPatternConfig": {"Values": ["/a"]}}]
    rule = elb.create_rule(ListenerArn=listener["ListenerArn"], Priority=10, Conditions=conditions, Actions=_fixed("200"))["Rules"][0]
    with pytest.raises(elb.exceptions.PriorityInUseException):
        elb.create_rule(ListenerArn=listener["ListenerArn"], Priority=10, Conditions=conditions, Actions=_fixed("201"))
    elb.delete_rule(RuleArn=rule["RuleArn"])
    with pytest.raises(elb.exceptions.RuleNotFoundException):
        elb.delete_rule(RuleArn=rule["RuleArn"])


def test_a_target_group_in_use_stays_and_deletes_forget_their_balancer(emulator):
    vpc, subnets, group = _network(emulator)
    elb = emulator.client("elbv2")
    lb = elb.create_load_balancer(Name="use", Subnets=subnets, SecurityGroups=[group], Tags=[{"Key": "team", "Value": "a"}])["LoadBalancers"][0]["LoadBalancerArn"]
    tg = elb.create_target_group(Name="used", Protocol="HTTP", Port=80, VpcId=vpc, TargetType="ip")["TargetGroups"][0]["TargetGroupArn"]
    listener = elb.create_listener(LoadBalancerArn=lb, Protocol="HTTP", Port=80,
                                   DefaultActions=[{"Type": "forward", "TargetGroupArn": tg}])["Listeners"][0]["ListenerArn"]
    assert elb.describe_target_groups(TargetGroupArns=[tg])["TargetGroups"][0]["LoadBalancerArns"] == [lb]
    with pytest.raises(elb.exceptions.ResourceInUseException):
        elb.delete_target_group(TargetGroupArn=tg)
    elb.delete_listener(ListenerArn=listener)
    assert elb.describe_target_groups(TargetGroupArns=[tg])["TargetGroups"][0].get("LoadBalancerArns", []) == []
    elb.delete_target_group(TargetGroupArn=tg)

    elb.modify_load_balancer_attributes(LoadBalancerArn=lb, Attributes=[{"Key": "deletion_protection.enabled", "Value": "true"}])
    with pytest.raises(elb.exceptions.ClientError) as refused:
        elb.delete_load_balancer(LoadBalancerArn=lb)
    assert refused.value.response["Error"]["Code"] == "OperationNotPermitted"
    elb.modify_load_balancer_attributes(LoadBalancerArn=lb, Attributes=[{"Key": "deletion_protection.enabled", "Value": "false"}])
    assert elb.describe_tags(ResourceArns=[lb])["TagDescriptions"][0]["Tags"] == [{"Key": "team", "Value": "a"}]
    elb.delete_load_balancer(LoadBalancerArn=lb)
    elb.delete_load_balancer(LoadBalancerArn=lb)  # a second delete succeeds, as on AWS
    with pytest.raises(elb.exceptions.LoadBalancerNotFoundException):
        elb.describe_tags(ResourceArns=[lb])


def test_a_lambda_target_needs_the_functions_permission(emulator):
    iam, lam, elb = emulator.client("iam"), emulator.client("lambda"), emulator.client("elbv2")
    role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}))["Role"]["Arn"]
    import io
    import zipfile
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("index.py", "def handler(e, c):\n    return {}\n")
    fn = lam.create_function(FunctionName="target", Runtime="python3.12", Role=role, Handler="index.handler",
                             Code={"ZipFile": code.getvalue()})["FunctionArn"]
    tg = elb.create_target_group(Name="fn", TargetType="lambda")["TargetGroups"][0]["TargetGroupArn"]
    with pytest.raises(elb.exceptions.ClientError) as refused:
        elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": fn}])
    assert refused.value.response["Error"]["Code"] == "AccessDenied"
    lam.add_permission(FunctionName="target", StatementId="elb", Action="lambda:InvokeFunction",
                       Principal="elasticloadbalancing.amazonaws.com", SourceArn=tg)
    elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": fn}])
    health = elb.describe_target_health(TargetGroupArn=tg)["TargetHealthDescriptions"]
    assert [h["Target"]["Id"] for h in health] == [fn]
    with pytest.raises(elb.exceptions.ClientError) as refused:
        elb.register_targets(TargetGroupArn=tg, Targets=[{"Id": fn + "-other"}])
    assert refused.value.response["Error"]["Code"] == "TooManyTargets"


def test_extra_certificates_stay_apart_from_the_default_one(emulator):
    _, subnets, group = _network(emulator)
    elb, acm = emulator.client("elbv2"), emulator.client("acm")
    main, extra, other = (acm.request_certificate(DomainName=f"{n}.example.com")["CertificateArn"] for n in ("main", "extra", "other"))
    lb = elb.create_load_balancer(Name="certs", Subnets=subnets, SecurityGroups=[group])["LoadBalancers"][0]["LoadBalancerArn"]
    listener = elb.create_listener(LoadBalancerArn=lb, Protocol="HTTPS", Port=443, Certificates=[{"CertificateArn": main}],
                                   DefaultActions=_fixed())["Listeners"][0]["ListenerArn"]
    elb.add_listener_certificates(ListenerArn=listener, Certificates=[{"CertificateArn": extra}])
    elb.add_listener_certificates(ListenerArn=listener, Certificates=[{"CertificateArn": extra}])
    described = lambda: elb.describe_listeners(ListenerArns=[listener])["Listeners"][0]["Certificates"]  # noqa: E731
    listed = lambda: sorted((c["CertificateArn"], c["IsDefault"]) for c in elb.describe_listener_certificates(ListenerArn=listener)["Certificates"])  # noqa: E731
    assert [c["CertificateArn"] for c in described()] == [main]
    assert listed() == sorted([(main, True), (extra, False)])
    elb.modify_listener(ListenerArn=listener, Certificates=[{"CertificateArn": other}], DefaultActions=_fixed("503"))
    assert [c["CertificateArn"] for c in described()] == [other]
    assert listed() == sorted([(other, True), (extra, False)])
    elb.remove_listener_certificates(ListenerArn=listener, Certificates=[{"CertificateArn": extra}])
    assert listed() == [(other, True)]
