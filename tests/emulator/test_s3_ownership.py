"""S3 bucket ownership as S3 enforces it (s3_ownership.py): ExpectedBucketOwner, another
account's bucket refused unless its policy allows the caller, and an access key id of 12 digits
as the account it names."""

import json
import urllib.error
import urllib.request

import boto3
import botocore.exceptions
import pytest
from botocore.config import Config

OTHER = "111111111111"
MINE = "123456789012"  # the default account: the `testing` key's


def client(emulator, service, key, region="us-east-1"):
    return boto3.client(
        service, endpoint_url=emulator.endpoint, region_name=region,
        aws_access_key_id=key, aws_secret_access_key="any secret",
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, s3={"addressing_style": "path"}),
    )


def refusal(call):
    """(HTTP status, error code) of a call that must fail."""
    with pytest.raises(botocore.exceptions.ClientError) as raised:
        call()
    response = raised.value.response
    return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"]


DENIED = (403, "AccessDenied")


def bucket_calls(s3, bucket, **owner):
    """One call of each kind S3 checks the owner of, by name (`owner`: ExpectedBucketOwner)."""
    policy = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{MINE}:root"},
        "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/*"}]})
    return {
        "GetObject": lambda: s3.get_object(Bucket=bucket, Key="state.json", **owner),
        "PutObject": lambda: s3.put_object(Bucket=bucket, Key="state.json", Body=b"{}", **owner),
        "ListObjectsV2": lambda: s3.list_objects_v2(Bucket=bucket, **owner),
        "ListObjectVersions": lambda: s3.list_object_versions(Bucket=bucket, **owner),
        "DeleteObject": lambda: s3.delete_object(Bucket=bucket, Key="gone.json", **owner),
        "DeleteObjects": lambda: s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "gone.json"}]}, **owner),
        "GetBucketVersioning": lambda: s3.get_bucket_versioning(Bucket=bucket, **owner),
        "PutBucketVersioning": lambda: s3.put_bucket_versioning(
            Bucket=bucket, VersioningConfiguration={"Status": "Enabled"}, **owner),
        "PutBucketPolicy": lambda: s3.put_bucket_policy(Bucket=bucket, Policy=policy, **owner),
        "GetBucketPolicy": lambda: s3.get_bucket_policy(Bucket=bucket, **owner),
        "PutBucketEncryption": lambda: s3.put_bucket_encryption(Bucket=bucket, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}, **owner),
        "GetBucketEncryption": lambda: s3.get_bucket_encryption(Bucket=bucket, **owner),
        "GetBucketTagging": lambda: s3.get_bucket_tagging(Bucket=bucket, **owner),
        "PutBucketTagging": lambda: s3.put_bucket_tagging(
            Bucket=bucket, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}, **owner),
        "GetBucketLocation": lambda: s3.get_bucket_location(Bucket=bucket, **owner),
        # Answered by the emulator itself (config_apis.py), not moto.
        "ListBucketMetricsConfigurations": lambda: s3.list_bucket_metrics_configurations(Bucket=bucket, **owner),
    }


def test_a_12_digit_access_key_is_the_account_it_names(emulator):
    assert client(emulator, "sts", OTHER).get_caller_identity()["Account"] == OTHER
    assert client(emulator, "sts", "testing").get_caller_identity()["Account"] == MINE
    # A key moto issued (an assumed role's) is still the account moto gave it.
    role = "arn:aws:iam::222222222222:role/Reader"
    credentials = emulator.client("sts").assume_role(RoleArn=role, RoleSessionName="reader")["Credentials"]
    assumed = boto3.client("sts", endpoint_url=emulator.endpoint, region_name="us-east-1",
                           aws_access_key_id=credentials["AccessKeyId"],
                           aws_secret_access_key=credentials["SecretAccessKey"],
                           aws_session_token=credentials["SessionToken"])
    assert assumed.get_caller_identity()["Account"] == "222222222222"


