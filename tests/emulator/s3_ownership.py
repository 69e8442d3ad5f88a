"""S3 bucket ownership as S3 enforces it, so that cdkd's checks of a bucket's owner can be tested.

- An access key id of 12 digits is the account it names: a request signed with access key
  `111111111111` (any secret) is that account's, for every service (STS GetCallerIdentity
  answers it, an S3 bucket it creates is owned by it). moto 5.2.5 made every key it had not
  issued itself (IAM users', STS sessions') the default account 123456789012.
- `x-amz-expected-bucket-owner` (`ExpectedBucketOwner`), and `x-amz-source-expected-bucket-owner`
  for a copy's source bucket: a bucket owned by another account is answered 403 AccessDenied
  "Access Denied", for every bucket and object operation (moto ignored the headers).
- A bucket is its owner's: a request from another account is answered 403 AccessDenied (moto
  served any account), unless an Allow statement of the bucket policy without a Condition names
  the caller's account as its principal (`"*"`, `"B"`, `arn:aws:iam::B:root` or any other IAM ARN
  of account B). ACL grants are not considered; a copy's source bucket is checked as well.
- CreateBucket of a name another account owns stays moto's 409 BucketAlreadyExists (the
  owner's own: 409 BucketAlreadyOwnedByYou outside us-east-1, 200 in us-east-1, as S3 does).

Only SigV4-signed S3 requests are checked (an unsigned one names no account); the emulator's
own paths (/_emulator, /moto-api, custom resource response URLs) never reach the check.
Remaining differences are listed in docs/testing.md."""

import json
import os
import random
import re
import string
from urllib.parse import parse_qs, unquote

from moto.core.responses import BaseResponse
from moto.iam import models as iam_models

ACCOUNT_KEY = re.compile(r"\d{12}")
CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/")

# --- the caller's account ----------------------------------------------------------------------

_moto_account_of = iam_models.get_account_id_from
_moto_access_key = BaseResponse.get_access_key


def get_account_id_from(access_key):
    if access_key and ACCOUNT_KEY.fullmatch(access_key):
        return access_key
    return _moto_account_of(access_key)


def get_access_key(self):
    # moto reads only 20-character keys from the Authorization header (AKIAEXAMPLE otherwise).
    credential = CREDENTIAL.search(self.headers.get("Authorization", "") or "")
    if credential is None:
        query = (self.querystring.get("X-Amz-Credential") or [""])[0]
        credential = CREDENTIAL.search("Credential=" + query)
    if credential and ACCOUNT_KEY.fullmatch(credential.group(1)):
        return credential.group(1)
    return _moto_access_key(self)


# moto's get_current_account (and the emulator's config_apis and lambda_runner) import
# get_account_id_from from moto.iam.models when called, so they all see this one.
iam_models.get_account_id_from = get_account_id_from
BaseResponse.get_access_key = get_access_key


def caller_account(environ, request):
    """The request's account, in moto's order: MOTO_ACCOUNT_ID, x-moto-account-id, the key."""
    if "MOTO_ACCOUNT_ID" in os.environ:
        return os.environ["MOTO_ACCOUNT_ID"]
    if environ.get("HTTP_X_MOTO_ACCOUNT_ID"):
        return environ["HTTP_X_MOTO_ACCOUNT_ID"]
    return get_account_id_from(request["access_key"])


# --- buckets and their owners ------------------------------------------------------------------


class _HostOnly:
    """Enough of a request for moto's subdomain_based_buckets."""

    def __init__(self, host, path):
        self.headers = {"host": host}
        self.url = f"http://{host}{path}"


def bucket_and_key(environ):
    """The bucket (None when the request names none) and key the request addresses, as moto
    reads them: virtual-hosted (bucket.s3.amazonaws.com) or path-style."""
    from moto.s3.responses import S3Response
    from moto.s3.utils import bucket_name_from_url

    host = environ.get("HTTP_HOST", "")
    path = environ.get("PATH_INFO", "")
    if ".s3-accesspoint." in host:
        return None, ""
    probe = _HostOnly(host, path)
    if S3Response.subdomain_based_buckets(probe):
        return bucket_name_from_url(probe.url), unquote(path.lstrip("/"))
    bucket, _, key = path.lstrip("/").partition("/")
    return unquote(bucket) or None, unquote(key)


