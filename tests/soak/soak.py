"""The fault and crash soak: does cdkd ever duplicate, leak or lose a resource?

Run by tests/soak/soak.sh, which starts a private emulator, exports the AWS_* variables and
bootstraps the state bucket. This driver deploys the soak app (tests/fixtures/cdk.out/soak,
about 50 queues, topics, parameters and roles, all through SDK plugins) over and over, in three kinds of rounds:

  faults     deploy with 30% of requests failing (throttling and 5xx, every service), then
             deploy again without faults: that deploy must succeed;
  kill       SIGKILL cdkd at a random moment of a deploy, `force-unlock`, deploy again;
  interrupt  two SIGINTs 20-50 ms apart at a random moment of a deploy, then (alternately) a
             deploy or a `rollback` (after `force-unlock` when the lock was left): must succeed.

After each round it compares the emulator's live SQS queues, SNS topics, SSM parameters and
IAM roles with the stack's state record (duplicates, leaked, lost), destroys the stack and
checks that none of the app's resources (and none of the stack's state keys) are left. Every
live resource is attributed to a logical id by its name (the template's, or the
CloudFormation-style `{stack}-{logicalId}-…` cdkd generates) or by the property each soak
resource has to itself (a queue's VisibilityTimeout, a topic's DisplayName, a Description).
Exit 1 when any round did not converge or any count is not zero.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections import defaultdict
from dataclasses import dataclass, field

import boto3
from botocore.config import Config

STACK = "SoakStack"
REGION = "us-east-1"
QUEUE, TOPIC, PARAM, ROLE = "AWS::SQS::Queue", "AWS::SNS::Topic", "AWS::SSM::Parameter", "AWS::IAM::Role"
TYPES = (QUEUE, TOPIC, PARAM, ROLE)
SHORT = {QUEUE: "queue", TOPIC: "topic", PARAM: "param", ROLE: "role"}
# Per type: the template's name property, and the property that tells siblings apart.
NAME_PROPERTY = {QUEUE: "QueueName", TOPIC: "TopicName", PARAM: "Name", ROLE: "RoleName"}
FINGERPRINT = {QUEUE: "VisibilityTimeout", TOPIC: "DisplayName", PARAM: "Description", ROLE: "Description"}


def log(message):
    print(message, flush=True)


# -- the emulator's control endpoints -------------------------------------------------------


class Control:
    def __init__(self, endpoint):
        self.endpoint = endpoint

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.endpoint + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read() or b"{}")

    def config(self, **values):
        return self.call("POST", "/_emulator/config", values)

    def random_fault_hits(self):
        return sum(self.call("GET", "/_emulator/faults").get("random", {}).values())

    def clear_faults(self):
        self.call("DELETE", "/_emulator/faults")


# -- cdkd ---------------------------------------------------------------------------------


class Cdkd:
    def __init__(self, binary, app, bucket, work, stack=STACK):
        self.binary, self.app, self.bucket, self.work, self.stack = binary, app, bucket, work, stack
        self.count = 0
        self.running = None

    def argv(self, *args):
        return [self.binary, "--state-bucket", self.bucket, *args]

    def deploy_argv(self):
        return self.argv("deploy", "-a", self.app, self.stack)

    def destroy_argv(self):
        return self.argv("destroy", "-a", self.app, self.stack, "-f")

    def force_unlock(self):
        return self.run("force-unlock", self.argv("force-unlock", self.stack), 60)

    def _log(self, label):
        self.count += 1
        return os.path.join(self.work, f"{self.count:03d}-{label}.log")

    def run(self, label, args, timeout):
        """Runs to the end (killed at `timeout`); returns (exit code or 'timeout', seconds, log)."""
        path = self._log(label)
        started = time.monotonic()
        with open(path, "wb") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.running = process
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                code = "timeout"
            finally:
                self.running = None
        return code, time.monotonic() - started, path

    def disrupt(self, label, args, delay, signals, timeout):
        """Starts `args`, sends `signals` [(seconds after start, signal)], waits at most `timeout`.

        Returns (exit code or 'timeout', whether it was still running at the first signal, log).
        """
        path = self._log(label)
        with open(path, "wb") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.running = process
            started = time.monotonic()
            hit = None
            try:
                for at, sig in signals:
                    time.sleep(max(0.0, started + delay + at - time.monotonic()))
                    if process.poll() is None:
                        process.send_signal(sig)
                        hit = True if hit is None else hit
                    elif hit is None:
                        hit = False
                try:
                    code = process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                    code = "timeout"
            finally:
                self.running = None
        return code, bool(hit), path

    def kill_when(self, label, args, ready, delay, timeout):
        """Starts `args`, polls `ready()` every 20 ms, SIGKILLs it `delay` seconds after that
        turns true, waits at most `timeout`. Returns (exit code or 'timeout', seconds from start
        to ready or None, whether it was still running at the kill, log)."""
        path = self._log(label)
        with open(path, "wb") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            self.running = process
            started = time.monotonic()
            ready_at, hit = None, False
            try:
                while process.poll() is None and time.monotonic() < started + timeout:
                    if ready_at is None and ready():
                        ready_at = time.monotonic() - started
                    if ready_at is not None and time.monotonic() >= started + ready_at + delay:
                        process.send_signal(signal.SIGKILL)
                        hit = True
                        break
                    time.sleep(0.02)
                try:
                    code = process.wait(timeout=max(1.0, started + timeout - time.monotonic()))
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                    code = "timeout"
            finally:
                self.running = None
        return code, ready_at, hit, path

    def stop(self):
        if self.running is not None and self.running.poll() is None:
            self.running.kill()


def tail(path, lines=4):
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join("      | " + line[:220] for line in text[-lines:])


# -- live resources and the state record ------------------------------------------------------


def normalize(resource_type, physical_id):
    """The part of a physical id the services' listings and the state record agree on."""
    if resource_type == QUEUE:
        return physical_id.rstrip("/").rsplit("/", 1)[-1]  # the queue name, whatever the host
    if resource_type == ROLE:
        return physical_id.rsplit("/", 1)[-1]  # a name, or an ARN's last part
    return physical_id


