"""The VPC crash soak: does a kill -9 in a VPC deploy, destroy or rollback ever leave a duplicate,
a leak or a loss?

Run by tests/soak/soak.sh (`--app vpc` or `--app all`), which starts a private emulator, exports
the AWS_* variables and bootstraps the state bucket (with the asset bucket: the default-SG custom
resource's handler is an asset). This driver deploys tests/fixtures/cdk.out/vpcsoak
(`VpcSoakStack`: a VPC with public, private and isolated subnets, an internet gateway, a NAT
gateway and its EIP, route tables and routes, security groups with ingress rules referencing
each other, a launch template, a Lambda function in the private subnets and the default-SG
custom resource) in three kinds of rounds:

  kill-deploy    SIGKILL at a random moment of a deploy, `force-unlock`, deploy again: must
                 succeed;
  kill-destroy   deploy, SIGKILL at a random moment of the destroy, `force-unlock`, destroy
                 again: must succeed;
  kill-rollback  a deploy whose late create (the VPC function's CreateFunction) the emulator
                 refuses, so it rolls back; SIGKILL at a random moment of that rollback,
                 `force-unlock`, `cdkd rollback` (must succeed), then deploy (must succeed).

After each step it lists every EC2 resource the emulator holds (VPCs, subnets, route tables,
their associations and routes, internet gateways and attachments, NAT gateways, EIPs, security
groups and their rules, network ACLs, launch templates, network interfaces) and the app's Lambda
functions and IAM roles, and compares them with the stack's state record: every live resource
is attributed to a logical id (by its `Name` tag, CIDR, description, the ids of what it joins,
or the `{stack}-{logicalId}-…` name cdkd generates); what AWS makes by itself (a VPC's main
route table, default security group and ACL, a NAT gateway's network interface, a security
group's inline rules) belongs to its parent. After the destroy nothing beyond the emulator's
own baseline (the default VPC and its parts) may be left.
"""

import json
import os
import random
import signal
import sys
import time
from collections import defaultdict
from dataclasses import dataclass

import boto3
from botocore.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import REGION, Cdkd, Control, Round, arguments, log, run_soak, tail  # noqa: E402

STACK = "VpcSoakStack"
KINDS = ("kill-deploy", "kill-destroy", "kill-rollback")
# The late create the kill-rollback rounds make fail: the VPC function (it waits for the
# private subnets, their NAT routes and its security group).
FAILING_FUNCTION = "VpcFunctionAB45DF74"

VPC, SUBNET, TABLE, ASSOC = "AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::RouteTable", "AWS::EC2::SubnetRouteTableAssociation"
ROUTE, IGW, ATTACH, NAT = "AWS::EC2::Route", "AWS::EC2::InternetGateway", "AWS::EC2::VPCGatewayAttachment", "AWS::EC2::NatGateway"
EIP, GROUP, INGRESS, TEMPLATE = "AWS::EC2::EIP", "AWS::EC2::SecurityGroup", "AWS::EC2::SecurityGroupIngress", "AWS::EC2::LaunchTemplate"
FUNCTION, ROLE = "AWS::Lambda::Function", "AWS::IAM::Role"
# What AWS makes with its parent; never in the template, never recorded.
MAIN_TABLE, DEFAULT_GROUP, ACL, ENI, RULE = "main-route-table", "default-group", "network-acl", "eni", "group-rule"
SHORT = {VPC: "vpc", SUBNET: "subnet", TABLE: "route-table", ASSOC: "association", ROUTE: "route", IGW: "igw",
         ATTACH: "attachment", NAT: "nat", EIP: "eip", GROUP: "group", INGRESS: "ingress", TEMPLATE: "launch-template",
         FUNCTION: "function", ROLE: "role", MAIN_TABLE: MAIN_TABLE, DEFAULT_GROUP: DEFAULT_GROUP, ACL: ACL,
         ENI: ENI, RULE: RULE}
CHECKED = {VPC, SUBNET, TABLE, ASSOC, ROUTE, IGW, ATTACH, NAT, EIP, GROUP, INGRESS, TEMPLATE, FUNCTION, ROLE}