def test_another_accounts_bucket_is_refused_for_every_operation(emulator):
    theirs = client(emulator, "s3", OTHER)
    theirs.create_bucket(Bucket=f"cdkd-state-{MINE}")
    theirs.put_object(Bucket=f"cdkd-state-{MINE}", Key="state.json", Body=b"theirs")
    s3 = emulator.client("s3")
    for name, call in bucket_calls(s3, f"cdkd-state-{MINE}").items():
        assert refusal(call) == DENIED, name
    # HeadBucket and HeadObject: 403 without a body (the SDKs see the status only).
    assert refusal(lambda: s3.head_bucket(Bucket=f"cdkd-state-{MINE}")) == (403, "403")
    assert refusal(lambda: s3.head_object(Bucket=f"cdkd-state-{MINE}", Key="state.json")) == (403, "403")
    assert refusal(lambda: s3.delete_bucket(Bucket=f"cdkd-state-{MINE}")) == DENIED
    # Nothing was applied: the owner still reads its object, its bucket has no versioning.
    got = theirs.get_object(Bucket=f"cdkd-state-{MINE}", Key="state.json")["Body"].read()
    assert got == b"theirs"
    assert "Status" not in theirs.get_bucket_versioning(Bucket=f"cdkd-state-{MINE}")
    # The owner itself is served, with ExpectedBucketOwner too.
    theirs.head_bucket(Bucket=f"cdkd-state-{MINE}", ExpectedBucketOwner=OTHER)
    theirs.list_objects_v2(Bucket=f"cdkd-state-{MINE}", ExpectedBucketOwner=OTHER)
    # A bucket that does not exist is still NoSuchBucket, whoever asks.
    assert refusal(lambda: s3.get_object(Bucket="nobody-has-it", Key="k")) == (404, "NoSuchBucket")


def test_the_access_denied_answer_has_s3s_error_shape(emulator):
    client(emulator, "s3", OTHER).create_bucket(Bucket="shape")
    signed = "AWS4-HMAC-SHA256 Credential=testing/20240101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0"
    for method in ("GET", "HEAD"):
        request = urllib.request.Request(emulator.endpoint + "/shape/state.json", method=method,
                                         headers={"Authorization": signed})
        with pytest.raises(urllib.error.HTTPError) as raised:
            urllib.request.urlopen(request)
        assert raised.value.code == 403
        body = raised.value.read()
        if method == "HEAD":
            assert body == b""
            continue
        assert raised.value.headers["Content-Type"] == "application/xml"
        text = body.decode()
        assert "<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>" in text
        assert "<HostId>" in text and text.endswith("</HostId></Error>")


def test_expected_bucket_owner_is_checked_on_ones_own_bucket(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="mine")
    s3.put_object(Bucket="mine", Key="state.json", Body=b"{}")
    s3.head_bucket(Bucket="mine", ExpectedBucketOwner=MINE)
    for name, call in bucket_calls(s3, "mine", ExpectedBucketOwner=MINE).items():
        try:
            call()
        except botocore.exceptions.ClientError as error:  # a missing configuration, not a refusal
            assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 404, (name, error.response)
    for name, call in bucket_calls(s3, "mine", ExpectedBucketOwner=OTHER).items():
        assert refusal(call) == DENIED, name
    assert refusal(lambda: s3.head_bucket(Bucket="mine", ExpectedBucketOwner=OTHER)) == (403, "403")
    assert refusal(lambda: s3.head_object(Bucket="mine", Key="state.json", ExpectedBucketOwner=OTHER)) == (403, "403")
    s3.head_object(Bucket="mine", Key="state.json", ExpectedBucketOwner=MINE)
    assert s3.get_object(Bucket="mine", Key="state.json")["Body"].read() == b"{}"


def test_a_copy_checks_its_source_bucket_too(emulator):
    theirs = client(emulator, "s3", OTHER)
    theirs.create_bucket(Bucket="their-source")
    theirs.put_object(Bucket="their-source", Key="k", Body=b"x")
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="my-target")
    s3.put_object(Bucket="my-target", Key="k", Body=b"mine")
    assert refusal(lambda: s3.copy_object(Bucket="my-target", Key="copy",
                                          CopySource={"Bucket": "their-source", "Key": "k"})) == DENIED
    assert refusal(lambda: s3.copy_object(Bucket="my-target", Key="copy", CopySource={"Bucket": "my-target", "Key": "k"},
                                          ExpectedSourceBucketOwner=OTHER)) == DENIED
    s3.copy_object(Bucket="my-target", Key="copy", CopySource={"Bucket": "my-target", "Key": "k"},
                   ExpectedSourceBucketOwner=MINE, ExpectedBucketOwner=MINE)
    assert s3.get_object(Bucket="my-target", Key="copy")["Body"].read() == b"mine"


