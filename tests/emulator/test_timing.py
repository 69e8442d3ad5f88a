"""The AWS timing profile (timing.py): AWS's states, waits and refusals, scaled down so each
test takes well under a second; and nothing of it with the profile off."""

import json
import time

import botocore.exceptions
import pytest

SCALE = 0.01  # AWS's timing in a hundredth of the time: DynamoDB's 7 s ACTIVE in 70 ms
# The tests that look at a state in between lengthen it to WINDOW (at SCALE: 8 s), so that a
# loaded machine still sees it: the suite runs beside end-to-end tests (tests/parallel.sh), and
# with a 3 s window a describe right after a create once answered after the window had passed.
WINDOW = 800000


@pytest.fixture()
def aws(emulator):
    """The emulator with the profile on at SCALE; off again afterwards."""
    emulator.post("/_emulator/config", {"profile": "aws", "timeScale": SCALE, "timingOverrides": {}})
    yield emulator
    emulator.post("/_emulator/config", {"profile": "off", "timeScale": 1, "timingOverrides": {},
                                        "freshInstanceProfile": "refuse"})


def until(check, timeout=WINDOW / 1000 * SCALE + 5.0):
    """Polls `check()` until it answers truthy; returns the seconds it took."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "still not there"
        time.sleep(0.01)
    return time.monotonic() - started


def table_spec(name):
    return dict(TableName=name, AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")


def status_of(ddb, name):
    return ddb.describe_table(TableName=name)["Table"]["TableStatus"]


def test_config_answers_the_profile(aws):
    config = aws.get("/_emulator/config")
    assert (config["profile"], config["timeScale"]) == ("aws", SCALE)


def test_dynamodb_table_is_creating_then_active_and_deleting_then_gone(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"dynamodb_table_ready_ms": WINDOW, "dynamodb_table_delete_ms": WINDOW}})
    ddb = aws.client("dynamodb")
    created = ddb.create_table(**table_spec("t"))["TableDescription"]
    assert created["TableStatus"] == "CREATING"
    assert status_of(ddb, "t") == "CREATING"
    waited = until(lambda: status_of(ddb, "t") == "ACTIVE")
    assert waited < WINDOW / 1000 * SCALE + 2.0
    assert ddb.delete_table(TableName="t")["TableDescription"]["TableStatus"] == "DELETING"
    assert status_of(ddb, "t") == "DELETING"
    # As on AWS: the name is in use until the delete is done.
    with pytest.raises(ddb.exceptions.ResourceInUseException):
        ddb.create_table(**table_spec("t"))

    def gone():
        try:
            status_of(ddb, "t")
            return False
        except ddb.exceptions.ResourceNotFoundException:
            return True
    until(gone)
    ddb.create_table(**table_spec("t"))


def test_cloud_control_create_is_in_progress_for_the_types_time(aws):
    cc = aws.client("cloudcontrol")  # an S3 bucket: 16.0 s measured, 0.16 s here
    started = time.monotonic()
    event = cc.create_resource(TypeName="AWS::S3::Bucket", DesiredState=json.dumps({"BucketName": "timing-bucket"}))["ProgressEvent"]
    token = event["RequestToken"]
    assert cc.get_resource_request_status(RequestToken=token)["ProgressEvent"]["OperationStatus"] == "IN_PROGRESS"

    def done():
        status = cc.get_resource_request_status(RequestToken=token)["ProgressEvent"]["OperationStatus"]
        return status if status != "IN_PROGRESS" else None
    until(done)
    assert done() == "SUCCESS"
    # The bucket's measured 16.0 s, scaled.
    assert time.monotonic() - started >= 16.0 * SCALE


def test_a_fresh_role_is_refused_by_create_function_then_accepted(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": WINDOW}})
    iam, aws_lambda = aws.client("iam"), aws.client("lambda")
    role = iam.create_role(RoleName="fresh", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    spec = dict(FunctionName="fn", Runtime="python3.12", Role=role, Handler="index.handler",
                Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18})
    with pytest.raises(aws_lambda.exceptions.InvalidParameterValueException) as refused:
        aws_lambda.create_function(**spec)
    assert refused.value.response["Error"]["Message"] == "The role defined for the function cannot be assumed by Lambda."
    assert aws.get("/_emulator/refusals") == {"lambda:CreateFunction": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    assert aws_lambda.create_function(**spec)["State"] == "Pending"


def test_a_function_is_pending_then_active_and_not_invoked_while_pending(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": 0, "lambda_function_ready_ms": WINDOW, "lambda_update_ms": WINDOW}})
    iam, aws_lambda = aws.client("iam"), aws.client("lambda")
    role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    aws_lambda.create_function(FunctionName="fn", Runtime="python3.12", Role=role, Handler="index.handler",
                               Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18})
    config = aws_lambda.get_function(FunctionName="fn")["Configuration"]
    assert (config["State"], config["StateReasonCode"]) == ("Pending", "Creating")
    with pytest.raises(aws_lambda.exceptions.ResourceConflictException) as refused:
        aws_lambda.invoke(FunctionName="fn", Payload=b"{}")
    assert "Pending" in refused.value.response["Error"]["Message"]
    # Other calls that operate on the function fail too; its policy, URL and aliases are accepted.
    with pytest.raises(aws_lambda.exceptions.ResourceConflictException):
        aws_lambda.publish_version(FunctionName="fn")
    with pytest.raises(aws_lambda.exceptions.ResourceConflictException):
        aws_lambda.update_function_configuration(FunctionName="fn", Timeout=9)
    aws_lambda.add_permission(FunctionName="fn", StatementId="s", Action="lambda:InvokeFunction",
                              Principal="sns.amazonaws.com")
    until(lambda: aws_lambda.get_function_configuration(FunctionName="fn")["State"] == "Active")
    # An update: LastUpdateStatus InProgress, then Successful.
    updated = aws_lambda.update_function_configuration(FunctionName="fn", Timeout=10)
    assert updated["LastUpdateStatus"] == "InProgress"
    with pytest.raises(aws_lambda.exceptions.ResourceConflictException) as busy:
        aws_lambda.publish_version(FunctionName="fn")
    assert "An update is in progress" in busy.value.response["Error"]["Message"]
    until(lambda: aws_lambda.get_function_configuration(FunctionName="fn")["LastUpdateStatus"] == "Successful")


def test_cloud_control_lambda_fails_on_a_fresh_role(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": WINDOW}})
    role = aws.client("iam").create_role(RoleName="cc-fresh", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    cc = aws.client("cloudcontrol")
    desired = {"FunctionName": "ccfn", "Runtime": "python3.12", "Role": role, "Handler": "index.handler",
               "Code": {"ZipFile": "def handler(e, c): return 1"}}
    token = cc.create_resource(TypeName="AWS::Lambda::Function", DesiredState=json.dumps(desired))["ProgressEvent"]["RequestToken"]

    def final():
        event = cc.get_resource_request_status(RequestToken=token)["ProgressEvent"]
        return event if event["OperationStatus"] != "IN_PROGRESS" else None
    until(final)
    event = final()
    assert (event["OperationStatus"], event["ErrorCode"]) == ("FAILED", "InvalidRequest"), event
    assert "cannot be assumed by Lambda" in event["StatusMessage"]


def test_a_deleted_queues_name_is_refused_then_free(aws):
    sqs = aws.client("sqs")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    sqs.delete_queue(QueueUrl=url)
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        sqs.create_queue(QueueName="q")
    assert "QueueDeletedRecently" in refused.value.response["Error"]["Code"]
    assert "wait 60 seconds" in refused.value.response["Error"]["Message"]
    sqs.create_queue(QueueName="other")  # other names are free
    time.sleep(60.0 * SCALE)
    sqs.create_queue(QueueName="q")


def test_kinesis_stream_is_creating_then_active(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"kinesis_stream_ready_ms": WINDOW}})
    kinesis = aws.client("kinesis")
    kinesis.create_stream(StreamName="s", ShardCount=1)

    def status():
        return kinesis.describe_stream_summary(StreamName="s")["StreamDescriptionSummary"]["StreamStatus"]
    assert status() == "CREATING"
    until(lambda: status() == "ACTIVE")


def test_nat_gateway_is_pending_then_available_and_its_delete_blocks_the_subnet(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"nat_gateway_ready_ms": WINDOW, "nat_gateway_delete_ms": WINDOW}})
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24")["Subnet"]["SubnetId"]
    eip = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=subnet, AllocationId=eip)["NatGateway"]["NatGatewayId"]

    def state():
        return ec2.describe_nat_gateways(NatGatewayIds=[nat])["NatGateways"][0]["State"]
    assert state() == "pending"
    until(lambda: state() == "available")
    ec2.delete_nat_gateway(NatGatewayId=nat)
    assert state() == "deleting"
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        ec2.delete_subnet(SubnetId=subnet)
    assert refused.value.response["Error"]["Code"] == "DependencyViolation"
    until(lambda: state() == "deleted")
    ec2.delete_subnet(SubnetId=subnet)


def test_instance_profile_propagation_and_instance_states(aws):
    aws.post("/_emulator/config", {"timingOverrides": {
        "iam_instance_profile_propagation_ms": WINDOW, "ec2_instance_ready_ms": WINDOW, "ec2_instance_terminate_ms": WINDOW}})
    iam, ec2 = aws.client("iam"), aws.client("ec2")
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    iam.create_instance_profile(InstanceProfileName="p")
    run = dict(ImageId=image, MinCount=1, MaxCount=1, IamInstanceProfile={"Name": "p"})
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        ec2.run_instances(**run)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert "Invalid IAM Instance Profile name" in refused.value.response["Error"]["Message"]
    assert aws.get("/_emulator/refusals") == {"ec2:RunInstances": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    instance = ec2.run_instances(**run)["Instances"][0]
    assert instance["State"]["Name"] == "pending"

    def state():
        return ec2.describe_instances(InstanceIds=[instance["InstanceId"]])["Reservations"][0]["Instances"][0]["State"]["Name"]
    assert state() == "pending"
    until(lambda: state() == "running")
    ec2.terminate_instances(InstanceIds=[instance["InstanceId"]])
    assert state() == "shutting-down"
    until(lambda: state() == "terminated")


def test_a_fresh_instance_profile_can_launch_an_instance_without_it(aws):
    aws.post("/_emulator/config", {"freshInstanceProfile": "launch-without", "timingOverrides": {
        "iam_instance_profile_propagation_ms": WINDOW}})
    assert aws.get("/_emulator/config")["freshInstanceProfile"] == "launch-without"
    iam, ec2 = aws.client("iam"), aws.client("ec2")
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    iam.create_instance_profile(InstanceProfileName="silent")
    run = dict(ImageId=image, MinCount=1, MaxCount=1, IamInstanceProfile={"Name": "silent"})
    # Accepted, but the instance carries no profile: the answer and a describe say so.
    launched = ec2.run_instances(**run)["Instances"][0]
    assert "IamInstanceProfile" not in launched, launched

    def described(instance_id):
        return ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    assert "IamInstanceProfile" not in described(launched["InstanceId"])
    assert aws.get("/_emulator/refusals") == {"ec2:RunInstances without its profile": 1}
    # Once the profile has propagated, a launch carries it.
    time.sleep(WINDOW / 1000 * SCALE)
    later = ec2.run_instances(**run)["Instances"][0]
    assert described(later["InstanceId"])["IamInstanceProfile"]["Arn"].endswith("/silent")
    # An explicit association of the first instance is not skipped.
    ec2.associate_iam_instance_profile(InstanceId=launched["InstanceId"], IamInstanceProfile={"Name": "silent"})
    assert described(launched["InstanceId"])["IamInstanceProfile"]["Arn"].endswith("/silent")


def test_a_fresh_principal_in_an_ecr_repository_policy_is_refused_then_accepted(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": WINDOW}})
    iam, ecr = aws.client("iam"), aws.client("ecr")
    role = iam.create_role(RoleName="puller", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    ecr.create_repository(repositoryName="repo")
    policy = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": role}, "Action": ["ecr:BatchGetImage"]}]})
    with pytest.raises(ecr.exceptions.InvalidParameterException) as refused:
        ecr.set_repository_policy(repositoryName="repo", policyText=policy)
    assert "'Invalid repository policy provided'" in refused.value.response["Error"]["Message"]
    # A policy naming only a service is not held up.
    service_only = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "codebuild.amazonaws.com"}, "Action": ["ecr:BatchGetImage"]}]})
    ecr.set_repository_policy(repositoryName="repo", policyText=service_only)
    assert aws.get("/_emulator/refusals") == {"ecr:SetRepositoryPolicy": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    ecr.set_repository_policy(repositoryName="repo", policyText=policy)


def test_a_fresh_user_is_unknown_to_create_access_key_for_a_moment(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_user_read_after_write_ms": WINDOW}})
    iam = aws.client("iam")
    iam.create_user(UserName="u")
    with pytest.raises(iam.exceptions.NoSuchEntityException) as refused:
        iam.create_access_key(UserName="u")
    assert refused.value.response["Error"]["Message"] == "The user with name u cannot be found."
    assert aws.get("/_emulator/refusals") == {"iam:CreateAccessKey": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    assert iam.create_access_key(UserName="u")["AccessKey"]["UserName"] == "u"


def test_auto_scaling_refuses_a_fresh_service_linked_role_and_instance_profile(aws):
    aws.post("/_emulator/config", {"timingOverrides": {
        "iam_role_propagation_ms": WINDOW, "iam_instance_profile_propagation_ms": WINDOW}})
    iam, ec2, asg = aws.client("iam"), aws.client("ec2"), aws.client("autoscaling")
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    plain = ec2.create_launch_template(LaunchTemplateName="plain", LaunchTemplateData={"ImageId": image})
    role = iam.create_service_linked_role(AWSServiceName="autoscaling.amazonaws.com", CustomSuffix="g")["Role"]["Arn"]
    group = dict(MinSize=0, MaxSize=1, AvailabilityZones=["us-east-1a"])
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        asg.create_auto_scaling_group(AutoScalingGroupName="g1", ServiceLinkedRoleARN=role,
                                      LaunchTemplate={"LaunchTemplateId": plain["LaunchTemplate"]["LaunchTemplateId"]}, **group)
    assert refused.value.response["Error"]["Code"] == "ValidationError"
    assert refused.value.response["Error"]["Message"] == "ARN specified for Service-Linked Role does not exist."
    iam.create_instance_profile(InstanceProfileName="p")
    ec2.create_launch_template(LaunchTemplateName="with-profile",
                               LaunchTemplateData={"ImageId": image, "IamInstanceProfile": {"Name": "p"}})
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        asg.create_auto_scaling_group(AutoScalingGroupName="g2", LaunchTemplate={"LaunchTemplateName": "with-profile"}, **group)
    assert refused.value.response["Error"]["Code"] == "ValidationError"
    assert "Invalid IAM Instance Profile name" in refused.value.response["Error"]["Message"]
    # A group naming neither is made at once.
    asg.create_auto_scaling_group(AutoScalingGroupName="g0", LaunchTemplate={"LaunchTemplateName": "plain"}, **group)
    assert aws.get("/_emulator/refusals") == {"autoscaling:CreateAutoScalingGroup": 2}
    time.sleep(WINDOW / 1000 * SCALE)
    asg.create_auto_scaling_group(AutoScalingGroupName="g1", ServiceLinkedRoleARN=role,
                                  LaunchTemplate={"LaunchTemplateName": "plain"}, **group)
    asg.create_auto_scaling_group(AutoScalingGroupName="g2", LaunchTemplate={"LaunchTemplateName": "with-profile"}, **group)


def test_cognito_refuses_a_fresh_sms_role_then_accepts_it(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": WINDOW}})
    iam, idp = aws.client("iam"), aws.client("cognito-idp")
    role = iam.create_role(RoleName="sms", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    sms = {"SnsCallerArn": role, "ExternalId": "x"}
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        idp.create_user_pool(PoolName="p", SmsConfiguration=sms)
    assert refused.value.response["Error"]["Code"] == "InvalidSmsRoleTrustRelationshipException"
    assert refused.value.response["Error"]["Message"] == "Role does not have a trust relationship allowing Cognito to assume the role"
    pool = idp.create_user_pool(PoolName="p")["UserPool"]["Id"]
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        idp.update_user_pool(UserPoolId=pool, SmsConfiguration=sms)
    assert refused.value.response["Error"]["Code"] == "InvalidSmsRoleTrustRelationshipException"
    with pytest.raises(botocore.exceptions.ClientError):
        idp.set_user_pool_mfa_config(UserPoolId=pool, MfaConfiguration="OPTIONAL",
                                     SmsMfaConfiguration={"SmsConfiguration": sms})
    assert aws.get("/_emulator/refusals") == {
        "cognito-idp:CreateUserPool": 1, "cognito-idp:UpdateUserPool": 1, "cognito-idp:SetUserPoolMfaConfig": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    idp.create_user_pool(PoolName="p2", SmsConfiguration=sms)
    idp.update_user_pool(UserPoolId=pool, SmsConfiguration=sms)


def policy_naming(principal, action):
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": principal}, "Action": action, "Resource": "*"}]})


def fresh_role(aws, name):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": WINDOW}})
    return aws.client("iam").create_role(RoleName=name, AssumeRolePolicyDocument="{}")["Role"]["Arn"]


def refusal(call):
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        call()
    error = refused.value.response["Error"]
    return error["Code"], error["Message"]


PASS = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})


def test_step_functions_refuses_a_fresh_role_then_accepts_it(aws):
    role = fresh_role(aws, "states")
    sfn = aws.client("stepfunctions")
    denied = ("AccessDeniedException", "Neither the global service principal states.amazonaws.com, "
              "nor the regional one is authorized to assume the provided role.")
    assert refusal(lambda: sfn.create_state_machine(name="m", definition=PASS, roleArn=role)) == denied
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": 0}})
    old = aws.client("iam").create_role(RoleName="old", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    machine = sfn.create_state_machine(name="m", definition=PASS, roleArn=old)["stateMachineArn"]
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": WINDOW}})
    assert refusal(lambda: sfn.update_state_machine(stateMachineArn=machine, roleArn=role)) == denied
    sfn.update_state_machine(stateMachineArn=machine, definition=PASS)  # no role: not held up
    assert aws.get("/_emulator/refusals") == {"states:CreateStateMachine": 1, "states:UpdateStateMachine": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    sfn.update_state_machine(stateMachineArn=machine, roleArn=role)
    sfn.create_state_machine(name="m2", definition=PASS, roleArn=role)
    assert sfn.describe_state_machine(stateMachineArn=machine)["roleArn"] == role


def test_sqs_refuses_a_policy_naming_a_fresh_principal_then_accepts_it(aws):
    role = fresh_role(aws, "consumer")
    sqs = aws.client("sqs")
    policy = policy_naming(role, "sqs:ReceiveMessage")
    invalid = ("InvalidAttributeValue", "Invalid value for the parameter Policy.")
    assert refusal(lambda: sqs.create_queue(QueueName="q", Attributes={"Policy": policy})) == invalid
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    assert refusal(lambda: sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": policy})) == invalid
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "40"})
    assert aws.get("/_emulator/refusals") == {"sqs:CreateQueue": 1, "sqs:SetQueueAttributes": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": policy})
    sqs.create_queue(QueueName="q2", Attributes={"Policy": policy})
    assert json.loads(sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]["Policy"]) \
        == json.loads(policy)


def test_sns_refuses_a_policy_naming_a_fresh_principal_then_accepts_it(aws):
    role = fresh_role(aws, "publisher")
    sns = aws.client("sns")
    policy = policy_naming([role], "sns:Publish")
    not_found = ("InvalidParameter", "Invalid parameter: Policy Error: PrincipalNotFound")
    assert refusal(lambda: sns.create_topic(Name="t", Attributes={"Policy": policy})) == not_found
    topic = sns.create_topic(Name="t")["TopicArn"]
    assert refusal(lambda: sns.set_topic_attributes(
        TopicArn=topic, AttributeName="Policy", AttributeValue=policy)) == not_found
    sns.set_topic_attributes(TopicArn=topic, AttributeName="DisplayName", AttributeValue="d")
    assert aws.get("/_emulator/refusals") == {"sns:CreateTopic": 1, "sns:SetTopicAttributes": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    sns.set_topic_attributes(TopicArn=topic, AttributeName="Policy", AttributeValue=policy)
    sns.create_topic(Name="t2", Attributes={"Policy": policy})
    assert json.loads(sns.get_topic_attributes(TopicArn=topic)["Attributes"]["Policy"]) == json.loads(policy)


def test_s3_refuses_a_bucket_policy_naming_a_fresh_principal_then_accepts_it(aws):
    aws.post("/_emulator/config", {"timingOverrides": {"iam_role_propagation_ms": WINDOW}})
    user = aws.client("iam").create_user(UserName="reader")["User"]["Arn"]
    s3 = aws.client("s3")
    s3.create_bucket(Bucket="policy-bucket")
    policy = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"AWS": user}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::policy-bucket/*"}]})
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.put_bucket_policy(Bucket="policy-bucket", Policy=policy)
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    error = refused.value.response["Error"]
    assert (error["Code"], error["Message"]) == ("MalformedPolicy", "Invalid principal in policy")
    # Counted by name: /_emulator/stats counts every S3 PUT as s3:PUT. DELETE clears.
    assert aws.delete("/_emulator/refusals") == {"s3:PutBucketPolicy": 1}
    assert aws.get("/_emulator/refusals") == {}
    time.sleep(WINDOW / 1000 * SCALE)
    s3.put_bucket_policy(Bucket="policy-bucket", Policy=policy)
    assert json.loads(s3.get_bucket_policy(Bucket="policy-bucket")["Policy"]) == json.loads(policy)


def test_kms_refuses_a_key_policy_naming_a_fresh_principal_then_accepts_it(aws):
    role = fresh_role(aws, "key-user")
    kms = aws.client("kms")
    policy = policy_naming(role, "kms:Decrypt")
    invalid = ("MalformedPolicyDocumentException", "Policy contains a statement with one or more invalid principals.")
    assert refusal(lambda: kms.create_key(Policy=policy)) == invalid
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    assert refusal(lambda: kms.put_key_policy(KeyId=key, PolicyName="default", Policy=policy)) == invalid
    assert aws.get("/_emulator/refusals") == {"kms:CreateKey": 1, "kms:PutKeyPolicy": 1}
    time.sleep(WINDOW / 1000 * SCALE)
    kms.put_key_policy(KeyId=key, PolicyName="default", Policy=policy)
    kms.create_key(Policy=policy)
    assert json.loads(kms.get_key_policy(KeyId=key, PolicyName="default")["Policy"]) == json.loads(policy)


def test_calls_take_their_latency(aws):
    aws.post("/_emulator/config", {"timeScale": 0.1})
    ec2 = aws.client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    started = time.monotonic()
    ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)
    assert time.monotonic() - started >= 1.9 * 0.1  # CreateSecurityGroup's 1.9 s


def test_profile_off_changes_nothing(emulator):
    assert emulator.get("/_emulator/config")["profile"] == "off"
    ddb, sqs, iam, aws_lambda, cc = (emulator.client(s) for s in ("dynamodb", "sqs", "iam", "lambda", "cloudcontrol"))
    assert ddb.create_table(**table_spec("t"))["TableDescription"]["TableStatus"] == "ACTIVE"
    ddb.delete_table(TableName="t")
    with pytest.raises(ddb.exceptions.ResourceNotFoundException):
        ddb.describe_table(TableName="t")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    sqs.delete_queue(QueueUrl=url)
    sqs.create_queue(QueueName="q")
    iam.create_user(UserName="u")
    iam.create_access_key(UserName="u")
    role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
    created = aws_lambda.create_function(FunctionName="fn", Runtime="python3.12", Role=role, Handler="index.handler",
                                         Code={"ZipFile": b"PK\x05\x06" + b"\x00" * 18})
    assert created["State"] == "Active"
    token = cc.create_resource(TypeName="AWS::S3::Bucket", DesiredState=json.dumps({"BucketName": "timing-bucket"}))["ProgressEvent"]["RequestToken"]
    assert cc.get_resource_request_status(RequestToken=token)["ProgressEvent"]["OperationStatus"] == "SUCCESS"
    # Policies naming a role (or user) made a moment ago, and a state machine using it.
    sfn, sns, s3, kms = (emulator.client(s) for s in ("stepfunctions", "sns", "s3", "kms"))
    user = iam.get_user(UserName="u")["User"]["Arn"]
    sfn.create_state_machine(name="m", definition=PASS, roleArn=role)
    sqs.create_queue(QueueName="q2", Attributes={"Policy": policy_naming(role, "sqs:ReceiveMessage")})
    sns.create_topic(Name="t", Attributes={"Policy": policy_naming(user, "sns:Publish")})
    s3.create_bucket(Bucket="policy-bucket")
    s3.put_bucket_policy(Bucket="policy-bucket", Policy=policy_naming(user, "s3:GetObject"))
    kms.create_key(Policy=policy_naming(role, "kms:Decrypt"))
    assert emulator.get("/_emulator/refusals") == {}


def test_s3_requests_take_the_data_planes_latency_and_a_bucket_create_its_own():
    import timing
    s3 = lambda method, path, query="": timing._s3_action(  # noqa: E731
        {"method": method, "path": path, "query": query})
    assert s3("PUT", "/bucket") == "CreateBucket"
    assert s3("DELETE", "/bucket/") == "DeleteBucket"
    assert s3("PUT", "/bucket/cdkd/Stack/state.json") == "Object"
    assert s3("GET", "/bucket", "versions&prefix=cdkd/") == "Object"
    assert s3("POST", "/bucket", "delete") == "Object"
    assert s3("PUT", "/bucket", "policy") == "-"
    actions = timing.TABLE["call_latency"]["actions"]
    assert actions["s3:Object"]["ms"] < timing.TABLE["call_latency"]["default_ms"]
    assert actions["s3:CreateBucket"]["ms"] >= 1000
