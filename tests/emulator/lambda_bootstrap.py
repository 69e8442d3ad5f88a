"""Runs one invocation of a Python Lambda handler for the emulator (lambda_runner.py).

Loads `_HANDLER` (`path/module.function`) from LAMBDA_TASK_ROOT, calls it with (event, context)
and reports on the control fd, one JSON line each: {"type":"init"} when the handler is about to
be called, then {"type":"result","payload":"<JSON text>","error":bool}. As the Lambda runtime
does, the root logger writes "[LEVEL]\\t<time>\\t<request id>\\t<message>" lines to stdout.

Also, for the handler's process only:
- connections to anything but loopback are refused (the runs must not leave the machine);
- a subprocess whose program is under /opt/ (a layer's file, e.g. BucketDeployment's
  /opt/awscli/aws) runs the layer's copy, and a script whose `#!` names Lambda's
  /var/lang/bin/python runs with this interpreter.
"""

import importlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
    sys.path.pop(0)  # the emulator's own modules are not the handler's

CONTROL_FD = int(os.environ.pop("_CDKD_EMU_CONTROL_FD"))
EVENT_FILE = os.environ.pop("_CDKD_EMU_EVENT_FILE")
REQUEST_ID = os.environ.pop("_CDKD_EMU_REQUEST_ID")
INVOKED_ARN = os.environ.pop("_CDKD_EMU_INVOKED_ARN")
TIMEOUT_MS = int(os.environ.pop("_CDKD_EMU_TIMEOUT_MS", "3000"))
OPT_DIRS = [d for d in os.environ.pop("_CDKD_EMU_OPT_DIRS", "").split(os.pathsep) if d]
os.set_inheritable(CONTROL_FD, False)

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1", "ip6-localhost", "ip6-loopback"}


def _loopback(host):
    if host is None or host == "":
        return True
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).lower().strip("[]")
    return host in LOOPBACK_NAMES or host.startswith("127.") or host.endswith(".localhost")


def _refused(host):
    return ConnectionRefusedError(
        111, f"Lambda handlers run by the cdkd emulator reach only 127.0.0.1, not {host}")


_getaddrinfo = socket.getaddrinfo
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not _loopback(host):
        raise socket.gaierror(socket.EAI_NONAME, f"{host}: the cdkd emulator's Lambda runs resolve loopback only")
    return _getaddrinfo(host, *args, **kwargs)


def _guarded_connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        raise _refused(address[0])
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        return 111
    return _connect_ex(self, address)


socket.getaddrinfo = _guarded_getaddrinfo
socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex


def _opt_program(args):
    """Maps an /opt/... program to the layer folder holding it (Lambda mounts layers on /opt)."""
    if isinstance(args, (str, bytes, os.PathLike)):
        return args
    args = list(args)
    if not args or not isinstance(args[0], str) or not args[0].startswith("/opt/"):
        return args
    relative = args[0][len("/opt/"):]
    for layer in OPT_DIRS:
        candidate = os.path.join(layer, relative)
        if os.path.exists(candidate):
            with open(candidate, "rb") as handle:
                first = handle.readline(200)
            if first.startswith(b"#!") and b"/var/lang/bin/python" in first:
                return [sys.executable, candidate] + args[1:]
            return [candidate] + args[1:]
    return args


_popen_init = subprocess.Popen.__init__


def _popen_init_with_opt(self, args, *rest, **kwargs):
    if OPT_DIRS and not kwargs.get("shell"):
        args = _opt_program(args)
    _popen_init(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = _popen_init_with_opt


def _watch_parent():
    # The emulator kills a run when it ends; should the emulator itself die, the run ends too.
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def send(message):
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(CONTROL_FD, data):]


def finish(payload, error=False):
    sys.stdout.flush()
    sys.stderr.flush()
    send({"type": "result", "payload": payload, "error": error})
    os._exit(0)


def error_payload(err, error_type=None, message=None, stack=True):
    frames = traceback.format_list(traceback.extract_tb(err.__traceback__)) if stack else []
    return {
        "errorMessage": message if message is not None else str(err),
        "errorType": error_type or type(err).__name__,
        "requestId": REQUEST_ID,
        "stackTrace": [frame.rstrip("\n") for frame in frames],
    }


def fail(payload):
    print(f"[ERROR] {payload['errorType']}: {payload['errorMessage']}", flush=True)
    finish(json.dumps(payload), error=True)


class LambdaContext:
    def __init__(self, deadline_ms):
        self._deadline_ms = deadline_ms
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION")
        self.invoked_function_arn = INVOKED_ARN
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
        self.aws_request_id = REQUEST_ID
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME")
        self.identity = None
        self.client_context = None
        self.tenant_id = None

    def get_remaining_time_in_millis(self):
        return max(int(self._deadline_ms - time.time() * 1000), 0)


class _RequestIdFilter(logging.Filter):
    def filter(self, record):
        record.aws_request_id = REQUEST_ID
        return True


def configure_logging():
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter(
        "[%(levelname)s]\t%(asctime)s.%(msecs)03dZ\t%(aws_request_id)s\t%(message)s", "%Y-%m-%dT%H:%M:%S"))
    handler.formatter.converter = time.gmtime
    handler.addFilter(_RequestIdFilter())
    logging.getLogger().addHandler(handler)


def load_handler(spec):
    module_name, dot, function_name = spec.rpartition(".")
    if not dot or not module_name or not function_name:
        fail({"errorMessage": f"Bad handler '{spec}': not enough values to unpack (expected 2, got 1)",
              "errorType": "Runtime.MalformedHandlerName", "requestId": REQUEST_ID, "stackTrace": []})
    module_name = module_name.replace("/", ".")
    try:
        module = importlib.import_module(module_name)
    except SyntaxError as err:
        fail(error_payload(err, "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {err}"))
    except ImportError as err:
        fail(error_payload(err, "Runtime.ImportModuleError", f"Unable to import module '{module_name}': {err}",
                           stack=False))
    except Exception as err:  # the module's own code raised while loading
        fail(error_payload(err))
    function = getattr(module, function_name, None)
    if function is None:
        fail({"errorMessage": f"Handler '{function_name}' missing on module '{module_name}'",
              "errorType": "Runtime.HandlerNotFound", "requestId": REQUEST_ID, "stackTrace": []})
    return function


def main():
    import threading

    threading.Thread(target=_watch_parent, daemon=True).start()
    configure_logging()
    task_root = os.environ.get("LAMBDA_TASK_ROOT", ".")
    if task_root not in sys.path:
        sys.path.insert(0, task_root)
    handler = load_handler(os.environ.get("_HANDLER", ""))
    with open(EVENT_FILE) as handle:
        event = json.load(handle)
    send({"type": "init"})
    context = LambdaContext(time.time() * 1000 + TIMEOUT_MS)
    try:
        result = handler(event, context)
    except Exception as err:
        fail(error_payload(err))
    try:
        payload = json.dumps(result)
    except (TypeError, ValueError) as err:
        fail(error_payload(err, "Runtime.MarshalError", f"Unable to marshal response: {err}", stack=False))
    finish(payload)


if __name__ == "__main__":
    main()