def normalize(kind, physical_id):
    """The part of a recorded physical id the listings below produce."""
    if kind in (FUNCTION, ROLE):
        return physical_id.rsplit("/", 1)[-1].rsplit(":", 1)[-1] if physical_id.startswith("arn:") else physical_id
    return physical_id


def name_tag(tags):
    return next((t["Value"] for t in tags or [] if t["Key"] == "Name"), None)


@dataclass(frozen=True)
class Item:
    """One live resource: its type, the id the state record would hold, the logical id it belongs
    to (None: cannot tell), and for what AWS makes by itself, the (type, id) of its parent."""
    kind: str
    ident: str
    lid: str | None = None
    parent: tuple | None = None


class VpcTemplate:
    """The app's resources, and the marks that tell each live resource's logical id."""

    def __init__(self, path):
        with open(path) as handle:
            self.resources = json.load(handle)["Resources"]
        self.by_mark = {}  # (type, mark) -> logical id
        for lid, resource in self.resources.items():
            kind, props = resource["Type"], resource.get("Properties", {})
            for mark in self.marks(lid, kind, props):
                self.by_mark[(kind, mark)] = lid

    def marks(self, lid, kind, props):
        name = name_tag(props.get("Tags")) if isinstance(props.get("Tags"), list) else None
        if kind in (VPC, TABLE, IGW, NAT, EIP) and name:
            yield name
        if kind == SUBNET:
            yield props["CidrBlock"]
        if kind == GROUP:
            yield props["GroupDescription"]
        if kind == ASSOC:
            yield (props["RouteTableId"]["Ref"], props["SubnetId"]["Ref"])
        if kind == ROUTE:
            yield (props["RouteTableId"]["Ref"], props["DestinationCidrBlock"])
        if kind == INGRESS:
            yield (props["GroupId"]["Fn::GetAtt"][0], props["IpProtocol"], props["FromPort"], props["ToPort"])
        if kind in (TEMPLATE, ATTACH):
            yield "the one"
        if kind in (FUNCTION, ROLE):
            yield f"{STACK}-{lid}"

    def of(self, kind, mark):
        return self.by_mark.get((kind, mark))

    def by_generated_name(self, kind, name):
        """`{stack}-{logicalId}-{suffix}`, the logical id possibly cut to fit the name's limit."""
        if not name.startswith(f"{STACK}-"):
            return None
        middle = name[len(STACK) + 1:].rsplit("-", 1)[0]
        found = [lid for lid, r in self.resources.items() if r["Type"] == kind and middle and lid.startswith(middle)]
        return found[0] if len(found) == 1 else None

    def ingress_rules(self, group_lid):
        """The inline (protocol, from, to) ingress and egress rules of a template group."""
        props = self.resources[group_lid].get("Properties", {})
        rules = set()
        for direction, key in (("ingress", "SecurityGroupIngress"), ("egress", "SecurityGroupEgress")):
            for rule in props.get(key, []):
                rules.add((direction, str(rule["IpProtocol"]), rule.get("FromPort", -1), rule.get("ToPort", -1)))
        return rules


