"""Runs Lambda functions' real handler code when they are invoked.

moto without Docker runs no code: its Invoke answers a canned payload. The emulator's
`POST /2015-03-31/functions/{name}/invocations` (optional `?Qualifier=`) comes here instead, and
for a `nodejs*` or `python3*` function with a zip package:

- the function's code zip (moto keeps its bytes, inline or from S3) is extracted once per
  SHA-256 into `<repo>/.emulator/lambda/<sha256>/` (`EMU_LAMBDA_CACHE` moves it), and so is each
  of its layers (layer version ARNs resolved through moto's backend);
- a fresh process runs the handler through `lambda_bootstrap.js` (node, with `lambda_preload.js`
  required first) or `lambda_bootstrap.py` (this venv's python, boto3 available), in the task
  root, with the function's environment variables, the Lambda runtime's variables, test
  credentials, `AWS_ENDPOINT_URL` = this emulator, and the module paths a Lambda runtime has:
  layers (`nodejs/node_modules`, `python/`) and, for Node.js, the AWS SDK v3 clients installed
  from `tests/emulator/node/` (the runtime's built-in SDK);
- the bootstrap reports "initialised" and then the result on a pipe; the function's `Timeout`
  starts when the handler is called (module loading has up to 10 s of its own, as Lambda's init
  phase), and the process group is killed when it runs out;
- the answer is Lambda's: the payload; `X-Amz-Function-Error: Unhandled` with
  `{"errorType", "errorMessage", "trace"}` (Python: `stackTrace`) for a thrown error or a
  timeout; `X-Amz-Log-Result` (last 4 KB of START, output, END, REPORT, base64) for
  `X-Amz-Log-Type: Tail`; 202 at once for `X-Amz-Invocation-Type: Event` (run in the
  background); 204 without running for `DryRun`. The output also goes to CloudWatch Logs
  (`/aws/lambda/<name>`).

Other runtimes (java, dotnet, provided, go, ruby) and image packages keep moto's answer; a line
on stderr says so.

`patch_moto_sns_delivery(runner)` (called by server.py) makes SNS deliver a message published to a
topic with a `lambda` subscription as SNS does: an `Event` invocation of the endpoint function
(qualifier too) with SNS's `{"Records": [{"EventSource": "aws:sns", …, "Sns": {…}}]}` event,
started in the background, so the Publish neither waits for the handler nor fails with it.

`patch_moto_inline_code()` (called by server.py) makes CloudFormation's inline `Code.ZipFile`
source (Cloud Control and moto's CloudFormation create functions through moto's CloudFormation
model) into the package CloudFormation makes: `index.js` plus the `cfn-response` module for
Node.js runtimes (moto always wrote `index.py`), `index.py` plus `cfnresponse` for Python; an
update with inline source is packaged the same way (moto took the text for base64).
"""

import base64
import datetime
import hashlib
import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from urllib.parse import parse_qs, unquote

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CACHE = os.environ.get("EMU_LAMBDA_CACHE") or os.path.join(REPO, ".emulator", "lambda")
SDK_NODE_MODULES = os.path.join(HERE, "node", "node_modules")
NODE_BOOTSTRAP = os.path.join(HERE, "lambda_bootstrap.js")
NODE_PRELOAD = os.path.join(HERE, "lambda_preload.js")
PYTHON_BOOTSTRAP = os.path.join(HERE, "lambda_bootstrap.py")
INVOKE_PREFIX = "/2015-03-31/functions/"
INVOKE_SUFFIXES = ("/invocations", "/invocations/")
INIT_SECONDS = 10.0  # Lambda's init phase limit, not counted in the function's timeout
LOG_TAIL_BYTES = 4096
MAX_PAYLOAD = 6 * 1024 * 1024
CACHE_KEEP_SECONDS = 3 * 24 * 3600  # cache entries unused for longer are removed at start
# Variables a function's configuration cannot override (Lambda reserves them; the endpoint and
# credentials keep every call on this emulator).
RESERVED = {
    "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN", "AWS_EXECUTION_ENV", "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME", "AWS_LAMBDA_RUNTIME_API", "LAMBDA_TASK_ROOT",
    "LAMBDA_RUNTIME_DIR", "_HANDLER", "AWS_ENDPOINT_URL", "TMPDIR",
}


def log(message):
    print(f"lambda-runner: {message}", file=sys.stderr, flush=True)