class Template:
    """The soak app's resources, and how to tell each one's live resource apart."""

    def __init__(self, path):
        with open(path) as handle:
            resources = json.load(handle)["Resources"]
        self.resources = {lid: r for lid, r in resources.items() if r["Type"] in TYPES}
        self.by_name = {}         # (type, name) -> logical id
        self.by_fingerprint = {}  # (type, value as text) -> logical id
        for lid, resource in self.resources.items():
            kind, props = resource["Type"], resource.get("Properties", {})
            name = props.get(NAME_PROPERTY[kind])
            if isinstance(name, str):
                self.by_name[(kind, name)] = lid
            value = props.get(FINGERPRINT[kind])
            if isinstance(value, (str, int)):
                self.by_fingerprint[(kind, str(value))] = lid

    def attribute(self, kind, name, fingerprint):
        """The logical id a live resource belongs to, or None."""
        lid = self.by_name.get((kind, name))
        if lid:
            return lid
        for candidate, resource in self.resources.items():  # `{stack}-{logicalId}-{suffix}`
            if resource["Type"] == kind and name.startswith(f"{STACK}-{candidate}-"):
                return candidate
        if fingerprint is not None:
            return self.by_fingerprint.get((kind, str(fingerprint)))
        return None


class Live:
    """The emulator's resources of the four types, through the services' own APIs."""

    def __init__(self, endpoint):
        config = Config(retries={"max_attempts": 8, "mode": "standard"}, s3={"addressing_style": "path"},
                        connect_timeout=10, read_timeout=30)
        kw = dict(endpoint_url=endpoint, region_name=REGION, config=config)
        self.sqs = boto3.client("sqs", **kw)
        self.sns = boto3.client("sns", **kw)
        self.ssm = boto3.client("ssm", **kw)
        self.iam = boto3.client("iam", **kw)
        self.cc = boto3.client("cloudcontrol", **kw)
        self.s3 = boto3.client("s3", **kw)

    def resources(self, template):
        """[(type, normalized id, logical id or None, raw id)]"""
        found = []
        urls = []
        token = None
        while True:
            page = self.sqs.list_queues(MaxResults=1000, **({"NextToken": token} if token else {}))
            urls += page.get("QueueUrls", [])
            token = page.get("NextToken")
            if not token:
                break
        for url in urls:
            name = normalize(QUEUE, url)
            lid = template.attribute(QUEUE, name, None)
            if lid is None:
                attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])
                lid = template.attribute(QUEUE, name, attrs["Attributes"].get("VisibilityTimeout"))
            found.append((QUEUE, name, lid, url))
        for page in self.sns.get_paginator("list_topics").paginate():
            for topic in page.get("Topics", []):
                arn = topic["TopicArn"]
                name = arn.rsplit(":", 1)[-1]
                lid = template.attribute(TOPIC, name, None)
                if lid is None:
                    attrs = self.sns.get_topic_attributes(TopicArn=arn)["Attributes"]
                    lid = template.attribute(TOPIC, name, attrs.get("DisplayName"))
                found.append((TOPIC, arn, lid, arn))
        for page in self.ssm.get_paginator("describe_parameters").paginate():
            for param in page.get("Parameters", []):
                lid = template.attribute(PARAM, param["Name"], param.get("Description"))
                found.append((PARAM, param["Name"], lid, param["Name"]))
        for page in self.iam.get_paginator("list_roles").paginate():
            for role in page.get("Roles", []):
                name = role["RoleName"]
                lid = template.attribute(ROLE, name, None)
                if lid is None:
                    description = self.iam.get_role(RoleName=name)["Role"].get("Description")
                    lid = template.attribute(ROLE, name, description)
                found.append((ROLE, name, lid, name))
        return found

    def delete(self, kind, raw):
        if kind == QUEUE:
            self.sqs.delete_queue(QueueUrl=raw)
        elif kind == TOPIC:
            self.sns.delete_topic(TopicArn=raw)
        elif kind == PARAM:
            self.ssm.delete_parameter(Name=raw)
        elif kind == ROLE:
            for page in self.iam.get_paginator("list_role_policies").paginate(RoleName=raw):
                for policy in page.get("PolicyNames", []):
                    self.iam.delete_role_policy(RoleName=raw, PolicyName=policy)
            for page in self.iam.get_paginator("list_attached_role_policies").paginate(RoleName=raw):
                for policy in page.get("AttachedPolicies", []):
                    self.iam.detach_role_policy(RoleName=raw, PolicyArn=policy["PolicyArn"])
            self.iam.delete_role(RoleName=raw)

    def state(self, bucket):
        """The stack's record, or None."""
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


