"""The Lambda and S3 configuration APIs `config_apis.py` adds to moto, through boto3."""

import io
import zipfile

import pytest
from botocore.exceptions import ClientError


def _zip():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return 1\n")
    return buffer.getvalue()


def _function(emulator, name, **extra):
    iam = emulator.client("iam")
    role = iam.create_role(RoleName=f"{name}-role", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    return emulator.client("lambda").create_function(
        FunctionName=name, Runtime="python3.12", Role=role, Handler="index.handler",
        Code={"ZipFile": _zip()}, **extra)


def _code(call):
    with pytest.raises(ClientError) as error:
        call()
    return error.value.response["Error"]["Code"]


def test_lambda_settings_are_kept_and_checked(emulator):
    lam = emulator.client("lambda")
    created = _function(emulator, "settings", SnapStart={"ApplyOn": "PublishedVersions"})
    assert created["SnapStart"]["ApplyOn"] == "PublishedVersions"
    assert lam.get_function_recursion_config(FunctionName="settings")["RecursiveLoop"] == "Terminate"
    lam.put_function_recursion_config(FunctionName="settings", RecursiveLoop="Allow")
    assert lam.get_function_recursion_config(FunctionName="settings")["RecursiveLoop"] == "Allow"
    assert lam.get_runtime_management_config(FunctionName="settings")["UpdateRuntimeOn"] == "Auto"
    assert _code(lambda: lam.put_runtime_management_config(
        FunctionName="settings", UpdateRuntimeOn="Manual")) == "InvalidParameterValueException"
    signing = "arn:aws:lambda:us-east-1:123456789012:code-signing-config:csc-0123456789abcdef0"
    lam.put_function_code_signing_config(FunctionName="settings", CodeSigningConfigArn=signing)
    assert lam.get_function_code_signing_config(FunctionName="settings")["CodeSigningConfigArn"] == signing
    lam.delete_function_code_signing_config(FunctionName="settings")
    lam.update_function_configuration(FunctionName="settings", SnapStart={"ApplyOn": "None"})
    assert lam.get_function_configuration(FunctionName="settings")["SnapStart"]["ApplyOn"] == "None"
    assert _code(lambda: lam.update_function_configuration(
        FunctionName="settings", Runtime="nodejs20.x",
        SnapStart={"ApplyOn": "PublishedVersions"})) == "InvalidParameterValueException"
    assert _code(lambda: lam.get_function_recursion_config(FunctionName="missing")) == "ResourceNotFoundException"


def test_provisioned_concurrency_lives_on_an_alias(emulator):
    lam = emulator.client("lambda")
    _function(emulator, "pc")
    version = lam.publish_version(FunctionName="pc")["Version"]
    lam.create_alias(FunctionName="pc", Name="live", FunctionVersion=version)
    assert _code(lambda: lam.put_provisioned_concurrency_config(
        FunctionName="pc", Qualifier="$LATEST", ProvisionedConcurrentExecutions=1)) == "InvalidParameterValueException"
    assert _code(lambda: lam.get_provisioned_concurrency_config(
        FunctionName="pc", Qualifier="live")) == "ProvisionedConcurrencyConfigNotFoundException"
    put = lam.put_provisioned_concurrency_config(FunctionName="pc", Qualifier="live",
                                                 ProvisionedConcurrentExecutions=2)
    assert put["Status"] == "READY"
    assert lam.get_provisioned_concurrency_config(
        FunctionName="pc", Qualifier="live")["RequestedProvisionedConcurrentExecutions"] == 2
    lam.delete_alias(FunctionName="pc", Name="live")
    lam.create_alias(FunctionName="pc", Name="live", FunctionVersion=version)
    assert _code(lambda: lam.get_provisioned_concurrency_config(
        FunctionName="pc", Qualifier="live")) == "ProvisionedConcurrencyConfigNotFoundException"


def test_s3_metrics_tiering_and_canned_acls(emulator):
    s3 = emulator.client("s3")
    s3.create_bucket(Bucket="configs")
    s3.put_bucket_metrics_configuration(Bucket="configs", Id="all",
                                        MetricsConfiguration={"Id": "all"})
    listed = s3.list_bucket_metrics_configurations(Bucket="configs")["MetricsConfigurationList"]
    assert [m["Id"] for m in listed] == ["all"]
    s3.delete_bucket_metrics_configuration(Bucket="configs", Id="all")
    assert "MetricsConfigurationList" not in s3.list_bucket_metrics_configurations(Bucket="configs")
    assert _code(lambda: s3.get_bucket_metrics_configuration(Bucket="configs", Id="all")) == "NoSuchConfiguration"
    tiering = {"Id": "t", "Status": "Enabled", "Tierings": [{"Days": 90, "AccessTier": "ARCHIVE_ACCESS"}]}
    s3.put_bucket_intelligent_tiering_configuration(Bucket="configs", Id="t",
                                                    IntelligentTieringConfiguration=tiering)
    got = s3.get_bucket_intelligent_tiering_configuration(Bucket="configs", Id="t")
    assert got["IntelligentTieringConfiguration"]["Tierings"] == tiering["Tierings"]
    short = dict(tiering, Tierings=[{"Days": 10, "AccessTier": "ARCHIVE_ACCESS"}])
    assert _code(lambda: s3.put_bucket_intelligent_tiering_configuration(
        Bucket="configs", Id="t", IntelligentTieringConfiguration=short)) == "InvalidArgument"
    # ACLs are disabled until object ownership allows them.
    assert _code(lambda: s3.put_bucket_acl(Bucket="configs", ACL="log-delivery-write")) == "AccessControlListNotSupported"
    s3.put_bucket_ownership_controls(Bucket="configs", OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    s3.put_bucket_acl(Bucket="configs", ACL="log-delivery-write")
    grants = sorted(g["Permission"] for g in s3.get_bucket_acl(Bucket="configs")["Grants"]
                    if g["Grantee"].get("URI", "").endswith("/LogDelivery"))
    assert grants == ["READ_ACP", "WRITE"]
