"""EC2 RunInstances as AWS has it (ec2_instances.py), through the running emulator."""


def _run(ec2, **extra):
    image = ec2.describe_images(Owners=["amazon"], MaxResults=5)["Images"][0]["ImageId"]
    return ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, **extra)


def _ids(answer):
    return [i["InstanceId"] for r in answer["Reservations"] for i in r["Instances"]]


def test_a_used_client_token_answers_the_first_instance(emulator):
    ec2 = emulator.client("ec2")
    first = _run(ec2, ClientToken="tok-1")
    again = _run(ec2, ClientToken="tok-1")
    assert again["ReservationId"] == first["ReservationId"]
    assert [i["InstanceId"] for i in again["Instances"]] == [i["InstanceId"] for i in first["Instances"]]
    # Another token, and no token at all (twice), each launch their own.
    other = _run(ec2, ClientToken="tok-2")["Instances"][0]["InstanceId"]
    plain = {_run(ec2)["Instances"][0]["InstanceId"] for _ in range(2)}
    every = _ids(ec2.describe_instances())
    assert len(every) == 4 and other in every and plain <= set(every)


def test_instances_are_found_by_client_token(emulator):
    ec2 = emulator.client("ec2")
    made = _run(ec2, ClientToken="tok-3")["Instances"][0]["InstanceId"]
    _run(ec2, ClientToken="tok-4")
    found = ec2.describe_instances(Filters=[{"Name": "client-token", "Values": ["tok-3"]}])
    assert _ids(found) == [made]
    none = ec2.describe_instances(Filters=[{"Name": "client-token", "Values": ["tok-5"]}])
    assert _ids(none) == []


def test_the_shutdown_behaviour_is_changed(emulator):
    ec2 = emulator.client("ec2")
    made = _run(ec2)["Instances"][0]["InstanceId"]

    def behaviour():
        answer = ec2.describe_instance_attribute(InstanceId=made, Attribute="instanceInitiatedShutdownBehavior")
        return answer["InstanceInitiatedShutdownBehavior"]["Value"]
    assert behaviour() == "stop"
    ec2.modify_instance_attribute(InstanceId=made, InstanceInitiatedShutdownBehavior={"Value": "terminate"})
    assert behaviour() == "terminate"
    # The other attributes still go through moto's own handlers.
    ec2.modify_instance_attribute(InstanceId=made, SourceDestCheck={"Value": False})
    assert ec2.describe_instances(InstanceIds=[made])["Reservations"][0]["Instances"][0]["SourceDestCheck"] is False