@pytest.mark.parametrize("principal", [{"AWS": f"arn:aws:iam::{MINE}:root"}, {"AWS": [MINE]}, "*", {"AWS": "*"}])
def test_a_bucket_policy_allowing_the_callers_account_lets_it_through(emulator, principal):
    theirs = client(emulator, "s3", OTHER)
    theirs.create_bucket(Bucket="shared")
    theirs.put_object(Bucket="shared", Key="k", Body=b"shared")
    theirs.put_bucket_policy(Bucket="shared", Policy=json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": principal, "Action": "s3:*",
        "Resource": ["arn:aws:s3:::shared", "arn:aws:s3:::shared/*"]}]}))
    s3 = emulator.client("s3")
    assert s3.get_object(Bucket="shared", Key="k")["Body"].read() == b"shared"
    s3.head_bucket(Bucket="shared")
    # ExpectedBucketOwner still names the owner, whatever the policy allows.
    assert refusal(lambda: s3.get_object(Bucket="shared", Key="k", ExpectedBucketOwner=MINE)) == DENIED
    s3.get_object(Bucket="shared", Key="k", ExpectedBucketOwner=OTHER)


def test_a_policy_allowing_only_others_or_under_a_condition_does_not(emulator):
    theirs = client(emulator, "s3", OTHER)
    theirs.create_bucket(Bucket="guarded")
    theirs.put_object(Bucket="guarded", Key="k", Body=b"x")
    statements = [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::999999999999:root"}, "Action": "s3:*",
         "Resource": "arn:aws:s3:::guarded/*"},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::guarded/*",
         "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-abc"}}},
        {"Effect": "Deny", "Principal": {"AWS": f"arn:aws:iam::{MINE}:root"}, "Action": "s3:*",
         "Resource": "arn:aws:s3:::guarded/*"},
    ]
    theirs.put_bucket_policy(Bucket="guarded", Policy=json.dumps({"Version": "2012-10-17", "Statement": statements}))
    assert refusal(lambda: emulator.client("s3").get_object(Bucket="guarded", Key="k")) == DENIED


def test_create_bucket_of_a_name_in_use_answers_as_s3(emulator):
    client(emulator, "s3", OTHER).create_bucket(Bucket="taken")
    s3 = emulator.client("s3")
    assert refusal(lambda: s3.create_bucket(Bucket="taken")) == (409, "BucketAlreadyExists")
    # One's own: idempotent in us-east-1, BucketAlreadyOwnedByYou elsewhere.
    s3.create_bucket(Bucket="owned")
    s3.create_bucket(Bucket="owned")
    west = client(emulator, "s3", "testing", region="eu-west-1")
    config = {"LocationConstraint": "eu-west-1"}
    west.create_bucket(Bucket="owned-west", CreateBucketConfiguration=config)
    assert refusal(lambda: west.create_bucket(Bucket="owned-west", CreateBucketConfiguration=config)) == (
        409, "BucketAlreadyOwnedByYou")
    assert refusal(lambda: west.create_bucket(Bucket="taken", CreateBucketConfiguration=config)) == (
        409, "BucketAlreadyExists")


def test_a_pass_through_fault_does_not_apply_a_refused_request(emulator):
    client(emulator, "s3", OTHER).create_bucket(Bucket="faulted")
    emulator.post("/_emulator/faults", {"rules": [{"service": "s3", "method": "PUT", "status": 500,
                                                   "code": "InternalError", "passThrough": True}]})
    s3 = emulator.client("s3")
    assert refusal(lambda: s3.put_object(Bucket="faulted", Key="k", Body=b"x")) == DENIED
    emulator.post("/_emulator/faults", {"rules": []})
    assert client(emulator, "s3", OTHER).list_objects_v2(Bucket="faulted")["KeyCount"] == 0
