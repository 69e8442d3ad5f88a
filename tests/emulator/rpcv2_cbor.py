"""Smithy RPC v2 CBOR requests (the protocol the Rust SDK speaks to CloudWatch), answered by
moto's query-protocol handlers, which moto has and which AWS serves the same operations through.

A request `POST /service/<targetPrefix>/operation/<Operation>` with `smithy-protocol:
rpc-v2-cbor` has its CBOR body decoded with the operation's input shape and goes to moto as the
query form of the same call; moto's XML answer is parsed with the output shape and encoded as
CBOR, and an error becomes `{"__type", "message"}` with the same status. Shapes come from
botocore's service models, so every operation of a listed service is covered.
"""

import io
import re
import urllib.parse

import botocore.session
from botocore import parsers, serialize

PATH = re.compile(r"^/service/([^/]+)/operation/([^/]+)$")
# The services the Rust SDK reaches over RPC v2 CBOR and moto answers over query.
SERVICES = ("cloudwatch",)
_models = {}


def _model(target_prefix):
    if not _models:
        session = botocore.session.get_session()
        for name in SERVICES:
            model = session.get_service_model(name)
            _models[model.metadata["targetPrefix"]] = model
    return _models.get(target_prefix)


def operation_name(environ):
    """The operation of an RPC v2 CBOR request, or None."""
    if environ.get("HTTP_SMITHY_PROTOCOL") != "rpc-v2-cbor":
        return None
    match = PATH.match(environ.get("PATH_INFO", ""))
    if not match or _model(match.group(1)) is None:
        return None
    return match.group(2)


def _text(value):
    data = value.encode("utf-8")
    size = len(data)
    if size < 24:
        head = bytes([0x60 + size])
    elif size < 256:
        head = bytes([0x78, size])
    elif size < 65536:
        head = bytes([0x79]) + size.to_bytes(2, "big")
    else:
        head = bytes([0x7A]) + size.to_bytes(4, "big")
    return head + data


def answer(environ, start_response, moto):
    """Answers one RPC v2 CBOR request through `moto` (a WSGI app speaking query)."""
    prefix, name = PATH.match(environ["PATH_INFO"]).groups()
    operation = _model(prefix).operation_model(name)
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    params = {}
    if body and operation.input_shape is not None:
        parser = parsers.RpcV2CBORParser()
        params = parser._parse_shape(operation.input_shape, parser._initial_body_parse(body))
    form = serialize.QuerySerializer().serialize_to_request(params, operation)["body"]
    encoded = urllib.parse.urlencode(form).encode()
    forwarded = dict(environ)
    forwarded.update({
        "PATH_INFO": "/",
        "QUERY_STRING": "",
        "REQUEST_METHOD": "POST",
        "CONTENT_TYPE": "application/x-www-form-urlencoded; charset=utf-8",
        "CONTENT_LENGTH": str(len(encoded)),
        "wsgi.input": io.BytesIO(encoded),
    })
    forwarded.pop("HTTP_SMITHY_PROTOCOL", None)
    answered = {}
    xml = b"".join(moto(forwarded, lambda status, headers, *_: answered.update(status=status, headers=headers)))
    status = int(answered["status"].split()[0])
    parsed = parsers.QueryParser().parse({"body": xml, "headers": {}, "status_code": status},
                                         operation.output_shape)
    if status >= 300:
        error = parsed.get("Error", {})
        payload = bytes([0xA2]) + _text("__type") + _text(error.get("Code") or "InternalFailure") \
            + _text("message") + _text(error.get("Message") or "")
    elif operation.output_shape is None:
        payload = b"\xa0"
    else:
        parsed.pop("ResponseMetadata", None)
        out = bytearray()
        serialize.RpcV2CBORSerializer()._serialize_data_item(out, parsed, operation.output_shape)
        payload = bytes(out)
    headers = [(k, v) for k, v in answered["headers"] if k.lower() in ("x-amzn-requestid", "date")]
    start_response(answered["status"], headers + [
        ("Content-Type", "application/cbor"),
        ("smithy-protocol", "rpc-v2-cbor"),
        ("Content-Length", str(len(payload))),
    ])
    return [payload]