# -- one round ----------------------------------------------------------------------------


@dataclass
class Round:
    kind: str
    number: int
    faults: int = 0
    converged: bool = False
    duplicates: int = 0
    leaked: int = 0
    lost: int = 0
    leaked_after_destroy: int = 0
    state_left: int = 0
    deployed: bool = False  # the round ends with a deploy (not a rollback)
    self_check_failed: bool = False
    notes: list = field(default_factory=list)
    details: list = field(default_factory=list)

    @property
    def failed(self):
        return (not self.converged or self.duplicates or self.leaked or self.lost
                or self.leaked_after_destroy or self.state_left or self.self_check_failed)


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.control = Control(args.endpoint)
        self.live = Live(args.endpoint)
        self.template = Template(os.path.join(args.app, f"{STACK}.template.json"))
        self.cdkd = Cdkd(args.cdkd, args.app, args.bucket, args.work)
        self.baseline = set()
        self.deploy_seconds = None
        self.deadline = time.monotonic() + args.max_seconds

    # The checks talk to the emulator without latency; cdkd always runs with it.
    def quiet(self):
        self.control.config(latencyMs=0, faultRate=0)

    def loud(self):
        self.control.config(latencyMs=self.args.latency_ms, faultRate=0)

    def live_app_resources(self):
        return [r for r in self.live.resources(self.template) if (r[0], r[1]) not in self.baseline]

    def compare(self, result):
        """Live resources against the state record: duplicates, leaked, lost."""
        state = self.live.state(self.args.bucket) or {"resources": {}}
        recorded = {}  # (type, id) -> logical id
        for lid, record in state.get("resources", {}).items():
            kind = record.get("resourceType")
            if kind in TYPES:
                recorded[(kind, normalize(kind, record.get("physicalId", "")))] = lid
        live = self.live_app_resources()
        live_ids = {(kind, ident) for kind, ident, _, _ in live}
        copies = defaultdict(list)  # (type, logical id) -> live ids
        for kind, ident, lid, _ in live:
            if lid is not None:
                copies[(kind, lid)].append(ident)
            elif (kind, ident) not in recorded:
                result.leaked += 1
                result.details.append(f"leaked {SHORT[kind]} {ident} (no logical id)")
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
            missing = sorted(set(self.template.resources) - set(state.get("resources", {})))
            if missing:
                result.notes.append(f"{len(missing)} template resources not in state after a successful deploy")

    def destroy_and_check(self, result):
        self.loud()
        if self.live.locked(self.args.bucket):
            result.notes.append("lock left before destroy")
            self.cdkd.run("force-unlock", self.cdkd.argv("force-unlock", STACK), 60)
        code, _, path = self.cdkd.run("destroy", self.cdkd.argv("destroy", "-a", self.args.app, STACK, "-f"),
                                      self.args.step_timeout)
        if code != 0:
            result.notes.append(f"destroy exit {code}")
            result.details.append("destroy:\n" + tail(path))
        self.quiet()
        left = self.live_app_resources()
        result.leaked_after_destroy = len(left)
        for kind, ident, lid, _ in left:
            result.details.append(f"left after destroy: {SHORT[kind]} {lid or '?'} {ident}")
        keys = self.live.state_keys(self.args.bucket)
        result.state_left = len(keys)
        if keys:
            result.details.append("state keys left after destroy: " + ", ".join(keys))
        # Start the next round from nothing.
        for kind, _, _, raw in left:
            try:
                self.live.delete(kind, raw)
            except Exception as err:  # noqa: BLE001 - report and go on
                result.notes.append(f"cleanup of {raw} failed: {err}")
        for key in keys:
            self.live.s3.delete_object(Bucket=self.args.bucket, Key=key)

    def converge(self, result, label):
        self.loud()
        code, _, path = self.cdkd.run(label, self.cdkd.deploy_argv(), self.args.step_timeout)
        result.converged = code == 0
        result.deployed = True
        if not result.converged:
            result.notes.append(f"{label} exit {code}")
            result.details.append(f"{label}:\n" + tail(path))
        return code

    def self_check(self, result):
        """Plants a duplicate, a leak and a loss, and checks that `compare` reports exactly those:
        the soak can fail whatever the binary does."""
        state = self.live.state(self.args.bucket) or {"resources": {}}
        records = state["resources"]
        queue = next((lid for lid in sorted(records) if records[lid]["resourceType"] == QUEUE
                      and "QueueName" not in self.template.resources[lid].get("Properties", {})), None)
        param = next((lid for lid in sorted(records) if records[lid]["resourceType"] == PARAM), None)
        if queue is None or param is None:
            result.self_check_failed = True
            result.notes.append("self-check: no recorded queue or parameter to plant faults beside")
            return
        duplicate = self.live.sqs.create_queue(QueueName=f"{STACK}-{queue}-SELFCHECK")["QueueUrl"]
        orphan = self.live.sns.create_topic(Name="soak-self-check-orphan")["TopicArn"]
        # Through the service's API, as someone deleting it by hand would (the parameters are
        # the ssm plugin's; the destroy's delete then finds it gone).
        self.live.ssm.delete_parameter(Name=records[param]["physicalId"])
        probe = Round("self-check", 0)
        self.compare(probe)
        self.live.sqs.delete_queue(QueueUrl=duplicate)
        self.live.sns.delete_topic(TopicArn=orphan)
        found = (probe.duplicates, probe.leaked, probe.lost)
        if found != (1, 1, 1):
            result.self_check_failed = True
            result.notes.append(f"SELF-CHECK FAILED: planted 1 duplicate, 1 leak, 1 loss; found {found}")
            result.details += probe.details
        else:
            result.notes.append("self-check: a planted duplicate, leak and loss were found")

    def finish(self, result, self_check=False):
        self.quiet()
        self.compare(result)
        if self_check:
            self.self_check(result)
        self.destroy_and_check(result)
        status = "FAIL" if result.failed else "ok"
        log(f"  {result.kind} #{result.number}: {status}: faults {result.faults}, converged {result.converged}, "
            f"duplicates {result.duplicates}, leaked {result.leaked}, lost {result.lost}, "
            f"leaked after destroy {result.leaked_after_destroy}, state keys left {result.state_left}"
            + (f" ({'; '.join(result.notes)})" if result.notes else ""))
        for line in result.details[: self.args.detail_lines]:
            log("    " + line)
        if len(result.details) > self.args.detail_lines:
            log(f"    … {len(result.details) - self.args.detail_lines} more")
        return result

    # -- the kinds --------------------------------------------------------------------------

    def baseline_round(self):
        """One plain deploy: measures a deploy's duration and proves the checks see no problem
        where there is none."""
        result = Round("baseline", 1)
        self.loud()
        code, seconds, path = self.cdkd.run("baseline-deploy", self.cdkd.deploy_argv(), self.args.step_timeout)
        result.converged = code == 0
        result.deployed = True
        self.deploy_seconds = seconds
        if code != 0:
            result.notes.append(f"deploy exit {code}")
            result.details.append("deploy:\n" + tail(path, 8))
        result.notes.append(f"deploy took {seconds:.1f} s")
        return self.finish(result, self_check=code == 0)

    def faults_round(self, number):
        result = Round("faults", number)
        self.control.clear_faults()
        self.control.config(latencyMs=self.args.latency_ms, faultRate=self.args.fault_rate,
                            fault5xxShare=self.args.fault_5xx_share,
                            faultPassThroughShare=self.args.pass_through_share,
                            faultSeed=self.rng.randrange(1, 2**31))
        code, seconds, path = self.cdkd.run("faults-deploy", self.cdkd.deploy_argv(), self.args.step_timeout)
        self.control.config(faultRate=0)
        result.faults = self.control.random_fault_hits()
        result.notes.append(f"deploy under faults exit {code} in {seconds:.0f} s")
        if code == "timeout" and self.live.locked(self.args.bucket):
            # Our own kill left the lock; that is not what this round tests.
            self.cdkd.run("force-unlock", self.cdkd.argv("force-unlock", STACK), 60)
        self.converge(result, "converge-deploy")
        return self.finish(result)

    def disrupted_deploy(self, result, signals):
        low, high = self.args.window
        delay = self.rng.uniform(low, high) * self.deploy_seconds
        code, hit, path = self.cdkd.disrupt(f"{result.kind}-deploy", self.cdkd.deploy_argv(), delay, signals,
                                            self.args.step_timeout)
        result.notes.append(f"signalled at {delay:.2f} s, exit {code}" + ("" if hit else " (had already ended)"))
        return code, hit, path

    def kill_round(self, number):
        result = Round("kill", number)
        self.loud()
        self.disrupted_deploy(result, [(0.0, signal.SIGKILL)])
        self.cdkd.run("force-unlock", self.cdkd.argv("force-unlock", STACK), 60)
        self.converge(result, "redeploy")
        return self.finish(result)

    def interrupt_round(self, number):
        result = Round("interrupt", number)
        self.loud()
        gap = self.rng.uniform(0.020, 0.050)
        self.disrupted_deploy(result, [(0.0, signal.SIGINT), (gap, signal.SIGINT)])
        if self.live.locked(self.args.bucket):
            result.notes.append("force-unlock")
            self.cdkd.run("force-unlock", self.cdkd.argv("force-unlock", STACK), 60)
        if number % 2 == 1:
            self.converge(result, "redeploy")
        else:
            code, _, path = self.cdkd.run("rollback", self.cdkd.argv("rollback", STACK), self.args.step_timeout)
            result.converged = code == 0
            result.notes.append(f"rollback exit {code}")
            if code != 0:
                result.details.append("rollback:\n" + tail(path))
        return self.finish(result)

    # -- the run ----------------------------------------------------------------------------

    def run(self):
        self.quiet()
        self.baseline = {(kind, ident) for kind, ident, _, _ in self.live.resources(self.template)}
        results = []
        log(f"soak: {len(self.template.resources)} resources, {self.args.rounds} rounds per kind, seed {self.args.seed}, "
            f"logs in {self.args.work}")
        results.append(self.baseline_round())
        plan = []
        for number in range(1, self.args.rounds + 1):
            plan += [(kind, number) for kind in ("faults", "kill", "interrupt") if kind in self.args.kinds]
        skipped = 0
        for kind, number in plan:
            if time.monotonic() > self.deadline:
                skipped += 1
                continue
            results.append({"faults": self.faults_round, "kill": self.kill_round,
                            "interrupt": self.interrupt_round}[kind](number))
        return results, skipped


