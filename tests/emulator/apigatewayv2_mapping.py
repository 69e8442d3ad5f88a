"""HTTP API integrations' parameter mapping as AWS applies an update: merged, not replaced.

UpdateIntegration merges the `RequestParameters` and `ResponseParameters` it is sent into the
integration's: a request parameter is removed by an empty value, a status code's response
mapping is replaced by the one sent (removed by an empty map), and what the update does not
name stays (moto replaced both maps, so
a client that forgot to remove a dropped parameter passed here and kept it on AWS). The same
removals in a create are ignored, as moto already does for request parameters.
"""

from moto.apigatewayv2 import models as _models

_moto_update = _models.Integration.update


def _merged_request(current, sent):
    merged = dict(current or {})
    for key, value in sent.items():
        if value:
            merged[key] = value
        else:
            merged.pop(key, None)
    return merged


def _merged_response(current, sent):
    merged = {status: dict(pairs) for status, pairs in (current or {}).items()}
    for status, pairs in sent.items():
        if not pairs:
            merged.pop(status, None)
            continue
        merged[status] = dict(pairs)
    return merged


def _update(self, *args, **kwargs):
    names = _moto_update.__code__.co_varnames[1:_moto_update.__code__.co_argcount]
    given = dict(zip(names, args))
    given.update(kwargs)
    request = given.get("request_parameters")
    response = given.get("response_parameters")
    given["request_parameters"] = None
    given["response_parameters"] = None
    _moto_update(self, **given)
    if request is not None:
        self.request_parameters = _merged_request(self.request_parameters, request)
    if response is not None:
        self.response_parameters = _merged_response(self.response_parameters, response)


_models.Integration.update = _update