def runtime_kind(fn):
    """'node', 'python', or None when the emulator does not run this function's code."""
    if getattr(fn, "package_type", "Zip") == "Image":
        return None
    runtime = fn.run_time or ""
    if runtime.startswith("nodejs"):
        return "node"
    if runtime.startswith("python3"):
        return "python"
    return None


class Outcome:
    def __init__(self, payload, function_error=None, log_text="", duration_ms=0.0, init_ms=None):
        self.payload = payload  # bytes
        self.function_error = function_error  # None or "Unhandled"
        self.log_text = log_text
        self.duration_ms = duration_ms
        self.init_ms = init_ms


class LambdaRunner:
    def __init__(self, endpoint=None):
        # Set by server.py once it listens; otherwise taken from the request (always loopback).
        self.endpoint = endpoint
        self._locks = {}
        self._locks_guard = threading.Lock()
        self._live = set()  # process groups of running handlers
        self._prune_cache()

    def kill_all(self):
        """Kills every running handler (the emulator is stopping)."""
        for pgid in list(self._live):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass

    # -- WSGI -------------------------------------------------------------------------------

    def handle(self, environ, start_response, request):
        """Answers an Invoke by running the function, or returns None to leave it to moto."""
        path = request["path"]
        if request["method"] != "POST" or not path.startswith(INVOKE_PREFIX) or not path.endswith(INVOKE_SUFFIXES):
            return None
        name = unquote(path[len(INVOKE_PREFIX):].rstrip("/")[: -len("/invocations")])
        if not name or "/" in name:
            return None
        qualifier = parse_qs(request["query"]).get("Qualifier", [None])[0]
        from moto.awslambda.exceptions import UnknownFunctionException
        from moto.awslambda.utils import get_backend
        from moto.iam.models import get_account_id_from

        account = get_account_id_from(request["access_key"])
        try:
            backend = get_backend(account, request["region"])
            fn = backend.get_function(name, qualifier)
        except UnknownFunctionException as err:
            # As AWS: 404 ResourceNotFoundException (moto's own Invoke answered 200 `{}` for a
            # function that does not exist, so a deleted handler seemed to run).
            return self._answer(start_response, "404 Not Found", {
                "Content-Type": "application/json", "x-amzn-ErrorType": "ResourceNotFoundException",
                "x-amzn-RequestId": str(uuid.uuid4())}, err.description.encode())
        except Exception:  # an unknown qualifier: moto answers its error
            return None
        kind = runtime_kind(fn)
        if kind is None:
            log(f"{fn.function_name}: runtime {fn.run_time or fn.package_type} is not run by the emulator "
                "(only nodejs* and python3* zip functions are); answering with moto's canned result")
            return None
        if not getattr(fn, "code_bytes", b""):
            log(f"{fn.function_name}: moto holds no code bytes for it; answering with moto's canned result")
            return None

        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        invocation_type = environ.get("HTTP_X_AMZ_INVOCATION_TYPE", "RequestResponse")
        request_id = str(uuid.uuid4())
        try:
            event = json.loads(body) if body.strip() else {}
        except ValueError as err:
            return self._answer(start_response, "400 Bad Request", {
                "x-amzn-ErrorType": "InvalidRequestContentException", "x-amzn-RequestId": request_id,
            }, json.dumps({"Type": "User", "message": f"Could not parse request body into json: {err}"}).encode())
        if invocation_type == "DryRun":
            return self._answer(start_response, "204 No Content", {"x-amzn-RequestId": request_id}, b"")
        invoked_arn = name if name.startswith("arn:") else fn.function_arn + (f":{qualifier}" if qualifier else "")
        endpoint = self.endpoint or f"http://127.0.0.1:{environ.get('SERVER_PORT')}"
        args = (fn, backend, kind, event, request_id, invoked_arn, endpoint)
        if invocation_type == "Event":
            self.invoke_in_background(*args)
            return self._answer(start_response, "202 Accepted", {"x-amzn-RequestId": request_id}, b"")
        outcome = self.invoke(*args)
        headers = {
            "Content-Type": "application/json",
            "x-amzn-RequestId": request_id,
            "X-Amz-Executed-Version": self._version(fn),
        }
        if outcome.function_error:
            headers["X-Amz-Function-Error"] = outcome.function_error
        if environ.get("HTTP_X_AMZ_LOG_TYPE") == "Tail":
            tail = outcome.log_text.encode("utf-8", "replace")[-LOG_TAIL_BYTES:]
            headers["X-Amz-Log-Result"] = base64.b64encode(tail).decode()
        return self._answer(start_response, "200 OK", headers, outcome.payload)

    def invoke_in_background(self, fn, backend, kind, event, request_id, invoked_arn, endpoint, source=""):
        """An `Event` invocation: runs the handler on its own thread; a failure is only logged."""
        def background():
            try:
                outcome = self.invoke(fn, backend, kind, event, request_id, invoked_arn, endpoint)
            except Exception as err:  # invoke never raises; a thread must not die silently either
                log(f"{fn.function_name}: asynchronous invocation {request_id}{source} failed: {err!r}")
                return
            if outcome.function_error:
                log(f"{fn.function_name}: asynchronous invocation {request_id}{source} failed: "
                    f"{outcome.payload[:500].decode('utf-8', 'replace')}")
        threading.Thread(target=background, name=f"lambda-{request_id}", daemon=True).start()

    # -- SNS ----------------------------------------------------------------------------------

    def deliver_sns(self, subscription, message, message_id, subject, message_attributes):
        """Delivers one SNS notification to a `lambda` subscription, as SNS does: an `Event`
        (asynchronous) invocation of the endpoint function with SNS's event. Never raises:
        what goes wrong is logged, and the Publish succeeds as it does on AWS."""
        arn = subscription.endpoint or ""
        found = self._runnable(arn, subscription.account_id, f"SNS subscription {subscription.arn}",
                               f"SNS message {message_id}")
        if found is None:
            return
        fn, backend, kind = found
        now = datetime.datetime.now(datetime.timezone.utc)
        event = {"Records": [{
            "EventSource": "aws:sns",
            "EventVersion": "1.0",
            "EventSubscriptionArn": subscription.arn,
            "Sns": {
                "Type": "Notification",
                "MessageId": message_id,
                "TopicArn": subscription.topic.arn,
                "Subject": subject,  # null when the Publish had none, as on AWS
                "Message": message,
                "Timestamp": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
                "SignatureVersion": "1",
                "Signature": "EXAMPLE",
                "SigningCertUrl": "EXAMPLE",
                "UnsubscribeUrl": "EXAMPLE",
                # moto keeps them as SNS forwards them: {"Type": "String", "Value": "…"}
                "MessageAttributes": {key: {"Type": value["Type"], "Value": value["Value"]}
                                      for key, value in (message_attributes or {}).items()},
            },
        }]}
        request_id = str(uuid.uuid4())
        self.invoke_in_background(fn, backend, kind, event, request_id, arn, self.endpoint,
                                  source=f" (SNS message {message_id})")

    def deliver_event(self, rule_arn, target, event):
        """Delivers one EventBridge event to a Lambda target, as EventBridge does: an `Event`
        (asynchronous) invocation with the target's input. Never raises."""
        arn = target.get("Arn", "")
        account = rule_arn.split(":")[4] if rule_arn.count(":") >= 5 else ""
        found = self._runnable(arn, account, f"rule {rule_arn} target {target.get('Id')}",
                               f"event {event.get('id') if isinstance(event, dict) else ''}")
        if found is None:
            return
        fn, backend, kind = found
        self.invoke_in_background(fn, backend, kind, event, str(uuid.uuid4()), arn, self.endpoint,
                                  source=f" (EventBridge rule {rule_arn})")

    def _runnable(self, arn, account, who, what):
        """The function `arn` names, its backend and runtime kind, when the emulator can run it;
        else `None`, with the reason logged."""
        parts = arn.split(":")
        if len(parts) not in (7, 8) or parts[2] != "lambda" or parts[5] != "function":
            log(f"{who}: {arn!r} is not a function ARN; {what} not delivered")
            return None
        region, account, name = parts[3], parts[4] or account, parts[6]
        qualifier = parts[7] if len(parts) == 8 else None
        from moto.awslambda.utils import get_backend

        try:
            backend = get_backend(account, region)
            fn = backend.get_function(name, qualifier)
        except Exception as err:
            log(f"{who}: function {arn} not found ({err}); {what} not delivered")
            return None
        kind = runtime_kind(fn)
        if kind is None or not getattr(fn, "code_bytes", b""):
            log(f"{fn.function_name}: runtime {fn.run_time or fn.package_type} is not run by the emulator "
                f"(only nodejs* and python3* zip functions are); {what} not delivered")
            return None
        if not self.endpoint:
            log(f"{fn.function_name}: the emulator's endpoint is unknown; {what} not delivered")
            return None
        return fn, backend, kind

    @staticmethod
    def _answer(start_response, status, headers, body):
        start_response(status, list(headers.items()) + [("Content-Length", str(len(body)))])
        return [body]

    @staticmethod
    def _version(fn):
        version = str(fn.version)
        return "$LATEST" if version in ("", "None", "$LATEST") else version

    # -- running ----------------------------------------------------------------------------

    def invoke(self, fn, backend, kind, event, request_id, invoked_arn, endpoint):
        """Runs the handler once and returns its Outcome (never raises)."""
        started = time.monotonic()
        now = datetime.datetime.now(datetime.timezone.utc)
        stream = f"{now:%Y/%m/%d}/[{self._version(fn)}]{uuid.uuid4().hex}"
        workdir = tempfile.mkdtemp(prefix="cdkd-lambda-")
        try:
            try:
                task_root = self.extract(fn.code_bytes, _digest(fn))
                layers = []
                for layer in fn.layers:
                    version = backend.layers_versions_by_arn(layer["Arn"])
                    if version is None or not getattr(version, "code_bytes", b""):
                        raise RuntimeError(f"layer {layer['Arn']} has no code in the emulator")
                    layers.append(self.extract(version.code_bytes, _digest(version)))
            except Exception as err:  # a broken zip, a missing layer
                payload = json.dumps({"errorType": "Runtime.InvalidCode",
                                      "errorMessage": f"the emulator could not unpack the function's code: {err}"})
                outcome = Outcome(payload.encode(), "Unhandled", "")
            else:
                outcome = self._run(fn, kind, event, request_id, invoked_arn, endpoint, task_root, layers,
                                    workdir, stream)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        if outcome.duration_ms == 0.0:
            outcome.duration_ms = (time.monotonic() - started) * 1000
        version = self._version(fn)
        report = (f"REPORT RequestId: {request_id}\tDuration: {outcome.duration_ms:.2f} ms\t"
                  f"Billed Duration: {int(outcome.duration_ms) + 1} ms\tMemory Size: {fn.memory_size} MB")
        if outcome.init_ms is not None:
            report += f"\tInit Duration: {outcome.init_ms:.2f} ms"
        outcome.log_text = (f"START RequestId: {request_id} Version: {version}\n{outcome.log_text}"
                            + ("" if not outcome.log_text or outcome.log_text.endswith("\n") else "\n")
                            + f"END RequestId: {request_id}\n{report}\n")
        self._save_logs(fn, stream, outcome.log_text)
        return outcome

    def _run(self, fn, kind, event, request_id, invoked_arn, endpoint, task_root, layers, workdir, stream):
        event_file = os.path.join(workdir, "event.json")
        with open(event_file, "w") as handle:
            json.dump(event, handle)
        tmp = os.path.join(workdir, "tmp")
        os.mkdir(tmp)
        timeout = float(fn.timeout or 3)
        env = self._environment(fn, kind, request_id, invoked_arn, endpoint, task_root, layers, tmp, stream,
                                event_file, timeout)
        if kind == "node":
            command = ["node", "--require", NODE_PRELOAD, NODE_BOOTSTRAP]
        else:
            command = [sys.executable, "-B", PYTHON_BOOTSTRAP]
        read_end, write_end = os.pipe()
        env["_CDKD_EMU_CONTROL_FD"] = str(write_end)
        log_path = os.path.join(workdir, "output.log")
        started = time.monotonic()
        with open(log_path, "wb") as output:
            try:
                process = subprocess.Popen(command, cwd=task_root, env=env, stdin=subprocess.DEVNULL,
                                           stdout=output, stderr=subprocess.STDOUT, pass_fds=(write_end,),
                                           start_new_session=True)
            except OSError as err:
                os.close(read_end)
                os.close(write_end)
                payload = json.dumps({"errorType": "Runtime.Unavailable",
                                      "errorMessage": f"the emulator could not start {command[0]}: {err}"})
                return Outcome(payload.encode(), "Unhandled", "")
        os.close(write_end)
        self._live.add(process.pid)
        try:
            outcome = self._wait(process, read_end, started, timeout, request_id)
        finally:
            os.close(read_end)
            self._kill(process)
            self._live.discard(process.pid)
        with open(log_path, "rb") as handle:
            outcome.log_text = handle.read().decode("utf-8", "replace")
        return outcome

    def _wait(self, process, read_end, started, timeout, request_id):
        """Reads the bootstrap's messages until the result, the process's end or the deadline."""
        buffer = b""
        init_at = None
        deadline = started + INIT_SECONDS
        looked_again = False
        while True:
            now = time.monotonic()
            if now >= deadline:
                limit = timeout if init_at is not None else INIT_SECONDS
                payload = {"errorType": "Sandbox.Timedout",
                           "errorMessage": f"RequestId: {request_id} Error: Task timed out after {limit:.2f} seconds"}
                return Outcome(json.dumps(payload).encode(), "Unhandled",
                               duration_ms=(now - (init_at or started)) * 1000, init_ms=self._ms(started, init_at))
            ready, _, _ = select.select([read_end], [], [], min(deadline - now, 0.05))
            chunk = os.read(read_end, 1 << 20) if ready else None
            if chunk:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    message = json.loads(line)
                    if message["type"] == "init":
                        init_at = time.monotonic()
                        deadline = init_at + timeout
                    elif message["type"] == "result":
                        payload = message["payload"].encode("utf-8")
                        error = "Unhandled" if message.get("error") else None
                        if len(payload) > MAX_PAYLOAD:
                            error = "Unhandled"
                            payload = json.dumps({
                                "errorType": "Function.ResponseSizeTooLarge",
                                "errorMessage": f"Response payload size ({len(payload)} bytes) exceeded maximum "
                                                f"allowed payload size ({MAX_PAYLOAD} bytes)."}).encode()
                        done = time.monotonic()
                        return Outcome(payload, error, duration_ms=(done - (init_at or started)) * 1000,
                                       init_ms=self._ms(started, init_at))
                continue
            if chunk is None and process.poll() is not None and not looked_again:
                # It may have written its result and ended between the select and the poll:
                # one more select reads what the pipe still holds.
                looked_again = True
                continue
            if chunk == b"" or (chunk is None and process.poll() is not None):
                # The process ended (or closed the pipe) without a result.
                try:
                    code = process.wait(timeout=max(deadline - time.monotonic(), 0.05))
                except subprocess.TimeoutExpired:
                    continue  # it closed the pipe but runs on: the deadline will end it
                status = f"signal: {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
                payload = {"errorType": "Runtime.ExitError",
                           "errorMessage": f"RequestId: {request_id} Error: Runtime exited with error: {status}"}
                done = time.monotonic()
                return Outcome(json.dumps(payload).encode(), "Unhandled",
                               duration_ms=(done - (init_at or started)) * 1000, init_ms=self._ms(started, init_at))

    @staticmethod
    def _ms(started, init_at):
        return None if init_at is None else (init_at - started) * 1000

    @staticmethod
    def _kill(process):
        # Lambda freezes the sandbox once the result is in: here the process (and anything it
        # started) goes. A moment first, so a bootstrap that is exiting anyway exits by itself.
        try:
            process.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log(f"process {process.pid} did not die")

    def _environment(self, fn, kind, request_id, invoked_arn, endpoint, task_root, layers, tmp, stream,
                     event_file, timeout):
        region = fn.region
        # Layers are extracted into /opt on Lambda in order, a later one overriding an earlier.
        opt = list(reversed(layers))
        env = {key: str(value) for key, value in (fn.environment_vars or {}).items()
               if key not in RESERVED and not key.startswith(("AWS_ENDPOINT_URL_", "_CDKD_EMU_"))}
        path = [os.path.join(layer, "bin") for layer in opt] + [os.path.dirname(sys.executable),
                                                                 os.environ.get("PATH", "/usr/bin:/bin")]
        env.setdefault("LANG", "en_US.UTF-8")
        env.setdefault("TZ", ":UTC")
        env.update({
            "PATH": os.pathsep.join(path),
            "HOME": tmp,
            "TMPDIR": tmp,
            "AWS_REGION": region,
            "AWS_DEFAULT_REGION": region,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{fn.run_time}",
            "AWS_LAMBDA_FUNCTION_NAME": fn.function_name,
            "AWS_LAMBDA_FUNCTION_VERSION": self._version(fn),
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_size),
            "AWS_LAMBDA_LOG_GROUP_NAME": fn.logs_group_name,
            "AWS_LAMBDA_LOG_STREAM_NAME": stream,
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "LAMBDA_TASK_ROOT": task_root,
            "LAMBDA_RUNTIME_DIR": HERE,
            "_HANDLER": fn.handler or "",
            "_CDKD_EMU_EVENT_FILE": event_file,
            "_CDKD_EMU_REQUEST_ID": request_id,
            "_CDKD_EMU_INVOKED_ARN": invoked_arn,
            "_CDKD_EMU_TIMEOUT_MS": str(int(timeout * 1000)),
        })
        if kind == "node":
            major = "".join(ch for ch in fn.run_time[len("nodejs"):].split(".")[0] if ch.isdigit())
            node_path = []
            for layer in opt:
                node_path += [os.path.join(layer, "nodejs", f"node{major}", "node_modules"),
                              os.path.join(layer, "nodejs", "node_modules")]
            node_path += [SDK_NODE_MODULES, task_root]
            env["NODE_PATH"] = os.pathsep.join(node_path)
            # The pinned SDK warns on Node.js < 22 (the runtime's SDK matches its Node.js).
            env.setdefault("AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED", "true")
        else:
            declared = fn.run_time[len("python"):]
            running = f"{sys.version_info.major}.{sys.version_info.minor}"
            python_path = [task_root]
            for layer in opt:
                for version in dict.fromkeys([declared, running]):
                    python_path.append(os.path.join(layer, "python", "lib", f"python{version}", "site-packages"))
                python_path.append(os.path.join(layer, "python"))
            env["PYTHONPATH"] = os.pathsep.join(python_path)
            env["PYTHONUNBUFFERED"] = "1"
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["_CDKD_EMU_OPT_DIRS"] = os.pathsep.join(opt)
        return env

    def _save_logs(self, fn, stream, text):
        try:
            logs = fn.logs_backend
            logs.ensure_log_group(fn.logs_group_name)
            logs.create_log_stream(fn.logs_group_name, stream)
            stamp = int(time.time() * 1000)
            events = [{"timestamp": stamp, "message": line} for line in text.splitlines() if line]
            if events:
                logs.put_log_events(fn.logs_group_name, stream, events)
        except Exception as err:  # logging must never fail an invocation
            log(f"{fn.function_name}: could not write CloudWatch Logs: {err}")

    # -- code cache -------------------------------------------------------------------------

    def extract(self, data, sha=None):
        """Extracts a zip once per SHA-256 into the cache; returns its folder."""
        sha = sha or hashlib.sha256(data).hexdigest()
        target = os.path.join(CACHE, sha)
        if os.path.isdir(target):
            self._touch(target)
            return target
        with self._lock_for(sha):
            if os.path.isdir(target):
                return target
            os.makedirs(CACHE, exist_ok=True)
            staging = tempfile.mkdtemp(prefix=f".{sha[:12]}-", dir=CACHE)
            try:
                _unzip(data, staging)
                os.chmod(staging, 0o755)
                try:
                    os.rename(staging, target)  # atomic; another emulator process may have won
                except OSError:
                    if not os.path.isdir(target):
                        raise
            finally:
                if os.path.isdir(staging):
                    shutil.rmtree(staging, ignore_errors=True)
        return target

    @staticmethod
    def _touch(path):
        try:
            os.utime(path)  # marks the entry as used, for _prune_cache
        except OSError:
            pass

    @staticmethod
    def _prune_cache():
        try:
            entries = os.listdir(CACHE)
        except OSError:
            return
        cutoff = time.time() - CACHE_KEEP_SECONDS
        for name in entries:
            path = os.path.join(CACHE, name)
            try:
                if os.path.getmtime(path) < cutoff:
                    shutil.rmtree(path, ignore_errors=True)
            except OSError:
                pass

    def _lock_for(self, key):
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())