class Network:
    """The emulator's EC2 resources, Lambda functions and IAM roles, through the services' APIs."""

    def __init__(self, endpoint, template):
        config = Config(retries={"max_attempts": 8, "mode": "standard"}, s3={"addressing_style": "path"},
                        connect_timeout=10, read_timeout=30)
        kw = dict(endpoint_url=endpoint, region_name=REGION, config=config)
        self.ec2 = boto3.client("ec2", **kw)
        self.awslambda = boto3.client("lambda", **kw)
        self.iam = boto3.client("iam", **kw)
        self.s3 = boto3.client("s3", **kw)
        self.template = template

    # -- listing ----------------------------------------------------------------------------

    def items(self):
        """Every live resource, attributed as far as its marks allow."""
        ec2, t = self.ec2, self.template
        items = []
        lids = {}  # EC2 id -> logical id, for what joins two resources
        for vpc in ec2.describe_vpcs()["Vpcs"]:
            lid = t.of(VPC, name_tag(vpc.get("Tags")))
            lids[vpc["VpcId"]] = lid
            items.append(Item(VPC, vpc["VpcId"], lid))
        for subnet in ec2.describe_subnets()["Subnets"]:
            lid = t.of(SUBNET, subnet["CidrBlock"]) if lids.get(subnet["VpcId"]) else None
            lids[subnet["SubnetId"]] = lid
            items.append(Item(SUBNET, subnet["SubnetId"], lid, (VPC, subnet["VpcId"])))
        tables = ec2.describe_route_tables()["RouteTables"]
        for table in tables:
            ident = table["RouteTableId"]
            if any(a.get("Main") for a in table.get("Associations", [])):
                items.append(Item(MAIN_TABLE, ident, None, (VPC, table["VpcId"])))
                continue
            lid = t.of(TABLE, name_tag(table.get("Tags")))
            lids[ident] = lid
            items.append(Item(TABLE, ident, lid, (VPC, table["VpcId"])))
        for table in tables:
            ident = table["RouteTableId"]
            for assoc in table.get("Associations", []):
                if assoc.get("Main") or not assoc.get("SubnetId"):
                    continue
                mark = (lids.get(ident), lids.get(assoc["SubnetId"]))
                items.append(Item(ASSOC, assoc["RouteTableAssociationId"], t.of(ASSOC, mark), (TABLE, ident)))
            for route in table.get("Routes", []):
                if route.get("GatewayId") == "local" or route.get("Origin") == "CreateRouteTable":
                    continue
                dest = route.get("DestinationCidrBlock") or route.get("DestinationIpv6CidrBlock")
                items.append(Item(ROUTE, f"{ident}|{dest}", t.of(ROUTE, (lids.get(ident), dest)), (TABLE, ident)))
        for gateway in ec2.describe_internet_gateways()["InternetGateways"]:
            ident = gateway["InternetGatewayId"]
            items.append(Item(IGW, ident, t.of(IGW, name_tag(gateway.get("Tags")))))
            for attachment in gateway.get("Attachments", []):
                lid = t.of(ATTACH, "the one") if lids.get(attachment["VpcId"]) else None
                items.append(Item(ATTACH, f"{ident}|{attachment['VpcId']}", lid, (IGW, ident)))
        nat_enis = {}
        for nat in ec2.describe_nat_gateways()["NatGateways"]:
            if nat["State"] in ("deleted",):
                continue
            items.append(Item(NAT, nat["NatGatewayId"], t.of(NAT, name_tag(nat.get("Tags")))))
            for address in nat.get("NatGatewayAddresses", []):
                if address.get("NetworkInterfaceId"):
                    nat_enis[address["NetworkInterfaceId"]] = nat["NatGatewayId"]
        for address in ec2.describe_addresses()["Addresses"]:
            ident = f"{address['PublicIp']}|{address['AllocationId']}"
            items.append(Item(EIP, ident, t.of(EIP, name_tag(address.get("Tags")))))
        items += self.groups(lids)
        for acl in ec2.describe_network_acls()["NetworkAcls"]:
            items.append(Item(ACL, acl["NetworkAclId"], None, (VPC, acl["VpcId"])))
        for eni in ec2.describe_network_interfaces()["NetworkInterfaces"]:
            ident = eni["NetworkInterfaceId"]
            parent = (NAT, nat_enis[ident]) if ident in nat_enis else (SUBNET, eni.get("SubnetId"))
            items.append(Item(ENI, ident, None, parent))
        for page in ec2.get_paginator("describe_launch_templates").paginate():
            for template in page["LaunchTemplates"]:
                items.append(Item(TEMPLATE, template["LaunchTemplateId"], t.of(TEMPLATE, "the one")))
        items += self.functions_and_roles()
        return items

    def groups(self, lids):
        """Security groups, and each rule: a standalone ingress's, an inline one (its group's),
        or one nothing in the template asks for (None)."""
        t = self.template
        items = []
        groups = self.ec2.describe_security_groups()["SecurityGroups"]
        for group in groups:
            ident = group["GroupId"]
            if group["GroupName"] == "default":
                items.append(Item(DEFAULT_GROUP, ident, None, (VPC, group["VpcId"])))
                lids[ident] = None
                continue
            lid = t.of(GROUP, group["Description"]) if lids.get(group.get("VpcId")) else None
            lids[ident] = lid
            items.append(Item(GROUP, ident, lid))
        for group in groups:
            ident, lid = group["GroupId"], lids.get(group["GroupId"])
            inline = t.ingress_rules(lid) if lid else set()
            for direction, key in (("ingress", "IpPermissions"), ("egress", "IpPermissionsEgress")):
                for perm in group.get(key, []):
                    proto, low, high = str(perm["IpProtocol"]), perm.get("FromPort", -1), perm.get("ToPort", -1)
                    sources = [p["GroupId"] for p in perm.get("UserIdGroupPairs", [])] + \
                        [r["CidrIp"] for r in perm.get("IpRanges", [])] + \
                        [r["CidrIpv6"] for r in perm.get("Ipv6Ranges", [])]
                    for source in sources:
                        rule = f"{ident}|{direction}|{proto}|{low}|{high}|{source}"
                        standalone = t.of(INGRESS, (lid, proto, low, high)) if direction == "ingress" and lid else None
                        if standalone:
                            items.append(Item(INGRESS, f"{ident}|{proto}|{low}|{high}", standalone, (GROUP, ident)))
                        elif group["GroupName"] == "default":  # the VPC's own, as its group
                            items.append(Item(RULE, rule, None, (VPC, group["VpcId"])))
                        elif (direction, proto, low, high) in inline or (direction == "egress" and proto == "-1"):
                            items.append(Item(RULE, rule, None, (GROUP, ident)))
                        else:
                            items.append(Item(RULE, rule, None, None))
        return items

    def functions_and_roles(self):
        t = self.template
        items = []
        for page in self.awslambda.get_paginator("list_functions").paginate():
            for function in page["Functions"]:
                name = function["FunctionName"]
                items.append(Item(FUNCTION, name, t.by_generated_name(FUNCTION, name)))
        for page in self.iam.get_paginator("list_roles").paginate():
            for role in page["Roles"]:
                name = role["RoleName"]
                items.append(Item(ROLE, name, t.by_generated_name(ROLE, name)))
        return items

    # -- state ------------------------------------------------------------------------------

    def state(self, bucket):
        try:
            body = self.s3.get_object(Bucket=bucket, Key=f"cdkd/{STACK}/{REGION}/state.json")["Body"].read()
        except self.s3.exceptions.NoSuchKey:
            return None
        return json.loads(body)

    def state_keys(self, bucket):
        keys = []
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"cdkd/{STACK}/"):
            keys += [item["Key"] for item in page.get("Contents", [])]
        return keys

    def locked(self, bucket):
        return f"cdkd/{STACK}/{REGION}/lock.json" in self.state_keys(bucket)

    # -- cleanup ----------------------------------------------------------------------------

    def remove(self, items):
        """Deletes what a failed round left, dependants first; returns the errors."""
        order = [FUNCTION, ROLE, TEMPLATE, NAT, ENI, EIP, ROUTE, ASSOC, ATTACH, IGW, INGRESS, RULE,
                 GROUP, TABLE, SUBNET, VPC]
        errors = []
        for attempt in range(3):
            errors = []
            for kind in order:
                for item in [i for i in items if i.kind == kind]:
                    try:
                        self.delete(item)
                    except Exception as err:  # noqa: BLE001 - a later pass may succeed
                        errors.append(f"{SHORT[kind]} {item.ident}: {err}")
            if not errors:
                break
            items = [i for i in self.items() if i in set(items)]
        return errors

    def delete(self, item):
        ec2, kind, ident = self.ec2, item.kind, item.ident
        if kind == FUNCTION:
            self.awslambda.delete_function(FunctionName=ident)
        elif kind == ROLE:
            for policy in self.iam.list_role_policies(RoleName=ident)["PolicyNames"]:
                self.iam.delete_role_policy(RoleName=ident, PolicyName=policy)
            for policy in self.iam.list_attached_role_policies(RoleName=ident)["AttachedPolicies"]:
                self.iam.detach_role_policy(RoleName=ident, PolicyArn=policy["PolicyArn"])
            self.iam.delete_role(RoleName=ident)
        elif kind == TEMPLATE:
            ec2.delete_launch_template(LaunchTemplateId=ident)
        elif kind == NAT:
            ec2.delete_nat_gateway(NatGatewayId=ident)
        elif kind == ENI:
            ec2.delete_network_interface(NetworkInterfaceId=ident)
        elif kind == EIP:
            ec2.release_address(AllocationId=ident.split("|")[1])
        elif kind == ROUTE:
            table, dest = ident.split("|")
            ec2.delete_route(RouteTableId=table, DestinationCidrBlock=dest)
        elif kind == ASSOC:
            ec2.disassociate_route_table(AssociationId=ident)
        elif kind == ATTACH:
            gateway, vpc = ident.split("|")
            ec2.detach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc)
        elif kind == IGW:
            ec2.delete_internet_gateway(InternetGatewayId=ident)
        elif kind == GROUP:
            ec2.delete_security_group(GroupId=ident)
        elif kind == TABLE:
            ec2.delete_route_table(RouteTableId=ident)
        elif kind == SUBNET:
            ec2.delete_subnet(SubnetId=ident)
        elif kind == VPC:
            ec2.delete_vpc(VpcId=ident)
        # Rules go with their groups; a VPC's own parts with the VPC.