def table(results, skipped, kinds=("baseline", "faults", "kill", "interrupt")):
    header = ["kind", "rounds", "faults injected", "converged", "duplicates", "leaked", "lost",
              "leaked after destroy", "state keys left"]
    rows = []
    for kind in kinds:
        mine = [r for r in results if r.kind == kind]
        if not mine:
            continue
        rows.append([kind, str(len(mine)), str(sum(r.faults for r in mine)),
                     f"{sum(r.converged for r in mine)}/{len(mine)}",
                     str(sum(r.duplicates for r in mine)), str(sum(r.leaked for r in mine)),
                     str(sum(r.lost for r in mine)), str(sum(r.leaked_after_destroy for r in mine)),
                     str(sum(r.state_left for r in mine))])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    if skipped:
        lines.append(f"{skipped} rounds not run: the time limit was reached")
    return "\n".join(lines)


def arguments(description, kinds):
    """The options every soak driver takes (soak.sh passes the same ones to each)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--cdkd", required=True)
    parser.add_argument("--app", required=True, help="the soak app's cloud assembly")
    parser.add_argument("--bucket", required=True, help="the bootstrapped state bucket")
    parser.add_argument("--work", required=True, help="a folder for cdkd's logs")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each kind")
    parser.add_argument("--kinds", type=lambda v: set(v.split(",")), default=set(kinds),
                        help=f"which kinds of rounds to run (comma-separated; default {','.join(kinds)})")
    parser.add_argument("--seed", type=int, default=None, help="random delays and fault seeds (default: random)")
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument("--fault-rate", type=float, default=0.3)
    parser.add_argument("--fault-5xx-share", type=float, default=0.5,
                        help="of the injected faults, the share that are 5xx (the rest throttle)")
    parser.add_argument("--pass-through-share", type=float, default=0.5,
                        help="of the 5xx, the share answered after the request was applied")
    parser.add_argument("--window", type=float, nargs=2, default=(0.1, 0.8),
                        help="kill/interrupt between these fractions of a plain deploy's duration")
    parser.add_argument("--step-timeout", type=float, default=150, help="seconds any one cdkd command may take")
    parser.add_argument("--max-seconds", type=float, default=1800, help="start no round after this")
    parser.add_argument("--detail-lines", type=int, default=12)
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 10**6)
    return args


def run_soak(soak, args, kinds):
    """Runs a driver's rounds, prints the table; the exit status."""
    built = os.stat(args.cdkd).st_mtime
    try:
        results, skipped = soak.run()
    finally:
        soak.cdkd.stop()
        try:
            soak.control.config(latencyMs=0, faultRate=0)
            soak.control.clear_faults()
        except Exception:  # noqa: BLE001 - the emulator may be gone
            pass
    log("")
    log(table(results, skipped, kinds))
    if os.stat(args.cdkd).st_mtime != built:
        log(f"warning: {args.cdkd} was rebuilt during the soak; later rounds ran the new binary")
    failed = [r for r in results if r.failed]
    if failed or skipped:
        log(f"\nFAIL: {len(failed)} of {len(results)} rounds failed"
            + (f", {skipped} not run" if skipped else "") + f" (seed {args.seed}; logs in {args.work})")
        return 1
    log(f"\nPASS: {len(results)} rounds (seed {args.seed})")
    return 0


KINDS = ("faults", "kill", "interrupt")


def main():
    args = arguments(__doc__.splitlines()[0], KINDS)
    return run_soak(Soak(args), args, ("baseline",) + KINDS)


if __name__ == "__main__":
    sys.exit(main())
