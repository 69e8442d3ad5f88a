"""cdkd local's Python bootstrap: one invocation of a Lambda handler, as the Lambda runtime runs it.

Loads `_HANDLER` (`dir/module.function`) from LAMBDA_TASK_ROOT, calls it with (event, context) and
writes {"error": bool, "payload": "<JSON text>"} to the result file cdkd gave it. The root logger
writes Lambda's "[LEVEL]\\t<time>\\t<request id>\\t<message>" lines; the handler's timeout is
enforced here.
"""

import importlib
import json
import logging
import os
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or ".") == HERE:
    sys.path.pop(0)  # the bootstrap's folder is not the handler's

RESULT_FILE = os.environ.pop("_CDKD_LOCAL_RESULT")
EVENT_FILE = os.environ.pop("_CDKD_LOCAL_EVENT")
REQUEST_ID = os.environ.pop("_CDKD_LOCAL_REQUEST_ID")
INVOKED_ARN = os.environ.pop("_CDKD_LOCAL_ARN", "")
TIMEOUT_MS = int(os.environ.pop("_CDKD_LOCAL_TIMEOUT_MS", "3000"))
_written = threading.Lock()


def finish(payload, error=False):
    if not _written.acquire(blocking=False):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    with open(RESULT_FILE, "w") as handle:
        json.dump({"error": error, "payload": payload}, handle)
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
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


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


def timed_out():
    seconds = f"{TIMEOUT_MS / 1000:.2f}"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    message = f"{stamp} {REQUEST_ID} Task timed out after {seconds} seconds"
    print(message, flush=True)
    finish(json.dumps({"errorType": "Sandbox.Timedout", "errorMessage": message}), error=True)


def main():
    configure_logging()
    task_root = os.environ.get("LAMBDA_TASK_ROOT", ".")
    if task_root not in sys.path:
        sys.path.insert(0, task_root)
    handler = load_handler(os.environ.get("_HANDLER", ""))
    with open(EVENT_FILE) as handle:
        event = json.load(handle)
    timer = threading.Timer(TIMEOUT_MS / 1000, timed_out)
    timer.daemon = True
    timer.start()
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