class VpcSoak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.control = Control(args.endpoint)
        self.template = VpcTemplate(os.path.join(args.app, f"{STACK}.template.json"))
        self.net = Network(args.endpoint, self.template)
        self.cdkd = Cdkd(args.cdkd, args.app, args.bucket, args.work, STACK)
        self.baseline = set()
        self.deploy_seconds = None
        self.destroy_seconds = None
        self.rollback_seconds = None
        self.deadline = time.monotonic() + args.max_seconds

    def quiet(self):
        self.control.config(latencyMs=0, faultRate=0)

    def loud(self):
        self.control.config(latencyMs=self.args.latency_ms, faultRate=0)

    def app_items(self):
        return [i for i in self.net.items() if (i.kind, i.ident) not in self.baseline]

    # -- the checks -------------------------------------------------------------------------

    def compare(self, result):
        """Live resources against the state record: duplicates, leaked, lost."""
        state = self.net.state(self.args.bucket) or {"resources": {}}
        recorded = {}  # (type, id) -> logical id
        for lid, record in state.get("resources", {}).items():
            kind = record.get("resourceType")
            if kind in CHECKED:
                recorded[(kind, normalize(kind, record.get("physicalId", "")))] = lid
        live = self.app_items()
        live_ids = {(i.kind, i.ident) for i in live}
        copies = defaultdict(list)  # (type, logical id) -> live ids
        for item in live:
            if item.parent is not None and item.kind not in CHECKED:
                if item.parent not in recorded and item.parent not in self.baseline:
                    result.leaked += 1
                    result.details.append(f"leaked {SHORT[item.kind]} {item.ident}: its {SHORT.get(item.parent[0], item.parent[0])} "
                                          f"{item.parent[1]} is not in state")
            elif item.lid is not None:
                copies[(item.kind, item.lid)].append(item.ident)
            elif (item.kind, item.ident) not in recorded:
                result.leaked += 1
                result.details.append(f"leaked {SHORT[item.kind]} {item.ident} (no logical id)")
        for (kind, lid), idents in sorted(copies.items()):
            in_state = [i for i in idents if (kind, i) in recorded]
            if len(idents) > 1:
                result.duplicates += len(idents) - 1
                result.details.append(f"duplicate {SHORT[kind]} {lid}: {len(idents)} live ({', '.join(sorted(idents))}), "
                                      f"{len(in_state)} in state")
            if not in_state:
                result.leaked += 1
                result.details.append(f"leaked {SHORT[kind]} {lid}: {idents[0]} not in state")
        for (kind, ident), lid in sorted(recorded.items()):
            if (kind, ident) not in live_ids:
                result.lost += 1
                result.details.append(f"lost {SHORT[kind]} {lid}: state has {ident}, not live")
        if result.converged and result.deployed:
            missing = sorted(set(self.template.resources) - set(state.get("resources", {})) - {"CDKMetadata"})
            if missing:
                result.lost += len(missing)
                result.details.append(f"not in state after a successful deploy: {', '.join(missing)}")

    def check_destroyed(self, result):
        """Nothing of the app left, no state key left; removes what was, for the next round."""
        self.quiet()
        left = self.app_items()
        result.leaked_after_destroy = len(left)
        for item in left:
            result.details.append(f"left after destroy: {SHORT[item.kind]} {item.lid or '?'} {item.ident}")
        keys = self.net.state_keys(self.args.bucket)
        result.state_left = len(keys)
        if keys:
            result.details.append("state keys left after destroy: " + ", ".join(keys))
        for error in self.net.remove(left):
            result.notes.append(f"cleanup failed: {error}")
        for key in keys:
            self.net.s3.delete_object(Bucket=self.args.bucket, Key=key)

    def unlock_if_locked(self, result):
        if self.net.locked(self.args.bucket):
            result.notes.append("force-unlock")
            self.cdkd.force_unlock()

    def destroy(self, result, label="destroy"):
        self.loud()
        self.unlock_if_locked(result)
        code, seconds, path = self.cdkd.run(label, self.cdkd.destroy_argv(), self.args.step_timeout)
        if code != 0:
            result.converged = False
            result.notes.append(f"{label} exit {code}")
            result.details.append(f"{label}:\n" + tail(path, 8))
        return code, seconds

    def deploy(self, result, label):
        self.loud()
        code, seconds, path = self.cdkd.run(label, self.cdkd.deploy_argv(), self.args.step_timeout)
        result.converged = code == 0
        result.deployed = True
        if code != 0:
            result.notes.append(f"{label} exit {code}")
            result.details.append(f"{label}:\n" + tail(path, 8))
        return code, seconds

    def report(self, result):
        status = "FAIL" if result.failed else "ok"
        log(f"  {result.kind} #{result.number}: {status}: converged {result.converged}, "
            f"duplicates {result.duplicates}, leaked {result.leaked}, lost {result.lost}, "
            f"leaked after destroy {result.leaked_after_destroy}, state keys left {result.state_left}"
            + (f" ({'; '.join(result.notes)})" if result.notes else ""))
        for line in result.details[: self.args.detail_lines]:
            log("    " + line)
        if len(result.details) > self.args.detail_lines:
            log(f"    … {len(result.details) - self.args.detail_lines} more")
        return result

    def checked_deploy(self, result, label):
        """Deploy, then compare the live resources with the record."""
        code, seconds = self.deploy(result, label)
        self.quiet()
        self.compare(result)
        return code, seconds

    def killed(self, result, label, argv, delay):
        self.loud()
        code, hit, _ = self.cdkd.disrupt(label, argv, delay, [(0.0, signal.SIGKILL)], self.args.step_timeout)
        result.notes.append(f"killed at {delay:.2f} s, exit {code}" + ("" if hit else " (had already ended)"))

    def window(self, seconds):
        low, high = self.args.window
        return self.rng.uniform(low, high) * seconds

    # -- the kinds --------------------------------------------------------------------------

    def baseline_round(self):
        """A plain deploy and destroy: their durations set the kill windows, and both checks must
        find nothing where there is nothing to find."""
        result = Round("baseline", 1)
        code, self.deploy_seconds = self.checked_deploy(result, "baseline-deploy")
        code, self.destroy_seconds = self.destroy(result, "baseline-destroy")
        result.notes.append(f"deploy {self.deploy_seconds:.1f} s, destroy {self.destroy_seconds:.1f} s")
        self.check_destroyed(result)
        if "kill-rollback" in self.args.kinds:
            self.measure_rollback(result)
        return self.report(result)

    def kill_deploy_round(self, number):
        result = Round("kill-deploy", number)
        self.killed(result, "kill-deploy", self.cdkd.deploy_argv(), self.window(self.deploy_seconds))
        self.unlock_if_locked(result)
        self.checked_deploy(result, "redeploy")
        self.destroy(result)
        self.check_destroyed(result)
        return self.report(result)

    def kill_destroy_round(self, number):
        result = Round("kill-destroy", number)
        self.checked_deploy(result, "deploy")
        deployed = result.converged
        self.killed(result, "kill-destroy", self.cdkd.destroy_argv(), self.window(self.destroy_seconds))
        self.unlock_if_locked(result)
        result.deployed = False
        code, _ = self.destroy(result, "destroy-again")
        result.converged = deployed and code == 0
        self.check_destroyed(result)
        return self.report(result)

    def refuse_function(self):
        """The emulator refuses the VPC function's create (a permanent error), once armed."""
        self.control.call("POST", "/_emulator/faults", {"rules": [{
            "service": "lambda", "method": "POST", "pathContains": "/functions", "bodyContains": FAILING_FUNCTION,
            "status": 400, "code": "InvalidParameterValueException",
            "message": "injected by the soak: the VPC function is refused"}]})

    def refused(self):
        return sum(rule["hits"] for rule in self.control.call("GET", "/_emulator/faults")["rules"]) > 0

    def measure_rollback(self, result):
        """One deploy whose VPC function is refused: how long its rollback takes, from the
        refusal to the exit. Then destroys what it left."""
        self.refuse_function()
        self.loud()
        started = time.monotonic()
        code, ready_at, _, path = self.cdkd.kill_when("measure-rollback", self.cdkd.deploy_argv(), self.refused,
                                                      self.args.step_timeout, self.args.step_timeout)
        seconds = time.monotonic() - started
        self.control.clear_faults()
        if code == 0 or ready_at is None:
            result.converged = False
            result.notes.append(f"the failing deploy: exit {code}, refused {ready_at is not None}")
            result.details.append("failing deploy:\n" + tail(path, 8))
            self.rollback_seconds = 1.0
        else:
            self.rollback_seconds = max(0.5, seconds - ready_at)
            result.notes.append(f"refused at {ready_at:.1f} s, rolled back in {self.rollback_seconds:.1f} s")
        result.deployed = False  # the record is the rollback's: nothing of the template
        self.quiet()
        self.compare(result)
        self.destroy(result, "measure-destroy")
        self.check_destroyed(result)

    def kill_rollback_round(self, number):
        result = Round("kill-rollback", number)
        self.refuse_function()
        delay = self.window(self.rollback_seconds)
        self.loud()
        code, ready_at, hit, path = self.cdkd.kill_when("kill-rollback", self.cdkd.deploy_argv(), self.refused,
                                                        delay, self.args.step_timeout)
        self.control.clear_faults()
        result.notes.append(f"refused at {ready_at if ready_at is None else round(ready_at, 1)} s, killed "
                            f"{delay:.2f} s into the rollback, exit {code}" + ("" if hit else " (had already ended)"))
        if ready_at is None:
            result.details.append("kill-rollback deploy never reached the refused create:\n" + tail(path, 8))
        self.unlock_if_locked(result)
        self.loud()
        code, _, path = self.cdkd.run("rollback", self.cdkd.argv("rollback", STACK), self.args.step_timeout)
        rolled_back = code == 0
        result.notes.append(f"rollback exit {code}")
        if not rolled_back:
            result.details.append("rollback:\n" + tail(path, 8))
        self.quiet()
        self.compare(result)
        self.checked_deploy(result, "redeploy")
        result.converged = result.converged and rolled_back and ready_at is not None
        self.destroy(result)
        self.check_destroyed(result)
        return self.report(result)

    # -- the run ----------------------------------------------------------------------------

    def run(self):
        self.quiet()
        self.control.clear_faults()
        self.baseline = {(i.kind, i.ident) for i in self.net.items()}
        log(f"vpc soak: {len(self.template.resources)} resources, {self.args.rounds} rounds per kind, "
            f"seed {self.args.seed}, logs in {self.args.work}")
        results = [self.baseline_round()]
        plan = [(kind, n) for n in range(1, self.args.rounds + 1) for kind in KINDS if kind in self.args.kinds]
        skipped = 0
        runners = {"kill-deploy": self.kill_deploy_round, "kill-destroy": self.kill_destroy_round,
                   "kill-rollback": self.kill_rollback_round}
        for kind, number in plan:
            if time.monotonic() > self.deadline:
                skipped += 1
                continue
            results.append(runners[kind](number))
        return results, skipped


def main():
    args = arguments(__doc__.splitlines()[0], KINDS)
    return run_soak(VpcSoak(args), args, ("baseline",) + KINDS)


if __name__ == "__main__":
    sys.exit(main())
