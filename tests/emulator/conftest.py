"""Starts one private emulator for the emulator's own tests and hands out boto3 clients."""

import json
import os
import subprocess
import sys
import time
import urllib.request

import boto3
import pytest
from botocore.config import Config

HERE = os.path.dirname(os.path.abspath(__file__))


def _post(endpoint, path, body):
    request = urllib.request.Request(
        endpoint + path, data=json.dumps(body).encode(), method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request) as answer:
        return json.loads(answer.read() or b"{}")


@pytest.fixture(scope="session")
def endpoint(tmp_path_factory):
    endpoint_file = tmp_path_factory.mktemp("emulator") / "endpoint"
    process = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "server.py"), "--port", "0", "--endpoint-file", str(endpoint_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    deadline = time.time() + 30
    while not endpoint_file.exists():
        if process.poll() is not None:
            raise RuntimeError("emulator died: " + process.stderr.read().decode())
        if time.time() > deadline:
            process.kill()
            raise RuntimeError("emulator did not start within 30 s")
        time.sleep(0.05)
    url = endpoint_file.read_text().strip()
    yield url
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture()
def emulator(endpoint):
    """A clean emulator: moto and Cloud Control reset, no faults, no latency."""
    _post(endpoint, "/moto-api/reset", {})
    _post(endpoint, "/_emulator/config", {"latencyMs": 0, "faultRate": 0, "ccOperationMs": 0,
                                          "customResourceTimeoutSeconds": 60})
    _post(endpoint, "/_emulator/faults", {"rules": []})
    return Emulator(endpoint)


class Emulator:
    def __init__(self, endpoint):
        self.endpoint = endpoint

    def client(self, service, region="us-east-1", retries=1):
        return boto3.client(
            service, endpoint_url=self.endpoint, region_name=region,
            aws_access_key_id="testing", aws_secret_access_key="testing",
            config=Config(retries={"max_attempts": retries, "mode": "standard"},
                          s3={"addressing_style": "path"}),
        )

    def post(self, path, body):
        return _post(self.endpoint, path, body)

    def get(self, path):
        with urllib.request.urlopen(self.endpoint + path) as answer:
            return json.loads(answer.read())

    def delete(self, path):
        request = urllib.request.Request(self.endpoint + path, method="DELETE")
        with urllib.request.urlopen(request) as answer:
            return json.loads(answer.read() or b"{}")
