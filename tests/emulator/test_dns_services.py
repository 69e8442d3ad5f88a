"""Route 53 and ACM as AWS has them (dns_services.py), through the running emulator."""

import pytest


def test_a_reused_caller_reference_is_refused_as_aws_refuses_it(emulator):
    r53 = emulator.client("route53")
    first = r53.create_hosted_zone(Name="ref.example", CallerReference="dns-services-ref-1")
    with pytest.raises(r53.exceptions.HostedZoneAlreadyExists):
        r53.create_hosted_zone(Name="ref.example", CallerReference="dns-services-ref-1")
    named = [z for z in r53.list_hosted_zones()["HostedZones"] if z["CallerReference"] == "dns-services-ref-1"]
    assert [z["Id"] for z in named] == [first["HostedZone"]["Id"]]


def test_query_logging_configs_are_listed_per_zone(emulator):
    r53, logs = emulator.client("route53"), emulator.client("logs")
    zones = [
        r53.create_hosted_zone(Name=f"q{i}.example", CallerReference=f"dns-services-q{i}")["HostedZone"]["Id"].split("/")[-1]
        for i in range(2)
    ]
    logs.create_log_group(logGroupName="/aws/route53/q0.example")
    arn = logs.describe_log_groups(logGroupNamePrefix="/aws/route53/q0.example")["logGroups"][0]["arn"]
    r53.create_query_logging_config(HostedZoneId=zones[0], CloudWatchLogsLogGroupArn=arn)
    assert len(r53.list_query_logging_configs(HostedZoneId=zones[0])["QueryLoggingConfigs"]) == 1
    assert r53.list_query_logging_configs(HostedZoneId=zones[1])["QueryLoggingConfigs"] == []
    with pytest.raises(r53.exceptions.NoSuchHostedZone):
        r53.list_query_logging_configs(HostedZoneId="ZNOSUCHZONE")


def test_a_dns_validated_certificate_is_issued_once_its_cname_is_in_a_zone(emulator):
    r53, acm = emulator.client("route53"), emulator.client("acm")
    zone = r53.create_hosted_zone(Name="cert.example", CallerReference="dns-services-cert")["HostedZone"]["Id"]
    arn = acm.request_certificate(DomainName="cert.example", ValidationMethod="DNS")["CertificateArn"]
    detail = acm.describe_certificate(CertificateArn=arn)["Certificate"]
    assert detail["Status"] == "PENDING_VALIDATION"
    record = detail["DomainValidationOptions"][0]["ResourceRecord"]
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Status"] == "PENDING_VALIDATION"
    r53.change_resource_record_sets(
        HostedZoneId=zone,
        ChangeBatch={"Changes": [{"Action": "UPSERT", "ResourceRecordSet": {
            "Name": record["Name"], "Type": "CNAME", "TTL": 60, "ResourceRecords": [{"Value": record["Value"]}]}}]},
    )
    assert acm.describe_certificate(CertificateArn=arn)["Certificate"]["Status"] == "ISSUED"