def _digest(model):
    """moto's hex SHA-256 of a function's or layer version's code bytes (set with them), if any."""
    digest = getattr(model, "code_digest", "")
    if isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest):
        return digest
    return None


def _unzip(data, dest):
    """Extracts keeping Unix modes and symbolic links; refuses names that leave `dest`."""
    import io

    root = os.path.realpath(dest)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for info in archive.infolist():
            name = info.filename
            path = os.path.realpath(os.path.join(root, name))
            if os.path.isabs(name) or not (path == root or path.startswith(root + os.sep)):
                raise ValueError(f"zip entry {name!r} leaves the folder")
            mode = info.external_attr >> 16
            if info.is_dir():
                os.makedirs(path, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if stat.S_ISLNK(mode):
                os.symlink(archive.read(info).decode("utf-8"), path)
                continue
            with archive.open(info) as source, open(path, "wb") as target:
                shutil.copyfileobj(source, target)
            permissions = stat.S_IMODE(mode) if mode else 0o644
            os.chmod(path, permissions | 0o444)  # Lambda's files are readable whatever the zip says
    for current, dirs, _files in os.walk(root):
        for name in dirs:
            full = os.path.join(current, name)
            if not os.path.islink(full):
                os.chmod(full, 0o755)


# -- CloudFormation inline code -----------------------------------------------------------------

# What CloudFormation's `cfn-response` module does for inline Node.js code (same interface):
# PUT the response to the pre-signed ResponseURL with https, hostname and path only (the
# preload sends it to the emulator), then end the invocation.
NODE_CFN_RESPONSE = """'use strict';
exports.SUCCESS = 'SUCCESS';
exports.FAILED = 'FAILED';
exports.send = function send(event, context, responseStatus, responseData, physicalResourceId, noEcho, reason) {
  const body = JSON.stringify({
    Status: responseStatus,
    Reason: reason || 'See the details in CloudWatch Log Stream: ' + context.logStreamName,
    PhysicalResourceId: physicalResourceId || context.logStreamName,
    StackId: event.StackId,
    RequestId: event.RequestId,
    LogicalResourceId: event.LogicalResourceId,
    NoEcho: noEcho || false,
    Data: responseData,
  });
  const parsed = require('url').parse(event.ResponseURL);
  const request = require('https').request({
    hostname: parsed.hostname, port: 443, path: parsed.path, method: 'PUT',
    headers: { 'content-type': '', 'content-length': Buffer.byteLength(body) },
  }, (response) => {
    console.log('Status code: ' + response.statusCode);
    response.resume();
    response.on('end', () => context.done());
  });
  request.on('error', (error) => {
    console.log('send(..) failed executing https.request(..): ' + error);
    context.done();
  });
  request.write(body);
  request.end();
};
"""


class _InlineSource(str):
    """Inline source text carrying its function's runtime through moto's model."""

    runtime = ""


def inline_code_zip(source, runtime, python_zip=None):
    """The package CloudFormation makes of inline `Code.ZipFile` source for `runtime`."""
    import io

    if not runtime.startswith("nodejs"):
        return python_zip(str(source))
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        stamp = (2020, 1, 1, 0, 0, 0)
        archive.writestr(zipfile.ZipInfo("index.js", stamp), str(source))
        archive.writestr(zipfile.ZipInfo("node_modules/cfn-response/index.js", stamp), NODE_CFN_RESPONSE)
    return data.getvalue()


def patch_moto_inline_code():
    from moto.awslambda.models import LambdaFunction

    python_zip = LambdaFunction._create_zipfile_from_plaintext_code
    create = LambdaFunction.create_from_cloudformation_json.__func__
    update = LambdaFunction.update_from_cloudformation_json.__func__

    def plaintext_zip(code):
        return inline_code_zip(code, getattr(code, "runtime", ""), python_zip)

    def create_from_cloudformation_json(cls, resource_name, cloudformation_json, account_id, region_name, **kwargs):
        properties = dict(cloudformation_json.get("Properties") or {})
        code = properties.get("Code")
        if isinstance(code, dict):
            code = dict(code)  # moto rewrites it in place: keep the caller's properties as sent
            if isinstance(code.get("ZipFile"), str):
                source = _InlineSource(code["ZipFile"])
                source.runtime = properties.get("Runtime") or ""
                code["ZipFile"] = source
            properties["Code"] = code
        return create(cls, resource_name, {**cloudformation_json, "Properties": properties}, account_id,
                      region_name, **kwargs)

    def update_from_cloudformation_json(cls, original_resource, new_resource_name, cloudformation_json,
                                        account_id, region_name):
        properties = dict(cloudformation_json.get("Properties") or {})
        code = properties.get("Code")
        if isinstance(code, dict) and isinstance(code.get("ZipFile"), str):
            runtime = properties.get("Runtime") or original_resource.run_time or ""
            packaged = inline_code_zip(code["ZipFile"], runtime, python_zip)
            properties["Code"] = {**code, "ZipFile": base64.b64encode(packaged).decode()}
        return update(cls, original_resource, new_resource_name, {**cloudformation_json, "Properties": properties},
                      account_id, region_name)

    LambdaFunction._create_zipfile_from_plaintext_code = staticmethod(plaintext_zip)
    LambdaFunction.create_from_cloudformation_json = classmethod(create_from_cloudformation_json)
    LambdaFunction.update_from_cloudformation_json = classmethod(update_from_cloudformation_json)


# -- SNS to Lambda ------------------------------------------------------------------------------


def patch_moto_sns_delivery(runner):
    """Makes moto's SNS deliver to `lambda` subscriptions through `runner`.

    moto's `Subscription.publish` hands a `lambda` subscription's message to the Lambda
    backend's `send_sns_message`, which builds a fixed sample event (example ARNs and message
    id, test attributes) and runs it synchronously in Docker (here: an error in the log). The
    patched `publish` keeps moto's filter policy and `MessageStructure: json` handling, then
    starts an asynchronous invocation with SNS's event and returns at once. Every other protocol
    (sqs, http/https, email, sms, application) is moto's, unchanged."""
    from moto.sns.models import Subscription

    # moto's own publish, kept once: a second patch (another Emulator) only changes the runner.
    moto_publish = Subscription.__dict__.get("_moto_publish") or Subscription.publish
    Subscription._moto_publish = moto_publish

    def publish(self, message, message_id, subject=None, message_attributes=None, group_id=None,
                deduplication_id=None, message_structure=None):
        if self.protocol != "lambda":
            return moto_publish(self, message, message_id, subject=subject, message_attributes=message_attributes,
                                group_id=group_id, deduplication_id=deduplication_id,
                                message_structure=message_structure)
        if self._filter_policy_matcher is not None and not self._filter_policy_matcher.matches(
                message_attributes, message):
            return None
        if message_structure == "json":
            message = self._parse_message_structure(message, self.protocol)  # as moto: "lambda" or "default"
        try:
            runner.deliver_sns(self, message, message_id, subject, message_attributes)
        except Exception as err:  # a delivery problem never fails the Publish
            log(f"SNS subscription {self.arn}: delivery failed: {err!r}")
        return None

    Subscription.publish = publish


def patch_moto_events_delivery(runner):
    """Makes moto's EventBridge deliver to Lambda targets through `runner`.

    moto's `Rule.send_to_targets` handles log groups, archives, SQS, event buses and API
    destinations, and raises NotImplementedError for anything else, which failed the whole
    PutEvents (500). The patched one hands the other targets to moto unchanged and starts an
    asynchronous invocation for each Lambda target with the target's input: `Input` (constant
    JSON), `InputPath`, `InputTransformer`, or the event itself, as EventBridge does."""
    import copy

    from moto.events.models import Rule
    from moto.events.utils import EventTemplateParser
    from moto.utilities.arns import parse_arn

    moto_send = Rule.__dict__.get("_moto_send_to_targets") or Rule.send_to_targets
    Rule._moto_send_to_targets = moto_send

    def send_to_targets(self, original_event, transform_input=True):
        if not self.event_pattern.matches_event(original_event):
            return
        lambdas = [t for t in self.targets if parse_arn(t["Arn"]).service == "lambda"]
        others = [t for t in self.targets if parse_arn(t["Arn"]).service != "lambda"]
        if others:
            # A shallow copy: moto only reads the rule, and other requests may read it at once.
            rule = copy.copy(self)
            rule.targets = others
            moto_send(rule, original_event, transform_input)
        for target in lambdas:
            event = {k: v for k, v in original_event.items() if k != "ingestion-time"}
            try:
                if target.get("Input"):
                    event = json.loads(target["Input"])
                elif target.get("InputPath"):
                    from jsonpath_ng.ext import parse as jsonpath

                    matches = jsonpath(target["InputPath"]).find(original_event)
                    event = matches[0].value if matches else None
                elif target.get("InputTransformer"):
                    transformer = target["InputTransformer"]
                    event = EventTemplateParser.parse(
                        input_template=transformer.get("InputTemplate"),
                        input_paths_map=transformer.get("InputPathsMap", {}),
                        event=original_event,
                    )
                runner.deliver_event(self.arn, target, event)
            except Exception as err:  # a delivery problem never fails the PutEvents
                log(f"rule {self.arn} target {target.get('Id')}: delivery failed: {err!r}")

    Rule.send_to_targets = send_to_targets