def owner_of(bucket):
    """The account owning `bucket`, None when there is no such bucket."""
    from moto.s3.models import s3_backends
    entry = s3_backends.bucket_accounts.get(bucket)
    return entry[1] if entry else None


def _policy(bucket, owner):
    from moto.s3.models import s3_backends
    entry = s3_backends.bucket_accounts.get(bucket)
    if not entry:
        return {}
    found = s3_backends[owner][entry[0]].buckets.get(bucket)
    text = getattr(found, "policy", None)
    if not text:
        return {}
    try:
        return json.loads(text.decode() if isinstance(text, bytes) else text)
    except ValueError:
        return {}


def _names_account(principal, account):
    if principal == "*":
        return True
    if isinstance(principal, dict):
        principal = principal.get("AWS", [])
    for value in principal if isinstance(principal, list) else [principal]:
        if value == "*" or value == account:
            return True
        if isinstance(value, str) and value.startswith("arn:") and value.split(":")[4:5] == [account]:
            return True
    return False


def policy_allows(bucket, owner, account):
    """True when an Allow statement (without a Condition, which the emulator does not evaluate)
    names `account` (or everyone) as its principal."""
    statements = _policy(bucket, owner).get("Statement", [])
    for statement in statements if isinstance(statements, list) else [statements]:
        if (isinstance(statement, dict) and statement.get("Effect") == "Allow"
                and "Condition" not in statement
                and _names_account(statement.get("Principal"), account)):
            return True
    return False


def _refuses(bucket, expected, caller):
    """True when S3 would answer AccessDenied for `caller` using `bucket` with `expected` owner."""
    owner = owner_of(bucket)
    if owner is None:
        return False  # no such bucket: moto answers NoSuchBucket
    if expected is not None and expected != owner:
        return True
    return caller != owner and not policy_allows(bucket, owner, caller)


def _is_create_bucket(environ, key):
    query = parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
    return environ.get("REQUEST_METHOD") == "PUT" and not key and not set(query) - {"x-id"}


def refused(environ, request):
    """True when S3 would refuse the request (an S3 one, signed) with 403 AccessDenied."""
    bucket, key = bucket_and_key(environ)
    if not bucket or _is_create_bucket(environ, key):
        return False  # ListBuckets; CreateBucket: moto answers BucketAlreadyExists / OwnedByYou
    caller = caller_account(environ, request)
    if _refuses(bucket, environ.get("HTTP_X_AMZ_EXPECTED_BUCKET_OWNER"), caller):
        return True
    source = environ.get("HTTP_X_AMZ_COPY_SOURCE")  # CopyObject, UploadPartCopy
    if source:
        source_bucket = unquote(source).lstrip("/").split("/", 1)[0]
        return _refuses(source_bucket, environ.get("HTTP_X_AMZ_SOURCE_EXPECTED_BUCKET_OWNER"), caller)
    return False


def _token(length, alphabet=string.ascii_letters + string.digits):
    return "".join(random.choice(alphabet) for _ in range(length))


def access_denied(environ, start_response):
    """S3's 403 AccessDenied, in the shape moto answers S3 errors (no body for a HEAD)."""
    request_id, host_id = _token(52), _token(56) + "="
    body = b"" if environ.get("REQUEST_METHOD") == "HEAD" else (
        '<?xml version="1.0" encoding="utf-8"?>\n<Error><Code>AccessDenied</Code>'
        f"<Message>Access Denied</Message><RequestId>{request_id}</RequestId>"
        f"<HostId>{host_id}</HostId></Error>").encode()
    headers = [("x-amz-request-id", request_id), ("x-amz-id-2", host_id),
               ("x-amzn-requestid", request_id), ("Content-Length", str(len(body)))]
    if body:
        headers.insert(0, ("Content-Type", "application/xml"))
    start_response("403 Forbidden", headers)
    return [body]


def answer(environ, start_response, request):
    """403 AccessDenied when S3 would refuse the request for its bucket's owner, or None."""
    if request["service"] != "s3" or not refused(environ, request):
        return None
    return access_denied(environ, start_response)
